/*
 * attach.c: the client side of agent streams that begin with one JSON line.
 *
 * agent_line_call() sends a request and reads the agent's first line, keeping
 * whatever came after it: attach_shell (binary frames, proto/attach.h)
 * and export_archive (a raw tar) both continue that way.
 *
 * struct attach_client holds an attached shell stream: received bytes are
 * cut into frames (attach_client_next), outgoing frames wait in a bounded
 * queue that the caller flushes when the socket is writable, so nothing
 * here blocks. The decoders check each frame's length, since a malformed
 * stream must not crash the client.
 */
#include <errno.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/common.h"
#include "proto/proto.h"
#include "proto/attach.h"
#include "session.h"

#define READ_CHUNK       65536
#define ROSTER_FRAME_MAX (16 * 1024) /* bytes of a CLIENTS frame we read */

/*
 * Send req as one line on fd and read the agent's first reply line before
 * deadline. Returns the parsed object (an {"error"} reply becomes NULL with
 * cause "agent: ...") and hands back the bytes read past the line in
 * *rest and *rest_len (caller frees; may be NULL and 0). A reply that ends
 * without a newline is taken whole (the agent closed after it).
 */
cJSON *
agent_line_call(int fd, const cJSON *req, uint64_t deadline, uint8_t **rest,
    size_t *rest_len, char **cause)
{
	char *buf, *nl;
	ssize_t used;
	size_t len;
	cJSON *o;

	*rest = NULL;
	*rest_len = 0;
	if (agent_send_request(fd, req, deadline, cause) != 0)
		return NULL;
	used = agent_read_reply(fd, deadline, 1, VMUX_MAX_REQUEST, &buf, cause);
	if (used < 0)
		return NULL;
	nl = memchr(buf, '\n', (size_t)used);
	len = nl != NULL ? (size_t)(nl - buf) : (size_t)used;
	o = agent_parse_reply(buf, len, cause);
	if (o != NULL && nl != NULL && (size_t)used > len + 1) {
		*rest_len = (size_t)used - len - 1;
		*rest = xmalloc(*rest_len);
		memcpy(*rest, nl + 1, *rest_len);
	}
	free(buf);
	return o;
}

/* Take over fd (made non-blocking) and the bytes already read from it. */
void
attach_client_init(
    struct attach_client *c, int fd, const uint8_t *pre, size_t pre_len)
{
	memset(c, 0, sizeof *c);
	c->fd = fd;
	if (fd >= 0)
		set_nonblock(fd, 1);
	if (pre_len > 0) {
		c->in_cap = pre_len > READ_CHUNK ? pre_len : READ_CHUNK;
		c->in = xmalloc(c->in_cap);
		memcpy(c->in, pre, pre_len);
		c->in_len = pre_len;
	}
}

/* Close the stream and free the buffers. */
void
attach_client_free(struct attach_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->in);
	free(c->out);
	memset(c, 0, sizeof *c);
	c->fd = -1;
}

/*
 * Read what the socket has (one recv). Returns the byte count, 0 at EOF
 * (c->eof is set), -EAGAIN when nothing is there, or -errno.
 */
ssize_t
attach_client_read(struct attach_client *c)
{
	ssize_t n;

	if (c->in_off > 0) { /* frames handed out are consumed now */
		memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
		c->in_len -= c->in_off;
		c->in_off = 0;
	}
	if (c->in_cap - c->in_len < READ_CHUNK) {
		c->in_cap = c->in_len + READ_CHUNK;
		c->in = xrealloc(c->in, c->in_cap);
	}
	n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
	if (n < 0)
		return errno == EINTR ? -EAGAIN : -errno;
	if (n == 0)
		c->eof = 1;
	c->in_len += (size_t)n;
	return n;
}

/*
 * Take bytes another reader got from the socket (vmux web's loop reads it
 * itself), as attach_client_read would have.
 */
