/*
 * hosts.c: the TUI over several hosts (vmux tui -H lab1 -H lab2).
 *
 * Each host's sessions are fetched on their own, on the thread pool: this
 * machine's with model_fetch, another's by running `vmux tui --model-json`
 * there over ssh (host.c), under a deadline. What each last answered is
 * kept as JSON (model_to_json's form); the model the sidebar and the grid
 * show is rebuilt from all of them whenever one answers, each session
 * named HOST:NAME. So a host that is slow or gone delays nobody: its
 * sessions stay as they were, its heading says why, and it is asked again
 * at the next tick, which is how it reconnects. Shells of another host's
 * sessions are attached through host_stream (work.c's hosts_target). A
 * Slurm cluster is asked every 10 s at most: its answer costs an srun for
 * each of its running sessions (cli/slurm.c).
 * The TUI owns t->hosts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "tui.h"

#define HOSTS_FETCH_MS 8000               /* one host's answer */
#define HOSTS_PART_MAX (16 * 1024 * 1024) /* the most one may answer */
#define HOSTS_SESSIONS 4096               /* sessions kept from one host */
#define HOSTS_SHELLS   256                /* shells kept of one session */
#define HOSTS_VALUES   500000 /* values in one answer (json_values) */
/* a cluster is asked at most this often: each ask is an srun a session */
#define HOSTS_CLUSTER_MS 10000

/* Resolve the -H hosts into t->hosts. 0, or -1 with cause. */
int
hosts_open(struct tui *t, char **cause)
{
	struct settings s;
	size_t i;

	if (t->opts.nhosts == 0)
		return 0;
	if (settings_load_hosts(&s, cause) != 0)
		return -1;
	t->hosts = xcalloc(t->opts.nhosts, sizeof *t->hosts);
	for (i = 0; i < t->opts.nhosts; i++) {
		struct tui_host *th = &t->hosts[t->nhosts];
		const char *name = t->opts.hosts[i];
		if (strcmp(name, "local") != 0) {
			if (strchr(name, ':') != NULL) {
				xasprintf(cause,
				    "vmux tui -H takes host names ('%s' is a "
				    "URL: vmux host add NAME URL first)",
				    name);
				goto fail;
			}
			if (host_resolve(name, &s, &th->h, cause) != 0)
				goto fail;
		}
		th->name = xstrdup(name);
		t->nhosts++;
	}
	settings_free(&s);
	return 0;
fail:
	settings_free(&s);
	hosts_free(t);
	return -1;
}

/* Free t->hosts. */
void
hosts_free(struct tui *t)
{
	for (size_t i = 0; i < t->nhosts; i++) {
		free(t->hosts[i].name);
		host_free(&t->hosts[i].h);
		cJSON_Delete(t->hosts[i].part);
		free(t->hosts[i].error);
	}
	free(t->hosts);
	t->hosts = NULL;
	t->nhosts = 0;
}

/* m as a JSON array of sessions, each with its shells. */
cJSON *
model_to_json(const struct model *m)
{
	cJSON *arr = cJSON_CreateArray();

	for (size_t i = 0; i < m->n; i++) {
		const struct msession *s = &m->sessions[i];
		cJSON *o = cJSON_CreateObject(), *sh;
		cJSON_AddStringToObject(o, "name", s->name);
		cJSON_AddStringToObject(o, "state", s->state);
		if (s->detail != NULL)
			cJSON_AddStringToObject(o, "detail", s->detail);
		if (s->accel != NULL)
			cJSON_AddStringToObject(o, "accel", s->accel);
		if (s->error != NULL)
			cJSON_AddStringToObject(o, "error", s->error);
		cJSON_AddNumberToObject(o, "cpus", s->cpus);
		cJSON_AddNumberToObject(o, "memory_mb", s->memory_mb);
		cJSON_AddStringToObject(o, "group", s->group);
		if (s->check != NULL)
			cJSON_AddStringToObject(o, "check", s->check);
		cJSON_AddBoolToObject(o, "check_failed", s->check_failed);
		cJSON_AddBoolToObject(o, "shells_known", s->shells_known);
		sh = cJSON_AddArrayToObject(o, "shells");
		for (size_t j = 0; j < s->nshells; j++) {
			const struct mshell *x = &s->shells[j];
			cJSON *e = cJSON_CreateObject();
			cJSON_AddStringToObject(e, "id", x->id);
			cJSON_AddStringToObject(e, "state", x->state);
			cJSON_AddStringToObject(e, "command", x->command);
			cJSON_AddNumberToObject(e, "clients", x->clients);
			cJSON_AddNumberToObject(e, "cols", x->cols);
			cJSON_AddNumberToObject(e, "rows", x->rows);
			cJSON_AddNumberToObject(
			    e, "output_bytes", (double)x->output_bytes);
			cJSON_AddNumberToObject(
			    e, "oldest_cursor", (double)x->oldest_cursor);
			cJSON_AddNumberToObject(e, "started_at", x->started_at);
			cJSON_AddItemToArray(sh, e);
		}
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}

/* A string field, printable (another host's text reaches our screen). */
static char *
part_str(const cJSON *o, const char *key, const char *def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (cJSON_IsString(v))
		return str_printable(v->valuestring, 0);
	return def != NULL ? xstrdup(def) : NULL;
}

/* A number field within [lo, hi], else def. */
static double
part_num(const cJSON *o, const char *key, double lo, double hi, double def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo) ||
	    !(v->valuedouble <= hi))
		return def;
	return v->valuedouble;
}

