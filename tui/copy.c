/*
 * copy.c: copy mode (prefix [): move over the scrollback and the screen
 * with vi or emacs keys, search forward and back, select and copy into the
 * paste buffer and to the host clipboard with OSC 52 (prefix ] pastes).
 *
 * Lines are numbered from the oldest kept (0) through the scrollback to
 * the screen's last row; the pane's view (lines scrolled back) follows the
 * cursor.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "tui.h"

/* Lines there are: scrollback and screen. */
static int64_t
copy_lines(struct pane *p)
{
	return pane_history(p) + p->rows;
}

/* The cells of line l into cells (p->cols of them). */
static void
copy_line_cells(struct pane *p, int64_t l, VTermScreenCell *cells)
{
	int row = (int)(l - pane_history(p));

	for (int c = 0; c < p->cols; c++)
		pane_cell(p, row, c, &cells[c]);
}

/* Line l as text (caller frees lt with line_text_free). */
static void
copy_line_text(struct pane *p, int64_t l, struct line_text *lt)
{
	VTermScreenCell *cells = xcalloc((size_t)p->cols, sizeof *cells);

	copy_line_cells(p, l, cells);
	line_text_from_cells(lt, cells, p->cols);
	free(cells);
}

/* Scroll the view so the cursor line shows. */
static void
copy_follow(struct tui *t, struct pane *p)
{
	int h = t->lay.pane.h < p->rows ? t->lay.pane.h : p->rows;
	int64_t hist = pane_history(p);
	/* first line shown = hist - view (+ top, 0 while scrolled) */
	int64_t first = hist - p->view;

	if (t->copy.line < first)
		p->view = (int)(hist - t->copy.line);
	else if (t->copy.line >= first + h)
		p->view = (int)(hist - (t->copy.line - h + 1));
	if (p->view < 0)
		p->view = 0;
	if (p->view > hist)
		p->view = (int)hist;
	pane_mark_all(p);
}

/* Enter copy mode at the cursor (page_up: one page up at once). */
void
copy_enter(struct tui *t, int page_up)
{
	struct pane *p = tui_pane(t);
	struct copy *c = &t->copy;

	if (p == NULL)
		return;
	free(c->search);
	memset(c, 0, sizeof *c);
	c->on = 1;
	c->line = pane_history(p) + p->cursor.row;
	c->col = p->cursor.col;
	c->match_line = -1;
	if (page_up) {
		c->line -= t->lay.pane.h;
		if (c->line < 0)
			c->line = 0;
	}
	copy_follow(t, p);
	draw_schedule(t);
}

/* Leave copy mode: back to the live screen. */
void
copy_exit(struct tui *t)
{
	struct pane *p = tui_pane(t);

	t->copy.on = 0;
	t->copy.selecting = 0;
	if (p != NULL) {
		p->view = 0;
		pane_mark_all(p);
	}
	t->full_redraw = 1;
	draw_schedule(t);
}

/* Is the cell at line l, column col selected or a search match? */
int
copy_cell_selected(struct tui *t, int64_t l, int col)
{
	struct copy *c = &t->copy;
	int64_t al, bl;
	int ac, bc;

	if (c->match_line == l && col >= c->match_col &&
	    col < c->match_col + c->match_len)
		return 1;
	if (!c->selecting)
		return 0;
	if (c->sel_line < c->line ||
	    (c->sel_line == c->line && c->sel_col <= c->col)) {
		al = c->sel_line, ac = c->sel_col, bl = c->line, bc = c->col;
	} else {
		al = c->line, ac = c->col, bl = c->sel_line, bc = c->sel_col;
	}
	if (l < al || l > bl)
		return 0;
	if (l == al && col < ac)
		return 0;
	if (l == bl && col > bc)
		return 0;
	return 1;
}

/* Copy the selection (or the cursor's line) and leave copy mode. */
static void
copy_selection(struct tui *t, struct pane *p)
{
	struct copy *c = &t->copy;
	struct line_text lt = {0};
	int64_t al = c->line, bl = c->line;
	int ac = 0, bc = p->cols - 1;
	char *buf = NULL, *b64;
	size_t len = 0;

	if (c->selecting) {
		if (c->sel_line < c->line ||
		    (c->sel_line == c->line && c->sel_col <= c->col))
			al = c->sel_line, ac = c->sel_col, bc = c->col;
		else
			bl = c->sel_line, ac = c->col, bc = c->sel_col;
	}
	for (int64_t l = al; l <= bl; l++) {
		int from = l == al ? ac : 0, to = l == bl ? bc : p->cols - 1;
		copy_line_text(p, l, &lt);
		for (size_t i = 0; i < lt.len; i++) {
			if (lt.col[i] < from || lt.col[i] > to)
				continue;
			buf = xrealloc(buf, len + 2);
			buf[len++] = lt.s[i];
		}
		if (l < bl) {
			buf = xrealloc(buf, len + 2);
			buf[len++] = '\n';
		}
	}
	line_text_free(&lt);
	free(t->paste_buf);
	t->paste_buf = buf;
	t->paste_len = len;
	if (buf != NULL) {
		/* the host clipboard, through the terminal (OSC 52) */
		b64 = base64_encode(buf, len);
		printf("\033]52;c;%s\a", b64);
		fflush(stdout);
		free(b64);
	}
	tui_message(t, 0, "copied %zu bytes (prefix ] pastes)", len);
	copy_exit(t);
}

