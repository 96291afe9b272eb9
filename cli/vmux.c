/*
 * vmux.c: main() of the vmux command: global options, then one command.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "cli.h"

/* Parse global options, find the command, run it; its exit status. */
int
main(int argc, char **argv)
{
	const struct cmd_entry *e;
	struct args a;
	char *cause = NULL, **hosts = NULL;
	size_t nhosts = 0;
	int rc, remote = 0;

	log_open("vmux");
	signal(SIGPIPE, SIG_IGN);
	/* -H HOST (several for ls and tui): where the command runs */
	while (argc >= 2 &&
	    (strncmp(argv[1], "-H", 2) == 0 || strcmp(argv[1], "--host") == 0 ||
	        strncmp(argv[1], "--host=", 7) == 0)) {
		const char *h = NULL;
		int used = 1;
		if (argv[1][1] == 'H' && argv[1][2] != '\0')
			h = argv[1] + 2;
		else if (argv[1][1] == '-' && argv[1][6] == '=')
			h = argv[1] + 7;
		else if (argc > 2)
			h = argv[2], used = 2;
		if (h == NULL || *h == '\0')
			return cli_usage_error(NULL,
			    "%s needs a HOST (a name from vmux host ls, "
			    "ssh://USER@HOST, local or all)",
			    argv[1]);
		hosts = xreallocarray(hosts, nhosts + 1, sizeof *hosts);
		hosts[nhosts++] = (char *)h;
		argv += used;
		argc -= used;
	}
	if (argc < 2 && nhosts > 0)
		return cli_usage_error(
		    NULL, "-H HOST needs a command after it");
	if (argc < 2) {
		char *tui_argv[] = {"tui", NULL};
		/* on a terminal, vmux alone opens the TUI (like tmux) */
		if (isatty(STDIN_FILENO) && isatty(STDOUT_FILENO) &&
		    args_parse(&cmd_tui_entry, 1, tui_argv, &a, &cause) == 0) {
			rc = cmd_tui_entry.exec(&a);
			args_free(&a);
			return rc;
		}
		cmd_print_overview(1);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		cmd_print_overview(0);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		printf("vmux %s\n", VMUX_VERSION);
		return 0;
	}
	if (argv[1][0] == '-')
		return cli_usage_error(
		    NULL, "unknown option %s (try vmux help)", argv[1]);
	e = cmd_find(argv[1]);
	if (e == NULL)
		return cli_usage_error(
		    NULL, "unknown command '%s' (try vmux help)", argv[1]);
	if (args_parse(e, argc - 1, argv + 1, &a, &cause) != 0) {
		cli_output_start(e, NULL, argc - 1, argv + 1);
		rc = cli_usage_error(e, "%s", cause);
		free(cause);
		cli_record_error(e, NULL);
		return cli_output_finish(stdout, rc);
	}
	if (a.help) {
		cmd_print_help(e);
		rc = 0;
	} else {
		cli_output_start(e, &a, argc - 1, argv + 1);
		remote =
		    remote_route(e, &a, argc - 1, argv + 1, hosts, nhosts, &rc);
		if (!remote) {
			rc = cli_select(&a);
			if (rc == 0)
				rc = e->exec(&a);
			if (rc != 0)
				cli_record_error(e, &a);
		}
	}
	args_free(&a);
	free(hosts);
	return cli_output_finish(stdout, rc);
}
