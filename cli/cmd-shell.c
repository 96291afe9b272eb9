/*
 * cmd-shell.c: `vmux shell NAME [--id ID] [-- COMMAND...]`: attach this
 * terminal to a persistent shell in the guest.
 *
 * The shell lives in the agent, not in this process: vmux opens it
 * (open_shell, with our terminal's size) or finds it (list_shells), then
 * attaches (attach_shell) and runs shell-loop.c. Detaching, a lost
 * connection or vmux being killed leave the shell running; anyone can
 * reattach with --id, and the recent output is replayed so the screen
 * comes back much as it was (from a line start, after clearing it). The
 * terminal is raw while attached and restored on every way out (atexit and
 * the signal paths; only SIGKILL skips it).
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "proto/attach.h"
#include "proto/proto.h"
#include "session/session.h"
#include "cli.h"

#define SHELL_REPLAY_BYTES (32 * 1024) /* repainted on reattach */
#define SHELL_REQUEST_S    15

static int cmd_shell_exec(struct args *);

static const struct cmd_opt cmd_shell_opts[] = {
    {"id", 'i', "ID", 0,
        "attach to shell ID (letters, digits, '.', '_', '-'); it is "
        "created if it does not exist"},
    {"cwd", 'C', "DIR", 0, "working directory of a new shell"},
    {"user", 'u', "USER", 0,
        "a new shell's guest user: a name, uid or uid:gid (default: the "
        "image's User, else root)"},
    {"env", 'e', "K=V", 1, "set an environment variable in a new shell"},
    {"detach-key", 0, "KEY", 0,
        "detach with KEY instead of Ctrl-] (^X, ctrl-x or C-x; 'none' "
        "turns detaching off)"},
    {"read-only", 'r', NULL, 0,
        "watch shell --id: nothing typed reaches it and its size is never "
        "changed"},
    {"as", 0, "LABEL", 0,
        "who you are to the others attached to the shell (default: your "
        "login name); who they are shows in the terminal's title"},
    {"if-instance", 0, "ID", 0,
        "only if session NAME is the one whose instance id (ls --json) "
        "this is (vmux grant pins its session so: a new session of the "
        "same name is not reached)"},
    {"grant", 0, "TOKEN", 0,
        "the grant this login came by (vmux grant writes it): refused "
        "once the grant is revoked"},
    {"if-created", 0, "UNIXTIME", 0,
        "as --if-instance, for grants made before instance ids: only a "
        "session without one, made at UNIXTIME"},
    SELECT_OPT,
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_shell_entry = {
    .name = "shell",
    .pre = "NAME",
    .post = "[-- COMMAND [ARG...]]",
    .summary = "Attach this terminal to a shell in session NAME. The "
               "shell (or COMMAND) runs on a terminal in the guest and "
               "lives on there: press Ctrl-] to detach and leave it "
               "running, reattach with --id ID (the recent output is "
               "repainted). When it exits, vmux "
               "exits with its status (128+N if signal N killed it). "
               "Without a terminal on stdin, input and output are passed "
               "through as they are.",
    .opts = cmd_shell_opts,
    .flags = CMD_ARGV_AFTER_NAME | CMD_NAME_ONE | CMD_TTY | CMD_STDIN |
        CMD_OWN_TERMINAL,
    .min_args = 1,
    .max_args = -1,
    .exec = cmd_shell_exec,
};

/* What the user asked for, checked. */
struct shell_req {
	const char *name;
	const char *id; /* NULL: a new shell with the agent's id */
	int detach_key;
	int read_only;  /* watch shell id: no keys, no resizes */
	const char *as; /* who attaches, or NULL: unnamed */
	cJSON *open;    /* the open_shell request */
};

/* Is t a plausible terminal name to pass on (letters, digits, ._+-)? */
static int
term_name_ok(const char *t)
{
	size_t n = t != NULL ? strlen(t) : 0;

	return n > 0 && n <= 64 &&
	    strspn(t,
	        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	        "0123456789._+-") == n;
}

/* Check the arguments and build the open_shell request. */
static int
shell_request(const struct args *a, struct shell_req *r, char **cause)
{
	const char *key = args_get(a, "detach-key"), *cwd = args_get(a, "cwd");
	char **env;
	const char *term;
	cJSON *o, *e, *argv;
	int n, cols, rows;

	memset(r, 0, sizeof *r);
	r->name = a->argv[0];
	r->id = args_get(a, "id");
	r->read_only = args_has(a, "read-only");
	/* a grant's login (--if-instance, --if-created before it) is not
	 * the account's owner: a grant made before --as attaches unnamed */
	r->as = args_has(a, "as") ? args_get(a, "as")
	    : args_has(a, "if-created") || args_has(a, "if-instance") ||
	        args_has(a, "grant")
	    ? NULL
	    : attach_default_as();
	r->detach_key = DETACH_KEY_DEFAULT;
	if (r->as != NULL && !vmux_attach_as_valid(r->as)) {
		xasprintf(cause, "--as: '%s' is not 1-%d of [A-Za-z0-9._@-]",
		    r->as, VMUX_ATTACH_AS_MAX);
		return -1;
	}
	if (r->read_only && r->id == NULL) {
		xasprintf(
		    cause, "--read-only watches a shell: name it with --id");
		return -1;
	}
	if (session_name_valid(r->name, cause) != 0)
		return -1;
	if (r->id != NULL && shell_id_valid(r->id, cause) != 0)
		return -1;
	if (key != NULL && detach_key_parse(key, &r->detach_key, cause) != 0)
		return -1;
	if (key == NULL && !isatty(STDIN_FILENO))
		r->detach_key = -1; /* bytes on a pipe are data, like ssh's ~ */
	if (cwd != NULL && *cwd == '\0') {
		xasprintf(cause, "--cwd needs a directory");
		return -1;
	}
	env = args_values(a, "env", &n);
	for (int i = 0; i < n; i++) {
		if (args_env_valid(env[i], cause) != 0)
			return -1;
	}

	if (term_size(&cols, &rows) != 0)
		cols = rows = 0; /* the agent's default */
	o = agent_req_open_shell(
	    r->id, cols > 4096 ? 4096 : cols, rows > 4096 ? 4096 : rows);
	if (cwd != NULL)
		cJSON_AddStringToObject(o, "cwd", cwd);
	if (args_get(a, "user") != NULL)
		cJSON_AddStringToObject(o, "user", args_get(a, "user"));
	e = cJSON_AddObjectToObject(o, "env");
	/* On a terminal the shell gets its TERM (the one host variable a
	 * guest sees: what the terminal is, never a secret), unless --env
	 * says otherwise; the agent's default is xterm-256color. */
	term = getenv("TERM");
	if (isatty(STDOUT_FILENO) && term_name_ok(term))
		cJSON_AddStringToObject(e, "TERM", term);
	args_env_add(e, env, n);
	if (cJSON_GetArraySize(e) == 0)
		cJSON_DeleteItemFromObject(o, "env");
	if (a->argc > 1) {
		argv = cJSON_AddArrayToObject(o, "command");
		for (int i = 1; i < a->argc; i++)
			cJSON_AddItemToArray(
			    argv, cJSON_CreateString(a->argv[i]));
	}
	r->open = o;
	return 0;
}

/* A number field of a record, or def. */
static double
rec_num(const cJSON *o, const char *key, double def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : def;
}

/*
 * Find shell id: 1 with *cursor where a repaint should start (2 if it has
 * ended), 0 if there is no such shell, -1 with cause.
 */
static int
shell_find(
    const struct vsock_target *t, const char *id, int64_t *cursor, char **cause)
{
	uint64_t now = mono_ms();

	return attach_shell_find(t, id, SHELL_REPLAY_BYTES,
	    now + CLI_CONNECT_MS, now + SHELL_REQUEST_S * 1000, cursor, NULL,
	    cause);
}

/* Open a new shell; its id (caller frees) or NULL with cause. */
static char *
shell_open(const struct vsock_target *t, cJSON *req, char **cause)
{
	cJSON *reply =
	    cli_agent(t, cJSON_Duplicate(req, 1), SHELL_REQUEST_S, cause);
	const cJSON *id;
	char *s = NULL;

	if (reply == NULL)
		return NULL;
	id = cJSON_GetObjectItemCaseSensitive(reply, "shell_id");
	if (!cJSON_IsString(id))
		xasprintf(cause, "agent's open_shell answer has no shell_id");
	else if (shell_id_valid(id->valuestring, cause) == 0)
		s = xstrdup(id->valuestring); /* printed as is from here on */
	cJSON_Delete(reply);
	return s;
}

/* Leave the terminal usable for the local shell after a remote program. */
static void
shell_term_reset(void)
{
	static const char reset[] = "\033[0m\033[?25h\033[?1l\033>"
	                            "\033[?1000l\033[?1002l\033[?1003l"
	                            "\033[?1006l\033[?2004l";

	if (isatty(STDOUT_FILENO))
		write_all(STDOUT_FILENO, reset, sizeof reset - 1);
}

/* How long a shell whose connection was lost tries to attach again, how
 * many times in a row it does when no output came in between, and how
 * many times in all (an agent that drops every connection after a byte
 * must not keep vmux busy). */
#define SHELL_REATTACH_MS    15000
#define SHELL_REATTACH_TRIES 3
#define SHELL_REATTACH_MAX   20

/*
 * The connection to the agent was lost while the shell may run on (the
 * session's bridge died and is being restarted, a resume): attach again
 * from where the output stopped, trying every 200 ms for a while. 1 when
 * *ac is attached again (the old one freed), 0 to give up (a signal, no
 * agent by then, or an agent that answers but refuses: the connection was
 * not the problem).
 */
static int
shell_reattach(const struct vsock_target *t, const char *id,
    const struct attach_who *who, int sig_fd, int tty, uint64_t cursor,
    struct attach_client *ac)
{
	const char *nl = tty ? "\r\n" : "\n"; /* a raw terminal's */
	uint64_t deadline = mono_ms() + SHELL_REATTACH_MS;
	struct pollfd p = {.fd = sig_fd, .events = POLLIN};
	cJSON *rec = NULL;
	char *cause = NULL;
	int sig;

	if (cursor > INT64_MAX)
		return 0; /* no real agent's cursor */
	attach_client_free(ac);
	fprintf(stderr,
	    "%s[vmux: the connection to shell %s was lost; attaching again]%s",
	    nl, id, nl);
	while (mono_ms() < deadline) {
		if (attach_shell_open(t, id, (int64_t)cursor, who,
		        mono_ms() + 2000, ac, &rec, &cause) == 0) {
			cJSON_Delete(rec);
			fprintf(stderr, "[vmux: attached to shell %s again]%s",
			    id, nl);
			return 1;
		}
		if (strncmp(cause, "agent: ", 7) == 0) {
			free(cause);
			break;
		}
		free(cause);
		cause = NULL;
		/* a signal that ends vmux shell (not a resize) ends this */
		if (poll(&p, 1, 200) > 0 && (sig = sigpipe_next(sig_fd)) != 0 &&
		    sig != SIGWINCH && sig != SIGCONT)
			break;
	}
	return 0; /* *ac stays freed */
}

/* Attach and run until the end; vmux's exit status. */
static int
shell_attach(const struct vsock_target *t, const struct shell_req *r,
    const char *id, int64_t cursor, int reattach)
{
	static const int sigs[] = {
	    SIGWINCH, SIGCONT, SIGTSTP, SIGTERM, SIGHUP, SIGINT, SIGQUIT};
	struct shell_loop_opts o;
	struct shell_loop_result res;
	struct attach_client ac;
	struct attach_who who = {r->as, r->read_only, 0};
	cJSON *rec = NULL;
	char *cause = NULL, key[16], *title;
	int tty = isatty(STDIN_FILENO), rc, cols, rows, tries = 0;
	int reattached = 0;

	memset(&o, 0, sizeof o);
	o.sig_fd = sigpipe_open(sigs, nitems(sigs));
	if (o.sig_fd < 0) {
		cli_error("cannot make a pipe");
		return EXIT_VMUX;
	}
	if (attach_shell_open(t, id, cursor, &who,
	        mono_ms() + SHELL_REQUEST_S * 1000, &ac, &rec, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		return EXIT_VMUX;
	}
	o.detach_key = r->detach_key;
	o.tty = tty;
	o.read_only = r->read_only;
	xasprintf(&title, "%s:%s", r->name, id);
	o.title = title;
	if (reattach) {
		o.replay_end = (uint64_t)rec_num(rec, "output_bytes", 0);
		o.skip_partial_line = cursor > rec_num(rec, "oldest_cursor", 0);
	}
	cJSON_Delete(rec);

	detach_key_name(r->detach_key, key, sizeof key);
	if (r->detach_key >= 0)
		fprintf(stderr, "[%sshell %s in %s%s; detach with %s]\n",
		    r->read_only   ? "watching "
		        : reattach ? "attached to "
		                   : "",
		    id, r->name, r->read_only ? ", read-only" : "", key);
	else
		fprintf(stderr, "[%sshell %s in %s%s]\n",
		    r->read_only   ? "watching "
		        : reattach ? "attached to "
		                   : "",
		    id, r->name, r->read_only ? ", read-only" : "");
	if (tty) {
		if (term_raw_enter(STDIN_FILENO) != 0) {
			cli_error("cannot set the terminal to raw mode");
			attach_client_free(&ac);
			free(title);
			return EXIT_VMUX;
		}
		if (reattach && isatty(STDOUT_FILENO))
			write_all(STDOUT_FILENO, "\033[H\033[2J", 7);
		/* the shell may have another client's size (a watcher
		 * leaves it so) */
		if (reattach && !r->read_only && term_size(&cols, &rows) == 0)
			attach_client_resize(&ac, cols, rows);
	}

	o.start_cursor = (uint64_t)(cursor > 0 ? cursor : 0);
	shell_loop(&ac, &o, &res);
	/* lost, not broken (a stream that makes no sense is not retried) */
	while (res.end == SHELL_END_LOST &&
	    (res.error == NULL || strstr(res.error, "broken") == NULL)) {
		uint64_t next = res.next_cursor;

		/* lost again and again with nothing shown: give up */
		tries = next == o.start_cursor ? tries + 1 : 1;
		if (tries > SHELL_REATTACH_TRIES ||
		    ++reattached > SHELL_REATTACH_MAX ||
		    !shell_reattach(t, id, &who, o.sig_fd, tty, next, &ac))
			break;
		free(res.error);
		o.replay_end = 0; /* a continuation: nothing to repaint */
		o.skip_partial_line = 0;
		o.start_cursor = next;
		shell_loop(&ac, &o, &res);
	}
	attach_client_free(&ac);
	free(title);
	if (tty) {
		shell_term_reset();
		term_restore();
	}
	rc = shell_end_status(&res);
	switch (res.end) {
	case SHELL_END_DETACH:
		fprintf(stderr, "%s[detached from shell %s in %s]\n",
		    tty ? "\n" : "", id, r->name);
		break;
	case SHELL_END_SIGNAL:
		fprintf(stderr, "%s[detached from shell %s in %s: %s]\n",
		    tty ? "\n" : "", id, r->name, strsignal(res.signo));
		break;
	case SHELL_END_LOST:
		cli_error("%s; shell %s may still be running in %s",
		    res.error != NULL ? res.error
		                      : "the agent closed the connection",
		    id, r->name);
		break;
	default:
		break;
	}
	if (res.dropped > 0)
		cli_error("%llu bytes of output were dropped (client too slow)",
		    (unsigned long long)res.dropped);
	free(res.error);
	return rc;
}

/* Open or find the shell, then attach. */
/*
 * Is rec the session a grant's --if-instance (or, from before instance
 * ids, --if-created) names? Yes without either. A --if-created grant
 * reaches only a record made before instances (none yet, or one a later
 * grant gave it): every session made since has its own from the start,
 * and a creation second is shared by sessions made in it.
 */
static int
shell_pinned_here(struct args *a, const struct session_record *rec)
{
	const char *instance = args_get(a, "if-instance");
	const char *created = args_get(a, "if-created");

	if (instance != NULL)
		return rec->instance != NULL &&
		    strcmp(instance, rec->instance) == 0;
	if (created != NULL) /* a session made since has its instance */
		return (rec->instance == NULL || rec->instance_late) &&
		    strtoll(created, NULL, 10) == rec->created;
	return 1;
}

/* Is a grant's token still live (not revoked)? */
static int
shell_grant_live(const char *token)
{
	char *home = cli_home();
	int live = home != NULL && grant_token_live(home, token);

	free(home);
	return live;
}

static int
cmd_shell_exec(struct args *a)
{
	struct session_record rec;
	struct vsock_target t;
	struct shell_req r;
	char *cause = NULL, *id = NULL;
	int64_t cursor = 0;
	int rc, found = 0;

	if (shell_request(a, &r, &cause) != 0) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	if ((rc = cli_running_session(r.name, &rec, &t)) != 0) {
		cJSON_Delete(r.open);
		return rc;
	}
	if (args_get(a, "grant") != NULL &&
	    !shell_grant_live(args_get(a, "grant"))) {
		cli_error("this grant to '%s' was revoked", r.name);
		cJSON_Delete(r.open);
		record_free(&rec);
		return EXIT_VMUX;
	}
	if (!shell_pinned_here(a, &rec)) {
		cli_error("session '%s' was made again since this was set up "
		          "(a grant for the earlier one)",
		    r.name);
		cJSON_Delete(r.open);
		record_free(&rec);
		return EXIT_VMUX;
	}
	if (r.id != NULL)
		found = shell_find(&t, r.id, &cursor, &cause);
	if ((found == 0 || found == 2) && r.read_only) { /* opens nothing */
		cli_error("no running shell %s in %s to watch", r.id, r.name);
		cJSON_Delete(r.open);
		record_free(&rec);
		return EXIT_VMUX;
	}
	if (found == 2) { /* it ended: a new one takes its id, as tmux does */
		cJSON *req = agent_req_close_shell(r.id), *reply;

		reply = cli_agent(&t, req, SHELL_REQUEST_S, &cause);
		cJSON_Delete(reply);
		free(cause);
		cause = NULL;
		found = 0;
	}
	if (found == 0) {
		id = shell_open(&t, r.open, &cause);
		if (id == NULL && r.id != NULL &&
		    strcmp(agent_error_code(), VMUX_E_SHELL_EXISTS) == 0) {
			/* opened by someone else meanwhile: attach to it */
			free(cause);
			cause = NULL;
			found = shell_find(&t, r.id, &cursor, &cause);
		}
	}
	if (found > 0) {
		id = xstrdup(r.id);
		if (a->argc > 1 || args_has(a, "cwd") || args_has(a, "env"))
			cli_error("shell %s exists: COMMAND, --cwd and --env "
			          "are ignored",
			    id);
	}
	if (id == NULL) {
		cli_error("%s", cause != NULL ? cause : "no such shell");
		free(cause);
		rc = EXIT_VMUX;
	} else
		rc =
		    shell_attach(&t, &r, id, found > 0 ? cursor : 0, found > 0);
	free(id);
	cJSON_Delete(r.open);
	record_free(&rec);
	return rc;
}
