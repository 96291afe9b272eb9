/*
 * slurm-ls.c: what a cluster shows (slurm.c routes to it): its sessions'
 * states from their jobs and records (pending, starting, running,
 * stopping, stopped, paused, crashed, lost, with why), `vmux -H CLUSTER ls`,
 * and the TUI's model of it, each running session's shells asked for inside its
 * job at once (exec-many.c's many_run).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"
#include "slurm.h"

/* How a session's QEMU ended, if its reaper left word (free it), else
 * NULL: the reaper is on the node, its word on the shared folder. */
static char *
slurm_exit_why(const struct session_record *r)
{
	struct session_exit e;
	char *why;

	if (session_exit_get(r, &e) != 0 || !e.known)
		return NULL;
	if (e.signal != 0)
		xasprintf(
		    &why, "QEMU was killed by SIG%s", sigabbrev_np(e.signal));
	else
		xasprintf(&why,
		    "QEMU exited %d (a poweroff in the guest, or a "
		    "crash)",
		    e.code);
	return why;
}

/*
 * A session's state on the cluster, from its job and its record's status
 * (not from its QEMU's pid: that lives on a node, not here). A crashed
 * one's *exit_why says how its QEMU ended (free it; else NULL).
 */
static const char *
slurm_state(
    const struct slurm_job *j, const struct session_record *r, char **exit_why)
{
	*exit_why = NULL;
	if (strcmp(j->state, "PENDING") == 0)
		return "pending";
	if (j->state[0] != '\0') { /* running, or going */
		if (strcmp(j->state, "RUNNING") != 0)
			return "stopping";
		return r->status == SESSION_STARTING ? "starting"
		    : r->status == SESSION_READY     ? "running"
		    : r->status == SESSION_PAUSED    ? "pausing"
		                                     : "stopping";
	}
	if (r->status == SESSION_STOPPED || r->status == SESSION_STOPPING)
		return "stopped";
	if (r->status == SESSION_PAUSED || r->state_sum != NULL)
		return "paused"; /* in the shared folder: start resumes it */
	/* it should be running and its job is gone: its QEMU ended by
	 * itself if its reaper said so, else it went with its node */
	*exit_why = slurm_exit_why(r);
	return *exit_why != NULL ? "crashed" : "lost";
}

/* The node session name's job last ran on ("" if unknown; free it). */
static char *
slurm_node_of(const char *dir, const char *name)
{
	char *path, *text;

	xasprintf(&path, "%s/%s/node", dir, name);
	text = slurm_tail(path);
	free(path);
	text[strcspn(text, "\n")] = '\0';
	return text;
}

/*
 * Why a session is lost: its node, and what Slurm says of it (*nodes is
 * sinfo's "NODE|STATE|REASON" lines, asked for once). Free it.
 */
static char *
slurm_lost_why(const char *node, char **nodes)
{
	char *argv[] = {"sinfo", "-h", "-N", "-o", "%N|%T|%E", NULL};
	char want[160], state[64] = "", why[256] = "", *r;
	const char *line;

	if (*nodes == NULL && slurm_run(argv, nodes) != 0)
		**nodes = '\0';
	snprintf(want, sizeof want, "%s|", node);
	for (line = *nodes; *node != '\0' && line != NULL && *line != '\0';) {
		if (strncmp(line, want, strlen(want)) == 0) {
			sscanf(line + strlen(want), "%63[^|]|%255[^\n]", state,
			    why);
			break;
		}
		line = strchr(line, '\n');
		line = line != NULL ? line + 1 : NULL;
	}
	if (*node == '\0')
		r = xstrdup("its job is gone");
	else if (strstr(state, "down") != NULL ||
	    strstr(state, "fail") != NULL || strchr(state, '*') != NULL)
		xasprintf(&r, "its node %s is %s%s%s", node, state,
		    *why != '\0' && strcmp(why, "none") != 0 ? ": " : "",
		    *why != '\0' && strcmp(why, "none") != 0 ? why : "");
	else
		xasprintf(&r, "its job on %s ended without stopping it", node);
	return r;
}

/* One session of the cluster as ls and the TUI show it. */
struct slurm_view {
	struct slurm_job j; /* its job in the queue ("" state: none) */
	const char *state;
	char *node; /* its job's node, or the one it last ran on */
	char *why;  /* why it is pending, crashed, lost, stopped; or NULL */
};

/* Session r of the cluster, its job from queue, into v (slurm_view_free);
 * *nodes is sinfo's answer, asked for once a session is lost. */
static void
slurm_view(const char *dir, const struct session_record *r, const char *queue,
    char **nodes, struct slurm_view *v)
{
	slurm_job_in(queue, r->name, &v->j, 1);
	v->state = slurm_state(&v->j, r, &v->why);
	v->node = v->j.node[0] != '\0' ? xstrdup(v->j.node)
	                               : slurm_node_of(dir, r->name);
	if (strcmp(v->state, "pending") == 0)
		v->why = xstrdup(v->j.reason);
	else if (strcmp(v->state, "lost") == 0)
		v->why = slurm_lost_why(v->node, nodes);
	else if ((strcmp(v->state, "stopped") == 0 ||
	             strcmp(v->state, "stopping") == 0) &&
	    r->stop_reason != NULL)
		v->why = xstrdup(r->stop_reason);
}

