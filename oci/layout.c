/*
 * layout.c: the OCI layout vmux keeps pulled images in.
 *
 * $VMUX_HOME/images/oci is an OCI image layout (image-spec,
 * image-layout.md): blobs/sha256/HEX and an index.json whose manifests
 * carry org.opencontainers.image.ref.name (the reference's text, as
 * docker.io/library/alpine:3) and io.vmux.pulled (when). skopeo, umoci
 * and podman can read it as oci:$VMUX_HOME/images/oci:REF. Blobs are
 * shared by every image that has them; index.json is replaced whole
 * (rename), under the cache's lock (oci_cache_lock), so a reader sees the
 * old index or the new one. Every blob read is checked against its
 * digest; manifests and configs are bounded in size.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "oci.h"

#define JSON_BLOB_MAX   (4 << 20)  /* a manifest or a config */
#define INDEX_MAX       (16 << 20) /* index.json */
#define ANNOT_REF       "org.opencontainers.image.ref.name"
#define ANNOT_PULLED    "io.vmux.pulled"
#define MT_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"

/* $VMUX_HOME/images/oci (caller frees). */
char *
oci_cache_dir(const char *home)
{
	char *d;

	xasprintf(&d, "%s/images/oci", home);
	return d;
}

/* The file of a blob (digest checked by the caller). */
char *
oci_blob_path(const char *cache, const char *digest)
{
	char *p;

	xasprintf(&p, "%s/blobs/sha256/%s", cache, digest + 7);
	return p;
}

/*
 * Take the cache's lock (one writer at a time: pulls, rm, prune) after
 * making the layout if it is missing. The fd to close, or -1 with cause.
 */
int
oci_cache_lock(const char *home, char **cause)
{
	char *cache = oci_cache_dir(home), *p;
	int fd;

	xasprintf(&p, "%s/blobs/sha256", cache);
	if (mkdir_p(p, 0700) != 0) {
		xasprintf(cause, "cannot create %s: %s", p, strerror(errno));
		free(p);
		free(cache);
		return -1;
	}
	free(p);
	xasprintf(&p, "%s.lock", cache);
	if ((fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0 ||
	    flock(fd, LOCK_EX) != 0) {
		xasprintf(cause, "cannot lock %s: %s", p, strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	free(p);
	if (fd >= 0) {
		static const char layout[] =
		    "{\"imageLayoutVersion\":\"1.0.0\"}";

		xasprintf(&p, "%s/oci-layout", cache);
		if (access(p, F_OK) != 0)
			file_replace(p, layout, sizeof layout - 1, 0644);
		free(p);
	}
	free(cache);
	return fd;
}

/*
 * Read a whole file of at most max bytes; check its sha256 against digest
 * when digest is not NULL. A new NUL-terminated buffer, or NULL with cause.
 */
static char *
read_checked(
    const char *path, const char *digest, size_t max, size_t *len, char **cause)
{
	struct sha256 h;
	char hex[65], *buf;
	struct stat st;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (size_t)st.st_size > max) {
		xasprintf(
		    cause, "%s: not a file of at most %zu bytes", path, max);
		close(fd);
		return NULL;
	}
	buf = xmalloc((size_t)st.st_size + 1);
	n = read_full(fd, buf, (size_t)st.st_size);
	close(fd);
	if (n != st.st_size) {
		xasprintf(cause, "%s: short read", path);
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	if (digest != NULL) {
		sha256_init(&h);
		sha256_update(&h, buf, (size_t)n);
		sha256_hex(&h, hex);
		if (strcmp(hex, digest + 7) != 0) {
			xasprintf(cause,
			    "blob %s does not match its digest (sha256:%s): "
			    "the cache or the registry is corrupt",
			    digest, hex);
			free(buf);
			return NULL;
		}
	}
	if (len != NULL)
		*len = (size_t)n;
	return buf;
}

/* Check a blob's bytes against its digest, streaming. */
int
oci_blob_verify(const char *cache, const char *digest, char **cause)
{
	char *path, hex[65];
	int fd, rc;

	if (!oci_digest_valid(digest)) {
		xasprintf(cause, "bad digest '%.80s'", digest);
		return -1;
	}
	path = oci_blob_path(cache, digest);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd < 0) {
		xasprintf(cause, "blob %s is missing", digest);
		return -1;
	}
	rc = sha256_fd(fd, hex);
	close(fd);
	if (rc != 0 || strcmp(hex, digest + 7) != 0) {
		xasprintf(cause, "blob %s does not match its digest", digest);
		return -1;
	}
	return 0;
}

/* A JSON blob by digest: read, checked, parsed. NULL with cause. */
static cJSON *
json_blob(const char *cache, const char *digest, char **cause)
{
	char *path, *buf;
	cJSON *j;

	if (!oci_digest_valid(digest)) {
		xasprintf(cause, "bad digest '%.80s'", digest);
		return NULL;
	}
	path = oci_blob_path(cache, digest);
	buf = read_checked(path, digest, JSON_BLOB_MAX, NULL, cause);
	free(path);
	if (buf == NULL)
		return NULL;
	if ((j = cJSON_Parse(buf)) == NULL)
		xasprintf(cause, "blob %s is not JSON", digest);
	free(buf);
	return j;
}

/* A size member: 0 unless a whole number in [0, 2^53] (a hostile
 * manifest may say anything). */
static int64_t
size_of(const cJSON *o, const char *key)
{
	double v =
	    cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, key));

	return v >= 0 && v <= 9007199254740992.0 ? (int64_t)v : 0;
}

