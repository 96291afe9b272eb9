/*
 * attach.c: clients attached to a shell (framing in proto/attach.h).
 *
 * Output is never queued per client: each client has a cursor into the
 * shell's ring and, when its socket is writable, gets the next DATA frame
 * copied from the ring (at most ATTACH_CHUNK bytes in flight). A slow client
 * therefore only lags; if the ring evicts its cursor it gets TRUNCATED and
 * resumes at the oldest byte. Control frames (RESIZE, EXIT, ERROR, ...) wait
 * in a small per-client queue sent ahead of the next DATA frame. Reading the
 * client's frames is independent of all this: keystrokes go to the shell's
 * input buffer, and only when that is full does the agent stop reading the
 * client (backpressure on input, never on output).
 *
 * Who is attached is part of the stream too: every client is owed a CLIENTS
 * frame (roster_dirty) when one comes or goes or the keyboard changes hands,
 * built when it is sent, so a burst of changes costs one frame, never a
 * queue. A client attached to watch, or any client while another holds the
 * keyboard (TAKE), has its keys, resizes and signals dropped.
 */
#include <sys/socket.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "proto/attach.h"

#define ATTACH_CHUNK   32768
#define ATTACH_CTL_MAX 65536
/* a client's unparsed input: one whole frame and one read more */
#define ATTACH_INPUT_ROOM (VMUX_ATTACH_HDR + VMUX_ATTACH_MAX_PAYLOAD + 65536)

/* Queue a control frame if the queue stays within limit bytes; 0 or -1. */
static int
attach_queue_within(
    struct conn *c, size_t limit, uint8_t type, const void *payload, size_t len)
{
	uint8_t hdr[VMUX_ATTACH_HDR];

	if (c->ctl.len + sizeof hdr + len > limit)
		return -1;
	vmux_attach_header(hdr, type, (uint32_t)len);
	buf_add(&c->ctl, hdr, sizeof hdr);
	buf_add(&c->ctl, payload, len);
	return 0;
}

/* Queue a control frame; a client that lets too many pile up is dropped. */
void
attach_queue(struct conn *c, uint8_t type, const void *payload, size_t len)
{
	if (attach_queue_within(c, ATTACH_CTL_MAX, type, payload, len) != 0)
		c->broken = 1;
}

/* Queue an ERROR frame. */
static void
attach_error(struct conn *c, const char *msg)
{
	attach_queue(c, VMUX_ATTACH_ERROR, msg, strlen(msg));
}

/* Queue the EXIT frame once. */
static void
attach_queue_exit(struct conn *c, const struct shell *s)
{
	uint8_t p[16];

	if (c->exit_sent)
		return;
	vmux_put_u32(p, (uint32_t)(s->exited ? s->exit_code : -1));
	vmux_put_u32(p + 4, (uint32_t)(s->exited ? s->exit_signal : 0));
	vmux_put_u64(p + 8, s->ring.end);
	attach_queue(c, VMUX_ATTACH_EXIT, p, sizeof p);
	c->exit_sent = 1;
}

/* Every client of s owes its user a new CLIENTS frame. */
static void
attach_roster_changed(struct shell *s)
{
	for (struct conn *c = s->clients; c != NULL; c = c->snext)
		c->roster_dirty = 1;
}

/*
 * Who is attached to s, as CLIENTS carries it and shell records show it
 * (`me`: the client it is for, marked "you"; NULL for a record).
 */
cJSON *
attach_roster(const struct shell *s, const struct conn *me)
{
	cJSON *obj = cJSON_CreateObject(), *arr, *e;
	int n = 0;

	arr = cJSON_AddArrayToObject(obj, "clients");
	for (const struct conn *c = s->clients; c != NULL; c = c->snext) {
		if (n++ >= VMUX_ATTACH_ROSTER_MAX)
			continue;
		e = cJSON_CreateObject();
		if (c->as != NULL)
			cJSON_AddStringToObject(e, "as", c->as);
		else
			cJSON_AddNullToObject(e, "as");
		cJSON_AddBoolToObject(
		    e, "watching", c->watching && s->keyboard != c);
		cJSON_AddBoolToObject(e, "keyboard", s->keyboard == c);
		if (me != NULL)
			cJSON_AddBoolToObject(e, "you", c == me);
		cJSON_AddItemToArray(arr, e);
	}
	if (s->keyboard != NULL && s->keyboard->as != NULL)
		cJSON_AddStringToObject(obj, "keyboard", s->keyboard->as);
	else if (s->keyboard != NULL)
		cJSON_AddStringToObject(obj, "keyboard", "");
	else
		cJSON_AddNullToObject(obj, "keyboard");
	cJSON_AddNumberToObject(obj, "more",
	    n > VMUX_ATTACH_ROSTER_MAX ? n - VMUX_ATTACH_ROSTER_MAX : 0);
	return obj;
}

