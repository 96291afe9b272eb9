/*
 * cmd-resize.c: `vmux resize NAME SHELL_ID COLSxROWS`: change the size of
 * a shell's terminal (tmux's resize-pane); the programs in it get SIGWINCH.
 * Attached clients that set a size of their own set it again as they
 * resize.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

#define RESIZE_REQUEST_S 15

static int cmd_resize_exec(struct args *);

static const struct cmd_opt cmd_resize_opts[] = {
    {"json", 0, NULL, 0, "print the shell's record as JSON"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_resize_entry = {
    .name = "resize",
    .pre = "NAME SHELL_ID COLSxROWS",
    .summary = "Set the size of a shell's terminal (each 1-4096); what runs "
               "in it gets SIGWINCH. Refused while someone attached holds "
               "the shell's keyboard.",
    .flags = 0,
    .opts = cmd_resize_opts,
    .min_args = 3,
    .max_args = 3,
    .exec = cmd_resize_exec,
};

/* Resize the shell. */
static int
cmd_resize_exec(struct args *a)
{
	struct session_record r;
	struct vsock_target t;
	cJSON *reply;
	char *cause = NULL;
	int rc, cols, rows;

	if (session_name_valid(a->argv[0], &cause) != 0 ||
	    shell_id_valid(a->argv[1], &cause) != 0 ||
	    args_size(a->argv[2], &cols, &rows, &cause) != 0) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	if ((rc = cli_running_session(a->argv[0], &r, &t)) != 0)
		return rc;
	reply = cli_agent(&t, agent_req_resize_shell(a->argv[1], cols, rows),
	    RESIZE_REQUEST_S, &cause);
	record_free(&r);
	if (reply == NULL) {
		cli_error("%s", cause);
		free(cause);
		return EXIT_VMUX;
	}
	shells_times(reply);
	cJSON_AddStringToObject(reply, "session", a->argv[0]);
	cli_result(reply);
	return 0;
}
