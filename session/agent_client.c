/*
 * agent_client.c: one JSON request to the guest agent, one JSON reply.
 *
 * The agent (vsock port VMUX_AGENT_PORT) reads one request line per
 * connection and answers with one JSON object, then closes. Here: send the
 * line, read to EOF under a deadline, and map every way a reply can be bad
 * to one clear cause. The request side is never half-closed: the bridge
 * turns a half-close into a vsock SHUTDOWN, which could cut a long exec.
 *
 * Command output travels in JSON strings where NUL is escaped as \u0000;
 * cJSON's NUL-terminated strings would cut it there, so agent_reply_bytes()
 * decodes a top-level string field of the raw reply with its real length.
 */
#include <errno.h>
#include <poll.h>
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
 * non-NULL, the reply's text is handed back too (for agent_reply_bytes).
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

/* Skip JSON whitespace. */
static const char *
skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	return p;
}

/* Skip a string starting at its '"'; the byte after it, or NULL. */
static const char *
skip_string(const char *p, const char *end)
{
	for (p++; p < end; p++) {
		if (*p == '\\')
			p++;
		else if (*p == '"')
			return p + 1;
	}
	return NULL;
}

/* Skip any value (nested ones by bracket counting); NULL if malformed. */
static const char *
skip_value(const char *p, const char *end)
{
	int depth = 0;

	if (p >= end)
		return NULL;
	if (*p == '"')
		return skip_string(p, end);
	if (*p != '{' && *p != '[') {
		while (p < end && strchr(",}] \t\r\n", *p) == NULL)
			p++;
		return p;
	}
	while (p < end) {
		if (*p == '"') {
			p = skip_string(p, end);
			if (p == NULL)
				return NULL;
			continue;
		}
		if (*p == '{' || *p == '[')
			depth++;
		else if ((*p == '}' || *p == ']') && --depth == 0)
			return p + 1;
		p++;
	}
	return NULL;
}

/* Four hex digits at p; the value or -1. */
static long
hex4(const char *p, const char *end)
{
	long v = 0;
	int i;

	if (end - p < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		char c = p[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/* Append code point cp as UTF-8 to out (room for 4 bytes is there). */
static size_t
put_utf8(char *out, unsigned long cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Decode the string at p ('"') into a new buffer; -1 if malformed. */
static int
decode_string(const char *p, const char *end, char **out, size_t *out_len)
{
	char *buf = xmalloc((size_t)(end - p) + 4);
	size_t n = 0;

	for (p++; p < end && *p != '"'; p++) {
		long cp, lo;

		if (*p != '\\') {
			buf[n++] = *p;
			continue;
		}
		if (++p >= end)
			goto bad;
		switch (*p) {
		case '"':
		case '\\':
		case '/':
			buf[n++] = *p;
			break;
		case 'b':
			buf[n++] = '\b';
			break;
		case 'f':
			buf[n++] = '\f';
			break;
		case 'n':
			buf[n++] = '\n';
			break;
		case 'r':
			buf[n++] = '\r';
			break;
		case 't':
			buf[n++] = '\t';
			break;
		case 'u':
			if ((cp = hex4(p + 1, end)) < 0)
				goto bad;
			p += 4;
			if (cp >= 0xd800 && cp < 0xdc00 && end - p >= 7 &&
			    p[1] == '\\' && p[2] == 'u' &&
			    (lo = hex4(p + 3, end)) >= 0xdc00 && lo < 0xe000) {
				cp = 0x10000 + ((cp - 0xd800) << 10) +
				    (lo - 0xdc00);
				p += 6;
			} else if (cp >= 0xd800 && cp < 0xe000)
				cp = 0xfffd; /* a lone surrogate */
			n += put_utf8(buf + n, (unsigned long)cp);
			break;
		default:
			goto bad;
		}
	}
	if (p >= end)
		goto bad;
	*out = buf;
	*out_len = n;
	return 0;
bad:
	free(buf);
	return -1;
}

/*
 * The bytes of top-level string field key of a raw reply (NULs kept).
 * 0 with *out (caller frees, also NUL-terminated) and *out_len, or -1 if
 * the field is missing, not a string, or the text is malformed.
 */
int
agent_reply_bytes(
    const char *buf, size_t len, const char *key, char **out, size_t *out_len)
{
	const char *p = buf, *end = buf + len;
	char *name;
	size_t name_len;

	*out = NULL;
	*out_len = 0;
	p = skip_ws(p, end);
	if (p >= end || *p != '{')
		return -1;
	for (p++;;) {
		int match;

		p = skip_ws(p, end);
		if (p >= end || *p != '"')
			return -1;
		if (decode_string(p, end, &name, &name_len) != 0)
			return -1;
		match =
		    name_len == strlen(key) && memcmp(name, key, name_len) == 0;
		free(name);
		p = skip_string(p, end);
		if (p == NULL)
			return -1;
		p = skip_ws(p, end);
		if (p >= end || *p != ':')
			return -1;
		p = skip_ws(p + 1, end);
		if (match) {
			if (p >= end || *p != '"' ||
			    decode_string(p, end, out, out_len) != 0)
				return -1;
			(*out)[*out_len] = '\0';
			return 0;
		}
		p = skip_value(p, end);
		if (p == NULL)
			return -1;
		p = skip_ws(p, end);
		if (p < end && *p == ',') {
			p++;
			continue;
		}
		return -1; /* '}' (not found) or garbage */
	}
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
