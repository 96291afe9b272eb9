/* test_agent_request.c: unit tests of the agent's request parsing. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "unit.h"

/* Parse a C string; returns the request or NULL with the cause kept. */
static struct agent_request *
parse(const char *s, char **cause)
{
	return request_parse(s, strlen(s), cause);
}

/* Expect a parse error whose message contains `want`. */
static int
fails_with(const char *s, const char *want)
{
	char *cause = NULL;
	struct agent_request *r = parse(s, &cause);
	int ok = r == NULL && cause != NULL && strstr(cause, want) != NULL;

	if (!ok)
		fprintf(
		    stderr, "    %s -> %s\n", s, cause ? cause : "(parsed)");
	request_free(r);
	free(cause);
	return ok;
}

TEST(request_exec_string)
{
	char *cause = NULL;
	struct agent_request *r = parse(
	    "{\"command\": \"echo ok\", \"timeout_seconds\": 30}", &cause);

	CHECK(r != NULL);
	CHECK_INT(r->action, ACTION_EXEC);
	CHECK(r->command_is_text);
	CHECK_STR(r->command, "echo ok");
	CHECK_STR(r->argv[0], "/bin/sh");
	CHECK_STR(r->argv[1], "-c");
	CHECK_STR(r->argv[2], "echo ok");
	CHECK(r->argv[3] == NULL);
	CHECK_INT(r->timeout_ms, 30000);
	CHECK_INT(r->max_output, EXEC_DEFAULT_OUTPUT);
	CHECK(r->env == NULL && r->cwd == NULL);
	request_free(r);
}

TEST(request_exec_array_env_cwd)
{
	char *cause = NULL;
	struct agent_request *r = parse("{\"action\":\"exec\",\"command\":"
	                                "[\"printf\",\"%s\",\"a b\"],\"env\":{"
	                                "\"FOO\":\"bar\",\"X\":\"\"},\"cwd\":"
	                                "\"/tmp\",\"timeout_seconds\":0.25,"
	                                "\"max_output_bytes\":100,"
	                                "\"stdin\":\"in\"}",
	    &cause);

	CHECK(r != NULL);
	CHECK(!r->command_is_text);
	CHECK_STR(r->argv[0], "printf");
	CHECK_STR(r->argv[2], "a b");
	CHECK(r->argv[3] == NULL);
	CHECK_STR(r->env[0], "FOO=bar");
	CHECK_STR(r->env[1], "X=");
	CHECK(r->env[2] == NULL);
	CHECK_STR(r->cwd, "/tmp");
	CHECK_INT(r->timeout_ms, 250);
	CHECK_INT(r->max_output, 100);
	CHECK_INT(r->stdin_len, 2);
	request_free(r);
}

TEST(request_exec_defaults_and_nulls)
{
	char *cause = NULL;
	struct agent_request *r = parse(" {\"command\":\"true\",\"env\":null,"
	                                "\"cwd\":null,\"timeout_seconds\":null,"
	                                "\"extra\":[1,2]}\n",
	    &cause);

	CHECK(r != NULL);
	CHECK_INT(r->timeout_ms, EXEC_DEFAULT_TIMEOUT_S * 1000);
	CHECK(r->env == NULL && r->cwd == NULL);
	request_free(r);
}

TEST(request_wrong_types)
{
	CHECK(fails_with("{\"command\": 5}", "\"command\" must be"));
	CHECK(fails_with("{\"command\": []}", "non-empty array"));
	CHECK(fails_with("{\"command\": [\"ls\", 3]}", "\"command\"[1]"));
	CHECK(fails_with("{\"command\": \"\"}", "empty"));
	CHECK(fails_with("{\"command\": \"x\", \"env\": []}", "\"env\""));
	CHECK(fails_with("{\"command\": \"x\", \"env\": {\"A\": 1}}",
	    "\"env\".A must be a string"));
	CHECK(fails_with("{\"command\": \"x\", \"env\": {\"A=B\": \"1\"}}",
	    "bad environment variable name"));
	CHECK(fails_with(
	    "{\"command\": \"x\", \"cwd\": 7}", "\"cwd\" must be a string"));
	CHECK(fails_with("{\"command\": \"x\", \"timeout_seconds\": \"5\"}",
	    "\"timeout_seconds\""));
	CHECK(fails_with("{\"command\": \"x\", \"timeout_seconds\": -1}",
	    "\"timeout_seconds\""));
	CHECK(fails_with("{\"command\": \"x\", \"timeout_seconds\": 1e9}",
	    "\"timeout_seconds\""));
	CHECK(fails_with("{\"command\": \"x\", \"max_output_bytes\": 1.5}",
	    "\"max_output_bytes\" must be an integer"));
	CHECK(fails_with("{\"action\": 3}", "\"action\" must be a string"));
	CHECK(fails_with("{\"action\": \"exec\"}", "missing \"command\""));
}

