/*
 * slurm.c: sessions as Slurm jobs (a host slurm://PARTITION).
 *
 * vmux runs on a login node and acts through Slurm's own tools with the
 * user's own identity, as an ssh host acts through ssh. Each session has
 * a folder on storage every node sees (the cluster's dir=, NFS in a real
 * cluster), DIR/NAME, which is the VMUX_HOME of the vmux that runs it:
 *   new    sbatch a job named vmux-NAME whose body is `vmux new NAME
 *          --foreground ...` (foreground.c); Slurm's cores and memory are
 *          the session's plus QEMU's overhead, --ttl its time limit
 *   start  the same with `vmux start NAME --foreground`: it may land on
 *          another node, with the same workspace
 *   stop   scancel: SIGTERM powers the guest off cleanly
 *   rm     scancel, then vmux rm there, then the folder
 *   ls     one squeue for every job, and each folder's record
 * and every other command runs inside the job's allocation on its node:
 * `srun --jobid J --overlap env VMUX_HOME=DIR/NAME vmux CMD ...`.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

#define SLURM_OUT_MAX     (4 * 1024 * 1024) /* what squeue may print */
#define SLURM_CMD_MS      30000             /* one Slurm command */
#define SLURM_READY_MS    (15 * 60 * 1000)  /* a job's boot, pending included */
#define SLURM_END_MS      120000            /* a cancelled job's end */
#define SLURM_OVERHEAD_MB 256 /* QEMU and vmux's own, beside guest RAM */
#define SLURM_JOB_PREFIX  "vmux-"

/* A session's job, as squeue says. */
struct slurm_job {
	char id[32];
	char state[32]; /* PENDING, RUNNING, ...; "" when there is none */
	char node[128];
	char reason[128];
	char left[32]; /* time left */
};

/* Option name's value if the command has it and it was given, or NULL. */
static const char *
opt(const struct args *a, const char *name)
{
	return args_has_opt(a, name) ? args_get(a, name) : NULL;
}

/* The cluster's sessions' folder (made if missing; free it). */
static char *
slurm_dir(const struct host *h)
{
	char *d, *home;

	if (h->dir != NULL)
		d = xstrdup(h->dir);
	else {
		if ((home = cli_home()) == NULL)
			return NULL;
		xasprintf(&d, "%s/slurm", home);
		mkdir(d, 0700);
		free(d);
		xasprintf(&d, "%s/slurm/%s", home,
		    strstr(h->name, "://") == NULL ? h->name : "cluster");
		free(home);
	}
	mkdir(d, 0700);
	return d;
}

