/*
 * test_tui_view.c: the TUI's pure view code: colour mapping, cell
 * conversion (with cells produced by a real libvterm), layout at odd
 * sizes and grid tiling.
 */
#include <locale.h>
#include <ncurses.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "tui/tui.h"
#include "unit.h"

/* A VTerm of cols x rows fed bytes; caller frees. */
static VTerm *
vt_fed(int rows, int cols, const char *bytes)
{
	VTerm *vt = vterm_new(rows, cols);
	VTermScreen *vs;

	vterm_set_utf8(vt, 1);
	vs = vterm_obtain_screen(vt);
	vterm_screen_reset(vs, 1);
	vterm_input_write(vt, bytes, strlen(bytes));
	return vt;
}

/* The cell at row, col of vt. */
static VTermScreenCell
vt_cell(VTerm *vt, int row, int col)
{
	VTermScreenCell c;
	VTermPos pos = {row, col};

	vterm_screen_get_cell(vterm_obtain_screen(vt), pos, &c);
	return c;
}

TEST(rgb_to_256_finds_exact_cube_and_grey_entries)
{
	CHECK_INT(colour_rgb_to_256(0, 0, 0), 16);
	CHECK_INT(colour_rgb_to_256(255, 255, 255), 231);
	CHECK_INT(colour_rgb_to_256(255, 0, 0), 196);
	CHECK_INT(colour_rgb_to_256(95, 135, 175), 16 + 36 * 1 + 6 * 2 + 3);
	/* a mid grey is nearer the grey ramp than the cube */
	CHECK_INT(colour_rgb_to_256(128, 128, 128), 244);
	CHECK_INT(colour_rgb_to_256(8, 8, 8), 232);
	/* every palette entry from 16 maps back to an entry of equal RGB */
	for (int i = 16; i < 256; i++) {
		uint8_t r, g, b, r2, g2, b2;
		colour_index_rgb(i, &r, &g, &b);
		colour_index_rgb(colour_rgb_to_256(r, g, b), &r2, &g2, &b2);
		CHECK(r == r2 && g == g2 && b == b2);
	}
}

TEST(colour_256_to_16_picks_the_nearest_standard_colour)
{
	for (int i = 0; i < 16; i++)
		CHECK_INT(colour_256_to_16(i), i);
	CHECK_INT(colour_256_to_16(196), 9);  /* bright red */
	CHECK_INT(colour_256_to_16(231), 15); /* white */
	CHECK_INT(colour_256_to_16(16), 0);   /* black */
	CHECK_INT(colour_256_to_16(21), 4);   /* blue */
}

TEST(colour_map_keeps_defaults_and_indices)
{
	struct colour_caps c256 = {256, 0}, c16 = {16, 0}, c8 = {8, 0},
	                   direct = {0x1000000, 0};
	struct colour_caps none = {0, 0};
	VTerm *vt = vt_fed(2, 20,
	    "a\033[31mb\033[38;5;200mc\033[38;2;255;0;0md\033[0;44me\033["
	    "101mf");
	VTermScreenCell a = vt_cell(vt, 0, 0), b = vt_cell(vt, 0, 1);
	VTermScreenCell c = vt_cell(vt, 0, 2), d = vt_cell(vt, 0, 3);
	VTermScreenCell e = vt_cell(vt, 0, 4), f = vt_cell(vt, 0, 5);

	/* default colours stay the terminal's defaults */
	CHECK_INT(colour_map(&c256, &a.fg, 1), COLOUR_DEFAULT);
	CHECK_INT(colour_map(&c256, &a.bg, 0), COLOUR_DEFAULT);
	CHECK_INT(colour_map(&c256, &b.bg, 0), COLOUR_DEFAULT);
	/* indices keep their index when the terminal has it */
	CHECK_INT(colour_map(&c256, &b.fg, 1), 1);
	CHECK_INT(colour_map(&c256, &c.fg, 1), 200);
	CHECK_INT(colour_map(&c256, &e.bg, 0), 4);
	CHECK_INT(colour_map(&c256, &f.bg, 0), 9);
	/* true colour: nearest 256 entry, or direct */
	CHECK_INT(colour_map(&c256, &d.fg, 1), 196);
	CHECK_INT(colour_map(&direct, &d.fg, 1), 0xff0000);
	/* fewer colours: nearest standard colour, bright to normal on 8 */
	CHECK_INT(colour_map(&c16, &c.fg, 1), colour_256_to_16(200));
	CHECK_INT(colour_map(&c16, &d.fg, 1), 9);
	CHECK_INT(colour_map(&c8, &d.fg, 1), 1);
	CHECK_INT(colour_map(&c8, &f.bg, 0), 1);
	/* no colour at all */
	CHECK_INT(colour_map(&none, &b.fg, 1), COLOUR_DEFAULT);
	vterm_free(vt);
}

