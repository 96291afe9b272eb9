/*
 * test_cli_args.c: the command-line parser, usage lines, `vmux exec`'s
 * argument handling ("--", --env validation, the JSON request), and --json
 * output (one document, errors included).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "cli/cli.h"
#include "unit.h"

static int
no_exec(struct args *a)
{
	return 0;
}

static const struct cmd_opt demo_opts[] = {
    {"cpus", 0, "N", 0, "cpus"},
    {"force", 'f', NULL, 0, "force"},
    {"port", 'p', "P", 1, "ports"},
    {"json", 0, NULL, 0, "json"},
    {NULL, 0, NULL, 0, NULL},
};

static const struct cmd_entry demo = {
    .name = "demo",
    .pre = "NAME",
    .summary = "demo",
    .opts = demo_opts,
    .min_args = 1,
    .max_args = 2,
    .exec = no_exec,
};

/* Parse a NULL-terminated vector against e. */
static int
parse(const struct cmd_entry *e, const char **v, struct args *a, char **cause)
{
	int n = 0;

	while (v[n] != NULL)
		n++;
	*cause = NULL;
	return args_parse(e, n, (char **)v, a, cause);
}

TEST(args_sizes_in_mib)
{
	long long v = -1;
	char *cause = NULL;

	CHECK_INT(option_size_mb("--disk", "512", 16, 1 << 24, &v, &cause), 0);
	CHECK(v == 512);
	CHECK_INT(option_size_mb("--disk", "512M", 16, 1 << 24, &v, &cause), 0);
	CHECK(v == 512);
	CHECK_INT(option_size_mb("--disk", "4G", 16, 1 << 24, &v, &cause), 0);
	CHECK(v == 4096);
	CHECK_INT(option_size_mb("--disk", "2t", 16, 1 << 24, &v, &cause), 0);
	CHECK(v == 2 * 1024 * 1024);
	static const char *const bad[] = {"", "G", "4X", "-1G", "1.5G", "8M",
	    "17T", "99999999999999999999G", "4GB", " 4G"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		CHECK_INT(
		    option_size_mb("--disk", bad[i], 16, 1 << 24, &v, &cause),
		    -1);
		CHECK(cause != NULL && strstr(cause, "invalid --disk") != NULL);
		free(cause);
		cause = NULL;
	}
}

TEST(args_options_anywhere)
{
	const char *v[] = {"demo", "--cpus", "2", "box", "-f", "--port=7",
	    "-p8", "-p", "9", NULL};
	struct args a;
	char *cause, **ports;
	int n;

	CHECK(parse(&demo, v, &a, &cause) == 0);
	CHECK_INT(a.argc, 1);
	CHECK_STR(a.argv[0], "box");
	CHECK_STR(args_get(&a, "cpus"), "2");
	CHECK(args_has(&a, "force"));
	CHECK(!args_has(&a, "json"));
	ports = args_values(&a, "port", &n);
	CHECK_INT(n, 3);
	CHECK_STR(ports[0], "7");
	CHECK_STR(ports[1], "8");
	CHECK_STR(ports[2], "9");
	args_free(&a);
}

TEST(args_value_may_look_like_option)
{
	const char *v[] = {"demo", "box", "--cpus", "-5", NULL};
	struct args a;
	char *cause;

	CHECK(parse(&demo, v, &a, &cause) == 0);
	CHECK_STR(args_get(&a, "cpus"), "-5");
	args_free(&a);
}

/* -l stands for exec's NAME: with a NAME too, one of them is a mistake
 * (the NAME would run as the command in every session picked). */
TEST(selector_or_name_not_both)
{
	static const char *const bad[][7] = {
	    {"exec", "web-1", "-l", "class=a", "--", "make", NULL},
	    {"exec", "-l", "class=a", "web-1", "--", "make", NULL},
	};
	static const char *const good[] = {
	    "exec", "-l", "class=a", "--", "make", "-l", NULL};
	struct args a;
	char *cause = NULL;

	for (size_t i = 0; i < nitems(bad); i++) {
		CHECK(parse(&cmd_exec_entry, (const char **)bad[i], &a,
		          &cause) == -1);
		CHECK(cause != NULL &&
		    strstr(cause, "'web-1' and -l: a NAME or -l, not both"));
		free(cause);
		cause = NULL;
	}
	CHECK(parse(&cmd_exec_entry, (const char **)good, &a, &cause) == 0);
	CHECK_INT(a.argc, 2); /* make -l: the command's own -l */
	CHECK_STR(a.argv[1], "-l");
	args_free(&a);
}

