/*
 * draw.c: the frame: sidebar, border, the selected pane, the status bar
 * and whatever dialog is open, painted with ncurses.
 *
 * Nothing draws when it changes: callbacks call draw_schedule, and one
 * timer paints at most once per FRAME_MS, rows that changed only, with one
 * doupdate() that sends the terminal just the difference. Under a flood of
 * output the frame rate, not the byte rate, decides the drawing cost.
 */
#include <locale.h>
#include <ncurses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "tui.h"

#include <term.h> /* after vterm.h: its macros (lines, columns) */

static void draw_frame(struct tui *);

#define FRAME_MS 16

/* Colour pair for fg/bg (COLOUR_DEFAULT: the terminal's); 0 if none. */
static int
draw_pair(struct tui *t, int fg, int bg)
{
	int p;

	if (t->caps.colours < 8 ||
	    (fg == COLOUR_DEFAULT && bg == COLOUR_DEFAULT))
		return 0;
	p = alloc_pair(fg, bg);
	return p < 0 ? 0 : p;
}

/* A theme colour (0..255) for this terminal. */
static int
theme_colour(struct tui *t, int c)
{
	VTermColor vc;

	if (c == COLOUR_DEFAULT)
		return COLOUR_DEFAULT;
	vterm_color_indexed(&vc, (uint8_t)c);
	return colour_map(&t->caps, &vc, 1);
}

/* Colour pairs for the theme's items (again after a theme change). */
void
draw_theme_apply(struct tui *t)
{
	for (int i = 0; i < TH_NITEMS; i++) {
		const struct theme_style *s = &t->theme.st[i];
		t->theme_pairs[i] = draw_pair(
		    t, theme_colour(t, s->fg), theme_colour(t, s->bg));
	}
	t->full_redraw = 1;
}

/* Draw with theme item i from now on. */
void
draw_style(struct tui *t, int i)
{
	const struct theme_style *s = &t->theme.st[i];
	attr_t a = A_NORMAL;

	if (s->attrs & THEME_ATTR_BOLD)
		a |= A_BOLD;
	if (s->attrs & THEME_ATTR_REVERSE)
		a |= A_REVERSE;
	if (s->attrs & THEME_ATTR_UNDERLINE)
		a |= A_UNDERLINE;
	if (s->attrs & THEME_ATTR_DIM)
		a |= A_DIM;
	attr_set(a, (short)0, &t->theme_pairs[i]);
}

/* Set up the terminal: modes, colours, keys. */
void
draw_init(struct tui *t)
{
	int rgb;

	initscr();
	raw();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	intrflush(stdscr, FALSE);
	set_escdelay(25);
	t->caps.colours = 0;
	if (has_colors()) {
		start_color();
		use_default_colors();
		rgb = tigetflag("RGB");
		t->caps.colours = COLORS;
		if (rgb > 0 && COLORS >= 0x1000000)
			t->caps.colours = 0x1000000;
		else if (COLORS > 256)
			t->caps.colours = 256;
	}
	t->caps.strike = strike_init();
	getmaxyx(stdscr, t->rows, t->cols);
	draw_theme_apply(t);
}

/* Paint a frame now. */
static void
frame_cb(uv_timer_t *h)
{
	struct tui *t = h->data;

	t->frame_pending = 0;
	draw_frame(t);
}

/* Something changed: paint soon (at most once per FRAME_MS). */
void
draw_schedule(struct tui *t)
{
	uint64_t now, wait;

	if (t->frame_pending || t->loop == NULL)
		return;
	t->frame_pending = 1;
	now = mono_ms();
	/* idle: draw at once (a keystroke's echo); busy: pace the frames */
	wait = now - t->last_frame_ms >= FRAME_MS
	    ? 0
	    : FRAME_MS - (now - t->last_frame_ms);
	uv_timer_start(&t->frame_timer, frame_cb, wait, 0);
}

/* Write s at y,x, at most w columns, padding with blanks to w. */
static void
put_text(int y, int x, int w, const char *s)
{
	wchar_t wc;
	mbstate_t st;
	int used = 0;

	memset(&st, 0, sizeof st);
	move(y, x);
	while (*s != '\0' && used < w) {
		size_t n = mbrtowc(&wc, s, MB_CUR_MAX, &st);
		int cw;
		if (n == (size_t)-1 || n == (size_t)-2 || n == 0) {
			memset(&st, 0, sizeof st);
			wc = L'?';
			n = 1;
		}
		cw = wcwidth(wc);
		if (cw < 0)
			cw = 1, wc = L'?';
		if (used + cw > w)
			break;
		addnwstr(&wc, 1);
		used += cw;
		s += n;
	}
	for (; used < w; used++)
		addch(' ');
}

