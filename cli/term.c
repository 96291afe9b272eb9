/*
 * term.c: the local terminal while `vmux shell` is attached.
 *
 * Raw mode is entered once and undone on every way out: term_restore() is
 * registered with atexit() and is async-signal-safe (tcsetattr only), so the
 * signal paths can call it too. Signals reach the event loop through a
 * self-pipe (one byte per signal), never by doing work in a handler.
 */
#include <sys/ioctl.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "common/common.h"
#include "cli.h"

static struct termios term_saved;
static int term_fd = -1;         /* the terminal in raw mode, or -1 */
static volatile int term_raw_on; /* raw mode is in force */
static int sig_wfd = -1;

/* Put the terminal back as we found it (idempotent, signal-safe). */
void
term_restore(void)
{
	if (term_fd >= 0 && term_raw_on) {
		tcsetattr(term_fd, TCSADRAIN, &term_saved);
		term_raw_on = 0;
	}
}

/* Apply raw mode to the saved terminal again (after SIGCONT). */
int
term_reraw(void)
{
	struct termios raw;

	if (term_fd < 0)
		return -1;
	raw = term_saved;
	cfmakeraw(&raw);
	raw.c_cc[VMIN] = 1;
	raw.c_cc[VTIME] = 0;
	if (tcsetattr(term_fd, TCSADRAIN, &raw) != 0)
		return -1;
	term_raw_on = 1;
	return 0;
}

/*
 * Save fd's terminal settings and switch it to raw mode: no echo, no line
 * editing, no signals from keys (Ctrl-C is a byte for the guest), no
 * output processing. 0, or -1 (errno) if fd is not a terminal.
 */
int
term_raw_enter(int fd)
{
	static int registered;

	if (tcgetattr(fd, &term_saved) != 0)
		return -1;
	term_fd = fd;
	if (!registered) {
		atexit(term_restore);
		registered = 1;
	}
	return term_reraw();
}

/* The terminal's size, from the first of stdin, stdout, stderr that has one. */
int
term_size(int *cols, int *rows)
{
	struct winsize ws;
	int fds[] = {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO};

	for (size_t i = 0; i < nitems(fds); i++) {
		if (ioctl(fds[i], TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 &&
		    ws.ws_row > 0) {
			*cols = ws.ws_col;
			*rows = ws.ws_row;
			return 0;
		}
	}
	return -1;
}

/* Handler: queue the signal number for the loop. */
static void
sig_to_pipe(int sig)
{
	int saved = errno;
	unsigned char b = (unsigned char)sig;
	ssize_t n = write(sig_wfd, &b, 1);

	(void)n; /* a full pipe already holds a wake-up */
	errno = saved;
}

/*
 * Route the given signals to a self-pipe; returns its read end
 * (non-blocking), or -1. Call once.
 */
int
sigpipe_open(const int *sigs, size_t n)
{
	struct sigaction sa;
	int p[2];

	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0)
		return -1;
	sig_wfd = p[1];
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = sig_to_pipe;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	for (size_t i = 0; i < n; i++)
		sigaction(sigs[i], &sa, NULL);
	return p[0];
}

/* The next queued signal, or 0 when there is none. */
int
sigpipe_next(int fd)
{
	unsigned char b;

	return read(fd, &b, 1) == 1 ? b : 0;
}
