/* test_agent_exec.c: exec_run on the host with real processes. */
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "test_agent_client.h"
#include "unit.h"

/* Run `sh -c cmd` with a timeout in ms; returns exec_run's result. */
static int
run_sh(const char *cmd, int timeout_ms, size_t max_output,
    struct exec_result *res, char **cause)
{
	char *argv[] = {"/bin/sh", "-c", (char *)cmd, NULL};
	struct exec_spec spec;

	memset(&spec, 0, sizeof spec);
	spec.argv = argv;
	spec.command_is_text = 1;
	spec.timeout_ms = timeout_ms;
	spec.max_output = max_output ? max_output : EXEC_DEFAULT_OUTPUT;
	spec.cancel_fd = -1;
	return exec_run(&spec, res, cause);
}

/* The stream's captured text as a C string. */
static const char *
text(struct exec_stream *s)
{
	return buf_cstr(&s->data);
}

/* Read a pid the command wrote to a file. */
static pid_t
read_pid(const char *path)
{
	FILE *f = fopen(path, "r");
	int pid = -1;

	if (f != NULL) {
		if (fscanf(f, "%d", &pid) != 1)
			pid = -1;
		fclose(f);
	}
	return pid;
}

TEST(exec_captures_stdout_stderr_and_status)
{
	struct exec_result res;
	char *cause = NULL;

	CHECK_INT(
	    run_sh("echo out; echo err >&2; exit 42", 10000, 0, &res, &cause),
	    0);
	CHECK_STR(text(&res.out), "out\n");
	CHECK_STR(text(&res.err), "err\n");
	CHECK_INT(res.exit_code, 42);
	CHECK_INT(res.signal, 0);
	CHECK(!res.timed_out && !res.out.truncated);
	exec_result_free(&res);
}

TEST(exec_argv_is_not_resplit)
{
	char *argv[] = {"printf", "%s|", "a b", "c;d", "$HOME", NULL};
	struct exec_spec spec = {.argv = argv,
	    .timeout_ms = 10000,
	    .max_output = 1000,
	    .cancel_fd = -1};
	struct exec_result res;
	char *cause = NULL;

	CHECK_INT(exec_run(&spec, &res, &cause), 0);
	CHECK_STR(text(&res.out), "a b|c;d|$HOME|");
	exec_result_free(&res);
}

TEST(exec_killed_by_signal)
{
	struct exec_result res;
	char *cause = NULL;

	CHECK_INT(run_sh("kill -KILL $$", 10000, 0, &res, &cause), 0);
	CHECK_INT(res.exit_code, 128 + SIGKILL);
	CHECK_INT(res.signal, SIGKILL);
	CHECK(!res.timed_out);
	exec_result_free(&res);
}

TEST(exec_timeout_kills_the_process_group)
{
	char dir[] = "/tmp/vmux-exec-test.XXXXXX", *cmd, path[64];
	struct exec_result res;
	char *cause = NULL;
	pid_t bg;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof path, "%s/pid", dir);
	xasprintf(&cmd, "sh -c 'sleep 300' & echo $! > %s; sleep 300", path);
	CHECK_INT(run_sh(cmd, 300, 0, &res, &cause), 0);
	free(cmd);
	CHECK(res.timed_out);
	CHECK_INT(res.exit_code, -1);
	bg = read_pid(path);
	CHECK(bg > 0);
	CHECK(ta_wait_dead(bg, 5000)); /* the grandchild died too */
	unlink(path);
	rmdir(dir);
	exec_result_free(&res);
}

TEST(exec_timeout_escalates_to_sigkill)
{
	struct exec_result res;
	char *cause = NULL;
	uint64_t start = mono_ms();

	CHECK_INT(run_sh("trap '' TERM; sleep 300", 200, 0, &res, &cause), 0);
	CHECK(res.timed_out);
	CHECK(mono_ms() - start < 60000); /* it ended at all */
	exec_result_free(&res);
}

