/*
 * agent_client.c: one JSON request to the guest agent, one JSON reply.
 *
 * The agent (vsock port VMUX_AGENT_PORT) reads one request line per
 * connection and answers with one JSON object, then closes. Here: send the
 * line, read to EOF under a deadline, and map every way a reply can be bad
 * to one clear cause. The request side is never half-closed: the bridge
 * turns a half-close into a vsock SHUTDOWN, which could cut a long exec.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common.h"
#include "proto.h"
#include "session.h"

/* Parse one reply; the object on success, NULL with cause otherwise. */
cJSON *
agent_parse_reply(const char *buf, size_t len, char **cause)
{
	const char *end = NULL;
	const cJSON *err;
	cJSON *o;
	size_t i;

	for (i = 0; i < len && strchr(" \t\r\n", buf[i]) != NULL; i++)
		;
	if (i == len) {
		xasprintf(cause, "agent closed the connection without a reply");
		return NULL;
	}
	o = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
	if (o != NULL) {
		for (i = (size_t)(end - buf); i < len; i++) {
			if (buf[i] != '\0' && strchr(" \t\r\n", buf[i]) == NULL)
				break;
		}
		if (i != len) {
			cJSON_Delete(o);
			xasprintf(cause,
			    "agent returned invalid JSON (data after the "
			    "reply)");
			return NULL;
		}
	}
	if (o == NULL) {
		xasprintf(cause, "agent returned invalid JSON");
		return NULL;
	}
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		xasprintf(cause,
		    "agent returned a non-object (expected a JSON object)");
		return NULL;
	}
	err = cJSON_GetObjectItemCaseSensitive(o, "error");
	if (err != NULL && !cJSON_IsNull(err)) {
		if (cJSON_IsString(err) && err->valuestring != NULL)
			xasprintf(cause, "agent: %s", err->valuestring);
		else {
			char *s = cJSON_PrintUnformatted(err);
			xasprintf(cause, "agent: %s", s != NULL ? s : "error");
			cJSON_free(s);
		}
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* Send req as one line on fd and parse the reply read up to EOF. */
cJSON *
agent_exchange(int fd, const cJSON *req, uint64_t deadline, char **cause)
{
	char *line = cJSON_PrintUnformatted(req), *buf = NULL;
	size_t len, size = 0, used = 0;
	cJSON *o = NULL;
	int n;

	if (line == NULL)
		fatalx("out of memory");
	len = strlen(line);
	if (len + 1 > VMUX_MAX_REQUEST) {
		xasprintf(cause, "request too large (%zu bytes)", len);
		cJSON_free(line);
		return NULL;
	}
	line[len] = '\n'; /* replaces the NUL: send len + 1 bytes */
	n = send_all_deadline(fd, line, len + 1, deadline);
	cJSON_free(line);
	if (n < 0) {
		xasprintf(cause, "cannot send the request to the agent: %s",
		    n == -ETIMEDOUT ? "timed out" : strerror(-n));
		return NULL;
	}
	for (;;) {
		ssize_t r;

		if (size - used < 65536) {
			size = size == 0 ? 65536 : size * 2;
			buf = xrealloc(buf, size);
		}
		n = wait_fd(fd, POLLIN, deadline);
		if (n <= 0) {
			xasprintf(cause, "%s waiting for the agent's reply",
			    n == 0 ? "timed out" : strerror(-n));
			goto out;
		}
		r = recv(fd, buf + used, size - used, MSG_DONTWAIT);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0) {
			xasprintf(cause, "reading the agent's reply: %s",
			    strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		used += (size_t)r;
		if (used > AGENT_MAX_REPLY) {
			xasprintf(cause, "agent reply too large");
			goto out;
		}
	}
	o = agent_parse_reply(buf, used, cause);
out:
	free(buf);
	return o;
}

/* Connect to the agent, exchange one request and reply, close. */
cJSON *
agent_call(const struct vsock_target *t, const cJSON *req,
    uint64_t connect_deadline, uint64_t deadline, char **cause)
{
	cJSON *o;
	int fd;

	fd = transport_connect(t, VMUX_AGENT_PORT, connect_deadline, cause);
	if (fd < 0)
		return NULL;
	o = agent_exchange(fd, req, deadline, cause);
	close(fd);
	return o;
}
