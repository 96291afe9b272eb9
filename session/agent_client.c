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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/common.h"
#include "proto/proto.h"
#include "session.h"

/* The code of the last error reply parsed on this thread ("" if none). */
static __thread char last_code[VMUX_E_CODE_MAX];

/*
 * What the last failed reply on this thread said went wrong: a VMUX_E_*
 * code (proto/proto.h) when the agent gave one, else "". Callers switch on
 * it, never on the error's English text.
 */
const char *
agent_error_code(void)
{
	return last_code;
}

/* Keep an error reply's "code" if it is one a code may be ([a-z_]). */
static void
keep_code(const cJSON *o)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "code");
	size_t n;

	last_code[0] = '\0';
	if (!cJSON_IsString(v) || v->valuestring == NULL)
		return;
	n = strspn(v->valuestring, "abcdefghijklmnopqrstuvwxyz_");
	if (n == 0 || v->valuestring[n] != '\0' || n >= sizeof last_code)
		return;
	memcpy(last_code, v->valuestring, n + 1);
}

/* Whether cause (from agent_call) is the agent's own refusal: it answered,
 * with an error, rather than not answering. */
int
agent_refused(const char *cause)
{
	return cause != NULL &&
	    strncmp(cause, AGENT_REFUSED, strlen(AGENT_REFUSED)) == 0;
}

/* Parse one reply; the object on success, NULL with cause otherwise. */
cJSON *
agent_parse_reply(const char *buf, size_t len, char **cause)
{
	const char *end = NULL;
	const cJSON *err;
	cJSON *o;
	size_t i;

	last_code[0] = '\0';
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
		keep_code(o);
		if (cJSON_IsString(err) && err->valuestring != NULL)
			xasprintf(cause, AGENT_REFUSED "%s", err->valuestring);
		else {
			char *s = cJSON_PrintUnformatted(err);
			xasprintf(
			    cause, AGENT_REFUSED "%s", s != NULL ? s : "error");
			cJSON_free(s);
		}
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* Send req as one line; 0, or -1 with *cause. */
int
agent_send_request(int fd, const cJSON *req, uint64_t deadline, char **cause)
{
	char *line = cJSON_PrintUnformatted(req);
	size_t len;
	int n;

	if (line == NULL)
		fatalx("out of memory");
	len = strlen(line);
	if (len + 1 > VMUX_MAX_REQUEST) {
		xasprintf(cause, "request too large (%zu bytes)", len);
		cJSON_free(line);
		return -1;
	}
	line[len] = '\n'; /* replaces the NUL: send len + 1 bytes */
	n = send_all_deadline(fd, line, len + 1, deadline);
	cJSON_free(line);
	if (n < 0) {
		xasprintf(cause, "cannot send the request to the agent: %s",
		    n == -ETIMEDOUT ? "timed out" : strerror(-n));
		return -1;
	}
	return 0;
}

/*
 * Read the agent's answer into *out (the caller frees it): to EOF, or with
 * to_newline only until a newline arrived (bytes after it may be there
 * too). More than max bytes is an error. The byte count, or -1 with *cause
 * (and *out NULL).
 */
ssize_t
agent_read_reply(int fd, uint64_t deadline, int to_newline, size_t max,
    char **out, char **cause)
{
	size_t size = 0, used = 0;
	char *buf = NULL;
	ssize_t r;
	int n;

	*out = NULL;
	for (;;) {
		if (size - used < 65536) {
			size = size == 0 ? 65536 : size * 2;
			buf = xrealloc(buf, size);
		}
		n = wait_fd(fd, POLLIN, deadline);
		if (n <= 0) {
			xasprintf(cause, "%s waiting for the agent's reply",
			    n == 0 ? "timed out" : strerror(-n));
			goto fail;
		}
		r = recv(fd, buf + used, size - used, MSG_DONTWAIT);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0) {
			xasprintf(cause, "reading the agent's reply: %s",
			    strerror(errno));
			goto fail;
		}
		if (r == 0)
			break;
		used += (size_t)r;
		if (to_newline &&
		    memchr(buf + used - r, '\n', (size_t)r) != NULL)
			break;
		if (used > max) {
			xasprintf(cause,
			    "agent reply too large (over %zu KiB): refused",
			    max / 1024);
			goto fail;
		}
	}
	*out = buf;
	return (ssize_t)used;
fail:
	free(buf);
	return -1;
}

/*
 * Send req as one line on fd and parse the reply read up to EOF. With raw
 * non-NULL, the reply's text is handed back too.
 */
