/*
 * check.c: the last `vmux check` result a session keeps (check.json in its
 * directory, written by cli/cmd-check.c), read for `ls --json` and the TUI.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/common.h"
#include "session.h"

/*
 * The last `vmux check` result kept in session directory dir (check.json:
 * script, status, exit_code, line, at_unix), or NULL if none or not an
 * object. Small: the file is at most 64 KiB or ignored.
 */
cJSON *
session_check_read(const char *dir)
{
	char *path, buf[65536];
	cJSON *o = NULL;
	ssize_t n;
	int fd;

	xasprintf(&path, "%s/check.json", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	free(path);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0 || n == (ssize_t)sizeof buf - 1)
		return NULL;
	buf[n] = '\0';
	o = cJSON_Parse(buf);
	if (o != NULL && !cJSON_IsObject(o)) {
		cJSON_Delete(o);
		o = NULL;
	}
	return o;
}
