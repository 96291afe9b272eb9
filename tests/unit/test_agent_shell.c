/*
 * test_agent_shell.c: persistent PTY shells through the agent's event loop
 * on a Unix socket, with real PTYs and processes on the host: the JSON
 * shell actions, the attach stream, and resilience (floods, vanishing
 * clients, many shells).
 */
#include <sys/socket.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "proto/attach.h"
#include "test_agent_client.h"
#include "unit.h"

/* The record's state, or "". */
static const char *
state_of(cJSON *r)
{
	const char *s = ta_str(r, "state");

	return s ? s : "";
}

/*
 * Read a shell's whole output (from cursor 0, long-polling) until it holds
 * needle; returns the output (caller frees) or NULL after ms.
 */
static char *
wait_output(struct test_agent *ta, const char *id, const char *needle, int ms)
{
	uint64_t until = mono_ms() + (uint64_t)ms;
	struct buf all;
	double cursor = 0;
	cJSON *r;

	buf_init(&all);
	while (mono_ms() < until) {
		r = ta_requestf(ta,
		    "{\"action\":\"read_shell\",\"shell_id\":\"%s\","
		    "\"cursor\":%.0f,\"max_chars\":100000,\"wait_ms\":200}",
		    id, cursor);
		if (r == NULL || ta_str(r, "output") == NULL) {
			cJSON_Delete(r);
			break;
		}
		buf_addstr(&all, ta_str(r, "output"));
		cursor = ta_num(r, "next_cursor");
		cJSON_Delete(r);
		if (strstr(buf_cstr(&all), needle) != NULL)
			return buf_cstr(&all);
	}
	fprintf(stderr, "    no \"%s\" in: %s\n", needle, buf_cstr(&all));
	buf_free(&all);
	return NULL;
}

/* Poll list_shells until the shell is in `state`; its record or NULL. */
static cJSON *
wait_state(struct test_agent *ta, const char *id, const char *state, int ms)
{
	uint64_t until = mono_ms() + (uint64_t)ms;
	cJSON *r, *s, *copy;

	while (mono_ms() < until) {
		r = ta_request(ta, "{\"action\":\"list_shells\"}");
		cJSON_ArrayForEach(s, cJSON_GetObjectItem(r, "shells"))
		{
			if (strcmp(ta_str(s, "shell_id"), id) == 0 &&
			    strcmp(state_of(s), state) == 0) {
				copy = cJSON_Duplicate(s, 1);
				cJSON_Delete(r);
				return copy;
			}
		}
		cJSON_Delete(r);
		usleep(20000);
	}
	return NULL;
}

/*
 * The pid the shell printed as "pid=N" in out (the typed command's echo
 * shows "pid=$$", never digits), or 0.
 */
static pid_t
printed_pid(const char *out)
{
	for (const char *p = out; (p = strstr(p, "pid=")) != NULL; p += 4) {
		if (p[4] >= '0' && p[4] <= '9')
			return (pid_t)atoi(p + 4);
	}
	return 0;
}

/* Poll until process pid runs the program named comm; 1 when it does. */
static int
wait_comm(pid_t pid, const char *comm, int ms)
{
	uint64_t until = mono_ms() + (uint64_t)ms;
	char path[64], name[64];
	FILE *f;
	int done = 0;

	snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
	while (!done && mono_ms() < until) {
		if ((f = fopen(path, "r")) != NULL) {
			done = fgets(name, sizeof name, f) != NULL &&
			    strncmp(name, comm, strlen(comm)) == 0 &&
			    name[strlen(comm)] == '\n';
			fclose(f);
		}
		if (!done)
			usleep(10000);
	}
	return done;
}

/* Poll until the shell's output_bytes reaches n; 1 when it does. */
static int
wait_bytes(struct test_agent *ta, const char *id, double n, int ms)
{
	uint64_t until = mono_ms() + (uint64_t)ms;
	cJSON *r, *s;
	int done = 0;

	while (!done && mono_ms() < until) {
		r = ta_request(ta, "{\"action\":\"list_shells\"}");
		cJSON_ArrayForEach(s, cJSON_GetObjectItem(r, "shells"))
		{
			if (strcmp(ta_str(s, "shell_id"), id) == 0 &&
			    ta_num(s, "output_bytes") >= n)
				done = 1;
		}
		cJSON_Delete(r);
		if (!done)
			usleep(20000);
	}
	return done;
}

/* Attach: send the request, read the JSON line; fd or -1 (*reply set). */
static int
att_open(struct test_agent *ta, const char *id, long long cursor, cJSON **reply)
{
	char *req;
	int fd;

	if (cursor >= 0)
		xasprintf(&req,
		    "{\"action\":\"attach_shell\",\"shell_id\":\"%s\","
		    "\"cursor\":%lld}\n",
		    id, cursor);
	else
		xasprintf(&req,
		    "{\"action\":\"attach_shell\",\"shell_id\":\"%s\"}\n", id);
	*reply = ta_line_request(ta, req, &fd);
	free(req);
	return fd;
}

/* Receive one frame into *payload (caller frees); type, or -1 / 0 (EOF). */
static int
att_recv(int fd, uint8_t **payload, uint32_t *len, int ms)
{
	uint8_t hdr[VMUX_ATTACH_HDR];
	struct pollfd pfd = {fd, POLLIN, 0};

	*payload = NULL;
	if (poll(&pfd, 1, ms) <= 0)
		return -1;
	if (read_full(fd, hdr, sizeof hdr) != sizeof hdr)
		return 0;
	*len = vmux_get_u32(hdr + 1);
	*payload = xmalloc(*len + 1);
	if (read_full(fd, *payload, *len) != (ssize_t)*len)
		return -1;
	(*payload)[*len] = '\0';
	return hdr[0];
}

