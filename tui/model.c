/*
 * model.c: what the sessions and their shells are, as the sidebar, the
 * status bar and the grid show them. model_fetch reads the session records
 * and asks each running agent for its shells, all at once, each under its
 * own deadline, so one hung or hostile guest delays nobody else by more
 * than that deadline and marks only its own session. It blocks, so
 * model_refresh runs it on the thread pool and swaps the result in on the
 * loop. The TUI owns the current model; a fetch builds a new one.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/common.h"
#include "tui.h"

#define MODEL_CONNECT_MS 1500
#define MODEL_REPLY_MS   2500
#define MODEL_THREADS    32 /* agents asked at once */

/* Free what m holds (m itself is the caller's). */
void
model_free(struct model *m)
{
	for (size_t i = 0; i < m->n; i++) {
		struct msession *s = &m->sessions[i];
		for (size_t j = 0; j < s->nshells; j++) {
			free(s->shells[j].id);
			free(s->shells[j].state);
			free(s->shells[j].command);
		}
		free(s->shells);
		free(s->name);
		free(s->host);
		free(s->state);
		free(s->accel);
		free(s->detail);
		free(s->error);
		free(s->group);
		free(s->check);
	}
	free(m->sessions);
	memset(m, 0, sizeof *m);
}

/* A string field of a JSON object, printable, or def (copied). */
static char *
json_str(const cJSON *o, const char *key, const char *def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (cJSON_IsString(v))
		return str_printable(v->valuestring, 0);
	return def == NULL ? NULL : xstrdup(def);
}

/* A number field, or def. */
static double
json_num(const cJSON *o, const char *key, double def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : def;
}

/* Ask a running session's agent for its shells. */
static void
fetch_shells(struct msession *ms, const struct session_record *r)
{
	struct vsock_target t;
	cJSON *req = agent_req_list_shells(), *reply, *s;
	const cJSON *arr;
	uint64_t now = mono_ms();
	char *cause = NULL;

	session_target(r, &t);
	reply = agent_call(&t, req, now + MODEL_CONNECT_MS,
	    now + MODEL_REPLY_MS, NULL, NULL, &cause);
	cJSON_Delete(req);
	if (reply == NULL) {
		ms->error = str_printable(cause, 0);
		free(cause);
		return;
	}
	arr = cJSON_GetObjectItemCaseSensitive(reply, "shells");
	ms->shells_known = cJSON_IsArray(arr);
	ms->shells =
	    xcalloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof *ms->shells);
	cJSON_ArrayForEach(s, arr)
	{
		struct mshell *sh = &ms->shells[ms->nshells];
		if ((sh->id = json_str(s, "shell_id", NULL)) == NULL)
			continue;
		sh->state = json_str(s, "state", "?");
		sh->command = agent_shell_command(s, "");
		sh->clients = (int)json_num(s, "clients", 0);
		sh->cols = (int)json_num(s, "cols", 80);
		sh->rows = (int)json_num(s, "rows", 24);
		sh->output_bytes = (int64_t)json_num(s, "output_bytes", 0);
		sh->oldest_cursor = (int64_t)json_num(s, "oldest_cursor", 0);
		sh->started_at = json_num(s, "started_at", 0);
		ms->nshells++;
	}
	cJSON_Delete(reply);
}

/*
 * One line about a session for the sidebar: its policy while it is up
 * ("default net:off 4G"), who stopped it ("by ttl") or how QEMU ended
 * ("SIGKILL"). Free it.
 */
static char *
session_detail(const struct session_record *r, const char *state)
{
	struct session_exit x;
	struct stat st;
	char *s, disk[32] = "";

	if (strcmp(state, "stopped") == 0)
		return xstrdup(r->stop_reason != NULL ? r->stop_reason : "");
	if (strcmp(state, "paused") == 0) { /* asleep: any touch wakes it */
		char *when = time_rfc3339((double)r->paused);
		xasprintf(&s, "since %s", when != NULL ? when + 11 : "?");
		free(when);
		return s;
	}
	if (strcmp(state, "crashed") == 0) {
		if (session_exit_get(r, &x) != 0)
			return xstrdup("QEMU gone");
		if (x.cause[0] != '\0') /* vmux ended it: say why */
			xasprintf(&s, "%s", x.cause);
		else if (x.signal != 0)
			xasprintf(&s, "QEMU SIG%s",
			    sigabbrev_np(x.signal) != NULL
			        ? sigabbrev_np(x.signal)
			        : "?");
		else
			xasprintf(&s, "QEMU exit %d", x.code);
		return s;
	}
	if (r->workspace != NULL && stat(r->workspace, &st) == 0)
		snprintf(
		    disk, sizeof disk, " %lldG", (long long)(st.st_size >> 30));
	xasprintf(&s, "%s net:%s%s%s", r->profile != NULL ? r->profile : "-",
	    !net_has_nic(r)                      ? "off"
	        : r->net && r->nallow_hosts == 0 ? "nat"
	                                         : "allow",
	    r->nmounts > 0 ? " mnt" : "", disk);
	return s;
}

