/*
 * agent.h: vmux-agent, the guest agent (the one header of agent/).
 *
 * The agent listens on AF_VSOCK port 5005 (or a Unix socket for host-side
 * tests). Each connection carries one JSON request line and gets one JSON
 * line back, except attach_shell, which turns into a framed stream
 * (proto/attach.h).
 *
 * Threads: one event loop (loop.c) owns the listener, every connection that
 * is not an exec, every shell, PTY and attached client; nothing in it
 * blocks. Each exec request is handed, socket and all, to its own thread
 * (exec_serve.c) which owns the child process and answers by itself. The two
 * share only atomic counters and the registry of running exec process groups.
 *
 * Ownership: a struct agent_request belongs to whoever parsed it until handed
 * on (exec_serve_start takes it); strings in responses are built with
 * json_add_str so that any bytes become valid JSON.
 */
#ifndef VMUX_AGENT_H
#define VMUX_AGENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "common/common.h"
#include "proto/proto.h"

/* Limits and defaults. */
#define AGENT_IDLE_TIMEOUT_MS    30000      /* a whole request within this */
#define AGENT_WRITE_TIMEOUT_MS   30000      /* a reply must make progress */
#define AGENT_MAX_CONNS          128        /* request connections + execs */
#define AGENT_MAX_ATTACH         256        /* attached clients, all shells */
#define AGENT_MAX_SHELLS         128        /* shells, running or stopped */
#define EXEC_DEFAULT_TIMEOUT_S   300        /* when timeout_seconds is absent */
#define EXEC_MAX_TIMEOUT_S       86400      /* one day */
#define EXEC_DEFAULT_OUTPUT      (16 << 20) /* per stream */
#define EXEC_MAX_OUTPUT          (64 << 20) /* max_output_bytes cap */
#define EXEC_KILL_GRACE_MS       2000       /* SIGTERM -> SIGKILL on timeout */
#define EXEC_DRAIN_MS            250        /* pipe drain after the command */
#define SHELL_DEFAULT_SCROLLBACK (1 << 20)
#define SHELL_MIN_SCROLLBACK     4096
#define SHELL_MAX_SCROLLBACK     (64 << 20)
#define SHELL_INPUT_MAX          (1 << 20) /* pending input per shell */
#define SHELL_READ_DEFAULT       65536     /* read_shell max_chars */
#define SHELL_READ_MAX           (1 << 20)
#define SHELL_WAIT_MAX_MS        60000 /* read_shell wait_ms cap */
#define SHELL_STOP_GRACE_MS      100   /* output after the shell exits */
#define SHELL_HUP_GRACE_MS       1000  /* close_shell: SIGHUP -> SIGKILL */
#define SHELL_EOF_REPEAT_MS      200   /* input closed: VEOF again after */
#define SHELL_ID_MAX             64
#define SHELL_MAX_DIM            4096
#define MAX_ENV_VARS             1024

/* buf.c: a growable byte buffer. */
struct buf {
	uint8_t *data;
	size_t len;
	size_t cap;
};
void buf_init(struct buf *);
void buf_free(struct buf *);
void buf_reserve(struct buf *, size_t);
void buf_add(struct buf *, const void *, size_t);
void buf_addstr(struct buf *, const char *);
void buf_drain(struct buf *, size_t);
char *buf_cstr(struct buf *);

/* utf8.c: bytes to valid UTF-8 JSON strings. */
int utf8_decode(const uint8_t *, size_t, uint32_t *);
size_t utf8_json_string(
    struct buf *, const uint8_t *, size_t, size_t, int, size_t *);
size_t utf8_count(const uint8_t *, size_t);
void json_add_str(cJSON *, const char *, const char *);
void json_add_bytes(cJSON *, const char *, const uint8_t *, size_t);

/* ring.c: a bounded output ring addressed by absolute byte offsets. */
struct ring {
	uint8_t *data;
	size_t alloc; /* bytes allocated, grows up to cap */
	size_t cap;   /* bytes kept at most */
	uint64_t end; /* offset after the last byte ever written */
};
void ring_init(struct ring *, size_t);
void ring_free(struct ring *);
void ring_write(struct ring *, const void *, size_t);
uint64_t ring_oldest(const struct ring *);
size_t ring_peek(const struct ring *, uint64_t, const uint8_t **);
size_t ring_copy(const struct ring *, uint64_t, void *, size_t);

