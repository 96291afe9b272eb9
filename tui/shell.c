/*
 * shell.c: the pane source of a guest shell: its attach stream (framed
 * output, input, resizes and signals over the agent's socket, proto/attach).
 * The stream is a uv_poll_t on the socket; each wake-up parses a bounded
 * amount so keys and other panes get their turn under a flood. A stream
 * that breaks without EXIT is reattached from the byte after the last one
 * parsed, with growing pauses; the agent keeps the shell and its ring
 * meanwhile. The pane owns the socket (p->ac, p->fd) and the timer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "proto/attach.h"
#include "tui.h"

#define READ_BUDGET  (256 * 1024) /* bytes parsed per wake-up */
#define RETRY_MIN_MS 500
#define RETRY_MAX_MS 8000
#define PENDING_MAX  (64 * 1024) /* keys held while connecting */

static void shell_poll_cb(uv_poll_t *, int status, int events);
static void shell_update_poll(struct pane *);
static void shell_retry_cb(uv_timer_t *);
static void shell_attach(struct pane *, int64_t cursor);
static void shell_write(struct pane *, const void *bytes, size_t len);

/* Stop streaming: close the poll handle and the socket. */
static void
shell_stop(struct pane *p)
{
	pane_poll_close(p);
	if (p->fd >= 0)
		attach_client_free(&p->ac); /* closes p->fd */
	p->fd = -1;
	if (p->retry != NULL) {
		uv_close((uv_handle_t *)p->retry, pane_handle_free);
		p->retry = NULL;
	}
}

/*
 * Forget keys held for an attach that did not happen: sent after a later
 * reattach they would land seconds late, in whatever runs by then.
 */
static void
shell_drop_pending(struct pane *p)
{
	if (p->pending_len > 0)
		tui_message(p->tui, 1,
		    "%zu bytes typed into %s:%s were dropped: it did not "
		    "attach",
		    p->pending_len, p->session, p->shell_id);
	free(p->pending);
	p->pending = NULL;
	p->pending_len = 0;
}

/* The stream broke without EXIT: show it, reattach after a pause. */
static void
shell_lost(struct pane *p, const char *why)
{
	uint64_t ms;

	shell_stop(p);
	shell_drop_pending(p);
	free(p->error);
	p->error = xstrdup(why);
	p->state = PANE_DISCONNECTED;
	if (p->retry == NULL) {
		p->retry = xmalloc(sizeof *p->retry);
		uv_timer_init(p->tui->loop, p->retry);
		p->retry->data = p;
	}
	ms = RETRY_MIN_MS << (p->retries < 5 ? p->retries : 5);
	if (ms > RETRY_MAX_MS)
		ms = RETRY_MAX_MS;
	p->retries++;
	uv_timer_start(p->retry, shell_retry_cb, ms, 0);
	draw_schedule(p->tui);
}

/* Reattach after a pause. */
static void
shell_retry_cb(uv_timer_t *t)
{
	struct pane *p = t->data;

	if (p->state == PANE_DISCONNECTED)
		shell_attach(p, p->stream_cursor);
}

/* The shell ended: show it, keep the screen. */
static void
shell_exited(struct pane *p, int code, int sig)
{
	shell_stop(p);
	p->state = PANE_EXITED;
	p->exit_status = attach_exit_status(code, sig);
	draw_schedule(p->tui);
	model_refresh(p->tui);
}

/* Who else is attached, and who holds the keyboard (a CLIENTS frame). */
static void
shell_clients(struct pane *p, const struct attach_frame *f)
{
	struct attach_roster r;

	if (attach_decode_clients(f, &r) != 0)
		return;
	if (r.keyboard != NULL && !r.mine && !p->grid &&
	    (p->keyboard == NULL || strcmp(p->keyboard, r.keyboard) != 0))
		tui_message(p->tui, 1,
		    "%s has taken the keyboard of %s:%s: your keys are dropped",
		    r.keyboard, p->session, p->shell_id);
	free(p->others);
	free(p->keyboard);
	p->others = r.others;
	p->keyboard = r.keyboard;
	p->kb_mine = r.mine;
	if (p->keyboard != NULL && !p->kb_mine && p->kb_want) {
		p->kb_want = 0; /* someone took it from us: not taken back */
		if (p->tui->kb_pane == p->id)
			p->tui->kb_pane = 0;
	}
	draw_schedule(p->tui);
}

