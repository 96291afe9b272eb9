/*
 * pane.c: one shell's terminal: a libvterm screen fed by the shell's attach
 * stream (or a local PTY, local.c), and keys sent back as INPUT frames.
 *
 * libvterm's callbacks only record state (dirty rows, cursor, modes, title,
 * scrollback); draw.c paints dirty rows once per frame. The stream is a
 * uv_poll_t on the socket; each wake-up parses a bounded amount so keys and
 * other panes get their turn under a flood. A stream that breaks without
 * EXIT is reattached from the byte after the last one parsed, with growing
 * pauses; the agent keeps the shell and its ring meanwhile.
 *
 * The pane owns its VTerm, its scrollback and its stream; pane_free closes
 * the handles and frees the memory in their close callbacks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "proto/attach.h"
#include "tui.h"

#define READ_BUDGET   (256 * 1024) /* bytes parsed per wake-up */
#define RETRY_MIN_MS  500
#define RETRY_MAX_MS  8000
#define ATTACH_WAIT_S 15
#define FEED_SLICE    4096 /* bytes parsed between clock checks */

static void pane_poll_cb(uv_poll_t *, int status, int events);
static void pane_update_poll(struct pane *);

/* Rows start..end-1 need drawing. */
static void
mark_rows(struct pane *p, int start, int end)
{
	if (start < 0)
		start = 0;
	if (end > p->rows)
		end = p->rows;
	for (int r = start; r < end; r++)
		p->dirty[r] = 1;
	p->any_dirty = 1;
	draw_schedule(p->tui);
}

/* libvterm: cells changed. */
static int
cb_damage(VTermRect rect, void *user)
{
	mark_rows(user, rect.start_row, rect.end_row);
	return 1;
}

/* libvterm: a region moved (scrolling): both ends need drawing. */
static int
cb_moverect(VTermRect dest, VTermRect src, void *user)
{
	mark_rows(user, dest.start_row, dest.end_row);
	mark_rows(user, src.start_row, src.end_row);
	return 1;
}

/* libvterm: the cursor moved. */
static int
cb_movecursor(VTermPos pos, VTermPos old, int visible, void *user)
{
	struct pane *p = user;

	p->cursor = pos;
	p->cur_visible = visible;
	draw_schedule(p->tui);
	return 1;
}

/* libvterm: a terminal property changed. */
static int
cb_settermprop(VTermProp prop, VTermValue *val, void *user)
{
	struct pane *p = user;

	switch (prop) {
	case VTERM_PROP_CURSORVISIBLE:
		p->cur_visible = val->boolean;
		break;
	case VTERM_PROP_ALTSCREEN:
		p->altscreen = val->boolean;
		pane_mark_all(p);
		break;
	case VTERM_PROP_MOUSE:
		p->mouse = val->number;
		break;
	case VTERM_PROP_TITLE:
		/* 0.1.4 hands the whole (<= 64 byte) title at once */
		free(p->title);
		p->title = str_printable(val->string, 0);
		break;
	default:
		break;
	}
	draw_schedule(p->tui);
	return 1;
}

/* libvterm: a line left the top of the screen. */
static int
cb_sb_pushline(int cols, const VTermScreenCell *cells, void *user)
{
	struct pane *p = user;

	sb_push(p->sb, cells, cols);
	if (p->view > 0 && p->view < (int)sb_count(p->sb))
		p->view++; /* a scrolled-back view stays on the same text */
	return 1;
}

/* libvterm: the screen grew taller and wants a line back. */
static int
cb_sb_popline(int cols, VTermScreenCell *cells, void *user)
{
	struct pane *p = user;

	return sb_pop(p->sb, cells, cols);
}

static const VTermScreenCallbacks screen_cbs = {
    .damage = cb_damage,
    .moverect = cb_moverect,
    .movecursor = cb_movecursor,
    .settermprop = cb_settermprop,
    .sb_pushline = cb_sb_pushline,
    .sb_popline = cb_sb_popline,
};

