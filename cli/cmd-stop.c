/*
 * cmd-stop.c: `vmux stop NAME...`: power sessions off, keeping them.
 *
 * The guest is asked to power off (vmux-init ends every process, syncs and
 * unmounts the workspace); if it has not within --timeout seconds QEMU is
 * ended and the user is told. The record, workspace and logs stay, so
 * `vmux start` boots the same session again.
 */
#include <stdlib.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

static int cmd_stop_exec(struct args *);

static const struct cmd_opt cmd_stop_opts[] = {
    {"timeout", 't', "S", 0,
        "seconds the guest gets to power off before QEMU is ended "
        "(default 8)"},
    {"json", 0, NULL, 0,
        "print {\"stopped\": NAME, \"forced\": BOOL} (a list for several)"},
    SELECT_OPT,
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_stop_entry = {
    .name = "stop",
    .pre = "NAME...",
    .summary = "Power sessions off and keep them: record, workspace and "
               "logs stay for vmux start. The guest syncs and unmounts its "
               "workspace; one that does not power off in time is ended, "
               "and vmux says so. Stopping a stopped session does nothing.",
    .flags = CMD_NAMES | CMD_ENDS,
    .opts = cmd_stop_opts,
    .min_args = 1,
    .max_args = -1,
    .exec = cmd_stop_exec,
};

/* Stop each named session; EXIT_VMUX if any failed. */
static int
cmd_stop_exec(struct args *a)
{
	const char *t = args_get(a, "timeout");
	cJSON *arr = cJSON_CreateArray(), *o;
	char *home, *cause = NULL;
	long long secs = 0;
	int i, rc = 0, got;

	if (t != NULL &&
	    option_number("--timeout", t, 1, 3600, &secs, &cause) != 0) {
		rc = cli_usage_error(a->entry, "%s", cause);
		goto out;
	}
	for (i = 0; i < a->argc; i++) {
		if (session_name_valid(a->argv[i], &cause) != 0) {
			rc = cli_usage_error(a->entry, "%s", cause);
			goto out;
		}
	}
	if ((home = cli_home()) == NULL) {
		rc = EXIT_VMUX;
		goto out;
	}
	for (i = 0; i < a->argc; i++) {
		char *msg;

		got = session_halt(home, a->argv[i], "user", (int)secs * 1000,
		    cli_notice, &cause);
		o = cJSON_CreateObject();
		if (got < 0) {
			msg = cli_item_error(a->argc > 1, "%s", cause);
			free(cause);
			cause = NULL;
			rc = EXIT_VMUX;
			if (a->argc > 1) { /* each name gets its result */
				cJSON_AddStringToObject(o, "name", a->argv[i]);
				cJSON_AddStringToObject(o, "error", msg);
				cJSON_AddItemToArray(arr, o);
			} else
				cJSON_Delete(o);
			free(msg);
			continue;
		}
		if (a->argc > 1 || a->selected) {
			cJSON_AddStringToObject(o, "name", a->argv[i]);
			if (!cli_json()) /* say each, as docker stop */
				printf("stopped %s%s\n", a->argv[i],
				    got == 1 ? " (forced)" : "");
		}
		cJSON_AddStringToObject(o, "stopped", a->argv[i]);
		cJSON_AddBoolToObject(o, "forced", got == 1);
		cJSON_AddItemToArray(arr, o);
	}
	free(home);
	if (a->argc == 1 && cJSON_GetArraySize(arr) == 1)
		cli_result(cJSON_DetachItemFromArray(arr, 0));
	else if (cJSON_GetArraySize(arr) > 0)
		cli_result(cJSON_Duplicate(arr, 1));
out:
	free(cause);
	cJSON_Delete(arr);
	return rc;
}