/* A string member or NULL. */
static const char *
str_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Free an image's fields. */
void
oci_image_free(struct oci_image *img)
{
	free(img->ref);
	free(img->manifest_digest);
	free(img->config_digest);
	for (size_t i = 0; i < img->nlayers; i++) {
		free(img->layers[i]);
		free(img->media[i]);
	}
	free(img->layers);
	free(img->media);
	free(img->pulled);
	cJSON_Delete(img->config);
	memset(img, 0, sizeof *img);
}

/* Free an array of n images. */
void
oci_images_free(struct oci_image *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		oci_image_free(&v[i]);
	free(v);
}

/*
 * Read the image whose manifest is manifest_digest: its config and layers,
 * both checked (a linux/amd64 image, layers of a known media type).
 */
int
oci_image_read(const char *cache, const char *manifest_digest,
    struct oci_image *img, char **cause)
{
	cJSON *m, *cfg = NULL, *e;
	const cJSON *layers, *c;
	const char *d, *mt, *arch, *os;
	int rc = -1;

	memset(img, 0, sizeof *img);
	if ((m = json_blob(cache, manifest_digest, cause)) == NULL)
		return -1;
	img->manifest_digest = xstrdup(manifest_digest);
	mt = str_of(m, "mediaType");
	if (mt != NULL && strcmp(mt, MT_OCI_MANIFEST) != 0) {
		xasprintf(cause, "manifest %s is a %s, not an image manifest",
		    manifest_digest, mt);
		goto out;
	}
	c = cJSON_GetObjectItemCaseSensitive(m, "config");
	layers = cJSON_GetObjectItemCaseSensitive(m, "layers");
	if ((d = str_of(c, "digest")) == NULL || !cJSON_IsArray(layers)) {
		xasprintf(cause, "manifest %s has no config or no layers",
		    manifest_digest);
		goto out;
	}
	img->config_digest = xstrdup(d);
	img->size = size_of(c, "size");
	cJSON_ArrayForEach(e, layers)
	{
		d = str_of(e, "digest");
		mt = str_of(e, "mediaType");
		if (d == NULL || !oci_digest_valid(d) || mt == NULL) {
			xasprintf(cause,
			    "manifest %s: a layer without a "
			    "digest or media type",
			    manifest_digest);
			goto out;
		}
		img->layers = xreallocarray(
		    img->layers, img->nlayers + 1, sizeof *img->layers);
		img->media = xreallocarray(
		    img->media, img->nlayers + 1, sizeof *img->media);
		img->layers[img->nlayers] = xstrdup(d);
		img->media[img->nlayers++] = xstrdup(mt);
		if (img->size < ((int64_t)1 << 53))
			img->size += size_of(e, "size");
	}
	if ((cfg = json_blob(cache, img->config_digest, cause)) == NULL)
		goto out;
	arch = str_of(cfg, "architecture");
	os = str_of(cfg, "os");
	if (arch == NULL || os == NULL || strcmp(arch, "amd64") != 0 ||
	    strcmp(os, "linux") != 0) {
		xasprintf(cause,
		    "image is for %s/%s: vmux boots linux/amd64 guests",
		    os ? os : "?", arch ? arch : "?");
		goto out;
	}
	c = cJSON_GetObjectItemCaseSensitive(cfg, "config");
	img->config =
	    cJSON_IsObject(c) ? cJSON_Duplicate(c, 1) : cJSON_CreateObject();
	rc = 0;
out:
	cJSON_Delete(m);
	cJSON_Delete(cfg);
	if (rc != 0)
		oci_image_free(img);
	return rc;
}

