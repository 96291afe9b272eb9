/*
 * cmd-web.c: `vmux web`: a room in the browser (web/web.h). The flags
 * become the server's options; the links come from `vmux grant --web`.
 */
#include <sys/stat.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "web/web.h"
#include "cli.h"

#define WEB_TEACHER_MIN                                                        \
	22 /* characters of a teacher's own token: 128 bits                    \
	      of base64url */

static int cmd_web_exec(struct args *);

static const struct cmd_opt cmd_web_opts[] = {
    {"listen", 0, "ADDR:PORT", 0,
        "where to serve (default 127.0.0.1:8022; 0.0.0.0:PORT for a room "
        "on the network, with --cert or --behind-proxy)"},
    SELECT_OPT,
    {"teacher-token-file", 0, "FILE", 0,
        "the wall's token, from FILE (mode 0600; 22 or more of "
        "A-Z a-z 0-9 - _); default: a new one each start, written with "
        "the wall's link to a file of mode 0600 whose path is printed"},
    {"behind-proxy", 0, NULL, 0,
        "listen off loopback without --cert: a proxy in front serves the "
        "TLS (links and tokens would otherwise cross the network in "
        "clear); better, listen on 127.0.0.1 behind it"},
    {"cert", 0, "FILE", 0, "serve HTTPS with this certificate (PEM)"},
    {"key", 0, "FILE", 0, "... and this private key"},
    {"prefix", 0, "PATH", 0,
        "serve under PATH (/vmux) behind a proxy that passes it on"},
    {"url", 0, "URL", 0,
        "how students reach this server (https://room.example.org/vmux): "
        "the start of the links vmux grant --web prints"},
    {"check", 0, "SCRIPT", 0,
        "the wall's check button runs vmux check SCRIPT on the tiles shown"},
    {"allow-origin", 0, "ORIGIN", 1,
        "a page Origin allowed beside the server's own (a proxy's "
        "https://room.example.org)"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_web_entry = {
    .name = "web",
    .summary = "Serve the room in a browser: each link from vmux grant "
               "--web opens its session's shell in a page, and the "
               "teacher's link opens a live wall of the sessions (-l "
               "picks them) to watch, zoom, take over and check.",
    .flags = CMD_OWN_TERMINAL,
    .opts = cmd_web_opts,
    .min_args = 0,
    .max_args = 0,
    .exec = cmd_web_exec,
};

/* The asset folder: $VMUX_WEB_DIR, else beside vmux; NULL with cause. */
static char *
web_assets(char **cause)
{
	const char *env = getenv("VMUX_WEB_DIR");
	char *exe = exe_dir(), *tries[3] = {NULL, NULL, NULL}, *found = NULL;
	int n = 0;

	if (env != NULL && *env != '\0')
		tries[n++] = xstrdup(env);
	else if (exe != NULL) {
		xasprintf(&tries[n++], "%s/../web", exe);
		xasprintf(&tries[n++], "%s/../share/vmux/web", exe);
	}
	for (int i = 0; i < n && found == NULL; i++) {
		char *js;

		xasprintf(&js, "%s/xterm/xterm.js", tries[i]);
		if (access(js, R_OK) == 0)
			found = realpath(tries[i], NULL);
		free(js);
	}
	if (found == NULL)
		xasprintf(cause,
		    "the web pages are not built (no xterm/xterm.js in %s): "
		    "run make",
		    n > 0 ? tries[0] : "the folder beside vmux");
	for (int i = 0; i < n; i++)
		free(tries[i]);
	free(exe);
	return found;
}

/* The teacher's token from file (0600), or NULL with cause. */
static char *
teacher_token_read(const char *file, char **cause)
{
	char *t = cli_secret_line("--teacher-token-file", file, cause);

	if (t != NULL &&
	    (strlen(t) < WEB_TEACHER_MIN ||
	        strspn(t,
	            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	            "0123456789-_") != strlen(t))) {
		free(t);
		xasprintf(cause,
		    "--teacher-token-file %s: the token is one line of %d or "
		    "more of A-Z a-z 0-9 - _",
		    file, WEB_TEACHER_MIN);
		return NULL;
	}
	return t;
}

/*
 * Keep a new teacher's token out of stdout (and so out of logs): write it to
 * HOME/web/teacher-token-PORT and the whole wall link to
 * HOME/web/wall-link-PORT, both 0600 (a server per port: two rooms keep
 * their own). 0 with both paths (caller frees), or -1 (said).
 */
static int
wall_link_write(const char *home, int port, const char *base, const char *token,
    char **token_file, char **link_file)
{
	char *link, *tf, *lf;
	int error;

	xasprintf(&tf, "%s/web/teacher-token-%d", home, port);
	xasprintf(&lf, "%s/web/wall-link-%d", home, port);
	xasprintf(&link, "%s/wall.html#%s\n", base, token);
	if ((error = file_replace(tf, token, strlen(token), 0600)) != 0 ||
	    (error = file_replace(lf, link, strlen(link), 0600)) != 0) {
		cli_error(
		    "cannot write %s or %s: %s", tf, lf, strerror(-error));
		free(tf);
		free(lf);
		free(link);
		return -1;
	}
	free(link);
	*token_file = tf;
	*link_file = lf;
	return 0;
}

/* --listen into host and port; 0 or -1 with cause. */
static int
listen_parse(const char *s, char **host, int *port, char **cause)
{
	const char *colon = strrchr(s, ':');
	struct in_addr in;
	long long v;

	if (colon == NULL) {
		xasprintf(
		    cause, "--listen %s: give ADDR:PORT (127.0.0.1:8022)", s);
		return -1;
	}
	*host = xstrndup(s, (size_t)(colon - s));
	if (inet_pton(AF_INET, *host, &in) != 1) {
		xasprintf(cause, "--listen %s: ADDR is an IPv4 address", s);
		return -1;
	}
	if (option_number("--listen's PORT", colon + 1, 1, 65535, &v, cause) !=
	    0)
		return -1;
	*port = (int)v;
	return 0;
}

/* The checks that need no server; 0 or -1 with cause. */
static int
web_opts_check(const struct args *a, struct web_opts *o, char **cause)
{
	const char *prefix = args_get(a, "prefix");
	struct selector sel;

	if (o->selector != NULL) {
		if (selector_parse(o->selector, &sel, cause) != 0)
			return -1;
		selector_free(&sel);
	}
	if ((o->cert == NULL) != (o->key == NULL)) {
		xasprintf(cause, "--cert and --key go together");
		return -1;
	}
	if (strncmp(o->host, "127.", 4) != 0 && o->cert == NULL &&
	    !args_has(a, "behind-proxy")) {
		xasprintf(cause,
		    "--listen %s:%d is off loopback: give --cert and --key "
		    "(tokens would cross the network in clear), or "
		    "--behind-proxy when a proxy in front serves the TLS",
		    o->host, o->port);
		return -1;
	}
	if (prefix != NULL &&
	    (prefix[0] != '/' || prefix[1] == '\0' ||
	        prefix[strlen(prefix) - 1] == '/' ||
	        strspn(prefix,
	            "/abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	            "0123456789-_.") != strlen(prefix) ||
	        strstr(prefix, "..") != NULL)) {
		xasprintf(cause,
		    "--prefix %s: a path such as /vmux (letters, digits, - _ . "
		    "and /; no trailing /)",
		    prefix);
		return -1;
	}
	o->prefix = prefix != NULL ? prefix : "";
	if (o->check_script != NULL && access(o->check_script, R_OK) != 0) {
		xasprintf(
		    cause, "--check %s: %s", o->check_script, strerror(errno));
		return -1;
	}
	for (int i = 0; i < o->norigins; i++)
		if (strncmp(o->origins[i], "http://", 7) != 0 &&
		    strncmp(o->origins[i], "https://", 8) != 0) {
			xasprintf(cause,
			    "--allow-origin %s: an origin is "
			    "http(s)://HOST[:PORT]",
			    o->origins[i]);
			return -1;
		}
	return 0;
}

/* Serve until a signal. */
static int
cmd_web_exec(struct args *a)
{
	struct web_opts o;
	const char *listen = args_get(a, "listen"), *tfile;
	char *host = NULL, *cause = NULL, *home, *token = NULL, *assets = NULL;
	char hash[WEB_HASH_HEX + 1], *base = NULL, *urlfile, *exe, *wall;
	char *wall_file = NULL, *token_file = NULL;
	int rc;

	memset(&o, 0, sizeof o);
	o.port = WEB_PORT_DEFAULT;
	o.selector = args_get(a, "selector");
	o.cert = args_get(a, "cert");
	o.key = args_get(a, "key");
	o.check_script = args_get(a, "check");
	o.origins = args_values(a, "allow-origin", &o.norigins);
	o.behind_proxy = args_has(a, "behind-proxy");
	tfile = args_get(a, "teacher-token-file");
	if (listen != NULL && listen_parse(listen, &host, &o.port, &cause)) {
		rc = cli_usage_error(a->entry, "%s", cause);
		goto out;
	}
	o.host = host != NULL ? host : "127.0.0.1";
	if (web_opts_check(a, &o, &cause) != 0 ||
	    (tfile != NULL &&
	        (token = teacher_token_read(tfile, &cause)) == NULL)) {
		rc = cli_usage_error(a->entry, "%s", cause);
		goto out;
	}
	if ((assets = web_assets(&cause)) == NULL) {
		cli_error("%s", cause);
		rc = EXIT_VMUX;
		goto out;
	}
	o.assets = assets;
	if ((home = cli_home()) == NULL) {
		rc = EXIT_VMUX;
		goto out;
	}
	o.home = home;
	if (web_grants_mkdir(home, &cause) != 0) { /* a first run's HOME too */
		cli_error("%s", cause);
		free(home);
		rc = EXIT_VMUX;
		goto out;
	}
	if (token == NULL)
		token = web_token_new();
	web_token_hash(token, hash);
	o.teacher_hash = hash;
	exe = exe_path();
	o.vmux_exe = exe;
	if (args_get(a, "url") != NULL) {
		base = xstrdup(args_get(a, "url"));
		o.base_url_given = 1;
	} else
		xasprintf(&base, "%s://%s:%d%s",
		    o.cert != NULL ? "https" : "http", o.host, o.port,
		    o.prefix);
	while (*base != '\0' && base[strlen(base) - 1] == '/')
		base[strlen(base) - 1] = '\0';
	o.base_url = base;
	xasprintf(&urlfile, "%s/web/url", home);
	file_replace(urlfile, base, strlen(base), 0600);
	free(urlfile);
	if (tfile == NULL) {
		if (wall_link_write(home, o.port, base, token, &token_file,
		        &wall_file) != 0) {
			rc = EXIT_VMUX;
			free(exe);
			free(home);
			goto out;
		}
		tfile = token_file;
	}
	xasprintf(&wall, "%s/wall.html#<the token in %s>", base, tfile);
	if (wall_file != NULL)
		xasprintf(&o.wall_note,
		    "the wall's link, token and all, is in %s (mode 0600)",
		    wall_file);
	o.wall_link = wall;
	rc = web_serve(&o, &cause);
	if (rc != 0) {
		cli_error("%s", cause);
		rc = EXIT_VMUX;
	}
	free(exe);
	free(home);
	free(wall);
	free(o.wall_note);
out:
	free(wall_file);
	free(token_file);
	free(cause);
	free(host);
	free(token);
	free(assets);
	free(base);
	return rc;
}