/* libvterm's output (encoded keys, answers to DA/DSR) goes to the shell. */
static void
cb_output(const char *s, size_t len, void *user)
{
	pane_send(user, s, len);
}

/*
 * A pane for shell in session (both copied), its terminal cols x rows until
 * the shell's record says otherwise; grid panes never resize the PTY.
 */
struct pane *
pane_new(struct tui *t, const char *session, const char *shell, int cols,
    int rows, int grid)
{
	struct pane *p = xcalloc(1, sizeof *p);

	p->tui = t;
	p->id = ++t->next_pane_id;
	p->session = xstrdup(session);
	p->shell_id = xstrdup(shell);
	p->grid = grid;
	p->fd = -1;
	p->rows = rows < 1 ? 1 : rows;
	p->cols = cols < 1 ? 1 : cols;
	p->dirty = xcalloc((size_t)p->rows, 1);
	p->cur_visible = 1;
	p->sb = sb_new(grid ? 64 * 1024 : t->cfg.scrollback);
	p->stream_cursor = -1;
	p->vt = vterm_new(p->rows, p->cols);
	vterm_set_utf8(p->vt, 1);
	vterm_output_set_callback(p->vt, cb_output, p);
	p->vs = vterm_obtain_screen(p->vt);
	vterm_screen_enable_altscreen(p->vs, 1);
	vterm_screen_set_callbacks(p->vs, &screen_cbs, p);
	vterm_screen_set_damage_merge(p->vs, VTERM_DAMAGE_SCROLL);
	vterm_screen_reset(p->vs, 1);
	return p;
}

/* Close callback: the handle's memory goes. */
static void
free_handle(uv_handle_t *h)
{
	free(h);
}

/* Stop streaming: close the poll handle and the socket. */
static void
pane_stream_close(struct pane *p)
{
	if (p->poll != NULL) {
		uv_close((uv_handle_t *)p->poll, free_handle);
		p->poll = NULL;
	}
	if (p->local)
		local_stop(p);
	else if (p->fd >= 0)
		attach_client_free(&p->ac); /* closes p->fd */
	p->fd = -1;
}

/* Free a pane (it must be out of every list). */
void
pane_free(struct pane *p)
{
	if (p == NULL)
		return;
	pane_stream_close(p);
	if (p->retry != NULL) {
		uv_close((uv_handle_t *)p->retry, free_handle);
		p->retry = NULL;
	}
	vterm_free(p->vt);
	sb_free(p->sb);
	free(p->dirty);
	free(p->backlog);
	free(p->faint_out);
	free(p->title);
	free(p->error);
	free(p->session);
	free(p->shell_id);
	free(p);
}

/* Every row needs drawing. */
void
pane_mark_all(struct pane *p)
{
	mark_rows(p, 0, p->rows);
}

/* The pane's state as the sidebar and tiles say it. */
const char *
pane_state_name(const struct pane *p)
{
	static const char *names[] = {
	    "connecting", "live", "disconnected", "exited", "failed"};

	return names[p->state];
}

/* Lines of scrollback above the screen. */
int
pane_history(const struct pane *p)
{
	return (int)sb_count(p->sb);
}

/*
 * The cell at row (0: the screen's top; negative: scrollback, -1 the newest
 * line) and col; 0, or -1 outside what is kept (c is then blank).
 */
int
pane_cell(struct pane *p, int row, int col, VTermScreenCell *c)
{
	static VTermScreenCell *line;
	static int line_cols;

	if (row >= 0) {
		VTermPos pos = {row, col};
		return vterm_screen_get_cell(p->vs, pos, c) ? 0 : -1;
	}
	if (line_cols < p->cols + 2) {
		line_cols = p->cols + 2;
		line = xreallocarray(line, (size_t)line_cols, sizeof *line);
	}
	memset(c, 0, sizeof *c);
	c->width = 1;
	c->fg.type = VTERM_COLOR_DEFAULT_FG;
	c->bg.type = VTERM_COLOR_DEFAULT_BG;
	if (sb_line(p->sb, (size_t)(-row - 1), line, p->cols) < 0 ||
	    col >= p->cols)
		return -1;
	*c = line[col];
	return 0;
}

