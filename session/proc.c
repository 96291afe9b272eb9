/*
 * proc.c: detached helper processes (QEMU, the bridge) and their identity.
 *
 * vmux starts QEMU and the bridge double-forked in a new session so they
 * outlive the CLI and never get the terminal's SIGINT/SIGHUP. The middle
 * process stays as a tiny reaper (comm "vmux-reap", every fd closed) that
 * waits for the program and exits with it: some init processes (containers,
 * sandboxes) never reap orphans, and a zombie QEMU would keep its pid.
 * Since these are not our children, a pid alone says little: a process
 * counts as "ours" only while /proc/PID/cmdline contains a path unique to
 * the session (the needle), and a zombie counts as gone. Every signal we
 * send is guarded by that check, so a recycled pid is never hit.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "session.h"

/* Where the grandchild parks its exec-error pipe while it rearranges fds. */
#define SPAWN_HIGH_FD 64
/* How long a dead process may stay a zombie before we stop waiting. */
#define ZOMBIE_GRACE_MS 2000
/* How many times (1 ms apart) an empty command line is read again: an exec
 * in progress (proc_state). */
#define EXEC_GRACE_TRIES 50
/* Task flags in /proc/PID/stat (include/linux/sched.h). */
#define PF_EXITING 0x00000004
#define PF_KTHREAD 0x00200000

/* Close fds lo..hi (inclusive), with close_range where the kernel has it. */
static void
close_fds(unsigned lo, unsigned hi)
{
	long max;
	unsigned fd;

	if (lo > hi)
		return;
	if (close_range(lo, hi, 0) == 0)
		return;
	max = sysconf(_SC_OPEN_MAX);
	if (max < 0 || max > 65536)
		max = 65536;
	for (fd = lo; fd <= hi && fd < (unsigned)max; fd++)
		close((int)fd);
}

