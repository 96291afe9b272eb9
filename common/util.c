/*
 * util.c: clocks, the one time format, file-descriptor helpers and the
 * whole-or-nothing file writer (file_replace), mkdir -p and folders of
 * one's own (private_dir_make).
 */
#include <sys/stat.h>

#include <errno.h>
#include <ftw.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

/* Milliseconds on the monotonic clock. */
uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Seconds since the epoch, with fractions. */
double
wall_time(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Format t (seconds since the epoch; fractions are dropped) as RFC 3339 in
 * UTC with a "Z", e.g. "2026-11-23T22:51:00Z": every time vmux shows, in
 * tables and JSON, has this one form. NULL (caller frees otherwise) when t
 * is not a time: negative, not finite or past year 9999.
 */
char *
time_rfc3339(double t)
{
	struct tm tm;
	time_t tt;
	char buf[32];

	if (!isfinite(t) || t < 0 || t >= 253402300800.0)
		return NULL;
	tt = (time_t)t; /* t >= 0: truncation is floor */
	if (gmtime_r(&tt, &tm) == NULL ||
	    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		return NULL;
	return xstrdup(buf);
}

/* Turn O_NONBLOCK on or off; 0 or -errno. */
int
set_nonblock(int fd, int on)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0)
		return -errno;
	flags = on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK;
	if (fcntl(fd, F_SETFL, flags) < 0)
		return -errno;
	return 0;
}

/* Set FD_CLOEXEC; 0 or -errno. */
int
set_cloexec(int fd)
{
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return -errno;
	return 0;
}

/* Write all of buf, retrying on EINTR; len or -errno. */
ssize_t
write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, p + done, len - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/*
 * Replace path with len bytes of data, whole or not at all: written to
 * "path.tmp.PID" (created with mode, never another's file), flushed to
 * disk, then renamed over path, so a crash or a full disk leaves the old
 * contents. 0 or -errno; the temporary file never outlives a failure.
 * One writer of a path per process: the temporary's name is the pid's.
 */
int
file_replace(const char *path, const void *data, size_t len, mode_t mode)
{
	char *tmp;
	ssize_t n;
	int fd, rc = 0;

	xasprintf(&tmp, "%s.tmp.%ld", path, (long)getpid());
	(void)unlink(tmp); /* a dead process of this pid left it */
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)) <
	    0) {
		rc = -errno;
		free(tmp);
		return rc;
	}
	if ((n = write_all(fd, data, len)) < 0)
		rc = (int)n;
	else if (fsync(fd) != 0)
		rc = -errno;
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc != 0)
		(void)unlink(tmp);
	free(tmp);
	return rc;
}

