/*
 * tar_export.c: a file or directory tree as a tar stream, pulled in chunks.
 *
 * tar_export_read fills the caller's buffer with the next bytes of the
 * archive, so a non-blocking writer can pull exactly as much as its socket
 * takes. Output is POSIX ustar with pax records only when a field does not
 * fit (long names and link targets, sizes >= 8 GiB, odd times, big ids),
 * readable by GNU tar, bsdtar, Python's tarfile and tar_extract.c.
 *
 * Members are named relative to the path's parent, like
 * `tar -C dirname basename`, or under arcname. Directory entries are sorted
 * by name, so the same tree gives the same bytes. Symlinks are stored as
 * links and never followed; files with several links become a file and
 * hard links to it; sockets are skipped. Each directory being listed holds
 * one descriptor; memory is one directory's names per level plus one
 * header. A file that shrinks while read is padded with zeros, one that
 * grows is cut at the size its header promised.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/common.h"
#include "archive.h"

struct xp_level {
	int dirfd;
	char *arcpath; /* the directory's member name, no trailing '/' */
	char **names;
	size_t n, i;
};

struct xp_link {
	dev_t dev;
	ino_t ino;
	char *name; /* NULL: empty slot */
};

struct tar_export {
	int failed;
	char *error;
	int ended;

	struct xp_level *stack;
	size_t depth, cap;

	unsigned char *pend; /* header bytes not yet handed out */
	size_t pend_len, pend_off;

	int fd; /* the regular file whose data is next */
	uint64_t left;
	size_t pad;
	char *cur;

	struct xp_link *links;
	size_t nlinks, links_cap;

	int exclude;
	dev_t ex_dev;
	ino_t ex_ino;

	struct tar_result res;
};

/* Queue bytes for output. */
static void
xp_queue(struct tar_export *te, const void *buf, size_t len)
{
	if (te->pend_off == te->pend_len)
		te->pend_off = te->pend_len = 0;
	te->pend = xrealloc(te->pend, te->pend_len + len);
	memcpy(te->pend + te->pend_len, buf, len);
	te->pend_len += len;
}

/* Write the checksum of a finished header block. */
static void
xp_checksum(unsigned char *h)
{
	memset(h + 148, ' ', 8);
	snprintf((char *)h + 148, 8, "%06o", tar_checksum(h, 0));
	h[155] = ' ';
}

/* Store s in a field of len bytes, or say it does not fit. */
static int
xp_field(unsigned char *f, size_t len, const char *s)
{
	size_t n = strlen(s);

	memcpy(f, s, n > len ? len : n);
	return n <= len;
}

/* Put a name into name (and prefix, if it splits there); 0 if it cannot. */
static int
xp_name(unsigned char *h, const char *name)
{
	size_t n = strlen(name);

	if (n <= 100)
		return xp_field(h, 100, name);
	/* ustar: prefix (<= 155) '/' name (<= 100); the slash is implied. */
	for (size_t i = n - 1; i > 0; i--) {
		if (name[i] != '/' || i > 155)
			continue;
		if (n - i - 1 > 100)
			break;
		if (n - i - 1 == 0)
			continue;
		memcpy(h + 345, name, i);
		memcpy(h, name + i + 1, n - i - 1);
		return 1;
	}
	xp_field(h, 100, name);
	return 0;
}