/*
 * Set the VTerm's size (the PTY's); rows are redrawn. The size comes from
 * the guest: it is clamped to PANE_MAX_COLS x PANE_MAX_ROWS, as libvterm's
 * buffers grow with it (65535x65535 crashes libvterm 0.1.4; 4096x4096
 * takes 1.2 GB). A larger PTY is shown cropped, as a tile is.
 */
static void
pane_set_size(struct pane *p, int cols, int rows)
{
	if (cols > PANE_MAX_COLS)
		cols = PANE_MAX_COLS;
	if (rows > PANE_MAX_ROWS)
		rows = PANE_MAX_ROWS;
	if (cols < 1 || rows < 1 || (cols == p->cols && rows == p->rows))
		return;
	p->dirty = xrealloc(p->dirty, (size_t)rows);
	p->rows = rows;
	p->cols = cols;
	vterm_set_size(p->vt, rows, cols);
	vterm_screen_flush_damage(p->vs);
	pane_mark_all(p);
}

/*
 * The view wants cols x rows: resize the terminal and ask the guest to
 * resize the PTY (not for grid tiles or read-only viewers, whose terminal
 * follows the PTY's size as the agent reports it).
 */
void
pane_resize(struct pane *p, int cols, int rows)
{
	p->want_cols = cols;
	p->want_rows = rows;
	if (p->grid || p->tui->opts.read_only)
		return;
	if (cols == p->cols && rows == p->rows)
		return;
	pane_set_size(p, cols, rows);
	if (p->local)
		local_resize(p, cols, rows);
	else if (p->state == PANE_LIVE) {
		attach_client_resize(&p->ac, cols, rows);
		pane_update_poll(p);
	}
}

/* Queue bytes for the shell's input (dropped when read-only or not live). */
void
pane_send(struct pane *p, const void *bytes, size_t len)
{
	const uint8_t *b = bytes;

	if (p->tui->opts.read_only || p->grid || len == 0)
		return;
	if (p->local) {
		local_write(p, bytes, len);
		return;
	}
	if (p->state != PANE_LIVE)
		return;
	while (len > 0) {
		size_t n = len > 16384 ? 16384 : len;
		if (attach_client_queue(&p->ac, VMUX_ATTACH_INPUT, b, n) != 0) {
			tui_message(p->tui, 1,
			    "input dropped: %s is not "
			    "reading",
			    p->shell_id);
			break;
		}
		b += n;
		len -= n;
	}
	pane_update_poll(p);
}

/* Send a signal to the shell's foreground job. */
void
pane_signal(struct pane *p, const char *sig)
{
	if (p->tui->opts.read_only || p->state != PANE_LIVE || p->local)
		return;
	attach_client_queue(&p->ac, VMUX_ATTACH_SIGNAL, sig, strlen(sig));
	pane_update_poll(p);
}

/*
 * Type a key: libvterm encodes it for the modes the guest program set
 * (application cursor keys, keypad), so arrows reach vim as vim asked.
 */
void
pane_key(struct pane *p, int key)
{
	int k = key & KEYC_MASK;

	if (p->tui->opts.read_only)
		return;
	if (k < 0x20 && k != 0x0d && k != 0x09 && k != 0x1b &&
	    !(key & KEYC_META)) {
		/* a control byte from the terminal: as it came */
		char c = (char)k;
		pane_send(p, &c, 1);
		return;
	}
	key_encode(p->vt, key);
}

/* Paste text, bracketed when the guest program asked for it. */
void
pane_paste(struct pane *p, const char *text, size_t len, int bracket)
{
	if (bracket)
		vterm_keyboard_start_paste(p->vt);
	pane_send(p, text, len);
	if (bracket)
		vterm_keyboard_end_paste(p->vt);
}

