/*
 * cmd-ls.c: `vmux ls [-l SELECTOR] [--show-labels] [--json]`: list
 * sessions (those whose labels match SELECTOR).
 *
 * The state is judged live, not taken from the record: "running" only
 * while the recorded QEMU pid is alive and its command line names the
 * session's console log (a recycled pid does not count).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

static int cmd_ls_exec(struct args *);

static const struct cmd_opt cmd_ls_opts[] = {
    {"selector", 'l', "SELECTOR", 0,
        "only the sessions whose labels match: KEY=VALUE, KEY!=VALUE, "
        "KEY, !KEY, joined by commas (all must hold)"},
    {"show-labels", 0, NULL, 0, "a LABELS column"},
    {"json", 0, NULL, 0, "print a JSON array instead of a table"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_ls_entry = {
    .name = "ls",
    .summary = "List sessions. Shows each one's name, state (running, "
               "starting, stopped or broken), accelerator, CID, CPUs, "
               "memory, pids, creation time and vsock socket.",
    .opts = cmd_ls_opts,
    .min_args = 0,
    .max_args = 0,
    .flags = CMD_READONLY | CMD_ALL_SESSIONS,
    .exec = cmd_ls_exec,
};

/*
 * How QEMU ended, in words ("QEMU killed by SIGKILL", "QEMU exited 1", or
 * "the bridge was killed by SIGKILL" when vmux ended QEMU for that). Free it.
 */
static char *
ls_exit_words(const struct session_exit *x)
{
	char *s;

	if (x->cause[0] != '\0')
		s = xstrdup(x->cause);
	else if (x->signal != 0)
		xasprintf(&s, "QEMU killed by SIG%s",
		    sigabbrev_np(x->signal) != NULL ? sigabbrev_np(x->signal)
		                                    : "?");
	else
		xasprintf(&s, "QEMU exited %d", x->code);
	return s;
}

/*
 * Why a session is not running, for the table: "by user 2026-..." for a
 * stop, "QEMU killed by SIGKILL 2026-..." for a crash; NULL otherwise.
 */
static char *
ls_info(const struct session_record *r, const char *state)
{
	struct session_exit x;
	char *when, *what, *s;

	if (strcmp(state, "stopped") == 0 && r->stop_reason != NULL) {
		when = time_rfc3339((double)r->stopped);
		xasprintf(
		    &s, "by %s %s", r->stop_reason, when != NULL ? when : "");
		free(when);
		return s;
	}
	if (strcmp(state, "running") == 0 && r->no_agent)
		return xstrdup("no agent (--no-agent): vmux console");
	if (strcmp(state, "paused") == 0) {
		when = time_rfc3339((double)r->paused);
		xasprintf(&s, "since %s", when != NULL ? when : "");
		free(when);
		return s;
	}
	if (strcmp(state, "crashed") != 0)
		return NULL;
	if (session_exit_get(r, &x) != 0)
		return xstrdup("QEMU gone (exit status unknown)");
	what = ls_exit_words(&x);
	when = time_rfc3339((double)x.when);
	xasprintf(&s, "%s %s", what, when != NULL ? when : "");
	free(what);
	free(when);
	return s;
}

/* Add the workspace: path, size and host space used. */
static void
ls_workspace_json(cJSON *o, const struct session_record *r)
{
	struct stat st;
	cJSON *w;

	if (r->workspace == NULL) {
		cJSON_AddNullToObject(o, "workspace");
		return;
	}
	w = cJSON_AddObjectToObject(o, "workspace");
	cJSON_AddStringToObject(w, "path", r->workspace);
	cJSON_AddBoolToObject(w, "owned", r->workspace_owned);
	if (stat(r->workspace, &st) == 0) {
		cJSON_AddNumberToObject(w, "size_bytes", (double)st.st_size);
		cJSON_AddNumberToObject(
		    w, "host_bytes", (double)st.st_blocks * 512);
	} else
		cJSON_AddBoolToObject(w, "missing", 1);
}

