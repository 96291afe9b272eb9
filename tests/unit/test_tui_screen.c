/*
 * test_tui_screen.c: tui/screen.c against libvterm's own screen. Two
 * VTerms of the same size, one with VTermScreen and one with screen.c,
 * are fed the same bytes (random mixes of text, wide and combining
 * characters, colours, cursor moves, erases, inserts and deletes, scroll
 * regions with and without left/right margins, the alternate screen,
 * DECSCNM, double-width lines, protected cells, resizes) in the same
 * chunks; after every chunk every cell, the cursor and every line either
 * pushed to its scrollback must be equal.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "tui/tui.h"
#include "unit.h"

#define SB_MAX 4096

/* One side: a VTerm, its screen, and its scrollback as pushed lines. */
struct side {
	VTerm *vt;
	VTermScreen *vs;  /* libvterm's, or NULL */
	struct screen *s; /* ours, or NULL */
	VTermScreenCell *sb[SB_MAX];
	int sb_cols[SB_MAX];
	int nsb, pushed;
	struct feed feed; /* as a pane feeds libvterm */
};

static int
push(int cols, const VTermScreenCell *cells, void *user)
{
	struct side *d = user;

	d->pushed++;
	if (d->nsb == SB_MAX) { /* keep the newest */
		free(d->sb[0]);
		memmove(d->sb, d->sb + 1, (SB_MAX - 1) * sizeof d->sb[0]);
		memmove(d->sb_cols, d->sb_cols + 1,
		    (SB_MAX - 1) * sizeof d->sb_cols[0]);
		d->nsb--;
	}
	d->sb[d->nsb] = xreallocarray(NULL, (size_t)cols, sizeof *cells);
	memcpy(d->sb[d->nsb], cells, (size_t)cols * sizeof *cells);
	d->sb_cols[d->nsb++] = cols;
	return 1;
}

/* A line back for a taller screen: as sb.c, cut or padded to cols. */
static int
pop(int cols, VTermScreenCell *cells, void *user)
{
	struct side *d = user;
	VTermScreenCell *l;
	int n;

	if (d->nsb == 0)
		return 0;
	l = d->sb[--d->nsb];
	n = d->sb_cols[d->nsb];
	for (int c = 0; c < cols; c++) {
		if (c < n) {
			cells[c] = l[c];
		} else {
			memset(&cells[c], 0, sizeof cells[c]);
			cells[c].width = 1;
			cells[c].fg.type = VTERM_COLOR_DEFAULT_FG;
			cells[c].bg.type = VTERM_COLOR_DEFAULT_BG;
		}
	}
	if (cells[cols - 1].width == 2)
		cells[cols - 1].width = 1;
	free(l);
	return 1;
}

static const VTermScreenCallbacks side_cbs = {
    .sb_pushline = push,
    .sb_popline = pop,
};

static void
side_new(struct side *d, int ours, int rows, int cols)
{
	memset(d, 0, sizeof *d);
	d->vt = vterm_new(rows, cols);
	vterm_set_utf8(d->vt, 1);
	feed_init(&d->feed, d->vt);
	if (ours) {
		d->s = screen_new(d->vt, &side_cbs, d);
		screen_reset(d->s, 1);
	} else {
		d->vs = vterm_obtain_screen(d->vt);
		vterm_screen_enable_altscreen(d->vs, 1);
		vterm_screen_set_callbacks(d->vs, &side_cbs, d);
		vterm_screen_set_damage_merge(d->vs, VTERM_DAMAGE_SCROLL);
		vterm_screen_reset(d->vs, 1);
	}
}

static void
side_free(struct side *d)
{
	screen_free(d->s);
	feed_free(&d->feed);
	vterm_free(d->vt);
	for (int i = 0; i < d->nsb; i++)
		free(d->sb[i]);
}

static void
side_feed(struct side *d, const char *b, size_t n)
{
	feed_write(&d->feed, (const uint8_t *)b, n);
	if (d->s != NULL)
		screen_flush(d->s);
	else
		vterm_screen_flush_damage(d->vs);
}

