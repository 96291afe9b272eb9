/*
 * cmd-close.c: `vmux close NAME SHELL_ID...`: end shells and forget them.
 * The agent hangs up each terminal,
 * SIGKILLs what is left a second later, and tells attached clients the
 * shell exited.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

#define CLOSE_REQUEST_S 15

static int cmd_close_exec(struct args *);

static const struct cmd_opt cmd_close_opts[] = {
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_close_entry = {
    .name = "close",
    .pre = "NAME SHELL_ID...",
    .summary = "End shells of session NAME and remove them. Their "
               "terminal is hung up, what is left of them is killed a "
               "second later, and their output is gone too. Attached clients "
               "exit with the "
               "shell's status.",
    .opts = cmd_close_opts,
    .min_args = 2,
    .max_args = -1,
    .exec = cmd_close_exec,
};

/* Close each shell; 1 if any failed. */
static int
cmd_close_exec(struct args *a)
{
	struct session_record r;
	struct vsock_target t;
	cJSON *req, *reply;
	char *cause = NULL;
	int rc;

	if ((rc = cli_running_session(a->argv[0], &r, &t)) != 0)
		return rc;
	for (int i = 1; i < a->argc; i++) {
		req = cJSON_CreateObject();
		cJSON_AddStringToObject(req, "action", "close_shell");
		cJSON_AddStringToObject(req, "shell_id", a->argv[i]);
		reply = cli_agent(&t, req, CLOSE_REQUEST_S, &cause);
		if (reply == NULL) {
			cli_error("%s", cause);
			free(cause);
			cause = NULL;
			rc = 1;
		}
		cJSON_Delete(reply);
	}
	record_free(&r);
	return rc;
}