struct seen {
	struct buf data;
	int resize_cols, resize_rows;
	int exit_code, exit_seen, truncated, error, detach;
	uint64_t first_cursor;
	int got_data;
	char roster[4096]; /* the last CLIENTS frame */
	int rosters;       /* CLIENTS frames seen */
	char typed[256];   /* TYPED frames' bytes */
};

/*
 * Read frames until the DATA text holds needle (NULL: until EXIT or
 * DETACH), recording everything; 1 if found.
 */
static int
att_until(int fd, struct seen *s, const char *needle, int ms)
{
	uint64_t until = mono_ms() + (uint64_t)ms;
	uint8_t *p;
	uint32_t len;
	int t;

	while (mono_ms() < until) {
		t = att_recv(fd, &p, &len, 200);
		if (t == 0)
			return needle == NULL;
		if (t < 0)
			continue;
		switch (t) {
		case VMUX_ATTACH_DATA:
			if (!s->got_data)
				s->first_cursor = vmux_get_u64(p);
			s->got_data = 1;
			buf_add(&s->data, p + 8, len - 8);
			break;
		case VMUX_ATTACH_RESIZE:
			s->resize_cols = vmux_get_u16(p);
			s->resize_rows = vmux_get_u16(p + 2);
			break;
		case VMUX_ATTACH_EXIT:
			s->exit_seen = 1;
			s->exit_code = (int)vmux_get_u32(p);
			break;
		case VMUX_ATTACH_TRUNCATED:
			s->truncated = 1;
			break;
		case VMUX_ATTACH_ERROR:
			s->error = 1;
			break;
		case VMUX_ATTACH_DETACH:
			s->detach = 1;
			break;
		case VMUX_ATTACH_CLIENTS:
			snprintf(s->roster, sizeof s->roster, "%s", (char *)p);
			s->rosters++;
			break;
		case VMUX_ATTACH_TYPED:
			snprintf(s->typed + strlen(s->typed),
			    sizeof s->typed - strlen(s->typed), "%s",
			    (char *)p);
			break;
		}
		free(p);
		if (needle != NULL && strstr(buf_cstr(&s->data), needle))
			return 1;
		if (needle == NULL && (s->exit_seen || s->detach))
			return 1;
	}
	return 0;
}