void
attach_client_feed(struct attach_client *c, const void *bytes, size_t n)
{
	if (c->in_off > 0) {
		memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
		c->in_len -= c->in_off;
		c->in_off = 0;
	}
	if (c->in_cap - c->in_len < n) {
		c->in_cap = c->in_len + n + READ_CHUNK;
		c->in = xrealloc(c->in, c->in_cap);
	}
	memcpy(c->in + c->in_len, bytes, n);
	c->in_len += n;
}

/*
 * The next whole frame received: 1 with *f pointing into the buffer (valid
 * until the next attach_client_read), 0 if more bytes are needed, -1 if the
 * stream is broken (a length over VMUX_ATTACH_MAX_PAYLOAD).
 */
int
attach_client_next(struct attach_client *c, struct attach_frame *f)
{
	uint32_t len;
	uint8_t type;
	ssize_t n;

	if (c->in == NULL) /* nothing received yet */
		return 0;
	n = vmux_attach_parse(
	    c->in + c->in_off, c->in_len - c->in_off, &type, &len);
	if (n <= 0)
		return n < 0 ? -1 : 0;
	f->type = type;
	f->len = len;
	f->payload = c->in + c->in_off + VMUX_ATTACH_HDR;
	c->in_off += (size_t)n;
	return 1;
}

/* Forget the frames not sent yet (the peer stopped reading for good). */
void
attach_client_drop_output(struct attach_client *c)
{
	c->out_off = c->out_len = 0;
}

/* Bytes of frames that may still be queued. */
size_t
attach_client_room(const struct attach_client *c)
{
	size_t used = c->out_len - c->out_off;

	return used >= ATTACH_CLIENT_OUT_MAX ? 0 : ATTACH_CLIENT_OUT_MAX - used;
}

/* Is anything waiting to be sent? */
int
attach_client_pending(const struct attach_client *c)
{
	return c->out_off < c->out_len;
}

