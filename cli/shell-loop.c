/*
 * shell-loop.c: the event loop of `vmux shell` while attached.
 *
 * One poll(2) over stdin, the agent stream, stdout and the signal
 * self-pipe; nothing blocks. Keystrokes become INPUT frames in the
 * client's bounded queue (stdin is only read while the queue has room);
 * DATA frames go to a bounded stdout queue, and the stream is only read
 * while that queue has room, so a stalled stdout makes the agent lag this
 * client (it replays from the ring or says TRUNCATED, counted in
 * res->dropped) instead of growing memory, and never delays keystrokes or the
 * detach key. stdout is written through a non-blocking descriptor of its own
 * (re-opened through /proc, so the terminal's shared file status flags are
 * never changed). EOF on a stdin that is not a terminal sends EOF: the shell
 * reads end of file and the output streams on until it exits.
 *
 * Who else is attached (CLIENTS frames) goes into the terminal's title once
 * anyone else has been there ("vmux NAME:ID · with teacher (watching)"), so
 * a student sees who watches; a takeover and its end are said on stderr,
 * since keys typed meanwhile go nowhere.
 */
#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "proto/attach.h"
#include "session/session.h"
#include "cli.h"

#define IN_CHUNK       16384        /* one stdin read */
#define OUT_MAX        (256 * 1024) /* stdout queue before we stop reading */
#define DETACH_WAIT_MS 2000         /* for the agent's DETACH answer */
#define DRAIN_WAIT_MS  10000        /* stdout after EXIT */

enum out_mode { OUT_NONBLOCK, OUT_SOCKET, OUT_PLAIN };

/* Output waiting for stdout. */
struct outq {
	int fd;
	int own; /* fd is our own re-opened descriptor */
	enum out_mode mode;
	uint8_t *buf;
	size_t off, len, cap;
	int broken; /* the reader went away */
};

struct loop {
	struct attach_client *ac;
	const struct shell_loop_opts *o;
	struct shell_loop_result *res;
	struct outq out;
	int stdin_open;
	int skip;            /* dropping replayed bytes up to a newline */
	int exit_seen;       /* EXIT received */
	int detaching;       /* DETACH sent, waiting for the answer */
	uint64_t deadline;   /* detaching or draining: give up at */
	enum shell_end want; /* how it ends once detached */
	int done;
	char *title;    /* the last title set, NULL: never set */
	char *keyboard; /* who else holds the keyboard, NULL: nobody */
};

/* Set up stdout: our own non-blocking descriptor where possible. */
static void
outq_open(struct outq *q, int fd)
{
	struct stat st;
	char path[64];
	int nfd;

	memset(q, 0, sizeof *q);
	q->fd = fd;
	q->mode = OUT_PLAIN;
	if (fstat(fd, &st) != 0)
		return;
	if (S_ISSOCK(st.st_mode)) {
		q->mode = OUT_SOCKET;
		return;
	}
	if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode))
		return; /* a file: writes do not wait long */
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	nfd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (nfd >= 0) {
		q->fd = nfd;
		q->own = 1;
		q->mode = OUT_NONBLOCK;
	}
}

/* Close our descriptor and free the queue. */
static void
outq_close(struct outq *q)
{
	if (q->own)
		close(q->fd);
	free(q->buf);
	memset(q, 0, sizeof *q);
}

/* Bytes waiting. */
static size_t
outq_pending(const struct outq *q)
{
	return q->len - q->off;
}

/* Queue bytes for stdout (dropped once the reader is gone). */
static void
outq_add(struct outq *q, const uint8_t *p, size_t n)
{
	if (q->broken || n == 0)
		return;
	if (q->off > 0 && q->off == q->len)
		q->off = q->len = 0;
	if (q->cap - q->len < n) {
		if (q->off > 0) {
			memmove(q->buf, q->buf + q->off, q->len - q->off);
			q->len -= q->off;
			q->off = 0;
		}
		if (q->cap - q->len < n) {
			q->cap = q->len + n + 65536;
			q->buf = xrealloc(q->buf, q->cap);
		}
	}
	memcpy(q->buf + q->len, p, n);
	q->len += n;
}

