/*
 * tools-args.c: what every MCP tool shares: reading its arguments (with
 * the session options' table for session_create's), building the vmux
 * command it runs (struct argv_b) and turning that command's --json into
 * the tool's result.
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

/* Append a word. */
void
av_add(struct argv_b *a, const char *w)
{
	a->v = xreallocarray(a->v, a->n + 2, sizeof *a->v);
	a->v[a->n++] = xstrdup(w);
	a->v[a->n] = NULL;
}

/* Append a formatted word. */
void __attribute__((format(printf, 2, 3)))
av_addf(struct argv_b *a, const char *fmt, ...)
{
	va_list ap;
	char *w;

	va_start(ap, fmt);
	xvasprintf(&w, fmt, ap);
	va_end(ap);
	av_add(a, w);
	free(w);
}

/* Free the words. */
void
av_free(struct argv_b *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	memset(a, 0, sizeof *a);
}

/* Run a's command for c (a is freed); 0 or -1 with *cause. */
int
tool_run(struct mcp_call *c, struct argv_b *a, const void *in, size_t in_len,
    void (*finish)(struct mcp_call *), char **cause)
{
	int rc = mcp_call_run(c, a->v, in, in_len, finish, cause);

	av_free(a);
	return rc;
}

/*
 * Argument getters: 0 with the value (the default when absent), or -1
 * with *cause naming the argument. Strings stay in args.
 */
int
arg_str(const cJSON *args, const char *key, int required, const char **out,
    char **cause)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, key);

	*out = NULL;
	if (v == NULL || cJSON_IsNull(v)) {
		if (required)
			xasprintf(cause, "missing argument \"%s\"", key);
		return required ? -1 : 0;
	}
	if (!cJSON_IsString(v)) {
		xasprintf(cause, "argument \"%s\" must be a string", key);
		return -1;
	}
	*out = v->valuestring;
	return 0;
}

int
arg_int(const cJSON *args, const char *key, long long min, long long max,
    long long def, long long *out, char **cause)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, key);

	*out = def;
	if (v == NULL || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v) ||
	    v->valuedouble != (double)(long long)v->valuedouble ||
	    v->valuedouble < (double)min || v->valuedouble > (double)max) {
		xasprintf(cause,
		    "argument \"%s\" must be a whole number from "
		    "%lld to %lld",
		    key, min, max);
		return -1;
	}
	*out = (long long)v->valuedouble;
	return 0;
}

/*
 * The session options MCP takes (rows flagged SOPT_MCP), each under its
 * key with the table's bounds, into opt[id] (0 when not given). 0, or -1
 * with cause.
 */
int
arg_options(const cJSON *args, long long *opt, char **cause)
{
	for (int i = 0; i < SOPT_N; i++) {
		const struct session_option *so = &session_options[i];

		opt[i] = 0;
		if ((so->flags & SOPT_MCP) &&
		    arg_int(args, so->key, so->min, so->max, 0, &opt[i],
		        cause) != 0)
			return -1;
	}
	return 0;
}

/* The options given (arg_options) as vmux new's flags. */
void
av_options(struct argv_b *a, const long long *opt)
{
	for (int i = 0; i < SOPT_N; i++) {
		const struct session_option *so = &session_options[i];

		if ((so->flags & SOPT_MCP) && opt[i] > 0)
			av_addf(a, "--%s=%lld%s", so->flag, opt[i],
			    so->type == SOPT_SIZE ? "M" : "");
	}
}

/* The SOPT_MCP rows as JSON Schema properties of props: integers with the
 * table's bounds, unit and help. */
void
schema_options(cJSON *props)
{
	for (int i = 0; i < SOPT_N; i++) {
		const struct session_option *so = &session_options[i];
		cJSON *p;
		char *d;

		if (!(so->flags & SOPT_MCP))
			continue;
		p = cJSON_AddObjectToObject(props, so->key);
		cJSON_AddStringToObject(p, "type", "integer");
		cJSON_AddNumberToObject(p, "minimum", (double)so->min);
		cJSON_AddNumberToObject(p, "maximum", (double)so->max);
		xasprintf(&d, "%s%s%s", so->help,
		    so->unit != NULL ? "; in " : "",
		    so->unit != NULL ? so->unit : "");
		cJSON_AddStringToObject(p, "description", d);
		free(d);
	}
}

