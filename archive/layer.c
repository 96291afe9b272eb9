/*
 * layer.c: what an OCI image layer adds to tar extraction (TAR_X_LAYER).
 *
 * A layer is a tar applied over the layers below it (OCI image-spec,
 * layer.md). Two of its rules need more than writing members: a member
 * `.wh.NAME` deletes NAME as the lower layers left it, and a member
 * `.wh..wh..opq` in a directory hides everything the lower layers had
 * there. Both apply to the lower layers only, so the extraction keeps the
 * set of paths this layer has written (and their parents): an opaque
 * directory loses every entry not in it. Removal walks beneath the root by
 * descriptor and never follows a symlink (archive_fs.c's rule), so a
 * whiteout can only delete what lies inside the root it was given.
 *
 * The set belongs to its tar_extract; its names are bounded by
 * LAYER_SET_MAX bytes so a layer of endless names fails instead of taking
 * the host's memory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "archive.h"

#define LAYER_SET_MAX (256u << 20) /* bytes of names one layer may write */

/* A set of cleaned path names: open addressing, FNV-1a. */
struct layer_set {
	char **slot;
	size_t cap, used, bytes;
};

/* FNV-1a of a string. */
static uint64_t
layer_hash(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* A new, empty set. */
struct layer_set *
layer_set_new(void)
{
	struct layer_set *s = xcalloc(1, sizeof *s);

	s->cap = 1024;
	s->slot = xcalloc(s->cap, sizeof *s->slot);
	return s;
}

/* Free a set (NULL is fine). */
void
layer_set_free(struct layer_set *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->cap; i++)
		free(s->slot[i]);
	free(s->slot);
	free(s);
}

/* The slot for the first n bytes of name: where it is, or where it goes. */
static size_t
layer_set_find(const struct layer_set *s, const char *name, size_t n)
{
	size_t i = (size_t)layer_hash(name, n) & (s->cap - 1);

	while (s->slot[i] != NULL &&
	    (strlen(s->slot[i]) != n || memcmp(s->slot[i], name, n) != 0))
		i = (i + 1) & (s->cap - 1);
	return i;
}

/* Is name (cleaned, "" for the root) in the set? */
int
layer_set_has(const struct layer_set *s, const char *name)
{
	return s->slot[layer_set_find(s, name, strlen(name))] != NULL;
}

/* Add the first n bytes of name; 1 if it was new. */
static int
layer_set_put(struct layer_set *s, const char *name, size_t n)
{
	size_t i;

	if (s->used * 2 >= s->cap) {
		struct layer_set grown = {
		    xcalloc(s->cap * 2, sizeof(char *)), s->cap * 2, 0, 0};

		for (size_t k = 0; k < s->cap; k++) {
			if (s->slot[k] == NULL)
				continue;
			grown.slot[layer_set_find(&grown, s->slot[k],
			    strlen(s->slot[k]))] = s->slot[k];
		}
		free(s->slot);
		s->slot = grown.slot;
		s->cap = grown.cap;
	}
	i = layer_set_find(s, name, n);
	if (s->slot[i] != NULL)
		return 0;
	s->slot[i] = xstrndup(name, n);
	s->used++;
	s->bytes += n + 1 + sizeof(char *) * 2;
	return 1;
}

/*
 * Record that this layer wrote name (at most LAYER_NAME_MAX bytes, as
 * tar_extract checks every layer member first, so its parents cost no
 * more than that squared), and so keeps each of its parents. -1 with
 * cause past LAYER_SET_MAX.
 */
int
layer_set_add(struct layer_set *s, const char *name, char **cause)
{
	size_t n = strlen(name);

	if (!layer_set_put(s, name, n))
		return 0;
	while (n > 0 && s->bytes <= LAYER_SET_MAX) { /* parents, until one
		                                        is already known */
		while (n > 0 && name[n - 1] != '/')
			n--;
		if (n == 0)
			break;
		n--; /* drop the '/' */
		if (!layer_set_put(s, name, n))
			break;
	}
	if (s->bytes > LAYER_SET_MAX) {
		xasprintf(cause, "layer writes more than %u MiB of names",
		    LAYER_SET_MAX >> 20);
		return -1;
	}
	return 0;
}

