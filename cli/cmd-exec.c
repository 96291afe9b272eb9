/*
 * cmd-exec.c: `vmux exec NAME -- CMD ARGS...`: run a command in the guest.
 *
 * The command travels as a JSON argv array (never re-split by a shell). Its
 * stdout and stderr are printed to ours and vmux exits with its status:
 * 124 when it timed out (as timeout(1)), 128+N when signal N killed it.
 * The transport deadline is the exec timeout plus slack, so the agent's own
 * timeout always fires first and we get its answer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "proto/proto.h"
#include "session/session.h"
#include "cli.h"

#define EXEC_TIMEOUT_DEFAULT 300
#define EXEC_TIMEOUT_MAX     86400 /* the agent's limit */
#define EXEC_CONNECT_MS      10000 /* agent should accept at once */
#define EXEC_SLACK_MS        30000 /* beyond the timeout: kill + reply */

static int cmd_exec_exec(struct args *);

static const struct cmd_opt cmd_exec_opts[] = {
    {"timeout", 't', "S", 0,
        "kill the command after S seconds, exit 124 (default 300)"},
    {"env", 'e', "K=V", 1, "set an environment variable"},
    {"cwd", 'C', "DIR", 0, "working directory in the guest"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_exec_entry = {
    .name = "exec",
    .pre = "NAME",
    .post = "-- CMD [ARG...]",
    .summary = "Run a command in session NAME. Prints its output and "
               "exits with its exit status (124 on timeout, 128+N when "
               "killed by signal N).",
    .opts = cmd_exec_opts,
    .flags = CMD_ARGV_AFTER_NAME,
    .min_args = 2,
    .max_args = -1,
    .exec = cmd_exec_exec,
};

/* Build the agent request from parsed args; 0 or -1 with a usage cause. */
int
cmd_exec_request(
    const struct args *a, int *timeout_s, cJSON **req, char **cause)
{
	const char *s = args_get(a, "timeout");
	char **env;
	cJSON *o, *argv, *envo;
	long long v = EXEC_TIMEOUT_DEFAULT;
	int i, n;

	*req = NULL;
	if (a->argc >= 1 && session_name_valid(a->argv[0], cause) != 0)
		return -1;
	if (a->argc < 2) {
		xasprintf(cause,
		    "missing command (usage: vmux exec NAME -- "
		    "CMD [ARG...])");
		return -1;
	}
	if (s != NULL &&
	    args_number("--timeout", s, 1, EXEC_TIMEOUT_MAX, &v, cause) != 0)
		return -1;
	env = args_values(a, "env", &n);
	for (i = 0; i < n; i++) {
		if (args_env_valid(env[i], cause) != 0)
			return -1;
	}
	s = args_get(a, "cwd");
	if (s != NULL && *s == '\0') {
		xasprintf(cause, "--cwd needs a directory");
		return -1;
	}

	o = cJSON_CreateObject();
	argv = cJSON_AddArrayToObject(o, "command");
	for (i = 1; i < a->argc; i++)
		cJSON_AddItemToArray(argv, cJSON_CreateString(a->argv[i]));
	cJSON_AddNumberToObject(o, "timeout_seconds", (double)v);
	if (n > 0) {
		envo = cJSON_AddObjectToObject(o, "env");
		for (i = 0; i < n; i++) {
			const char *eq = strchr(env[i], '=');
			char *key = xstrndup(env[i], (size_t)(eq - env[i]));
			/* a later --env for the same key wins */
			cJSON_DeleteItemFromObjectCaseSensitive(envo, key);
			cJSON_AddStringToObject(envo, key, eq + 1);
			free(key);
		}
	}
	if (s != NULL)
		cJSON_AddStringToObject(o, "cwd", s);
	*timeout_s = (int)v;
	*req = o;
	return 0;
}

/*
 * Write a reply's output string to fd, decoded from the raw reply so NUL
 * bytes survive (missing or not a string: nothing).
 */
static void
exec_output(const char *raw, size_t raw_len, const char *key, int fd)
{
	char *bytes;
	size_t len;

	if (agent_reply_bytes(raw, raw_len, key, &bytes, &len) != 0)
		return;
	write_all(fd, bytes, len);
	free(bytes);
}

/* Say so when the agent cut a stream at its output limit. */
static void
exec_truncated(const cJSON *reply, const char *stream)
{
	const cJSON *t, *n;
	char key[32];

	snprintf(key, sizeof key, "%s_truncated", stream);
	t = cJSON_GetObjectItemCaseSensitive(reply, key);
	snprintf(key, sizeof key, "%s_bytes", stream);
	n = cJSON_GetObjectItemCaseSensitive(reply, key);
	if (cJSON_IsTrue(t))
		cli_error("%s truncated by the agent (%.0f bytes in all)",
		    stream, cJSON_IsNumber(n) ? n->valuedouble : 0.0);
}

/* Map the agent's reply to our exit status. */
static int
exec_status(const cJSON *reply, int timeout_s)
{
	const cJSON *code =
	    cJSON_GetObjectItemCaseSensitive(reply, "exit_code");
	const cJSON *to = cJSON_GetObjectItemCaseSensitive(reply, "timed_out");
	const cJSON *sig = cJSON_GetObjectItemCaseSensitive(reply, "signal");

	if (cJSON_IsTrue(to)) {
		cli_error("command timed out after %d s", timeout_s);
		return VMUX_EXIT_TIMEOUT;
	}
	/* "signal" may be a name ("KILL"); exit_code is then 128+N anyway */
	if (cJSON_IsNumber(sig) && sig->valuedouble >= 1 &&
	    sig->valuedouble < 128)
		return 128 + (int)sig->valuedouble;
	if (!cJSON_IsNumber(code)) {
		cli_error("agent reply has no exit code");
		return 1;
	}
	if (code->valuedouble < 0 && code->valuedouble > -128)
		return 128 + (int)-code->valuedouble; /* killed by a signal */
	if (code->valuedouble >= 0 && code->valuedouble <= 255)
		return (int)code->valuedouble;
	return 255;
}

/* Run the command. */
static int
cmd_exec_exec(struct args *a)
{
	struct session_record r;
	struct vsock_target t;
	cJSON *req, *reply;
	char *cause = NULL, *raw = NULL;
	size_t raw_len = 0;
	int timeout_s, rc;
	uint64_t now;

	if (cmd_exec_request(a, &timeout_s, &req, &cause) != 0) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	if ((rc = cli_running_session(a->argv[0], &r, &t)) != 0) {
		cJSON_Delete(req);
		return rc;
	}
	now = mono_ms();
	reply = agent_call(&t, req, now + EXEC_CONNECT_MS,
	    now + (uint64_t)timeout_s * 1000 + EXEC_SLACK_MS, &raw, &raw_len,
	    &cause);
	cJSON_Delete(req);
	if (reply == NULL) {
		cli_error("%s", cause);
		free(cause);
		record_free(&r);
		return 1;
	}
	fflush(stdout);
	exec_output(raw, raw_len, "stdout", STDOUT_FILENO);
	exec_output(raw, raw_len, "stderr", STDERR_FILENO);
	free(raw);
	exec_truncated(reply, "stdout");
	exec_truncated(reply, "stderr");
	rc = exec_status(reply, timeout_s);
	cJSON_Delete(reply);
	record_free(&r);
	return rc;
}
