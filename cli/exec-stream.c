/*
 * exec-stream.c: the host side of the agent's exec_stream for `vmux exec`.
 *
 * After the agent's {"pid"} line the connection carries frames both ways
 * (proto/attach.h): STDOUT and STDERR bytes are written to our stdout and
 * stderr as they arrive (or kept for --json), our stdin goes out as STDIN
 * frames and its end as STDIN_EOF, SIGINT, SIGTERM and SIGHUP are passed
 * on as SIGNAL frames, and the EXIT frame ends the run. One poll(2) loop;
 * stdin is read only while the outgoing queue has room, so memory stays
 * bounded however much flows. A write that fails on our side (a full disk,
 * a closed pipe) ends the run: closing the connection makes the agent kill
 * the command.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "proto/attach.h"
#include "session/session.h"
#include "cli.h"

#define STDIN_CHUNK 65536

static volatile sig_atomic_t exec_signal; /* caught, not yet passed on */

/* Remember a signal for the loop to pass on. */
static void
exec_on_signal(int sig)
{
	exec_signal = sig;
}

static void bytes_json(cJSON *, const char *name, const void *, size_t);

/* --json-lines: print one piece of output as {"stdout": TEXT} (or
 * "stdout_base64" when not UTF-8) on its own line, at once. */
static int
exec_line(const char *name, const struct attach_frame *f,
    struct exec_outcome *o, char **cause)
{
	cJSON *obj = cJSON_CreateObject();
	char *line;
	int rc = 0;

	bytes_json(obj, name, f->payload, f->len);
	line = cJSON_PrintUnformatted(obj);
	cJSON_Delete(obj);
	if (printf("%s\n", line) < 0 || fflush(stdout) != 0) {
		o->broken_pipe = errno == EPIPE;
		xasprintf(
		    cause, "writing the command's output: %s", strerror(errno));
		rc = -1;
	}
	free(line);
	return rc;
}

