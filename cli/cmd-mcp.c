/*
 * cmd-mcp.c: `vmux mcp`: serve vmux to AI agents over the Model Context
 * Protocol (mcp/mcp.h), on stdio. The flags are the server's policy: an
 * agent gets what they give and nothing more.
 */
#include <sys/stat.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    {"label-key", 0, "PATTERN", 1,
        "label keys the agent may set on its sessions (a glob: task, "
        "team.*; default mcp.*, so its sessions join no person's "
        "selector)"},
    {"allow-image", 0, "PATTERN", 1,
        "image references session_create may pull (a glob of the "
        "resolved name: docker.io/library/*, 127.0.0.1:5000/team/*; "
        "default none: only images already pulled and those vmux "
        "images lists)"},
    {"http", 0, "ADDR:PORT", 0,
        "serve the Streamable HTTP transport on http://ADDR:PORT/mcp "
        "instead of stdio (ADDR an IPv4 address, 127.0.0.1 for this "
        "machine only)"},
    {"token-file", 0, "FILE", 0,
        "with --http: requests need Authorization: Bearer and the token in "
        "FILE (mode 0600, 16 characters or more); required off loopback"},
    {"allow-origin", 0, "ORIGIN", 1,
        "with --http: a browser Origin allowed beside this machine's "
        "(https://example.org)"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_mcp_entry = {
    .name = "mcp",
    .summary = "Serve vmux to AI agents over the Model Context Protocol on "
               "stdin and stdout (claude mcp add vmux -- vmux mcp), or over "
               "HTTP with --http: tools "
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
	for (char **k = args_values(a, "label-key", &n); n > 0; k++, n--) {
		if (**k == '\0' || strpbrk(*k, "=, ") != NULL) {
			xasprintf(cause,
			    "--label-key '%s': a key or a glob of keys "
			    "(task, team.*)",
			    *k);
			return -1;
		}
		p->label_keys = xreallocarray(
		    p->label_keys, p->nlabel_keys + 1, sizeof *p->label_keys);
		p->label_keys[p->nlabel_keys++] = xstrdup(*k);
	}
	for (char **k = args_values(a, "allow-image", &n); n > 0; k++, n--) {
		p->allow_images = xreallocarray(p->allow_images,
		    p->nallow_images + 1, sizeof *p->allow_images);
		p->allow_images[p->nallow_images++] = xstrdup(*k);
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

static volatile sig_atomic_t mcp_stop; /* SIGTERM or SIGINT came */

/* Stop serving; the commands under way are ended. */
static void
mcp_on_signal(int sig)
{
	(void)sig;
	mcp_stop = 1;
}

/* The token in file (0600, trimmed): caller frees; NULL with *cause. */
static char *
mcp_token_read(const char *file, char **cause)
{
	char *t = cli_secret_line("--token-file", file, cause);

	if (t != NULL && (strlen(t) < 16 || strchr(t, ' ') != NULL)) {
		free(t);
		xasprintf(cause,
		    "--token-file %s: the token is one line of 16 characters "
		    "or more, no spaces",
		    file);
		return NULL;
	}
	return t;
}

/* --http ADDR:PORT and what goes with it; 0 or -1 with *cause. */
static int
mcp_http_build(const struct args *a, struct mcp_http_opts *o, char **addr,
    char **token, char **cause)
{
	const char *s = args_get(a, "http"), *colon;
	struct in_addr in;
	long long port;
	int n;

	memset(o, 0, sizeof *o);
	*addr = *token = NULL;
	if (s == NULL) {
		if (args_get(a, "token-file") != NULL ||
		    args_has(a, "allow-origin")) {
			xasprintf(cause,
			    "--token-file and --allow-origin go "
			    "with --http");
			return -1;
		}
		return 0;
	}
	if ((colon = strrchr(s, ':')) == NULL) {
		xasprintf(
		    cause, "--http %s: give ADDR:PORT (127.0.0.1:8808)", s);
		return -1;
	}
	*addr = xstrndup(s, (size_t)(colon - s));
	if (inet_pton(AF_INET, *addr, &in) != 1) {
		xasprintf(cause, "--http %s: ADDR is an IPv4 address", s);
		return -1;
	}
	if (option_number("--http's PORT", colon + 1, 1, 65535, &port, cause) !=
	    0)
		return -1;
	o->addr = *addr;
	o->port = (int)port;
	o->loopback = (ntohl(in.s_addr) >> 24) == 127;
	if (args_get(a, "token-file") != NULL &&
	    (*token = mcp_token_read(args_get(a, "token-file"), cause)) == NULL)
		return -1;
	if (!o->loopback && *token == NULL) {
		xasprintf(cause,
		    "--http on %s, not loopback: give --token-file "
		    "(a bearer token every request must carry)",
		    *addr);
		return -1;
	}
	o->token = *token;
	o->origins = args_values(a, "allow-origin", &n);
	o->norigins = (size_t)n;
	return 0;
}

/* Serve on stdio until stdin ends, or on HTTP until a signal. */
static int
cmd_mcp_exec(struct args *a)
{
	struct mcp_policy p;
	struct mcp_http_opts http;
	struct mcp_server *s;
	struct sigaction sa;
	char *cause = NULL, *addr = NULL, *token = NULL;
	int rc;

	if (mcp_policy_build(a, &p, &cause) != 0 ||
	    mcp_http_build(a, &http, &addr, &token, &cause) != 0) {
		policy_free(&p);
		free(addr);
		free(token);
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
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = mcp_on_signal; /* no SA_RESTART: poll wakes */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	s = mcp_server_new(&p);
	if (addr != NULL)
		rc = mcp_http_run(s, &http, &mcp_stop, &cause);
	else if ((rc = mcp_stdio_run(s, &mcp_stop)) != 0)
		xasprintf(&cause, "reading stdin: %s", strerror(errno));
	mcp_server_free(s);
	policy_free(&p);
	free(addr);
	free(token);
	if (rc != 0) {
		cli_error("%s", cause);
		free(cause);
		return EXIT_VMUX;
	}
	return 0;
}
