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
 * job vanished with its node says which node and why.
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

#define SLURM_OUT_MAX     (64 * 1024 * 1024) /* what squeue may print */
#define SLURM_CMD_MS      30000              /* one Slurm command */
#define SLURM_READY_MS    (15 * 60 * 1000) /* a job's boot, pending included */
#define SLURM_STOP_MS     60000            /* the guest's clean poweroff */
#define SLURM_END_MS      120000           /* a cancelled job's end */
#define SLURM_OVERHEAD_MB 256 /* QEMU and vmux's own, beside guest RAM */
#define SLURM_JOB_PREFIX  "vmux-"
/* squeue's columns, one task of an array a line (-r) */
#define SLURM_QUEUE_FORMAT "%j|%A|%i|%K|%T|%N|%r|%L|%k"
#define SLURM_QUEUE_FIELDS 9       /* the comment last: it may hold a '|' */
#define SLURM_COMMENT      "vmux " /* and the cluster's folder */
/* Slurm's notice ahead of the time limit: vmux stops the guest on it */
#define SLURM_TIME_SIGNAL "--signal=B:USR2@60"

/*
 * The cluster's folder, in its jobs' comment ("vmux DIR"): a job is one of
 * this cluster's sessions only if it says so, not by its name alone (two
 * clusters on one controller, or a job of the user's named vmux-x).
 */
static const char *slurm_scope;

