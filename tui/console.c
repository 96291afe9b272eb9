/*
 * console.c: the pane source of a session's serial console (prefix C, the
 * `console` command), read from its keeper (session/console.c) as
 * `vmux console` does: the boot so far, then live, with or without the
 * agent. The pane is the session's "[console]"; the pane owns the socket
 * (p->fd). It holds the keyboard unless the TUI is read-only or someone
 * else does (then it watches, and says so). A serial line has no size:
 * resize only re-lays the pane's own screen, and there are no signals.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "tui.h"

/* The console's own state (p->data): does this pane hold the keyboard? */
struct serial {
	int rw;
};

#define CONSOLE_BUDGET (256 * 1024)

/* The socket is readable: parse a bounded amount. */
static void
serial_poll_cb(uv_poll_t *h, int status, int events)
{
	struct pane *p = h->data;
	uint8_t buf[16384];
	size_t budget = CONSOLE_BUDGET;

	(void)status;
	(void)events;
	p->feed_deadline = pane_clock_us() + PANE_FEED_US;
	while (budget > 0) {
		ssize_t n;

		if (pane_backlogged(p)) {
			uv_poll_stop(h); /* serial_resume restarts it */
			return;
		}
		if (pane_clock_us() >= p->feed_deadline)
			return; /* the keyboard's turn */
		n = read(p->fd, buf, sizeof buf);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			uv_poll_stop(h);
			free(p->error);
			p->error = xstrdup("the console ended: the VM stopped");
			p->state = PANE_FAILED;
			draw_schedule(p->tui);
			return;
		}
		pane_feed(p, buf, (size_t)n);
		budget -= (size_t)n > budget ? budget : (size_t)n;
	}
}

/*
 * Pool thread: reach the keeper (the record, a connect, its hello), as
 * every blocking session call of the TUI runs. In: w->cursor 1 to ask for
 * the keyboard. Out: w->fd; w->rc -1 (w->cause), 0 watching, 1 typing;
 * w->cursor 2 when someone else had the keyboard.
 */
static void
serial_work(struct work *w)
{
	struct session_record r;
	int rw = 0, want = w->cursor == 1;

	const char *name;
	const struct host *h = hosts_target(w->tui, w->session, &name);

	w->rc = -1;
	if (h != NULL) { /* its console keeper's socket is over there */
		xasprintf(&w->cause,
		    "the console of a session on another host: vmux -H %s "
		    "console %s",
		    h->name, name);
		return;
	}
	if (record_load(w->home, w->session, &r, &w->cause) != 0)
		return;
	w->fd = console_attach(&r, want, &rw, &w->cause);
	w->cursor = 0;
	if (w->fd == -2) { /* another holds the keyboard: watch */
		w->fd = console_attach(&r, 0, &rw, &w->cause);
		w->cursor = 2;
	}
	record_free(&r);
	if (w->fd >= 0)
		w->rc = rw;
}

/* Loop thread: the keeper answered (or not); the pane goes live. */
static void
serial_after(struct tui *t, struct work *w)
{
	struct pane *p = tui_pane_by_id(t, w->pane_id);

	if (p == NULL || p->state != PANE_CONNECTING) { /* closed meanwhile */
		if (w->fd >= 0)
			close(w->fd);
		return;
	}
	if (w->rc < 0) {
		free(p->error);
		p->error = w->cause != NULL ? str_printable(w->cause, 0)
		                            : xstrdup("no console");
		p->state = PANE_FAILED;
		draw_schedule(t);
		return;
	}
	if (w->cursor == 2)
		tui_message(t, 0,
		    "someone else is typing on the console of %s: watching",
		    p->session);
	set_nonblock(w->fd, 1);
	p->fd = w->fd;
	((struct serial *)p->data)->rw = w->rc == 1;
	p->state = PANE_LIVE;
	p->poll = xmalloc(sizeof *p->poll);
	uv_poll_init(t->loop, p->poll, p->fd);
	p->poll->data = p;
	uv_poll_start(p->poll, UV_READABLE, serial_poll_cb);
	draw_schedule(t);
}

/* Attach to the keeper of p->session's console (on the thread pool). */
static int
serial_start(struct pane *p, char **cause)
{
	struct work *w = work_new(p->tui, serial_work, serial_after);

	(void)cause;
	if (p->data == NULL)
		p->data = xcalloc(1, sizeof(struct serial));
	w->pane_id = p->id;
	w->session = xstrdup(p->session);
	w->cursor = !p->tui->opts.read_only;
	p->state = PANE_CONNECTING;
	work_queue(w);
	return 0;
}

/* The backlog is parsed: read the socket again. */
static void
serial_resume(struct pane *p)
{
	if (p->poll != NULL && p->state == PANE_LIVE)
		uv_poll_start(p->poll, UV_READABLE, serial_poll_cb);
}

/*
 * Keys for the guest's ttyS0. The keeper reads its writer promptly; what a
 * full socket will not take now (a huge paste) is dropped, never waited
 * for: the TUI does not stall on one pane.
 */
static void
serial_write(struct pane *p, const void *b, size_t len)
{
	if (p->fd < 0 || p->state != PANE_LIVE || p->data == NULL ||
	    !((struct serial *)p->data)->rw)
		return;
	while (len > 0) {
		ssize_t n = write(p->fd, b, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		b = (const char *)b + n;
		len -= (size_t)n;
	}
}

/* A serial line has no window size to tell. */
static void
serial_resize(struct pane *p, int cols, int rows)
{
	(void)p;
	(void)cols;
	(void)rows;
}

/* Close the socket (the keeper and the VM carry on). */
static void
serial_stop(struct pane *p)
{
	pane_poll_close(p);
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	free(p->data);
	p->data = NULL;
}

const struct pane_source console_source = {
    .name = "console",
    .label = "[console]",
    .shell = 0,
    .start = serial_start,
    .write = serial_write,
    .resize = serial_resize,
    .signal = NULL,
    .stop = serial_stop,
    .resume = serial_resume,
};
