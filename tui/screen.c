/*
 * screen.c: a pane's screen: the cells under libvterm's parser and state.
 *
 * libvterm 0.1.4 keeps its own screen (VTermScreen) as one array of 36-byte
 * cells, so every line scrolled off the bottom moves the whole screen and
 * every line pushed to the scrollback is read out cell by cell: most of a
 * flood's time. This screen takes VTermState's callbacks instead and keeps
 * each row as its own array of 16-byte cells behind a row pointer, so a
 * full-width scroll moves pointers, not cells. What it shows is libvterm's
 * screen's, cell for cell (tests/unit/test_tui_screen.c feeds both the same
 * bytes and compares): erased cells take the whole pen, a wide glyph's right
 * half is marked, DECSCNM flips reverse when read, lines leave the top of
 * a scroll region that starts at row 0 into the scrollback, and a resize
 * pushes and pulls lines as libvterm's does.
 *
 * Code points after a cell's first (combining marks) live in a per-row side
 * array, allocated the first time its row needs one; a cell says it has
 * them with a pen bit.
 *
 * The caller owns the VTerm; the screen owns its rows and frees them in
 * screen_free. Damage is merged into one band of rows and given to the
 * caller's damage callback at screen_flush, with the columns it spans (an
 * echo is one cell to draw again, not a row).
 */
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "tui.h"

#define WIDE_RIGHT ((uint32_t)-1) /* the right half of a wide glyph */
#define NCOMB      (VTERM_MAX_CHARS_PER_CELL - 1)

/* Pen bits of a cell (struct scell's pen). */
#define PEN_BOLD       (1u << 0)
#define PEN_UL_SHIFT   1 /* underline: 2 bits */
#define PEN_ITALIC     (1u << 3)
#define PEN_BLINK      (1u << 4)
#define PEN_REVERSE    (1u << 5)
#define PEN_STRIKE     (1u << 6)
#define PEN_FONT_SHIFT 7 /* font: 4 bits */
#define PEN_PROTECTED  (1u << 11)
#define PEN_DWL        (1u << 12)
#define PEN_DHL_SHIFT  13         /* dhl: 2 bits */
#define PEN_COMB       (1u << 15) /* code points past the first, in comb */

struct scell {
	uint32_t ch; /* first code point; 0 erased; WIDE_RIGHT */
	VTermColor fg, bg;
	uint32_t pen; /* PEN_* */
};

struct srow {
	struct scell *c;
	uint32_t (*comb)[NCOMB]; /* NULL until a cell of the row needs it */
};

struct screen {
	VTerm *vt;
	VTermState *state;
	const VTermScreenCallbacks *cbs;
	void *user;
	int rows, cols;
	int reverse;         /* DECSCNM */
	struct srow *buf[2]; /* primary, alternate */
	struct srow *cur;
	struct scell pen;       /* the pen (ch unused) */
	VTermScreenCell *line;  /* a row as the scrollback callbacks take it */
	int dmg_start, dmg_end; /* damaged rows, start == end: none */
	int dmg_col0, dmg_col1; /* ... their columns col0..col1-1 */
};

/* Columns col0..col1-1 of rows start..end-1 changed. */
static void
damage_cells(struct screen *s, int start, int end, int col0, int col1)
{
	if (start >= end || col0 >= col1)
		return;
	if (s->dmg_start == s->dmg_end) {
		s->dmg_start = start;
		s->dmg_end = end;
		s->dmg_col0 = col0;
		s->dmg_col1 = col1;
		return;
	}
	if (start < s->dmg_start)
		s->dmg_start = start;
	if (end > s->dmg_end)
		s->dmg_end = end;
	if (col0 < s->dmg_col0)
		s->dmg_col0 = col0;
	if (col1 > s->dmg_col1)
		s->dmg_col1 = col1;
}

/* Rows start..end-1 changed, whole. */
static void
damage(struct screen *s, int start, int end)
{
	damage_cells(s, start, end, 0, s->cols);
}

/* Cells from..to-1 blank in the pen (libvterm's new cells). */
static void
pen_fill(const struct screen *s, struct scell *cells, int from, int to)
{
	for (int c = from; c < to; c++)
		cells[c] = s->pen;
}

/*
 * The code points of chars past the first (combining marks, up to a 0)
 * into row's side array at col, and the cell's PEN_COMB set; nothing when
 * there are none.
 */
