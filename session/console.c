/*
 * console.c: a session's serial console, kept by vmux-console.
 *
 * QEMU's serial port is a pipe chardev on the keeper's FIFOs
 * (session/console/main.c, SESSION_SERIAL_SOCK.in and .out) and still
 * writes console.log itself (the chardev's logfile), so the log and the QEMU
 * needle (its path on QEMU's command line) are as they were. The keeper serves
 * readers at r->console_sock: `vmux console`, the TUI's console pane. It needs
 * neither the agent nor a booted kernel, which is the point: it is the way into
 * a guest whose agent is dead, absent (--no-agent) or not started yet.
 *
 * launch.c starts the keeper before each QEMU and stops it with the rest;
 * the keeper also ends by itself when QEMU does. console_attach is the
 * readers' side of its one-line hello.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session.h"

#define CONSOLE_READY_MS 10000 /* for the keeper's sockets */
#define CONSOLE_HELLO_MS 5000  /* for the keeper's answer */

/* A socket beside console_sock (in the session's socket directory). */
static char *
console_beside(const struct session_record *r, const char *name)
{
	const char *slash = strrchr(r->console_sock, '/');
	char *s;

	if (slash == NULL) /* can't happen: console_sock is a full path */
		NEVER("console_sock without a directory");
	xasprintf(&s, "%.*s/%s", (int)(slash - r->console_sock),
	    r->console_sock, name);
	return s;
}

/* The base of the FIFOs QEMU's serial port uses (.in, .out). Free it. */
char *
console_serial_path(const struct session_record *r)
{
	return console_beside(r, SESSION_SERIAL_SOCK);
}

/* The socket of QEMU's gdbstub when booted with --gdb. Free it. */
char *
session_gdb_path(const struct session_record *r)
{
	return console_beside(r, SESSION_GDB_SOCK);
}

/*
 * Start r's console keeper and wait until QEMU can connect (with adopt:
 * one that takes over the FIFOs of a keeper that died under a running
 * QEMU, ready once readers can attach); sets r->console_sock (for records
 * made before there was one) and r->console_pid. 0, or -1 with cause.
 */
int
console_start(struct session_record *r, int adopt, char **cause)
{
	char *bin, *exit_path, *argv[6], *tail, *serial, *out;
	struct session_exit x;
	struct stat sb;
	uint64_t deadline, now;
	struct pollfd woke = {.events = POLLIN};
	int ready[2];
	pid_t pid;

	if (r->console_sock == NULL) {
		char *dir = session_sock_dir(r->dir, cause);

		if (dir == NULL)
			return -1;
		xasprintf(&r->console_sock, "%s/%s", dir, SESSION_CONSOLE_SOCK);
		free(dir);
	}
	if ((bin = find_program("vmux-console", "VMUX_CONSOLE", cause)) == NULL)
		return -1;
	serial = console_serial_path(r);
	/* what it makes last: what says it is ready */
	if (adopt)
		out = xstrdup(r->console_sock);
	else
		xasprintf(&out, "%s.out", serial);
	unlink(out);
	unlink(r->console_sock);
	xasprintf(&exit_path, "%s/%s", r->dir, SESSION_CONSOLE_EXIT);
	unlink(exit_path);
	argv[0] = bin;
	argv[1 + adopt] = serial;
	argv[2 + adopt] = r->console_sock;
	argv[3 + adopt] = "3"; /* proc_spawn passes ready[1] as fd 3 */
	argv[4 + adopt] = NULL;
	if (adopt)
		argv[1] = "--adopt";
	if (pipe2(ready, O_CLOEXEC) != 0) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		free(bin);
		free(exit_path);
		free(serial);
		free(out);
		return -1;
	}
	/* its own complaints go to QEMU's log; the console is QEMU's to log */
	pid = proc_spawn(argv, ready[1], r->qemu_log, exit_path, cause);
	close(ready[1]);
	free(bin);
	if (pid < 0) {
		close(ready[0]);
		free(exit_path);
		free(serial);
		free(out);
		return -1;
	}
	woke.fd = ready[0];
	r->console_pid = pid;
	deadline = mono_ms() + CONSOLE_READY_MS;
	while (stat(out, &sb) != 0 ||
	    !(adopt ? S_ISSOCK(sb.st_mode) : S_ISFIFO(sb.st_mode))) {
		int died = proc_exit_read(exit_path, &x) == 0;

		if (died || mono_ms() >= deadline) {
			tail = file_tail(r->qemu_log, 3);
			xasprintf(cause, "the console keeper %s%s%s",
			    died ? "exited" : "did not start within 10 s",
			    tail != NULL ? ":\n" : "",
			    tail != NULL ? tail : "");
			free(tail);
			free(exit_path);
			close(ready[0]);
			console_stop(r, 0);
			free(serial);
			free(out);
			return -1;
		}
		/* the keeper closes its end when the FIFOs are there, or
		 * exits: either wakes us; after that (the pipe stays readable:
		 * poll ignores it from then on), look every 10 ms */
		now = mono_ms();
		if (poll(&woke, 1,
		        woke.fd < 0
		            ? 10
		            : (int)(now < deadline ? deadline - now : 0)) > 0)
			woke.fd = -1;
	}
	close(ready[0]);
	free(exit_path);
	free(serial);
	free(out);
	return 0;
}

