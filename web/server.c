/*
 * server.c: vmux web's one process: libwebsockets on its own poll loop.
 *
 * The pages and xterm.js are files of the asset folder, served by a mount
 * at the path prefix; every other thing is a WebSocket with subprotocol
 * vmux.v1, checked before it opens (its Origin must be the page's own
 * host or one --allow-origin gave, and its address may hold only so many
 * sockets) and then by its first message, the hello with a token (term.c,
 * wall.c). An upgrade to any other protocol, or to none, is refused: the
 * server's other protocols are for its own descriptors, never a peer's. The
 * agents' sockets join the same loop (adopted as raw sockets), so one thread
 * moves every byte and no queue grows without a bound: a page that reads slowly
 * stops vmux reading its agent, and the agent's ring drops what it misses
 * (TRUNCATED). The grants folder is watched with inotify, so a revoke closes
 * its sockets at once. This module owns the context, the connections list and
 * the timers.
 */
#include <sys/inotify.h>
#include <sys/stat.h>

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/ssl.h>

#include "common/common.h"
#include "web-int.h"

#define WEB_HELLO_US (10 * 1000000) /* a page says hello within this */
#define WEB_TICK_US  (1000 * 1000)  /* grants' expiry, the wall's list */
/* Sockets one address may hold: a room behind one NAT shares it, and a
 * teacher's wall opens a tile's socket each at once, so the bounds are
 * wide; those still owing a hello are held to fewer. Behind a proxy every
 * page comes from the proxy's address: only the bound on all sockets
 * owing a hello holds there (the proxy bounds each client). */
#define WEB_PEER_SOCKETS 256
#define WEB_PEER_NEW     64
#define WEB_ALL_NEW      512
#define WEB_TLS12_CIPHERS                                                      \
	"ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"           \
	"ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"           \
	"ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

struct web_server web;
static volatile sig_atomic_t web_stop;
static lws_sorted_usec_list_t web_tick_sul;

/* libwebsockets' per-socket data: the connection lives apart. */
struct web_pss {
	struct web_conn *c;
};

/* A new connection for ws. */
static struct web_conn *
conn_new(struct lws *ws)
{
	struct web_conn *c = xcalloc(1, sizeof *c);

	c->id = ++web.next_id;
	c->ws = ws;
	c->kind = WEB_NEW;
	c->out_tail = &c->out;
	c->ac.fd = -1;
	lws_get_peer_simple(ws, c->peer, sizeof c->peer);
	c->next = web.conns;
	web.conns = c;
	return c;
}

