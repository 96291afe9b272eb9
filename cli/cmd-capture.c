/*
 * cmd-capture.c: `vmux capture NAME SHELL_ID`: what a shell printed, read
 * without attaching, as tmux's capture-pane. By cursor (a byte offset in
 * the shell's output, from read_shell): the output from --cursor on, and
 * the cursor to read from next time. --wait-idle MS waits until the shell
 * has been quiet that long (or --timeout), so a command's output is whole;
 * --plain gives the screen instead, rendered by libvterm from the
 * scrollback the agent keeps: text, no escapes (what a chat model reads).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vterm.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

#define CAPTURE_REQUEST_S  15
#define CAPTURE_MAX_CHARS  65536
#define CAPTURE_TIMEOUT_S  10
#define CAPTURE_IDLE_MAX   60000
#define CAPTURE_SCREEN_MAX (64 << 20) /* scrollback read for --plain */
#define CAPTURE_READ_MAX   1048576    /* the agent's most a read_shell */

static int cmd_capture_exec(struct args *);

static const struct cmd_opt cmd_capture_opts[] = {
    {"cursor", 'c', "N", 0,
        "read from cursor N (default: the oldest output kept); the result "
        "says next_cursor, where the next read starts"},
    {"wait-idle", 'w', "MS", 0,
        "first wait until the shell has printed nothing for MS "
        "milliseconds (1-60000), or --timeout passed"},
    {"timeout", 't', "S", 0, "wait at most S seconds (1-600; default 10)"},
    {"plain", 'p', NULL, 0,
        "print the shell's screen as text (rendered with libvterm from its "
        "scrollback), not its output"},
    {"max-chars", 'm', "N", 0,
        "read at most N characters of output (1-1048576; default 65536)"},
    {"json", 0, NULL, 0,
        "print {\"session\", \"shell_id\", \"cursor\", \"next_cursor\", "
        "\"output\" (or with --plain \"screen\", \"cols\", \"rows\"), "
        "\"truncated\", \"idle\", \"state\", \"exit_code\"} as JSON"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_capture_entry = {
    .name = "capture",
    .pre = "NAME SHELL_ID",
    .summary = "Print what a shell of session NAME printed, without "
               "attaching (tmux's capture-pane): its output from a cursor "
               "on, or with --plain its screen as text. --wait-idle waits "
               "for the output to settle first.",
    .flags = CMD_READONLY,
    .opts = cmd_capture_opts,
    .min_args = 2,
    .max_args = 2,
    .exec = cmd_capture_exec,
};

/* What the reads gathered. */
struct capture {
	char *out; /* output read (UTF-8) */
	size_t len;
	size_t chars;         /* ... in characters */
	int64_t cursor, next; /* where out starts, where the next read does */
	int truncated;        /* the ring had dropped bytes asked for */
	int idle;             /* the shell was quiet for wait-idle */
	cJSON *record;        /* the last reply (the shell's record) */
};

/* Characters (not bytes) in UTF-8 text. */
static size_t
utf8_chars(const char *s, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += ((unsigned char)s[i] & 0xc0) != 0x80;
	return k;
}

/* One read_shell; the reply or NULL with *cause. */
static cJSON *
capture_read(const struct vsock_target *t, const char *id, int64_t cursor,
    int max_chars, int wait_ms, char **cause)
{
	return cli_agent(t,
	    agent_req_read_shell(id, cursor, max_chars, wait_ms),
	    CAPTURE_REQUEST_S + wait_ms / 1000, cause);
}

/* A number field of a reply, or def. */
static double
reply_num(const cJSON *o, const char *key, double def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : def;
}

/*
 * Read from cursor (< 0: the oldest kept) until max_chars were read or the
 * output kept ends, and, with idle_ms, until a wait of idle_ms saw nothing
 * new (the shell is quiet) or the shell ended; never past the deadline.
 * 0, or -1 with *cause.
 */
static int
capture_gather(const struct vsock_target *t, const char *id, int64_t cursor,
    size_t max_chars, int idle_ms, uint64_t deadline, struct capture *c,
    char **cause)
{
	const cJSON *out, *state;
	cJSON *reply;
	size_t n, want;
	int first = 1, wait;

	for (;;) {
		wait = idle_ms;
		if (wait > 0 && mono_ms() + (uint64_t)wait > deadline)
			wait = mono_ms() >= deadline
			    ? 0
			    : (int)(deadline - mono_ms());
		want = max_chars - c->chars; /* a read gives at most 1 Mi */
		reply = capture_read(t, id, cursor,
		    want > CAPTURE_READ_MAX ? CAPTURE_READ_MAX : (int)want,
		    wait, cause);
		if (reply == NULL)
			return -1;
		out = cJSON_GetObjectItemCaseSensitive(reply, "output");
		n = cJSON_IsString(out) ? strlen(out->valuestring) : 0;
		if (first)
			c->cursor = (int64_t)reply_num(reply, "cursor", 0);
		first = 0;
		if (cJSON_IsTrue(
		        cJSON_GetObjectItemCaseSensitive(reply, "truncated")))
			c->truncated = 1;
		c->out = xrealloc(c->out, c->len + n + 1);
		memcpy(c->out + c->len, n > 0 ? out->valuestring : "", n);
		c->chars += utf8_chars(c->out + c->len, n);
		c->len += n;
		c->out[c->len] = '\0';
		cursor = (int64_t)reply_num(reply, "next_cursor", 0);
		c->next = cursor;
		cJSON_Delete(c->record);
		c->record = reply;
		state = cJSON_GetObjectItemCaseSensitive(reply, "state");
		if (c->chars >= max_chars)
			return 0;
		if (n > 0 &&
		    cJSON_IsTrue(
		        cJSON_GetObjectItemCaseSensitive(reply, "more"))) {
			if (mono_ms() >= deadline)
				return 0;
			continue; /* kept output still to read */
		}
		if (idle_ms <= 0)
			return 0;
		if (!cJSON_IsString(state) ||
		    strcmp(state->valuestring, "running") != 0)
			return 0;
		if (n == 0) {
			c->idle = wait >= idle_ms;
			return 0;
		}
		if (mono_ms() >= deadline)
			return 0;
	}
}

/*
 * The screen of a cols x rows terminal after bytes[0..len): its rows as
 * text, trailing blanks and blank rows at the end left out (caller frees).
 */
static char *
screen_text(const char *bytes, size_t len, int cols, int rows)
{
	VTerm *vt = vterm_new(rows, cols);
	VTermScreen *vs;
	VTermRect rect;
	char *line = xmalloc((size_t)cols * 4 * 4 + 1), *out = NULL;
	size_t used = 0, n, keep = 0;

	vterm_set_utf8(vt, 1);
	vs = vterm_obtain_screen(vt);
	vterm_screen_reset(vs, 1);
	vterm_input_write(vt, bytes, len);
	for (int r = 0; r < rows; r++) {
		rect = (VTermRect){r, r + 1, 0, cols};
		n = vterm_screen_get_text(vs, line, (size_t)cols * 16, rect);
		while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\0'))
			n--;
		out = xrealloc(out, used + n + 2);
		memcpy(out + used, line, n);
		used += n;
		if (n > 0)
			keep = used; /* the last row with text ends here */
		out[used++] = '\n';
	}
	out[keep] = '\0';
	free(line);
	vterm_free(vt);
	return out;
}

/* Parse the options into numbers; 0 or -1 with *cause. */
static int
capture_opts(const struct args *a, long long *cursor, long long *idle,
    long long *timeout, long long *max, char **cause)
{
	const char *s;

	*cursor = -1;
	*idle = 0;
	*timeout = CAPTURE_TIMEOUT_S;
	*max = CAPTURE_MAX_CHARS;
	if ((s = args_get(a, "cursor")) != NULL &&
	    option_number("--cursor", s, 0, (1LL << 53), cursor, cause) != 0)
		return -1;
	if ((s = args_get(a, "wait-idle")) != NULL &&
	    option_number("--wait-idle", s, 1, CAPTURE_IDLE_MAX, idle, cause) !=
	        0)
		return -1;
	if ((s = args_get(a, "timeout")) != NULL &&
	    option_number("--timeout", s, 1, 600, timeout, cause) != 0)
		return -1;
	if ((s = args_get(a, "max-chars")) != NULL &&
	    option_number("--max-chars", s, 1, 1048576, max, cause) != 0)
		return -1;
	return 0;
}

/* Read, render, print. */
static int
cmd_capture_exec(struct args *a)
{
	struct session_record r;
	struct vsock_target t;
	struct capture c, all;
	long long cursor, idle, timeout, max;
	char *cause = NULL, *screen = NULL;
	int rc, cols = 0, rows = 0;
	double dc, dr;
	cJSON *res, *v;

	if (session_name_valid(a->argv[0], &cause) != 0 ||
	    shell_id_valid(a->argv[1], &cause) != 0 ||
	    capture_opts(a, &cursor, &idle, &timeout, &max, &cause) != 0) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	if ((rc = cli_running_session(a->argv[0], &r, &t)) != 0)
		return rc;
	memset(&c, 0, sizeof c);
	rc = capture_gather(&t, a->argv[1], cursor, (size_t)max, (int)idle,
	    mono_ms() + (uint64_t)timeout * 1000, &c, &cause);
	if (rc == 0 && args_has(a, "plain")) {
		/* the guest's numbers: clamped as the TUI's panes are (a
		 * screen of 4096x4096 would be 577 MiB) */
		dc = reply_num(c.record, "cols", 80);
		dr = reply_num(c.record, "rows", 24);
		if (!(dc >= 1 && dr >= 1)) /* NaN too */
			dc = 80, dr = 24;
		cols = dc > SCREEN_MAX_COLS ? SCREEN_MAX_COLS : (int)dc;
		rows = dr > SCREEN_MAX_ROWS ? SCREEN_MAX_ROWS : (int)dr;
		/* the whole scrollback kept, rendered */
		memset(&all, 0, sizeof all);
		rc = capture_gather(&t, a->argv[1], -1, CAPTURE_SCREEN_MAX, 0,
		    mono_ms() + CAPTURE_REQUEST_S * 1000, &all, &cause);
		if (rc == 0)
			screen = screen_text(all.out != NULL ? all.out : "",
			    all.len, cols, rows);
		free(all.out);
		cJSON_Delete(all.record);
	}
	record_free(&r);
	if (rc != 0) {
		cli_error("%s", cause);
		free(cause);
		free(c.out);
		cJSON_Delete(c.record);
		return EXIT_VMUX;
	}
	if (!cli_json()) {
		if (screen != NULL)
			printf("%s\n", screen);
		else
			fwrite(c.out, 1, c.len, stdout);
	}
	res = cJSON_CreateObject();
	cJSON_AddStringToObject(res, "session", a->argv[0]);
	cJSON_AddStringToObject(res, "shell_id", a->argv[1]);
	cJSON_AddNumberToObject(res, "cursor", (double)c.cursor);
	cJSON_AddNumberToObject(res, "next_cursor", (double)c.next);
	if (screen != NULL) {
		cJSON_AddStringToObject(res, "screen", screen);
		cJSON_AddNumberToObject(res, "cols", cols);
		cJSON_AddNumberToObject(res, "rows", rows);
	} else
		cJSON_AddStringToObject(res, "output", c.out);
	cJSON_AddBoolToObject(res, "truncated", c.truncated);
	if (idle > 0)
		cJSON_AddBoolToObject(res, "idle", c.idle);
	v = cJSON_GetObjectItemCaseSensitive(c.record, "state");
	cJSON_AddItemToObject(res, "state", cJSON_Duplicate(v, 0));
	v = cJSON_GetObjectItemCaseSensitive(c.record, "exit_code");
	if (v != NULL)
		cJSON_AddItemToObject(res, "exit_code", cJSON_Duplicate(v, 0));
	cli_result(res);
	free(screen);
	free(c.out);
	cJSON_Delete(c.record);
	return 0;
}
