/*
 * fork.c: vmux fork: running copies of a session, each with the parent's
 * memory, processes, shells and workspace, which then go apart.
 *
 * Each child's name, folder, CID and lock are had first. Then the parent
 * is stopped just long enough for QEMU to write its device state and for
 * its RAM file and workspace to be copied into the first child's folder (a
 * reflink where the file system has them, else a sparse copy of what is
 * used); then it runs on, and the other children are copied from the
 * first's files. Each child is a new session made paused from those files
 * and resumed (pause.c), and the agent gives it its own host name and
 * machine-id.
 * Labels are kept; grants, web links, recordings and published ports are
 * not (they name the parent, or a host port only one may have). The caller
 * owns struct fork_result.
 */
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "session.h"

#define FORK_LOCK_MS 30000
#define FORK_QMP_MS  5000

/* The size of the file at path in *size; 0 or -1. */
static int
file_size(const char *path, off_t *size)
{
	struct stat sb;

	if (stat(path, &sb) != 0)
		return -1;
	*size = sb.st_size;
	return 0;
}

/*
 * A child's record from the parent's: what the table and the settings
 * say, with the child's own name, folder, instance and identity, and none
 * of what belongs to the parent's processes. Its paths and CID come with
 * the claim (launch.c).
 */
static int
child_record(const struct session_record *p, const char *home, const char *name,
    struct session_record *c, char **cause)
{
	cJSON *j = record_to_json(p);
	int rc = record_from_json(j, c, cause);

	cJSON_Delete(j);
	if (rc != 0)
		return -1;
	free(c->name);
	c->name = xstrdup(name);
	free(c->dir);
	c->dir = session_dir(home, name);
#define CLEAR(f)                                                               \
	do {                                                                   \
		free(c->f);                                                    \
		c->f = NULL;                                                   \
	} while (0)
	CLEAR(vsock_uds);
	CLEAR(vhost_user);
	CLEAR(qmp);
	CLEAR(sock_dir);
	CLEAR(ram_file);
	CLEAR(console_log);
	CLEAR(console_sock);
	CLEAR(qemu_log);
	CLEAR(bridge_log);
	CLEAR(stop_reason);
	CLEAR(hostname); /* its own: its name */
	CLEAR(state_key);
	CLEAR(state_sum);
	CLEAR(parent);
	CLEAR(instance);
	CLEAR(workspace);
#undef CLEAR
	c->parent = xstrdup(p->name);
	c->instance = record_instance_new();
	c->instance_late = 0;
	c->created = (int64_t)time(NULL);
	c->qemu_pid = c->bridge_pid = c->console_pid = c->recorder_pid = 0;
	c->record = c->record_input = 0;
	for (size_t i = 0; i < c->npublish; i++)
		free(c->publish[i]);
	free(c->publish);
	c->publish = NULL;
	c->npublish = 0;
	c->status = SESSION_STOPPED;
	c->stop_reason = xstrdup("fork");
	if (p->workspace != NULL) {
		xasprintf(&c->workspace, "%s/%s", c->dir, SESSION_WORKSPACE);
		c->workspace_owned = 1;
	}
	return 0;
}

/*
 * Copy the stopped parent's files into child c's folder: its device state
 * (written once, into state), RAM (from ram_src), workspace (from ws_src,
 * or none) and --image root's layer (root_src, or none). 0, or -1 with
 * cause.
 */
static int
child_files(const struct session_record *c, const char *state,
    const char *ram_src, const char *ws_src, const char *root_src, char **cause)
{
	char *ram = state_path(c, SESSION_RAM_SAVED);
	char *st = state_path(c, SESSION_STATE);
	off_t size;
	int rc = file_copy_sparse(state, st, 0, &size, cause);
	if (rc == 0)
		rc = file_copy_cow(ram_src, ram, cause);
	if (rc == 0 && ws_src != NULL)
		rc = file_copy_cow(ws_src, c->workspace, cause);
	if (rc == 0 && root_src != NULL) { /* its --image root's writes */
		char *to = state_path(c, SESSION_ROOT_OVERLAY);

		rc = file_copy_cow(root_src, to, cause);
		free(to);
	}
	free(ram);
	free(st);
	return rc;
}

