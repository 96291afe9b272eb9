/*
 * slurm.c: sessions as Slurm jobs (a host slurm://PARTITION).
 *
 * vmux runs on a login node and acts through Slurm's own tools with the
 * user's own identity, as an ssh host acts through ssh. Each session has
 * a folder on storage every node sees (the cluster's dir=, NFS in a real
 * cluster), DIR/NAME, which is the VMUX_HOME of the vmux that runs it:
 *   new    sbatch a job named vmux-NAME whose body is `vmux new NAME
 *          --foreground ...` (foreground.c); Slurm's cores and memory are
 *          the session's plus QEMU's overhead, --ttl its time limit.
 *          new --count N --prefix P is one job array vmux-P whose task
 *          K runs session PK
 *   start  the same with `vmux start NAME --foreground`: it may land on
 *          another node, with the same workspace
 *   stop   scancel: SIGTERM powers the guest off cleanly
 *   rm     scancel, then vmux rm there, then the folder
 *   ls     one squeue for every job, and each folder's record; the TUI's
 *          model the same, with each running session's shells asked for
 *          inside its job
 * and every other command runs inside the job's allocation on its node:
 * `srun --jobid J --overlap env VMUX_HOME=DIR/NAME vmux CMD ...` (the
 * TUI's streams too: host.c runs `vmux -H CLUSTER connect` for them).
 * A job writes its node's name into DIR/NAME/node, so a session whose
 * job vanished with its node says which node and why. This file routes
 * a cluster's commands and makes its sessions; slurm-job.c is a session's
 * job (squeue, sbatch, scancel, srun), slurm-ls.c what the cluster shows.
 */
#include <sys/stat.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"
#include "slurm.h"

/* Option name's value if the command has it and it was given, or NULL. */
static const char *
opt(const struct args *a, const char *name)
{
	return args_has_opt(a, name) ? args_get(a, name) : NULL;
}

/*
 * The cluster's sessions' folder (free it): made if missing, and refused
 * unless it is the user's alone (private_dir_make), since a job's script
 * runs from it. NULL (said).
 */
static char *
slurm_dir(const struct host *h)
{
	char *d, *home, *cause = NULL;

	if (h->dir != NULL)
		d = xstrdup(h->dir);
	else {
		if ((home = cli_home()) == NULL)
			return NULL;
		if (session_home_create(home, &cause) != 0) {
			cli_error("%s", cause);
			free(cause);
			free(home);
			return NULL;
		}
		xasprintf(&d, "%s/slurm", home);
		mkdir(d, 0700);
		free(d);
		xasprintf(&d, "%s/slurm/%s", home,
		    strstr(h->name, "://") == NULL ? h->name : "cluster");
		free(home);
	}
	if (private_dir_make(d, &cause) != 0) {
		cli_error("the cluster's folder: %s", cause);
		free(cause);
		free(d);
		return NULL;
	}
	return d;
}

/* Make session name's folder in dir, or take it if it is the user's alone.
 * 0, or -1 (said). */
static int
slurm_session_dir(const char *dir, const char *name)
{
	char *sdir, *cause = NULL;
	int rc;

	xasprintf(&sdir, "%s/%s", dir, name);
	if ((rc = private_dir_make(sdir, &cause)) != 0) {
		cli_error("session %s's folder: %s", name, cause);
		free(cause);
	}
	free(sdir);
	return rc;
}

