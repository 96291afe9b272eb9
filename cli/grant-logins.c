/*
 * grant-logins.c: a grant's token, and the logins a grant let in, found
 * and ended (vmux revoke, and grant when it replaces a key's line).
 *
 * Every grant names a random token in its forced command (`--grant T`),
 * live while HOME/grants/T exists: vmux shell refuses a token that is
 * not, so a connection sshd already let in (an ssh master that opens more
 * sessions with the same forced command) gets nothing after a revoke.
 * sshd runs the forced command, `env -i ... VMUX_HOME=H VMUX shell NAME
 * --id ID --if-instance I --grant T --as LABEL`, and env executes vmux with
 * those words: each login is a process of this account whose command line
 * is exactly them (the token makes it this grant's alone). A teacher who
 * removes a student expects the student out, so revoke ends those too
 * (SIGTERM: vmux shell detaches, the shell in the guest lives on, ssh's
 * session closes).
 */
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

#define CMDLINE_MAX 8192
#define TOKEN_LEN   32 /* hex digits */

/* Is s a token (TOKEN_LEN hex digits)? */
static int
grant_token_valid(const char *s)
{
	return strlen(s) == TOKEN_LEN &&
	    strspn(s, "0123456789abcdef") == TOKEN_LEN;
}

/* HOME/grants/TOKEN (free it). */
static char *
grant_token_path(const char *home, const char *token)
{
	char *p;

	xasprintf(&p, "%s/grants/%s", home, token);
	return p;
}

/*
 * A new live token for a grant to NAME under home into *out (free it). 0,
 * or -1 with cause.
 */
int
grant_token_new(const char *home, const char *name, char **out, char **cause)
{
	char *dir, *path, *text;
	int rc;

	*out = record_instance_new(); /* 128 random bits, in hex */
	xasprintf(&dir, "%s/grants", home);
	if (mkdir_p(dir, 0700) != 0) {
		xasprintf(cause, "cannot create %s: %s", dir, strerror(errno));
		free(dir);
		free(*out);
		*out = NULL;
		return -1;
	}
	free(dir);
	path = grant_token_path(home, *out);
	xasprintf(&text, "%s\n", name);
	rc = file_replace(path, text, strlen(text), 0600);
	if (rc != 0) {
		xasprintf(cause, "cannot write %s: %s", path, strerror(-rc));
		free(*out);
		*out = NULL;
	}
	free(text);
	free(path);
	return rc != 0 ? -1 : 0;
}

/* Is token live under home (a grant not revoked)? */
int
grant_token_live(const char *home, const char *token)
{
	char *path;
	int live;

	if (!grant_token_valid(token))
		return 0;
	path = grant_token_path(home, token);
	live = access(path, F_OK) == 0;
	free(path);
	return live;
}

/* Retire the token of grant line `line` (none: nothing to do). */
static void
grant_token_end(const char *home, const char *line)
{
	const char *p = strstr(line, " --grant ");
	char token[TOKEN_LEN + 1], *path;

	if (p == NULL)
		return;
	snprintf(token, sizeof token, "%s", p + 9);
	if (!grant_token_valid(token))
		return;
	path = grant_token_path(home, token);
	unlink(path);
	free(path);
}

/*
 * The words vmux runs with for the authorized_keys line `line` (what
 * follows VMUX_HOME=H in its command="..."), NUL-separated as in
 * /proc/PID/cmdline, into buf. Their length, or 0 if the line has none.
 */
static size_t
grant_words(const char *line, char *buf, size_t size)
{
	const char *cmd = strstr(line, "command=\""), *p, *end;
	size_t n = 0;

	if (cmd == NULL || (p = strstr(cmd, " VMUX_HOME=")) == NULL ||
	    (p = strchr(p + 1, ' ')) == NULL)
		return 0;
	for (end = ++p; *end != '\0' && *end != '"'; end++)
		; /* vmux's words have no quote (plain_path, names, labels) */
	if (*end != '"' || (size_t)(end - p) + 1 > size)
		return 0;
	for (; p < end; p++)
		buf[n++] = *p == ' ' ? '\0' : *p;
	buf[n++] = '\0';
	return n;
}

/*
 * End grant line `line`: its token retired (a connection already in can
 * open nothing more) and every process of ours running its command
 * signalled. How many were.
 */
int
grant_logins_end(const char *home, const char *line)
{
	char want[CMDLINE_MAX], have[CMDLINE_MAX], path[300];
	size_t wlen = grant_words(line, want, sizeof want);
	struct dirent *e;
	struct stat st;
	int fd, ended = 0;
	ssize_t n;
	DIR *d;

	grant_token_end(home, line);
	if (wlen == 0 || (d = opendir("/proc")) == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		n = fstat(fd, &st) == 0 && st.st_uid == geteuid()
		    ? read(fd, have, sizeof have)
		    : -1;
		close(fd);
		if (n == (ssize_t)wlen && memcmp(have, want, wlen) == 0 &&
		    kill((pid_t)atol(e->d_name), SIGTERM) == 0)
			ended++;
	}
	closedir(d);
	return ended;
}