/* Let the stopped parent run on. */
static void
parent_cont(const struct session_record *p, struct qmp *q)
{
	char *why = NULL;

	if (qmp_run(q, "{\"execute\":\"cont\"}", mono_ms() + FORK_QMP_MS,
	        &why) != 0) {
		/* can't happen: a stopped VM always continues */
		log_debug("fork %s: cont: %s", p->name, why);
		free(why);
	}
}

/* Free what a fork_result holds. */
void
fork_result_free(struct fork_result *fr)
{
	for (size_t i = 0; i < fr->n; i++) {
		free(fr->child[i].name);
		free(fr->child[i].error);
	}
	free(fr->child);
	memset(fr, 0, sizeof *fr);
}

/* Resume child i (in a process of its own when several: they boot at
 * once); its result in fr. */
static void
child_resume(const char *home, struct fork_child *ch)
{
	struct launch_opts o;
	struct session_record r;
	char *id = record_instance_new(); /* 32 hex digits */
	uint64_t t0 = mono_ms();

	memset(&o, 0, sizeof o);
	o.home = home;
	o.name = ch->name;
	o.boot_timeout_s = 60;
	o.machine_id = id;
	if (session_resume(&o, &r, &ch->error) == 0) {
		ch->ok = 1;
		ch->ready_ms = mono_ms() - t0;
		record_free(&r);
	}
	free(id);
}

/* Resume every child that was made, at once. */
static void
children_resume(const char *home, struct fork_result *fr)
{
	pid_t *pids = xcalloc(fr->n, sizeof *pids);
	int pipes[2];

	if (fr->n == 1 || pipe2(pipes, O_CLOEXEC) != 0) {
		for (size_t i = 0; i < fr->n; i++)
			if (fr->child[i].made)
				child_resume(home, &fr->child[i]);
		free(pids);
		return;
	}
	for (size_t i = 0; i < fr->n; i++) {
		if (!fr->child[i].made)
			continue;
		if ((pids[i] = fork()) < 0)
			xasprintf(&fr->child[i].error, "cannot fork: %s",
			    strerror(errno));
		else if (pids[i] == 0) {
			char *e;

			child_resume(home, &fr->child[i]);
			/* one line: "vmux-fork I OK MS ERROR", the error on
			 * one line (it may hold log tails) */
			e = fr->child[i].error != NULL
			    ? xstrdup(fr->child[i].error)
			    : xstrdup("");
			for (char *c = e; *c != '\0'; c++)
				if (*c == '\n' || *c == '\r')
					*c = ' ';
			dprintf(pipes[1], "vmux-fork %zu %d %llu %s\n", i,
			    fr->child[i].ok,
			    (unsigned long long)fr->child[i].ready_ms, e);
			_exit(0);
		}
	}
	close(pipes[1]);
	{
		FILE *f = fdopen(pipes[0], "r");
		char *line = NULL;
		size_t cap = 0;

		while (f != NULL && getline(&line, &cap, f) > 0) {
			size_t i;
			int ok, off = 0;
			unsigned long long ms;

			if (sscanf(line, "vmux-fork %zu %d %llu %n", &i, &ok,
			        &ms, &off) < 3 ||
			    i >= fr->n || fr->child[i].ok ||
			    fr->child[i].error != NULL)
				continue;
			fr->child[i].ok = ok;
			fr->child[i].ready_ms = ms;
			line[strcspn(line, "\n")] = '\0';
			if (!ok)
				fr->child[i].error = xstrdup(line + off);
		}
		free(line);
		if (f != NULL)
			fclose(f);
		else
			close(pipes[0]);
	}
	for (size_t i = 0; i < fr->n; i++) {
		if (pids[i] > 0)
			waitpid(pids[i], NULL, 0);
		if (fr->child[i].made && !fr->child[i].ok &&
		    fr->child[i].error == NULL)
			fr->child[i].error = xstrdup("its resume ended early");
	}
	free(pids);
}

/* A child on its way: its record, locked (nobody starts it half-copied)
 * from its claim until its files and record are made. */
struct child_make {
	struct session_record c;
	int lock;   /* -1: not claimed (its fork_child says why) */
	int failed; /* claimed, then failed: removed at the end */
};

/* Give up child m: its folder and sockets go, its lock too. */
static void
child_unmake(struct child_make *m)
{
	if (m->c.sock_dir != NULL)
		rmtree(m->c.sock_dir);
	if (m->c.dir != NULL)
		rmtree(m->c.dir);
	if (m->lock >= 0)
		session_unlock(m->lock);
	m->lock = -1;
	record_free(&m->c);
}