TEST(cell_convert_attributes_and_text)
{
	struct colour_caps caps = {256, 0};
	struct tcell t;
	VTerm *vt =
	    vt_fed(2, 20, "\033[1;4;3;5;7mA\033[0mB e\xcc\x81 \xe4\xb8\xad|");
	VTermScreenCell c;

	c = vt_cell(vt, 0, 0);
	cell_convert(&c, &caps, &t);
	CHECK(t.wch[0] == L'A' && t.wch[1] == 0);
	CHECK((t.attrs &
	          (A_BOLD | A_UNDERLINE | A_ITALIC | A_BLINK | A_REVERSE)) ==
	    (A_BOLD | A_UNDERLINE | A_ITALIC | A_BLINK | A_REVERSE));
	CHECK_INT(t.width, 1);
	c = vt_cell(vt, 0, 1);
	cell_convert(&c, &caps, &t);
	CHECK(t.wch[0] == L'B' && t.attrs == 0);
	CHECK_INT(t.fg, COLOUR_DEFAULT);
	/* a blank is a space */
	c = vt_cell(vt, 0, 2);
	cell_convert(&c, &caps, &t);
	CHECK(t.wch[0] == L' ');
	/* combining characters stay with their base */
	c = vt_cell(vt, 0, 3);
	cell_convert(&c, &caps, &t);
	CHECK(t.wch[0] == L'e' && t.wch[1] == 0x301 && t.wch[2] == 0);
	/* a wide character covers two columns; its right half is skipped */
	c = vt_cell(vt, 0, 5);
	cell_convert(&c, &caps, &t);
	CHECK(t.wch[0] == 0x4e2d);
	CHECK_INT(t.width, 2);
	c = vt_cell(vt, 0, 6);
	cell_convert(&c, &caps, &t);
	CHECK_INT(t.width, 0);
	c = vt_cell(vt, 0, 7);
	cell_convert(&c, &caps, &t);
	CHECK(t.wch[0] == L'|');
	vterm_free(vt);
}

TEST(cell_convert_strike_only_where_the_terminal_draws_it)
{
	struct colour_caps with = {256, 1}, without = {256, 0};
	struct tcell t;
	VTerm *vt = vt_fed(2, 20, "\033[9mS\033[29mP");
	VTermScreenCell c;

	c = vt_cell(vt, 0, 0);
	cell_convert(&c, &with, &t);
	CHECK(t.strike && t.wch[0] == L'S');
	cell_convert(&c, &without, &t);
	CHECK(!t.strike && t.wch[0] == L'S' && t.attrs == 0);
	c = vt_cell(vt, 0, 1);
	cell_convert(&c, &with, &t);
	CHECK(!t.strike && t.wch[0] == L'P');
	vterm_free(vt);
}