static void
side_puts(struct side *d, const char *s)
{
	side_feed(d, s, strlen(s));
}

static int
side_cell(struct side *d, int row, int col, VTermScreenCell *c)
{
	VTermPos pos = {row, col};

	memset(c, 0, sizeof *c);
	if (d->s != NULL)
		return screen_get_cell(d->s, pos, c);
	return vterm_screen_get_cell(d->vs, pos, c);
}

static int
colour_eq(const VTermColor *a, const VTermColor *b)
{
	if (a->type != b->type)
		return 0;
	if (VTERM_COLOR_IS_INDEXED(a))
		return a->indexed.idx == b->indexed.idx;
	return a->rgb.red == b->rgb.red && a->rgb.green == b->rgb.green &&
	    a->rgb.blue == b->rgb.blue;
}

/* Do two cells show the same? Sets why when not. */
static int
cell_eq(const VTermScreenCell *a, const VTermScreenCell *b, const char **why)
{
	*why = "chars";
	if (a->chars[0] != b->chars[0])
		return 0;
	if (a->chars[0] != 0 && a->chars[0] != (uint32_t)-1)
		for (int i = 1; i < VTERM_MAX_CHARS_PER_CELL; i++) {
			if (a->chars[i] != b->chars[i])
				return 0;
			if (a->chars[i] == 0)
				break;
		}
	*why = "width";
	if (a->width != b->width)
		return 0;
	*why = "attrs";
	if (a->attrs.bold != b->attrs.bold ||
	    a->attrs.underline != b->attrs.underline ||
	    a->attrs.italic != b->attrs.italic ||
	    a->attrs.blink != b->attrs.blink ||
	    a->attrs.reverse != b->attrs.reverse ||
	    a->attrs.strike != b->attrs.strike ||
	    a->attrs.font != b->attrs.font || a->attrs.dwl != b->attrs.dwl ||
	    a->attrs.dhl != b->attrs.dhl)
		return 0;
	*why = "colours";
	return colour_eq(&a->fg, &b->fg) && colour_eq(&a->bg, &b->bg);
}

/* Are both sides equal? 0, or fails the test saying where. */
static int
sides_differ(struct side *a, struct side *b, int step)
{
	int rows, cols, rows2, cols2;
	VTermPos pa, pb;
	VTermScreenCell ca, cb;
	const char *why;

	vterm_get_size(a->vt, &rows, &cols);
	vterm_get_size(b->vt, &rows2, &cols2);
	if (rows != rows2 || cols != cols2) {
		unit_fail(__FILE__, __LINE__, "step %d: sizes differ", step);
		return 1;
	}
	for (int r = 0; r < rows; r++)
		for (int c = 0; c < cols; c++) {
			side_cell(a, r, c, &ca);
			side_cell(b, r, c, &cb);
			if (!cell_eq(&ca, &cb, &why)) {
				unit_fail(__FILE__, __LINE__,
				    "step %d: cell %d,%d: %s differ (libvterm "
				    "U+%X w%d, ours U+%X w%d)",
				    step, r, c, why, ca.chars[0], ca.width,
				    cb.chars[0], cb.width);
				return 1;
			}
		}
	vterm_state_get_cursorpos(vterm_obtain_state(a->vt), &pa);
	vterm_state_get_cursorpos(vterm_obtain_state(b->vt), &pb);
	if (pa.row != pb.row || pa.col != pb.col) {
		unit_fail(__FILE__, __LINE__,
		    "step %d: cursor %d,%d against %d,%d", step, pa.row, pa.col,
		    pb.row, pb.col);
		return 1;
	}
	if (a->pushed != b->pushed || a->nsb != b->nsb) {
		unit_fail(__FILE__, __LINE__,
		    "step %d: scrollback %d lines (%d kept) against %d (%d)",
		    step, a->pushed, a->nsb, b->pushed, b->nsb);
		return 1;
	}
	for (int i = 0; i < a->nsb; i++) {
		if (a->sb_cols[i] != b->sb_cols[i]) {
			unit_fail(__FILE__, __LINE__,
			    "step %d: scrollback line %d width", step, i);
			return 1;
		}
		for (int c = 0; c < a->sb_cols[i]; c++)
			if (!cell_eq(&a->sb[i][c], &b->sb[i][c], &why)) {
				unit_fail(__FILE__, __LINE__,
				    "step %d: scrollback line %d col %d: %s",
				    step, i, c, why);
				return 1;
			}
	}
	return 0;
}