/* Run argv, its stdout into *out; its exit status, or -1. */
static int
slurm_run(char *const *argv, char **out)
{
	int st =
	    host_run(argv, 1, mono_ms() + SLURM_CMD_MS, SLURM_OUT_MAX, out);

	return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Every vmux job of ours: squeue's lines "NAME|ID|STATE|NODE|REASON|LEFT". */
static char *
slurm_queue(char **cause)
{
	char *argv[] = {
	    "squeue", "-h", "--me", "-o", "%j|%i|%T|%N|%r|%L", NULL};
	char *out;

	if (slurm_run(argv, &out) != 0) {
		xasprintf(cause, "squeue: %s",
		    *out != '\0' ? out : "cannot ask Slurm (is slurmctld up?)");
		free(out);
		return NULL;
	}
	return out;
}

/*
 * Session name's job in a queue listing, into j (state "" if none; a job
 * COMPLETING counts only with ending: it is going, its VM stopping).
 */
static void
slurm_job_in(
    const char *queue, const char *name, struct slurm_job *j, int ending)
{
	char want[256];
	const char *line = queue;

	memset(j, 0, sizeof *j);
	snprintf(want, sizeof want, SLURM_JOB_PREFIX "%s|", name);
	while (line != NULL && *line != '\0') {
		if (strncmp(line, want, strlen(want)) == 0) {
			sscanf(line + strlen(want),
			    "%31[^|]|%31[^|]|%127[^|]|%127[^|]|%31[^\n]", j->id,
			    j->state, j->node, j->reason, j->left);
			if (ending || strcmp(j->state, "COMPLETING") != 0)
				return;
		}
		line = strchr(line, '\n');
		line = line != NULL ? line + 1 : NULL;
	}
	memset(j, 0, sizeof *j);
}

/* Session name's job now (state "" if none); 0, or -1 with cause. */
static int
slurm_job(const char *name, struct slurm_job *j, int ending, char **cause)
{
	char *q = slurm_queue(cause);

	if (q == NULL)
		return -1;
	slurm_job_in(q, name, j, ending);
	free(q);
	return 0;
}

/* The MiB a flag's size asks for (512M, 2G; plain: MiB), or def. */
static long long
slurm_size_mb(const char *s, long long def)
{
	long long v;
	char *cause = NULL;

	if (s == NULL ||
	    option_size_mb("--memory", s, 1, 1LL << 30, &v, &cause) != 0) {
		free(cause);
		return def;
	}
	return v;
}

/*
 * Submit session name's job: its body is vmux VERB NAME --foreground
 * WORDS (new's flags, or none for start), asking Slurm for ncpus and
 * mem_mb (plus vmux's overhead) for ttl seconds (0: the partition's
 * limit). 0 with the job id, or -1.
 */
static int
slurm_submit(const struct host *h, const char *dir, const char *verb,
    const char *name, int ncpus, long long mem_mb, long long ttl, char **words,
    size_t nw, char *id, size_t idlen)
{
	char *sdir, *script, *log, *text, *q, *exe = exe_path(), *out = NULL;
	char *argv[24], cpus[32], mem[48], jobname[128], tl[32];
	size_t n = 0;
	FILE *f;
	int rc;

	xasprintf(&sdir, "%s/%s", dir, name);
	mkdir(sdir, 0700);
	xasprintf(&script, "%s/job.sh", sdir);
	xasprintf(&log, "%s/job.log", sdir);
	f = fopen(script, "w");
	if (f == NULL) {
		cli_error("cannot write %s: %s", script, strerror(errno));
		rc = -1;
		goto out;
	}
	q = host_quote(sdir);
	fprintf(f,
	    "#!/bin/sh\n# vmux session %s: its job (vmux -H %s %s)\n"
	    "export VMUX_HOME=%s\n",
	    name, h->name, verb, q);
	free(q);
	q = host_quote(exe);
	fprintf(f, "exec %s -H local %s", q, verb);
	free(q);
	q = host_quote(name);
	fprintf(f, " %s --foreground", q);
	free(q);
	for (size_t i = 0; i < nw; i++) {
		q = host_quote(words[i]);
		fprintf(f, " %s", q);
		free(q);
	}
	fprintf(f, "\n");
	fclose(f);
	chmod(script, 0700);
	truncate(log, 0);

	snprintf(
	    jobname, sizeof jobname, "--job-name=" SLURM_JOB_PREFIX "%s", name);
	snprintf(cpus, sizeof cpus, "--cpus-per-task=%d", ncpus);
	snprintf(mem, sizeof mem, "--mem=%lldM", mem_mb + SLURM_OVERHEAD_MB);
	argv[n++] = "sbatch";
	argv[n++] = "--parsable";
	argv[n++] = jobname;
	argv[n++] = cpus;
	argv[n++] = mem;
	xasprintf(&text, "--output=%s", log);
	argv[n++] = text;
	if (h->partition != NULL) {
		argv[n++] = "--partition";
		argv[n++] = h->partition;
	}
	if (h->account != NULL) {
		argv[n++] = "--account";
		argv[n++] = h->account;
	}
	if (h->qos != NULL) {
		argv[n++] = "--qos";
		argv[n++] = h->qos;
	}
	if (ttl > 0) { /* Slurm's limit is in minutes: ours ends it first */
		snprintf(tl, sizeof tl, "--time=%lld", (ttl + 59) / 60 + 1);
		argv[n++] = tl;
	}
	argv[n++] = script;
	argv[n] = NULL;
	rc = slurm_run(argv, &out);
	free(text);
	if (rc != 0) {
		out[strcspn(out, "\n")] = '\0';
		cli_error("sbatch: %s", *out != '\0' ? out : "failed");
		rc = -1;
	} else {
		out[strcspn(out, ";\n")] = '\0';
		snprintf(id, idlen, "%s", out);
		rc = 0;
	}
out:
	free(out);
	free(exe);
	free(sdir);
	free(script);
	free(log);
	return rc;
}

/* The last lines of a file, for an error (free it). */
static char *
slurm_tail(const char *path)
{
	char buf[2048];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	off_t size;

	if (fd < 0)
		return xstrdup("");
	size = lseek(fd, 0, SEEK_END);
	lseek(fd,
	    size > (off_t)sizeof buf - 1 ? size - (off_t)sizeof buf + 1 : 0,
	    SEEK_SET);
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return xstrdup(buf);
}

/* Does session name answer inside job id (vmux ping there)? */
static int
slurm_ready(const char *dir, const char *name, const char *id)
{
	char *home, *exe = exe_path(), *out;
	int ok;

	xasprintf(&home, "VMUX_HOME=%s/%s", dir, name);
	{
		char *argv[] = {"srun", "--jobid", (char *)id, "--overlap",
		    "--quiet", "env", home, exe, "-H", "local", "ping",
		    (char *)name, NULL};
		ok = slurm_run(argv, &out) == 0;
	}
	free(out);
	free(home);
	free(exe);
	return ok;
}

/* Wait for session name's job to be ready (said once when pending). */
static int
slurm_wait_ready(const char *dir, const char *name, const char *cluster)
{
	uint64_t deadline = mono_ms() + SLURM_READY_MS;
	struct slurm_job j;
	char *cause = NULL, *log, *tail;
	int said = 0;

	while (mono_ms() < deadline) {
		if (slurm_job(name, &j, 0, &cause) != 0) {
			cli_error("%s", cause);
			free(cause);
			return EXIT_VMUX;
		}
		if (strcmp(j.state, "RUNNING") == 0 &&
		    slurm_ready(dir, name, j.id))
			return 0;
		if (strcmp(j.state, "PENDING") == 0 && !said &&
		    j.reason[0] != '\0' && strcmp(j.reason, "None") != 0) {
			fprintf(stderr, "vmux: %s pending on %s (%s)\n", name,
			    cluster, j.reason);
			said = 1;
		}
		if (j.state[0] == '\0') {
			xasprintf(&log, "%s/%s/job.log", dir, name);
			tail = slurm_tail(log);
			cli_error("%s's job ended before it was ready: %s",
			    name, *tail != '\0' ? tail : "(no output)");
			free(tail);
			free(log);
			return EXIT_VMUX;
		}
		poll(NULL, 0, 300);
	}
	cli_error("%s's job was not ready in %d minutes", name,
	    SLURM_READY_MS / 60000);
	return EXIT_VMUX;
}

/* Cancel session name's job and wait for it to end. 0, or -1. */
static int
slurm_cancel(const char *name)
{
	uint64_t deadline = mono_ms() + SLURM_END_MS;
	struct slurm_job j;
	char *cause = NULL, *out;

	if (slurm_job(name, &j, 0, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		return -1;
	}
	if (j.state[0] == '\0')
		return 0;
	{
		char *argv[] = {"scancel", j.id, NULL};
		if (slurm_run(argv, &out) != 0) {
			cli_error("scancel %s: %s", j.id, out);
			free(out);
			return -1;
		}
		free(out);
	}
	while (mono_ms() < deadline) {
		if (slurm_job(name, &j, 1, &cause) != 0) {
			free(cause);
			return -1;
		}
		if (j.state[0] == '\0')
			return 0;
		poll(NULL, 0, 300);
	}
	cli_error("%s's job did not end", name);
	return -1;
}

/* The record of session name in its folder (0), or -1 if there is none. */
static int
slurm_record(const char *dir, const char *name, struct session_record *r)
{
	char *home, *cause = NULL;
	int rc;

	xasprintf(&home, "%s/%s", dir, name);
	rc = record_load(home, name, r, &cause);
	free(cause);
	free(home);
	return rc;
}

/* vmux -H CLUSTER ls [--json]: one squeue, each folder's record. */
static int
slurm_ls(const char *dir, const struct args *a)
{
	char *cause = NULL, *q = slurm_queue(&cause);
	cJSON *list = cJSON_CreateArray(), *o;
	struct dirent **ents;
	int n;

	if (q == NULL) {
		cli_error("%s", cause);
		free(cause);
		cJSON_Delete(list);
		return EXIT_VMUX;
	}
	n = scandir(dir, &ents, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		struct session_record r;
		struct slurm_job j;
		const char *state;
		char st[160];

		if (ents[i]->d_name[0] != '.' &&
		    slurm_record(dir, ents[i]->d_name, &r) == 0) {
			slurm_job_in(q, r.name, &j, 0);
			state = session_state(&r);
			if (strcmp(j.state, "PENDING") == 0)
				snprintf(st, sizeof st, "pending");
			else if (j.state[0] == '\0' &&
			    strcmp(state, "running") == 0)
				snprintf(st, sizeof st, "lost");
			else
				snprintf(st, sizeof st, "%s", state);
			o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "name", r.name);
			cJSON_AddStringToObject(o, "state", st);
			cJSON_AddStringToObject(o, "node", j.node);
			cJSON_AddStringToObject(o, "job", j.id);
			cJSON_AddStringToObject(o, "time_left", j.left);
			if (strcmp(j.state, "PENDING") == 0)
				cJSON_AddStringToObject(o, "reason", j.reason);
			if (r.stop_reason != NULL)
				cJSON_AddStringToObject(
				    o, "stopped_by", r.stop_reason);
			cJSON_AddItemToArray(list, o);
			record_free(&r);
		}
		free(ents[i]);
	}
	if (n >= 0)
		free(ents);
	free(q);
	if (args_has(a, "json")) {
		char *s = cJSON_Print(list);
		printf("%s\n", s);
		free(s);
	} else {
		printf("%-20s  %-10s  %-12s  %-8s  %s\n", "NAME", "STATE",
		    "NODE", "JOB", "TIME LEFT");
		cJSON_ArrayForEach(o, list)
		{
			printf("%-20s  %-10s  %-12s  %-8s  %s\n",
			    cJSON_GetObjectItem(o, "name")->valuestring,
			    cJSON_GetObjectItem(o, "state")->valuestring,
			    cJSON_GetObjectItem(o, "node")->valuestring,
			    cJSON_GetObjectItem(o, "job")->valuestring,
			    cJSON_GetObjectItem(o, "time_left")->valuestring);
		}
	}
	cJSON_Delete(list);
	return 0;
}

/* A command inside name's job: srun --overlap there (this process goes). */
static int
slurm_inside(const char *dir, const char *name, const struct cmd_entry *e,
    int argc, char **argv)
{
	struct slurm_job j;
	char *cause = NULL, *home, *exe = exe_path(), **v;
	size_t n = 0;

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
	xasprintf(&home, "VMUX_HOME=%s/%s", dir, name);
	v = xcalloc((size_t)argc + 12, sizeof *v);
	v[n++] = "srun";
	v[n++] = "--jobid";
	v[n++] = j.id;
	v[n++] = "--overlap";
	v[n++] = "--quiet";
	if ((e->flags & CMD_TTY) && isatty(STDIN_FILENO))
		v[n++] = "--pty";
	v[n++] = "env";
	v[n++] = home;
	v[n++] = exe;
	v[n++] = "-H";
	v[n++] = "local";
	for (int i = 0; i < argc; i++)
		v[n++] = argv[i];
	v[n] = NULL;
	fflush(NULL);
	execvp("srun", v);
	cli_error("srun: %s", strerror(errno));
	return EXIT_VMUX;
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
	char *dir = slurm_dir(h), id[32], *cpname = NULL;
	int rc = EXIT_VMUX;

	/* cp names its session in an operand NAME:PATH, either side */
	for (int i = 0; strcmp(e->name, "cp") == 0 && i < a->argc; i++) {
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
	if (strcmp(e->name, "ls") == 0) {
		rc = slurm_ls(dir, a);
		goto out;
	}
	if (name == NULL) {
		rc = cli_usage_error(e, "on a cluster, name one session");
		goto out;
	}
	if (strcmp(e->name, "new") == 0 || strcmp(e->name, "start") == 0) {
		struct session_record r;
		int have = slurm_record(dir, name, &r) == 0;
		struct slurm_job j;
		char *cause = NULL;

		int ncpus = 1;
		long long mem = 512, ttl = 0;
		char **words;
		size_t nw = 0;

		if (have) { /* start: the session's own size */
			ncpus = r.cpus > 0 ? r.cpus : 1;
			mem = r.memory_mb > 0 ? r.memory_mb : 512;
			ttl = r.ttl_s;
			record_free(&r);
		}
		if (opt(a, "count") != NULL || opt(a, "roster") != NULL) {
			rc = cli_usage_error(
			    e, "--count and --roster on a cluster: not yet");
			goto out;
		}
		if (strcmp(e->name, "new") == 0 && have) {
			cli_error("session %s exists on %s", name, h->name);
			goto out;
		}
		if (strcmp(e->name, "start") == 0 && !have) {
			cli_error("no session %s on %s", name, h->name);
			goto out;
		}
		if (opt(a, "cpus") != NULL)
			ncpus =
			    atoi(opt(a, "cpus")) > 0 ? atoi(opt(a, "cpus")) : 1;
		mem = slurm_size_mb(opt(a, "memory"), mem);
		if (opt(a, "ttl") != NULL &&
		    option_duration("--ttl", opt(a, "ttl"), &ttl, &cause) !=
		        0) {
			rc = cli_usage_error(e, "%s", cause);
			free(cause);
			goto out;
		}
		if (slurm_job(name, &j, 1, &cause) != 0 || j.state[0] != '\0') {
			if (cause != NULL) {
				cli_error("%s", cause);
				free(cause);
			} else
				cli_error(
				    "session %s has a job already (%s, %s)",
				    name, j.id, j.state);
			goto out;
		}
		/* new's words but its name go to the job's vmux new */
		words = xcalloc((size_t)argc + 1, sizeof *words);
		for (int i = 1; strcmp(e->name, "new") == 0 && i < argc; i++)
			if (argv[i] != a->argv[0])
				words[nw++] = argv[i];
		rc = slurm_submit(h, dir, e->name, name, ncpus, mem, ttl, words,
		    nw, id, sizeof id);
		free(words);
		if (rc != 0) {
			rc = EXIT_VMUX;
			goto out;
		}
		rc = slurm_wait_ready(dir, name, h->name);
		if (rc == 0)
			printf("%s\n", name);
		goto out;
	}
	if (strcmp(e->name, "stop") == 0) {
		rc = slurm_cancel(name) == 0 ? 0 : EXIT_VMUX;
		goto out;
	}
	if (strcmp(e->name, "rm") == 0) {
		char *home, *sdir;
		pid_t pid;
		int st;

		if (slurm_cancel(name) != 0)
			goto out;
		xasprintf(&sdir, "%s/%s", dir, name);
		xasprintf(&home, "VMUX_HOME=%s", sdir);
		if ((pid = fork()) == 0) {
			char *exe = exe_path();
			putenv(home);
			execl(exe, exe, "-H", "local", "rm", "-f", name,
			    (char *)NULL);
			_exit(127);
		}
		waitpid(pid, &st, 0);
		rc = WIFEXITED(st) ? WEXITSTATUS(st) : EXIT_VMUX;
		if (rc == 0 && (pid = fork()) == 0) {
			execlp("rm", "rm", "-rf", "--", sdir, (char *)NULL);
			_exit(127);
		}
		if (rc == 0)
			waitpid(pid, &st, 0);
		free(home);
		free(sdir);
		goto out;
	}
	rc = slurm_inside(dir, name, e, argc, argv);
out:
	free(cpname);
	free(dir);
	return rc;
}
