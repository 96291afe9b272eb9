/*
 * stdio.c: MCP over stdio. Messages are lines of JSON on stdin; answers
 * and notifications are lines on stdout and nothing else is ever written
 * there (logs go to stderr). One poll(2) loop serves stdin and the tool
 * calls' commands together, so a long exec does not hold up a ping or the
 * cancellation that ends it. A line longer than MCP_MESSAGE_MAX is
 * answered with an error and skipped to its end. At the end of stdin the
 * calls under way are still answered (a client may close its side after
 * its last request); SIGTERM or SIGINT (the caller's *stop) ends them.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "mcp.h"

#define STDIO_POLL_MAX 256 /* descriptors polled: stdin and the jobs' */

/* Write one message and its newline to stdout. A client that left ends
 * nothing here: the loop sees stdin's end. */
static void
stdio_send(void *conn, const char *msg, int answer)
{
	(void)conn;
	(void)answer;
	if (write_all(STDOUT_FILENO, msg, strlen(msg)) >= 0)
		write_all(STDOUT_FILENO, "\n", 1);
}

/* Hand each complete line of buf[0..*len) to the server; keep the rest. */
static void
stdio_lines(struct mcp_server *s, char *buf, size_t *len, int *skipping)
{
	size_t from = 0;
	char *nl;

	while ((nl = memchr(buf + from, '\n', *len - from)) != NULL) {
		size_t n = (size_t)(nl - (buf + from));

		if (*skipping)
			*skipping = 0; /* the end of an oversized line */
		else if (n > 0 && !(n == 1 && buf[from] == '\r'))
			mcp_handle(s, buf + from, n, stdio_send, NULL, 0);
		from += n + 1;
	}
	memmove(buf, buf + from, *len - from);
	*len -= from;
	if (*len > MCP_MESSAGE_MAX) {
		char *msg = jsonrpc_error(
		    NULL, JSONRPC_INVALID_REQUEST, "message too large");

		stdio_send(NULL, msg, 1);
		free(msg);
		*len = 0;
		*skipping = 1;
	}
}

/* Serve until stdin ends and the calls under way are answered, or *stop
 * is set (SIGTERM, SIGINT). 0, or -1 when reading stdin failed. */
int
mcp_stdio_run(struct mcp_server *s, volatile sig_atomic_t *stop)
{
	struct pollfd pfd[STDIO_POLL_MAX];
	size_t len = 0, cap = 65536, n;
	char *buf = xmalloc(cap);
	int open = 1, skipping = 0, rc = 0;
	ssize_t got;

	/* stdin stays blocking: it may share its file with stdout (a tty, a
	 * socket), and answers must not be cut by EAGAIN; poll says when a
	 * read will not wait. */
	while (!*stop && (open || mcp_job_count() > 0)) {
		pfd[0] = (struct pollfd){open ? STDIN_FILENO : -1, POLLIN, 0};
		n = 1 + mcp_job_pollfds(pfd + 1, STDIO_POLL_MAX - 1);
		/* a job is reaped once its pipes close (poll wakes then) */
		if (poll(pfd, (nfds_t)n, mcp_job_count() > 0 ? 1000 : -1) < 0 &&
		    errno != EINTR) {
			rc = -1;
			break;
		}
		mcp_job_service(pfd + 1, n - 1);
		mcp_job_reap();
		if (!open || pfd[0].revents == 0)
			continue;
		if (len + 65536 > cap) {
			cap = (len + 65536) * 2;
			buf = xrealloc(buf, cap);
		}
		got = read(STDIN_FILENO, buf + len, cap - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			open = 0;
			if (got < 0)
				rc = -1;
			/* a last line without its newline is a message too */
			if (len > 0 && !skipping)
				mcp_handle(s, buf, len, stdio_send, NULL, 0);
			continue;
		}
		len += (size_t)got;
		stdio_lines(s, buf, &len, &skipping);
	}
	free(buf);
	return rc;
}
