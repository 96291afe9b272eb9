/*
 * strike.c: strikethrough (SGR 9) on the outer terminal. ncurses has no
 * attribute for it, so, as tmux draws it through terminfo's smxx, this
 * module draws struck cells itself, after doupdate(): draw_cell notes
 * each struck cell it paints in a frame, and strike_flush writes those
 * cells again between smxx and rmxx, through ncurses's own output so its
 * idea of the attributes stays true, and puts the cursor back where
 * ncurses left it. A cell ncurses rewrites is on a row painted in the
 * same frame, so it is struck again; rows not painted are not touched.
 * A terminal without smxx and rmxx draws struck cells plainly.
 */
#include <ncurses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "common/common.h"
#include "tui.h"

#include <term.h> /* after vterm.h: its macros (lines, columns) */

/* A capability's string, or NULL when the terminal lacks it. */
static const char *
cap(const char *name)
{
	char *s = tigetstr(name);

	return s == NULL || s == (char *)-1 || *s == '\0' ? NULL : s;
}

/* After initscr: 1 if this terminal can draw strikethrough. */
int
strike_init(void)
{
	/* draw_frame's one doupdate must finish, or a cell it left for
	 * later would be rewritten unstruck in a frame that paints no row */
	typeahead(-1);
	return cap("smxx") != NULL && cap("rmxx") != NULL && cap("cup") != NULL;
}

/* Note that the cell wch at screen y,x is struck: strike_flush draws it. */
void
strike_note(struct strike *s, int y, int x, const wchar_t *wch, unsigned attrs,
    int pair)
{
	struct strike_cell *c;

	if (y == LINES - 1 && x == COLS - 1)
		return; /* writing there could scroll the terminal */
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->cells = xreallocarray(s->cells, s->cap, sizeof *s->cells);
	}
	c = &s->cells[s->n++];
	c->y = y;
	c->x = x;
	c->attrs = attrs;
	c->pair = pair;
	wcsncpy(c->wch, wch, VTERM_MAX_CHARS_PER_CELL);
	c->wch[VTERM_MAX_CHARS_PER_CELL] = 0;
}

/* After doupdate(): draw the noted cells struck, then forget them. */
void
strike_flush(struct strike *s)
{
	const char *on = cap("smxx"), *off = cap("rmxx"), *cup = cap("cup");
	int cy, cx, x = -1;

	if (s->n == 0)
		return;
	if (on == NULL || off == NULL || cup == NULL) {
		s->n = 0; /* can't happen: strike_init said no */
		return;
	}
	getyx(stdscr, cy, cx);
	for (size_t i = 0; i < s->n; i++) {
		const struct strike_cell *c = &s->cells[i];
		const struct strike_cell *prev = i ? &s->cells[i - 1] : NULL;
		char mb[(VTERM_MAX_CHARS_PER_CELL + 1) * MB_LEN_MAX + 1];
		mbstate_t ps;
		size_t len = 0;
		int pair = c->pair;

		memset(&ps, 0, sizeof ps);
		for (int k = 0; c->wch[k] != 0; k++) {
			size_t r = wcrtomb(mb + len, c->wch[k], &ps);
			if (r == (size_t)-1)
				break;
			len += r;
		}
		if (len == 0)
			continue;
		mb[len] = '\0';
		/* a run of cells side by side, alike: one move, one smxx */
		if (prev == NULL || prev->y != c->y || x != c->x ||
		    prev->attrs != c->attrs || prev->pair != c->pair) {
			if (prev != NULL)
				putp(off);
			putp(tiparm(cup, c->y, c->x));
			vid_attr(c->attrs, 0, &pair);
			putp(on);
		}
		putp(mb);
		x = c->x + (wcwidth(c->wch[0]) == 2 ? 2 : 1);
	}
	putp(off);
	putp(tiparm(cup, cy, cx));
	s->n = 0;
	doupdate(); /* flushes ncurses's buffer, and stdio's: */
	fflush(stdout);
}