/* A session's job, as squeue says. */
struct slurm_job {
	char id[32];    /* the job's own id (%A): srun --jobid */
	char sid[48];   /* Slurm's name for it (%i: 12_3 in an array) */
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

/* This vmux's own path, for the node's side (free it). Without it no
 * command could be built: said, and vmux ends. */
static char *
slurm_exe(void)
{
	char *exe = exe_path();

	if (exe == NULL) {
		cli_error("cannot find the vmux binary: %s", strerror(errno));
		exit(EXIT_VMUX);
	}
	return exe;
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

/*
 * What a Slurm tool printed, as one line (free it): its last line, or def;
 * said plainly when it could not authenticate (munge).
 */
static char *
slurm_said(const char *out, const char *def)
{
	char *line = host_last_line(out != NULL ? out : ""), *r;
	char *e = strstr(line, ": error: ");

	if (*line == '\0') {
		free(line);
		return xstrdup(def);
	}
	if (e != NULL && e - line < 16) /* "sbatch: error: ": said by us */
		memmove(line, e + 9, strlen(e + 9) + 1);
	if (strcasestr(out, "munge") == NULL)
		return line;
	xasprintf(
	    &r, "cannot authenticate to Slurm, is munged running? (%s)", line);
	free(line);
	return r;
}

/* Every vmux job of ours: squeue's lines, SLURM_QUEUE_FORMAT. */
static char *
slurm_queue(char **cause)
{
	char *argv[] = {
	    "squeue", "-h", "-r", "--me", "-o", SLURM_QUEUE_FORMAT, NULL};
	char *out;

	if (slurm_run(argv, &out) != 0) {
		char *said =
		    slurm_said(out, "cannot ask Slurm (is slurmctld up?)");
		xasprintf(cause, "squeue: %s", said);
		free(said);
		free(out);
		return NULL;
	}
	return out;
}

/*
 * Is job name jobname, array index k ("N/A" outside an array), session
 * name's? vmux-NAME is, and task K of the array vmux-PREFIX is PREFIXK.
 */
static int
slurm_job_is(const char *jobname, const char *k, const char *name)
{
	size_t pl = strlen(SLURM_JOB_PREFIX), bl;

	if (strncmp(jobname, SLURM_JOB_PREFIX, pl) != 0)
		return 0;
	jobname += pl;
	if (strcmp(k, "N/A") == 0 || *k == '\0')
		return strcmp(jobname, name) == 0;
	bl = strlen(jobname);
	return strncmp(name, jobname, bl) == 0 && strcmp(name + bl, k) == 0;
}

/*
 * Is a job's comment one of this cluster's: "vmux [LABELS] DIR", the
 * labels (KEY=VALUE,...: letters, digits, '.', '_', '-') for squeue's
 * readers, the folder for us?
 */
static int
slurm_ours(const char *comment)
{
	if (strncmp(comment, SLURM_COMMENT, strlen(SLURM_COMMENT)) != 0)
		return 0;
	comment += strlen(SLURM_COMMENT);
	if (*comment == '[' && (comment = strstr(comment, "] ")) != NULL)
		comment += 2;
	return comment != NULL && strcmp(comment, slurm_scope) == 0;
}

/* The labels as a job's comment shows them ("[a=1,b=2] ", or ""). */
static char *
slurm_labels(char *const *labels, size_t n)
{
	char *s = xstrdup(n > 0 ? "[" : ""), *more;

	for (size_t i = 0; i < n; i++) {
		xasprintf(
		    &more, "%s%s%s", s, labels[i], i + 1 < n ? "," : "] ");
		free(s);
		s = more;
	}
	return s;
}

/*
 * Session name's job in a queue listing, into j (state "" if none; a job
 * COMPLETING counts only with ending: it is going, its VM stopping).
 */
static void
slurm_job_in(
    const char *queue, const char *name, struct slurm_job *j, int ending)
{
	const char *line = queue, *end;

	memset(j, 0, sizeof *j);
	for (; line != NULL && *line != '\0'; line = end) {
		char *copy, *p, *f[SLURM_QUEUE_FIELDS];
		int nf = 0;

		end = strchr(line, '\n');
		copy = end != NULL ? xstrndup(line, (size_t)(end - line))
		                   : xstrdup(line);
		end = end != NULL ? end + 1 : NULL;
		for (p = copy; p != NULL && nf < SLURM_QUEUE_FIELDS - 1;)
			f[nf++] = strsep(&p, "|");
		f[nf++] = p; /* the comment: the rest of the line */
		if (nf == SLURM_QUEUE_FIELDS && p != NULL && slurm_ours(p) &&
		    slurm_job_is(f[0], f[3], name) &&
		    (ending || strcmp(f[4], "COMPLETING") != 0)) {
			snprintf(j->id, sizeof j->id, "%s", f[1]);
			snprintf(j->sid, sizeof j->sid, "%s", f[2]);
			snprintf(j->state, sizeof j->state, "%s", f[4]);
			snprintf(j->node, sizeof j->node, "%s", f[5]);
			snprintf(j->reason, sizeof j->reason, "%s", f[6]);
			snprintf(j->left, sizeof j->left, "%s", f[7]);
			free(copy);
			return;
		}
		free(copy);
	}
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

/* Write the job's script to path; 0, or -1 (said). */
static int
slurm_script(const char *path, const struct host *h, const char *dir,
    const char *verb, const char *name, const char *array, char **words,
    size_t nw)
{
	char *q, *exe = slurm_exe();
	FILE *f = fopen(path, "w");

	if (f == NULL) {
		cli_error("cannot write %s: %s", path, strerror(errno));
		free(exe);
		return -1;
	}
	fprintf(f, "#!/bin/sh\n# vmux: session %s%s on %s (vmux %s)\n", name,
	    array != NULL ? "N, a task each" : "", h->name, verb);
	q = host_quote(name);
	if (array != NULL)
		fprintf(f, "name=%s\"$SLURM_ARRAY_TASK_ID\"\n", q);
	else
		fprintf(f, "name=%s\n", q);
	free(q);
	q = host_quote(dir);
	fprintf(f, "export VMUX_HOME=%s/\"$name\"\n", q);
	free(q);
	/* which node: for a session whose job vanishes with it */
	fprintf(f, "echo \"$SLURMD_NODENAME\" >\"$VMUX_HOME/node\"\n");
	q = host_quote(exe);
	fprintf(f, "exec %s -H local %s \"$name\" --foreground", q, verb);
	free(q);
	for (size_t i = 0; i < nw; i++) {
		q = host_quote(words[i]);
		fprintf(f, " %s", q);
		free(q);
	}
	fprintf(f, "\n");
	free(exe);
	if (fclose(f) != 0) {
		cli_error("cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	chmod(path, 0700);
	return 0;
}

/*
 * Submit the job of session name, `vmux VERB NAME --foreground WORDS`; or,
 * with array (Slurm's index list, "1-4" or "1,3"), one job array whose
 * task K runs session nameK; its comment shows labels (slurm_labels).
 * Each asks Slurm for ncpus and mem_mb (plus
 * vmux's overhead) for ttl seconds (0: the partition's limit). 0 with the
 * job id, or -1 (said). The sessions' folders must exist.
 */
static int
slurm_submit(const struct host *h, const char *dir, const char *verb,
    const char *name, const char *array, const char *labels, int ncpus,
    long long mem_mb, long long ttl, char **words, size_t nw, char *id,
    size_t idlen)
{
	char *script, *log, *text, *comment, *arr = NULL, *out = NULL;
	char *argv[26], cpus[32], mem[48], jobname[128], tl[32];
	size_t n = 0;
	int rc;

	if (array != NULL) { /* sbatch keeps its own copy: this one goes */
		xasprintf(&script, "%s/.%sN.sh", dir, name);
		xasprintf(&log, "%s/%s%%a/job.log", dir, name);
		xasprintf(&arr, "--array=%s", array);
	} else {
		xasprintf(&script, "%s/%s/job.sh", dir, name);
		xasprintf(&log, "%s/%s/job.log", dir, name);
		truncate(log, 0);
	}
	if (slurm_script(script, h, dir, verb, name, array, words, nw) != 0) {
		rc = -1;
		goto out;
	}
	snprintf(
	    jobname, sizeof jobname, "--job-name=" SLURM_JOB_PREFIX "%s", name);
	snprintf(cpus, sizeof cpus, "--cpus-per-task=%d", ncpus);
	snprintf(mem, sizeof mem, "--mem=%lldM", mem_mb + SLURM_OVERHEAD_MB);
	argv[n++] = "sbatch";
	argv[n++] = "--parsable";
	argv[n++] = jobname;
	argv[n++] = cpus;
	argv[n++] = mem;
	argv[n++] = SLURM_TIME_SIGNAL;
	/* a node that fails takes its VM with it: the session is lost, and
	 * started again by the user, not run twice on one workspace */
	argv[n++] = "--no-requeue";
	xasprintf(&text, "--output=%s", log);
	argv[n++] = text;
	xasprintf(&comment, "--comment=" SLURM_COMMENT "%s%s", labels, dir);
	argv[n++] = comment;
	if (arr != NULL)
		argv[n++] = arr;
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
	if (ttl > 0) {
		/* Slurm's limit is in minutes, its notice comes up to two
		 * early: vmux's own --ttl ends the session first */
		snprintf(tl, sizeof tl, "--time=%lld", (ttl + 59) / 60 + 3);
		argv[n++] = tl;
	}
	argv[n++] = script;
	argv[n] = NULL;
	rc = slurm_run(argv, &out);
	free(text);
	free(comment);
	if (rc != 0) {
		char *said = slurm_said(out, "failed");
		cli_error("sbatch: %s", said);
		free(said);
		rc = -1;
	} else {
		out[strcspn(out, ";\n")] = '\0';
		snprintf(id, idlen, "%s", out);
		rc = 0;
	}
out:
	if (array != NULL)
		unlink(script);
	free(out);
	free(arr);
	free(script);
	free(log);
	return rc;
}

/* The last lines of a file, made printable, for an error (free it). */
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
	return str_printable(buf, STR_KEEP_NL); /* the job wrote it */
}

/* Does session name answer inside job id (vmux ping there)? */
static int
slurm_ready(const char *dir, const char *name, const char *id)
{
	char *home, *exe = slurm_exe(), *out;
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

/* Run scancel with words; 0, or -1 (said). */
static int
slurm_scancel(char **argv)
{
	char *out, *said;

	if (slurm_run(argv, &out) == 0) {
		free(out);
		return 0;
	}
	said = slurm_said(out, "failed");
	cli_error("scancel: %s", said);
	free(said);
	free(out);
	return -1;
}

/* Wait until session name's job is gone: 1, 0 at deadline, -1. */
static int
slurm_wait_gone(const char *name, uint64_t deadline)
{
	struct slurm_job j;
	char *cause = NULL;

	while (mono_ms() < deadline) {
		if (slurm_job(name, &j, 1, &cause) != 0) {
			cli_error("%s", cause);
			free(cause);
			return -1;
		}
		if (j.state[0] == '\0')
			return 1;
		poll(NULL, 0, 300);
	}
	return 0;
}

/* Cancel session name's job outright, if it has one, and wait for it. */
static void
slurm_kill(const char *name)
{
	struct slurm_job j;
	char *cause = NULL;

	if (slurm_job(name, &j, 0, &cause) != 0) {
		free(cause);
		return;
	}
	if (j.state[0] != '\0') {
		char *argv[] = {"scancel", j.sid, NULL};
		if (slurm_scancel(argv) == 0)
			slurm_wait_gone(name, mono_ms() + SLURM_END_MS);
	}
}

/*
 * Does a pending job's reason never clear by itself (so it would wait
 * forever): no account, or one the partition or QOS does not allow?
 */
static int
slurm_reason_final(const char *reason)
{
	static const char *const final[] = {"account", "Account", "InvalidQOS",
	    "QOSNotAllowed", "PartitionConfig", "BadConstraints", NULL};

	for (const char *const *f = final; *f != NULL; f++)
		if (strstr(reason, *f) != NULL)
			return 1;
	return 0;
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
		if (strcmp(j.state, "PENDING") == 0 &&
		    slurm_reason_final(j.reason)) {
			char *argv[] = {"scancel", j.sid, NULL};
			cli_error(
			    "%s cannot run on %s: %s", name, cluster, j.reason);
			slurm_scancel(argv);
			slurm_wait_gone(name, mono_ms() + SLURM_END_MS);
			return EXIT_VMUX;
		}
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

/*
 * End session name's job and wait for it to go. A running one: SIGTERM to
 * its batch step alone, which is vmux (foreground.c), so the guest powers
 * off and the job ends by itself; Slurm's own scancel would signal QEMU
 * too, which quits at once. Cancelled outright if that does not end it,
 * or if it is pending. 0, or -1 (said).
 */
static int
slurm_cancel(const char *name)
{
	struct slurm_job j;
	char *cause = NULL;
	int rc;

	if (slurm_job(name, &j, 0, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		return -1;
	}
	if (j.state[0] == '\0')
		return 0;
	if (strcmp(j.state, "RUNNING") == 0) {
		char *argv[] = {
		    "scancel", "--batch", "--signal=TERM", j.sid, NULL};
		if (slurm_scancel(argv) != 0)
			return -1;
		rc = slurm_wait_gone(name, mono_ms() + SLURM_STOP_MS);
		if (rc != 0)
			return rc > 0 ? 0 : -1;
	}
	{
		char *argv[] = {"scancel", j.sid, NULL};
		if (slurm_scancel(argv) != 0)
			return -1;
	}
	rc = slurm_wait_gone(name, mono_ms() + SLURM_END_MS);
	if (rc == 0)
		cli_error("%s's job did not end", name);
	return rc > 0 ? 0 : -1;
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
 * (not from its QEMU's pid: that lives on a node, not here).
 */
static const char *
slurm_state(const struct slurm_job *j, const struct session_record *r)
{
	char *why;
	int ended;

	if (strcmp(j->state, "PENDING") == 0)
		return "pending";
	if (j->state[0] != '\0') { /* running, or going */
		if (strcmp(j->state, "RUNNING") != 0)
			return "stopping";
		return r->status == SESSION_STARTING ? "starting"
		    : r->status == SESSION_READY     ? "running"
		                                     : "stopping";
	}
	if (r->status == SESSION_STOPPED || r->status == SESSION_STOPPING)
		return "stopped";
	/* it should be running and its job is gone: its QEMU ended by
	 * itself if its reaper said so, else it went with its node */
	why = slurm_exit_why(r);
	ended = why != NULL;
	free(why);
	return ended ? "crashed" : "lost";
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

/* One session of the cluster as ls shows it (its job from queue). */
static cJSON *
slurm_ls_one(const char *dir, const struct session_record *r, const char *queue,
    char **nodes)
{
	struct slurm_job j;
	const char *state;
	cJSON *o = cJSON_CreateObject();
	char *node;

	slurm_job_in(queue, r->name, &j, 1);
	state = slurm_state(&j, r);
	node =
	    j.node[0] != '\0' ? xstrdup(j.node) : slurm_node_of(dir, r->name);
	cJSON_AddStringToObject(o, "name", r->name);
	cJSON_AddStringToObject(o, "state", state);
	cJSON_AddStringToObject(o, "node", node);
	cJSON_AddStringToObject(o, "job", j.sid);
	cJSON_AddStringToObject(o, "time_left", j.left);
	cJSON_AddNumberToObject(o, "cpus", r->cpus);
	cJSON_AddNumberToObject(o, "memory_mb", r->memory_mb);
	if (strcmp(state, "pending") == 0)
		cJSON_AddStringToObject(o, "reason", j.reason);
	if (strcmp(state, "lost") == 0 || strcmp(state, "crashed") == 0) {
		char *why = strcmp(state, "lost") == 0
		    ? slurm_lost_why(node, nodes)
		    : slurm_exit_why(r);
		cJSON_AddStringToObject(o, "reason", why);
		free(why);
	}
	if (r->stop_reason != NULL && strcmp(state, "stopped") == 0)
		cJSON_AddStringToObject(o, "stopped_by", r->stop_reason);
	free(node);
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
static int
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
};
static struct slurm_model *slurm_model_now; /* many_run's result has it */

/* slurm_each's fn for the model: a running session is asked in its job;
 * another is shown from its record. */
static void
slurm_model_add(const char *dir, const struct session_record *r,
    const char *queue, void *arg)
{
	struct slurm_model *sm = arg;
	struct slurm_job j;
	char *nodes = NULL, *node, *why;
	const char *state, *group;
	cJSON *o;

	slurm_job_in(queue, r->name, &j, 1);
	if (strcmp(j.state, "RUNNING") == 0) {
		sm->names =
		    xreallocarray(sm->names, sm->n + 1, sizeof *sm->names);
		sm->jobs = xreallocarray(sm->jobs, sm->n + 1, sizeof *sm->jobs);
		sm->names[sm->n] = xstrdup(r->name);
		sm->jobs[sm->n++] = xstrdup(j.id);
		return;
	}
	state = slurm_state(&j, r);
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", r->name);
	cJSON_AddStringToObject(o, "state", state);
	if (strcmp(state, "lost") == 0) {
		node = slurm_node_of(dir, r->name);
		why = slurm_lost_why(node, &nodes);
		cJSON_AddStringToObject(o, "detail", why);
		free(why);
		free(node);
		free(nodes);
	} else if (strcmp(state, "crashed") == 0) {
		why = slurm_exit_why(r);
		cJSON_AddStringToObject(o, "detail", why != NULL ? why : "");
		free(why);
	} else if (strcmp(state, "pending") == 0)
		cJSON_AddStringToObject(o, "detail", j.reason);
	else if (r->stop_reason != NULL)
		cJSON_AddStringToObject(o, "detail", r->stop_reason);
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
	char **v = xcalloc(16, sizeof *v);
	size_t n = 0, i = 0;

	while (i < sm->n && strcmp(sm->names[i], session) != 0)
		i++;
	if (i == sm->n)
		abort(); /* can't happen: many_run runs sm's names */
	v[n++] = xstrdup("srun");
	v[n++] = xstrdup("--jobid");
	v[n++] = xstrdup(sm->jobs[i]);
	v[n++] = xstrdup("--overlap");
	v[n++] = xstrdup("--quiet");
	v[n++] = xstrdup("env");
	xasprintf(&v[n++], "VMUX_HOME=%s/%s", sm->dir, session);
	v[n++] = xstrdup(self);
	v[n++] = xstrdup("-H");
	v[n++] = xstrdup("local");
	v[n++] = xstrdup("tui");
	v[n++] = xstrdup("--model-json");
	if (sm->group_by != NULL)
		xasprintf(&v[n++], "--group-by=%s", sm->group_by);
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
static int
slurm_model(const char *dir, struct args *a)
{
	const char *s = args_get(a, "selector");
	struct selector sel = {NULL, 0};
	struct slurm_model sm = {
	    dir, args_get(a, "group-by"), NULL, NULL, 0, cJSON_CreateArray()};
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
	cJSON_Delete(sm.list);
	selector_free(&sel);
	return rc;
}

/* A command inside name's job: srun --overlap there (this process goes). */
static int
slurm_inside(const char *dir, const char *name, const struct cmd_entry *e,
    int argc, char **argv)
{
	struct slurm_job j;
	char *cause = NULL, *home, *exe = slurm_exe(), **v;
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
	else if (strcmp(e->name, "connect") == 0)
		v[n++] = "-u"; /* unbuffered: a stream, not lines (connect) */
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

/* The size asked for: cpus, memory and ttl from a's flags over the
 * defaults given. 0, or a usage error's exit status (said). */
static int
slurm_size(struct args *a, int *ncpus, long long *mem, long long *ttl)
{
	char *cause = NULL;
	long long v;

	if (opt(a, "cpus") != NULL) {
		if (option_number(
		        "--cpus", opt(a, "cpus"), 1, 1024, &v, &cause) != 0) {
			int rc = cli_usage_error(a->entry, "%s", cause);
			free(cause);
			return rc;
		}
		*ncpus = (int)v;
	}
	if (opt(a, "memory") != NULL &&
	    option_size_mb(
	        "--memory", opt(a, "memory"), 1, 1LL << 30, mem, &cause) != 0) {
		int rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	if (opt(a, "ttl") != NULL &&
	    option_duration("--ttl", opt(a, "ttl"), ttl, &cause) != 0) {
		int rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
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
	*mem = p.memory_mb > 0 ? p.memory_mb : 512;
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
	int is_new = strcmp(a->entry->name, "new") == 0, ncpus = 1, rc;
	long long mem = 512, ttl = 0;
	struct session_record r;
	char *cause = NULL, **words = NULL, *sdir, id[32], *labels = NULL;
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
		mem = r.memory_mb > 0 ? r.memory_mb : 512;
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
	if (is_new)
		args_flags(a, skip, &words, &nw);
	xasprintf(&sdir, "%s/%s", dir, name);
	mkdir(sdir, 0700);
	free(sdir);
	rc = slurm_submit(h, dir, a->entry->name, name, NULL, labels, ncpus,
	    mem, ttl, words, nw, id, sizeof id);
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
	long long count, mem = 512, ttl = 0;
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
		} else {
			char *log;
			mkdir(sdir, 0700);
			xasprintf(&log, "%s/job.log", sdir);
			truncate(log, 0);
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
	char *home, *sdir, *exe, *cause = NULL;
	pid_t pid;
	int st, rc;

	if (session_name_valid(name, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		return EXIT_VMUX;
	}
	if (slurm_cancel(name) != 0)
		slurm_kill(name); /* its guest's clean end is not rm's aim */
	exe = slurm_exe();
	xasprintf(&sdir, "%s/%s", dir, name);
	xasprintf(&home, "VMUX_HOME=%s", sdir);
	if ((pid = fork()) == 0) {
		putenv(home);
		execl(exe, exe, "-H", "local", "rm", "-f", name, (char *)NULL);
		_exit(127);
	}
	rc = pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st)
	    ? WEXITSTATUS(st)
	    : EXIT_VMUX;
	if (rc == 0 && (pid = fork()) == 0) {
		execlp("rm", "rm", "-rf", "--", sdir, (char *)NULL);
		_exit(127);
	}
	if (rc == 0 &&
	    (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	        WEXITSTATUS(st) != 0)) {
		cli_error("cannot remove %s", sdir);
		rc = EXIT_VMUX;
	}
	free(exe);
	free(home);
	free(sdir);
	return rc;
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
	if (strpbrk(dir, "%\\|") != NULL) { /* Slurm expands %x in --output */
		cli_error("the cluster's folder %s has a '%%', '\\' or '|': "
		          "set one without (dir=)",
		    dir);
		free(dir);
		return EXIT_VMUX;
	}
	slurm_scope = dir;
	if (strcmp(e->name, "ls") == 0) {
		rc = slurm_ls(dir, a);
		goto out;
	}
	if (strcmp(e->name, "tui") == 0 && args_has(a, "model-json")) {
		rc = slurm_model(dir, a);
		goto out;
	}
	if (strcmp(e->name, "new") == 0 &&
	    (opt(a, "count") != NULL || opt(a, "roster") != NULL)) {
		rc = slurm_class(h, dir, a);
		goto out;
	}
	if (name == NULL) {
		rc = cli_usage_error(e, "on a cluster, name one session");
		goto out;
	}
	if (strcmp(e->name, "new") == 0 || strcmp(e->name, "start") == 0) {
		rc = slurm_new(h, dir, a, name);
		goto out;
	}
	if (strcmp(e->name, "stop") == 0 || strcmp(e->name, "rm") == 0) {
		if (args_has_opt(a, "keep-workspace") &&
		    args_has(a, "keep-workspace")) {
			rc = cli_usage_error(
			    e, "--keep-workspace on a cluster: not yet");
			goto out;
		}
		/* each name, as on one machine; the status is the worst */
		rc = 0;
		for (int i = 0; i < a->argc; i++) {
			int r = strcmp(e->name, "stop") == 0
			    ? slurm_stop(dir, a->argv[i])
			    : slurm_rm(dir, a->argv[i]);
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
