/*
 * cmd-gdb.c: `vmux gdb NAME`: the gdb command line for a session booted
 * with --gdb (QEMU's gdbstub on a Unix socket in the session's socket
 * directory, the user's alone). It prints, it does not run: the user picks
 * their gdb and adds symbols (a vmlinux with debug info) as they like.
 */
#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

static int cmd_gdb_exec(struct args *);

static const struct cmd_opt cmd_gdb_opts[] = {
    SELECT_OPT,
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_gdb_entry = {
    .name = "gdb",
    .pre = "NAME",
    .summary = "Print the gdb command that debugs the kernel of session "
               "NAME, booted with --gdb (add --paused to stop it before "
               "the first instruction).",
    .opts = cmd_gdb_opts,
    .flags = CMD_NAME_ONE,
    .min_args = 1,
    .max_args = 1,
    .exec = cmd_gdb_exec,
};

/* Print s single-quoted for a POSIX shell. */
static void
print_quoted(const char *s)
{
	putchar('\'');
	for (; *s != '\0'; s++) {
		if (*s == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*s);
	}
	putchar('\'');
}

static int
cmd_gdb_exec(struct args *a)
{
	struct session_record r;
	struct stat st;
	char *path = NULL, *target, *cause = NULL;

	if (session_name_valid(a->argv[0], &cause) != 0) {
		int rc = cli_usage_error(a->entry, "%s", cause);

		free(cause);
		return rc;
	}
	if (cli_session_record(a->argv[0], &r) != 0)
		return EXIT_VMUX;
	if (r.console_sock != NULL)
		path = session_gdb_path(&r);
	if (!session_qemu_alive(&r) || path == NULL || stat(path, &st) != 0 ||
	    !S_ISSOCK(st.st_mode)) {
		cli_error("session '%s' has no gdbstub: boot it with --gdb "
		          "(vmux restart %s --gdb [--paused])",
		    r.name, r.name);
		free(path);
		record_free(&r);
		return EXIT_VMUX;
	}
	xasprintf(&target, "target remote %s", path);
	fputs("gdb -ex ", stdout);
	print_quoted(target);
	putchar(' ');
	print_quoted(r.kernel);
	putchar('\n');
	free(target);
	free(path);
	record_free(&r);
	return 0;
}
