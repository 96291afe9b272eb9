/*
 * cmd-help.c: `vmux help [COMMAND]`.
 */
#include <sys/types.h>

#include "common/common.h"
#include "cli.h"

static int cmd_help_exec(struct args *);

const struct cmd_entry cmd_help_entry = {
    .name = "help",
    .pre = "[COMMAND]",
    .summary = "Show the list of commands, or one command's options.",
    .flags = CMD_THIS_HOST,
    .opts = (const struct cmd_opt[]){{NULL}},
    .min_args = 0,
    .max_args = 1,
    .exec = cmd_help_exec,
};

/* Print the overview or a command's help. */
static int
cmd_help_exec(struct args *a)
{
	const struct cmd_entry *e;

	if (a->argc == 0) {
		cmd_print_overview(0);
		return 0;
	}
	e = cmd_find(a->argv[0]);
	if (e == NULL)
		return cli_usage_error(
		    a->entry, "unknown command '%s'", a->argv[0]);
	cmd_print_help(e);
	return 0;
}
