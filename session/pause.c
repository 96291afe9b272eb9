/*
 * pause.c: a session's whole state in files. vmux pause stops the guest,
 * has QEMU write its device state (RAM stays in the session's RAM file,
 * QMP's x-ignore-shared) and copies that RAM file, sparse, beside the
 * workspace; then QEMU, the bridge, passt and the console keeper end. vmux
 * resume (and any command that needs the guest) copies the RAM back to
 * tmpfs and boots a new QEMU that loads the state instead of a kernel
 * (launch.c with launch_opts.incoming, restored here by state_restore).
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
 * Have QEMU write its device state to the file open as fd (RAM stays in
 * the shared RAM file). The guest must be stopped. 0, or -1 with cause.
 */
int
state_save(struct qmp *q, int fd, char **cause)
{
	uint64_t deadline = mono_ms() + PAUSE_SAVE_MS;
	cJSON *r;
	char *st;

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
	if (r == NULL)
		return -1;
	cJSON_Delete(r);
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
 * Load the saved state at path into r's QEMU, started with -incoming
 * defer (launch.c), and let the guest run. 0, or -1 with cause.
 */
int
state_restore(const struct session_record *r, const char *path,
    uint64_t deadline, char **cause)
{
	struct qmp q;
	struct stat st;
	cJSON *ans;
	char *s = NULL;
	int fd, rc = -1;

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
	ans = qmp_call(&q,
	    "{\"execute\":\"getfd\",\"arguments\":{\"fdname\":\"" PAUSE_STATE_FD
	    "\"}}",
	    fd, deadline, cause);
	close(fd);
	if (ans == NULL)
		goto out;
	cJSON_Delete(ans);
	if (qmp_run(&q,
	        "{\"execute\":\"migrate-set-capabilities\",\"arguments\":"
	        "{\"capabilities\":[{\"capability\":\"x-ignore-shared\","
	        "\"state\":true}]}}",
	        deadline, cause) != 0 ||
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
	if (strcmp(s, "paused") != 0 && strcmp(s, "running") != 0) {
		xasprintf(cause, "QEMU could not load the saved state (%s)", s);
		goto out;
	}
	rc = strcmp(s, "running") == 0
	    ? 0
	    : qmp_run(&q, "{\"execute\":\"cont\"}", deadline, cause);
out:
	free(s);
	qmp_close(&q);
	return rc;
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
	if (qmp_run(&q, "{\"execute\":\"stop\"}", mono_ms() + PAUSE_QMP_MS,
	        cause) != 0)
		goto undo;
	stopped = 1;
	if (state_save(&q, fd, cause) != 0)
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
	                                       1, &ram_size, cause) != 0 ||
	            rename(ram_tmp, ram) != 0)
		goto undo;
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
	if (r.status == SESSION_READY) { /* the record failed: no state */
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
 * vmux resume (and any command that needs a paused session's guest): boot
 * a new QEMU, bridge, passt and console keeper from the saved state, wait
 * for the agent, set its clock and reseed its RNG, then drop the files.
 * Holds the session's lock. 0 with *out its record (also when it was
 * running already), or -1 with cause: the session is still paused, its
 * files as they were.
 */
int
session_resume(
    const struct launch_opts *o, struct session_record *out, char **cause)
{
	struct launch_opts lo = *o;
	struct session_record r;
	char *state = NULL, *saved = NULL, *why = NULL;
	cJSON *req, *reply;
	off_t size;
	int lock, rc = -1;
	uint64_t now;

	memset(out, 0, sizeof *out);
	lock = session_lock_record(o->home, o->name, "vmux resume",
	    o->lock_wait_ms > 0 ? o->lock_wait_ms : PAUSE_LOCK_MS, o->notice,
	    &r, cause);
	if (lock < 0)
		return -1;
	if (session_qemu_alive(&r)) { /* resumed by someone else */
		*out = r;
		session_unlock(lock);
		return 0;
	}
	if (r.status != SESSION_PAUSED) {
		xasprintf(cause, "session '%s' is %s, not paused", r.name,
		    session_state(&r));
		goto out;
	}
	if (state_check(&r, &why) != 0) {
		xasprintf(cause,
		    "cannot resume '%s': %s; its workspace is intact: vmux "
		    "start --cold %s boots it",
		    r.name, why, r.name);
		goto out;
	}
	free(r.ram_file);
	r.ram_file = session_ram_path(r.dir);
	if (r.ram_file == NULL || !ram_fits(r.ram_file, r.memory_mb)) {
		xasprintf(cause,
		    "cannot resume '%s': no tmpfs with room for its %d MiB of "
		    "RAM (/dev/shm)",
		    r.name, r.memory_mb);
		goto out;
	}
	state = state_path(&r, SESSION_STATE);
	saved = state_path(&r, SESSION_RAM_SAVED);
	if (strcmp(saved, r.ram_file) != 0) { /* to tmpfs (network folder) */
		unlink(r.ram_file);
		if (file_copy_sparse(saved, r.ram_file, 0, &size, &why) != 0) {
			xasprintf(cause, "cannot resume '%s': %s", r.name, why);
			goto out;
		}
	}
	lo.incoming = state;
	lo.accel = r.accel; /* the state's: no fall back */
	r.qemu_pid = r.bridge_pid = r.console_pid = 0;
	if (launch_run(&lo, &r, &why) != 0) {
		launch_reset(&r);
		if (strcmp(saved, r.ram_file) != 0)
			unlink(r.ram_file);
		r.status = SESSION_PAUSED;
		if (record_save(&r, cause) != 0)
			free(*cause);
		xasprintf(cause,
		    "cannot resume '%s': %s\n(its state is kept: vmux start "
		    "--cold %s boots its workspace instead)",
		    r.name, why, r.name);
		goto out;
	}
	/* the guest's clock is the pause's, its RNG the state's */
	now = mono_ms();
	req = agent_req_resumed(
	    r.hostname != NULL ? r.hostname : r.name, o->machine_id);
	if (!r.no_agent) {
		struct vsock_target t;
		char *w = NULL;

		session_target(&r, &t);
		reply =
		    agent_call(&t, req, now + 3000, now + 3000, NULL, NULL, &w);
		if (reply == NULL)
			log_debug("resume %s: resumed: %s", r.name, w);
		free(w);
		cJSON_Delete(reply);
	}
	cJSON_Delete(req);
	state_discard(&r);
	if (record_save(&r, cause) != 0)
		goto out;
	*out = r;
	memset(&r, 0, sizeof r);
	rc = 0;
out:
	free(why);
	free(state);
	free(saved);
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