TEST(args_errors)
{
	static const char *const cases[][6] = {
	    {"demo", "box", "--bogus", NULL},
	    {"demo", "box", "-x", NULL},
	    {"demo", "box", "--cpus", NULL},
	    {"demo", "box", "--json=1", NULL},
	    {"demo", "box", "-fx", NULL},
	    {"demo", NULL},
	    {"demo", "a", "b", "c", NULL},
	};
	static const char *want[] = {"unknown option --bogus",
	    "unknown option -x", "--cpus needs a value (N)",
	    "--json takes no value", "-f takes no value",
	    "missing arguments (usage: vmux demo NAME [--cpus N] [-f] "
	    "[--port P]... [--json])",
	    "too many arguments"};
	size_t i;

	for (i = 0; i < nitems(cases); i++) {
		struct args a;
		char *cause;
		CHECK(parse(&demo, (const char **)cases[i], &a, &cause) == -1);
		if (strncmp(cause, want[i], strlen(want[i])) != 0) {
			unit_fail(
			    __FILE__, __LINE__, "case %zu: '%s'", i, cause);
			return;
		}
		free(cause);
	}
}

TEST(args_help_skips_count_checks)
{
	const char *v[] = {"demo", "--help", NULL};
	struct args a;
	char *cause;

	CHECK(parse(&demo, v, &a, &cause) == 0);
	CHECK(a.help);
	args_free(&a);
}

TEST(args_dashdash_ends_options)
{
	const char *v[] = {"demo", "--", "-f", NULL};
	struct args a;
	char *cause;

	CHECK(parse(&demo, v, &a, &cause) == 0);
	CHECK_INT(a.argc, 1);
	CHECK_STR(a.argv[0], "-f");
	CHECK(!args_has(&a, "force"));
	args_free(&a);
}

TEST(args_number_checks)
{
	long long v;
	char *cause = NULL;

	CHECK(option_number("--cpus", "4", 1, 64, &v, &cause) == 0);
	CHECK_INT(v, 4);
	static const char *bad[] = {
	    "abc", "", "4x", " 4", "0", "65", "-5", "99999999999999999999999"};
	for (size_t i = 0; i < nitems(bad); i++) {
		cause = NULL;
		CHECK(option_number("--cpus", bad[i], 1, 64, &v, &cause) == -1);
		CHECK(strstr(cause, "invalid --cpus") != NULL);
		free(cause);
	}
}

TEST(args_env_validation)
{
	static const char *good[] = {
	    "A=1", "_x=", "PATH=/bin:/usr/bin", "a1=b=c", "X=a b"};
	static const char *bad[] = {"=1", "A", "1A=x", "A-B=x", "", "A B=1"};
	char *cause = NULL;
	size_t i;

	for (i = 0; i < nitems(good); i++)
		CHECK(args_env_valid(good[i], &cause) == 0);
	for (i = 0; i < nitems(bad); i++) {
		cause = NULL;
		CHECK(args_env_valid(bad[i], &cause) == -1);
		CHECK(strstr(cause, "invalid --env") != NULL);
		free(cause);
	}
}

TEST(usage_line_from_table)
{
	char *u = cmd_usage(&demo);

	CHECK_STR(u, "vmux demo NAME [--cpus N] [-f] [--port P]... [--json]");
	free(u);
	u = cmd_usage(&cmd_exec_entry);
	CHECK_STR(u,
	    "vmux exec NAME [--timeout S] [--env K=V]... [--cwd DIR] [--user "
	    "USER] "
	    "[-i] "
	    "[--json] [--max-output BYTES] [--json-lines] [--selector "
	    "SELECTOR] "
	    "-- CMD [ARG...]");
	free(u);
}

