/*
 * term.c: one page's terminal, joined to the agent's attach stream.
 *
 * After the hello names a session (a link's grant, or the teacher's tile)
 * an attach thread (attach.c) connects; its socket then joins the loop as
 * a raw socket whose frames (proto/attach.h) become page messages: DATA
 * as 'o' with its cursor, so a page that reconnects asks for exactly what
 * it missed; the rest as 'j' JSON. The page's keys, resizes and signals go
 * the other way as frames, except from a read-only link, whose keys are
 * dropped here as well as by the agent (it attached watching) and whose
 * size is never sent. Both directions are bounded: past WEB_OUT_MAX queued
 * for the page the agent's socket is not read (the agent's ring then drops
 * the oldest output and says so, shown as a marker), and past the agent
 * queue's room the page's socket is not read.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "proto/attach.h"
#include "web-int.h"

#define SIGNAL_NAME_MAX 16

/*
 * The hello of a terminal: c->session set, and g the link's grant (NULL:
 * the teacher's tile). Only a read-write link opens a shell that is not
 * there yet; a watcher or a tile waits for it.
 */
int
web_term_hello(struct web_conn *c, const cJSON *hello, int cols, int rows,
    const struct web_grant *g)
{
	const cJSON *cur = cJSON_GetObjectItemCaseSensitive(hello, "cursor");
	const cJSON *sh = cJSON_GetObjectItemCaseSensitive(hello, "shell");
	struct web_attach *j;
	char *cause = NULL;

	if (c->shell == NULL)
		c->shell =
		    xstrdup(cJSON_IsString(sh) ? sh->valuestring : "main");
	if (session_name_valid(c->session, &cause) != 0 ||
	    shell_id_valid(c->shell, &cause) != 0) {
		web_close(c, WEB_CLOSE_BAD, 1, "hello: %s", cause);
		free(cause);
		return 0;
	}
	if (cur != NULL &&
	    (!cJSON_IsNumber(cur) || cur->valuedouble < 0 ||
	        cur->valuedouble > 9007199254740992.0 ||
	        cur->valuedouble != (int64_t)cur->valuedouble)) {
		web_close(c, WEB_CLOSE_BAD, 1,
		    "hello: cursor is a byte offset (a whole number, 0 or "
		    "more)");
		return 0;
	}
	if (web.attaching >= WEB_ATTACHING_MAX) {
		web_close(c, WEB_CLOSE_BUSY, 1, "vmux web is busy: try again");
		return 0;
	}
	c->kind = WEB_TERM;
	j = xcalloc(1, sizeof *j);
	j->conn = c->id;
	j->home = xstrdup(web.o->home);
	j->session = xstrdup(c->session);
	j->shell = xstrdup(c->shell);
	j->cols = cols;
	j->rows = rows;
	j->watch = c->read_only;
	j->may_open = g != NULL && !g->read_only;
	j->cursor = cur != NULL ? (int64_t)cur->valuedouble : -1;
	if (g != NULL) {
		j->instance = g->instance != NULL ? xstrdup(g->instance) : NULL;
		j->as = xstrdup(g->as != NULL ? g->as : g->session);
		if (j->instance == NULL) /* can't happen: grant pins one */
			j->instance = xstrdup("");
	} else
		j->as = xstrdup("teacher");
	c->attaching = 1;
	web.attaching++;
	if (web_attach_start(web.ctx, j) != 0) {
		c->attaching = 0;
		web.attaching--;
		web_attach_free(j);
		web_close(
		    c, WEB_CLOSE_SERVER, 1, "vmux web has no threads left");
	}
	return 0;
}