TEST(shell_round_trip_like_the_seed)
{
	struct test_agent ta;
	char *out;
	cJSON *r;

	CHECK(ta_start(&ta, 5000) == 0);
	r = ta_request(&ta,
	    "{\"action\":\"open_shell\",\"shell_id\":\"shell-1\","
	    "\"cwd\":\"/tmp\",\"cols\":120,\"rows\":30}");
	CHECK(r != NULL);
	CHECK_STR(ta_str(r, "shell_id"), "shell-1");
	CHECK_STR(ta_str(r, "cwd"), "/tmp");
	CHECK_INT(ta_num(r, "cols"), 120);
	CHECK_INT(ta_num(r, "rows"), 30);
	CHECK_STR(state_of(r), "running");
	CHECK(ta_num(r, "started_at") > 1e9);
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(r, "ended_at")));
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(r, "exit_code")));
	cJSON_Delete(r);

	r = ta_request(&ta,
	    "{\"action\":\"write_shell\",\"shell_id\":"
	    "\"shell-1\",\"input\":\"pwd\","
	    "\"append_newline\":true}");
	CHECK_INT(ta_num(r, "input_length"), 3);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(r, "append_newline")));
	CHECK_STR(ta_str(r, "shell_id"), "shell-1");
	cJSON_Delete(r);
	CHECK((out = wait_output(&ta, "shell-1", "/tmp\r\n", 10000)) != NULL);
	free(out);

	r = ta_request(&ta,
	    "{\"action\":\"read_shell\",\"shell_id\":\"shell-1\","
	    "\"cursor\":0,\"max_chars\":1024}");
	CHECK_INT(ta_num(r, "cursor"), 0);
	CHECK(ta_num(r, "next_cursor") > 0);
	CHECK(ta_str(r, "output") != NULL);
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(r, "truncated")));
	cJSON_Delete(r);

	r = ta_request(&ta,
	    "{\"action\":\"signal_shell\",\"shell_id\":"
	    "\"shell-1\",\"signal\":\"INT\"}");
	CHECK_STR(ta_str(r, "signal"), "INT");
	cJSON_Delete(r);

	r = ta_request(&ta,
	    "{\"action\":\"close_shell\",\"shell_id\":"
	    "\"shell-1\"}");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(r, "closed")));
	CHECK_STR(state_of(r), "stopped");
	CHECK(ta_num(r, "ended_at") > 1e9);
	cJSON_Delete(r);
	r = ta_request(&ta,
	    "{\"action\":\"read_shell\",\"shell_id\":"
	    "\"shell-1\"}");
	CHECK(strstr(ta_str(r, "error"), "no shell \"shell-1\"") != NULL);
	cJSON_Delete(r);
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(shell_int_stops_foreground_command)
{
	struct test_agent ta;
	char *out;
	cJSON *r;

	CHECK(ta_start(&ta, 5000) == 0);
	cJSON_Delete(ta_request(&ta,
	    "{\"action\":\"open_shell\","
	    "\"shell_id\":\"s\"}"));
	/* The job prints its pid, then becomes `sleep`: signal it only once
	 * it runs (its echo comes before the exec). */
	cJSON_Delete(ta_request(&ta,
	    "{\"action\":\"write_shell\","
	    "\"shell_id\":\"s\",\"input\":\"echo "
	    "go-$((40+2)); exec 2>&1; sh -c 'echo pid=$$; exec sleep 100'\","
	    "\"append_newline\":true}"));
	CHECK((out = wait_output(&ta, "s", "go-42", 10000)) != NULL);
	free(out);
	CHECK((out = wait_output(&ta, "s", "pid=", 10000)) != NULL);
	while (printed_pid(out) == 0) {
		free(out);
		CHECK((out = wait_output(&ta, "s", "\npid=", 10000)) != NULL);
	}
	CHECK(wait_comm(printed_pid(out), "sleep", 10000));
	free(out);
	r = ta_request(&ta,
	    "{\"action\":\"signal_shell\",\"shell_id\":\"s\","
	    "\"signal\":\"SIGINT\"}");
	CHECK_STR(ta_str(r, "signal"), "INT");
	cJSON_Delete(r);
	cJSON_Delete(ta_request(&ta,
	    "{\"action\":\"write_shell\","
	    "\"shell_id\":\"s\",\"input\":\"echo "
	    "rc=$?\",\"append_newline\":true}"));
	CHECK((out = wait_output(&ta, "s", "rc=130", 10000)) != NULL);
	free(out);
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(shell_resize_and_exit_stays_readable)
{
	struct test_agent ta;
	char *out;
	cJSON *r;

	CHECK(ta_start(&ta, 5000) == 0);
	r = ta_request(&ta, "{\"action\":\"open_shell\"}");
	CHECK(ta_str(r, "shell_id") != NULL);
	CHECK_STR(ta_str(r, "shell_id"), "shell-1"); /* generated */
	CHECK_INT(ta_num(r, "cols"), 80);
	CHECK_INT(ta_num(r, "rows"), 24);
	cJSON_Delete(r);
	r = ta_request(&ta,
	    "{\"action\":\"resize_shell\",\"shell_id\":"
	    "\"shell-1\",\"cols\":123,\"rows\":45}");
	CHECK_INT(ta_num(r, "cols"), 123);
	CHECK_INT(ta_num(r, "rows"), 45);
	cJSON_Delete(r);
	cJSON_Delete(ta_request(&ta,
	    "{\"action\":\"write_shell\","
	    "\"shell_id\":\"shell-1\",\"input\":"
	    "\"stty size; exit 5\","
	    "\"append_newline\":true}"));
	CHECK((r = wait_state(&ta, "shell-1", "stopped", 10000)) != NULL);
	CHECK_INT(ta_num(r, "exit_code"), 5);
	CHECK(ta_num(r, "ended_at") >= ta_num(r, "started_at"));
	cJSON_Delete(r);
	CHECK((out = wait_output(&ta, "shell-1", "45 123", 5000)) != NULL);
	free(out);
	r = ta_request(&ta,
	    "{\"action\":\"write_shell\",\"shell_id\":"
	    "\"shell-1\",\"input\":\"x\"}");
	CHECK(strstr(ta_str(r, "error"), "not running") != NULL);
	cJSON_Delete(r);
	r = ta_request(&ta,
	    "{\"action\":\"close_shell\",\"shell_id\":"
	    "\"shell-1\"}");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(r, "closed")));
	CHECK_INT(ta_num(r, "exit_code"), 5);
	cJSON_Delete(r);
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(shell_errors)
{
	struct test_agent ta;
	cJSON *r;

	CHECK(ta_start(&ta, 5000) == 0);
	cJSON_Delete(ta_request(&ta,
	    "{\"action\":\"open_shell\","
	    "\"shell_id\":\"dup\",\"command\":"
	    "[\"cat\"]}"));
	r = ta_request(&ta, "{\"action\":\"open_shell\",\"shell_id\":\"dup\"}");
	CHECK(strstr(ta_str(r, "error"), "already exists") != NULL);
	cJSON_Delete(r);
	r = ta_request(&ta, "{\"action\":\"open_shell\",\"cwd\":\"/nope\"}");
	CHECK_STR(ta_str(r, "error"), "cwd /nope: No such file or directory");
	cJSON_Delete(r);
	r = ta_request(&ta,
	    "{\"action\":\"open_shell\",\"command\":"
	    "[\"no-such-prog\"]}");
	CHECK_STR(ta_str(r, "error"), "command not found: no-such-prog");
	cJSON_Delete(r);
	r = ta_request(&ta,
	    "{\"action\":\"read_shell\",\"shell_id\":\"dup\","
	    "\"cursor\":999999}");
	CHECK(strstr(ta_str(r, "error"), "past the end") != NULL);
	cJSON_Delete(r);
	r = ta_request(&ta,
	    "{\"action\":\"signal_shell\",\"shell_id\":\"dup\","
	    "\"signal\":\"SEGV\"}");
	CHECK(strstr(ta_str(r, "error"), "unknown signal") != NULL);
	cJSON_Delete(r);
	r = ta_request(&ta, "{\"action\":\"list_shells\"}");
	CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(r, "shells")), 1);
	cJSON_Delete(r);
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(shell_close_kills_the_whole_session)
{
	struct test_agent ta;
	char *out, *p;
	pid_t bg;
	cJSON *r;

	CHECK(ta_start(&ta, 5000) == 0);
	cJSON_Delete(ta_request(&ta,
	    "{\"action\":\"open_shell\","
	    "\"shell_id\":\"k\",\"command\":\"trap '' "
	    "HUP TERM; (trap '' HUP TERM; exec sleep "
	    "300) & echo bg=$!; wait\"}"));
	CHECK((out = wait_output(&ta, "k", "bg=", 10000)) != NULL);
	free(out);
	CHECK((out = wait_output(&ta, "k", "\n", 10000)) != NULL);
	bg = (pid_t)atoi(strstr(out, "bg=") + 3);
	(void)p;
	free(out);
	CHECK(bg > 0);
	r = ta_request(&ta, "{\"action\":\"close_shell\",\"shell_id\":\"k\"}");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(r, "closed")));
	CHECK_STR(state_of(r), "stopped");
	cJSON_Delete(r);
	CHECK(ta_wait_dead(bg, 5000));
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(shell_scrollback_eviction_reads_truncated)
{
	struct test_agent ta;
	cJSON *r;
	double end;

	CHECK(ta_start(&ta, 5000) == 0);
	cJSON_Delete(ta_request(&ta,
	    "{\"action\":\"open_shell\","
	    "\"shell_id\":\"t\",\"scrollback_bytes\":"
	    "4096,\"command\":\"head -c 20000 "
	    "/dev/zero | tr '\\\\0' a; exec sleep "
	    "300\"}"));
	CHECK(wait_bytes(&ta, "t", 20000, 10000));
	r = ta_request(&ta,
	    "{\"action\":\"read_shell\",\"shell_id\":\"t\","
	    "\"cursor\":0,\"max_chars\":100000}");
	end = ta_num(r, "output_bytes");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(r, "truncated")));
	CHECK_INT(ta_num(r, "cursor"), end - 4096);
	CHECK_INT(ta_num(r, "oldest_cursor"), end - 4096);
	CHECK_INT(ta_num(r, "next_cursor"), end);
	CHECK_INT(strlen(ta_str(r, "output")), 4096);
	cJSON_Delete(r);
	/* a cursor still kept reads normally */
	r = ta_requestf(&ta,
	    "{\"action\":\"read_shell\",\"shell_id\":\"t\","
	    "\"cursor\":%.0f,\"max_chars\":10}",
	    end - 100);
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(r, "truncated")));
	CHECK_INT(strlen(ta_str(r, "output")), 10);
	CHECK_INT(ta_num(r, "next_cursor"), end - 90);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(r, "more")));
	cJSON_Delete(r);
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(shell_output_utf8_handling)
{
	struct test_agent ta;
	cJSON *r;

	CHECK(ta_start(&ta, 5000) == 0);
	/* é é é, an invalid byte, then x */
	cJSON_Delete(ta_request(&ta,
	    "{\"action\":\"open_shell\",\"shell_id\":\"u\",\"command\":"
	    "[\"printf\",\"\\\\303\\\\251\\\\303\\\\251\\\\303\\\\251"
	    "\\\\377x\"]}"));
	CHECK(wait_bytes(&ta, "u", 8, 10000));
	cJSON_Delete(wait_state(&ta, "u", "stopped", 10000));
	r = ta_request(&ta,
	    "{\"action\":\"read_shell\",\"shell_id\":\"u\","
	    "\"cursor\":0,\"max_chars\":2}");
	CHECK_STR(ta_str(r, "output"), "\xc3\xa9\xc3\xa9");
	CHECK_INT(ta_num(r, "next_cursor"), 4);
	cJSON_Delete(r);
	/* a cursor inside a character: that byte alone is invalid */
	r = ta_request(&ta,
	    "{\"action\":\"read_shell\",\"shell_id\":\"u\","
	    "\"cursor\":5}");
	CHECK_STR(ta_str(r, "output"), "\xef\xbf\xbd\xef\xbf\xbdx");
	cJSON_Delete(r);
	r = ta_request(&ta,
	    "{\"action\":\"read_shell\",\"shell_id\":\"u\","
	    "\"cursor\":4}");
	CHECK_STR(ta_str(r, "output"), "\xc3\xa9\xef\xbf\xbdx");
	CHECK_INT(ta_num(r, "next_cursor"), 8);
	cJSON_Delete(r);
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(shell_read_wait_long_polls)
{
	struct test_agent ta;
	cJSON *r;

	CHECK(ta_start(&ta, 5000) == 0);
	cJSON_Delete(ta_request(&ta,
	    "{\"action\":\"open_shell\","
	    "\"shell_id\":\"w\",\"command\":\"sleep "
	    "0.3; echo late; exec sleep 300\"}"));
	r = ta_request(&ta,
	    "{\"action\":\"read_shell\",\"shell_id\":\"w\","
	    "\"cursor\":0,\"wait_ms\":20000}");
	CHECK_STR(ta_str(r, "output"), "late\r\n");
	cJSON_Delete(r);
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(shell_attach_stream)
{
	struct test_agent ta;
	struct seen s1 = {0}, s2 = {0};
	uint8_t rs[4];
	int a1, a2;
	cJSON *r;

	CHECK(ta_start(&ta, 5000) == 0);
	cJSON_Delete(ta_request(&ta,
	    "{\"action\":\"open_shell\","
	    "\"shell_id\":\"a\",\"command\":"
	    "\"echo ready; exec cat\"}"));
	CHECK(wait_bytes(&ta, "a", 5, 10000));
	a1 = att_open(&ta, "a", 0, &r);
	CHECK(a1 >= 0 && r != NULL);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(r, "attached")));
	CHECK_INT(ta_num(r, "cursor"), 0);
	cJSON_Delete(r);
	CHECK(att_until(a1, &s1, "ready", 10000)); /* replay */
	CHECK_INT(s1.first_cursor, 0);
	a2 = att_open(&ta, "a", -1, &r); /* second client, from the oldest */
	CHECK(a2 >= 0 && r != NULL);
	cJSON_Delete(r);

	ta_send_frame(a1, VMUX_ATTACH_INPUT, "hello\r", 6);
	CHECK(att_until(a1, &s1, "hello\r\nhello", 10000)); /* echo + cat */
	CHECK(att_until(a2, &s2, "hello\r\nhello", 10000)); /* both see it */

	vmux_put_u16(rs, 100);
	vmux_put_u16(rs + 2, 33);
	ta_send_frame(a2, VMUX_ATTACH_RESIZE, rs, 4);
	ta_send_frame(a2, VMUX_ATTACH_INPUT, "x", 1);
	CHECK(att_until(a1, &s1, "x", 10000));
	ta_send_frame(a1, VMUX_ATTACH_INPUT, "y", 1);
	CHECK(att_until(a1, &s1, "y", 10000));
	CHECK_INT(s1.resize_cols, 100);
	CHECK_INT(s1.resize_rows, 33);

	ta_send_frame(a1, 99, "?", 1); /* unknown type: ERROR, stream goes on */
	ta_send_frame(a1, VMUX_ATTACH_INPUT, "z", 1);
	CHECK(att_until(a1, &s1, "z", 10000));
	CHECK(s1.error);

	ta_send_frame(a1, VMUX_ATTACH_DETACH, NULL, 0);
	CHECK(att_until(a1, &s1, NULL, 10000));
	CHECK(s1.detach);
	close(a1);
	r = ta_request(&ta, "{\"action\":\"list_shells\"}");
	CHECK_STR(
	    state_of(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "shells"), 0)),
	    "running"); /* detaching keeps the shell */
	cJSON_Delete(r);

	/* Ctrl-D ends cat: the attached client gets EXIT and EOF. */
	ta_send_frame(a2, VMUX_ATTACH_INPUT, "\r\x04", 2);
	CHECK(att_until(a2, &s2, NULL, 10000));
	CHECK(s2.exit_seen);
	CHECK_INT(s2.exit_code, 0);
	close(a2);
	CHECK_INT(ta_stop(&ta), 0);
}

