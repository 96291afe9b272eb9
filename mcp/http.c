/*
 * http.c: MCP's Streamable HTTP transport, on libwebsockets.
 *
 * One endpoint, /mcp. POST carries one JSON-RPC message: a notification or
 * a response is taken with 202; a request is answered with its JSON, or,
 * when notifications for it (progress) come first, with an SSE stream that
 * ends with the answer. GET opens the session's own stream (SSE, kept
 * alive with a comment every 25 s: the server sends nothing on it yet),
 * DELETE ends a session and its streams. initialize makes a session and says
 * its id in Mcp-Session-Id; every later request must carry it (400 without, 404
 * for an unknown one). The table of sessions is bounded: an idle one expires,
 * and initialize is refused (503) while every slot is live. Before anything
 * is read, each request is checked: Host and Origin name this machine and an
 * Origin its port when it listens on loopback (DNS rebinding; another local
 * web app's page), an Origin elsewhere must be one --allow-origin gave, and
 * with a token (required off loopback) Authorization: Bearer must match.
 * There are no WebSockets here: an upgrade is refused before it opens. GET
 * streams are bounded, per session and in all.
 *
 * libwebsockets runs in a thread of its own (Debian's build has no
 * external poll); the MCP server stays on the main thread with its jobs.
 * They meet in two queues under one lock: messages in (with the pipe the
 * main loop polls) and messages out (with lws_cancel_service to wake
 * libwebsockets). A request's stream is known to both by a number; what
 * is sent for a stream that went is dropped. This module owns the thread,
 * the queues and the sessions.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libwebsockets.h>

#include "common/common.h"
#include "session/session.h"
#include "mcp.h"

#define HTTP_PATH         "/mcp"
#define HTTP_SESSIONS     1024
#define HTTP_SESSION_IDLE 1800 /* seconds: an unused session expires */
#define HTTP_GET_PER      8    /* GET streams open for one session */
#define HTTP_GET_MAX      256  /* ... and in all */
#define HTTP_HEADER_ROOM  2048
#define HTTP_ID_LEN       32             /* hex of a 128-bit session id */
#define HTTP_QUEUE_MAX    64             /* messages waiting for one stream */
#define HTTP_KEEPALIVE_US (25 * 1000000) /* a GET stream's comment */

/* A message between the threads. */
struct http_msg {
	uint64_t stream; /* the request's number */
	uint64_t client; /* its session, hashed */
	int answer;      /* out: it answers its request, ending the stream */
	char *text;
	struct http_msg *next;
};

/* One POST's state, libwebsockets' side (its per-session user data). */
struct http_pss {
	uint64_t stream;
	char *body;
	size_t len;
	int too_big;
	char session[HTTP_ID_LEN + 1]; /* its Mcp-Session-Id */
	int initialize;                /* makes the session */
	int waiting;                   /* a request: wait for its answer */
	struct http_msg *out;          /* queued for it, in order */
	int headers_sent, sse;         /* how it is answered */
	int done;                      /* the answer went */
	int standalone; /* a GET stream: kept open, comments only */
	int closing;    /* ... its session ended: close it */
	struct lws *wsi;
	struct http_pss *next_live;
};

static struct {
	struct mcp_server *server;
	const struct mcp_http_opts *opts;
	struct lws_context *ctx;
	pthread_t thread;
	pthread_mutex_t lock;
	struct http_msg *in, **in_tail;   /* to the main thread */
	struct http_msg *out, **out_tail; /* to libwebsockets */
	int wake[2];                      /* in: the main loop polls [0] */
	uint64_t next_stream;
	struct http_pss *live; /* requests waiting (libwebsockets' thread) */
	struct {
		char id[HTTP_ID_LEN + 1]; /* empty: a free slot */
		time_t used;              /* its last request's (monotonic) */
	} sessions[HTTP_SESSIONS];
	int stop; /* set by the main thread, read by libwebsockets': atomic */
} h;

/* Queue a message on q (under the lock). */
static struct http_msg *
queue(struct http_msg ***tail, uint64_t stream, char *text)
{
	struct http_msg *m = xcalloc(1, sizeof *m);

	m->stream = stream;
	m->text = text;
	**tail = m;
	*tail = &m->next;
	return m;
}

