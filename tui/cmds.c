/*
 * cmds.c: the TUI's own commands, which key bindings name and the prompt
 * accepts ("zoom", "new-shell", "signal-menu", ...). A prompt line whose
 * first word is not one of them is a vmux CLI command (`new web --cpus 2`,
 * `rm -f web`, `cp ./x web:/root`) and runs as a child (jobs.c), so every
 * CLI operation and flag works here too.
 */
#include <ncurses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "cli/cli.h"
#include "tui.h"

struct tui_cmd {
	const char *name;
	int mutates; /* refused in a read-only TUI */
	void (*fn)(struct tui *, int argc, char **argv);
};

/* Split a line into words: blanks separate, quotes group; NULL-ended. */
static char **
split_words(const char *s, int *argc)
{
	char **v = xcalloc(strlen(s) / 2 + 2, sizeof *v);
	char *w = xmalloc(strlen(s) + 1);
	int n = 0;

	while (*s != '\0') {
		size_t len = 0;
		char q = 0;
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s == '\0')
			break;
		for (; *s != '\0' && (q || (*s != ' ' && *s != '\t')); s++) {
			if (q && *s == q)
				q = 0;
			else if (!q && (*s == '"' || *s == '\''))
				q = *s;
			else if (*s == '\\' && q != '\'' && s[1] != '\0')
				w[len++] = *++s;
			else
				w[len++] = *s;
		}
		v[n++] = xstrndup(w, len);
	}
	free(w);
	*argc = n;
	return v;
}