/* Queue the header(s) of one member: pax records first if needed. */
static void
xp_header(struct tar_export *te, char type, const char *name, const char *link,
    const struct stat *st, uint64_t size)
{
	unsigned char h[TAR_BLOCK];
	char *pax = NULL, num[32];
	size_t paxlen = 0;

	memset(h, 0, sizeof h);
	if (!xp_name(h, name))
		tar_pax_add(&pax, &paxlen, "path", name, strlen(name));
	if (link != NULL && !xp_field(h + 157, 100, link))
		tar_pax_add(&pax, &paxlen, "linkpath", link, strlen(link));
	tar_put_number(h + 100, 8, st->st_mode & 07777);
	if (!tar_fits_octal(8, st->st_uid)) {
		snprintf(
		    num, sizeof num, "%llu", (unsigned long long)st->st_uid);
		tar_pax_add(&pax, &paxlen, "uid", num, strlen(num));
	} else
		tar_put_number(h + 108, 8, st->st_uid);
	if (!tar_fits_octal(8, st->st_gid)) {
		snprintf(
		    num, sizeof num, "%llu", (unsigned long long)st->st_gid);
		tar_pax_add(&pax, &paxlen, "gid", num, strlen(num));
	} else
		tar_put_number(h + 116, 8, st->st_gid);
	if (!tar_fits_octal(12, (int64_t)size)) {
		snprintf(num, sizeof num, "%llu", (unsigned long long)size);
		tar_pax_add(&pax, &paxlen, "size", num, strlen(num));
	}
	tar_put_number(h + 124, 12, (int64_t)size);
	if (!tar_fits_octal(12, st->st_mtim.tv_sec)) {
		snprintf(
		    num, sizeof num, "%lld", (long long)st->st_mtim.tv_sec);
		tar_pax_add(&pax, &paxlen, "mtime", num, strlen(num));
	}
	tar_put_number(h + 136, 12, st->st_mtim.tv_sec);
	h[156] = (unsigned char)type;
	memcpy(h + 257,
	    "ustar\0"
	    "00",
	    8);
	if (type == '3' || type == '4') {
		tar_put_number(h + 329, 8, major(st->st_rdev));
		tar_put_number(h + 337, 8, minor(st->st_rdev));
	}
	xp_checksum(h);

	if (pax != NULL) {
		unsigned char ph[TAR_BLOCK] = {0};
		static const unsigned char zeros[TAR_BLOCK];

		memcpy(ph, "././@PaxHeader", 14);
		tar_put_number(ph + 100, 8, 0644);
		tar_put_number(ph + 124, 12, (int64_t)paxlen);
		if (tar_fits_octal(12, st->st_mtim.tv_sec))
			tar_put_number(ph + 136, 12, st->st_mtim.tv_sec);
		ph[156] = 'x';
		memcpy(ph + 257,
		    "ustar\0"
		    "00",
		    8);
		xp_checksum(ph);
		xp_queue(te, ph, sizeof ph);
		xp_queue(te, pax, paxlen);
		xp_queue(
		    te, zeros, (TAR_BLOCK - paxlen % TAR_BLOCK) % TAR_BLOCK);
		free(pax);
	}
	xp_queue(te, h, sizeof h);
	te->res.entry_count++;
}