/* index.json of the cache, parsed (an empty one if missing). */
static cJSON *
index_read(const char *cache, char **cause)
{
	char *path, *buf;
	cJSON *j;

	xasprintf(&path, "%s/index.json", cache);
	if (access(path, F_OK) != 0 && errno == ENOENT) {
		free(path);
		j = cJSON_CreateObject();
		cJSON_AddNumberToObject(j, "schemaVersion", 2);
		cJSON_AddArrayToObject(j, "manifests");
		return j;
	}
	buf = read_checked(path, NULL, INDEX_MAX, NULL, cause);
	if (buf == NULL) {
		free(path);
		return NULL;
	}
	j = cJSON_Parse(buf);
	free(buf);
	if (j == NULL ||
	    !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "manifests"))) {
		xasprintf(cause, "%s is not an OCI index", path);
		cJSON_Delete(j);
		j = NULL;
	}
	free(path);
	return j;
}

/* Replace index.json whole. */
static int
index_write(const char *cache, cJSON *j, char **cause)
{
	char *path, *text = cJSON_PrintUnformatted(j);
	int rc;

	xasprintf(&path, "%s/index.json", cache);
	rc = file_replace(path, text, strlen(text), 0644);
	if (rc != 0)
		xasprintf(cause, "cannot write %s: %s", path, strerror(-rc));
	free(path);
	free(text);
	return rc != 0 ? -1 : 0;
}

/* The reference an index entry names, or NULL. */
static const char *
entry_ref(const cJSON *e)
{
	return str_of(
	    cJSON_GetObjectItemCaseSensitive(e, "annotations"), ANNOT_REF);
}

/* Fill img from an index entry (reads its manifest and config). */
static int
entry_image(
    const char *cache, const cJSON *e, struct oci_image *img, char **cause)
{
	const char *d = str_of(e, "digest"), *when;

	if (d == NULL) {
		xasprintf(cause, "index.json: an entry without a digest");
		return -1;
	}
	if (oci_image_read(cache, d, img, cause) != 0)
		return -1;
	img->ref = xstrdup(entry_ref(e));
	when = str_of(
	    cJSON_GetObjectItemCaseSensitive(e, "annotations"), ANNOT_PULLED);
	img->pulled = xstrdup(when ? when : "");
	img->size += size_of(e, "size");
	return 0;
}

/* Find ref in the cache: 1 and img filled, 0 if absent, -1 with cause. */
int
oci_cache_find(
    const char *home, const char *ref, struct oci_image *img, char **cause)
{
	char *cache = oci_cache_dir(home);
	const cJSON *e;
	cJSON *idx;
	int rc = 0;

	memset(img, 0, sizeof *img);
	if ((idx = index_read(cache, cause)) == NULL) {
		free(cache);
		return -1;
	}
	cJSON_ArrayForEach(
	    e, cJSON_GetObjectItemCaseSensitive(idx, "manifests"))
	{
		const char *r = entry_ref(e);

		if (r != NULL && strcmp(r, ref) == 0) {
			rc = entry_image(cache, e, img, cause) == 0 ? 1 : -1;
			break;
		}
	}
	cJSON_Delete(idx);
	free(cache);
	return rc;
}

/* Every image in the cache (an unreadable one is skipped). */
int
oci_cache_list(
    const char *home, struct oci_image **out, size_t *n, char **cause)
{
	char *cache = oci_cache_dir(home), *why;
	const cJSON *e;
	cJSON *idx;

	*out = NULL;
	*n = 0;
	if ((idx = index_read(cache, cause)) == NULL) {
		free(cache);
		return -1;
	}
	cJSON_ArrayForEach(
	    e, cJSON_GetObjectItemCaseSensitive(idx, "manifests"))
	{
		struct oci_image img;

		why = NULL;
		if (entry_ref(e) == NULL ||
		    entry_image(cache, e, &img, &why) != 0) {
			free(why);
			continue;
		}
		*out = xreallocarray(*out, *n + 1, sizeof **out);
		(*out)[(*n)++] = img;
	}
	cJSON_Delete(idx);
	free(cache);
	return 0;
}

