/*
 * test_tui_sb.c: scrollback storage (sb.c) and copy mode's text search
 * (search.c). Lines come from a real libvterm: bytes scroll off the top of
 * a small screen into sb_pushline, and must decode to exactly the cells
 * they had.
 */
#include <stdlib.h>
#include <string.h>

#include "tui/tui.h"
#include "unit.h"

#define COLS 20

/* A screen whose pushed lines are kept raw (the reference) and in sb. */
struct rig {
	VTerm *vt;
	struct sb *sb;
	VTermScreenCell raw[64][COLS];
	int nraw;
};

/* sb_pushline: keep both. */
static int
rig_push(int cols, const VTermScreenCell *cells, void *user)
{
	struct rig *r = user;

	if (r->nraw < 64)
		memcpy(r->raw[r->nraw++], cells, sizeof r->raw[0]);
	sb_push(r->sb, cells, cols);
	return 1;
}

static const VTermScreenCallbacks rig_cbs = {.sb_pushline = rig_push};

/* A 3-row screen fed bytes, then scrolled until everything left it. */
static void
rig_run(struct rig *r, const char *bytes)
{
	VTermScreen *vs;

	memset(r, 0, sizeof *r);
	r->sb = sb_new(1 << 20);
	r->vt = vterm_new(3, COLS);
	vterm_set_utf8(r->vt, 1);
	vs = vterm_obtain_screen(r->vt);
	vterm_screen_set_callbacks(vs, &rig_cbs, r);
	vterm_screen_reset(vs, 1);
	vterm_input_write(r->vt, bytes, strlen(bytes));
	vterm_input_write(r->vt, "\033[0m\r\n\r\n\r\n", 10);
}

static void
rig_free(struct rig *r)
{
	vterm_free(r->vt);
	sb_free(r->sb);
}

/* The characters of a cell are the same (up to the terminating 0); a
 * space and a blank are the same on screen and trimmed alike. */
static int
chars_eq(const VTermScreenCell *a, const VTermScreenCell *b)
{
	uint32_t a0 = a->chars[0] == ' ' && a->chars[1] == 0 ? 0 : a->chars[0];
	uint32_t b0 = b->chars[0] == ' ' && b->chars[1] == 0 ? 0 : b->chars[0];

	if (a0 != b0)
		return 0;
	for (int i = 1; a0 != 0 && i < VTERM_MAX_CHARS_PER_CELL; i++) {
		if (a->chars[i] != b->chars[i])
			return 0;
		if (a->chars[i] == 0)
			break;
	}
	return 1;
}

/* Two cells look the same on screen (every field that is drawn). */
static int
cell_eq(const VTermScreenCell *a, const VTermScreenCell *b)
{
	if (a->chars[0] == (uint32_t)-1 || b->chars[0] == (uint32_t)-1)
		return a->chars[0] == b->chars[0];
	if (!chars_eq(a, b) || a->width != b->width ||
	    a->attrs.bold != b->attrs.bold ||
	    a->attrs.underline != b->attrs.underline ||
	    a->attrs.italic != b->attrs.italic ||
	    a->attrs.blink != b->attrs.blink ||
	    a->attrs.reverse != b->attrs.reverse ||
	    a->attrs.strike != b->attrs.strike ||
	    a->attrs.font != b->attrs.font)
		return 0;
	return memcmp(&a->fg, &b->fg, sizeof a->fg) == 0 &&
	    memcmp(&a->bg, &b->bg, sizeof a->bg) == 0;
}

/* Every pushed line decodes to its cells. */
static int
rig_round_trips(struct rig *r)
{
	VTermScreenCell got[COLS];

	if ((int)sb_count(r->sb) != r->nraw)
		return 0;
	for (int i = 0; i < r->nraw; i++) {
		if (sb_line(r->sb, (size_t)(r->nraw - 1 - i), got, COLS) !=
		    COLS)
			return 0;
		for (int c = 0; c < COLS; c++)
			if (!cell_eq(&got[c], &r->raw[i][c])) {
				fprintf(stderr,
				    "line %d col %d differs: got %x w%d fg%02x "
				    "bg%02x/%d, want %x w%d fg%02x bg%02x/%d\n",
				    i, c, got[c].chars[0], got[c].width,
				    got[c].fg.type, got[c].bg.type,
				    got[c].bg.indexed.idx,
				    r->raw[i][c].chars[0], r->raw[i][c].width,
				    r->raw[i][c].fg.type, r->raw[i][c].bg.type,
				    r->raw[i][c].bg.indexed.idx);
				return 0;
			}
	}
	return 1;
}

