/*
 * tar_extract.c: streaming, hostile-safe tar extraction.
 *
 * A push parser: tar_extract_feed takes any chunking of a plain or gzip'd
 * tar (detected by the gzip magic) and acts on each member as soon as its
 * header is complete; file data goes straight from the input buffer to the
 * file, so memory does not grow with the archive. Names are resolved by
 * archive_fs.c, which never follows a symlink, so nothing lands outside the
 * destination. Directory modes and times are applied in tar_extract_finish,
 * deepest first, once nothing more is written into them.
 *
 * A regular file is written under a temporary name in its directory and
 * renamed over its final name only once all its data is in, so a transfer
 * cut short (Ctrl-C, a stopped VM, a full disk) never leaves a partial file
 * under the final name nor loses the file that was there; a failed or freed
 * extraction removes its half-written temporary file.
 *
 * The tar_extract owns its descriptors, buffers and error string; a failed
 * extraction stays failed and repeats its first error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/common.h"
#include "archive.h"

/* Directory metadata kept for the end; past this, applied at once. */
#define TX_DEFER_MAX (16 * 1024 * 1024)

enum tx_format { FMT_UNKNOWN, FMT_TAR, FMT_GZIP };
enum tx_state { TX_HEADER, TX_DATA, TX_PAD, TX_END, TX_FAILED };
enum tx_sink { SINK_SKIP, SINK_FILE, SINK_META };

struct tx_dir {
	char *name;
	mode_t mode;
	uid_t uid;
	gid_t gid;
	struct timespec mtime;
};

struct tar_extract {
	char *dest;
	int rootfd;
	struct afs_cache cache;
	int flags;
	char *top;       /* replacement for the top-level component */
	char *first_top; /* the archive's top-level component */
	int expect_top;  /* first_top was given: refuse any other */

	enum tx_format format;
	unsigned char magic[2];
	size_t nmagic;
	struct gz *gz;

	enum tx_state state;
	char *error;
	uint64_t offset; /* in the uncompressed stream */
	uint64_t hdr_offset;
	unsigned char hdr[TAR_BLOCK];
	size_t have;
	uint64_t headers;

	/* The member whose data is being read. */
	enum tx_sink sink;
	char meta_type;
	char *meta;
	size_t meta_len;
	uint64_t left;
	size_t pad;
	int fd;
	int tmp_dirfd;     /* the directory of the file being written */
	char tmp_leaf[64]; /* its temporary name there */
	char *final_leaf;  /* the name it takes once complete */
	char *name;
	mode_t mode;
	uid_t uid; /* owners and device numbers: TAR_X_LAYER only */
	gid_t gid;
	dev_t rdev;
	struct timespec mtime;
	struct layer_set *written; /* TAR_X_LAYER: paths this layer wrote */
	uint64_t max_bytes;        /* 0, or what the files may add up to */

	/* Overrides for the next member, from GNU and pax headers. */
	char *long_name, *long_link;
	char *pax_path, *pax_link, *pax_sparse;
	int pax_has_size, pax_has_mtime, pax_has_uid, pax_has_gid;
	uint64_t pax_size, pax_uid, pax_gid;
	struct timespec pax_mtime;

	struct tx_dir *dirs;
	size_t ndirs, dirs_cap, dirs_bytes;
	struct tar_result res;
};

static int tx_apply_dir(struct tar_extract *, struct tx_dir *, char **);

/* Start extracting beneath destination, creating it if missing. */
struct tar_extract *
tar_extract_new(const char *destination, char **cause)
{
	struct tar_extract *te;
	int fd;

	fd = afs_open_root(destination, cause);
	if (fd < 0)
		return NULL;
	te = xcalloc(1, sizeof *te);
	te->dest = xstrdup(destination);
	te->rootfd = fd;
	te->cache.fd = -1;
	te->fd = -1;
	te->tmp_dirfd = -1;
	return te;
}

/* Set TAR_X_* flags; call before the first feed. */
void
tar_extract_set_flags(struct tar_extract *te, int flags)
{
	te->flags = flags;
	if ((flags & TAR_X_LAYER) && te->written == NULL)
		te->written = layer_set_new();
}

/* Fail once the files written add up to more than max bytes (0: never). */
void
tar_extract_set_max(struct tar_extract *te, uint64_t max)
{
	te->max_bytes = max;
}

/*
 * With TAR_X_LAYER: note that this layer wrote name (and so keeps its
 * parents against an opaque whiteout). Without it: nothing.
 */
static int
tx_written(struct tar_extract *te, const char *name, char **cause)
{
	if (te->written == NULL)
		return 0;
	return layer_set_add(te->written, name, cause);
}

/*
 * Give an entry at leaf beneath dirfd its owner (TAR_X_LAYER only; a
 * layer's owners are its image's). -1 with cause.
 */
static int
tx_chown(struct tar_extract *te, int dirfd, const char *leaf, char **cause)
{
	if (!(te->flags & TAR_X_LAYER))
		return 0;
	if (fchownat(dirfd, leaf, te->uid, te->gid, AT_SYMLINK_NOFOLLOW) != 0) {
		xasprintf(
		    cause, "set owner of '%s': %s", te->name, strerror(errno));
		return -1;
	}
	return 0;
}

/* The mode bits a file or directory keeps: setuid and setgid in a layer. */
static mode_t
tx_mode_bits(const struct tar_extract *te, mode_t mode)
{
	return mode & ((te->flags & TAR_X_LAYER) ? 07777 : 01777);
}

/*
 * Extract the archive's single top-level entry under another name (docker
 * cp's "copy as"); an archive with several top-level entries then fails.
 */