/* The connection whose id is id, or NULL. */
static struct web_conn *
conn_find(uint64_t id)
{
	for (struct web_conn *c = web.conns; c != NULL; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

/* Stop or go on reading the agent as the page's queue grows and drains. */
static void
agent_pace(struct web_conn *c)
{
	if (c->agent == NULL)
		return;
	if (!c->agent_paused && c->out_bytes > WEB_OUT_MAX) {
		c->agent_paused = 1;
		lws_rx_flow_control(c->agent, 0);
	} else if (c->agent_paused && c->out_bytes < WEB_OUT_RESUME) {
		c->agent_paused = 0;
		lws_rx_flow_control(c->agent, 1);
	}
}

/* A size from the guest, kept to what a page can draw. */
static int
clamp_dim(int n)
{
	return n < 1 ? 1 : n > 4096 ? 4096 : n;
}

/* A CLIENTS frame, passed on with only the fields the pages use. */
static void
agent_clients(struct web_conn *c, const struct attach_frame *f)
{
	cJSON *in = f->len < 16384
	    ? cJSON_ParseWithLength((const char *)f->payload, f->len)
	    : NULL;
	cJSON *o = cJSON_CreateObject(),
	      *arr = cJSON_AddArrayToObject(o, "clients"), *e;
	const cJSON *kb = cJSON_GetObjectItemCaseSensitive(in, "keyboard");
	const cJSON *more = cJSON_GetObjectItemCaseSensitive(in, "more");
	int n = 0;

	cJSON_AddStringToObject(o, "type", "clients");
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(in, "clients"))
	{
		const cJSON *as = cJSON_GetObjectItemCaseSensitive(e, "as");
		cJSON *x;

		if (!cJSON_IsString(as) ||
		    !vmux_attach_as_valid(as->valuestring) ||
		    n++ == VMUX_ATTACH_ROSTER_MAX)
			continue;
		x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "as", as->valuestring);
		cJSON_AddBoolToObject(x, "watching",
		    cJSON_IsTrue(
		        cJSON_GetObjectItemCaseSensitive(e, "watching")));
		cJSON_AddBoolToObject(x, "keyboard",
		    cJSON_IsTrue(
		        cJSON_GetObjectItemCaseSensitive(e, "keyboard")));
		cJSON_AddBoolToObject(x, "you",
		    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "you")));
		cJSON_AddItemToArray(arr, x);
	}
	if (cJSON_IsString(kb) && vmux_attach_as_valid(kb->valuestring))
		cJSON_AddStringToObject(o, "keyboard", kb->valuestring);
	if (cJSON_IsNumber(more) && more->valuedouble > 0 &&
	    more->valuedouble < 1e6)
		cJSON_AddNumberToObject(o, "more", (int)more->valuedouble);
	cJSON_Delete(in);
	web_send_json(c, o);
}

/* One frame from the agent; -1 ends the stream. */
static int
agent_frame(struct web_conn *c, const struct attach_frame *f)
{
	const uint8_t *bytes;
	uint64_t cursor, from, to;
	int code, sig, cols, rows;
	size_t n;
	cJSON *o;

	switch (f->type) {
	case VMUX_ATTACH_DATA:
		if (attach_decode_data(f, &cursor, &bytes, &n) != 0)
			return -1;
		/* the frame already has the cursor before the bytes */
		web_send(c, 'o', f->payload, f->len);
		c->cursor = cursor + n;
		return 0;
	case VMUX_ATTACH_TRUNCATED:
		if (attach_decode_truncated(f, &from, &to) != 0)
			return -1;
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "type", "truncated");
		cJSON_AddNumberToObject(o, "from", (double)from);
		cJSON_AddNumberToObject(o, "to", (double)to);
		web_send_json(c, o);
		c->cursor = to;
		return 0;
	case VMUX_ATTACH_RESIZE:
		if (attach_decode_resize(f, &cols, &rows) != 0)
			return -1;
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "type", "resize");
		cJSON_AddNumberToObject(o, "cols", clamp_dim(cols));
		cJSON_AddNumberToObject(o, "rows", clamp_dim(rows));
		web_send_json(c, o);
		return 0;
	case VMUX_ATTACH_EXIT:
		if (attach_decode_exit(f, &code, &sig, &cursor) != 0)
			return -1;
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "type", "exit");
		cJSON_AddNumberToObject(o, "code", code);
		cJSON_AddNumberToObject(o, "signal", sig);
		web_send_json(c, o);
		web_close(c, WEB_CLOSE_EXIT, 0, "the shell ended");
		return 0;
	case VMUX_ATTACH_CLIENTS:
		agent_clients(c, f);
		return 0;
	case VMUX_ATTACH_ERROR: {
		char *text = xstrndup(
		    (const char *)f->payload, f->len > 200 ? 200 : f->len);
		char *safe = str_printable(text, 0);

		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "type", "notice");
		cJSON_AddStringToObject(o, "text", safe);
		web_send_json(c, o);
		free(safe);
		free(text);
		return 0;
	}
	case VMUX_ATTACH_DETACH:
		web_close(c, WEB_CLOSE_GONE, 0, "the agent detached this page");
		return 0;
	default:
		return 0; /* later types: ignored, as the protocol says */
	}
}

