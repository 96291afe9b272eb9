/*
 * cmd-exec.c: `vmux exec NAME -- CMD ARGS...`: run a command in the guest.
 *
 * The command travels as a JSON argv array (never re-split by a shell) in
 * an exec_stream request; its output streams to our stdout and stderr byte
 * for byte as it is produced, our stdin goes to it (exec-stream.c), and
 * vmux exits with its status, Docker's way: 124 when --timeout expired,
 * 126 when it could not run, 127 when it was not found, 128+N when signal
 * N killed it, 125 for vmux's own errors. The agent enforces the timeout.
 */
#include <errno.h>
#include <signal.h>
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

/* --max-output and --json-lines, for exec_in_session. */
static size_t exec_max_output = EXEC_CAPTURE_MAX;
static int exec_json_lines;

static const struct cmd_opt cmd_exec_opts[] = {
    {"timeout", 't', "S", 0,
        "kill the command after S seconds, exit 124 (default 300)"},
    {"env", 'e', "K=V", 1, "set an environment variable"},
    {"cwd", 'C', "DIR", 0, "working directory in the guest"},
    {"user", 'u', "USER", 0,
        "run as this guest user: a name, uid or uid:gid (default: the "
        "image's User, else root)"},
    {"interactive", 'i', NULL, 0,
        "send standard input to the command even from a terminal (it is "
        "sent whenever it is not one)"},
    {"json", 0, NULL, 0,
        "keep the output and print one JSON object at the end: exit_code, "
        "signal, timed_out, stdout, stderr (*_base64 when not UTF-8; at "
        "most 16 MiB each (--max-output), past it the head and the tail "
        "around a notice of the bytes left out, with *_truncated and "
        "*_bytes), duration_ms"},
    {"max-output", 0, "BYTES", 0,
        "with --json: keep at most BYTES of each stream, head and tail "
        "(1K to 16M; default 16M)"},
    {"json-lines", 0, NULL, 0,
        "with --json: print each piece of output as it comes as one JSON "
        "line, {\"stdout\": TEXT} or {\"stderr\": TEXT} (*_base64 when "
        "not UTF-8), then the result object as the last line"},
    SELECT_OPT,
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_exec_entry = {
    .name = "exec",
    .pre = "NAME",
    .post = "-- CMD [ARG...]",
    .summary = "Run a command in session NAME. Its output streams as it "
               "is produced, bytes exact; standard input is sent when it "
               "is not a terminal (or with -i). Exits with its status "
               "(124 on timeout, 126 cannot run, 127 not found, 128+N "
               "killed by signal N, 125 vmux's own error).",
    .opts = cmd_exec_opts,
    .flags = CMD_ARGV_AFTER_NAME | CMD_NAME_ONE | CMD_FANOUT | CMD_STDIN,
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
	cJSON *o, *argv;
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
	if (*a->argv[1] == '\0') {
		xasprintf(cause,
		    "empty command name (usage: vmux exec NAME -- "
		    "CMD [ARG...])");
		return -1;
	}
	if (s != NULL &&
	    option_number("--timeout", s, 1, EXEC_TIMEOUT_MAX, &v, cause) != 0)
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
	if (n > 0)
		args_env_add(cJSON_AddObjectToObject(o, "env"), env, n);
	if (s != NULL)
		cJSON_AddStringToObject(o, "cwd", s);
	if ((s = args_get(a, "user")) != NULL)
		cJSON_AddStringToObject(o, "user", s);
	*timeout_s = (int)v;
	*req = o;
	return 0;
}

/* Our exit status for a finished run (Docker's convention). */
static int
exec_status(const struct exec_outcome *o)
{
	if (o->timed_out)
		return EXIT_TIMEOUT;
	if (o->sig > 0 && o->sig < 128)
		return 128 + o->sig;
	if (o->code >= 0 && o->code <= 255)
		return o->code;
	return 255;
}

/*
 * Send the exec_stream request on sock and read the answer line: 0 once
 * the command runs (*rest holds what followed the line), else the status
 * to exit with, the problem said: the agent's 127 (not found) or 126
 * (cannot run) when it gives one, 125 for anything else.
 */
static int
exec_stream_start(
    int sock, const cJSON *req, uint8_t **rest, size_t *rest_len, char **cause)
{
	const cJSON *err, *code;
	char *buf, *nl;
	ssize_t used;
	size_t len;
	cJSON *o;
	int rc = EXIT_VMUX;

	*rest = NULL;
	*rest_len = 0;
	if (agent_send_request(sock, req, mono_ms() + EXEC_CONNECT_MS, cause) !=
	    0)
		return EXIT_VMUX;
	used =
	    agent_read_reply(sock, mono_ms() + EXEC_CONNECT_MS + EXEC_SLACK_MS,
	        1, VMUX_MAX_REQUEST, &buf, cause);
	if (used < 0)
		return EXIT_VMUX;
	nl = memchr(buf, '\n', (size_t)used);
	len = nl != NULL ? (size_t)(nl - buf) : (size_t)used;
	o = cJSON_ParseWithLength(buf, len);
	err = cJSON_GetObjectItemCaseSensitive(o, "error");
	code = cJSON_GetObjectItemCaseSensitive(o, "exit_code");
	if (o == NULL || !cJSON_IsObject(o))
		xasprintf(cause, "agent returned invalid JSON");
	else if (cJSON_IsString(err)) {
		xasprintf(cause, "%s", err->valuestring);
		if (cJSON_IsNumber(code) &&
		    (code->valuedouble == EXIT_NOT_FOUND ||
		        code->valuedouble == EXIT_CANNOT_RUN))
			rc = (int)code->valuedouble;
	} else {
		rc = 0;
		if (nl != NULL && (size_t)used > len + 1) {
			*rest_len = (size_t)used - len - 1;
			*rest = xmalloc(*rest_len);
			memcpy(*rest, nl + 1, *rest_len);
		}
	}
	cJSON_Delete(o);
	free(buf);
	return rc;
}

/*
 * Bytes held by r's writable host mounts, or -1 when r has no quota (seed
 * 002's workspace quota: the disk image has its own size as its limit).
 */
static long long
exec_quota_usage(const struct session_record *r)
{
	long long used = 0;
	size_t i;
	int any = 0;

	if (r->quota_mb <= 0)
		return -1;
	for (i = 0; i < r->nmounts; i++) {
		if (!r->mounts[i].ro) {
			used += mount_usage_bytes(r->mounts[i].host);
			any = 1;
		}
	}
	return any ? used : -1;
}

/* Is r over its quota? Says so ("before" or "after" execution) if it is. */
static int
exec_quota_over(const struct session_record *r, const char *when)
{
	long long used = exec_quota_usage(r);

	if (used < 0 || used <= r->quota_mb * 1024 * 1024)
		return 0;
	cli_error("workspace quota exceeded %s execution: %.1f MiB used of "
	          "%lld MiB in the writable mounts",
	    when, (double)used / 1048576, (long long)r->quota_mb);
	return 1;
}

/*
 * Run req (an exec_stream request from cmd_exec_request) in session name,
 * its timeout capped by the session's profile (*timeout_s is updated; a
 * cap on a timeout the user gave is said):
 * output as it comes, our stdin forwarded when forward. Under --json the
 * captured result is returned in *result (caller owns it) rather than
 * printed. The exit status to use (Docker's convention); *timed_out says
 * whether the command's timeout expired.
 */
int
exec_in_session(const char *name, cJSON *req, int *timeout_s, int given,
    int forward, cJSON **result, int *timed_out)
{
	int clamped = 0;
	struct session_record r;
	struct vsock_target t;
	struct exec_outcome o;
	char *cause = NULL;
	uint8_t *rest = NULL;
	size_t rest_len = 0;
	int rc, sock;
	uint64_t started;

	*result = NULL;
	*timed_out = 0;
	if ((rc = cli_running_session(name, &r, &t)) != 0)
		return rc;
	/* The session's profile caps the timeout; a cap the user hit is said.
	 */
	if (r.max_timeout_s > 0 && *timeout_s > r.max_timeout_s) {
		if (given) {
			cli_noticef("--timeout %d clamped to %d s, the most "
			            "profile '%s' allows",
			    *timeout_s, r.max_timeout_s,
			    r.profile != NULL ? r.profile : "?");
			clamped = r.max_timeout_s;
		}
		*timeout_s = r.max_timeout_s;
		cJSON_ReplaceItemInObject(
		    req, "timeout_seconds", cJSON_CreateNumber(*timeout_s));
	}
	if (exec_quota_over(&r, "before")) {
		record_free(&r);
		return EXIT_VMUX;
	}
	cJSON_AddStringToObject(req, "action", "exec_stream");
	started = mono_ms();
	sock = transport_connect(
	    &t, VMUX_AGENT_PORT, mono_ms() + EXEC_CONNECT_MS, &cause);
	rc = sock < 0 ? EXIT_VMUX
	              : exec_stream_start(sock, req, &rest, &rest_len, &cause);
	if (rc != 0) {
		cli_error("%s", cause);
		free(cause);
		if (sock >= 0)
			close(sock);
		record_free(&r);
		return rc;
	}

	memset(&o, 0, sizeof o);
	o.capture = cli_json();
	o.lines = o.capture && exec_json_lines;
	headtail_init(&o.out, exec_max_output);
	headtail_init(&o.err, exec_max_output);
	fflush(stdout);
	rc = exec_stream_run(sock, rest, rest_len, forward, &o, &cause);
	free(rest);
	if (rc != 0 && o.broken_pipe) {
		free(cause); /* quiet, as SIGPIPE is for any tool */
		rc = 128 + SIGPIPE;
	} else if (rc != 0) {
		cli_error("%s", cause);
		free(cause);
		rc = EXIT_VMUX;
	} else {
		rc = exec_status(&o);
		o.duration_ms = mono_ms() - started;
		*timed_out = o.timed_out;
		if (o.capture)
			*result = exec_capture_json(&o);
		if (*result != NULL && clamped > 0)
			cJSON_AddNumberToObject(
			    *result, "timeout_clamped_to", clamped);
		if (exec_quota_over(&r, "after"))
			rc = EXIT_VMUX;
	}
	record_free(&r);
	headtail_free(&o.out);
	headtail_free(&o.err);
	return rc;
}

/* --max-output BYTES and --json-lines (both only with --json); 0 or -1
 * with *cause. */
static int
exec_output_opts(const struct args *a, char **cause)
{
	const char *s = args_get(a, "max-output");
	unsigned long long v, mult = 1;
	char *end;

	if ((s != NULL || args_has(a, "json-lines")) && !cli_json()) {
		xasprintf(cause, "--%s needs --json",
		    s != NULL ? "max-output" : "json-lines");
		return -1;
	}
	exec_json_lines = args_has(a, "json-lines");
	if (exec_json_lines)
		cli_json_compact();
	if (s == NULL)
		return 0;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end == 'K' || *end == 'k')
		mult = 1024, end++;
	else if (*end == 'M' || *end == 'm')
		mult = 1024 * 1024, end++;
	if (errno != 0 || end == s || *end != '\0' || *s == '-' ||
	    v > EXEC_CAPTURE_MAX || v * mult < 1024 ||
	    v * mult > EXEC_CAPTURE_MAX) {
		xasprintf(cause,
		    "--max-output %s: give bytes from 1K to 16M (1024, 64K, "
		    "1M)",
		    s);
		return -1;
	}
	exec_max_output = (size_t)(v * mult);
	return 0;
}

