/*
 * tui.c: the TUI as a whole: start-up (config, theme, terminal), the one
 * libuv loop (terminal input, SIGWINCH and friends, the model's refresh
 * tick, frames), which shell is selected, and the way out. Detaching or
 * dying never stops a VM or a shell: panes only close their streams.
 */
#include <sys/ioctl.h>

#include <locale.h>
#include <ncurses.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "tui.h"

static void tui_release_keyboard(struct tui *);

#define TICK_MS        2000  /* model refresh while idle */
#define TICK_TYPING_MS 10000 /* ... and at least this often while typing */
#define MESSAGE_MS     5000
#define OPEN_WAIT_MS   15000

/* Show a message on the status bar for a while. */
void
tui_message(struct tui *t, int error, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	xvasprintf(&s, fmt, ap);
	va_end(ap);
	free(t->message);
	t->message = str_printable(s, 0);
	free(s);
	t->message_error = error;
	t->message_until = mono_ms() + MESSAGE_MS;
	draw_schedule(t);
}

/* The pane of session/shell, or NULL. */
static struct pane *
tui_find_pane(struct tui *t, const char *session, const char *shell)
{
	for (size_t i = 0; session && shell && i < t->npanes; i++) {
		struct pane *p = t->panes[i];
		if (p->shell_id != NULL && strcmp(p->session, session) == 0 &&
		    strcmp(p->shell_id, shell) == 0)
			return p;
	}
	return NULL;
}

/* The pane of session of a kind that is not a shell (console, replay). */
static struct pane *
tui_find_kind(struct tui *t, const char *session, const struct pane_source *src)
{
	for (size_t i = 0; session && i < t->npanes; i++) {
		struct pane *p = t->panes[i];
		if (p->src == src && strcmp(p->session, session) == 0)
			return p;
	}
	return NULL;
}

/* The pane with this id (panes and tiles), or NULL if it is gone. */
struct pane *
tui_pane_by_id(struct tui *t, unsigned id)
{
	for (size_t i = 0; i < t->npanes; i++)
		if (t->panes[i]->id == id)
			return t->panes[i];
	for (size_t i = 0; i < t->ntiles; i++)
		if (t->tiles[i]->id == id)
			return t->tiles[i];
	return NULL;
}

/* The pane on the screen, or NULL. */
struct pane *
tui_pane(struct tui *t)
{
	if (t->aside != NULL)
		return tui_find_kind(t, t->cur_session, t->aside);
	return tui_find_pane(t, t->cur_session, t->cur_shell);
}

/* The pane keys and takeover act on: the wall's selected tile, or the
 * current pane. */
struct pane *
tui_key_pane(struct tui *t)
{
	if (t->mode == MODE_GRID)
		return t->tile_sel < (int)t->ntiles ? t->tiles[t->tile_sel]
		                                    : NULL;
	return tui_pane(t);
}

/*
 * Take the keyboard of the shell shown (the wall's tile, or the current
 * pane): the agent drops every other client's keys, and they are told;
 * again hands it back.
 */
void
tui_takeover(struct tui *t)
{
	struct pane *p = tui_key_pane(t);

	if (t->opts.read_only) {
		tui_message(t, 1, "read-only: no keyboard to take");
		return;
	}
	if (p == NULL || p->src->take == NULL || p->state != PANE_LIVE) {
		tui_message(t, 1, "no live shell here to take over");
		return;
	}
	if (p->kb_want) {
		tui_release_keyboard(t);
		tui_message(t, 0, "keyboard of %s:%s handed back", p->session,
		    pane_name(p));
		return;
	}
	tui_release_keyboard(t); /* one at a time: the last one goes back */
	p->src->take(p, 1);
	t->kb_pane = p->id;
	tui_message(t, 0,
	    "you have the keyboard of %s:%s (prefix T hands it back)",
	    p->session, pane_name(p));
}

/* Hand back the keyboard the TUI took, if it holds one. */
static void
tui_release_keyboard(struct tui *t)
{
	struct pane *p = t->kb_pane ? tui_pane_by_id(t, t->kb_pane) : NULL;

	if (p != NULL && p->kb_want)
		p->src->take(p, 0);
	t->kb_pane = 0;
}

