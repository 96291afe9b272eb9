/*
 * cp-place.c: where a downloaded copy lands, all or nothing.
 *
 * The guest is untrusted. `vmux cp NAME:/dir/x DST` extracts the guest's
 * archive into a private staging directory (DST's extraction directory,
 * ".vmux-cp-XXXXXX", so the final renames stay on one filesystem), with
 * only the source's own top-level name accepted (tar_extract_expect_top).
 * Only when the whole archive was valid is the copy moved into place: a new
 * name is one rename(2); an existing directory is merged entry by entry
 * (docker cp's behaviour), after a first walk has checked that no entry
 * would replace a directory with a file or the reverse. A refused archive
 * leaves the destination exactly as it was (its own times too, put back
 * after the staging directory is removed).
 *
 * For a source ending in "/." (docker cp's "contents of the directory"),
 * every top-level entry is the directory's own content and so allowed; it
 * still goes through staging, so a failed archive changes nothing.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

/*
 * The top-level name the guest's archive of remote must have: its basename,
 * or NULL when remote names a directory's contents ("/dir/.", "/").
 */
char *
cp_source_name(const char *remote)
{
	size_t n = strlen(remote);
	const char *base;

	while (n > 1 && remote[n - 1] == '/')
		n--;
	base = remote + n;
	while (base > remote && base[-1] != '/')
		base--;
	if (base == remote + n || (remote + n - base == 1 && *base == '.') ||
	    (remote + n - base == 2 && base[0] == '.' && base[1] == '.'))
		return NULL;
	return xstrndup(base, (size_t)(remote + n - base));
}

/* A fresh private directory in dir to extract into; path or NULL. */
char *
cp_stage_new(const char *dir, char **cause)
{
	char *path;

	xasprintf(&path, "%s/.vmux-cp-XXXXXX", dir);
	if (mkdtemp(path) == NULL) {
		xasprintf(cause, "cannot make a staging directory in '%s': %s",
		    dir, strerror(errno));
		free(path);
		return NULL;
	}
	return path;
}

/* Put dir's access and modification times back as st had them. */
void
cp_restore_times(const char *dir, const struct stat *st)
{
	struct timespec ts[2] = {st->st_atim, st->st_mtim};

	utimensat(AT_FDCWD, dir, ts, AT_SYMLINK_NOFOLLOW);
}

/*
 * Move (check 0: only check) every entry of directory src into directory
 * dst, merging directories that exist on both sides.
 */
static int
cp_merge(int srcfd, int dstfd, const char *dstpath, int move, char **cause)
{
	struct stat ss, ds;
	struct dirent *de;
	char **names = NULL, *sub;
	size_t n = 0;
	DIR *d;
	int fd, sfd, dfd, rc = 0;

	/* Names first: moving entries out while reading would skip some. */
	fd = openat(srcfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		xasprintf(cause, "staging directory: %s", strerror(errno));
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		names = xreallocarray(names, n + 1, sizeof *names);
		names[n++] = xstrdup(de->d_name);
	}
	closedir(d);
	for (size_t i = 0; i < n && rc == 0; i++) {
		const char *e = names[i];

		if (fstatat(srcfd, e, &ss, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		xasprintf(&sub, "%s/%s", dstpath, e);
		if (fstatat(dstfd, e, &ds, AT_SYMLINK_NOFOLLOW) != 0) {
			if (move && renameat(srcfd, e, dstfd, e) != 0) {
				xasprintf(cause, "cannot create '%s': %s", sub,
				    strerror(errno));
				rc = -1;
			}
		} else if (S_ISDIR(ss.st_mode) && S_ISDIR(ds.st_mode)) {
			sfd = openat(srcfd, e,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			dfd = openat(dstfd, e,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sfd < 0 || dfd < 0) {
				xasprintf(cause, "cannot open '%s': %s", sub,
				    strerror(errno));
				rc = -1;
			} else
				rc = cp_merge(sfd, dfd, sub, move, cause);
			if (sfd >= 0)
				close(sfd);
			if (dfd >= 0)
				close(dfd);
		} else if (S_ISDIR(ss.st_mode) || S_ISDIR(ds.st_mode)) {
			xasprintf(cause, "cannot replace %s '%s' with a %s",
			    S_ISDIR(ds.st_mode) ? "directory" : "file", sub,
			    S_ISDIR(ss.st_mode) ? "directory" : "file");
			rc = -1;
		} else if (move && renameat(srcfd, e, dstfd, e) != 0) {
			xasprintf(cause, "cannot replace '%s': %s", sub,
			    strerror(errno));
			rc = -1;
		}
		free(sub);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

/* Open a directory (following a final symlink or not); fd or -1 (cause). */
static int
cp_open_dir(const char *path, int follow, char **cause)
{
	int fd = open(path,
	    O_RDONLY | O_DIRECTORY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));

	if (fd < 0)
		xasprintf(cause, "cannot open '%s': %s", path, strerror(errno));
	return fd;
}

/*
 * Put the staged copy src at dst: a rename when dst is new or both are
 * non-directories, a checked merge when both are directories. With follow,
 * dst is the user's own destination directory and may be a symlink to one;
 * otherwise a symlink at dst is never followed.
 */
int
cp_place(const char *src, const char *dst, int follow, char **cause)
{
	struct stat ss, ds;
	int sfd, dfd, rc, r;

	if (lstat(src, &ss) != 0) {
		xasprintf(cause, "the guest sent nothing to copy");
		return -1;
	}
	r = follow ? stat(dst, &ds) : lstat(dst, &ds);
	if (r != 0 || (!S_ISDIR(ss.st_mode) && !S_ISDIR(ds.st_mode))) {
		if (rename(src, dst) != 0) {
			xasprintf(cause, "cannot create '%s': %s", dst,
			    strerror(errno));
			return -1;
		}
		return 0;
	}
	if (!S_ISDIR(ss.st_mode) || !S_ISDIR(ds.st_mode)) {
		xasprintf(cause, "cannot replace %s '%s' with a %s",
		    S_ISDIR(ds.st_mode) ? "directory" : "file", dst,
		    S_ISDIR(ss.st_mode) ? "directory" : "file");
		return -1;
	}
	if ((sfd = cp_open_dir(src, 0, cause)) < 0)
		return -1;
	if ((dfd = cp_open_dir(dst, follow, cause)) < 0) {
		close(sfd);
		return -1;
	}
	rc = cp_merge(sfd, dfd, dst, 0, cause);
	if (rc == 0)
		rc = cp_merge(sfd, dfd, dst, 1, cause);
	close(sfd);
	close(dfd);
	return rc;
}