/* One cell of a pane at screen y,x. */
static void
draw_cell(
    struct tui *t, int y, int x, const VTermScreenCell *c, int hl, int room)
{
	struct tcell tc;
	cchar_t cc;
	int pair;

	cell_convert(c, &t->caps, &tc);
	if (tc.width == 0)
		return;
	if (hl) {
		tc.attrs |= A_REVERSE;
	}
	pair = draw_pair(t, tc.fg, tc.bg);
	if (tc.width > room || (tc.wch[0] == L'?' && tc.wch[1] == L'?')) {
		/* a wide glyph cut by the edge, or a stand-in: one per column
		 */
		wchar_t one[2] = {tc.wch[0] == L'?' ? L'?' : L' ', 0};
		for (int i = 0; i < tc.width && i < room; i++) {
			setcchar(&cc, one, tc.attrs, 0, &pair);
			mvadd_wch(y, x + i, &cc);
		}
		return;
	}
	setcchar(&cc, tc.wch, tc.attrs, 0, &pair);
	mvadd_wch(y, x, &cc);
	if (tc.strike)
		strike_note(&t->strike, y, x, tc.wch, tc.attrs, pair);
}

/* The first PTY row shown in a view h rows high: the cursor stays in it. */
static int
pane_top(const struct pane *p, int h)
{
	int top = p->cursor.row + 1 - h;

	if (p->rows <= h || top < 0)
		return 0;
	if (top > p->rows - h)
		top = p->rows - h;
	return top;
}

/*
 * Paint pane p into r: rows that changed, or all of them. A pane larger
 * than r (another viewer's size, a grid tile) is cropped around its cursor;
 * a smaller one is padded with blanks.
 */
void
draw_pane(struct tui *t, struct pane *p, const struct rect *r, int all)
{
	VTermScreenCell c;
	int top = pane_top(p, r->h), copy = t->copy.on && p == tui_pane(t);
	int64_t hist = pane_history(p);

	for (int y = 0; y < r->h; y++) {
		int row = top + y - p->view, from = 0, to = r->w;
		if (!all && row >= 0 && row < p->rows) {
			const struct pane_span *d = &p->dirty[row];
			if (d->to == 0)
				continue;
			/* a column back: a changed cell may be the second
			 * half of a wide glyph, drawn from its first */
			from = d->from > 0 ? d->from - 1 : 0;
			to = d->to < r->w ? d->to : r->w;
		}
		for (int x = from; x < to; x++) {
			int hl = copy && copy_cell_selected(t, hist + row, x);
			if (row >= p->rows || x >= p->cols ||
			    pane_cell(p, row, x, &c) != 0) {
				attr_set(hl ? A_REVERSE : A_NORMAL, 0, NULL);
				mvaddch(r->y + y, r->x + x, ' ');
				continue;
			}
			draw_cell(t, r->y + y, r->x + x, &c, hl, r->w - x);
		}
	}
	memset(p->dirty, 0, (size_t)p->rows * sizeof *p->dirty);
	p->any_dirty = 0;
}

/* What a pane that is not live says over its screen. */
static void
draw_pane_banner(struct tui *t, struct pane *p, const struct rect *r)
{
	char *s = NULL;

	switch (p->state) {
	case PANE_CONNECTING:
		xasprintf(
		    &s, " attaching to %s:%s ... ", p->session, pane_name(p));
		break;
	case PANE_DISCONNECTED:
		xasprintf(&s, " disconnected (%s): reattaching ... ",
		    p->error ? p->error : "?");
		break;
	case PANE_EXITED:
		xasprintf(&s,
		    " [%s exited with status %d: prefix c opens a "
		    "shell, prefix x closes it] ",
		    pane_name(p), p->exit_status);
		break;
	case PANE_FAILED:
		xasprintf(&s, " %s ", p->error ? p->error : "cannot attach");
		break;
	default:
		return;
	}
	draw_style(t, p->state == PANE_EXITED ? TH_MESSAGE : TH_ERROR);
	put_text(r->y + r->h - 1, r->x, r->w, s);
	attr_set(A_NORMAL, 0, NULL);
	free(s);
	/* drawn again next frame (not scheduled: that one comes anyway) */
	p->dirty[p->rows - 1 < 0 ? 0 : p->rows - 1] =
	    (struct pane_span){0, UINT16_MAX};
}

