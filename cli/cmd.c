/*
 * cmd.c: usage lines, help texts and error helpers of vmux commands.
 *
 * Usage lines are generated from each command's option table so `--help`
 * can never disagree with what the parser accepts; man/vmux.1 documents
 * the same tables.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

/* Append s to a growing string. */
static void
append(char **buf, const char *s)
{
	char *out;

	xasprintf(&out, "%s%s", *buf, s);
	free(*buf);
	*buf = out;
}

/* "vmux NAME PRE [--opt ARG]... POST", from the option table. */
char *
cmd_usage(const struct cmd_entry *e)
{
	const struct cmd_opt *o;
	char *buf, *s;

	xasprintf(&buf, "vmux %s", e->name);
	if (e->pre != NULL) {
		append(&buf, " ");
		append(&buf, e->pre);
	}
	for (o = e->opts; o != NULL && o->name != NULL; o++) {
		if (o->short_name != 0 && o->arg == NULL)
			xasprintf(&s, " [-%c]", o->short_name);
		else if (o->arg == NULL)
			xasprintf(&s, " [--%s]", o->name);
		else
			xasprintf(&s, " [--%s %s]%s", o->name, o->arg,
			    o->repeat ? "..." : "");
		append(&buf, s);
		free(s);
	}
	if (e->post != NULL) {
		append(&buf, " ");
		append(&buf, e->post);
	}
	return buf;
}

/* Print text wrapped at 78 columns, each line indented by indent. */
static void
print_wrapped(const char *text, int indent)
{
	const char *p = text;
	int col = 0;

	while (*p != '\0') {
		size_t word = strcspn(p, " ");
		if (col > 0 && col + 1 + (int)word > 78) {
			putchar('\n');
			col = 0;
		}
		if (col == 0)
			col = printf("%*s", indent, "");
		else
			col += printf(" ");
		col += printf("%.*s", (int)word, p);
		p += word;
		while (*p == ' ')
			p++;
	}
	putchar('\n');
}

/* The left column of an option's help line. */
static char *
opt_left(const struct cmd_opt *o)
{
	char *left;

	xasprintf(&left, "%s%c%s--%s%s%s", o->short_name != 0 ? "-" : " ",
	    o->short_name != 0 ? o->short_name : ' ',
	    o->short_name != 0 ? ", " : "  ", o->name,
	    o->arg != NULL ? " " : "", o->arg != NULL ? o->arg : "");
	return left;
}

/* Print one command's help to stdout. */
void
cmd_print_help(const struct cmd_entry *e)
{
	const struct cmd_opt *o;
	char *usage = cmd_usage(e), *left, *help;
	int w = (int)strlen("-h, --help");

	for (o = e->opts; o != NULL && o->name != NULL; o++) {
		left = opt_left(o);
		if ((int)strlen(left) > w)
			w = (int)strlen(left);
		free(left);
	}
	printf("usage: %s\n\n", usage);
	print_wrapped(e->summary, 0);
	printf("\noptions:\n");
	for (o = e->opts; o != NULL && o->name != NULL; o++) {
		left = opt_left(o);
		xasprintf(
		    &help, "%s%s", o->help, o->repeat ? " (repeatable)" : "");
		printf("  %-*s  %s\n", w, left, help);
		free(help);
		free(left);
	}
	printf("  %-*s  %s\n", w, "-h, --help", "show this help");
	free(usage);
}

/*
 * Print "vmux: <message>" on stderr; under --json the message goes into
 * the final error document instead (output.c). Messages often quote the
 * guest (agent errors, names in a guest's archive): control characters are
 * shown as escapes (str_printable), so no guest can drive the user's
 * terminal.
 */
void
cli_error(const char *fmt, ...)
{
	va_list ap;
	char *msg, *safe;

	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	free(cli_last_error);
	cli_last_error = xstrdup(msg);
	if (cli_output_error(msg)) {
		free(msg);
		return;
	}
	fflush(stdout);
	safe = str_printable(msg, STR_KEEP_NL);
	fprintf(stderr, "vmux: %s\n", safe);
	free(safe);
	free(msg);
}

/*
 * One of several names failed (rm a b, stop a b, close s 1 2): like
 * cli_error, except that under --json, when each name gets a result of its
 * own (many), the message stays in that result, not in one error object
 * that would hide what was done for the others. Returns the message for
 * the result (the caller frees it).
 */
char *
cli_item_error(int many, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	if (!many || !cli_json()) {
		cli_error("%s", msg);
		return msg;
	}
	free(cli_last_error);
	cli_last_error = xstrdup(msg);
	return msg;
}

/* A command run here on a session of another host (cp), or NULL. */
const struct host *cli_remote;
char **cli_tui_hosts;
size_t cli_tui_nhosts;

/* The last error reported (for the error ring), or NULL. */
char *cli_last_error;

/*
 * After a command failed: put its last error in the ring `vmux status`
 * shows, with the session it named when it took one.
 */
