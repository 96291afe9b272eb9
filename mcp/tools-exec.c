/*
 * tools-exec.c: the exec tool: a command's output cut head and tail, its
 * progress as it runs.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "mcp.h"
#include "tools-int.h"

/* ---- exec ---- */

/* What exec keeps while it runs: output not yet sent as progress. */
struct exec_scratch {
	char *pending;
	size_t len;
};

static void
exec_scratch_free(void *p)
{
	struct exec_scratch *x = p;

	if (x != NULL)
		free(x->pending);
	free(x);
}

/* A --json-lines piece of output: gathered, sent as progress now and
 * then (its last PROGRESS_TEXT_MAX bytes). The last line is the result. */
static void
exec_line(struct mcp_job *j, const char *line, size_t len)
{
	struct mcp_call *c = j->data;
	struct exec_scratch *x = c->scratch;
	cJSON *o = cJSON_ParseWithLength(line, len);
	const cJSON *v;
	char *safe;

	if (o == NULL || c->progress == NULL) {
		cJSON_Delete(o);
		return;
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "stdout");
	if (!cJSON_IsString(v))
		v = cJSON_GetObjectItemCaseSensitive(o, "stderr");
	if (cJSON_IsString(v) && cJSON_GetArraySize(o) == 1) {
		size_t n = strlen(v->valuestring);

		x->pending = xrealloc(x->pending, x->len + n + 1);
		memcpy(x->pending + x->len, v->valuestring, n + 1);
		x->len += n;
		if (x->len > PROGRESS_TEXT_MAX) {
			memmove(x->pending,
			    x->pending + x->len - PROGRESS_TEXT_MAX,
			    PROGRESS_TEXT_MAX + 1);
			x->len = PROGRESS_TEXT_MAX;
		}
		uint64_t before = c->progress_n;
		/* parsed JSON: valid UTF-8 already; a cut above may split a
		 * character, which printable mends */
		safe = str_printable(x->pending, STR_KEEP_NL);
		mcp_call_progress(c, safe);
		free(safe);
		if (c->progress_n != before)
			x->len = 0;
	}
	cJSON_Delete(o);
}

/* exec's readable text: status, then the streams. */
static char *
exec_text(const cJSON *o)
{
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(o, "exit_code");
	const cJSON *out = cJSON_GetObjectItemCaseSensitive(o, "stdout");
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(o, "stderr");
	char status[32], *text;

	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "timed_out")))
		snprintf(status, sizeof status, "timed out");
	else if (cJSON_IsNumber(code))
		snprintf(status, sizeof status, "exit %d", code->valueint);
	else
		snprintf(status, sizeof status, "exit non-zero");
	xasprintf(&text, "%s%s%s%s%s", status,
	    cJSON_IsString(out) && *out->valuestring ? "\n--- stdout\n" : "",
	    cJSON_IsString(out) ? out->valuestring : "",
	    cJSON_IsString(err) && *err->valuestring ? "\n--- stderr\n" : "",
	    cJSON_IsString(err) ? err->valuestring : "");
	return text;
}

static void
finish_exec(struct mcp_call *c)
{
	struct mcp_job *j = c->job;
	char *cause = NULL, *text;
	cJSON *o;
	const cJSON *err;

	/* the result is the last line (the lines before went as they came;
	 * one without its newline is still in out) */
	if (j->out_len > 0)
		o = cJSON_ParseWithLength(j->out, j->out_len);
	else
		o = j->last_line != NULL
		    ? cJSON_ParseWithLength(j->last_line, j->last_len)
		    : NULL;
	err = cJSON_GetObjectItemCaseSensitive(o, "error");
	if (o == NULL || cJSON_IsString(err) ||
	    !cJSON_HasObjectItem(o, "timed_out")) {
		/* vmux's own error: the document is its whole output (an
		 * error found before --json-lines was read is printed whole) */
		if (cJSON_IsString(err))
			xasprintf(&cause, "%s", err->valuestring);
		cJSON_Delete(o);
		if (cause == NULL && (o = call_json(c, &cause)) != NULL) {
			cJSON_Delete(o);
			xasprintf(&cause, "vmux exec gave no result");
		}
		mcp_call_fail(c, "%s", cause);
		free(cause);
		return;
	}
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "timed_out"))) {
		text = exec_text(o);
		cJSON_Delete(o);
		mcp_call_fail(
		    c, "the command timed out and was killed; %s", text);
		free(text);
		return;
	}
	text = exec_text(o);
	mcp_call_ok(c, o, text);
	free(text);
}

int
t_exec(struct mcp_call *c, const cJSON *args, char **cause)
{
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(args, "command"),
	            *w;
	const char *name, *stdin_s, *cwd;
	long long timeout, max;
	struct argv_b a = {0};

	if (arg_session(c, args, &name, cause) != 0 ||
	    arg_str(args, "stdin", 0, &stdin_s, cause) != 0 ||
	    arg_str(args, "cwd", 0, &cwd, cause) != 0 ||
	    arg_int(args, "timeout_s", 1, 86400, 0, &timeout, cause) != 0 ||
	    arg_int(args, "max_output_bytes", 1024, EXEC_OUTPUT_MAX,
	        EXEC_OUTPUT_DEFAULT, &max, cause) != 0)
		return -1;
	if (!(cJSON_IsString(cmd) && *cmd->valuestring) &&
	    !(cJSON_IsArray(cmd) && cJSON_GetArraySize(cmd) > 0)) {
		xasprintf(cause,
		    "argument \"command\" must be a shell line (a "
		    "string) or an argv (a list of strings)");
		return -1;
	}
	{
		char *printed = cJSON_PrintUnformatted(cmd);
		size_t n = strlen(printed);

		free(printed);
		if (n > MCP_ARG_MAX) {
			xasprintf(cause,
			    "the command is at most %d bytes: write a longer "
			    "script with file_write and run that",
			    MCP_ARG_MAX);
			return -1;
		}
	}
	av_add(&a, "vmux");
	av_add(&a, "exec");
	av_add(&a, name);
	av_add(&a, "--json");
	av_add(&a, "--json-lines");
	av_addf(&a, "--max-output=%lld", max);
	if (timeout > 0)
		av_addf(&a, "--timeout=%lld", timeout);
	if (cwd != NULL)
		av_addf(&a, "--cwd=%s", cwd);
	if (arg_pairs(args, "env", "--env", &a, cause) != 0) {
		av_free(&a);
		return -1;
	}
	av_add(&a, "--");
	if (cJSON_IsString(cmd)) {
		av_add(&a, "/bin/sh");
		av_add(&a, "-c");
		av_add(&a, cmd->valuestring);
	} else {
		cJSON_ArrayForEach(w, cmd)
		{
			if (!cJSON_IsString(w)) {
				xasprintf(cause,
				    "argument \"command\": an "
				    "argv holds strings only");
				av_free(&a);
				return -1;
			}
			av_add(&a, w->valuestring);
		}
	}
	c->scratch = xcalloc(1, sizeof(struct exec_scratch));
	c->scratch_free = exec_scratch_free;
	if (tool_run(c, &a, stdin_s, stdin_s != NULL ? strlen(stdin_s) : 0,
	        finish_exec, cause) != 0)
		return -1;
	c->job->on_line = exec_line;
	return 0;
}