/* Add stop and crash details (state already decided). */
static void
ls_stop_json(cJSON *o, const struct session_record *r, const char *state)
{
	struct session_exit x;
	char *t;

	if (strcmp(state, "paused") == 0 && r->paused > 0) {
		t = time_rfc3339((double)r->paused);
		if (t != NULL)
			cJSON_AddStringToObject(o, "paused", t);
		free(t);
	}
	if (r->stop_reason != NULL && strcmp(state, "stopped") == 0) {
		cJSON_AddStringToObject(o, "stopped_by", r->stop_reason);
		t = time_rfc3339((double)r->stopped);
		if (t != NULL)
			cJSON_AddStringToObject(o, "stopped", t);
		free(t);
	}
	if (strcmp(state, "crashed") == 0 || strcmp(state, "stopped") == 0) {
		if (session_exit_get(r, &x) == 0) {
			cJSON *e = cJSON_AddObjectToObject(o, "qemu_exit");
			if (x.signal != 0)
				cJSON_AddNumberToObject(e, "signal", x.signal);
			else
				cJSON_AddNumberToObject(e, "code", x.code);
			if (x.cause[0] != '\0')
				cJSON_AddStringToObject(e, "cause", x.cause);
			t = time_rfc3339((double)x.when);
			if (t != NULL)
				cJSON_AddStringToObject(e, "time", t);
			free(t);
		}
	}
	if (strcmp(state, "crashed") == 0) {
		char *tail = file_tail(r->console_log, 10);
		cJSON_AddStringToObject(
		    o, "console_tail", tail != NULL ? tail : "");
		free(tail);
	}
}

/* Add an array of strings. */
static void
ls_strv(cJSON *o, const char *key, char *const *v, size_t n)
{
	cJSON *a = cJSON_AddArrayToObject(o, key);
	size_t i;

	for (i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
}

/* Add the shared host folders and the quota on them. */
static void
ls_mounts(cJSON *o, const struct session_record *r)
{
	cJSON *a = cJSON_AddArrayToObject(o, "mounts"), *m;
	size_t i;

	for (i = 0; i < r->nmounts; i++) {
		m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "host", r->mounts[i].host);
		cJSON_AddStringToObject(m, "guest", r->mounts[i].guest);
		cJSON_AddBoolToObject(m, "ro", r->mounts[i].ro);
		cJSON_AddItemToArray(a, m);
	}
}

/* "last_check": what `vmux check` kept in the session (or null). */
static void
ls_check_json(cJSON *o, const struct session_record *r)
{
	cJSON *c = session_check_read(r->dir);

	if (c != NULL)
		cJSON_AddItemToObject(o, "last_check", c);
	else
		cJSON_AddNullToObject(o, "last_check");
}

/* "labels": {"KEY": "VALUE", ...} */
static void
ls_labels(cJSON *o, const struct session_record *r)
{
	cJSON *l = cJSON_AddObjectToObject(o, "labels");

	for (size_t i = 0; i < r->nlabels; i++) {
		size_t k = strcspn(r->labels[i], "=");
		char *key = xstrndup(r->labels[i], k);
		cJSON_AddStringToObject(l, key, r->labels[i] + k + 1);
		free(key);
	}
}

/* One session as `ls --json` (and `new --json`) shows it. */
cJSON *
ls_session_json(const struct session_entry *e)
{
	const struct session_record *r = &e->rec;
	cJSON *o = cJSON_CreateObject(), *pids;
	const char *state;
	char *created;

	cJSON_AddStringToObject(o, "name", e->name);
	if (!e->ok) {
		cJSON_AddStringToObject(o, "state", "broken");
		cJSON_AddStringToObject(o, "error", e->error);
		return o;
	}
	created = time_rfc3339((double)r->created);
	state = session_state(r);
	cJSON_AddStringToObject(o, "state", state);
	record_strs_json(o, r, RECORD_VIEW_LS); /* accel, dir, vsock_uds, ... */
	cJSON_AddNumberToObject(o, "cid", r->cid);
	cJSON_AddStringToObject(
	    o, "vsock", r->vsock_kernel ? "kernel" : "bridge");
	pids = cJSON_AddObjectToObject(o, "pids");
	cJSON_AddNumberToObject(pids, "qemu", r->qemu_pid);
	cJSON_AddNumberToObject(pids, "bridge", r->bridge_pid);
	if (created != NULL)
		cJSON_AddStringToObject(o, "created", created);
	else
		cJSON_AddNullToObject(o, "created");
	cJSON_AddStringToObject(
	    o, "profile", r->profile != NULL ? r->profile : "none");
	cJSON_AddStringToObject(o, "network",
	    !net_has_nic(r)                      ? "off"
	        : r->net && r->nallow_hosts == 0 ? "nat"
	                                         : "restricted");
	ls_strv(o, "allow_hosts", r->allow_hosts, r->nallow_hosts);
	ls_strv(o, "publish", r->publish, r->npublish);
	ls_labels(o, r);
	ls_mounts(o, r);
	cJSON_AddBoolToObject(o, "agent", !r->no_agent);
	/* the settings, by the table */
	for (int i = 0; i < SOPT_N; i++) {
		const struct session_option *so = &session_options[i];
		if ((so->flags & SOPT_LS) && so->rec_off != SOPT_NOWHERE)
			cJSON_AddItemToObject(
			    o, so->key, option_to_json(so, r));
	}
	ls_workspace_json(o, r);
	ls_stop_json(o, r, state);
	ls_check_json(o, r);
	free(created);
	return o;
}