/* Free what slurm_view made. */
static void
slurm_view_free(struct slurm_view *v)
{
	free(v->node);
	free(v->why);
}

/* One session of the cluster as ls shows it (its job from queue). */
static cJSON *
slurm_ls_one(const char *dir, const struct session_record *r, const char *queue,
    char **nodes)
{
	struct slurm_view v;
	cJSON *o = cJSON_CreateObject();

	slurm_view(dir, r, queue, nodes, &v);
	cJSON_AddStringToObject(o, "name", r->name);
	cJSON_AddStringToObject(o, "state", v.state);
	cJSON_AddStringToObject(o, "node", v.node);
	cJSON_AddStringToObject(o, "job", v.j.sid);
	cJSON_AddStringToObject(o, "time_left", v.j.left);
	cJSON_AddNumberToObject(o, "cpus", r->cpus);
	cJSON_AddNumberToObject(o, "memory_mb", r->memory_mb);
	if (v.why != NULL && strcmp(v.state, "stopped") == 0)
		cJSON_AddStringToObject(o, "stopped_by", v.why);
	else if (v.why != NULL && strcmp(v.state, "stopping") != 0)
		cJSON_AddStringToObject(o, "reason", v.why);
	slurm_view_free(&v);
	return o;
}

/*
 * Each session of the cluster (its folder's record), matching sel if
 * given: fn(dir, record, queue, arg) for each. 0, or -1 (said).
 */
static int
slurm_each(const char *dir, const struct selector *sel,
    void (*fn)(
        const char *, const struct session_record *, const char *, void *),
    void *arg)
{
	char *cause = NULL, *q = slurm_queue(&cause);
	struct dirent **ents;
	int n;

	if (q == NULL) {
		cli_error("%s", cause);
		free(cause);
		return -1;
	}
	n = scandir(dir, &ents, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		struct session_record r;

		if (ents[i]->d_name[0] != '.' &&
		    slurm_record(dir, ents[i]->d_name, &r) == 0) {
			if (sel == NULL ||
			    selector_match(sel, r.labels, r.nlabels))
				fn(dir, &r, q, arg);
			record_free(&r);
		}
		free(ents[i]);
	}
	if (n >= 0)
		free(ents);
	free(q);
	return 0;
}

/* ls's state, to pass through slurm_each. */
struct slurm_ls_state {
	cJSON *list;
	char *nodes; /* sinfo's answer, once a session is lost */
};

/* slurm_each's fn for ls. */
static void
slurm_ls_add(const char *dir, const struct session_record *r, const char *queue,
    void *arg)
{
	struct slurm_ls_state *st = arg;

	cJSON_AddItemToArray(st->list, slurm_ls_one(dir, r, queue, &st->nodes));
}

/* vmux -H CLUSTER ls [--json]: one squeue, each folder's record. */
int
slurm_ls(const char *dir, const struct args *a)
{
	struct slurm_ls_state st = {cJSON_CreateArray(), NULL};
	cJSON *o;

	if (slurm_each(dir, NULL, slurm_ls_add, &st) != 0) {
		cJSON_Delete(st.list);
		return EXIT_VMUX;
	}
	free(st.nodes);
	if (args_has(a, "json")) {
		char *s = cJSON_Print(st.list);
		printf("%s\n", s);
		free(s);
	} else {
		printf("%-20s  %-10s  %-12s  %-10s  %-10s  %s\n", "NAME",
		    "STATE", "NODE", "JOB", "TIME LEFT", "WHY");
		cJSON_ArrayForEach(o, st.list)
		{
			const cJSON *why = cJSON_GetObjectItem(o, "reason");
			if (why == NULL)
				why = cJSON_GetObjectItem(o, "stopped_by");
			printf("%-20s  %-10s  %-12s  %-10s  %-10s  %s\n",
			    cJSON_GetObjectItem(o, "name")->valuestring,
			    cJSON_GetObjectItem(o, "state")->valuestring,
			    cJSON_GetObjectItem(o, "node")->valuestring,
			    cJSON_GetObjectItem(o, "job")->valuestring,
			    cJSON_GetObjectItem(o, "time_left")->valuestring,
			    why != NULL ? why->valuestring : "");
		}
	}
	cJSON_Delete(st.list);
	return 0;
}

/* The TUI's model of the cluster, being made (slurm_model's). */
struct slurm_model {
	const char *dir;
	const char *group_by;
	char **names, **jobs; /* the running sessions and their jobs */
	size_t n;
	cJSON *list; /* the model: every session, model_to_json's form */
	char *nodes; /* sinfo's answer, once a session is lost */
};
static struct slurm_model *slurm_model_now; /* many_run's result has it */

/* slurm_each's fn for the model: a running session is asked in its job;
 * another is shown from its record. */