/* Queue one frame; -1 if the payload does not fit the queue or a frame. */
int
attach_client_queue(
    struct attach_client *c, uint8_t type, const void *payload, size_t len)
{
	if (len > VMUX_ATTACH_MAX_PAYLOAD ||
	    VMUX_ATTACH_HDR + len > attach_client_room(c))
		return -1;
	if (c->out_off > 0 && c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	if (c->out_cap - c->out_len < VMUX_ATTACH_HDR + len) {
		if (c->out_off > 0) {
			memmove(c->out, c->out + c->out_off,
			    c->out_len - c->out_off);
			c->out_len -= c->out_off;
			c->out_off = 0;
		}
		c->out_cap = c->out_len + VMUX_ATTACH_HDR + len + 4096;
		c->out = xrealloc(c->out, c->out_cap);
	}
	vmux_attach_header(c->out + c->out_len, type, (uint32_t)len);
	if (len > 0)
		memcpy(c->out + c->out_len + VMUX_ATTACH_HDR, payload, len);
	c->out_len += VMUX_ATTACH_HDR + len;
	return 0;
}

/* Queue a RESIZE frame. */
int
attach_client_resize(struct attach_client *c, int cols, int rows)
{
	uint8_t p[4];

	if (cols < 1 || rows < 1 || cols > 4096 || rows > 4096)
		return -1;
	vmux_put_u16(p, (uint16_t)cols);
	vmux_put_u16(p + 2, (uint16_t)rows);
	return attach_client_queue(c, VMUX_ATTACH_RESIZE, p, sizeof p);
}

/* Send queued frames until done or the socket is full; 0 or -errno. */
int
attach_client_flush(struct attach_client *c)
{
	ssize_t n;

	while (c->out_off < c->out_len) {
		n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? 0 : -errno;
		c->out_off += (size_t)n;
	}
	c->out_off = c->out_len = 0;
	return 0;
}

/* DATA: u64 cursor + bytes. 0, or -1 if the frame is malformed. */
int
attach_decode_data(const struct attach_frame *f, uint64_t *cursor,
    const uint8_t **bytes, size_t *len)
{
	if (f->type != VMUX_ATTACH_DATA || f->len < 8)
		return -1;
	*cursor = vmux_get_u64(f->payload);
	*bytes = f->payload + 8;
	*len = f->len - 8;
	return 0;
}

/* EXIT: i32 exit code, i32 signal, u64 cursor. */
int
attach_decode_exit(
    const struct attach_frame *f, int *code, int *sig, uint64_t *cursor)
{
	if (f->type != VMUX_ATTACH_EXIT || f->len != 16)
		return -1;
	*code = (int32_t)vmux_get_u32(f->payload);
	*sig = (int32_t)vmux_get_u32(f->payload + 4);
	*cursor = vmux_get_u64(f->payload + 8);
	return 0;
}

/* TRUNCATED: u64 from, u64 to. */
int
attach_decode_truncated(
    const struct attach_frame *f, uint64_t *from, uint64_t *to)
{
	if (f->type != VMUX_ATTACH_TRUNCATED || f->len != 16)
		return -1;
	*from = vmux_get_u64(f->payload);
	*to = vmux_get_u64(f->payload + 8);
	return 0;
}

/* RESIZE: u16 cols, u16 rows. */
int
attach_decode_resize(const struct attach_frame *f, int *cols, int *rows)
{
	if (f->type != VMUX_ATTACH_RESIZE || f->len != 4)
		return -1;
	*cols = vmux_get_u16(f->payload);
	*rows = vmux_get_u16(f->payload + 2);
	return 0;
}

/*
 * CLIENTS: who else is attached, as one printable line ("teacher
 * (watching), bob, +3 more"; "" when nobody), and who holds the keyboard.
 * -1 on a frame that is not such JSON; *r is then left empty.
 */
int
attach_decode_clients(const struct attach_frame *f, struct attach_roster *r)
{
	cJSON *obj, *arr, *e, *v;
	char *s;
	int more = 0;

	memset(r, 0, sizeof *r);
	/* the agent lists at most VMUX_ATTACH_ROSTER_MAX: a few KiB */
	if (f->type != VMUX_ATTACH_CLIENTS || f->len > ROSTER_FRAME_MAX ||
	    (obj = cJSON_ParseWithLength((const char *)f->payload, f->len)) ==
	        NULL)
		return -1;
	r->others = xstrdup("");
	arr = cJSON_GetObjectItemCaseSensitive(obj, "clients");
	cJSON_ArrayForEach(e, arr)
	{
		const char *as = "?"; /* unnamed, or no label we would print */
		if (r->n >= VMUX_ATTACH_ROSTER_MAX) {
			more++; /* more than an honest agent sends */
			continue;
		}
		v = cJSON_GetObjectItemCaseSensitive(e, "as");
		if (cJSON_IsString(v) && vmux_attach_as_valid(v->valuestring))
			as = v->valuestring;
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "you"))) {
			r->mine = cJSON_IsTrue(
			    cJSON_GetObjectItemCaseSensitive(e, "keyboard"));
			continue;
		}
		xasprintf(&s, "%s%s%s%s", r->others, *r->others ? ", " : "", as,
		    cJSON_IsTrue(
		        cJSON_GetObjectItemCaseSensitive(e, "watching"))
		        ? " (watching)"
		        : "");
		free(r->others);
		r->others = s;
		r->n++;
	}
	v = cJSON_GetObjectItemCaseSensitive(obj, "more");
	if (cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble < 1e6)
		more += (int)v->valuedouble;
	if (more > 0) {
		xasprintf(&s, "%s%s+%d more", r->others, *r->others ? ", " : "",
		    more);
		free(r->others);
		r->others = s;
		r->n += more;
	}
	v = cJSON_GetObjectItemCaseSensitive(obj, "keyboard");
	if (cJSON_IsString(v))
		r->keyboard = xstrdup(vmux_attach_as_valid(v->valuestring)
		        ? v->valuestring
		        : "?");
	cJSON_Delete(obj);
	return 0;
}

/*
 * Who this user attaches as by default: the login name when it is a label
 * an attach may carry, else NULL (unnamed). From the password database,
 * never the environment: $USER is whatever the caller set.
 */