/* Search from the cursor for c->search; moves to the match. */
static void
copy_search(struct tui *t, struct pane *p, int forward)
{
	struct copy *c = &t->copy;
	struct line_text lt = {0};
	int64_t n = copy_lines(p), l = c->line;
	int from = c->col;

	if (c->search == NULL || *c->search == '\0')
		return;
	for (int64_t k = 0; k <= n; k++) {
		int col;
		copy_line_text(p, l, &lt);
		col = line_text_find(&lt, c->search, from, forward);
		if (col >= 0) {
			c->line = l;
			c->col = col;
			c->match_line = l;
			c->match_col = col;
			c->match_len = (int)strlen(c->search);
			line_text_free(&lt);
			copy_follow(t, p);
			return;
		}
		l = forward ? (l + 1) % n : (l - 1 + n) % n;
		from = forward ? -1 : p->cols + 1;
	}
	line_text_free(&lt);
	tui_message(t, 1, "\"%s\" not found", c->search);
}

/* The search prompt answered. */
static void
search_done(struct tui *t, const char *s, void *arg)
{
	struct pane *p = tui_pane(t);

	if (s == NULL || p == NULL || !t->copy.on)
		return;
	free(t->copy.search);
	t->copy.search = xstrdup(s);
	t->copy.search_forward = arg != NULL;
	copy_search(t, p, t->copy.search_forward);
}

/* Column of the next (dir 1) or previous (-1) word start on the line. */
static int
word_move(struct pane *p, int64_t l, int col, int dir)
{
	VTermScreenCell *cells = xcalloc((size_t)p->cols, sizeof *cells);
	int c = col;

#define BLANK(i) (cells[(i)].chars[0] == 0 || cells[(i)].chars[0] == ' ')
	copy_line_cells(p, l, cells);
	if (dir > 0) {
		while (c < p->cols - 1 && !BLANK(c))
			c++;
		while (c < p->cols - 1 && BLANK(c))
			c++;
	} else {
		if (c > 0)
			c--;
		while (c > 0 && BLANK(c))
			c--;
		while (c > 0 && !BLANK(c - 1))
			c--;
	}
#undef BLANK
	free(cells);
	return c;
}

/* A key in copy mode; always 1. */
int
copy_key(struct tui *t, int key)
{
	struct pane *p = tui_pane(t);
	struct copy *c = &t->copy;
	int64_t n, half;

	if (p == NULL) {
		copy_exit(t);
		return 1;
	}
	n = copy_lines(p);
	half = t->lay.pane.h / 2 > 0 ? t->lay.pane.h / 2 : 1;
	c->match_line = -1;
	switch (key) {
	case 'q':
	case 0x1b:
	case 0x07: /* C-g */
		copy_exit(t);
		return 1;
	case 'h':
	case KEYC_LEFT:
		if (c->col > 0)
			c->col--;
		break;
	case 'l':
	case KEYC_RIGHT:
		if (c->col < p->cols - 1)
			c->col++;
		break;
	case 'k':
	case KEYC_UP:
	case 0x10: /* C-p */
		if (c->line > 0)
			c->line--;
		break;
	case 'j':
	case KEYC_DOWN:
	case 0x0e: /* C-n */
		if (c->line < n - 1)
			c->line++;
		break;
	case KEYC_UP | KEYC_CTRL: /* the wheel */
		c->line = c->line > 3 ? c->line - 3 : 0;
		break;
	case KEYC_DOWN | KEYC_CTRL:
		c->line = c->line + 3 < n ? c->line + 3 : n - 1;
		if (p->view <= 3 && c->line >= n - p->rows) {
			copy_exit(t);
			return 1;
		}
		break;
	case '0':
	case KEYC_HOME:
	case 0x01: /* C-a */
		c->col = 0;
		break;
	case '$':
	case KEYC_END:
	case 0x05: /* C-e */
		c->col = p->cols - 1;
		break;
	case 'w':
	case 'f' | KEYC_META:
		c->col = word_move(p, c->line, c->col, 1);
		break;
	case 'b':
	case 'b' | KEYC_META:
		c->col = word_move(p, c->line, c->col, -1);
		break;
	case 'g':
	case '<' | KEYC_META:
		c->line = 0;
		break;
	case 'G':
	case '>' | KEYC_META:
		c->line = n - 1;
		break;
	case 0x15: /* C-u */
		c->line = c->line > half ? c->line - half : 0;
		break;
	case 0x04: /* C-d */
		c->line = c->line + half < n ? c->line + half : n - 1;
		break;
	case KEYC_PPAGE:
	case 0x02: /* C-b */
		c->line = c->line > 2 * half ? c->line - 2 * half : 0;
		break;
	case KEYC_NPAGE:
	case 0x06: /* C-f */
		c->line = c->line + 2 * half < n ? c->line + 2 * half : n - 1;
		break;
	case '/':
	case 0x13: /* C-s */
		prompt_open(t, "search down: ", "", 0, search_done, (void *)1);
		return 1;
	case '?':
	case 0x12: /* C-r */
		prompt_open(t, "search up: ", "", 0, search_done, NULL);
		return 1;
	case 'n':
		copy_search(t, p, c->search_forward);
		return 1;
	case 'N':
		copy_search(t, p, !c->search_forward);
		return 1;
	case ' ':
	case 'v':
	case 0x00: /* C-Space */
		c->selecting = 1;
		c->sel_line = c->line;
		c->sel_col = c->col;
		break;
	case 0x0d:
	case 'y':
	case 'w' | KEYC_META:
		copy_selection(t, p);
		return 1;
	default:
		break;
	}
	copy_follow(t, p);
	draw_schedule(t);
	return 1;
}