TEST(cell_convert_substitutes_when_widths_disagree)
{
	struct colour_caps caps = {256, 0};
	struct tcell t;
	VTermScreenCell c;

	memset(&c, 0, sizeof c);
	c.chars[0] = 0x4e2d; /* wide for the C library */
	c.width = 1;         /* but one column for this cell */
	cell_convert(&c, &caps, &t);
	CHECK(t.wch[0] == L'?');
	CHECK_INT(t.width, 1);
	c.chars[0] = 'x';
	c.width = 2;
	cell_convert(&c, &caps, &t);
	CHECK(t.wch[0] == L'?' && t.wch[1] == L'?');
	CHECK_INT(t.width, 2);
}

/* The layout covers the terminal without overlap. */
static void
check_layout(int cols, int rows, int sidebar, int zoomed)
{
	struct layout_in in = {
	    cols, rows, sidebar, CONFIG_SIDEBAR_DEFAULT, zoomed};
	struct layout l;

	layout_compute(&in, &l);
	CHECK(l.pane.w >= 1 && l.pane.h >= 1);
	CHECK_INT(l.pane.x + l.pane.w, cols);
	CHECK_INT(l.sidebar.w + l.border.w + l.pane.w, cols);
	if (rows > 1) {
		CHECK_INT(l.status.y, rows - 1);
		CHECK_INT(l.pane.h, rows - 1);
	}
	if (zoomed || !sidebar)
		CHECK_INT(l.sidebar.w, 0);
}

TEST(layout_at_every_size_from_one_cell)
{
	for (int c = 1; c <= 120; c += 7)
		for (int r = 1; r <= 40; r += 3)
			for (int s = 0; s < 2; s++)
				for (int z = 0; z < 2; z++)
					check_layout(c, r, s, z);
}

TEST(layout_40x10_keeps_a_usable_pane)
{
	struct layout_in in = {40, 10, 1, 30, 0};
	struct layout l;

	layout_compute(&in, &l);
	CHECK(l.sidebar.w >= 12 && l.sidebar.w <= 13);
	CHECK(l.pane.w >= 26);
	CHECK_INT(l.pane.h, 9);
	in.cols = 200;
	in.rows = 60;
	layout_compute(&in, &l);
	CHECK_INT(l.sidebar.w, 30);
	CHECK_INT(l.pane.w, 169);
	/* zoomed: everything but the status line, like a zoomed tmux pane */
	in.zoomed = 1;
	layout_compute(&in, &l);
	CHECK_INT(l.pane.x, 0);
	CHECK_INT(l.pane.w, 200);
	CHECK_INT(l.pane.h, 59);
}

TEST(grid_of_30_on_200x60_is_readable)
{
	struct rect area = {0, 0, 200, 59}, r;
	struct grid_geom g;
	int covered = 0;

	layout_grid(30, &area, &g);
	CHECK(g.ncols * g.nrows >= 30);
	CHECK(g.tile_w >= 30);
	CHECK(g.tile_h >= 8);
	for (int i = 0; i < 30; i++) {
		layout_grid_tile(&g, &area, i, &r);
		CHECK(r.x + r.w <= 200 && r.y + r.h <= 59);
		covered += r.w * r.h;
	}
	CHECK(covered <= 200 * 59);
	layout_grid(1, &area, &g);
	CHECK_INT(g.ncols, 1);
	CHECK_INT(g.tile_w, 200);
	layout_grid(12, &area, &g);
	CHECK(g.ncols * g.nrows >= 12 && g.ncols * g.nrows < 16);
}

TEST(textview_splits_lines_expands_tabs_drops_cr)
{
	static const char text[] = "a\tb\r\n\n\xc3\xa9\tx\n\x1b[31mred";
	struct textview v;

	memset(&v, 0, sizeof v);
	textview_set(&v, "status", text, sizeof text - 1);
	textview_layout(&v, 80, 24);
	CHECK_STR(v.title, "status");
	CHECK_INT((int)v.n, 4);
	CHECK_STR(v.line[0], "a       b");
	CHECK_STR(v.line[1], "");
	/* a two-byte character takes one column before the tab */
	CHECK_STR(v.line[2], "\xc3\xa9       x");
	/* escapes stay as bytes: put_text draws them as '?' */
	CHECK_STR(v.line[3], "\x1b[31mred");
	textview_set(&v, "again", "one", 3); /* replaces */
	textview_layout(&v, 80, 24);
	CHECK_INT((int)v.n, 1);
	CHECK_STR(v.line[0], "one");
	textview_clear(&v);
	CHECK_INT((int)v.n, 0);
	CHECK(v.title == NULL && v.line == NULL && v.text == NULL);
}