/* Hand the page every whole frame the agent sent. */
static void
agent_pump(struct web_conn *c)
{
	struct attach_frame f;
	int r;

	while ((r = attach_client_next(&c->ac, &f)) == 1)
		if (agent_frame(c, &f) != 0) {
			r = -1;
			break;
		}
	if (r < 0) { /* nothing more is read from it */
		web_close(c, WEB_CLOSE_GONE, 1,
		    "the agent's stream is broken (a bad frame)");
		web_term_gone(c);
		return;
	}
	agent_pace(c);
}

/* A finished attach: adopt its socket into the loop, or refuse the page. */
void
web_term_attached(struct web_attach *j)
{
	struct web_conn *c = conn_find(j->conn);
	lws_sock_file_fd_type u;
	struct lws *w;
	cJSON *o;

	if (c == NULL) { /* can't happen: a conn waits for its attach */
		web_attach_free(j);
		return;
	}
	c->attaching = 0;
	web.attaching--;
	if (c->ws == NULL || c->close_code != 0) {
		web_attach_free(j);
		web_conn_release(c);
		return;
	}
	if (j->close_code != 0) {
		web_close(c, j->close_code, 1, "%s",
		    j->cause != NULL ? j->cause : "cannot attach");
		web_attach_free(j);
		return;
	}
	u.sockfd = j->fd;
	w = lws_adopt_descriptor_vhost(
	    web.vh, LWS_ADOPT_SOCKET, u, "vmux-agent", NULL);
	if (w == NULL) { /* libwebsockets closed the socket */
		j->fd = -1;
		web_close(c, WEB_CLOSE_GONE, 1,
		    "vmux web cannot watch the "
		    "agent's socket");
		web_attach_free(j);
		return;
	}
	attach_client_init(&c->ac, j->fd, j->rest, j->rest_len);
	j->fd = -1;
	c->agent = w;
	lws_set_opaque_user_data(w, c);
	c->cursor = (uint64_t)j->start;
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "type", "hello");
	cJSON_AddStringToObject(o, "session", c->session);
	cJSON_AddStringToObject(o, "shell", c->shell);
	cJSON_AddBoolToObject(o, "read_only", c->read_only);
	cJSON_AddBoolToObject(o, "teacher", c->teacher);
	cJSON_AddNumberToObject(o, "cursor", (double)j->start);
	cJSON_AddNumberToObject(o, "end", (double)j->end);
	cJSON_AddNumberToObject(o, "cols", clamp_dim(j->cols));
	cJSON_AddNumberToObject(o, "rows", clamp_dim(j->rows));
	if (j->reset)
		cJSON_AddBoolToObject(o, "reset", 1);
	web_send_json(c, o);
	web_attach_free(j);
	agent_pump(c);
}

/* Send what is queued for the agent; ask for more room when it is full. */
static void
agent_flush(struct web_conn *c)
{
	if (c->agent == NULL)
		return;
	if (attach_client_flush(&c->ac) != 0) {
		web_close(c, WEB_CLOSE_GONE, 0, "the agent's socket failed");
		return;
	}
	if (attach_client_pending(&c->ac))
		lws_callback_on_writable(c->agent);
	/* the page's next message must fit: read it only then */
	lws_rx_flow_control(
	    c->ws, attach_client_room(&c->ac) >= VMUX_ATTACH_HDR + WEB_MSG_MAX);
}

/* Is s a signal name (INT, SIGTERM, RTMIN+1)? */
static int
signal_name_ok(const unsigned char *s, size_t n)
{
	if (n == 0 || n > SIGNAL_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isupper(s[i]) && !isdigit(s[i]) && s[i] != '+')
			return 0;
	return 1;
}

/* A resize's JSON {"cols": C, "rows": R}, each 1-4096; 0, or -1. */
static int
resize_parse(const unsigned char *p, size_t n, int *cols, int *rows)
{
	cJSON *o = cJSON_ParseWithLength((const char *)p, n);
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "cols");
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "rows");
	int ok = cJSON_IsNumber(c) && cJSON_IsNumber(r) &&
	    c->valuedouble >= 1 && c->valuedouble <= 4096 &&
	    r->valuedouble >= 1 && r->valuedouble <= 4096 &&
	    c->valuedouble == (int)c->valuedouble &&
	    r->valuedouble == (int)r->valuedouble;

	*cols = ok ? (int)c->valuedouble : 0;
	*rows = ok ? (int)r->valuedouble : 0;
	cJSON_Delete(o);
	return ok ? 0 : -1;
}