/* Human memory size: "512M", "2G". */
static void
mem_str(int mb, char *buf, size_t len)
{
	if (mb >= 1024 && mb % 1024 == 0)
		snprintf(buf, len, "%dG", mb / 1024);
	else
		snprintf(buf, len, "%dM", mb);
}

/* The theme item for a session or shell state. */
static int
state_item(const char *state)
{
	if (strcmp(state, "running") == 0 || strcmp(state, "live") == 0)
		return TH_RUNNING;
	if (strcmp(state, "starting") == 0 || strcmp(state, "stopping") == 0 ||
	    strcmp(state, "connecting") == 0)
		return TH_STARTING;
	return TH_STOPPED;
}

/* The sidebar: sessions, each with its shells. */
static void
draw_sidebar(struct tui *t)
{
	const struct rect *r = &t->lay.sidebar;
	int y = r->y, row = 0, first;
	char buf[256], mem[16];

	if (t->sidebar_lines != r->h) {
		t->sidebar_line_row = xreallocarray(t->sidebar_line_row,
		    (size_t)(r->h > 0 ? r->h : 1), sizeof *t->sidebar_line_row);
		t->sidebar_lines = r->h;
	}
	for (int k = 0; k < r->h; k++)
		t->sidebar_line_row[k] = -1;
	draw_style(t, TH_SIDEBAR_HEAD);
	put_text(y++, r->x, r->w, t->opts.local ? " local" : " SESSIONS");
	for (size_t i = 0; i < t->model.n && y < r->y + r->h; i++) {
		struct msession *s = &t->model.sessions[i];
		int sel = row == t->sel;

		/* a host's heading, and why it is not answering */
		if (s->host != NULL &&
		    (i == 0 ||
		        strcmp(s->host,
		            t->model.sessions[i - 1].host != NULL
		                ? t->model.sessions[i - 1].host
		                : "") != 0)) {
			const char *why = hosts_error(t, s->host);
			snprintf(buf, sizeof buf, " %s%s%s", s->host,
			    why != NULL ? ": " : "", why != NULL ? why : "");
			draw_style(t, why != NULL ? TH_ERROR : TH_SIDEBAR_HEAD);
			put_text(y++, r->x, r->w, buf);
			if (y >= r->y + r->h)
				break;
		}
		/* a group's heading (not a row: nothing to select) */
		if (tui_group_by(t) != NULL &&
		    (i == 0 ||
		        strcmp(s->group, t->model.sessions[i - 1].group) !=
		            0)) {
			if (*s->group != '\0')
				snprintf(buf, sizeof buf, " %s=%s",
				    tui_group_by(t), s->group);
			else
				snprintf(
				    buf, sizeof buf, " no %s", tui_group_by(t));
			draw_style(t, TH_SIDEBAR_HEAD);
			put_text(y++, r->x, r->w, buf);
			if (y >= r->y + r->h)
				break;
		}
		first = y;
		mem_str(s->memory_mb, mem, sizeof mem);
		draw_style(t, sel ? TH_SIDEBAR_SEL : TH_SIDEBAR_HEAD);
		snprintf(buf, sizeof buf, "%s %s", sel ? ">" : " ", s->name);
		put_text(y, r->x, r->w, buf);
		snprintf(buf, sizeof buf, "%s %s %dc/%s %zu", s->state,
		    s->accel ? s->accel : "", s->cpus, mem, s->nshells);
		if ((int)strlen(buf) < r->w - 2) {
			draw_style(
			    t, sel ? TH_SIDEBAR_SEL : state_item(s->state));
			put_text(y + 1, r->x, r->w, "");
			move(y + 1, r->x + 3);
			draw_style(
			    t, sel ? TH_SIDEBAR_SEL : state_item(s->state));
			put_text(y + 1, r->x + 3, r->w - 3, buf);
			y++;
		}
		if (s->detail != NULL && *s->detail != '\0' &&
		    y + 1 < r->y + r->h) {
			draw_style(t, sel ? TH_SIDEBAR_SEL : TH_SIDEBAR);
			put_text(y + 1, r->x, r->w, "");
			put_text(y + 1, r->x + 3, r->w - 3, s->detail);
			y++;
		}
		/* the last check's result */
		if (s->check != NULL && y + 1 < r->y + r->h) {
			draw_style(t,
			    sel                   ? TH_SIDEBAR_SEL
			        : s->check_failed ? TH_ERROR
			                          : TH_SIDEBAR);
			put_text(y + 1, r->x, r->w, "");
			put_text(y + 1, r->x + 3, r->w - 3, s->check);
			y++;
		}
		/* its agent did not answer (this session only) */
		if (s->error != NULL && *s->error != '\0' &&
		    y + 1 < r->y + r->h) {
			draw_style(t, sel ? TH_SIDEBAR_SEL : TH_ERROR);
			put_text(y + 1, r->x, r->w, "");
			put_text(y + 1, r->x + 3, r->w - 3, s->error);
			y++;
		}
		y++;
		for (int k = first; k < y && k < r->y + r->h; k++)
			t->sidebar_line_row[k - r->y] = row;
		row++;
		for (size_t j = 0; j < s->nshells && y < r->y + r->h; j++) {
			struct mshell *sh = &s->shells[j];
			int cur = t->cur_session && t->cur_shell &&
			    strcmp(t->cur_session, s->name) == 0 &&
			    strcmp(t->cur_shell, sh->id) == 0;
			sel = row == t->sel;
			snprintf(buf, sizeof buf, "  %s%s %s %dv %s",
			    cur ? "*" : " ", sh->id, sh->state, sh->clients,
			    sh->command);
			draw_style(t,
			    sel ? TH_SIDEBAR_SEL
			        : (strcmp(sh->state, "running") == 0
			                  ? TH_SIDEBAR
			                  : TH_STOPPED));
			t->sidebar_line_row[y - r->y] = row;
			put_text(y++, r->x, r->w, buf);
			row++;
		}
	}
	draw_style(t, TH_SIDEBAR);
	if (t->model.n == 0 && y < r->y + r->h && !t->opts.local) {
		put_text(y++, r->x, r->w, " no sessions:");
		if (y < r->y + r->h)
			put_text(y++, r->x, r->w, " C-b N creates one");
	}
	while (y < r->y + r->h)
		put_text(y++, r->x, r->w, "");
	draw_style(t, TH_BORDER);
	for (y = t->lay.border.y; y < t->lay.border.y + t->lay.border.h; y++)
		mvadd_wch(y, t->lay.border.x, WACS_VLINE);
	attr_set(A_NORMAL, 0, NULL);
}