/* Write what stdout takes now. */
static void
outq_write(struct outq *q)
{
	size_t n = outq_pending(q);
	ssize_t w;

	while (n > 0 && !q->broken) {
		if (q->mode == OUT_SOCKET)
			w = send(q->fd, q->buf + q->off, n,
			    MSG_DONTWAIT | MSG_NOSIGNAL);
		else
			w = write(q->fd, q->buf + q->off,
			    q->mode == OUT_PLAIN && n > 4096 ? 4096 : n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			return;
		if (w <= 0) {
			q->broken = 1;
			q->off = q->len = 0;
			return;
		}
		q->off += (size_t)w;
		n -= (size_t)w;
		if (q->mode == OUT_PLAIN)
			return; /* poll again before the next chunk */
	}
}

/* A message on stderr that also reads right while the terminal is raw. */
static void loop_msg(const struct loop *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void
loop_msg(const struct loop *l, const char *fmt, ...)
{
	va_list ap;
	char *s, *safe;

	va_start(ap, fmt);
	xvasprintf(&s, fmt, ap);
	va_end(ap);
	safe = str_printable(s, 0); /* ERROR frames are the guest's text */
	fprintf(stderr, "vmux: %s%s", safe, l->o->tty ? "\r\n" : "\n");
	free(safe);
	free(s);
}

/* Send DETACH and wait a little for the answer; then end as `how`. */
static void
loop_detach(struct loop *l, enum shell_end how)
{
	if (l->detaching)
		return;
	l->detaching = 1;
	l->want = how;
	l->deadline = mono_ms() + DETACH_WAIT_MS;
	if (attach_client_queue(l->ac, VMUX_ATTACH_DETACH, NULL, 0) != 0) {
		/* the queue is full: closing the socket detaches too */
		l->res->end = how;
		l->done = 1;
	}
}

/* Tell the agent our terminal's size. */
static void
loop_resize(struct loop *l)
{
	int cols, rows;

	if (!l->o->read_only && term_size(&cols, &rows) == 0)
		attach_client_resize(l->ac, cols, rows);
}

/* Handle the signals the self-pipe has for us. */
static void
loop_signals(struct loop *l)
{
	int sig;

	while ((sig = sigpipe_next(l->o->sig_fd)) != 0) {
		switch (sig) {
		case SIGWINCH:
			if (l->o->tty)
				loop_resize(l);
			break;
		case SIGCONT:
			if (l->o->tty) {
				term_reraw();
				loop_resize(l);
			}
			break;
		case SIGTSTP: /* kill -TSTP: stop with the terminal restored */
			term_restore();
			raise(SIGSTOP);
			if (l->o->tty) {
				term_reraw();
				loop_resize(l);
			}
			break;
		default: /* TERM, HUP, INT, QUIT: let go of the shell */
			l->res->signo = sig;
			loop_detach(l, SHELL_END_SIGNAL);
			break;
		}
	}
}

/* Read keystrokes and queue them (up to the detach key). */
static void
loop_stdin(struct loop *l)
{
	uint8_t buf[IN_CHUNK];
	size_t fwd;
	ssize_t n;
	int found;

	n = read(STDIN_FILENO, buf, sizeof buf);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		l->stdin_open = 0;
		if (l->o->tty) { /* the terminal hung up */
			l->res->signo = SIGHUP;
			loop_detach(l, SHELL_END_SIGNAL);
		} else if (l->o->read_only) { /* a watcher's input ends it */
			loop_detach(l, SHELL_END_DETACH);
		} else if (!l->detaching) /* end of a script: the shell's too */
			attach_client_queue(l->ac, VMUX_ATTACH_EOF, NULL, 0);
		return;
	}
	fwd = detach_scan(buf, (size_t)n, l->o->detach_key, &found);
	if (fwd > 0 && !l->o->read_only) /* a watcher's keys go nowhere */
		attach_client_queue(l->ac, VMUX_ATTACH_INPUT, buf, fwd);
	if (found)
		loop_detach(l, SHELL_END_DETACH);
}

/*
 * Queue replayed output without terminal queries (ESC [ ... n or c: cursor
 * position, status, device attributes): our terminal would answer each one
 * again, typing stale answers into the shell.
 */
static void
loop_replay(struct loop *l, const uint8_t *p, size_t n)
{
	size_t i = 0, start = 0, j;

	while (i < n) {
		if (p[i] != 0x1b || i + 1 >= n || p[i + 1] != '[') {
			i++;
			continue;
		}
		for (j = i + 2; j < n &&
		     strchr("0123456789;?>", p[j]) != NULL && p[j] != '\0';
		     j++)
			;
		if (j < n && (p[j] == 'n' || p[j] == 'c')) {
			outq_add(&l->out, p + start, i - start);
			start = i = j + 1;
		} else
			i = j;
	}
	outq_add(&l->out, p + start, n - start);
}

/* A DATA frame: to stdout, minus a partial first line when repainting. */
static void
loop_data(struct loop *l, const struct attach_frame *f)
{
	const uint8_t *p, *nl;
	uint64_t cursor;
	size_t n, r;

	if (attach_decode_data(f, &cursor, &p, &n) != 0) {
		loop_msg(l, "bad DATA frame from the agent");
		return;
	}
	if (cursor + n > l->res->next_cursor) /* a re-attach resumes here */
		l->res->next_cursor = cursor + n;
	if (l->detaching)
		return; /* leaving: what is not shown yet, never will be */
	if (l->skip && cursor + n > l->o->replay_end) {
		/* live output is never dropped */
		r = cursor >= l->o->replay_end
		    ? 0
		    : (size_t)(l->o->replay_end - cursor);
		l->skip = 0;
		p += r;
		n -= r;
		cursor += r;
	}
	if (l->skip) {
		if ((nl = memchr(p, '\n', n)) == NULL)
			return;
		l->skip = 0;
		cursor += (uint64_t)(nl + 1 - p);
		n -= (size_t)(nl + 1 - p);
		p = nl + 1;
	}
	if (cursor < l->o->replay_end) {
		r = l->o->replay_end - cursor < n
		    ? (size_t)(l->o->replay_end - cursor)
		    : n;
		loop_replay(l, p, r);
		p += r;
		n -= r;
	}
	outq_add(&l->out, p, n);
}

/* A CLIENTS frame: the title, and a word when the keyboard changes hands. */
static void
loop_clients(struct loop *l, const struct attach_frame *f)
{
	struct attach_roster r;
	char *title, *osc;
	const char *other;

	if (attach_decode_clients(f, &r) != 0)
		return;
	other = r.keyboard != NULL && !r.mine ? r.keyboard : NULL;
	if (other != NULL &&
	    (l->keyboard == NULL || strcmp(l->keyboard, other) != 0))
		loop_msg(l,
		    "%s has taken the keyboard: what you type is ignored "
		    "until it is handed back",
		    other);
	else if (other == NULL && l->keyboard != NULL && !l->detaching) {
		loop_msg(l, "%s handed the keyboard back", l->keyboard);
		if (l->o->tty)
			loop_resize(l); /* the taker may have left its size */
	}
	free(l->keyboard);
	l->keyboard = other != NULL ? xstrdup(other) : NULL;
	if (other != NULL)
		xasprintf(&title, "vmux %s · %s has the keyboard · with %s",
		    l->o->title, other, r.others);
	else if (r.n > 0)
		xasprintf(&title, "vmux %s · with %s", l->o->title, r.others);
	else
		xasprintf(&title, "vmux %s", l->o->title);
	if (l->o->tty && l->o->title != NULL && (l->title != NULL || r.n > 0) &&
	    (l->title == NULL || strcmp(l->title, title) != 0)) {
		/* the first time: the terminal's own title pushed (xterm's
		 * title stack), to be popped at the end */
		xasprintf(&osc, "%s\033]2;%s\007",
		    l->title == NULL ? "\033[22;0t" : "",
		    title); /* labels: printable */
		outq_add(&l->out, (const uint8_t *)osc, strlen(osc));
		free(osc);
		free(l->title);
		l->title = title;
	} else
		free(title);
	attach_roster_free(&r);
}

/* Act on one frame from the agent. */
static void
loop_frame(struct loop *l, const struct attach_frame *f)
{
	uint64_t a, b;
	int code, sig;

	switch (f->type) {
	case VMUX_ATTACH_DATA:
		loop_data(l, f);
		break;
	case VMUX_ATTACH_EXIT:
		if (attach_decode_exit(f, &code, &sig, &a) != 0)
			code = -1, sig = 0;
		l->res->status = attach_exit_status(code, sig);
		l->exit_seen = 1;
		l->deadline = mono_ms() + DRAIN_WAIT_MS;
		break;
	case VMUX_ATTACH_TRUNCATED:
		if (attach_decode_truncated(f, &a, &b) == 0 && b > a) {
			log_debug("shell output %llu..%llu was lost",
			    (unsigned long long)a, (unsigned long long)b);
			l->res->dropped += b - a;
		}
		break;
	case VMUX_ATTACH_ERROR:
		loop_msg(
		    l, "agent: %.*s", (int)f->len, (const char *)f->payload);
		break;
	case VMUX_ATTACH_DETACH:
		l->res->end = l->detaching ? l->want : SHELL_END_DETACH;
		l->done = 1;
		break;
	case VMUX_ATTACH_CLIENTS:
		loop_clients(l, f);
		break;
	default: /* RESIZE (another client's), or a newer frame type */
		break;
	}
}

/* Handle every whole frame received so far. */
static void
loop_frames(struct loop *l)
{
	struct attach_frame f;
	int r;

	while (!l->done && (r = attach_client_next(l->ac, &f)) != 0) {
		if (r < 0) {
			xasprintf(
			    &l->res->error, "broken stream from the agent");
			l->ac->eof = 1;
			break;
		}
		loop_frame(l, &f);
	}
}

/* Read from the agent and handle every whole frame. */
static void
loop_sock_read(struct loop *l)
{
	ssize_t n;

	n = attach_client_read(l->ac);
	if (n < 0 && n != -EAGAIN) {
		xasprintf(&l->res->error, "connection to the agent: %s",
		    strerror((int)-n));
		l->ac->eof = 1;
	}
	loop_frames(l);
}

/* Is it over? Sets res->end. */
static int
loop_finished(struct loop *l)
{
	uint64_t now = mono_ms();

	if (l->done)
		return 1;
	if (l->exit_seen &&
	    (outq_pending(&l->out) == 0 || now >= l->deadline)) {
		l->res->end = SHELL_END_EXIT;
		return 1;
	}
	if (l->exit_seen)
		return 0; /* still writing the last output */
	if (l->detaching && (l->ac->eof || now >= l->deadline)) {
		l->res->end = l->want;
		return 1;
	}
	if (l->ac->eof) {
		l->res->end = SHELL_END_LOST;
		return 1;
	}
	if (l->out.broken) {
		l->res->end = SHELL_END_OUTPUT;
		return 1;
	}
	return 0;
}

/*
 * Run the attached stream until the shell exits, the user detaches, a
 * signal says stop or the connection is lost; *res says which.
 */
void
shell_loop(struct attach_client *ac, const struct shell_loop_opts *o,
    struct shell_loop_result *res)
{
	struct loop l;
	struct pollfd p[4];
	int timeout, rc;

	memset(res, 0, sizeof *res);
	res->next_cursor = o->start_cursor;
	memset(&l, 0, sizeof l);
	l.ac = ac;
	l.o = o;
	l.res = res;
	l.stdin_open = 1;
	l.skip = o->skip_partial_line;
	outq_open(&l.out, STDOUT_FILENO);
	loop_frames(&l); /* those that came with the attach answer */

	while (!loop_finished(&l)) {
		for (int i = 0; i < 4; i++)
			p[i] = (struct pollfd){.fd = -1};
		if (l.stdin_open && !l.detaching && !l.exit_seen &&
		    attach_client_room(ac) >= IN_CHUNK + VMUX_ATTACH_HDR) {
			p[0].fd = STDIN_FILENO;
			p[0].events = POLLIN;
		}
		p[1].fd = ac->fd;
		if (!ac->eof && (outq_pending(&l.out) < OUT_MAX || l.detaching))
			p[1].events |= POLLIN;
		if (attach_client_pending(ac))
			p[1].events |= POLLOUT;
		if (outq_pending(&l.out) > 0) {
			p[2].fd = l.out.fd;
			p[2].events = POLLOUT;
		}
		p[3].fd = o->sig_fd;
		p[3].events = POLLIN;
		timeout = l.detaching || l.exit_seen ? 100 : -1;
		if (poll(p, 4, timeout) < 0 && errno != EINTR) {
			xasprintf(&res->error, "poll: %s", strerror(errno));
			res->end = SHELL_END_LOST;
			break;
		}
		if (p[3].revents)
			loop_signals(&l);
		if (p[0].revents)
			loop_stdin(&l);
		if (attach_client_pending(ac) &&
		    (rc = attach_client_flush(ac)) < 0) {
			if (!l.detaching)
				xasprintf(&res->error,
				    "connection to the agent: %s",
				    strerror(-rc));
			ac->eof = 1;
		}
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR))
			loop_sock_read(&l);
		if (p[2].revents)
			outq_write(&l.out);
	}
	if (l.title != NULL) {
		/* ours goes: cleared, then the one pushed comes back where
		 * the terminal keeps a title stack */
		static const char reset[] = "\033]2;\007\033[23;0t";
		outq_add(&l.out, (const uint8_t *)reset, sizeof reset - 1);
	}
	if (res->end == SHELL_END_EXIT || l.title != NULL)
		outq_write(&l.out);
	outq_close(&l.out);
	free(l.title);
	free(l.keyboard);
}

/*
 * vmux shell's exit status for how the loop ended: the shell's status
 * (128+N if signal N killed it), 0 after detaching, 128+N when signal N
 * made us let go, EXIT_VMUX when the connection or our stdout broke.
 */
int
shell_end_status(const struct shell_loop_result *res)
{
	switch (res->end) {
	case SHELL_END_EXIT:
		return res->status;
	case SHELL_END_DETACH:
		return 0;
	case SHELL_END_SIGNAL:
		return 128 + res->signo;
	default:
		return EXIT_VMUX;
	}
}
