/*
 * cmd-kill.c: `vmux kill NAME SHELL_ID [-s SIGNAL]`: send a signal to what
 * runs in the foreground of a shell's terminal, like kill(1). The shell
 * itself stays; `vmux close` ends it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

#define KILL_REQUEST_S 15

static int cmd_kill_exec(struct args *);

static const struct cmd_opt cmd_kill_opts[] = {
    {"signal", 's', "SIGNAL", 0,
        "HUP, INT, QUIT, TERM (default), KILL, USR1, USR2, TSTP, CONT or "
        "WINCH, with or without SIG"},
    {"json", 0, NULL, 0,
        "print {\"session\", \"shell_id\", \"signal\"} as JSON"},
    SELECT_OPT,
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_kill_entry = {
    .name = "kill",
    .pre = "NAME SHELL_ID",
    .summary = "Send a signal to a shell's foreground job. It goes to "
               "the foreground process group of the shell's terminal "
               "(default TERM; Ctrl-C would send INT). An "
               "interactive shell at its prompt ignores TERM and INT; use "
               "-s KILL, or vmux close to end the shell.",
    .flags = CMD_NAME_ONE | CMD_FANOUT,
    .opts = cmd_kill_opts,
    .min_args = 2,
    .max_args = 2,
    .exec = cmd_kill_exec,
};

/* Signal the shell. */
static int
cmd_kill_exec(struct args *a)
{
	const char *sig = args_get(a, "signal");
	struct session_record r;
	struct vsock_target t;
	cJSON *req, *reply, *res;
	char *cause = NULL, *name;
	int rc;

	const char *known;
	int at = a->nnames > 1 ? a->nnames : 1; /* the shell's argument */

	/* usage errors are found here, not in the guest (exit 2) */
	if (shell_id_valid(a->argv[at], &cause) != 0 ||
	    (known = shell_signal_name(sig != NULL ? sig : "TERM", &cause)) ==
	        NULL) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	if (a->nnames > 1) /* a glob or -l picked several: each gets it */
		return many_sub(a, MANY_PARALLEL);
	name = xstrdup(known);
	if ((rc = cli_running_session(a->argv[0], &r, &t)) != 0) {
		free(name);
		return rc;
	}
	req = agent_req_signal_shell(a->argv[1], name);
	reply = cli_agent(&t, req, KILL_REQUEST_S, &cause);
	record_free(&r);
	if (reply == NULL) {
		cli_error("%s", cause);
		free(cause);
		free(name);
		return EXIT_VMUX;
	}
	cJSON_Delete(reply);
	res = cJSON_CreateObject();
	cJSON_AddStringToObject(res, "session", a->argv[0]);
	cJSON_AddStringToObject(res, "shell_id", a->argv[1]);
	cJSON_AddStringToObject(
	    res, "signal", strncmp(name, "SIG", 3) == 0 ? name + 3 : name);
	cli_result(res);
	free(name);
	return 0;
}