/* Put c's CLIENTS frame into c->out. */
static void
attach_fill_roster(struct conn *c)
{
	cJSON *obj = attach_roster(c->shell, c);
	char *text = cJSON_PrintUnformatted(obj);
	size_t n;

	if (text == NULL)
		fatalx("cJSON_PrintUnformatted: out of memory");
	n = strlen(text);
	buf_reserve(&c->out, VMUX_ATTACH_HDR + n);
	vmux_attach_header(c->out.data, VMUX_ATTACH_CLIENTS, (uint32_t)n);
	memcpy(c->out.data + VMUX_ATTACH_HDR, text, n);
	c->out.len = VMUX_ATTACH_HDR + n;
	c->roster_dirty = 0;
	cJSON_free(text);
	cJSON_Delete(obj);
}

/*
 * What `from` typed, to the clients that asked for it (a recorder of
 * input). Never queued past a client's control queue: dropped instead, as
 * a missing keystroke in a recording costs less than the client.
 */
void
attach_echo_input(
    struct shell *s, const struct conn *from, const void *bytes, size_t len)
{
	if (len > VMUX_ATTACH_MAX_PAYLOAD)
		return; /* can't happen: input comes in frames or requests */
	for (struct conn *c = s->clients; c != NULL; c = c->snext)
		if (c->want_input && c != from) /* no room: dropped */
			attach_queue_within(c, ATTACH_CTL_MAX / 2,
			    VMUX_ATTACH_TYPED, bytes, len);
}

/* May c's keys (and resizes, signals) reach the shell? */
static int
attach_may_type(const struct conn *c, const struct shell *s)
{
	if (s->keyboard != NULL)
		return s->keyboard == c;
	return !c->watching;
}

/*
 * Make c a client of s, streaming from `cursor` (clamped to what the ring
 * still has; a TRUNCATED frame says so), as the request says who it is.
 * Frames start once the JSON reply is written. 0, or -1 with cause when
 * the memory budget has no room for the client's input buffer.
 */
int
attach_start(struct agent *a, struct conn *c, struct shell *s, uint64_t cursor,
    const struct agent_request *req, char **cause)
{
	uint64_t oldest = ring_oldest(&s->ring);
	uint8_t p[16];

	/* the client's frames may fill its input buffer (attach_read) */
	if (budget_reserve(ATTACH_INPUT_ROOM, cause) != 0)
		return -1;
	c->charged = ATTACH_INPUT_ROOM;

	c->shell = s;
	c->cursor = cursor;
	if (cursor < oldest) {
		vmux_put_u64(p, cursor);
		vmux_put_u64(p + 8, oldest);
		attach_queue(c, VMUX_ATTACH_TRUNCATED, p, sizeof p);
		c->cursor = oldest;
	}
	c->as = req->as != NULL ? xstrdup(req->as) : NULL;
	c->watching = req->watch;
	c->want_input = req->want_input;
	c->snext = s->clients;
	s->clients = c;
	s->nclients++;
	attach_roster_changed(s);
	c->is_attach = 1;
	a->nconns--;
	a->nattach++;
	return 0;
}

/* Unlink c from its shell (the connection itself stays). */
void
attach_detach(struct agent *a, struct conn *c)
{
	struct conn **cp;

	(void)a;
	if (c->shell == NULL)
		return;
	for (cp = &c->shell->clients; *cp != NULL; cp = &(*cp)->snext) {
		if (*cp == c) {
			*cp = c->snext;
			c->shell->nclients--;
			break;
		}
	}
	if (c->shell->keyboard == c)
		c->shell->keyboard = NULL; /* a taker that goes hands back */
	attach_roster_changed(c->shell);
	c->snext = NULL;
	c->shell = NULL;
}

/* How far this client may read: all output, or up to the stop. */
static uint64_t
attach_limit(const struct shell *s)
{
	return s->state == SHELL_STOPPED ? s->stop_cursor : s->ring.end;
}

/* Does the client have anything to be sent? */
int
attach_wants_write(const struct conn *c)
{
	const struct shell *s = c->shell;

	if (c->out_off < c->out.len || c->ctl.len > 0 || c->closing)
		return 1;
	if (s == NULL)
		return 0;
	if (c->cursor < attach_limit(s) || c->roster_dirty)
		return 1;
	return s->state == SHELL_STOPPED && !c->exit_sent;
}

