/*
 * test_cli_shell.c: the pure parts of `vmux shell`: detach-key names and
 * scanning, the client side of the attach stream (session/attach.c: first
 * line, frame cutting, decoders, bounded queue), and the attached loop
 * (cli/shell-loop.c) against a fake agent on a socketpair with stdin and
 * stdout on pipes. Each test runs in its own child, so redirecting fds 0
 * and 1 here is harmless.
 */
#include <sys/socket.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/common.h"
#include "proto/attach.h"
#include "session/session.h"
#include "cli/cli.h"
#include "unit.h"

TEST(detach_key_names)
{
	char *cause = NULL, name[16];
	int key = 0;

	CHECK(detach_key_parse("^]", &key, &cause) == 0);
	CHECK_INT(key, 0x1d);
	CHECK(detach_key_parse("ctrl-a", &key, &cause) == 0);
	CHECK_INT(key, 1);
	CHECK(detach_key_parse("C-Q", &key, &cause) == 0);
	CHECK_INT(key, 0x11);
	CHECK(detach_key_parse("^\\", &key, &cause) == 0);
	CHECK_INT(key, 0x1c);
	CHECK(detach_key_parse("none", &key, &cause) == 0);
	CHECK_INT(key, -1);
	detach_key_name(0x1d, name, sizeof name);
	CHECK_STR(name, "Ctrl-]");
	detach_key_name(1, name, sizeof name);
	CHECK_STR(name, "Ctrl-A");
	detach_key_name(-1, name, sizeof name);
	CHECK_STR(name, "none");
}

TEST(detach_key_rejects)
{
	static const char *bad[] = {"", "]", "^", "^]]", "ctrl-", "ctrl-ab",
	    "^1", "^m", "^J", "^@", "x"};
	char *cause;
	int key;

	for (size_t i = 0; i < nitems(bad); i++) {
		cause = NULL;
		CHECK(detach_key_parse(bad[i], &key, &cause) == -1);
		CHECK(cause != NULL && strstr(cause, "detach key") != NULL);
		free(cause);
	}
}

TEST(detach_scan_splits_at_the_key)
{
	const uint8_t in[] = "ls\r\x1dmore";
	int found;

	CHECK_INT(detach_scan(in, 8, 0x1d, &found), 3);
	CHECK_INT(found, 1);
	CHECK_INT(detach_scan(in, 3, 0x1d, &found), 3);
	CHECK_INT(found, 0);
	CHECK_INT(detach_scan(in, 8, -1, &found), 8); /* none */
	CHECK_INT(found, 0);
	CHECK_INT(detach_scan((const uint8_t *)"\x1d", 1, 0x1d, &found), 0);
	CHECK_INT(found, 1);
	CHECK_INT(detach_scan(in, 0, 0x1d, &found), 0);
	CHECK_INT(found, 0);
}

TEST(exit_status_mapping)
{
	CHECK_INT(attach_exit_status(0, 0), 0);
	CHECK_INT(attach_exit_status(3, 0), 3);
	CHECK_INT(attach_exit_status(130, 2), 130); /* agent made it 128+2 */
	CHECK_INT(attach_exit_status(-1, 9), 137);
	CHECK_INT(attach_exit_status(-1, 0), 1);
	CHECK_INT(attach_exit_status(300, 0), 255);
}

/* Append one frame to a byte buffer. */
static size_t
frame(uint8_t *buf, uint8_t type, const void *p, size_t len)
{
	vmux_attach_header(buf, type, (uint32_t)len);
	memcpy(buf + VMUX_ATTACH_HDR, p, len);
	return VMUX_ATTACH_HDR + len;
}

/* A DATA frame at cursor with text. */
static size_t
data_frame(uint8_t *buf, uint64_t cursor, const char *text)
{
	uint8_t p[256];
	size_t n = strlen(text);

	vmux_put_u64(p, cursor);
	memcpy(p + 8, text, n);
	return frame(buf, VMUX_ATTACH_DATA, p, 8 + n);
}

/* An EXIT frame. */
static size_t
exit_frame(uint8_t *buf, int code, int sig, uint64_t cursor)
{
	uint8_t p[16];

	vmux_put_u32(p, (uint32_t)code);
	vmux_put_u32(p + 4, (uint32_t)sig);
	vmux_put_u64(p + 8, cursor);
	return frame(buf, VMUX_ATTACH_EXIT, p, sizeof p);
}