static void
comb_set(
    const struct screen *s, struct srow *row, int col, const uint32_t *chars)
{
	if (chars[1] == 0)
		return;
	if (row->comb == NULL)
		row->comb = xcalloc((size_t)s->cols, sizeof *row->comb);
	for (int i = 1; i < VTERM_MAX_CHARS_PER_CELL; i++) {
		row->comb[col][i - 1] = chars[i];
		if (chars[i] == 0)
			break;
	}
	row->c[col].pen |= PEN_COMB;
}

/* A buffer of rows x cols, every cell blank in the pen. */
static struct srow *
rows_new(const struct screen *s, int rows, int cols)
{
	struct srow *b = xcalloc((size_t)rows, sizeof *b);

	for (int r = 0; r < rows; r++) {
		b[r].c = xreallocarray(NULL, (size_t)cols, sizeof *b[r].c);
		pen_fill(s, b[r].c, 0, cols);
	}
	return b;
}

/* Free a buffer of rows. */
static void
rows_free(struct srow *b, int rows)
{
	if (b == NULL)
		return;
	for (int r = 0; r < rows; r++) {
		free(b[r].c);
		free(b[r].comb);
	}
	free(b);
}

/* The cell at row, col as libvterm's screen reports it. */
static void
cell_out(const struct screen *s, const struct srow *row, int col,
    VTermScreenCell *out)
{
	const struct scell *c = &row->c[col];
	int i = 1;

	out->chars[0] = c->ch;
	if (c->ch != 0 && (c->pen & PEN_COMB) != 0)
		for (; i < VTERM_MAX_CHARS_PER_CELL; i++) {
			out->chars[i] = row->comb[col][i - 1];
			if (out->chars[i] == 0)
				break;
		}
	else if (c->ch != 0)
		out->chars[1] = 0;
	out->attrs.bold = (c->pen & PEN_BOLD) != 0;
	out->attrs.underline = (c->pen >> PEN_UL_SHIFT) & 3;
	out->attrs.italic = (c->pen & PEN_ITALIC) != 0;
	out->attrs.blink = (c->pen & PEN_BLINK) != 0;
	out->attrs.reverse = ((c->pen & PEN_REVERSE) != 0) ^ s->reverse;
	out->attrs.strike = (c->pen & PEN_STRIKE) != 0;
	out->attrs.font = (c->pen >> PEN_FONT_SHIFT) & 15;
	out->attrs.dwl = (c->pen & PEN_DWL) != 0;
	out->attrs.dhl = (c->pen >> PEN_DHL_SHIFT) & 3;
	out->fg = c->fg;
	out->bg = c->bg;
	out->width =
	    col < s->cols - 1 && row->c[col + 1].ch == WIDE_RIGHT ? 2 : 1;
}

/* A cell from a scrollback line (libvterm's set_cell, for a resize). */
static void
cell_in(struct screen *s, struct srow *row, int col, const VTermScreenCell *in)
{
	struct scell *c = &row->c[col];
	uint32_t keep =
	    c->pen & (PEN_PROTECTED | PEN_DWL | (3u << PEN_DHL_SHIFT));

	c->ch = in->chars[0];
	c->pen = keep;
	if (in->chars[0] != 0)
		comb_set(s, row, col, in->chars);
	c->pen |= in->attrs.bold ? PEN_BOLD : 0;
	c->pen |= (uint32_t)in->attrs.underline << PEN_UL_SHIFT;
	c->pen |= in->attrs.italic ? PEN_ITALIC : 0;
	c->pen |= in->attrs.blink ? PEN_BLINK : 0;
	c->pen |= (in->attrs.reverse ^ s->reverse) ? PEN_REVERSE : 0;
	c->pen |= in->attrs.strike ? PEN_STRIKE : 0;
	c->pen |= (uint32_t)in->attrs.font << PEN_FONT_SHIFT;
	c->fg = in->fg;
	c->bg = in->bg;
	if (in->width == 2 && col + 1 < s->cols) {
		row->c[col + 1].ch = WIDE_RIGHT;
		row->c[col + 1].pen &= ~PEN_COMB;
	}
}

/* Give row r to the scrollback callback. */
static void
push_row(struct screen *s, int r)
{
	for (int c = 0; c < s->cols; c++)
		cell_out(s, &s->cur[r], c, &s->line[c]);
	s->cbs->sb_pushline(s->cols, s->line, s->user);
}