/* Fail the export with a message; later reads repeat it. */
static int xp_fail(struct tar_export *te, char **cause, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int
xp_fail(struct tar_export *te, char **cause, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	xvasprintf(cause, fmt, ap);
	va_end(ap);
	te->failed = 1;
	free(te->error);
	te->error = xstrdup(*cause);
	return -1;
}

/* Hash slot for a (dev, ino) pair in the hard link table. */
static struct xp_link *
xp_link_slot(struct tar_export *te, dev_t dev, ino_t ino)
{
	size_t i = (size_t)((ino * 0x9e3779b97f4a7c15ull) ^ dev);

	for (i &= te->links_cap - 1;; i = (i + 1) & (te->links_cap - 1)) {
		struct xp_link *l = &te->links[i];

		if (l->name == NULL || (l->dev == dev && l->ino == ino))
			return l;
	}
}

/* The member name a file with several links was first stored under. */
static const char *
xp_link_find(struct tar_export *te, const struct stat *st)
{
	if (te->links_cap == 0)
		return NULL;
	return xp_link_slot(te, st->st_dev, st->st_ino)->name;
}

/* Remember where a file with several links was stored. */
static void
xp_link_add(struct tar_export *te, const struct stat *st, const char *name)
{
	struct xp_link *l;

	if ((te->nlinks + 1) * 2 > te->links_cap) {
		struct xp_link *old = te->links;
		size_t oldcap = te->links_cap;

		te->links_cap = oldcap ? oldcap * 2 : 64;
		te->links = xcalloc(te->links_cap, sizeof *te->links);
		for (size_t i = 0; i < oldcap; i++) {
			if (old[i].name != NULL)
				*xp_link_slot(te, old[i].dev, old[i].ino) =
				    old[i];
		}
		free(old);
	}
	l = xp_link_slot(te, st->st_dev, st->st_ino);
	l->dev = st->st_dev;
	l->ino = st->st_ino;
	l->name = xstrdup(name);
	te->nlinks++;
}

/* Sort helper for directory listings. */
static int
xp_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Push a directory: list its names (sorted) and keep its fd. */
static int
xp_push(struct tar_export *te, int fd, const char *arcpath, char **cause)
{
	struct xp_level *l;
	struct dirent *de;
	DIR *d;
	int dfd;

	dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dfd < 0 || (d = fdopendir(dfd)) == NULL) {
		if (dfd >= 0)
			close(dfd);
		close(fd);
		return xp_fail(
		    te, cause, "list '%s': %s", arcpath, strerror(errno));
	}
	if (te->depth == te->cap) {
		te->cap = te->cap ? te->cap * 2 : 8;
		te->stack =
		    xreallocarray(te->stack, te->cap, sizeof *te->stack);
	}
	l = &te->stack[te->depth++];
	memset(l, 0, sizeof *l);
	l->dirfd = fd;
	l->arcpath = xstrdup(arcpath);
	size_t cap = 0;
	errno = 0;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (l->n == cap) {
			cap = cap ? cap * 2 : 16;
			l->names =
			    xreallocarray(l->names, cap, sizeof *l->names);
		}
		l->names[l->n++] = xstrdup(de->d_name);
	}
	if (errno != 0) {
		closedir(d);
		return xp_fail(
		    te, cause, "list '%s': %s", arcpath, strerror(errno));
	}
	closedir(d);
	if (l->n > 1)
		qsort(l->names, l->n, sizeof *l->names, xp_name_cmp);
	return 0;
}

/* Pop the innermost directory. */
static void
xp_pop(struct tar_export *te)
{
	struct xp_level *l = &te->stack[--te->depth];

	close(l->dirfd);
	for (size_t i = 0; i < l->n; i++)
		free(l->names[i]);
	free(l->names);
	free(l->arcpath);
}