/* In the grandchild: set up fds and signals, exec; never returns. */
static void __attribute__((noreturn))
spawn_exec(char *const argv[], int pass_fd, int null_fd, int log_fd, int err_fd)
{
	sigset_t set;
	int sig, error, want_pass = pass_fd >= 0;

	/* Park every fd we need above the ones we are about to fill. */
	err_fd = fcntl(err_fd, F_DUPFD_CLOEXEC, SPAWN_HIGH_FD);
	null_fd = fcntl(null_fd, F_DUPFD_CLOEXEC, SPAWN_HIGH_FD);
	log_fd = fcntl(log_fd, F_DUPFD_CLOEXEC, SPAWN_HIGH_FD);
	if (want_pass)
		pass_fd = fcntl(pass_fd, F_DUPFD_CLOEXEC, SPAWN_HIGH_FD);
	if (err_fd < 0 || null_fd < 0 || log_fd < 0 ||
	    (want_pass && pass_fd < 0))
		goto fail;
	if (dup2(null_fd, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0)
		goto fail;
	if (want_pass && dup2(pass_fd, 3) < 0)
		goto fail;
	close_fds(want_pass ? 4 : 3, (unsigned)err_fd - 1);
	close_fds((unsigned)err_fd + 1, ~0U);

	/* What QEMU and the bridge create (console log, sockets) is private. */
	umask(077);
	/* Ignored signals survive exec: give the child a clean slate. */
	for (sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigprocmask(SIG_SETMASK, &set, NULL);

	execv(argv[0], argv);
fail:
	error = errno;
	if (write(err_fd, &error, sizeof error) < 0) {
		/* nothing more we can say */
	}
	_exit(127);
}

/* Set in a reaper: its watcher must not wait for its own record. */
static int in_reaper;

/* Is this process a reaper (running its watcher)? */
int
proc_is_reaper(void)
{
	return in_reaper;
}

/* How long a program the watcher ended gets before SIGKILL. */
#define WATCH_KILL_MS 5000

/*
 * In the middle process: wait for pid (our only child), write how it ended
 * to exit_path (when not NULL) as {"code":N} or {"signal":N} with "time"
 * (and "cause" when the watcher ended it), then exit. Written to a
 * temporary name and renamed, so a reader never sees half a record.
 */
static void __attribute__((noreturn))
spawn_reap(pid_t pid, const char *exit_path, const struct proc_watch *w)
{
	char tmp[4200], line[512], cause[PROC_CAUSE_MAX] = "";
	const char *why = NULL;
	uint64_t kill_at = 0;
	int status, fd, n, ms;
	sigset_t chld;
	pid_t got;

	/*
	 * SIGCHLD blocked (and not ignored, which would reap for us): the
	 * watcher's sleep below ends the moment the program does.
	 */
	signal(SIGCHLD, SIG_DFL);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	close_fds(0, ~0U);
	/* 0-2 on /dev/null, so nothing a watcher opens can be taken for them */
	if ((fd = open("/dev/null", O_RDWR)) == 0) {
		dup2(fd, 1);
		dup2(fd, 2);
	}
	prctl(PR_SET_NAME, "vmux-reap", 0, 0, 0);
	in_reaper = 1;
	for (;;) {
		got = waitpid(pid, &status, w != NULL ? WNOHANG : 0);
		if (got == pid)
			break;
		if (got < 0 && errno != EINTR)
			_exit(0);
		if (got != 0)
			continue;
		/* still running: the watcher's turn, or its deadline's */
		if (why == NULL && (why = w->tick(w->arg, pid)) != NULL) {
			kill_at = mono_ms() + WATCH_KILL_MS;
		} else if (why != NULL && mono_ms() >= kill_at) {
			/* not reaped yet, so the pid is still our child's */
			kill(pid, SIGKILL);
		}
		ms = why != NULL ? 50 : w->tick_ms;
		sigtimedwait(&chld, NULL,
		    &(struct timespec){ms / 1000, (long)(ms % 1000) * 1000000});
	}
	if (w != NULL && w->ended != NULL)
		w->ended(w->arg, pid);
	if (exit_path == NULL ||
	    snprintf(tmp, sizeof tmp, "%s.tmp", exit_path) >= (int)sizeof tmp)
		_exit(0);
	/* The cause is ours, but keep the record JSON whatever it says. */
	for (n = 0; why != NULL && why[n] != '\0' && n < PROC_CAUSE_MAX - 1;
	     n++)
		cause[n] = why[n] == '"' || why[n] == '\\' ||
		        (unsigned char)why[n] < 0x20
		    ? '?'
		    : why[n];
	cause[n] = '\0';
	if (WIFSIGNALED(status))
		n = snprintf(line, sizeof line,
		    "{\"signal\":%d,\"time\":%lld,\"cause\":\"%s\"}\n",
		    WTERMSIG(status), (long long)time(NULL), cause);
	else
		n = snprintf(line, sizeof line,
		    "{\"code\":%d,\"time\":%lld,\"cause\":\"%s\"}\n",
		    WEXITSTATUS(status), (long long)time(NULL), cause);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0) {
		if (write(fd, line, (size_t)n) == n && close(fd) == 0)
			rename(tmp, exit_path);
		else
			unlink(tmp);
	}
	_exit(0);
}

/* Read what spawn_reap wrote; 0 (e->known set), or -1 (nothing known). */
int
proc_exit_read(const char *path, struct session_exit *e)
{
	char buf[1024];
	cJSON *o, *v;
	ssize_t n;
	int fd;

	memset(e, 0, sizeof *e);
	if (path == NULL || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read_full(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if ((o = cJSON_Parse(buf)) == NULL)
		return -1;
	if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(o, "signal")))
		e->signal = v->valueint;
	else if (cJSON_IsNumber(
	             v = cJSON_GetObjectItemCaseSensitive(o, "code")))
		e->code = v->valueint;
	else {
		cJSON_Delete(o);
		return -1;
	}
	if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(o, "time")))
		e->when = (int64_t)v->valuedouble;
	if (cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(o, "cause")))
		snprintf(e->cause, sizeof e->cause, "%s", v->valuestring);
	cJSON_Delete(o);
	e->known = 1;
	return 0;
}

/*
 * Wait until the reaper's record at path exists (the reaper exits right
 * after writing it) or deadline; 0 or -1. A command that ended a program
 * returns after its reaper did, so nothing of the session outlives it.
 */
int
proc_exit_wait(const char *path, uint64_t deadline)
{
	while (access(path, F_OK) != 0) {
		if (mono_ms() >= deadline)
			return -1;
		usleep(5000);
	}
	return 0;
}