/* Free c once its page, its agent socket and its attach are all gone. */
void
web_conn_release(struct web_conn *c)
{
	struct web_conn **p;
	struct web_out *o;

	if (c->ws != NULL || c->agent != NULL || c->attaching)
		return;
	for (p = &web.conns; *p != NULL; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	while ((o = c->out) != NULL) {
		c->out = o->next;
		free(o);
	}
	attach_client_free(&c->ac);
	free(c->msg);
	free(c->session);
	free(c->shell);
	free(c->wall_sent);
	free(c);
}

/* Queue a message of type for c's page. */
void
web_send(struct web_conn *c, char type, const void *data, size_t len)
{
	struct web_out *o;

	if (c->ws == NULL || c->close_code != 0)
		return;
	o = xmalloc(sizeof *o + LWS_PRE + 1 + len);
	o->next = NULL;
	o->len = 1 + len;
	o->buf[LWS_PRE] = (unsigned char)type;
	if (len > 0)
		memcpy(o->buf + LWS_PRE + 1, data, len);
	*c->out_tail = o;
	c->out_tail = &o->next;
	c->out_bytes += o->len;
	lws_callback_on_writable(c->ws);
}

/* Queue o (deleted here) as a 'j' message. */
void
web_send_json(struct web_conn *c, cJSON *o)
{
	char *s = cJSON_PrintUnformatted(o);

	web_send(c, 'j', s, strlen(s));
	free(s);
	cJSON_Delete(o);
}

/*
 * Close c's page with code and a reason it shows: after what is queued,
 * or at once (urgent: what is queued is dropped). The first reason wins.
 */
void
web_close(struct web_conn *c, int code, int urgent, const char *fmt, ...)
{
	va_list ap;

	if (c->close_code != 0 || c->ws == NULL)
		return;
	c->close_code = code;
	c->close_urgent = urgent;
	va_start(ap, fmt);
	vsnprintf(c->close_reason, sizeof c->close_reason, fmt, ap);
	va_end(ap);
	/* a guest's words may be in it: ASCII only, so the close frame stays
	 * valid UTF-8 however it was cut */
	for (char *p = c->close_reason; *p != '\0'; p++)
		if (*p < ' ' || *p > '~')
			*p = '?';
	c->kind = WEB_CLOSING;
	lws_callback_on_writable(c->ws);
}

/* Is the session one this server shows (the -l selector)? */
int
web_session_shown(const struct session_record *r)
{
	return !web.has_sel || selector_match(&web.sel, r->labels, r->nlabels);
}

/* Origin's host[:port], if Origin is http(s)://host[:port] and no more. */
static const char *
origin_host(const char *origin)
{
	const char *p = strstr(origin, "://");

	if (p == NULL || strchr(p + 3, '/') != NULL)
		return NULL;
	return p + 3;
}

/*
 * May this upgrade go on? A browser always sends Origin, and it must be
 * one this server is reached by: --url's, --listen's (and localhost's on
 * loopback), or an --allow-origin. Listening on every address without
 * --url, the page's own Host is taken too (its names are not known). A
 * client without an Origin is not a browser another site drives.
 */
static int
origin_ok(struct lws *wsi)
{
	char origin[256] = "", host[256] = "";
	const char *oh;

	if (lws_hdr_total_length(wsi, WSI_TOKEN_ORIGIN) <= 0)
		return 1;
	if (lws_hdr_total_length(wsi, WSI_TOKEN_ORIGIN) >= (int)sizeof origin ||
	    lws_hdr_copy(wsi, origin, sizeof origin, WSI_TOKEN_ORIGIN) < 0)
		return 0;
	for (int i = 0; i < web.norigins; i++)
		if (strcmp(origin, web.origins[i]) == 0)
			return 1;
	if (!web.any_host || lws_hdr_total_length(wsi, WSI_TOKEN_HOST) <= 0 ||
	    lws_hdr_total_length(wsi, WSI_TOKEN_HOST) >= (int)sizeof host ||
	    lws_hdr_copy(wsi, host, sizeof host, WSI_TOKEN_HOST) < 0)
		return 0;
	oh = origin_host(origin);
	return oh != NULL && strcmp(oh, host) == 0;
}

/* Add an allowed origin (scheme://host[:port], as browsers send it). */
static void
origin_add(const char *fmt, ...)
{
	va_list ap;
	char *o;

	va_start(ap, fmt);
	xvasprintf(&o, fmt, ap);
	va_end(ap);
	web.origins =
	    xreallocarray(web.origins, web.norigins + 1, sizeof *web.origins);
	web.origins[web.norigins++] = o;
}

/* The origins the server is reached by (origin_ok). */
static void
origins_build(const struct web_opts *o)
{
	const char *scheme = o->cert != NULL ? "https" : "http";

	for (int i = 0; i < o->norigins; i++)
		origin_add("%s", o->origins[i]);
	if (o->base_url != NULL) {
		const char *p = strstr(o->base_url, "://");
		const char *slash = p != NULL ? strchr(p + 3, '/') : NULL;

		if (p != NULL)
			origin_add("%.*s",
			    slash != NULL ? (int)(slash - o->base_url)
			                  : (int)strlen(o->base_url),
			    o->base_url);
	}
	origin_add("%s://%s:%d", scheme, o->host, o->port);
	if (strncmp(o->host, "127.", 4) == 0)
		origin_add("%s://localhost:%d", scheme, o->port);
	web.any_host =
	    strcmp(o->host, "0.0.0.0") == 0 && o->base_url_given == 0;
}

/* Is token the teacher's? */
static int
token_is_teacher(const char *token)
{
	char hash[WEB_HASH_HEX + 1];

	if (web.o->teacher_hash == NULL)
		return 0;
	web_token_hash(token, hash);
	return CRYPTO_memcmp(hash, web.o->teacher_hash, WEB_HASH_HEX) == 0;
}

/* Refuse c's token: one log line, and the no after WEB_REFUSE_MS. */
static void
refuse_token(struct web_conn *c, const char *why)
{
	fprintf(stderr, "vmux web: %s: refused: %s\n", c->peer, why);
	c->kind = WEB_CLOSING;
	lws_rx_flow_control(c->ws, 0);
	lws_set_timer_usecs(c->ws, WEB_REFUSE_MS * 1000);
}

/* An int field of o in [min, max] into *v; 0, or -1. */
static int
int_field(const cJSON *o, const char *key, int min, int max, int *v)
{
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(n) || n->valuedouble < min ||
	    n->valuedouble > max || n->valuedouble != (int)n->valuedouble)
		return -1;
	*v = (int)n->valuedouble;
	return 0;
}