/* One agent to ask: where to put the answer, whom to ask. */
struct fetch_job {
	struct msession *ms;
	const struct session_record *rec;
	pthread_t thread;
	int started;
};

/* Thread: ask one agent. */
static void *
fetch_thread(void *arg)
{
	struct fetch_job *j = arg;

	fetch_shells(j->ms, j->rec);
	return NULL;
}

/* Ask the agents of jobs[0..n) at once, MODEL_THREADS at a time. */
static void
fetch_all(struct fetch_job *jobs, size_t n)
{
	for (size_t at = 0; at < n; at += MODEL_THREADS) {
		size_t end = at + MODEL_THREADS < n ? at + MODEL_THREADS : n;

		for (size_t i = at; i < end; i++) {
			jobs[i].started = pthread_create(&jobs[i].thread, NULL,
			                      fetch_thread, &jobs[i]) == 0;
			if (!jobs[i].started) /* no thread: ask it here */
				fetch_shells(jobs[i].ms, jobs[i].rec);
		}
		for (size_t i = at; i < end; i++) {
			if (jobs[i].started)
				pthread_join(jobs[i].thread, NULL);
		}
	}
}

/* The session's last `vmux check` result, for its sidebar line. */
static void
model_check(struct msession *ms, const char *dir)
{
	cJSON *c = session_check_read(dir);
	const cJSON *st, *line;
	char *text;

	if (c == NULL)
		return;
	st = cJSON_GetObjectItemCaseSensitive(c, "status");
	line = cJSON_GetObjectItemCaseSensitive(c, "line");
	if (cJSON_IsString(st)) {
		xasprintf(&text, "check %s%s%s", st->valuestring,
		    cJSON_IsString(line) && *line->valuestring ? ": " : "",
		    cJSON_IsString(line) ? line->valuestring : "");
		ms->check = str_printable(text, 0);
		ms->check_failed = strcmp(st->valuestring, "pass") != 0;
		free(text);
	}
	cJSON_Delete(c);
}

/* Order for qsort: by group (unset last), then name. */
static int
msession_cmp(const void *a, const void *b)
{
	const struct msession *x = a, *y = b;
	int c;

	if ((x->group[0] == '\0') != (y->group[0] == '\0'))
		return x->group[0] == '\0' ? 1 : -1;
	c = strcmp(x->group, y->group);
	return c != 0 ? c : strcmp(x->name, y->name);
}

/*
 * Read every session under home into m (which must be empty), with the
 * shells of the running ones: only those sel matches (if sel), grouped by
 * the label group_by (if group_by). Blocks up to MODEL_CONNECT_MS +
 * MODEL_REPLY_MS however many agents hang.
 */
int
model_fetch(const char *home, const struct selector *sel, const char *group_by,
    struct model *m, char **cause)
{
	struct session_entry *e;
	struct fetch_job *jobs;
	size_t n, njobs = 0;

	memset(m, 0, sizeof *m);
	if (session_list(home, &e, &n, cause) != 0)
		return -1;
	m->sessions = xcalloc(n + 1, sizeof *m->sessions);
	jobs = xcalloc(n + 1, sizeof *jobs);
	for (size_t i = 0; i < n; i++) {
		struct msession *ms;
		const char *g = NULL;
		if (sel != NULL &&
		    (!e[i].ok ||
		        !selector_match(
		            sel, e[i].rec.labels, e[i].rec.nlabels)))
			continue;
		if (group_by != NULL && e[i].ok)
			g = label_get(
			    e[i].rec.labels, e[i].rec.nlabels, group_by);
		ms = &m->sessions[m->n++];
		ms->name = xstrdup(e[i].name);
		ms->group = xstrdup(g != NULL ? g : "");
		if (!e[i].ok) {
			ms->state = xstrdup("broken");
			ms->error = str_printable(e[i].error, 0);
			continue;
		}
		model_check(ms, e[i].rec.dir);
		ms->state = xstrdup(session_state(&e[i].rec));
		ms->detail = session_detail(&e[i].rec, ms->state);
		ms->accel = xstrdup(e[i].rec.accel ? e[i].rec.accel : "?");
		ms->cpus = e[i].rec.cpus;
		ms->memory_mb = e[i].rec.memory_mb;
		if (strcmp(ms->state, "running") == 0) {
			jobs[njobs].ms = ms;
			jobs[njobs++].rec = &e[i].rec;
		}
	}
	fetch_all(jobs, njobs);
	free(jobs);
	session_list_free(e, n);
	if (group_by != NULL) /* the sidebar's rows follow this order */
		qsort(m->sessions, m->n, sizeof *m->sessions, msession_cmp);
	return 0;
}