/*
 * Scan for mode 2004 (bracketed paste) before libvterm: 0.1.4 tracks it but
 * does not say, and the TUI wants to know when pasting.
 */
static void
scan_modes(struct pane *p, const uint8_t *b, size_t len)
{
	static const char on[] = "\033[?2004h", off[] = "\033[?2004l";

	if (len < sizeof on - 1 || memchr(b, 0x1b, len) == NULL)
		return;
	if (memmem(b, len, on, sizeof on - 1) != NULL)
		p->bracketed = 1;
	if (memmem(b, len, off, sizeof off - 1) != NULL)
		p->bracketed = 0;
}

/* Microseconds on the monotonic clock (feeding budgets). */
uint64_t
pane_clock_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Parse bytes now. */
static void
pane_parse(struct pane *p, const uint8_t *b, size_t len)
{
	size_t n;

	scan_modes(p, b, len);
	if (p->faint_cap < FAINT_OUT_MAX(len)) {
		p->faint_cap = FAINT_OUT_MAX(len);
		p->faint_out = xrealloc(p->faint_out, p->faint_cap);
	}
	n = faint_filter(&p->faint, b, len, p->faint_out);
	vterm_input_write(p->vt, (const char *)p->faint_out, n);
	vterm_screen_flush_damage(p->vs);
	p->bytes_in += len;
}

/* Keep bytes to parse later. */
static void
backlog_add(struct pane *p, const uint8_t *b, size_t len)
{
	if (p->backlog_off > 0 && p->backlog_off == p->backlog_len)
		p->backlog_off = p->backlog_len = 0;
	if (p->backlog_len + len > p->backlog_cap) {
		if (p->backlog_off > 0) {
			memmove(p->backlog, p->backlog + p->backlog_off,
			    p->backlog_len - p->backlog_off);
			p->backlog_len -= p->backlog_off;
			p->backlog_off = 0;
		}
		if (p->backlog_len + len > p->backlog_cap) {
			p->backlog_cap = (p->backlog_len + len) * 2;
			p->backlog = xrealloc(p->backlog, p->backlog_cap);
		}
	}
	memcpy(p->backlog + p->backlog_len, b, len);
	p->backlog_len += len;
}

/* Output is waiting to be parsed. */
int
pane_backlogged(const struct pane *p)
{
	return p->backlog_off < p->backlog_len;
}

/*
 * Parse the backlog in slices until deadline_us; 1 if some is left. Parsing
 * cost depends on what the bytes do (a newline at the bottom moves the
 * whole screen in libvterm), so the budget is time, not bytes: keys are
 * read between slices.
 */
int
pane_drain(struct pane *p, uint64_t deadline_us)
{
	while (pane_backlogged(p)) {
		size_t n = p->backlog_len - p->backlog_off;
		if (n > FEED_SLICE)
			n = FEED_SLICE;
		pane_parse(p, p->backlog + p->backlog_off, n);
		p->backlog_off += n;
		if (pane_clock_us() >= deadline_us)
			break;
	}
	if (!pane_backlogged(p)) {
		p->backlog_off = p->backlog_len = 0;
		if (p->backlog_cap > 4 * FEED_SLICE) {
			free(p->backlog); /* a flood's buffer goes with it */
			p->backlog = NULL;
			p->backlog_cap = 0;
		}
		return 0;
	}
	return 1;
}

/*
 * Output bytes for the terminal: parsed now while this wake-up's time
 * lasts, the rest queued (and the source not read) until the loop has
 * looked at the keyboard.
 */
void
pane_feed(struct pane *p, const uint8_t *b, size_t len)
{
	p->activity_ms = mono_ms();
	backlog_add(p, b, len);
	if (pane_drain(p, p->feed_deadline))
		tui_drain_start(p->tui);
}