/* Blank the cells of rect in the pen; selective spares protected cells. */
static void
erase_cells(struct screen *s, VTermRect rect, int selective)
{
	int rows, cols;

	vterm_get_size(s->vt, &rows, &cols);
	for (int r = rect.start_row; r < rows && r < rect.end_row; r++) {
		const VTermLineInfo *li = vterm_state_get_lineinfo(s->state, r);
		struct scell blank = s->pen;

		blank.ch = 0;
		blank.pen &= ~(PEN_DWL | (3u << PEN_DHL_SHIFT));
		blank.pen |= li->doublewidth ? PEN_DWL : 0;
		blank.pen |= (uint32_t)li->doubleheight << PEN_DHL_SHIFT;
		for (int c = rect.start_col; c < rect.end_col; c++) {
			struct scell *cell = &s->cur[r].c[c];
			if (selective && (cell->pen & PEN_PROTECTED) != 0)
				continue;
			*cell = blank;
		}
	}
}

/* Copy the cells of src to dest (same size), row by row as libvterm. */
static void
move_cells(struct screen *s, VTermRect dest, VTermRect src)
{
	int cols = src.end_col - src.start_col;
	int down = src.start_row - dest.start_row;
	int first = down < 0 ? dest.end_row - 1 : dest.start_row;
	int stop = down < 0 ? dest.start_row - 1 : dest.end_row;
	int step = down < 0 ? -1 : 1;

	for (int r = first; r != stop; r += step) {
		struct srow *to = &s->cur[r], *from = &s->cur[r + down];
		memmove(&to->c[dest.start_col], &from->c[src.start_col],
		    (size_t)cols * sizeof *to->c);
		if (from->comb == NULL)
			continue; /* the moved cells have no PEN_COMB */
		if (to->comb == NULL)
			to->comb = xcalloc((size_t)s->cols, sizeof *to->comb);
		memmove(&to->comb[dest.start_col], &from->comb[src.start_col],
		    (size_t)cols * sizeof *to->comb);
	}
}

/*
 * Rows start..end-1 move up by n (down when n < 0), whole rows: the rows
 * leaving are reused, blanked, for the rows coming in.
 */
static void
rotate_rows(struct screen *s, int start, int end, int n)
{
	struct srow small[8], *keep = small;
	int k = n > 0 ? n : -n, h = end - start - k;

	if (k > 8)
		keep = xreallocarray(NULL, (size_t)k, sizeof *keep);

	if (n > 0) {
		memcpy(keep, &s->cur[start], (size_t)k * sizeof *keep);
		memmove(&s->cur[start], &s->cur[start + k],
		    (size_t)h * sizeof *keep);
		memcpy(&s->cur[end - k], keep, (size_t)k * sizeof *keep);
	} else {
		memcpy(keep, &s->cur[end - k], (size_t)k * sizeof *keep);
		memmove(&s->cur[start + k], &s->cur[start],
		    (size_t)h * sizeof *keep);
		memcpy(&s->cur[start], keep, (size_t)k * sizeof *keep);
	}
	if (keep != small)
		free(keep);
}

/*
 * Scroll rect's cells by down rows and right columns, blanking what is
 * uncovered (libvterm's vterm_scroll_rect with the screen's moverect:
 * lines leaving row 0 of the primary screen, full width, go to the
 * scrollback first).
 */
static void
scroll_cells(struct screen *s, VTermRect rect, int down, int right)
{
	int h = rect.end_row - rect.start_row,
	    w = rect.end_col - rect.start_col;
	VTermRect uncovered = rect;

	if (abs(down) >= h || abs(right) >= w) {
		erase_cells(s, rect, 0);
		return;
	}
	if (right == 0 && rect.start_col == 0 && rect.end_col == s->cols) {
		if (down > 0 && rect.start_row == 0 && s->cur == s->buf[0] &&
		    s->cbs->sb_pushline != NULL)
			for (int r = 0; r < down; r++)
				push_row(s, r);
		if (down != 0)
			rotate_rows(s, rect.start_row, rect.end_row, down);
	} else {
		/* not full width: libvterm pushes nothing to the scrollback */
		VTermRect dest = rect, src = rect;
		if (right >= 0) {
			dest.end_col = rect.end_col - right;
			src.start_col = rect.start_col + right;
		} else {
			dest.start_col = rect.start_col - right;
			src.end_col = rect.end_col + right;
		}
		if (down >= 0) {
			dest.end_row = rect.end_row - down;
			src.start_row = rect.start_row + down;
		} else {
			dest.start_row = rect.start_row - down;
			src.end_row = rect.end_row + down;
		}
		move_cells(s, dest, src);
	}
	if (down > 0)
		uncovered.start_row = rect.end_row - down;
	else if (down < 0)
		uncovered.end_row = rect.start_row - down;
	if (right > 0)
		uncovered.start_col = rect.end_col - right;
	else if (right < 0)
		uncovered.end_col = rect.start_col - right;
	erase_cells(s, uncovered, 0);
}

