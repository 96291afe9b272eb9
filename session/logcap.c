/*
 * logcap.c: a session's logs, kept bounded.
 *
 * QEMU appends the serial console to SESSION_CONSOLE (append=on, so
 * O_APPEND), and QEMU's and the bridge's stderr go to their logs opened
 * O_APPEND by proc_spawn; none of them knows a limit, and a guest can make
 * the first grow at will (and perhaps the others, through warnings it
 * provokes). The reaper's watcher calls logcap_rotate on each every tick:
 * past the limit (console-log-max, LOGCAP_DEFAULT) a log's last part
 * (from a line start) becomes PATH.1 and the log is truncated in place.
 * The writer's next write lands at the new end (O_APPEND), so nothing is
 * reopened. Bytes written between our last look and the truncation (a
 * moment) are lost: a bounded log is worth that.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "session.h"

/* The earlier part of a log: "PATH.1". Free it. */
char *
logcap_prev_path(const char *path)
{
	char *s;

	xasprintf(&s, "%s.1", path);
	return s;
}

/*
 * The first offset in [cut, end) that starts a line (the byte before it is
 * a newline), or end. Reads 64 KiB at a time.
 */
static off_t
logcap_line_start(int fd, off_t cut, off_t end)
{
	char buf[65536];
	off_t at = cut - 1; /* the byte before a candidate start */

	if (cut <= 0)
		return 0;
	while (at < end - 1) {
		size_t want = end - 1 - at > (off_t)sizeof buf
		    ? sizeof buf
		    : (size_t)(end - 1 - at);
		ssize_t n = pread(fd, buf, want, at);
		char *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return end;
		if ((nl = memchr(buf, '\n', (size_t)n)) != NULL)
			return at + (nl - buf) + 1;
		at += n;
	}
	return end;
}

/*
 * Append in[off..end) to out; the offset reached (end, or where in ended
 * early), or -errno.
 */
static off_t
logcap_copy(int in, off_t off, off_t end, int out)
{
	char buf[65536];

	while (off < end) {
		size_t want = end - off > (off_t)sizeof buf
		    ? sizeof buf
		    : (size_t)(end - off);
		ssize_t n = pread(in, buf, want, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* shorter than it was: keep what there is */
		if (write_all(out, buf, (size_t)n) < 0)
			return -EIO;
		off += n;
	}
	return off;
}

/*
 * Keep the log at path under max bytes: past it, its last max bytes (from
 * the first line start in them) replace path.1 and path is emptied. What
 * the writer adds while we copy is copied too, so only what it writes
 * between our last look and the truncation is lost. 1 if it was rotated,
 * 0 if not needed, -errno.
 */
int
logcap_rotate(const char *path, off_t max)
{
	struct stat st;
	char *prev, *tmp;
	off_t from, end;
	int fd, out, rc = 0, pass;

	if (path == NULL || stat(path, &st) != 0 || st.st_size <= max)
		return 0;
	if ((fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return -errno;
	/* start at a line: the first one after the cut, found a block at a
	 * time (a console without newlines must not cost a syscall a byte) */
	from = logcap_line_start(fd, st.st_size - max, st.st_size);
	if (from >= st.st_size)
		from = st.st_size - max; /* one endless line: cut it */
	prev = logcap_prev_path(path);
	xasprintf(&tmp, "%s.tmp", prev);
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		rc = -errno;
		goto done;
	}
	end = logcap_copy(fd, from, st.st_size, out);
	for (pass = 0; end >= 0 && pass < 4; pass++) {
		if (fstat(fd, &st) != 0 || st.st_size <= end)
			break;
		end = logcap_copy(fd, end, st.st_size, out);
	}
	if (end < 0)
		rc = (int)end;
	else if (ftruncate(fd, 0) != 0)
		rc = -errno;
	if (close(out) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, prev) != 0)
		rc = -errno;
	if (rc != 0)
		unlink(tmp);
done:
	free(tmp);
	free(prev);
	close(fd);
	return rc == 0 ? 1 : rc;
}