/* The label key the sidebar groups by (--group-by, else the config's). */
const char *
tui_group_by(const struct tui *t)
{
	return t->opts.group_by != NULL ? t->opts.group_by : t->cfg.group_by;
}

/* A new pane on src for session/shell, cols x rows until its source says,
 * kept in t->panes for the TUI's life; not started. */
static struct pane *
tui_add_pane(struct tui *t, const struct pane_source *src, const char *session,
    const char *shell, int cols, int rows)
{
	struct pane *p = pane_new(t, src, session, shell, cols, rows, 0);

	t->panes = xreallocarray(t->panes, t->npanes + 1, sizeof *t->panes);
	t->panes[t->npanes++] = p;
	return p;
}

/* The most recent shell of s: the newest running one, else the newest. */
static const char *
recent_shell(struct msession *s)
{
	struct mshell *best = NULL;

	for (size_t i = 0; i < s->nshells; i++) {
		struct mshell *m = &s->shells[i];
		int run = strcmp(m->state, "running") == 0;
		int brun = best && strcmp(best->state, "running") == 0;
		if (best == NULL || (run && !brun) ||
		    (run == brun && m->started_at >= best->started_at))
			best = m;
	}
	return best ? best->id : NULL;
}

/* Replace *slot with a copy of s (NULL allowed). */
static void
set_str(char **slot, const char *s)
{
	char *c = s ? xstrdup(s) : NULL;

	free(*slot);
	*slot = c;
}

/*
 * Select session (and shell; NULL: its most recent one, opening a shell
 * if it has none and one was asked for). The shell's pane is created and
 * attached when first shown and stays attached in the background.
 */
void
tui_select(struct tui *t, const char *session, const char *shell)
{
	struct msession *s;
	struct pane *p;
	char *sess = session ? xstrdup(session) : NULL;
	char *sh = shell ? xstrdup(shell) : NULL;
	int changed;

	if (t->opts.local != NULL)
		goto out;
	if (sess == NULL && t->model.n > 0) {
		for (size_t i = 0; i < t->model.n && sess == NULL; i++)
			if (strcmp(t->model.sessions[i].state, "running") == 0)
				sess = xstrdup(t->model.sessions[i].name);
		if (sess == NULL)
			sess = xstrdup(t->model.sessions[0].name);
	}
	s = model_session(&t->model, sess);
	if (sh == NULL && s != NULL && recent_shell(s) != NULL)
		sh = xstrdup(recent_shell(s));
	if (t->want_shell && s != NULL && s->shells_known &&
	    strcmp(s->name, t->opts.session) == 0) {
		/* `vmux tui NAME`: its most recent shell, or a new one */
		t->want_shell = 0;
		if (sh == NULL && strcmp(s->state, "running") == 0)
			tui_open_shell(t, s->name);
	}
	changed = sess != NULL &&
	    (t->cur_session == NULL || strcmp(sess, t->cur_session) != 0 ||
	        (sh && (!t->cur_shell || strcmp(sh, t->cur_shell) != 0)));
	if (changed) {
		t->full_redraw = 1;
		t->aside = NULL; /* another shell picked: console, replay go */
		tui_release_keyboard(t); /* a takeover ends with its view */
		if (t->copy.on)
			copy_exit(t); /* copy mode belongs to the old pane */
	}
	set_str(&t->cur_session, sess);
	set_str(&t->cur_shell, sh);
	if (changed && s != NULL && strcmp(s->state, "paused") == 0 &&
	    !t->opts.read_only) {
		/* selecting a paused session wakes it (vmux resume, a job:
		 * its shells show once the model has them) */
		char *line;
		const char *name;

		if (hosts_target(t, s->name, &name) == NULL) {
			xasprintf(&line, "resume %s", s->name);
			cmd_run(t, line);
			free(line);
		}
	}
	if (t->mode == MODE_GRID)
		goto out; /* tiles show it; a full pane would resize the PTY */
	if (sess != NULL && sh != NULL &&
	    (p = tui_find_pane(t, sess, sh)) == NULL &&
	    (s == NULL || model_shell(s, sh) != NULL)) {
		struct mshell *m = model_shell(s, sh);
		p = tui_add_pane(t, &shell_source, sess, sh,
		    m ? m->cols : t->lay.pane.w, m ? m->rows : t->lay.pane.h);
		pane_resize(p, t->lay.pane.w, t->lay.pane.h);
		pane_start(p);
	}
	if ((p = tui_pane(t)) != NULL && changed) {
		pane_resize(p, t->lay.pane.w, t->lay.pane.h);
		pane_mark_all(p);
	}
out:
	free(sess);
	free(sh);
	draw_schedule(t);
}