/*
 * Cut rect to the screen; 0 if nothing is left. libvterm 0.1.4's state can
 * ask for rows past the bottom: DECRC puts back a cursor saved before the
 * screen shrank, unchecked, and the next insert there would be out of
 * bounds (its own screen then writes outside its buffer).
 */
static int
clip(const struct screen *s, VTermRect *rect)
{
	if (rect->start_row < 0)
		rect->start_row = 0;
	if (rect->start_col < 0)
		rect->start_col = 0;
	if (rect->end_row > s->rows)
		rect->end_row = s->rows;
	if (rect->end_col > s->cols)
		rect->end_col = s->cols;
	return rect->start_row < rect->end_row &&
	    rect->start_col < rect->end_col;
}

/* VTermState: a glyph at pos. */
static int
cb_putglyph(VTermGlyphInfo *info, VTermPos pos, void *user)
{
	struct screen *s = user;
	struct srow *row;
	struct scell *c;

	if (pos.row < 0 || pos.row >= s->rows || pos.col < 0 ||
	    pos.col >= s->cols)
		return 0;
	row = &s->cur[pos.row];
	c = &row->c[pos.col];
	if (info->chars[0] != 0) {
		*c = s->pen;
		c->ch = info->chars[0];
		comb_set(s, row, pos.col, info->chars);
	}
	for (int i = 1; i < info->width && pos.col + i < s->cols; i++) {
		row->c[pos.col + i].ch = WIDE_RIGHT;
		row->c[pos.col + i].pen &= ~PEN_COMB;
	}
	c->pen &= ~(PEN_PROTECTED | PEN_DWL | (3u << PEN_DHL_SHIFT));
	c->pen |= info->protected_cell ? PEN_PROTECTED : 0;
	c->pen |= info->dwl ? PEN_DWL : 0;
	c->pen |= (uint32_t)info->dhl << PEN_DHL_SHIFT;
	damage_cells(s, pos.row, pos.row + 1, pos.col, pos.col + info->width);
	return 1;
}

/* VTermState: the cursor moved (the caller's business). */
static int
cb_movecursor(VTermPos pos, VTermPos old, int visible, void *user)
{
	struct screen *s = user;

	if (s->cbs->movecursor != NULL)
		return s->cbs->movecursor(pos, old, visible, s->user);
	return 0;
}

/* VTermState: scroll a region. */
static int
cb_scrollrect(VTermRect rect, int down, int right, void *user)
{
	struct screen *s = user;

	if (!clip(s, &rect))
		return 1;
	scroll_cells(s, rect, down, right);
	damage_cells(
	    s, rect.start_row, rect.end_row, rect.start_col, rect.end_col);
	return 1;
}

/* VTermState: erase a region (selective: DECSED/DECSEL). */
static int
cb_erase(VTermRect rect, int selective, void *user)
{
	struct screen *s = user;

	if (!clip(s, &rect))
		return 1;
	erase_cells(s, rect, selective);
	damage_cells(
	    s, rect.start_row, rect.end_row, rect.start_col, rect.end_col);
	return 1;
}

/* VTermState: a pen attribute changed. */
static int
cb_setpenattr(VTermAttr attr, VTermValue *val, void *user)
{
	struct screen *s = user;
	uint32_t *p = &s->pen.pen;

#define PEN_FLAG(bit, on) (*p = (on) ? *p | (bit) : *p & ~(bit))
	switch (attr) {
	case VTERM_ATTR_BOLD:
		PEN_FLAG(PEN_BOLD, val->boolean);
		return 1;
	case VTERM_ATTR_UNDERLINE:
		*p = (*p & ~(3u << PEN_UL_SHIFT)) |
		    ((uint32_t)val->number & 3) << PEN_UL_SHIFT;
		return 1;
	case VTERM_ATTR_ITALIC:
		PEN_FLAG(PEN_ITALIC, val->boolean);
		return 1;
	case VTERM_ATTR_BLINK:
		PEN_FLAG(PEN_BLINK, val->boolean);
		return 1;
	case VTERM_ATTR_REVERSE:
		PEN_FLAG(PEN_REVERSE, val->boolean);
		return 1;
	case VTERM_ATTR_STRIKE:
		PEN_FLAG(PEN_STRIKE, val->boolean);
		return 1;
	case VTERM_ATTR_FONT:
		*p = (*p & ~(15u << PEN_FONT_SHIFT)) |
		    ((uint32_t)val->number & 15) << PEN_FONT_SHIFT;
		return 1;
	case VTERM_ATTR_FOREGROUND:
		s->pen.fg = val->color;
		return 1;
	case VTERM_ATTR_BACKGROUND:
		s->pen.bg = val->color;
		return 1;
	default:
		return 0;
	}
#undef PEN_FLAG
}

