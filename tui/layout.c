/*
 * layout.c: where the sidebar, the pane, the status bar and grid tiles go
 * for a terminal of a given size. Pure arithmetic, so every size from 1x1
 * up can be unit-tested; the pane is never smaller than 1x1.
 */
#include "tui.h"

#define SIDEBAR_MIN     12 /* narrower than this is not worth showing */
#define PANE_MIN_COLS   20 /* the sidebar gives way below this */
#define GRID_TILE_MIN_W 20
#define GRID_TILE_MIN_H 4

/* Compute the layout for in; out covers the whole terminal. */
void
layout_compute(const struct layout_in *in, struct layout *out)
{
	int cols = in->cols < 1 ? 1 : in->cols;
	int rows = in->rows < 1 ? 1 : in->rows;
	int body = rows > 1 ? rows - 1 : 1; /* rows above the status bar */
	int sw = in->sidebar_width;

	*out = (struct layout){0};
	out->status = (struct rect){0, rows > 1 ? rows - 1 : 0, cols, 1};
	if (rows == 1)
		out->status.h = 0; /* one row: the pane has it */

	/* The sidebar takes at most a third when the terminal is small. */
	if (in->sidebar_on && !in->zoomed) {
		if (sw > cols / 3 && cols - sw - 1 < PANE_MIN_COLS)
			sw = cols / 3;
		if (sw >= SIDEBAR_MIN && cols - sw - 1 >= 1) {
			out->sidebar = (struct rect){0, 0, sw, body};
			out->border = (struct rect){sw, 0, 1, body};
		}
	}
	out->pane.x = out->sidebar.w + out->border.w;
	out->pane.y = 0;
	out->pane.w = cols - out->pane.x;
	out->pane.h = body;
	if (out->pane.w < 1)
		out->pane.w = 1;
}

/*
 * Tiles for ntiles shells in area: as many columns as keep tiles at least
 * GRID_TILE_MIN_W wide, chosen so the grid is as square as the area lets
 * it be (terminal cells are about twice as tall as wide).
 */
void
layout_grid(int ntiles, const struct rect *area, struct grid_geom *g)
{
	int best = 1, bestscore = -1;

	if (ntiles < 1)
		ntiles = 1;
	for (int nc = 1; nc <= ntiles; nc++) {
		int nr = (ntiles + nc - 1) / nc;
		int w = area->w / nc, h = area->h / nr;
		int score;
		if (w < GRID_TILE_MIN_W && nc > 1)
			break;
		if (h < GRID_TILE_MIN_H && nc < ntiles)
			continue;
		/* prefer tiles about 3x as wide as tall: shells are wide */
		score = (w < 3 * h ? w : 3 * h) * 4 - (nc * nr - ntiles);
		if (score > bestscore) {
			bestscore = score;
			best = nc;
		}
	}
	g->ncols = best;
	g->nrows = (ntiles + best - 1) / best;
	g->tile_w = area->w / g->ncols;
	g->tile_h = area->h / g->nrows;
	if (g->tile_w < 1)
		g->tile_w = 1;
	if (g->tile_h < 1)
		g->tile_h = 1;
}

/* Tile i's rectangle (the last column and row take what is left over). */
void
layout_grid_tile(
    const struct grid_geom *g, const struct rect *area, int i, struct rect *r)
{
	int c = i % g->ncols, row = i / g->ncols;

	r->x = area->x + c * g->tile_w;
	r->y = area->y + row * g->tile_h;
	r->w = c == g->ncols - 1 ? area->w - c * g->tile_w : g->tile_w;
	r->h = row == g->nrows - 1 ? area->h - row * g->tile_h : g->tile_h;
}