/* "12.3M" for a byte count. */
static void
human(uint64_t b, char *buf, size_t len)
{
	const char *u = "BKMGT";
	double v = (double)b;

	while (v >= 1024 && u[1] != '\0') {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, *u == 'B' ? "%.0f%c" : "%.1f%c", v, *u);
}

/* Transfers in progress: "cp x 45% 3.1M/s ETA 4s". */
static void
transfers_str(struct tui *t, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (struct job *j = t->jobs; j != NULL && off < len; j = j->next) {
		char done[16], rate[16], eta[24] = "";
		uint64_t ms = mono_ms() - j->started_ms;
		double bps = ms > 0 ? (double)j->bytes * 1000 / (double)ms : 0;
		if (j->exited)
			continue;
		if (!j->transfer) {
			/* a command (new, rm, ...): what it last said */
			char *last = job_error_line(j);
			off += (size_t)snprintf(buf + off, len - off,
			    " [%s %llus%s%.40s]", j->what,
			    (unsigned long long)(ms / 1000),
			    j->errlen > 0 ? ": " : "",
			    j->errlen > 0 ? last : "");
			free(last);
			continue;
		}
		human(j->bytes, done, sizeof done);
		human((uint64_t)bps, rate, sizeof rate);
		if (j->total > 0 && bps > 0 && j->bytes < j->total)
			snprintf(eta, sizeof eta, " ETA %.0fs",
			    (double)(j->total - j->bytes) / bps);
		if (j->total > 0)
			off += (size_t)snprintf(buf + off, len - off,
			    " [%s %.0f%% %s %s/s%s]", j->what,
			    100.0 * (double)j->bytes / (double)j->total, done,
			    rate, eta);
		else
			off += (size_t)snprintf(buf + off, len - off,
			    " [%s %s %s/s]", j->what, done, rate);
	}
}