/* How many terminals are open with the grant of hash. */
static int
grant_sockets(const char *hash)
{
	int n = 0;

	for (struct web_conn *c = web.conns; c != NULL; c = c->next)
		if (c->kind == WEB_TERM && strcmp(c->grant, hash) == 0)
			n++;
	return n;
}

/* The page's hello (text); 0, or -1 when the socket is to close now. */
static int
conn_hello(struct web_conn *c, const unsigned char *m, size_t len)
{
	cJSON *h = len < WEB_HELLO_MAX
	    ? cJSON_ParseWithLength((const char *)m, len)
	    : NULL;
	const cJSON *tok = cJSON_GetObjectItemCaseSensitive(h, "token");
	const cJSON *sess = cJSON_GetObjectItemCaseSensitive(h, "session");
	int cols = 80, rows = 24, rc = 0;

	if (!cJSON_IsObject(h) || !cJSON_IsString(tok)) {
		web_close(c, WEB_CLOSE_BAD, 1,
		    "the first message is a JSON hello with a token");
		goto out;
	}
	if ((cJSON_GetObjectItemCaseSensitive(h, "cols") != NULL &&
	        int_field(h, "cols", 1, 4096, &cols) != 0) ||
	    (cJSON_GetObjectItemCaseSensitive(h, "rows") != NULL &&
	        int_field(h, "rows", 1, 4096, &rows) != 0)) {
		web_close(c, WEB_CLOSE_BAD, 1,
		    "hello: cols and rows are whole numbers 1-4096");
		goto out;
	}
	if (token_is_teacher(tok->valuestring)) {
		struct session_record r;
		char *cause = NULL;
		int shown;

		c->teacher = 1;
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(h, "wall"))) {
			web_wall_hello(c);
			goto out;
		}
		if (!cJSON_IsString(sess)) {
			web_close(c, WEB_CLOSE_BAD, 1,
			    "hello: the teacher's terminal names its session");
			goto out;
		}
		/* the wall's sessions only: -l is the teacher's reach too */
		if (session_name_valid(sess->valuestring, &cause) != 0 ||
		    record_load(web.o->home, sess->valuestring, &r, &cause) !=
		        0) {
			free(cause);
			web_close(c, WEB_CLOSE_NOSUCH, 1, "no such session");
			goto out;
		}
		shown = web_session_shown(&r);
		record_free(&r);
		if (!shown) {
			web_close(c, WEB_CLOSE_NOSUCH, 1,
			    "no such session on this wall");
			goto out;
		}
		c->session = xstrdup(sess->valuestring);
		rc = web_term_hello(c, h, cols, rows, NULL);
		goto out;
	}
	if (web_token_valid(tok->valuestring)) {
		struct web_grant g;

		web_token_hash(tok->valuestring, c->grant);
		if (web_grant_by_hash(web.o->home, c->grant, &g) == 0) {
			if (grant_sockets(c->grant) >= WEB_GRANT_SOCKETS) {
				web_grant_free(&g);
				web_close(c, WEB_CLOSE_BUSY, 1,
				    "this link is open in %d pages already",
				    WEB_GRANT_SOCKETS);
				goto out;
			}
			c->session = xstrdup(g.session);
			c->shell = xstrdup(g.shell);
			c->read_only = g.read_only;
			rc = web_term_hello(c, h, cols, rows, &g);
			web_grant_free(&g);
			goto out;
		}
		c->grant[0] = '\0';
	}
	refuse_token(c, "the token is not a live grant's");
out:
	cJSON_Delete(h);
	return rc;
}

/* A whole message from c's page. 0, or -1 to close now. */
static int
conn_message(struct web_conn *c, int binary)
{
	switch (c->kind) {
	case WEB_NEW:
		if (binary) {
			web_close(c, WEB_CLOSE_BAD, 1,
			    "the first message is a JSON hello (text)");
			return 0;
		}
		return conn_hello(c, c->msg, c->msg_len);
	case WEB_TERM:
	case WEB_WALL:
		if (!binary || c->msg_len == 0) {
			web_close(c, WEB_CLOSE_BAD, 1,
			    "after the hello, messages are binary: a type "
			    "byte and its payload");
			return 0;
		}
		return c->kind == WEB_TERM
		    ? web_term_message(c, c->msg, c->msg_len)
		    : web_wall_message(c, c->msg, c->msg_len);
	default:
		return 0; /* closing: nothing more is read */
	}
}