/* Append th's sessions (its part) to m, named HOST:NAME. */
static void
part_add(struct model *m, const struct tui_host *th, int local)
{
	const cJSON *o;
	size_t kept = 0;

	if (!cJSON_IsArray(th->part))
		return;
	cJSON_ArrayForEach(o, th->part)
	{
		const cJSON *arr =
		                cJSON_GetObjectItemCaseSensitive(o, "shells"),
		            *e;
		char *name = part_str(o, "name", NULL);
		struct msession *s;
		if (name == NULL || session_name_valid(name, NULL) != 0) {
			free(name);
			continue;
		}
		if (kept++ == HOSTS_SESSIONS)
			break;
		m->sessions =
		    xreallocarray(m->sessions, m->n + 1, sizeof *m->sessions);
		s = &m->sessions[m->n++];
		memset(s, 0, sizeof *s);
		if (local)
			s->name = name;
		else {
			xasprintf(&s->name, "%s:%s", th->name, name);
			free(name);
		}
		s->host = xstrdup(th->name);
		s->state = part_str(o, "state", "?");
		s->detail = part_str(o, "detail", NULL);
		s->accel = part_str(o, "accel", NULL);
		s->error = part_str(o, "error", NULL);
		s->cpus = (int)part_num(o, "cpus", 0, 4096, 0);
		s->memory_mb = (int)part_num(o, "memory_mb", 0, 1 << 24, 0);
		s->group = part_str(o, "group", "");
		s->check = part_str(o, "check", NULL);
		s->check_failed = cJSON_IsTrue(
		    cJSON_GetObjectItemCaseSensitive(o, "check_failed"));
		s->shells_known = cJSON_IsTrue(
		    cJSON_GetObjectItemCaseSensitive(o, "shells_known"));
		if (!cJSON_IsArray(arr))
			continue;
		s->shells = xcalloc(HOSTS_SHELLS, sizeof *s->shells);
		cJSON_ArrayForEach(e, arr)
		{
			struct mshell *x = &s->shells[s->nshells];
			char *id = part_str(e, "id", NULL);
			if (id == NULL || *id == '\0' || strlen(id) > 64) {
				free(id);
				continue;
			}
			x->id = id;
			x->state = part_str(e, "state", "?");
			x->command = part_str(e, "command", "");
			x->clients = (int)part_num(e, "clients", 0, 1e6, 0);
			x->cols = (int)part_num(e, "cols", 1, 1000, 80);
			x->rows = (int)part_num(e, "rows", 1, 1000, 24);
			x->output_bytes =
			    (int64_t)part_num(e, "output_bytes", 0, 1e18, 0);
			x->oldest_cursor =
			    (int64_t)part_num(e, "oldest_cursor", 0, 1e18, 0);
			x->started_at = part_num(e, "started_at", 0, 1e12, 0);
			if (++s->nshells == HOSTS_SHELLS)
				break;
		}
	}
}

/*
 * A host that could not be asked and has no sessions to show yet still
 * gets a row, so the sidebar says it is there and why it is empty.
 */
static void
part_placeholder(struct model *m, const struct tui_host *th)
{
	struct msession *s;

	m->sessions = xreallocarray(m->sessions, m->n + 1, sizeof *m->sessions);
	s = &m->sessions[m->n++];
	memset(s, 0, sizeof *s);
	xasprintf(&s->name, "%s:", th->name);
	s->host = xstrdup(th->name);
	s->state = xstrdup("unreachable");
	s->error = xstrdup(th->error);
	s->group = xstrdup("");
}

/* Loop: rebuild the model from every host's last answer. */
static void
hosts_merge(struct tui *t)
{
	struct model m = {NULL, 0};

	for (size_t i = 0; i < t->nhosts; i++) {
		const struct tui_host *th = &t->hosts[i];
		size_t before = m.n;
		part_add(&m, th, strcmp(th->name, "local") == 0);
		if (m.n == before && th->error != NULL)
			part_placeholder(&m, th);
	}
	model_swap(t, &m);
}