/* The status bar (or the prompt, which takes its place). */
static void
draw_status(struct tui *t)
{
	const struct rect *r = &t->lay.status;
	struct pane *p = tui_key_pane(t);
	char left[256], right[512], xfer[512], *drawn;
	int lw;

	if (r->h == 0)
		return;
	if (t->prompt.on) {
		size_t lab = strlen(t->prompt.label);
		free(t->status_drawn);
		t->status_drawn = NULL;
		draw_style(t, TH_DIALOG);
		put_text(r->y, r->x, r->w, t->prompt.label);
		put_text(
		    r->y, r->x + (int)lab, r->w - (int)lab, t->prompt.text);
		return;
	}
	transfers_str(t, xfer, sizeof xfer);
	if (p != NULL)
		snprintf(left, sizeof left, " %s:%s %s %dx%d%s%s%s%s%.30s%s ",
		    p->session, pane_name(p), pane_state_name(p), p->cols,
		    p->rows, t->broadcast ? " BROADCAST" : "",
		    t->zoomed ? " Z" : "", t->opts.read_only ? " RO" : "",
		    p->title && *p->title ? " \"" : "",
		    p->title ? p->title : "",
		    p->title && *p->title ? "\"" : "");
	else
		snprintf(left, sizeof left, " %s ",
		    t->cur_session ? t->cur_session : "vmux");
	if (t->message != NULL)
		snprintf(right, sizeof right, "%s ", t->message);
	else if (t->broadcast)
		snprintf(right, sizeof right,
		    "[BROADCAST: keys go to every shell] C-b B stops ");
	else if (p != NULL && p->kb_mine)
		snprintf(right, sizeof right,
		    "[YOU HAVE THE KEYBOARD] C-b T hands it back ");
	else if (p != NULL && p->keyboard != NULL)
		snprintf(right, sizeof right,
		    "[%s has the keyboard: keys are dropped] ", p->keyboard);
	else if (t->mode == MODE_GRID && t->grid_zoom)
		snprintf(right, sizeof right,
		    "[watching%s%.60s] t takes the keyboard, z back ",
		    p != NULL && p->others && *p->others ? " with " : "",
		    p != NULL && p->others ? p->others : "");
	else if (t->mode == MODE_GRID)
		snprintf(right, sizeof right,
		    "[wall] Enter opens, z zooms, t takes over, o sorts ");
	else if (p != NULL && p->others != NULL && *p->others)
		snprintf(
		    right, sizeof right, "[with %.60s] C-b ? help ", p->others);
	else if (t->copy.on)
		snprintf(right, sizeof right,
		    "[copy] q quits, / ? search, Space selects, Enter copies ");
	else if (t->mode == MODE_PREFIX)
		snprintf(right, sizeof right, "[prefix] ");
	else if (t->mode == MODE_SIDEBAR)
		snprintf(right, sizeof right,
		    "[sessions] Up/Down, Enter opens, Esc ");
	else
		snprintf(right, sizeof right, "C-b ? help ");
	/* the same line as last frame's (a key's echo): nothing to draw */
	xasprintf(&drawn, "%d %d %d %d|%s|%s|%s", r->y, r->w,
	    t->message != NULL, t->message_error, left, xfer, right);
	if (t->status_drawn != NULL && strcmp(drawn, t->status_drawn) == 0) {
		free(drawn);
		return;
	}
	free(t->status_drawn);
	t->status_drawn = drawn;
	if (t->message != NULL &&
	    (int)(strlen(left) + strlen(xfer) + strlen(right)) > r->w) {
		/* a long message takes the whole line, elided in the middle
		 * so both its start and its cause show */
		int w = r->w;
		size_t len = strlen(right);
		draw_style(t, t->message_error ? TH_ERROR : TH_MESSAGE);
		if ((int)len > w && w > 8) {
			size_t head = (size_t)(w - 3) / 2;
			size_t tail = (size_t)(w - 3) - head;
			memcpy(right + head, "...", 3);
			memmove(right + head + 3, right + len - tail, tail + 1);
		}
		put_text(r->y, r->x, w, right);
		attr_set(A_NORMAL, 0, NULL);
		return;
	}
	draw_style(t, TH_STATUS_ACCENT);
	lw = (int)strlen(left) < r->w ? (int)strlen(left) : r->w;
	put_text(r->y, r->x, lw, left);
	draw_style(t, TH_STATUS);
	put_text(r->y, r->x + lw, r->w - lw, xfer);
	if (t->message != NULL)
		draw_style(t, t->message_error ? TH_ERROR : TH_MESSAGE);
	{
		int rw = (int)strlen(right),
		    room = r->w - lw - (int)strlen(xfer);
		if (rw > room)
			rw = room;
		if (rw > 0)
			put_text(r->y, r->x + r->w - rw, rw, right);
	}
	attr_set(A_NORMAL, 0, NULL);
}

