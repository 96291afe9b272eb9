/*
 * grid.c: the teacher's wall (prefix w, `vmux tui --grid`): every session
 * the TUI shows (tui -l narrows them) has a tile. A session with a shell
 * shows its current shell live: a read-only attachment at the shell's real
 * size (the guest's PTY is never resized), cropped to the tile around the
 * cursor so the most recent rows show. A session with no shell yet, or not
 * running, shows its state and what Enter does, so a student who has not
 * opened a shell is not invisible. Each title says how long the shell has
 * been quiet, the last `vmux check` and who else is attached. Arrows move,
 * Enter opens (a shell when there is none), / filters by name, o sorts by
 * name, activity or check result. z zooms into the selected tile, still
 * watching; t there takes the keyboard (the student is told, and their
 * keys are dropped) until prefix T hands it back.
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

/* A tile with no shell to show: no attachment, state and help drawn. */
static int
none_start(struct pane *p, char **cause)
{
	(void)cause;
	p->state = PANE_LIVE;
	return 0;
}
const struct pane_source none_source = {
    .name = "none",
    .start = none_start, /* the rest: nothing to do (NULL, as pane.c reads) */
};

static const char *const sort_names[] = {"name", "activity", "check"};

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

/* The model's session of tile p, or NULL. */
static struct msession *
tile_session(struct tui *t, const struct pane *p)
{
	return model_session(&t->model, p->session);
}

/* Sort order of tiles (t->grid_sort): name, newest output, check result. */
static struct tui *sort_tui; /* qsort has no argument: the loop's TUI */
static int
tile_cmp(const void *a, const void *b)
{
	const struct pane *p = *(struct pane *const *)a,
	                  *q = *(struct pane *const *)b;
	struct msession *s = tile_session(sort_tui, p),
	                *r = tile_session(sort_tui, q);
	int ks, kr;

	switch (sort_tui->grid_sort) {
	case 1: /* the most recent output first, tiles with none last */
		if (p->activity_ms != q->activity_ms)
			return p->activity_ms > q->activity_ms ? -1 : 1;
		break;
	case 2: /* failed, then passed, then never checked */
		ks = s == NULL || s->check == NULL ? 2 : !s->check_failed;
		kr = r == NULL || r->check == NULL ? 2 : !r->check_failed;
		if (ks != kr)
			return ks - kr;
		break;
	}
	if (s != NULL && r != NULL) /* the sidebar's order: group, name */
		return s < r ? -1 : s > r;
	return strcmp(p->session, q->session);
}

/*
 * Match the tiles to the model: one per session, its current shell live or
 * a tile that says why there is none. The selection stays on its session.
 */
void
grid_sync(struct tui *t)
{
	struct pane **keep = xcalloc(t->model.n + 1, sizeof *keep);
	char *sel = t->tile_sel < (int)t->ntiles
	    ? xstrdup(t->tiles[t->tile_sel]->session)
	    : NULL;
	size_t n = 0;

	for (size_t i = 0; i < t->model.n; i++) {
		struct msession *s = &t->model.sessions[i];
		const char *sh =
		    strcmp(s->state, "running") == 0 ? grid_shell(t, s) : NULL;
		const struct pane_source *src =
		    sh ? &shell_source : &none_source;
		struct mshell *m = sh ? model_shell(s, sh) : NULL;
		struct pane *p = NULL;
		if (!grid_wants(t, s->name))
			continue;
		for (size_t k = 0; k < t->ntiles; k++) {
			struct pane *q = t->tiles[k];
			if (q != NULL && strcmp(q->session, s->name) == 0 &&
			    q->src == src &&
			    strcmp(pane_name(q), sh ? sh : "") == 0) {
				p = q;
				t->tiles[k] = NULL;
				break;
			}
		}
		if (p == NULL) {
			p = pane_new(t, src, s->name, sh ? sh : "",
			    m ? m->cols : 80, m ? m->rows : 24, 1);
			pane_start(p);
		}
		keep[n++] = p;
	}
	for (size_t k = 0; k < t->ntiles; k++)
		pane_free(t->tiles[k]);
	free(t->tiles);
	sort_tui = t;
	qsort(keep, n, sizeof *keep, tile_cmp);
	t->tiles = keep;
	t->ntiles = n;
	for (size_t k = 0; sel != NULL && k < n; k++)
		if (strcmp(keep[k]->session, sel) == 0)
			t->tile_sel = (int)k;
	free(sel);
	if (t->tile_sel >= (int)n)
		t->tile_sel = n > 0 ? (int)n - 1 : 0;
	if (n == 0)
		t->grid_zoom = 0;
	if (t->kb_pane != 0 && tui_pane_by_id(t, t->kb_pane) == NULL) {
		/* the shell held is gone (stopped, another shell shown):
		 * keys typed from here must not become the wall's */
		t->kb_pane = 0;
		t->grid_zoom = 0;
		tui_message(
		    t, 1, "the shell you held is gone: back to the wall");
	} else if (t->kb_pane != 0 && t->grid_zoom && n > 0 &&
	    t->tiles[t->tile_sel]->id != t->kb_pane) {
		for (size_t k = 0; k < n; k++) /* keep the held tile shown */
			if (keep[k]->id == t->kb_pane)
				t->tile_sel = (int)k;
	}
	t->full_redraw = 1;
	draw_schedule(t);
}