/* Read frames until the last CLIENTS frame holds needle; 1 if it does. */
static int
att_roster(int fd, struct seen *s, const char *needle, int ms)
{
	uint64_t until = mono_ms() + (uint64_t)ms;

	while (strstr(s->roster, needle) == NULL && mono_ms() < until)
		att_until(fd, s, "\001never", 100);
	if (strstr(s->roster, needle) == NULL)
		fprintf(stderr, "    no %s in CLIENTS %s\n", needle, s->roster);
	return strstr(s->roster, needle) != NULL;
}

/*
 * Who is attached: every client is told (CLIENTS) and records list it; a
 * watcher's keys and resizes go nowhere; TAKE gives one client the
 * keyboard (the others' keys are dropped) until RELEASE or it goes.
 */
TEST(shell_attach_watch_and_take)
{
	struct test_agent ta;
	struct seen st = {0}, ss = {0}, sw = {0}, sy = {0};
	uint8_t rs[4];
	int teacher, student, watcher, typed;
	char *text;
	cJSON *r;

	CHECK(ta_start(&ta, 5000) == 0);
	cJSON_Delete(ta_request(&ta,
	    "{\"action\":\"open_shell\",\"shell_id\":\"k\","
	    "\"command\":\"echo ready; exec cat\"}"));
	CHECK(wait_bytes(&ta, "k", 5, 10000));
	student = -1;
	r = ta_line_request(&ta,
	    "{\"action\":\"attach_shell\",\"shell_id\":\"k\","
	    "\"as\":\"alice\"}\n",
	    &student);
	CHECK(student >= 0 && r != NULL);
	cJSON_Delete(r);
	r = ta_line_request(&ta,
	    "{\"action\":\"attach_shell\",\"shell_id\":\"k\","
	    "\"as\":\"teacher\",\"watch\":true}\n",
	    &teacher);
	CHECK(teacher >= 0 && r != NULL);
	/* the answer's record lists both */
	text = cJSON_PrintUnformatted(cJSON_GetObjectItem(r, "roster"));
	CHECK(strstr(text, "\"as\":\"teacher\",\"watching\":true") != NULL);
	CHECK(strstr(text, "\"as\":\"alice\",\"watching\":false") != NULL);
	cJSON_free(text);
	cJSON_Delete(r);
	CHECK(att_roster(student, &ss,
	    "{\"as\":\"teacher\",\"watching\":true,\"keyboard\":false,"
	    "\"you\":false}",
	    10000));
	CHECK(strstr(ss.roster,
	          "{\"as\":\"alice\",\"watching\":false,\"keyboard\":false,"
	          "\"you\":true}") != NULL);
	CHECK(att_roster(teacher, &st, "\"keyboard\":null", 10000));

	/* a watcher's keys and resizes go nowhere */
	vmux_put_u16(rs, 99);
	vmux_put_u16(rs + 2, 11);
	ta_send_frame(teacher, VMUX_ATTACH_RESIZE, rs, 4);
	ta_send_frame(teacher, VMUX_ATTACH_INPUT, "watcher\r", 8);
	ta_send_frame(student, VMUX_ATTACH_INPUT, "student\r", 8);
	CHECK(att_until(student, &ss, "student\r\nstudent", 10000));
	CHECK(strstr(buf_cstr(&ss.data), "watcher") == NULL);
	r = ta_request(&ta, "{\"action\":\"list_shells\"}");
	CHECK_INT(
	    ta_num(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "shells"), 0),
	        "cols"),
	    80);
	cJSON_Delete(r);

	/* the teacher takes the keyboard: the student is told, and dropped */
	ta_send_frame(teacher, VMUX_ATTACH_TAKE, NULL, 0);
	CHECK(att_roster(student, &ss, "\"keyboard\":\"teacher\"", 10000));
	ta_send_frame(student, VMUX_ATTACH_INPUT, "lost\r", 5);
	ta_send_frame(teacher, VMUX_ATTACH_INPUT, "took\r", 5);
	CHECK(att_until(student, &ss, "took\r\ntook", 10000));
	CHECK(strstr(buf_cstr(&ss.data), "lost") == NULL);

	/* a third client (a recorder) sees who holds it */
	r = ta_line_request(&ta,
	    "{\"action\":\"attach_shell\",\"shell_id\":\"k\","
	    "\"as\":\"recorder\",\"watch\":true}\n",
	    &watcher);
	CHECK(watcher >= 0 && r != NULL);
	CHECK_STR(ta_str(r, "keyboard"), "teacher");
	cJSON_Delete(r);
	CHECK(att_roster(watcher, &sw, "\"keyboard\":\"teacher\"", 10000));
	cJSON_Delete(ta_line_request(&ta,
	    "{\"action\":\"attach_shell\",\"shell_id\":\"k\","
	    "\"as\":\"rec\",\"watch\":true,\"input\":true}\n",
	    &typed));
	CHECK(typed >= 0);
	CHECK(att_roster(typed, &sy, "\"as\":\"rec\"", 10000));

	/* handed back: the student types again */
	ta_send_frame(teacher, VMUX_ATTACH_RELEASE, NULL, 0);
	CHECK(att_roster(student, &ss, "\"keyboard\":null", 10000));
	ta_send_frame(student, VMUX_ATTACH_INPUT, "back\r", 5);
	CHECK(att_until(student, &ss, "back\r\nback", 10000));
	/* a client that asked for input is sent what was typed, as typed;
	 * the keys dropped (the student's during the takeover) are not */
	CHECK(att_until(typed, &sy, "back\r\nback", 10000));
	CHECK_STR(sy.typed, "back\r");

	/* a taker that goes hands it back too */
	ta_send_frame(teacher, VMUX_ATTACH_TAKE, NULL, 0);
	CHECK(att_roster(student, &ss, "\"keyboard\":\"teacher\"", 10000));
	close(teacher);
	CHECK(att_roster(student, &ss, "\"keyboard\":null", 10000));
	CHECK(strstr(ss.roster, "teacher") == NULL);
	ta_send_frame(student, VMUX_ATTACH_INPUT, "again\r", 6);
	CHECK(att_until(student, &ss, "again\r\nagain", 10000));

	/* a bad label is refused */
	r = ta_line_request(&ta,
	    "{\"action\":\"attach_shell\",\"shell_id\":\"k\","
	    "\"as\":\"a b\"}\n",
	    &teacher);
	CHECK(r != NULL && ta_str(r, "error") != NULL);
	cJSON_Delete(r);
	if (teacher >= 0)
		close(teacher);
	close(student);
	close(watcher);
	close(typed);
	buf_free(&sy.data);
	buf_free(&ss.data);
	buf_free(&st.data);
	buf_free(&sw.data);
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(shell_attach_signal_frame)
{
	struct test_agent ta;
	struct seen s = {0};
	int fd;
	cJSON *r;

	CHECK(ta_start(&ta, 5000) == 0);
	cJSON_Delete(ta_request(&ta,
	    "{\"action\":\"open_shell\","
	    "\"shell_id\":\"g\",\"command\":"
	    "[\"sleep\",\"300\"]}"));
	fd = att_open(&ta, "g", -1, &r);
	CHECK(fd >= 0 && r != NULL);
	cJSON_Delete(r);
	ta_send_frame(fd, VMUX_ATTACH_SIGNAL, "TERM", 4);
	CHECK(att_until(fd, &s, NULL, 10000));
	CHECK(s.exit_seen);
	CHECK_INT(s.exit_code, 128 + SIGTERM);
	close(fd);
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(shell_flood_keeps_agent_bounded_and_responsive)
{
	struct test_agent ta;
	struct seen s = {0};
	char path[64], buf[4096], *p;
	long rss_kb = 0;
	int fd, vanish;
	FILE *f;
	cJSON *r;

	CHECK(ta_start(&ta, 5000) == 0);
	cJSON_Delete(ta_request(&ta,
	    "{\"action\":\"open_shell\","
	    "\"shell_id\":\"y\",\"command\":"
	    "[\"yes\"]}"));
	cJSON_Delete(ta_request(&ta,
	    "{\"action\":\"open_shell\","
	    "\"shell_id\":\"calm\",\"command\":"
	    "\"exec cat\"}"));
	/* a slow client (never reads) and one that vanishes mid-stream */
	fd = att_open(&ta, "y", 0, &r);
	CHECK(fd >= 0 && r != NULL);
	cJSON_Delete(r);
	vanish = att_open(&ta, "y", 0, &r);
	CHECK(vanish >= 0);
	cJSON_Delete(r);
	close(vanish);
	CHECK(wait_bytes(&ta, "y", 64 << 20, 60000));

	/* another shell still answers */
	cJSON_Delete(ta_request(&ta,
	    "{\"action\":\"write_shell\","
	    "\"shell_id\":\"calm\",\"input\":"
	    "\"still-here\",\"append_newline\":true}"));
	CHECK((p = wait_output(
	           &ta, "calm", "still-here\r\nstill-here", 20000)) != NULL);
	free(p);

	snprintf(path, sizeof path, "/proc/%d/status", (int)ta.pid);
	CHECK((f = fopen(path, "r")) != NULL);
	while (fgets(buf, sizeof buf, f) != NULL) {
		if (strncmp(buf, "VmRSS:", 6) == 0)
			rss_kb = atol(buf + 6);
	}
	fclose(f);
	CHECK(rss_kb > 0);
	log_debug("agent VmRSS %ld kB", rss_kb);
	CHECK(rss_kb < 48 * 1024 + (getenv("ASAN_OPTIONS") ? 200 * 1024 : 0));

	/* the slow client lagged behind the ring: it is told so */
	CHECK(att_until(fd, &s, "NEVER-THERE", 2000) == 0);
	CHECK(s.truncated);
	close(fd);
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(shell_fifty_at_once)
{
	struct test_agent ta;
	char id[32], needle[32], *out;
	cJSON *r;

	CHECK(ta_start(&ta, 5000) == 0);
	for (int i = 0; i < 50; i++) {
		r = ta_requestf(
		    &ta, "{\"action\":\"open_shell\",\"shell_id\":\"m%d\"}", i);
		CHECK_STR(state_of(r), "running");
		cJSON_Delete(r);
	}
	for (int i = 0; i < 50; i++) {
		cJSON_Delete(ta_requestf(&ta,
		    "{\"action\":\"write_shell\",\"shell_id\":\"m%d\","
		    "\"input\":\"echo n-$((%d*2))\",\"append_newline\":true}",
		    i, i));
	}
	for (int i = 0; i < 50; i++) {
		snprintf(id, sizeof id, "m%d", i);
		snprintf(needle, sizeof needle, "n-%d\r\n", i * 2);
		CHECK((out = wait_output(&ta, id, needle, 30000)) != NULL);
		free(out);
	}
	r = ta_request(&ta, "{\"action\":\"list_shells\"}");
	CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(r, "shells")), 50);
	cJSON_Delete(r);
	for (int i = 0; i < 50; i++) {
		r = ta_requestf(&ta,
		    "{\"action\":\"close_shell\",\"shell_id\":\"m%d\"}", i);
		CHECK(cJSON_IsTrue(cJSON_GetObjectItem(r, "closed")));
		cJSON_Delete(r);
	}
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(shell_attach_garbage_frames)
{
	struct test_agent ta;
	uint8_t junk[4096];
	char *p;
	int fd;
	cJSON *r;

	CHECK(ta_start(&ta, 5000) == 0);
	/* Random keystrokes must not end it: ^C ^\\ ^Z ignored, ^D loops. */
	cJSON_Delete(ta_request(&ta,
	    "{\"action\":\"open_shell\",\"shell_id\":\"j\",\"command\":"
	    "\"trap '' INT QUIT TSTP; echo armed; while :; do cat "
	    ">/dev/null; done\"}"));
	CHECK((p = wait_output(&ta, "j", "armed", 10000)) != NULL);
	free(p);
	srand(5);
	for (int round = 0; round < 20; round++) {
		fd = att_open(&ta, "j", -1, &r);
		CHECK(fd >= 0 && r != NULL);
		cJSON_Delete(r);
		for (size_t i = 0; i < sizeof junk; i++)
			junk[i] = (uint8_t)rand();
		if (round % 2) /* small lengths, so frames get parsed */
			for (size_t i = 0; i + 5 <= sizeof junk; i += 16) {
				junk[i] = (uint8_t)(rand() % 10);
				vmux_put_u32(junk + i + 1, 11);
			}
		write_all(fd, junk, sizeof junk);
		close(fd);
	}
	r = ta_request(&ta, "{\"action\":\"list_shells\"}");
	CHECK(r != NULL);
	CHECK_STR(
	    state_of(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "shells"), 0)),
	    "running");
	cJSON_Delete(r);
	r = ta_request(&ta, "{\"action\":\"ping\"}");
	CHECK(r != NULL && cJSON_IsTrue(cJSON_GetObjectItem(r, "ok")));
	cJSON_Delete(r);
	CHECK_INT(ta_stop(&ta), 0);
}