/* A framed box of w x h in the middle of the screen; its inner rect. */
static struct rect
draw_box(struct tui *t, int w, int h, const char *title)
{
	struct rect r;

	if (w > t->cols)
		w = t->cols;
	if (h > t->rows - 1)
		h = t->rows - 1;
	r.x = (t->cols - w) / 2;
	r.y = (t->rows - 1 - h) / 2;
	r.w = w;
	r.h = h;
	draw_style(t, TH_DIALOG);
	for (int y = r.y; y < r.y + r.h; y++)
		put_text(y, r.x, r.w, "");
	if (w >= 2 && h >= 2) {
		mvadd_wch(r.y, r.x, WACS_ULCORNER);
		mvadd_wch(r.y, r.x + w - 1, WACS_URCORNER);
		mvadd_wch(r.y + h - 1, r.x, WACS_LLCORNER);
		mvadd_wch(r.y + h - 1, r.x + w - 1, WACS_LRCORNER);
		for (int x = r.x + 1; x < r.x + w - 1; x++) {
			mvadd_wch(r.y, x, WACS_HLINE);
			mvadd_wch(r.y + h - 1, x, WACS_HLINE);
		}
		for (int y = r.y + 1; y < r.y + h - 1; y++) {
			mvadd_wch(y, r.x, WACS_VLINE);
			mvadd_wch(y, r.x + w - 1, WACS_VLINE);
		}
		if (title != NULL && w > 6) {
			char *s;
			xasprintf(&s, " %s ", title);
			put_text(r.y, r.x + 2,
			    (int)strlen(s) < w - 4 ? (int)strlen(s) : w - 4, s);
			free(s);
		}
	}
	return (struct rect){r.x + 1, r.y + 1, w - 2, h - 2};
}

/* The open menu. */
static void
draw_menu(struct tui *t)
{
	struct menu *m = &t->menu;
	int w = (int)strlen(m->title) + 6, h = (int)m->n + 2, first = 0;
	struct rect in;

	for (size_t i = 0; i < m->n; i++)
		if ((int)strlen(m->items[i]) + 4 > w)
			w = (int)strlen(m->items[i]) + 4;
	in = draw_box(t, w, h, m->title);
	if ((int)m->sel >= in.h)
		first = (int)m->sel - in.h + 1;
	for (int y = 0; y < in.h && first + y < (int)m->n; y++) {
		draw_style(
		    t, first + y == (int)m->sel ? TH_DIALOG_SEL : TH_DIALOG);
		put_text(in.y + y, in.x, in.w, m->items[first + y]);
	}
	attr_set(A_NORMAL, 0, NULL);
}

/* The help screen: every binding of the prefix table, and the modes. */
static void
draw_help(struct tui *t)
{
	struct rect in = draw_box(t, 64, t->rows - 2, "help: q or Esc closes");
	char key[32], pre[32], line[256];
	int y = 0, skip = t->help_scroll;

	key_string(t->cfg.prefix, pre, sizeof pre);
	for (size_t i = 0; i < t->cfg.nbinds + 11 && y < in.h; i++) {
		if (i < t->cfg.nbinds) {
			key_string(t->cfg.binds[i].key, key, sizeof key);
			snprintf(line, sizeof line, " %s %-8s %s", pre, key,
			    t->cfg.binds[i].command);
		} else {
			static const char *extra[] = {
			    " copy mode: h j k l w b 0 $ g G, C-u C-d, / ? n "
			    "N,",
			    "   Space/v selects, Enter/y copies (OSC 52), q "
			    "quits",
			    " sessions (prefix s): Up Down Enter Esc, d stops",
			    " grid (prefix w): arrows move, Enter opens, / "
			    "filters,",
			    "   o sorts, z zooms, t takes the keyboard",
			    " replay (prefix R): Space, Left/Right, + -, 0",
			    " mouse: wheel scrolls back, click in the sidebar",
			    "   selects",
			    " prompt (prefix :): vmux commands (new, rm, cp,",
			    "   kill, exec, ...) and TUI commands, Tab "
			    "completes;",
			    "   output opens in a box (show-output: again)",
			};
			snprintf(
			    line, sizeof line, "%s", extra[i - t->cfg.nbinds]);
		}
		if (skip > 0) {
			skip--;
			continue;
		}
		draw_style(t, TH_DIALOG);
		put_text(in.y + y++, in.x, in.w, line);
	}
	attr_set(A_NORMAL, 0, NULL);
}