static unsigned rng;

static unsigned
rnd(unsigned n)
{
	rng = rng * 1103515245u + 12345u;
	return ((rng >> 8) & 0xffffff) % n;
}

/* Append printf output to buf at *len. */
static void
put(char *buf, size_t *len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	*len += (size_t)vsnprintf(buf + *len, 256, fmt, ap);
	va_end(ap);
}

/*
 * One random piece of terminal output into buf at *len; margins: left and
 * right margins and double-width lines too (not across resizes:
 * libvterm's own screen writes outside its buffer when the cursor or a
 * margin is past a double-width line's half or a narrower screen's edge,
 * where ours clips; fuzz/fuzz_screen.c covers ours there).
 */
static void
piece(char *buf, size_t *len, int rows, int cols, int margins)
{
	static const char *words[] = {"alpha", "b", "gamma delta", "x y z",
	    "\xe4\xb8\xad\xe6\x96\x87", "e\xcc\x81", "a\xcc\x81\xcc\x82",
	    "\xf0\x9f\x98\x80", "\t", "\r", "\n", "\r\n", "\b", "\x1bM",
	    "\x1b"
	    "D",
	    "\x1b"
	    "E",
	    "\x1b#8", "\x1b#6", "\x1b#3", "\x1b#4", "\x1b#5", "\x1b[1\"q",
	    "\x1b[0\"q", "\x1b[?J", "\x1b[?1K", "\x1b[?5h", "\x1b[?5l",
	    "\x1b[?1049h", "\x1b[?1049l", "\x1b[?47h", "\x1b[?47l", "\x1b[?7l",
	    "\x1b[?7h", "\x1b[4h", "\x1b[4l", "\x1b[?6h", "\x1b[?6l",
	    "\x1b[?69h", "\x1b[?69l", "\x1b[r", "\x1b[s",
	    "\x1b"
	    "7",
	    "\x1b"
	    "8",
	    "\x1b[0m", "\x1b[1;4;7m", "\x1b[3;5;9m", "\x1b[21m", "\x1b[11m",
	    "\x1b[2m", "\x1b[38;2;10;200;30m", "\x1b[48;5;123m", "\x1b[31;42m",
	    "\x1b[39;49m", "\x1b[97;100m"};
	static const char csi[] = "ABCDEFGJKLMPSTX@`adeIZ";
	unsigned k = rnd(10);

	if (k < 4) {
		const char *w = words[rnd(sizeof words / sizeof *words)];
		if (!margins && w[0] == '\x1b' && w[1] == '#' && w[2] != '8' &&
		    w[2] != '5')
			w = "\r"; /* double-width lines: as margins, above */
		put(buf, len, "%s", w);
	} else if (k < 6) {
		put(buf, len, "\x1b[%u%c", rnd(5), csi[rnd(sizeof csi - 1)]);
	} else if (k == 6) {
		put(buf, len, "\x1b[%u;%uH", rnd((unsigned)rows + 2),
		    rnd((unsigned)cols + 2));
	} else if (k == 7) {
		unsigned t = rnd((unsigned)rows) + 1;
		put(buf, len, "\x1b[%u;%ur", t, t + rnd((unsigned)rows));
	} else if (k == 8 && !margins) {
		put(buf, len, "\x1b[%uG", rnd((unsigned)cols + 2));
	} else if (k == 8) {
		unsigned l = rnd((unsigned)cols) + 1;
		put(buf, len, "\x1b[%u;%us", l, l + rnd((unsigned)cols));
	} else {
		put(buf, len, "\x1b[%uJ\x1b[%uK", rnd(4), rnd(3));
	}
}