/* Pool thread: fetch one host's sessions into w->part. */
static void
hosts_fetch(struct work *w)
{
	struct tui_host *th = w->th;
	const char *sel = w->tui->opts.sel_text;
	char *words[6], *out = NULL;
	size_t n = 0;
	int st;

	w->rc = -1;
	if (strcmp(th->name, "local") == 0) {
		struct model m;
		if (model_fetch(w->home, w->tui->opts.sel, w->group_by, &m,
		        &w->cause) != 0)
			return;
		w->part = model_to_json(&m);
		model_free(&m);
		w->rc = 0;
		return;
	}
	words[n++] = "tui";
	words[n++] = "--model-json";
	if (sel != NULL) {
		words[n++] = "-l";
		words[n++] = (char *)sel;
	}
	if (w->group_by != NULL) {
		words[n++] = "--group-by";
		words[n++] = w->group_by;
	}
	st = host_capture(&th->h, words, n, mono_ms() + HOSTS_FETCH_MS,
	    HOSTS_PART_MAX, &out, &w->cause);
	if (st < 0)
		return;
	/* counted before it is parsed: cJSON spends ~64 bytes a value */
	if (json_values(out, HOSTS_VALUES) > HOSTS_VALUES) {
		xasprintf(&w->cause, "its answer holds more than %d values",
		    HOSTS_VALUES);
		free(out);
		return;
	}
	w->part = cJSON_Parse(out);
	free(out);
	if (st != 0 || !cJSON_IsArray(w->part)) {
		const cJSON *e =
		    cJSON_GetObjectItemCaseSensitive(w->part, "error");
		xasprintf(&w->cause, "its vmux: %s",
		    cJSON_IsString(e) ? e->valuestring : "no sessions list");
		cJSON_Delete(w->part);
		w->part = NULL;
		return;
	}
	w->rc = 0;
}

/* Loop: keep what the host answered (or why not) and show them all. */
static void
hosts_fetched(struct tui *t, struct work *w)
{
	struct tui_host *th = w->th;
	char *why;

	char *was = th->error;

	th->busy = 0;
	t->model_at = mono_ms();
	th->error = NULL;
	if (w->rc == 0) {
		cJSON_Delete(th->part);
		th->part = w->part;
		w->part = NULL;
		th->ok_at = mono_ms();
	} else {
		why = str_printable(w->cause != NULL ? w->cause : "failed", 0);
		xasprintf(&th->error, "%s", why);
		free(why);
	}
	hosts_merge(t);
	/* the heading changed, though no session did */
	if ((was == NULL) != (th->error == NULL) ||
	    (was != NULL && strcmp(was, th->error) != 0))
		draw_schedule(t);
	free(was);
	if (th->dirty) {
		th->dirty = 0;
		hosts_refresh(t, 0);
	}
}

/*
 * Ask every host not already being asked for its sessions; tick: only the
 * clock asks (a cluster is then asked every HOSTS_CLUSTER_MS at most,
 * while what a key did is asked for at once).
 */
void
hosts_refresh(struct tui *t, int tick)
{
	for (size_t i = 0; i < t->nhosts; i++) {
		struct tui_host *th = &t->hosts[i];
		struct work *w;
		if (th->busy) {
			th->dirty = 1;
			continue;
		}
		if (tick && th->h.slurm && th->asked_at != 0 &&
		    mono_ms() < th->asked_at + HOSTS_CLUSTER_MS)
			continue;
		th->asked_at = mono_ms();
		th->busy = 1;
		w = work_new(t, hosts_fetch, hosts_fetched);
		w->th = th;
		if (tui_group_by(t) != NULL)
			w->group_by = xstrdup(tui_group_by(t));
		work_queue(w);
	}
}

/*
 * The host of session (a model name): NULL for this machine, else the
 * host, with *name set to the session's name there.
 */
const struct host *
hosts_target(struct tui *t, const char *session, const char **name)
{
	const char *colon = strchr(session, ':');

	*name = session;
	if (colon == NULL)
		return NULL;
	for (size_t i = 0; i < t->nhosts; i++) {
		const struct tui_host *th = &t->hosts[i];
		if (strlen(th->name) == (size_t)(colon - session) &&
		    strncmp(th->name, session, (size_t)(colon - session)) ==
		        0 &&
		    strcmp(th->name, "local") != 0) {
			*name = colon + 1;
			return &th->h;
		}
	}
	return NULL;
}

/* Why host (by name) did not answer its last refresh, or NULL. */
const char *
hosts_error(const struct tui *t, const char *host)
{
	for (size_t i = 0; i < t->nhosts; i++) {
		if (strcmp(t->hosts[i].name, host) == 0)
			return t->hosts[i].error;
	}
	return NULL;
}
