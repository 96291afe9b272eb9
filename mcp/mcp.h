/*
 * mcp.h: vmux as a Model Context Protocol server (`vmux mcp`).
 *
 * An agent (Claude Code, any MCP client) reaches vmux sessions through
 * tools: sessions, exec, shells, files, logs, check. Layers, each a file:
 *   jsonrpc.c  JSON-RPC 2.0 messages: parsing, checking, replies. Pure.
 *   server.c   the MCP methods (initialize, ping, tools/list, tools/call,
 *              logging/setLevel, notifications/cancelled) over any
 *              transport: messages in, messages out through a callback.
 *   tools.c    the tool table: each tool's schemas and handler.
 *   tools-*.c  the tools by group (session, exec, shell, file) and what
 *              they share (args: arguments, the command, the result):
 *              each runs a vmux command (every tool is a client of the
 *              same commands a person types: `vmux exec --json`, `vmux
 *              capture`, ...); tools-int.h lists them.
 *   jobs.c     those commands as child processes, read without blocking
 *              so that calls overlap, report progress and can be
 *              cancelled.
 *   policy.c   what the server was given: its profile, how many sessions
 *              and how much memory, which sessions it sees (its own, by
 *              label), the host folders copies may touch, the network.
 *   stdio.c    the stdio transport: one message a line on stdin/stdout.
 *   http.c     the Streamable HTTP transport (libwebsockets): POST, SSE,
 *              sessions, Host/Origin checks and a bearer token.
 * The caller (cli/cmd-mcp.c) owns the server and its policy.
 */
#ifndef VMUX_MCP_H
#define VMUX_MCP_H

#include <sys/types.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* The most one message may be (a file written through it is 16 MiB,
 * base64 makes that 22 MiB). */
#define MCP_MESSAGE_MAX (24u << 20)
/* Tool calls under way at once (each a vmux child process). */
#define MCP_CALLS_MAX 32

/* jsonrpc.c: JSON-RPC 2.0 error codes. */
#define JSONRPC_PARSE_ERROR      -32700
#define JSONRPC_INVALID_REQUEST  -32600
#define JSONRPC_METHOD_NOT_FOUND -32601
#define JSONRPC_INVALID_PARAMS   -32602
#define JSONRPC_INTERNAL_ERROR   -32603

enum jsonrpc_kind {
	JSONRPC_REQUEST,      /* method and id: answer it */
	JSONRPC_NOTIFICATION, /* method, no id: never answered */
	JSONRPC_RESPONSE,     /* result or error with an id: to a request of
	                         ours (the server sends none it waits on) */
	JSONRPC_INVALID       /* answered with error (id null if unknown) */
};

/* One message as received. */
struct jsonrpc_msg {
	enum jsonrpc_kind kind;
	cJSON *root;         /* the parsed message (owned) */
	const cJSON *id;     /* in root; NULL for a notification */
	const char *method;  /* in root */
	const cJSON *params; /* in root; NULL when absent */
	int error;           /* JSONRPC_INVALID: the code to answer */
	char *message;       /* ... and why (owned) */
};

int jsonrpc_parse(const char *text, size_t len, struct jsonrpc_msg *);
void jsonrpc_msg_free(struct jsonrpc_msg *);
char *jsonrpc_result(const cJSON *id, cJSON *result);
char *jsonrpc_error(const cJSON *id, int code, const char *message);
char *jsonrpc_notification(const char *method, cJSON *params);

/* policy.c */
struct mcp_policy {
	char *name;    /* the label value its sessions carry (vmux.mcp=) */
	char *profile; /* sessions are made under it; NULL: new's default */
	int max_sessions;
	long long max_memory_mb; /* its sessions' memory together; 0: no cap */
	int see_all;             /* sees sessions it did not make */
	char **roots;            /* host folders copies may touch */
	size_t nroots;
	int no_net;                  /* sessions may not have a network */
	char **label_keys;           /* keys it may label with (fnmatch) */
	size_t nlabel_keys;          /* ... 0: MCP_LABEL_KEYS alone */
	char **allow_images;         /* references it may pull (fnmatch) */
	size_t nallow_images;        /* ... 0: pulled and listed images only */
	char *home;                  /* VMUX_HOME */
	int pending_sessions;        /* session_create calls under way */
	long long pending_memory_mb; /* ... and their memory */
};
/* One session_create under way, counted by the policy. */
struct mcp_pending {
	struct mcp_policy *policy;
	long long memory_mb;
};
#define MCP_LABEL_KEY "vmux.mcp"
/* The label keys an agent may set unless --label-key says otherwise: its
 * own name space, so a session it makes joins no person's selector. */
#define MCP_LABEL_KEYS   "mcp.*"
#define MCP_MAX_SESSIONS 8
#define MCP_NAME_DEFAULT "agent"
struct session_record;
int policy_owns(const struct mcp_policy *, const struct session_record *);
int policy_session_visible(
    const struct mcp_policy *, const char *name, char **cause);
int policy_may_create(
    const struct mcp_policy *, long long memory_mb, char **cause);
