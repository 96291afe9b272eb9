/*
 * slurm-job.c: a cluster session's job, through Slurm's own tools (the
 * cluster is slurm.c's): squeue's listing and the job in it that is a
 * session's, the job's script and its sbatch, waiting for it to be ready
 * (srun --overlap vmux ping), and its end (scancel). Every answer a tool
 * gives is kept by the caller (free it); errors are said here.
 */
#include <sys/stat.h>

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
#include "slurm.h"

/*
 * The cluster's folder, in its jobs' comment ("vmux DIR"): a job is one of
 * this cluster's sessions only if it says so, not by its name alone (two
 * clusters on one controller, or a job of the user's named vmux-x).
 */
const char *slurm_scope;

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

/* Run argv, its stdout into *out; its exit status, or -1. */
int
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
char *
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
char *
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
void
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
int
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
	FILE *f = NULL;
	int fd;

	/* made anew, never another's file or a symlink's target: the folder
	 * is the user's alone (slurm_dir), and sbatch reads it whole below */
	unlink(path);
	fd = open(
	    path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0700);
	if (fd >= 0 && (f = fdopen(fd, "w")) == NULL)
		close(fd);
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
	if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
		cli_error("cannot write %s: %s", path, strerror(errno));
		fclose(f);
		return -1;
	}
	if (fclose(f) != 0) {
		cli_error("cannot write %s: %s", path, strerror(errno));
		return -1;
	}
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
int
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
		unlink(log); /* the job makes it anew */
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
char *
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

/*
 * The command that runs this vmux inside session name's job id, on its
 * node, as that session's (its folder its home), then words (nw of them):
 * srun --jobid ID --overlap --quiet [opt] env VMUX_HOME=DIR/NAME VMUX -H
 * local WORDS. opt is srun's own (--pty, -u) or NULL. NULL-terminated,
 * each word the caller's (host_argv_free).
 */
char **
slurm_srun_argv(const char *dir, const char *name, const char *id,
    const char *opt, char *const *words, size_t nw)
{
	char **v = xcalloc(nw + 13, sizeof *v);
	size_t n = 0;

	v[n++] = xstrdup("srun");
	v[n++] = xstrdup("--jobid");
	v[n++] = xstrdup(id);
	v[n++] = xstrdup("--overlap");
	v[n++] = xstrdup("--quiet");
	if (opt != NULL)
		v[n++] = xstrdup(opt);
	v[n++] = xstrdup("env");
	xasprintf(&v[n++], "VMUX_HOME=%s/%s", dir, name);
	v[n++] = slurm_exe();
	v[n++] = xstrdup("-H");
	v[n++] = xstrdup("local");
	for (size_t i = 0; i < nw; i++)
		v[n++] = xstrdup(words[i]);
	return v;
}

/* Does session name answer inside job id (vmux ping there)? */
int
slurm_ready(const char *dir, const char *name, const char *id)
{
	char *words[] = {"ping", (char *)name}, *out;
	char **v = slurm_srun_argv(dir, name, id, NULL, words, 2);
	int ok = slurm_run(v, &out) == 0;

	free(out);
	host_argv_free(v);
	return ok;
}

/* Run scancel with words; 0, or -1 (said). */
int
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

/* Cancel job sid (session name's) outright and wait for it to go: 1, 0
 * at the deadline, -1 (said). */
static int
slurm_end(const char *name, const char *sid)
{
	char *argv[] = {"scancel", (char *)sid, NULL};

	if (slurm_scancel(argv) != 0)
		return -1;
	return slurm_wait_gone(name, mono_ms() + SLURM_END_MS);
}

/* Cancel session name's job outright, if it has one, and wait for it. */
void
slurm_kill(const char *name)
{
	struct slurm_job j;
	char *cause = NULL;

	if (slurm_job(name, &j, 0, &cause) != 0) {
		free(cause);
		return;
	}
	if (j.state[0] != '\0')
		slurm_end(name, j.sid);
}

/*
 * Does a pending job's reason never clear by itself (so it would wait
 * forever): no account, or one the partition or QOS does not allow?
 */
int
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
int
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
			cli_error(
			    "%s cannot run on %s: %s", name, cluster, j.reason);
			slurm_end(name, j.sid);
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
int
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
	rc = slurm_end(name, j.sid);
	if (rc == 0)
		cli_error("%s's job did not end", name);
	return rc > 0 ? 0 : -1;
}

/* The record of session name in its folder (0), or -1 if there is none. */
int
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