/* A binary message from a terminal's page; 0, or -1 to close now. */
int
web_term_message(struct web_conn *c, const unsigned char *m, size_t len)
{
	const unsigned char *p = m + 1;
	size_t n = len - 1;
	int cols, rows, rc = 0;

	switch (m[0]) {
	case 'i':
		if (!c->read_only && c->agent != NULL && n > 0)
			rc = attach_client_queue(
			    &c->ac, VMUX_ATTACH_INPUT, p, n);
		break;
	case 'r':
		if (resize_parse(p, n, &cols, &rows) != 0) {
			web_close(c, WEB_CLOSE_BAD, 1,
			    "resize: {\"cols\": C, \"rows\": R}, each a whole "
			    "number 1-4096");
			return 0;
		}
		if (!c->read_only && c->agent != NULL)
			rc = attach_client_resize(&c->ac, cols, rows);
		break;
	case 's':
		if (!signal_name_ok(p, n)) {
			web_close(c, WEB_CLOSE_BAD, 1,
			    "signal: a name such as INT or TERM");
			return 0;
		}
		if (!c->read_only && c->agent != NULL)
			rc = attach_client_queue(
			    &c->ac, VMUX_ATTACH_SIGNAL, p, n);
		break;
	case 't':
	case 'g': /* a teacher's takeover: a link cannot take it back */
		if (c->teacher && c->agent != NULL)
			rc = attach_client_queue(&c->ac,
			    m[0] == 't' ? VMUX_ATTACH_TAKE
			                : VMUX_ATTACH_RELEASE,
			    NULL, 0);
		break;
	default:
		web_close(
		    c, WEB_CLOSE_BAD, 1, "unknown message type 0x%02x", m[0]);
		return 0;
	}
	if (rc != 0) { /* can't happen: the page is not read without room */
		web_close(c, WEB_CLOSE_BAD, 1,
		    "input faster than the shell "
		    "takes it");
		return 0;
	}
	agent_flush(c);
	return 0;
}

/* The page took some of its queue: read the agent again if it waited. */
void
web_term_drained(struct web_conn *c)
{
	agent_pace(c);
}

/* The page's socket closed: end the agent's (the shell lives on). */
void
web_term_gone(struct web_conn *c)
{
	if (c->agent == NULL)
		return;
	lws_set_opaque_user_data(c->agent, NULL);
	lws_set_timeout(
	    c->agent, PENDING_TIMEOUT_KILLED_BY_PARENT, LWS_TO_KILL_ASYNC);
	c->agent = NULL;
	c->ac.fd = -1; /* libwebsockets closes it */
	attach_client_free(&c->ac);
}

/* Close every link's page whose grant was revoked or has expired. */
void
web_term_check_grants(void)
{
	for (struct web_conn *c = web.conns; c != NULL; c = c->next)
		if (c->ws != NULL && c->grant[0] != '\0' &&
		    c->close_code == 0 &&
		    !web_grant_live(web.o->home, c->grant))
			web_close(c, WEB_CLOSE_REVOKED, 1,
			    "this link was revoked or has expired");
}

/* The agent's raw socket. */
int
web_agent_callback(struct lws *wsi, enum lws_callback_reasons reason,
    void *user, void *in, size_t len)
{
	struct web_conn *c = lws_get_opaque_user_data(wsi);

	switch (reason) {
	case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
		return web_refuse_upgrade(wsi); /* ours alone, no peer's */
	case LWS_CALLBACK_RAW_RX:
		if (c == NULL)
			return -1;
		if (c->close_code != 0)
			return 0; /* closing: what comes is not kept */
		attach_client_feed(&c->ac, in, len);
		agent_pump(c);
		return 0;
	case LWS_CALLBACK_RAW_WRITEABLE:
		if (c == NULL)
			return -1;
		agent_flush(c);
		return 0;
	case LWS_CALLBACK_RAW_CLOSE:
		if (c == NULL)
			return 0;
		c->agent = NULL;
		c->ac.fd = -1; /* libwebsockets closes it */
		web_close(c, WEB_CLOSE_GONE, 0,
		    "the session's agent went away (the VM stopped?)");
		web_conn_release(c);
		return 0;
	default:
		return 0;
	}
}