/* One frame from the agent; -1 when the stream is over. */
static int
shell_frame(struct pane *p, const struct attach_frame *f)
{
	const uint8_t *bytes;
	uint64_t cur, from, to;
	size_t len;
	int cols, rows, code, sig;

	switch (f->type) {
	case VMUX_ATTACH_DATA:
		if (attach_decode_data(f, &cur, &bytes, &len) != 0)
			return 0;
		if (p->stream_cursor > (int64_t)cur) {
			/* replayed bytes we parsed before a reconnect */
			uint64_t skip = (uint64_t)p->stream_cursor - cur;
			if (skip >= len)
				return 0;
			bytes += skip;
			len -= skip;
			cur += skip;
		}
		pane_feed(p, bytes, len);
		p->stream_cursor = (int64_t)(cur + len);
		return 0;
	case VMUX_ATTACH_TRUNCATED:
		if (attach_decode_truncated(f, &from, &to) == 0)
			p->stream_cursor = (int64_t)to;
		return 0;
	case VMUX_ATTACH_RESIZE:
		if (attach_decode_resize(f, &cols, &rows) == 0)
			pane_set_size(p, cols, rows);
		return 0;
	case VMUX_ATTACH_EXIT:
		if (attach_decode_exit(f, &code, &sig, &cur) != 0)
			code = -1, sig = 0;
		shell_exited(p, code, sig);
		return -1;
	case VMUX_ATTACH_ERROR: {
		char *s = xstrndup((const char *)f->payload, f->len);
		char *safe = str_printable(s, 0);
		tui_message(p->tui, 1, "%s: %s", p->shell_id, safe);
		free(safe);
		free(s);
		return 0;
	}
	case VMUX_ATTACH_DETACH:
		shell_lost(p, "detached by the agent");
		return -1;
	case VMUX_ATTACH_CLIENTS:
		shell_clients(p, f);
		return 0;
	default:
		return 0; /* types added later */
	}
}

/* Parse every whole frame received; -1 when the stream is over. */
static int
shell_frames(struct pane *p)
{
	struct attach_frame f;
	int r;

	while ((r = attach_client_next(&p->ac, &f)) == 1) {
		if (shell_frame(p, &f) != 0)
			return -1;
	}
	if (r < 0) {
		shell_lost(p, "broken stream");
		return -1;
	}
	return 0;
}

/* Watch for what the stream needs: always input, output when queued. */
static void
shell_update_poll(struct pane *p)
{
	int ev = pane_backlogged(p) ? 0 : UV_READABLE;

	if (p->poll == NULL)
		return;
	if (attach_client_pending(&p->ac)) {
		if (attach_client_flush(&p->ac) < 0) {
			shell_lost(p, "connection lost");
			return;
		}
		if (attach_client_pending(&p->ac))
			ev |= UV_WRITABLE;
	}
	if (ev != p->poll_events) {
		p->poll_events = ev;
		if (ev == 0)
			uv_poll_stop(p->poll);
		else
			uv_poll_start(p->poll, ev, shell_poll_cb);
	}
}

/* The socket is readable or writable. */
static void
shell_poll_cb(uv_poll_t *h, int status, int events)
{
	struct pane *p = h->data;
	size_t budget = READ_BUDGET;

	if (status < 0) {
		shell_lost(p, uv_strerror(status));
		return;
	}
	p->feed_deadline = pane_clock_us() + PANE_FEED_US;
	if (events & UV_READABLE) {
		while (budget > 0 && !pane_backlogged(p) &&
		    pane_clock_us() < p->feed_deadline) {
			ssize_t n = attach_client_read(&p->ac);
			if (n == -EAGAIN)
				break;
			if (n <= 0) {
				if (shell_frames(p) == 0)
					shell_lost(p,
					    n == 0 ? "connection "
					             "closed"
					           : strerror((int)-n));
				return;
			}
			if (shell_frames(p) != 0)
				return;
			budget = (size_t)n >= budget ? 0 : budget - (size_t)n;
		}
	}
	shell_update_poll(p);
}

