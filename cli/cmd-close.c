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
    {"json", 0, NULL, 0,
        "print the closed shells with their exit status as JSON"},
    SELECT_OPT,
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
    .flags = CMD_NAME_ONE | CMD_FANOUT,
    .opts = cmd_close_opts,
    .min_args = 2,
    .max_args = -1,
    .exec = cmd_close_exec,
};

/* What `close --json` says about one closed shell (from its record). */
static cJSON *
close_json(cJSON *rec)
{
	static const char *keys[] = {
	    "shell_id", "state", "exit_code", "exit_signal", "ended_at"};
	cJSON *o = cJSON_CreateObject(), *v;

	shells_times(rec);
	for (size_t i = 0; i < nitems(keys); i++) {
		v = cJSON_DetachItemFromObjectCaseSensitive(rec, keys[i]);
		if (v != NULL)
			cJSON_AddItemToObject(o, keys[i], v);
		else if (strcmp(keys[i], "exit_signal") != 0)
			cJSON_AddNullToObject(o, keys[i]);
	}
	return o;
}

/* Close each shell; EXIT_VMUX if any failed. */
static int
cmd_close_exec(struct args *a)
{
	struct session_record r;
	struct vsock_target t;
	cJSON *req, *reply, *res, *closed, *failed;
	int many = a->argc > 2;
	char *cause = NULL;
	int rc, at = a->nnames > 1 ? a->nnames : 1; /* the shells' arguments */

	for (int i = at; i < a->argc; i++) {
		if (shell_id_valid(a->argv[i], &cause) != 0) {
			rc = cli_usage_error(a->entry, "%s", cause);
			free(cause);
			return rc;
		}
	}
	if (a->nnames > 1) /* a glob or -l picked several: each closes them */
		return many_sub(a, MANY_PARALLEL);
	if ((rc = cli_running_session(a->argv[0], &r, &t)) != 0)
		return rc;
	res = cJSON_CreateObject();
	cJSON_AddStringToObject(res, "session", a->argv[0]);
	closed = cJSON_AddArrayToObject(res, "closed");
	failed = cJSON_CreateArray();
	for (int i = 1; i < a->argc; i++) {
		req = agent_req_close_shell(a->argv[i]);
		reply = cli_agent(&t, req, CLOSE_REQUEST_S, &cause);
		if (reply == NULL) {
			char *msg = cli_item_error(many, "%s", cause);
			cJSON *o = cJSON_CreateObject();

			cJSON_AddStringToObject(o, "shell_id", a->argv[i]);
			cJSON_AddStringToObject(o, "error", msg);
			cJSON_AddItemToArray(failed, o);
			free(msg);
			free(cause);
			cause = NULL;
			rc = EXIT_VMUX;
		} else {
			cJSON_AddItemToArray(closed, close_json(reply));
			if (many && !cli_json())
				printf("closed %s\n", a->argv[i]);
		}
		cJSON_Delete(reply);
	}
	record_free(&r);
	if (many) /* each shell's fate, not one error hiding the rest */
		cJSON_AddItemToObject(res, "failed", failed);
	else
		cJSON_Delete(failed);
	cli_result(res);
	return rc;
}
