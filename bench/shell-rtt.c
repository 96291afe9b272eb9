/*
 * shell-rtt.c: keystroke-to-echo benchmark through attach_shell.
 *
 * Usage: shell-rtt NAME [KEYSTROKES]. Opens a shell in session NAME,
 * attaches to it the way `vmux shell` does, waits for the prompt, then
 * types one letter at a time as an INPUT frame and times until the DATA
 * frame carrying its echo arrives: that is what a user feels when typing.
 * After each letter a DEL (erase) is typed and its echo awaited untimed, so
 * the command line stays empty and the shell's line editor does the same
 * work every time. Prints the median, p90, p99 and min in milliseconds,
 * then closes the shell.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/attach.h"
#include "common/common.h"
#include "proto/proto.h"
#include "session/session.h"
#include "stats.h"

#define RTT_SHELL_ID "bench-rtt"
#define RTT_WAIT_MS  10000 /* one echo; beyond this the run is broken */

/* Send one request and drop the reply; 0, or -1 with *cause set. */
static int
call(const struct vsock_target *t, cJSON *req, char **cause)
{
	uint64_t dl = mono_ms() + 15000;
	cJSON *reply = agent_call(t, req, dl, dl, NULL, NULL, cause);
	cJSON *err;

	cJSON_Delete(req);
	if (reply == NULL)
		return -1;
	err = cJSON_GetObjectItemCaseSensitive(reply, "error");
	if (cJSON_IsString(err)) {
		xasprintf(cause, "agent: %s", err->valuestring);
		cJSON_Delete(reply);
		return -1;
	}
	cJSON_Delete(reply);
	return 0;
}

/* A request naming our shell. */
static cJSON *
shell_request(const char *action)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "action", action);
	cJSON_AddStringToObject(o, "shell_id", RTT_SHELL_ID);
	return o;
}

/*
 * Read frames until a DATA frame contains byte `want` (any byte when want
 * is -1 and something arrived). 0 when seen, -1 on EOF, a broken stream or
 * the deadline.
 */
static int
wait_for_byte(struct attach_client *c, int want, uint64_t deadline)
{
	struct attach_frame f;
	const uint8_t *bytes;
	uint64_t cursor;
	size_t len;
	ssize_t r;

	for (;;) {
		while ((r = attach_client_next(c, &f)) == 1) {
			if (f.type != VMUX_ATTACH_DATA)
				continue;
			if (attach_decode_data(&f, &cursor, &bytes, &len) != 0)
				return -1;
			if (len > 0 &&
			    (want < 0 || memchr(bytes, want, len) != NULL))
				return 0;
		}
		if (r < 0 || c->eof)
			return -1;
		if (wait_fd(c->fd, POLLIN, deadline) <= 0)
			return -1;
		r = attach_client_read(c);
		if (r < 0 && r != -EAGAIN)
			return -1;
	}
}

/* Queue one INPUT byte and send it. */
static int
type_byte(struct attach_client *c, uint8_t b)
{
	if (attach_client_queue(c, VMUX_ATTACH_INPUT, &b, 1) != 0)
		return -1;
	return attach_client_flush(c);
}

int
main(int argc, char **argv)
{
	struct session_record rec;
	struct vsock_target target;
	struct attach_client client;
	cJSON *record = NULL, *req;
	char *cause = NULL, *home;
	int n = argc > 2 ? atoi(argv[2]) : 200, status = 0;

	if (argc < 2 || n < 1) {
		fprintf(stderr, "usage: shell-rtt NAME [KEYSTROKES]\n");
		return 2;
	}
	if ((home = session_home(&cause)) == NULL ||
	    record_load(home, argv[1], &rec, &cause) != 0) {
		fprintf(stderr, "shell-rtt: %s\n", cause);
		return 1;
	}
	session_target(&rec, &target);

	/* The login shell: the line editor a user of the guest gets. */
	req = shell_request("open_shell");
	if (call(&target, req, &cause) != 0 ||
	    attach_shell_open(&target, RTT_SHELL_ID, -1, NULL,
	        mono_ms() + 15000, &client, &record, &cause) != 0) {
		fprintf(stderr, "shell-rtt: %s\n", cause);
		return 1;
	}
	/*
	 * Let the banner and prompt finish (output, then 500 ms of quiet), so
	 * no letter typed below can be matched by text already on its way.
	 */
	if (wait_for_byte(&client, -1, mono_ms() + RTT_WAIT_MS) != 0) {
		fprintf(stderr, "shell-rtt: no prompt from the shell\n");
		return 1;
	}
	for (int i = 0; i < 40; i++) /* at most 20 s of chatter */
		if (wait_for_byte(&client, -1, mono_ms() + 500) != 0)
			break;

	double *ms = xcalloc((size_t)n, sizeof *ms);
	for (int i = 0; i < n; i++) {
		uint8_t key = (uint8_t)('a' + i % 26);
		double t0 = bench_now_ms();

		if (type_byte(&client, key) != 0 ||
		    wait_for_byte(&client, key, mono_ms() + RTT_WAIT_MS) != 0) {
			fprintf(stderr, "shell-rtt: no echo of keystroke %d\n",
			    i + 1);
			status = 1;
			break;
		}
		ms[i] = bench_now_ms() - t0;
		/* DEL echoes as "\b \b" (or the editor's own redraw). */
		if (type_byte(&client, 0x7f) != 0 ||
		    wait_for_byte(&client, '\b', mono_ms() + RTT_WAIT_MS) !=
		        0) {
			fprintf(
			    stderr, "shell-rtt: no echo of erase %d\n", i + 1);
			status = 1;
			break;
		}
	}
	if (status == 0)
		bench_report("keystroke to echo (attach_shell)", ms, n);
	attach_client_free(&client);
	if (call(&target, shell_request("close_shell"), &cause) != 0) {
		fprintf(stderr, "shell-rtt: %s\n", cause);
		status = 1;
	}
	free(ms);
	cJSON_Delete(record);
	record_free(&rec);
	free(home);
	return status;
}
