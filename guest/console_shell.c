/*
 * console_shell.c: vmux-init's root shell on the serial console, the way in
 * when the agent is dead, absent or not serving yet (busybox init's
 * askfirst).
 *
 * A child of PID 1, the keeper, says "press Enter", waits for a line on the
 * console, runs a shell there with the console as its controlling terminal
 * and, when it ends, says so and waits again. It is a process of its own so
 * that a PID 1 stuck in its setup (a mount that never returns) still gives
 * a shell. The shell reads no startup file (not a login shell, ENV unset)
 * and starts in /: a broken .profile, on the workspace or an image, is what
 * it is there to fix. It runs in the root cgroup, outside the user's process
 * and memory limits, so a fork bomb does not lock the debugger out.
 *
 * Who can type here is the host's business: the console's socket is the
 * session owner's alone, and a grant never reaches it (cli/cmd-grant.c).
 * PID 1 owns the keeper (it restarts a keeper that dies); the keeper owns
 * its shell.
 */
#include <sys/ioctl.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "guest/init.h"

#define SHELL "/bin/sh"

/*
 * The console's own device ("/dev/ttyS0"), into buf: the last name in
 * /sys/class/tty/console/active is where /dev/console writes. A shell
 * needs it, as /dev/console cannot be a controlling terminal. Falls back
 * to /dev/console.
 */
static void
console_device(char *buf, size_t size)
{
	char names[128], *last;
	ssize_t n = -1;
	int fd;

	snprintf(buf, size, "/dev/console");
	if ((fd = open(
	         "/sys/class/tty/console/active", O_RDONLY | O_CLOEXEC)) >= 0) {
		n = read(fd, names, sizeof names - 1);
		close(fd);
	}
	if (n <= 0)
		return;
	names[n] = '\0';
	names[strcspn(names, "\n")] = '\0';
	last = strrchr(names, ' ');
	last = last != NULL ? last + 1 : names;
	if (*last != '\0' && strchr(last, '/') == NULL)
		snprintf(buf, size, "/dev/%s", last);
}

/*
 * Wait for a line on tty (Enter). 0, or -1 when the console cannot be
 * read (then the keeper waits a moment and tries again).
 */
static int
wait_enter(int tty)
{
	char c;
	ssize_t n;

	for (;;) {
		n = read(tty, &c, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		if (c == '\n' || c == '\r')
			return 0;
	}
}

/* In the child: make dev the controlling terminal and run the shell. */
static void __attribute__((noreturn)) shell_exec(const char *dev)
{
	sigset_t none;
	int fd;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();
	if ((fd = open(dev, O_RDWR)) < 0)
		_exit(127);
	ioctl(fd, TIOCSCTTY, 1); /* /dev/console's device: take it */
	dup2(fd, 0);
	dup2(fd, 1);
	dup2(fd, 2);
	if (fd > 2)
		close(fd);
	if ((fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC)) >=
	    0) { /* PID 1's exemption is not the shell's */
		if (write(fd, "0", 1) < 0) {
			/* it stays exempt: better than no shell */
		}
		close(fd);
	}
	if (chdir("/") < 0) {
		/* can't happen: / always exists */
	}
	unsetenv("ENV");
	setenv("HOME", "/root", 1);
	execl(SHELL, "sh", "-i", (char *)NULL);
	say("console: no shell: %s: %s", SHELL, strerror(errno));
	_exit(127);
}

/* The keeper's loop: offer a shell, run it, offer it again. */
static void __attribute__((noreturn)) keeper(void)
{
	struct termios sane;
	char dev[160], how[64];
	int tty, status, have_sane;
	pid_t pid;

	console_device(dev, sizeof dev);
	/* the console's settings as the kernel left them: each shell
	 * starts from these, whatever the last one left (raw, no echo) */
	if ((tty = open(dev, O_RDWR | O_NOCTTY | O_CLOEXEC)) >= 0) {
		have_sane = tcgetattr(tty, &sane) == 0;
		close(tty);
	} else
		have_sane = 0;
	for (;;) {
		if ((tty = open(dev, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
			sleep(1);
			continue;
		}
		if (have_sane)
			tcsetattr(tty, TCSANOW, &sane);
		say("console: press Enter for a root shell");
		if (wait_enter(tty) < 0) {
			close(tty);
			sleep(1);
			continue;
		}
		if ((pid = fork()) < 0) {
			say("console: fork: %s", strerror(errno));
			close(tty);
			sleep(1);
			continue;
		}
		if (pid == 0)
			shell_exec(dev);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		/* the shell's end hung the tty up (it was its session's): this
		 * fd is dead, the next turn opens the console afresh */
		close(tty);
		describe_exit(status, how, sizeof how);
		say("console: shell %s", how);
	}
}

/*
 * Start the keeper; its pid, or -1 (said on the console). It ends on
 * SIGTERM, so a power-off does not wait for it.
 */
pid_t
console_shell_start(void)
{
	sigset_t term;
	pid_t pid;
	int fd;

	if ((pid = fork()) < 0) {
		say("console: fork: %s", strerror(errno));
		return -1;
	}
	if (pid > 0)
		return pid;
	/* PID 1's other fds are not ours: a copy of the agent's gate held
	 * here would keep the agent waiting for ever */
	for (fd = 3; fd < 1024; fd++)
		close(fd);
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_UNBLOCK, &term, NULL);
	signal(SIGTERM, SIG_DFL);
	keeper();
}
