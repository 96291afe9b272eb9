/*
 * grant-logins.c: the logins a grant let in, found and ended (vmux revoke).
 *
 * sshd runs a grant's forced command, `env -i ... VMUX_HOME=H VMUX shell
 * NAME --id ID --if-instance I --as LABEL`, and env executes vmux with
 * those words: each login is a process of this account whose command line
 * is exactly them. A teacher who removes a student expects the student
 * out, so revoke ends those (SIGTERM: vmux shell detaches, the shell in the
 * guest lives on, ssh's session closes).
 */
#include <sys/stat.h>

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "cli.h"

#define CMDLINE_MAX 8192

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
 * End every process of ours running the command of grant line `line`.
 * How many were signalled.
 */
int
grant_logins_end(const char *line)
{
	char want[CMDLINE_MAX], have[CMDLINE_MAX], path[300];
	size_t wlen = grant_words(line, want, sizeof want);
	struct dirent *e;
	struct stat st;
	int fd, ended = 0;
	ssize_t n;
	DIR *d;

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