/* seeds x steps random pieces, with resizes between some chunks. */
static void
compare_random(unsigned seeds, int steps, int resize)
{
	for (unsigned seed = 1; seed <= seeds; seed++) {
		static struct side a, b; /* large: not on the stack */
		int rows = 3 + (int)(seed % 9), cols = 5 + (int)(seed * 7 % 40);
		char buf[64 * 1024];

		rng = seed;
		side_new(&a, 0, rows, cols);
		side_new(&b, 1, rows, cols);
		for (int step = 0; step < steps; step++) {
			size_t len = 0, off = 0;
			int n = 1 + (int)rnd(40);
			for (int i = 0; i < n; i++)
				piece(buf, &len, rows, cols, !resize);
			while (off < len) { /* chunks split anywhere */
				size_t m = 1 + rnd((unsigned)(len - off));
				side_feed(&a, buf + off, m);
				side_feed(&b, buf + off, m);
				off += m;
			}
			if (resize && rnd(8) == 0) {
				rows = 1 + (int)rnd(14);
				cols = 2 + (int)rnd(50);
				feed_resize(&a.feed, rows, cols);
				vterm_screen_flush_damage(a.vs);
				feed_resize(&b.feed, rows, cols);
				screen_flush(b.s);
			}
			if (sides_differ(&a, &b, step)) {
				fprintf(stderr, "seed %u\n", seed);
				side_free(&a);
				side_free(&b);
				return;
			}
		}
		side_free(&a);
		side_free(&b);
	}
}

TEST(screen_equals_libvterm_on_text_and_scrolling)
{
	static struct side a, b;
	char line[64];

	side_new(&a, 0, 5, 20);
	side_new(&b, 1, 5, 20);
	for (int i = 0; i < 50; i++) {
		int n = snprintf(line, sizeof line,
		    "\x1b[3%dmline %d \xe4\xb8\xad e\xcc\x81\r\n", i % 8, i);
		side_feed(&a, line, (size_t)n);
		side_feed(&b, line, (size_t)n);
	}
	CHECK(!sides_differ(&a, &b, 0));
	CHECK_INT(b.pushed, 46); /* 50 lines and the cursor's on 5 rows */
	side_free(&a);
	side_free(&b);
}

TEST(screen_equals_libvterm_on_random_output)
{
	compare_random(120, 60, 0);
}

TEST(screen_equals_libvterm_across_resizes)
{
	compare_random(120, 60, 1);
}

/* The text of row r of our side, trailing blanks cut. */
static void
row_text(struct side *d, int r, char *out, int n)
{
	VTermScreenCell c;
	int len = 0, cols, rows;

	vterm_get_size(d->vt, &rows, &cols);
	for (int col = 0; col < cols && len < n - 1; col++) {
		side_cell(d, r, col, &c);
		out[len++] = c.chars[0] > 0 && c.chars[0] < 0x7f
		    ? (char)c.chars[0]
		    : ' ';
	}
	while (len > 0 && out[len - 1] == ' ')
		len--;
	out[len] = '\0';
}

static void
resize(struct side *d, int rows, int cols)
{
	feed_resize(&d->feed, rows, cols);
	screen_flush(d->s);
}

TEST(screen_resize_shorter_than_a_scroll_region_does_not_crash)
{
	static struct side b;
	VTermPos pos;

	side_new(&b, 1, 10, 20);
	side_puts(&b, "\x1b[8;10r\x1b[5;3Hx");
	resize(&b, 4, 20); /* the region's top is past the bottom */
	vterm_state_get_cursorpos(vterm_obtain_state(b.vt), &pos);
	CHECK_INT(pos.row, 3); /* libvterm moved it up; it stays there */
	CHECK_INT(pos.col, 3);
	side_puts(&b, "\n\n\n\x1b[2S\x1bM"); /* crashed libvterm */
	vterm_state_get_cursorpos(vterm_obtain_state(b.vt), &pos);
	CHECK_INT(pos.row, 2);
	side_free(&b);
}

