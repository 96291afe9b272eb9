/*
 * archive_fs.c: resolving archive paths beneath a destination directory.
 *
 * Every path is cleaned first (leading '/' stripped, "." and empty
 * components dropped, ".." refused), then walked one component at a time
 * with openat(O_NOFOLLOW | O_DIRECTORY) from a descriptor of the
 * destination, so no symlink, pre-existing or extracted, is ever followed.
 * Single components without '/' or ".." cannot leave the directory they are
 * looked up in, which is what keeps every entry beneath the destination.
 * openat2(RESOLVE_BENEATH) would give the same guarantee in one call; the
 * component walk needs no fallback and the cache below makes it cheap.
 *
 * The cache keeps the last parent directory open (consecutive entries of
 * an archive usually share it); the caller owns the cache, not its fd.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "archive.h"

/*
 * Clean an archive member name of len bytes into *out ("" for the
 * destination itself). Refuses NUL bytes and ".." components.
 */
int
afs_clean_name(const char *in, size_t len, char **out, char **cause)
{
	char *buf, *o;
	size_t i = 0;

	if (memchr(in, '\0', len) != NULL) {
		xasprintf(cause, "member name contains a NUL byte");
		return -1;
	}
	buf = o = xmalloc(len + 1);
	while (i < len) {
		size_t start, n;

		while (i < len && in[i] == '/')
			i++;
		start = i;
		while (i < len && in[i] != '/')
			i++;
		n = i - start;
		if (n == 0 || (n == 1 && in[start] == '.'))
			continue;
		if (n == 2 && in[start] == '.' && in[start + 1] == '.') {
			free(buf);
			xasprintf(cause,
			    "unsafe member name '%.*s': contains '..'",
			    (int)(len > 200 ? 200 : len), in);
			return -1;
		}
		if (o != buf)
			*o++ = '/';
		memcpy(o, in + start, n);
		o += n;
	}
	*o = '\0';
	*out = buf;
	return 0;
}

/*
 * Whether a symlink at cleaned name may point at target: relative, and any
 * ".." only at the start, no more of them than the link's depth. A ".."
 * after a name could climb out of wherever a symlink named earlier in the
 * target leads, so it is refused even when lexically harmless.
 */
int
afs_link_target_safe(const char *name, const char *target, const char **why)
{
	const char *p;
	int depth = 0, seen_name = 0;

	if (*target == '\0') {
		*why = "empty symlink target";
		return 0;
	}
	if (*target == '/') {
		*why = "absolute symlink target";
		return 0;
	}
	for (p = name; *p != '\0'; p++) {
		if (*p == '/')
			depth++;
	}
	p = target;
	while (*p != '\0') {
		size_t n;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			if (seen_name) {
				*why = "symlink target has '..' after a name";
				return 0;
			}
			if (depth == 0) {
				*why = "symlink target leaves the destination";
				return 0;
			}
			depth--;
		} else if (n > 0 && !(n == 1 && p[0] == '.'))
			seen_name = 1;
		p += n;
	}
	return 1;
}

/*
 * Open the destination directory, creating it and its parents if missing.
 * The destination itself is trusted: symlinks in it are followed.
 */
int
afs_open_root(const char *dest, char **cause)
{
	char *copy, *p;
	struct stat st;
	int fd;

	if (*dest == '\0') {
		xasprintf(cause, "empty destination");
		return -1;
	}
	copy = xstrdup(dest);
	for (p = copy + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;

		*p = '\0';
		if (mkdir(copy, 0777) != 0 && errno != EEXIST) {
			xasprintf(cause, "create destination '%s': %s", copy,
			    strerror(errno));
			free(copy);
			return -1;
		}
		*p = c;
		if (c == '\0')
			break;
	}
	free(copy);
	fd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOTDIR ||
		    (stat(dest, &st) == 0 && !S_ISDIR(st.st_mode)))
			xasprintf(
			    cause, "destination '%s' is not a directory", dest);
		else
			xasprintf(cause, "open destination '%s': %s", dest,
			    strerror(errno));
		return -1;
	}
	return fd;
}

/* Open one component beneath dirfd as a directory, never following links. */
static int
afs_step(
    int dirfd, const char *comp, int create, const char *name, char **cause)
{
	struct stat st;
	int fd, saved;

	fd = openat(
	    dirfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		if (mkdirat(dirfd, comp, 0777) != 0 && errno != EEXIST) {
			xasprintf(cause, "mkdir '%s' for '%s': %s", comp, name,
			    strerror(errno));
			return -1;
		}
		fd = openat(dirfd, comp,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd >= 0)
		return fd;
	saved = errno;
	if (fstatat(dirfd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode))
		xasprintf(cause,
		    "refusing to extract '%s': '%s' is a "
		    "symbolic link",
		    name, comp);
	else if (saved == ENOTDIR || saved == ELOOP)
		xasprintf(cause, "cannot extract '%s': '%s' is not a directory",
		    name, comp);
	else
		xasprintf(cause, "open '%s' for '%s': %s", comp, name,
		    strerror(saved));
	errno = saved; /* ENOENT: a caller may take "missing" as no error */
	return -1;
}

/*
 * Open the directory holding cleaned name (not "") and point *leaf at its
 * last component. Missing directories are created when create is set. The
 * returned fd belongs to the cache.
 */
int
afs_open_parent(int rootfd, struct afs_cache *c, const char *name, int create,
    const char **leaf, char **cause)
{
	const char *slash = strrchr(name, '/'), *p;
	size_t dirlen = slash ? (size_t)(slash - name) : 0;
	char comp[NAME_MAX + 1];
	int fd, saved;

	*leaf = slash ? slash + 1 : name;
	if (dirlen == 0)
		return rootfd;
	if (c->path != NULL && strlen(c->path) == dirlen &&
	    memcmp(c->path, name, dirlen) == 0)
		return c->fd;

	/* Start from the cached directory if it is an ancestor. */
	fd = rootfd;
	p = name;
	if (c->path != NULL) {
		size_t cl = strlen(c->path);

		if (cl < dirlen && memcmp(c->path, name, cl) == 0 &&
		    name[cl] == '/') {
			fd = c->fd;
			p = name + cl + 1;
		}
	}
	while (p < name + dirlen) {
		size_t n = strcspn(p, "/");
		int next;

		if (n > NAME_MAX) {
			xasprintf(
			    cause, "cannot extract '%s': name too long", name);
			goto fail;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		next = afs_step(fd, comp, create, name, cause);
		saved = errno;
		if (fd != rootfd && fd != c->fd)
			close(fd);
		if (next < 0) {
			errno = saved;
			return -1;
		}
		fd = next;
		p += n + 1;
	}
	afs_cache_clear(c);
	c->path = xstrndup(name, dirlen);
	c->fd = fd;
	return fd;

fail:
	if (fd != rootfd && fd != c->fd)
		close(fd);
	return -1;
}

/* Forget the cached directory. */
void
afs_cache_clear(struct afs_cache *c)
{
	if (c->path != NULL)
		close(c->fd);
	free(c->path);
	c->path = NULL;
	c->fd = -1;
}