int
tar_extract_rename_top(struct tar_extract *te, const char *name, char **cause)
{
	char *clean;

	if (afs_clean_name(name, strlen(name), &clean, cause) != 0)
		return -1;
	if (*clean == '\0') {
		free(clean);
		xasprintf(cause, "invalid name '%s'", name);
		return -1;
	}
	free(te->top);
	te->top = clean;
	return 0;
}

/*
 * Accept only members beneath the top-level entry name (the source an
 * untrusted peer was asked for); any other member fails the extraction
 * with an error naming it.
 */
int
tar_extract_expect_top(struct tar_extract *te, const char *name, char **cause)
{
	char *clean;

	if (afs_clean_name(name, strlen(name), &clean, cause) != 0)
		return -1;
	if (*clean == '\0' || strchr(clean, '/') != NULL) {
		free(clean);
		xasprintf(cause, "invalid top-level name '%s'", name);
		return -1;
	}
	free(te->first_top);
	te->first_top = clean;
	te->expect_top = 1;
	if (te->top == NULL)
		te->top = xstrdup(clean);
	return 0;
}

/* Forget the GNU and pax overrides once a member has used them. */
static void
tx_clear_overrides(struct tar_extract *te)
{
	free(te->long_name);
	free(te->long_link);
	free(te->pax_path);
	free(te->pax_link);
	free(te->pax_sparse);
	te->long_name = te->long_link = NULL;
	te->pax_path = te->pax_link = te->pax_sparse = NULL;
	te->pax_has_size = te->pax_has_mtime = 0;
	te->pax_has_uid = te->pax_has_gid = 0;
}

/* Map a cleaned name onto the rename_top name, if one is set. */
static int
tx_rename(struct tar_extract *te, char **name, int record, char **cause)
{
	size_t n;
	char *out;

	if (te->top == NULL || **name == '\0')
		return 0;
	n = strcspn(*name, "/");
	if (te->first_top == NULL && record)
		te->first_top = xstrndup(*name, n);
	if (te->first_top == NULL || strlen(te->first_top) != n ||
	    memcmp(te->first_top, *name, n) != 0) {
		if (te->expect_top) {
			xasprintf(cause,
			    "unexpected entry '%s' (only '%s' was asked for)",
			    *name, te->first_top);
			return -1;
		}
		xasprintf(cause,
		    "archive has more than one top-level entry "
		    "('%s' and '%.*s'): cannot extract it as '%s'",
		    te->first_top ? te->first_top : "", (int)n, *name, te->top);
		return -1;
	}
	xasprintf(&out, "%s%s", te->top, *name + n);
	free(*name);
	*name = out;
	return 0;
}

/* Remove whatever non-directory is at leaf, so a new entry can take it. */
static int
tx_unlink_old(int dirfd, const char *leaf, const char *name, const char *what,
    int layer, char **cause)
{
	if (unlinkat(dirfd, leaf, 0) == 0 || errno == ENOENT)
		return 0;
	if ((errno == EISDIR || errno == EPERM) && layer)
		return layer_remove(dirfd, leaf, name, cause);
	if (errno == EISDIR || errno == EPERM) {
		struct stat st;

		if (fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISDIR(st.st_mode)) {
			xasprintf(cause,
			    "cannot replace directory '%s' with "
			    "a %s",
			    name, what);
			return -1;
		}
	}
	xasprintf(cause, "remove old '%s': %s", name, strerror(errno));
	return -1;
}

/* Close and remove a half-written file's temporary name, if any. */
static void
tx_file_abandon(struct tar_extract *te)
{
	if (te->fd >= 0) {
		close(te->fd);
		te->fd = -1;
		unlinkat(te->tmp_dirfd, te->tmp_leaf, 0);
	}
	if (te->tmp_dirfd >= 0)
		close(te->tmp_dirfd);
	te->tmp_dirfd = -1;
	free(te->final_leaf);
	te->final_leaf = NULL;
}

/*
 * Start a regular file: create a temporary file beside its final name (a
 * directory there is refused now rather than after the data) and expect
 * its data.
 */
static int
tx_file(struct tar_extract *te, const char *name, uint64_t size, char **cause)
{
	static atomic_uint serial; /* uploads run on several threads */
	const char *leaf;
	struct stat st;
	int dirfd, tries;

	if (*name == '\0') {
		xasprintf(cause, "regular file with an empty name");
		return -1;
	}
	dirfd = afs_open_parent(te->rootfd, &te->cache, name, 1, &leaf, cause);
	if (dirfd < 0)
		return -1;
	if (fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode)) {
		if (!(te->flags & TAR_X_LAYER)) {
			xasprintf(cause,
			    "cannot replace directory '%s' with a file", name);
			return -1;
		}
		if (layer_remove(dirfd, leaf, name, cause) != 0)
			return -1;
		afs_cache_clear(&te->cache);
		dirfd = afs_open_parent(
		    te->rootfd, &te->cache, name, 1, &leaf, cause);
		if (dirfd < 0)
			return -1;
	}
	for (tries = 0; tries < 100; tries++) {
		snprintf(te->tmp_leaf, sizeof te->tmp_leaf, ".vmux-part-%ld-%u",
		    (long)getpid(), serial++);
		te->fd = openat(dirfd, te->tmp_leaf,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (te->fd >= 0 || errno != EEXIST)
			break;
	}
	if (te->fd < 0) {
		xasprintf(cause, "create '%s': %s", name, strerror(errno));
		return -1;
	}
	if ((te->tmp_dirfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0)) < 0) {
		xasprintf(cause, "create '%s': %s", name, strerror(errno));
		close(te->fd);
		te->fd = -1;
		unlinkat(dirfd, te->tmp_leaf, 0);
		return -1;
	}
	te->final_leaf = xstrdup(leaf);
	te->sink = SINK_FILE;
	te->left = size;
	return 0;
}

