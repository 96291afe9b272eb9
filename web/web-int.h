/*
 * web-int.h: what the pieces of vmux web share (not for the CLI).
 *
 * A struct web_conn is one page's WebSocket, made when it opens and freed
 * when both it and its agent socket (if any) are gone: libwebsockets'
 * per-session data holds only a pointer to it, since an attach thread may
 * still be working for a page that left.
 */
#ifndef VMUX_WEB_INT_H
#define VMUX_WEB_INT_H

#include <stdint.h>

#include <cjson/cJSON.h>
#include <libwebsockets.h>

#include "session/session.h"
#include "web.h"

#define WEB_OUT_MAX                                                            \
	(256 * 1024)                  /* bytes queued for a page: then the     \
	                                 agent's socket is not read */
#define WEB_OUT_RESUME    (64 * 1024) /* ... and is read again below this */
#define WEB_HELLO_MAX     4096
#define WEB_GRANT_SOCKETS 8  /* terminals one link may hold open */
#define WEB_ATTACHING_MAX 64 /* attach threads at once */

enum web_kind {
	WEB_NEW,  /* waiting for the hello */
	WEB_TERM, /* a terminal: a student's link or a teacher's tile */
	WEB_WALL, /* the teacher's wall: the list of sessions */
	WEB_CLOSING,
};

/* A message queued for the page (LWS_PRE bytes of room before it). */
struct web_out {
	struct web_out *next;
	size_t len;
	unsigned char buf[]; /* LWS_PRE + len */
};

struct web_conn {
	uint64_t id;
	struct lws *ws, *agent;
	int kind;
	int attaching; /* a thread works for it */
	char peer[64];
	/* who it is */
	int teacher;
	char grant[WEB_HASH_HEX + 1]; /* a link's grant, or "" */
	int read_only;
	char *session, *shell;
	/* a message from the page being put together */
	unsigned char *msg;
	size_t msg_len, msg_cap;
	/* to the page */
	struct web_out *out, **out_tail;
	size_t out_bytes;
	int close_code; /* close once the queue is sent (urgent: at once) */
	int close_urgent;
	char close_reason[120];
	/* to and from the agent */
	struct attach_client ac;
	int agent_paused;
	uint64_t cursor; /* the next output byte's */
	/* the wall */
	char *wall_sent; /* the last list sent */
	struct web_conn *next;
};

/* The one server (server.c). */
struct web_server {
	const struct web_opts *o;
	struct lws_context *ctx;
	struct lws_vhost *vh;
	struct web_conn *conns;
	uint64_t next_id;
	struct selector sel;
	int has_sel;
	char **origins; /* the origins pages may come from (server.c) */
	int norigins;
	int any_host;    /* ... and any Host's own (0.0.0.0 without --url) */
	int attaching;   /* attach threads at work */
	pid_t check_pid; /* the wall's check under way, or 0 */
};
extern struct web_server web;

/* An attach in a thread (attach.c). */
struct web_attach {
	uint64_t conn; /* its web_conn's id */
	char *home, *session, *instance, *shell, *as;
	int cols, rows, watch;
	int may_open; /* open the shell if it is not there (a writer's link) */
	int64_t cursor; /* the page's next byte, or -1: recent output */
	/* out */
	int fd;
	uint8_t *rest; /* bytes read past the agent's answer */
	size_t rest_len;
	int64_t start, end; /* replay from, and the output's end then */
	int reset; /* the page's cursor was not this shell's: from the start */
	int close_code;
	char *cause;
	struct web_attach *next;
};
int web_attach_start(struct lws_context *, struct web_attach *);
struct web_attach *web_attach_done(void);
void web_attach_free(struct web_attach *);
void web_attach_shutdown(void);

/* server.c */
void web_conn_release(struct web_conn *);
int web_refuse_upgrade(struct lws *);
void web_send(struct web_conn *, char type, const void *, size_t);
void web_send_json(struct web_conn *, cJSON *);
void web_close(struct web_conn *, int code, int urgent, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int web_session_shown(const struct session_record *);

/* term.c */
int web_term_hello(struct web_conn *, const cJSON *hello, int cols, int rows,
    const struct web_grant *);
void web_term_attached(struct web_attach *);
int web_term_message(struct web_conn *, const unsigned char *, size_t);
int web_agent_callback(
    struct lws *, enum lws_callback_reasons, void *user, void *in, size_t len);
void web_term_drained(struct web_conn *);
void web_term_check_grants(void);
void web_term_gone(struct web_conn *);

/* wall.c */
void web_wall_hello(struct web_conn *);
int web_wall_message(struct web_conn *, const unsigned char *, size_t);
void web_wall_tick(void);

#endif