/* signame.c: the signals a client may send, by name. */
int signame_parse(const char *);
const char *signame_name(int);

/* request.c: one JSON request line to a struct (pure, no side effects). */
enum agent_action {
	ACTION_EXEC,
	ACTION_PING,
	ACTION_SHUTDOWN,
	ACTION_OPEN_SHELL,
	ACTION_READ_SHELL,
	ACTION_WRITE_SHELL,
	ACTION_SIGNAL_SHELL,
	ACTION_RESIZE_SHELL,
	ACTION_CLOSE_SHELL,
	ACTION_LIST_SHELLS,
	ACTION_ATTACH_SHELL,
	ACTION_EXTRACT_ARCHIVE,
	ACTION_EXPORT_ARCHIVE,
	ACTION_EXEC_STREAM,
	ACTION_RESUMED,
};
struct agent_request {
	enum agent_action action;
	/* exec and open_shell */
	char **argv;         /* NULL-terminated, NULL if no command */
	int command_is_text; /* "command" was a string: argv is sh -c */
	char *command;       /* the string form, or NULL */
	char **env;          /* "NAME=value", NULL-terminated, or NULL */
	char *cwd;           /* NULL: default */
	char *user;          /* name, uid or uid:gid; NULL: the image's */
	int timeout_ms;
	size_t max_output;
	char *stdin_data;
	size_t stdin_len;
	/* shells */
	char *shell_id;    /* NULL: generate (open_shell only) */
	int cols, rows;    /* 0: unchanged / default */
	size_t scrollback; /* 0: agent default */
	int has_cursor;
	uint64_t cursor;
	char *as;       /* attach_shell: who attaches (NULL: unnamed) */
	int watch;      /* attach_shell: keys dropped unless it takes them */
	int want_input; /* attach_shell: wants what others type (TYPED) */
	size_t max_chars;
	int wait_ms;
	char *input;
	size_t input_len;
	int append_newline;
	int signal;
	/* files (files.c) */
	char *destination;     /* extract_archive */
	uint64_t archive_size; /* bytes of archive after the request line */
	int cp;                /* destination follows `vmux cp` rules */
	int skip_unsafe_links;
	char *path; /* export_archive */
	/* resumed (resumed.c) */
	double time;      /* the host's clock, seconds since the epoch */
	char *seed;       /* 64 hex digits for the RNG, or NULL */
	char *hostname;   /* a fork's new host name, or NULL */
	char *machine_id; /* ... and machine-id (32 hex digits), or NULL */
};
struct agent_request *request_parse(const char *, size_t, char **);
void request_free(struct agent_request *);
const char *request_action_name(enum agent_action);

/* resumed.c: the host resumed (or forked) this guest from a saved state */
cJSON *resumed_apply(const struct agent_request *);

/* spawn.c: start processes in their own session with a clean environment. */
struct spawn {
	const char *path; /* file to execute */
	char *const *argv;
	char *const *envp;
	const char *cwd;
	int has_user; /* run as uid:gid, not the image's user */
	uid_t uid;
	gid_t gid;
	int fd_in, fd_out, fd_err; /* become 0, 1, 2 */
	int ctty;        /* fd_in is a tty: make it the controlling one */
	int *fail_errno; /* if not NULL: errno of a failed chdir or exec */
};
pid_t spawn_start(const struct spawn *, char **);
char **env_build(char *const *, const char *const *);
void env_free(char **);
char *path_resolve(const char *, char *const *, char **);
int pidfd_open_compat(pid_t);
const char *default_cwd(void);
void user_home_set(const char *);
void user_cwd_set(const char *);
void user_cgroup_set(const char *);
void user_nofile_set(long long);

/* image.c: an OCI image's Env, WorkingDir and User (/.vmux-image) */
void image_config_load(const char *file);
char *const *image_env_list(void);
int image_user_become(const struct spawn *);
int image_user_parse(const char *spec, uid_t *uid, gid_t *gid, char **cause);
const char *user_home(void);
void kill_session(pid_t, int);
int wait_status_code(int, int *);

/* gate.c: vmux-agent --gate FD (the early start) */
int agent_gate_wait(int);

