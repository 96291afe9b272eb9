/*
 * server.c: the MCP methods, whatever the transport.
 *
 * A transport hands each message to mcp_handle() with a send function and
 * a connection of its own; answers and notifications go back through them.
 * Requests: initialize (the protocol version negotiated: the client's when
 * we speak it, else our latest), ping, tools/list, tools/call,
 * logging/setLevel. Notifications: initialized, cancelled (ends a call's
 * command; the call is then not answered, as the specification asks).
 * A tools/call starts its tool's command and returns; the answer is sent
 * when the command ends (tools.c's finish), so calls overlap. Each call is
 * one line in the call log (HOME/mcp.log). The server owns its calls;
 * the caller owns the server and its policy.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "session/session.h"
#include "mcp.h"

#define MCP_LOG         "mcp.log"
#define MCP_LOG_MAX     (4 << 20)
#define MCP_PROGRESS_MS 200 /* at most one progress note this often */

/* The protocol versions spoken, newest first. */
static const char *const mcp_versions[] = {
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
};

/* Which of mcp_versions is version; -1: none. */
static int
mcp_version_index(const char *version)
{
	for (size_t i = 0; i < nitems(mcp_versions); i++)
		if (strcmp(version, mcp_versions[i]) == 0)
			return (int)i;
	return -1;
}

/* Do we speak protocol version (an MCP-Protocol-Version header's)? */
int
mcp_version_known(const char *version)
{
	return mcp_version_index(version) >= 0;
}

struct mcp_server {
	struct mcp_policy *policy;
	struct mcp_call *calls; /* under way */
	char *log_path;
};

/* A new server with policy p (the caller's, kept until the server goes). */
struct mcp_server *
mcp_server_new(struct mcp_policy *p)
{
	struct mcp_server *s = xcalloc(1, sizeof *s);

	s->policy = p;
	xasprintf(&s->log_path, "%s/%s", p->home, MCP_LOG);
	return s;
}

/* Take call off the list and free it (its job too). */
static void
call_free(struct mcp_call *c)
{
	struct mcp_call **cp = &c->server->calls;

	while (*cp != NULL && *cp != c)
		cp = &(*cp)->next;
	if (*cp == c)
		*cp = c->next;
	mcp_job_free(c->job);
	if (c->scratch_free != NULL)
		c->scratch_free(c->scratch);
	cJSON_Delete(c->id);
	cJSON_Delete(c->progress);
	free(c->session);
	free(c);
}

/* End every call's command and free the server. */
void
mcp_server_free(struct mcp_server *s)
{
	if (s == NULL)
		return;
	mcp_jobs_stop_all();
	while (s->calls != NULL)
		call_free(s->calls);
	free(s->log_path);
	free(s);
}

/* The policy a call runs under (session_create keeps its counts in it). */
struct mcp_policy *
mcp_call_policy(const struct mcp_call *c)
{
	return c->server->policy;
}

/* One line in the call log: time, tool, session, outcome. */
static void
call_log(struct mcp_call *c, const char *outcome, const char *message)
{
	cJSON *o = cJSON_CreateObject();
	char *when = time_rfc3339(wall_time()), *line;
	FILE *f;

	cJSON_AddStringToObject(o, "time", when != NULL ? when : "");
	cJSON_AddStringToObject(o, "server", c->server->policy->name);
	cJSON_AddStringToObject(
	    o, "tool", c->tool != NULL ? c->tool->name : "");
	if (c->session != NULL)
		cJSON_AddStringToObject(o, "session", c->session);
	cJSON_AddStringToObject(o, "outcome", outcome);
	if (message != NULL)
		cJSON_AddStringToObject(o, "message", message);
	line = cJSON_PrintUnformatted(o);
	logcap_rotate(c->server->log_path, MCP_LOG_MAX);
	if ((f = fopen(c->server->log_path, "a")) != NULL) {
		fprintf(f, "%s\n", line);
		fclose(f);
	}
	free(line);
	free(when);
	cJSON_Delete(o);
}

/* Send the tools/call result and end the call. */
static void
call_answer(struct mcp_call *c, cJSON *result)
{
	char *msg = jsonrpc_result(c->id, result);

	c->send(c->conn, msg, 1);
	free(msg);
	call_free(c);
}

/*
 * The call succeeded: structured (taken over; the tool's outputSchema) is
 * its structuredContent, and text (NULL: structured printed) its text.
 */
void
mcp_call_ok(struct mcp_call *c, cJSON *structured, const char *text)
{
	cJSON *res = cJSON_CreateObject(), *content, *item;
	char *printed = NULL;

	if (text == NULL)
		text = printed = cJSON_PrintUnformatted(structured);
	content = cJSON_AddArrayToObject(res, "content");
	item = cJSON_CreateObject();
	cJSON_AddStringToObject(item, "type", "text");
	cJSON_AddStringToObject(item, "text", text);
	cJSON_AddItemToArray(content, item);
	cJSON_AddItemToObject(res, "structuredContent", structured);
	cJSON_AddBoolToObject(res, "isError", 0);
	free(printed);
	call_log(c, "ok", NULL);
	call_answer(c, res);
}