/*
 * One memory budget for shells and execs: a shell reserves its scrollback
 * and input buffer when it opens, an exec its kept output as it arrives;
 * past the budget the request is refused with a clear error, and closing a
 * shell gives its share back.
 */
TEST(shell_and_exec_share_the_memory_budget)
{
	struct test_agent ta;
	const char *out;
	cJSON *r;

	budget_set(12 << 20); /* the forked agent inherits it */
	CHECK(ta_start(&ta, 5000) == 0);
	budget_set(0);
	r = ta_request(&ta,
	    "{\"action\":\"open_shell\",\"shell_id\":\"big\","
	    "\"scrollback_bytes\":8388608,\"command\":[\"cat\"]}");
	CHECK_STR(ta_str(r, "shell_id"), "big");
	cJSON_Delete(r);
	r = ta_request(&ta,
	    "{\"action\":\"open_shell\",\"shell_id\":\"big2\","
	    "\"scrollback_bytes\":8388608,\"command\":[\"cat\"]}");
	CHECK_STR(ta_str(r, "error"),
	    "agent memory budget exhausted: 9 MiB in use of 12 MiB, 9 MiB "
	    "more asked");
	cJSON_Delete(r);
	/* 3 MiB left: an exec keeps that much of its output, and says why */
	r = ta_request(
	    &ta, "{\"command\":\"head -c 5000000 /dev/zero | tr '\\\\0' x\"}");
	CHECK(ta_num(r, "stdout_bytes") == 5000000);
	out = ta_str(r, "stdout");
	CHECK(out != NULL &&
	    strstr(out,
	        "(agent memory budget exhausted): "
	        "kept 3145728 of 5000000 bytes") != NULL);
	cJSON_Delete(r);
	/* an attached client's input buffer counts too */
	r = ta_request(&ta,
	    "{\"action\":\"open_shell\",\"shell_id\":\"mid\","
	    "\"scrollback_bytes\":2097152,\"command\":[\"cat\"]}");
	CHECK_STR(ta_str(r, "shell_id"), "mid"); /* 12 of 12 MiB */
	cJSON_Delete(r);
	r = ta_request(
	    &ta, "{\"action\":\"attach_shell\",\"shell_id\":\"big\"}");
	CHECK(ta_str(r, "error") != NULL &&
	    strstr(ta_str(r, "error"), "agent memory budget exhausted") !=
	        NULL);
	cJSON_Delete(r);
	cJSON_Delete(ta_request(
	    &ta, "{\"action\":\"close_shell\",\"shell_id\":\"mid\"}"));
	/* the exec gave its share back, and so does a closed shell */
	cJSON_Delete(ta_request(
	    &ta, "{\"action\":\"close_shell\",\"shell_id\":\"big\"}"));
	r = ta_request(&ta,
	    "{\"action\":\"open_shell\",\"shell_id\":\"big2\","
	    "\"scrollback_bytes\":8388608,\"command\":[\"cat\"]}");
	CHECK_STR(ta_str(r, "shell_id"), "big2");
	cJSON_Delete(r);
	CHECK_INT(ta_stop(&ta), 0);
}

