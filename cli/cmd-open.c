/*
 * cmd-open.c: `vmux open NAME [--id ID] [-- COMMAND...]`: start a shell in
 * session NAME and leave it running, not attached (tmux's new-window -d).
 * It is then driven with send-keys and capture, or attached with vmux
 * shell --id.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

#define OPEN_REQUEST_S 15

static int cmd_open_exec(struct args *);

static const struct cmd_opt cmd_open_opts[] = {
    {"id", 'i', "ID", 0,
        "the shell's id (letters, digits, '.', '_', '-'; default shell-N)"},
    {"size", 's', "COLSxROWS", 0, "its terminal's size (default 80x24)"},
    {"cwd", 'C', "DIR", 0, "its working directory"},
    {"user", 'u', "USER", 0,
        "its guest user: a name, uid or uid:gid (default: the image's "
        "User, else root)"},
    {"env", 'e', "K=V", 1, "set an environment variable"},
    {"json", 0, NULL, 0, "print the shell's record as JSON"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_open_entry = {
    .name = "open",
    .pre = "NAME",
    .post = "[-- COMMAND [ARG...]]",
    .summary = "Start a shell (or COMMAND on a terminal) in session NAME and "
               "leave it running unattached: print its id. Drive it with "
               "send-keys and capture, attach with vmux shell --id.",
    .flags = CMD_ARGV_AFTER_NAME,
    .opts = cmd_open_opts,
    .min_args = 1,
    .max_args = -1,
    .exec = cmd_open_exec,
};

/* Build the open_shell request; NULL with *cause on a bad option. */
static cJSON *
open_request(const struct args *a, char **cause)
{
	const char *id = args_get(a, "id"), *size = args_get(a, "size");
	const char *cwd = args_get(a, "cwd");
	char **env;
	int cols = 0, rows = 0, n, i;
	cJSON *req, *o;

	if (id != NULL && shell_id_valid(id, cause) != 0)
		return NULL;
	if (size != NULL && args_size(size, &cols, &rows, cause) != 0)
		return NULL;
	if (cwd != NULL && *cwd == '\0') {
		xasprintf(cause, "--cwd needs a directory"); /* as exec says */
		return NULL;
	}
	env = args_values(a, "env", &n);
	for (i = 0; i < n; i++) {
		if (args_env_valid(env[i], cause) != 0)
			return NULL;
	}
	req = agent_req_open_shell(id, cols, rows);
	if (cwd != NULL)
		cJSON_AddStringToObject(req, "cwd", cwd);
	if (args_get(a, "user") != NULL)
		cJSON_AddStringToObject(req, "user", args_get(a, "user"));
	if (n > 0)
		args_env_add(cJSON_AddObjectToObject(req, "env"), env, n);
	if (a->argc > 1) {
		o = cJSON_AddArrayToObject(req, "command");
		for (i = 1; i < a->argc; i++)
			cJSON_AddItemToArray(o, cJSON_CreateString(a->argv[i]));
	}
	return req;
}

/* Open the shell. */
static int
cmd_open_exec(struct args *a)
{
	struct session_record r;
	struct vsock_target t;
	cJSON *req, *reply;
	const cJSON *id;
	char *cause = NULL;
	int rc;

	if (session_name_valid(a->argv[0], &cause) != 0 ||
	    (req = open_request(a, &cause)) == NULL) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	if ((rc = cli_running_session(a->argv[0], &r, &t)) != 0) {
		cJSON_Delete(req);
		return rc;
	}
	reply = cli_agent(&t, req, OPEN_REQUEST_S, &cause);
	record_free(&r);
	if (reply == NULL) {
		cli_error("%s", cause);
		free(cause);
		return EXIT_VMUX;
	}
	id = cJSON_GetObjectItemCaseSensitive(reply, "shell_id");
	if (!cli_json() && cJSON_IsString(id))
		printf("%s\n", id->valuestring);
	shells_times(reply);
	cJSON_AddStringToObject(reply, "session", a->argv[0]);
	cli_result(reply);
	return 0;
}
