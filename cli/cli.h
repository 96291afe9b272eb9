/*
 * cli.h: the vmux command line.
 *
 * Modelled on tmux: each command is one file (cmd-*.c) exporting a
 * cmd_entry (name, usage, options, flags: what it is, CMD_READONLY,
 * CMD_TTY, ... as tmux's CMD_* flags; exec function); cmd-table.c holds the
 * table, cmd.c the help texts, args.c parses a command's arguments,
 * output.c keeps what --json prints, vmux.c is main(). vmux new's session
 * options come from session/options.c's table (new_opts_build). Helpers
 * beside the commands: select.c (globs and -l), exec-many.c (one command
 * in many sessions), remote.c (other hosts), pool.c (the warm pool),
 * grant-logins.c (grant tokens and the logins they let in), cp*.c, term.c,
 * shell-loop.c, detach.c, progress.c.
 *
 * Commands return their exit status, following Docker's convention: 0 ok,
 * 2 a usage error (bad flags or operands), 125 vmux's own failure (no such
 * session, agent unreachable, state directory, a failed copy, ...). The
 * statuses of a command run in the guest are passed on as they are: 126
 * (found but could not run), 127 (not found), 128+N (killed by signal N),
 * 124 (exec --timeout expired); `vmux shell` exits with the shell's status.
 */
#ifndef VMUX_CLI_H
#define VMUX_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/common.h"
#include "session/session.h"

#define EXIT_USAGE      2
#define EXIT_TIMEOUT    124   /* vmux exec --timeout expired */
#define EXIT_VMUX       125   /* vmux's own error (Docker's convention) */
#define EXIT_CANNOT_RUN 126   /* the command was found but could not run */
#define EXIT_NOT_FOUND  127   /* the command was not found */
#define CLI_CONNECT_MS  10000 /* the agent should accept at once */

/* One option of a command. */
struct cmd_opt {
	const char *name; /* long name, without "--" */
	char short_name;  /* 0: none */
	const char *arg;  /* NULL: a flag; else the value's name in help */
	int repeat;       /* may be given more than once */
	const char *help;
};

/* After the first positional argument, the rest is a command to run. */
#define CMD_ARGV_AFTER_NAME 0x1
/* The first positional is one session's NAME, a glob matching one, or
 * left out for -l (SELECT_OPT in the options): select.c */
#define CMD_NAME_ONE 0x2
/* The positionals are session NAMEs; globs and -l add what they match */
#define CMD_NAMES 0x4
/* With CMD_NAME_ONE: a glob or -l may pick several (a->nnames of them,
 * first in argv); the command runs in each (exec-many.c) */
#define CMD_FANOUT 0x8
/* With CMD_NAMES: the first positional is not a name (check's SCRIPT) */
#define CMD_FIRST_NOT_NAME 0x10
/* Changes nothing (a read-only TUI runs it; tmux's CMD_READONLY) */
#define CMD_READONLY 0x20
/* Given a terminal when there is one (over ssh: a pty) */
#define CMD_TTY 0x40
/* Reads standard input (over ssh: ours is passed on; others get none) */
#define CMD_STDIN 0x80
/* Takes a terminal of its own: not from the TUI's command prompt */
#define CMD_OWN_TERMINAL 0x100
/*
 * Where a command runs when -H names another host or a cluster (remote.c,
 * slurm.c), as tmux's command entries carry what they need: said here,
 * never by comparing the command's name.
 */
/* About this machine's own settings: never sent to another host */
#define CMD_THIS_HOST 0x200
/* Names its session in an operand [HOST:]NAME:PATH, either side; the other
 * side is this machine, so it runs here and reaches the host */
