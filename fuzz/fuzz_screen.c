/*
 * fuzz_screen.c: libFuzzer target for what a hostile guest's shell output
 * does to a TUI pane: bytes through faint.c into libvterm's parser and
 * state over tui/screen.c, with resizes between pieces, as the attach
 * stream's RESIZE frames would make them.
 *
 * Input: pieces, each a length byte L and L bytes of output; a length byte
 * of 0xff is a resize instead, to the next two bytes as cols (2..512) and
 * rows (1..256), the sizes a pane is clamped to. After every piece every
 * cell is read back. ASan/UBSan catch memory errors and leaks; the cursor
 * must stay on the screen; a hang (libvterm's REP after a zero-width
 * glyph looped for ever) is a libFuzzer timeout.
 */
#include <locale.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "tui/tui.h"

int LLVMFuzzerInitialize(int *, char ***);
int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* The TUI runs in the user's locale, usually UTF-8: wcwidth as there. */
int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	setlocale(LC_CTYPE, "C.UTF-8");
	return 0;
}

static int lines; /* pushed to the scrollback, popped back by a resize */

static int
push(int cols, const VTermScreenCell *cells, void *user)
{
	(void)cols;
	(void)cells;
	(void)user;
	lines++;
	return 1;
}

/* A blank line back for a taller screen, while any was pushed. */
static int
pop(int cols, VTermScreenCell *cells, void *user)
{
	(void)user;
	if (lines == 0)
		return 0;
	lines--;
	memset(cells, 0, (size_t)cols * sizeof *cells);
	for (int c = 0; c < cols; c++)
		cells[c].width = 1;
	return 1;
}

static const VTermScreenCallbacks cbs = {
    .sb_pushline = push,
    .sb_popline = pop,
};

/* Read every cell; abort if the cursor is off the screen. */
static void
read_back(VTerm *vt, struct screen *s)
{
	int rows, cols;
	VTermPos pos;
	VTermScreenCell c;

	vterm_get_size(vt, &rows, &cols);
	for (pos.row = 0; pos.row < rows; pos.row++)
		for (pos.col = 0; pos.col < cols; pos.col++)
			if (!screen_get_cell(s, pos, &c))
				abort();
	vterm_state_get_cursorpos(vterm_obtain_state(vt), &pos);
	if (pos.row < 0 || pos.row >= rows || pos.col < 0 || pos.col > cols)
		abort(); /* col == cols: libvterm's pending wrap */
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct feed fd;
	VTerm *vt = vterm_new(24, 80);
	struct screen *s;
	size_t i = 0;

	lines = 0;
	vterm_set_utf8(vt, 1);
	feed_init(&fd, vt);
	s = screen_new(vt, &cbs, NULL);
	screen_reset(s, 1);
	while (i < size) {
		size_t len = data[i++];
		if (len == 0xff) {
			if (i + 2 > size)
				break;
			feed_resize(&fd, 1 + data[i + 1] % PANE_MAX_ROWS,
			    2 + data[i] * 2 % (PANE_MAX_COLS - 1));
			screen_flush(s);
			i += 2;
		} else {
			if (len > size - i)
				len = size - i;
			feed_write(&fd, data + i, len);
			screen_flush(s);
			i += len;
		}
		read_back(vt, s);
	}
	screen_free(s);
	feed_free(&fd);
	vterm_free(vt);
	return 0;
}
