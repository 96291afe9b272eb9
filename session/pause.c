/*
 * pause.c: a session's whole state in files. vmux pause stops the guest,
 * has QEMU write its device state (RAM stays in the session's RAM file,
 * QMP's x-ignore-shared) and syncs that RAM file where it lives, in the
 * session's folder (a tmpfs one, on a network folder, is copied beside
 * it); then QEMU, the bridge, passt and the console keeper end. vmux
 * resume (and any command that needs the guest) boots a new QEMU that
 * loads the state instead of a kernel (launch.c with
 * launch_opts.incoming, restored here by state_restore).
 *
 * The files are SESSION_STATE and SESSION_RAM_SAVED in the session's
 * folder, 0600, written and fsync'd before the record says paused. The
 * record keeps what they need (state_key: QEMU, kernel, initrd and root
 * image, by size and time) and what they hold (state_sum: the state's
 * sha256 and the RAM file's size), so a state from another build, or a
 * truncated or changed one, is refused by name and never loaded. Until a
 * pause is complete the session runs on; until a resume is complete its
 * files stay.
 */
#include <sys/stat.h>

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "session.h"

#define PAUSE_LOCK_MS  30000        /* another command holding the session */
#define PAUSE_QMP_MS   5000         /* QMP answers */
#define PAUSE_SAVE_MS  30000        /* the device state written */
#define PAUSE_STATE_FD "vmux-state" /* getfd's name for the state file */
#define PAUSE_POLL_US  1000

/*
 * Both ends of a state's stream: leave RAM out (it stays in the shared RAM
 * file) and hand QEMU the state file open as fd, PAUSE_STATE_FD. 0, or -1
 * with cause.
 */
static int
state_stream(struct qmp *q, int fd, uint64_t deadline, char **cause)
{
	cJSON *r;

	if (qmp_run(q,
	        "{\"execute\":\"migrate-set-capabilities\",\"arguments\":"
	        "{\"capabilities\":[{\"capability\":\"x-ignore-shared\","
	        "\"state\":true}]}}",
	        deadline, cause) != 0)
		return -1;
	r = qmp_call(q,
	    "{\"execute\":\"getfd\",\"arguments\":{\"fdname\":\"" PAUSE_STATE_FD
	    "\"}}",
	    fd, deadline, cause);
	cJSON_Delete(r);
	return r != NULL ? 0 : -1;
}

/*
 * Ready QEMU to write its device state to the file open as fd (RAM stays
 * in the shared RAM file): the guest may still run, so what a stop would
 * otherwise wait on is done before it. 0, or -1 with cause.
 */
int
state_save_begin(struct qmp *q, int fd, char **cause)
{
	return state_stream(q, fd, mono_ms() + PAUSE_SAVE_MS, cause);
}

/* state_save's wait for QEMU's save; 0, or -1 with cause. */
static int
state_save_wait(struct qmp *q, char **cause)
{
	uint64_t deadline = mono_ms() + PAUSE_SAVE_MS;
	char *st;

	if (qmp_run(q,
	        "{\"execute\":\"migrate\",\"arguments\":{\"uri\":"
	        "\"fd:" PAUSE_STATE_FD "\"}}",
	        deadline, cause) != 0)
		return -1;
	for (;;) {
		if ((st = qmp_query_status(
		         q, "query-migrate", deadline, cause)) == NULL)
			return -1;
		if (strcmp(st, "completed") == 0) {
			free(st);
			return 0;
		}
		if (strcmp(st, "failed") == 0 || strcmp(st, "cancelled") == 0) {
			xasprintf(
			    cause, "QEMU could not save the state (%s)", st);
			free(st);
			return -1;
		}
		free(st);
		if (mono_ms() >= deadline) {
			xasprintf(cause, "QEMU did not save the state in %d s",
			    PAUSE_SAVE_MS / 1000);
			return -1;
		}
		usleep(PAUSE_POLL_US);
	}
}

/*
 * Have QEMU write its device state where state_save_begin said. The guest
 * must be stopped. 0, or -1 with cause, the save cancelled (the guest may
 * then run on).
 */
