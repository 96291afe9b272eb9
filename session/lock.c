/*
 * lock.c: one vmux command at a time on a session.
 *
 * Commands that change a session (start, stop, restart, rm, and the timers
 * that stop it) hold an exclusive flock on <session dir>/lock. The holder
 * writes what it is ("vmux stop (pid 42)") into the file, so a command that
 * finds the lock taken can say who has it. The lock is the kernel's: it is
 * released when the holder exits, however it exits, so a crashed command
 * never leaves a session locked.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "common/common.h"
#include "session.h"

/* How often a waiting command tries the lock again. */
#define LOCK_POLL_MS 50

/* What the current holder wrote into the lock file ("" if nothing). */
static void
lock_holder(int fd, char *buf, size_t size)
{
	ssize_t n = pread(fd, buf, size - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

/*
 * Lock the session in dir for what ("vmux stop"), waiting up to wait_ms
 * for another holder (notice, if not NULL, hears once that we wait). The
 * lock's fd (give it to session_unlock), or -1 with cause.
 */
int
session_lock_one(const char *dir, const char *what, int wait_ms,
    void (*notice)(const char *), char **cause)
{
	uint64_t deadline = mono_ms() + (uint64_t)(wait_ms > 0 ? wait_ms : 0);
	char *path, holder[256], *line;
	int fd, told = 0;

	xasprintf(&path, "%s/%s", dir, SESSION_LOCK);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		xasprintf(cause, "cannot open %s: %s", path, strerror(errno));
		free(path);
		return -1;
	}
	while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK) {
			xasprintf(
			    cause, "cannot lock %s: %s", path, strerror(errno));
			goto fail;
		}
		lock_holder(fd, holder, sizeof holder);
		if (mono_ms() >= deadline) {
			xasprintf(cause, "session is busy: %s is working on it",
			    *holder != '\0' ? holder : "another vmux command");
			goto fail;
		}
		if (!told && notice != NULL) {
			xasprintf(&line, "waiting for %s to finish",
			    *holder != '\0' ? holder : "another vmux command");
			notice(line);
			free(line);
			told = 1;
		}
		usleep(LOCK_POLL_MS * 1000);
	}
	xasprintf(&line, "%s (pid %ld)\n", what, (long)getpid());
	if (ftruncate(fd, 0) != 0 ||
	    pwrite(fd, line, strlen(line), 0) != (ssize_t)strlen(line))
		log_debug("lock %s: cannot record the holder", path);
	free(line);
	free(path);
	return fd;
fail:
	close(fd);
	free(path);
	return -1;
}

/* Release a lock from session_lock_one (-1 is ignored). */
void
session_unlock(int fd)
{
	if (fd < 0)
		return;
	if (ftruncate(fd, 0) != 0) {
		/* the holder text is advisory only */
	}
	close(fd);
}

/*
 * Lock session name for what (as session_lock_one) and load its record as
 * it is under the lock: read again, since whoever held the lock may have
 * changed it. The lock's fd with *r filled (the caller frees it), or -1
 * with cause.
 */
int
session_lock_record(const char *home, const char *name, const char *what,
    int wait_ms, void (*notice)(const char *), struct session_record *r,
    char **cause)
{
	int lock;

	if (session_name_valid(name, cause) != 0 ||
	    record_load(home, name, r, cause) != 0)
		return -1;
	lock = session_lock_one(r->dir, what, wait_ms, notice, cause);
	record_free(r);
	if (lock < 0)
		return -1;
	if (record_load(home, name, r, cause) != 0) {
		session_unlock(lock);
		return -1;
	}
	return lock;
}