/*
 * Before the parent stops: each child's record from p's, its claim (name,
 * folder, CID) and its lock, so the stop waits only on copies. An array of
 * fr->n the caller frees with children_done.
 */
static struct child_make *
children_prepare(
    const char *home, const struct session_record *p, struct fork_result *fr)
{
	struct child_make *m = xcalloc(fr->n, sizeof *m);

	for (size_t i = 0; i < fr->n; i++) {
		struct fork_child *ch = &fr->child[i];
		struct launch_opts o;

		m[i].lock = -1;
		memset(&o, 0, sizeof o);
		o.home = home;
		o.name = ch->name;
		if (session_name_valid(ch->name, &ch->error) != 0 ||
		    child_record(p, home, ch->name, &m[i].c, &ch->error) != 0)
			continue;
		if (launch_claim(&o, &m[i].c, &ch->error) != 0) {
			record_free(&m[i].c);
			continue;
		}
		m[i].lock = session_lock_one(
		    m[i].c.dir, "vmux fork", 0, NULL, &ch->error);
		if (m[i].lock < 0)
			child_unmake(&m[i]);
	}
	return m;
}

/* Remove the children that failed, unlock the rest; free m. */
static void
children_done(struct child_make *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (m[i].failed)
			child_unmake(&m[i]);
		else if (m[i].lock >= 0) {
			session_unlock(m[i].lock);
			record_free(&m[i].c);
		}
	}
	free(m);
}

/*
 * Make the prepared children m, paused, from the stopped (or paused)
 * parent p: their files and records. The parent's QMP q is open, its state
 * stream set up and its guest stopped when p runs (q NULL: p is paused,
 * its state files are copied). Only the first child is copied from the
 * running parent, which then goes on (fr->frozen_ms says how long it was
 * stopped, counted from t0); the others are copies of that child's files,
 * made while it runs.
 */
static void
children_make(const struct session_record *p, struct qmp *q, uint64_t t0,
    struct fork_result *fr, struct child_make *m)
{
	char *state = NULL, *err = NULL,
	     *ram_src = q != NULL ? xstrdup(p->ram_file)
	                          : state_path(p, SESSION_RAM_SAVED);
	char *ws_src = p->workspace != NULL ? xstrdup(p->workspace) : NULL;
	char *root_src =
	    p->root_image != NULL ? state_path(p, SESSION_ROOT_OVERLAY) : NULL;

	if (q != NULL) { /* the running parent's state, once for all */
		state = state_path(p, SESSION_STATE ".fork");
		if (state_save(q, &err) != 0) {
			for (size_t i = 0; i < fr->n; i++)
				if (m[i].lock >= 0) {
					fr->child[i].error = xstrdup(err);
					m[i].failed = 1;
				}
			free(err);
			goto done;
		}
	} else /* paused: its own state file */
		state = state_path(p, SESSION_STATE);
	for (size_t i = 0; i < fr->n; i++) {
		struct fork_child *ch = &fr->child[i];
		struct session_record *c = &m[i].c;
		off_t size;
		char *st, *ram, *sum = NULL;

		if (m[i].lock < 0)
			continue;
		st = state_path(c, SESSION_STATE);
		ram = state_path(c, SESSION_RAM_SAVED);
		if (child_files(
		        c, state, ram_src, ws_src, root_src, &ch->error) != 0) {
			m[i].failed = 1;
			goto next;
		}
		if (q != NULL) { /* copied: the parent runs on */
			parent_cont(p, q);
			fr->frozen_ms = mono_ms() - t0;
			q = NULL;
			free(ram_src);
			ram_src = xstrdup(ram);
			free(ws_src);
			ws_src =
			    c->workspace != NULL ? xstrdup(c->workspace) : NULL;
			if (root_src != NULL) {
				free(root_src);
				root_src = state_path(c, SESSION_ROOT_OVERLAY);
			}
		}
		if (file_size(ram, &size) != 0 ||
		    (sum = state_sum_of(st, size)) == NULL) {
			xasprintf(&ch->error, "%s: cannot read it back", st);
			m[i].failed = 1;
			goto next;
		}
		c->status = SESSION_PAUSED;
		c->paused = (int64_t)time(NULL);
		c->state_key = state_key(p);
		c->state_sum = sum;
		free(c->stop_reason);
		c->stop_reason = NULL;
		free(c->ram_file); /* where it lives when it runs */
		c->ram_file = session_ram_path(c->dir);
		if (record_save(c, &ch->error) != 0)
			m[i].failed = 1;
		else
			ch->made = 1;
	next:
		free(st);
		free(ram);
	}
done:
	if (q != NULL) { /* no child was made */
		parent_cont(p, q);
		fr->frozen_ms = mono_ms() - t0;
	}
	free(state);
	free(ram_src);
	free(ws_src);
	free(root_src);
}

