/*
 * pty-rtt.c: keystroke-to-screen latency of a terminal program, measured
 * the way a terminal sees it.
 *
 * Usage: pty-rtt [--grid] [--samples FILE] KEYS COLS ROWS -- COMMAND [ARG...].
 * Runs COMMAND
 * on a new PTY of COLS x ROWS (TERM=xterm-256color), waits until its
 * output has been quiet for a second (the prompt is up), then types 'Z'
 * and times until a 'Z' comes back in the output (the echo, drawn), then
 * types a DEL and waits, untimed, until the output is quiet again, so every
 * keystroke finds the same empty command line. The letter alternates (Z,
 * Q): a quiet spell does not prove a slow guest's DEL was drawn, and a
 * TUI that gets the DEL's erase and the next echo in one frame draws the
 * cell only if it changed (a repeated Z once came back as nothing: "no
 * echo for key 130" under 12 busy guests). Used on `vmux tui` and on
 * `vmux shell` to see what the TUI adds. With --grid (for `vmux tui
 * --grid`, whose tiles take no keys) the keys are l and h (right, left) and
 * the answer is the '>' that marks the focused tile being drawn; the
 * output is not waited quiet between keys (the tiles keep printing).
 * Prints the median, p90, p99 and min (--samples also appends each key's
 * milliseconds to FILE, a line each, to pool rounds), then hangs up the PTY.
 */
#include <sys/wait.h>

#include <errno.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stats.h"

#define QUIET_START_MS 1000
#define QUIET_KEY_MS   40
#define ECHO_WAIT_MS   10000

/* Monotonic time in microseconds. */
static double
now_us(void)
{
	return bench_now_ms() * 1000;
}

/*
 * Read output until it has been quiet for quiet_ms (or, with want, until
 * want appears); 1 when want was seen, 0 quiet, -1 at EOF or timeout.
 */
static int
drain(int fd, int quiet_ms, int want, int limit_ms)
{
	double start = now_us(), last = start;
	char buf[65536];

	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		double now = now_us();
		int wait = want ? 50 : (int)(quiet_ms - (now - last) / 1000);
		if ((now - start) / 1000 > limit_ms)
			return -1;
		if (!want && wait <= 0)
			return 0;
		if (poll(&p, 1, wait < 1 ? 1 : wait) < 0 && errno != EINTR)
			return -1;
		if (p.revents & (POLLIN | POLLHUP)) {
			ssize_t n = read(fd, buf, sizeof buf);
			if (n <= 0)
				return -1;
			last = now_us();
			if (want && memchr(buf, want, (size_t)n) != NULL)
				return 1;
		}
	}
}

/* Run the command on a PTY and time KEYS keystrokes. */
int
main(int argc, char **argv)
{
	struct winsize ws;
	int keys, fd, i, st, grid = 0;
	const char *samples = NULL;
	double *lat;
	pid_t pid;

	for (;;) {
		if (argc > 1 && strcmp(argv[1], "--grid") == 0) {
			grid = 1;
			argv++;
			argc--;
		} else if (argc > 2 && strcmp(argv[1], "--samples") == 0) {
			samples = argv[2];
			argv += 2;
			argc -= 2;
		} else
			break;
	}
	if (argc < 6 || strcmp(argv[4], "--") != 0) {
		fprintf(stderr,
		    "usage: pty-rtt [--grid] [--samples FILE] KEYS "
		    "COLS ROWS -- COMMAND...\n");
		return 2;
	}
	keys = atoi(argv[1]);
	ws.ws_col = (unsigned short)atoi(argv[2]);
	ws.ws_row = (unsigned short)atoi(argv[3]);
	ws.ws_xpixel = ws.ws_ypixel = 0;
	if (keys < 1 || keys > 100000) {
		fprintf(stderr, "pty-rtt: bad KEYS\n");
		return 2;
	}
	pid = forkpty(&fd, NULL, NULL, &ws);
	if (pid < 0) {
		perror("forkpty");
		return 1;
	}
	if (pid == 0) {
		setenv("TERM", "xterm-256color", 1);
		execvp(argv[5], argv + 5);
		_exit(127);
	}
	if (grid) {
		/* tiles never go quiet: give the program a while to attach */
		drain(fd, 0, 0x01, 5000); /* 0x01 never comes: just reads */
	} else if (drain(fd, QUIET_START_MS, 0, 60000) != 0) {
		fprintf(stderr, "pty-rtt: the program never settled\n");
		kill(pid, SIGKILL);
		return 1;
	}
	lat = calloc((size_t)keys, sizeof *lat);
	for (i = 0; i < keys; i++) {
		const char *key =
		    grid ? (i % 2 ? "h" : "l") : (i % 2 ? "Q" : "Z");
		double t0 = now_us();
		if (write(fd, key, strlen(key)) != (ssize_t)strlen(key) ||
		    drain(fd, 0, grid ? '>' : key[0], ECHO_WAIT_MS) != 1) {
			fprintf(stderr, "pty-rtt: no echo for key %d\n", i);
			break;
		}
		lat[i] = (now_us() - t0) / 1000;
		if (grid) {
			usleep(20000); /* let the frame finish */
			continue;
		}
		if (write(fd, "\177", 1) != 1 ||
		    drain(fd, QUIET_KEY_MS, 0, ECHO_WAIT_MS) < 0)
			break;
	}
	if (i > 0 && samples != NULL) {
		FILE *f = fopen(samples, "a");
		for (int k = 0; f != NULL && k < i; k++)
			fprintf(f, "%.3f\n", lat[k]);
		if (f == NULL || fclose(f) != 0)
			perror(samples);
	}
	if (i > 0)
		bench_report("keystroke to screen", lat, i);
	free(lat);
	close(fd);
	kill(pid, SIGHUP);
	waitpid(pid, &st, 0);
	return i == keys ? 0 : 1;
}