/* The session called name, or NULL. */
struct msession *
model_session(struct model *m, const char *name)
{
	for (size_t i = 0; name != NULL && i < m->n; i++) {
		if (strcmp(m->sessions[i].name, name) == 0)
			return &m->sessions[i];
	}
	return NULL;
}

/* The shell id of s, or NULL. */
struct mshell *
model_shell(struct msession *s, const char *id)
{
	for (size_t i = 0; s != NULL && id != NULL && i < s->nshells; i++) {
		if (strcmp(s->shells[i].id, id) == 0)
			return &s->shells[i];
	}
	return NULL;
}

/* Mix string s (NULL allowed) into FNV-1a hash h. */
static uint64_t
mix(uint64_t h, const char *s)
{
	for (const char *c = s ? s : "-"; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ull;
	return (h ^ 0xff) * 1099511628211ull;
}

/* A hash of what the sidebar shows, to tell whether anything changed. */
static uint64_t
model_sig(const struct model *m)
{
	uint64_t h = 1469598103934665603ull;
	char buf[64];

	for (size_t i = 0; i < m->n; i++) {
		const struct msession *s = &m->sessions[i];
		h = mix(
		    mix(mix(mix(h, s->name), s->state), s->error), s->detail);
		h = mix(mix(mix(h, s->check), s->group), s->host);
		snprintf(buf, sizeof buf, "%d/%d/%zu", s->cpus, s->memory_mb,
		    s->nshells);
		h = mix(h, buf);
		for (size_t j = 0; j < s->nshells; j++) {
			const struct mshell *sh = &s->shells[j];
			h = mix(mix(mix(h, sh->id), sh->state), sh->command);
			snprintf(buf, sizeof buf, "%d %dx%d", sh->clients,
			    sh->cols, sh->rows);
			h = mix(h, buf);
		}
	}
	return h ^ m->n;
}

/* Pool thread: fetch. */
static void
refresh_work(struct work *w)
{
	/* opts.sel is fixed after tui_main; the group was copied */
	w->rc = model_fetch(
	    w->home, w->tui->opts.sel, w->group_by, &w->model, &w->cause);
}

/* Loop: make m (emptied) the model, redrawing what it changes. */
void
model_swap(struct tui *t, struct model *m)
{
	uint64_t sig = model_sig(m);

	model_free(&t->model);
	t->model = *m;
	memset(m, 0, sizeof *m);
	if (sig != t->model_sig) {
		/* something changed: show it (an idle TUI draws nothing) */
		t->model_sig = sig;
		tui_select(t, t->cur_session, t->cur_shell);
		if (t->mode == MODE_GRID)
			grid_sync(t);
		draw_schedule(t);
	}
}

/* Loop: swap the new model in and let the TUI react. */
static void
refresh_after(struct tui *t, struct work *w)
{
	t->model_busy = 0;
	t->model_at = mono_ms();
	if (w->rc != 0) {
		tui_message(t, 1, "%s", w->cause);
		return;
	}
	model_swap(t, &w->model);
	if (t->model_dirty) {
		t->model_dirty = 0;
		model_refresh(t);
	}
}

/* Fetch the model again (at most one fetch at a time). */
void
model_refresh(struct tui *t)
{
	struct work *w;

	if (t->opts.local != NULL)
		return;
	if (t->nhosts > 0) {
		hosts_refresh(t, 0);
		return;
	}
	if (t->model_busy) {
		t->model_dirty = 1;
		return;
	}
	t->model_busy = 1;
	w = work_new(t, refresh_work, refresh_after);
	if (tui_group_by(t) != NULL)
		w->group_by = xstrdup(tui_group_by(t));
	work_queue(w);
}