int
state_save(struct qmp *q, char **cause)
{
	char *why = NULL;

	if (state_save_wait(q, cause) == 0)
		return 0;
	if (qmp_run(q, "{\"execute\":\"migrate_cancel\"}",
	        mono_ms() + PAUSE_QMP_MS, &why) != 0)
		free(why);
	return -1;
}

/*
 * Load the saved state at path into r's QEMU, started with -incoming
 * defer (launch.c), and let the guest run: r's record stops naming the
 * state (state_sum) just before. 0, or -1 with cause.
 */
int
state_restore(
    struct session_record *r, const char *path, uint64_t deadline, char **cause)
{
	struct qmp q;
	struct stat st;
	char *s = NULL;
	int fd, given, rc = -1;

	/* QEMU makes its QMP socket once its devices are, and listens on it
	 * a moment after */
	while (stat(r->qmp, &st) != 0 ||
	    qmp_open(&q, r->qmp, deadline, cause) != 0) {
		if (!session_qemu_alive(r) || mono_ms() >= deadline) {
			free(*cause);
			xasprintf(cause, "QEMU of '%s' %s", r->name,
			    session_qemu_alive(r) ? "was not up in time"
			                          : "exited");
			return -1;
		}
		free(*cause);
		*cause = NULL;
		usleep(PAUSE_POLL_US);
	}
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		goto out;
	}
	given = state_stream(&q, fd, deadline, cause);
	close(fd); /* QEMU has its own */
	if (given != 0 ||
	    qmp_run(&q,
	        "{\"execute\":\"migrate-incoming\",\"arguments\":{\"uri\":"
	        "\"fd:" PAUSE_STATE_FD "\"}}",
	        deadline, cause) != 0)
		goto out;
	for (;;) {
		free(s);
		/* a state QEMU cannot load ends QEMU: its log says why */
		if ((s = qmp_query_status(
		         &q, "query-status", deadline, cause)) == NULL) {
			free(*cause);
			xasprintf(cause, "QEMU could not load the saved state");
			goto out;
		}
		if (strcmp(s, "inmigrate") != 0)
			break;
		if (mono_ms() >= deadline) {
			xasprintf(cause, "QEMU did not load the state in time");
			goto out;
		}
		usleep(PAUSE_POLL_US);
	}
	if (strcmp(s, "paused") != 0) {
		xasprintf(cause, "QEMU could not load the saved state (%s)", s);
		goto out;
	}
	/* once the guest runs, the files no longer hold its state: the
	 * record says so first (a resume that dies from here on cannot be
	 * taken for a paused session and resumed from stale files) */
	free(r->state_sum);
	r->state_sum = NULL;
	if (record_save(r, cause) != 0)
		goto out;
	rc = qmp_run(&q, "{\"execute\":\"cont\"}", deadline, cause);
out:
	free(s);
	qmp_close(&q);
	return rc;
}

/* Hold SIGINT, SIGTERM and SIGHUP (they wait until released); *old keeps
 * the mask to release to. */
void
signals_hold(sigset_t *old)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGINT);
	sigaddset(&s, SIGTERM);
	sigaddset(&s, SIGHUP);
	sigprocmask(SIG_BLOCK, &s, old);
}

/* Let the signals signals_hold held arrive. */
void
signals_release(const sigset_t *old)
{
	sigprocmask(SIG_SETMASK, old, NULL);
}

/*
 * vmux pause: write session name's state to files and end its processes.
 * Holds the session's lock. 0 (also when it was paused already), or -1
 * with cause: then the session runs as before and no file is left.
 */