/* ---- libwebsockets' thread ---- */

/* Is host (a Host header or an Origin's host part) this machine? */
static int
host_local(const char *host)
{
	static const char *const names[] = {"localhost", "127.0.0.1", "[::1]"};
	size_t n;

	for (size_t i = 0; i < nitems(names); i++) {
		n = strlen(names[i]);
		if (strncmp(host, names[i], n) == 0 &&
		    (host[n] == '\0' || host[n] == ':'))
			return 1;
	}
	return 0;
}

/* Does an Origin's host[:port] name this machine at port (http's 80 when
 * it names none)? Another local port is another local web app's page. */
static int
origin_local(const char *origin, int port)
{
	const char *hp, *colon;
	char *end;
	long p;

	if (strncmp(origin, "http://", 7) == 0)
		hp = origin + 7;
	else if (strncmp(origin, "https://", 8) == 0)
		hp = origin + 8;
	else
		return 0;
	if (!host_local(hp))
		return 0;
	colon = strrchr(hp, ':');
	if (colon == NULL || (hp[0] == '[' && colon < strchr(hp, ']')))
		return port == (hp == origin + 7 ? 80 : 443);
	if (strlen(colon + 1) < 1 || strlen(colon + 1) > 5 ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1))
		return 0;
	errno = 0;
	p = strtol(colon + 1, &end, 10);
	return errno == 0 && *end == '\0' && p == port;
}

/* A header's value into buf (empty when absent). */
static void
header(struct lws *wsi, enum lws_token_indexes t, char *buf, int len)
{
	buf[0] = '\0';
	if (lws_hdr_total_length(wsi, t) > 0 &&
	    lws_hdr_copy(wsi, buf, len, t) < 0)
		buf[0] = '\0';
}

/* A custom header ("name:") into buf (empty when absent). */
static void
header_custom(struct lws *wsi, const char *name, char *buf, int len)
{
	int n = (int)strlen(name);

	buf[0] = '\0';
	if (lws_hdr_custom_length(wsi, name, n) > 0 &&
	    lws_hdr_custom_copy(wsi, buf, len, name, n) < 0)
		buf[0] = '\0';
}

/* Compare secrets in time that does not depend on where they differ. */
static int
same_secret(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = la != lb;

	for (size_t i = 0; i < la; i++)
		d |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
	return d == 0;
}

/* Who may ask: the Host, Origin and token checks. 0, or the HTTP status
 * with *why. */
static int
http_allowed(struct lws *wsi, const char **why)
{
	const struct mcp_http_opts *o = h.opts;
	char host[256], origin[512], auth[512];
	int ok;

	header(wsi, WSI_TOKEN_HOST, host, sizeof host);
	header(wsi, WSI_TOKEN_ORIGIN, origin, sizeof origin);
	if (o->loopback && !host_local(host)) {
		*why = "Host is not this machine (DNS rebinding refused)";
		return 403;
	}
	if (origin[0] != '\0') {
		ok = 0;
		for (size_t i = 0; i < o->norigins; i++)
			ok |= strcmp(origin, o->origins[i]) == 0;
		if (!ok && o->loopback)
			ok = origin_local(origin, o->port);
		if (!ok) {
			*why = "Origin not allowed";
			return 403;
		}
	}
	if (o->token != NULL) {
		header(wsi, WSI_TOKEN_HTTP_AUTHORIZATION, auth, sizeof auth);
		if (strncmp(auth, "Bearer ", 7) != 0 ||
		    !same_secret(auth + 7, o->token)) {
			*why = "a bearer token is needed";
			return 401;
		}
	}
	return 0;
}

/* The monotonic clock's seconds. */
static time_t
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

/* Is session slot i in use by a request or a GET stream now? */
static int
session_busy(int i)
{
	for (struct http_pss *p = h.live; p != NULL; p = p->next_live)
		if (strcmp(p->session, h.sessions[i].id) == 0)
			return 1;
	return 0;
}