/* exec.c: run one command with a timeout and bounded output capture. */
struct exec_spec {
	char *const *argv;
	char *const *env; /* request env, merged over the defaults */
	int command_is_text;
	const char *cwd;
	const char *user; /* NULL: the image's (or root) */
	int timeout_ms;
	size_t max_output;
	const char *stdin_data;
	size_t stdin_len;
	int cancel_fd; /* a socket whose hangup cancels the run, or -1 */
	int stream;    /* exec_stream: cancel_fd carries frames both ways */
};
struct exec_stream {
	struct buf data;
	uint64_t total; /* bytes the command wrote, kept or not */
	int truncated;
	int over_budget; /* the memory budget cut it short */
	size_t charged;  /* kept bytes reserved from the memory budget */
};
struct exec_result {
	struct exec_stream out, err;
	int exit_code; /* -1 when timed out */
	int signal;    /* killed by this signal, or 0 */
	int timed_out;
	int cancelled;
	int not_run; /* could not start: 127 not found, 126 cannot run */
	uint64_t duration_ms;
};
int exec_run(const struct exec_spec *, struct exec_result *, char **);
void exec_result_free(struct exec_result *);
void exec_kill_all(void);

/* exec_serve.c: one thread per exec request. */
int agent_send_all(int, const void *, size_t);
int exec_serve_start(int, struct agent_request *, char **);
int exec_serve_active(void);

/* files.c: extract_archive and export_archive, one thread each. */
int files_serve_start(
    int, struct agent_request *, const void *, size_t, char **);
int files_serve_active(void);

/* response.c: JSON replies. */
typedef int (*response_sink)(void *, const void *, size_t);
char *response_error(const char *, size_t *);
char *response_error_code(const char *code, const char *, size_t *);
char *response_error_status(const char *, int, size_t *);
int response_exec(const struct exec_result *, response_sink, void *);
char *response_print(cJSON *, size_t *);

/* budget.c: one memory budget for scrollback, input and exec output. */
void budget_set(size_t);
size_t budget_limit(void);
size_t budget_used(void);
int budget_reserve(size_t, char **);
size_t budget_reserve_upto(size_t);
void budget_release(size_t);

/* peer.c: only the host may talk to the agent. */
int agent_peer_allowed(const struct sockaddr *, socklen_t);

/* ping.c */
cJSON *ping_info(int shells, int execs, int attached);
void activity_touch(void);
void activity_ended(void);

/* The event loop's state (loop.c, shell.c, attach.c, actions.c). */
struct shell;
enum conn_state {
	CONN_READ,     /* reading the request line */
	CONN_WRITE,    /* writing a reply, then see conn->after */
	CONN_WAIT,     /* a deferred reply (close_shell, read_shell wait) */
	CONN_ATTACHED, /* framed stream with a shell */
	CONN_DEAD,     /* to be freed at the end of the loop pass */
};
enum conn_after { AFTER_CLOSE, AFTER_ATTACH, AFTER_SHUTDOWN };
enum conn_wait { WAIT_NONE, WAIT_READ, WAIT_CLOSE };
struct conn {
	int fd;
	enum conn_state state;
	enum conn_after after;
	struct buf in;
	struct buf out;    /* reply, or the frame being sent */
	size_t out_off;    /* bytes of out already sent */
	uint64_t deadline; /* idle, write or wait deadline (mono ms) */
	struct shell *shell;
	/* CONN_WAIT */
	enum conn_wait wait;
	uint64_t wait_cursor;
	size_t wait_max_chars;
	/* attached (from attach_start on, even while the reply is sent) */
	int is_attach;
	uint64_t cursor;
	struct buf ctl; /* control frames queued ahead of DATA */
	int exit_sent;
	int closing;        /* close once out and ctl are flushed */
	int input_blocked;  /* the shell's input buffer is full */
	int eof;            /* the client sends no more */
	int broken;         /* kill at the end of the pass */
	char *as;           /* attached as (NULL: unnamed) */
	int watching;       /* its keys are dropped unless it holds them */
	int roster_dirty;   /* owes the client a CLIENTS frame */
	int want_input;     /* is sent TYPED frames */
	size_t charged;     /* input buffer reserved from the memory budget */
	struct conn *next;  /* agent's list */
	struct conn *snext; /* shell's client list */
};