int
session_pause(const char *home, const char *name, void (*notice)(const char *),
    char **cause)
{
	struct session_record r;
	struct qmp q;
	char *state = NULL, *state_tmp = NULL, *ram = NULL, *ram_tmp = NULL;
	char *why = NULL, *key = NULL, *sum = NULL;
	const char *st;
	off_t ram_size = 0;
	int lock, fd = -1, rc = -1, stopped = 0;
	sigset_t held;

	lock = session_lock_record(
	    home, name, "vmux pause", PAUSE_LOCK_MS, notice, &r, cause);
	if (lock < 0)
		return -1;
	st = session_state(&r);
	if (strcmp(st, "paused") == 0) {
		rc = 0;
		goto out;
	}
	if (strcmp(st, "running") != 0) {
		xasprintf(cause, "session '%s' is %s", name, st);
		goto out;
	}
	if ((why = session_why_no_pause(&r)) != NULL) {
		xasprintf(cause, "cannot pause '%s': %s; it keeps running",
		    name, why);
		goto out;
	}
	key = state_key(&r);
	state = state_path(&r, SESSION_STATE);
	state_tmp = state_path(&r, SESSION_STATE ".tmp");
	ram = state_path(&r, SESSION_RAM_SAVED);
	ram_tmp = state_path(&r, SESSION_RAM_SAVED ".tmp");
	unlink(state_tmp);
	unlink(ram_tmp);
	if (qmp_open(&q, r.qmp, mono_ms() + PAUSE_QMP_MS, cause) != 0)
		goto out;
	fd = open(state_tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		xasprintf(cause, "%s: %s", state_tmp, strerror(errno));
		goto undo;
	}
	if (state_save_begin(&q, fd, cause) != 0)
		goto undo;
	/* from stop on, nothing may end this command before the guest runs
	 * again or its state is safe (a late answer to stop still stopped
	 * it: undo continues it all the same) */
	signals_hold(&held);
	stopped = 1;
	if (qmp_run(&q, "{\"execute\":\"stop\"}", mono_ms() + PAUSE_QMP_MS,
	        cause) != 0)
		goto undo;
	if (state_save(&q, cause) != 0)
		goto undo;
	if (fsync(fd) != 0) {
		xasprintf(cause, "%s: %s", state_tmp, strerror(errno));
		goto undo;
	}
	close(fd);
	fd = -1;
	/* the guest and the bridge (its rings stopped with the guest) no
	 * longer write the RAM: sync it where it is, or copy it from tmpfs */
	if (strcmp(r.ram_file, ram) == 0 ? ram_sync(ram, &ram_size, cause) != 0
	                                 : file_copy_sparse(r.ram_file, ram_tmp,
	                                       1, &ram_size, cause) != 0)
		goto undo;
	if (strcmp(r.ram_file, ram) != 0 && rename(ram_tmp, ram) != 0) {
		xasprintf(cause, "%s: %s", ram, strerror(errno));
		goto undo;
	}
	if ((sum = state_sum_of(state_tmp, ram_size)) == NULL) {
		xasprintf(cause, "%s: cannot read it back", state_tmp);
		goto undo;
	}
	if (rename(state_tmp, state) != 0) {
		xasprintf(cause, "%s: %s", r.dir, strerror(errno));
		goto undo;
	}
	dir_sync(r.dir);
	r.status = SESSION_PAUSED;
	r.paused = (int64_t)time(NULL);
	free(r.state_key);
	free(r.state_sum);
	r.state_key = key;
	r.state_sum = sum;
	key = sum = NULL;
	if (record_save(&r, cause) != 0) {
		r.status = SESSION_READY;
		goto undo;
	}
	/* the state is safe: QEMU and every helper may go */
	if (qmp_run(&q, "{\"execute\":\"quit\"}", mono_ms() + PAUSE_QMP_MS,
	        &why) != 0) { /* QEMU closing the connection is its answer */
		free(why);
		why = NULL;
	}
	qmp_close(&q);
	if (session_stop_procs(&r) != 0)
		log_debug("pause %s: a process outlived SIGKILL", name);
	if (strcmp(r.ram_file, ram) != 0)
		unlink(r.ram_file); /* the tmpfs copy */
	ram_drop_cache(ram);        /* paused: nothing of it stays in memory */
	rc = 0;
	goto out;
undo: /* the session runs on as it was */
	if (fd >= 0)
		close(fd);
	if (stopped &&
	    qmp_run(&q, "{\"execute\":\"cont\"}", mono_ms() + PAUSE_QMP_MS,
	        &why) != 0)
		log_debug("pause %s: cont: %s", name, why);
	qmp_close(&q);
	unlink(state_tmp);
	unlink(ram_tmp);
	if (r.status == SESSION_READY) { /* not recorded: no state kept */
		char *s = state_path(&r, SESSION_STATE);
		unlink(s);
		free(s);
		if (strcmp(r.ram_file, ram) != 0)
			unlink(ram);
	}
	{
		char *c = *cause;
		xasprintf(
		    cause, "cannot pause '%s': %s; it keeps running", name, c);
		free(c);
	}
out:
	if (stopped)
		signals_release(&held);
	free(why);
	free(key);
	free(sum);
	free(state);
	free(state_tmp);
	free(ram);
	free(ram_tmp);
	record_free(&r);
	session_unlock(lock);
	return rc;
}