TEST(exec_output_cap_marks_truncation)
{
	struct exec_result res;
	char *cause = NULL;

	CHECK_INT(run_sh("head -c 100000 /dev/zero | tr '\\0' x", 10000, 1000,
	              &res, &cause),
	    0);
	CHECK(res.out.truncated);
	CHECK_INT(res.out.total, 100000);
	CHECK(strstr(text(&res.out),
	          "[vmux: output truncated: kept 1000 of "
	          "100000 bytes]") != NULL);
	CHECK(strncmp(text(&res.out), "xxxx", 4) == 0);
	CHECK_INT(res.exit_code, 0);
	exec_result_free(&res);
}

TEST(exec_large_output_whole)
{
	struct exec_result res;
	char *cause = NULL;

	CHECK_INT(run_sh("head -c 4194304 /dev/zero | tr '\\0' x; "
	                 "head -c 300000 /dev/zero | tr '\\0' y >&2",
	              30000, 0, &res, &cause),
	    0);
	CHECK_INT(res.out.data.len, 4194304);
	CHECK_INT(res.err.data.len, 300000);
	CHECK(!res.out.truncated);
	exec_result_free(&res);
}

TEST(exec_bad_cwd_is_an_error)
{
	char *argv[] = {"pwd", NULL};
	struct exec_spec spec = {.argv = argv,
	    .cwd = "/nope/not/here",
	    .timeout_ms = 10000,
	    .max_output = 1000,
	    .cancel_fd = -1};
	struct exec_result res;
	char *cause = NULL;

	CHECK_INT(exec_run(&spec, &res, &cause), -1);
	CHECK_STR(cause, "cwd /nope/not/here: No such file or directory");
	free(cause);
}

TEST(exec_missing_program_is_an_error)
{
	char *argv1[] = {"/no/such/binary", NULL},
	     *argv2[] = {"nosuchcmd", NULL};
	struct exec_spec spec = {.argv = argv1,
	    .timeout_ms = 10000,
	    .max_output = 1000,
	    .cancel_fd = -1};
	struct exec_result res;
	char *cause = NULL;

	CHECK_INT(exec_run(&spec, &res, &cause), -1);
	CHECK_STR(cause, "exec /no/such/binary: No such file or directory");
	free(cause);
	spec.argv = argv2;
	CHECK_INT(exec_run(&spec, &res, &cause), -1);
	CHECK_STR(cause, "command not found: nosuchcmd");
	free(cause);
}

TEST(exec_env_and_cwd)
{
	char *argv[] = {"/bin/sh", "-c",
	    "echo \"$FOO|$HOME|$TERM|$LANG|$(pwd)\"; env | grep -c ^VMUX_LEAK",
	    NULL};
	char *env[] = {"FOO=bar baz", NULL};
	struct exec_spec spec = {.argv = argv,
	    .env = env,
	    .cwd = "/tmp",
	    .timeout_ms = 10000,
	    .max_output = 1000,
	    .cancel_fd = -1};
	struct exec_result res;
	char *cause = NULL;

	setenv("VMUX_LEAK", "1", 1); /* the agent's own env must not leak */
	CHECK_INT(exec_run(&spec, &res, &cause), 0);
	CHECK_STR(text(&res.out), "bar baz|/root|dumb|C.UTF-8|/tmp\n0\n");
	exec_result_free(&res);
	spec.cwd = NULL;
	argv[2] = "pwd";
	CHECK_INT(exec_run(&spec, &res, &cause), 0);
	CHECK_STR(text(&res.out), "/root\n");
	exec_result_free(&res);
}

TEST(exec_stdin_data)
{
	char *argv[] = {"cat", NULL};
	struct exec_spec spec = {.argv = argv,
	    .timeout_ms = 10000,
	    .max_output = 1000,
	    .stdin_data = "hello\n",
	    .stdin_len = 6,
	    .cancel_fd = -1};
	struct exec_result res;
	char *cause = NULL;

	CHECK_INT(exec_run(&spec, &res, &cause), 0);
	CHECK_STR(text(&res.out), "hello\n");
	exec_result_free(&res);
	spec.stdin_data = NULL; /* /dev/null: cat ends at once */
	CHECK_INT(exec_run(&spec, &res, &cause), 0);
	CHECK_STR(text(&res.out), "");
	exec_result_free(&res);
}