/* ESC 8 brings back a cursor saved below a screen since shrunk, also with
 * a NUL or a line feed inside the sequence: bounded before DECDWL. */
TEST(screen_esc8_past_the_bottom_is_bounded)
{
	static const struct {
		const char *s;
		size_t len;
	} restores[] = {
	    {"\0338", 2}, {"\033\0008", 3}, {"\033\n8", 3}, {"\033\1778", 3}};

	for (size_t i = 0; i < nitems(restores); i++) {
		static struct side b;
		VTermPos pos;
		side_new(&b, 1, 10, 20);
		side_puts(&b, "\033[10;1H\0337");
		resize(&b, 3, 20);
		side_feed(&b, restores[i].s, restores[i].len);
		vterm_state_get_cursorpos(vterm_obtain_state(b.vt), &pos);
		CHECK(pos.row < 3);
		side_puts(&b, "\033#6\033[1J\033[2@x");
		side_free(&b);
	}
}

/* The scroll region's reset leaves the screen as it was: no stray text,
 * an OSC split around it is not cut, the cursor goes back where it was
 * (with DECOM and left/right margins too). */
TEST(screen_region_reset_is_invisible)
{
	static struct side b;
	char row[64];
	VTermPos pos;

	side_new(&b, 1, 10, 20);
	side_puts(&b, "\033[9;10r\033[10;1Hbottom\033[1;1Htop");
	resize(&b, 5, 20); /* the cursor would go above the top */
	row_text(&b, 0, row, sizeof row);
	CHECK_STR(row, "");
	row_text(&b, 4, row, sizeof row);
	CHECK_STR(row, "bottom");
	side_free(&b);

	side_new(&b, 1, 10, 20);
	side_puts(&b, "\033[9;10r\033[2;2H\033]2;my ti");
	resize(&b, 5, 20);
	side_puts(&b, "tle\007X");
	row_text(&b, 1, row, sizeof row);
	CHECK_STR(row, " X");
	side_free(&b);

	side_new(&b, 1, 10, 20);
	side_puts(&b, "\033[9;10r\033[?69h\033[4;10s\033[?6h\033[2;3Hab");
	resize(&b, 5, 20);
	vterm_state_get_cursorpos(vterm_obtain_state(b.vt), &pos);
	side_puts(&b, "X");
	row_text(&b, pos.row, row, sizeof row);
	CHECK_STR(row, "     abX");
	side_free(&b);
}

/* Bytes that crashed or hung libvterm 0.1.4 through its state: a CSI of
 * 20 parameters, a REP before any glyph and after a zero-width one. */
TEST(screen_survives_what_broke_libvterm)
{
	static struct side b;
	char row[64];

	side_new(&b, 1, 5, 30);
	side_puts(&b, "\033[20;b\xe2\x80\x8b\033[9b\r\n\xcc\x81\033[3b\r\n");
	side_puts(&b, "\033[1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1mok");
	row_text(&b, 2, row, sizeof row);
	CHECK_STR(row, "ok");
	side_free(&b);
}

/* A shrink with text below the cursor keeps the cursor on the screen
 * (libvterm 0.1.4 let it go to a negative row; the next erase wrote
 * before its line table); a terminal reset in the middle of a long CSI
 * leaves nothing of it open; a resize in the middle of a sequence or a
 * UTF-8 character cuts nothing in two. */
