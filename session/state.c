/*
 * state.c: what a paused session's files are and need (pause.c writes and
 * loads them): their paths, the key of the builds a state needs, the check
 * of what they hold, whether a session can be paused at all, a sparse copy
 * of a RAM file, and forgetting a state. No QEMU runs here.
 */
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session.h"

/* "SIZE:MTIME" of path for state_key, or "-" when it is not there. */
static void
stamp_add(char **s, const char *what, const char *path)
{
	struct stat st;
	char *old = *s;

	if (path != NULL && stat(path, &st) == 0)
		xasprintf(s, "%s%s%s=%lld:%lld.%09ld", old != NULL ? old : "",
		    old != NULL ? " " : "", what, (long long)st.st_size,
		    (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	else
		xasprintf(s, "%s%s%s=-", old != NULL ? old : "",
		    old != NULL ? " " : "", what);
	free(old);
}

/*
 * What a saved state needs to be loaded: the same QEMU build, guest kernel,
 * initramfs and root image (by size and modification time: the same files
 * on a shared folder from another node, but a rebuilt one differs), and
 * the same memory size. The caller frees it.
 */
char *
state_key(const struct session_record *r)
{
	char *s = NULL, *out;

	stamp_add(&s, "qemu", r->qemu_bin);
	stamp_add(&s, "kernel", r->kernel);
	stamp_add(&s, "initrd", r->initrd);
	if (r->root_image != NULL)
		stamp_add(&s, "root", r->root_image);
	xasprintf(&out, "%s memory=%d cpus=%d accel=%s", s, r->memory_mb,
	    r->cpus, r->accel != NULL ? r->accel : "-");
	free(s);
	return out;
}

/* The path of a file in r's folder; the caller frees it. */
char *
state_path(const struct session_record *r, const char *name)
{
	char *p;

	xasprintf(&p, "%s/%s", r->dir, name);
	return p;
}

/* Does r's folder hold its --image root's layer (launch.c)? */
static int
root_overlay_kept(const struct session_record *r)
{
	char *p = state_path(r, SESSION_ROOT_OVERLAY);
	int ok = access(p, F_OK) == 0;

	free(p);
	return ok;
}

/*
 * Why r cannot be paused (or forked), or NULL when it can. The caller frees
 * it.
 */
char *
session_why_no_pause(const struct session_record *r)
{
	const char *no_state = session_qemu_why_no_state(r->qemu_bin);
	char *why = NULL;

	if (r->nmounts > 0)
		xasprintf(&why,
		    "it has the host folder %s at %s, and virtiofs cannot "
		    "save its state in QEMU 7.2",
		    r->mounts[0].host, r->mounts[0].guest);
	else if (r->rescue_disk != NULL)
		why = xstrdup("it is a vmux rescue");
	else if (r->vsock_kernel)
		why = xstrdup("it uses the kernel's vhost-vsock");
	else if (no_state != NULL)
		why = xstrdup(no_state);
	else if (r->root_image != NULL && !root_overlay_kept(r))
		why = xstrdup("its --image root's writes are in QEMU's "
		              "throw-away layer this boot (no qemu-img: "
		              "install qemu-utils)");
	else if (r->ram_file == NULL || access(r->ram_file, F_OK) != 0)
		why = xstrdup("its RAM is a memfd this boot (its tmpfs had no "
		              "room for a RAM file when it started)");
	return why;
}

/*
 * Copy src to dst (made 0600, replacing nothing) keeping its holes: only
 * the data the guest touched is read and written. fsync'd when sync. Its
 * size in *size. 0, or -1 with cause (dst removed).
 */
int
file_copy_sparse(
    const char *src, const char *dst, int sync, off_t *size, char **cause)
{
	int in = open(src, O_RDONLY | O_CLOEXEC), out = -1;
	struct stat st;
	off_t data, hole = 0;
	char *buf = NULL;

	if (in < 0 || fstat(in, &st) != 0) {
		xasprintf(cause, "%s: %s", src, strerror(errno));
		goto fail;
	}
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0 || ftruncate(out, st.st_size) != 0) {
		xasprintf(cause, "%s: %s", dst, strerror(errno));
		goto fail;
	}
	for (;;) {
		data = lseek(in, hole, SEEK_DATA);
		if (data < 0 && errno == ENXIO)
			break; /* only a hole is left */
		if (data < 0 || (hole = lseek(in, data, SEEK_HOLE)) < 0) {
			xasprintf(cause, "%s: %s", src, strerror(errno));
			goto fail;
		}
		while (data < hole) {
			off_t off_in = data, off_out = data;
			ssize_t n = copy_file_range(in, &off_in, out, &off_out,
			    (size_t)(hole - data), 0);

			if (n < 0 && buf == NULL &&
			    (errno == EXDEV || errno == EINVAL ||
			        errno == ENOSYS || errno == EOPNOTSUPP))
				buf = xmalloc(1 << 20);
			if (n < 0 && buf != NULL) { /* an older kernel */
				size_t want = (size_t)(hole - data) < (1 << 20)
				    ? (size_t)(hole - data)
				    : (1 << 20);
				n = pread(in, buf, want, data);
				if (n > 0 &&
				    pwrite(out, buf, (size_t)n, data) != n)
					n = -1;
			}
			if (n <= 0) {
				xasprintf(cause, "copying %s to %s: %s", src,
				    dst,
				    n == 0 ? "short read" : strerror(errno));
				goto fail;
			}
			data += n;
		}
	}
	if (sync && fsync(out) != 0) {
		xasprintf(cause, "%s: %s", dst, strerror(errno));
		goto fail;
	}
	free(buf);
	close(in);
	close(out);
	*size = st.st_size;
	return 0;
fail:
	free(buf);
	if (in >= 0)
		close(in);
	if (out >= 0) {
		close(out);
		unlink(dst);
	}
	return -1;
}

/*
 * Copy src to dst as cheaply as the file system allows: a reflink (btrfs,
 * XFS: shared blocks, copied on write), else the used blocks only. dst is
 * new and 0600. 0, or -1 with cause.
 */
int
file_copy_cow(const char *src, const char *dst, char **cause)
{
	int in = open(src, O_RDONLY | O_CLOEXEC), out;
	off_t size;

	if (in < 0) {
		xasprintf(cause, "%s: %s", src, strerror(errno));
		return -1;
	}
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0) {
		xasprintf(cause, "%s: %s", dst, strerror(errno));
		close(in);
		return -1;
	}
	if (ioctl(out, FICLONE, in) == 0) {
		close(in);
		close(out);
		return 0;
	}
	close(in);
	close(out);
	unlink(dst);
	return file_copy_sparse(src, dst, 0, &size, cause);
}

