/*
 * cell.c: a libvterm cell turned into what ncurses draws: wide characters,
 * attributes and colour numbers. Pure (colour_map), so it is unit-tested
 * without a terminal.
 *
 * Widths come from libvterm's tables, which may disagree with the C
 * library's wcwidth() that ncurses uses; where they do, a substitute of the
 * width libvterm decided is drawn so columns never shift.
 */
#include <ncurses.h>
#include <string.h>
#include <wchar.h>

#include "tui.h"

/* Convert c into t; t->width 0 means "draw nothing" (a right half). */
void
cell_convert(
    const VTermScreenCell *c, const struct colour_caps *caps, struct tcell *t)
{
	int n = 0, w;

	memset(t, 0, sizeof *t);
	if (c->chars[0] == (uint32_t)-1) {
		t->width = 0;
		return;
	}
	t->width = c->width == 2 ? 2 : 1;
	if (c->attrs.bold)
		t->attrs |= A_BOLD;
	if (c->attrs.underline)
		t->attrs |= A_UNDERLINE;
	if (c->attrs.italic)
		t->attrs |= A_ITALIC;
	if (c->attrs.blink)
		t->attrs |= A_BLINK;
	if (c->attrs.reverse)
		t->attrs |= A_REVERSE;
	t->strike = c->attrs.strike && caps->strike;
	if (c->attrs.font == 1) /* SGR 2, as faint.c carries it */
		t->attrs |= A_DIM;
	t->fg = colour_map(caps, &c->fg, 1);
	t->bg = colour_map(caps, &c->bg, 0);

	if (c->chars[0] == 0) {
		t->wch[0] = L' ';
		return;
	}
	w = wcwidth((wchar_t)c->chars[0]);
	if (w != t->width || c->chars[0] < 0x20 ||
	    (c->chars[0] >= 0x7f && c->chars[0] < 0xa0)) {
		/* the terminal would disagree on its width: a stand-in */
		t->wch[0] = L'?';
		if (t->width == 2)
			t->wch[1] = L'?';
		t->attrs |= A_DIM;
		return;
	}
	for (int i = 0; i < VTERM_MAX_CHARS_PER_CELL && c->chars[i] != 0; i++)
		t->wch[n++] = (wchar_t)c->chars[i];
	/* DEC graphics y and z: libvterm gives U+2A7D/U+2A7E, which few
	 * fonts have; xterm and tmux draw the common <= and >= */
	if (t->wch[0] == 0x2a7d || t->wch[0] == 0x2a7e)
		t->wch[0] = t->wch[0] == 0x2a7d ? 0x2264 : 0x2265;
	t->wch[n] = 0;
}