/* Queue one member: name beneath dirfd, stored as arcpath. */
static int
xp_entry(struct tar_export *te, int dirfd, const char *name,
    const char *arcpath, char **cause)
{
	struct stat st, st2;
	const char *first;
	char *s;
	int fd;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		if (errno == ENOENT && te->depth > 0)
			return 0; /* removed since listed */
		return xp_fail(
		    te, cause, "stat '%s': %s", arcpath, strerror(errno));
	}
	if (te->exclude && st.st_dev == te->ex_dev && st.st_ino == te->ex_ino)
		return 0;

	switch (st.st_mode & S_IFMT) {
	case S_IFREG:
		if (st.st_nlink > 1 &&
		    (first = xp_link_find(te, &st)) != NULL) {
			xp_header(te, '1', arcpath, first, &st, 0);
			return 0;
		}
		fd = openat(dirfd, name,
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			return xp_fail(te, cause, "open '%s': %s", arcpath,
			    strerror(errno));
		if (fstat(fd, &st2) != 0 || !S_ISREG(st2.st_mode) ||
		    st2.st_ino != st.st_ino || st2.st_dev != st.st_dev) {
			close(fd);
			return xp_fail(te, cause,
			    "'%s' changed while being "
			    "read",
			    arcpath);
		}
		if (st.st_nlink > 1)
			xp_link_add(te, &st2, arcpath);
		xp_header(te, '0', arcpath, NULL, &st2, (uint64_t)st2.st_size);
		te->fd = fd;
		te->left = (uint64_t)st2.st_size;
		te->pad =
		    (size_t)((TAR_BLOCK - te->left % TAR_BLOCK) % TAR_BLOCK);
		free(te->cur);
		te->cur = xstrdup(arcpath);
		return 0;
	case S_IFDIR:
		fd = openat(dirfd, name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return xp_fail(te, cause, "open '%s': %s", arcpath,
			    strerror(errno));
		xasprintf(&s, "%s/", arcpath);
		xp_header(te, '5', s, NULL, &st, 0);
		free(s);
		return xp_push(te, fd, arcpath, cause);
	case S_IFLNK: {
		size_t cap = (size_t)st.st_size + 1;
		ssize_t n;

		if (cap < 64)
			cap = 64;
		for (;;) {
			s = xmalloc(cap);
			n = readlinkat(dirfd, name, s, cap);
			if (n < 0) {
				free(s);
				return xp_fail(te, cause, "readlink '%s': %s",
				    arcpath, strerror(errno));
			}
			if ((size_t)n < cap)
				break;
			free(s);
			cap *= 2;
		}
		s[n] = '\0';
		xp_header(te, '2', arcpath, s, &st, 0);
		free(s);
		return 0;
	}
	case S_IFCHR:
		xp_header(te, '3', arcpath, NULL, &st, 0);
		return 0;
	case S_IFBLK:
		xp_header(te, '4', arcpath, NULL, &st, 0);
		return 0;
	case S_IFIFO:
		xp_header(te, '6', arcpath, NULL, &st, 0);
		return 0;
	default:
		log_debug("%s: skipping socket '%s'", __func__, arcpath);
		te->res.skipped++;
		return 0;
	}
}

/* Move on to the next member, or the end-of-archive blocks. */
static int
xp_next(struct tar_export *te, char **cause)
{
	static const unsigned char zeros[2 * TAR_BLOCK];

	while (te->depth > 0) {
		struct xp_level *l = &te->stack[te->depth - 1];

		if (l->i < l->n) {
			const char *name = l->names[l->i++];
			char *arcpath;
			int rc;

			xasprintf(&arcpath, "%s/%s", l->arcpath, name);
			rc = xp_entry(te, l->dirfd, name, arcpath, cause);
			free(arcpath);
			return rc;
		}
		xp_pop(te);
	}
	xp_queue(te, zeros, sizeof zeros);
	te->ended = 1;
	return 0;
}

/*
 * Start exporting path (file, directory tree or symlink) under arcname, or
 * under its basename when arcname is NULL. The top-level member is checked
 * now, so a missing path fails here rather than mid-stream.
 */
struct tar_export *
tar_export_new(const char *path, const char *arcname, char **cause)
{
	struct tar_export *te;
	char *copy, *slash, *base, *clean = NULL;
	const char *dir;
	struct stat st;
	int dirfd;

	if (*path == '\0') {
		xasprintf(cause, "empty path");
		return NULL;
	}
	copy = xstrdup(path);
	for (size_t n = strlen(copy); n > 1 && copy[n - 1] == '/'; n--)
		copy[n - 1] = '\0';
	slash = strrchr(copy, '/');
	if (slash == NULL) {
		dir = ".";
		base = copy;
	} else if (slash[1] == '\0') {
		dir = "/"; /* path is "/" */
		base = slash;
		*base = '.';
	} else {
		*slash = '\0';
		dir = (slash == copy) ? "/" : copy;
		base = slash + 1;
	}
	if (arcname == NULL) {
		arcname = base;
		if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
			arcname = ".";
	}
	if (strcmp(arcname, ".") != 0 &&
	    afs_clean_name(arcname, strlen(arcname), &clean, cause) != 0) {
		free(copy);
		return NULL;
	}
	if (clean == NULL || *clean == '\0') {
		free(clean);
		clean = xstrdup(".");
	}
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		xasprintf(cause, "open '%s': %s", dir, strerror(errno));
		free(copy);
		free(clean);
		return NULL;
	}

	te = xcalloc(1, sizeof *te);
	te->fd = -1;
	if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		xasprintf(cause, "'%s': %s", path, strerror(errno));
		goto fail;
	}
	if (strcmp(clean, ".") == 0 && !S_ISDIR(st.st_mode)) {
		xasprintf(cause, "cannot store '%s' as '.'", path);
		goto fail;
	}
	if (xp_entry(te, dirfd, base, clean, cause) != 0)
		goto fail;
	close(dirfd);
	free(copy);
	free(clean);
	return te;