/* A command inside name's job: srun --overlap there (this process goes). */
static int
slurm_inside(const char *dir, const char *name, const struct cmd_entry *e,
    int argc, char **argv)
{
	struct slurm_job j;
	const char *opt = NULL;
	char *cause = NULL, **v;

	if (slurm_job(name, &j, 0, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		return EXIT_VMUX;
	}
	if (strcmp(j.state, "RUNNING") != 0) {
		cli_error("session %s has no running job%s%s", name,
		    j.state[0] != '\0' ? ": it is " : "",
		    j.state[0] != '\0' ? j.state : "");
		return EXIT_VMUX;
	}
	if ((e->flags & CMD_TTY) && isatty(STDIN_FILENO))
		opt = "--pty";
	else if (e->flags & CMD_STREAM)
		opt = "-u"; /* unbuffered: a stream, not lines (connect) */
	v = slurm_srun_argv(dir, name, j.id, opt, argv, (size_t)argc);
	fflush(NULL);
	execvp("srun", v);
	cli_error("srun: %s", strerror(errno));
	host_argv_free(v);
	return EXIT_VMUX;
}

/* The size asked for: cpus, memory and ttl from a's flags over the
 * defaults given, read and bounded by the session options' table as vmux
 * new reads them. 0, or a usage error's exit status (said). */
static int
slurm_size(struct args *a, int *ncpus, long long *mem, long long *ttl)
{
	static const enum session_option_id rows[] = {
	    SOPT_CPUS, SOPT_MEMORY, SOPT_TTL};
	char *cause = NULL, what[32];
	long long v[nitems(rows)];

	for (size_t i = 0; i < nitems(rows); i++) {
		const struct session_option *so = &session_options[rows[i]];

		v[i] = -1;
		snprintf(what, sizeof what, "--%s", so->flag);
		if (opt(a, so->flag) != NULL &&
		    option_parse(so, what, opt(a, so->flag), &v[i], &cause) !=
		        0) {
			int rc = cli_usage_error(a->entry, "%s", cause);
			free(cause);
			return rc;
		}
	}
	if (v[0] >= 0)
		*ncpus = (int)v[0];
	if (v[1] >= 0)
		*mem = v[1];
	if (v[2] >= 0)
		*ttl = v[2];
	return 0;
}

/* new's --label flags, checked, as a job's comment shows them (*out;
 * free it). 0, or a usage error's exit status (said). */
static int
slurm_new_labels(struct args *a, char **out)
{
	char **labels, *cause = NULL;
	int n, rc;

	labels = args_values(a, "label", &n);
	if (labels_valid(labels, (size_t)n, &cause) != 0) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	*out = slurm_labels(labels, (size_t)n);
	return 0;
}

/* new's size before its flags: the profile's (--profile, the settings',
 * default). 0, or a usage error's exit status (said). */
static int
slurm_profile_size(struct args *a, int *ncpus, long long *mem)
{
	struct profile p;
	struct settings st;
	char *cause = NULL;
	int rc;

	if (new_defaults(a, &p, &st, &cause) != 0) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	settings_free(&st);
	*ncpus = p.cpus > 0 ? p.cpus : 1;
	*mem = p.memory_mb > 0 ? p.memory_mb : SESSION_MEMORY_DEFAULT;
	return 0;
}

/* Has session name a job (said if so, or if Slurm cannot be asked)? */
static int
slurm_has_job(const char *name)
{
	struct slurm_job j;
	char *cause = NULL;

	if (slurm_job(name, &j, 1, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		return 1;
	}
	if (j.state[0] != '\0') {
		cli_error("session %s has a job already (%s, %s)", name, j.sid,
		    j.state);
		return 1;
	}
	return 0;
}

/* Remove what a new that made no session left in its folder. */
static void
slurm_forget(const char *dir, const char *name)
{
	static const char *const files[] = {"job.sh", "job.log", "node", NULL};
	char *path;

	for (const char *const *f = files; *f != NULL; f++) {
		xasprintf(&path, "%s/%s/%s", dir, name, *f);
		unlink(path);
		free(path);
	}
	xasprintf(&path, "%s/%s", dir, name);
	rmdir(path); /* only if nothing else is in it */
	free(path);
}

/* vmux -H CLUSTER new NAME / start NAME: one job, waited for. */
static int
slurm_new(
    const struct host *h, const char *dir, struct args *a, const char *name)
{
	static const char *const skip[] = {"json", "foreground", NULL};
	int is_new = (a->entry->flags & CMD_CREATES) != 0, ncpus = 1, rc;
	long long mem = SESSION_MEMORY_DEFAULT, ttl = 0;
	struct session_record r;
	char *cause = NULL, **words = NULL, id[32], *labels = NULL;
	size_t nw = 0;
	int have;

	if (session_name_valid(name, &cause) != 0) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	if ((have = slurm_record(dir, name, &r) == 0)) {
		/* start: the session's own size */
		ncpus = r.cpus > 0 ? r.cpus : 1;
		mem = r.memory_mb > 0 ? r.memory_mb : SESSION_MEMORY_DEFAULT;
		ttl = r.ttl_s;
		labels = slurm_labels(r.labels, r.nlabels);
		record_free(&r);
	}
	if (is_new && have) {
		cli_error("session %s exists on %s", name, h->name);
		free(labels);
		return EXIT_VMUX;
	}
	if (!is_new && !have) {
		cli_error("no session %s on %s", name, h->name);
		return EXIT_VMUX;
	}
	if ((is_new && (rc = slurm_profile_size(a, &ncpus, &mem)) != 0) ||
	    (rc = slurm_size(a, &ncpus, &mem, &ttl)) != 0 ||
	    (is_new && (rc = slurm_new_labels(a, &labels)) != 0)) {
		free(labels);
		return rc;
	}
	if (slurm_has_job(name)) {
		free(labels);
		return EXIT_VMUX;
	}
	/* new's flags go to the job's vmux new; start takes none */
	if (slurm_session_dir(dir, name) != 0) {
		free(labels);
		return EXIT_VMUX;
	}
	if (is_new)
		args_flags(a, skip, &words, &nw);
	/* the job's body boots, or resumes a paused session: start
	 * --foreground (resume is a start there) */
	rc = slurm_submit(h, dir, is_new ? a->entry->name : "start", name, NULL,
	    labels, ncpus, mem, ttl, words, nw, id, sizeof id);
	free(labels);
	for (size_t i = 0; i < nw; i++)
		free(words[i]);
	free(words);
	rc = rc != 0 ? EXIT_VMUX : slurm_wait_ready(dir, name, h->name);
	if (rc != 0)
		slurm_kill(name); /* not left to start later */
	if (rc == 0)
		printf("%s\n", name);
	else if (is_new && slurm_record(dir, name, &r) != 0)
		slurm_forget(dir, name); /* nothing was made: no folder */
	else if (is_new)
		record_free(&r);
	return rc;
}

/* A class's session, waited for by slurm_class. */
struct slurm_member {
	char *name;
	int done;    /* 1 ready, -1 failed */
	int existed; /* failed as it was there before: not ours to clean */
	char *error; /* why it failed */
};

/* Say how a class's member ended (as new-class.c's lines). */
static void
slurm_member_done(struct slurm_member *s, int ok, char *error, uint64_t t0)
{
	s->done = ok ? 1 : -1;
	s->error = error;
	if (cli_json())
		return;
	if (ok)
		printf("%s  ready (%.1f s)\n", s->name,
		    (double)(mono_ms() - t0) / 1000);
	else
		printf("%s  failed: %s\n", s->name, error);
	fflush(stdout);
}

/* Wait for every member of a class: ready in its job, or its job gone. */
static void
slurm_class_wait(const char *dir, const char *prefix, const char *cluster,
    struct slurm_member *ms, size_t n, uint64_t t0)
{
	uint64_t deadline = mono_ms() + SLURM_READY_MS;
	size_t left = 0;
	int said = 0;

	for (size_t i = 0; i < n; i++)
		left += ms[i].done == 0;
	while (left > 0 && mono_ms() < deadline) {
		char *cause = NULL, *q = slurm_queue(&cause);

		for (size_t i = 0; i < n && q != NULL; i++) {
			struct slurm_job j;
			char *log, *tail;

			if (ms[i].done != 0)
				continue;
			slurm_job_in(q, ms[i].name, &j, 0);
			if (strcmp(j.state, "RUNNING") == 0 &&
			    slurm_ready(dir, ms[i].name, j.id)) {
				slurm_member_done(&ms[i], 1, NULL, t0);
				left--;
			} else if (j.state[0] == '\0') {
				xasprintf(
				    &log, "%s/%s/job.log", dir, ms[i].name);
				tail = slurm_tail(log);
				free(log);
				if (*tail == '\0') {
					free(tail);
					tail = xstrdup("its job ended");
				}
				slurm_member_done(&ms[i], 0, tail, t0);
				left--;
			} else if (strcmp(j.state, "PENDING") == 0 &&
			    slurm_reason_final(j.reason)) {
				char *argv[] = {"scancel", j.sid, NULL};
				slurm_scancel(argv);
				slurm_member_done(
				    &ms[i], 0, xstrdup(j.reason), t0);
				left--;
			} else if (strcmp(j.state, "PENDING") == 0 && !said &&
			    j.reason[0] != '\0' &&
			    strcmp(j.reason, "None") != 0) {
				fprintf(stderr,
				    "vmux: %s... pending on %s (%s)\n", prefix,
				    cluster, j.reason);
				said = 1;
			}
		}
		if (q == NULL) {
			cli_error("%s", cause);
			free(cause);
			break;
		}
		free(q);
		if (left > 0)
			poll(NULL, 0, 300);
	}
	for (size_t i = 0; i < n; i++)
		if (ms[i].done == 0) {
			slurm_kill(ms[i].name); /* not left to start later */
			slurm_member_done(&ms[i], 0,
			    xstrdup("its job was not ready in time"), t0);
		}
}

/*
 * vmux -H CLUSTER new --count N --prefix P: one job array, task K running
 * session PK, spread by Slurm; a name that exists fails alone. Said as
 * new-class.c says it; 0 if all were made.
 */
static int
slurm_class(const struct host *h, const char *dir, struct args *a)
{
	static const char *const skip[] = {"json", "count", "prefix", NULL};
	const char *prefix = opt(a, "prefix");
	struct slurm_member *ms = NULL;
	char *cause = NULL, **words = NULL, *array = NULL, id[32], *q;
	char *labels = NULL;
	struct slurm_job j;
	long long count, mem = SESSION_MEMORY_DEFAULT, ttl = 0;
	int ncpus = 1, rc, have;
	size_t n = 0, nw = 0, made = 0;
	uint64_t t0 = mono_ms();

	if (a->argc > 0 || opt(a, "roster") != NULL ||
	    opt(a, "workspace") != NULL || args_has(a, "publish") ||
	    args_has(a, "foreground") || opt(a, "hostname") != NULL) {
		return cli_usage_error(a->entry,
		    a->argc > 0 ? "NAME, or --count, not both"
		        : opt(a, "roster") != NULL
		        ? "--roster on a cluster: not yet (use --count)"
		        : "--workspace, --publish, --foreground and "
		          "--hostname are for one session, not a class");
	}
	if (option_number("--count", opt(a, "count"), 1, CLASS_MAX, &count,
	        &cause) != 0 ||
	    (prefix == NULL &&
	        (cause = xstrdup("--count needs --prefix (names PREFIX1 ... "
	                         "PREFIXN)")) != NULL)) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	if ((rc = slurm_profile_size(a, &ncpus, &mem)) != 0 ||
	    (rc = slurm_size(a, &ncpus, &mem, &ttl)) != 0 ||
	    (rc = slurm_new_labels(a, &labels)) != 0)
		return rc;
	if ((q = slurm_queue(&cause)) == NULL) {
		free(labels);
		cli_error("%s", cause);
		free(cause);
		return EXIT_VMUX;
	}
	ms = xcalloc((size_t)count, sizeof *ms);
	for (long long k = 1; k <= count; k++) {
		struct session_record r;
		struct slurm_member *s = &ms[n++];
		char *sdir;

		xasprintf(&s->name, "%s%lld", prefix, k);
		if (session_name_valid(s->name, &cause) != 0) {
			rc = cli_usage_error(a->entry, "%s", cause);
			free(cause);
			goto out;
		}
		xasprintf(&sdir, "%s/%s", dir, s->name);
		slurm_job_in(q, s->name, &j, 1);
		if ((have = slurm_record(dir, s->name, &r) == 0) ||
		    j.state[0] != '\0') {
			if (have) {
				record_free(&r);
				xasprintf(&cause, "session %s exists on %s",
				    s->name, h->name);
			} else
				xasprintf(&cause,
				    "session %s has a job already (%s, %s)",
				    s->name, j.sid, j.state);
			s->existed = 1;
			slurm_member_done(s, 0, cause, t0);
			cause = NULL;
		} else if (slurm_session_dir(dir, s->name) != 0) {
			xasprintf(&cause,
			    "session %s's folder is not yours "
			    "alone",
			    s->name);
			slurm_member_done(s, 0, cause, t0);
			cause = NULL;
		} else {
			char *log;
			xasprintf(&log, "%s/job.log", sdir);
			unlink(log); /* the job makes it anew */
			free(log);
			if (array == NULL)
				xasprintf(&array, "%lld", k);
			else {
				char *more;
				xasprintf(&more, "%s,%lld", array, k);
				free(array);
				array = more;
			}
		}
		free(sdir);
	}
	if (array != NULL) {
		args_flags(a, skip, &words, &nw);
		if (slurm_submit(h, dir, "new", prefix, array, labels, ncpus,
		        mem, ttl, words, nw, id, sizeof id) != 0) {
			for (size_t i = 0; i < n; i++)
				if (ms[i].done == 0)
					slurm_member_done(&ms[i], 0,
					    xstrdup("sbatch failed"), t0);
		} else
			slurm_class_wait(dir, prefix, h->name, ms, n, t0);
	}
	for (size_t i = 0; i < n; i++) {
		struct session_record r;
		made += ms[i].done == 1;
		if (ms[i].done == 1 || ms[i].existed)
			continue;
		if (slurm_record(dir, ms[i].name, &r) == 0)
			record_free(&r);
		else
			slurm_forget(dir, ms[i].name);
	}
	if (cli_json()) {
		cJSON *arr = cJSON_CreateArray();
		for (size_t i = 0; i < n; i++) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "name", ms[i].name);
			cJSON_AddBoolToObject(o, "created", ms[i].done == 1);
			if (ms[i].error != NULL)
				cJSON_AddStringToObject(
				    o, "error", ms[i].error);
			cJSON_AddItemToArray(arr, o);
		}
		cli_result(arr);
	} else
		printf("%zu of %zu sessions created\n", made, n);
	rc = made == n ? 0 : EXIT_VMUX;
out:
	free(q);
	free(labels);
	for (size_t i = 0; i < n; i++) {
		free(ms[i].name);
		free(ms[i].error);
	}
	free(ms);
	for (size_t i = 0; i < nw; i++)
		free(words[i]);
	free(words);
	free(array);
	return rc;
}