TEST(exec_background_daemon_does_not_hold_the_reply)
{
	struct exec_result res;
	char *cause = NULL;
	pid_t bg;
	char *p;

	CHECK_INT(
	    run_sh("sleep 300 & echo $!; echo done", 60000, 0, &res, &cause),
	    0);
	CHECK_INT(res.exit_code, 0);
	CHECK(!res.timed_out);
	bg = (pid_t)strtol(text(&res.out), &p, 10);
	CHECK(bg > 0);
	CHECK_STR(p, "\ndone\n");
	kill(bg, SIGKILL);
	exec_result_free(&res);
}

TEST(exec_client_hangup_cancels)
{
	char *argv[] = {"sleep", "300", NULL};
	struct exec_spec spec = {
	    .argv = argv, .timeout_ms = 60000, .max_output = 1000};
	struct exec_result res;
	char *cause = NULL;
	int sp[2];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0);
	close(sp[1]); /* the client is gone */
	spec.cancel_fd = sp[0];
	CHECK_INT(exec_run(&spec, &res, &cause), 0);
	CHECK(res.cancelled);
	CHECK(!res.timed_out);
	close(sp[0]);
	exec_result_free(&res);
}

TEST(exec_no_fd_leaks)
{
	struct exec_result res;
	char *cause = NULL;
	int fd = open("/dev/null", O_RDONLY); /* not close-on-exec */

	CHECK(fd > 2);
	CHECK_INT(run_sh("ls /proc/$$/fd", 10000, 0, &res, &cause), 0);
	CHECK_STR(text(&res.out), "0\n1\n2\n");
	exec_result_free(&res);
	close(fd);
}

/* A response sink collecting into a buf. */
static int
buf_sink(void *arg, const void *p, size_t n)
{
	buf_add(arg, p, n);
	return 0;
}

TEST(exec_response_is_valid_json)
{
	struct exec_result res;
	struct buf b;
	char *cause = NULL;
	cJSON *obj;

	CHECK_INT(run_sh("printf 'a\\377b\\000c'; echo e >&2; exit 3", 10000, 0,
	              &res, &cause),
	    0);
	buf_init(&b);
	CHECK_INT(response_exec(&res, buf_sink, &b), 0);
	CHECK(b.len > 0 && b.data[b.len - 1] == '\n');
	obj = cJSON_Parse(buf_cstr(&b));
	CHECK(obj != NULL);
	CHECK_INT(ta_num(obj, "exit_code"), 3);
	CHECK_MEM(ta_str(obj, "stdout"),
	    "a\xef\xbf\xbd"
	    "b",
	    5);
	CHECK_STR(ta_str(obj, "stderr"), "e\n");
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(obj, "timed_out")));
	CHECK(ta_num(obj, "duration_ms") >= 0);
	/* NUL survives as \u0000 in the JSON text */
	CHECK(strstr(buf_cstr(&b), "b\\u0000c") != NULL);
	cJSON_Delete(obj);
	exec_result_free(&res);
	buf_free(&b);
}

TEST(exec_timeout_response_has_null_exit_code)
{
	struct exec_result res;
	struct buf b;
	char *cause = NULL;
	cJSON *obj;

	CHECK_INT(run_sh("sleep 300", 100, 0, &res, &cause), 0);
	buf_init(&b);
	CHECK_INT(response_exec(&res, buf_sink, &b), 0);
	obj = cJSON_Parse(buf_cstr(&b));
	CHECK(obj != NULL);
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(obj, "exit_code")));
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(obj, "timed_out")));
	cJSON_Delete(obj);
	exec_result_free(&res);
	buf_free(&b);
}