void
cli_record_error(const struct cmd_entry *e, const struct args *a)
{
	const char *session = NULL;
	char *home, *cause = NULL;
	struct stat st;

	if (cli_last_error == NULL)
		return;
	if ((home = session_home(&cause)) == NULL) {
		free(cause);
		return;
	}
	if (e != NULL && a != NULL && e->pre != NULL &&
	    strncmp(e->pre, "NAME", 4) == 0 && a->argc > 0)
		session = a->argv[0];
	else if (e != NULL && a != NULL && (e->flags & CMD_CREATES) &&
	    args_has_opt(a, "name"))
		session = args_get(a, "name"); /* run --name */
	if (stat(home, &st) == 0) /* never create the home for this */
		errors_append(
		    home, session, e != NULL ? e->name : NULL, cli_last_error);
	free(home);
}

/* Report a usage error of command e in one line; returns EXIT_USAGE. */
int
cli_usage_error(const struct cmd_entry *e, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	if (e != NULL)
		cli_error("%s: %s", e->name, msg);
	else
		cli_error("%s", msg);
	free(msg);
	return EXIT_USAGE;
}

/*
 * Is e's first operand a session's NAME (exec NAME, stop NAME...)? Not
 * run's command, check's SCRIPT or replay's FILE, nor a command of no
 * session (status, images).
 */
int
cmd_names_session_first(const struct cmd_entry *e)
{
	if ((e->flags & (CMD_NAME_ONE | CMD_NAMES)) != 0)
		return (e->flags & CMD_FIRST_NOT_NAME) == 0;
	return e->pre != NULL &&
	    (strncmp(e->pre, "NAME", 4) == 0 ||
	        strncmp(e->pre, "[NAME]", 6) == 0 ||
	        strncmp(e->pre, "SESSION", 7) == 0);
}

/* The vmux home, or NULL after printing why. */
char *
cli_home(void)
{
	char *cause = NULL, *home = session_home(&cause);

	if (home == NULL) {
		cli_error("%s", cause);
		free(cause);
	}
	return home;
}

/*
 * Load the record of session name (a valid name) into r (caller frees with
 * record_free). 0, or EXIT_VMUX after saying why.
 */