/* Is id a session we made (and not expired)? Marks it used. */
static int
session_known(const char *id)
{
	time_t now = now_s();

	for (int i = 0; i < HTTP_SESSIONS; i++)
		if (h.sessions[i].id[0] != '\0' &&
		    strcmp(h.sessions[i].id, id) == 0) {
			if (now - h.sessions[i].used > HTTP_SESSION_IDLE &&
			    !session_busy(i)) {
				h.sessions[i].id[0] = '\0'; /* expired */
				return 0;
			}
			h.sessions[i].used = now;
			return 1;
		}
	return 0;
}

/* Make a session in a free or expired slot: 0, or -1 when every slot is
 * live (a live session is never evicted for a new one). */
static int
session_new(char *out)
{
	unsigned char r[HTTP_ID_LEN / 2];
	time_t now = now_s();
	int slot = -1, fd;

	for (int i = 0; i < HTTP_SESSIONS && slot < 0; i++)
		if (h.sessions[i].id[0] == '\0' ||
		    (now - h.sessions[i].used > HTTP_SESSION_IDLE &&
		        !session_busy(i)))
			slot = i;
	if (slot < 0)
		return -1;
	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read_full(fd, r, sizeof r) != (ssize_t)sizeof r)
		fatalx("/dev/urandom: cannot read");
	close(fd);
	for (size_t i = 0; i < sizeof r; i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
	snprintf(h.sessions[slot].id, sizeof h.sessions[slot].id, "%s", out);
	h.sessions[slot].used = now;
	return 0;
}

/* Forget a session. */
static int
session_end(const char *id)
{
	for (int i = 0; i < HTTP_SESSIONS; i++)
		if (h.sessions[i].id[0] != '\0' &&
		    strcmp(h.sessions[i].id, id) == 0) {
			h.sessions[i].id[0] = '\0';
			return 1;
		}
	return 0;
}

/* How many GET streams are open, for session id (NULL: in all)? */
static int
get_streams(const char *id)
{
	int n = 0;

	for (struct http_pss *p = h.live; p != NULL; p = p->next_live)
		if (p->standalone && !p->closing &&
		    (id == NULL || strcmp(p->session, id) == 0))
			n++;
	return n;
}

/* Send the headers and body of a whole answer. -1: close. */
static int
http_reply(struct lws *wsi, int status, const char *type, const char *body,
    const char *session)
{
	size_t n = body != NULL ? strlen(body) : 0;
	unsigned char *buf = xmalloc(LWS_PRE + HTTP_HEADER_ROOM + n);
	unsigned char *start = buf + LWS_PRE, *p = start;
	unsigned char *end = start + HTTP_HEADER_ROOM;
	int rc = 0;

	if (lws_add_http_common_headers(
	        wsi, (unsigned)status, type, (lws_filepos_t)n, &p, end) ||
	    (session != NULL && session[0] != '\0' &&
	        lws_add_http_header_by_name(wsi,
	            (const unsigned char *)"mcp-session-id:",
	            (const unsigned char *)session, (int)strlen(session), &p,
	            end)) ||
	    (status == 401 &&
	        lws_add_http_header_by_name(wsi,
	            (const unsigned char *)"www-authenticate:",
	            (const unsigned char *)"Bearer", 6, &p, end)) ||
	    lws_finalize_write_http_header(wsi, start, &p, end))
		rc = -1;
	if (rc == 0 && n > 0) {
		memcpy(p, body, n);
		if (lws_write(wsi, p, n, LWS_WRITE_HTTP_FINAL) != (int)n)
			rc = -1;
	}
	free(buf);
	if (rc == 0 && lws_http_transaction_completed(wsi))
		rc = -1;
	return rc;
}

/* An error answer: a JSON-RPC error object as its body. */
static int
http_error(struct lws *wsi, int status, int code, const char *why)
{
	char *body = jsonrpc_error(NULL, code, why);
	int rc;

	fprintf(stderr, "vmux mcp: refused (%d): %s\n", status, why);
	rc = http_reply(wsi, status, "application/json", body, NULL);
	free(body);
	return rc;
}