#define CMD_NAME_PATH 0x400
/* Lists a host's sessions: several -H merge; a cluster's login node answers */
#define CMD_ALL_SESSIONS 0x800
/* Runs here over the -H hosts, each one's --model-json its view */
#define CMD_HOSTS_HERE 0x1000
/* Makes a new session (NAME, run's --name, a --count or --roster class) */
#define CMD_CREATES 0x2000
/* Boots the session's VM: on a cluster, submits its job */
#define CMD_BOOTS 0x4000
/* Ends the session's VM: on a cluster, cancels its job (each NAME) */
#define CMD_ENDS 0x8000
/* ... and removes the session */
#define CMD_REMOVES 0x10000
/* Halts a running session before it boots it again */
#define CMD_HALT_FIRST 0x20000
/* Relays a raw byte stream on stdin and stdout: forwarded unbuffered */
#define CMD_STREAM 0x40000

#define SELECT_OPT                                                             \
	{                                                                      \
		"selector", 'l', "SELECTOR", 0,                                \
		    "the sessions whose labels match: KEY=VALUE, KEY!=VALUE, " \
		    "KEY, "                                                    \
		    "!KEY, joined by commas (all must hold)"                   \
	}

struct args;

/* One command: a row of the command table. */
struct cmd_entry {
	const char *name;
	const char *pre;  /* positionals shown before the options */
	const char *post; /* positionals shown after them */
	const char *summary;
	const struct cmd_opt *opts; /* terminated by a NULL name */
	int flags;
	int min_args, max_args; /* positional count; max -1: unlimited */
	int (*exec)(struct args *);
};

/* Values given for one option. */
struct args_value {
	int count;
	char **values; /* count entries (NULL for flags) */
};

/* A parsed command line. */
struct args {
	const struct cmd_entry *entry;
	struct args_value *vals; /* one per entry->opts row */
	int argc;                /* positional arguments */
	char **argv;
	int help;     /* --help/-h was given */
	int selected; /* the NAMEs came from a glob or -l (select.c) */
	int nnames;   /* CMD_FANOUT: how many names lead argv */
	char **owned; /* names select.c put in argv */
	size_t nowned;
};

struct cJSON;
/* args.c */
int args_parse(const struct cmd_entry *, int argc, char **argv, struct args *,
    char **cause);
void args_free(struct args *);
int args_has(const struct args *, const char *name);
const char *args_get(const struct args *, const char *name);
char **args_values(const struct args *, const char *name, int *n);
void args_flags(
    const struct args *, const char *const *skip, char ***v, size_t *n);
int args_env_valid(const char *kv, char **cause);
void args_env_add(struct cJSON *obj, char *const *env, int n);
int args_size(const char *s, int *cols, int *rows, char **cause);

/* output.c: --json: one document on stdout, errors included. */
struct cJSON;
void cli_output_start(
    const struct cmd_entry *, const struct args *, int argc, char **argv);
