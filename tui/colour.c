/*
 * colour.c: guest colours mapped to what the outer terminal can show.
 *
 * The guest's default colours stay the terminal's defaults, indexed colours
 * keep their index when the terminal has that many, and RGB goes to the
 * nearest entry of the xterm 256-colour palette (then to 16 or 8) unless the
 * terminal takes direct colour. Pure functions; no ncurses here.
 */
#include <stdlib.h>

#include "tui.h"

/* The six levels of the xterm 6x6x6 cube. */
static const uint8_t cube_level[6] = {0, 95, 135, 175, 215, 255};

/* The standard 16 colours as xterm draws them. */
static const uint8_t ansi16[16][3] = {{0, 0, 0}, {205, 0, 0}, {0, 205, 0},
    {205, 205, 0}, {0, 0, 238}, {205, 0, 205}, {0, 205, 205}, {229, 229, 229},
    {127, 127, 127}, {255, 0, 0}, {0, 255, 0}, {255, 255, 0}, {92, 92, 255},
    {255, 0, 255}, {0, 255, 255}, {255, 255, 255}};

/* The palette entry 0..255 as RGB. */
void
colour_index_rgb(int index, uint8_t *r, uint8_t *g, uint8_t *b)
{
	if (index < 16) {
		*r = ansi16[index][0];
		*g = ansi16[index][1];
		*b = ansi16[index][2];
	} else if (index < 232) {
		index -= 16;
		*r = cube_level[index / 36];
		*g = cube_level[(index / 6) % 6];
		*b = cube_level[index % 6];
	} else {
		*r = *g = *b = (uint8_t)(8 + (index - 232) * 10);
	}
}

/* Squared distance between two colours. */
static int
dist2(int r1, int g1, int b1, int r2, int g2, int b2)
{
	return (r1 - r2) * (r1 - r2) + (g1 - g2) * (g1 - g2) +
	    (b1 - b2) * (b1 - b2);
}

/* The cube level nearest to v (0..5). */
static int
cube_nearest(int v)
{
	if (v < 48)
		return 0;
	if (v < 115)
		return 1;
	return (v - 35) / 40;
}

/*
 * The nearest xterm-256 entry to an RGB colour: the closer of the cube
 * colour and the grey ramp entry (the 16 system colours are left out, as
 * terminals theme them).
 */
int
colour_rgb_to_256(uint8_t r, uint8_t g, uint8_t b)
{
	int qr = cube_nearest(r), qg = cube_nearest(g), qb = cube_nearest(b);
	int cr = cube_level[qr], cg = cube_level[qg], cb = cube_level[qb];
	int avg = (r + g + b) / 3, grey_idx, grey;

	if (cr == r && cg == g && cb == b)
		return 16 + 36 * qr + 6 * qg + qb;
	grey_idx = avg > 238 ? 23 : (avg < 8 ? 0 : (avg - 3) / 10);
	grey = 8 + 10 * grey_idx;
	if (dist2(grey, grey, grey, r, g, b) < dist2(cr, cg, cb, r, g, b))
		return 232 + grey_idx;
	return 16 + 36 * qr + 6 * qg + qb;
}

/* The nearest of the 16 standard colours to palette entry index. */
int
colour_256_to_16(int index)
{
	uint8_t r, g, b;
	int best = 0, bestd = 0x7fffffff;

	if (index < 16)
		return index;
	colour_index_rgb(index, &r, &g, &b);
	for (int i = 0; i < 16; i++) {
		int d =
		    dist2(r, g, b, ansi16[i][0], ansi16[i][1], ansi16[i][2]);
		if (d < bestd) {
			bestd = d;
			best = i;
		}
	}
	return best;
}

/*
 * A guest colour as the terminal's colour number: COLOUR_DEFAULT for the
 * default foreground (fg) or background, an index below caps->colours, or
 * 0xRRGGBB when the terminal takes direct colour.
 */
int
colour_map(const struct colour_caps *caps, const VTermColor *c, int fg)
{
	int idx;

	if (fg ? VTERM_COLOR_IS_DEFAULT_FG(c) : VTERM_COLOR_IS_DEFAULT_BG(c))
		return COLOUR_DEFAULT;
	if (caps->colours < 8)
		return COLOUR_DEFAULT;
	if (VTERM_COLOR_IS_RGB(c)) {
		if (caps->colours > 256)
			return (c->rgb.red << 16) | (c->rgb.green << 8) |
			    c->rgb.blue;
		idx = colour_rgb_to_256(c->rgb.red, c->rgb.green, c->rgb.blue);
	} else
		idx = c->indexed.idx;
	if (caps->colours > 256) {
		/* direct-colour terminfo keeps 0-7 for the ANSI colours */
		uint8_t r, g, b;
		if (idx < 8)
			return idx;
		colour_index_rgb(idx, &r, &g, &b);
		return (r << 16) | (g << 8) | b;
	}
	if (idx < caps->colours)
		return idx;
	idx = colour_256_to_16(idx);
	if (idx >= caps->colours)
		idx -= 8; /* bright to normal on an 8-colour terminal */
	return idx;
}