/* The sidebar's rows: sessions and their shells; *n is their count. */
void
tui_sidebar_rows(struct tui *t, int *n)
{
	*n = 0;
	for (size_t i = 0; i < t->model.n; i++)
		*n += 1 + (int)t->model.sessions[i].nshells;
}

/* Select what sidebar row is (a click, Enter, prefix Up/Down). */
void
tui_sidebar_pick(struct tui *t, int row)
{
	int r = 0;

	for (size_t i = 0; i < t->model.n; i++) {
		struct msession *s = &t->model.sessions[i];
		if (r == row) {
			t->sel = row;
			tui_select(t, s->name, NULL);
			return;
		}
		r++;
		for (size_t j = 0; j < s->nshells; j++, r++)
			if (r == row) {
				t->sel = row;
				tui_select(t, s->name, s->shells[j].id);
				return;
			}
	}
}

/* The sidebar row of the current shell (kept in step with selection). */
static void
sync_sel(struct tui *t)
{
	int r = 0;

	for (size_t i = 0; i < t->model.n; i++) {
		struct msession *s = &t->model.sessions[i];
		int here =
		    t->cur_session && strcmp(s->name, t->cur_session) == 0;
		if (here && t->cur_shell == NULL && t->mode != MODE_SIDEBAR)
			t->sel = r;
		r++;
		for (size_t j = 0; j < s->nshells; j++, r++)
			if (here && t->cur_shell && t->mode != MODE_SIDEBAR &&
			    strcmp(s->shells[j].id, t->cur_shell) == 0)
				t->sel = r;
	}
}

/* Recompute the layout for the terminal's size; resize the pane. */
void
tui_relayout(struct tui *t)
{
	struct layout_in in;
	struct winsize ws;
	struct pane *p;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 &&
	    ws.ws_row > 0 && (ws.ws_col != t->cols || ws.ws_row != t->rows)) {
		resizeterm(ws.ws_row, ws.ws_col);
		t->cols = ws.ws_col;
		t->rows = ws.ws_row;
	}
	in.cols = t->cols;
	in.rows = t->rows;
	in.sidebar_on = t->sidebar_on;
	in.sidebar_width = t->cfg.sidebar_width;
	in.zoomed = t->zoomed;
	layout_compute(&in, &t->lay);
	if ((p = tui_pane(t)) != NULL)
		pane_resize(p, t->lay.pane.w, t->lay.pane.h);
	for (size_t i = 0; t->opts.local != NULL && i < t->npanes; i++)
		pane_resize(t->panes[i], t->lay.pane.w, t->lay.pane.h);
	clearok(curscr, TRUE);
	t->full_redraw = 1;
	draw_schedule(t);
}

/* Ask the agent for a shell of the pane's size, then show it. */
static void
open_after(struct tui *t, struct work *w)
{
	const cJSON *id;

	if (w->rc != 0) {
		tui_message(t, 1, "new shell in %s: %s", w->session, w->cause);
		return;
	}
	id = cJSON_GetObjectItemCaseSensitive(w->reply, "shell_id");
	if (!cJSON_IsString(id))
		return;
	tui_message(t, 0, "opened %s:%s", w->session, id->valuestring);
	if (t->mode == MODE_GRID)
		grid_close(t);
	set_str(&t->cur_session, w->session);
	set_str(&t->cur_shell, id->valuestring);
	pane_start(tui_add_pane(t, &shell_source, w->session, id->valuestring,
	    t->lay.pane.w, t->lay.pane.h));
	t->full_redraw = 1;
	model_refresh(t);
}

/* Show cur_session's pane `aside` (NULL: its shell) in the main area. */
static void
tui_set_aside(struct tui *t, const struct pane_source *aside)
{
	struct pane *p;

	t->aside = aside;
	if ((p = tui_pane(t)) != NULL) {
		pane_resize(p, t->lay.pane.w, t->lay.pane.h);
		pane_mark_all(p);
	}
	t->full_redraw = 1;
	draw_schedule(t);
}

