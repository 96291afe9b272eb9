/*
 * beneath.c: open a shared host folder so that no symlink and no swap made
 * between a check and its use can lead anywhere else, and decide whose
 * host ids the guest acts as in it.
 *
 * Used where a --mount folder is used: by vmux before each start (for a
 * clear error) and by vmux-fsd, which hands the very directory it opened
 * to virtiofsd. The allowed root is opened as the configuration names it
 * (the administrator's symlinks there are theirs); everything below it is
 * resolved by openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, so a
 * guest that replaced a nested folder with a symlink while the session
 * was stopped gets the start refused, naming the path.
 *
 * Who owns what the guest writes: the file server runs in a user namespace
 * where guest root is the folder's owner, never root nor a system account
 * (uid and gid below BENEATH_FIRST_ID), so whatever the guest makes there
 * is owned by that user and group; device nodes cannot be made, and no
 * mode with a setuid or setgid bit is let through (vmux-fsd's filter). A
 * writable folder owned by a system account is refused; a read-only one
 * is read as nobody (65534).
 */
#include <pwd.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/common.h"
#include "session.h"

/* Is path equal to root or beneath it (both resolved, no trailing '/')? */
static int
path_under(const char *path, const char *root)
{
	size_t n = strlen(root);

	if (strcmp(root, "/") == 0)
		return *path == '/';
	return strncmp(path, root, n) == 0 &&
	    (path[n] == '\0' || path[n] == '/');
}

/*
 * The allowed root (the longest, among n) that path is beneath, or NULL
 * when none is.
 */
const char *
beneath_root(const char *path, char *const *roots, size_t n)
{
	const char *best = NULL;

	for (size_t i = 0; i < n; i++) {
		if (path_under(path, roots[i]) &&
		    (best == NULL || strlen(roots[i]) > strlen(best)))
			best = roots[i];
	}
	return best;
}

/*
 * Open directory path (absolute, as recorded) beneath root with O_PATH,
 * following no symlink below root. The descriptor, or -1 with cause naming
 * the path and why.
 */
int
beneath_open(const char *root, const char *path, char **cause)
{
	struct open_how how;
	const char *rel;
	int rootfd, fd;

	if (!path_under(path, root)) {
		xasprintf(cause, "%s is not under the allowed mount root %s",
		    path, root);
		return -1;
	}
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		xasprintf(
		    cause, "allowed mount root %s: %s", root, strerror(errno));
		return -1;
	}
	rel = path + (strcmp(root, "/") == 0 ? 1 : strlen(root));
	while (*rel == '/')
		rel++;
	memset(&how, 0, sizeof how);
	how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
	how.resolve =
	    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
	fd = (int)syscall(
	    SYS_openat2, rootfd, *rel != '\0' ? rel : ".", &how, sizeof how);
	if (fd < 0) {
		switch (errno) {
		case ELOOP:
			xasprintf(cause,
			    "%s is a symlink or has one on its path below %s "
			    "(a guest may have put it there): refused",
			    path, root);
			break;
		case ENOTDIR:
			xasprintf(cause, "%s is not a directory", path);
			break;
		case ENOSYS:
			xasprintf(cause,
			    "%s: this kernel has no openat2 (Linux 5.6 or "
			    "later is needed for host mounts)",
			    path);
			break;
		default:
			xasprintf(cause, "%s: %s", path, strerror(errno));
		}
	}
	close(rootfd);
	return fd;
}

/*
 * The host ids guest root acts as in a folder whose status is st: its
 * owner and group, or the owner's own group when the folder's is a system
 * group (root, disk, shadow, ...); nobody for a read-only folder of a
 * system account. 0, or -1 with cause for a writable folder a guest would
 * write to as a system account.
 */
int
beneath_owner(const char *path, const struct stat *st, int ro, uid_t *uid,
    gid_t *gid, char **cause)
{
	struct passwd *pw;

	if (st->st_uid >= BENEATH_FIRST_ID) {
		*uid = st->st_uid;
		*gid = st->st_gid;
		if (*gid < BENEATH_FIRST_ID) {
			pw = getpwuid(st->st_uid);
			*gid = pw != NULL && pw->pw_gid >= BENEATH_FIRST_ID
			    ? pw->pw_gid
			    : BENEATH_NOBODY;
		}
		if (*gid == BENEATH_NOBODY && !ro) {
			xasprintf(cause,
			    "%s belongs to group %lu, a system group: a guest "
			    "would write as it (chgrp it to the owner's group)",
			    path, (unsigned long)st->st_gid);
			return -1;
		}
		return 0;
	}
	if (ro) {
		*uid = BENEATH_NOBODY;
		*gid = BENEATH_NOBODY;
		return 0;
	}
	xasprintf(cause,
	    "%s is owned by %s (uid %lu): a guest writes to a host folder as "
	    "the folder's owner, never as root or a system account (chown it "
	    "to a user, or share it :ro)",
	    path, st->st_uid == 0 ? "root" : "a system account",
	    (unsigned long)st->st_uid);
	return -1;
}