int
arg_bool(const cJSON *args, const char *key, int def, int *out, char **cause)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, key);

	*out = def;
	if (v == NULL || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsBool(v)) {
		xasprintf(cause, "argument \"%s\" must be true or false", key);
		return -1;
	}
	*out = cJSON_IsTrue(v);
	return 0;
}

/* The session argument ("session"), checked against the policy; its name
 * is kept on the call for the log. */
int
arg_session(
    struct mcp_call *c, const cJSON *args, const char **name, char **cause)
{
	if (arg_str(args, "session", 1, name, cause) != 0 ||
	    policy_session_visible(mcp_call_policy(c), *name, cause) != 0)
		return -1;
	c->session = xstrdup(*name);
	return 0;
}

/* The shell argument ("shell_id"). */
int
arg_shell(const cJSON *args, const char **id, char **cause)
{
	return arg_str(args, "shell_id", 1, id, cause) != 0 ||
	        shell_id_valid(*id, cause) != 0
	    ? -1
	    : 0;
}

/* A string-to-string object ("env", "labels") as K=V words after flag. */
int
arg_pairs(const cJSON *args, const char *key, const char *flag,
    struct argv_b *a, char **cause)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(args, key), *v;

	if (o == NULL || cJSON_IsNull(o))
		return 0;
	if (!cJSON_IsObject(o)) {
		xasprintf(
		    cause, "argument \"%s\" must be an object of strings", key);
		return -1;
	}
	cJSON_ArrayForEach(v, o)
	{
		if (!cJSON_IsString(v) || strchr(v->string, '=') != NULL ||
		    *v->string == '\0') {
			xasprintf(cause,
			    "argument \"%s\": each value must be a string "
			    "under a name without '='",
			    key);
			return -1;
		}
		av_add(a, flag);
		av_addf(a, "%s=%s", v->string, v->valuestring);
	}
	return 0;
}

/* Why a vmux command failed, for the agent: the first line of its stderr
 * without "vmux: ", else its status (caller frees). */
char *
job_err_line(struct mcp_call *c)
{
	struct mcp_job *j = c->job;
	const char *e = j->err;
	char *line;

	if (j->err_len == 0) {
		xasprintf(&line, "vmux %s failed (exit status %d)",
		    c->tool->name, mcp_job_exit_code(j));
		return line;
	}
	if (strncmp(e, "vmux: ", 6) == 0)
		e += 6;
	return xstrndup(e, strcspn(e, "\n"));
}

/* The vmux command's --json answer: parsed, or NULL with *cause (its
 * "error", else its stderr, else its status). */
cJSON *
call_json(struct mcp_call *c, char **cause)
{
	struct mcp_job *j = c->job;
	const cJSON *err;
	cJSON *o = NULL;

	if (j->out != NULL)
		o = cJSON_ParseWithLength(j->out, j->out_len);
	err = cJSON_GetObjectItemCaseSensitive(o, "error");
	if (cJSON_IsString(err)) {
		xasprintf(cause, "%s", err->valuestring);
		cJSON_Delete(o);
		return NULL;
	}
	if (o == NULL || mcp_job_exit_code(j) != 0) {
		*cause = job_err_line(c);
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* Finish: the command's JSON object is the result. */
void
finish_object(struct mcp_call *c)
{
	char *cause = NULL;
	cJSON *o = call_json(c, &cause);

	if (o == NULL) {
		mcp_call_fail(c, "%s", cause);
		free(cause);
	} else if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		mcp_call_fail(c, "vmux %s printed no object", c->tool->name);
	} else
		mcp_call_ok(c, o, NULL);
}

/* Finish: the command's JSON (a list, or one) under key. */
void
finish_wrapped(struct mcp_call *c, const char *key)
{
	char *cause = NULL;
	cJSON *o = call_json(c, &cause), *res;

	if (o == NULL) {
		mcp_call_fail(c, "%s", cause);
		free(cause);
		return;
	}
	if (!cJSON_IsArray(o)) {
		cJSON *arr = cJSON_CreateArray();

		cJSON_AddItemToArray(arr, o);
		o = arr;
	}
	res = cJSON_CreateObject();
	cJSON_AddItemToObject(res, key, o);
	mcp_call_ok(c, res, NULL);
}

void
finish_sessions(struct mcp_call *c)
{
	finish_wrapped(c, "sessions");
}

/* vmux shells --json prints a list of shell records. */
void
finish_shells(struct mcp_call *c)
{
	finish_wrapped(c, "shells");
}