TEST(line_call_keeps_what_follows)
{
	const char reply[] = "{\"shell_id\":\"s\",\"attached\":true}\nFRAMES";
	uint8_t *rest = NULL, got[256];
	size_t rest_len = 0;
	char *cause = NULL;
	cJSON *req = cJSON_CreateObject(), *o;
	int sv[2];
	ssize_t n;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK(write(sv[1], reply, sizeof reply - 1) == sizeof reply - 1);
	cJSON_AddStringToObject(req, "action", "attach_shell");
	o = agent_line_call(
	    sv[0], req, mono_ms() + 2000, &rest, &rest_len, &cause);
	CHECK(o != NULL);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(o, "attached")));
	CHECK_INT(rest_len, 6);
	CHECK_MEM(rest, "FRAMES", 6);
	n = read(sv[1], got, sizeof got);
	CHECK(n > 0 && got[n - 1] == '\n');
	CHECK(memmem(got, (size_t)n, "attach_shell", 12) != NULL);
	cJSON_Delete(o);
	cJSON_Delete(req);
	free(rest);
}

TEST(line_call_reports_agent_errors)
{
	const char reply[] = "{\"error\":\"no shell \\\"x\\\"\"}\n";
	uint8_t *rest = NULL;
	size_t rest_len = 0;
	char *cause = NULL;
	cJSON *req = cJSON_CreateObject();
	int sv[2];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK(write(sv[1], reply, sizeof reply - 1) == sizeof reply - 1);
	shutdown(sv[1], SHUT_WR); /* the agent answers and closes */
	CHECK(agent_line_call(sv[0], req, mono_ms() + 2000, &rest, &rest_len,
	          &cause) == NULL);
	CHECK_STR(cause, "agent: no shell \"x\"");
	CHECK(rest == NULL);
	free(cause);
	cJSON_Delete(req);
}

TEST(client_cuts_frames_in_any_chunking)
{
	uint8_t stream[512], *p = stream;
	struct attach_client c;
	struct attach_frame f;
	const uint8_t *bytes;
	uint64_t cursor, a, b;
	size_t len, total, i;
	int sv[2], code, sig, got = 0, r;

	p += data_frame(p, 7, "hello");
	vmux_put_u64(stream + 300, 5);
	vmux_put_u64(stream + 308, 9);
	p += frame(p, VMUX_ATTACH_TRUNCATED, stream + 300, 16);
	p += exit_frame(p, 3, 0, 12);
	total = (size_t)(p - stream);

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	/* the first 4 bytes came with the JSON line */
	attach_client_init(&c, sv[0], stream, 4);
	for (i = 4; i < total; i++) { /* then one byte at a time */
		CHECK(write(sv[1], stream + i, 1) == 1);
		CHECK(attach_client_read(&c) == 1);
		while ((r = attach_client_next(&c, &f)) == 1) {
			got++;
			if (got == 1) {
				CHECK(attach_decode_data(
				          &f, &cursor, &bytes, &len) == 0);
				CHECK_INT(cursor, 7);
				CHECK_INT(len, 5);
				CHECK_MEM(bytes, "hello", 5);
				CHECK(attach_decode_exit(&f, &code, &sig, &a) ==
				    -1);
			} else if (got == 2) {
				CHECK(attach_decode_truncated(&f, &a, &b) == 0);
				CHECK_INT(a, 5);
				CHECK_INT(b, 9);
			} else {
				CHECK(attach_decode_exit(&f, &code, &sig, &a) ==
				    0);
				CHECK_INT(code, 3);
				CHECK_INT(sig, 0);
				CHECK_INT(a, 12);
			}
		}
		CHECK_INT(r, 0);
	}
	CHECK_INT(got, 3);
	close(sv[1]);
	CHECK(attach_client_read(&c) == 0);
	CHECK(c.eof);
	attach_client_free(&c);
}

TEST(client_rejects_bad_frames)
{
	uint8_t hdr[VMUX_ATTACH_HDR], small[4] = {1, 2, 3, 4};
	struct attach_client c;
	struct attach_frame f;
	const uint8_t *bytes;
	uint64_t cursor;
	size_t len;
	int cols, rows;

	vmux_attach_header(hdr, VMUX_ATTACH_DATA, VMUX_ATTACH_MAX_PAYLOAD + 1);
	attach_client_init(&c, -1, hdr, sizeof hdr);
	CHECK_INT(attach_client_next(&c, &f), -1);
	attach_client_free(&c);

	/* well framed but too short for their type: refused, no crash */
	f.type = VMUX_ATTACH_DATA;
	f.payload = small;
	f.len = 3;
	CHECK(attach_decode_data(&f, &cursor, &bytes, &len) == -1);
	f.type = VMUX_ATTACH_RESIZE;
	CHECK(attach_decode_resize(&f, &cols, &rows) == -1);
	f.len = 4;
	small[0] = 80;
	CHECK(attach_decode_resize(&f, &cols, &rows) == 0);
}