TEST(request_not_an_object)
{
	CHECK(fails_with("[]", "must be a JSON object"));
	CHECK(fails_with("\"exec\"", "must be a JSON object"));
	CHECK(fails_with("42", "must be a JSON object"));
	CHECK(fails_with("null", "must be a JSON object"));
}

TEST(request_invalid_json)
{
	CHECK(fails_with("{not json", "invalid JSON"));
	CHECK(fails_with("{\"command\": \"x\"", "invalid JSON"));
	CHECK(fails_with("", "empty request"));
	CHECK(fails_with("   \t", "empty request"));
	CHECK(fails_with("{} {}", "after the JSON object"));
	CHECK(fails_with("{}", "missing \"action\""));
}

TEST(request_deep_nesting)
{
	size_t n = 100000;
	char *s = xmalloc(2 * n + 1);
	char *cause = NULL;

	memset(s, '[', n);
	memset(s + n, ']', n);
	s[2 * n] = '\0';
	CHECK(parse(s, &cause) == NULL);
	CHECK(cause != NULL);
	free(cause);
	free(s);
}

TEST(request_unknown_action)
{
	CHECK(fails_with(
	    "{\"action\": \"frobnicate\"}", "unknown action \"frobnicate\""));
}

TEST(request_overlong)
{
	size_t n = VMUX_MAX_REQUEST + 10;
	char *s = xmalloc(n + 1);

	memset(s, ' ', n);
	s[n] = '\0';
	CHECK(fails_with(s, "over"));
	free(s);
}

TEST(request_simple_actions)
{
	char *cause = NULL;
	struct agent_request *r;

	r = parse("{\"action\":\"ping\"}", &cause);
	CHECK(r != NULL && r->action == ACTION_PING);
	request_free(r);
	r = parse("{\"action\":\"shutdown\"}", &cause);
	CHECK(r != NULL && r->action == ACTION_SHUTDOWN);
	request_free(r);
	r = parse("{\"action\":\"list_shells\"}", &cause);
	CHECK(r != NULL && r->action == ACTION_LIST_SHELLS);
	request_free(r);
}

TEST(request_open_shell)
{
	char *cause = NULL;
	struct agent_request *r =
	    parse("{\"action\":\"open_shell\",\"shell_id\":"
	          "\"shell-1\",\"cwd\":\"/workspace\","
	          "\"cols\":120,\"rows\":30,"
	          "\"scrollback_bytes\":65536}",
	        &cause);

	CHECK(r != NULL);
	CHECK_INT(r->action, ACTION_OPEN_SHELL);
	CHECK_STR(r->shell_id, "shell-1");
	CHECK_STR(r->cwd, "/workspace");
	CHECK_INT(r->cols, 120);
	CHECK_INT(r->rows, 30);
	CHECK_INT(r->scrollback, 65536);
	CHECK(r->argv == NULL);
	request_free(r);

	r = parse("{\"action\":\"open_shell\",\"command\":[\"cat\"]}", &cause);
	CHECK(r != NULL && r->shell_id == NULL && r->cols == 0);
	CHECK_STR(r->argv[0], "cat");
	request_free(r);

	CHECK(fails_with("{\"action\":\"open_shell\",\"shell_id\":\"a b\"}",
	    "\"shell_id\" must be"));
	CHECK(fails_with("{\"action\":\"open_shell\",\"shell_id\":\"\"}",
	    "\"shell_id\" must be"));
	CHECK(fails_with("{\"action\":\"open_shell\",\"cols\":0}",
	    "\"cols\" must be an integer from 1 to 4096"));
	CHECK(fails_with(
	    "{\"action\":\"open_shell\",\"rows\":\"x\"}", "\"rows\""));
	CHECK(fails_with("{\"action\":\"open_shell\",\"scrollback_bytes\":1}",
	    "\"scrollback_bytes\""));
}