/*
 * The agent's host-side tests never read the invoking user's startup
 * files: the process's own HOME holds a .profile and a .bashrc that would
 * leave a marker, the agent's private home a .profile that announces
 * itself. A default (login) shell reads the private one, has it as HOME,
 * and leaves no marker.
 */
TEST(shell_reads_only_the_private_home)
{
	struct test_agent ta;
	char outer[] = "/tmp/vmux-outer-home.XXXXXX", *f, *out, *want;
	const char *saved = getenv("HOME");
	char *old = saved != NULL ? xstrdup(saved) : NULL;
	FILE *fp;

	CHECK(mkdtemp(outer) != NULL);
	xasprintf(&f, "%s/.profile", outer);
	fp = fopen(f, "w");
	fprintf(fp, "touch %s/leaked\n", outer);
	fclose(fp);
	free(f);
	xasprintf(&f, "%s/.bashrc", outer);
	fp = fopen(f, "w");
	fprintf(fp, "touch %s/leaked\n", outer);
	fclose(fp);
	free(f);
	setenv("HOME", outer, 1);

	CHECK(ta_start(&ta, 5000) == 0);
	xasprintf(&f, "%s/.profile", ta.home);
	fp = fopen(f, "w");
	fprintf(fp, "echo private-profile-$((6*7))\n");
	fclose(fp);
	free(f);
	cJSON_Delete(
	    ta_request(&ta, "{\"action\":\"open_shell\",\"shell_id\":\"h\"}"));
	CHECK(
	    (out = wait_output(&ta, "h", "private-profile-42", 10000)) != NULL);
	free(out);
	cJSON_Delete(ta_request(&ta,
	    "{\"action\":\"write_shell\",\"shell_id\":\"h\","
	    "\"input\":\"echo home=$HOME cwd=$(pwd)\","
	    "\"append_newline\":true}"));
	xasprintf(&want, "home=%s cwd=%s\r\n", ta.home, ta.home);
	CHECK((out = wait_output(&ta, "h", want, 10000)) != NULL);
	free(out);
	free(want);
	CHECK_INT(ta_stop(&ta), 0);

	xasprintf(&f, "%s/leaked", outer);
	CHECK(access(f, F_OK) != 0);
	free(f);
	if (old != NULL) {
		setenv("HOME", old, 1);
		free(old);
	} else
		unsetenv("HOME");
	xasprintf(&f, "rm -rf '%s'", outer);
	CHECK_INT(system(f), 0);
	free(f);
}
