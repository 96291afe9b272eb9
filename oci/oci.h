/*
 * oci.h: OCI and Docker images by reference (`vmux new --image alpine:3`).
 *
 * The oci module (oci/) knows references, where short names lead, the
 * OCI layout vmux keeps its pulled images in, and how skopeo (the
 * containers project's transport) fills it. It never speaks HTTP itself:
 * registries, mirrors, credentials, certs.d and proxies are skopeo's, read
 * from the files users already set up. Turning a pulled image into a
 * root file system is vmux-unpack's (oci/unpack.c, run under fakeroot for
 * a user) and session/image-oci.c's (the ext4 and its cache).
 *
 *   ref.c         parse a reference (transports, the docker grammar)
 *   registries.c  short names: registries.conf's aliases and search list
 *   layout.c      the cache: index.json, manifests, configs, digests
 *   pull.c        skopeo copy into the cache; its errors in one sentence
 *
 * Every call that can fail returns -1 and sets *cause to a message the
 * caller frees.
 */
#ifndef VMUX_OCI_H
#define VMUX_OCI_H

#include <cjson/cJSON.h>
#include <stdint.h>

/* Exit statuses of image failures (documented in vmux(1)). */
#define OCI_EXIT_REF      2 /* malformed reference, unknown transport */
#define OCI_EXIT_NOTFOUND 3 /* unknown image or tag; not pulled (never) */
#define OCI_EXIT_AUTH     4 /* missing or wrong credentials */
#define OCI_EXIT_NET      5 /* registry unreachable, TLS, cut off */
#define OCI_EXIT_IMAGE    6 /* bad image: digest, platform, hostile layer */
#define OCI_EXIT_SPACE    7 /* too large, disk full */

enum oci_transport {
	OCI_DOCKER,             /* a registry: docker://, or a bare name */
	OCI_LAYOUT,             /* oci:DIR[:TAG] */
	OCI_LAYOUT_ARCHIVE,     /* oci-archive:FILE[:TAG] */
	OCI_DOCKER_ARCHIVE,     /* docker-archive:FILE[:REF] (docker save) */
	OCI_CONTAINERS_STORAGE, /* containers-storage:REF (podman's store) */
	OCI_DOCKER_DAEMON,      /* docker-daemon:REF */
};

/* A parsed reference. */
struct oci_ref {
	enum oci_transport transport;
	char *text;   /* what vmux calls it: docker.io/library/alpine:3 */
	char *source; /* what skopeo takes: docker://docker.io/library/... */
	/* OCI_DOCKER only: */
	char *domain; /* NULL while a short name is not resolved */
	char *path;   /* library/alpine, team/img */
	char *tag;    /* NULL with a digest and no tag */
	char *digest; /* sha256:HEX or NULL */
	int exit;     /* on failure: an OCI_EXIT_* */
};

/* What `--pull` says to do. */
enum oci_pull_policy { OCI_PULL_MISSING, OCI_PULL_ALWAYS, OCI_PULL_NEVER };

/* A pulled image, as the cache's index holds it. */
struct oci_image {
	char *ref;             /* its reference's text */
	char *manifest_digest; /* sha256:HEX */
	char *config_digest;
	char **layers; /* digests, bottom first */
	char **media;  /* their media types */
	size_t nlayers;
	int64_t size;  /* manifest, config and layers, compressed */
	char *pulled;  /* RFC 3339 */
	cJSON *config; /* the config blob's "config" object (may be NULL) */
};

/* ref.c */
int oci_ref_has_transport(const char *word);
int oci_ref_parse(const char *word, struct oci_ref *, char **cause);
void oci_ref_free(struct oci_ref *);
int oci_ref_set_domain(struct oci_ref *, const char *name, char **cause);
int oci_pull_policy_parse(const char *, enum oci_pull_policy *, char **cause);

/* registries.c */
int oci_ref_resolve(struct oci_ref *, char **cause);

/* layout.c */
char *oci_cache_dir(const char *home);
char *oci_blob_path(const char *cache, const char *digest);
int oci_digest_valid(const char *digest);
int oci_blob_verify(const char *cache, const char *digest, char **cause);
int oci_cache_find(
    const char *home, const char *ref, struct oci_image *, char **cause);
int oci_cache_list(
    const char *home, struct oci_image **, size_t *n, char **cause);
int oci_cache_add(const char *home, const char *ref, const char *manifest,
    int64_t manifest_size, char **cause);
int oci_cache_remove(const char *home, const char *ref, char **cause);
int oci_cache_gc(const char *home, cJSON *removed, char **cause);
int oci_image_read(const char *cache, const char *manifest_digest,
    struct oci_image *, char **cause);
void oci_image_free(struct oci_image *);
void oci_images_free(struct oci_image *, size_t n);
int oci_cache_lock(const char *home, char **cause);

/* pull.c */
typedef void (*oci_progress_fn)(void *arg, const char *event,
    const char *digest, int64_t done, int64_t total);
int oci_pull(const char *home, const struct oci_ref *, oci_progress_fn,
    void *arg, int *exit_status, char **cause);

#endif