TEST(request_shell_actions)
{
	char *cause = NULL;
	struct agent_request *r;

	r = parse("{\"action\":\"read_shell\",\"shell_id\":\"s\",\"cursor\":12,"
	          "\"max_chars\":1024,\"wait_ms\":500}",
	    &cause);
	CHECK(r != NULL && r->has_cursor && r->cursor == 12);
	CHECK_INT(r->max_chars, 1024);
	CHECK_INT(r->wait_ms, 500);
	request_free(r);
	r = parse("{\"action\":\"read_shell\",\"shell_id\":\"s\"}", &cause);
	CHECK(r != NULL && !r->has_cursor);
	CHECK_INT(r->max_chars, SHELL_READ_DEFAULT);
	request_free(r);

	r = parse("{\"action\":\"write_shell\",\"shell_id\":\"s\",\"input\":"
	          "\"pwd\",\"append_newline\":true}",
	    &cause);
	CHECK(r != NULL && r->append_newline && r->input_len == 3);
	request_free(r);

	r = parse("{\"action\":\"signal_shell\",\"shell_id\":\"s\","
	          "\"signal\":\"SIGINT\"}",
	    &cause);
	CHECK(r != NULL && r->signal == SIGINT);
	request_free(r);

	r = parse("{\"action\":\"resize_shell\",\"shell_id\":\"s\",\"cols\":"
	          "10,\"rows\":5}",
	    &cause);
	CHECK(r != NULL && r->cols == 10 && r->rows == 5);
	request_free(r);

	CHECK(
	    fails_with("{\"action\":\"read_shell\"}", "missing \"shell_id\""));
	CHECK(fails_with("{\"action\":\"read_shell\",\"shell_id\":\"s\","
	                 "\"cursor\":-1}",
	    "\"cursor\""));
	CHECK(fails_with("{\"action\":\"read_shell\",\"shell_id\":\"s\","
	                 "\"max_chars\":0}",
	    "\"max_chars\""));
	CHECK(fails_with("{\"action\":\"write_shell\",\"shell_id\":\"s\"}",
	    "missing \"input\""));
	CHECK(fails_with("{\"action\":\"write_shell\",\"shell_id\":\"s\","
	                 "\"input\":\"x\",\"append_newline\":1}",
	    "\"append_newline\" must be true or false"));
	CHECK(fails_with("{\"action\":\"signal_shell\",\"shell_id\":\"s\","
	                 "\"signal\":\"BOGUS\"}",
	    "unknown signal \"BOGUS\""));
	CHECK(fails_with("{\"action\":\"resize_shell\",\"shell_id\":\"s\","
	                 "\"cols\":10}",
	    "missing \"rows\""));
	CHECK(
	    fails_with("{\"action\":\"close_shell\"}", "missing \"shell_id\""));
	CHECK(fails_with("{\"action\":\"attach_shell\",\"shell_id\":\"s\","
	                 "\"cursor\":\"0\"}",
	    "\"cursor\""));
}

TEST(request_error_response_is_json)
{
	size_t len;
	char *line = response_error("bad \"thing\"\n\xff", &len);
	cJSON *obj;

	CHECK(line[len - 1] == '\n');
	obj = cJSON_Parse(line);
	CHECK(obj != NULL);
	CHECK_STR(cJSON_GetObjectItem(obj, "error")->valuestring,
	    "bad \"thing\"\n\xef\xbf\xbd");
	cJSON_Delete(obj);
	free(line);
}

TEST(request_mutations_never_crash)
{
	static const char *seeds[] = {
	    "{\"command\":[\"a\",\"b\"],\"env\":{\"A\":\"1\"},\"cwd\":\"/\","
	    "\"timeout_seconds\":1.5,\"max_output_bytes\":10}",
	    "{\"action\":\"open_shell\",\"shell_id\":\"s\",\"cols\":80,"
	    "\"rows\":24,\"command\":\"sh\",\"scrollback_bytes\":8192}",
	    "{\"action\":\"read_shell\",\"shell_id\":\"s\",\"cursor\":5,"
	    "\"max_chars\":3,\"wait_ms\":1}",
	    "{\"action\":\"signal_shell\",\"shell_id\":\"s\",\"signal\":"
	    "\"INT\"}",
	    "{\"action\":\"write_shell\",\"shell_id\":\"s\",\"input\":\"x\","
	    "\"append_newline\":false}",
	};
	static const char junk[] = "{}[]\",:0123456789.eE+-tfnul\\ \x00\xff";
	char buf[512], *cause;
	struct agent_request *r;

	srand(11);
	for (int round = 0; round < 20000; round++) {
		const char *seed = seeds[round % nitems(seeds)];
		size_t len = strlen(seed);

		memcpy(buf, seed, len);
		for (int k = rand() % 4; k >= 0; k--) {
			size_t at = (size_t)rand() % len;

			switch (rand() % 3) {
			case 0: /* replace a byte */
				buf[at] = junk[rand() % (sizeof junk - 1)];
				break;
			case 1: /* cut */
				len = at;
				break;
			default: /* duplicate a tail */
				if (len + (len - at) < sizeof buf) {
					memcpy(buf + len, buf + at, len - at);
					len += len - at;
				}
				break;
			}
			if (len == 0)
				break;
		}
		cause = NULL;
		r = request_parse(buf, len, &cause);
		CHECK((r == NULL) != (cause == NULL));
		request_free(r);
		free(cause);
	}
}
