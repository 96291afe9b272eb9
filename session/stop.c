/*
 * stop.c: is a session running; stop its VM and bridge, remove its state.
 *
 * Stopping escalates: ask the agent to power the guest off, then QMP
 * "quit", then SIGTERM, then SIGKILL, each with a deadline, and waits until
 * the process is really gone (not merely signalled). Every step checks that
 * the pid still is that session's process. A record that cannot be read
 * does not block removal: any process whose command line names the
 * session's directory is ended instead.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "session.h"

/* Deadlines of the polite steps. */
#define STOP_AGENT_MS  3000 /* agent accepts the shutdown request */
#define STOP_POWER_MS  8000 /* guest powers off, QEMU exits */
#define STOP_QMP_MS    2000 /* QMP quit sent */
#define STOP_QUIT_MS   3000 /* QEMU exits after quit */
#define STOP_TERM_MS   2000 /* SIGTERM before SIGKILL */
#define STOP_REAPER_MS 2000 /* a reaper's record after its program ended */
#define STOP_BRIDGE_MS 2000

/*
 * What identifies the session's QEMU in /proc/PID/cmdline: its console log
 * path, as QEMU's option syntax spells it (every ',' doubled). Free it.
 */
char *
session_qemu_needle(const struct session_record *r)
{
	const char *s = r->console_log != NULL ? r->console_log : "";
	char *out = xmalloc(2 * strlen(s) + 1), *p = out;

	for (; *s != '\0'; s++) {
		*p++ = *s;
		if (*s == ',')
			*p++ = ',';
	}
	*p = '\0';
	return out;
}

/* Is the session's QEMU alive (and really its QEMU)? */
int
session_qemu_alive(const struct session_record *r)
{
	char *needle = session_qemu_needle(r);
	int alive = proc_matches(r->qemu_pid, needle);

	free(needle);
	return alive;
}

/* Is the session's bridge alive (and really its bridge)? */
int
session_bridge_alive(const struct session_record *r)
{
	return !r->vsock_kernel && proc_matches(r->bridge_pid, r->vsock_uds);
}

/*
 * The session's state, from the record and /proc: "starting", "running",
 * "stopping" (or "pausing") while QEMU lives; "paused" once vmux pause
 * ended it with its state in files; "stopped" once it ended because vmux (or a
 * timer) stopped it; "crashed" when it ended by itself (or was killed) while
 * it should have been running.
 */
const char *
session_state(const struct session_record *r)
{
	if (session_qemu_alive(r)) {
		switch (r->status) {
		case SESSION_STARTING:
			return "starting";
		case SESSION_READY:
			return "running";
		case SESSION_PAUSED: /* its state is saved: QEMU is ending */
			return "pausing";
		default:
			return "stopping";
		}
	}
	/* a record still naming its state: a resume that died before the
	 * guest ran (pause.c) */
	if (r->status == SESSION_PAUSED || r->state_sum != NULL)
		return "paused";
	return r->status == SESSION_STOPPED || r->status == SESSION_STOPPING
	    ? "stopped"
	    : "crashed";
}

/* How the session's QEMU last ended (the reaper's record); 0 or -1. */
int
session_exit_get(const struct session_record *r, struct session_exit *e)
{
	char *path;
	int rc;

	xasprintf(&path, "%s/%s", r->dir, SESSION_EXIT);
	rc = proc_exit_read(path, e);
	free(path);
	return rc;
}

/*
 * Is pid one of the kinds of process a session starts? Judged by argv[0]:
 * a qemu-system-*, vmux-qemu or vmux-bridge binary, or the record's own
 * binaries. So a user's `tail -f .../console.log` is never taken for part
 * of a session.
 */
static int
session_kind(pid_t pid, const struct session_record *r)
{
	char path[64], argv0[4096], *base;
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%ld/cmdline", (long)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return 0;
	n = (ssize_t)fread(argv0, 1, sizeof argv0 - 1, f);
	fclose(f);
	if (n <= 0)
		return 0;
	argv0[n] = '\0'; /* cmdline is NUL-separated: this is argv[0] */
	base = strrchr(argv0, '/') != NULL ? strrchr(argv0, '/') + 1 : argv0;
	if (strncmp(base, "qemu-system-", 12) == 0 ||
	    strcmp(base, SESSION_QEMU_OWN) == 0 ||
	    strcmp(base, SESSION_BRIDGE_NAME) == 0 ||
	    strcmp(base, "virtiofsd") == 0)
		return 1;
	return (r->qemu_bin != NULL && strcmp(argv0, r->qemu_bin) == 0) ||
	    (r->bridge_bin != NULL && strcmp(argv0, r->bridge_bin) == 0);
}