/* "sha256:HEX" of the file at path, or NULL. The caller frees it. */
static char *
file_sha256(const char *path)
{
	char hex[65], *out;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0)
		return NULL;
	rc = sha256_fd(fd, hex);
	close(fd);
	if (rc != 0)
		return NULL;
	xasprintf(&out, "sha256:%s", hex);
	return out;
}

/* state_sum: what the state files hold, as the record keeps it. */
char *
state_sum_of(const char *state, off_t ram_size)
{
	char *sha = file_sha256(state), *out;

	if (sha == NULL)
		return NULL;
	xasprintf(&out, "%s ram=%lld", sha, (long long)ram_size);
	free(sha);
	return out;
}

/*
 * fsync a stopped guest's RAM file where it lives; its size in *size. 0, or
 * -1 with cause.
 */
int
ram_sync(const char *path, off_t *size, char **cause)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) != 0 || fsync(fd) != 0) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	*size = st.st_size;
	return 0;
}

/* Let the kernel drop a paused guest's RAM from the page cache. */
void
ram_drop_cache(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
	}
}

/* fsync the folder dir (a rename in it is then on disk). */
void
dir_sync(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/*
 * Forget r's paused state: its files and what the record said of them.
 * The RAM file stays while QEMU runs on it (a resumed session's RAM lives
 * in its folder: session_ram_path).
 */
void
state_discard(struct session_record *r)
{
	const char *names[] = {SESSION_STATE, SESSION_RAM_SAVED,
	    SESSION_STATE ".tmp", SESSION_RAM_SAVED ".tmp"};
	int live = session_qemu_alive(r);

	for (size_t i = 0; i < nitems(names); i++) {
		char *p = state_path(r, names[i]);
		if (!(live && r->ram_file != NULL &&
		        strcmp(p, r->ram_file) == 0))
			unlink(p);
		free(p);
	}
	free(r->state_key);
	free(r->state_sum);
	r->state_key = r->state_sum = NULL;
	r->paused = 0;
}

/* Free MiB on the file system of path's folder (a RAM file's), or -1. */
long long
ram_free_mb(const char *path)
{
	char *dir = xstrdup(path), *slash = strrchr(dir, '/');
	struct statvfs fs;
	long long mb = -1;

	if (slash != NULL)
		*slash = '\0';
	if (statvfs(dir, &fs) == 0)
		mb =
		    (long long)((unsigned long long)fs.f_bavail * fs.f_frsize >>
		        20);
	free(dir);
	return mb;
}

/*
 * Are r's state files what the record says (present, the state's sha256,
 * the RAM's size) and for this QEMU, kernel and image? 0, or -1 with cause.
 */
int
state_check(const struct session_record *r, char **cause)
{
	char *state = state_path(r, SESSION_STATE),
	     *ram = state_path(r, SESSION_RAM_SAVED), *key = state_key(r),
	     *sum = NULL;
	struct stat st;
	int rc = -1;

	if (r->state_key == NULL || r->state_sum == NULL)
		xasprintf(cause, "its record does not describe a saved state");
	else if (strcmp(key, r->state_key) != 0)
		xasprintf(cause,
		    "its state was saved by another QEMU build or guest "
		    "(%s; now %s)",
		    r->state_key, key);
	else if (stat(state, &st) != 0 || stat(ram, &st) != 0)
		xasprintf(cause, "%s: %s",
		    errno == ENOENT ? "a state file is "
		                      "missing"
		                    : "state files",
		    strerror(errno));
	else if ((sum = state_sum_of(state, st.st_size)) == NULL ||
	    strcmp(sum, r->state_sum) != 0)
		xasprintf(cause,
		    "its state files are not what was saved (truncated or "
		    "changed)");
	else
		rc = 0;
	free(state);
	free(ram);
	free(key);
	free(sum);
	return rc;
}