enum shell_state { SHELL_RUNNING, SHELL_STOPPED, SHELL_CLOSING };
struct shell {
	struct shell *next;
	char *id;
	char *cwd;
	char *command; /* text form, or NULL */
	char **argv;   /* argv form, or NULL */
	char *path;    /* what was executed */
	pid_t pid;
	int pidfd;   /* -1: poll with waitpid */
	int master;  /* -1 once hung up */
	int pty_eof; /* every slave fd closed (master kept till exit) */
	int cols, rows;
	enum shell_state state;
	int exited; /* seen with WNOWAIT: a zombie keeps the pid */
	int reaped;
	int dead; /* freed at the end of the loop pass */
	double started_at, ended_at;
	int exit_code; /* -1: none yet */
	int exit_signal;
	struct ring ring;
	uint64_t stop_cursor;   /* ring end when it stopped */
	uint64_t stop_deadline; /* leader gone, wait for output; 0 none */
	uint64_t kill_deadline; /* closing: SIGKILL at; 0 none */
	uint64_t give_up;       /* closing: answer even if not reaped */
	struct buf input;       /* pending keystrokes */
	size_t charged;         /* reserved from the memory budget */
	int input_eof;          /* a client closed the input: type VEOF */
	uint64_t eof_next;      /* when to type it (again) */
	int eof_typed;          /* how often it was typed */
	struct conn *clients;
	int nclients;
	struct conn *keyboard; /* a client that took it (TAKE), or NULL */
	struct conn *closer;
};

struct agent_opts {
	int idle_timeout_ms;
	int max_conns;
	int max_shells;
	size_t scrollback;
	pid_t poweroff_pid; /* 0: shutdown ends the agent instead */
	const char *listen_desc;
};

struct agent {
	const struct agent_opts *opts;
	int listen_fd;
	int sig_fd;
	struct conn *conns;
	int nconns; /* not attached */
	int nattach;
	struct shell *shells;
	int nshells;
	unsigned next_id;
	int quit;
	pid_t *orphans; /* shells given up on, still to reap */
	int norphans;
	uint64_t now;
};

/* loop.c */
int agent_serve(int, const struct agent_opts *);
void conn_reply(struct agent *, struct conn *, cJSON *);
void conn_reply_error(struct agent *, struct conn *, const char *);
void conn_reply_code(
    struct agent *, struct conn *, const char *code, const char *msg);
void conn_reply_code(
    struct agent *, struct conn *, const char *code, const char *msg);
void conn_kill(struct agent *, struct conn *);

/* actions.c: the shell actions. */
void actions_dispatch(struct agent *, struct conn *, struct agent_request *);
void actions_wait_check(struct agent *, struct conn *);

/* shell.c */
struct shell *shell_open(struct agent *, struct agent_request *, char **);
struct shell *shell_find(struct agent *, const char *);
cJSON *shell_record(const struct shell *);
void shell_read_pty(struct agent *, struct shell *);
void shell_write_pty(struct agent *, struct shell *);
void shell_check_exit(struct agent *, struct shell *);
void shell_timers(struct agent *, struct shell *);
uint64_t shell_next_deadline(const struct shell *);
int shell_signal(struct shell *, int);
int shell_resize(struct agent *, struct shell *, int, int);
int shell_input(struct agent *, struct shell *, const void *, size_t);
int shell_input_eof(struct agent *, struct shell *);
void shell_free(struct shell *);
void shell_close_begin(struct agent *, struct shell *, struct conn *);
void shell_destroy_all(struct agent *);
void shell_reap_orphans(struct agent *);

/* attach.c */
int attach_start(struct agent *, struct conn *, struct shell *, uint64_t,
    const struct agent_request *, char **);
cJSON *attach_roster(const struct shell *, const struct conn *);
void attach_detach(struct agent *, struct conn *);
int attach_wants_write(const struct conn *);
void attach_read(struct agent *, struct conn *);
void attach_write(struct agent *, struct conn *);
void attach_queue(struct conn *, uint8_t, const void *, size_t);
void attach_send_resize(struct shell *);
void attach_shell_gone(struct agent *, struct shell *);
void attach_input_drained(struct agent *, struct shell *);
void attach_echo_input(
    struct shell *, const struct conn *from, const void *, size_t);

#endif
