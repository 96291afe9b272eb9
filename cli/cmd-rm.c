/*
 * cmd-rm.c: `vmux rm [-f] NAME...`: stop sessions and remove their state.
 *
 * Without -f the guest is asked to power off first (then QMP quit, SIGTERM,
 * SIGKILL); -f skips the polite steps and ignores names that do not exist,
 * like rm -f. Stopped or crashed sessions are removed the same way. The
 * workspace vmux made goes with the session unless --keep-workspace; an
 * image given to `vmux new --workspace` is never deleted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

static int cmd_rm_exec(struct args *);

static const struct cmd_opt cmd_rm_opts[] = {
    {"force", 'f', NULL, 0,
        "kill at once; no error if the session does not exist"},
    {"keep-workspace", 0, NULL, 0,
        "keep the workspace image: it is moved to "
        "$VMUX_HOME/workspaces/NAME.img (reuse it with new --workspace)"},
    {"json", 0, NULL, 0,
        "print {\"removed\": NAME} (a list of names for several) as "
        "JSON"},
    {"yes", 'y', NULL, 0,
        "remove what a glob or -l picked without asking (needed when "
        "there is no terminal to ask on)"},
    SELECT_OPT,
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_rm_entry = {
    .name = "rm",
    .pre = "NAME...",
    .summary = "Stop sessions and remove their state and workspace. The "
               "guest is asked to power off, then QEMU gets QMP quit, "
               "SIGTERM and SIGKILL until it is gone; the bridge is ended "
               "too. Waits while another vmux command works on a session.",
    .flags = CMD_NAMES | CMD_ENDS | CMD_REMOVES,
    .opts = cmd_rm_opts,
    .min_args = 1,
    .max_args = -1,
    .exec = cmd_rm_exec,
};

/*
 * Names a glob or -l picked were not typed: ask on the terminal before
 * removing them (and their workspaces), or, with none, want --yes. 0 to
 * go on, else the exit status.
 */
static int
rm_confirm(struct args *a)
{
	char line[16], *list = NULL, *t;

	if (!a->selected || args_has(a, "yes") || a->argc == 0)
		return 0; /* typed, confirmed, or nothing picked (rm -f) */
	for (int i = 0; i < a->argc; i++) {
		xasprintf(
		    &t, "%s%s%s", list ? list : "", i ? ", " : "", a->argv[i]);
		free(list);
		list = t;
	}
	if (!isatty(STDIN_FILENO) || !isatty(STDERR_FILENO)) {
		int rc = cli_usage_error(a->entry,
		    "a pattern picked %d session%s (%s): add --yes to "
		    "remove %s and %s workspace%s",
		    a->argc, a->argc == 1 ? "" : "s", list,
		    a->argc == 1 ? "it" : "them",
		    a->argc == 1 ? "its" : "their", a->argc == 1 ? "" : "s");
		free(list);
		return rc;
	}
	fprintf(stderr, "remove %d session%s and %s workspace%s: %s? [y/N] ",
	    a->argc, a->argc == 1 ? "" : "s", a->argc == 1 ? "its" : "their",
	    a->argc == 1 ? "" : "s", list);
	free(list);
	if (fgets(line, sizeof line, stdin) == NULL ||
	    (line[0] != 'y' && line[0] != 'Y')) {
		cli_error("nothing removed");
		return EXIT_VMUX;
	}
	return 0;
}

/* Remove each named session; EXIT_VMUX if any failed. */
static int
cmd_rm_exec(struct args *a)
{
	char *home, *cause = NULL, *kept;
	int i, rc = 0, force = args_has(a, "force");
	int keep = args_has(a, "keep-workspace");
	int many = a->argc > 1 || a->selected;
	cJSON *removed, *res, *results;

	if ((rc = rm_confirm(a)) != 0)
		return rc;
	removed = cJSON_CreateArray();

	for (i = 0; i < a->argc; i++) {
		if (session_name_valid(a->argv[i], &cause) != 0) {
			rc = cli_usage_error(a->entry, "%s", cause);
			free(cause);
			cJSON_Delete(removed);
			return rc;
		}
	}
	home = cli_home();
	if (home == NULL) {
		cJSON_Delete(removed);
		return EXIT_VMUX;
	}
	results = cJSON_CreateArray();
	for (i = 0; i < a->argc; i++) {
		cJSON *item = cJSON_CreateObject();
		char *msg;

		kept = NULL;
		cJSON_AddStringToObject(item, "name", a->argv[i]);
		if (session_remove(
		        home, a->argv[i], force, keep, &kept, &cause) != 0) {
			msg = cli_item_error(many, "%s", cause);
			cJSON_AddBoolToObject(item, "removed", 0);
			cJSON_AddStringToObject(item, "error", msg);
			free(msg);
			free(cause);
			cause = NULL;
			rc = EXIT_VMUX;
		} else {
			cJSON_AddItemToArray(
			    removed, cJSON_CreateString(a->argv[i]));
			cJSON_AddBoolToObject(item, "removed", 1);
			if (many && !cli_json()) /* say each, as docker rm */
				printf("removed %s\n", a->argv[i]);
		}
		if (kept != NULL) {
			cli_noticef(
			    "workspace of '%s' kept as %s", a->argv[i], kept);
			cJSON_AddStringToObject(item, "workspace_kept", kept);
		}
		cJSON_AddItemToArray(results, item);
		free(kept);
	}
	free(home);
	res = cJSON_CreateObject();
	if (a->argc == 1 && cJSON_GetArraySize(removed) == 1)
		cJSON_AddItemToObject(
		    res, "removed", cJSON_DetachItemFromArray(removed, 0));
	else
		cJSON_AddItemToObject(
		    res, "removed", cJSON_Duplicate(removed, 1));
	if (many)
		cJSON_AddItemToObject(res, "results", results);
	else
		cJSON_Delete(results);
	cJSON_Delete(removed);
	cli_result(res);
	return rc;
}