/*
 * What the guest said to "resumed" (reply, or NULL and why): a part it
 * could not do is told (notice), as a fork whose RNG or machine-id is its
 * parent's must not pass unsaid.
 */
static void
resumed_said(const struct session_record *r, const struct launch_opts *o,
    const cJSON *reply, const char *why)
{
	const cJSON *failed = cJSON_GetObjectItemCaseSensitive(reply, "failed");
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(reply, "error");
	const cJSON *f;
	char *msg = NULL, *old;

	if (reply == NULL)
		xasprintf(&msg,
		    "the guest agent of '%s' did not take the host's "
		    "clock and random seed: %s",
		    r->name, why != NULL ? why : "no answer");
	else if (cJSON_IsString(err))
		xasprintf(&msg,
		    "the guest agent of '%s' refused the host's "
		    "clock and random seed: %s",
		    r->name, err->valuestring);
	cJSON_ArrayForEach(f, failed)
	{
		if (!cJSON_IsString(f))
			continue;
		old = msg;
		xasprintf(&msg, "%s%sthe guest of '%s' could not set its %s",
		    old != NULL ? old : "", old != NULL ? "; " : "", r->name,
		    f->valuestring);
		free(old);
	}
	if (msg == NULL)
		return;
	log_debug("resume: %s", msg);
	if (o->notice != NULL) {
		char *safe = str_printable(msg, 0);
		o->notice(safe);
		free(safe);
	}
	free(msg);
}

/*
 * A resumed guest's first request (launch_opts.ready_req): the host's time
 * now and a random seed, and for a fork or template (o->machine_id) its own
 * host name and machine-id.
 */
static cJSON *
resumed_request(const struct launch_opts *o, const struct session_record *r)
{
	return agent_req_resumed(o->machine_id == NULL ? NULL
	        : r->hostname != NULL                  ? r->hostname
	                                               : r->name,
	    o->machine_id);
}

/*
 * Boot r (paused, its lock held by the caller) from its state files: check
 * them, boot QEMU on them and wait for the agent, set its clock and reseed
 * its RNG (and for a fork or template, o->machine_id: give it its own
 * identity), then drop the files. 0, r running and saved; or -1 with
 * cause: r still paused with its files, or (its guest ran before the
 * failure) stopped with its workspace.
 */