TEST(client_queue_is_bounded)
{
	static uint8_t big[65536];
	struct attach_client c;
	size_t queued = 0;

	attach_client_init(&c, -1, NULL, 0);
	while (attach_client_queue(&c, VMUX_ATTACH_INPUT, big, sizeof big) == 0)
		queued++;
	CHECK(queued > 0);
	CHECK((queued + 1) * (sizeof big + VMUX_ATTACH_HDR) >
	    ATTACH_CLIENT_OUT_MAX);
	CHECK(attach_client_room(&c) < sizeof big + VMUX_ATTACH_HDR);
	CHECK(attach_client_resize(&c, 0, 10) == -1);
	CHECK(attach_client_resize(&c, 5000, 10) == -1);
	attach_client_free(&c);
}

/* The pieces of a loop run against a fake agent. */
struct fake {
	int agent; /* the agent's end of the socketpair */
	int in_w;  /* what "the user types" */
	int out_r; /* what vmux wrote to stdout */
	int sig_w; /* the signal pipe's write end */
	struct attach_client c;
	struct shell_loop_opts o;
};

/* stdin and stdout on pipes, a socketpair as the stream. */
static int
fake_init(struct fake *fk)
{
	int sv[2], in[2], out[2], sig[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0 || pipe(in) != 0 ||
	    pipe(out) != 0 || pipe2(sig, O_NONBLOCK) != 0)
		return -1;
	dup2(in[0], STDIN_FILENO);
	dup2(out[1], STDOUT_FILENO);
	close(in[0]);
	close(out[1]);
	memset(fk, 0, sizeof *fk);
	fk->agent = sv[1];
	fk->in_w = in[1];
	fk->out_r = out[0];
	fk->sig_w = sig[1];
	attach_client_init(&fk->c, sv[0], NULL, 0);
	fk->o.detach_key = -1;
	fk->o.sig_fd = sig[0];
	return 0;
}

/* What vmux wrote to stdout (fd 1 is closed first). */
static size_t
fake_stdout(struct fake *fk, char *buf, size_t len)
{
	ssize_t n;
	size_t got = 0;

	close(STDOUT_FILENO);
	while (got < len && (n = read(fk->out_r, buf + got, len - got)) > 0)
		got += (size_t)n;
	return got;
}

TEST(loop_prints_output_and_exits_with_the_status)
{
	struct shell_loop_result res;
	uint8_t stream[512], *p = stream;
	struct fake fk;
	char out[256];
	size_t n;

	CHECK(fake_init(&fk) == 0);
	p += data_frame(p, 0, "hello ");
	p += data_frame(p, 6, "world\n");
	p += exit_frame(p, 3, 0, 12);
	CHECK(write(fk.agent, stream, (size_t)(p - stream)) == p - stream);
	shutdown(fk.agent, SHUT_WR);
	shell_loop(&fk.c, &fk.o, &res);
	CHECK_INT(res.end, SHELL_END_EXIT);
	CHECK_INT(res.status, 3);
	n = fake_stdout(&fk, out, sizeof out);
	CHECK_INT(n, 12);
	CHECK_MEM(out, "hello world\n", 12);
}

TEST(loop_sends_input_then_detaches_at_the_key)
{
	struct shell_loop_result res;
	uint8_t buf[256];
	struct fake fk;
	ssize_t n;

	CHECK(fake_init(&fk) == 0);
	fk.o.detach_key = 0x1d;
	CHECK(write(fk.in_w, "ls\r\x1dnever", 9) == 9);
	/* the agent's DETACH answer is already there */
	frame(buf, VMUX_ATTACH_DETACH, "", 0);
	CHECK(write(fk.agent, buf, VMUX_ATTACH_HDR) == VMUX_ATTACH_HDR);
	shell_loop(&fk.c, &fk.o, &res);
	CHECK_INT(res.end, SHELL_END_DETACH);
	attach_client_free(&fk.c);
	n = read(fk.agent, buf, sizeof buf);
	/* INPUT "ls\r", then DETACH; nothing after the key */
	CHECK_INT(n, 2 * VMUX_ATTACH_HDR + 3);
	CHECK_INT(buf[0], VMUX_ATTACH_INPUT);
	CHECK_INT(vmux_get_u32(buf + 1), 3);
	CHECK_MEM(buf + VMUX_ATTACH_HDR, "ls\r", 3);
	CHECK_INT(buf[VMUX_ATTACH_HDR + 3], VMUX_ATTACH_DETACH);
}