/*
 * Finish a regular file: mode and time once all data is in, then rename it
 * over its final name (replacing a file or symlink there, never a
 * directory).
 */
static int
tx_file_done(struct tar_extract *te, char **cause)
{
	struct timespec ts[2] = {{0, UTIME_OMIT}, te->mtime};
	int rc = -1;

	if ((te->flags & TAR_X_LAYER) &&
	    fchown(te->fd, te->uid, te->gid) != 0) { /* before: it clears
		                                        setuid */
		xasprintf(
		    cause, "set owner of '%s': %s", te->name, strerror(errno));
		goto out;
	}
	if (fchmod(te->fd, tx_mode_bits(te, te->mode)) != 0 ||
	    futimens(te->fd, ts) != 0) {
		xasprintf(cause, "set mode/time of '%s': %s", te->name,
		    strerror(errno));
		goto out;
	}
	if (close(te->fd) != 0) {
		te->fd = -1;
		unlinkat(te->tmp_dirfd, te->tmp_leaf, 0);
		xasprintf(cause, "write '%s': %s", te->name, strerror(errno));
		goto out;
	}
	te->fd = -1;
	if (renameat(te->tmp_dirfd, te->tmp_leaf, te->tmp_dirfd,
	        te->final_leaf) != 0) {
		if (errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST)
			xasprintf(cause,
			    "cannot replace directory '%s' with a file",
			    te->name);
		else
			xasprintf(cause, "rename '%s' into place: %s", te->name,
			    strerror(errno));
		unlinkat(te->tmp_dirfd, te->tmp_leaf, 0);
		goto out;
	}
	te->res.entry_count++;
	rc = 0;
out:
	tx_file_abandon(te);
	return rc;
}

/* Create a directory (or keep an existing one); defer its mode and time. */
static int
tx_dir(struct tar_extract *te, const char *name, char **cause)
{
	struct tx_dir d;
	const char *leaf;
	struct stat st;
	int dirfd;

	te->res.entry_count++;
	if (*name == '\0')
		return 0; /* the destination itself: leave it as it is */
	dirfd = afs_open_parent(te->rootfd, &te->cache, name, 1, &leaf, cause);
	if (dirfd < 0)
		return -1;
	if (mkdirat(dirfd, leaf, 0700) != 0) {
		if (errno != EEXIST) {
			xasprintf(
			    cause, "mkdir '%s': %s", name, strerror(errno));
			return -1;
		}
		if (fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			xasprintf(
			    cause, "stat '%s': %s", name, strerror(errno));
			return -1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (te->flags & TAR_X_KEEP_NONDIRS) {
				xasprintf(cause,
				    "cannot replace non-directory '%s' with "
				    "a directory",
				    name);
				return -1;
			}
			if (tx_unlink_old(dirfd, leaf, name, "directory",
			        te->flags & TAR_X_LAYER, cause) != 0)
				return -1;
			if (mkdirat(dirfd, leaf, 0700) != 0) {
				xasprintf(cause, "mkdir '%s': %s", name,
				    strerror(errno));
				return -1;
			}
		}
	}
	d.name = xstrdup(name);
	d.mode = tx_mode_bits(te, te->mode);
	d.uid = te->uid;
	d.gid = te->gid;
	d.mtime = te->mtime;
	if (te->dirs_bytes + strlen(name) > TX_DEFER_MAX) {
		int rc = tx_apply_dir(te, &d, cause);

		free(d.name);
		return rc;
	}
	if (te->ndirs == te->dirs_cap) {
		te->dirs_cap = te->dirs_cap ? te->dirs_cap * 2 : 16;
		te->dirs =
		    xreallocarray(te->dirs, te->dirs_cap, sizeof *te->dirs);
	}
	te->dirs[te->ndirs++] = d;
	te->dirs_bytes += strlen(name) + sizeof d;
	return 0;
}

/* Create a symlink whose target stays beneath the destination. */
static int
tx_symlink(
    struct tar_extract *te, const char *name, const char *target, char **cause)
{
	struct timespec ts[2] = {{0, UTIME_OMIT}, te->mtime};
	const char *leaf, *why;
	int dirfd;

	if (*name == '\0') {
		xasprintf(cause, "symlink with an empty name");
		return -1;
	}
	/* A layer's link is never followed here and resolves inside the
	 * guest's own root there, wherever it points. */
	if (!(te->flags & TAR_X_LAYER) &&
	    !afs_link_target_safe(name, target, &why)) {
		if (te->flags & TAR_X_SKIP_UNSAFE_LINKS) {
			log_debug("%s: skipping '%s' -> '%s': %s", __func__,
			    name, target, why);
			te->res.skipped++;
			return 0;
		}
		xasprintf(cause, "refusing symlink '%s' -> '%s': %s", name,
		    target, why);
		return -1;
	}
	dirfd = afs_open_parent(te->rootfd, &te->cache, name, 1, &leaf, cause);
	if (dirfd < 0)
		return -1;
	if (tx_unlink_old(dirfd, leaf, name, "symlink", te->flags & TAR_X_LAYER,
	        cause) != 0)
		return -1;
	if (symlinkat(target, dirfd, leaf) != 0) {
		xasprintf(cause, "symlink '%s': %s", name, strerror(errno));
		return -1;
	}
	if (tx_chown(te, dirfd, leaf, cause) != 0)
		return -1;
	if (utimensat(dirfd, leaf, ts, AT_SYMLINK_NOFOLLOW) != 0) {
		xasprintf(cause, "set time of '%s': %s", name, strerror(errno));
		return -1;
	}
	te->res.entry_count++;
	return 0;
}