/*
 * Show the current session's serial console in the main area, or go back
 * to its shell (prefix C). The console's pane stays attached in the
 * background, as a shell's does.
 */
void
tui_console_toggle(struct tui *t)
{
	struct pane *p;

	if (t->aside == &console_source) {
		tui_set_aside(t, NULL);
		return;
	}
	if (t->cur_session == NULL || t->opts.local != NULL) {
		tui_message(t, 1, "no session selected");
		return;
	}
	if (t->mode == MODE_GRID) {
		tui_message(t, 1, "the console opens outside the grid");
		return;
	}
	p = tui_find_kind(t, t->cur_session, &console_source);
	if (p == NULL || p->state == PANE_FAILED) {
		if (p == NULL)
			p = tui_add_pane(t, &console_source, t->cur_session,
			    NULL, t->lay.pane.w, t->lay.pane.h);
		pane_start(p);
	}
	tui_set_aside(t, &console_source);
}

/*
 * Play recording `file` in the main area in place of the current shell
 * (the `replay` command); NULL goes back to the shell.
 */
void
tui_replay_open(struct tui *t, const char *file)
{
	struct pane *p;

	if (file == NULL) {
		tui_set_aside(t, NULL);
		return;
	}
	if (t->cur_session == NULL || t->opts.local != NULL) {
		tui_message(t, 1, "no session selected");
		return;
	}
	if (t->mode == MODE_GRID) {
		tui_message(t, 1, "a recording plays outside the grid");
		return;
	}
	p = tui_find_kind(t, t->cur_session, &replay_source);
	if (p == NULL)
		p = tui_add_pane(
		    t, &replay_source, t->cur_session, NULL, 80, 24);
	else
		p->src->stop(p); /* another recording: this one ends */
	free(p->command);
	p->command = xstrdup(file);
	pane_start(p);
	tui_set_aside(t, &replay_source); /* its own size: no resizing */
}

/*
 * The pane of s's most recent shell, attached in the background when it
 * was not yet; NULL if s runs no shell.
 */
static struct pane *
broadcast_pane(struct tui *t, struct msession *s)
{
	const char *sh =
	    strcmp(s->state, "running") == 0 ? recent_shell(s) : NULL;
	struct pane *p;

	if (sh == NULL)
		return NULL;
	if ((p = tui_find_pane(t, s->name, sh)) == NULL) {
		struct mshell *m = model_shell(s, sh);

		p = tui_add_pane(t, &shell_source, s->name, sh,
		    m ? m->cols : t->lay.pane.w, m ? m->rows : t->lay.pane.h);
		pane_start(p);
	}
	return p;
}

/*
 * Broadcast (prefix B): what is typed goes to the most recent shell of
 * every running session the TUI shows (all, or what tui -l picks), as
 * tmux's synchronize-panes does for one window. Turning it on attaches
 * those shells, so the first key reaches them all.
 */
void
tui_broadcast_toggle(struct tui *t)
{
	size_t n = 0;

	if (t->opts.read_only || t->opts.local != NULL) {
		tui_message(t, 1, "broadcast: this TUI does not type");
		return;
	}
	t->broadcast = !t->broadcast;
	for (size_t i = 0; t->broadcast && i < t->model.n; i++)
		if (broadcast_pane(t, &t->model.sessions[i]) != NULL)
			n++;
	if (t->broadcast)
		tui_message(t, 0, "broadcast on: keys go to %zu shells", n);
	else
		tui_message(t, 0, "broadcast off");
	draw_schedule(t);
}

/* A key typed into pane typed: the same key to the other shells. */
void
tui_broadcast_key(struct tui *t, struct pane *typed, int key)
{
	for (size_t i = 0; i < t->model.n; i++) {
		struct pane *p = broadcast_pane(t, &t->model.sessions[i]);

		if (p != NULL && strcmp(p->session, typed->session) != 0)
			pane_key(p, key); /* once per session */
	}
}

/* Open a new shell in session (on the thread pool). */
void
tui_open_shell(struct tui *t, const char *session)
{
	struct work *w = work_new(t, work_agent_call, open_after);

	w->session = xstrdup(session);
	w->request = agent_req_open_shell(NULL, t->lay.pane.w, t->lay.pane.h);
	work_queue(w);
	tui_message(t, 0, "opening a shell in %s ...", session);
}