/* Take the messages queued for the main thread's answers: each goes to
 * its waiting stream (dropped when the stream went). */
static void
http_take_out(void)
{
	struct http_msg *m, *next, **tail;
	size_t n;

	pthread_mutex_lock(&h.lock);
	m = h.out;
	h.out = NULL;
	h.out_tail = &h.out;
	pthread_mutex_unlock(&h.lock);
	for (; m != NULL; m = next) {
		struct http_pss *p = h.live;

		next = m->next;
		m->next = NULL;
		while (p != NULL && p->stream != m->stream)
			p = p->next_live;
		if (p == NULL) {
			free(m->text);
			free(m);
			continue;
		}
		n = 0;
		for (tail = &p->out; *tail != NULL; tail = &(*tail)->next)
			n++;
		/* a reader that does not keep up loses progress notes, never
		 * its answer */
		if (n >= HTTP_QUEUE_MAX && !m->answer) {
			free(m->text);
			free(m);
			continue;
		}
		*tail = m;
		lws_callback_on_writable(p->wsi);
	}
}

/* Write what is queued for a waiting request. -1: close. */
static int
http_write_out(struct lws *wsi, struct http_pss *p)
{
	unsigned char *buf, *start, *q, *end;
	struct http_msg *m;
	size_t n;
	int final;

	if (p->out == NULL)
		return 0;
	if (!p->headers_sent) {
		m = p->out;
		if (m->next == NULL && m->answer) {
			/* the answer alone: plain JSON */
			p->out = NULL;
			p->done = 1;
			final = http_reply(wsi, 200, "application/json",
			    m->text, p->initialize ? p->session : NULL);
			free(m->text);
			free(m);
			return final;
		}
		buf = xmalloc(LWS_PRE + HTTP_HEADER_ROOM);
		start = buf + LWS_PRE;
		q = start;
		end = start + HTTP_HEADER_ROOM;
		if (lws_add_http_common_headers(wsi, HTTP_STATUS_OK,
		        "text/event-stream", LWS_ILLEGAL_HTTP_CONTENT_LEN, &q,
		        end) ||
		    (p->initialize &&
		        lws_add_http_header_by_name(wsi,
		            (const unsigned char *)"mcp-session-id:",
		            (const unsigned char *)p->session,
		            (int)strlen(p->session), &q, end)) ||
		    lws_finalize_write_http_header(wsi, start, &q, end)) {
			free(buf);
			return -1;
		}
		free(buf);
		p->headers_sent = p->sse = 1;
		lws_http_mark_sse(wsi);
		lws_callback_on_writable(wsi);
		return 0;
	}
	/* one event each time the socket takes more */
	m = p->out;
	p->out = m->next;
	final = m->answer;
	n = strlen(m->text);
	buf = xmalloc(LWS_PRE + n + 32);
	n = (size_t)snprintf((char *)buf + LWS_PRE, n + 32,
	    "event: message\ndata: %s\n\n", m->text);
	free(m->text);
	free(m);
	if (lws_write(wsi, buf + LWS_PRE, n, LWS_WRITE_HTTP) != (int)n) {
		free(buf);
		return -1;
	}
	free(buf);
	if (final) {
		p->done = 1;
		return -1; /* the stream ends with the connection */
	}
	if (p->out != NULL)
		lws_callback_on_writable(wsi);
	return 0;
}

/* Take p off the waiting list. Its call goes on: a dropped connection is
 * not a cancellation (the specification's rule; a client cancels with
 * notifications/cancelled), and its answer is dropped when it comes. */
static void
http_gone(struct http_pss *p)
{
	struct http_pss **pp = &h.live;
	struct http_msg *m, *next;

	while (*pp != NULL && *pp != p)
		pp = &(*pp)->next_live;
	if (*pp == p) {
		*pp = p->next_live;
		session_known(p->session); /* a long call was its use too */
	}
	for (m = p->out; m != NULL; m = next) {
		next = m->next;
		free(m->text);
		free(m);
	}
	p->out = NULL;
	free(p->body);
	p->body = NULL;
}