/* Put the next frame into c->out; returns 0 if there is none. */
static int
attach_fill(struct conn *c)
{
	struct shell *s = c->shell;
	uint64_t oldest, limit;
	uint8_t p[16];
	size_t n;

	c->out.len = c->out_off = 0;
	if (c->ctl.len > 0) {
		struct buf tmp = c->out;

		c->out = c->ctl;
		c->ctl = tmp;
		c->ctl.len = 0;
		return 1;
	}
	if (s == NULL)
		return 0;
	if (c->roster_dirty) {
		attach_fill_roster(c);
		return 1;
	}
	oldest = ring_oldest(&s->ring);
	if (c->cursor < oldest) {
		vmux_put_u64(p, c->cursor);
		vmux_put_u64(p + 8, oldest);
		attach_queue(c, VMUX_ATTACH_TRUNCATED, p, sizeof p);
		c->cursor = oldest;
		return attach_fill(c);
	}
	limit = attach_limit(s);
	if (c->cursor < limit) {
		n = limit - c->cursor < ATTACH_CHUNK
		    ? (size_t)(limit - c->cursor)
		    : ATTACH_CHUNK;
		buf_reserve(&c->out, VMUX_ATTACH_HDR + 8 + n);
		vmux_attach_header(
		    c->out.data, VMUX_ATTACH_DATA, (uint32_t)(8 + n));
		vmux_put_u64(c->out.data + VMUX_ATTACH_HDR, c->cursor);
		n = ring_copy(
		    &s->ring, c->cursor, c->out.data + VMUX_ATTACH_HDR + 8, n);
		c->out.len = VMUX_ATTACH_HDR + 8 + n;
		c->cursor += n;
		return 1;
	}
	if (s->state == SHELL_STOPPED && !c->exit_sent) {
		attach_queue_exit(c, s);
		c->closing = 1;
		return attach_fill(c);
	}
	return 0;
}

/* Send frames until the socket is full or nothing is left. */
void
attach_write(struct agent *a, struct conn *c)
{
	ssize_t n;

	if (c->state != CONN_ATTACHED)
		return;
	for (int i = 0; i < 64; i++) {
		if (c->out_off == c->out.len && !attach_fill(c)) {
			if (c->closing) {
				shutdown(c->fd, SHUT_WR);
				conn_kill(a, c);
			}
			return;
		}
		n = send(c->fd, c->out.data + c->out_off,
		    c->out.len - c->out_off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				conn_kill(a, c);
			return;
		}
		c->out_off += (size_t)n;
		if (c->out_off < c->out.len)
			return; /* the socket is full */
	}
}

/* Act on one client frame; returns 0 if it must be retried later. */
static int
attach_frame(struct agent *a, struct conn *c, uint8_t type, const uint8_t *p,
    uint32_t len)
{
	struct shell *s = c->shell;
	char name[33];
	int cols, rows, sig, rc;

	if (type == VMUX_ATTACH_DETACH) {
		attach_detach(a, c);
		attach_queue(c, VMUX_ATTACH_DETACH, NULL, 0);
		c->closing = 1;
		c->eof = 1;
		return 1;
	}
	if (s == NULL)
		return 1; /* closing down: ignore */
	if (type == VMUX_ATTACH_TAKE || type == VMUX_ATTACH_RELEASE) {
		if (type == VMUX_ATTACH_TAKE)
			s->keyboard = c;
		else if (s->keyboard == c)
			s->keyboard = NULL;
		attach_roster_changed(s);
		return 1;
	}
	if ((type == VMUX_ATTACH_INPUT || type == VMUX_ATTACH_RESIZE ||
	        type == VMUX_ATTACH_EOF || type == VMUX_ATTACH_SIGNAL) &&
	    !attach_may_type(c, s))
		return 1; /* a watcher's, or not the keyboard's holder's */
	switch (type) {
	case VMUX_ATTACH_INPUT:
		activity_touch();
		rc = shell_input(a, s, p, len);
		if (rc == -ENOBUFS) {
			c->input_blocked = 1;
			return 0;
		}
		if (rc < 0)
			attach_error(c, "shell is not running");
		else
			attach_echo_input(s, c, p, len);
		break;
	case VMUX_ATTACH_RESIZE:
		cols = len == 4 ? vmux_get_u16(p) : 0;
		rows = len == 4 ? vmux_get_u16(p + 2) : 0;
		if (cols < 1 || rows < 1 || cols > SHELL_MAX_DIM ||
		    rows > SHELL_MAX_DIM)
			attach_error(c, "bad RESIZE frame");
		else if (shell_resize(a, s, cols, rows) < 0)
			attach_error(c, "shell is not running");
		break;
	case VMUX_ATTACH_EOF:
		if (shell_input_eof(a, s) < 0)
			attach_error(c, "shell is not running");
		break;
	case VMUX_ATTACH_SIGNAL:
		if (len >= sizeof name) {
			attach_error(c, "bad SIGNAL frame");
			break;
		}
		memcpy(name, p, len);
		name[len] = '\0';
		if ((sig = signame_parse(name)) < 0)
			attach_error(c, "unknown signal");
		else if (shell_signal(s, sig) < 0)
			attach_error(c, "shell is not running");
		break;
	default:
		attach_error(c, "unknown frame type");
		break;
	}
	return 1;
}

