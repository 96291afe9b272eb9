/*
 * pane.c: one terminal: libvterm's parser and state over our own screen
 * (screen.c), fed by the pane's source, and
 * keys sent back to it. The source is a table of operations (struct
 * pane_source: start, write, resize, signal, stop, resume), one file each:
 * shell.c (a guest shell's attach stream), local.c (a host PTY). This file
 * knows none of them.
 *
 * The screen's callbacks only record state (dirty rows, cursor, modes,
 * title, scrollback); draw.c paints dirty rows once per frame. Output is parsed
 * within a time budget per wake-up, the rest kept as a backlog, so keys
 * and other panes get their turn under a flood; the source stops reading
 * until pane_resume.
 *
 * The pane owns its VTerm, screen, scrollback and its source's handles;
 * pane_free closes the handles and frees the memory in their close
 * callbacks.
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

static void pane_send(struct pane *, const void *bytes, size_t len);

#define FEED_SLICE 4096 /* bytes parsed between clock checks */

/* Columns start_col..end_col-1 of rows start..end-1 need drawing. */
static void
mark_cells(struct pane *p, int start, int end, int start_col, int end_col)
{
	if (start < 0)
		start = 0;
	if (end > p->rows)
		end = p->rows;
	if (start_col < 0)
		start_col = 0;
	if (end_col > UINT16_MAX)
		end_col = UINT16_MAX;
	if (start_col >= end_col)
		return;
	for (int r = start; r < end; r++) {
		struct pane_span *d = &p->dirty[r];
		if (d->to == 0 || start_col < d->from)
			d->from = (uint16_t)start_col;
		if (end_col > d->to)
			d->to = (uint16_t)end_col;
	}
	p->any_dirty = 1;
	draw_schedule(p->tui);
}

/* Rows start..end-1 need drawing, whole (and what is beside them). */
static void
mark_rows(struct pane *p, int start, int end)
{
	mark_cells(p, start, end, 0, UINT16_MAX);
}

/*
 * The screen: cells changed (written, scrolled or erased). Only those are
 * drawn again: a key's echo is one cell, not the row's hundred.
 */
