/*
 * textview.c: text shown in a scrollable box, for what a vmux command run
 * from the prompt prints (`:status`, `:logs NAME`, `:exec NAME -- CMD`),
 * as tmux shows a command's output in view mode.
 *
 * The text is kept as given and laid out for the box's width when drawn:
 * tabs expanded, carriage returns dropped, long lines wrapped, so nothing
 * is cut off. Control characters and bad UTF-8 stay for put_text to show as
 * '?', so guest bytes never reach the terminal as escapes. Pure code: the
 * caller draws (draw.c) and owns the struct; textview_clear frees it.
 */
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "common/common.h"
#include "tui.h"

#define TAB_STOP 8

/* Columns the character at s (n bytes of it) takes as put_text draws it. */
static int
char_width(const char *s, size_t n, size_t *used)
{
	mbstate_t st;
	wchar_t wc;
	size_t k;
	int w;

	memset(&st, 0, sizeof st);
	k = mbrtowc(&wc, s, n, &st);
	if (k == (size_t)-1 || k == (size_t)-2 || k == 0) {
		*used = 1;
		return 1; /* drawn as '?' */
	}
	*used = k;
	w = wcwidth(wc);
	return w < 0 ? 1 : w;
}

/* Append one display line (len bytes at s) to v. */
static void
add_line(struct textview *v, const char *s, size_t len)
{
	v->line = xreallocarray(v->line, v->n + 1, sizeof *v->line);
	v->line[v->n++] = xstrndup(s, len);
}

/*
 * One line of text (len bytes, no '\n'): tabs expanded, '\r' dropped, cut
 * into display lines of at most width columns.
 */
static void
add_wrapped(struct textview *v, const char *s, size_t len, int width)
{
	char *out = xmalloc(len * TAB_STOP + 1);
	size_t w = 0, start = 0, used;
	int col = 0, cw;

	for (size_t i = 0; i < len; i += used) {
		if (s[i] == '\r') {
			used = 1;
			continue;
		}
		if (s[i] == '\t') {
			used = 1;
			cw = TAB_STOP - col % TAB_STOP;
			if (col + cw > width) { /* the tab ends the line */
				add_line(v, out + start, w - start);
				start = w, col = 0;
				cw = TAB_STOP;
			}
			for (int k = 0; k < cw && col < width; k++, col++)
				out[w++] = ' ';
			continue;
		}
		cw = char_width(s + i, len - i, &used);
		if (col + cw > width && col > 0) {
			add_line(v, out + start, w - start);
			start = w, col = 0;
		}
		memcpy(out + w, s + i, used);
		w += used;
		col += cw;
	}
	add_line(v, out + start, w - start);
	free(out);
}

/* Show len bytes of text under title (both copied); the top line first. */
void
textview_set(
    struct textview *v, const char *title, const char *text, size_t len)
{
	textview_clear(v);
	v->title = xstrdup(title);
	v->text = xmalloc(len + 1);
	memcpy(v->text, text, len);
	v->text[len] = '\0';
	v->len = len;
}

/* Free the display lines. */
static void
free_lines(struct textview *v)
{
	for (size_t i = 0; i < v->n; i++)
		free(v->line[i]);
	free(v->line);
	v->line = NULL;
	v->n = 0;
}

/*
 * Lay the text out for a box of width columns and height rows (the lines
 * again only when the width changed); the top line stays in range. Keys
 * scroll by the height given here.
 */
void
textview_layout(struct textview *v, int width, int height)
{
	const char *p = v->text, *end = v->text + v->len;

	v->height = height < 1 ? 1 : height;
	if (width < 1)
		width = 1;
	if (width == v->width && v->line != NULL)
		return;
	free_lines(v);
	v->width = width;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *stop = nl != NULL ? nl : end;

		add_wrapped(v, p, (size_t)(stop - p), width);
		p = nl != NULL ? nl + 1 : end;
	}
	if (v->top >= v->n)
		v->top = v->n > 0 ? v->n - 1 : 0;
}

/* Free the text, lines and title; v is empty afterwards. */
void
textview_clear(struct textview *v)
{
	free_lines(v);
	free(v->text);
	free(v->title);
	memset(v, 0, sizeof *v);
}

/*
 * A key while the view is open, as last laid out: scrolls (j k arrows,
 * Space PageDown, b PageUp, g G Home End) and returns 0, or returns 1 for
 * a key that closes it (q, Esc, Enter).
 */
int
textview_key(struct textview *v, int key)
{
	size_t h = v->height > 0 ? (size_t)v->height : 1;
	size_t last = v->n > h ? v->n - h : 0; /* the last line at the bottom */
	size_t page = h > 1 ? h - 1 : 1;

	switch (key) {
	case 'q':
	case 0x1b:
	case 0x0d:
		return 1;
	case 'j':
	case KEYC_DOWN:
		v->top++;
		break;
	case 'k':
	case KEYC_UP:
		v->top = v->top > 0 ? v->top - 1 : 0;
		break;
	case ' ':
	case KEYC_NPAGE:
		v->top += page;
		break;
	case 'b':
	case KEYC_PPAGE:
		v->top = v->top > page ? v->top - page : 0;
		break;
	case 'g':
	case KEYC_HOME:
		v->top = 0;
		break;
	case 'G':
	case KEYC_END:
		v->top = last;
		break;
	default:
		break;
	}
	if (v->top > last)
		v->top = last;
	return 0;
}