fail:
	close(dirfd);
	free(copy);
	free(clean);
	tar_export_free(te);
	return NULL;
}

/* Leave out one file (the archive being written, if it is in the tree). */
void
tar_export_exclude(struct tar_export *te, dev_t dev, ino_t ino)
{
	te->exclude = 1;
	te->ex_dev = dev;
	te->ex_ino = ino;
}

/*
 * Fill buf with up to len archive bytes: returns how many, 0 at the end,
 * -1 with cause on error (after handing out the bytes made before it).
 */
ssize_t
tar_export_read(struct tar_export *te, void *buf, size_t len, char **cause)
{
	unsigned char *out = buf;
	size_t got = 0;

	if (te->failed) {
		*cause = xstrdup(te->error);
		return -1;
	}
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	while (got < len) {
		size_t n;

		if (te->pend_off < te->pend_len) {
			n = te->pend_len - te->pend_off;
			if (n > len - got)
				n = len - got;
			memcpy(out + got, te->pend + te->pend_off, n);
			te->pend_off += n;
			got += n;
		} else if (te->left > 0) {
			ssize_t r;

			n = len - got;
			if (n > te->left)
				n = (size_t)te->left;
			r = read(te->fd, out + got, n);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0) {
				xp_fail(te, cause, "read '%s': %s", te->cur,
				    strerror(errno));
				if (got == 0)
					return -1;
				free(*cause); /* the next call reports it */
				*cause = NULL;
				break;
			}
			if (r == 0) {
				/* Shrunk: keep the promise with zeros. */
				log_debug("%s: '%s' shrank", __func__, te->cur);
				memset(out + got, 0, n);
				r = (ssize_t)n;
			}
			te->left -= (uint64_t)r;
			te->res.bytes_written += (uint64_t)r;
			got += (size_t)r;
		} else if (te->pad > 0) {
			n = te->pad < len - got ? te->pad : len - got;
			memset(out + got, 0, n);
			te->pad -= n;
			got += n;
		} else if (te->fd >= 0) {
			close(te->fd);
			te->fd = -1;
		} else if (te->ended)
			break;
		else if (xp_next(te, cause) != 0) {
			if (got == 0)
				return -1;
			free(*cause); /* the next call reports it */
			*cause = NULL;
			break;
		}
	}
	return (ssize_t)got;
}

/* What has been exported so far (all of it once read returned 0). */
void
tar_export_result(struct tar_export *te, struct tar_result *out)
{
	*out = te->res;
}

/* Free the export, closing every descriptor it holds. */
void
tar_export_free(struct tar_export *te)
{
	if (te == NULL)
		return;
	while (te->depth > 0)
		xp_pop(te);
	free(te->stack);
	if (te->fd >= 0)
		close(te->fd);
	for (size_t i = 0; i < te->links_cap; i++)
		free(te->links[i].name);
	free(te->links);
	free(te->pend);
	free(te->cur);
	free(te->error);
	free(te);
}

/* Write the whole archive of path to out_fd (blocking). */
int
tar_export_fd(const char *path, const char *arcname, int out_fd,
    struct tar_result *out, char **cause)
{
	struct tar_export *te;
	struct stat st;
	char *buf;
	ssize_t n;
	int rc = -1;

	te = tar_export_new(path, arcname, cause);
	if (te == NULL)
		return -1;
	if (fstat(out_fd, &st) == 0 && S_ISREG(st.st_mode))
		tar_export_exclude(te, st.st_dev, st.st_ino);
	buf = xmalloc(64 * 1024);
	while ((n = tar_export_read(te, buf, 64 * 1024, cause)) > 0) {
		if (write_all(out_fd, buf, (size_t)n) < 0) {
			xasprintf(cause, "write archive: %s", strerror(errno));
			goto out;
		}
	}
	if (n == 0) {
		if (out != NULL)
			tar_export_result(te, out);
		rc = 0;
	}
out:
	free(buf);
	tar_export_free(te);
	return rc;
}
