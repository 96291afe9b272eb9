/*
 * request.c: parse one JSON request line into a struct agent_request.
 *
 * Pure: no I/O and no global state, so every malformed input can be tested.
 * Unknown fields are ignored (newer clients may send more); missing or
 * wrongly typed fields are errors naming the field. The caller owns the
 * returned request (request_free) and, on failure, the *cause string.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "proto/attach.h"

static const char *action_names[] = {
    [ACTION_EXEC] = "exec",
    [ACTION_PING] = "ping",
    [ACTION_SHUTDOWN] = "shutdown",
    [ACTION_OPEN_SHELL] = "open_shell",
    [ACTION_READ_SHELL] = "read_shell",
    [ACTION_WRITE_SHELL] = "write_shell",
    [ACTION_SIGNAL_SHELL] = "signal_shell",
    [ACTION_RESIZE_SHELL] = "resize_shell",
    [ACTION_CLOSE_SHELL] = "close_shell",
    [ACTION_LIST_SHELLS] = "list_shells",
    [ACTION_ATTACH_SHELL] = "attach_shell",
    [ACTION_EXTRACT_ARCHIVE] = "extract_archive",
    [ACTION_EXPORT_ARCHIVE] = "export_archive",
    [ACTION_EXEC_STREAM] = "exec_stream",
    [ACTION_RESUMED] = "resumed",
};

/* The wire name of an action. */
const char *
request_action_name(enum agent_action a)
{
	if ((size_t)a >= nitems(action_names))
		NEVER("bad action");
	return action_names[a];
}

/* Free a request and everything it holds (NULL is fine). */
void
request_free(struct agent_request *r)
{
	if (r == NULL)
		return;
	env_free(r->argv);
	env_free(r->env);
	free(r->command);
	free(r->cwd);
	free(r->user);
	free(r->as);
	free(r->stdin_data);
	free(r->shell_id);
	free(r->input);
	free(r->destination);
	free(r->path);
	free(r->seed);
	free(r->hostname);
	free(r->machine_id);
	free(r);
}

/* Fetch an optional member; NULL when absent or JSON null. */
static cJSON *
member(const cJSON *obj, const char *name)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	return cJSON_IsNull(v) ? NULL : v;
}

/* A string member into *out (NULL if absent); -1 with *cause if mistyped. */
static int
get_string(
    const cJSON *obj, const char *name, int required, char **out, char **cause)
{
	cJSON *v = member(obj, name);

	*out = NULL;
	if (v == NULL) {
		if (required) {
			xasprintf(cause, "missing \"%s\"", name);
			return -1;
		}
		return 0;
	}
	if (!cJSON_IsString(v)) {
		xasprintf(cause, "\"%s\" must be a string", name);
		return -1;
	}
	*out = xstrdup(v->valuestring);
	return 0;
}

/*
 * An integer member in [min, max] into *out, left alone when absent (returns
 * 0) or when required and absent (-1); returns 1 when present.
 */
static int
get_int(const cJSON *obj, const char *name, int required, double min,
    double max, int64_t *out, char **cause)
{
	cJSON *v = member(obj, name);
	double d;

	if (v == NULL) {
		if (required) {
			xasprintf(cause, "missing \"%s\"", name);
			return -1;
		}
		return 0;
	}
	d = v->valuedouble;
	if (!cJSON_IsNumber(v) || !isfinite(d) || d != floor(d) || d < min ||
	    d > max) {
		xasprintf(cause, "\"%s\" must be an integer from %.0f to %.0f",
		    name, min, max);
		return -1;
	}
	*out = (int64_t)d;
	return 1;
}

/* A boolean member into *out (unchanged when absent). */
static int
get_bool(const cJSON *obj, const char *name, int *out, char **cause)
{
	cJSON *v = member(obj, name);

	if (v == NULL)
		return 0;
	if (!cJSON_IsBool(v)) {
		xasprintf(cause, "\"%s\" must be true or false", name);
		return -1;
	}
	*out = cJSON_IsTrue(v);
	return 0;
}