TEST(plain_text_round_trips)
{
	struct rig r;

	rig_run(&r, "hello\r\nworld  with  gaps\r\n\r\nlast");
	CHECK_INT(r.nraw, 4);
	CHECK(rig_round_trips(&r));
	rig_free(&r);
}

TEST(colours_and_attributes_round_trip)
{
	struct rig r;

	rig_run(&r,
	    "\033[1mB\033[4mU\033[3mI\033[5mK\033[7mR\033[9mS\033[0m "
	    "\033[4:2md\033[0m\033[11mf\033[10m\r\n"
	    "\033[31mr\033[38;5;200mp\033[38;2;1;2;3mt\033[44mb"
	    "\033[48;2;9;8;7mg\033[0m\r\n"
	    "\033[42m   \033[0m mid-blanks keep their background");
	CHECK(rig_round_trips(&r));
	rig_free(&r);
}

TEST(wide_and_combining_characters_round_trip)
{
	struct rig r;

	/* a wide glyph at the last column wraps; combining marks stay */
	rig_run(&r,
	    "a\xe4\xb8\xad"
	    "b e\xcc\x81\xcc\xa3 x\r\n"
	    "0123456789012345678\xe4\xb8\xad\r\n"
	    "\xf0\x9f\x98\x80 emoji");
	CHECK(rig_round_trips(&r));
	rig_free(&r);
}

TEST(blank_line_and_trailing_blanks_are_trimmed)
{
	struct sb *sb = sb_new(1 << 20);
	VTermScreenCell cells[COLS], got[COLS];

	memset(cells, 0, sizeof cells);
	for (int c = 0; c < COLS; c++) {
		cells[c].width = 1;
		cells[c].fg.type = VTERM_COLOR_DEFAULT_FG;
		cells[c].bg.type = VTERM_COLOR_DEFAULT_BG;
	}
	sb_push(sb, cells, COLS);
	cells[0].chars[0] = 'x';
	sb_push(sb, cells, COLS);
	/* a blank line costs its header and the ring's overhead only */
	CHECK(sb_bytes(sb) < 2 * 64);
	CHECK_INT(sb_line(sb, 0, got, COLS), COLS);
	CHECK(got[0].chars[0] == 'x' && got[1].chars[0] == 0);
	CHECK(VTERM_COLOR_IS_DEFAULT_BG(&got[COLS - 1].bg));
	CHECK_INT(sb_line(sb, 1, got, COLS), COLS);
	CHECK(got[0].chars[0] == 0);
	CHECK_INT(sb_line(sb, 2, got, COLS), -1);
	sb_free(sb);
}

/* A line of n 'x' characters, width COLS. */
static void
line_of(VTermScreenCell *cells, char ch, int n)
{
	memset(cells, 0, COLS * sizeof *cells);
	for (int c = 0; c < COLS; c++) {
		cells[c].width = 1;
		cells[c].fg.type = VTERM_COLOR_DEFAULT_FG;
		cells[c].bg.type = VTERM_COLOR_DEFAULT_BG;
		if (c < n)
			cells[c].chars[0] = (uint32_t)ch;
	}
}

TEST(eviction_by_bytes_keeps_the_newest)
{
	struct sb *sb = sb_new(4096);
	VTermScreenCell cells[COLS], got[COLS];

	for (int i = 0; i < 1000; i++) {
		line_of(cells, (char)('a' + i % 26), 1 + i % COLS);
		sb_push(sb, cells, COLS);
		CHECK(sb_bytes(sb) <= 4096);
	}
	CHECK(sb_count(sb) > 20 && sb_count(sb) < 1000);
	CHECK_INT(sb_line(sb, 0, got, COLS), COLS);
	CHECK(got[0].chars[0] == (uint32_t)('a' + 999 % 26));
	CHECK(got[COLS - 1].chars[0] == (uint32_t)('a' + 999 % 26));
	/* the oldest kept is the right one */
	CHECK(sb_line(sb, sb_count(sb) - 1, got, COLS) == COLS);
	CHECK(got[0].chars[0] ==
	    (uint32_t)('a' + (1000 - (int)sb_count(sb)) % 26));
	/* shrinking evicts at once */
	sb_set_max(sb, 1024);
	CHECK(sb_bytes(sb) <= 1024);
	CHECK_INT(sb_max(sb), 1024);
	sb_clear(sb);
	CHECK_INT(sb_count(sb), 0);
	CHECK_INT(sb_bytes(sb), 0);
	sb_free(sb);
}