/* Remove leaf beneath dirfd and everything under it, following no link. */
static int
layer_rmtree_at(int parent, const char *leaf, const char *name, char **cause)
{
	struct dirent *de;
	DIR *d;
	int fd;

	if (*leaf == '\0' || strcmp(leaf, ".") == 0 || strcmp(leaf, "..") == 0)
		NEVER("removing . or .. of a layer's root");

	if (unlinkat(parent, leaf, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM) {
		xasprintf(cause, "remove '%s': %s", name, strerror(errno));
		return -1;
	}
	fd = openat(
	    parent, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		xasprintf(cause, "remove '%s': %s", name, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (layer_rmtree_at(dirfd(d), de->d_name, name, cause) != 0) {
			closedir(d);
			return -1;
		}
	}
	closedir(d);
	if (unlinkat(parent, leaf, AT_REMOVEDIR) != 0 && errno != ENOENT) {
		xasprintf(cause, "remove '%s': %s", name, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Remove whatever is at leaf beneath dirfd (name is its cleaned path, for
 * messages): what an upper layer's entry of another type replaces.
 */
int
layer_remove(int parent, const char *leaf, const char *name, char **cause)
{
	return layer_rmtree_at(parent, leaf, name, cause);
}

/*
 * In the directory fd (cleaned path dir), remove every entry this layer
 * did not write; recurse into the directories it did.
 */
static int
layer_opaque_at(
    const struct layer_set *s, int fd, const char *dir, char **cause)
{
	struct dirent *de;
	char *path;
	DIR *d;
	int sub, rc = 0;

	if ((d = fdopendir(fd)) == NULL) {
		xasprintf(cause, "read '%s': %s", dir, strerror(errno));
		close(fd);
		return -1;
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		xasprintf(&path, "%s%s%s", dir, *dir ? "/" : "", de->d_name);
		if (!layer_set_has(s, path))
			rc = layer_rmtree_at(dirfd(d), de->d_name, path, cause);
		else if ((sub = openat(dirfd(d), de->d_name,
		              O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		                  O_CLOEXEC)) >= 0)
			rc = layer_opaque_at(s, sub, path, cause);
		free(path);
	}
	closedir(d);
	return rc;
}

/*
 * Act on a whiteout member: name is its cleaned path, whose last component
 * starts with ".wh.". The cache is cleared afterwards, since a directory
 * it held open may be gone. 0, or -1 with cause.
 */
int
layer_whiteout(int rootfd, struct afs_cache *c, const struct layer_set *s,
    const char *name, char **cause)
{
	const char *slash = strrchr(name, '/'), *leaf, *victim;
	char *dir, *target;
	int parent, fd, rc;

	leaf = slash != NULL ? slash + 1 : name;
	dir = xstrndup(name, slash != NULL ? (size_t)(slash - name) : 0);
	if (strcmp(leaf, ".wh..wh..opq") == 0) {
		parent = *dir
		    ? afs_open_parent(rootfd, c, name, 0, &victim, cause)
		    : rootfd;
		if (parent < 0) {
			rc = errno == ENOENT ? 0 : -1;
			if (rc == 0) {
				free(*cause);
				*cause = NULL;
			}
			free(dir);
			return rc;
		}
		fd = fcntl(parent, F_DUPFD_CLOEXEC, 0);
		afs_cache_clear(c);
		rc = fd < 0 ? -1 : layer_opaque_at(s, fd, dir, cause);
		if (fd < 0)
			xasprintf(cause, "dup: %s", strerror(errno));
		free(dir);
		return rc;
	}
	if (strncmp(leaf, ".wh..wh.", 8) == 0) {
		free(dir); /* aufs's own bookkeeping */
		return 0;
	}
	if (leaf[4] == '\0' || strcmp(leaf + 4, ".") == 0 ||
	    strcmp(leaf + 4, "..") == 0) {
		xasprintf(
		    cause, "refusing whiteout '%s': it names no entry", name);
		free(dir);
		return -1;
	}
	xasprintf(&target, "%s%s%s", dir, *dir ? "/" : "", leaf + 4);
	free(dir);
	rc = 0;
	if (!layer_set_has(s, target)) { /* lower layers only */
		parent = afs_open_parent(rootfd, c, target, 0, &victim, cause);
		if (parent < 0 && errno == ENOENT) {
			free(*cause);
			*cause = NULL;
		} else if (parent < 0)
			rc = -1;
		else
			rc = layer_rmtree_at(parent, victim, target, cause);
		afs_cache_clear(c);
	}
	free(target);
	return rc;
}
