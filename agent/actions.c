/*
 * actions.c: the shell actions of the JSON protocol, run in the event loop.
 *
 * Every reply about a shell is its record (shell_record) plus the action's
 * own fields. read_shell returns output by cursor: "cursor" where the
 * returned output starts, "next_cursor" where the next read should start,
 * "truncated" when the ring had evicted the requested cursor, "more" when
 * output beyond next_cursor is already there. The output is UTF-8 (see
 * utf8.c): a character cut by max_chars or by the end of the data so far is
 * left for the next read. With wait_ms, a read at the end of the output
 * waits that long for some (a long poll) instead of answering empty.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

/* Reply with an error formatted like printf. */
static void reply_errorf(struct agent *a, struct conn *c, const char *code,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void
reply_errorf(
    struct agent *a, struct conn *c, const char *code, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	conn_reply_code(a, c, code, msg);
	free(msg);
}

/* Answer a read: output from `from` (already validated against the ring). */
static void
read_reply(struct agent *a, struct conn *c, struct shell *s, uint64_t from,
    int truncated, size_t max_chars)
{
	uint64_t end = s->ring.end;
	size_t avail, take, used, skip = 0;
	uint8_t *tmp;
	struct buf b;
	cJSON *obj;
	int final;

	avail = (size_t)(end - from);
	take = avail < max_chars * 4 ? avail : max_chars * 4;
	tmp = xmalloc(take ? take : 1);
	take = ring_copy(&s->ring, from, tmp, take);
	/* After an eviction the oldest byte may be mid-character. */
	while (
	    truncated && skip < take && skip < 3 && (tmp[skip] & 0xc0) == 0x80)
		skip++;
	/* No more output can come: a cut character at the end is invalid. */
	final = s->state != SHELL_RUNNING && (s->master < 0 || s->pty_eof) &&
	    take == avail;

	buf_init(&b);
	utf8_json_string(&b, tmp + skip, take - skip, max_chars, final, &used);
	free(tmp);

	obj = shell_record(s);
	cJSON_AddNumberToObject(obj, "cursor", (double)(from + skip));
	cJSON_AddNumberToObject(
	    obj, "next_cursor", (double)(from + skip + used));
	cJSON_AddRawToObject(obj, "output", buf_cstr(&b));
	cJSON_AddBoolToObject(obj, "truncated", truncated);
	cJSON_AddBoolToObject(obj, "more", from + skip + used < end);
	buf_free(&b);
	c->after = AFTER_CLOSE;
	conn_reply(a, c, obj);
}

/* read_shell. */
static void
do_read(
    struct agent *a, struct conn *c, struct shell *s, struct agent_request *req)
{
	uint64_t oldest = ring_oldest(&s->ring), from;
	int truncated = 0;

	if (req->has_cursor && req->cursor > s->ring.end) {
		reply_errorf(a, c, VMUX_E_BAD_REQUEST,
		    "cursor %llu is past the end of the output (%llu)",
		    (unsigned long long)req->cursor,
		    (unsigned long long)s->ring.end);
		return;
	}
	from = req->has_cursor ? req->cursor : oldest;
	if (from < oldest) {
		from = oldest;
		truncated = 1;
	}
	if (from == s->ring.end && req->wait_ms > 0 &&
	    s->state == SHELL_RUNNING && !s->exited) {
		c->state = CONN_WAIT;
		c->wait = WAIT_READ;
		c->shell = s;
		c->wait_cursor = from;
		c->wait_max_chars = req->max_chars;
		c->deadline = a->now + (uint64_t)req->wait_ms;
		return;
	}
	read_reply(a, c, s, from, truncated, req->max_chars);
}

/* A waiting read_shell: answer once there is output, an end or a timeout. */
void
actions_wait_check(struct agent *a, struct conn *c)
{
	struct shell *s = c->shell;
	uint64_t from = c->wait_cursor;
	int truncated = 0;

	if (s == NULL || s->dead) {
		conn_reply_code(a, c, VMUX_E_NOT_RUNNING, "shell was closed");
		return;
	}
	if (s->ring.end == from && s->state == SHELL_RUNNING && !s->exited &&
	    a->now < c->deadline)
		return;
	if (from < ring_oldest(&s->ring)) {
		from = ring_oldest(&s->ring);
		truncated = 1;
	}
	c->shell = NULL;
	read_reply(a, c, s, from, truncated, c->wait_max_chars);
}

/* write_shell: input (plus a carriage return, the Enter key). */
static void
do_write(
    struct agent *a, struct conn *c, struct shell *s, struct agent_request *req)
{
	struct buf b;
	cJSON *obj;
	int rc;

	buf_init(&b);
	buf_add(&b, req->input, req->input_len);
	if (req->append_newline)
		buf_add(&b, "\r", 1);
	rc = shell_input(a, s, b.data, b.len);
	if (rc >= 0)
		attach_echo_input(s, NULL, b.data, b.len);
	buf_free(&b);
	if (rc == -EPIPE) {
		reply_errorf(a, c, VMUX_E_NOT_RUNNING,
		    "shell \"%s\" is not running", s->id);
		return;
	}
	if (rc < 0) {
		reply_errorf(a, c, VMUX_E_LIMIT,
		    "shell \"%s\" input buffer is full", s->id);
		return;
	}
	obj = shell_record(s);
	cJSON_AddNumberToObject(obj, "input_length",
	    (double)utf8_count((const uint8_t *)req->input, req->input_len));
	cJSON_AddBoolToObject(obj, "append_newline", req->append_newline);
	conn_reply(a, c, obj);
}

/* attach_shell: answer, then stream (attach.c). */
static void
do_attach(
    struct agent *a, struct conn *c, struct shell *s, struct agent_request *req)
{
	uint64_t oldest = ring_oldest(&s->ring), from;
	char *cause = NULL;
	cJSON *obj;

	if (req->has_cursor && req->cursor > s->ring.end) {
		reply_errorf(a, c, VMUX_E_BAD_REQUEST,
		    "cursor %llu is past the end of the output (%llu)",
		    (unsigned long long)req->cursor,
		    (unsigned long long)s->ring.end);
		return;
	}
	if (a->nattach >= AGENT_MAX_ATTACH) {
		reply_errorf(a, c, VMUX_E_LIMIT,
		    "too many attached clients (%d)", AGENT_MAX_ATTACH);
		return;
	}
	from = req->has_cursor ? req->cursor : oldest;
	if (attach_start(a, c, s, from, req, &cause) != 0) {
		conn_reply_error(a, c, cause);
		free(cause);
		return;
	}
	obj = shell_record(s); /* with this client among the attached */
	cJSON_AddNumberToObject(
	    obj, "cursor", (double)(from < oldest ? oldest : from));
	cJSON_AddBoolToObject(obj, "attached", 1);
	c->after = AFTER_ATTACH;
	conn_reply(a, c, obj);
}

/* Run a shell action for conn. The request stays the caller's. */
void
actions_dispatch(struct agent *a, struct conn *c, struct agent_request *req)
{
	struct shell *s = NULL;
	char *cause = NULL;
	cJSON *obj, *arr;
	int rc;

	c->after = AFTER_CLOSE;
	if (req->action == ACTION_OPEN_SHELL) {
		if (req->shell_id != NULL && shell_find(a, req->shell_id)) {
			reply_errorf(a, c, VMUX_E_SHELL_EXISTS,
			    "shell \"%s\" already exists", req->shell_id);
			return;
		}
		if ((s = shell_open(a, req, &cause)) == NULL) {
			conn_reply_error(a, c, cause);
			free(cause);
			return;
		}
		conn_reply(a, c, shell_record(s));
		return;
	}
	if (req->action == ACTION_LIST_SHELLS) {
		obj = cJSON_CreateObject();
		arr = cJSON_AddArrayToObject(obj, "shells");
		for (s = a->shells; s != NULL; s = s->next) {
			if (!s->dead)
				cJSON_AddItemToArray(arr, shell_record(s));
		}
		conn_reply(a, c, obj);
		return;
	}
	if (req->shell_id == NULL ||
	    (s = shell_find(a, req->shell_id)) == NULL) {
		reply_errorf(a, c, VMUX_E_NO_SHELL, "no shell \"%s\"",
		    req->shell_id ? req->shell_id : "");
		return;
	}
	/* A client that took the keyboard (TAKE) has the terminal to itself:
	 * input and resizes by request wait until it hands it back, as other
	 * attached clients' do. A signal (vmux kill) still goes, as close
	 * does: the way to stop a runaway job whoever types. */
	if (s->keyboard != NULL &&
	    (req->action == ACTION_WRITE_SHELL ||
	        req->action == ACTION_RESIZE_SHELL)) {
		reply_errorf(a, c, VMUX_E_KEYBOARD,
		    "shell \"%s\": %s%s%s has taken the keyboard; input and "
		    "resizes are refused until it is handed back",
		    s->id, s->keyboard->as != NULL ? "\"" : "",
		    s->keyboard->as != NULL ? s->keyboard->as
		                            : "another client",
		    s->keyboard->as != NULL ? "\"" : "");
		return;
	}
	switch (req->action) {
	case ACTION_READ_SHELL:
		do_read(a, c, s, req);
		break;
	case ACTION_WRITE_SHELL:
		do_write(a, c, s, req);
		break;
	case ACTION_SIGNAL_SHELL:
		if ((rc = shell_signal(s, req->signal)) < 0) {
			reply_errorf(a, c, VMUX_E_NOT_RUNNING,
			    "shell \"%s\" is not running%s%s", s->id,
			    rc == -ESRCH ? "" : ": ",
			    rc == -ESRCH ? "" : strerror(-rc));
			break;
		}
		obj = shell_record(s);
		cJSON_AddStringToObject(
		    obj, "signal", signame_name(req->signal));
		conn_reply(a, c, obj);
		break;
	case ACTION_RESIZE_SHELL:
		if (shell_resize(a, s, req->cols, req->rows) < 0) {
			reply_errorf(a, c, VMUX_E_NOT_RUNNING,
			    "shell \"%s\" is not running", s->id);
			break;
		}
		conn_reply(a, c, shell_record(s));
		break;
	case ACTION_CLOSE_SHELL:
		if (s->state == SHELL_CLOSING) {
			reply_errorf(a, c, VMUX_E_NOT_RUNNING,
			    "shell \"%s\" is already closing", s->id);
			break;
		}
		shell_close_begin(a, s, c);
		break;
	case ACTION_ATTACH_SHELL:
		do_attach(a, c, s, req);
		break;
	default:
		NEVER("action not for actions_dispatch");
	}
}