/* Show the grid. */
void
grid_open(struct tui *t)
{
	t->mode = MODE_GRID;
	t->tile_sel = 0;
	grid_sync(t);
	for (size_t i = 0; i < t->ntiles; i++) /* the selected session's */
		if (t->cur_session &&
		    strcmp(t->tiles[i]->session, t->cur_session) == 0)
			t->tile_sel = (int)i;
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
	t->grid_zoom = 0;
	t->kb_pane = 0; /* the tiles' sockets are closed: let go */
	t->mode = MODE_NORMAL;
	tui_relayout(t);
}

/* The area tiles share: everything but the status bar. */
static struct rect
grid_area(struct tui *t)
{
	return (struct rect){0, 0, t->cols, t->rows > 1 ? t->rows - 1 : 1};
}

/* "idle 42s", "idle 3m", "idle 2h" since ms (mono_ms). */
static void
idle_str(uint64_t now, uint64_t ms, char *buf, size_t len)
{
	uint64_t s = (now - ms) / 1000;

	if (s < 120)
		snprintf(buf, len, "idle %us", (unsigned)s);
	else if (s < 7200)
		snprintf(buf, len, "idle %um", (unsigned)(s / 60));
	else
		snprintf(buf, len, "idle %uh", (unsigned)(s / 3600));
}

/*
 * A tile's title: the session and shell (or state), active or how long
 * quiet, and the last check's result ("check pass" / "check FAIL").
 */
static void
tile_title(struct tui *t, const struct pane *p, int focus, uint64_t now,
    char *buf, size_t len)
{
	struct msession *s = tile_session(t, p);
	char act[32] = "";
	const char *check = "";

	if (p->src != &none_source)
		snprintf(act, sizeof act, "%s", "active");
	if (p->src != &none_source &&
	    (p->activity_ms == 0 || now - p->activity_ms >= ACTIVE_MS))
		idle_str(now, p->activity_ms ? p->activity_ms : now, act,
		    sizeof act);
	if (s != NULL && s->check != NULL)
		check = s->check_failed ? "  check FAIL" : "  check pass";
	if (p->src == &none_source)
		snprintf(buf, len, "%s%s %s%s", focus ? ">" : " ", p->session,
		    s != NULL ? s->state : "gone", check);
	else
		snprintf(buf, len, "%s%s:%s %s %s%s%s%s%s%s", focus ? ">" : " ",
		    p->session, pane_name(p), pane_state_name(p), act, check,
		    p->kb_mine                ? "  YOU TYPE"
		        : p->keyboard != NULL ? "  typing: "
		                              : "",
		    p->keyboard != NULL && !p->kb_mine ? p->keyboard : "",
		    p->others != NULL && *p->others ? "  with " : "",
		    p->others != NULL ? p->others : "");
}