cJSON *
agent_exchange(int fd, const cJSON *req, uint64_t deadline, char **raw,
    size_t *raw_len, char **cause)
{
	char *buf;
	ssize_t used;
	cJSON *o;

	if (agent_send_request(fd, req, deadline, cause) != 0)
		return NULL;
	used = agent_read_reply(fd, deadline, 0, AGENT_MAX_REPLY, &buf, cause);
	if (used < 0)
		return NULL;
	o = agent_parse_reply(buf, (size_t)used, cause);
	if (o != NULL && raw != NULL) {
		*raw = buf;
		*raw_len = (size_t)used;
		buf = NULL;
	}
	free(buf);
	return o;
}

/* Connect to the agent, exchange one request and reply, close. */
cJSON *
agent_call(const struct vsock_target *t, const cJSON *req,
    uint64_t connect_deadline, uint64_t deadline, char **raw, size_t *raw_len,
    char **cause)
{
	cJSON *o;
	int fd;

	fd = transport_connect(t, VMUX_AGENT_PORT, connect_deadline, cause);
	if (fd < 0)
		return NULL;
	o = agent_exchange(fd, req, deadline, raw, raw_len, cause);
	close(fd);
	return o;
}

/*
 * A shell's command from a list_shells entry as one printable line: the
 * string, or the argv joined by spaces, at most AGENT_COMMAND_MAX bytes
 * (then "..."), or none when there is neither. Linear in what it reads
 * (a guest may send a million arguments). Free it.
 */
char *
agent_shell_command(const cJSON *shell, const char *none)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(shell, "command");
	const cJSON *a;
	char buf[AGENT_COMMAND_MAX + 4];
	size_t used = 0, n;
	int any = 0;

	if (cJSON_IsString(v) && v->valuestring != NULL) {
		n = strlen(v->valuestring);
		if (n > AGENT_COMMAND_MAX)
			n = AGENT_COMMAND_MAX;
		memcpy(buf, v->valuestring, n);
		used = n;
		any = 1;
	} else if (cJSON_IsArray(v)) {
		cJSON_ArrayForEach(a, v)
		{
			if (!cJSON_IsString(a) || a->valuestring == NULL)
				continue;
			if (any && used < AGENT_COMMAND_MAX)
				buf[used++] = ' ';
			any = 1;
			n = strlen(a->valuestring);
			if (n > AGENT_COMMAND_MAX - used)
				n = AGENT_COMMAND_MAX - used;
			memcpy(buf + used, a->valuestring, n);
			used += n;
			if (used >= AGENT_COMMAND_MAX)
				break;
		}
	}
	if (!any)
		return xstrdup(none);
	if (used >= AGENT_COMMAND_MAX) {
		memcpy(buf + AGENT_COMMAND_MAX, "...", 3);
		used = AGENT_COMMAND_MAX + 3;
	}
	buf[used] = '\0';
	return str_printable(buf, 0);
}

/*
 * The agent's requests, each built in one place (agent/PROTOCOL.md gives
 * their fields), for every caller, blocking or on the TUI's thread pool.
 * Each returns a new object the caller sends and frees.
 */

/* A request for action (the ones without fields). */
static cJSON *
agent_req(const char *action)
{
	cJSON *req = cJSON_CreateObject();

	cJSON_AddStringToObject(req, "action", action);
	return req;
}

/* ping: is the agent there, and what is the guest. */
cJSON *
agent_req_ping(void)
{
	return agent_req("ping");
}

/*
 * resumed: the guest was restored from a saved state; set its clock to the
 * host's, reseed its RNG, and for a fork give it hostname and machine_id
 * (NULL: unchanged).
 */
cJSON *
agent_req_resumed(const char *hostname, const char *machine_id)
{
	cJSON *req = agent_req("resumed");
	unsigned char seed[32];
	char hex[65];

	cJSON_AddNumberToObject(req, "time", wall_time());
	if (getentropy(seed, sizeof seed) == 0) {
		for (size_t i = 0; i < sizeof seed; i++)
			snprintf(hex + 2 * i, 3, "%02x", seed[i]);
		cJSON_AddStringToObject(req, "seed", hex);
		explicit_bzero(seed, sizeof seed);
	}
	if (hostname != NULL)
		cJSON_AddStringToObject(req, "hostname", hostname);
	if (machine_id != NULL)
		cJSON_AddStringToObject(req, "machine_id", machine_id);
	return req;
}

/* list_shells: every shell, running or ended. */
cJSON *
agent_req_list_shells(void)
{
	return agent_req("list_shells");
}

/* shutdown: power the guest off. */
cJSON *
agent_req_shutdown(void)
{
	return agent_req("shutdown");
}