/* "command": a string (run by /bin/sh -c) or a non-empty array of strings. */
static int
get_command(
    const cJSON *obj, int required, struct agent_request *r, char **cause)
{
	cJSON *v = member(obj, "command"), *e;
	int n, i = 0;

	if (v == NULL) {
		if (required) {
			xasprintf(cause, "missing \"command\"");
			return -1;
		}
		return 0;
	}
	if (cJSON_IsString(v)) {
		if (*v->valuestring == '\0') {
			xasprintf(cause, "\"command\" is empty");
			return -1;
		}
		r->command = xstrdup(v->valuestring);
		r->command_is_text = 1;
		r->argv = xcalloc(4, sizeof *r->argv);
		r->argv[0] = xstrdup("/bin/sh");
		r->argv[1] = xstrdup("-c");
		r->argv[2] = xstrdup(v->valuestring);
		return 0;
	}
	if (!cJSON_IsArray(v) || (n = cJSON_GetArraySize(v)) == 0) {
		xasprintf(cause,
		    "\"command\" must be a string or a non-empty array of "
		    "strings");
		return -1;
	}
	r->argv = xcalloc((size_t)n + 1, sizeof *r->argv);
	cJSON_ArrayForEach(e, v)
	{
		if (!cJSON_IsString(e)) {
			xasprintf(cause, "\"command\"[%d] must be a string", i);
			return -1;
		}
		r->argv[i++] = xstrdup(e->valuestring);
	}
	if (*r->argv[0] == '\0') {
		xasprintf(cause, "\"command\"[0] is empty");
		return -1;
	}
	return 0;
}

/* "env": an object of strings, into a NAME=value list. */
static int
get_env(const cJSON *obj, struct agent_request *r, char **cause)
{
	cJSON *v = member(obj, "env"), *e;
	int n, i = 0;

	if (v == NULL)
		return 0;
	if (!cJSON_IsObject(v)) {
		xasprintf(cause, "\"env\" must be an object of strings");
		return -1;
	}
	if ((n = cJSON_GetArraySize(v)) > MAX_ENV_VARS) {
		xasprintf(
		    cause, "\"env\" has more than %d variables", MAX_ENV_VARS);
		return -1;
	}
	r->env = xcalloc((size_t)n + 1, sizeof *r->env);
	cJSON_ArrayForEach(e, v)
	{
		if (*e->string == '\0' || strchr(e->string, '=') != NULL) {
			xasprintf(cause,
			    "bad environment variable name \"%.64s\"",
			    e->string);
			return -1;
		}
		if (!cJSON_IsString(e)) {
			xasprintf(
			    cause, "\"env\".%.64s must be a string", e->string);
			return -1;
		}
		xasprintf(&r->env[i++], "%s=%s", e->string, e->valuestring);
	}
	return 0;
}

/* "shell_id": letters, digits, '.', '_', '-', at most SHELL_ID_MAX. */
static int
get_shell_id(
    const cJSON *obj, int required, struct agent_request *r, char **cause)
{
	const char *p;

	if (get_string(obj, "shell_id", required, &r->shell_id, cause) != 0)
		return -1;
	if (r->shell_id == NULL)
		return 0;
	for (p = r->shell_id; *p != '\0'; p++) {
		if (!isalnum((unsigned char)*p) && strchr("._-", *p) == NULL)
			break;
	}
	if (*p != '\0' || p == r->shell_id || p - r->shell_id > SHELL_ID_MAX) {
		xasprintf(cause,
		    "\"shell_id\" must be 1-%d letters, digits, '.', '_' or "
		    "'-'",
		    SHELL_ID_MAX);
		return -1;
	}
	return 0;
}

/* "cols" and "rows" (both required for resize_shell, else optional). */
static int
get_size(const cJSON *obj, int required, struct agent_request *r, char **cause)
{
	int64_t v = 0;

	if (get_int(obj, "cols", required, 1, SHELL_MAX_DIM, &v, cause) < 0)
		return -1;
	r->cols = member(obj, "cols") ? (int)v : 0;
	if (get_int(obj, "rows", required, 1, SHELL_MAX_DIM, &v, cause) < 0)
		return -1;
	r->rows = member(obj, "rows") ? (int)v : 0;
	return 0;
}