/* On the loop: the attach finished (or failed). */
static void
attach_after(struct tui *t, struct work *w)
{
	struct pane *p = tui_pane_by_id(t, w->pane_id);
	const cJSON *v;
	int cols, rows;

	if (p == NULL || p->state != PANE_CONNECTING) {
		if (w->rc == 0)
			attach_client_free(&w->ac);
		return;
	}
	if (w->rc != 0) {
		/* gone for good (not a network hiccup): say so, no retry */
		if (strcmp(w->code, VMUX_E_NO_SHELL) == 0 ||
		    strcmp(w->code, WORK_NO_SESSION) == 0) {
			free(p->error);
			p->error = str_printable(w->cause, 0);
			p->state = PANE_FAILED;
			shell_drop_pending(p);
			draw_schedule(t);
			return;
		}
		shell_lost(p, w->cause != NULL ? w->cause : "attach failed");
		return;
	}
	p->ac = w->ac;
	p->fd = w->ac.fd;
	p->state = PANE_LIVE;
	p->was_live = 1;
	p->retries = 0;
	if (p->kb_want) /* held before the stream broke: the agent let go */
		attach_client_queue(&p->ac, VMUX_ATTACH_TAKE, NULL, 0);
	v = cJSON_GetObjectItemCaseSensitive(w->reply, "cols");
	cols = cJSON_IsNumber(v) ? v->valueint : p->cols;
	v = cJSON_GetObjectItemCaseSensitive(w->reply, "rows");
	rows = cJSON_IsNumber(v) ? v->valueint : p->rows;
	v = cJSON_GetObjectItemCaseSensitive(w->reply, "cursor");
	if (p->stream_cursor < 0 && cJSON_IsNumber(v))
		p->stream_cursor = (int64_t)v->valuedouble;
	pane_set_size(p, cols, rows);
	p->poll = xmalloc(sizeof *p->poll);
	uv_poll_init(t->loop, p->poll, p->fd);
	p->poll->data = p;
	p->poll_events = 0;
	if (p->want_cols > 0 && !p->grid && !t->opts.read_only &&
	    (p->want_cols != cols || p->want_rows != rows)) {
		pane_set_size(p, p->want_cols, p->want_rows);
		attach_client_resize(&p->ac, p->want_cols, p->want_rows);
	}
	if (p->pending_len > 0) { /* typed while connecting */
		uint8_t *keys = p->pending;
		size_t n = p->pending_len;
		p->pending = NULL;
		p->pending_len = 0;
		shell_write(p, keys, n);
		free(keys);
	}
	if (shell_frames(p) != 0) /* bytes that came with the answer */
		return;
	shell_update_poll(p);
	draw_schedule(t);
}

/*
 * Attach to the shell from cursor (-1: the recent output, which is
 * repainted), on the thread pool; the loop goes on meanwhile.
 */
static void
shell_attach(struct pane *p, int64_t cursor)
{
	struct work *w;

	p->state = PANE_CONNECTING;
	w = work_new(p->tui, work_attach, attach_after);
	w->pane_id = p->id;
	w->session = xstrdup(p->session);
	w->shell = xstrdup(p->shell_id);
	w->cursor = cursor;
	w->who.as = p->tui->opts.as;
	w->who.watch = p->grid || p->tui->opts.read_only;
	work_queue(w);
	draw_schedule(p->tui);
}

/* Start: attach from the recent output. */
static int
shell_start(struct pane *p, char **cause)
{
	shell_attach(p, -1);
	return 0;
}

/*
 * Queue bytes for the shell's input. Keys typed before a pane's first
 * attach finishes (a pane just opened, broadcast reaching shells not
 * attached yet) are held, up to PENDING_MAX, and sent once live, as a
 * terminal's keys wait for a shell still starting. Keys typed while a
 * broken stream reattaches are dropped: by then the shell may run
 * something else.
 */
static void
shell_write(struct pane *p, const void *bytes, size_t len)
{
	const uint8_t *b = bytes;

	if (p->state == PANE_CONNECTING && !p->was_live) {
		if (len > PENDING_MAX - p->pending_len) {
			tui_message(p->tui, 1,
			    "input dropped: %s:%s is still attaching",
			    p->session, p->shell_id);
			return;
		}
		p->pending = xrealloc(p->pending, p->pending_len + len);
		memcpy(p->pending + p->pending_len, bytes, len);
		p->pending_len += len;
		return;
	}
	if (p->state != PANE_LIVE)
		return;
	while (len > 0) {
		size_t n = len > 16384 ? 16384 : len;
		if (attach_client_queue(&p->ac, VMUX_ATTACH_INPUT, b, n) != 0) {
			tui_message(p->tui, 1,
			    "input dropped: %s is not reading", p->shell_id);
			break;
		}
		b += n;
		len -= n;
	}
	shell_update_poll(p);
}

/* Ask the agent to resize the PTY. */
static void
shell_resize(struct pane *p, int cols, int rows)
{
	if (p->state != PANE_LIVE)
		return;
	attach_client_resize(&p->ac, cols, rows);
	shell_update_poll(p);
}

/* Signal the shell's foreground job. */
static int
shell_signal(struct pane *p, const char *sig)
{
	if (p->state != PANE_LIVE)
		return -1;
	attach_client_queue(&p->ac, VMUX_ATTACH_SIGNAL, sig, strlen(sig));
	shell_update_poll(p);
	return 0;
}

/* Hold the keyboard (TAKE: every other client's keys are dropped), or
 * hand it back. */
static void
shell_take(struct pane *p, int on)
{
	p->kb_want = on;
	if (p->state != PANE_LIVE)
		return; /* taken once attached */
	attach_client_queue(
	    &p->ac, on ? VMUX_ATTACH_TAKE : VMUX_ATTACH_RELEASE, NULL, 0);
	shell_update_poll(p);
}

const struct pane_source shell_source = {
    .name = "shell",
    .shell = 1,
    .start = shell_start,
    .write = shell_write,
    .resize = shell_resize,
    .signal = shell_signal,
    .stop = shell_stop,
    .resume = shell_update_poll,
    .take = shell_take,
};