/* End r's console keeper (it ends by itself once QEMU is gone). */
void
console_stop(const struct session_record *r, int term_ms)
{
	if (r->console_pid <= 0 || r->console_sock == NULL)
		return;
	proc_wait_gone(r->console_pid, r->console_sock, mono_ms() + 500);
	proc_terminate(r->console_pid, r->console_sock, term_ms);
}

/*
 * Attach to r's console: connect, say whether we want the keyboard, read
 * the answer. Returns the connected fd (the ring and live output follow),
 * with *rw 1 when we hold the keyboard; -1 with cause when there is no
 * console to reach; -2 (no cause) when want_rw and another reader holds
 * the keyboard: the caller says so, or attaches read-only.
 */
int
console_attach(
    const struct session_record *r, int want_rw, int *rw, char **cause)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *hello = want_rw ? "console rw\n" : "console ro\n";
	char line[16];
	size_t got = 0;
	uint64_t deadline = mono_ms() + CONSOLE_HELLO_MS;
	int fd;

	*rw = 0;
	if (r->console_sock == NULL || r->console_pid <= 0 ||
	    !proc_matches(r->console_pid, r->console_sock)) {
		xasprintf(cause,
		    "session '%s' has no console keeper running (%s)", r->name,
		    r->status == SESSION_STOPPED ? "it is stopped"
		        : r->console_sock == NULL
		        ? "started by an older vmux: restart it"
		        : "it has ended");
		return -1;
	}
	if (strlen(r->console_sock) >= sizeof sa.sun_path) {
		xasprintf(cause, "console socket path too long");
		return -1;
	}
	memcpy(sa.sun_path, r->console_sock, strlen(r->console_sock) + 1);
	/* non-blocking: a keeper whose backlog is full is waited for only
	 * until the deadline (a Unix socket says EAGAIN, not EINPROGRESS) */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	while (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		if ((errno != EAGAIN && errno != EINTR) ||
		    mono_ms() >= deadline) {
			close(fd);
			fd = -1;
			break;
		}
		poll(NULL, 0, 10);
	}
	if (fd < 0 || set_nonblock(fd, 0) != 0 ||
	    write_all(fd, hello, strlen(hello)) != (ssize_t)strlen(hello)) {
		xasprintf(cause, "cannot reach the console of '%s': %s",
		    r->name, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* The answer is one short line; read it byte by byte so nothing of
	 * the console output behind it is consumed here. */
	while (got < sizeof line - 1) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int64_t left = (int64_t)(deadline - mono_ms());
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		n = read(fd, line + got, 1);
		if (n <= 0)
			break;
		if (line[got++] == '\n')
			break;
	}
	line[got] = '\0';
	if (strcmp(line, "ok rw\n") == 0 || strcmp(line, "ok ro\n") == 0) {
		*rw = line[3] == 'r' && line[4] == 'w';
		return fd;
	}
	if (strcmp(line, "busy\n") == 0) {
		close(fd);
		return -2;
	}
	xasprintf(cause, "the console of '%s' did not answer", r->name);
	close(fd);
	return -1;
}
