/*
 * cmd-check.c: `vmux check SCRIPT [NAME...] [-l SELECTOR]`: grade a class.
 *
 * SCRIPT (a host file) is sent to each session picked and run there, as
 * Killercoda and Instruqt grade: exit 0 passes. They run together, 16 at
 * a time (exec-many.c); vmux's own failure there (a stopped session) is
 * "error", not "fail"; a table says pass or fail per session with the last line
 * the script printed (which says why). Each session keeps its last result
 * in check.json in its directory, which `vmux ls --json` and the TUI show.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

#define CHECK_SCRIPT_MAX (1024 * 1024)

static int cmd_check_exec(struct args *);

static const struct cmd_opt cmd_check_opts[] = {
    {"timeout", 't', "S", 0,
        "a script still running after S seconds fails (default 300)"},
    {"json", 0, NULL, 0,
        "print a list: session, status (pass, fail, timed out), exit_code, "
        "stdout, stderr"},
    SELECT_OPT,
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_check_entry = {
    .name = "check",
    .pre = "SCRIPT [NAME...]",
    .summary = "Run the host file SCRIPT in each session named or picked "
               "by -l, all at once: exit 0 passes. Prints pass or fail per "
               "session with the script's last line; each session keeps "
               "its last result (ls --json, the TUI). Exits 0 if all "
               "passed, else 1.",
    .flags = CMD_NAMES | CMD_FIRST_NOT_NAME | CMD_STDIN,
    .opts = cmd_check_opts,
    .min_args = 2,
    .max_args = -1,
    .exec = cmd_check_exec,
};

/* The shell command that runs the script arriving on stdin. */
static const char check_runner[] =
    "f=$(mktemp /tmp/vmux-check.XXXXXX) || exit 125; cat >\"$f\"; "
    "chmod 700 \"$f\"; \"$f\"; rc=$?; rm -f \"$f\"; exit $rc";

static const char *check_script_name; /* for the records */

/* Keep a session's result in its directory (check.json, whole or not). */
static void
check_record(const char *session, int status, const char *line)
{
	char *home = session_home(NULL), *dir, *path, *text;
	cJSON *o;

	if (home == NULL)
		return;
	dir = session_dir(home, session);
	xasprintf(&path, "%s/check.json", dir);
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "script", check_script_name);
	cJSON_AddStringToObject(o, "status",
	    status == 0         ? "pass"
	        : status == 124 ? "timed out"
	        : status == 125 ? "error"
	                        : "fail");
	cJSON_AddNumberToObject(o, "exit_code", status);
	cJSON_AddStringToObject(o, "line", line);
	cJSON_AddNumberToObject(o, "at_unix", (double)time(NULL));
	text = cJSON_PrintUnformatted(o);
	if (text != NULL) /* a vanished session: none */
		(void)file_replace(path, text, strlen(text), 0600);
	free(text);
	cJSON_Delete(o);
	free(path);
	free(dir);
	free(home);
}

/* Check SCRIPT is a readable regular file of at most 1 MiB. */
static int
check_script(const char *path, char **cause)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		xasprintf(cause, "script %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		xasprintf(cause, "script %s: not a regular file", path);
		close(fd);
		return -1;
	}
	close(fd);
	if (st.st_size > CHECK_SCRIPT_MAX) {
		xasprintf(cause, "script %s: larger than 1 MiB", path);
		return -1;
	}
	return 0;
}

/* Run the script in every session picked. */
static int
cmd_check_exec(struct args *a)
{
	static const char *const skip[] = {"selector", "json", NULL};
	char *cmd[] = {"sh", "-c", (char *)check_runner}, *cause = NULL;
	struct many m = {.a = a,
	    .sub = "exec",
	    .skip = skip,
	    .cmd = cmd,
	    .ncmd = 3,
	    .parallel = MANY_PARALLEL,
	    .check = 1,
	    .record = check_record};
	const char *t = args_get(a, "timeout"), *slash;
	long long secs;
	int rc;

	if (a->argc < 2) {
		return cli_usage_error(a->entry,
		    "name the sessions to check, or pick them with -l");
	}
	if (t != NULL &&
	    option_number("--timeout", t, 1, 86400, &secs, &cause) != 0) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	if (check_script(a->argv[0], &cause) != 0) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	slash = strrchr(a->argv[0], '/');
	check_script_name = slash != NULL ? slash + 1 : a->argv[0];
	m.input = a->argv[0];
	return many_run(&m, a->argv + 1, (size_t)(a->argc - 1));
}