/*
 * Start argv (argv[0] a path) detached: double fork, new session, stdin
 * from /dev/null, stdout and stderr appended to log_path, pass_fd (if >= 0)
 * as fd 3 and no other fd. When exit_path is not NULL the reaper records
 * there how the program ended (proc_exit_read). Returns the pid or -1 with
 * cause.
 */
pid_t
proc_spawn(char *const argv[], int pass_fd, const char *log_path,
    const char *exit_path, char **cause)
{
	return proc_spawn_watched(
	    argv, pass_fd, log_path, exit_path, NULL, cause);
}

/*
 * proc_spawn, and while the program runs the reaper calls
 * w->tick(w->arg, pid) every w->tick_ms: a watcher that may stop it (a
 * session's ttl and idle timeout, or its bridge gone). A tick that ended
 * the program itself returns why; the reaper stops ticking, SIGKILLs the
 * program if it is still there WATCH_KILL_MS later, and records the cause.
 * Once the program ended, w->ended(w->arg, pid) (when set) cleans up after it,
 * before its exit record says it ended.
 * The watcher runs in the reaper, a fork of the caller with no fds but 0-2
 * on /dev/null.
 */
pid_t
proc_spawn_watched(char *const argv[], int pass_fd, const char *log_path,
    const char *exit_path, const struct proc_watch *w, char **cause)
{
	int pid_pipe[2], err_pipe[2], null_fd, log_fd, status, error = 0;
	pid_t child, pid = -1;
	ssize_t n;

	log_fd =
	    open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (log_fd < 0) {
		xasprintf(
		    cause, "cannot open %s: %s", log_path, strerror(errno));
		return -1;
	}
	null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null_fd < 0) {
		xasprintf(cause, "cannot open /dev/null: %s", strerror(errno));
		close(log_fd);
		return -1;
	}
	if (pipe2(pid_pipe, O_CLOEXEC) != 0) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		close(log_fd);
		close(null_fd);
		return -1;
	}
	if (pipe2(err_pipe, O_CLOEXEC) != 0) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		close(pid_pipe[0]);
		close(pid_pipe[1]);
		close(log_fd);
		close(null_fd);
		return -1;
	}

	child = fork();
	if (child == 0) {
		pid_t grandchild;

		setsid();
		grandchild = fork();
		if (grandchild == 0)
			spawn_exec(argv, pass_fd, null_fd, log_fd, err_pipe[1]);
		if (write(pid_pipe[1], &grandchild, sizeof grandchild) < 0 ||
		    grandchild < 0)
			_exit(1);
		spawn_reap(grandchild, exit_path, w);
	}
	close(pid_pipe[1]);
	close(err_pipe[1]);
	close(log_fd);
	close(null_fd);
	if (child < 0) {
		xasprintf(cause, "fork: %s", strerror(errno));
		close(pid_pipe[0]);
		close(err_pipe[0]);
		return -1;
	}
	n = read_full(pid_pipe[0], &pid, sizeof pid);
	close(pid_pipe[0]);
	if (n != sizeof pid || pid <= 0) {
		while (waitpid(child, &status, 0) < 0 && errno == EINTR)
			;
		xasprintf(cause, "cannot start %s: fork failed", argv[0]);
		close(err_pipe[0]);
		return -1;
	}
	/* EOF means exec succeeded (the pipe was close-on-exec). */
	n = read_full(err_pipe[0], &error, sizeof error);
	close(err_pipe[0]);
	if (n == sizeof error) {
		xasprintf(cause, "cannot run %s: %s", argv[0], strerror(error));
		return -1;
	}
	return pid;
}

/* Process states as proc_state() sees them. */
enum { PROC_GONE, PROC_OURS, PROC_ZOMBIE };

/*
 * PROC_OURS if pid is alive with needle in its command line, PROC_ZOMBIE
 * if it is dead but not yet reaped, else PROC_GONE (missing, or someone
 * else's process).
 */