/* VTermState: a terminal property: the alternate screen and DECSCNM are
 * the screen's; all go on to the caller. */
static int
cb_settermprop(VTermProp prop, VTermValue *val, void *user)
{
	struct screen *s = user;

	switch (prop) {
	case VTERM_PROP_ALTSCREEN:
		s->cur = val->boolean ? s->buf[1] : s->buf[0];
		if (!val->boolean)
			damage(s, 0, s->rows);
		break;
	case VTERM_PROP_REVERSE:
		s->reverse = val->boolean;
		damage(s, 0, s->rows);
		break;
	default:
		break;
	}
	if (s->cbs->settermprop != NULL)
		return s->cbs->settermprop(prop, val, s->user);
	return 1;
}

/* VTermState: BEL. */
static int
cb_bell(void *user)
{
	struct screen *s = user;

	if (s->cbs->bell != NULL)
		return s->cbs->bell(s->user);
	return 0;
}

/* Is row r blank from col on? */
static int
row_blank(const struct screen *s, int r)
{
	for (int c = 0; c < s->cols; c++)
		if (s->cur[r].c[c].ch != 0)
			return 0;
	return 1;
}

/* A buffer resized to rows x cols: the top-left kept, new cells blank. */
static struct srow *
rows_resize(const struct screen *s, struct srow *b, int rows, int cols)
{
	struct srow *n = xcalloc((size_t)rows, sizeof *n);

	for (int r = 0; r < rows; r++) {
		if (r >= s->rows) {
			n[r].c =
			    xreallocarray(NULL, (size_t)cols, sizeof *n[r].c);
			pen_fill(s, n[r].c, 0, cols);
			continue;
		}
		n[r] = b[r];
		n[r].c = xreallocarray(n[r].c, (size_t)cols, sizeof *n[r].c);
		pen_fill(s, n[r].c, s->cols, cols);
		if (n[r].comb != NULL) {
			n[r].comb = xreallocarray(
			    n[r].comb, (size_t)cols, sizeof *n[r].comb);
			if (cols > s->cols)
				memset(&n[r].comb[s->cols], 0,
				    (size_t)(cols - s->cols) *
				        sizeof *n[r].comb);
		}
	}
	for (int r = rows; r < s->rows; r++) {
		free(b[r].c);
		free(b[r].comb);
	}
	free(b);
	return n;
}

/*
 * VTermState: the terminal is now rows x cols. As libvterm's screen: when
 * it shrinks, lines above the cursor that no longer fit go to the
 * scrollback (blank lines below the cursor are dropped first); when it
 * grows, lines come back from the scrollback. delta moves the cursor.
 */
static int
cb_resize(int rows, int cols, VTermPos *delta, void *user)
{
	struct screen *s = user;
	int alt = s->cur == s->buf[1];
	int old_rows = s->rows, old_cols = s->cols;

	if (!alt && rows < old_rows) {
		VTermPos cursor;
		int r;

		vterm_state_get_cursorpos(s->state, &cursor);
		for (r = old_rows - 1; r >= rows; r--)
			if (!row_blank(s, r) || cursor.row == r)
				break;
		if (r + 1 > rows) {
			VTermRect all = {0, old_rows, 0, old_cols};
			cb_scrollrect(all, r + 1 - rows, 0, s);
			delta->row -= r + 1 - rows;
			if (cursor.row + delta->row < 0)
				delta->row = -cursor.row; /* 0.1.4 lets it go
				                             negative */
		}
	}
	s->buf[0] = rows_resize(s, s->buf[0], rows, cols);
	s->buf[1] = rows_resize(s, s->buf[1], rows, cols);
	s->cur = alt ? s->buf[1] : s->buf[0];
	s->rows = rows;
	s->cols = cols;
	s->line = xreallocarray(s->line, (size_t)cols, sizeof *s->line);
	if (cols > old_cols)
		damage(s, 0, old_rows);
	if (rows > old_rows) {
		while (
		    !alt && rows - old_rows > 0 && s->cbs->sb_popline != NULL) {
			VTermRect all = {0, s->rows, 0, s->cols};
			if (!s->cbs->sb_popline(s->cols, s->line, s->user))
				break;
			cb_scrollrect(all, -1, 0, s);
			for (int c = 0; c < s->cols; c += s->line[c].width)
				cell_in(s, &s->cur[0], c, &s->line[c]);
			old_rows++;
			delta->row++;
		}
		damage(s, 0, rows);
	}
	if (s->cbs->resize != NULL)
		return s->cbs->resize(rows, cols, s->user);
	return 1;
}

