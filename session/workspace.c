/*
 * workspace.c: a session's workspace disk, the files that outlive its VM.
 *
 * A workspace is a sparse raw image holding one ext4 file system, made on
 * the host by mkfs.ext4 (e2fsprogs) without root, attached to the guest
 * with virtio-blk and mounted at /workspace by vmux-init. The image is
 * created sparse with lazy inode tables, so a 4 GiB workspace costs about
 * 2 MiB on the host until the guest writes to it. vmux never reads the
 * guest's file system on the host (no fsck, no loop mount): the guest owns
 * what is inside, and the host only copies, moves or deletes the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "session.h"

/* Where mkfs.ext4 lives when PATH (a user's, without sbin) misses it. */
static const char *const mkfs_dirs[] = {"/usr/sbin", "/sbin"};

/* ext4's superblock: 1024 bytes in, magic 0xEF53 at byte 56 of it. */
#define EXT_SUPER_OFF   1024
#define EXT_MAGIC_OFF   56
#define EXT_MAGIC       0xEF53
#define MKFS_OUTPUT_MAX 4096

/* The mkfs.ext4 program, or NULL with cause. Free it. */
char *
mkfs_find(char **cause)
{
	char *p = find_in_path("mkfs.ext4");
	size_t i;

	for (i = 0; p == NULL && i < sizeof mkfs_dirs / sizeof *mkfs_dirs;
	     i++) {
		xasprintf(&p, "%s/mkfs.ext4", mkfs_dirs[i]);
		if (access(p, X_OK) != 0) {
			free(p);
			p = NULL;
		}
	}
	if (p == NULL)
		xasprintf(cause,
		    "mkfs.ext4 not found (install the e2fsprogs "
		    "package)");
	return p;
}

/*
 * Run argv with a minimal environment, output captured; 0 if it exited 0,
 * else -1 with cause quoting its output.
 */
int
run_quiet(char *const argv[], char **cause)
{
	static char *const envp[] = {
	    "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL};
	posix_spawn_file_actions_t fa;
	char out[MKFS_OUTPUT_MAX], *safe;
	size_t got = 0;
	int p[2], status, rc;
	pid_t pid;
	ssize_t n;

	if (pipe2(p, O_CLOEXEC) != 0) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_adddup2(&fa, p[1], 2);
	rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (rc != 0) {
		close(p[0]);
		xasprintf(cause, "cannot run %s: %s", argv[0], strerror(rc));
		return -1;
	}
	for (;;) {
		n = read(p[0], out + got, sizeof out - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == sizeof out - 1) { /* keep draining, keep the start */
			char sink[4096];
			while ((n = read(p[0], sink, sizeof sink)) > 0 ||
			    (n < 0 && errno == EINTR))
				;
			break;
		}
	}
	close(p[0]);
	out[got] = '\0';
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	safe = str_printable(out, 0);
	xasprintf(
	    cause, "%s failed%s%s", argv[0], *safe != '\0' ? ": " : "", safe);
	free(safe);
	return -1;
}

/*
 * Make a new workspace of size_mb at path (which must not exist): a sparse
 * file and an empty ext4 file system labelled "workspace", owned by root
 * (the guest's user). On failure nothing is left at path.
 */
int
workspace_create(const char *path, int64_t size_mb, char **cause)
{
	char *mkfs, *argv[10];
	int fd, rc;

	if ((mkfs = mkfs_find(cause)) == NULL)
		return -1;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		xasprintf(cause, "cannot create %s: %s", path, strerror(errno));
		free(mkfs);
		return -1;
	}
	if (ftruncate(fd, (off_t)size_mb * 1024 * 1024) != 0) {
		xasprintf(cause, "cannot size the workspace %s to %lld MiB: %s",
		    path, (long long)size_mb, strerror(errno));
		close(fd);
		unlink(path);
		free(mkfs);
		return -1;
	}
	close(fd);
	argv[0] = mkfs;
	argv[1] = "-q";
	argv[2] = "-F";
	argv[3] = "-L";
	argv[4] = "workspace";
	argv[5] = "-m0"; /* one user: no blocks reserved for root */
	argv[6] = "-E";
	/* the file is new and all holes: discarding it first is 6 ms of
	 * nothing (a fifth of mkfs) */
	argv[7] =
	    "root_owner=0:0,lazy_itable_init=1,lazy_journal_init=1,nodiscard";
	argv[8] = (char *)path;
	argv[9] = NULL;
	rc = run_quiet(argv, cause);
	if (rc != 0)
		unlink(path);
	free(mkfs);
	return rc;
}

