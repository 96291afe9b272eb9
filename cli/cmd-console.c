/*
 * cmd-console.c: `vmux console NAME`: this terminal on the guest's serial
 * console.
 *
 * The console is kept by the session's vmux-console (session/console.c),
 * not by the agent: it shows the boot from the start (the keeper replays
 * what it kept), and it is the way in when the agent is dead, absent
 * (new --no-agent) or not started yet: a getty or an emergency shell on
 * ttyS0 is usable here. One reader at a time holds the keyboard; the others
 * (and --read-only) watch. Ctrl-] (or --detach-key) detaches; the console
 * and the VM carry on.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

static int cmd_console_exec(struct args *);

static const struct cmd_opt cmd_console_opts[] = {
    {"read-only", 'r', NULL, 0, "watch only: keys are not sent"},
    {"detach-key", 0, "KEY", 0,
        "detach with KEY instead of Ctrl-] (^X, ctrl-x or C-x; 'none' "
        "turns detaching off)"},
    SELECT_OPT,
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_console_entry = {
    .name = "console",
    .pre = "NAME",
    .summary = "Attach this terminal to the serial console of session NAME "
               "(ttyS0): the boot so far, then live. Works without the "
               "guest agent (dead, or new --no-agent) and while the kernel "
               "boots. One attached terminal types, the others watch; "
               "Ctrl-] detaches.",
    .opts = cmd_console_opts,
    .flags = CMD_NAME_ONE | CMD_TTY | CMD_STDIN | CMD_OWN_TERMINAL,
    .min_args = 1,
    .max_args = 1,
    .exec = cmd_console_exec,
};

/* The loop's end. */
enum console_end { END_DETACH, END_GONE, END_STDIN, END_SIGNAL };

#define KEYS_MAX 65536 /* keys the guest has not taken yet */

/*
 * Copy between the terminal and the console until one of them ends. Keys
 * go out through a bounded queue on a non-blocking socket: a guest that
 * does not read its console (none does until a getty or shell runs) fills
 * it, and then a pipe on stdin waits while a terminal's keys are dropped,
 * so the detach key and the output always get through. With rw 0 keys are
 * read (for the detach key) and dropped. *sig is the signal that ended it.
 */
static enum console_end
console_loop(int sock, int rw, int key, int sig_fd, int tty, int *sig)
{
	static uint8_t keys[KEYS_MAX];
	size_t nkeys = 0;
	uint8_t buf[16384];
	int eof = 0; /* stdin ended: detach once its keys are sent ... */
	uint64_t give_up = 0; /* ... or the guest has not taken them by then */

	set_nonblock(sock, 1);
	for (;;) {
		struct pollfd p[3] = {
		    {eof ? -1 : STDIN_FILENO,
		        tty || nkeys < sizeof keys ? POLLIN : 0, 0},
		    {sock, (short)(POLLIN | (nkeys > 0 ? POLLOUT : 0)), 0},
		    {sig_fd, POLLIN, 0}};
		ssize_t n;

		if (eof && mono_ms() >= give_up)
			return END_STDIN;
		if (poll(p, 3, eof ? 100 : -1) < 0) {
			if (errno == EINTR)
				continue;
			return END_GONE;
		}
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			n = read(sock, buf, sizeof buf);
			if (n == 0 ||
			    (n < 0 && errno != EINTR && errno != EAGAIN))
				return END_GONE;
			if (n > 0 &&
			    write_all(STDOUT_FILENO, buf, (size_t)n) < 0)
				return END_STDIN; /* our terminal is gone */
		}
		if ((p[1].revents & POLLOUT) && nkeys > 0) {
			n = write(sock, keys, nkeys);
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				return END_GONE;
			if (n > 0) {
				memmove(keys, keys + n, nkeys - (size_t)n);
				nkeys -= (size_t)n;
			}
		}
		if (p[2].revents & POLLIN) {
			int s = sigpipe_next(sig_fd);

			if (s == SIGTERM || s == SIGHUP || s == SIGINT) {
				*sig = s;
				return END_SIGNAL;
			}
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			size_t send, room = sizeof keys - nkeys;
			int found;

			n = read(STDIN_FILENO, buf, sizeof buf);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				eof = 1;
				give_up = mono_ms() + 5000;
				n = 0;
			}
			send = detach_scan(buf, (size_t)n, key, &found);
			if (rw) { /* past the queue's room: dropped (a tty) */
				memcpy(keys + nkeys, buf,
				    send < room ? send : room);
				nkeys += send < room ? send : room;
			}
			if (found)
				return END_DETACH;
		}
		if (eof && nkeys == 0)
			return END_STDIN;
	}
}

static int
cmd_console_exec(struct args *a)
{
	static const int sigs[] = {SIGTERM, SIGHUP, SIGINT};
	const char *ks = args_get(a, "detach-key");
	struct session_record r;
	char *cause = NULL, kname[16];
	int key = DETACH_KEY_DEFAULT, tty = isatty(STDIN_FILENO), rw = 0;
	int want_rw = !args_has(a, "read-only"), sock, sig_fd, rc, sig = 0;
	enum console_end end;

	if ((ks != NULL && detach_key_parse(ks, &key, &cause) != 0) ||
	    session_name_valid(a->argv[0], &cause) != 0) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	if (ks == NULL && !tty)
		key = -1; /* bytes on a pipe are data, as in vmux shell */
	if (cli_session_record(a->argv[0], &r) != 0)
		return EXIT_VMUX;
	sock = console_attach(&r, want_rw, &rw, &cause);
	if (sock == -2) {
		cli_error(
		    "someone else is typing on the console of '%s' (another "
		    "vmux console or the TUI); watch with --read-only",
		    r.name);
		record_free(&r);
		return EXIT_VMUX;
	}
	if (sock < 0) {
		cli_error("%s", cause);
		free(cause);
		record_free(&r);
		return EXIT_VMUX;
	}
	if ((sig_fd = sigpipe_open(sigs, nitems(sigs))) < 0) {
		cli_error("cannot make a pipe");
		close(sock);
		record_free(&r);
		return EXIT_VMUX;
	}
	detach_key_name(key, kname, sizeof kname);
	fprintf(stderr, "[console of %s%s%s%s]\r\n", r.name,
	    rw ? "" : ", read-only", key >= 0 ? "; detach with " : "",
	    key >= 0 ? kname : "");
	if (tty && term_raw_enter(STDIN_FILENO) != 0) {
		cli_error("cannot set the terminal to raw mode");
		close(sock);
		record_free(&r);
		return EXIT_VMUX;
	}
	end = console_loop(sock, rw, key, sig_fd, tty, &sig);
	close(sock);
	if (tty)
		term_restore();
	rc = 0;
	switch (end) {
	case END_DETACH:
	case END_STDIN:
		fprintf(stderr, "%s[detached from the console of %s]\n",
		    tty ? "\n" : "", r.name);
		break;
	case END_GONE:
		if (session_qemu_alive(&r)) { /* the keeper let us go */
			fprintf(stderr,
			    "%s[the console of %s dropped this terminal: it "
			    "fell too far behind; attach again]\n",
			    tty ? "\n" : "", r.name);
			rc = EXIT_VMUX;
		} else {
			fprintf(stderr,
			    "%s[the console of %s ended: the VM stopped]\n",
			    tty ? "\n" : "", r.name);
		}
		break;
	case END_SIGNAL:
		fprintf(stderr, "%s[detached from the console of %s: %s]\n",
		    tty ? "\n" : "", r.name, strsignal(sig));
		rc = 128 + sig;
		break;
	}
	record_free(&r);
	return rc;
}