/* "k=v,k2=v2" or "-" for the table (freed by the caller). */
static char *
ls_labels_text(const struct session_record *r)
{
	char *s = xstrdup(r->nlabels ? "" : "-"), *t;

	for (size_t i = 0; i < r->nlabels; i++) {
		xasprintf(&t, "%s%s%s", s, i ? "," : "", r->labels[i]);
		free(s);
		s = t;
	}
	return s;
}

/* Print the sessions as a table (with a LABELS column if labels). */
static void
ls_table(const struct session_entry *v, size_t n, int labels)
{
	size_t i, w = 4, lw = 6;

	if (n == 0)
		return;
	for (i = 0; i < n; i++) {
		char *l = labels && v[i].ok ? ls_labels_text(&v[i].rec) : NULL;
		if (strlen(v[i].name) > w)
			w = strlen(v[i].name);
		if (l != NULL && strlen(l) > lw)
			lw = strlen(l);
		free(l);
	}
	printf("%-*s  %-8s  %-5s  %4s  %4s  %6s  %6s  %-13s  %-20s  ", (int)w,
	    "NAME", "STATE", "ACCEL", "CID", "CPUS", "MEMORY", "DISK", "PIDS",
	    "CREATED");
	if (labels)
		printf("%-*s  ", (int)lw, "LABELS");
	printf("INFO\n");
	for (i = 0; i < n; i++) {
		const struct session_record *r = &v[i].rec;
		char mem[32], pids[32], disk[32], *created, *info;
		const char *state;
		struct stat st;

		if (!v[i].ok) {
			printf("%-*s  %-8s  %s\n", (int)w, v[i].name, "broken",
			    v[i].error);
			continue;
		}
		created = time_rfc3339((double)r->created);
		state = session_state(r);
		info = ls_info(r, state);
		snprintf(mem, sizeof mem, "%dM", r->memory_mb);
		if (strcmp(state, "paused") == 0) /* none: its state is files */
			snprintf(pids, sizeof pids, "-");
		else
			snprintf(pids, sizeof pids, "%ld/%ld",
			    (long)r->qemu_pid, (long)r->bridge_pid);
		if (r->workspace != NULL && stat(r->workspace, &st) == 0)
			snprintf(disk, sizeof disk, "%lldM",
			    (long long)(st.st_size >> 20));
		else
			snprintf(disk, sizeof disk, "-");
		printf("%-*s  %-8s  %-5s  %4u  %4d  %6s  %6s  %-13s  %-20s  ",
		    (int)w, v[i].name, state, r->accel, r->cid, r->cpus, mem,
		    disk, pids, created != NULL ? created : "-");
		if (labels) {
			char *l = ls_labels_text(r);
			printf("%-*s  ", (int)lw, l);
			free(l);
		}
		printf("%s\n", info != NULL ? info : "");
		free(info);
		free(created);
	}
}

/* List the sessions. */
static int
cmd_ls_exec(struct args *a)
{
	struct session_entry *v;
	char *home, *cause = NULL;
	const char *sel = args_get(a, "selector");
	struct selector s = {NULL, 0};
	size_t n, i, k;

	if (sel != NULL && selector_parse(sel, &s, &cause) != 0) {
		int rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	if ((home = cli_home()) == NULL) {
		selector_free(&s);
		return EXIT_VMUX;
	}
	if (session_list(home, &v, &n, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		free(home);
		selector_free(&s);
		return EXIT_VMUX;
	}
	free(home);
	for (i = k = 0; sel != NULL && i < n; i++) {
		if (v[i].ok &&
		    selector_match(&s, v[i].rec.labels, v[i].rec.nlabels))
			v[k++] = v[i];
		else {
			free(v[i].name);
			free(v[i].error);
			record_free(&v[i].rec);
		}
	}
	if (sel != NULL)
		n = k;
	selector_free(&s);
	if (cli_json()) {
		cJSON *arr = cJSON_CreateArray();
		for (i = 0; i < n; i++)
			cJSON_AddItemToArray(arr, ls_session_json(&v[i]));
		cli_result(arr);
	} else
		ls_table(v, n, args_has(a, "show-labels"));
	session_list_free(v, n);
	return 0;
}