TEST(textview_wraps_long_lines_by_columns)
{
	/* 12 columns: "abcdefghij" then two wide characters (2 each) */
	static const char text[] = "abcdefghij\xe4\xb8\x80\xe4\xb8\x80\nok";
	struct textview v;

	memset(&v, 0, sizeof v);
	textview_set(&v, "exec", text, sizeof text - 1);
	textview_layout(&v, 5, 24);
	CHECK_INT((int)v.n, 4);
	CHECK_STR(v.line[0], "abcde");
	CHECK_STR(v.line[1], "fghij");
	CHECK_STR(v.line[2], "\xe4\xb8\x80\xe4\xb8\x80");
	CHECK_STR(v.line[3], "ok");
	/* a wide character never straddles the edge */
	textview_layout(&v, 11, 24);
	CHECK_INT((int)v.n, 3);
	CHECK_STR(v.line[0], "abcdefghij");
	CHECK_STR(v.line[1], "\xe4\xb8\x80\xe4\xb8\x80");
	/* wider again: one line, the top kept in range */
	v.top = 2;
	textview_layout(&v, 80, 24);
	CHECK_INT((int)v.n, 2);
	CHECK_INT((int)v.top, 1);
	textview_clear(&v);
}

TEST(textview_keys_scroll_within_the_text_and_close)
{
	struct textview v;
	char text[100 * 4 + 1] = "";

	for (int i = 0; i < 100; i++)
		snprintf(text + strlen(text), 5, "%03d\n", i);
	memset(&v, 0, sizeof v);
	textview_set(&v, "logs", text, strlen(text));
	textview_layout(&v, 40, 10);
	CHECK_INT((int)v.n, 100);
	CHECK_INT(textview_key(&v, 'j'), 0);
	CHECK_INT((int)v.top, 1);
	CHECK_INT(textview_key(&v, KEYC_NPAGE), 0);
	CHECK_INT((int)v.top, 10);
	textview_key(&v, 'G');
	CHECK_INT((int)v.top, 90); /* the last line at the bottom */
	textview_key(&v, KEYC_DOWN);
	CHECK_INT((int)v.top, 90);
	textview_key(&v, 'b');
	CHECK_INT((int)v.top, 81);
	textview_key(&v, 'g');
	CHECK_INT((int)v.top, 0);
	textview_key(&v, 'k');
	CHECK_INT((int)v.top, 0);
	textview_key(&v, 'x'); /* not a view key: nothing */
	CHECK_INT((int)v.top, 0);
	CHECK_INT(textview_key(&v, 'q'), 1);
	CHECK_INT(textview_key(&v, 0x1b), 1);
	/* text shorter than the box never scrolls */
	textview_set(&v, "short", "a\nb\n", 4);
	textview_layout(&v, 40, 10);
	textview_key(&v, 'G');
	CHECK_INT((int)v.top, 0);
	textview_clear(&v);
}

/* wcwidth needs a UTF-8 locale. */
__attribute__((constructor)) static void
utf8_locale(void)
{
	setlocale(LC_ALL, "C.UTF-8");
}