/* The call failed: one sentence for the agent, isError set. */
void
mcp_call_fail(struct mcp_call *c, const char *fmt, ...)
{
	cJSON *res = cJSON_CreateObject(), *content, *item;
	char *msg, *safe;
	va_list ap;

	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	safe = str_printable(msg, STR_KEEP_NL);
	content = cJSON_AddArrayToObject(res, "content");
	item = cJSON_CreateObject();
	cJSON_AddStringToObject(item, "type", "text");
	cJSON_AddStringToObject(item, "text", safe);
	cJSON_AddItemToArray(content, item);
	cJSON_AddBoolToObject(res, "isError", 1);
	call_log(c, "error", safe);
	free(msg);
	free(safe);
	call_answer(c, res);
}

/* A progress notification for the call, when its caller asked for them
 * (a progressToken), at most one each MCP_PROGRESS_MS. */
void
mcp_call_progress(struct mcp_call *c, const char *message)
{
	cJSON *p;
	char *msg;
	uint64_t now = mono_ms();

	if (c->progress == NULL ||
	    (c->progress_n > 0 && now - c->last_progress_ms < MCP_PROGRESS_MS))
		return;
	c->last_progress_ms = now;
	p = cJSON_CreateObject();
	cJSON_AddItemToObject(
	    p, "progressToken", cJSON_Duplicate(c->progress, 0));
	cJSON_AddNumberToObject(p, "progress", (double)++c->progress_n);
	if (message != NULL)
		cJSON_AddStringToObject(p, "message", message);
	msg = jsonrpc_notification("notifications/progress", p);
	c->send(c->conn, msg, 0);
	free(msg);
}

/* A job of a call ended: let the tool make the result, unless the call
 * was cancelled (then nothing is sent). */
static void
call_job_done(struct mcp_job *j)
{
	struct mcp_call *c = j->data;

	if (j->cancelled) {
		call_log(c, "cancelled", NULL);
		call_free(c);
		return;
	}
	c->finish(c);
}

/* Run a vmux command for the call; finish makes the answer when it ends.
 * 0, or -1 with *cause. */
int
mcp_call_run(struct mcp_call *c, char *const argv[], const void *in,
    size_t in_len, void (*finish)(struct mcp_call *), char **cause)
{
	if ((c->job = mcp_job_start(argv, in, in_len, cause)) == NULL)
		return -1;
	c->job->data = c;
	c->job->on_done = call_job_done;
	c->finish = finish;
	return 0;
}

/* Send an error answer to id. */
static void
send_error(mcp_send_fn send, void *conn, const cJSON *id, int code,
    const char *message)
{
	char *msg = jsonrpc_error(id, code, message);

	send(conn, msg, 1);
	free(msg);
}

/* Send result (taken over) as the answer to id. */
static void
send_result(mcp_send_fn send, void *conn, const cJSON *id, cJSON *result)
{
	char *msg = jsonrpc_result(id, result);

	send(conn, msg, 1);
	free(msg);
}

/* initialize: agree on a version and say what we serve. */
static cJSON *
do_initialize(const cJSON *params)
{
	const cJSON *v =
	    cJSON_GetObjectItemCaseSensitive(params, "protocolVersion");
	const char *version = mcp_versions[0];
	int known;
	cJSON *res = cJSON_CreateObject(), *caps, *info;

	known = cJSON_IsString(v) ? mcp_version_index(v->valuestring) : -1;
	if (known >= 0)
		version = mcp_versions[known];
	cJSON_AddStringToObject(res, "protocolVersion", version);
	caps = cJSON_AddObjectToObject(res, "capabilities");
	cJSON_AddBoolToObject(
	    cJSON_AddObjectToObject(caps, "tools"), "listChanged", 0);
	cJSON_AddObjectToObject(caps, "logging");
	info = cJSON_AddObjectToObject(res, "serverInfo");
	cJSON_AddStringToObject(info, "name", "vmux");
	cJSON_AddStringToObject(info, "title", "vmux: microVM workspaces");
	cJSON_AddStringToObject(info, "version", VMUX_VERSION);
	cJSON_AddStringToObject(res, "instructions",
	    "vmux gives you persistent Linux microVM sessions. Create one "
	    "with session_create, run commands with exec, keep a terminal "
	    "with shell_open/shell_write/shell_read, move files with "
	    "file_read/file_write/copy_in/copy_out. A person may watch "
	    "your shells and take the keyboard; shell_write then fails "
	    "until it is handed back.");
	return res;
}

