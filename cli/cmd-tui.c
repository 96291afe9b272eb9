/*
 * cmd-tui.c: `vmux tui [NAME]` (and `vmux` alone on a terminal): the
 * full-screen terminal app (tui/).
 */
#include <stdlib.h>
#include <unistd.h>

#include "common/common.h"
#include "proto/attach.h"
#include "session/session.h"
#include "tui/tui.h"
#include "cli.h"

static int cmd_tui_exec(struct args *);

static const struct cmd_opt cmd_tui_opts[] = {
    {"grid", 'g', NULL, 0,
        "start in the grid: every session's current shell tiled live"},
    {"read-only", 'r', NULL, 0,
        "watch only: keys never reach a shell, the PTY is never resized, "
        "nothing is created or removed"},
    {"theme", 't', "NAME", 0,
        "default, light, high-contrast, monochrome, or a theme file's "
        "name under $XDG_CONFIG_HOME/vmux/themes"},
    {"config", 'f', "FILE", 0,
        "read FILE instead of $XDG_CONFIG_HOME/vmux/vmux.conf"},
    {"no-sidebar", 0, NULL, 0, "start with the sidebar hidden"},
    {"as", 0, "LABEL", 0,
        "who you are to the others attached to a shell (default: your "
        "login name): a student's title shows who watches"},
    {"selector", 'l', "SELECTOR", 0,
        "only the sessions whose labels match (KEY=VALUE, KEY!=VALUE, "
        "KEY, !KEY; commas: all hold), in the sidebar and the grid"},
    {"group-by", 0, "KEY", 0,
        "group the sidebar by this label (also: set group-by KEY)"},
    {"model-json", 0, NULL, 0,
        "print the sessions and shells the sidebar would show as JSON and "
        "exit (what vmux tui -H reads from other hosts)"},
    {"local-command", 0, "CMD", 1,
        "show CMD run on a host PTY in the pane instead of guests (for "
        "testing and benchmarking the terminal pane); given again, more "
        "panes, switched with n and p"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_tui_entry = {
    .name = "tui",
    .pre = "[NAME]",
    .post = NULL,
    .summary = "Open the full-screen terminal app: sessions and their "
               "shells in a sidebar, the selected shell's terminal beside "
               "it, a status bar below. With NAME, that session is "
               "selected and its most recent shell shown (one is opened if "
               "it has none). Keys follow tmux with the prefix C-b: c new "
               "shell, n/p next/previous, s sessions, z zoom, [ copy mode, "
               "] paste, k signal menu, u upload, g download, w grid "
               "(the wall: z zooms into a tile, t takes its keyboard, "
               "prefix T hands it back), : "
               "command prompt, d detach, ? help. Detaching leaves every "
               "VM and shell running. `vmux` with no command on a terminal "
               "is `vmux tui`.",
    .opts = cmd_tui_opts,
    .min_args = 0,
    .max_args = 1,
    .flags = CMD_TTY | CMD_STDIN | CMD_OWN_TERMINAL | CMD_HOSTS_HERE,
    .exec = cmd_tui_exec,
};

/* --model-json: the sidebar's sessions and shells, for another host. */
static int
tui_model_json(struct args *a)
{
	struct selector sel = {NULL, 0};
	const char *s = args_get(a, "selector"), *g = args_get(a, "group-by");
	char *home, *cause = NULL;
	struct model m;
	int rc;

	if (s != NULL && selector_parse(s, &sel, &cause) != 0) {
		rc = cli_usage_error(&cmd_tui_entry, "%s", cause);
		free(cause);
		return rc;
	}
	if (g != NULL && !label_key_valid(g)) {
		selector_free(&sel);
		return cli_usage_error(
		    &cmd_tui_entry, "--group-by %s: want a label key", g);
	}
	if ((home = cli_home()) == NULL) {
		selector_free(&sel);
		return EXIT_VMUX;
	}
	if (model_fetch(home, s != NULL ? &sel : NULL, g, &m, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		rc = EXIT_VMUX;
	} else {
		cJSON *j = model_to_json(&m);
		cli_json_print(stdout, j, 0);
		cJSON_Delete(j);
		model_free(&m);
		rc = 0;
	}
	free(home);
	selector_free(&sel);
	return rc;
}

/* Check we have a terminal, then run the TUI. */
static int
cmd_tui_exec(struct args *a)
{
	struct tui_opts o = {0};
	struct selector sel = {NULL, 0};
	char *cause = NULL;
	int rc;

	if (args_has(a, "model-json"))
		return tui_model_json(a);
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		cli_error("vmux tui needs a terminal on stdin and stdout");
		return EXIT_USAGE;
	}
	o.hosts = cli_tui_hosts;
	o.nhosts = cli_tui_nhosts;
	o.sel_text = args_get(a, "selector");
	if (a->argc > 0 && o.nhosts == 0 &&
	    session_name_valid(a->argv[0], &cause) != 0) {
		rc = cli_usage_error(&cmd_tui_entry, "%s", cause);
		free(cause);
		return rc;
	}
	o.session = a->argc > 0 ? a->argv[0] : NULL;
	o.grid = args_has(a, "grid");
	o.read_only = args_has(a, "read-only");
	o.theme = args_get(a, "theme");
	o.config = args_get(a, "config");
	o.no_sidebar = args_has(a, "no-sidebar");
	o.as = args_has(a, "as") ? args_get(a, "as") : attach_default_as();
	if (o.as != NULL && !vmux_attach_as_valid(o.as))
		return cli_usage_error(&cmd_tui_entry,
		    "--as '%s': want 1-%d of [A-Za-z0-9._@-]", o.as,
		    VMUX_ATTACH_AS_MAX);
	o.local = args_values(a, "local-command", &o.nlocal);
	if (o.nlocal == 0)
		o.local = NULL;
	if (args_get(a, "selector") != NULL) {
		if (selector_parse(args_get(a, "selector"), &sel, &cause) !=
		    0) {
			rc = cli_usage_error(&cmd_tui_entry, "%s", cause);
			free(cause);
			return rc;
		}
		o.sel = &sel;
	}
	if ((o.group_by = args_get(a, "group-by")) != NULL &&
	    !label_key_valid(o.group_by)) {
		selector_free(&sel);
		return cli_usage_error(&cmd_tui_entry,
		    "--group-by %s: want a label key", o.group_by);
	}
	rc = tui_main(&o);
	selector_free(&sel);
	return rc;
}