/* Drop index entries named ref from idx. */
static void
index_drop(cJSON *idx, const char *ref)
{
	cJSON *list = cJSON_GetObjectItemCaseSensitive(idx, "manifests");
	int i = 0;
	cJSON *e;

	while ((e = cJSON_GetArrayItem(list, i)) != NULL) {
		const char *r = entry_ref(e);

		if (r != NULL && strcmp(r, ref) == 0)
			cJSON_DeleteItemFromArray(list, i);
		else
			i++;
	}
}

/*
 * Name the manifest manifest_digest ref in the index (replacing what ref
 * named). Call with the cache's lock held.
 */
int
oci_cache_add(const char *home, const char *ref, const char *manifest,
    int64_t manifest_size, char **cause)
{
	char *cache = oci_cache_dir(home), *now = time_rfc3339(wall_time());
	cJSON *idx, *e, *a;
	int rc = -1;

	if ((idx = index_read(cache, cause)) == NULL)
		goto out;
	index_drop(idx, ref);
	e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "mediaType", MT_OCI_MANIFEST);
	cJSON_AddStringToObject(e, "digest", manifest);
	cJSON_AddNumberToObject(e, "size", (double)manifest_size);
	a = cJSON_AddObjectToObject(e, "annotations");
	cJSON_AddStringToObject(a, ANNOT_REF, ref);
	cJSON_AddStringToObject(a, ANNOT_PULLED, now);
	cJSON_AddItemToArray(
	    cJSON_GetObjectItemCaseSensitive(idx, "manifests"), e);
	rc = index_write(cache, idx, cause);
out:
	cJSON_Delete(idx);
	free(now);
	free(cache);
	return rc;
}

/* Forget ref (its blobs stay until oci_cache_gc). 1 if it was there. */
int
oci_cache_remove(const char *home, const char *ref, char **cause)
{
	char *cache = oci_cache_dir(home);
	cJSON *idx;
	int n, rc = -1;

	if ((idx = index_read(cache, cause)) != NULL) {
		n = cJSON_GetArraySize(
		    cJSON_GetObjectItemCaseSensitive(idx, "manifests"));
		index_drop(idx, ref);
		if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
		        idx, "manifests")) == n)
			rc = 0;
		else
			rc = index_write(cache, idx, cause) == 0 ? 1 : -1;
	}
	cJSON_Delete(idx);
	free(cache);
	return rc;
}

/* Is hex (64 digits) among the n digests of v? */
static int
digest_in(char **v, size_t n, const char *hex)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(v[i] + 7, hex) == 0)
			return 1;
	}
	return 0;
}

/*
 * Remove the blobs no image in the index uses (and skopeo's leftovers);
 * their digests are added to removed. Call with the cache's lock held.
 */
int
oci_cache_gc(const char *home, cJSON *removed, char **cause)
{
	char *cache = oci_cache_dir(home), *dir, *path, **keep = NULL;
	struct oci_image *v;
	struct dirent *de;
	size_t n, nkeep = 0;
	DIR *d;

	if (oci_cache_list(home, &v, &n, cause) != 0) {
		free(cache);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		keep =
		    xreallocarray(keep, nkeep + v[i].nlayers + 2, sizeof *keep);
		keep[nkeep++] = xstrdup(v[i].manifest_digest);
		keep[nkeep++] = xstrdup(v[i].config_digest);
		for (size_t k = 0; k < v[i].nlayers; k++)
			keep[nkeep++] = xstrdup(v[i].layers[k]);
	}
	oci_images_free(v, n);
	xasprintf(&dir, "%s/blobs/sha256", cache);
	if ((d = opendir(dir)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.' &&
			    (de->d_name[1] == '\0' ||
			        strcmp(de->d_name, "..") == 0))
				continue;
			if (strlen(de->d_name) == 64 &&
			    digest_in(keep, nkeep, de->d_name))
				continue;
			xasprintf(&path, "%s/%s", dir, de->d_name);
			if (unlink(path) == 0 && removed != NULL &&
			    strlen(de->d_name) == 64) {
				char *dg;

				xasprintf(&dg, "sha256:%s", de->d_name);
				cJSON_AddItemToArray(
				    removed, cJSON_CreateString(dg));
				free(dg);
			}
			free(path);
		}
		closedir(d);
	}
	for (size_t i = 0; i < nkeep; i++)
		free(keep[i]);
	free(keep);
	free(dir);
	free(cache);
	return 0;
}