/* The body is all in: check it and hand it to the main thread. */
static int
http_body_done(struct lws *wsi, struct http_pss *p)
{
	struct jsonrpc_msg m;
	int kind;

	if (p->too_big)
		return http_error(
		    wsi, 413, JSONRPC_INVALID_REQUEST, "message too large");
	if (jsonrpc_parse(p->body != NULL ? p->body : "", p->len, &m) != 0) {
		char *body = jsonrpc_error(m.id, m.error, m.message);
		int rc = http_reply(wsi, 400, "application/json", body, NULL);

		free(body);
		jsonrpc_msg_free(&m);
		return rc;
	}
	kind = m.kind;
	p->initialize =
	    kind == JSONRPC_REQUEST && strcmp(m.method, "initialize") == 0;
	jsonrpc_msg_free(&m);
	if (p->initialize && p->session[0] == '\0') {
		if (session_new(p->session) != 0)
			return http_error(wsi, 503, JSONRPC_INVALID_REQUEST,
			    "Service Unavailable: every session slot is in "
			    "use (DELETE a session, or wait for one to "
			    "expire)");
	} else if (p->session[0] == '\0')
		return http_error(wsi, 400, JSONRPC_INVALID_REQUEST,
		    "Bad Request: no Mcp-Session-Id (initialize first)");
	else if (!session_known(p->session))
		return http_error(
		    wsi, 404, JSONRPC_INVALID_REQUEST, "Session not found");
	p->stream = ++h.next_stream;
	pthread_mutex_lock(&h.lock);
	queue(&h.in_tail, p->stream, p->body != NULL ? p->body : xstrdup(""))
	    ->client = hash_fnv1a(p->session);
	pthread_mutex_unlock(&h.lock);
	p->body = NULL;
	if (write(h.wake[1], "m", 1) < 0) {
		/* the main loop reads the queue anyway */
	}
	if (kind != JSONRPC_REQUEST)
		return http_reply(wsi, 202, "application/json", NULL, NULL);
	p->waiting = 1;
	p->wsi = wsi;
	p->next_live = h.live;
	h.live = p;
	return 0;
}

/* GET: the session's own SSE stream, open until its session ends. */
static int
http_get(struct lws *wsi, struct http_pss *p)
{
	unsigned char buf[LWS_PRE + HTTP_HEADER_ROOM];
	unsigned char *start = buf + LWS_PRE, *q = start;
	unsigned char *end = start + HTTP_HEADER_ROOM;
	char accept[256];

	header(wsi, WSI_TOKEN_HTTP_ACCEPT, accept, sizeof accept);
	if (strstr(accept, "text/event-stream") == NULL)
		return http_error(wsi, 406, JSONRPC_INVALID_REQUEST,
		    "Not Acceptable: GET opens a text/event-stream");
	if (p->session[0] == '\0')
		return http_error(wsi, 400, JSONRPC_INVALID_REQUEST,
		    "Bad Request: no Mcp-Session-Id (initialize first)");
	if (!session_known(p->session))
		return http_error(
		    wsi, 404, JSONRPC_INVALID_REQUEST, "Session not found");
	if (get_streams(p->session) >= HTTP_GET_PER)
		return http_error(wsi, 429, JSONRPC_INVALID_REQUEST,
		    "Too Many Requests: this session's GET streams are open "
		    "already");
	if (get_streams(NULL) >= HTTP_GET_MAX)
		return http_error(wsi, 429, JSONRPC_INVALID_REQUEST,
		    "Too Many Requests: the server's GET streams are open "
		    "already");
	if (lws_add_http_common_headers(wsi, HTTP_STATUS_OK,
	        "text/event-stream", LWS_ILLEGAL_HTTP_CONTENT_LEN, &q, end) ||
	    lws_finalize_write_http_header(wsi, start, &q, end))
		return -1;
	lws_http_mark_sse(wsi);
	p->standalone = 1;
	p->wsi = wsi;
	p->next_live = h.live;
	h.live = p;
	lws_callback_on_writable(wsi);
	return 0;
}

/* A GET stream's turn: a comment that keeps proxies from closing it, or
 * its end once its session ended. -1: close. */