/* Send one queued message to c's page, or the close when its time came. */
static int
conn_writeable(struct lws *wsi, struct web_conn *c)
{
	struct web_out *o;
	int n;

	if (c->close_code != 0 && (c->close_urgent || c->out == NULL)) {
		lws_close_reason(wsi, (enum lws_close_status)c->close_code,
		    (unsigned char *)c->close_reason, strlen(c->close_reason));
		return -1;
	}
	if ((o = c->out) == NULL)
		return 0;
	n = lws_write(wsi, o->buf + LWS_PRE, o->len, LWS_WRITE_BINARY);
	if (n < (int)o->len)
		return -1;
	c->out = o->next;
	if (c->out == NULL)
		c->out_tail = &c->out;
	c->out_bytes -= o->len;
	free(o);
	if (c->out != NULL || c->close_code != 0)
		lws_callback_on_writable(wsi);
	if (c->kind == WEB_TERM || c->kind == WEB_CLOSING)
		web_term_drained(c);
	return 0;
}

/*
 * Refuse a WebSocket upgrade to a protocol that is not the page's (its
 * internal ones, "http", or none): 1, libwebsockets' word for no.
 */
int
web_refuse_upgrade(struct lws *wsi)
{
	char peer[64];

	lws_get_peer_simple(wsi, peer, sizeof peer);
	fprintf(stderr,
	    "vmux web: %s: refused: a WebSocket upgrade not asking for "
	    "%s\n",
	    peer, WEB_PROTOCOL);
	return 1;
}

/* Hand each finished attach to its connection. */
static void
attach_take_done(void)
{
	struct web_attach *j = web_attach_done(), *next;

	for (; j != NULL; j = next) {
		next = j->next;
		web_term_attached(j);
	}
}

/*
 * May another socket from peer open? 0, or -1 with *why: an address holds
 * at most WEB_PEER_SOCKETS, of which WEB_PEER_NEW still owe their hello.
 */
static int
peer_room(const char *peer, const char **why)
{
	int all = 0, fresh = 0, fresh_all = 0;

	for (struct web_conn *c = web.conns; c != NULL; c = c->next) {
		if (c->ws == NULL)
			continue;
		fresh_all += c->kind == WEB_NEW;
		if (strcmp(c->peer, peer) == 0) {
			all++;
			fresh += c->kind == WEB_NEW;
		}
	}
	if (fresh_all >= WEB_ALL_NEW) {
		*why = "too many sockets without a hello";
		return -1;
	}
	if (web.o->behind_proxy)
		return 0; /* one address for all: the proxy's */
	if (all >= WEB_PEER_SOCKETS) {
		*why = "this address holds too many sockets";
		return -1;
	}
	if (fresh >= WEB_PEER_NEW) {
		*why = "this address has too many sockets without a hello";
		return -1;
	}
	return 0;
}

/* The WebSocket protocol, vmux.v1. */
static int
ws_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	struct web_pss *pss = user;
	struct web_conn *c = pss != NULL ? pss->c : NULL;

	switch (reason) {
	case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION: {
		char peer[64];
		const char *why = NULL;

		lws_get_peer_simple(wsi, peer, sizeof peer);
		if (!origin_ok(wsi))
			why = "a WebSocket from another site's page (Origin)";
		else
			peer_room(peer, &why);
		if (why != NULL) {
			fprintf(
			    stderr, "vmux web: %s: refused: %s\n", peer, why);
			return 1;
		}
		return 0;
	}
	case LWS_CALLBACK_ESTABLISHED:
		pss->c = conn_new(wsi);
		lws_set_timer_usecs(wsi, WEB_HELLO_US);
		return 0;
	case LWS_CALLBACK_RECEIVE:
		if (c == NULL)
			return -1; /* can't happen */
		if (c->kind == WEB_CLOSING)
			return 0;
		if (c->msg_len + len > WEB_MSG_MAX) {
			web_close(c, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, 1,
			    "a message over %d KiB", WEB_MSG_MAX / 1024);
			return 0;
		}
		if (c->msg_len + len > c->msg_cap) {
			c->msg_cap = c->msg_len + len;
			c->msg = xrealloc(c->msg, c->msg_cap);
		}
		memcpy(c->msg + c->msg_len, in, len);
		c->msg_len += len;
		if (!lws_is_final_fragment(wsi) ||
		    lws_remaining_packet_payload(wsi) > 0)
			return 0;
		{
			int rc = conn_message(c, lws_frame_is_binary(wsi));
			c->msg_len = 0;
			return rc;
		}
	case LWS_CALLBACK_SERVER_WRITEABLE:
		return c != NULL ? conn_writeable(wsi, c) : -1;
	case LWS_CALLBACK_TIMER:
		if (c == NULL)
			return -1;
		if (c->kind == WEB_NEW)
			web_close(c, WEB_CLOSE_BAD, 1, "no hello came");
		else if (c->kind == WEB_CLOSING && c->close_code == 0) {
			c->kind = WEB_NEW; /* so web_close takes it */
			web_close(c, WEB_CLOSE_TOKEN, 1,
			    "this link is not valid: revoked, expired or "
			    "mistyped");
		}
		return 0;
	case LWS_CALLBACK_CLOSED:
		if (c != NULL) {
			c->ws = NULL;
			web_term_gone(c);
			web_conn_release(c);
			pss->c = NULL;
		}
		return 0;
	case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
		attach_take_done();
		return 0;
	default:
		return 0;
	}
}