/* open_shell: shell id (NULL: the agent names it) of cols x rows (0: the
 * agent's default). */
cJSON *
agent_req_open_shell(const char *id, int cols, int rows)
{
	cJSON *req = agent_req("open_shell");

	if (id != NULL)
		cJSON_AddStringToObject(req, "shell_id", id);
	if (cols > 0 && rows > 0) {
		cJSON_AddNumberToObject(req, "cols", cols);
		cJSON_AddNumberToObject(req, "rows", rows);
	}
	return req;
}

/* write_shell: n bytes of input for shell id (raw: keys as typed). */
cJSON *
agent_req_write_shell(const char *id, const char *input, size_t n)
{
	cJSON *req = agent_req("write_shell");
	char *text = xstrndup(input, n);

	cJSON_AddStringToObject(req, "shell_id", id);
	cJSON_AddStringToObject(req, "input", text);
	free(text);
	return req;
}

/* read_shell: output of shell id from cursor (< 0: the oldest kept), at
 * most max_chars, waiting up to wait_ms at the end for more. */
cJSON *
agent_req_read_shell(const char *id, int64_t cursor, int max_chars, int wait_ms)
{
	cJSON *req = agent_req("read_shell");

	cJSON_AddStringToObject(req, "shell_id", id);
	if (cursor >= 0)
		cJSON_AddNumberToObject(req, "cursor", (double)cursor);
	if (max_chars > 0)
		cJSON_AddNumberToObject(req, "max_chars", max_chars);
	if (wait_ms > 0)
		cJSON_AddNumberToObject(req, "wait_ms", wait_ms);
	return req;
}

/* resize_shell: shell id's terminal to cols x rows. */
cJSON *
agent_req_resize_shell(const char *id, int cols, int rows)
{
	cJSON *req = agent_req("resize_shell");

	cJSON_AddStringToObject(req, "shell_id", id);
	cJSON_AddNumberToObject(req, "cols", cols);
	cJSON_AddNumberToObject(req, "rows", rows);
	return req;
}

/*
 * attach_shell: stream shell id from cursor (-1: the ring's start), as
 * who->as, watching only or wanting the keyboard (who may be NULL).
 */
cJSON *
agent_req_attach_shell(
    const char *id, int64_t cursor, const char *as, int watch, int input)
{
	cJSON *req = agent_req("attach_shell");

	cJSON_AddStringToObject(req, "shell_id", id);
	if (cursor >= 0)
		cJSON_AddNumberToObject(req, "cursor", (double)cursor);
	if (as != NULL)
		cJSON_AddStringToObject(req, "as", as);
	if (watch)
		cJSON_AddBoolToObject(req, "watch", 1);
	if (input)
		cJSON_AddBoolToObject(req, "input", 1);
	return req;
}

/* extract_archive: a tar of size bytes follows, to unpack at dest as vmux
 * cp does (its rules, links that lead out skipped). */
cJSON *
agent_req_extract_archive(const char *dest, int64_t size)
{
	cJSON *req = agent_req("extract_archive");

	cJSON_AddStringToObject(req, "destination", dest);
	cJSON_AddNumberToObject(req, "archive_size", (double)size);
	cJSON_AddBoolToObject(req, "cp", 1);
	cJSON_AddBoolToObject(req, "skip_unsafe_links", 1);
	return req;
}

/* export_archive: send path as a tar. */
cJSON *
agent_req_export_archive(const char *path)
{
	cJSON *req = agent_req("export_archive");

	cJSON_AddStringToObject(req, "path", path);
	return req;
}

/* close_shell: end shell id. */
cJSON *
agent_req_close_shell(const char *id)
{
	cJSON *req = agent_req("close_shell");

	cJSON_AddStringToObject(req, "shell_id", id);
	return req;
}

/* signal_shell: send signal sig (a name: "INT") to shell id. */
cJSON *
agent_req_signal_shell(const char *id, const char *sig)
{
	cJSON *req = agent_req("signal_shell");

	cJSON_AddStringToObject(req, "shell_id", id);
	cJSON_AddStringToObject(req, "signal", sig);
	return req;
}

/* exec: run argv (NULL-terminated) for at most timeout_s (0: default). */
cJSON *
agent_req_exec(const char *const *argv, int timeout_s)
{
	cJSON *req = agent_req("exec"), *cmd;

	cmd = cJSON_AddArrayToObject(req, "command");
	for (; *argv != NULL; argv++)
		cJSON_AddItemToArray(cmd, cJSON_CreateString(*argv));
	if (timeout_s > 0)
		cJSON_AddNumberToObject(req, "timeout_seconds", timeout_s);
	return req;
}