/*
 * Idle callback while panes have backlogs: a time slice each, round robin;
 * the loop polls the keyboard between calls. Stops when all are parsed.
 */
static void
drain_cb(uv_idle_t *h)
{
	struct tui *t = h->data;
	int left = 0;

	for (size_t i = 0; i < t->npanes + t->ntiles; i++) {
		struct pane *p =
		    i < t->npanes ? t->panes[i] : t->tiles[i - t->npanes];
		if (!pane_backlogged(p))
			continue;
		if (pane_drain(p, pane_clock_us() + 4000))
			left = 1;
		else
			pane_resume(p);
	}
	if (!left) {
		uv_idle_stop(h);
		t->draining = 0;
	}
}

/* Some pane has a backlog: parse it from the idle callback. */
void
tui_drain_start(struct tui *t)
{
	if (t->draining)
		return;
	t->draining = 1;
	uv_idle_start(&t->drain, drain_cb);
}

/* stdin readable: keys. */
static void
stdin_cb(uv_poll_t *h, int status, int events)
{
	struct tui *t = h->data;

	t->typed_at = mono_ms();
	input_read(t);
	if (t->quit)
		uv_stop(t->loop);
}

/* SIGWINCH: the terminal's size changed. */
static void
winch_cb(uv_signal_t *h, int sig)
{
	tui_relayout(h->data);
}

/* SIGTERM, SIGHUP: detach cleanly (VMs and shells keep running). */
static void
term_cb(uv_signal_t *h, int sig)
{
	struct tui *t = h->data;

	t->quit = 1;
	t->quit_status = 128 + sig;
	uv_stop(t->loop);
}

/*
 * Every TICK_MS: refresh the model, expire messages, keep tiles current.
 * While someone types, the refresh waits (up to TICK_TYPING_MS): asking
 * every agent for its shells costs the guests CPU, and under TCG a key's
 * echo that meets it waits for it (the TUI's p99 over vmux shell's).
 */
static void
tick_cb(uv_timer_t *h)
{
	struct tui *t = h->data;
	uint64_t now = mono_ms();

	if (now - t->typed_at >= TICK_MS ||
	    now - t->model_at >= TICK_TYPING_MS) {
		if (t->nhosts > 0)
			hosts_refresh(t, 1);
		else
			model_refresh(t);
	}
	sync_sel(t);
	if (t->message != NULL || t->jobs != NULL || t->mode == MODE_GRID)
		draw_schedule(t);
}

/* Load the config and theme; their errors become messages. */
static void
tui_config(struct tui *t)
{
	char *path = t->opts.config ? xstrdup(t->opts.config) : config_path();
	char *cause = NULL;
	const char *name;

	config_defaults(&t->cfg);
	if (path != NULL)
		config_load(&t->cfg, path);
	free(path);
	name = t->opts.theme ? t->opts.theme : t->cfg.theme;
	if (theme_load(&t->theme, name, &cause) != 0) {
		t->cfg.errors = xreallocarray(
		    t->cfg.errors, t->cfg.nerrors + 1, sizeof *t->cfg.errors);
		t->cfg.errors[t->cfg.nerrors++] = cause;
		if (theme_load(&t->theme, "default", &cause) != 0)
			NEVER("the built-in default theme does not load");
	}
	t->sidebar_on = t->cfg.sidebar && !t->opts.no_sidebar;
}

/* Free everything (the terminal is already restored). */
static void
tui_free(struct tui *t)
{
	for (size_t i = 0; i < t->npanes; i++)
		pane_free(t->panes[i]);
	free(t->panes);
	free(t->status_drawn);
	free(t->sidebar_line_row);
	for (size_t i = 0; i < t->ntiles; i++)
		pane_free(t->tiles[i]);
	free(t->tiles);
	free(t->strike.cells);
	model_free(&t->model);
	hosts_free(t);
	config_free(&t->cfg);
	theme_free(&t->theme);
	textview_clear(&t->output);
	free(t->home);
	free(t->cur_session);
	free(t->cur_shell);
	free(t->message);
	free(t->paste_buf);
	free(t->grid_filter);
	free(t->prompt.label);
	free(t->prompt.text);
	for (size_t i = 0; i < t->prompt.nhist; i++)
		free(t->prompt.hist[i]);
	free(t->prompt.hist);
	menu_close(t);
	free(t->copy.search);
}