/* Fields of exec. */
static int
parse_exec(const cJSON *obj, struct agent_request *r, char **cause)
{
	cJSON *v;
	int64_t n = 0;

	if (get_command(obj, 1, r, cause) != 0 || get_env(obj, r, cause) != 0 ||
	    get_string(obj, "cwd", 0, &r->cwd, cause) != 0 ||
	    get_string(obj, "user", 0, &r->user, cause) != 0)
		return -1;
	r->timeout_ms = EXEC_DEFAULT_TIMEOUT_S * 1000;
	if ((v = member(obj, "timeout_seconds")) != NULL) {
		if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
		    v->valuedouble <= 0 ||
		    v->valuedouble > EXEC_MAX_TIMEOUT_S) {
			xasprintf(cause,
			    "\"timeout_seconds\" must be a number over 0 and "
			    "at most %d",
			    EXEC_MAX_TIMEOUT_S);
			return -1;
		}
		r->timeout_ms = (int)ceil(v->valuedouble * 1000);
	}
	r->max_output = EXEC_DEFAULT_OUTPUT;
	if (get_int(obj, "max_output_bytes", 0, 0, EXEC_MAX_OUTPUT, &n, cause) <
	    0)
		return -1;
	if (member(obj, "max_output_bytes") != NULL)
		r->max_output = (size_t)n;
	if (get_string(obj, "stdin", 0, &r->stdin_data, cause) != 0)
		return -1;
	if (r->stdin_data != NULL)
		r->stdin_len = strlen(r->stdin_data);
	return 0;
}

/* Fields of open_shell. */
static int
parse_open_shell(const cJSON *obj, struct agent_request *r, char **cause)
{
	int64_t n = 0;

	if (get_shell_id(obj, 0, r, cause) != 0 ||
	    get_command(obj, 0, r, cause) != 0 || get_env(obj, r, cause) != 0 ||
	    get_string(obj, "cwd", 0, &r->cwd, cause) != 0 ||
	    get_string(obj, "user", 0, &r->user, cause) != 0 ||
	    get_size(obj, 0, r, cause) != 0)
		return -1;
	if (get_int(obj, "scrollback_bytes", 0, SHELL_MIN_SCROLLBACK,
	        SHELL_MAX_SCROLLBACK, &n, cause) < 0)
		return -1;
	if (member(obj, "scrollback_bytes") != NULL)
		r->scrollback = (size_t)n;
	return 0;
}

/* "cursor": an optional output offset. */
static int
get_cursor(const cJSON *obj, struct agent_request *r, char **cause)
{
	int64_t n = 0;
	int rc;

	rc = get_int(obj, "cursor", 0, 0, 9007199254740992.0, &n, cause);
	if (rc < 0)
		return -1;
	if (rc > 0) {
		r->has_cursor = 1;
		r->cursor = (uint64_t)n;
	}
	return 0;
}

/* Fields of attach_shell: the shell, a cursor, who attaches and how. */
static int
parse_attach(const cJSON *obj, struct agent_request *r, char **cause)
{
	if (get_shell_id(obj, 1, r, cause) != 0 ||
	    get_cursor(obj, r, cause) != 0 ||
	    get_string(obj, "as", 0, &r->as, cause) != 0 ||
	    get_bool(obj, "watch", &r->watch, cause) != 0 ||
	    get_bool(obj, "input", &r->want_input, cause) != 0)
		return -1;
	if (r->as != NULL && !vmux_attach_as_valid(r->as)) {
		xasprintf(cause, "\"as\" must be 1-%d of [A-Za-z0-9._@-]",
		    VMUX_ATTACH_AS_MAX);
		return -1;
	}
	return 0;
}