TEST(a_line_over_the_limit_is_still_kept)
{
	struct sb *sb = sb_new(16);
	VTermScreenCell cells[COLS];

	line_of(cells, 'z', COLS);
	sb_push(sb, cells, COLS);
	sb_push(sb, cells, COLS);
	CHECK_INT(sb_count(sb), 1);
	sb_free(sb);
}

TEST(pop_returns_the_newest_padded_or_cut)
{
	struct sb *sb = sb_new(1 << 20);
	VTermScreenCell cells[COLS], wide[COLS + 10], narrow[5];

	line_of(cells, 'o', 3);
	sb_push(sb, cells, COLS);
	line_of(cells, 'n', COLS);
	sb_push(sb, cells, COLS);
	CHECK_INT(sb_pop(sb, narrow, 5), 1);
	CHECK(narrow[4].chars[0] == 'n');
	CHECK_INT(sb_pop(sb, wide, COLS + 10), 1);
	CHECK(wide[2].chars[0] == 'o' && wide[3].chars[0] == 0);
	CHECK(wide[COLS + 9].chars[0] == 0 && wide[COLS + 9].width == 1);
	CHECK_INT(sb_pop(sb, wide, COLS), 0);
	CHECK_INT(sb_bytes(sb), 0);
	sb_free(sb);
}

TEST(storage_is_compact)
{
	struct sb *sb = sb_new(64u << 20);
	VTermScreenCell cells[80];

	memset(cells, 0, sizeof cells);
	for (int c = 0; c < 80; c++) {
		cells[c].width = 1;
		cells[c].chars[0] = (uint32_t)('!' + c % 90);
		cells[c].fg.type = VTERM_COLOR_DEFAULT_FG;
		cells[c].bg.type = VTERM_COLOR_DEFAULT_BG;
	}
	for (int i = 0; i < 10000; i++)
		sb_push(sb, cells, 80);
	/* under 10% of libvterm's own cells for the same lines */
	CHECK(sb_bytes(sb) < 10000 * 80 * sizeof(VTermScreenCell) / 10);
	fprintf(
	    stderr, "  80-column text line: %zu bytes\n", sb_bytes(sb) / 10000);
	sb_free(sb);
}

/* Cells for text (ASCII, one per column), blanks after its end. */
static void
cells_of(VTermScreenCell *cells, int n, const char *s)
{
	int len = (int)strlen(s);

	memset(cells, 0, (size_t)n * sizeof *cells);
	for (int i = 0; i < n; i++) {
		cells[i].width = 1;
		if (i < len && s[i] != ' ')
			cells[i].chars[0] = (unsigned char)s[i];
	}
}

TEST(search_forward_back_and_smart_case)
{
	VTermScreenCell cells[COLS];
	struct line_text lt = {0};

	cells_of(cells, COLS, "foo Bar foo bar");
	line_text_from_cells(&lt, cells, COLS);
	CHECK_STR(lt.s, "foo Bar foo bar");
	CHECK_INT(line_text_find(&lt, "foo", -1, 1), 0);
	CHECK_INT(line_text_find(&lt, "foo", 0, 1), 8);
	CHECK_INT(line_text_find(&lt, "foo", 8, 1), -1);
	CHECK_INT(line_text_find(&lt, "foo", COLS, 0), 8);
	CHECK_INT(line_text_find(&lt, "foo", 8, 0), 0);
	/* lower case matches both cases; a capital makes it exact */
	CHECK_INT(line_text_find(&lt, "bar", -1, 1), 4);
	CHECK_INT(line_text_find(&lt, "bar", 4, 1), 12);
	CHECK_INT(line_text_find(&lt, "Bar", 4, 1), -1);
	CHECK_INT(line_text_find(&lt, "nope", -1, 1), -1);
	CHECK_INT(line_text_find(&lt, "", -1, 1), -1);
	line_text_free(&lt);
}

TEST(search_columns_with_wide_and_combining)
{
	struct rig r;
	VTermScreenCell cells[COLS];
	struct line_text lt = {0};

	rig_run(&r, "\xe4\xb8\xad\xe6\x96\x87 e\xcc\x81 end");
	CHECK(sb_line(r.sb, 0, cells, COLS) == COLS);
	line_text_from_cells(&lt, cells, COLS);
	/* two wide glyphs take columns 0-3: "end" starts at column 7 */
	CHECK_INT(line_text_find(&lt, "end", -1, 1), 7);
	CHECK_INT(line_text_find(&lt, "\xe6\x96\x87", -1, 1), 2);
	CHECK_INT(line_text_find(&lt, "e\xcc\x81", -1, 1), 5);
	line_text_free(&lt);
	rig_free(&r);
}
