/*
 * web.h: `vmux web`, a room in the browser (web/).
 *
 * server.c owns the libwebsockets context: the pages and xterm.js from the
 * asset folder, one WebSocket per terminal or wall, the Origin check, the
 * timers. term.c joins a terminal's WebSocket to the agent's attach stream
 * (proto/attach.h), and attach.c does the blocking part of that (finding
 * or opening the shell, attaching) in a thread of its own. wall.c serves
 * the teacher's wall its list of sessions and runs `vmux check`. grants.c
 * keeps the links: a token per grant, stored as its SHA-256 only.
 *
 * The page protocol (one WebSocket, subprotocol "vmux.v1"): the page's
 * first message is text, a JSON hello; every later message is binary, a
 * type byte and its payload.
 *   page -> server   hello {"token": T, "cols", "rows", "cursor"?: N,
 *                      "session"?: NAME (teacher: a tile), "wall"?: true}
 *                    'i' bytes typed     'r' {"cols","rows"}
 *                    's' signal name     't' take the keyboard
 *                    'g' give it back    'c' {"sessions": [NAME...]} (wall)
 *   server -> page   'o' u64 cursor + output bytes
 *                    'j' JSON: {"type": "hello"|"clients"|"resize"|
 *                      "truncated"|"exit"|"sessions"|"notice", ...}
 * A refusal or bad input closes the socket with a code of 4000-4999 and a
 * reason the page shows (WEB_CLOSE_*). Only the teacher takes and gives
 * back the keyboard ('t', 'g').
 */
#ifndef VMUX_WEB_H
#define VMUX_WEB_H

#include <stddef.h>
#include <stdint.h>

#define WEB_PROTOCOL     "vmux.v1"
#define WEB_PORT_DEFAULT 8022
#define WEB_URL_DEFAULT  "http://127.0.0.1:8022"
#define WEB_TOKEN_CHARS  32 /* base64url of 24 random bytes: 192 bits */
#define WEB_HASH_HEX     64 /* SHA-256 */
#define WEB_GRANT_ID_LEN 12 /* the hash's first hex digits name a grant */
#define WEB_MSG_MAX      (64 * 1024) /* a page's message */
#define WEB_REFUSE_MS    1000 /* a wrong token waits this long for its no */

/* Close codes: the page retries only WEB_CLOSE_GONE and WEB_CLOSE_DOWN. */
enum web_close {
	WEB_CLOSE_BAD = 4000,     /* a malformed or unknown message */
	WEB_CLOSE_TOKEN = 4003,   /* the token is not (or no longer) valid */
	WEB_CLOSE_REVOKED = 4004, /* the grant was revoked while open */
	WEB_CLOSE_NOSUCH = 4005,  /* no such session, or not this one */
	WEB_CLOSE_EXIT = 4006,    /* the shell ended */
	WEB_CLOSE_GONE = 4010,    /* the agent went (the VM stopped) */
	WEB_CLOSE_DOWN = 4011,    /* the session is not running */
	WEB_CLOSE_SERVER = 4012,  /* vmux web is stopping */
	WEB_CLOSE_BUSY = 4013,    /* too many pages on one link, or attaches */
};

/* A web grant (HOME/web/grants/HASH.json). */
struct web_grant {
	char hash[WEB_HASH_HEX + 1];
	char *session;  /* the session it opens */
	char *instance; /* ... pinned: a new session of the name is not it */
	char *shell;    /* its shell id */
	char *as;       /* who the holder is to the others attached */
	int read_only;  /* watches: keys dropped, size never changed */
	int64_t created,
	    expires; /* seconds since the epoch; expires 0: never */
};

/* What `vmux web` was asked for (cli/cmd-web.c). */
struct web_opts {
	const char *home; /* VMUX_HOME */
	const char *host; /* address to bind */
	int port;
	const char *selector;     /* -l: the wall's sessions; NULL: all */
	const char *assets;       /* the pages and xterm.js */
	const char *prefix;       /* path prefix behind a proxy ("" or "/x") */
	const char *base_url;     /* the links' start, as users reach it */
	int base_url_given;       /* ... given by --url */
	const char *wall_link;    /* said once the server listens */
	char *wall_note;          /* ... and where the link is kept, or NULL */
	const char *teacher_hash; /* SHA-256 of the teacher's token */
	const char *cert, *key;   /* TLS, or NULL */
	int behind_proxy; /* --behind-proxy: every page is the proxy's */
	const char *check_script; /* the wall's check; NULL: none */
	char **origins;           /* Origins allowed beside the server's own */
	int norigins;
	const char *vmux_exe; /* this vmux, for `vmux check` */
};

/* grants.c */
char *web_token_new(void);
void web_token_hash(const char *token, char out[WEB_HASH_HEX + 1]);
int web_token_valid(const char *token);
char *web_grants_dir(const char *home);
int web_grants_mkdir(const char *home, char **cause);
int web_grant_add(
    const char *home, const struct web_grant *, char **token, char **cause);
int web_grant_by_hash(const char *home, const char *hash, struct web_grant *);
int web_grant_live(const char *home, const char *hash);
int web_grant_list(
    const char *home, const char *session, struct web_grant **out, size_t *n);
int web_grant_revoke(const char *home, const char *session, const char *id,
    size_t *n, char **cause);
void web_grant_free(struct web_grant *);
char *web_base_url(const char *home);

/* server.c */
int web_serve(const struct web_opts *, char **cause);

#endif
