/*
 * grid.c: the teacher's grid (prefix w, `vmux tui --grid`): every running
 * session's current shell tiled live on one screen. Each tile is its own
 * read-only attachment at the shell's real size (the guest's PTY is never
 * resized), cropped to the tile around the cursor so the most recent rows
 * show. Arrows move, Enter opens the shell full size, / filters by name.
 *
 * The TUI owns the tiles (t->tiles); grid_close frees them.
 */
#include <ncurses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "tui.h"

#define ACTIVE_MS 2000 /* output this recent marks a tile active */

/* The shell a session shows in the grid: the selected one, or the first
 * running. */
static const char *
grid_shell(struct tui *t, struct msession *s)
{
	if (t->cur_session && strcmp(t->cur_session, s->name) == 0 &&
	    t->cur_shell && model_shell(s, t->cur_shell))
		return t->cur_shell;
	for (size_t i = 0; i < s->nshells; i++)
		if (strcmp(s->shells[i].state, "running") == 0)
			return s->shells[i].id;
	return s->nshells > 0 ? s->shells[0].id : NULL;
}

/* Does the filter let session name through? */
static int
grid_wants(struct tui *t, const char *name)
{
	return t->grid_filter == NULL || *t->grid_filter == '\0' ||
	    strstr(name, t->grid_filter) != NULL;
}

/* Match the tiles to the model: one per running session with a shell. */
void
grid_sync(struct tui *t)
{
	struct pane **keep = xcalloc(t->model.n + 1, sizeof *keep);
	size_t n = 0;

	for (size_t i = 0; i < t->model.n; i++) {
		struct msession *s = &t->model.sessions[i];
		const char *sh = grid_shell(t, s);
		struct mshell *m = model_shell(s, sh);
		struct pane *p = NULL;
		if (sh == NULL || !grid_wants(t, s->name))
			continue;
		for (size_t k = 0; k < t->ntiles; k++) {
			struct pane *q = t->tiles[k];
			if (q != NULL && strcmp(q->session, s->name) == 0 &&
			    strcmp(q->shell_id, sh) == 0) {
				p = q;
				t->tiles[k] = NULL;
				break;
			}
		}
		if (p == NULL) {
			p = pane_new(t, &shell_source, s->name, sh,
			    m ? m->cols : 80, m ? m->rows : 24, 1);
			pane_start(p);
		}
		keep[n++] = p;
	}
	for (size_t k = 0; k < t->ntiles; k++)
		pane_free(t->tiles[k]);
	free(t->tiles);
	t->tiles = keep;
	t->ntiles = n;
	if (t->tile_sel >= (int)n)
		t->tile_sel = n > 0 ? (int)n - 1 : 0;
	t->full_redraw = 1;
	draw_schedule(t);
}

/* Show the grid. */
void
grid_open(struct tui *t)
{
	t->mode = MODE_GRID;
	t->tile_sel = 0;
	for (size_t i = 0; i < t->model.n; i++)
		if (t->cur_session &&
		    strcmp(t->model.sessions[i].name, t->cur_session) == 0)
			t->tile_sel = (int)i;
	grid_sync(t);
	model_refresh(t);
}

/* Leave the grid: its attachments end. */
void
grid_close(struct tui *t)
{
	for (size_t k = 0; k < t->ntiles; k++)
		pane_free(t->tiles[k]);
	free(t->tiles);
	t->tiles = NULL;
	t->ntiles = 0;
	t->mode = MODE_NORMAL;
	tui_relayout(t);
}

/* The area tiles share: everything but the status bar. */
static struct rect
grid_area(struct tui *t)
{
	return (struct rect){0, 0, t->cols, t->rows > 1 ? t->rows - 1 : 1};
}

/* Paint the tiles. */
void
grid_draw(struct tui *t)
{
	struct rect area = grid_area(t), r, body;
	struct grid_geom g;
	uint64_t now = mono_ms();

	if (t->ntiles == 0) {
		attr_set(A_NORMAL, 0, NULL);
		mvaddstr(area.h / 2, 2,
		    t->grid_filter && *t->grid_filter
		        ? "No session matches the filter (/ changes it)."
		        : "No running session with a shell.");
		clrtoeol();
		return;
	}
	layout_grid((int)t->ntiles, &area, &g);
	for (size_t i = 0; i < t->ntiles; i++) {
		struct pane *p = t->tiles[i];
		char title[256];
		int focus = (int)i == t->tile_sel;
		layout_grid_tile(&g, &area, (int)i, &r);
		if (r.y >= area.y + area.h)
			break;
		snprintf(title, sizeof title, "%s%s:%s %s %s",
		    focus ? ">" : " ", p->session, p->shell_id,
		    pane_state_name(p),
		    p->activity_ms && now - p->activity_ms < ACTIVE_MS
		        ? "active"
		        : "idle");
		draw_style(t, focus ? TH_TILE_FOCUS : TH_TILE_TITLE);
		mvaddnstr(r.y, r.x, title, r.w);
		for (int x = (int)strlen(title); x < r.w; x++)
			addch(' ');
		attr_set(A_NORMAL, 0, NULL);
		body = (struct rect){r.x, r.y + 1, r.w - 1, r.h - 1};
		if (body.w < 1 || body.h < 1)
			continue;
		/* whole tiles: the crop follows the cursor, so rows shift */
		draw_pane(t, p, &body, 1);
		for (int y = r.y; y < r.y + r.h; y++)
			mvadd_wch(y, r.x + r.w - 1, WACS_VLINE);
	}
}

/* Filter prompt answered. */
static void
filter_done(struct tui *t, const char *s, void *arg)
{
	if (s == NULL)
		return;
	free(t->grid_filter);
	t->grid_filter = xstrdup(s);
	grid_sync(t);
}

/* A key in the grid; 1 if used. */
int
grid_key(struct tui *t, int key)
{
	struct rect area = grid_area(t);
	struct grid_geom g;
	int n = (int)t->ntiles;

	layout_grid(n > 0 ? n : 1, &area, &g);
	switch (key) {
	case KEYC_LEFT:
	case 'h':
		if (t->tile_sel > 0)
			t->tile_sel--;
		break;
	case KEYC_RIGHT:
	case 'l':
		if (t->tile_sel + 1 < n)
			t->tile_sel++;
		break;
	case KEYC_UP:
	case 'k':
		if (t->tile_sel - g.ncols >= 0)
			t->tile_sel -= g.ncols;
		break;
	case KEYC_DOWN:
	case 'j':
		if (t->tile_sel + g.ncols < n)
			t->tile_sel += g.ncols;
		break;
	case 0x0d:
		if (n > 0) {
			char *s = xstrdup(t->tiles[t->tile_sel]->session);
			char *sh = xstrdup(t->tiles[t->tile_sel]->shell_id);
			grid_close(t);
			tui_select(t, s, sh);
			free(s);
			free(sh);
		}
		return 1;
	case '/':
		prompt_open(t, "filter: ", t->grid_filter ? t->grid_filter : "",
		    0, filter_done, NULL);
		return 1;
	case 'q':
	case 0x1b:
		grid_close(t);
		return 1;
	default:
		return 0;
	}
	t->full_redraw = 1;
	draw_schedule(t);
	return 1;
}