/* TRUNCATED [from, to). */
static size_t
truncated_frame(uint8_t *buf, uint64_t from, uint64_t to)
{
	uint8_t p[16];

	vmux_put_u64(p, from);
	vmux_put_u64(p + 8, to);
	return frame(buf, VMUX_ATTACH_TRUNCATED, p, sizeof p);
}

/*
 * The fake agent of loop_eof_...: read frames until EOF, then answer
 * with two TRUNCATED, the output and EXIT 7. Exits 0 if it got INPUT
 * "ls\n" and then EOF, 1 otherwise.
 */
static void
eof_agent(int fd)
{
	uint8_t in[256], out[256], *p = out, type;
	size_t have = 0;
	uint32_t len;
	ssize_t n, k;
	int input_ok = 0;

	for (;;) {
		n = read(fd, in + have, sizeof in - have);
		if (n <= 0)
			_exit(1);
		have += (size_t)n;
		while ((k = vmux_attach_parse(in, have, &type, &len)) > 0) {
			if (type == VMUX_ATTACH_INPUT && len == 3 &&
			    memcmp(in + VMUX_ATTACH_HDR, "ls\n", 3) == 0)
				input_ok = 1;
			else if (type == VMUX_ATTACH_EOF && input_ok) {
				p += truncated_frame(p, 0, 100);
				p += truncated_frame(p, 150, 200);
				p += data_frame(p, 200, "end\n");
				p += exit_frame(p, 7, 0, 204);
				_exit(
				    write(fd, out, (size_t)(p - out)) == p - out
				        ? 0
				        : 1);
			} else
				_exit(1);
			memmove(in, in + k, have - (size_t)k);
			have -= (size_t)k;
		}
	}
}

TEST(loop_eof_on_stdin_sends_eof_and_counts_dropped_output)
{
	struct shell_loop_result res;
	struct fake fk;
	char out[64];
	pid_t pid;
	int status;

	CHECK(fake_init(&fk) == 0);
	pid = fork();
	if (pid == 0) {
		/* only the agent's end stays open here */
		close(fk.in_w);
		close(fk.c.fd);
		close(STDIN_FILENO);
		close(STDOUT_FILENO);
		eof_agent(fk.agent);
	}
	close(fk.agent);
	CHECK(write(fk.in_w, "ls\n", 3) == 3);
	close(fk.in_w); /* `echo ls | vmux shell` */
	shell_loop(&fk.c, &fk.o, &res);
	CHECK_INT(res.end, SHELL_END_EXIT);
	CHECK_INT(res.status, 7);
	CHECK_INT(shell_end_status(&res), 7);
	CHECK_INT((int)res.dropped, 150);
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK_INT(fake_stdout(&fk, out, sizeof out), 4);
	attach_client_free(&fk.c);
}

TEST(shell_end_status_mapping)
{
	struct shell_loop_result r = {0};

	r.end = SHELL_END_EXIT;
	r.status = 137; /* the shell, killed by SIGKILL */
	CHECK_INT(shell_end_status(&r), 137);
	r.end = SHELL_END_DETACH;
	CHECK_INT(shell_end_status(&r), 0);
	r.end = SHELL_END_SIGNAL;
	r.signo = 15;
	CHECK_INT(shell_end_status(&r), 143);
	r.end = SHELL_END_LOST;
	CHECK_INT(shell_end_status(&r), EXIT_VMUX);
	r.end = SHELL_END_OUTPUT;
	CHECK_INT(shell_end_status(&r), EXIT_VMUX);
}

TEST(loop_repaint_starts_at_a_line)
{
	struct shell_loop_result res;
	uint8_t stream[512], *p = stream;
	struct fake fk;
	char out[256];
	size_t n;

	CHECK(fake_init(&fk) == 0);
	fk.o.skip_partial_line = 1;
	fk.o.replay_end = 40;
	p += data_frame(p, 10, "tial line\nline two\n"); /* 10..29 */
	p += data_frame(p, 29, "prompt$ ");              /* 29..37 */
	p += data_frame(p, 37, "abc");                   /* 37..40 */
	p += data_frame(p, 40, "live");
	p += exit_frame(p, 0, 0, 44);
	CHECK(write(fk.agent, stream, (size_t)(p - stream)) == p - stream);
	shutdown(fk.agent, SHUT_WR);
	shell_loop(&fk.c, &fk.o, &res);
	CHECK_INT(res.end, SHELL_END_EXIT);
	n = fake_stdout(&fk, out, sizeof out);
	out[n] = '\0';
	CHECK_STR(out, "line two\nprompt$ abclive");
}