/* Read until len bytes or EOF, retrying on EINTR; bytes read or -errno. */
ssize_t
read_full(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(fd, p + done, len - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/*
 * Set this process's OOM killer adjustment (-1000 exempt .. 1000); 0 or
 * -errno. Only open, write and close: safe between fork and exec.
 */
int
oom_score_adj(const char *value)
{
	size_t n = strlen(value);
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	err = write(fd, value, n) == (ssize_t)n ? 0 : -errno;
	close(fd);
	return err;
}

/*
 * Read one line of f into *buf (grown as getline grows it, NUL-terminated,
 * the newline kept), keeping at most max bytes: the rest of a longer line
 * is read and dropped, and *cut is set. Nothing is held past max, whatever
 * the file holds; a NUL byte is kept as a byte (the length says where the
 * line ends). The length kept, or -1 at the end of the file or on a read
 * error (ferror tells).
 */
ssize_t
getline_max(char **buf, size_t *cap, FILE *f, size_t max, int *cut)
{
	size_t len = 0;
	int c, any = 0;

	*cut = 0;
	flockfile(f);
	while ((c = getc_unlocked(f)) != EOF) {
		any = 1;
		if (len < max) {
			if (*cap < len + 2) {
				*cap = *cap * 2 > len + 2 ? *cap * 2 : len + 64;
				*buf = xrealloc(*buf, *cap);
			}
			(*buf)[len++] = (char)c;
		} else
			*cut = 1;
		if (c == '\n')
			break;
	}
	funlockfile(f);
	if (!any)
		return -1;
	if (*buf == NULL) { /* a line cut before its first byte was kept */
		*cap = 1;
		*buf = xmalloc(1);
	}
	(*buf)[len] = '\0';
	return (ssize_t)len;
}

/* p[0..n) in base64 (RFC 4648, padded); the caller frees it. */
char *
base64_encode(const void *data, size_t n)
{
	const unsigned char *p = data;
	static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                          "abcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out = xmalloc((n + 2) / 3 * 4 + 1), *o = out;
	size_t i;

	for (i = 0; i + 2 < n; i += 3) {
		*o++ = abc[p[i] >> 2];
		*o++ = abc[((p[i] & 3) << 4) | (p[i + 1] >> 4)];
		*o++ = abc[((p[i + 1] & 15) << 2) | (p[i + 2] >> 6)];
		*o++ = abc[p[i + 2] & 63];
	}
	if (i < n) {
		*o++ = abc[p[i] >> 2];
		if (i + 1 < n) {
			*o++ = abc[((p[i] & 3) << 4) | (p[i + 1] >> 4)];
			*o++ = abc[(p[i + 1] & 15) << 2];
		} else {
			*o++ = abc[(p[i] & 3) << 4];
			*o++ = '=';
		}
		*o++ = '=';
	}
	*o = '\0';
	return out;
}

/* The value of base64 character c, or -1. */
static int
base64_value(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/*
 * Decode base64 text (RFC 4648, padding optional, no other characters;
 * whitespace skipped). The bytes (NUL-terminated for convenience, *len
 * long; caller frees), or NULL when s is not base64.
 */
unsigned char *
base64_decode(const char *s, size_t *len)
{
	size_t n = strlen(s), k = 0, pad = 0;
	unsigned char *out = xmalloc(n / 4 * 3 + 4);
	unsigned acc = 0;
	int bits = 0, v;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')
			continue;
		if (s[i] == '=') {
			pad++;
			continue;
		}
		if (pad > 0 || (v = base64_value((unsigned char)s[i])) < 0) {
			free(out);
			return NULL; /* data after padding, or not base64 */
		}
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[k++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	if (pad > 2 || bits >= 6 || (acc != 0)) {
		free(out); /* a lone character, or bits left that say more */
		return NULL;
	}
	out[k] = '\0';
	*len = k;
	return out;
}

/* Is p[0..n) well-formed UTF-8 (no overlongs, surrogates or > U+10FFFF)? */
int
utf8_valid(const void *data, size_t n)
{
	const unsigned char *p = data;
	size_t i = 0, k, len;
	unsigned cp;

	while (i < n) {
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		if ((p[i] & 0xe0) == 0xc0)
			len = 2, cp = p[i] & 0x1f;
		else if ((p[i] & 0xf0) == 0xe0)
			len = 3, cp = p[i] & 0x0f;
		else if ((p[i] & 0xf8) == 0xf0)
			len = 4, cp = p[i] & 0x07;
		else
			return 0;
		if (n - i < len)
			return 0;
		for (k = 1; k < len; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (p[i + k] & 0x3f);
		}
		if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
		    (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += len;
	}
	return 1;
}

/* mkdir -p with mode for the directories created; 0 or -errno. */
int
mkdir_p(const char *path, mode_t mode)
{
	char *copy = xstrdup(path), *p;
	struct stat st;
	int error = 0;

	for (p = copy + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;
		*p = '\0';
		if (mkdir(copy, mode) != 0 && errno != EEXIST) {
			error = -errno;
			break;
		}
		*p = saved;
		if (saved == '\0')
			break;
	}
	if (error == 0 && (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)))
		error = -ENOTDIR;
	free(copy);
	return error;
}

/*
 * Is path a folder (not a symlink) of ours that nobody else can write? 0,
 * or -1 with *cause saying what it is instead (cause may be NULL).
 */
static int
dir_alone(const char *path, char **cause)
{
	struct stat st;
	const char *why = NULL;

	if (lstat(path, &st) != 0)
		why = strerror(errno);
	else if (!S_ISDIR(st.st_mode))
		why = "not a folder (a symlink?)";
	else if (st.st_uid == getuid() && (st.st_mode & 022) == 0)
		return 0;
	if (cause == NULL)
		return -1;
	if (why != NULL)
		xasprintf(cause, "%s: %s", path, why);
	else
		xasprintf(cause,
		    "%s is not yours alone (owner uid %u, mode %04o): others "
		    "could change what vmux writes there; make it yours with "
		    "mode 0700, or use another",
		    path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	return -1;
}

/* Is path a folder (not a symlink) of ours that nobody else can write? */
int
private_dir(const char *path)
{
	return dir_alone(path, NULL) == 0;
}

/*
 * Can nobody but us and root rename what lies under path's parents? Each
 * folder above path must be ours or root's, and writable by others only
 * if sticky (/tmp, /scratch): from a folder others may write, the one we
 * checked could be renamed away and another put in its place. 0, or -1
 * with cause.
 */
static int
parents_safe(const char *path, char **cause)
{
	char *copy = xstrdup(path), *p;
	struct stat st, lst;
	int rc = 0;

	for (p = copy + 1; rc == 0 && (p = strchr(p, '/')) != NULL; p++) {
		*p = '\0';
		if (lstat(copy, &lst) != 0 || stat(copy, &st) != 0) {
			xasprintf(cause, "%s: %s", copy, strerror(errno));
			rc = -1;
		} else if ((lst.st_uid != getuid() && lst.st_uid != 0) ||
		    (st.st_uid != getuid() && st.st_uid != 0)) {
			xasprintf(cause,
			    "%s, above %s, is another user's (uid %u): they "
			    "could swap the folder; use one under folders of "
			    "yours or root's",
			    copy, path, (unsigned)st.st_uid);
			rc = -1;
		} else if ((st.st_mode & 022) != 0 &&
		    (st.st_mode & S_ISVTX) == 0) {
			xasprintf(cause,
			    "%s, above %s, is writable by others and not "
			    "sticky (mode %04o): they could swap the folder",
			    copy, path, (unsigned)(st.st_mode & 07777));
			rc = -1;
		}
		*p = '/';
	}
	free(copy);
	return rc;
}

/*
 * Make path (one level, 0700) or take it as found if it is ours alone: a
 * directory, not a symlink, owned by us, not group- or other-writable, in
 * folders nobody else can rename it out of (parents_safe). On a shared
 * folder (a cluster's /scratch) another user who made it first could swap
 * what we write in it. path is absolute. 0, or -1 with cause.
 */
int
private_dir_make(const char *path, char **cause)
{
	if (path[0] != '/') {
		xasprintf(cause, "%s: not an absolute path", path);
		return -1;
	}
	if (parents_safe(path, cause) != 0)
		return -1;
	if (mkdir(path, 0700) != 0 && errno != EEXIST) {
		xasprintf(cause, "cannot make %s: %s", path, strerror(errno));
		return -1;
	}
	return dir_alone(path, cause);
}

/* nftw callback: remove one entry (children come first with FTW_DEPTH). */
static int
rmtree_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	if (flag == FTW_DP || flag == FTW_D)
		return rmdir(path) == 0 || errno == ENOENT ? 0 : -1;
	return unlink(path) == 0 || errno == ENOENT ? 0 : -1;
}

/*
 * rm -rf path without following symlinks or crossing mounts; 0 or -errno.
 * A file that appears meanwhile (a reaper's last record, written as its
 * program ends) only costs another pass.
 */
int
rmtree(const char *path)
{
	struct stat st;
	int pass;

	for (pass = 0;; pass++) {
		if (lstat(path, &st) != 0)
			return errno == ENOENT ? 0 : -errno;
		errno = 0;
		if (nftw(path, rmtree_one, 16,
		        FTW_DEPTH | FTW_PHYS | FTW_MOUNT) == 0)
			return 0;
		if (errno != ENOTEMPTY || pass == 2)
			return errno != 0 ? -errno : -EIO;
	}
}