TEST(screen_resize_and_reset_leave_nothing_open)
{
	static struct side b;
	char row[64];
	VTermPos pos;

	side_new(&b, 1, 10, 20);
	side_puts(&b, "\033[10;1Hx\033[1;1H");
	resize(&b, 4, 20);
	vterm_state_get_cursorpos(vterm_obtain_state(b.vt), &pos);
	CHECK(pos.row >= 0);
	side_puts(&b, "\033[J\033[1J");
	side_free(&b);

	side_new(&b, 1, 5, 20);
	side_puts(&b,
	    "\033[00000000000000000000000000000000000000000000000000"
	    "000000000000000000");
	screen_reset(b.s, 1);
	feed_reset(&b.feed);
	side_puts(&b, ";1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1mok");
	row_text(&b, 0, row, sizeof row);
	CHECK_STR(row, ";1;1;1;1;1;1;1;1;1;1"); /* text: the CSI is gone */
	side_free(&b);

	side_new(&b, 1, 10, 20);
	side_puts(&b, "\033[9;10r\033[10;1H\033[3");
	resize(&b, 5, 20);
	side_puts(&b, "1mred\033[5;1H\xc3");
	resize(&b, 3, 20);
	side_puts(&b, "\xa9\n\033D\033[S");
	side_free(&b);
}

static int dmg_start = -1, dmg_end = -1, dmg_col0, dmg_col1, dmg_calls;
static int cursor_row;

static int
rec_damage(VTermRect rect, void *user)
{
	(void)user;
	dmg_start = rect.start_row;
	dmg_end = rect.end_row;
	dmg_col0 = rect.start_col;
	dmg_col1 = rect.end_col;
	dmg_calls++;
	return 1;
}

static int
rec_cursor(VTermPos pos, VTermPos old, int visible, void *user)
{
	(void)old;
	(void)visible;
	(void)user;
	cursor_row = pos.row;
	return 1;
}

TEST(screen_reports_damage_once_a_flush_and_the_cursor)
{
	static const VTermScreenCallbacks cbs = {
	    .damage = rec_damage, .movecursor = rec_cursor};
	VTerm *vt = vterm_new(10, 20);
	struct screen *s;

	vterm_set_utf8(vt, 1);
	s = screen_new(vt, &cbs, NULL);
	screen_reset(s, 1);
	dmg_calls = 0;
	vterm_input_write(vt, "\x1b[3;1Hab\x1b[5;1Hcd", 16);
	CHECK_INT(dmg_calls, 0); /* nothing until the flush */
	screen_flush(s);
	CHECK_INT(dmg_calls, 1);
	CHECK_INT(dmg_start, 2); /* rows 3 to 5, one band */
	CHECK_INT(dmg_end, 5);
	CHECK_INT(cursor_row, 4);
	CHECK_INT(dmg_col0, 0); /* "ab" and "cd": columns 1 and 2 */
	CHECK_INT(dmg_col1, 2);
	screen_flush(s);
	CHECK_INT(dmg_calls, 1);
	screen_free(s);
	vterm_free(vt);
}

/* A key's echo damages its cell, a wide glyph its two, an erase its span. */
TEST(screen_damage_spans_only_the_columns_written)
{
	static const VTermScreenCallbacks cbs = {.damage = rec_damage};
	VTerm *vt = vterm_new(10, 20);
	struct screen *s;

	vterm_set_utf8(vt, 1);
	s = screen_new(vt, &cbs, NULL);
	screen_reset(s, 1);
	vterm_input_write(vt, "\x1b[2;8HZ", 8);
	screen_flush(s);
	CHECK_INT(dmg_start, 1);
	CHECK_INT(dmg_end, 2);
	CHECK_INT(dmg_col0, 7);
	CHECK_INT(dmg_col1, 8);
	vterm_input_write(vt, "\xe4\xb8\xad", 3); /* a wide glyph at column 9 */
	screen_flush(s);
	CHECK_INT(dmg_col0, 8);
	CHECK_INT(dmg_col1, 10);
	vterm_input_write(vt, "\b\x1b[K", 4); /* erase to the end of the line */
	screen_flush(s);
	CHECK_INT(dmg_col0, 9);
	CHECK_INT(dmg_col1, 20);
	vterm_input_write(vt, "\x1b[2J", 4); /* the whole screen */
	screen_flush(s);
	CHECK_INT(dmg_start, 0);
	CHECK_INT(dmg_end, 10);
	CHECK_INT(dmg_col0, 0);
	CHECK_INT(dmg_col1, 20);
	screen_free(s);
	vterm_free(vt);
}