int
resume_boot(const struct launch_opts *o, struct session_record *r, char **cause)
{
	struct launch_opts lo = *o;
	char *state = NULL, *saved = NULL, *why = NULL;
	cJSON *reply = NULL;
	off_t size;
	int rc = -1;

	if (state_check(r, &why) != 0) {
		xasprintf(cause,
		    "cannot resume '%s': %s; its workspace is intact: vmux "
		    "start --cold %s boots it",
		    r->name, why, r->name);
		goto out;
	}
	free(r->ram_file);
	r->ram_file = session_ram_path(r->dir);
	if (r->ram_file == NULL) {
		xasprintf(cause,
		    "cannot resume '%s': no folder for its RAM (on a network "
		    "file system, it needs /dev/shm)",
		    r->name);
		goto out;
	}
	saved = state_path(r, SESSION_RAM_SAVED);
	if (strcmp(saved, r->ram_file) != 0 &&
	    ram_free_mb(r->ram_file) < r->memory_mb) {
		xasprintf(cause,
		    "cannot resume '%s': %s has no room for its %d MiB of RAM",
		    r->name, r->ram_file, r->memory_mb);
		goto out;
	}
	state = state_path(r, SESSION_STATE);
	if (strcmp(saved, r->ram_file) != 0) { /* to tmpfs (network folder) */
		unlink(r->ram_file);
		if (file_copy_sparse(saved, r->ram_file, 0, &size, &why) != 0) {
			xasprintf(
			    cause, "cannot resume '%s': %s", r->name, why);
			goto out;
		}
	}
	lo.incoming = state;
	lo.accel = r->accel; /* the state's: no fall back */
	/* the guest's clock is the pause's, its RNG the state's: the
	 * agent's first request sets them (resumed_request) */
	lo.ready_req = r->no_agent ? NULL : resumed_request;
	lo.ready_reply = &reply;
	r->qemu_pid = r->bridge_pid = r->console_pid = 0;
	if (launch_run(&lo, r, &why) != 0) {
		int spent = r->state_sum == NULL; /* the guest ran from it */

		launch_reset(r);
		if (strcmp(saved, r->ram_file) != 0)
			unlink(r->ram_file);
		if (spent) {
			/* its memory moved on from the files: they can never
			 * be loaded again, and the workspace is what is left */
			state_discard(r);
			r->status = SESSION_STOPPED;
			r->stopped = (int64_t)time(NULL);
			free(r->stop_reason);
			r->stop_reason = xstrdup("resume failed");
		} else
			r->status = SESSION_PAUSED;
		if (record_save(r, cause) != 0)
			free(*cause);
		if (spent)
			xasprintf(cause,
			    "cannot resume '%s': %s\n(the guest had run from "
			    "its state, which cannot be used again: it is "
			    "stopped, its workspace intact; vmux start boots "
			    "it)",
			    r->name, why);
		else
			xasprintf(cause,
			    "cannot resume '%s': %s\n(its state is kept: vmux "
			    "start --cold %s boots its workspace instead)",
			    r->name, why, r->name);
		goto out;
	}
	if (!r->no_agent)
		resumed_said(r, o, reply, NULL);
	state_discard(r);
	rc = record_save(r, cause);
out:
	cJSON_Delete(reply);
	free(why);
	free(state);
	free(saved);
	return rc;
}

/*
 * vmux resume (and any command that needs a paused session's guest): boot
 * a new QEMU, bridge, passt and console keeper from the saved state
 * (resume_boot). Holds the session's lock. 0 with *out its record (also
 * when it was running already), or -1 with cause: the session is still
 * paused, its files as they were.
 */
int
session_resume(
    const struct launch_opts *o, struct session_record *out, char **cause)
{
	struct session_record r;
	int lock, rc = -1;

	memset(out, 0, sizeof *out);
	lock = session_lock_record(o->home, o->name, "vmux resume",
	    o->lock_wait_ms > 0 ? o->lock_wait_ms : PAUSE_LOCK_MS, o->notice,
	    &r, cause);
	if (lock < 0)
		return -1;
	if (session_qemu_alive(&r) &&
	    (r.status == SESSION_PAUSED || r.state_sum != NULL)) {
		/* a pause that died after its state was safe, or a resume
		 * that died before its guest ran: end that QEMU, then resume */
		if (session_stop_procs(&r) != 0) {
			xasprintf(cause,
			    "cannot resume '%s': its QEMU (pid %ld) outlived "
			    "SIGKILL",
			    r.name, (long)r.qemu_pid);
			goto out;
		}
	} else if (session_qemu_alive(&r)) { /* resumed by someone else */
		*out = r;
		session_unlock(lock);
		return 0;
	}
	if (strcmp(session_state(&r), "paused") != 0) {
		xasprintf(cause, "session '%s' is %s, not paused", r.name,
		    session_state(&r));
		goto out;
	}
	if (resume_boot(o, &r, cause) != 0)
		goto out;
	*out = r;
	memset(&r, 0, sizeof r);
	rc = 0;
out:
	record_free(&r);
	session_unlock(lock);
	return rc;
}