/* The body of a tile with no shell: why, and what Enter does. */
static void
tile_none_body(struct tui *t, const struct pane *p, const struct rect *r)
{
	struct msession *s = tile_session(t, p);
	int running = s != NULL && strcmp(s->state, "running") == 0;
	const char *lines[3] = {running ? "no shell yet"
	        : s != NULL             ? s->state
	                                : "gone",
	    running ? "Enter opens one" : "Enter selects it",
	    s != NULL && s->check != NULL ? s->check : ""};

	attr_set(A_NORMAL, 0, NULL);
	for (int row = 0; row < r->h; row++) {
		const char *l = row >= 1 && row <= 3 ? lines[row - 1] : "";
		int cy, cx;

		move(r->y + row, r->x);
		if (*l != '\0' && r->w > 1) { /* printable: the model's text */
			addch(' ');
			addnstr(l, r->w - 1);
		}
		getyx(stdscr, cy, cx);
		(void)cy;
		for (; cx < r->x + r->w; cx++)
			addch(' ');
	}
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
		        : "No session.");
		clrtoeol();
		return;
	}
	layout_grid(t->grid_zoom ? 1 : (int)t->ntiles, &area, &g);
	for (size_t i = 0; i < t->ntiles; i++) {
		struct pane *p = t->tiles[i];
		char title[512];
		int focus = (int)i == t->tile_sel;
		if (t->grid_zoom && !focus)
			continue; /* the selected tile alone, filling the wall
			           */
		layout_grid_tile(&g, &area, t->grid_zoom ? 0 : (int)i, &r);
		if (r.y >= area.y + area.h)
			break;
		tile_title(t, p, focus, now, title, sizeof title);
		draw_style(t, focus ? TH_TILE_FOCUS : TH_TILE_TITLE);
		mvaddnstr(r.y, r.x, title, r.w);
		for (int x = (int)strlen(title); x < r.w; x++)
			addch(' ');
		attr_set(A_NORMAL, 0, NULL);
		body = (struct rect){r.x, r.y + 1, r.w - 1, r.h - 1};
		if (body.w < 1 || body.h < 1)
			continue;
		if (p->src == &none_source)
			tile_none_body(t, p, &body);
		else /* whole tiles: the crop follows the cursor */
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
	if (t->grid_zoom && n > 0 && t->tiles[t->tile_sel]->kb_want) {
		pane_key(t->tiles[t->tile_sel], key); /* prefix T hands back */
		return 1;
	}
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
			struct pane *p = t->tiles[t->tile_sel];
			struct msession *ms = tile_session(t, p);
			int open = p->src == &none_source && ms != NULL &&
			    strcmp(ms->state, "running") == 0;
			char *s = xstrdup(p->session);
			char *sh = *pane_name(p) ? xstrdup(pane_name(p)) : NULL;
			grid_close(t);
			tui_select(t, s, sh);
			if (open) /* a student with no shell yet */
				tui_open_shell(t, s);
			free(s);
			free(sh);
		}
		return 1;
	case 'z':
		t->grid_zoom = !t->grid_zoom && n > 0;
		break;
	case 't':
		if (n > 0 && t->tiles[t->tile_sel]->src->take != NULL) {
			t->grid_zoom = 1;
			tui_takeover(t);
		}
		break;
	case 'o':
		t->grid_sort = (t->grid_sort + 1) % (int)nitems(sort_names);
		tui_message(
		    t, 0, "tiles sorted by %s", sort_names[t->grid_sort]);
		grid_sync(t);
		return 1;
	case '/':
		prompt_open(t, "filter: ", t->grid_filter ? t->grid_filter : "",
		    0, filter_done, NULL);
		return 1;
	case 'q':
	case 0x1b:
		if (t->grid_zoom) /* back to the wall */
			t->grid_zoom = 0;
		else {
			grid_close(t);
			return 1;
		}
		break;
	default:
		return 0;
	}
	t->full_redraw = 1;
	draw_schedule(t);
	return 1;
}
