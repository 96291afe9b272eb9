/*
 * search.c: a line of cells as text, for copy mode's search and copy:
 * UTF-8 with the column each byte came from (wide characters take two
 * columns, blanks read as spaces, trailing spaces go), and finding a
 * needle in it forward or back with smart case (a needle without capitals
 * matches either case, as vim's smartcase does).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "tui.h"

/* Append byte b from column col. */
static void
lt_add(struct line_text *lt, char b, int col)
{
	if (lt->len + 2 > lt->cap) {
		lt->cap = lt->cap ? lt->cap * 2 : 256;
		lt->s = xrealloc(lt->s, lt->cap);
		lt->col = xreallocarray(lt->col, lt->cap, sizeof *lt->col);
	}
	lt->s[lt->len] = b;
	lt->col[lt->len++] = col;
	lt->s[lt->len] = '\0';
}

/* Append code point c's UTF-8 from column col. */
static void
lt_add_char(struct line_text *lt, uint32_t c, int col)
{
	if (c < 0x80)
		lt_add(lt, (char)c, col);
	else if (c < 0x800) {
		lt_add(lt, (char)(0xc0 | c >> 6), col);
		lt_add(lt, (char)(0x80 | (c & 0x3f)), col);
	} else if (c < 0x10000) {
		lt_add(lt, (char)(0xe0 | c >> 12), col);
		lt_add(lt, (char)(0x80 | ((c >> 6) & 0x3f)), col);
		lt_add(lt, (char)(0x80 | (c & 0x3f)), col);
	} else {
		lt_add(lt, (char)(0xf0 | (c >> 18 & 7)), col);
		lt_add(lt, (char)(0x80 | ((c >> 12) & 0x3f)), col);
		lt_add(lt, (char)(0x80 | ((c >> 6) & 0x3f)), col);
		lt_add(lt, (char)(0x80 | (c & 0x3f)), col);
	}
}

/* Fill lt (reusing its memory) from ncells cells. */
void
line_text_from_cells(
    struct line_text *lt, const VTermScreenCell *cells, int ncells)
{
	lt->len = 0;
	if (lt->s == NULL)
		lt_add(lt, ' ', 0), lt->len = 0;
	lt->s[0] = '\0';
	for (int c = 0; c < ncells; c++) {
		const VTermScreenCell *cell = &cells[c];
		if (cell->chars[0] == (uint32_t)-1)
			continue;
		if (cell->chars[0] == 0) {
			lt_add(lt, ' ', c);
			continue;
		}
		for (int k = 0; k < VTERM_MAX_CHARS_PER_CELL && cell->chars[k];
		     k++)
			lt_add_char(lt, cell->chars[k], c);
	}
	while (lt->len > 0 && lt->s[lt->len - 1] == ' ')
		lt->len--;
	lt->s[lt->len] = '\0';
}

/* Free lt's memory (it can be filled again). */
void
line_text_free(struct line_text *lt)
{
	free(lt->s);
	free(lt->col);
	memset(lt, 0, sizeof *lt);
}

/* Does needle match at s (ASCII case folded when fold)? */
static int
match_at(const char *s, const char *needle, int fold)
{
	for (; *needle != '\0'; s++, needle++) {
		if (*s == '\0')
			return 0;
		if (fold ? tolower((unsigned char)*s) !=
		            tolower((unsigned char)*needle)
		         : *s != *needle)
			return 0;
	}
	return 1;
}

/*
 * The column of a match of needle: forward, the first starting in a
 * column after from_col (from_col -1: from column 0); backward, the last
 * starting before from_col. -1 if none.
 */
int
line_text_find(
    const struct line_text *lt, const char *needle, int from_col, int forward)
{
	int fold = 1, found = -1;

	if (*needle == '\0' || lt->len == 0)
		return -1;
	for (const char *n = needle; *n; n++)
		if (isupper((unsigned char)*n))
			fold = 0;
	for (size_t i = 0; i < lt->len; i++) {
		int col = lt->col[i];
		if (i > 0 && lt->col[i - 1] == col)
			continue; /* not the first byte of a cell */
		if (forward && col <= from_col)
			continue;
		if (!forward && col >= from_col)
			break;
		if (match_at(lt->s + i, needle, fold)) {
			if (forward)
				return col;
			found = col;
		}
	}
	return found;
}
