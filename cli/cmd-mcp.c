/*
 * cmd-mcp.c: `vmux mcp`: serve vmux to AI agents over the Model Context
 * Protocol (mcp/mcp.h), on stdio. The flags are the server's policy: an
 * agent gets what they give and nothing more.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "session/session.h"
#include "mcp/mcp.h"
#include "cli.h"

static int cmd_mcp_exec(struct args *);

static const struct cmd_opt cmd_mcp_opts[] = {
    {"name", 'n', "NAME", 0,
        "who the server is: its sessions are labelled vmux.mcp=NAME and it "
        "sees only those (default agent)"},
    {"profile", 0, "PROFILE", 0,
        "make sessions under this profile only (what it locks, the agent "
        "cannot change)"},
    {"max-sessions", 0, "N", 0,
        "hold at most N sessions, stopped ones included (default 8)"},
    {"max-memory", 0, "SIZE", 0,
        "hold at most SIZE of guest memory in all (512M, 4G; default: no "
        "cap)"},
    {"see-all", 0, NULL, 0,
        "see and use every session, not only the server's own"},
    {"allow-root", 0, "DIR", 1,
        "host folder copies and mounts may use (default: none)"},
    {"no-net", 0, NULL, 0, "sessions may not have a network"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_mcp_entry = {
    .name = "mcp",
    .summary = "Serve vmux to AI agents over the Model Context Protocol on "
               "stdin and stdout (claude mcp add vmux -- vmux mcp): tools "
               "for sessions, exec, shells, files, logs and check, each a "
               "vmux command. Every call is logged in $VMUX_HOME/mcp.log.",
    .flags = CMD_STDIN | CMD_OWN_TERMINAL,
    .opts = cmd_mcp_opts,
    .min_args = 0,
    .max_args = 0,
    .exec = cmd_mcp_exec,
};

/* The policy from the flags; 0 or -1 with *cause. */
static int
mcp_policy_build(const struct args *a, struct mcp_policy *p, char **cause)
{
	const char *s;
	char **roots, real[PATH_MAX];
	long long v;
	int n;

	memset(p, 0, sizeof *p);
	p->max_sessions = MCP_MAX_SESSIONS;
	s = args_get(a, "name");
	p->name = xstrdup(s != NULL ? s : MCP_NAME_DEFAULT);
	{
		char *label;

		xasprintf(&label, "%s=%s", MCP_LABEL_KEY, p->name);
		n = label_valid(label, cause);
		free(label);
		if (n != 0)
			return -1;
	}
	if ((s = args_get(a, "profile")) != NULL) {
		struct profile prof;

		if (profile_get(s, &prof, cause) != 0)
			return -1;
		p->profile = xstrdup(s);
	}
	if ((s = args_get(a, "max-sessions")) != NULL) {
		if (option_number("--max-sessions", s, 1, 1000, &v, cause) != 0)
			return -1;
		p->max_sessions = (int)v;
	}
	if ((s = args_get(a, "max-memory")) != NULL) {
		if (option_size_mb("--max-memory", s, SESSION_MEMORY_MIN,
		        1LL << 30, &v, cause) != 0)
			return -1;
		p->max_memory_mb = v;
	}
	p->see_all = args_has(a, "see-all");
	p->no_net = args_has(a, "no-net");
	roots = args_values(a, "allow-root", &n);
	for (int i = 0; i < n; i++) {
		if (realpath(roots[i], real) == NULL) {
			xasprintf(cause, "--allow-root %s: %s", roots[i],
			    strerror(errno));
			return -1;
		}
		p->roots =
		    xreallocarray(p->roots, p->nroots + 1, sizeof *p->roots);
		p->roots[p->nroots++] = xstrdup(real);
	}
	return 0;
}

/* Serve on stdio until stdin ends. */
static int
cmd_mcp_exec(struct args *a)
{
	struct mcp_policy p;
	struct mcp_server *s;
	char *cause = NULL;
	int rc;

	if (mcp_policy_build(a, &p, &cause) != 0) {
		policy_free(&p);
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	if ((p.home = cli_home()) == NULL) {
		policy_free(&p);
		return EXIT_VMUX;
	}
	/* a client that left must not kill us mid-answer: writes fail */
	signal(SIGPIPE, SIG_IGN);
	s = mcp_server_new(&p);
	rc = mcp_stdio_run(s);
	mcp_server_free(s);
	policy_free(&p);
	if (rc != 0) {
		cli_error("reading stdin: %s", strerror(errno));
		return EXIT_VMUX;
	}
	return 0;
}