/* Parse an exec command line and build its request. */
static cJSON *
exec_req(const char **v, int *timeout, char **cause)
{
	struct args a;
	cJSON *req = NULL;

	if (parse(&cmd_exec_entry, v, &a, cause) != 0)
		return NULL;
	if (cmd_exec_request(&a, timeout, &req, cause) != 0)
		req = NULL;
	args_free(&a);
	return req;
}

/* The request as compact JSON text. */
static char *
text(cJSON *o)
{
	char *s = cJSON_PrintUnformatted(o), *out = xstrdup(s);

	cJSON_free(s);
	cJSON_Delete(o);
	return out;
}

TEST(exec_dashdash_argv)
{
	const char *v[] = {"exec", "t1", "--", "uname", "-a", NULL};
	char *cause = NULL, *s;
	int timeout = 0;
	cJSON *o = exec_req(v, &timeout, &cause);

	CHECK(o != NULL);
	CHECK_INT(timeout, 300);
	s = text(o);
	CHECK_STR(
	    s, "{\"command\":[\"uname\",\"-a\"],\"timeout_seconds\":300}");
	free(s);
}

TEST(exec_options_then_command)
{
	const char *v[] = {"exec", "--timeout=5", "t1", "-e", "A=1", "--env",
	    "B=x y", "--env", "A=2", "--cwd", "/tmp", "--", "sh", "-c",
	    "echo $A", NULL};
	char *cause = NULL, *s;
	int timeout = 0;
	cJSON *o = exec_req(v, &timeout, &cause);

	CHECK(o != NULL);
	CHECK_INT(timeout, 5);
	s = text(o);
	CHECK_STR(s,
	    "{\"command\":[\"sh\",\"-c\",\"echo $A\"],"
	    "\"timeout_seconds\":5,\"env\":{\"B\":\"x y\",\"A\":\"2\"},"
	    "\"cwd\":\"/tmp\"}");
	free(s);
}

TEST(exec_without_dashdash_command_keeps_its_flags)
{
	const char *v[] = {"exec", "t1", "ls", "-l", "--timeout", "5", NULL};
	char *cause = NULL, *s;
	int timeout = 0;
	cJSON *o = exec_req(v, &timeout, &cause);

	CHECK(o != NULL);
	CHECK_INT(timeout, 300);
	s = text(o);
	CHECK_STR(s,
	    "{\"command\":[\"ls\",\"-l\",\"--timeout\",\"5\"],"
	    "\"timeout_seconds\":300}");
	free(s);
}

TEST(exec_dashdash_then_dashdash_is_argv)
{
	const char *v[] = {"exec", "t1", "--", "echo", "--", "x", NULL};
	char *cause = NULL, *s;
	int timeout;
	cJSON *o = exec_req(v, &timeout, &cause);

	CHECK(o != NULL);
	s = text(o);
	CHECK(strstr(s, "[\"echo\",\"--\",\"x\"]") != NULL);
	free(s);
}

TEST(exec_usage_errors)
{
	static const char *const cases[][8] = {
	    {"exec", "t1", NULL},
	    {"exec", "t1", "--", NULL},
	    {"exec", "t1", "--env", "NOEQ", "--", "true", NULL},
	    {"exec", "t1", "--env", "1X=2", "--", "true", NULL},
	    {"exec", "t1", "--timeout", "abc", "--", "true", NULL},
	    {"exec", "t1", "--timeout", "0", "--", "true", NULL},
	    {"exec", "bad/name", "--", "true", NULL},
	    {"exec", "t1", "--cwd", "", "--", "true", NULL},
	};
	static const char *want[] = {"missing arguments", "missing arguments",
	    "invalid --env 'NOEQ'", "invalid --env '1X=2'",
	    "invalid --timeout 'abc'", "invalid --timeout '0'",
	    "invalid session name 'bad/name'", "--cwd needs a directory"};
	size_t i;

	for (i = 0; i < nitems(cases); i++) {
		char *cause = NULL;
		int timeout;
		cJSON *o = exec_req((const char **)cases[i], &timeout, &cause);
		CHECK(o == NULL);
		if (cause == NULL ||
		    strncmp(cause, want[i], strlen(want[i])) != 0) {
			unit_fail(__FILE__, __LINE__, "case %zu: '%s'", i,
			    cause != NULL ? cause : "(null)");
			return;
		}
		free(cause);
	}
}