/* tools/call: check the name and arguments' shape, start the tool. */
static void
do_call(struct mcp_server *s, const struct jsonrpc_msg *m, mcp_send_fn send,
    void *conn, uint64_t client)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(m->params, "name");
	const cJSON *args =
	    cJSON_GetObjectItemCaseSensitive(m->params, "arguments");
	const cJSON *meta =
	    cJSON_GetObjectItemCaseSensitive(m->params, "_meta");
	const cJSON *tok =
	    cJSON_GetObjectItemCaseSensitive(meta, "progressToken");
	const struct mcp_tool *t;
	struct mcp_call *c;
	char *cause = NULL, *why;
	int n = 0;

	if (!cJSON_IsString(name)) {
		send_error(send, conn, m->id, JSONRPC_INVALID_PARAMS,
		    "tools/call needs \"name\", a string");
		return;
	}
	if ((t = mcp_tool_find(name->valuestring)) == NULL) {
		char *safe = str_printable(name->valuestring, 0);

		xasprintf(&why, "unknown tool: %.64s", safe);
		send_error(send, conn, m->id, JSONRPC_INVALID_PARAMS, why);
		free(why);
		free(safe);
		return;
	}
	if (args != NULL && !cJSON_IsObject(args)) {
		send_error(send, conn, m->id, JSONRPC_INVALID_PARAMS,
		    "tools/call: \"arguments\" must be an object");
		return;
	}
	for (struct mcp_call *o = s->calls; o != NULL; o = o->next)
		n++;
	c = xcalloc(1, sizeof *c);
	c->server = s;
	c->tool = t;
	c->id = cJSON_Duplicate(m->id, 0);
	if (cJSON_IsString(tok) || cJSON_IsNumber(tok))
		c->progress = cJSON_Duplicate(tok, 0);
	c->conn = conn;
	c->client = client;
	c->send = send;
	c->next = s->calls;
	s->calls = c;
	if (n >= MCP_CALLS_MAX) {
		mcp_call_fail(c,
		    "%d calls are under way, the most this server runs at "
		    "once: wait for one to end",
		    n);
		return;
	}
	/* A bad argument, a refusal or a command that cannot start is the
	 * tool's error (isError): the agent reads it and corrects itself.
	 * args may be NULL (no arguments): lookups in it find nothing. */
	if (t->start(c, args, &cause) != 0) {
		mcp_call_fail(c, "%s", cause);
		free(cause);
	}
}

/* notifications/cancelled: end the client's call with that request id. */
static void
do_cancel(struct mcp_server *s, const cJSON *params, uint64_t client)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(params, "requestId");

	if (id == NULL)
		return;
	for (struct mcp_call *c = s->calls; c != NULL; c = c->next) {
		if (c->client != client || !cJSON_Compare(c->id, id, 1))
			continue;
		if (c->job != NULL)
			mcp_job_cancel(c->job,
			    strcmp(c->tool->name, "exec") == 0 ? 9 : 15);
		return;
	}
}

/*
 * Handle one message from conn: its answer, if it has one, goes out
 * through send(conn, text) now or when its command ends. client says who
 * sent it (stdio: 0; HTTP: its session), so that a cancellation, which
 * may come on another conn, reaches that client's calls only.
 */
void
mcp_handle(struct mcp_server *s, const char *text, size_t len, mcp_send_fn send,
    void *conn, uint64_t client)
{
	struct jsonrpc_msg m;
	const char *meth;

	if (jsonrpc_parse(text, len, &m) != 0) {
		send_error(send, conn, m.id, m.error, m.message);
		jsonrpc_msg_free(&m);
		return;
	}
	meth = m.method;
	if (m.kind == JSONRPC_RESPONSE) {
		/* we send no requests that wait for one: dropped */
	} else if (m.kind == JSONRPC_NOTIFICATION) {
		if (strcmp(meth, "notifications/cancelled") == 0)
			do_cancel(s, m.params, client);
		/* initialized, roots/list_changed, ...: nothing to do */
	} else if (strcmp(meth, "initialize") == 0)
		send_result(send, conn, m.id, do_initialize(m.params));
	else if (strcmp(meth, "ping") == 0)
		send_result(send, conn, m.id, cJSON_CreateObject());
	else if (strcmp(meth, "tools/list") == 0) {
		cJSON *res = cJSON_CreateObject();

		cJSON_AddItemToObject(res, "tools", mcp_tools_list());
		send_result(send, conn, m.id, res);
	} else if (strcmp(meth, "tools/call") == 0)
		do_call(s, &m, send, conn, client);
	else if (strcmp(meth, "logging/setLevel") == 0)
		send_result(send, conn, m.id, cJSON_CreateObject());
	else {
		char *why, *safe = str_printable(meth, 0);

		xasprintf(&why, "method not found: %.64s", safe);
		send_error(send, conn, m.id, JSONRPC_METHOD_NOT_FOUND, why);
		free(why);
		free(safe);
	}
	jsonrpc_msg_free(&m);
}