static int
cb_damage(VTermRect rect, void *user)
{
	mark_cells(
	    user, rect.start_row, rect.end_row, rect.start_col, rect.end_col);
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
 * A pane on src for shell in session (both copied), its terminal cols x
 * rows until the source says otherwise; grid panes never resize the PTY.
 * Nothing runs until pane_start.
 */
struct pane *
pane_new(struct tui *t, const struct pane_source *src, const char *session,
    const char *shell, int cols, int rows, int grid)
{
	struct pane *p = xcalloc(1, sizeof *p);

	p->tui = t;
	p->src = src;
	p->id = ++t->next_pane_id;
	p->session = xstrdup(session);
	p->shell_id = shell != NULL ? xstrdup(shell) : NULL;
	p->grid = grid;
	p->fd = -1;
	p->rows = rows < 1 ? 1 : rows;
	p->cols = cols < 2 ? 2 : cols; /* see pane_set_size */
	p->dirty = xcalloc((size_t)p->rows, sizeof *p->dirty);
	p->cur_visible = 1;
	p->sb = sb_new(grid ? 64 * 1024 : t->cfg.scrollback);
	p->stream_cursor = -1;
	p->vt = vterm_new(p->rows, p->cols);
	vterm_set_utf8(p->vt, 1);
	vterm_output_set_callback(p->vt, cb_output, p);
	feed_init(&p->feed, p->vt);
	p->scr = screen_new(p->vt, &screen_cbs, p);
	screen_reset(p->scr, 1);
	return p;
}

/* Close callback: the handle's memory goes. */
void
pane_handle_free(uv_handle_t *h)
{
	free(h);
}

/* A source stops reading: its poll handle closes (freed when closed). */
void
pane_poll_close(struct pane *p)
{
	if (p->poll != NULL) {
		uv_close((uv_handle_t *)p->poll, pane_handle_free);
		p->poll = NULL;
	}
}

/* Start the source; on failure the pane says why (PANE_FAILED). */
int
pane_start(struct pane *p)
{
	char *cause = NULL;

	if (p->src->start(p, &cause) == 0)
		return 0;
	free(p->error);
	p->error = cause != NULL ? cause : xstrdup("could not start");
	p->state = PANE_FAILED;
	draw_schedule(p->tui);
	return -1;
}

/* Free a pane (it must be out of every list). */
void
pane_free(struct pane *p)
{
	if (p == NULL)
		return;
	if (p->src->stop != NULL)
		p->src->stop(p);
	screen_free(p->scr);
	feed_free(&p->feed);
	vterm_free(p->vt);
	sb_free(p->sb);
	free(p->dirty);
	free(p->backlog);
	free(p->pending);
	free(p->title);
	free(p->others);
	free(p->keyboard);
	free(p->error);
	free(p->session);
	free(p->shell_id);
	free(p->command);
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
		return screen_get_cell(p->scr, pos, c) ? 0 : -1;
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
 * the guest: it is clamped to PANE_MAX_COLS x PANE_MAX_ROWS, as the
 * screen's buffers grow with it (65535x65535 crashed libvterm 0.1.4's own
 * screen; 4096x4096 took 1.2 GB). A larger PTY is shown cropped, as a tile is.
 */
void
pane_set_size(struct pane *p, int cols, int rows)
{
	if (cols > PANE_MAX_COLS)
		cols = PANE_MAX_COLS;
	if (rows > PANE_MAX_ROWS)
		rows = PANE_MAX_ROWS;
	if (cols == 1)
		cols = 2; /* a double-width line of 1 column has room for none:
		             libvterm 0.1.4 put its cursor at column -1 */
	if (cols < 1 || rows < 1 || (cols == p->cols && rows == p->rows))
		return;
	p->dirty = xreallocarray(p->dirty, (size_t)rows, sizeof *p->dirty);
	memset(p->dirty, 0, (size_t)rows * sizeof *p->dirty);
	p->rows = rows;
	p->cols = cols;
	feed_resize(&p->feed, rows, cols);
	screen_flush(p->scr);
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
	if (p->grid || p->tui->opts.read_only || p->src->resize == NULL)
		return; /* NULL: the source has its own size (a recording) */
	if (cols == p->cols && rows == p->rows)
		return;
	pane_set_size(p, cols, rows);
	p->src->resize(p, cols, rows);
}

/* Bytes for the source's input (dropped when read-only, or a tile that
 * has not taken the keyboard). */
static void
pane_send(struct pane *p, const void *bytes, size_t len)
{
	if (p->tui->opts.read_only || (p->grid && !p->kb_want) || len == 0 ||
	    p->src->write == NULL)
		return;
	p->src->write(p, bytes, len);
}

/* Can the pane's source take a signal now? */
int
pane_can_signal(const struct pane *p)
{
	return p->src->signal != NULL && p->state == PANE_LIVE &&
	    !p->tui->opts.read_only && (!p->grid || p->kb_want);
}

/* Send a signal to the foreground job; -1 if the source cannot. */
int
pane_signal(struct pane *p, const char *sig)
{
	if (!pane_can_signal(p))
		return -1;
	return p->src->signal(p, sig);
}

/* The backlog is parsed: the source reads again. */
void
pane_resume(struct pane *p)
{
	if (p->src->resume != NULL)
		p->src->resume(p);
}

/* The pane's name after its session's: the shell's id, or its kind's. */
const char *
pane_name(const struct pane *p)
{
	return p->src->label != NULL ? p->src->label
	    : p->shell_id != NULL    ? p->shell_id
	                             : "";
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
	if (p->state != PANE_LIVE) { /* bracketed or not is not known yet */
		tui_message(p->tui, 1, "paste: %s is not attached yet",
		    p->shell_id != NULL ? p->shell_id : "the pane");
		return;
	}
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
	scan_modes(p, b, len);
	feed_write(&p->feed, b, len);
	screen_flush(p->scr);
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
 * cost depends on what the bytes do (an erase of the screen writes every
 * cell), so the budget is time, not bytes: keys are read between slices.
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
