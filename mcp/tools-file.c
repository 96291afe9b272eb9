/*
 * tools-file.c: the file tools (file_read, _write, _list) and copies
 * between the host and a guest (copy_in, copy_out), within the server's
 * folders.
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
	return tool_run(c, &a, in, in_len, finish, cause);
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

/* The stdout of the exec a file tool ran (*n bytes; free it), or NULL
 * after failing the call with why. */
static unsigned char *
file_stdout(struct mcp_call *c, size_t *n)
{
	char *cause = NULL;
	cJSON *o = file_exec_result(c, &cause);
	unsigned char *data;

	if (o == NULL) {
		mcp_call_fail(c, "%s", cause);
		free(cause);
		return NULL;
	}
	data = exec_stream_bytes(o, "stdout", n);
	cJSON_Delete(o);
	return data;
}

static void
finish_file_read(struct mcp_call *c)
{
	struct file_scratch *f = c->scratch;
	char *b64;
	cJSON *res;
	unsigned char *data;
	size_t n;
	int cut;

	if ((data = file_stdout(c, &n)) == NULL)
		return;
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

/* The "encoding" argument: utf-8 (the default) or base64 into *base64. 0,
 * or -1 with cause. */
static int
arg_encoding(const cJSON *args, int *base64, char **cause)
{
	const char *enc;

	if (arg_str(args, "encoding", 0, &enc, cause) != 0)
		return -1;
	if (enc != NULL && strcmp(enc, "utf-8") != 0 &&
	    strcmp(enc, "base64") != 0) {
		xasprintf(cause,
		    "argument \"encoding\" is \"utf-8\" or "
		    "\"base64\"");
		return -1;
	}
	*base64 = enc != NULL && strcmp(enc, "base64") == 0;
	return 0;
}

int
t_file_read(struct mcp_call *c, const cJSON *args, char **cause)
{
	const char *name, *path;
	long long max;
	int base64;
	struct file_scratch *f;
	char n[32];

	if (arg_session(c, args, &name, cause) != 0 ||
	    arg_guest_path(args, "path", &path, cause) != 0 ||
	    arg_encoding(args, &base64, cause) != 0 ||
	    arg_int(args, "max_bytes", 1, FILE_MAX, FILE_READ_DEFAULT, &max,
	        cause) != 0)
		return -1;
	f = xcalloc(1, sizeof *f);
	f->path = xstrdup(path);
	f->base64 = base64;
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

int
t_file_write(struct mcp_call *c, const cJSON *args, char **cause)
{
	const char *name, *path, *content;
	unsigned char *data;
	size_t n;
	int append, dirs, base64, rc;
	struct file_scratch *f;
	char *script;

	if (arg_session(c, args, &name, cause) != 0 ||
	    arg_guest_path(args, "path", &path, cause) != 0 ||
	    arg_str(args, "content", 1, &content, cause) != 0 ||
	    arg_encoding(args, &base64, cause) != 0 ||
	    arg_bool(args, "append", 0, &append, cause) != 0 ||
	    arg_bool(args, "make_dirs", 0, &dirs, cause) != 0)
		return -1;
	if (base64) {
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
	char *line, *save = NULL, *p1, *p2, *p3;
	cJSON *res, *list, *e;
	unsigned char *out;
	size_t n, count = 0;

	if ((out = file_stdout(c, &n)) == NULL)
		return;
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

int
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
	return tool_run(c, &a, NULL, 0, finish_object, cause);
}

int
t_copy_in(struct mcp_call *c, const cJSON *args, char **cause)
{
	return copy(c, args, 1, cause);
}

int
t_copy_out(struct mcp_call *c, const cJSON *args, char **cause)
{
	return copy(c, args, 0, cause);
}