/* Run cli_output_finish into a buffer; the exit status and the text. */
static int
finish_into(int rc, char *buf, size_t len)
{
	FILE *f = fmemopen(buf, len, "w");
	int out;

	memset(buf, 0, len);
	out = cli_output_finish(f, rc);
	fclose(f);
	return out;
}

TEST(json_error_is_one_document_with_the_exit_code)
{
	const char *v[] = {"demo", "box", "--json", NULL};
	char buf[512], *cause;
	struct args a;
	cJSON *doc;
	int err[2], saved;

	CHECK(parse(&demo, v, &a, &cause) == 0);
	cli_output_start(&demo, &a, 3, (char **)v);
	CHECK(cli_json());
	/* nothing reaches stderr */
	CHECK(pipe(err) == 0);
	saved = dup(STDERR_FILENO);
	dup2(err[1], STDERR_FILENO);
	cli_result(cJSON_CreateObject()); /* an error wins over a result */
	cli_error("no session named '%s'", "box");
	cli_error("second");
	cli_notice("a notice");
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(err[1]);
	CHECK_INT(read(err[0], buf, sizeof buf), 0);
	close(err[0]);
	CHECK_INT(finish_into(EXIT_VMUX, buf, sizeof buf), EXIT_VMUX);
	doc = cJSON_Parse(buf);
	CHECK(doc != NULL && cJSON_GetArraySize(doc) == 2);
	CHECK_STR(cJSON_GetObjectItem(doc, "error")->valuestring,
	    "no session named 'box'; second");
	CHECK_INT(cJSON_GetObjectItem(doc, "exit_code")->valueint, 125);
	cJSON_Delete(doc);
	args_free(&a);
	cli_output_start(&demo, NULL, 0, NULL);
}

TEST(json_result_is_printed_and_errors_are_never_success)
{
	const char *v[] = {"demo", "box", "--json", NULL};
	char buf[512], *cause;
	struct args a;
	cJSON *o = cJSON_CreateObject(), *doc;

	CHECK(parse(&demo, v, &a, &cause) == 0);
	cli_output_start(&demo, &a, 3, (char **)v);
	cJSON_AddStringToObject(o, "removed", "box");
	cli_result(o);
	CHECK_INT(finish_into(0, buf, sizeof buf), 0);
	doc = cJSON_Parse(buf);
	CHECK(doc != NULL);
	CHECK_STR(cJSON_GetObjectItem(doc, "removed")->valuestring, "box");
	cJSON_Delete(doc);
	/* an error reported by a command that returned 0 still fails */
	cli_output_start(&demo, &a, 3, (char **)v);
	cli_error("late");
	CHECK_INT(finish_into(0, buf, sizeof buf), EXIT_VMUX);
	CHECK(strstr(buf, "\"exit_code\":\t125") != NULL);
	args_free(&a);
	cli_output_start(&demo, NULL, 0, NULL);
}

TEST(json_usage_error_before_parsing)
{
	const char *bad[] = {"demo", "--bogus", "--json", NULL};
	const char *after[] = {"demo", "--", "--json", NULL};
	char buf[512];

	/* the command line did not parse: --json is still seen */
	cli_output_start(&demo, NULL, 3, (char **)bad);
	CHECK(cli_json());
	CHECK_INT(cli_usage_error(&demo, "unknown option --bogus"), 2);
	CHECK_INT(finish_into(2, buf, sizeof buf), 2);
	CHECK(strstr(buf, "\"exit_code\":\t2") != NULL);
	CHECK(strstr(buf, "demo: unknown option --bogus") != NULL);
	/* after "--" it is an argument, not the option */
	cli_output_start(&demo, NULL, 3, (char **)after);
	CHECK(!cli_json());
}

TEST(without_json_nothing_is_kept)
{
	const char *v[] = {"demo", "box", NULL};
	char buf[64], *cause;
	struct args a;

	CHECK(parse(&demo, v, &a, &cause) == 0);
	cli_output_start(&demo, &a, 2, (char **)v);
	CHECK(!cli_json());
	cli_result(cJSON_CreateObject());
	CHECK_INT(finish_into(0, buf, sizeof buf), 0);
	CHECK_STR(buf, "");
	args_free(&a);
}