static void
slurm_model_add(const char *dir, const struct session_record *r,
    const char *queue, void *arg)
{
	struct slurm_model *sm = arg;
	struct slurm_view v;
	const char *group;
	cJSON *o;

	slurm_view(dir, r, queue, &sm->nodes, &v);
	if (strcmp(v.j.state, "RUNNING") == 0) {
		sm->names =
		    xreallocarray(sm->names, sm->n + 1, sizeof *sm->names);
		sm->jobs = xreallocarray(sm->jobs, sm->n + 1, sizeof *sm->jobs);
		sm->names[sm->n] = xstrdup(r->name);
		sm->jobs[sm->n++] = xstrdup(v.j.id);
		slurm_view_free(&v);
		return;
	}
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", r->name);
	cJSON_AddStringToObject(o, "state", v.state);
	if (v.why != NULL)
		cJSON_AddStringToObject(o, "detail", v.why);
	slurm_view_free(&v);
	cJSON_AddNumberToObject(o, "cpus", r->cpus);
	cJSON_AddNumberToObject(o, "memory_mb", r->memory_mb);
	group = sm->group_by != NULL
	    ? label_get(r->labels, r->nlabels, sm->group_by)
	    : NULL;
	cJSON_AddStringToObject(o, "group", group != NULL ? group : "");
	cJSON_AddBoolToObject(o, "check_failed", 0);
	cJSON_AddBoolToObject(o, "shells_known", 0);
	cJSON_AddArrayToObject(o, "shells");
	cJSON_AddItemToArray(sm->list, o);
}

/* many_run's argv: the model of one session, asked inside its job. */
static char **
slurm_model_argv(const struct many *m, const char *self, const char *session)
{
	const struct slurm_model *sm = m->arg;
	char *words[3] = {"tui", "--model-json", NULL};
	char **v;
	size_t i = 0;

	(void)self; /* slurm_srun_argv finds it */
	while (i < sm->n && strcmp(sm->names[i], session) != 0)
		i++;
	if (i == sm->n)
		abort(); /* can't happen: many_run runs sm's names */
	if (sm->group_by != NULL)
		xasprintf(&words[2], "--group-by=%s", sm->group_by);
	v = slurm_srun_argv(sm->dir, session, sm->jobs[i], NULL, words,
	    sm->group_by != NULL ? 3 : 2);
	free(words[2]);
	return v;
}

/* many_run's result: each running session's own model, or why not. */
static void
slurm_model_result(const struct run *runs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		cJSON *part = runs[i].status == 0 && runs[i].out[0] != NULL
		    ? cJSON_Parse(runs[i].out[0])
		    : NULL;
		cJSON *o, *next;

		if (cJSON_IsArray(part) && cJSON_GetArraySize(part) > 0) {
			for (o = part->child; o != NULL; o = next) {
				next = o->next;
				cJSON_AddItemToArray(slurm_model_now->list,
				    cJSON_DetachItemViaPointer(part, o));
			}
		} else {
			char *why =
			    many_line(runs[i].out[1] ? runs[i].out[1] : "",
			        runs[i].len[1], 1);
			o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "name", runs[i].session);
			cJSON_AddStringToObject(o, "state", "running");
			cJSON_AddStringToObject(o, "error",
			    *why != '\0' ? why : "no answer from its job");
			cJSON_AddStringToObject(o, "group", "");
			cJSON_AddBoolToObject(o, "shells_known", 0);
			cJSON_AddArrayToObject(o, "shells");
			cJSON_AddItemToArray(slurm_model_now->list, o);
			free(why);
		}
		cJSON_Delete(part);
	}
}

/*
 * vmux -H CLUSTER tui --model-json (what vmux tui -H CLUSTER reads): one
 * squeue; each running session's shells asked for inside its job, at once;
 * the others from their records.
 */
int
slurm_model(const char *dir, struct args *a)
{
	const char *s = args_get(a, "selector");
	struct selector sel = {NULL, 0};
	struct slurm_model sm = {.dir = dir,
	    .group_by = args_get(a, "group-by"),
	    .list = cJSON_CreateArray()};
	struct many m = {.a = a,
	    .sub = "tui",
	    .argv_of = slurm_model_argv,
	    .arg = &sm,
	    .parallel = MANY_PARALLEL,
	    .result = slurm_model_result};
	char *cause = NULL;
	int rc = 0;

	if (s != NULL && selector_parse(s, &sel, &cause) != 0) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		cJSON_Delete(sm.list);
		return rc;
	}
	if (slurm_each(dir, s != NULL ? &sel : NULL, slurm_model_add, &sm) != 0)
		rc = EXIT_VMUX;
	else {
		slurm_model_now = &sm;
		many_run(&m, sm.names, sm.n);
		slurm_model_now = NULL;
		cli_json_print(stdout, sm.list, 0);
	}
	for (size_t i = 0; i < sm.n; i++) {
		free(sm.names[i]);
		free(sm.jobs[i]);
	}
	free(sm.names);
	free(sm.jobs);
	free(sm.nodes);
	cJSON_Delete(sm.list);
	selector_free(&sel);
	return rc;
}
