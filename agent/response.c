/*
 * response.c: the JSON lines the agent answers with.
 *
 * Every reply is one JSON object and a '\n'. Errors are {"error": "..."}.
 * Exec replies can hold up to 2 x EXEC_MAX_OUTPUT bytes of output, so they
 * are streamed to a sink in pieces instead of being built whole.
 */
#include <stdlib.h>
#include <string.h>

#include "agent.h"

#define STREAM_CHUNK 65536

/* Print a JSON object as one line ending in '\n'; the caller frees it. */
char *
response_print(cJSON *obj, size_t *len)
{
	char *s = cJSON_PrintUnformatted(obj), *line;
	size_t n;

	if (s == NULL)
		fatalx("cJSON_PrintUnformatted: out of memory");
	n = strlen(s);
	line = xmalloc(n + 2);
	memcpy(line, s, n);
	line[n] = '\n';
	line[n + 1] = '\0';
	cJSON_free(s);
	if (len != NULL)
		*len = n + 1;
	return line;
}

/* {"error": msg, "code": VMUX_E_FAILED}\n; the caller frees it. */
char *
response_error(const char *msg, size_t *len)
{
	return response_error_code(VMUX_E_FAILED, msg, len);
}

/* {"error": msg, "code": code}\n (code: a VMUX_E_*); the caller frees it. */
char *
response_error_code(const char *code, const char *msg, size_t *len)
{
	cJSON *obj = cJSON_CreateObject();
	char *line;

	json_add_str(obj, "error", msg);
	cJSON_AddStringToObject(obj, "code", code);
	line = response_print(obj, len);
	cJSON_Delete(obj);
	return line;
}

/*
 * {"error": msg, "exit_code": status}\n for a command that could not run
 * (status 127 not found, 126 cannot run; 0 leaves exit_code out).
 */
char *
response_error_status(const char *msg, int status, size_t *len)
{
	cJSON *obj = cJSON_CreateObject();
	char *line;

	json_add_str(obj, "error", msg);
	cJSON_AddStringToObject(obj, "code",
	    status == 127     ? VMUX_E_NOT_FOUND
	        : status != 0 ? VMUX_E_CANNOT_RUN
	                      : VMUX_E_FAILED);
	if (status != 0)
		cJSON_AddNumberToObject(obj, "exit_code", status);
	line = response_print(obj, len);
	cJSON_Delete(obj);
	return line;
}

/* Stream bytes as a JSON string, chunk by chunk. */
static int
emit_string(const struct buf *data, response_sink sink, void *arg)
{
	struct buf b;
	size_t i = 0, n, used;
	int rc = 0;

	buf_init(&b);
	if (sink(arg, "\"", 1) < 0)
		return -1;
	while (i < data->len && rc == 0) {
		n = data->len - i < STREAM_CHUNK ? data->len - i : STREAM_CHUNK;
		b.len = 0;
		utf8_json_string(
		    &b, data->data + i, n, SIZE_MAX, i + n == data->len, &used);
		rc = sink(arg, b.data + 1, b.len - 2); /* without quotes */
		i += used;
	}
	buf_free(&b);
	if (rc == 0)
		rc = sink(arg, "\"", 1);
	return rc;
}

/*
 * Write an exec result: {"exit_code", "duration_ms", "timed_out",
 * "stdout_truncated", "stderr_truncated", "stdout_bytes", "stderr_bytes",
 * ["signal"], "stdout", "stderr"}\n. Returns 0, or -1 if the sink failed.
 */
int
response_exec(const struct exec_result *res, response_sink sink, void *arg)
{
	cJSON *obj = cJSON_CreateObject();
	const char *name;
	char *head;
	size_t len;
	int rc;

	if (res->exit_code < 0)
		cJSON_AddNullToObject(obj, "exit_code");
	else
		cJSON_AddNumberToObject(obj, "exit_code", res->exit_code);
	cJSON_AddNumberToObject(obj, "duration_ms", (double)res->duration_ms);
	cJSON_AddBoolToObject(obj, "timed_out", res->timed_out);
	if (res->signal != 0 && !res->timed_out) {
		if ((name = signame_name(res->signal)) != NULL)
			cJSON_AddStringToObject(obj, "signal", name);
		else
			cJSON_AddNumberToObject(obj, "signal", res->signal);
	}
	cJSON_AddBoolToObject(obj, "stdout_truncated", res->out.truncated);
	cJSON_AddBoolToObject(obj, "stderr_truncated", res->err.truncated);
	cJSON_AddNumberToObject(obj, "stdout_bytes", (double)res->out.total);
	cJSON_AddNumberToObject(obj, "stderr_bytes", (double)res->err.total);
	head = response_print(obj, &len);
	cJSON_Delete(obj);

	/* head is {...}\n: reopen it to append the two big strings. */
	rc = sink(arg, head, len - 2);
	free(head);
	if (rc == 0)
		rc = sink(arg, ",\"stdout\":", 10);
	if (rc == 0)
		rc = emit_string(&res->out.data, sink, arg);
	if (rc == 0)
		rc = sink(arg, ",\"stderr\":", 10);
	if (rc == 0)
		rc = emit_string(&res->err.data, sink, arg);
	if (rc == 0)
		rc = sink(arg, "}\n", 2);
	return rc;
}