/* Feed s through a faint filter in pieces of k bytes; the result. */
static char *
faint_run(const char *s, size_t k)
{
	struct faint f;
	size_t len = strlen(s), o = 0;
	uint8_t *out = xmalloc(FAINT_OUT_MAX(len) + 16 * len + 1);
	static uint8_t piece[FAINT_OUT_MAX(8)];

	memset(&f, 0, sizeof f);
	for (size_t i = 0; i < len; i += f.used) { /* it may stop early */
		size_t n = len - i < k ? len - i : k;
		size_t got = faint_filter(&f, (const uint8_t *)s + i, n, piece);
		memcpy(out + o, piece, got);
		o += got;
		if (f.rep > 0) /* for the feed to write out: shown */
			o +=
			    (size_t)sprintf((char *)out + o, "<REP %d>", f.rep);
	}
	out[o] = '\0';
	return (char *)out;
}

/* SGR 2 and 22 carried as font 1 and 10; colours' own 2s and other
 * sequences untouched; the same whatever the chunking. */
TEST(faint_rewrites_sgr_2_only)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	    {"\033[2mdim\033[22m", "\033[11mdim\033[22;10m"},
	    {"\033[1;2;3m", "\033[1;11;3m"},
	    {"\033[38;5;2mg\033[48;2;2;2;2mx\033[0m",
	        "\033[38;5;2mg\033[48;2;2;2;2mx\033[0m"},
	    {"\033[38;5;2;2m", "\033[38;5;2;11m"},
	    {"\033[2J\033[?2004h\033[m", "\033[2J\033[?2004h\033[m"},
	    {"a\033\033[2mb", "a\033[11mb"}, /* the second ESC starts again */
	    {"\033(0q\033(B", "\033(0q\033(B"},
	    {"\033[2\nm", "\n\033[11m"}, /* the LF runs inside the CSI */
	    /* DECRC puts back the character sets DECSC saw */
	    {"\033(0\0337\033(Bq\0338q",
	        "\033(0\0337\033(Bq\0338\033(0\033)B\033*B\033+B\017q"},
	    {"\033)0\016\0337\017\0338",
	        "\033)0\016\0337\017\0338\033(B\033)0\033*B\033+B\016"},
	};

	for (size_t i = 0; i < nitems(cases); i++) {
		for (size_t k = 1; k <= 7; k += 3) {
			char *got = faint_run(cases[i].in, k);
			CHECK_STR(got, cases[i].out);
			free(got);
		}
	}
}

/* DECCOLM (CSI ? 3 h/l, also in a list) brings its clearing with it. */
TEST(faint_deccolm_clears)
{
	char *got = faint_run("a\033[?3lb\033[?1;3hc\033[?30ld\033[3le", 2);

	CHECK_STR(got,
	    "a\033[?3l\033[r\033[H\033[2Jb\033[?1;3h\033[r\033[H"
	    "\033[2Jc\033[?30ld\033[3le");
	free(got);
}

TEST(faint_rep_only_after_a_graphic_character)
{
	/* vttest's REP test: "+", REP 1, REP 10 (dropped: a control
	 * precedes), and REP after a newline, a CSI or at the start; a REP
	 * kept is for the feed to write out (<REP n>), never libvterm's */
	char *got = faint_run("\033[5b+\033[1b\033[10b\r\n \033[2b"
	                      "\033[H\033[3bx\033[?2b",
	    3);

	CHECK_STR(got, "+<REP 1>\r\n <REP 2>\033[Hx\033[?2b");
	free(got);
}

/* faint follows libvterm's parser: NUL and DEL ignored inside a sequence,
 * other controls run there, CAN cancels, strings print nothing; and a
 * CSI with 16 or more separators (which overruns libvterm's arguments) is
 * dropped, whether held or too long to hold. */