/* End every QEMU or bridge whose command line mentions needle. */
static int
kill_mentioning(const char *needle, const struct session_record *r)
{
	struct dirent *de;
	DIR *d = opendir("/proc");
	int rc = 0;

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (!isdigit((unsigned char)de->d_name[0]) || *end != '\0' ||
		    pid <= 1 || pid == (long)getpid())
			continue;
		if (proc_matches((pid_t)pid, needle) &&
		    session_kind((pid_t)pid, r)) {
			log_debug(
			    "stop: pid %ld still mentions %s", pid, needle);
			if (proc_terminate((pid_t)pid, needle, STOP_TERM_MS) !=
			    0)
				rc = -1;
		}
	}
	closedir(d);
	return rc;
}

/*
 * Stop a session's QEMU and bridge: politely unless force, and in every
 * case until they are gone. The guest gets power_ms (0: the default) to
 * power off after the agent accepted. 0 if the guest powered off (or QEMU
 * was already gone), 1 if QEMU had to be ended after the agent accepted,
 * 2 if it had to be ended because no agent answered (the guest still
 * booting, paused or hung), -1 if something survived SIGKILL.
 */
static int
session_stop(const struct session_record *r, int force, int power_ms)
{
	char *needle = session_qemu_needle(r), *path;
	int rc = 0, qemu_was = session_qemu_alive(r), asked = 0;
	int bridge_was = session_bridge_alive(r);

	if (power_ms <= 0)
		power_ms = STOP_POWER_MS;

	/* --no-agent only skipped the boot's wait: an agent that runs
	 * still powers off cleanly (none fails fast) */
	if (session_qemu_alive(r) && !force) {
		struct vsock_target t;
		cJSON *req = agent_req_shutdown(), *reply;
		char *why = NULL;
		uint64_t now = mono_ms();

		session_target(r, &t);
		reply = agent_call(&t, req, now + STOP_AGENT_MS,
		    now + STOP_AGENT_MS, NULL, NULL, &why);
		cJSON_Delete(req);
		cJSON_Delete(reply);
		if (reply == NULL) {
			log_debug("stop %s: shutdown: %s", r->name, why);
			free(why);
		} else {
			asked = 1;
			proc_wait_gone(r->qemu_pid, needle,
			    mono_ms() + (uint64_t)power_ms);
		}
	}
	if (session_qemu_alive(r)) {
		char *why = NULL;

		rc = asked || force ? 1 : 2;
		if (qmp_quit(r->qmp, mono_ms() + STOP_QMP_MS, &why) == 0)
			proc_wait_gone(
			    r->qemu_pid, needle, mono_ms() + STOP_QUIT_MS);
		else {
			log_debug("stop %s: %s", r->name, why);
			free(why);
		}
	}
	if (proc_terminate(r->qemu_pid, needle, force ? 0 : STOP_TERM_MS) != 0)
		rc = -1;
	fs_stop(r, STOP_TERM_MS);
	net_stop(r, STOP_TERM_MS);
	console_stop(r, STOP_TERM_MS);
	/* the recorder ends with QEMU; one that did not is ended here (found
	 * by its --into path, which no other process has) */
	if (r->recorder_pid > 0) {
		char *into;

		xasprintf(&into, "%s/recordings", r->dir);
		proc_wait_gone(r->recorder_pid, into, mono_ms() + 1500);
		proc_terminate(r->recorder_pid, into, STOP_TERM_MS);
		free(into);
	}
	/* The bridge exits by itself once QEMU is gone; help it along. */
	if (!r->vsock_kernel) {
		proc_wait_gone(r->bridge_pid, r->vsock_uds,
		    mono_ms() + (force ? 0 : STOP_BRIDGE_MS));
		if (proc_terminate(r->bridge_pid, r->vsock_uds, STOP_TERM_MS) !=
		    0)
			rc = -1;
	}
	/*
	 * And their reapers, once they have written how it ended; not when
	 * QEMU's own reaper is stopping it (ttl, idle timeout): it writes
	 * that record only after we return.
	 */
	if (qemu_was && !proc_is_reaper()) {
		xasprintf(&path, "%s/%s", r->dir, SESSION_EXIT);
		proc_exit_wait(path, mono_ms() + STOP_REAPER_MS);
		free(path);
	}
	if (bridge_was) {
		xasprintf(&path, "%s/%s", r->dir, SESSION_BRIDGE_EXIT);
		proc_exit_wait(path, mono_ms() + STOP_REAPER_MS);
		free(path);
	}
	free(needle);
	return rc;
}

