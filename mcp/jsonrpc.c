/*
 * jsonrpc.c: JSON-RPC 2.0 messages, as MCP sends them (one object a
 * message; MCP has no batches since 2025-06-18).
 *
 * jsonrpc_parse() sorts a message into request, notification, response or
 * invalid, and for an invalid one says which error answers it and why:
 * -32700 for text that is not JSON, -32600 for JSON that is not a request
 * (an array, a wrong "jsonrpc", an id that is neither a string nor a
 * number, a method that is not a string). The reply builders return the
 * message text (caller frees). Pure: no I/O, no global state.
 */
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "mcp.h"

/* Mark m invalid with code and a message. */
static int
invalid(struct jsonrpc_msg *m, int code, const char *why)
{
	m->kind = JSONRPC_INVALID;
	m->error = code;
	m->message = xstrdup(why);
	return -1;
}

/* Is v a whole number a double holds exactly (MCP's ids are strings or
 * integers; 1e400 or 0.5 could not be sent back as they came)? */
static int
id_integer(const cJSON *v)
{
	double d = v->valuedouble;

	return cJSON_IsNumber(v) && d == d && d >= -9007199254740991.0 &&
	    d <= 9007199254740991.0 && d == (double)(long long)d;
}

/*
 * Parse one message of len bytes. Returns 0 with m filled (its kind says
 * what it is), or -1 with m->kind JSONRPC_INVALID, m->error the code to
 * answer with and m->id the id when one could be read. m is freed with
 * jsonrpc_msg_free() either way.
 */
int
jsonrpc_parse(const char *text, size_t len, struct jsonrpc_msg *m)
{
	const cJSON *v, *id;
	const char *end = NULL;

	memset(m, 0, sizeof m[0]);
	if (len > MCP_MESSAGE_MAX)
		return invalid(m, JSONRPC_INVALID_REQUEST, "message too large");
	m->root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
	/* cJSON stops after the first value: what follows must be blank */
	while (m->root != NULL && end < text + len &&
	    strchr(" \t\r\n", *end) != NULL && *end != '\0')
		end++;
	if (m->root != NULL && end != text + len) {
		cJSON_Delete(m->root);
		m->root = NULL;
	}
	if (m->root == NULL)
		return invalid(m, JSONRPC_PARSE_ERROR, "parse error: not JSON");
	if (!cJSON_IsObject(m->root))
		return invalid(m, JSONRPC_INVALID_REQUEST,
		    cJSON_IsArray(m->root)
		        ? "invalid request: batches are not supported"
		        : "invalid request: a message is a JSON object");
	/* The id first, so that an error about the rest can carry it. */
	id = cJSON_GetObjectItemCaseSensitive(m->root, "id");
	if (id != NULL && (cJSON_IsString(id) || id_integer(id)))
		m->id = id;
	v = cJSON_GetObjectItemCaseSensitive(m->root, "jsonrpc");
	if (!cJSON_IsString(v) || strcmp(v->valuestring, "2.0") != 0)
		return invalid(m, JSONRPC_INVALID_REQUEST,
		    "invalid request: \"jsonrpc\" must be \"2.0\"");
	if (id != NULL && m->id == NULL)
		return invalid(m, JSONRPC_INVALID_REQUEST,
		    "invalid request: \"id\" must be a string or an integer");
	v = cJSON_GetObjectItemCaseSensitive(m->root, "method");
	if (v == NULL) {
		if (m->id != NULL &&
		    (cJSON_HasObjectItem(m->root, "result") ||
		        cJSON_HasObjectItem(m->root, "error"))) {
			m->kind = JSONRPC_RESPONSE;
			return 0;
		}
		return invalid(m, JSONRPC_INVALID_REQUEST,
		    "invalid request: no \"method\"");
	}
	if (!cJSON_IsString(v) || v->valuestring[0] == '\0')
		return invalid(m, JSONRPC_INVALID_REQUEST,
		    "invalid request: \"method\" must be a non-empty string");
	m->method = v->valuestring;
	m->params = cJSON_GetObjectItemCaseSensitive(m->root, "params");
	if (m->params != NULL && !cJSON_IsObject(m->params) &&
	    !cJSON_IsArray(m->params)) {
		/* A notification is never answered, even when wrong. */
		if (m->id == NULL) {
			m->kind = JSONRPC_NOTIFICATION;
			m->params = NULL;
			return 0;
		}
		return invalid(m, JSONRPC_INVALID_PARAMS,
		    "invalid params: \"params\" must be an object");
	}
	m->kind = m->id != NULL ? JSONRPC_REQUEST : JSONRPC_NOTIFICATION;
	return 0;
}

/* Release what jsonrpc_parse() made (m itself is the caller's). */
void
jsonrpc_msg_free(struct jsonrpc_msg *m)
{
	cJSON_Delete(m->root);
	free(m->message);
	memset(m, 0, sizeof m[0]);
}

/* {"jsonrpc", "id"} with id copied (null when NULL). */
static cJSON *
envelope(const cJSON *id)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "jsonrpc", "2.0");
	cJSON_AddItemToObject(
	    o, "id", id != NULL ? cJSON_Duplicate(id, 0) : cJSON_CreateNull());
	return o;
}

/* Print o without formatting and delete it. */
static char *
print_and_delete(cJSON *o)
{
	char *s = cJSON_PrintUnformatted(o);

	cJSON_Delete(o);
	if (s == NULL)
		fatalx("out of memory printing JSON");
	return s;
}

/* The answer to request id: result (taken over). */
char *
jsonrpc_result(const cJSON *id, cJSON *result)
{
	cJSON *o = envelope(id);

	cJSON_AddItemToObject(o, "result", result);
	return print_and_delete(o);
}

/* The error answer to request id (NULL: unknown, sent as null). */
char *
jsonrpc_error(const cJSON *id, int code, const char *message)
{
	cJSON *o = envelope(id), *e;

	e = cJSON_AddObjectToObject(o, "error");
	cJSON_AddNumberToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", message);
	return print_and_delete(o);
}

/* A notification: method with params (taken over; NULL: none). */
char *
jsonrpc_notification(const char *method, cJSON *params)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "jsonrpc", "2.0");
	cJSON_AddStringToObject(o, "method", method);
	if (params != NULL)
		cJSON_AddItemToObject(o, "params", params);
	return print_and_delete(o);
}
