/*
 * archive.h: tar archives in and out, the file-transfer core of vmux.
 *
 * The archive module (archive/: this header, tar_extract.c, tar_export.c,
 * layer.c, gz.c, archive_*.c) is host and guest code at once. It depends only
 * on common/ and zlib, so the guest agent (extract_archive / export_archive)
 * and the host CLI (`vmux cp`) link the same code.
 *
 * Extraction is a push state machine: feed it any chunks of a plain or
 * gzip'd tar (ustar, GNU, pax) and it writes the entries beneath the
 * destination, never outside it: names with ".." are refused, a leading '/'
 * is stripped, every path is walked one component at a time with
 * O_NOFOLLOW from a descriptor of the destination, symlinks whose target
 * leaves the destination are refused, and existing files are replaced by
 * unlink + O_EXCL create, never written through. Devices, fifos and unknown
 * member types are skipped (counted in tar_result.skipped). Ownership is not
 * restored and setuid/setgid bits are dropped. Memory stays bounded: long
 * names are capped at TAR_MAX_LONGNAME, pax headers at TAR_MAX_PAX. With
 * tar_extract_expect_top only members beneath one top-level name are
 * accepted (what `vmux cp` asked a guest for); any other fails by name.
 *
 * Export is a pull reader: tar_export_read() fills the caller's buffer with
 * the next bytes of a POSIX tar (ustar, pax records only where needed) of a
 * file or tree, named relative to the path's basename like
 * `tar -C dirname basename`. Symlinks are stored as links, never followed.
 *
 * Every call that can fail returns -1 (or NULL) and sets *cause to a
 * message the caller frees.
 */
#ifndef VMUX_ARCHIVE_H
#define VMUX_ARCHIVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TAR_MAX_LONGNAME (64 * 1024)   /* GNU 'L'/'K' record */
#define TAR_MAX_PAX      (1024 * 1024) /* one pax 'x' header */

/* What an extraction or export did. */
struct tar_result {
	uint64_t entry_count;   /* members written (files, dirs, links) */
	uint64_t bytes_written; /* bytes of regular-file data */
	uint64_t skipped; /* members skipped: devices, fifos, unsafe links */
};

/* tar_extract.c */
/* Skip symlinks whose target leaves the destination instead of failing. */
#define TAR_X_SKIP_UNSAFE_LINKS 0x1
/* Refuse to replace a file or symlink with a directory (docker cp's rule). */
#define TAR_X_KEEP_NONDIRS 0x2
/*
 * An OCI image layer over the layers already beneath the destination
 * (layer.c): owners, setuid/setgid bits and device nodes are kept, any
 * symlink target is stored (it is never followed here), an entry replaces
 * whatever of another type was there, and whiteouts (.wh.NAME,
 * .wh..wh..opq) delete what the lower layers left.
 */
#define TAR_X_LAYER 0x4
/* A layer member's name: with the unpack folder in front it must stay a
 * path the tools after (nftw, mkfs.ext4 -d) can name. */
#define LAYER_NAME_MAX 3072

struct tar_extract;
struct tar_extract *tar_extract_new(const char *destination, char **cause);
void tar_extract_set_flags(struct tar_extract *, int flags);
void tar_extract_set_max(struct tar_extract *, uint64_t max);
int tar_extract_rename_top(
    struct tar_extract *, const char *name, char **cause);
int tar_extract_expect_top(
    struct tar_extract *, const char *name, char **cause);
int tar_extract_feed(
    struct tar_extract *, const void *buf, size_t len, char **cause);
int tar_extract_finish(
    struct tar_extract *, struct tar_result *out, char **cause);
void tar_extract_free(struct tar_extract *);
int tar_extract_fd(
    const char *destination, int fd, struct tar_result *out, char **cause);

/* tar_export.c */
struct tar_export;
struct tar_export *tar_export_new(
    const char *path, const char *arcname, char **cause);
void tar_export_exclude(struct tar_export *, dev_t, ino_t);
ssize_t tar_export_read(
    struct tar_export *, void *buf, size_t len, char **cause);
void tar_export_result(struct tar_export *, struct tar_result *out);
void tar_export_free(struct tar_export *);
int tar_export_fd(const char *path, const char *arcname, int out_fd,
    struct tar_result *out, char **cause);

/* archive_cp.c */
int tar_cp_destination(const char *dst, char **dir, char **top, char **cause);

/*
 * Internal to the archive module from here on.
 */
#define TAR_BLOCK 512

/* gz.c: streaming gzip inflate; the sink returns -1 to stop with cause. */
typedef int (*gz_sink)(void *arg, const void *buf, size_t len, char **cause);
struct gz;
struct gz *gz_new(void);
ssize_t gz_feed(
    struct gz *, const void *buf, size_t len, gz_sink, void *arg, char **cause);
int gz_ended(struct gz *);
void gz_restart(struct gz *);
void gz_free(struct gz *);

/* archive_hdr.c: header fields and pax records. */
int tar_get_number(const unsigned char *field, size_t len, int64_t *out);
void tar_put_number(unsigned char *field, size_t len, int64_t v);
int tar_fits_octal(size_t len, int64_t v);
unsigned int tar_checksum(const unsigned char *block, int is_signed);
int tar_block_is_zero(const unsigned char *block);
int tar_pax_next(const char **p, const char *end, const char **key,
    size_t *keylen, const char **val, size_t *vallen, char **cause);
void tar_pax_add(
    char **buf, size_t *len, const char *key, const char *val, size_t vallen);
int tar_parse_time(const char *s, size_t len, int64_t *sec, long *nsec);

/* archive_fs.c: paths beneath a directory descriptor, never following links. */
struct afs_cache {
	char *path; /* cleaned relative path of the cached directory */
	int fd;
};
int afs_clean_name(const char *in, size_t len, char **out, char **cause);
int afs_link_target_safe(
    const char *name, const char *target, const char **why);
int afs_open_root(const char *dest, char **cause);
int afs_open_parent(int rootfd, struct afs_cache *, const char *name,
    int create, const char **leaf, char **cause);
void afs_cache_clear(struct afs_cache *);

/* layer.c: whiteouts and the paths a layer wrote (TAR_X_LAYER). */
struct layer_set;
struct layer_set *layer_set_new(void);
void layer_set_free(struct layer_set *);
int layer_set_has(const struct layer_set *, const char *name);
int layer_set_add(struct layer_set *, const char *name, char **cause);
int layer_remove(int dirfd, const char *leaf, const char *name, char **cause);
int layer_whiteout(int rootfd, struct afs_cache *, const struct layer_set *,
    const char *name, char **cause);

#endif
