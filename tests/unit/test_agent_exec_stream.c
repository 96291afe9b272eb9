/*
 * test_agent_exec_stream.c: the exec_stream action against the agent on a
 * Unix socket, with real processes: exact bytes, stdout and stderr apart,
 * stdin with EOF, signals, timeout, hang-up, and the statuses of commands
 * that cannot run.
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "proto/attach.h"
#include "test_agent_client.h"
#include "unit.h"

/* What a stream brought: its answer line, the bytes, the exit frame. */
struct stream_out {
	cJSON *answer;
	struct buf out, err;
	int exited, code, sig, timed_out;
};

/* Connect and send an exec_stream request; fd, with its answer line. */
static int
stream_open(struct test_agent *ta, const char *req, cJSON **answer)
{
	char *line;
	int fd;

	xasprintf(&line, "%s\n", req);
	*answer = ta_line_request(ta, line, &fd);
	free(line);
	return fd;
}

/* Read frames to the EXIT frame or EOF (10 s receive timeout). */
static void
stream_read(int fd, struct stream_out *so)
{
	struct buf in;
	uint8_t chunk[65536], type;
	uint32_t len;
	ssize_t n, size;

	buf_init(&in);
	buf_init(&so->out);
	buf_init(&so->err);
	while (!so->exited && (n = read(fd, chunk, sizeof chunk)) > 0) {
		buf_add(&in, chunk, (size_t)n);
		while ((size = vmux_attach_parse(
		            in.data, in.len, &type, &len)) > 0) {
			const uint8_t *p = in.data + VMUX_ATTACH_HDR;

			if (type == VMUX_EXEC_STDOUT)
				buf_add(&so->out, p, len);
			else if (type == VMUX_EXEC_STDERR)
				buf_add(&so->err, p, len);
			else if (type == VMUX_EXEC_EXIT &&
			    len == VMUX_EXEC_EXIT_LEN) {
				so->exited = 1;
				so->code = (int)vmux_get_u32(p);
				so->sig = (int)vmux_get_u32(p + 4);
				so->timed_out = p[8];
			}
			buf_drain(&in, (size_t)size);
		}
	}
	buf_free(&in);
}

/* Free what stream_read kept. */
static void
stream_out_free(struct stream_out *so)
{
	cJSON_Delete(so->answer);
	buf_free(&so->out);
	buf_free(&so->err);
}

TEST(exec_stream_bytes_exact_and_apart)
{
	struct test_agent ta;
	struct stream_out so;
	int fd;

	memset(&so, 0, sizeof so);
	CHECK(ta_start(&ta, 5000) == 0);
	fd = stream_open(&ta,
	    "{\"action\":\"exec_stream\",\"command\":\"printf "
	    "'a\\\\000\\\\377\\\\376b'; printf err >&2; exit 3\"}",
	    &so.answer);
	CHECK(fd >= 0);
	CHECK(ta_num(so.answer, "pid") > 0);
	ta_send_frame(fd, VMUX_EXEC_STDIN_EOF, NULL, 0);
	stream_read(fd, &so);
	close(fd);
	CHECK(so.exited);
	CHECK_INT(so.out.len, 5);
	CHECK_MEM(so.out.data, "a\0\377\376b", 5);
	CHECK_INT(so.err.len, 3);
	CHECK_MEM(so.err.data, "err", 3);
	CHECK_INT(so.code, 3);
	CHECK_INT(so.sig, 0);
	CHECK_INT(so.timed_out, 0);
	stream_out_free(&so);
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(exec_stream_stdin_to_eof)
{
	struct test_agent ta;
	struct stream_out so;
	int fd;

	memset(&so, 0, sizeof so);
	CHECK(ta_start(&ta, 5000) == 0);
	fd = stream_open(&ta,
	    "{\"action\":\"exec_stream\",\"command\":[\"cat\"]}", &so.answer);
	CHECK(fd >= 0);
	ta_send_frame(fd, VMUX_EXEC_STDIN, "hello\0", 6);
	ta_send_frame(fd, VMUX_EXEC_STDIN, "world", 5);
	ta_send_frame(fd, VMUX_EXEC_STDIN_EOF, NULL, 0);
	stream_read(fd, &so);
	close(fd);
	CHECK(so.exited);
	CHECK_INT(so.out.len, 11);
	CHECK_MEM(so.out.data, "hello\0world", 11);
	CHECK_INT(so.code, 0);
	stream_out_free(&so);
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(exec_stream_signal_and_timeout)
{
	struct test_agent ta;
	struct stream_out so;
	int fd;

	memset(&so, 0, sizeof so);
	CHECK(ta_start(&ta, 5000) == 0);
	fd = stream_open(&ta,
	    "{\"action\":\"exec_stream\",\"command\":[\"sleep\",\"300\"]}",
	    &so.answer);
	CHECK(fd >= 0);
	ta_send_frame(fd, VMUX_ATTACH_SIGNAL, "KILL", 4);
	stream_read(fd, &so);
	close(fd);
	CHECK(so.exited);
	CHECK_INT(so.sig, 9);
	stream_out_free(&so);

	memset(&so, 0, sizeof so);
	fd = stream_open(&ta,
	    "{\"action\":\"exec_stream\",\"command\":[\"sleep\",\"300\"],"
	    "\"timeout_seconds\":1}",
	    &so.answer);
	CHECK(fd >= 0);
	stream_read(fd, &so);
	close(fd);
	CHECK(so.exited);
	CHECK_INT(so.timed_out, 1);
	stream_out_free(&so);
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(exec_stream_hang_up_kills_the_command)
{
	struct test_agent ta;
	cJSON *answer;
	pid_t pid;
	int fd;

	CHECK(ta_start(&ta, 5000) == 0);
	fd = stream_open(&ta,
	    "{\"action\":\"exec_stream\",\"command\":[\"sleep\",\"300\"]}",
	    &answer);
	CHECK(fd >= 0);
	pid = (pid_t)ta_num(answer, "pid");
	CHECK(pid > 0);
	cJSON_Delete(answer);
	close(fd);
	CHECK(ta_wait_dead(pid, 10000));
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(exec_stream_cannot_run_statuses)
{
	struct test_agent ta;
	cJSON *answer;
	char *req;
	int fd;

	CHECK(ta_start(&ta, 5000) == 0);
	fd = stream_open(&ta,
	    "{\"action\":\"exec_stream\",\"command\":[\"no-such-cmd-x\"]}",
	    &answer);
	CHECK(fd >= 0);
	close(fd);
	CHECK(strstr(ta_str(answer, "error"), "not found") != NULL);
	CHECK_INT(ta_num(answer, "exit_code"), 127);
	cJSON_Delete(answer);

	/* a file that exists but is no program */
	xasprintf(&req,
	    "{\"action\":\"exec_stream\",\"command\":[\"%s/agent.sock\"]}",
	    ta.dir);
	fd = stream_open(&ta, req, &answer);
	free(req);
	CHECK(fd >= 0);
	close(fd);
	CHECK(ta_str(answer, "error") != NULL);
	CHECK_INT(ta_num(answer, "exit_code"), 126);
	cJSON_Delete(answer);
	CHECK_INT(ta_stop(&ta), 0);
}