/* A command's output (MODE_OUTPUT): the box takes most of the screen. */
static void
draw_output(struct tui *t)
{
	struct textview *v = &t->output;
	char *title;
	struct rect in;

	xasprintf(&title, "q closes, j k Space b g G scroll: %s", v->title);
	in = draw_box(t, t->cols - 2, t->rows - 2, title);
	free(title);
	textview_layout(v, in.w, in.h);
	draw_style(t, TH_DIALOG);
	for (int y = 0; y < in.h; y++) {
		size_t i = v->top + (size_t)y;
		put_text(in.y + y, in.x, in.w, i < v->n ? v->line[i] : "");
	}
	attr_set(A_NORMAL, 0, NULL);
}

/* Paint everything that changed and update the terminal once. */
static void
draw_frame(struct tui *t)
{
	struct pane *p = tui_pane(t);
	int full = t->full_redraw, overlay;

	t->last_frame_ms = mono_ms();
	if (t->message != NULL && t->message_until <= t->last_frame_ms) {
		free(t->message);
		t->message = NULL;
	}
	if (full) {
		erase();
		t->full_redraw = 0;
		free(t->status_drawn); /* erased with the rest */
		t->status_drawn = NULL;
	}
	overlay = t->menu.on || t->mode == MODE_HELP || t->mode == MODE_OUTPUT;
	if (t->mode == MODE_GRID) {
		grid_draw(t);
	} else {
		if (t->lay.sidebar.w > 0)
			draw_sidebar(t);
		if (p != NULL) {
			draw_pane(t, p, &t->lay.pane,
			    full || overlay || p->view > 0 || t->copy.on);
			if (p->state != PANE_LIVE)
				draw_pane_banner(t, p, &t->lay.pane);
		} else if (full) {
			draw_style(t, TH_MESSAGE);
			put_text(t->lay.pane.y + t->lay.pane.h / 2,
			    t->lay.pane.x, t->lay.pane.w,
			    t->model.n == 0 && t->model_at != 0
			        ? "  No sessions yet: C-b N (or C-b : new "
			          "NAME) "
			          "creates one."
			        : "  No shell selected: C-b c opens one, C-b s "
			          "chooses.");
			attr_set(A_NORMAL, 0, NULL);
		}
	}
	draw_status(t);
	if (t->menu.on)
		draw_menu(t);
	else if (t->mode == MODE_HELP)
		draw_help(t);
	else if (t->mode == MODE_OUTPUT)
		draw_output(t);
	if (t->menu.on)
		t->full_redraw = 1; /* repaint what the box covered, later */

	/* the cursor: the prompt's, the pane's, or hidden */
	if (t->prompt.on) {
		curs_set(1);
		move(t->lay.status.y,
		    (int)(strlen(t->prompt.label) + t->prompt.pos));
	} else if (t->copy.on && p != NULL) {
		int y = (int)(t->copy.line - pane_history(p)) + p->view -
		    pane_top(p, t->lay.pane.h);
		curs_set(1);
		move(t->lay.pane.y + y, t->lay.pane.x + t->copy.col);
	} else if (t->mode != MODE_GRID && !overlay && p != NULL &&
	    p->state == PANE_LIVE && p->cur_visible && p->view == 0 &&
	    p->cursor.col < t->lay.pane.w) {
		int y = p->cursor.row - pane_top(p, t->lay.pane.h);
		curs_set(1);
		move(t->lay.pane.y + y, t->lay.pane.x + p->cursor.col);
	} else
		curs_set(0);
	wnoutrefresh(stdscr);
	doupdate();
	strike_flush(&t->strike);
}