static int
http_keepalive(struct lws *wsi, struct http_pss *p)
{
	unsigned char buf[LWS_PRE + 16];
	size_t n = 3;

	if (p->closing)
		return -1;
	memcpy(buf + LWS_PRE, ":\n\n", n);
	if (lws_write(wsi, buf + LWS_PRE, n, LWS_WRITE_HTTP) != (int)n)
		return -1;
	lws_set_timer_usecs(wsi, HTTP_KEEPALIVE_US);
	return 0;
}

/* libwebsockets' callback for the HTTP protocol. */
static int
http_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	struct http_pss *p = user;
	char ver[64];
	const char *why = NULL;
	int status;

	switch (reason) {
	case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
	case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
		/* MCP has no WebSocket transport (nor h2c): no upgrade opens */
		fprintf(stderr,
		    "vmux mcp: refused: a WebSocket upgrade (MCP speaks "
		    "HTTP here)\n");
		return -1;
	case LWS_CALLBACK_RAW_ADOPT:
		/* a CONNECT, which libwebsockets makes a raw socket of this
		 * protocol: no check would ever see it */
		fprintf(stderr, "vmux mcp: refused: a CONNECT\n");
		return -1;
	case LWS_CALLBACK_HTTP:
		memset(p, 0, sizeof *p);
		if ((status = http_allowed(wsi, &why)) != 0)
			return http_error(
			    wsi, status, JSONRPC_INVALID_REQUEST, why);
		if (strcmp((const char *)in, HTTP_PATH) != 0)
			return http_error(wsi, 404, JSONRPC_INVALID_REQUEST,
			    "not found: the endpoint is " HTTP_PATH);
		header_custom(
		    wsi, "mcp-session-id:", p->session, sizeof p->session);
		header_custom(wsi, "mcp-protocol-version:", ver, sizeof ver);
		if (ver[0] != '\0' && !mcp_version_known(ver))
			return http_error(wsi, 400, JSONRPC_INVALID_REQUEST,
			    "unsupported MCP-Protocol-Version");
		if (lws_hdr_total_length(wsi, WSI_TOKEN_DELETE_URI) > 0) {
			if (!session_end(p->session))
				return http_error(wsi, 404,
				    JSONRPC_INVALID_REQUEST,
				    "Session not found");
			for (struct http_pss *q = h.live; q != NULL;
			     q = q->next_live)
				if (q->standalone &&
				    strcmp(q->session, p->session) == 0) {
					q->closing = 1;
					lws_callback_on_writable(q->wsi);
				}
			return http_reply(
			    wsi, 200, "application/json", NULL, NULL);
		}
		if (lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) > 0)
			return http_get(wsi, p);
		if (lws_hdr_total_length(wsi, WSI_TOKEN_POST_URI) <= 0)
			return http_error(wsi, 405, JSONRPC_INVALID_REQUEST,
			    "Method Not Allowed: POST messages to " HTTP_PATH);
		return 0; /* the body follows */
	case LWS_CALLBACK_HTTP_BODY:
		if (p->too_big || p->len + len > MCP_MESSAGE_MAX) {
			p->too_big = 1;
			return 0;
		}
		p->body = xrealloc(p->body, p->len + len + 1);
		memcpy(p->body + p->len, in, len);
		p->len += len;
		p->body[p->len] = '\0';
		return 0;
	case LWS_CALLBACK_HTTP_BODY_COMPLETION:
		return http_body_done(wsi, p);
	case LWS_CALLBACK_HTTP_WRITEABLE:
		if (p->standalone)
			return http_keepalive(wsi, p);
		if (p->waiting)
			return http_write_out(wsi, p);
		return 0;
	case LWS_CALLBACK_TIMER:
		if (p->standalone)
			lws_callback_on_writable(wsi);
		return 0;
	case LWS_CALLBACK_CLOSED_HTTP:
	case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
		if (p != NULL)
			http_gone(p);
		return 0;
	case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
		http_take_out();
		return 0;
	default:
		break;
	}
	return lws_callback_http_dummy(wsi, reason, user, in, len);
}