/* Free split_words' result. */
static void
free_words(char **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* The selected session's model entry, or NULL. */
static struct msession *
cur_session(struct tui *t)
{
	return model_session(&t->model, t->cur_session);
}

/* new-shell [SESSION]: open a shell in the selected session. */
static void
c_new_shell(struct tui *t, int argc, char **argv)
{
	const char *s = argc > 1 ? argv[1] : t->cur_session;

	if (s == NULL) {
		tui_message(t, 1, "no session selected (prefix N creates one)");
		return;
	}
	tui_open_shell(t, s);
}

/* Step through the current session's shells by delta. */
static void
step_shell(struct tui *t, int delta)
{
	struct msession *s = cur_session(t);
	size_t i = 0;

	if (t->opts.local != NULL && t->npanes > 0) {
		/* local panes: no model, step through them */
		for (; i < t->npanes; i++)
			if (t->panes[i] == tui_pane(t))
				break;
		i = (i + t->npanes + (size_t)(delta + (int)t->npanes)) %
		    t->npanes;
		if (t->panes[i]->shell_id == NULL)
			return; /* can't happen: local mode has no other kinds
			         */
		free(t->cur_shell);
		t->cur_shell = xstrdup(t->panes[i]->shell_id);
		pane_resize(t->panes[i], t->lay.pane.w, t->lay.pane.h);
		pane_mark_all(t->panes[i]);
		t->full_redraw = 1;
		return;
	}
	if (s == NULL || s->nshells == 0)
		return;
	for (; i < s->nshells; i++)
		if (t->cur_shell && strcmp(s->shells[i].id, t->cur_shell) == 0)
			break;
	if (i == s->nshells)
		i = 0;
	else
		i = (i + s->nshells + (size_t)(delta + (int)s->nshells)) %
		    s->nshells;
	tui_select(t, s->name, s->shells[i].id);
}

/* next-shell: the session's next shell. */
static void
c_next_shell(struct tui *t, int argc, char **argv)
{
	step_shell(t, 1);
}

/* previous-shell: the session's previous shell. */
static void
c_previous_shell(struct tui *t, int argc, char **argv)
{
	step_shell(t, -1);
}

/* select-shell N: the session's Nth shell (from 0). */
static void
c_select_shell(struct tui *t, int argc, char **argv)
{
	struct msession *s = cur_session(t);
	int n = argc > 1 ? atoi(argv[1]) : 0;

	if (s == NULL || n < 0 || (size_t)n >= s->nshells) {
		tui_message(t, 1, "no shell %d here", n);
		return;
	}
	tui_select(t, s->name, s->shells[n].id);
}

/* select SESSION[:SHELL] */
static void
c_select(struct tui *t, int argc, char **argv)
{
	char *name, *colon;

	if (argc < 2) {
		tui_message(t, 1, "select needs SESSION[:SHELL]");
		return;
	}
	name = xstrdup(argv[1]);
	colon = strchr(name, ':');
	if (colon != NULL)
		*colon++ = '\0';
	tui_select(t, name, colon);
	free(name);
}

/* Step through sessions by delta. */
static void
step_session(struct tui *t, int delta)
{
	size_t i = 0, n = t->model.n;

	if (n == 0)
		return;
	for (; i < n; i++)
		if (t->cur_session &&
		    strcmp(t->model.sessions[i].name, t->cur_session) == 0)
			break;
	i = i == n ? 0 : (i + n + (size_t)(delta + (int)n)) % n;
	tui_select(t, t->model.sessions[i].name, NULL);
}

/* next-session: the next session in the list. */
static void
c_next_session(struct tui *t, int argc, char **argv)
{
	step_session(t, 1);
}

/* previous-session: the previous session. */
static void
c_previous_session(struct tui *t, int argc, char **argv)
{
	step_session(t, -1);
}

/* Move the sidebar selection and open what it lands on. */
static void
step_list(struct tui *t, int delta)
{
	int n;

	tui_sidebar_rows(t, &n);
	if (n == 0)
		return;
	t->sel = (t->sel + delta + n) % n;
	tui_sidebar_pick(t, t->sel);
}

/* next-shell-in-list: the sidebar's next row. */
static void
c_next_in_list(struct tui *t, int argc, char **argv)
{
	step_list(t, 1);
}

/* previous-shell-in-list: the sidebar's previous row. */
static void
c_previous_in_list(struct tui *t, int argc, char **argv)
{
	step_list(t, -1);
}

/* choose-session: keys move the sidebar's selection. */
static void
c_choose_session(struct tui *t, int argc, char **argv)
{
	t->mode = MODE_SIDEBAR;
	if (!t->sidebar_on || t->zoomed) {
		t->sidebar_on = 1;
		t->zoomed = 0;
		tui_relayout(t);
	}
}

/* Close the current shell, once confirmed. */
static void
close_after(struct tui *t, struct work *w)
{
	if (w->rc != 0)
		tui_message(t, 1, "close %s: %s", w->shell, w->cause);
	else
		tui_message(t, 0, "closed %s:%s", w->session, w->shell);
	model_refresh(t);
}

/* close-shell: close the current shell (no question). */
static void
c_close_shell(struct tui *t, int argc, char **argv)
{
	struct pane *p = tui_key_pane(t);
	struct work *w;

	if (p == NULL || !p->src->shell)
		return;
	w = work_new(t, work_agent_call, close_after);
	w->session = xstrdup(p->session);
	w->shell = xstrdup(p->shell_id);
	w->request = agent_req_close_shell(p->shell_id);
	work_queue(w);
}

/* The close question answered (0: yes). */
static void
close_confirmed(struct tui *t, int choice, void *arg)
{
	if (choice == 0)
		c_close_shell(t, 0, NULL);
}

/* confirm-close-shell: ask, then close the current shell. */
static void
c_confirm_close_shell(struct tui *t, int argc, char **argv)
{
	struct pane *p = tui_key_pane(t);
	char *q;

	if (p == NULL || !p->src->shell)
		return;
	xasprintf(&q, "close shell %s:%s?", p->session, p->shell_id);
	confirm_open(t, q, close_confirmed, NULL);
	free(q);
}

/* Is the one line j printed (len bytes) the name `vmux new` prints (as
 * docker run -d prints the id)? Then "done" says it better. */
static int
echoes_name(const struct job *j, size_t len)
{
	char name[256];

	if (strncmp(j->what, "new ", 4) != 0 || len >= sizeof name)
		return 0;
	memcpy(name, j->outbuf, len);
	name[len] = '\0';
	return strstr(j->what, name) != NULL;
}

/*
 * The vmux CLI finished a command started from the TUI. What it printed
 * is shown: one line as the message, more in the output view (`:status`,
 * `:logs NAME`, `:exec NAME -- CMD`), as tmux shows a command's output.
 */
static void
cli_done(struct tui *t, struct job *j)
{
	char *line = job_error_line(j), *nl = NULL;
	size_t len = j->outlen;

	while (len > 0 && j->outbuf[len - 1] == '\n')
		len--;
	if (len > 0)
		nl = memchr(j->outbuf, '\n', len);
	if (nl != NULL && !j->transfer) {
		textview_set(&t->output, j->what, j->outbuf, len);
		if (t->mode == MODE_NORMAL && !t->prompt.on && !t->copy.on) {
			t->mode = MODE_OUTPUT;
			t->full_redraw = 1;
		}
	}
	if (j->status != 0 || j->term_signal != 0)
		tui_message(t, 1, "%s: %s", j->what, line);
	else if (nl != NULL && t->mode != MODE_OUTPUT)
		tui_message(t, 0,
		    "%s: done (:show-output shows what it printed)", j->what);
	else if (len > 0 && nl == NULL && !echoes_name(j, len)) {
		char *one = xstrndup(j->outbuf, len), *out;
		out = str_printable(one, 0);
		tui_message(t, 0, "%s: %s", j->what, out);
		free(out);
		free(one);
	} else
		tui_message(t, 0, "%s: done", j->what);
	free(line);
	model_refresh(t);
}

/* Run the vmux CLI with argv (argv[0] is the command name). */
static void
run_cli(struct tui *t, int argc, char **argv)
{
	char **v = xcalloc((size_t)argc + 2, sizeof *v);
	int transfer = strcmp(argv[0], "cp") == 0;

	v[0] = "vmux";
	for (int i = 0; i < argc; i++)
		v[i + 1] = argv[i];
	if (transfer) {
		/* progress as lines the TUI reads */
		v = xreallocarray(v, (size_t)argc + 3, sizeof *v);
		memmove(v + 3, v + 2, (size_t)(argc - 1) * sizeof *v);
		v[2] = "--progress-lines";
		v[argc + 2] = NULL;
	}
	if (job_start(t, v, transfer, cli_done, NULL) != 0)
		tui_message(t, 1, "cannot run vmux %s", argv[0]);
	free(v);
	model_refresh(t);
}

/* The remove question answered (0: yes); arg is the name. */
static void
rm_confirmed(struct tui *t, int choice, void *arg)
{
	char *argv[] = {"rm", "-f", arg, NULL};

	if (choice == 0)
		run_cli(t, 3, argv);
	free(arg);
}

/* confirm-remove-session [NAME]: ask, then `vmux rm -f`. */
static void
c_confirm_remove_session(struct tui *t, int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : t->cur_session;
	char *q;

	if (name == NULL)
		return;
	/* say what is lost: a hurried yes must not surprise anyone */
	xasprintf(&q,
	    "remove session %s: its VM, shells AND workspace (every file in "
	    "/workspace)?",
	    name);
	confirm_open(t, q, rm_confirmed, xstrdup(name));
	free(q);
}

/* zoom: the pane takes all but the status line, or back. */
static void
c_zoom(struct tui *t, int argc, char **argv)
{
	t->zoomed = !t->zoomed;
	tui_relayout(t);
}

/* console: the current session's serial console, or back to its shell. */
static void
c_console(struct tui *t, int argc, char **argv)
{
	tui_console_toggle(t);
}

/* broadcast: keys to every shown session's shell, or back to one. */
static void
c_broadcast(struct tui *t, int argc, char **argv)
{
	tui_broadcast_toggle(t);
}

/* toggle-sidebar: hide or show the sidebar. */
static void
c_toggle_sidebar(struct tui *t, int argc, char **argv)
{
	t->sidebar_on = !t->sidebar_on;
	tui_relayout(t);
}

/* copy-mode [-u]: enter copy mode (-u: a page up). */
static void
c_copy_mode(struct tui *t, int argc, char **argv)
{
	if (tui_pane(t) != NULL)
		copy_enter(t, argc > 1 && strcmp(argv[1], "-u") == 0);
}

/* paste: type the copy buffer into the shell. */
static void
c_paste(struct tui *t, int argc, char **argv)
{
	struct pane *p = tui_key_pane(t);

	if (p == NULL || t->paste_buf == NULL) {
		tui_message(t, 1, "nothing to paste (copy mode copies)");
		return;
	}
	pane_paste(p, t->paste_buf, t->paste_len, p->bracketed);
}

/* detach: leave; VMs and shells keep running. */
static void
c_detach(struct tui *t, int argc, char **argv)
{
	t->quit = 1;
	t->quit_status = 0;
}

/* show-output: the last command's output again. */
static void
c_show_output(struct tui *t, int argc, char **argv)
{
	if (t->output.text == NULL) {
		tui_message(t, 1, "no command has printed anything yet");
		return;
	}
	t->mode = MODE_OUTPUT;
	t->full_redraw = 1;
}

/* help: every binding. */
static void
c_help(struct tui *t, int argc, char **argv)
{
	t->mode = MODE_HELP;
	t->help_scroll = 0;
	t->full_redraw = 1;
}

/* The prompt's answer: a command line. */
static void
prompt_done(struct tui *t, const char *line, void *arg)
{
	if (line != NULL && *line != '\0')
		cmd_run(t, line);
}

/* command-prompt [TEXT...]: the prompt, TEXT typed. */
static void
c_command_prompt(struct tui *t, int argc, char **argv)
{
	char *init = NULL;

	for (int i = 1; i < argc; i++) {
		char *s;
		xasprintf(
		    &s, "%s%s%s ", init ? init : "", init ? " " : "", argv[i]);
		free(init);
		init = s;
	}
	prompt_open(t, ":", init ? init : "", 1, prompt_done, NULL);
	free(init);
}

/* new-session: the prompt with `new ` typed. */
static void
c_new_session(struct tui *t, int argc, char **argv)
{
	char *v[] = {"command-prompt", "new", NULL};

	c_command_prompt(t, 2, v);
	tui_message(t, 0,
	    "new NAME [--image REF] [--cpus N] [--memory MB] [--accel A] ...");
}

/* The signals the signal menu offers, in its order. */
static const char *const signals[] = {"INT", "TERM", "KILL", "HUP", "QUIT",
    "TSTP", "CONT", "USR1", "USR2", "WINCH"};

/* The signal menu answered: send the chosen signal. */
static void
signal_chosen(struct tui *t, int choice, void *arg)
{
	struct pane *p = tui_key_pane(t);

	if (choice < 0 || p == NULL)
		return;
	pane_signal(p, signals[choice]);
	tui_message(t, 0, "sent SIG%s to %s's foreground job", signals[choice],
	    pane_name(p));
}

/* signal-menu: choose a signal for the foreground job. */
static void
c_signal_menu(struct tui *t, int argc, char **argv)
{
	static const char *const items[] = {"INT   interrupt (C-c)",
	    "TERM  terminate", "KILL  kill", "HUP   hang up", "QUIT  quit",
	    "TSTP  stop (C-z)", "CONT  continue", "USR1", "USR2",
	    "WINCH window changed"};
	struct pane *p = tui_key_pane(t);

	if (p == NULL || !pane_can_signal(p)) {
		tui_message(t, 1, "no live shell to signal");
		return;
	}
	menu_open(t, "signal to the foreground job", items, nitems(items),
	    signal_chosen, NULL);
}

/* send-signal SIG: signal the foreground job. */
static void
c_send_signal(struct tui *t, int argc, char **argv)
{
	struct pane *p = tui_key_pane(t);

	if (p != NULL && argc > 1)
		pane_signal(p, argv[1]);
}

/* send-prefix: the prefix key itself to the shell. */
static void
c_send_prefix(struct tui *t, int argc, char **argv)
{
	struct pane *p = tui_key_pane(t);

	if (p != NULL)
		pane_key(p, t->cfg.prefix);
}

/* refresh: redraw everything, reread the sessions. */
static void
c_refresh(struct tui *t, int argc, char **argv)
{
	struct pane *p = tui_pane(t);

	clearok(curscr, TRUE);
	t->full_redraw = 1;
	if (p != NULL)
		pane_mark_all(p);
	model_refresh(t);
}

/* Upload: ask for the host path, then the guest destination. */
static void
upload_dest(struct tui *t, const char *dest, void *arg)
{
	char *src = arg, *target, *argv[4];

	if (dest != NULL && *dest != '\0' && t->cur_session != NULL) {
		xasprintf(&target, "%s:%s", t->cur_session, dest);
		argv[0] = "cp";
		argv[1] = src;
		argv[2] = target;
		argv[3] = NULL;
		run_cli(t, 3, argv);
		free(target);
	}
	free(src);
}

/* Upload: the source answered; ask for the destination. */
static void
upload_src(struct tui *t, const char *src, void *arg)
{
	if (src == NULL || *src == '\0')
		return;
	prompt_open(t, "upload to (guest path): ", "/root/", 3, upload_dest,
	    xstrdup(src));
}

/* upload: ask for a host path, then a guest path. */
static void
c_upload(struct tui *t, int argc, char **argv)
{
	if (t->cur_session == NULL) {
		tui_message(t, 1, "no session selected");
		return;
	}
	prompt_open(t, "upload (host path): ", "", 2, upload_src, NULL);
}

/* Download: ask for the guest path, then the host directory. */
static void
download_dest(struct tui *t, const char *dest, void *arg)
{
	char *src = arg, *from, *argv[4];

	if (dest != NULL && *dest != '\0' && t->cur_session != NULL) {
		xasprintf(&from, "%s:%s", t->cur_session, src);
		argv[0] = "cp";
		argv[1] = from;
		argv[2] = (char *)dest;
		argv[3] = NULL;
		run_cli(t, 3, argv);
		free(from);
	}
	free(src);
}

/* Download: the source answered; ask for the directory. */
static void
download_src(struct tui *t, const char *src, void *arg)
{
	if (src == NULL || *src == '\0')
		return;
	prompt_open(
	    t, "download to (host dir): ", ".", 2, download_dest, xstrdup(src));
}

/* download: ask for a guest path, then a host directory. */
static void
c_download(struct tui *t, int argc, char **argv)
{
	if (t->cur_session == NULL) {
		tui_message(t, 1, "no session selected");
		return;
	}
	prompt_open(
	    t, "download (guest path): ", "/root/", 3, download_src, NULL);
}

/* Transfers: a menu; the chosen one is cancelled. */
static void
transfer_chosen(struct tui *t, int choice, void *arg)
{
	int i = 0;

	for (struct job *j = t->jobs; j != NULL; j = j->next) {
		if (j->exited)
			continue;
		if (i++ == choice) {
			job_cancel(j);
			tui_message(t, 0, "cancelled %s", j->what);
			return;
		}
	}
}

/* transfers: running jobs; Enter cancels one. */
static void
c_transfers(struct tui *t, int argc, char **argv)
{
	const char *items[32];
	size_t n = 0;

	for (struct job *j = t->jobs; j != NULL && n < nitems(items);
	     j = j->next)
		if (!j->exited)
			items[n++] = j->what;
	if (n == 0) {
		tui_message(t, 0, "no transfers or commands running");
		return;
	}
	menu_open(t, "Enter cancels", items, n, transfer_chosen, NULL);
}

/* The recordings the replay menu offers: their directory and names. */
static char *replay_dir;
static char **replay_files;
static size_t replay_nfiles;

/* A recording picked from the menu: play it. */
static void
replay_chosen(struct tui *t, int choice, void *arg)
{
	char *path;

	if (choice < 0 || (size_t)choice >= replay_nfiles)
		return;
	xasprintf(&path, "%s/%s", replay_dir, replay_files[choice]);
	tui_replay_open(t, path);
	free(path);
}

/*
 * replay [FILE]: play a recording in place of the shell (Space pauses,
 * arrows seek, +/- speed); without FILE, a menu of the session's
 * recordings, or back to the shell when one is playing.
 */
static void
c_replay(struct tui *t, int argc, char **argv)
{
	char *path;

	if (argc > 1) {
		tui_replay_open(t, argv[1]);
		return;
	}
	if (t->aside == &replay_source) {
		tui_replay_open(t, NULL);
		return;
	}
	if (t->cur_session == NULL) {
		tui_message(t, 1, "no session selected");
		return;
	}
	for (size_t i = 0; i < replay_nfiles; i++)
		free(replay_files[i]);
	free(replay_files);
	free(replay_dir);
	path = session_dir(t->home, t->cur_session);
	xasprintf(&replay_dir, "%s/recordings", path);
	free(path);
	if (recording_files(replay_dir, &replay_files, &replay_nfiles) != 0 ||
	    replay_nfiles == 0) {
		tui_message(t, 1,
		    "%s has no recordings (vmux new --record makes them)",
		    t->cur_session);
		return;
	}
	menu_open(t, "recordings: Enter plays",
	    (const char *const *)replay_files,
	    replay_nfiles < 256 ? replay_nfiles : 256, replay_chosen, NULL);
}

/* grid: the teacher's grid, or back. */
static void
c_grid(struct tui *t, int argc, char **argv)
{
	if (t->mode == MODE_GRID)
		grid_close(t);
	else
		grid_open(t);
}

/* theme [NAME]: say or change the theme. */
static void
c_theme(struct tui *t, int argc, char **argv)
{
	struct theme th;
	char *cause = NULL;

	if (argc < 2) {
		tui_message(t, 0, "theme %s", t->theme.name);
		return;
	}
	if (theme_load(&th, argv[1], &cause) != 0) {
		tui_message(t, 1, "%s", cause);
		free(cause);
		return;
	}
	theme_free(&t->theme);
	t->theme = th;
	draw_theme_apply(t);
}

/* takeover: hold the shell's keyboard (others' keys dropped), or hand it
 * back. */
static void
c_takeover(struct tui *t, int argc, char **argv)
{
	tui_takeover(t);
}

static const struct tui_cmd tui_cmds[] = {
    {"broadcast", 0, c_broadcast},
    {"choose-session", 0, c_choose_session},
    {"close-shell", 1, c_close_shell},
    {"command-prompt", 0, c_command_prompt},
    {"console", 0, c_console},
    {"confirm-close-shell", 1, c_confirm_close_shell},
    {"confirm-remove-session", 1, c_confirm_remove_session},
    {"copy-mode", 0, c_copy_mode},
    {"detach", 0, c_detach},
    {"download", 1, c_download},
    {"grid", 0, c_grid},
    {"help", 0, c_help},
    {"new-session", 1, c_new_session},
    {"new-shell", 1, c_new_shell},
    {"next-session", 0, c_next_session},
    {"next-shell", 0, c_next_shell},
    {"next-shell-in-list", 0, c_next_in_list},
    {"paste", 1, c_paste},
    {"previous-session", 0, c_previous_session},
    {"previous-shell", 0, c_previous_shell},
    {"previous-shell-in-list", 0, c_previous_in_list},
    {"refresh", 0, c_refresh},
    {"replay", 0, c_replay},
    {"select", 0, c_select},
    {"select-shell", 0, c_select_shell},
    {"send-prefix", 1, c_send_prefix},
    {"send-signal", 1, c_send_signal},
    {"show-output", 0, c_show_output},
    {"signal-menu", 1, c_signal_menu},
    {"takeover", 1, c_takeover},
    {"theme", 0, c_theme},
    {"toggle-sidebar", 0, c_toggle_sidebar},
    {"transfers", 0, c_transfers},
    {"upload", 1, c_upload},
    {"zoom", 0, c_zoom},
};

/* The TUI command called name, or NULL. */
static const struct tui_cmd *
tui_cmd_find(const char *name)
{
	for (size_t i = 0; i < nitems(tui_cmds); i++)
		if (strcmp(tui_cmds[i].name, name) == 0)
			return &tui_cmds[i];
	return NULL;
}

/* The TUI's command names then the CLI's, NULL-ended (static storage). */
const char *const *
tui_command_names(void)
{
	static const char *names[nitems(tui_cmds) + 64];

	if (names[0] == NULL) {
		size_t n = 0;
		for (size_t i = 0; i < nitems(tui_cmds); i++)
			names[n++] = tui_cmds[i].name;
		for (size_t i = 0;
		     cmd_table[i] != NULL && n + 1 < nitems(names); i++)
			names[n++] = cmd_table[i]->name;
	}
	return names;
}

/* Run a command line; 0, or -1 after a message. */
int
cmd_run(struct tui *t, const char *line)
{
	const struct tui_cmd *c;
	const struct cmd_entry *e;
	int argc, rc = 0;
	char **argv = split_words(line, &argc);

	if (argc == 0) {
		free_words(argv, argc);
		return 0;
	}
	if ((c = tui_cmd_find(argv[0])) != NULL) {
		if (c->mutates && t->opts.read_only) {
			tui_message(t, 1, "%s: this TUI is read-only", argv[0]);
			rc = -1;
		} else
			c->fn(t, argc, argv);
	} else if ((e = cmd_find(argv[0])) != NULL) {
		if (t->opts.read_only && !(e->flags & CMD_READONLY)) {
			tui_message(t, 1, "%s: this TUI is read-only", argv[0]);
			rc = -1;
		} else if (e->flags & CMD_OWN_TERMINAL) {
			tui_message(t, 1,
			    "%s needs its own terminal: use "
			    "prefix c, or select a shell",
			    argv[0]);
			rc = -1;
		} else
			run_cli(t, argc, argv);
	} else {
		tui_message(t, 1,
		    "unknown command \"%s\" (prefix ? lists "
		    "them)",
		    argv[0]);
		rc = -1;
	}
	free_words(argv, argc);
	draw_schedule(t);
	return rc;
}
