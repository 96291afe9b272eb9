/*
 * cmd-run.c: `vmux run [options] -- CMD [ARG...]`: a session for one
 * command.
 *
 * Boots a session (new's flags), runs CMD in it as `vmux exec` would
 * (output streamed, stdin forwarded, the same exit statuses), then stops
 * it, or removes it with --rm. When --timeout expires the command is
 * killed, the status is TIMED_OUT with no exit code, and the session is
 * removed whatever --rm says (a sandbox that ran out of time is not kept).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

static int cmd_run_exec(struct args *);

static const struct cmd_opt cmd_run_opts[] = {
    NEW_OPTS,
    {"name", 0, "NAME", 0, "the session's name (default run-XXXXXXXX)"},
    {"rm", 0, NULL, 0, "remove the session when the command ends"},
    {"timeout", 't', "S", 0,
        "kill the command after S seconds: status TIMED_OUT, exit 124, "
        "the session removed (default 300)"},
    {"env", 'e', "K=V", 1, "set an environment variable"},
    {"cwd", 'C', "DIR", 0, "working directory in the guest"},
    {"interactive", 'i', NULL, 0, "send standard input even from a terminal"},
    {"json", 0, NULL, 0,
        "print one JSON object: session, status (COMPLETED or TIMED_OUT), "
        "exit_code (null on timeout), signal, stdout, stderr, removed"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_run_entry = {
    .name = "run",
    .post = "-- CMD [ARG...]",
    .summary = "Boot a session, run one command in it and stop it (remove "
               "it with --rm); exit with the command's status. On --timeout "
               "the status is TIMED_OUT (exit 124) and the session is "
               "removed.",
    .opts = cmd_run_opts,
    .flags = CMD_ARGV_AFTER_NAME,
    .min_args = 1,
    .max_args = -1,
    .exec = cmd_run_exec,
};

static volatile int run_interrupted;

/* Signal handler during the boot: give up and clean up. */
static void
run_signal(int sig)
{
	(void)sig;
	run_interrupted = 1;
}

/* A fresh name: run- and 8 hex digits. */
static char *
run_name(void)
{
	unsigned char b[4];
	char *name;
	FILE *f = fopen("/dev/urandom", "re");

	if (f == NULL || fread(b, 1, sizeof b, f) != sizeof b) {
		uint64_t t = mono_ms() ^ (uint64_t)getpid() << 20;
		memcpy(b, &t, sizeof b);
	}
	if (f != NULL)
		fclose(f);
	xasprintf(&name, "run-%02x%02x%02x%02x", b[0], b[1], b[2], b[3]);
	return name;
}

/* Boot, run, stop or remove. */
static int
cmd_run_exec(struct args *a)
{
	struct launch_opts o;
	struct session_record r;
	struct profile p;
	struct session_mount *mounts = NULL;
	struct args ea;
	char *cause = NULL, *home = NULL, *name, **argv;
	unsigned *allow = NULL;
	cJSON *req = NULL, *result = NULL;
	int rc, timeout_s, timed_out = 0, remove, i;

	memset(&o, 0, sizeof o);
	name = args_get(a, "name") != NULL ? xstrdup(args_get(a, "name"))
	                                   : run_name();
	/* exec's request builder wants NAME first, then the command. */
	argv = xcalloc((size_t)a->argc + 2, sizeof *argv);
	argv[0] = name;
	for (i = 0; i < a->argc; i++)
		argv[i + 1] = a->argv[i];
	ea = *a;
	ea.argc = a->argc + 1;
	ea.argv = argv;
	o.name = name;
	if (session_name_valid(name, &cause) != 0 ||
	    new_parse(a, &o, &p, &allow, &mounts, &cause) != 0 ||
	    cmd_exec_request(&ea, &timeout_s, &req, &cause) != 0) {
		rc = cli_usage_error(a->entry, "%s", cause);
		goto out;
	}
	if ((home = cli_home()) == NULL) {
		rc = EXIT_VMUX;
		goto out;
	}
	o.home = home;
	o.notice = cli_notice;
	o.interrupted = &run_interrupted;
	cli_trap_interrupts(run_signal);
	if (session_launch(&o, &r, &cause) != 0) {
		cli_error("%s", cause);
		rc = EXIT_VMUX;
		goto out;
	}
	record_free(&r);
	rc = exec_in_session(name, req, &timeout_s,
	    args_get(a, "timeout") != NULL,
	    args_has(a, "interactive") || !isatty(STDIN_FILENO), &result,
	    &timed_out);
	remove = args_has(a, "rm") || timed_out;
	if (timed_out && !cli_json())
		cli_noticef("TIMED_OUT: the command was killed after %d s; "
		            "session '%s' is removed",
		    timeout_s, name);
	free(cause);
	cause = NULL;
	if (remove
	        ? session_remove(home, name, 0, 0, NULL, &cause) != 0
	        : session_halt(home, name, "run", 0, cli_notice, &cause) < 0) {
		cli_error("%s", cause);
		if (rc == 0)
			rc = EXIT_VMUX;
	} else if (!remove)
		cli_noticef("session '%s' stopped (vmux start %s; vmux rm %s)",
		    name, name, name);
	if (cli_json()) {
		if (result == NULL)
			result = cJSON_CreateObject();
		cJSON_AddStringToObject(result, "session", name);
		cJSON_AddStringToObject(
		    result, "status", timed_out ? "TIMED_OUT" : "COMPLETED");
		if (timed_out) {
			cJSON_DeleteItemFromObject(result, "exit_code");
			cJSON_AddNullToObject(result, "exit_code");
		}
		cJSON_AddBoolToObject(result, "removed", remove);
		cli_result(result);
		result = NULL;
	}
out:
	cJSON_Delete(result);
	cJSON_Delete(req);
	free(cause);
	free(allow);
	new_mounts_free(mounts, o.nmounts);
	free(home);
	free(argv);
	free(name);
	return rc;
}