/* Fields of read_shell. */
static int
parse_read_shell(const cJSON *obj, struct agent_request *r, char **cause)
{
	int64_t n = 0;

	if (get_shell_id(obj, 1, r, cause) != 0 || get_cursor(obj, r, cause))
		return -1;
	r->max_chars = SHELL_READ_DEFAULT;
	if (get_int(obj, "max_chars", 0, 1, SHELL_READ_MAX, &n, cause) < 0)
		return -1;
	if (member(obj, "max_chars") != NULL)
		r->max_chars = (size_t)n;
	if (get_int(obj, "wait_ms", 0, 0, SHELL_WAIT_MAX_MS, &n, cause) < 0)
		return -1;
	if (member(obj, "wait_ms") != NULL)
		r->wait_ms = (int)n;
	return 0;
}

/* Fields of write_shell. */
static int
parse_write_shell(const cJSON *obj, struct agent_request *r, char **cause)
{
	if (get_shell_id(obj, 1, r, cause) != 0 ||
	    get_string(obj, "input", 1, &r->input, cause) != 0 ||
	    get_bool(obj, "append_newline", &r->append_newline, cause) != 0)
		return -1;
	r->input_len = strlen(r->input);
	return 0;
}

/* Fields of signal_shell. */
static int
parse_signal_shell(const cJSON *obj, struct agent_request *r, char **cause)
{
	char *name;

	if (get_shell_id(obj, 1, r, cause) != 0 ||
	    get_string(obj, "signal", 1, &name, cause) != 0)
		return -1;
	r->signal = signame_parse(name);
	if (r->signal < 0) {
		xasprintf(cause,
		    "unknown signal \"%.32s\" (use HUP, INT, QUIT, TERM, KILL, "
		    "USR1, USR2, TSTP, CONT or WINCH)",
		    name);
		free(name);
		return -1;
	}
	free(name);
	return 0;
}

/* Fields of extract_archive (the archive's bytes follow the line). */
static int
parse_extract(const cJSON *obj, struct agent_request *r, char **cause)
{
	int64_t n = 0;

	if (get_string(obj, "destination", 1, &r->destination, cause) != 0 ||
	    get_int(obj, "archive_size", 1, 0, 9007199254740992.0, &n, cause) <
	        0 ||
	    get_bool(obj, "cp", &r->cp, cause) != 0 ||
	    get_bool(obj, "skip_unsafe_links", &r->skip_unsafe_links, cause) !=
	        0)
		return -1;
	if (*r->destination == '\0') {
		xasprintf(cause, "\"destination\" is empty");
		return -1;
	}
	r->archive_size = (uint64_t)n;
	return 0;
}

/* Is s n lowercase hex digits? */
static int
is_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (!isxdigit((unsigned char)s[i]) ||
		    isupper((unsigned char)s[i]))
			return 0;
	return i == n;
}

/* Fields of resumed: the host's time, a seed, a fork's new identity. */
static int
parse_resumed(const cJSON *obj, struct agent_request *r, char **cause)
{
	cJSON *t = member(obj, "time");

	if (!cJSON_IsNumber(t) || !isfinite(t->valuedouble) ||
	    t->valuedouble < 0 || t->valuedouble > 1e11) {
		xasprintf(cause, "\"time\" must be seconds since the epoch");
		return -1;
	}
	r->time = t->valuedouble;
	if (get_string(obj, "seed", 0, &r->seed, cause) != 0 ||
	    get_string(obj, "hostname", 0, &r->hostname, cause) != 0 ||
	    get_string(obj, "machine_id", 0, &r->machine_id, cause) != 0)
		return -1;
	if (r->seed != NULL && !is_hex(r->seed, 64)) {
		xasprintf(cause, "\"seed\" must be 64 hex digits");
		return -1;
	}
	if (r->machine_id != NULL && !is_hex(r->machine_id, 32)) {
		xasprintf(cause, "\"machine_id\" must be 32 hex digits");
		return -1;
	}
	if (r->hostname != NULL &&
	    (*r->hostname == '\0' || strlen(r->hostname) > 64 ||
	        strspn(r->hostname,
	            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	            "0123456789-._") != strlen(r->hostname))) {
		xasprintf(cause, "\"hostname\" must be a host name");
		return -1;
	}
	return 0;
}

