/*
 * cmd-shells.c: `vmux shells NAME [--json]`: the shells of a session, as
 * the agent's list_shells reports them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

#define SHELLS_REQUEST_S 15

static int cmd_shells_exec(struct args *);

static const struct cmd_opt cmd_shells_opts[] = {
    {"json", 0, NULL, 0,
        "print the agent's shell records as a JSON array (times in RFC "
        "3339)"},
    SELECT_OPT,
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_shells_entry = {
    .name = "shells",
    .pre = "NAME",
    .summary = "List the shells of session NAME. Shows each one's id, "
               "state (running, stopped or closing), terminal size, start "
               "time, exit status, attached clients and command.",
    .flags = CMD_NAME_ONE | CMD_READONLY,
    .opts = cmd_shells_opts,
    .min_args = 1,
    .max_args = 1,
    .exec = cmd_shells_exec,
};

/* A string field, or def. */
static const char *
field_str(const cJSON *o, const char *key, const char *def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : def;
}

/* A number field, or def. */
static double
field_num(const cJSON *o, const char *key, double def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : def;
}

/*
 * Turn the agent's times (seconds since the epoch) into RFC 3339 strings,
 * as every time vmux shows is; null stays null.
 */
void
shells_times(cJSON *rec)
{
	static const char *keys[] = {"started_at", "ended_at"};
	const cJSON *v;
	char *s;

	for (size_t i = 0; i < nitems(keys); i++) {
		v = cJSON_GetObjectItemCaseSensitive(rec, keys[i]);
		if (!cJSON_IsNumber(v))
			continue;
		s = time_rfc3339(v->valuedouble);
		cJSON_ReplaceItemInObjectCaseSensitive(rec, keys[i],
		    s != NULL ? cJSON_CreateString(s) : cJSON_CreateNull());
		free(s);
	}
}

/* Print the table. */
static void
shells_print(const cJSON *arr)
{
	const cJSON *s;
	size_t w = 2;

	cJSON_ArrayForEach(s, arr)
	{
		size_t n = strlen(field_str(s, "shell_id", "?"));
		w = n > w ? n : w;
	}
	printf("%-*s  %-8s  %-9s  %-20s  %-10s  %7s  %s\n", (int)w, "ID",
	    "STATE", "SIZE", "STARTED", "EXIT", "CLIENTS", "COMMAND");
	cJSON_ArrayForEach(s, arr)
	{
		const cJSON *code =
		    cJSON_GetObjectItemCaseSensitive(s, "exit_code");
		const char *sig = field_str(s, "exit_signal", NULL);
		const char *started = field_str(s, "started_at", "-");
		char size[32], exitbuf[32], *cmd = agent_shell_command(s, "-");

		snprintf(size, sizeof size, "%.0fx%.0f",
		    field_num(s, "cols", 0), field_num(s, "rows", 0));
		if (!cJSON_IsNumber(code))
			snprintf(exitbuf, sizeof exitbuf, "-");
		else if (sig != NULL)
			snprintf(exitbuf, sizeof exitbuf, "%.0f (%s)",
			    code->valuedouble, sig);
		else
			snprintf(
			    exitbuf, sizeof exitbuf, "%.0f", code->valuedouble);
		printf("%-*s  %-8s  %-9s  %-20s  %-10s  %7.0f  %s\n", (int)w,
		    field_str(s, "shell_id", "?"), field_str(s, "state", "?"),
		    size, started, exitbuf, field_num(s, "clients", 0), cmd);
		free(cmd);
	}
}

/* List the shells. */
static int
cmd_shells_exec(struct args *a)
{
	struct session_record r;
	struct vsock_target t;
	cJSON *req, *reply, *arr, *s;
	char *cause = NULL;
	int rc;

	if ((rc = cli_running_session(a->argv[0], &r, &t)) != 0)
		return rc;
	req = agent_req_list_shells();
	reply = cli_agent(&t, req, SHELLS_REQUEST_S, &cause);
	record_free(&r);
	if (reply == NULL) {
		cli_error("%s", cause);
		free(cause);
		return EXIT_VMUX;
	}
	arr = cJSON_GetObjectItemCaseSensitive(reply, "shells");
	if (!cJSON_IsArray(arr)) {
		cli_error("agent's list_shells answer has no shells");
		cJSON_Delete(reply);
		return EXIT_VMUX;
	}
	cJSON_ArrayForEach(s, arr) shells_times(s);
	if (cli_json())
		cli_result(
		    cJSON_DetachItemFromObjectCaseSensitive(reply, "shells"));
	else {
		cli_json_printable(arr);
		shells_print(arr);
	}
	cJSON_Delete(reply);
	return 0;
}