/* Forward: the retry timer fires this. */
static void pane_retry_cb(uv_timer_t *);

/* The stream broke without EXIT: show it, reattach after a pause. */
static void
pane_lost(struct pane *p, const char *why)
{
	uint64_t ms;

	pane_stream_close(p);
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
	uv_timer_start(p->retry, pane_retry_cb, ms, 0);
	draw_schedule(p->tui);
}

/* Reattach after a pause. */
static void
pane_retry_cb(uv_timer_t *t)
{
	struct pane *p = t->data;

	if (p->state == PANE_DISCONNECTED)
		pane_attach(p, p->stream_cursor);
}

/* The shell ended: show it, keep the screen. */
static void
pane_exited(struct pane *p, int code, int sig)
{
	pane_stream_close(p);
	p->state = PANE_EXITED;
	p->exit_status = attach_exit_status(code, sig);
	draw_schedule(p->tui);
	model_refresh(p->tui);
}

/* One frame from the agent; -1 when the stream is over. */
static int
pane_frame(struct pane *p, const struct attach_frame *f)
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
		pane_exited(p, code, sig);
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
		pane_lost(p, "detached by the agent");
		return -1;
	default:
		return 0; /* types added later */
	}
}

/* Parse every whole frame received; -1 when the stream is over. */
static int
pane_frames(struct pane *p)
{
	struct attach_frame f;
	int r;

	while ((r = attach_client_next(&p->ac, &f)) == 1) {
		if (pane_frame(p, &f) != 0)
			return -1;
	}
	if (r < 0) {
		pane_lost(p, "broken stream");
		return -1;
	}
	return 0;
}

/* Watch for what the stream needs: always input, output when queued. */
static void
pane_update_poll(struct pane *p)
{
	int ev = pane_backlogged(p) ? 0 : UV_READABLE;

	if (p->poll == NULL || p->local)
		return;
	if (attach_client_pending(&p->ac)) {
		if (attach_client_flush(&p->ac) < 0) {
			pane_lost(p, "connection lost");
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
			uv_poll_start(p->poll, ev, pane_poll_cb);
	}
}

/* The backlog is parsed: read the source again. */
void
pane_resume(struct pane *p)
{
	if (p->local)
		local_resume(p);
	else
		pane_update_poll(p);
}

/* The socket is readable or writable. */
static void
pane_poll_cb(uv_poll_t *h, int status, int events)
{
	struct pane *p = h->data;
	size_t budget = READ_BUDGET;

	if (status < 0) {
		pane_lost(p, uv_strerror(status));
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
				if (pane_frames(p) == 0)
					pane_lost(p,
					    n == 0 ? "connection "
					             "closed"
					           : strerror((int)-n));
				return;
			}
			if (pane_frames(p) != 0)
				return;
			budget = (size_t)n >= budget ? 0 : budget - (size_t)n;
		}
	}
	pane_update_poll(p);
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
			draw_schedule(t);
			return;
		}
		pane_lost(p, w->cause != NULL ? w->cause : "attach failed");
		return;
	}
	p->ac = w->ac;
	p->fd = w->ac.fd;
	p->state = PANE_LIVE;
	p->retries = 0;
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
	if (pane_frames(p) != 0) /* bytes that came with the answer */
		return;
	pane_update_poll(p);
	draw_schedule(t);
}

/*
 * Attach to the shell from cursor (-1: the recent output, which is
 * repainted), on the thread pool; the loop goes on meanwhile.
 */
void
pane_attach(struct pane *p, int64_t cursor)
{
	struct work *w;

	if (p->local)
		return;
	p->state = PANE_CONNECTING;
	w = work_new(p->tui, work_attach, attach_after);
	w->pane_id = p->id;
	w->session = xstrdup(p->session);
	w->shell = xstrdup(p->shell_id);
	w->cursor = cursor;
	work_queue(w);
	draw_schedule(p->tui);
}