/*
 * vmux -H CLUSTER stop NAME: its job ended, the guest powered off first.
 * Not while it boots: vmux new, signalled then, undoes the session.
 */
static int
slurm_stop(const char *dir, const char *name)
{
	struct session_record r;
	char *cause = NULL;

	if (session_name_valid(name, &cause) != 0 ||
	    slurm_record(dir, name, &r) != 0) {
		cli_error("%s", cause != NULL ? cause : "no such session");
		free(cause);
		return EXIT_VMUX;
	}
	if (r.status == SESSION_STARTING) {
		record_free(&r);
		cli_error("session %s is still starting: stop it once it is "
		          "ready, or rm it",
		    name);
		return EXIT_VMUX;
	}
	record_free(&r);
	return slurm_cancel(name) == 0 ? 0 : EXIT_VMUX;
}

/* vmux -H CLUSTER rm NAME: its job cancelled, the session and folder gone. */
static int
slurm_rm(const char *dir, const char *name)
{
	char *sdir, *cause = NULL;
	int err;

	if (session_name_valid(name, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		return EXIT_VMUX;
	}
	if (slurm_cancel(name) != 0)
		slurm_kill(name); /* its guest's clean end is not rm's aim */
	/* as vmux rm -f there: the session's folder is its home */
	xasprintf(&sdir, "%s/%s", dir, name);
	if (session_remove(sdir, name, 1, 0, NULL, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		free(sdir);
		return EXIT_VMUX;
	}
	if ((err = rmtree(sdir)) != 0) {
		cli_error("cannot remove %s: %s", sdir, strerror(-err));
		free(sdir);
		return EXIT_VMUX;
	}
	free(sdir);
	return 0;
}

/*
 * Run command e (argc/argv, argv[0] its name) on cluster h. Its exit
 * status.
 */
int
slurm_route(const struct host *h, const struct cmd_entry *e, struct args *a,
    int argc, char **argv)
{
	const char *name = a->argc > 0 ? a->argv[0] : NULL;
	char *dir = slurm_dir(h), *cpname = NULL;
	int rc = EXIT_VMUX;

	/* cp names its session in an operand NAME:PATH, either side */
	for (int i = 0; (e->flags & CMD_NAME_PATH) && i < a->argc; i++) {
		const char *colon = strchr(a->argv[i], ':');
		if (colon != NULL && colon != a->argv[i] &&
		    memchr(a->argv[i], '/', (size_t)(colon - a->argv[i])) ==
		        NULL) {
			cpname =
			    xstrndup(a->argv[i], (size_t)(colon - a->argv[i]));
			name = cpname;
			break;
		}
	}

	if (dir == NULL)
		return EXIT_VMUX;
	if (strpbrk(dir, "%\\|") != NULL) { /* Slurm expands %x in --output */
		cli_error("the cluster's folder %s has a '%%', '\\' or '|': "
		          "set one without (dir=)",
		    dir);
		free(dir);
		return EXIT_VMUX;
	}
	slurm_scope = dir;
	if (e->flags & CMD_ALL_SESSIONS) {
		rc = slurm_ls(dir, a);
		goto out;
	}
	if ((e->flags & CMD_HOSTS_HERE) && args_has(a, "model-json")) {
		rc = slurm_model(dir, a);
		goto out;
	}
	if ((e->flags & CMD_CREATES) &&
	    (opt(a, "count") != NULL || opt(a, "roster") != NULL)) {
		rc = slurm_class(h, dir, a);
		goto out;
	}
	if (!(e->flags & CMD_NAME_PATH) && !cmd_names_session_first(e)) {
		/* its first word is no session's (run's command, check's
		 * script): not taken for one */
		rc = cli_usage_error(e,
		    "not on a cluster: on a Slurm host, commands name a "
		    "session (new, exec, shell, cp, ls, stop, ...)");
		goto out;
	}
	if (name == NULL) {
		rc = cli_usage_error(e, "on a cluster, name one session");
		goto out;
	}
	if (e->flags & CMD_BOOTS) {
		rc = slurm_new(h, dir, a, name);
		goto out;
	}
	if (e->flags & CMD_ENDS) {
		if (args_has_opt(a, "keep-workspace") &&
		    args_has(a, "keep-workspace")) {
			rc = cli_usage_error(
			    e, "--keep-workspace on a cluster: not yet");
			goto out;
		}
		/* each name, as on one machine; the status is the worst */
		rc = 0;
		for (int i = 0; i < a->argc; i++) {
			int r = (e->flags & CMD_REMOVES)
			    ? slurm_rm(dir, a->argv[i])
			    : slurm_stop(dir, a->argv[i]);
			if (r != 0)
				rc = r;
		}
		goto out;
	}
	rc = slurm_inside(dir, name, e, argc, argv);
out:
	free(cpname);
	free(dir);
	return rc;
}