/*
 * vmux fork: make fr->n running copies of session parent, named as fr's
 * children are (fr->child[i].name set by the caller). Each child's result
 * is in fr; fr->frozen_ms is how long the parent was stopped. 0 when the
 * copies were tried (each may still have failed: see fr), -1 with cause
 * when the parent cannot be copied (not running or paused, a host folder,
 * its QMP or state file out of reach); it runs on all the same.
 */
int
session_fork(const char *home, const char *parent, struct fork_result *fr,
    void (*notice)(const char *), char **cause)
{
	struct session_record p;
	struct qmp q, *qp = NULL;
	struct child_make *m = NULL;
	sigset_t held;
	char *why = NULL, *state = NULL;
	const char *st;
	uint64_t t0 = mono_ms();
	size_t claimed;
	int lock, fd = -1, rc = -1;

	lock = session_lock_record(
	    home, parent, "vmux fork", FORK_LOCK_MS, notice, &p, cause);
	if (lock < 0)
		return -1;
	st = session_state(&p);
	if (strcmp(st, "running") != 0 && strcmp(st, "paused") != 0) {
		xasprintf(cause, "session '%s' is %s", parent, st);
		goto out;
	}
	if (strcmp(st, "running") == 0 &&
	    (why = session_why_no_pause(&p)) != NULL) {
		xasprintf(cause, "cannot fork '%s': %s; it keeps running",
		    parent, why);
		goto out;
	}
	if (strcmp(st, "paused") == 0 && state_check(&p, &why) != 0) {
		xasprintf(cause, "cannot fork '%s': %s", parent, why);
		goto out;
	}
	m = children_prepare(home, &p, fr);
	for (claimed = 0; claimed < fr->n && m[claimed].lock < 0; claimed++)
		;
	if (claimed == fr->n) { /* no name could be had: nothing to copy */
		rc = 0;
		goto out;
	}
	if (strcmp(st, "running") == 0) {
		if (qmp_open(&q, p.qmp, mono_ms() + FORK_QMP_MS, cause) != 0)
			goto out;
		state = state_path(&p, SESSION_STATE ".fork");
		unlink(state);
		fd = open(state, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0)
			xasprintf(&why, "%s: %s", state, strerror(errno));
		if (fd < 0 || state_save_begin(&q, fd, &why) != 0) {
			xasprintf(cause,
			    "cannot fork '%s': %s; it keeps running", parent,
			    why);
			qmp_close(&q);
			goto out;
		}
		qp = &q;
		/* nothing ends this command while the parent is stopped */
		signals_hold(&held);
		t0 = mono_ms();
		if (qmp_run(&q, "{\"execute\":\"stop\"}",
		        mono_ms() + FORK_QMP_MS, cause) != 0) {
			parent_cont(&p, &q); /* a late answer stopped it too */
			qmp_close(&q);
			signals_release(&held);
			goto out;
		}
	}
	children_make(&p, qp, t0, fr, m);
	if (qp != NULL) {
		qmp_close(&q);
		signals_release(&held);
	}
	children_done(m, fr->n);
	m = NULL;
	if (state != NULL) { /* copied: gone while the parent is locked */
		close(fd);
		fd = -1;
		unlink(state);
		free(state);
		state = NULL;
	}
	session_unlock(lock);
	lock = -1;
	children_resume(home, fr);
	rc = 0;
out:
	if (m != NULL) { /* nothing made: the claims go */
		for (size_t i = 0; i < fr->n; i++)
			m[i].failed = m[i].lock >= 0;
		children_done(m, fr->n);
	}
	if (fd >= 0)
		close(fd);
	if (state != NULL)
		unlink(state);
	free(state);
	free(why);
	record_free(&p);
	if (lock >= 0)
		session_unlock(lock);
	return rc;
}