/*
 * The plain HTTP protocol (the pages' mount). libwebsockets binds an
 * upgrade asking for no subprotocol to the first protocol: refuse it here
 * before it opens. An upgrade to anything but a WebSocket (h2c) is refused
 * before any role changes, and so is a CONNECT, which libwebsockets would
 * turn into a raw socket of this protocol with no timeout and no check.
 */
static int
http_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	switch (reason) {
	case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
		return web_refuse_upgrade(wsi);
	case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
		return in != NULL && strcmp(in, "websocket") == 0 ? 0 : -1;
	case LWS_CALLBACK_RAW_ADOPT:
		return -1;
	default:
		return lws_callback_http_dummy(wsi, reason, user, in, len);
	}
}

/* The grants folder changed: drain the events, close revoked sockets. */
static int
watch_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user,
    void *in, size_t len)
{
	char buf[4096];

	if (reason == LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION)
		return web_refuse_upgrade(wsi);
	if (reason != LWS_CALLBACK_RAW_RX_FILE)
		return 0;
	while (read(lws_get_socket_fd(wsi), buf, sizeof buf) > 0)
		;
	web_term_check_grants();
	return 0;
}

static const struct lws_protocols web_protocols[] = {
    {"http", http_callback, 0, 0, 0, NULL, 0},
    {WEB_PROTOCOL, ws_callback, sizeof(struct web_pss), WEB_MSG_MAX, 0, NULL,
        0},
    {"vmux-agent", web_agent_callback, 0, 0, 0, NULL, 0},
    {"vmux-watch", watch_callback, 0, 0, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

/* Every second: expired grants, the wall's list, finished checks. */
static void
web_tick(lws_sorted_usec_list_t *sul)
{
	web_term_check_grants();
	web_wall_tick();
	lws_sul_schedule(web.ctx, 0, &web_tick_sul, web_tick, WEB_TICK_US);
}

/* SIGINT, SIGTERM: stop serving. */
static void
web_on_signal(int sig)
{
	(void)sig;
	web_stop = 1;
	if (web.ctx != NULL)
		lws_cancel_service(web.ctx);
}

/* Watch the grants folder (made if missing); 0, or -1 with cause. */
static int
watch_grants(char **cause)
{
	char *dir = web_grants_dir(web.o->home);
	lws_sock_file_fd_type u;
	int fd;

	if (web_grants_mkdir(web.o->home, cause) != 0) {
		free(dir);
		return -1;
	}
	fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fd < 0 ||
	    inotify_add_watch(fd, dir,
	        IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF) <
	        0) {
		xasprintf(cause, "cannot watch %s: %s", dir, strerror(errno));
		if (fd >= 0)
			close(fd);
		free(dir);
		return -1;
	}
	free(dir);
	u.filefd = fd;
	if (lws_adopt_descriptor_vhost(web.vh, LWS_ADOPT_RAW_FILE_DESC, u,
	        "vmux-watch", NULL) == NULL) {
		close(fd);
		xasprintf(cause, "cannot watch the grants folder");
		return -1;
	}
	return 0;
}

/* libwebsockets' warnings and errors, on stderr. */
static void
web_log(int level, const char *line)
{
	(void)level;
	fprintf(stderr, "vmux web: %s", line);
}

/* Serve until SIGINT or SIGTERM; 0, or -1 with cause. */
int
web_serve(const struct web_opts *o, char **cause)
{
	static const struct lws_protocol_vhost_options hdr_csp = {NULL, NULL,
	    "content-security-policy:",
	    "default-src 'self'; connect-src 'self'; style-src 'self' "
	    "'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'"};
	static const struct lws_protocol_vhost_options hdr_ref = {
	    &hdr_csp, NULL, "referrer-policy:", "no-referrer"};
	static const struct lws_protocol_vhost_options hdr_nosniff = {
	    &hdr_ref, NULL, "x-content-type-options:", "nosniff"};
	static const struct lws_protocol_vhost_options mime_mjs = {
	    NULL, NULL, ".mjs", "text/javascript"};
	struct lws_context_creation_info info;
	struct lws_http_mount mount;
	struct sigaction sa;
	char *mountpoint;
	int rc = 0;

	memset(&web, 0, sizeof web);
	web.o = o;
	if (o->selector != NULL) {
		if (selector_parse(o->selector, &web.sel, cause) != 0)
			return -1;
		web.has_sel = 1;
	}
	origins_build(o);
	mountpoint = xstrdup(*o->prefix != '\0' ? o->prefix : "/");
	memset(&mount, 0, sizeof mount);
	mount.mountpoint = mountpoint;
	mount.mountpoint_len = (unsigned char)strlen(mountpoint);
	mount.origin = o->assets;
	mount.def = "index.html";
	mount.origin_protocol = LWSMPRO_FILE;
	mount.extra_mimetypes = &mime_mjs;

	lws_set_log_level(LLL_ERR | LLL_WARN, web_log);
	memset(&info, 0, sizeof info);
	info.port = o->port;
	info.iface = o->host;
	info.protocols = web_protocols;
	info.mounts = &mount;
	info.headers = &hdr_nosniff;
	info.gid = -1;
	info.uid = -1;
	info.options =
	    LWS_SERVER_OPTION_VALIDATE_UTF8 | LWS_SERVER_OPTION_DISABLE_IPV6;
	if (o->cert != NULL) {
		info.alpn = "http/1.1"; /* WebSockets over HTTP/1.1 only */
		info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
		info.ssl_cert_filepath = o->cert;
		info.ssl_private_key_filepath = o->key;
		/* TLS 1.2 or later, forward-secret AEAD ciphers alone (1.3's
		 * are all so) */
		info.ssl_options_set =
		    SSL_OP_NO_SSLv3 | SSL_OP_NO_TLSv1 | SSL_OP_NO_TLSv1_1;
		info.ssl_cipher_list = WEB_TLS12_CIPHERS;
	}
	if ((web.ctx = lws_create_context(&info)) == NULL) {
		xasprintf(cause, "cannot listen on %s:%d (in use?)", o->host,
		    o->port);
		rc = -1;
		goto out;
	}
	web.vh = lws_get_vhost_by_name(web.ctx, "default");
	if (web.vh == NULL || watch_grants(cause) != 0) {
		if (web.vh == NULL)
			xasprintf(cause, "libwebsockets made no vhost");
		rc = -1;
		goto out;
	}
	/* said only now that it listens: a script may wait for these lines */
	printf("vmux web: serving %s/ (links: vmux grant NAME --web)\n",
	    o->base_url);
	printf("vmux web: the wall: %s\n", o->wall_link);
	if (o->wall_note != NULL)
		printf("vmux web: %s\n", o->wall_note);
	fflush(stdout);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = web_on_signal; /* no SA_RESTART: poll returns */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	lws_sul_schedule(web.ctx, 0, &web_tick_sul, web_tick, WEB_TICK_US);
	while (!web_stop)
		if (lws_service(web.ctx, 0) < 0)
			break;
out:
	if (web.ctx != NULL) {
		struct lws_context *ctx = web.ctx;

		signal(SIGINT, SIG_DFL); /* a second one ends us at once */
		signal(SIGTERM, SIG_DFL);
		web.ctx = NULL;
		web_attach_shutdown();
		lws_context_destroy(ctx);
	}
	for (int i = 0; i < web.norigins; i++)
		free(web.origins[i]);
	free(web.origins);
	if (web.has_sel)
		selector_free(&web.sel);
	free(mountpoint);
	return rc;
}