/* VTermState: a line became double width or height (DECDWL, DECDHL). */
static int
cb_setlineinfo(
    int row, const VTermLineInfo *now, const VTermLineInfo *was, void *user)
{
	struct screen *s = user;

	if (row < 0 || row >= s->rows)
		return 0; /* can't happen: faint.c bounds the cursor */
	if (now->doublewidth == was->doublewidth &&
	    now->doubleheight == was->doubleheight)
		return 1;
	for (int c = 0; c < s->cols; c++) {
		uint32_t *p = &s->cur[row].c[c].pen;
		*p &= ~(PEN_DWL | (3u << PEN_DHL_SHIFT));
		*p |= now->doublewidth ? PEN_DWL : 0;
		*p |= (uint32_t)now->doubleheight << PEN_DHL_SHIFT;
	}
	damage(s, row, row + 1);
	if (now->doublewidth) {
		VTermRect right = {row, row + 1, s->cols / 2, s->cols};
		erase_cells(s, right, 0);
	}
	return 1;
}

static const VTermStateCallbacks state_cbs = {
    .putglyph = cb_putglyph,
    .movecursor = cb_movecursor,
    .scrollrect = cb_scrollrect,
    .erase = cb_erase,
    .setpenattr = cb_setpenattr,
    .settermprop = cb_settermprop,
    .bell = cb_bell,
    .resize = cb_resize,
    .setlineinfo = cb_setlineinfo,
};

/*
 * A screen for vt (its size now), calling cbs with user: damage (one band
 * of rows, at screen_flush), movecursor, settermprop, bell, resize,
 * sb_pushline and sb_popline; moverect is never called. The caller resets
 * it (screen_reset) before feeding bytes.
 */
struct screen *
screen_new(VTerm *vt, const VTermScreenCallbacks *cbs, void *user)
{
	struct screen *s = xcalloc(1, sizeof *s);

	s->vt = vt;
	s->state = vterm_obtain_state(vt);
	s->cbs = cbs;
	s->user = user;
	vterm_get_size(vt, &s->rows, &s->cols);
	s->buf[0] = rows_new(s, s->rows, s->cols);
	s->buf[1] = rows_new(s, s->rows, s->cols);
	s->cur = s->buf[0];
	s->line = xreallocarray(NULL, (size_t)s->cols, sizeof *s->line);
	vterm_state_set_callbacks(s->state, &state_cbs, s);
	return s;
}

/* Free the screen (not its VTerm). */
void
screen_free(struct screen *s)
{
	if (s == NULL)
		return;
	rows_free(s->buf[0], s->rows);
	rows_free(s->buf[1], s->rows);
	free(s->line);
	free(s);
}

/* Reset the terminal (hard: as at power-on) and report the damage. */
void
screen_reset(struct screen *s, int hard)
{
	vterm_state_reset(s->state, hard);
	screen_flush(s);
}

/* Report the rows changed since the last flush to the damage callback. */
void
screen_flush(struct screen *s)
{
	VTermRect rect;

	if (s->dmg_start == s->dmg_end)
		return;
	rect.start_row = s->dmg_start;
	rect.end_row = s->dmg_end;
	rect.start_col = s->dmg_col0;
	rect.end_col = s->dmg_col1;
	s->dmg_start = s->dmg_end = 0;
	if (s->cbs->damage != NULL)
		s->cbs->damage(rect, s->user);
}

/* The cell at pos as libvterm's screen would give it; 0 outside. */
int
screen_get_cell(const struct screen *s, VTermPos pos, VTermScreenCell *cell)
{
	if (pos.row < 0 || pos.row >= s->rows || pos.col < 0 ||
	    pos.col >= s->cols)
		return 0;
	cell_out(s, &s->cur[pos.row], pos.col, cell);
	return 1;
}
