/*
 * cmd-keys.c: `vmux send-keys NAME SHELL_ID KEY...`: type into a shell
 * without attaching to it, as tmux's send-keys does: each KEY is a key name
 * (Enter, C-c, Up, M-x, F5: keys.c) or text. With the shell's keyboard
 * taken by someone attached (TAKE), the agent refuses it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

#define KEYS_REQUEST_S 15

static int cmd_keys_exec(struct args *);

static const struct cmd_opt cmd_keys_opts[] = {
    {"literal", 'l', NULL, 0,
        "every KEY is text, sent as it is (no key names)"},
    {"json", 0, NULL, 0,
        "print {\"session\", \"shell_id\", \"bytes\"} as JSON"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_keys_entry = {
    .name = "send-keys",
    .pre = "NAME SHELL_ID KEY...",
    .summary = "Type into a shell of session NAME without attaching, as "
               "tmux's send-keys: each KEY is a key name (Enter, Tab, "
               "Escape, BSpace, Space, Up, Down, Left, Right, Home, End, "
               "PageUp, PageDown, Insert, Delete, F1-F12; C-x or ^X for "
               "Ctrl, M-x for Alt) or else text sent as it is. Refused "
               "while someone attached holds the shell's keyboard.",
    .flags = 0,
    .opts = cmd_keys_opts,
    .min_args = 3,
    .max_args = -1,
    .exec = cmd_keys_exec,
};

/* Send the keys. */
static int
cmd_keys_exec(struct args *a)
{
	struct session_record r;
	struct vsock_target t;
	cJSON *reply, *res;
	char *cause = NULL, *input;
	size_t len;
	int rc;

	if (session_name_valid(a->argv[0], &cause) != 0 ||
	    shell_id_valid(a->argv[1], &cause) != 0) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	input = keys_input(
	    a->argv + 2, (size_t)a->argc - 2, args_has(a, "literal"), &len);
	if (len == 0 || memchr(input, '\0', len) != NULL) {
		free(input);
		return cli_usage_error(a->entry, "no input to send");
	}
	if ((rc = cli_running_session(a->argv[0], &r, &t)) != 0) {
		free(input);
		return rc;
	}
	reply = cli_agent(&t, agent_req_write_shell(a->argv[1], input, len),
	    KEYS_REQUEST_S, &cause);
	record_free(&r);
	free(input);
	if (reply == NULL) {
		cli_error("%s", cause);
		free(cause);
		return EXIT_VMUX;
	}
	cJSON_Delete(reply);
	res = cJSON_CreateObject();
	cJSON_AddStringToObject(res, "session", a->argv[0]);
	cJSON_AddStringToObject(res, "shell_id", a->argv[1]);
	cJSON_AddNumberToObject(res, "bytes", (double)len);
	cli_result(res);
	return 0;
}