static const struct lws_protocols http_protocols[] = {
    {"http", http_callback, sizeof(struct http_pss), 0, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

/* libwebsockets' log lines on stderr (warnings and errors). */
static void
http_log(int level, const char *line)
{
	(void)level;
	fprintf(stderr, "%s", line);
}

/* The libwebsockets thread: serve until told to stop. */
static void *
http_thread(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&h.stop, __ATOMIC_ACQUIRE))
		if (lws_service(h.ctx, 0) < 0)
			break;
	return NULL;
}

/* ---- the main thread ---- */

/* mcp_handle's send: queue msg for its stream, wake libwebsockets. */
static void
http_send(void *conn, const char *msg, int answer)
{
	/* a stream's conn is its number (see http_take_in) */
	uint64_t stream = (uint64_t)(uintptr_t)conn;

	pthread_mutex_lock(&h.lock);
	queue(&h.out_tail, stream, xstrdup(msg))->answer = answer;
	pthread_mutex_unlock(&h.lock);
	lws_cancel_service(h.ctx);
}

/* Hand what came in to the server. */
static void
http_take_in(void)
{
	struct http_msg *m, *next;
	char drain[256];

	while (read(h.wake[0], drain, sizeof drain) > 0)
		;
	pthread_mutex_lock(&h.lock);
	m = h.in;
	h.in = NULL;
	h.in_tail = &h.in;
	pthread_mutex_unlock(&h.lock);
	for (; m != NULL; m = next) {
		next = m->next;
		/* A stream's conn is its number: the server compares conns,
		 * and an answer for a stream that went is dropped over there.
		 */
		void *c = (void *)(uintptr_t)m->stream;

		mcp_handle(h.server, m->text, strlen(m->text), http_send, c,
		    m->client);
		free(m->text);
		free(m);
	}
}

/*
 * Serve MCP over HTTP on o->addr:o->port until SIGTERM or SIGINT. 0, or -1
 * with *cause (the address could not be had).
 */
int
mcp_http_run(struct mcp_server *s, const struct mcp_http_opts *o,
    volatile sig_atomic_t *stop, char **cause)
{
	struct lws_context_creation_info info;
	struct pollfd pfd[256];
	size_t n;

	memset(&h, 0, sizeof h);
	h.server = s;
	h.opts = o;
	h.in_tail = &h.in;
	h.out_tail = &h.out;
	pthread_mutex_init(&h.lock, NULL);
	if (pipe2(h.wake, O_CLOEXEC | O_NONBLOCK) != 0) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		return -1;
	}
	lws_set_log_level(LLL_ERR | LLL_WARN, http_log);
	memset(&info, 0, sizeof info);
	info.port = o->port;
	info.iface = o->addr;
	info.protocols = http_protocols;
	info.vhost_name = "vmux-mcp";
	info.options = LWS_SERVER_OPTION_DISABLE_IPV6;
	if ((h.ctx = lws_create_context(&info)) == NULL) {
		xasprintf(cause, "cannot listen on %s:%d", o->addr, o->port);
		close(h.wake[0]), close(h.wake[1]);
		return -1;
	}
	if (pthread_create(&h.thread, NULL, http_thread, NULL) != 0)
		fatalx("pthread_create failed");
	fprintf(stderr, "vmux mcp: listening on http://%s:%d%s\n", o->addr,
	    o->port, HTTP_PATH);
	while (!*stop) {
		pfd[0] = (struct pollfd){h.wake[0], POLLIN, 0};
		n = 1 + mcp_job_pollfds(pfd + 1, nitems(pfd) - 1);
		if (poll(pfd, (nfds_t)n, 1000) < 0 && errno != EINTR)
			break;
		mcp_job_service(pfd + 1, n - 1);
		mcp_job_reap();
		if (pfd[0].revents != 0)
			http_take_in();
	}
	__atomic_store_n(&h.stop, 1, __ATOMIC_RELEASE);
	lws_cancel_service(h.ctx);
	pthread_join(h.thread, NULL);
	lws_context_destroy(h.ctx);
	close(h.wake[0]);
	close(h.wake[1]);
	return 0;
}