/* Fields of export_archive. */
static int
parse_export(const cJSON *obj, struct agent_request *r, char **cause)
{
	if (get_string(obj, "path", 1, &r->path, cause) != 0)
		return -1;
	if (*r->path == '\0') {
		xasprintf(cause, "\"path\" is empty");
		return -1;
	}
	return 0;
}

/* Check that only white space follows the JSON value. */
static int
only_space(const char *p, const char *end)
{
	for (; p < end; p++) {
		if (!isspace((unsigned char)*p))
			return 0;
	}
	return 1;
}

/* Map an action name; -1 if unknown. */
static int
action_lookup(const char *name)
{
	for (size_t i = 0; i < nitems(action_names); i++) {
		if (strcmp(name, action_names[i]) == 0)
			return (int)i;
	}
	return -1;
}

/*
 * Parse a request of len bytes (no newline needed). Returns the request, or
 * NULL with *cause set.
 */
struct agent_request *
request_parse(const char *line, size_t len, char **cause)
{
	struct agent_request *r;
	const char *end = NULL;
	cJSON *obj, *v;
	int rc = -1, a;

	*cause = NULL;
	if (len > VMUX_MAX_REQUEST) {
		xasprintf(cause, "request is over %d bytes", VMUX_MAX_REQUEST);
		return NULL;
	}
	if (only_space(line, line + len)) {
		xasprintf(cause, "empty request");
		return NULL;
	}
	obj = cJSON_ParseWithLengthOpts(line, len, &end, 0);
	if (obj == NULL) {
		xasprintf(cause, "invalid JSON at byte %zu",
		    end != NULL && end >= line ? (size_t)(end - line) : 0);
		return NULL;
	}
	if (!cJSON_IsObject(obj)) {
		xasprintf(cause, "request must be a JSON object");
		cJSON_Delete(obj);
		return NULL;
	}
	if (end != NULL && !only_space(end, line + len)) {
		xasprintf(cause, "unexpected data after the JSON object");
		cJSON_Delete(obj);
		return NULL;
	}

	r = xcalloc(1, sizeof *r);
	v = member(obj, "action");
	if (v == NULL) {
		if (member(obj, "command") == NULL) {
			xasprintf(cause, "missing \"action\"");
			goto out;
		}
		a = ACTION_EXEC;
	} else if (!cJSON_IsString(v)) {
		xasprintf(cause, "\"action\" must be a string");
		goto out;
	} else if ((a = action_lookup(v->valuestring)) < 0) {
		xasprintf(cause, "unknown action \"%.64s\"", v->valuestring);
		goto out;
	}
	r->action = (enum agent_action)a;

	switch (r->action) {
	case ACTION_EXEC:
	case ACTION_EXEC_STREAM:
		rc = parse_exec(obj, r, cause);
		break;
	case ACTION_PING:
	case ACTION_SHUTDOWN:
	case ACTION_LIST_SHELLS:
		rc = 0;
		break;
	case ACTION_OPEN_SHELL:
		rc = parse_open_shell(obj, r, cause);
		break;
	case ACTION_READ_SHELL:
		rc = parse_read_shell(obj, r, cause);
		break;
	case ACTION_WRITE_SHELL:
		rc = parse_write_shell(obj, r, cause);
		break;
	case ACTION_SIGNAL_SHELL:
		rc = parse_signal_shell(obj, r, cause);
		break;
	case ACTION_RESIZE_SHELL:
		rc =
		    get_shell_id(obj, 1, r, cause) || get_size(obj, 1, r, cause)
		    ? -1
		    : 0;
		break;
	case ACTION_CLOSE_SHELL:
		rc = get_shell_id(obj, 1, r, cause);
		break;
	case ACTION_ATTACH_SHELL:
		rc = parse_attach(obj, r, cause);
		break;
	case ACTION_EXTRACT_ARCHIVE:
		rc = parse_extract(obj, r, cause);
		break;
	case ACTION_EXPORT_ARCHIVE:
		rc = parse_export(obj, r, cause);
		break;
	case ACTION_RESUMED:
		rc = parse_resumed(obj, r, cause);
		break;
	}
out:
	cJSON_Delete(obj);
	if (rc != 0) {
		request_free(r);
		return NULL;
	}
	return r;
}