/*
 * End r's QEMU (over QMP, then signals) and every helper, as a forced stop
 * does; vmux pause's end, once the state is saved. 0, or -1 if something
 * survived SIGKILL.
 */
int
session_stop_procs(const struct session_record *r)
{
	return session_stop(r, 1, 0) < 0 ? -1 : 0;
}

/*
 * vmux stop: power session name off and keep everything else (record,
 * workspace, logs). reason says who asked ("user", "ttl", "idle-timeout"),
 * power_ms how long the guest gets (0: default). Holds the session's lock.
 * 0 if the guest powered off cleanly, 1 if it had to be forced (notice
 * hears why), -1 with cause.
 */
int
session_halt(const char *home, const char *name, const char *reason,
    int power_ms, void (*notice)(const char *), char **cause)
{
	struct session_record r;
	int lock, rc, forget;

	lock = session_lock_record(
	    home, name, "vmux stop", 120000, notice, &r, cause);
	if (lock < 0)
		return -1;
	if (!session_qemu_alive(&r) && r.status == SESSION_STOPPED) {
		record_free(&r);
		session_unlock(lock);
		return 0; /* already stopped: nothing to do */
	}
	if (!session_qemu_alive(&r) &&
	    strcmp(session_state(&r), "paused") == 0 &&
	    strcmp(reason, "user") != 0 && strcmp(reason, "restart") != 0) {
		/* a timer (ttl, idle) that fired as it was paused: asleep is
		 * what it was for */
		record_free(&r);
		session_unlock(lock);
		return 0;
	}
	forget =
	    !session_qemu_alive(&r) && strcmp(session_state(&r), "paused") == 0;
	r.status = SESSION_STOPPING;
	if (record_save(&r, cause) != 0)
		goto fail;
	if (forget) { /* its processes are gone: stopping forgets them */
		char *msg;

		xasprintf(&msg,
		    "'%s' was paused: its saved processes, shells and memory "
		    "are discarded; the workspace stays",
		    name);
		if (notice != NULL)
			notice(msg);
		free(msg);
		state_discard(&r);
	}
	rc = session_stop(&r, 0, power_ms);
	if (rc < 0) {
		xasprintf(cause,
		    "cannot stop session '%s' (QEMU pid %ld, bridge pid %ld)",
		    name, (long)r.qemu_pid, (long)r.bridge_pid);
		goto fail;
	}
	if (rc > 0 && notice != NULL) {
		char *why, *msg;
		if (rc == 1)
			xasprintf(&why,
			    "the guest of '%s' did not power off within %d s",
			    name,
			    (power_ms > 0 ? power_ms : STOP_POWER_MS) / 1000);
		else
			xasprintf(&why,
			    "the guest agent of '%s' did not answer within %d "
			    "s (the guest still booting, paused or hung)",
			    name, STOP_AGENT_MS / 1000);
		xasprintf(&msg,
		    "%s: QEMU was ended (data not synced to the workspace "
		    "may be lost)",
		    why);
		notice(msg);
		free(why);
		free(msg);
	}
	r.status = SESSION_STOPPED;
	r.stopped = (int64_t)time(NULL);
	free(r.stop_reason);
	r.stop_reason = xstrdup(reason);
	if (record_save(&r, cause) != 0)
		goto fail;
	record_free(&r);
	session_unlock(lock);
	return rc == 2 ? 1 : rc; /* forced, whichever way */
fail:
	record_free(&r);
	session_unlock(lock);
	return -1;
}

/*
 * Stop session name and remove its state; force: no polite steps, and no
 * error when there is no such session. The workspace goes too when vmux
 * made it, unless keep_workspace: then it is moved aside and *kept says
 * where. An image the user gave (new --workspace) is never deleted.
 */