int cli_json(void);
void cli_json_compact(void);
void cli_result(struct cJSON *);
int cli_output_error(const char *msg);
void cli_notice(const char *msg);
void cli_noticef(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int cli_output_finish(FILE *, int rc);

/* cmd-table.c */
extern const struct cmd_entry *cmd_table[];
const struct cmd_entry *cmd_find(const char *name);
void cmd_print_overview(int to_stderr);

/* cmd.c */
char *cmd_usage(const struct cmd_entry *);
void cmd_print_help(const struct cmd_entry *);
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *cli_item_error(int many, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
struct cJSON;
void cli_json_printable(struct cJSON *);
void cli_json_print(FILE *, const struct cJSON *, int pretty);
int cli_select(struct args *);
int args_has_opt(const struct args *, const char *name);
int cli_usage_error(const struct cmd_entry *, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int cmd_names_session_first(const struct cmd_entry *);
char *cli_home(void);
extern char *cli_last_error;
void cli_record_error(const struct cmd_entry *, const struct args *);
void cli_trap_signal(int sig, void (*fn)(int));
void cli_trap_interrupts(void (*fn)(int));
char *cli_secret_line(const char *flag, const char *file, char **cause);
struct session_record;
struct vsock_target;
int cli_session_record(const char *name, struct session_record *);
int cli_wake(struct session_record *);
typedef int (*cli_each_fn)(const char *home, const char *name,
    struct cJSON *result, const char **note, void *arg, char **cause);
int cli_each_name(struct args *, const char *verb, cli_each_fn, void *arg);
int cli_running_session(
    const char *name, struct session_record *, struct vsock_target *);
struct cJSON *cli_agent(const struct vsock_target *, struct cJSON *req,
    int timeout_s, char **cause);

/* pool.c: a warm pool of booted VMs `vmux new` claims */
enum pool_state { POOL_BOOTING, POOL_READY, POOL_CLAIMED, POOL_REMOVING };
struct pool_vm {
	char *id;   /* pool-XXXXXXXX */
	char *dir;  /* HOME/pool/ID */
	int state;  /* enum pool_state */
	char *spec; /* "PROFILE IMAGE" it was booted as, or NULL */
	int ok;     /* rec was read */
	struct session_record rec;
};
struct settings;
int pool_list(const char *home, struct pool_vm **, size_t *, char **cause);
void pool_list_free(struct pool_vm *, size_t);
int pool_eligible(const struct args *, const struct settings *);
int pool_claim(const char *home, const struct settings *, const struct args *,
    const char *name, struct session_record *, char **cause);
int pool_fill(const char *home, void (*notice)(const char *), char **cause);
int pool_drain(const char *home, int *removed, char **cause);
void pool_refill_later(const char *home);

/* remote.c: sessions on other hosts (session/host.c) */
struct host;
extern const struct host *cli_remote;
extern char **cli_tui_hosts; /* vmux -H ... tui: whose sessions it shows */
extern size_t cli_tui_nhosts;
int remote_route(const struct cmd_entry *, struct args *, int argc, char **argv,
    char **hosts, size_t nhosts, int *rc);

/* cmd-ls.c: a session as ls --json and new --json show it. */
struct session_entry;
struct cJSON *ls_session_json(const struct session_entry *);

/* cmd-capture.c: a terminal's screen as text, rendered by libvterm */

/* cmd-shells.c: a shell record's times as RFC 3339. */
void shells_times(struct cJSON *);

/* The commands (cmd-*.c). */
extern const struct cmd_entry cmd_new_entry;
extern const struct cmd_entry cmd_exec_entry;
extern const struct cmd_entry cmd_keys_entry;
extern const struct cmd_entry cmd_capture_entry;
extern const struct cmd_entry cmd_open_entry;
extern const struct cmd_entry cmd_resize_entry;
extern const struct cmd_entry cmd_mcp_entry;
extern const struct cmd_entry cmd_web_entry;
extern const struct cmd_entry cmd_check_entry;
extern const struct cmd_entry cmd_ls_entry;
extern const struct cmd_entry cmd_rm_entry;
extern const struct cmd_entry cmd_connect_entry;
extern const struct cmd_entry cmd_ping_entry;
extern const struct cmd_entry cmd_help_entry;
extern const struct cmd_entry cmd_shell_entry;
extern const struct cmd_entry cmd_shells_entry;
extern const struct cmd_entry cmd_kill_entry;
extern const struct cmd_entry cmd_close_entry;
extern const struct cmd_entry cmd_cp_entry;
extern const struct cmd_entry cmd_tui_entry;
extern const struct cmd_entry cmd_stop_entry;
extern const struct cmd_entry cmd_start_entry;
extern const struct cmd_entry cmd_pause_entry;
extern const struct cmd_entry cmd_resume_entry;
extern const struct cmd_entry cmd_fork_entry;
extern const struct cmd_entry cmd_restart_entry;
extern const struct cmd_entry cmd_logs_entry;
extern const struct cmd_entry cmd_console_entry;
extern const struct cmd_entry cmd_gdb_entry;
extern const struct cmd_entry cmd_rescue_entry;
extern const struct cmd_entry cmd_grant_entry;
/* grant-logins.c */
int grant_token_new(const char *home, const char *name, char **, char **);
int grant_token_live(const char *home, const char *token);
int grant_logins_end(const char *home, const char *line);
/* slurm.c */
struct host;
int slurm_route(const struct host *, const struct cmd_entry *, struct args *,
    int argc, char **argv);
/* foreground.c */
void session_foreground_early(void);
int session_foreground(const char *home, const char *name, int sig_seen);
/* grant-web.c */
int grant_web_exec(struct args *);
int revoke_web_exec(struct args *);
int grants_web_exec(struct args *);
extern const struct cmd_entry cmd_revoke_entry;
extern const struct cmd_entry cmd_grants_entry;
extern const struct cmd_entry cmd_record_entry;
extern const struct cmd_entry cmd_recordings_entry;
extern const struct cmd_entry cmd_replay_entry;
extern const struct cmd_entry cmd_run_entry;
extern const struct cmd_entry cmd_status_entry;
extern const struct cmd_entry cmd_images_entry;
extern const struct cmd_entry cmd_host_entry;
extern const struct cmd_entry cmd_pool_entry;

/* cmd-exec.c, for tests: build the exec request from parsed args. */
struct cJSON;
/*
 * cmd-new.c: new's flags, which vmux run takes too; the session options
 * (the table's SOPT_NEW rows: --cpus, --memory, ...) join them in
 * new_opts_build.
 */
#define NEW_OPTS                                                               \
	{"profile", 0, "NAME", 0,                                              \
	    "policy: default, offline_readonly, network_basic, "               \
	    "network_extended, or a file in $XDG_CONFIG_HOME/vmux/profiles"},  \
	    {"label", 0, "KEY=VALUE", 1,                                       \
	        "label the session (several; -l selects by them)"},            \
	    {"image", 0, "IMG", 0,                                             \
	        "boot this root: a name from vmux images, an ext4 image, a "   \
	        "root directory or a tar of one, or an OCI/Docker image by "   \
	        "reference (alpine:3, REGISTRY/NAME:TAG, NAME@sha256:..., "    \
	        "oci:DIR, docker-archive:FILE, ...)"},                         \
	    {"pull", 0, "always|missing|never", 0,                             \
	        "pull --image's reference: when not pulled yet (missing, the " \
	        "default), every time, or never"},                             \
	    {"mount", 'v', "HOST:GUEST[:ro]", 1,                               \
	        "share a host folder (under an allowed-mount-root) at GUEST"}, \
	    {"allow-host", 0, "HOST:PORT", 1,                                  \
	        "a NIC that reaches only these destinations, each connected "  \
	        "by the host"},                                                \
	    {"publish", 'p', "HPORT:GPORT", 1,                                 \
	        "forward host port HPORT (127.0.0.1) to guest port GPORT"},    \
	    {"accel", 0, "kvm|tcg", 0,                                         \
	        "accelerator (default: kvm where it works)"},                  \
	    {"allow-port", 0, "P", 1,                                          \
	        "host port the guest may connect to (<vsock_uds>_P)"},         \
	    {"boot-timeout", 0, "S", 0,                                        \
	        "seconds to wait for the agent (default 60)"},                 \
	    {"workspace", 0, "FILE", 0,                                        \
	        "use this ext4 disk image as the workspace (one kept by vmux " \
	        "rm "                                                          \
	        "--keep-workspace); vmux never deletes it"},                   \
	    {"kernel", 0, "FILE", 0,                                           \
	        "guest kernel (default: vmux's guest image)"},                 \
	    {"initrd", 0, "FILE", 0,                                           \
	        "guest initrd (default: vmux's guest image)"},                 \
	    {"append", 0, "ARGS", 0,                                           \
	        "more kernel command line words for the first boot (rdinit=, " \
	        "init=, loglevel=...)"},                                       \
	    {"persist", 0, NULL, 0, "keep --append for every later boot"},     \
	    {"gdb", 0, NULL, 0,                                                \
	        "serve QEMU's gdbstub on a socket for this boot (vmux gdb "    \
	        "NAME prints the command)"},                                   \
	    {"paused", 0, NULL, 0,                                             \
	        "with --gdb: the CPU waits for gdb's continue (the command "   \
	        "returns at once)"},                                           \
	    {"record", 0, NULL, 0,                                             \
	        "record every shell as asciicast under the session's "         \
	        "directory (vmux recordings, vmux replay)"},                   \
	    {"record-input", 0, NULL, 0,                                       \
	        "with --record: what is typed too (passwords typed at a "      \
	        "prompt that does not echo them included)"},                   \
	    {"no-agent", 0, NULL, 0,                                           \
	        "do not wait for the guest agent: ready once QEMU runs (for "  \
	        "an image or init without one; use vmux console)"},            \
	    {"cold", 0, NULL, 0,                                               \
	        "boot a kernel, not from a template of a booted guest (see "   \
	        "vmux(1), TEMPLATES)"},                                        \
	{                                                                      \
		"vsock", 0, "bridge|kernel", 0,                                \
		    "vsock transport: vmux-bridge (default) or "               \
		    "/dev/vhost-vsock"                                         \
	}

struct launch_opts;
struct profile;
struct session_mount;
struct settings;
int new_defaults(
    struct args *, struct profile *, struct settings *, char **cause);
int new_parse(struct args *, struct launch_opts *, struct profile *,
    unsigned **allow, struct session_mount **mounts, char **cause);
void new_mounts_free(struct session_mount *, size_t);
/* room for NEW_OPTS, the session options and a command's own */
#define NEW_OPTS_MAX 64
const char *new_option_text(struct args *, const struct session_option *);
void new_opts_build(struct cmd_opt *out, const struct cmd_opt *common,
    const struct cmd_opt *own);

int exec_in_session(const char *name, struct cJSON *req, int *timeout_s,
    int given, int forward, struct cJSON **result, int *timed_out);
int cmd_exec_request(
    const struct args *, int *timeout_s, struct cJSON **req, char **cause);

/* detach.c: the detach key of vmux shell. */
#define DETACH_KEY_DEFAULT 0x1d /* Ctrl-] */
int detach_key_parse(const char *, int *key, char **cause);
void detach_key_name(int key, char *buf, size_t len);
size_t detach_scan(const uint8_t *, size_t, int key, int *found);

/* term.c: the local terminal (raw mode, size, signals). */
int term_raw_enter(int fd);
int term_reraw(void);
void term_restore(void);
int term_size(int *cols, int *rows);
int sigpipe_open(const int *sigs, size_t n);
int sigpipe_next(int fd);

/* shell-loop.c: the attached stream's event loop. */
enum shell_end {
	SHELL_END_EXIT,   /* the shell ended: status */
	SHELL_END_DETACH, /* the detach key */
	SHELL_END_SIGNAL, /* we got signo; detached */
	SHELL_END_LOST,   /* the connection broke: error */
	SHELL_END_OUTPUT, /* our stdout's reader went away */
};
struct shell_loop_opts {
	int tty;               /* stdin is our terminal, in raw mode */
	int detach_key;        /* -1: none */
	int sig_fd;            /* sigpipe_open's read end */
	uint64_t replay_end;   /* output before this cursor is a replay: */
	int skip_partial_line; /* drop it up to its first newline */
	int read_only;         /* watch: keys are not sent, size not told */
	const char *title;     /* "NAME:ID", titled once others attach */
	uint64_t start_cursor; /* where the stream asked for begins */
};
struct shell_loop_result {
	enum shell_end end;
	int status; /* SHELL_END_EXIT */
	int signo;  /* SHELL_END_SIGNAL */
	char *error;
	uint64_t dropped;     /* output bytes the agent dropped (TRUNCATED) */
	uint64_t next_cursor; /* past the last output received */
};
struct attach_client;
void shell_loop(struct attach_client *, const struct shell_loop_opts *,
    struct shell_loop_result *);
int shell_end_status(const struct shell_loop_result *);

/* cp-args.c: vmux cp's operands. */
struct cp_spec {
	int upload;    /* local -> guest */
	char *session; /* the remote side's session */
	char *remote;  /* path in the guest */
	char *local;   /* path on the host */
	int quiet;     /* no progress line, no notices (--json) */
	/* filled by cp_upload and cp_download: */
	uint64_t bytes;   /* archive bytes moved */
	uint64_t skipped; /* entries left out */
};
int cp_split(const char *arg, char **session, char **path, char **cause);
int cp_parse(const char *src, const char *dst, struct cp_spec *, char **cause);
void cp_spec_free(struct cp_spec *);

/* progress.c: bytes and rate on a terminal, updated in place. */
struct progress {
	int on; /* 1: stderr is a terminal; 2: vmux-progress lines */
	const char *what;
	uint64_t bytes, total; /* total 0: unknown */
	uint64_t start, last;  /* mono_ms */
};
void progress_init(struct progress *, const char *what, uint64_t total);
void progress_add(struct progress *, uint64_t n);
void progress_done(struct progress *, int ok);
void progress_set_lines(int on);
char *progress_human(uint64_t bytes);
void cli_pull_progress(void *arg, const char *event, const char *digest,
    int64_t done, int64_t total);

/* cp.c: the transfers. */
int cp_upload(const struct vsock_target *, struct cp_spec *, char **cause);
int cp_download(const struct vsock_target *, struct cp_spec *, char **cause);

/* cp-place.c: a downloaded copy moves into place all or nothing. */
char *cp_source_name(const char *remote);
char *cp_stage_new(const char *dir, char **cause);
int cp_place(const char *src, const char *dst, int follow, char **cause);
struct stat;
void cp_restore_times(const char *dir, const struct stat *);

/* exec-stream.c: `vmux exec`'s side of the agent's exec_stream. */
/* --json keeps this much of each of stdout and stderr. */
#define EXEC_CAPTURE_MAX (16 * 1024 * 1024)
struct exec_outcome {
	int capture; /* keep the output (--json) instead of writing it */
	int lines;   /* --json-lines: and print each piece as it comes */
	struct headtail out, err; /* what is kept of each: head and tail */
	int code, sig, timed_out;
	int broken_pipe;      /* our stdout's reader left */
	uint64_t duration_ms; /* from the request to the exit status */
};
int exec_stream_run(int sock, const uint8_t *pre, size_t pre_len,
    int forward_stdin, struct exec_outcome *, char **cause);
struct cJSON *exec_capture_json(const struct exec_outcome *);

/* exec-many.c: one command over many sessions, a child vmux each */
#define CLASS_MAX     1000 /* sessions in one new --count or --roster */
#define MANY_PARALLEL 16   /* children at once (exec, check) */
struct run {
	const char *session;
	pid_t pid;           /* 0: not started, -1: reaped */
	int fd[2];           /* stdout, stderr pipes; -1 once at EOF */
	char *out[2];        /* what was kept of each */
	size_t len[2];       /* bytes kept */
	size_t seen[2];      /* bytes read */
	int status;          /* exit status as a shell's $? */
	uint64_t started_ms; /* mono_ms when it started */
};
struct many {
	struct args *a;          /* the flags to pass on */
	const char *sub;         /* the child's command: "exec", "new" */
	const char *const *skip; /* a's options not passed on */
	char *const *cmd;        /* after "--" (NULL: no "--") */
	int ncmd;
	int no_dashdash; /* cmd are plain arguments after NAME: no "--" */
	/* the child's whole argv instead (cp), arg its data; NULL: as above */
	char **(*argv_of)(
	    const struct many *, const char *self, const char *session);
	const void *arg;
	const char *input; /* each child's stdin (NULL: /dev/null) */
	int parallel;
	int check; /* results are a check's (pass, fail) */
	void (*record)(const char *session, int status, const char *line);
	void (*done)(const struct run *); /* as each ends (progress) */
	void (*result)(const struct run *, size_t); /* else table/JSON */
};
int exec_many(struct args *);
int many_sub(struct args *, int parallel); /* kill, close, start... */
int select_sessions(const char *glob, const char *selector, char ***names,
    size_t *n);               /* select.c */
int new_class(struct args *); /* new-class.c */
int many_run(const struct many *, char *const *sessions, size_t n);
char *many_line(const char *s, size_t len, int last);

/* cmd-record.c: a session's recordings, for `recordings` and the TUI. */
int recording_files(const char *dir, char ***out, size_t *n);

#endif