/*
 * A device node or fifo: made in a layer (owner, mode), skipped (counted)
 * anywhere else.
 */
static int
tx_node(struct tar_extract *te, const char *name, char type, char **cause)
{
	mode_t kind = type == '3' ? S_IFCHR : type == '4' ? S_IFBLK : S_IFIFO;
	const char *leaf;
	int dirfd;

	if (!(te->flags & TAR_X_LAYER) || *name == '\0') {
		log_debug("%s: skipping device or fifo '%s'", __func__, name);
		te->res.skipped++;
		return 0;
	}
	dirfd = afs_open_parent(te->rootfd, &te->cache, name, 1, &leaf, cause);
	if (dirfd < 0 ||
	    tx_unlink_old(dirfd, leaf, name, "device", 1, cause) != 0)
		return -1;
	if (mknodat(dirfd, leaf, kind | (te->mode & 0777),
	        kind == S_IFIFO ? 0 : te->rdev) != 0) {
		xasprintf(cause, "mknod '%s': %s", name, strerror(errno));
		return -1;
	}
	if (tx_chown(te, dirfd, leaf, cause) != 0)
		return -1;
	if (fchmodat(dirfd, leaf, tx_mode_bits(te, te->mode), 0) != 0) {
		xasprintf(cause, "chmod '%s': %s", name, strerror(errno));
		return -1;
	}
	te->res.entry_count++;
	return 0;
}

/* Create a hard link to an entry already beneath the destination. */
static int
tx_hardlink(
    struct tar_extract *te, const char *name, const char *rawlink, char **cause)
{
	const char *leaf, *tleaf;
	char *target = NULL;
	struct stat st;
	int dirfd, tfd = -1, rc = -1;