int
cli_session_record(const char *name, struct session_record *r)
{
	char *home, *cause = NULL;

	if ((home = cli_home()) == NULL)
		return EXIT_VMUX;
	if (record_load(home, name, r, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		free(home);
		return EXIT_VMUX;
	}
	free(home);
	return 0;
}

/*
 * Resume r if it is paused (r is reloaded): a command that needs the guest
 * wakes it. 0, or EXIT_VMUX after saying why.
 */
int
cli_wake(struct session_record *r)
{
	char *home, *cause = NULL;
	int rc = 0;

	if ((home = cli_home()) == NULL)
		return EXIT_VMUX;
	if (session_wake(home, r, cli_json() ? NULL : cli_notice, &cause) !=
	    0) {
		cli_error("%s", cause);
		free(cause);
		rc = EXIT_VMUX;
	}
	free(home);
	return rc;
}

/*
 * Load session name and check that it runs (a paused one is resumed); fills r
 * (caller frees with record_free) and t (which points into r). 0, or EXIT_VMUX
 * after saying why; a bad name is reported as a usage error (EXIT_USAGE).
 */
int
cli_running_session(
    const char *name, struct session_record *r, struct vsock_target *t)
{
	char *cause = NULL;
	const char *state;

	if (session_name_valid(name, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		return EXIT_USAGE;
	}
	if (cli_remote != NULL) { /* its host's vmux checks the rest */
		memset(r, 0, sizeof *r);
		memset(t, 0, sizeof *t);
		t->host = cli_remote;
		t->session = name;
		return 0;
	}
	if (cli_session_record(name, r) != 0)
		return EXIT_VMUX;
	if (cli_wake(r) != 0) {
		record_free(r);
		return EXIT_VMUX;
	}
	state = session_state(r);
	if (strcmp(state, "running") != 0) {
		cli_error("session '%s' is %s", r->name, state);
		record_free(r);
		return EXIT_VMUX;
	}
	if (r->no_agent) {
		cli_error("session '%s' runs without the guest agent "
		          "(--no-agent): use vmux console %s",
		    r->name, r->name);
		record_free(r);
		return EXIT_VMUX;
	}
	session_target(r, t);
	return 0;
}

/* Send signal sig to fn (or SIG_IGN), no flags: a blocking call it
 * interrupts returns EINTR. */
void
cli_trap_signal(int sig, void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

/*
 * Send SIGINT, SIGTERM and SIGHUP to fn (which sets a flag a boot loop
 * checks), so an interrupted boot cleans up instead of dying half-way.
 */
void
cli_trap_interrupts(void (*fn)(int))
{
	cli_trap_signal(SIGINT, fn);
	cli_trap_signal(SIGTERM, fn);
	cli_trap_signal(SIGHUP, fn);
}

/*
 * The first line of a secret file given as flag (--token-file F): a plain
 * file only its owner can read (0600), not followed through a symlink,
 * checked before it is read (opened non-blocking: a FIFO is refused, not
 * waited on). The line (caller frees), or NULL with cause.
 */
char *
cli_secret_line(const char *flag, const char *file, char **cause)
{
	struct stat st;
	char buf[512];
	ssize_t n;
	int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

	if (fd < 0 || fstat(fd, &st) != 0) {
		xasprintf(cause, "%s %s: %s", flag, file, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode) || (st.st_mode & 077) != 0) {
		close(fd);
		xasprintf(cause,
		    "%s %s: must be a file only its owner can read (chmod 600)",
		    flag, file);
		return NULL;
	}
	n = read_full(fd, buf, sizeof buf - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	return xstrdup(buf);
}

/*
 * One request to the agent (req is deleted), allowing timeout_s seconds
 * for the reply. The reply, or NULL with cause.
 */
cJSON *
cli_agent(const struct vsock_target *t, cJSON *req, int timeout_s, char **cause)
{
	uint64_t now = mono_ms();
	cJSON *reply;

	reply = agent_call(t, req, now + CLI_CONNECT_MS,
	    now + (uint64_t)timeout_s * 1000, NULL, NULL, cause);
	cJSON_Delete(req);
	return reply;
}

/* A cJSON-allocated copy of s with controls escaped. */
static char *
cli_json_str(const char *s)
{
	char *safe = str_printable(s, 0), *out;

	out = cJSON_malloc(strlen(safe) + 1);
	strcpy(out, safe);
	free(safe);
	return out;
}

/* Make every string (and key) in a guest's JSON answer safe to print. */
void
cli_json_printable(cJSON *o)
{
	cJSON *e;
	char *s;

	if (cJSON_IsString(o) && o->valuestring != NULL) {
		s = cli_json_str(o->valuestring);
		cJSON_free(o->valuestring);
		o->valuestring = s;
	}
	if (o->string != NULL && !(o->type & cJSON_StringIsConst)) {
		s = cli_json_str(o->string);
		cJSON_free(o->string);
		o->string = s;
	}
	cJSON_ArrayForEach(e, o) cli_json_printable(e);
}

/*
 * Print a JSON document and a newline to f: DEL and C1 controls, which
 * cJSON leaves raw, are escaped too (json_printable), losing nothing.
 */
void
cli_json_print(FILE *f, const cJSON *o, int pretty)
{
	char *text = pretty ? cJSON_Print(o) : cJSON_PrintUnformatted(o);
	char *safe = json_printable(text != NULL ? text : "null");

	fprintf(f, "%s\n", safe);
	free(safe);
	cJSON_free(text);
}

/*
 * Run fn on each session a names (stop, pause, resume): fn does one, and
 * may add fields to its JSON result and a note to its line (" (forced)").
 * With several names (or a glob or -l) each gets a line, "VERB NAME", and
 * a result, failures too; one name's result is printed alone. 0, or
 * EXIT_VMUX if any failed.
 */
int
cli_each_name(struct args *a, const char *verb, cli_each_fn fn, void *arg)
{
	cJSON *arr = cJSON_CreateArray(), *o;
	char *home, *cause = NULL, *msg;
	const char *note;
	int i, rc = 0, several = a->argc > 1 || a->selected;

	if ((home = cli_home()) == NULL) {
		cJSON_Delete(arr);
		return EXIT_VMUX;
	}
	for (i = 0; i < a->argc; i++) {
		o = cJSON_CreateObject();
		note = "";
		if (fn(home, a->argv[i], o, &note, arg, &cause) != 0) {
			msg = cli_item_error(a->argc > 1, "%s", cause);
			free(cause);
			cause = NULL;
			rc = EXIT_VMUX;
			if (a->argc > 1) { /* each name gets its result */
				cJSON_Delete(o);
				o = cJSON_CreateObject();
				cJSON_AddStringToObject(o, "name", a->argv[i]);
				cJSON_AddStringToObject(o, "error", msg);
				cJSON_AddItemToArray(arr, o);
			} else
				cJSON_Delete(o);
			free(msg);
			continue;
		}
		if (several) {
			cJSON_AddStringToObject(o, "name", a->argv[i]);
			if (!cli_json()) /* say each, as docker stop */
				printf("%s %s%s\n", verb, a->argv[i], note);
		}
		cJSON_AddStringToObject(o, verb, a->argv[i]);
		cJSON_AddItemToArray(arr, o);
	}
	free(home);
	if (a->argc == 1 && cJSON_GetArraySize(arr) == 1)
		cli_result(cJSON_DetachItemFromArray(arr, 0));
	else if (cJSON_GetArraySize(arr) > 0)
		cli_result(cJSON_Duplicate(arr, 1));
	cJSON_Delete(arr);
	return rc;
}