const char *
attach_default_as(void)
{
	static char name[VMUX_ATTACH_AS_MAX + 1];
	struct passwd *pw = getpwuid(getuid());

	if (pw == NULL || pw->pw_name == NULL ||
	    !vmux_attach_as_valid(pw->pw_name))
		return NULL;
	snprintf(name, sizeof name, "%s", pw->pw_name);
	return name;
}

/* Free what attach_decode_clients filled. */
void
attach_roster_free(struct attach_roster *r)
{
	free(r->others);
	free(r->keyboard);
	memset(r, 0, sizeof *r);
}

/*
 * The exit status a client reports for a shell that ended: its code when
 * known (the agent makes it 128+N for signal N), else 128+N from the
 * signal, else 1 (unknown).
 */
int
attach_exit_status(int code, int sig)
{
	if (code >= 0)
		return code > 255 ? 255 : code;
	if (sig > 0 && sig < 128)
		return 128 + sig;
	return 1;
}

/* A number field of o, or def. */
static double
num_field(const cJSON *o, const char *key, double def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : def;
}

/*
 * Find shell id among the agent's (list_shells): 1 with *cursor where a
 * repaint of the last replay bytes starts and *end its output's end (if
 * end is not NULL), 2 the same for a shell that has ended, 0 if there is
 * no such shell, -1 with cause.
 */
int
attach_shell_find(const struct vsock_target *t, const char *id, size_t replay,
    uint64_t connect_deadline, uint64_t deadline, int64_t *cursor, int64_t *end,
    char **cause)
{
	cJSON *req = agent_req_list_shells(), *reply, *s;
	int found = 0;

	reply =
	    agent_call(t, req, connect_deadline, deadline, NULL, NULL, cause);
	cJSON_Delete(req);
	if (reply == NULL)
		return -1;
	cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(reply, "shells"))
	{
		const cJSON *v =
		    cJSON_GetObjectItemCaseSensitive(s, "shell_id");
		double out, oldest;

		if (!cJSON_IsString(v) || strcmp(v->valuestring, id) != 0)
			continue;
		out = num_field(s, "output_bytes", 0);
		oldest = num_field(s, "oldest_cursor", 0);
		*cursor = out - (double)replay > oldest
		    ? (int64_t)(out - (double)replay)
		    : (int64_t)oldest;
		if (end != NULL)
			*end = (int64_t)out;
		v = cJSON_GetObjectItemCaseSensitive(s, "state");
		found =
		    cJSON_IsString(v) && strcmp(v->valuestring, "stopped") == 0
		    ? 2
		    : 1;
	}
	cJSON_Delete(reply);
	return found;
}

/*
 * Connect to the agent and attach to shell_id, replaying from cursor (-1:
 * the oldest byte kept). Returns 0 with the client ready and *record the
 * agent's answer (caller deletes), or -1 with cause.
 */
int
attach_shell_open(const struct vsock_target *t, const char *shell_id,
    int64_t cursor, const struct attach_who *who, uint64_t deadline,
    struct attach_client *c, cJSON **record, char **cause)
{
	uint8_t *rest = NULL;
	size_t rest_len = 0;
	cJSON *req, *reply;
	int fd;

	*record = NULL;
	fd = transport_connect(t, VMUX_AGENT_PORT, deadline, cause);
	if (fd < 0)
		return -1;
	req = agent_req_attach_shell(shell_id, cursor,
	    who != NULL ? who->as : NULL, who != NULL && who->watch,
	    who != NULL && who->input);
	reply = agent_line_call(fd, req, deadline, &rest, &rest_len, cause);
	cJSON_Delete(req);
	if (reply == NULL) {
		close(fd);
		return -1;
	}
	if (!cJSON_IsTrue(
	        cJSON_GetObjectItemCaseSensitive(reply, "attached"))) {
		xasprintf(cause, "agent did not attach to shell %s", shell_id);
		cJSON_Delete(reply);
		free(rest);
		close(fd);
		return -1;
	}
	attach_client_init(c, fd, rest, rest_len);
	free(rest);
	*record = reply;
	return 0;
}