TEST(faint_keeps_in_step_with_libvterm)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	    {"\033\n8", "\n\0338\033(B\033)B\033*B\033+B\017"},
	    {"\033[3\177m", "\033[3m"},
	    {"\033\1778", "\0338\033(B\033)B\033*B\033+B\017"},
	    {"\033[1\n;2H", "\n\033[1;2H"},
	    {"\033[1\030x", "\030x"},
	    /* "[", "]" and "P" open a CSI or string after intermediates
	     * too, and a byte past 0x7f inside ESC is ignored */
	    {"\033 [1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1mx", "x"},
	    {"\033\x80[1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1mx", "x"},
	    {"\033([1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1mx", "x"},
	    {"\033 [b", ""},
	    {"\033#8\033[b", "\033#8"},
	    {"\033]\033\030A\033[b", "\033]\030A<REP 1>"},
	    {"\033\x80"
	     "8",
	        "\0338\033(B\033)B\033*B\033+B\017"},
	    {"\033]0;t\007\033[5b",
	        "\033]0;t\007"}, /* an OSC printed nothing */
	    {"x\033]0;t\033\\\033[2b", "x\033]0;t\033\\"},
	    {"\033[1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1mx", "x"},
	    {"\033[1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1m",
	        "\033[1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1m"},
	    {"\033[22;22;22;22;22;22;22;22;22m",
	        "\033[22;22;22;22;22;22;22;22;22m"},
	};

	for (size_t i = 0; i < nitems(cases); i++) {
		for (size_t k = 1; k <= 7; k += 3) {
			char *got = faint_run(cases[i].in, k);
			CHECK_STR(got, cases[i].out);
			free(got);
		}
	}
}

/* A CSI too long to hold passes as it comes, and is cancelled (CAN) at
 * its 16th separator, or at a REP's final byte with nothing to repeat. */
TEST(faint_long_csi_passes_or_is_cancelled)
{
	char in[200], want[200], *got;
	int n = snprintf(in, sizeof in, "\033[");

	for (int i = 0; i < 70; i++)
		in[n++] = '0';
	memcpy(want, in, (size_t)n);
	strcpy(in + n, ";1;2;3;4;5;6;7;8;9;10;11;12;13;14;15;16mx");
	strcpy(want + n, ";1;2;3;4;5;6;7;8;9;10;11;12;13;14;15\030x");
	got = faint_run(in, 5);
	CHECK_STR(got, want);
	free(got);
	in[n] = want[n] = 'b';
	in[n + 1] = '\0';
	want[n] = '\030';
	want[n + 1] = '\0';
	got = faint_run(in, 5);
	CHECK_STR(got, want);
	free(got);
	/* an ESC ends it for libvterm at once (CAN): the sequence the ESC
	 * starts may be dropped whole, and libvterm must not take what
	 * follows as more parameters */
	strcpy(in + n, "\033[\200;;;;;;;;;;;;;;;;;;;1m");
	strcpy(want + n, "\030;;;;;;;;;;;;;;;;;;;1m");
	got = faint_run(in, 5);
	CHECK_STR(got, want);
	free(got);
}

/* libvterm 0.1.4's REP never ends after a glyph of no width: no REP goes
 * to libvterm; one after a whole character printed is reported (the feed
 * writes the character out again), any other is dropped. */
TEST(faint_rep_is_never_libvterms)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	    {"\033[20;b", ""},                                /* nothing yet */
	    {"\xe2\x80\x8b\033[5b", "\xe2\x80\x8b<REP 5>"},   /* ZWSP */
	    {"\xe2\x94\x80\033[5b", "\xe2\x94\x80<REP 5>"},   /* box drawing */
	    {"\xe4\xb8\xad\033[2;3b", "\xe4\xb8\xad<REP 2>"}, /* wide */
	    {"\xe4\xb8\033[5b", "\xe4\xb8"}, /* cut short by the ESC */
	    {"\xff\033[5b", "\xff"},         /* not UTF-8 */
	    {"\xc2\x85\033[5b", "\xc2\x85"}, /* a C1 control */
	    {"x\033[0b", "x<REP 1>"},
	    {"x\033[?5b", "x\033[?5b"}, /* not a REP */
	};

	for (size_t i = 0; i < nitems(cases); i++) {
		for (size_t k = 1; k <= 7; k += 3) {
			char *got = faint_run(cases[i].in, k);
			CHECK_STR(got, cases[i].out);
			free(got);
		}
	}
}
