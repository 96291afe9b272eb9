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

/* Stop one session (arg: the guest's time to power off, ms). */
static int
stop_one(const char *home, const char *name, cJSON *o, const char **note,
    void *arg, char **cause)
{
	int got =
	    session_halt(home, name, "user", *(int *)arg, cli_notice, cause);

	if (got < 0)
		return -1;
	*note = got == 1 ? " (forced)" : "";
	cJSON_AddBoolToObject(o, "forced", got == 1);
	return 0;
}

/* Stop each named session; EXIT_VMUX if any failed. */
static int
cmd_stop_exec(struct args *a)
{
	const char *t = args_get(a, "timeout");
	char *cause = NULL;
	long long secs = 0;
	int i, ms, rc;

	if (t != NULL &&
	    option_number("--timeout", t, 1, 3600, &secs, &cause) != 0)
		goto usage;
	for (i = 0; i < a->argc; i++)
		if (session_name_valid(a->argv[i], &cause) != 0)
			goto usage;
	ms = (int)secs * 1000;
	return cli_each_name(a, "stopped", stop_one, &ms);
usage:
	rc = cli_usage_error(a->entry, "%s", cause);
	free(cause);
	return rc;
}