TEST(loop_repaint_never_drops_live_output)
{
	struct shell_loop_result res;
	uint8_t stream[512], *p = stream;
	struct fake fk;
	char out[256];
	size_t n;

	CHECK(fake_init(&fk) == 0);
	fk.o.skip_partial_line = 1;
	fk.o.replay_end = 20;
	p += data_frame(p, 10, "abcdefghijklmnop"); /* 10..26, no newline */
	p += exit_frame(p, 0, 0, 23);
	CHECK(write(fk.agent, stream, (size_t)(p - stream)) == p - stream);
	shutdown(fk.agent, SHUT_WR);
	shell_loop(&fk.c, &fk.o, &res);
	n = fake_stdout(&fk, out, sizeof out);
	out[n] = '\0';
	CHECK_STR(out, "klmnop");
}

TEST(loop_reports_a_lost_connection)
{
	struct shell_loop_result res;
	uint8_t stream[64];
	struct fake fk;
	size_t n;

	CHECK(fake_init(&fk) == 0);
	n = data_frame(stream, 0, "x");
	CHECK(write(fk.agent, stream, n) == (ssize_t)n);
	close(fk.agent); /* no EXIT: the agent or VM went away */
	shell_loop(&fk.c, &fk.o, &res);
	CHECK_INT(res.end, SHELL_END_LOST);
	free(res.error);
}

TEST(loop_detaches_on_a_signal)
{
	struct shell_loop_result res;
	unsigned char sig = SIGTERM;
	uint8_t buf[64];
	struct fake fk;

	CHECK(fake_init(&fk) == 0);
	CHECK(write(fk.sig_w, &sig, 1) == 1);
	frame(buf, VMUX_ATTACH_DETACH, "", 0);
	CHECK(write(fk.agent, buf, VMUX_ATTACH_HDR) == VMUX_ATTACH_HDR);
	shell_loop(&fk.c, &fk.o, &res);
	CHECK_INT(res.end, SHELL_END_SIGNAL);
	CHECK_INT(res.signo, SIGTERM);
}

TEST(loop_survives_a_broken_stream)
{
	struct shell_loop_result res;
	uint8_t hdr[VMUX_ATTACH_HDR];
	struct fake fk;

	CHECK(fake_init(&fk) == 0);
	vmux_attach_header(hdr, VMUX_ATTACH_DATA, 0xffffffffu);
	CHECK(write(fk.agent, hdr, sizeof hdr) == sizeof hdr);
	shell_loop(&fk.c, &fk.o, &res);
	CHECK_INT(res.end, SHELL_END_LOST);
	CHECK(res.error != NULL && strstr(res.error, "broken") != NULL);
	free(res.error);
}

TEST(loop_replay_drops_terminal_queries)
{
	struct shell_loop_result res;
	uint8_t stream[512], *p = stream;
	struct fake fk;
	char out[256];
	size_t n;

	CHECK(fake_init(&fk) == 0);
	fk.o.replay_end = 19;
	p += data_frame(p, 0, "a\033[6nb\033[?1;2cc\033[1md"); /* 0..19 */
	p += data_frame(p, 19, "\033[6n");                     /* live */
	p += exit_frame(p, 0, 0, 23);
	CHECK(write(fk.agent, stream, (size_t)(p - stream)) == p - stream);
	shutdown(fk.agent, SHUT_WR);
	shell_loop(&fk.c, &fk.o, &res);
	n = fake_stdout(&fk, out, sizeof out);
	out[n] = '\0';
	CHECK_STR(out, "abc\033[1md\033[6n");
}

TEST(loop_handles_frames_that_came_with_the_answer)
{
	struct shell_loop_result res;
	uint8_t stream[512], *p = stream;
	struct fake fk;
	char out[64];
	size_t n;
	int sv[2];

	CHECK(fake_init(&fk) == 0);
	attach_client_free(&fk.c);
	p += data_frame(p, 0, "early");
	p += exit_frame(p, 9, 0, 5);
	/* all of it arrived with the JSON line; the socket stays silent */
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	attach_client_init(&fk.c, sv[0], stream, (size_t)(p - stream));
	shell_loop(&fk.c, &fk.o, &res);
	CHECK_INT(res.end, SHELL_END_EXIT);
	CHECK_INT(res.status, 9);
	n = fake_stdout(&fk, out, sizeof out);
	CHECK_INT(n, 5);
	CHECK_MEM(out, "early", 5);
}
