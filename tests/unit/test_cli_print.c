/*
 * test_cli_print.c: guest text printed by vmux reaches the terminal only
 * with its control characters escaped (cli_error, cli_json_printable,
 * cli_json_print).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/common.h"
#include "cli/cli.h"
#include "unit.h"

/* Run fn with fd (1 or 2) sent to a file; what it wrote, caller frees. */
static char *
capture(int fd, void (*fn)(void))
{
	char path[] = "/tmp/vmux-unit-print.XXXXXX", *out = xcalloc(1, 4096);
	int tmp = mkstemp(path), saved = dup(fd);

	fflush(NULL);
	dup2(tmp, fd);
	fn();
	fflush(NULL);
	dup2(saved, fd);
	close(saved);
	if (pread(tmp, out, 4095, 0) < 0)
		out[0] = '\0';
	close(tmp);
	unlink(path);
	return out;
}

/* An agent error quoting a hostile cwd, over two lines. */
static void
print_error(void)
{
	cli_error("cwd /no\033[2Jdir\xc2\x9b: %s\nsecond line\a", "gone");
}

TEST(cli_error_escapes_guest_text)
{
	char *out = capture(2, print_error);

	CHECK_STR(out,
	    "vmux: cwd /no\\x1b[2Jdir\\u009b: gone\nsecond "
	    "line\\x07\n");
	free(out);
}

static cJSON *json_obj;

/* Print json_obj as --json does. */
static void
print_json(void)
{
	cli_json_print(stdout, json_obj, 0);
}

TEST(cli_json_output_escapes_controls_and_keeps_data)
{
	cJSON *back;
	char *out;

	json_obj = cJSON_CreateObject();
	cJSON_AddStringToObject(json_obj, "kernel", "6.1\033[31m\x7f\xc2\x9b");
	out = capture(1, print_json);
	CHECK_STR(out, "{\"kernel\":\"6.1\\u001b[31m\\u007f\\u009b\"}\n");
	back = cJSON_Parse(out);
	CHECK(back != NULL);
	CHECK_STR(cJSON_GetObjectItem(back, "kernel")->valuestring,
	    "6.1\033[31m\x7f\xc2\x9b");
	cJSON_Delete(back);
	free(out);

	/* for text output: every string and key made printable in place */
	cJSON_AddStringToObject(json_obj, "k\033y", "v");
	cli_json_printable(json_obj);
	CHECK_STR(cJSON_GetObjectItem(json_obj, "kernel")->valuestring,
	    "6.1\\x1b[31m\\x7f\\u009b");
	CHECK(cJSON_GetObjectItem(json_obj, "k\\x1by") != NULL);
	cJSON_Delete(json_obj);
}