/* Handle the complete frames buffered in c->in. */
static void
attach_parse(struct agent *a, struct conn *c)
{
	uint32_t len;
	uint8_t type;
	ssize_t n;

	/* Once closing (EXIT, DETACH, shell gone) input is ignored. */
	while (!c->input_blocked && c->state == CONN_ATTACHED && !c->closing) {
		n = vmux_attach_parse(c->in.data, c->in.len, &type, &len);
		if (n == 0)
			break;
		if (n < 0) {
			attach_error(c, "frame too large");
			attach_detach(a, c);
			c->closing = 1;
			c->eof = 1;
			break;
		}
		if (!attach_frame(
		        a, c, type, c->in.data + VMUX_ATTACH_HDR, len))
			break;
		buf_drain(&c->in, (size_t)n);
	}
	if (c->closing && c->state == CONN_ATTACHED)
		attach_write(a, c);
}

/*
 * After EOF from a client: did it close for good, or only shut down its
 * sending side (`vmux shell < script`, which still wants the output)? On
 * vsock an empty send fails with EPIPE once the peer has shut down its
 * receiving side too (the bridge says so when a client's socket hangs up),
 * so a killed client is dropped now rather than at the shell's next output.
 * Elsewhere (Unix sockets) the empty send succeeds: the next write finds out.
 */
static int
attach_peer_gone(int fd)
{
	if (send(fd, "", 0, MSG_NOSIGNAL | MSG_DONTWAIT) == 0)
		return 0;
	return errno == EPIPE || errno == ENOTCONN || errno == ECONNRESET;
}

/* Read client frames (and act on any that came with the request). */
void
attach_read(struct agent *a, struct conn *c)
{
	size_t room = ATTACH_INPUT_ROOM;
	ssize_t n = -1;

	if (!c->input_blocked && !c->eof && c->in.len < room) {
		room = room - c->in.len < 65536 ? room - c->in.len : 65536;
		buf_reserve(&c->in, room);
		n = read(c->fd, c->in.data + c->in.len, room);
		if (n > 0)
			c->in.len += (size_t)n;
		else if (n == 0)
			c->eof = 1; /* no more input; keep streaming output */
		else if (errno != EAGAIN && errno != EINTR) {
			conn_kill(a, c);
			return;
		}
	}
	attach_parse(a, c);
	/* EOF just now, every frame handled: hung up, or only half-closed? */
	if (n == 0 && c->state != CONN_DEAD && c->in.len == 0 &&
	    attach_peer_gone(c->fd))
		conn_kill(a, c);
}

/* The shell's input buffer has room again: let blocked clients go on. */
void
attach_input_drained(struct agent *a, struct shell *s)
{
	struct conn *c, *next;

	for (c = s->clients; c != NULL; c = next) {
		next = c->snext;
		if (c->input_blocked && c->state == CONN_ATTACHED) {
			c->input_blocked = 0;
			attach_parse(a, c);
		}
	}
}

/* Tell every client the PTY's new size. */
void
attach_send_resize(struct shell *s)
{
	uint8_t p[4];

	vmux_put_u16(p, (uint16_t)s->cols);
	vmux_put_u16(p + 2, (uint16_t)s->rows);
	for (struct conn *c = s->clients; c != NULL; c = c->snext)
		attach_queue(c, VMUX_ATTACH_RESIZE, p, sizeof p);
}

/* The shell is closed: every client gets EXIT and is let go. */
void
attach_shell_gone(struct agent *a, struct shell *s)
{
	struct conn *c, *next;

	for (c = s->clients; c != NULL; c = next) {
		next = c->snext;
		attach_queue_exit(c, s);
		c->closing = 1;
		c->shell = NULL;
		c->snext = NULL;
		if (c->state == CONN_ATTACHED)
			attach_write(a, c);
	}
	s->clients = NULL;
	s->nclients = 0;
	s->keyboard = NULL;
}