/*
 * If r is paused (or being paused), resume it and reload r: what every
 * surface calls before it needs the guest (the CLI, the TUI, web pages;
 * MCP through the CLI). notice hears "resuming", may be NULL. 0 (r is now
 * current), or -1 with cause.
 */
int
session_wake(const char *home, struct session_record *r,
    void (*notice)(const char *), char **cause)
{
	struct launch_opts o;
	struct session_record fresh;
	const char *st = session_state(r);
	char *msg;

	if (strcmp(st, "paused") != 0 && strcmp(st, "pausing") != 0)
		return 0;
	memset(&o, 0, sizeof o);
	o.home = home;
	o.name = r->name;
	o.boot_timeout_s = 60;
	o.notice = notice;
	if (notice != NULL) {
		xasprintf(&msg, "resuming '%s' (paused)", r->name);
		notice(msg);
		free(msg);
	}
	if (session_resume(&o, &fresh, cause) != 0)
		return -1;
	record_free(r);
	*r = fresh;
	return 0;
}

/*
 * session_wake for a long-lived, threaded process (the TUI, the web
 * server): the resume runs as `vmux resume NAME`, a child it waits for, so
 * the session's watcher is never forked from its threads nor left to it to
 * reap. r is reloaded. 0, or -1 with cause (the command's last words).
 */
int
session_wake_child(const char *home, struct session_record *r, char **cause)
{
	const char *st = session_state(r);
	char *exe, *env_home, *argv[4], buf[4096];
	posix_spawn_file_actions_t fa;
	size_t len = 0;
	ssize_t n;
	pid_t pid;
	int pfd[2], status = -1, rc;

	if (strcmp(st, "paused") != 0 && strcmp(st, "pausing") != 0)
		return 0;
	if ((exe = exe_path()) == NULL || pipe2(pfd, O_CLOEXEC) != 0) {
		xasprintf(cause, "cannot run vmux resume: %s", strerror(errno));
		free(exe);
		return -1;
	}
	argv[0] = exe;
	argv[1] = "resume";
	argv[2] = r->name;
	argv[3] = NULL;
	xasprintf(&env_home, "VMUX_HOME=%s", home);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
	{
		extern char **environ;
		size_t ne = 0;
		char **envp;

		while (environ[ne] != NULL)
			ne++;
		envp = xcalloc(ne + 2, sizeof *envp);
		for (size_t i = 0, j = 0; i < ne; i++)
			if (strncmp(environ[i], "VMUX_HOME=", 10) != 0)
				envp[j++] = environ[i];
		for (ne = 0; envp[ne] != NULL; ne++)
			;
		envp[ne] = env_home;
		rc = posix_spawn(&pid, exe, &fa, NULL, argv, envp);
		free(envp);
	}
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	if (rc == 0) {
		while (len < sizeof buf - 1 &&
		    (n = read(pfd[0], buf + len, sizeof buf - 1 - len)) != 0) {
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				break;
			len += (size_t)n;
		}
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	close(pfd[0]);
	free(exe);
	free(env_home);
	buf[len] = '\0';
	if (rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		/* what it said, on one line, without its "vmux: "s (q
		 * writes over what p read: bol says where lines began) */
		char *p = buf, *q = buf;
		int bol = 1;

		while (*p != '\0') {
			if (bol && strncmp(p, "vmux: ", 6) == 0)
				p += 6;
			if (*p == '\0')
				break;
			bol = *p == '\n';
			*q++ = bol ? ' ' : *p;
			p++;
		}
		while (q > buf && q[-1] == ' ')
			q--;
		*q = '\0';
		xasprintf(cause, "%s",
		    rc != 0            ? strerror(rc)
		        : *buf != '\0' ? buf
		                       : "vmux resume failed");
		return -1;
	}
	{
		struct session_record fresh;

		if (record_load(home, r->name, &fresh, cause) != 0)
			return -1;
		record_free(r);
		*r = fresh;
	}
	return 0;
}
