/*
 * qmp.c: a small client of QEMU's monitor protocol (QMP) over a session's
 * qmp.sock: connect and leave capabilities negotiation, run one command and
 * wait for its answer (events in between are skipped), hand QEMU a file
 * descriptor (getfd), and the one-shot "quit" stop.c sends.
 *
 * The caller owns struct qmp (qmp_close) and every cJSON returned. QEMU is
 * trusted no more than needed: a line longer than QMP_LINE_MAX ends the
 * connection.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/common.h"
#include "session.h"

/* The longest answer line kept (query-migrate and friends are short). */
#define QMP_LINE_MAX (256 * 1024)

/* Read one line into q->line (NUL-terminated, no newline); 0 or -1. */
static int
qmp_read_line(struct qmp *q, uint64_t deadline, char **cause)
{
	for (;;) {
		char *nl = q->len > 0 ? memchr(q->buf, '\n', q->len) : NULL;
		ssize_t n;

		if (nl != NULL) {
			size_t len = (size_t)(nl - q->buf);

			free(q->line);
			q->line = xstrndup(q->buf, len);
			memmove(q->buf, nl + 1, q->len - len - 1);
			q->len -= len + 1;
			return 0;
		}
		if (q->len == q->cap) {
			if (q->cap >= QMP_LINE_MAX) {
				xasprintf(cause, "QMP: an answer too long");
				return -1;
			}
			q->cap = q->cap == 0 ? 4096 : q->cap * 2;
			q->buf = xrealloc(q->buf, q->cap);
		}
		if (wait_fd(q->fd, POLLIN, deadline) <= 0) {
			xasprintf(cause, "QMP: no answer in time");
			return -1;
		}
		n = recv(q->fd, q->buf + q->len, q->cap - q->len, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			xasprintf(cause, "QMP: QEMU closed the connection");
			return -1;
		}
		q->len += (size_t)n;
	}
}

/*
 * Send a command line (no newline needed), with fd passed alongside when
 * >= 0 (SCM_RIGHTS, for getfd). 0 or -1 with cause.
 */
static int
qmp_send(
    struct qmp *q, const char *cmd, int fd, uint64_t deadline, char **cause)
{
	char *line;
	int rc;

	xasprintf(&line, "%s\n", cmd);
	if (fd >= 0) {
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} u;
		struct iovec iov = {line, strlen(line)};
		struct msghdr mh;
		struct cmsghdr *cm;

		memset(&mh, 0, sizeof mh);
		memset(&u, 0, sizeof u);
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof u.buf;
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof fd);
		/* a command line is short: one sendmsg takes it whole */
		rc = sendmsg(q->fd, &mh, MSG_NOSIGNAL) == (ssize_t)iov.iov_len
		    ? 0
		    : -1;
	} else
		rc = send_all_deadline(q->fd, line, strlen(line), deadline);
	free(line);
	if (rc != 0)
		xasprintf(cause, "QMP: cannot send: %s", strerror(errno));
	return rc;
}

/*
 * Connect to QEMU's QMP socket at path and leave negotiation mode. 0, or
 * -1 with cause (q needs no qmp_close then).
 */
int
qmp_open(struct qmp *q, const char *path, uint64_t deadline, char **cause)
{
	struct sockaddr_un sun;
	cJSON *r;

	memset(q, 0, sizeof *q);
	q->fd = -1;
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (path == NULL || strlen(path) >= sizeof sun.sun_path) {
		xasprintf(cause, "no usable QMP socket");
		return -1;
	}
	strcpy(sun.sun_path, path);
	q->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (q->fd < 0 ||
	    connect(q->fd, (struct sockaddr *)&sun, sizeof sun) != 0) {
		xasprintf(cause, "QMP %s: %s", path, strerror(errno));
		qmp_close(q);
		return -1;
	}
	if (qmp_read_line(q, deadline, cause) != 0) { /* the greeting */
		qmp_close(q);
		return -1;
	}
	r = qmp_call(
	    q, "{\"execute\":\"qmp_capabilities\"}", -1, deadline, cause);
	if (r == NULL) {
		qmp_close(q);
		return -1;
	}
	cJSON_Delete(r);
	return 0;
}

/*
 * Run one command (a JSON object's text) and wait for its answer, passing
 * fd along when >= 0. Its "return" value (the caller deletes it), or NULL
 * with cause: QEMU's error description, or why there was no answer.
 */
cJSON *
qmp_call(
    struct qmp *q, const char *cmd, int fd, uint64_t deadline, char **cause)
{
	if (qmp_send(q, cmd, fd, deadline, cause) != 0)
		return NULL;
	for (;;) {
		cJSON *msg, *ret, *err, *desc;

		if (qmp_read_line(q, deadline, cause) != 0)
			return NULL;
		msg = cJSON_Parse(q->line);
		if (msg == NULL) {
			xasprintf(cause, "QMP: an answer that is not JSON");
			return NULL;
		}
		if ((ret = cJSON_DetachItemFromObjectCaseSensitive(
		         msg, "return")) != NULL) {
			cJSON_Delete(msg);
			return ret;
		}
		err = cJSON_GetObjectItemCaseSensitive(msg, "error");
		if (err != NULL) {
			desc = cJSON_GetObjectItemCaseSensitive(err, "desc");
			xasprintf(cause, "QEMU: %s",
			    cJSON_IsString(desc) ? desc->valuestring
			                         : "an error");
			cJSON_Delete(msg);
			return NULL;
		}
		cJSON_Delete(msg); /* an event: not our answer */
	}
}

/* Run a command whose answer is not needed; 0 or -1 with cause. */
int
qmp_run(struct qmp *q, const char *cmd, uint64_t deadline, char **cause)
{
	cJSON *r = qmp_call(q, cmd, -1, deadline, cause);

	cJSON_Delete(r);
	return r != NULL ? 0 : -1;
}

/*
 * A string member of a query's answer (query-status's "status",
 * query-migrate's "status"), or NULL with cause. The caller frees it.
 */
char *
qmp_query_status(
    struct qmp *q, const char *query, uint64_t deadline, char **cause)
{
	char *cmd, *out = NULL;
	cJSON *r, *s;

	xasprintf(&cmd, "{\"execute\":\"%s\"}", query);
	r = qmp_call(q, cmd, -1, deadline, cause);
	free(cmd);
	if (r == NULL)
		return NULL;
	s = cJSON_GetObjectItemCaseSensitive(r, "status");
	if (cJSON_IsString(s))
		out = xstrdup(s->valuestring);
	else
		xasprintf(cause, "QMP: %s without a status", query);
	cJSON_Delete(r);
	return out;
}

/* Close the connection and free what q holds. */
void
qmp_close(struct qmp *q)
{
	if (q->fd >= 0)
		close(q->fd);
	free(q->buf);
	free(q->line);
	memset(q, 0, sizeof *q);
	q->fd = -1;
}

/*
 * Ask QEMU to quit; 0 once "quit" was sent. Its answer (or QEMU closing
 * the connection as it goes) is waited for: QEMU drops a command whose
 * connection closed before it was read.
 */
int
qmp_quit(const char *path, uint64_t deadline, char **cause)
{
	struct qmp q;
	char *why = NULL;
	cJSON *r;

	if (qmp_open(&q, path, deadline, cause) != 0)
		return -1;
	r = qmp_call(&q, "{\"execute\":\"quit\"}", -1, deadline, &why);
	cJSON_Delete(r);
	free(why); /* closed by QEMU going is the answer too */
	qmp_close(&q);
	return 0;
}