	if (*name == '\0') {
		xasprintf(cause, "hard link with an empty name");
		return -1;
	}
	if (afs_clean_name(rawlink, strlen(rawlink), &target, cause) != 0)
		return -1;
	if (tx_rename(te, &target, 0, cause) != 0)
		goto out;
	if (*target == '\0') {
		xasprintf(cause, "hard link '%s' to a directory", name);
		goto out;
	}
	if (strcmp(target, name) == 0) {
		te->res.entry_count++;
		rc = 0;
		goto out;
	}
	dirfd =
	    afs_open_parent(te->rootfd, &te->cache, target, 0, &tleaf, cause);
	if (dirfd < 0)
		goto out;
	/* The cache may move on when name is resolved: keep our own fd. */
	tfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (tfd < 0) {
		xasprintf(cause, "dup: %s", strerror(errno));
		goto out;
	}
	if (fstatat(tfd, tleaf, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		xasprintf(cause, "hard link '%s' -> '%s': %s", name, target,
		    strerror(errno));
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		xasprintf(cause, "hard link '%s' to a directory", name);
		goto out;
	}
	dirfd = afs_open_parent(te->rootfd, &te->cache, name, 1, &leaf, cause);
	if (dirfd < 0)
		goto out;
	if (tx_unlink_old(dirfd, leaf, name, "hard link",
	        te->flags & TAR_X_LAYER, cause) != 0)
		goto out;
	if (linkat(tfd, tleaf, dirfd, leaf, 0) != 0) {
		xasprintf(cause, "hard link '%s' -> '%s': %s", name, target,
		    strerror(errno));
		goto out;
	}
	te->res.entry_count++;
	rc = 0;
out:
	if (tfd >= 0)
		close(tfd);
	free(target);
	return rc;
}

/* Collect a pax header's records into the overrides for the next member. */
static int
tx_pax(struct tar_extract *te, char **cause)
{
	const char *p = te->meta, *end = te->meta + te->meta_len;
	const char *key, *val;
	size_t kl, vl;
	int r;

	while ((r = tar_pax_next(&p, end, &key, &kl, &val, &vl, cause)) > 0) {
#define KEY(s) (kl == sizeof(s) - 1 && memcmp(key, s, kl) == 0)
		if (KEY("path")) {
			free(te->pax_path);
			te->pax_path = vl ? xstrndup(val, vl) : NULL;
			if (vl && strlen(te->pax_path) != vl) {
				xasprintf(cause, "pax path contains a NUL");
				return -1;
			}
		} else if (KEY("linkpath")) {
			free(te->pax_link);
			te->pax_link = vl ? xstrndup(val, vl) : NULL;
			if (vl && strlen(te->pax_link) != vl) {
				xasprintf(cause, "pax linkpath contains a NUL");
				return -1;
			}
		} else if (KEY("size")) {
			int64_t sec;
			long ns;

			if (tar_parse_time(val, vl, &sec, &ns) != 0 ||
			    sec < 0 || ns != 0 || memchr(val, '.', vl)) {
				xasprintf(cause, "bad pax size '%.*s'",
				    (int)(vl > 32 ? 32 : vl), val);
				return -1;
			}
			te->pax_size = (uint64_t)sec;
			te->pax_has_size = 1;
		} else if (KEY("mtime")) {
			int64_t sec;
			long ns;

			if (tar_parse_time(val, vl, &sec, &ns) != 0) {
				xasprintf(cause, "bad pax mtime '%.*s'",
				    (int)(vl > 32 ? 32 : vl), val);
				return -1;
			}
			te->pax_mtime.tv_sec = (time_t)sec;
			te->pax_mtime.tv_nsec = ns;
			te->pax_has_mtime = 1;
		} else if (KEY("uid") || KEY("gid")) {
			int64_t id;
			long ns;

			if (tar_parse_time(val, vl, &id, &ns) != 0 || id < 0 ||
			    ns != 0 || id > 0xfffffffeLL) {
				xasprintf(cause, "bad pax %.*s '%.*s'", (int)kl,
				    key, (int)(vl > 32 ? 32 : vl), val);
				return -1;
			}
			if (key[0] == 'u') {
				te->pax_uid = (uint64_t)id;
				te->pax_has_uid = 1;
			} else {
				te->pax_gid = (uint64_t)id;
				te->pax_has_gid = 1;
			}
		} else if (kl > 11 && memcmp(key, "GNU.sparse.", 11) == 0) {
			if (te->pax_sparse == NULL)
				te->pax_sparse = xstrdup("");
			if (KEY("GNU.sparse.name")) {
				free(te->pax_sparse);
				te->pax_sparse = xstrndup(val, vl);
			}
		}
#undef KEY
	}
	return r;
}

/* A GNU long name or pax header's data is complete. */
static int
tx_meta_done(struct tar_extract *te, char **cause)
{
	char *s;
	int rc = 0;

	te->meta[te->meta_len] = '\0';
	switch (te->meta_type) {
	case 'L':
	case 'K':
		s = xstrdup(te->meta); /* up to the first NUL */
		if (te->meta_type == 'L') {
			free(te->long_name);
			te->long_name = s;
		} else {
			free(te->long_link);
			te->long_link = s;
		}
		break;
	case 'x':
		rc = tx_pax(te, cause);
		break;
	default:
		NEVER("unknown meta type");
	}
	free(te->meta);
	te->meta = NULL;
	return rc;
}

/* The data of the current member is complete. */
static int
tx_data_done(struct tar_extract *te, char **cause)
{
	switch (te->sink) {
	case SINK_FILE:
		return tx_file_done(te, cause);
	case SINK_META:
		return tx_meta_done(te, cause);
	case SINK_SKIP:
		return 0;
	}
	NEVER("bad sink");
}

/* A message for a first block that is not a tar header. */
static void
tx_not_tar(struct tar_extract *te, char **cause)
{
	const unsigned char *h = te->hdr;

	if (memcmp(h,
	        "\xfd"
	        "7zXZ",
	        5) == 0)
		xasprintf(cause,
		    "not a tar archive: xz-compressed data is not "
		    "supported (use gzip or none)");
	else if (memcmp(h, "BZh", 3) == 0)
		xasprintf(cause,
		    "not a tar archive: bzip2-compressed data is "
		    "not supported (use gzip or none)");
	else if (memcmp(h, "\x28\xb5\x2f\xfd", 4) == 0)
		xasprintf(cause,
		    "not a tar archive: zstd-compressed data is "
		    "not supported (use gzip or none)");
	else
		xasprintf(cause, "not a tar archive (bad header checksum)");
}

/* Text of a header string field, which may fill it without a NUL. */
static char *
tx_field(const unsigned char *f, size_t len)
{
	return xstrndup((const char *)f, strnlen((const char *)f, len));
}

/* Read a numeric field or fail naming it. */
static int
tx_number(struct tar_extract *te, size_t off, size_t len, const char *what,
    int64_t *v, char **cause)
{
	if (tar_get_number(te->hdr + off, len, v) == 0)
		return 0;
	xasprintf(cause, "bad %s field in header at offset %llu", what,
	    (unsigned long long)te->hdr_offset);
	return -1;
}

/* Work out a member's name and link from its header and the overrides. */
static int
tx_names(struct tar_extract *te, char **name, char **link, char **cause)
{
	const unsigned char *h = te->hdr;
	char *raw;
	int ustar = memcmp(h + 257, "ustar\0", 6) == 0;

	if (te->long_name != NULL)
		raw = xstrdup(te->long_name);
	else if (te->pax_path != NULL)
		raw = xstrdup(te->pax_path);
	else if (ustar && h[345] != '\0') {
		char *prefix = tx_field(h + 345, 155), *base = tx_field(h, 100);

		xasprintf(&raw, "%s/%s", prefix, base);
		free(prefix);
		free(base);
	} else
		raw = tx_field(h, 100);
	if (te->long_link != NULL)
		*link = xstrdup(te->long_link);
	else if (te->pax_link != NULL)
		*link = xstrdup(te->pax_link);
	else
		*link = tx_field(h + 157, 100);

	/* Old archives mark directories by a trailing slash only. */
	if (h[156] == '\0' && *raw != '\0' && raw[strlen(raw) - 1] == '/')
		te->hdr[156] = '5';

	if (afs_clean_name(raw, strlen(raw), name, cause) != 0) {
		free(raw);
		free(*link);
		return -1;
	}
	free(raw);
	if (tx_rename(te, name, 1, cause) != 0) {
		free(*name);
		free(*link);
		return -1;
	}
	return 0;
}

/* Is the cleaned name a whiteout (its last component starts ".wh.")? */
static int
tx_is_whiteout(const char *name)
{
	const char *slash = strrchr(name, '/');

	return strncmp(slash != NULL ? slash + 1 : name, ".wh.", 4) == 0;
}

/* A layer member's owner and device numbers, from its header and pax. */
static int
tx_owner(struct tar_extract *te, char **cause)
{
	int64_t uid, gid, major, minor;

	if (tx_number(te, 108, 8, "uid", &uid, cause) != 0 ||
	    tx_number(te, 116, 8, "gid", &gid, cause) != 0)
		return -1;
	if (te->pax_has_uid)
		uid = (int64_t)te->pax_uid;
	if (te->pax_has_gid)
		gid = (int64_t)te->pax_gid;
	if (uid < 0 || gid < 0 || uid > 0xfffffffeLL || gid > 0xfffffffeLL) {
		xasprintf(cause, "bad owner %lld:%lld in header at offset %llu",
		    (long long)uid, (long long)gid,
		    (unsigned long long)te->hdr_offset);
		return -1;
	}
	te->uid = (uid_t)uid;
	te->gid = (gid_t)gid;
	te->rdev = 0;
	if (te->hdr[156] == '3' || te->hdr[156] == '4') {
		if (tx_number(te, 329, 8, "devmajor", &major, cause) != 0 ||
		    tx_number(te, 337, 8, "devminor", &minor, cause) != 0)
			return -1;
		if (major < 0 || minor < 0 || major > 0xfff ||
		    minor > 0xfffff) {
			xasprintf(cause, "bad device number %lld,%lld",
			    (long long)major, (long long)minor);
			return -1;
		}
		te->rdev = makedev((unsigned)major, (unsigned)minor);
	}
	return 0;
}

/* Act on a member header: create what it describes, set up for its data. */
static int
tx_member(struct tar_extract *te, uint64_t size, char **cause)
{
	char *name = NULL, *link = NULL, type;
	int64_t v;
	int rc = -1;

	if (tx_number(te, 100, 8, "mode", &v, cause) != 0)
		return -1;
	te->mode = (mode_t)(v & 07777);
	if (te->pax_has_mtime)
		te->mtime = te->pax_mtime;
	else {
		if (tx_number(te, 136, 12, "mtime", &v, cause) != 0)
			return -1;
		te->mtime.tv_sec = (time_t)v;
		te->mtime.tv_nsec = 0;
	}
	if ((te->flags & TAR_X_LAYER) && tx_owner(te, cause) != 0)
		return -1;
	if (tx_names(te, &name, &link, cause) != 0)
		return -1;
	type = (char)te->hdr[156]; /* after tx_names, which may fix it */
	if ((te->flags & TAR_X_LAYER) && strlen(name) > LAYER_NAME_MAX) {
		xasprintf(cause,
		    "refusing '%.64s...': a name of %zu bytes (at most %d in "
		    "a layer)",
		    name, strlen(name), LAYER_NAME_MAX);
		goto out;
	}
	if ((te->flags & TAR_X_LAYER) && tx_is_whiteout(name)) {
		free(te->name);
		te->name = xstrdup(name);
		te->sink = SINK_SKIP;
		te->left = size;
		rc = layer_whiteout(
		    te->rootfd, &te->cache, te->written, name, cause);
		goto out;
	}
	if (tx_written(te, name, cause) != 0)
		goto out;
	if (te->pax_sparse != NULL) {
		xasprintf(cause, "'%s': sparse files are not supported", name);
		goto out;
	}
	free(te->name);
	te->name = xstrdup(name);
	te->sink = SINK_SKIP;
	te->left = 0;

	switch (type) {
	case '0':
	case '\0':
	case '7':
		rc = tx_file(te, name, size, cause);
		break;
	case '1':
		rc = tx_hardlink(te, name, link, cause);
		break;
	case '2':
		rc = tx_symlink(te, name, link, cause);
		break;
	case '5':
		rc = tx_dir(te, name, cause);
		break;
	case 'D': /* GNU dump directory: a directory with a listing */
		rc = tx_dir(te, name, cause);
		te->left = size;
		break;
	case '3':
	case '4':
	case '6':
		rc = tx_node(te, name, type, cause);
		break;
	default:
		log_debug("%s: skipping '%s' of type %d", __func__, name, type);
		te->res.skipped++;
		te->left = size;
		rc = 0;
		break;
	}
out:
	free(name);
	free(link);
	return rc;
}

/* A complete header block is in te->hdr: decode and act on it. */
static int
tx_header(struct tar_extract *te, char **cause)
{
	const unsigned char *h = te->hdr;
	int64_t stored, v;
	uint64_t size;
	char type = (char)h[156];
	int rc;

	if (tar_block_is_zero(h)) {
		te->state = TX_END;
		return 0;
	}
	if (tar_get_number(h + 148, 8, &stored) != 0 ||
	    (stored != tar_checksum(h, 0) && stored != tar_checksum(h, 1))) {
		if (te->headers == 0)
			tx_not_tar(te, cause);
		else
			xasprintf(cause,
			    "bad header checksum at offset %llu "
			    "(corrupt archive)",
			    (unsigned long long)te->hdr_offset);
		return -1;
	}
	te->headers++;
	if (tx_number(te, 124, 12, "size", &v, cause) != 0)
		return -1;
	if (v < 0) {
		xasprintf(cause, "negative size in header at offset %llu",
		    (unsigned long long)te->hdr_offset);
		return -1;
	}
	size = (uint64_t)v;
	te->sink = SINK_SKIP;
	te->left = 0;

	switch (type) {
	case 'L':
	case 'K':
	case 'x':
		if (size > (type == 'x' ? TAR_MAX_PAX : TAR_MAX_LONGNAME)) {
			xasprintf(cause,
			    "%s header of %llu bytes at offset "
			    "%llu is over the limit of %d",
			    type == 'x' ? "pax" : "GNU long name",
			    (unsigned long long)size,
			    (unsigned long long)te->hdr_offset,
			    type == 'x' ? TAR_MAX_PAX : TAR_MAX_LONGNAME);
			return -1;
		}
		te->sink = SINK_META;
		te->meta_type = type;
		te->meta = xmalloc(size + 1);
		te->meta_len = 0;
		te->left = size;
		free(te->name);
		te->name =
		    xstrdup(type == 'x' ? "pax header" : "GNU long name");
		break;
	case 'g': /* global pax header: nothing in it matters here */
	case 'V': /* volume label */
		te->left = size;
		free(te->name);
		te->name = xstrdup("archive header");
		break;
	case 'S':
	case 'M':
	case 'N':
		xasprintf(cause, "unsupported GNU %s member at offset %llu",
		    type == 'S'       ? "sparse"
		        : type == 'M' ? "multi-volume"
		                      : "old long name",
		    (unsigned long long)te->hdr_offset);
		return -1;
	default:
		if (te->pax_has_size)
			size = te->pax_size;
		rc = tx_member(te, size, cause);
		tx_clear_overrides(te);
		if (rc != 0)
			return -1;
		break;
	}
	te->pad = (size_t)((TAR_BLOCK - te->left % TAR_BLOCK) % TAR_BLOCK);
	if (te->left > 0)
		te->state = TX_DATA;
	else {
		te->state = TX_HEADER;
		if (tx_data_done(te, cause) != 0)
			return -1;
	}
	return 0;
}

/* Pass member data to its sink. */
static int
tx_data(struct tar_extract *te, const unsigned char *p, size_t n, char **cause)
{
	switch (te->sink) {
	case SINK_FILE:
		if (te->max_bytes != 0 &&
		    te->res.bytes_written + n > te->max_bytes) {
			xasprintf(cause,
			    "'%s': the files add up to more than %llu MiB",
			    te->name,
			    (unsigned long long)(te->max_bytes >> 20));
			return -1;
		}
		if (write_all(te->fd, p, n) < 0) {
			xasprintf(
			    cause, "write '%s': %s", te->name, strerror(errno));
			return -1;
		}
		te->res.bytes_written += n;
		return 0;
	case SINK_META:
		memcpy(te->meta + te->meta_len, p, n);
		te->meta_len += n;
		return 0;
	case SINK_SKIP:
		return 0;
	}
	NEVER("bad sink");
}

/* Consume uncompressed tar bytes. */
static int
tx_tar(struct tar_extract *te, const unsigned char *p, size_t len, char **cause)
{
	while (len > 0) {
		size_t n = 0;

		switch (te->state) {
		case TX_END:
			te->offset += len;
			return 0;
		case TX_FAILED:
			NEVER("feeding a failed extraction");
		case TX_HEADER:
			if (te->have == 0)
				te->hdr_offset = te->offset;
			n = TAR_BLOCK - te->have;
			if (n > len)
				n = len;
			memcpy(te->hdr + te->have, p, n);
			te->have += n;
			te->offset += n;
			if (te->have == TAR_BLOCK) {
				te->have = 0;
				if (tx_header(te, cause) != 0)
					return -1;
			}
			break;
		case TX_DATA:
			n = te->left < len ? (size_t)te->left : len;
			if (tx_data(te, p, n, cause) != 0)
				return -1;
			te->left -= n;
			te->offset += n;
			if (te->left == 0) {
				te->state = te->pad ? TX_PAD : TX_HEADER;
				if (tx_data_done(te, cause) != 0)
					return -1;
			}
			break;
		case TX_PAD:
			n = te->pad < len ? te->pad : len;
			te->pad -= n;
			te->offset += n;
			if (te->pad == 0)
				te->state = TX_HEADER;
			break;
		}
		p += n;
		len -= n;
	}
	return 0;
}

/* gz sink: inflated bytes go to the tar parser. */
static int
tx_tar_sink(void *arg, const void *buf, size_t len, char **cause)
{
	return tx_tar(arg, buf, len, cause);
}

/* Consume gzip bytes; after the archive ends, trailing bytes are ignored. */
static int
tx_gunzip(
    struct tar_extract *te, const unsigned char *p, size_t len, char **cause)
{
	while (len > 0) {
		ssize_t n;

		if (gz_ended(te->gz)) {
			if (te->state == TX_END)
				return 0;
			gz_restart(te->gz); /* another gzip member follows */
		}
		n = gz_feed(te->gz, p, len, tx_tar_sink, te, cause);
		if (n < 0)
			return -1;
		if (n == 0 && !gz_ended(te->gz))
			NEVER("inflate made no progress");
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Detect the format from the first bytes, then route input to it. */
static int
tx_input(
    struct tar_extract *te, const unsigned char *p, size_t len, char **cause)
{
	while (te->format == FMT_UNKNOWN && len > 0) {
		te->magic[te->nmagic++] = *p++;
		len--;
		if (te->magic[0] != 0x1f)
			te->format = FMT_TAR;
		else if (te->nmagic == 2)
			te->format = te->magic[1] == 0x8b ? FMT_GZIP : FMT_TAR;
		if (te->format == FMT_GZIP) {
			te->gz = gz_new();
			if (tx_gunzip(te, te->magic, te->nmagic, cause) != 0)
				return -1;
		} else if (te->format == FMT_TAR) {
			if (tx_tar(te, te->magic, te->nmagic, cause) != 0)
				return -1;
		}
	}
	if (len == 0)
		return 0;
	if (te->format == FMT_GZIP)
		return tx_gunzip(te, p, len, cause);
	return tx_tar(te, p, len, cause);
}

/* Remember the first error; every later call repeats it. */
static void
tx_failed(struct tar_extract *te, const char *cause)
{
	te->state = TX_FAILED;
	free(te->error);
	te->error = xstrdup(cause);
	tx_file_abandon(te);
}

/* Feed the next len bytes of the archive, in any chunking. */
int
tar_extract_feed(
    struct tar_extract *te, const void *buf, size_t len, char **cause)
{
	if (te->state == TX_FAILED) {
		*cause = xstrdup(te->error);
		return -1;
	}
	if (tx_input(te, buf, len, cause) != 0) {
		tx_failed(te, *cause);
		return -1;
	}
	return 0;
}

/* Apply a directory's mode and mtime, resolving it afresh. */
static int
tx_apply_dir(struct tar_extract *te, struct tx_dir *d, char **cause)
{
	struct timespec ts[2] = {{0, UTIME_OMIT}, d->mtime};
	const char *leaf;
	int dirfd, fd;

	dirfd =
	    afs_open_parent(te->rootfd, &te->cache, d->name, 0, &leaf, cause);
	if (dirfd < 0)
		return -1;
	fd = openat(
	    dirfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		xasprintf(
		    cause, "open directory '%s': %s", d->name, strerror(errno));
		return -1;
	}
	if ((te->flags & TAR_X_LAYER) && fchown(fd, d->uid, d->gid) != 0) {
		xasprintf(
		    cause, "set owner of '%s': %s", d->name, strerror(errno));
		close(fd);
		return -1;
	}
	if (fchmod(fd, d->mode) != 0 || futimens(fd, ts) != 0) {
		xasprintf(cause, "set mode/time of '%s': %s", d->name,
		    strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* Order deferred directories deepest first, so parents are done last. */
static int
tx_dir_cmp(const void *a, const void *b)
{
	const struct tx_dir *da = a, *db = b;
	size_t ca = 0, cb = 0;

	for (const char *p = da->name; *p; p++)
		ca += (*p == '/');
	for (const char *p = db->name; *p; p++)
		cb += (*p == '/');
	if (ca != cb)
		return ca > cb ? -1 : 1;
	return strcmp(da->name, db->name);
}

/* Why the input ended before the archive did, or NULL if it did not. */
static char *
tx_truncated(struct tar_extract *te)
{
	char *s = NULL;

	if (te->format == FMT_UNKNOWN)
		return xstrdup(te->nmagic == 0 ? "empty archive"
		                               : "truncated archive: 1 byte");
	switch (te->state) {
	case TX_END:
		break;
	case TX_HEADER:
		if (te->have > 0)
			xasprintf(&s,
			    "truncated archive: partial header at "
			    "offset %llu",
			    (unsigned long long)te->hdr_offset);
		else
			xasprintf(&s,
			    "truncated archive: no end-of-archive "
			    "marker after %llu headers",
			    (unsigned long long)te->headers);
		break;
	case TX_DATA:
		xasprintf(&s, "truncated archive: '%s' is missing %llu bytes",
		    te->name, (unsigned long long)te->left);
		break;
	case TX_PAD:
		xasprintf(&s,
		    "truncated archive: padding after '%s' is "
		    "missing",
		    te->name);
		break;
	case TX_FAILED:
		NEVER("failed state");
	}
	if (s == NULL && te->format == FMT_GZIP && !gz_ended(te->gz))
		s = xstrdup("truncated gzip data");
	return s;
}

/* The input is complete: check it ended properly, finish directories. */
int
tar_extract_finish(struct tar_extract *te, struct tar_result *out, char **cause)
{
	if (te->state == TX_FAILED) {
		*cause = xstrdup(te->error);
		return -1;
	}
	if ((*cause = tx_truncated(te)) != NULL) {
		tx_failed(te, *cause);
		return -1;
	}
	if (te->ndirs > 1)
		qsort(te->dirs, te->ndirs, sizeof *te->dirs, tx_dir_cmp);
	for (size_t i = 0; i < te->ndirs; i++) {
		if (tx_apply_dir(te, &te->dirs[i], cause) != 0) {
			tx_failed(te, *cause);
			return -1;
		}
	}
	if (out != NULL)
		*out = te->res;
	return 0;
}

/* Free everything, closing any file left half written. */
void
tar_extract_free(struct tar_extract *te)
{
	if (te == NULL)
		return;
	tx_file_abandon(te);
	afs_cache_clear(&te->cache);
	close(te->rootfd);
	gz_free(te->gz);
	tx_clear_overrides(te);
	layer_set_free(te->written);
	for (size_t i = 0; i < te->ndirs; i++)
		free(te->dirs[i].name);
	free(te->dirs);
	free(te->meta);
	free(te->name);
	free(te->top);
	free(te->first_top);
	free(te->error);
	free(te->dest);
	free(te);
}

/* Extract everything readable from fd (to EOF) beneath destination. */
int
tar_extract_fd(
    const char *destination, int fd, struct tar_result *out, char **cause)
{
	struct tar_extract *te;
	char *buf;
	ssize_t n;
	int rc = -1;

	te = tar_extract_new(destination, cause);
	if (te == NULL)
		return -1;
	buf = xmalloc(64 * 1024);
	for (;;) {
		n = read(fd, buf, 64 * 1024);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			xasprintf(cause, "read archive: %s", strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		if (tar_extract_feed(te, buf, (size_t)n, cause) != 0)
			goto out;
	}
	rc = tar_extract_finish(te, out, cause);
out:
	free(buf);
	tar_extract_free(te);
	return rc;
}
