/*
 * test_agent_serve.c: the agent's event loop on a Unix socket: requests,
 * errors, concurrency, idle and vanishing clients, shutdown.
 */
#include <sys/socket.h>
#include <sys/wait.h>

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "test_agent_client.h"
#include "unit.h"

/* The error message of a reply, or "" if it is not an error. */
static const char *
error_of(cJSON *obj)
{
	const char *e = ta_str(obj, "error");

	return e != NULL ? e : "";
}

TEST(serve_exec_round_trip)
{
	struct test_agent ta;
	cJSON *r;

	CHECK(ta_start(&ta, 5000) == 0);
	r = ta_request(
	    &ta, "{\"command\": \"echo ok\", \"timeout_seconds\": 30}");
	CHECK(r != NULL);
	CHECK_STR(ta_str(r, "stdout"), "ok\n");
	CHECK_STR(ta_str(r, "stderr"), "");
	CHECK_INT(ta_num(r, "exit_code"), 0);
	CHECK(ta_num(r, "duration_ms") >= 0);
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(r, "timed_out")));
	cJSON_Delete(r);
	r = ta_request(&ta,
	    "{\"action\":\"exec\",\"command\":[\"sh\",\"-c\","
	    "\"exit 7\"]}");
	CHECK_INT(ta_num(r, "exit_code"), 7);
	cJSON_Delete(r);
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(serve_errors_are_objects_and_agent_survives)
{
	static const char *bad[][2] = {
	    {"[]\n", "JSON object"},
	    {"{not json\n", "invalid JSON"},
	    {"{\"action\":\"frobnicate\"}\n", "unknown action"},
	    {"{\"command\": 3}\n", "\"command\""},
	    {"{\"command\":\"pwd\",\"cwd\":\"/nope\"}\n",
	        "cwd /nope: No such file or directory"},
	    {"\n", "empty request"},
	    {"{\"command\":\"true\"}{\n", "after the JSON object"},
	    {"\xff\xfe\x00\x01\n", "invalid JSON"},
	    {"{\"action\":\"read_shell\",\"shell_id\":\"nope\"}\n", "no shell"},
	};
	struct test_agent ta;
	char *reply;
	cJSON *r;

	CHECK(ta_start(&ta, 5000) == 0);
	for (size_t i = 0; i < nitems(bad); i++) {
		reply = ta_raw(&ta, bad[i][0],
		    strlen(bad[i][0]) + (bad[i][0][0] == '\xff' ? 3 : 0));
		CHECK(reply != NULL);
		r = cJSON_Parse(reply);
		if (r == NULL || strstr(error_of(r), bad[i][1]) == NULL)
			fprintf(stderr, "    %zu: %s", i, reply);
		CHECK(r != NULL && strstr(error_of(r), bad[i][1]) != NULL);
		cJSON_Delete(r);
		free(reply);
	}
	r = ta_request(&ta, "{\"command\":\"echo still-here\"}");
	CHECK_STR(ta_str(r, "stdout"), "still-here\n");
	cJSON_Delete(r);
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(serve_request_without_newline_at_eof)
{
	struct test_agent ta;
	char buf[4096];
	ssize_t n;
	int fd;

	CHECK(ta_start(&ta, 5000) == 0);
	fd = ta_connect(&ta);
	CHECK(fd >= 0);
	CHECK(write_all(fd, "{\"action\":\"ping\"}", 17) == 17);
	shutdown(fd, SHUT_WR); /* as `printf ... | socat` does */
	n = read_full(fd, buf, sizeof buf - 1);
	CHECK(n > 0);
	buf[n] = '\0';
	CHECK(strstr(buf, "\"ok\":true") != NULL);
	close(fd);
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(serve_overlong_request)
{
	struct test_agent ta;
	size_t n = VMUX_MAX_REQUEST + 4096;
	char *big = xmalloc(n), *reply;

	memset(big, ' ', n);
	big[0] = '{';
	CHECK(ta_start(&ta, 5000) == 0);
	reply = ta_raw(&ta, big, n);
	CHECK(reply != NULL && strstr(reply, "request is over") != NULL);
	free(reply);
	free(big);
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(serve_ping)
{
	struct test_agent ta;
	cJSON *r;

	CHECK(ta_start(&ta, 5000) == 0);
	r = ta_request(&ta, "{\"action\":\"ping\"}");
	CHECK(r != NULL);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(r, "ok")));
	CHECK_STR(ta_str(r, "version"), VMUX_VERSION);
	CHECK_STR(ta_str(r, "os"), "Linux");
	CHECK(ta_str(r, "kernel") != NULL);
	CHECK(ta_str(r, "hostname") != NULL);
	CHECK(ta_num(r, "uptime_seconds") > 0);
	CHECK_INT(ta_num(r, "pid"), ta.pid);
	cJSON_Delete(r);
	CHECK_INT(ta_stop(&ta), 0);
}

/* Read one reply line from fd (its receive timeout bounds the wait). */
static cJSON *
read_reply(int fd)
{
	char buf[4096];
	size_t len = 0;
	ssize_t n;

	while (len < sizeof buf - 1 &&
	    (n = read(fd, buf + len, sizeof buf - 1 - len)) > 0) {
		len += (size_t)n;
		if (memchr(buf, '\n', len) != NULL)
			break;
	}
	buf[len] = '\0';
	return cJSON_Parse(buf);
}

TEST(serve_gate_holds_requests_until_setup_is_done)
{
	struct test_agent ta;
	struct pollfd pfd;
	char msg[300], want[300];
	cJSON *r;
	int gate, fd, len;

	CHECK(ta_start_gated(&ta, 5000, &gate) == 0);
	/* connected and asked, as the host's first ping: not served yet */
	fd = ta_connect(&ta);
	CHECK(fd >= 0);
	CHECK(write(fd, "{\"command\":\"pwd\"}\n", 18) == 18);
	pfd.fd = fd;
	pfd.events = POLLIN;
	CHECK_INT(poll(&pfd, 1, 300), 0);
	/* vmux-init is done: the home comes through the gate, no cgroup */
	len = snprintf(msg, sizeof msg, "%s\n\n", ta.home);
	CHECK(write(gate, msg, (size_t)len) == len);
	close(gate);
	r = read_reply(fd);
	close(fd);
	CHECK(r != NULL);
	snprintf(want, sizeof want, "%s\n", ta.home);
	CHECK_STR(ta_str(r, "stdout"), want);
	CHECK_INT(ta_num(r, "exit_code"), 0);
	cJSON_Delete(r);
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(serve_gate_closed_without_a_message_still_serves)
{
	struct test_agent ta;
	cJSON *r;
	int gate;

	CHECK(ta_start_gated(&ta, 5000, &gate) == 0);
	CHECK(write(gate, "/half-a-line", 12) == 12); /* vmux-init died */
	close(gate);
	r = ta_request(&ta, "{\"action\":\"ping\"}");
	CHECK(r != NULL);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(r, "ok")));
	cJSON_Delete(r);
	r = ta_request(&ta, "{\"command\":\"pwd\"}");
	CHECK(r != NULL);
	CHECK(strstr(ta_str(r, "stdout"), "half-a-line") == NULL);
	cJSON_Delete(r);
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(serve_concurrent_requests)
{
	struct test_agent ta;
	char *flag, *req, *started;
	cJSON *r;
	pid_t child;
	int status;

	CHECK(ta_start(&ta, 5000) == 0);
	xasprintf(&flag, "%s/flag", ta.dir);
	/* A waits for a file that only B creates: serial serving deadlocks. */
	fflush(NULL);
	child = fork();
	if (child == 0) {
		xasprintf(&req,
		    "{\"command\":\"touch %s.a; while [ ! -e %s ]; do sleep "
		    "0.02; done; echo A\",\"timeout_seconds\":20}",
		    flag, flag);
		r = ta_request(&ta, req);
		_exit(r != NULL && ta_str(r, "stdout") != NULL &&
		            strcmp(ta_str(r, "stdout"), "A\n") == 0
		        ? 0
		        : 1);
	}
	/* B only once A runs, so A really waits on B. */
	xasprintf(&started, "%s.a", flag);
	for (uint64_t until = mono_ms() + 10000;
	     access(started, F_OK) != 0 && mono_ms() < until;)
		usleep(10000);
	CHECK(access(started, F_OK) == 0);
	unlink(started);
	free(started);
	r = ta_requestf(&ta, "{\"command\":[\"touch\",\"%s\"]}", flag);
	CHECK_INT(ta_num(r, "exit_code"), 0);
	cJSON_Delete(r);
	CHECK(waitpid(child, &status, 0) == child);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	unlink(flag);
	free(flag);
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(serve_idle_connection_times_out)
{
	struct test_agent ta;
	char buf[256];
	ssize_t n;
	int fd;
	cJSON *r;

	CHECK(ta_start(&ta, 300) == 0);
	fd = ta_connect(&ta);
	CHECK(fd >= 0);
	CHECK(write_all(fd, "{\"acti", 6) == 6); /* and then nothing */
	n = read(fd, buf, sizeof buf - 1);
	CHECK(n > 0);
	buf[n] = '\0';
	CHECK(strstr(buf, "no complete request") != NULL);
	close(fd);
	r = ta_request(&ta, "{\"action\":\"ping\"}");
	CHECK(r != NULL && cJSON_IsTrue(cJSON_GetObjectItem(r, "ok")));
	cJSON_Delete(r);
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(serve_vanishing_client_cancels_exec)
{
	struct test_agent ta;
	char *req, *path;
	FILE *f;
	int fd, pid = -1;
	cJSON *r;

	CHECK(ta_start(&ta, 5000) == 0);
	xasprintf(&path, "%s/pid", ta.dir);
	xasprintf(
	    &req, "{\"command\":\"echo $$ > %s; exec sleep 300\"}\n", path);
	fd = ta_connect(&ta);
	CHECK(fd >= 0);
	CHECK(write_all(fd, req, strlen(req)) > 0);
	for (int i = 0; i < 500 && pid <= 0; i++) {
		usleep(10000);
		if ((f = fopen(path, "r")) != NULL) {
			if (fscanf(f, "%d", &pid) != 1)
				pid = -1;
			fclose(f);
		}
	}
	CHECK(pid > 0);
	close(fd); /* gone mid-request */
	CHECK(ta_wait_dead(pid, 10000));
	r = ta_request(&ta, "{\"action\":\"ping\"}");
	CHECK(r != NULL && cJSON_IsTrue(cJSON_GetObjectItem(r, "ok")));
	cJSON_Delete(r);
	unlink(path);
	free(path);
	free(req);
	CHECK_INT(ta_stop(&ta), 0);
}

/*
 * Ping until the reply contains want (the agent accepts and counts
 * connections on its own schedule, slow under load); the last reply.
 */
static char *
ping_until(struct test_agent *ta, const char *want)
{
	char *reply = NULL;

	for (int i = 0; i < 500; i++) {
		free(reply);
		reply = ta_raw(ta, "{\"action\":\"ping\"}\n", 18);
		if (reply != NULL && strstr(reply, want) != NULL)
			break;
		usleep(20000);
	}
	return reply;
}

TEST(serve_too_many_connections)
{
	struct test_agent ta;
	int fds[40], n = 0;
	char *reply;

	CHECK(ta_start(&ta, 20000) == 0);
	for (int i = 0; i < 32; i++) {
		fds[n] = ta_connect(&ta);
		CHECK(fds[n] >= 0);
		n++;
	}
	reply = ping_until(&ta, "too many connections");
	CHECK(reply != NULL && strstr(reply, "too many connections") != NULL);
	free(reply);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	reply = ping_until(&ta, "\"ok\":true");
	CHECK(reply != NULL && strstr(reply, "\"ok\":true") != NULL);
	free(reply);
	CHECK_INT(ta_stop(&ta), 0);
}

TEST(serve_shutdown_ends_agent_in_unix_mode)
{
	struct test_agent ta;
	int status;
	cJSON *r;

	CHECK(ta_start(&ta, 5000) == 0);
	r = ta_request(&ta, "{\"action\":\"shutdown\"}");
	CHECK(r != NULL && cJSON_IsTrue(cJSON_GetObjectItem(r, "ok")));
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(r, "poweroff")));
	cJSON_Delete(r);
	CHECK(waitpid(ta.pid, &status, 0) == ta.pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ta.pid = 0;
	ta_stop(&ta);
}
