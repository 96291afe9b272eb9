/*
 * errors.c: the ring of recent errors, for `vmux status`.
 *
 * Every failed vmux command appends {"time", "session", "command",
 * "message"} to $VMUX_HOME/errors.jsonl, which keeps the last
 * ERRORS_KEEP entries (seed 002's ring of 50). The file is rewritten in
 * place under an flock, so concurrent commands never lose or interleave an
 * entry. Only messages vmux wrote go in (a guest's text is made printable
 * before it reaches an error message).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "session.h"

#define ERRORS_FILE      "errors.jsonl"
#define ERRORS_MAX_BYTES (1 << 20) /* a bigger file is not ours: reset */

/* Read fd whole (at most ERRORS_MAX_BYTES); NULL if it is larger. */
static char *
errors_slurp(int fd, size_t *len)
{
	struct stat st;
	char *buf;
	ssize_t n;

	if (fstat(fd, &st) != 0 || st.st_size > ERRORS_MAX_BYTES)
		return NULL;
	buf = xmalloc((size_t)st.st_size + 1);
	n = pread(fd, buf, (size_t)st.st_size, 0);
	*len = n > 0 ? (size_t)n : 0;
	buf[*len] = '\0';
	return buf;
}

/*
 * Append one error to home's ring (nothing if home does not exist yet).
 * session and command may be NULL. Failures are only logged: reporting an
 * error must not cause another.
 */
void
errors_append(const char *home, const char *session, const char *command,
    const char *message)
{
	cJSON *o = cJSON_CreateObject();
	char *path, *line, *buf, *start;
	size_t len = 0, keep;
	int fd, lines = 0;

	xasprintf(&path, "%s/%s", home, ERRORS_FILE);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	free(path);
	if (fd < 0) {
		cJSON_Delete(o);
		return;
	}
	cJSON_AddNumberToObject(o, "time", (double)time(NULL));
	if (session != NULL)
		cJSON_AddStringToObject(o, "session", session);
	else
		cJSON_AddNullToObject(o, "session");
	if (command != NULL)
		cJSON_AddStringToObject(o, "command", command);
	else
		cJSON_AddNullToObject(o, "command");
	cJSON_AddStringToObject(o, "message", message);
	line = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	while (flock(fd, LOCK_EX) != 0 && errno == EINTR)
		;
	buf = errors_slurp(fd, &len);
	if (buf == NULL)
		buf = xstrdup(""), len = 0;
	/* keep the last ERRORS_KEEP - 1 lines, then add ours */
	for (start = buf + len; start > buf; start--) {
		if (start[-1] == '\n' && start != buf + len &&
		    ++lines == ERRORS_KEEP - 1)
			break;
	}
	keep = len - (size_t)(start - buf);
	if (ftruncate(fd, 0) != 0 ||
	    (keep > 0 && pwrite(fd, start, keep, 0) != (ssize_t)keep) ||
	    pwrite(fd, line, strlen(line), (off_t)keep) !=
	        (ssize_t)strlen(line) ||
	    pwrite(fd, "\n", 1, (off_t)(keep + strlen(line))) != 1)
		log_debug("errors: cannot write the ring: %s", strerror(errno));
	free(buf);
	cJSON_free(line);
	close(fd);
}

/* The ring, oldest first, as a JSON array (times as RFC 3339). */
cJSON *
errors_read(const char *home)
{
	cJSON *arr = cJSON_CreateArray(), *o, *t;
	char *path, *buf, *p, *nl, *when;
	size_t len;
	int fd;

	xasprintf(&path, "%s/%s", home, ERRORS_FILE);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	free(path);
	if (fd < 0)
		return arr;
	while (flock(fd, LOCK_SH) != 0 && errno == EINTR)
		;
	buf = errors_slurp(fd, &len);
	close(fd);
	for (p = buf; p != NULL && *p != '\0'; p = nl + 1) {
		if ((nl = strchr(p, '\n')) == NULL)
			break;
		o = cJSON_ParseWithLength(p, (size_t)(nl - p));
		if (!cJSON_IsObject(o)) {
			cJSON_Delete(o);
			continue;
		}
		t = cJSON_GetObjectItemCaseSensitive(o, "time");
		if (cJSON_IsNumber(t) &&
		    (when = time_rfc3339(t->valuedouble)) != NULL) {
			cJSON_ReplaceItemInObject(
			    o, "time", cJSON_CreateString(when));
			free(when);
		}
		cJSON_AddItemToArray(arr, o);
	}
	free(buf);
	return arr;
}