/*
 * Check an existing image given with --workspace: a regular file we can
 * read (and write, when writable) that holds an ext2/3/4 file system. 0 or
 * -1 with cause.
 */
int
workspace_check_mode(const char *path, int writable, char **cause)
{
	unsigned char magic[2];
	struct stat st;
	int fd;

	fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		xasprintf(cause, "workspace %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		xasprintf(cause, "workspace %s: not a regular file", path);
		close(fd);
		return -1;
	}
	if (pread(fd, magic, 2, EXT_SUPER_OFF + EXT_MAGIC_OFF) != 2 ||
	    (magic[0] | magic[1] << 8) != EXT_MAGIC) {
		xasprintf(cause,
		    "workspace %s: no ext4 file system in it (make one with "
		    "mkfs.ext4, or let vmux new make the workspace)",
		    path);
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* workspace_check_mode for a disk the guest will write. */
int
workspace_check(const char *path, char **cause)
{
	return workspace_check_mode(path, 1, cause);
}

/*
 * Is the image at path already the workspace of another session (not
 * self)? Compared by device and inode, so links and other spellings of
 * the same file count. 1 with cause naming it, 0, or -1 with cause.
 */
int
workspace_in_use(
    const char *home, const char *path, const char *self, char **cause)
{
	struct session_entry *v;
	struct stat want, st;
	size_t n, i;
	int found = 0;

	if (stat(path, &want) != 0)
		return 0;
	if (session_list_all(home, &v, &n, cause) != 0) /* the pool's too */
		return -1;
	for (i = 0; i < n && !found; i++) {
		/* a session's own workspace, or the disk a rescue repairs */
		const char *disks[2] = {
		    v[i].rec.workspace, v[i].rec.rescue_disk};

		if (!v[i].ok || (self != NULL && strcmp(v[i].name, self) == 0))
			continue;
		for (size_t k = 0; k < 2 && !found; k++) {
			if (disks[k] != NULL && stat(disks[k], &st) == 0 &&
			    st.st_dev == want.st_dev &&
			    st.st_ino == want.st_ino) {
				xasprintf(cause,
				    "%s %s is in use by session '%s'",
				    k == 0 ? "workspace" : "disk", path,
				    v[i].name);
				found = 1;
			}
		}
	}
	session_list_free(v, n);
	return found;
}

/*
 * Move session name's workspace image out of its state directory before
 * the directory is removed: to <home>/workspaces/NAME.img, or NAME-2.img,
 * NAME-3.img ... when that exists (never over a kept one, however fast
 * they come). The new path, or NULL with cause.
 */
char *
workspace_keep(
    const char *home, const char *name, const char *path, char **cause)
{
	char *dir, *dst = NULL;

	xasprintf(&dir, "%s/workspaces", home);
	if (mkdir_p(dir, 0700) != 0) {
		xasprintf(cause, "cannot create %s: %s", dir, strerror(errno));
		free(dir);
		return NULL;
	}
	/* never over a kept one: NAME.img, else NAME-2.img, NAME-3.img ... */
	for (int i = 1; i <= 10000; i++) {
		if (i == 1)
			xasprintf(&dst, "%s/%s.img", dir, name);
		else
			xasprintf(&dst, "%s/%s-%d.img", dir, name, i);
		if (renameat2(
		        AT_FDCWD, path, AT_FDCWD, dst, RENAME_NOREPLACE) == 0)
			break;
		if (errno != EEXIST) {
			xasprintf(cause,
			    "cannot keep the workspace %s as %s: %s", path, dst,
			    strerror(errno));
			free(dst);
			free(dir);
			return NULL;
		}
		free(dst);
		dst = NULL;
	}
	free(dir);
	if (dst == NULL) {
		xasprintf(cause,
		    "cannot keep the workspace %s: too many kept "
		    "workspaces of that name",
		    path);
		return NULL;
	}
	return dst;
}