int
session_remove(const char *home, const char *name, int force,
    int keep_workspace, char **kept, char **cause)
{
	struct stat st;
	char *dir, *real;
	int rc;

	if (session_name_valid(name, cause) != 0)
		return -1;
	dir = session_dir(home, name);
	if (lstat(dir, &st) != 0 || !S_ISLNK(st.st_mode)) {
		rc = session_remove_at(
		    home, dir, name, force, keep_workspace, kept, cause);
		free(dir);
		return rc;
	}
	/* a VM claimed from the pool: the name links to its folder, and
	 * only a link of that shape is followed (spelled from home, as the
	 * record and QEMU's command line spell it) */
	char target[64];
	ssize_t len = readlink(dir, target, sizeof target - 1);
	real = NULL;
	if (len > 0) {
		target[len] = '\0';
		if (strncmp(target, "../pool/pool-", 13) == 0 &&
		    strspn(target + 13, "0123456789abcdef") == 8 &&
		    target[21] == '\0')
			xasprintf(&real, "%s/pool/%s", home, target + 8);
	}
	rc = real == NULL ? 0
	                  : session_remove_at(home, real, name, force,
	                        keep_workspace, kept, cause);
	if (rc == 0 && unlink(dir) != 0 && errno != ENOENT) {
		xasprintf(cause, "cannot remove %s: %s", dir, strerror(errno));
		rc = -1;
	}
	free(real);
	free(dir);
	return rc;
}

/* session_remove of the session that lives in dir (its own copy). */
int
session_remove_at(const char *home, const char *dir_in, const char *name,
    int force, int keep_workspace, char **kept, char **cause)
{
	struct session_record r;
	struct stat st;
	char *dir = xstrdup(dir_in), *path, *needle, *why = NULL;
	int rc = 0, error, lock;

	if (lstat(dir, &st) != 0) {
		free(dir);
		if (force)
			return 0;
		xasprintf(cause, "no session named '%s'", name);
		return -1;
	}
	lock =
	    session_lock_one(dir, "vmux rm", force ? 0 : 120000, NULL, cause);
	if (lock < 0 && !force) {
		free(dir);
		return -1;
	}
	if (lock < 0) { /* rm -f goes ahead whoever is working on it */
		log_debug("rm %s: %s", name, *cause);
		free(*cause);
		*cause = NULL;
	}
	if (lstat(dir, &st) != 0) { /* removed while we waited */
		session_unlock(lock);
		free(dir);
		if (force)
			return 0;
		xasprintf(cause, "no session named '%s'", name);
		return -1;
	}
	path = record_path(dir);
	if (record_read(path, &r, &why) == 0) {
		if (session_stop(&r, force, 0) < 0)
			rc = -1;
	} else {
		log_debug("rm %s: %s", name, why);
		free(why);
		memset(&r, 0, sizeof r);
	}
	/*
	 * A QEMU or bridge still naming the state or socket directory is
	 * ours too (a record written before its pid was, or none at all).
	 */
	xasprintf(&needle, "%s/", dir);
	if (rc == 0 && kill_mentioning(needle, &r) != 0)
		rc = -1;
	free(needle);
	if (strchr(dir, ',') != NULL) { /* as QEMU's options spell it */
		struct session_record tmp = {.console_log = dir};
		char *doubled = session_qemu_needle(&tmp);
		xasprintf(&needle, "%s/", doubled);
		if (rc == 0 && kill_mentioning(needle, &r) != 0)
			rc = -1;
		free(needle);
		free(doubled);
	}
	if (r.sock_dir != NULL) {
		xasprintf(&needle, "%s/", r.sock_dir);
		if (rc == 0 && kill_mentioning(needle, &r) != 0)
			rc = -1;
		free(needle);
	}
	if (rc != 0) {
		xasprintf(cause,
		    "cannot stop session '%s' (QEMU pid %ld, bridge pid %ld)",
		    name, (long)r.qemu_pid, (long)r.bridge_pid);
		goto out;
	}
	if (keep_workspace && r.workspace_owned && r.workspace != NULL &&
	    lstat(r.workspace, &st) == 0) {
		*kept = workspace_keep(home, name, r.workspace, cause);
		if (*kept == NULL) {
			rc = -1;
			goto out;
		}
	}
	if (r.ram_file != NULL) /* QEMU's reaper removes it, unless killed */
		unlink(r.ram_file);
	if (r.sock_dir != NULL)
		rmtree(r.sock_dir);
	error = rmtree(dir);
	if (error != 0) {
		xasprintf(cause, "cannot remove %s: %s", dir, strerror(-error));
		rc = -1;
	}
out:
	session_unlock(lock);
	record_free(&r);
	free(path);
	free(dir);
	return rc;
}
