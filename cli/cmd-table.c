/*
 * cmd-table.c: the table of vmux commands, lookup and the overview help.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "cli.h"

/* Every command, in the order help lists them. */
const struct cmd_entry *cmd_table[] = {
    &cmd_new_entry,
    &cmd_exec_entry,
    &cmd_check_entry,
    &cmd_run_entry,
    &cmd_shell_entry,
    &cmd_shells_entry,
    &cmd_open_entry,
    &cmd_keys_entry,
    &cmd_capture_entry,
    &cmd_resize_entry,
    &cmd_kill_entry,
    &cmd_close_entry,
    &cmd_cp_entry,
    &cmd_tui_entry,
    &cmd_mcp_entry,
    &cmd_web_entry,
    &cmd_ls_entry,
    &cmd_stop_entry,
    &cmd_start_entry,
    &cmd_restart_entry,
    &cmd_pause_entry,
    &cmd_resume_entry,
    &cmd_fork_entry,
    &cmd_logs_entry,
    &cmd_console_entry,
    &cmd_gdb_entry,
    &cmd_rescue_entry,
    &cmd_grant_entry,
    &cmd_revoke_entry,
    &cmd_grants_entry,
    &cmd_record_entry,
    &cmd_recordings_entry,
    &cmd_replay_entry,
    &cmd_status_entry,
    &cmd_images_entry,
    &cmd_host_entry,
    &cmd_pool_entry,
    &cmd_ping_entry,
    &cmd_connect_entry,
    &cmd_rm_entry,
    &cmd_help_entry,
    NULL,
};

/* Find a command by exact name. */
const struct cmd_entry *
cmd_find(const char *name)
{
	size_t i;

	for (i = 0; cmd_table[i] != NULL; i++) {
		if (strcmp(cmd_table[i]->name, name) == 0)
			return cmd_table[i];
	}
	return NULL;
}

/* Print the list of commands (to stderr after a usage error). */
void
cmd_print_overview(int to_stderr)
{
	FILE *f = to_stderr ? stderr : stdout;
	size_t i;

	fprintf(f,
	    "usage: vmux [--version] [--help] COMMAND [ARGS...]\n\n"
	    "vmux boots QEMU microVM sessions and runs commands in "
	    "them.\n\ncommands:\n");
	for (i = 0; cmd_table[i] != NULL; i++) {
		char *first = xstrdup(cmd_table[i]->summary), *dot;
		/* the first sentence of the summary is enough here */
		dot = strstr(first, ". ");
		if (dot != NULL)
			dot[0] = '\0';
		else if (*first != '\0' && first[strlen(first) - 1] == '.')
			first[strlen(first) - 1] = '\0';
		fprintf(f, "  %-9s %s\n", cmd_table[i]->name, first);
		free(first);
	}
	fprintf(f,
	    "\nRun 'vmux COMMAND --help' for a command's options; "
	    "see vmux(1) for more.\n");
}