static int
proc_state(pid_t pid, const char *needle)
{
	char path[64], buf[65536], *paren;
	ssize_t n;
	unsigned flags;
	int fd, tries;

	if (pid <= 0 || needle == NULL || *needle == '\0')
		return PROC_GONE;
	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return PROC_GONE;
	n = read_full(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return PROC_GONE;
	buf[n] = '\0';
	paren = strrchr(buf, ')');
	if (paren == NULL || paren[1] != ' ')
		return PROC_GONE;
	if (paren[2] == 'Z' || paren[2] == 'X' || paren[2] == 'x')
		return PROC_ZOMBIE;
	/* the flags, field 9. An exiting process is dead but not yet
	 * reaped, as a zombie: its command line already reads empty, and
	 * taking that for gone let proc_wait_gone return before the reap
	 * (seen under ASan on a loaded machine). A kernel thread's command
	 * line is empty for good, not for an exec's moment. */
	if (sscanf(paren + 2, "%*c %*d %*d %*d %*d %*d %u", &flags) != 1)
		flags = 0;
	if ((flags & PF_EXITING) != 0)
		return PROC_ZOMBIE;

	/* Halfway through an exec the command line reads empty (the new
	 * image's arguments are not in place yet), and a program spawned a
	 * moment ago is often there: look again for a little while rather
	 * than call it gone. A kernel thread's stays empty. */
	snprintf(path, sizeof path, "/proc/%ld/cmdline", (long)pid);
	for (tries = 0;; tries++) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return PROC_GONE;
		n = read_full(fd, buf, sizeof buf);
		close(fd);
		if (n != 0 || tries == EXEC_GRACE_TRIES ||
		    (flags & PF_KTHREAD) != 0)
			break;
		usleep(1000);
	}
	if (n <= 0)
		return PROC_GONE;
	if (memmem(buf, (size_t)n, needle, strlen(needle)) == NULL)
		return PROC_GONE;
	return PROC_OURS;
}

/* Is pid alive (not a zombie) with needle somewhere in its command line? */
int
proc_matches(pid_t pid, const char *needle)
{
	return proc_state(pid, needle) == PROC_OURS;
}

/*
 * Wait until pid is no longer ours-and-alive, and (for up to
 * ZOMBIE_GRACE_MS) until its reaper has reaped it, so its pid is really
 * gone when we return. 0, or -1 if still alive at the deadline.
 */
int
proc_wait_gone(pid_t pid, const char *needle, uint64_t deadline)
{
	useconds_t step = 5000;
	uint64_t zombie_until = 0;
	int st;

	while ((st = proc_state(pid, needle)) != PROC_GONE) {
		uint64_t now = mono_ms();

		if (st == PROC_ZOMBIE) {
			if (zombie_until == 0)
				zombie_until = now + ZOMBIE_GRACE_MS;
			if (now >= zombie_until)
				return 0; /* nobody reaps it: dead is enough */
		} else if (now >= deadline)
			return -1;
		usleep(step);
		if (step < 100000)
			step *= 2;
	}
	return 0;
}

/*
 * End pid if it is still ours: SIGTERM, then SIGKILL after term_ms (0: kill
 * at once), then wait until it is really gone. 0, or -1 if it survived.
 */
int
proc_terminate(pid_t pid, const char *needle, int term_ms)
{
	if (!proc_matches(pid, needle))
		return 0;
	if (term_ms > 0) {
		kill(pid, SIGTERM);
		if (proc_wait_gone(
		        pid, needle, mono_ms() + (uint64_t)term_ms) == 0)
			return 0;
	}
	if (proc_matches(pid, needle))
		kill(pid, SIGKILL);
	return proc_wait_gone(pid, needle, mono_ms() + 10000);
}

/*
 * The last `lines` lines of a log file, with control characters (console
 * escape sequences) shown as '?'. NULL if the file is missing or empty.
 */
char *
file_tail(const char *path, int lines)
{
	char *buf, *p, *start;
	struct stat st;
	off_t off = 0;
	ssize_t n;
	int fd, seen = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && st.st_size > 16384)
		off = st.st_size - 16384;
	buf = xmalloc(16384 + 1);
	n = pread(fd, buf, 16384, off);
	close(fd);
	if (n <= 0) {
		free(buf);
		return NULL;
	}
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	buf[n] = '\0';
	if (n == 0) {
		free(buf);
		return NULL;
	}
	start = buf;
	for (p = buf + n; p > buf; p--) {
		if (p[-1] == '\n' && ++seen == lines) {
			start = p;
			break;
		}
	}
	for (p = start; *p != '\0'; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '\r')
			*p = ' ';
		else if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
			*p = '?';
	}
	p = xstrdup(start);
	free(buf);
	return p;
}