int policy_host_path(const struct mcp_policy *, const char *path, int for_write,
    char **resolved, char **cause);
char *policy_selector(const struct mcp_policy *, const char *given);
int policy_label_key(const struct mcp_policy *, const char *key, char **cause);
int policy_image(const struct mcp_policy *, const char *ref);
void policy_free(struct mcp_policy *);

/* jobs.c: vmux commands run as children. */
struct mcp_job;
typedef void (*job_line_fn)(struct mcp_job *, const char *line, size_t len);
typedef void (*job_done_fn)(struct mcp_job *);
struct mcp_job {
	pid_t pid;
	int out_fd, err_fd, in_fd; /* -1 once closed */
	char *out;                 /* stdout kept (at most JOB_OUT_MAX) */
	size_t out_len;
	char *err; /* stderr kept (at most JOB_ERR_MAX) */
	size_t err_len;
	char *in; /* stdin still to write */
	size_t in_len, in_off;
	int status; /* waitpid's, once reaped */
	int reaped;
	int cancelled;   /* killed by notifications/cancelled */
	char *last_line; /* on_line set: the last whole line (not in out) */
	size_t last_len;
	job_line_fn on_line;     /* each stdout line as it comes, or NULL */
	job_line_fn on_err_line; /* each stderr line as it comes (kept too) */
	size_t err_seen;         /* stderr bytes handed to on_err_line */
	job_done_fn on_done; /* called once, when it ended and its pipes did */
	void *data;          /* the call it runs for */
	struct mcp_job *next;
};
#define JOB_OUT_MAX (80u << 20)
#define JOB_ERR_MAX (64u << 10)
struct mcp_job *mcp_job_start(
    char *const argv[], const void *in, size_t in_len, char **cause);
void mcp_job_cancel(struct mcp_job *, int sig);
size_t mcp_job_pollfds(struct pollfd *, size_t max);
void mcp_job_service(const struct pollfd *, size_t n);
void mcp_job_reap(void);
int mcp_job_count(void);
int mcp_job_exit_code(const struct mcp_job *);
void mcp_job_free(struct mcp_job *);
void mcp_jobs_stop_all(void);

/* server.c */
struct mcp_server;
/* Send msg to conn; answer: it answers its request (the last message a
 * request gets), else a notification before it. */
typedef void (*mcp_send_fn)(void *conn, const char *msg, int answer);
struct mcp_server *mcp_server_new(struct mcp_policy *);
int mcp_version_known(const char *version);
void mcp_server_free(struct mcp_server *);
void mcp_handle(struct mcp_server *, const char *text, size_t len,
    mcp_send_fn send, void *conn, uint64_t client);

/* tools.c */
struct mcp_call;
struct mcp_tool {
	const char *name;
	const char *title;
	const char *description;
	const char *input_schema;  /* JSON text */
	const char *output_schema; /* JSON text */
	int read_only;             /* annotations.readOnlyHint */
	int (*start)(struct mcp_call *, const cJSON *args, char **cause);
	unsigned options; /* its input adds the session options flagged
	                     SOPT_MCP, by their key, from the table */
};
extern const struct mcp_tool mcp_tools[];
extern const size_t mcp_ntools;
const struct mcp_tool *mcp_tool_find(const char *name);
cJSON *mcp_tools_list(void);

/* A tools/call under way (server.c owns it; tools.c fills it in). */
struct mcp_call {
	struct mcp_server *server;
	const struct mcp_tool *tool;
	cJSON *id;       /* the request's id */
	cJSON *progress; /* its progressToken, or NULL */
	void *conn;      /* whom to answer */
	uint64_t client; /* who asked: its cancellations reach it */
	mcp_send_fn send;
	char *session;       /* the session it acts on, for the log */
	struct mcp_job *job; /* the command it runs, or NULL */
	uint64_t progress_n; /* progress notifications sent */
	uint64_t last_progress_ms;
	void (*finish)(struct mcp_call *); /* turns job into the result */
	void *scratch;                     /* the tool's own */
	void (*scratch_free)(void *);
	struct mcp_call *next;
};
struct mcp_policy *mcp_call_policy(const struct mcp_call *);
void mcp_call_ok(struct mcp_call *, cJSON *structured, const char *text);
void mcp_call_fail(struct mcp_call *, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void mcp_call_progress(struct mcp_call *, const char *message);
int mcp_call_run(struct mcp_call *, char *const argv[], const void *in,
    size_t in_len, void (*finish)(struct mcp_call *), char **cause);

/* stdio.c */
int mcp_stdio_run(struct mcp_server *, volatile sig_atomic_t *stop);

/* http.c: the Streamable HTTP transport */
struct mcp_http_opts {
	const char *addr; /* an IPv4 address to listen on */
	int port;
	int loopback;      /* addr is 127.x: Host and Origin must be local */
	const char *token; /* needed as Authorization: Bearer; NULL: none */
	char **origins;    /* Origins allowed beside this machine's */
	size_t norigins;
};
int mcp_http_run(struct mcp_server *, const struct mcp_http_opts *,
    volatile sig_atomic_t *stop, char **cause);

#endif