/* Close a handle if it was initialised (walk callback). */
static void
close_walk(uv_handle_t *h, void *arg)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

/* Run the TUI until detach; its exit status. */
int
tui_main(const struct tui_opts *opts)
{
	struct tui tui, *t = &tui;
	char *cause = NULL;
	int status;

	memset(t, 0, sizeof *t);
	t->opts = *opts;
	setlocale(LC_ALL, "");
	if (opts->local == NULL && (t->home = session_home(&cause)) == NULL) {
		fprintf(stderr, "vmux: %s\n", cause);
		free(cause);
		return 125;
	}
	if (t->home == NULL)
		t->home = xstrdup("");
	if (hosts_open(t, &cause) != 0) {
		fprintf(stderr, "vmux: %s\n", cause);
		free(cause);
		free(t->home);
		return 125;
	}
	tui_config(t);
	t->loop = xmalloc(sizeof *t->loop);
	uv_loop_init(t->loop);
	uv_timer_init(t->loop, &t->frame_timer);
	t->frame_timer.data = t;
	uv_idle_init(t->loop, &t->drain);
	t->drain.data = t;
	draw_init(t);
	input_init(t);
	if (t->cfg.nerrors > 0) { /* every bad line, on the status bar */
		char *all = xstrdup(t->cfg.errors[0]), *s;
		for (size_t i = 1; i < t->cfg.nerrors; i++) {
			xasprintf(&s, "%s; %s", all, t->cfg.errors[i]);
			free(all);
			all = s;
		}
		tui_message(t, 1, "%s", all);
		t->message_until += 5000; /* longer: it explains a surprise */
		free(all);
	}
	t->want_shell = opts->session != NULL;
	tui_relayout(t);

	uv_poll_init(t->loop, &t->stdin_poll, STDIN_FILENO);
	t->stdin_poll.data = t;
	uv_poll_start(&t->stdin_poll, UV_READABLE, stdin_cb);
	uv_signal_init(t->loop, &t->sigwinch);
	t->sigwinch.data = t;
	uv_signal_start(&t->sigwinch, winch_cb, SIGWINCH);
	uv_signal_init(t->loop, &t->sigterm);
	t->sigterm.data = t;
	uv_signal_start(&t->sigterm, term_cb, SIGTERM);
	uv_signal_init(t->loop, &t->sighup);
	t->sighup.data = t;
	uv_signal_start(&t->sighup, term_cb, SIGHUP);
	uv_timer_init(t->loop, &t->tick_timer);
	t->tick_timer.data = t;
	uv_timer_start(&t->tick_timer, tick_cb, TICK_MS, TICK_MS);

	if (opts->local != NULL) {
		/* panes "local:cmd-1" ... on host PTYs; n and p switch */
		for (int i = 0; i < opts->nlocal; i++) {
			char id[16];
			struct pane *p;
			snprintf(id, sizeof id, "cmd-%d", i + 1);
			p = tui_add_pane(t, &local_source, "local", id,
			    t->lay.pane.w, t->lay.pane.h);
			p->command = xstrdup(opts->local[i]);
			if (pane_start(p) != 0)
				tui_message(t, 1, "%s", p->error);
		}
		t->cur_session = xstrdup("local");
		t->cur_shell = xstrdup("cmd-1");
	} else {
		t->cur_session = opts->session ? xstrdup(opts->session) : NULL;
		model_refresh(t);
		if (opts->grid)
			grid_open(t);
	}
	draw_schedule(t);

	uv_run(t->loop, UV_RUN_DEFAULT);

	/* detach: streams close, VMs and shells keep running */
	status = t->quit_status;
	t->quit = 1; /* late work and jobs no longer call back */
	jobs_cancel_all(t);
	putp("\033[?2004l");
	endwin();
	tui_free(t); /* panes close their own handles */
	uv_walk(t->loop, close_walk, NULL);
	/* handles close; pool work still blocked on a hung VM is left */
	uv_run(t->loop, UV_RUN_NOWAIT);
	if (status == 0 && opts->local == NULL)
		printf("[detached from vmux; sessions and shells keep "
		       "running]\n");
	return status;
}