/* Write one output frame to fd or its capture; 0, or -1 with *cause. */
static int
exec_output(const struct attach_frame *f, struct exec_outcome *o, char **cause)
{
	int out = f->type == VMUX_EXEC_STDOUT;
	struct headtail *cap = out ? &o->out : &o->err;

	if (o->capture) {
		headtail_add(cap, f->payload, f->len);
		if (o->lines && f->len > 0)
			return exec_line(
			    out ? "stdout" : "stderr", f, o, cause);
		return 0;
	}
	if (f->len > 0 &&
	    write_all(out ? STDOUT_FILENO : STDERR_FILENO, f->payload, f->len) <
	        0) {
		/* a reader that left (| head) ends us quietly, as it ends any
		 * Unix tool: status 141, no message */
		o->broken_pipe = errno == EPIPE;
		xasprintf(cause, "writing the command's %s: %s",
		    out ? "output" : "errors", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Drive an exec_stream connection (sock, with pre_len bytes already read
 * past the answer line) to the command's end. forward_stdin: send our stdin,
 * else its end at once. Returns 0 with *o filled, or -1 with *cause (the
 * stream takes sock over and closes it, which stops a command still
 * running).
 */
int
exec_stream_run(int sock, const uint8_t *pre, size_t pre_len, int forward_stdin,
    struct exec_outcome *o, char **cause)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction sa, old[nitems(sigs)];
	struct attach_client c;
	struct attach_frame f;
	struct pollfd pfd[2];
	uint8_t *chunk = xmalloc(STDIN_CHUNK);
	const char *name;
	int stdin_open = forward_stdin, rc = -1, r, n;
	ssize_t got;

	attach_client_init(&c, sock, pre, pre_len);
	if (!stdin_open)
		attach_client_queue(&c, VMUX_EXEC_STDIN_EOF, NULL, 0);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = exec_on_signal; /* no SA_RESTART: poll wakes up */
	for (size_t i = 0; i < nitems(sigs); i++)
		sigaction(sigs[i], &sa, &old[i]);
	exec_signal = 0;

	for (;;) {
		/* Frames already here first: the buffer may hold several. */
		while ((r = attach_client_next(&c, &f)) == 1) {
			if (f.type == VMUX_EXEC_STDOUT ||
			    f.type == VMUX_EXEC_STDERR) {
				if (exec_output(&f, o, cause) != 0)
					goto out;
			} else if (f.type == VMUX_EXEC_EXIT &&
			    f.len == VMUX_EXEC_EXIT_LEN) {
				o->code = (int)vmux_get_u32(f.payload);
				o->sig = (int)vmux_get_u32(f.payload + 4);
				o->timed_out = f.payload[8] != 0;
				rc = 0;
				goto out;
			} else if (f.type == VMUX_ATTACH_ERROR)
				cli_error("agent: %.*s", (int)f.len,
				    (const char *)f.payload);
		}
		if (r < 0) {
			xasprintf(cause, "the agent's stream is broken");
			goto out;
		}
		if (c.eof) {
			xasprintf(cause,
			    "the agent closed the connection "
			    "before the command's exit status");
			goto out;
		}
		if (exec_signal != 0) {
			name = sigabbrev_np(exec_signal);
			exec_signal = 0;
			if (name != NULL)
				attach_client_queue(
				    &c, VMUX_ATTACH_SIGNAL, name, strlen(name));
		}

		pfd[0] = (struct pollfd){sock, POLLIN, 0};
		if (attach_client_pending(&c))
			pfd[0].events |= POLLOUT;
		n = 1;
		if (stdin_open &&
		    attach_client_room(&c) >= STDIN_CHUNK + VMUX_ATTACH_HDR)
			pfd[n++] = (struct pollfd){STDIN_FILENO, POLLIN, 0};
		if (poll(pfd, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			xasprintf(cause, "poll: %s", strerror(errno));
			goto out;
		}
		if (n > 1 && pfd[1].revents != 0) {
			got = read(STDIN_FILENO, chunk, STDIN_CHUNK);
			if (got > 0)
				attach_client_queue(
				    &c, VMUX_EXEC_STDIN, chunk, (size_t)got);
			else if (got == 0 || errno != EINTR) {
				/* end of input (a read error ends it too) */
				attach_client_queue(
				    &c, VMUX_EXEC_STDIN_EOF, NULL, 0);
				stdin_open = 0;
			}
		}
		/* The command may have ended and the agent closed before our
		 * stdin's end went out: its EXIT frame is still to be read. */
		if (attach_client_pending(&c) && attach_client_flush(&c) < 0) {
			attach_client_drop_output(&c);
			stdin_open = 0;
		}
		if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			got = attach_client_read(&c);
			if (got < 0 && got != -EAGAIN) {
				xasprintf(cause, "receiving from the agent: %s",
				    strerror((int)-got));
				goto out;
			}
		}
	}
out:
	for (size_t i = 0; i < nitems(sigs); i++)
		sigaction(sigs[i], &old[i], NULL);
	attach_client_free(&c);
	free(chunk);
	return rc;
}

/* Add bytes as "name" (UTF-8 text) or "name_base64". */
static void
bytes_json(cJSON *obj, const char *name, const void *p, size_t n)
{
	char key[32], *b64, *text;

	if (utf8_valid(p, n) && memchr(p, '\0', n) == NULL) {
		text = xstrndup(p, n);
		cJSON_AddStringToObject(obj, name, text);
		free(text);
	} else {
		snprintf(key, sizeof key, "%s_base64", name);
		b64 = base64_encode(p, n);
		cJSON_AddStringToObject(obj, key, b64);
		free(b64);
	}
}

/* Add a captured stream as bytes_json does; one that was cut (its middle
 * left out, headtail.c) adds "name_truncated": true and "name_bytes". */
static void
capture_json(cJSON *obj, const char *name, const struct headtail *c)
{
	char key[32], *kept;
	size_t len;

	kept = headtail_result(c, &len, NULL);
	bytes_json(obj, name, kept, len);
	free(kept);
	if (headtail_cut(c)) {
		snprintf(key, sizeof key, "%s_truncated", name);
		cJSON_AddBoolToObject(obj, key, 1);
		snprintf(key, sizeof key, "%s_bytes", name);
		cJSON_AddNumberToObject(obj, key, (double)c->total);
	}
}

/*
 * The --json result of a run: {"exit_code", "signal", "timed_out",
 * "duration_ms", "stdout", "stderr"}, each stream as text or, when it is
 * not valid UTF-8 (or holds NUL), as "stdout_base64" / "stderr_base64"; a
 * stream past its limit keeps its head and tail around a notice of the
 * bytes left out, and adds "stdout_truncated": true and "stdout_bytes" (all
 * it printed).
 */
cJSON *
exec_capture_json(const struct exec_outcome *o)
{
	cJSON *obj = cJSON_CreateObject();

	if (o->timed_out)
		cJSON_AddNullToObject(obj, "exit_code");
	else
		cJSON_AddNumberToObject(obj, "exit_code", o->code);
	if (o->sig > 0)
		cJSON_AddStringToObject(obj, "signal", sigabbrev_np(o->sig));
	else
		cJSON_AddNullToObject(obj, "signal");
	cJSON_AddBoolToObject(obj, "timed_out", o->timed_out);
	cJSON_AddNumberToObject(obj, "duration_ms", (double)o->duration_ms);
	capture_json(obj, "stdout", &o->out);
	capture_json(obj, "stderr", &o->err);
	return obj;
}