/* vmux exec: build the request from the flags and run it. */
static int
cmd_exec_exec(struct args *a)
{
	cJSON *req, *result;
	char *cause = NULL;
	int timeout_s, rc, timed_out, skip = a->nnames > 1 ? a->nnames - 1 : 0;
	struct args one = *a;

	/* whatever ends the run, --json-lines' last line is its document */
	if (args_has(a, "json-lines"))
		cli_json_compact();
	/* checked as for one session: the last name, then the command */
	one.argv += skip;
	one.argc -= skip;
	if (cmd_exec_request(&one, &timeout_s, &req, &cause) != 0) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	if (exec_output_opts(a, &cause) != 0) {
		cJSON_Delete(req);
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	if (a->nnames > 1) { /* a glob or -l picked several: each runs it */
		cJSON_Delete(req);
		return exec_many(a);
	}
	rc = exec_in_session(a->argv[0], req, &timeout_s,
	    args_get(a, "timeout") != NULL,
	    args_has(a, "interactive") || !isatty(STDIN_FILENO), &result,
	    &timed_out);
	cJSON_Delete(req);
	/* Under --json the result says timed_out and keeps what was caught. */
	if (timed_out && !cli_json())
		cli_error("command timed out after %d s", timeout_s);
	if (result != NULL)
		cli_result(result);
	return rc;
}
