/*
 * launch.c: boot a session (`vmux new`) and tell whether it still runs.
 *
 * Order matters: everything that can fail without side effects (binaries,
 * guest image, accelerator) is checked first; then the state directory is
 * claimed with mkdir (atomic: a duplicate name fails here) and the first
 * record written under the home lock (CID allocation); then the bridge
 * starts and says "ready" on a pipe, and only then QEMU, whose vhost-user
 * handshake needs the bridge listening. The session is up once the agent
 * answers a ping. Any failure kills what was started and removes the state
 * directory, so a failed `vmux new` leaves nothing behind. A KVM boot that
 * does not become ready in time is retried once under TCG.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"
#include "proto/proto.h"
#include "qemu.h"
#include "session.h"

/* How long the bridge may take to create its sockets. */
#define BRIDGE_READY_MS 10000
/* How long a KVM boot may take before we fall back to TCG. */
#define KVM_READY_MS 20000
/* One ping attempt: connect (with retries) and reply. */
#define PING_CONNECT_MS 3000
/* A restored guest answers at once, or not over this connection: one with
 * a new CID (a fork's, a template's) drops what comes to it until it has
 * taken the transport reset, a few ms in, so its tries start short and
 * double each miss. */
#define PING_RESTORED_MS 200
#define PING_NEW_CID_MS  25
#define PING_REPLY_MS    5000
#define PING_RETRY_MS    20
/* Lines of console/QEMU log shown when a boot fails. */
#define TAIL_LINES 15

/* Append a labelled log tail to *msg when the log has anything. */
static void
add_tail(char **msg, const char *label, const char *path)
{
	char *tail = path != NULL ? file_tail(path, TAIL_LINES) : NULL, *s;

	if (tail == NULL)
		return;
	xasprintf(&s, "%s\n--- last lines of %s ---\n%s", *msg, label, tail);
	free(*msg);
	free(tail);
	*msg = s;
}

/* Kill what a failed launch started and remove its state. */
static void
launch_cleanup(struct session_record *r)
{
	char *needle = session_qemu_needle(r);

	proc_terminate(r->qemu_pid, needle, 0);
	free(needle);
	if (!r->vsock_kernel)
		proc_terminate(r->bridge_pid, r->vsock_uds, 1000);
	fs_stop(r, 1000);
	net_stop(r, 1000);
	console_stop(r, 1000);
	if (r->ram_file != NULL)
		unlink(r->ram_file);
	if (r->sock_dir != NULL)
		rmtree(r->sock_dir);
	rmtree(r->dir);
}

/* Set the per-session paths in r (sockets may live in a runtime dir). */
static int
launch_paths(struct session_record *r, char **cause)
{
	char *sock = session_sock_dir(r->dir, cause);

	if (sock == NULL)
		return -1;
	if (strcmp(sock, r->dir) != 0)
		r->sock_dir = xstrdup(sock);
	if (!r->vsock_kernel) {
		xasprintf(&r->vsock_uds, "%s/%s", sock, SESSION_VSOCK_SOCK);
		xasprintf(&r->vhost_user, "%s/%s", sock, SESSION_VHOST_SOCK);
		xasprintf(&r->bridge_log, "%s/%s", r->dir, SESSION_BRIDGE_LOG);
	}
	xasprintf(&r->qmp, "%s/%s", sock, SESSION_QMP_SOCK);
	xasprintf(&r->console_sock, "%s/%s", sock, SESSION_CONSOLE_SOCK);
	xasprintf(&r->console_log, "%s/%s", r->dir, SESSION_CONSOLE);
	xasprintf(&r->qemu_log, "%s/%s", r->dir, SESSION_QEMU_LOG);
	r->ram_file = session_ram_path(r->dir);
	free(sock);
	return 0;
}

/*
 * Claim the state directory and a CID, and write the first record, all
 * under the home lock. On failure nothing is left (the dir is removed).
 */
int
launch_claim(
    const struct launch_opts *o, struct session_record *r, char **cause)
{
	struct session_entry *v;
	unsigned *used;
	size_t n, i, nused = 0;
	char *path;
	int lock, rc = -1;

	if (session_home_create(o->home, cause) != 0)
		return -1;
	if (o->dir != NULL) { /* a pool's VM: its folder's parent first */
		char *parent = xstrdup(o->dir);
		*strrchr(parent, '/') = '\0';
		mkdir_p(parent, 0700);
		free(parent);
	}
	lock = session_lock(o->home, cause);
	if (lock < 0)
		return -1;
	if (mkdir(r->dir, 0700) != 0) {
		if (errno == EEXIST)
			xasprintf(
			    cause, "session '%s' already exists", r->name);
		else
			xasprintf(cause, "cannot create %s: %s", r->dir,
			    strerror(errno));
		close(lock);
		return -1;
	}
	if (session_list(o->home, &v, &n, cause) != 0)
		goto out;
	used = xcalloc(n + 1, sizeof *used);
	for (i = 0; i < n; i++) {
		if (v[i].ok)
			used[nused++] = v[i].rec.cid;
	}
	session_pool_cids(o->home, &used, &nused); /* unclaimed VMs' too */
	r->cid = cid_pick(used, nused);
	free(used);
	session_list_free(v, n);
	if (launch_paths(r, cause) != 0)
		goto out;
	path = record_path(r->dir);
	rc = record_write(path, r, cause);
	free(path);
out:
	if (rc != 0) {
		if (r->sock_dir != NULL)
			rmtree(r->sock_dir);
		rmtree(r->dir);
	}
	close(lock);
	return rc;
}

/* Start the bridge and wait for its "ready" line. */
static int
launch_bridge(const struct session_record *r, pid_t *pid, char **cause)
{
	char **argv, cid[16], *msg, buf[64], *exit_path;
	size_t argc = 0, i, got = 0;
	int ready[2], rc = -1;
	uint64_t deadline;

	unlink(r->vsock_uds);
	unlink(r->vhost_user);
	argv = xcalloc(12 + 2 * r->nallow_ports, sizeof *argv);
	argv[argc++] = xstrdup(r->bridge_bin);
	argv[argc++] = xstrdup("--vhost-user");
	argv[argc++] = xstrdup(r->vhost_user);
	argv[argc++] = xstrdup("--uds");
	argv[argc++] = xstrdup(r->vsock_uds);
	snprintf(cid, sizeof cid, "%u", r->cid);
	argv[argc++] = xstrdup("--guest-cid");
	argv[argc++] = xstrdup(cid);
	for (i = 0; i < r->nallow_ports; i++) {
		argv[argc++] = xstrdup("--allow-port");
		xasprintf(&argv[argc++], "%u", r->allow_ports[i]);
	}
	argv[argc++] = xstrdup("--ready-fd");
	argv[argc++] = xstrdup("3");
	argv[argc] = NULL;

	if (pipe2(ready, O_CLOEXEC) != 0) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		goto out;
	}
	xasprintf(&exit_path, "%s/%s", r->dir, SESSION_BRIDGE_EXIT);
	unlink(exit_path);
	*pid = proc_spawn(argv, ready[1], r->bridge_log, exit_path, cause);
	free(exit_path);
	close(ready[1]);
	if (*pid < 0) {
		close(ready[0]);
		*pid = 0;
		goto out;
	}
	deadline = mono_ms() + BRIDGE_READY_MS;
	while (got < sizeof buf - 1) {
		ssize_t n;

		if (wait_fd(ready[0], POLLIN, deadline) <= 0)
			break;
		n = read(ready[0], buf + got, sizeof buf - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (memchr(buf, '\n', got) != NULL)
			break;
	}
	close(ready[0]);
	buf[got] = '\0';
	if (strncmp(buf, "ready\n", 6) == 0)
		rc = 0;
	else {
		xasprintf(&msg, "%s %s", SESSION_BRIDGE_NAME,
		    got == 0 && !proc_matches(*pid, r->vsock_uds)
		        ? "exited before it was ready"
		        : "did not become ready");
		add_tail(&msg, SESSION_BRIDGE_LOG, r->bridge_log);
		*cause = msg;
	}
out:
	for (i = 0; i < argc; i++)
		free(argv[i]);
	free(argv);
	return rc;
}

/* What separates the words of $VMUX_QEMU_EXTRA. */
#define EXTRA_SEP " \t\n"

/*
 * Does the environment ask for a VM other than the plain default one:
 * $VMUX_QEMU_EXTRA holding arguments, or $VMUX_QEMU, $VMUX_BRIDGE or
 * $VMUX_GUEST_DIR picking other files (session_env_other)? A warm pool's
 * VMs are plain, so such a request boots cold and a pool fill ignores
 * what asks for other (cli/pool.c). 1 or 0.
 */
int
session_env_custom(void)
{
	const char *extra = getenv("VMUX_QEMU_EXTRA");

	if (extra != NULL && extra[strspn(extra, EXTRA_SEP)] != '\0')
		return 1;
	return session_env_other("VMUX_QEMU") ||
	    session_env_other("VMUX_BRIDGE") ||
	    session_env_other("VMUX_GUEST_DIR");
}

/*
 * Append the whitespace-separated words of $VMUX_QEMU_EXTRA to argv (a
 * debugging and benchmarking aid: extra devices beside vmux's own). The
 * result is still freed with argv_free().
 */
static char **
launch_extra_args(char **argv)
{
	const char *extra = getenv("VMUX_QEMU_EXTRA");
	char *copy, *word, *save = NULL;
	size_t n = 0;

	if (extra == NULL || *extra == '\0')
		return argv;
	while (argv[n] != NULL)
		n++;
	copy = xstrdup(extra);
	for (word = strtok_r(copy, EXTRA_SEP, &save); word != NULL;
	     word = strtok_r(NULL, EXTRA_SEP, &save)) {
		argv = xreallocarray(argv, n + 2, sizeof *argv);
		argv[n++] = xstrdup(word);
		argv[n] = NULL;
	}
	free(copy);
	return argv;
}

/*
 * The session options into a new record r, by the table: a row o keeps
 * (launch_opts) from there, else one a profile sets from o's profile.
 */
static void
launch_options(const struct launch_opts *o, struct session_record *r)
{
	for (int i = 0; i < SOPT_N; i++) {
		const struct session_option *so = &session_options[i];
		const char *s;
		if (so->rec_off == SOPT_NOWHERE)
			continue;
		if (so->type == SOPT_HOSTNAME_TEXT) {
			s = *option_str((void *)o, so->opts_off);
			*option_str(r, so->rec_off) =
			    s != NULL ? xstrdup(s) : NULL;
		} else if (so->opts_off != SOPT_NOWHERE)
			option_set(r, so->rec_off, so->rec_size,
			    option_get(o, so->opts_off, so->opts_size));
		else if (o->profile != NULL && so->prof_off != SOPT_NOWHERE)
			option_set(r, so->rec_off, so->rec_size,
			    option_get(
			        o->profile, so->prof_off, so->prof_size));
	}
}

/*
 * The settings whose row names a guest word (session_options: vmux.pids_limit,
 * vmux.nofile, ...), each " WORD=VALUE" when set. Free it.
 */
static char *
launch_guest_words(const struct session_record *r)
{
	char *s = xstrdup(""), *more;

	for (int i = 0; i < SOPT_N; i++) {
		const struct session_option *so = &session_options[i];
		long long v;

		if (so->guest == NULL || so->rec_off == SOPT_NOWHERE)
			continue;
		if ((v = option_get(r, so->rec_off, so->rec_size)) <= 0)
			continue;
		xasprintf(&more, "%s %s=%lld", s, so->guest, v);
		free(s);
		s = more;
	}
	return s;
}

/*
 * The guest's policy as kernel command line words for vmux-init: the
 * user's processes get a cgroup with vmux.pids_limit and vmux.mem_max (MiB:
 * the VM's memory less what the kernel and the agent need), vmux.ro=1 makes
 * the root file system read-only, vmux.hostname is --hostname or the
 * session's name (so prompts tell VMs apart; at most 63 bytes); the table's
 * guest words (launch_guest_words). Free it.
 */
static char *
launch_append(const struct session_record *r, const char *extra)
{
	int reserve = r->memory_mb / 8 > 48 ? r->memory_mb / 8 : 48;
	char *s, *words = launch_guest_words(r), *net = net_cmdline(r);
	char *fs = fs_cmdline(r);

	/* the user's words last: vmux-init takes the first vmux.* word (these,
	 * and qemu_append_valid refuses the user's); the kernel the last of
	 * its own */
	xasprintf(&s, "vmux.mem_max=%d%s%s%s%s%s%s vmux.hostname=%.63s%s%s%s%s",
	    r->memory_mb - reserve, words,
	    r->read_only_root ? " vmux.ro=1" : "", net, fs,
	    r->root_image != NULL ? " vmux.root=1" : "",
	    r->rescue_disk == NULL ? ""
	        : r->rescue_rw     ? " vmux.rescue=rw"
	                           : " vmux.rescue=ro",
	    r->hostname != NULL ? r->hostname : r->name,
	    r->append != NULL ? " " : "", r->append != NULL ? r->append : "",
	    extra != NULL ? " " : "", extra != NULL ? extra : "");
	free(words);
	free(net);
	free(fs);
	return s;
}

/*
 * How often the reaper checks on a session's bridge (restarted within a
 * second of its death), and every how many such ticks on the rest (logs,
 * ttl, idle timeout).
 */
#define WATCH_TICK_MS    250
#define WATCH_SLOW_TICKS 8
/* How long the watcher waits for a dead bridge's exit record. */
#define WATCH_BRIDGE_EXIT_MS 1000
/* Bridge restarts in a row that fail before the session is given up, and
 * restarts of one helper within WATCH_RESTART_WINDOW_MS that mean it dies
 * as soon as it starts (then it is given up too). */
#define WATCH_RESTART_TRIES     8
#define WATCH_RESTART_BURST     5
#define WATCH_RESTART_WINDOW_MS 10000

/* What the reaper's watcher needs (a copy lives in the forked reaper). */
static struct launch_watch {
	char home[4096], name[SESSION_NAME_MAX + 1];
	struct vsock_target target;
	char uds[4096];
	char bridge_exit[4096]; /* "" with kernel vsock: no bridge */
	char logs[3][4096];     /* console, QEMU's and the bridge's, bounded */
	int64_t log_max;        /* ... to this many bytes each */
	pid_t bridge_pid;
	int bridge_misses;  /* ticks in a row /proc had no bridge */
	int bridge_restart; /* vmux's QEMU: a dead bridge is restarted */
	int restart_fails;  /* restarts in a row that failed */
	pid_t console_pid;  /* the console keeper (restarted when it dies) */
	char console_exit[4096], console_sock[4096];
	int console_misses, console_fails;
	uint64_t burst_start[2]; /* bridge, console: restarts lately */
	int burst[2];
	unsigned ticks;
	char ram_file[4096]; /* "" for a memfd */
	uint64_t boot_ms;    /* mono_ms() when QEMU started */
	int64_t ttl_s, idle_s;
	int64_t idle_pause_s; /* pause it after this long idle; 0: never */
	int done;             /* stopped it (or gave up): stop watching */
	char cause[PROC_CAUSE_MAX];
} watch;

/*
 * Ask the agent how long the user has been idle; -1 if unknown. *busy (may
 * be NULL) says whether a client is attached to a shell or a command runs.
 */
static double
watch_idle_seconds(int *busy)
{
	cJSON *req = agent_req_ping(), *reply, *v;
	uint64_t now = mono_ms();
	char *why = NULL;
	double idle = -1;

	reply = agent_call(&watch.target, req, now + PING_CONNECT_MS,
	    now + PING_REPLY_MS, NULL, NULL, &why);
	cJSON_Delete(req);
	free(why);
	v = cJSON_GetObjectItemCaseSensitive(reply, "idle_seconds");
	if (cJSON_IsNumber(v))
		idle = v->valuedouble;
	if (busy != NULL) {
		cJSON *at = cJSON_GetObjectItemCaseSensitive(reply, "attached");
		cJSON *ex = cJSON_GetObjectItemCaseSensitive(reply, "execs");
		/* an agent too old to say counts as busy: never paused */
		*busy = !cJSON_IsNumber(at) || at->valuedouble > 0 ||
		    (cJSON_IsNumber(ex) && ex->valuedouble > 0);
	}
	cJSON_Delete(reply);
	return idle;
}

/*
 * The bridge died under a running QEMU: nobody can reach the agent again
 * (vhost-user-vsock has no reconnect), so end QEMU and say why; the
 * session shows as crashed and vmux start boots it again, workspace and
 * all. Returns the cause.
 */
static const char *
watch_bridge_gone(pid_t qemu)
{
	struct session_exit x;
	uint64_t deadline = mono_ms() + WATCH_BRIDGE_EXIT_MS;

	/* its reaper writes how it ended just after it ended */
	while (
	    proc_exit_read(watch.bridge_exit, &x) != 0 && mono_ms() < deadline)
		usleep(50000);
	if (!x.known)
		snprintf(watch.cause, sizeof watch.cause, "the bridge ended");
	else if (x.signal != 0)
		snprintf(watch.cause, sizeof watch.cause,
		    "the bridge was killed by SIG%s",
		    sigabbrev_np(x.signal) != NULL ? sigabbrev_np(x.signal)
		                                   : "?");
	else
		snprintf(watch.cause, sizeof watch.cause,
		    "the bridge exited %d", x.code);
	kill(qemu, SIGTERM); /* our child: the pid is still QEMU's */
	return watch.cause;
}

/*
 * Has a helper (the bridge, the console keeper) died? Its reaper's record
 * at exit_path says so at once; /proc is asked too (the reaper may have
 * been killed with it) but must agree twice, a tick apart (*misses), before
 * a healthy session's QEMU is ended or a helper doubled on its word.
 */
static int
watch_dead(pid_t pid, const char *exit_path, const char *needle, int *misses)
{
	struct session_exit x;

	if (proc_exit_read(exit_path, &x) == 0)
		return 1;
	if (proc_matches(pid, needle))
		*misses = 0;
	else
		(*misses)++;
	return *misses >= 2;
}

/*
 * Did the helper whose reaper writes exit_path end with status 0? That is
 * how it ends when QEMU goes away or a stop asks it to: nothing to restart.
 */
static int
watch_exited_clean(const char *exit_path)
{
	struct session_exit x;

	return proc_exit_read(exit_path, &x) == 0 && x.signal == 0 &&
	    x.code == 0;
}

/*
 * A helper died under a running QEMU: start a new one as launch did (the
 * bridge over the same sockets, which vmux's QEMU tries to reconnect to
 * every 100 ms for 3 s, then each second; the console keeper over QEMU's FIFOs)
 * and record it. Under the session's lock, and not while a stop is under way
 * (the lock busy, or the record saying so). 0, or -1 to try again.
 */
static int
watch_restart(int console)
{
	struct session_record r;
	char *dir, *why = NULL;
	pid_t pid = 0;
	int lock, fd, rc = -1;
	uint64_t now = mono_ms();

	/* one that dies as soon as it starts is not restarted for ever */
	if (now - watch.burst_start[console] > WATCH_RESTART_WINDOW_MS) {
		watch.burst_start[console] = now;
		watch.burst[console] = 0;
	}
	if (++watch.burst[console] > WATCH_RESTART_BURST)
		return -2;

	xasprintf(&dir, "%s/sessions/%s", watch.home, watch.name);
	lock = session_lock_one(dir, "vmux (helper restart)", 0, NULL, &why);
	free(dir);
	if (lock < 0) {
		free(why);
		return -1;
	}
	if (record_load(watch.home, watch.name, &r, &why) != 0) {
		free(why);
		session_unlock(lock);
		return -1;
	}
	if (r.status != SESSION_STARTING && r.status != SESSION_READY) {
		watch.done = 1; /* stopping: nothing to restart */
		rc = 0;
	} else if (console) {
		if (console_start(&r, 1, &why) == 0) {
			pid = r.console_pid;
			rc = record_save(&r, &why);
		}
	} else if (launch_bridge(&r, &pid, &why) == 0) {
		r.bridge_pid = pid;
		rc = record_save(&r, &why);
	}
	if (rc == 0 && pid > 0) {
		if (console) {
			watch.console_pid = pid;
			watch.console_misses = 0;
		} else {
			watch.bridge_pid = pid;
			watch.bridge_misses = 0;
		}
		/* the log says so, after the dead one's last words */
		fd = open(console ? r.qemu_log : r.bridge_log,
		    O_WRONLY | O_APPEND | O_CLOEXEC);
		if (fd >= 0) {
			dprintf(fd, "vmux: the %s ended; restarted (pid %ld)\n",
			    console ? "console keeper" : "bridge", (long)pid);
			close(fd);
		}
	} else if (rc != 0) {
		if (pid > 0 && console)
			console_stop(&r, 1000);
		else if (pid > 0)
			proc_terminate(pid, r.vsock_uds, 1000);
		free(why);
	}
	record_free(&r);
	session_unlock(lock);
	return rc;
}

/*
 * The reaper's watcher: keep the session's logs bounded; restart the
 * bridge if it died under vmux's QEMU, else end QEMU; restart a dead
 * console keeper; stop the session once its
 * ttl has passed since this boot, or once the agent says the user has been idle
 * for idle_s. The stop is vmux stop's, with the reason recorded for vmux ls.
 */
static const char *
watch_tick(void *arg, pid_t qemu)
{
	const char *reason = NULL;
	char *why = NULL;
	double idle;
	siginfo_t si;
	int rc, busy = 1;

	(void)arg;
	/* the reapers of restarted helpers are our children: reap those
	 * that ended (never QEMU, which the caller waits for) */
	for (;;) {
		memset(&si, 0, sizeof si);
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 ||
		    si.si_pid == 0 || si.si_pid == qemu)
			break;
		waitpid(si.si_pid, NULL, 0);
	}
	if (watch.done)
		return NULL;
	if (watch.bridge_pid > 0 &&
	    watch_dead(watch.bridge_pid, watch.bridge_exit, watch.uds,
	        &watch.bridge_misses)) {
		if (!watch.bridge_restart ||
		    watch_exited_clean(watch.bridge_exit))
			return watch_bridge_gone(qemu);
		rc = watch_restart(0);
		if (rc == 0)
			watch.restart_fails = 0;
		else if (rc == -2 ||
		    ++watch.restart_fails >= WATCH_RESTART_TRIES)
			return watch_bridge_gone(qemu);
		if (watch.done)
			return NULL;
	}
	/* without its keeper the console is only a log: not worth the
	 * session, so a keeper that will not restart is left be */
	if (watch.console_pid > 0 &&
	    watch_dead(watch.console_pid, watch.console_exit,
	        watch.console_sock, &watch.console_misses) &&
	    watch.console_fails < WATCH_RESTART_TRIES &&
	    !watch_exited_clean(watch.console_exit)) {
		rc = watch_restart(1);
		if (rc == 0)
			watch.console_fails = 0;
		else if (rc == -2)
			watch.console_fails = WATCH_RESTART_TRIES; /* no more */
		else
			watch.console_fails++;
		if (watch.done)
			return NULL;
	}
	if (watch.ticks++ % WATCH_SLOW_TICKS != 0)
		return NULL;
	for (size_t i = 0; i < 3; i++)
		logcap_rotate(watch.logs[i], (off_t)watch.log_max);
	if (watch.ttl_s > 0 &&
	    mono_ms() - watch.boot_ms >= (uint64_t)watch.ttl_s * 1000)
		reason = "ttl";
	else if (watch.idle_s > 0 &&
	    mono_ms() - watch.boot_ms >= (uint64_t)watch.idle_s * 1000 &&
	    (idle = watch_idle_seconds(NULL)) >= (double)watch.idle_s)
		reason = "idle-timeout";
	else if (watch.idle_pause_s > 0 &&
	    mono_ms() - watch.boot_ms >= (uint64_t)watch.idle_pause_s * 1000 &&
	    (idle = watch_idle_seconds(&busy)) >= (double)watch.idle_pause_s &&
	    !busy) {
		/* idle-pause: asleep until something touches it; a pause
		 * refused (a host folder) is not tried again this boot */
		watch.idle_pause_s = 0;
		if (session_pause(watch.home, watch.name, NULL, &why) != 0) {
			log_debug("idle-pause %s: %s", watch.name, why);
			free(why);
		} else
			watch.done = 1;
		return NULL;
	}
	if (reason == NULL)
		return NULL;
	watch.done = 1;
	if (session_halt(watch.home, watch.name, reason, 0, NULL, &why) < 0)
		free(why); /* whoever holds the session decides its fate */
	return NULL;       /* vmux stop ended it and recorded why */
}

/*
 * QEMU ended: its RAM file goes with it (unless a saved state needs it), and a
 * bridge the watcher restarted, which may never have seen QEMU (a first one
 * ends by itself).
 */
static void
watch_ended(void *arg, pid_t qemu)
{
	struct session_record r;
	char *why = NULL;
	int keep = 0;

	(void)arg;
	/* the RAM file stays while a saved state needs it (vmux pause wrote
	 * one, or a resume that failed before its guest ran keeps its own),
	 * and once another boot of the session runs on it (a watcher late
	 * to end must not take a resumed guest's RAM) */
	if (record_load(watch.home, watch.name, &r, &why) == 0) {
		keep = r.state_sum != NULL ||
		    (r.qemu_pid != qemu && r.qemu_pid > 0);
		record_free(&r);
	}
	free(why);
	if (watch.ram_file[0] != '\0' && !keep)
		unlink(watch.ram_file);
	if (watch.bridge_restart && watch.bridge_pid > 0 &&
	    proc_matches(watch.bridge_pid, watch.uds))
		kill(watch.bridge_pid, SIGTERM);
}

static void notice(const struct launch_opts *, const char *, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * Is there room for the guest's RAM where its file goes? A tmpfs has a
 * size (shared by every user of /dev/shm), and a guest touching a page
 * past it would kill QEMU with SIGBUS: when it cannot hold the whole
 * memory, this boot's RAM is a memfd instead (its state cannot be saved
 * without it), and the user is told.
 */
static int
launch_ram_fits(const struct launch_opts *o, const struct session_record *r)
{
	long long free_mb = ram_free_mb(r->ram_file);

	if (free_mb >= r->memory_mb)
		return 1;
	notice(o,
	    "%s has %lld MiB free, less than the guest's %d MiB: its RAM is "
	    "a memfd this boot (a paused state cannot be kept)",
	    r->ram_file, free_mb > 0 ? free_mb : 0, r->memory_mb);
	return 0;
}

/*
 * A new layer for the guest's writes to its --image root: a qcow2 over the
 * image in the session's folder (qemu-img, from qemu-utils), which a pause
 * keeps and a fork copies; an earlier boot's goes. NULL when there is no
 * qemu-img or it fails: QEMU's own throw-away layer then (snapshot=on),
 * and the session cannot be paused (session_why_no_pause). Free it.
 */
static char *
launch_overlay_new(const struct session_record *r)
{
	char *path, *img = find_in_path("qemu-img"), *why = NULL;
	char *argv[] = {img, "create", "-q", "-f", "qcow2", "-F", "raw", "-b",
	    r->root_image, NULL, NULL};

	xasprintf(&path, "%s/%s", r->dir, SESSION_ROOT_OVERLAY);
	unlink(path);
	argv[9] = path;
	if (img == NULL || run_quiet(argv, &why) != 0) {
		log_debug("%s: %s", path, why != NULL ? why : "no qemu-img");
		free(why);
		unlink(path);
		free(path);
		path = NULL;
	}
	free(img);
	return path;
}

/* The layer a paused state was saved with, or NULL if it had none. */
static char *
launch_overlay_kept(const struct session_record *r)
{
	char *path;

	xasprintf(&path, "%s/%s", r->dir, SESSION_ROOT_OVERLAY);
	if (access(path, R_OK | W_OK) != 0) {
		free(path);
		return NULL;
	}
	return path;
}

/* Start QEMU for r with the given accelerator. */
static int
launch_qemu(const struct launch_opts *o, const struct session_record *r,
    pid_t *pid, char **cause)
{
	const char *home = o->home;
	struct proc_watch w = {watch_tick, NULL, WATCH_TICK_MS, watch_ended};
	struct qemu_config cfg;
	struct settings st;
	char **argv, *exit_path, *append, *netdev, *limiter = NULL, *serial;
	char *gdb = NULL, *root_overlay = NULL;
	int net_fd = -1;

	if (r->nallow_hosts > 0) { /* see net.c: --fwd-limit */
		limiter = r->bridge_bin != NULL
		    ? xstrdup(r->bridge_bin)
		    : find_program(SESSION_BRIDGE_NAME, "VMUX_BRIDGE", cause);
		if (limiter == NULL)
			return -1;
		if (!net_cmd_path_ok(limiter)) {
			xasprintf(cause,
			    "--allow-host: QEMU cannot run %s (a path with "
			    "spaces, commas or quotes); install vmux elsewhere "
			    "or set VMUX_BRIDGE",
			    limiter);
			free(limiter);
			return -1;
		}
		if (!net_cmd_path_ok(r->dir)) {
			xasprintf(cause,
			    "--allow-host: the session's directory %s has "
			    "spaces, commas or quotes QEMU cannot pass on; "
			    "set VMUX_HOME to a plain path",
			    r->dir);
			free(limiter);
			return -1;
		}
	}
	if (settings_load(&st, cause) != 0) { /* console-log-max, each boot */
		free(limiter);
		return -1;
	}
	memset(&cfg, 0, sizeof cfg);
	cfg.qemu = r->qemu_bin;
	cfg.accel = r->accel;
	cfg.kernel = r->kernel;
	cfg.initrd = r->initrd;
	cfg.cpus = r->cpus;
	cfg.memory_mb = r->memory_mb;
	cfg.cid = r->cid;
	if (strcmp(r->accel, "kvm") != 0) {
		char *tsc;

		xasprintf(&tsc, "%s/%s", home, SESSION_TSC_CACHE);
		cfg.tsc_khz = tsc_khz_cached(tsc);
		free(tsc);
	}
	cfg.vhost_user = r->vsock_kernel ? NULL : r->vhost_user;
	cfg.vsock_reconnect = session_qemu_is_own(r->qemu_bin);
	cfg.tb_mb = (int)r->sopt[SOPT_TB_SIZE]; /* 0: qemu.c's default */
	if (r->ram_file != NULL && o->incoming != NULL)
		cfg.ram_file = r->ram_file; /* the paused memory (pause.c) */
	else if (r->ram_file != NULL) {
		unlink(r->ram_file); /* never an earlier boot's memory */
		/* nor a state a pause left half-written */
		char *stale;
		xasprintf(&stale, "%s/%s", r->dir, SESSION_STATE);
		unlink(stale);
		free(stale);
		cfg.ram_file = launch_ram_fits(o, r) ? r->ram_file : NULL;
	}
	cfg.incoming = o->incoming != NULL;
	cfg.console_log = r->console_log;
	serial = console_serial_path(r);
	cfg.serial_sock = serial;
	cfg.qmp = r->qmp;
	cfg.workspace = r->workspace;
	cfg.root_image = r->root_image;
	if (r->root_image != NULL)
		cfg.root_overlay = root_overlay = o->incoming != NULL
		    ? launch_overlay_kept(r)
		    : launch_overlay_new(r);
	cfg.rescue_disk = r->rescue_disk;
	cfg.rescue_rw = r->rescue_rw;
	netdev = net_netdev(r, limiter);
	free(limiter);
	cfg.netdev = netdev;
	cfg.nfs = r->nmounts;
	cfg.fs_socks =
	    r->nmounts > 0 ? xcalloc(r->nmounts, sizeof *cfg.fs_socks) : NULL;
	for (size_t i = 0; i < r->nmounts; i++)
		cfg.fs_socks[i] = fs_sock_path(r, i);
	append = launch_append(r, o->persist_append ? NULL : o->append);
	cfg.append = append;
	gdb = session_gdb_path(r);
	unlink(gdb); /* an earlier boot's stub: vmux gdb must not see it */
	if (o->gdb) {
		cfg.gdb_sock = gdb;
		cfg.paused = o->paused;
	}
	unlink(r->qmp);
	xasprintf(&exit_path, "%s/%s", r->dir, SESSION_EXIT);
	unlink(exit_path);
	argv = qemu_argv(&cfg);
	if (argv == NULL || argv[0] == NULL) {
		xasprintf(cause, "cannot build the QEMU command line");
		if (argv != NULL)
			argv_free(argv);
		free(exit_path);
		free(append);
		free(netdev);
		free(serial);
		free(gdb);
		settings_free(&st);
		return -1;
	}
	argv = launch_extra_args(argv);
	memset(&watch, 0, sizeof watch);
	snprintf(watch.home, sizeof watch.home, "%s", home);
	snprintf(watch.name, sizeof watch.name, "%s", r->name);
	session_target(r, &watch.target);
	if (watch.target.uds != NULL) { /* r is freed before the fork */
		snprintf(watch.uds, sizeof watch.uds, "%s", watch.target.uds);
		watch.target.uds = watch.uds;
	}
	if (r->ram_file != NULL)
		snprintf(
		    watch.ram_file, sizeof watch.ram_file, "%s", r->ram_file);
	if (r->console_pid > 0 && r->console_sock != NULL) {
		watch.console_pid = r->console_pid;
		snprintf(watch.console_sock, sizeof watch.console_sock, "%s",
		    r->console_sock);
		snprintf(watch.console_exit, sizeof watch.console_exit, "%s/%s",
		    r->dir, SESSION_CONSOLE_EXIT);
	}
	if (!r->vsock_kernel) {
		watch.bridge_pid = r->bridge_pid;
		watch.bridge_restart = cfg.vsock_reconnect;
		snprintf(watch.bridge_exit, sizeof watch.bridge_exit, "%s/%s",
		    r->dir, SESSION_BRIDGE_EXIT);
	}
	snprintf(watch.logs[0], sizeof watch.logs[0], "%s", r->console_log);
	snprintf(watch.logs[1], sizeof watch.logs[1], "%s", r->qemu_log);
	if (!r->vsock_kernel)
		snprintf(
		    watch.logs[2], sizeof watch.logs[2], "%s", r->bridge_log);
	watch.log_max = st.console_max > 0 ? st.console_max : LOGCAP_DEFAULT;
	/* the session's own, else the config's for every session: paused
	 * only where it can be (no host folder, vmux's QEMU) */
	watch.idle_pause_s = r->sopt[SOPT_IDLE_PAUSE] > 0
	    ? r->sopt[SOPT_IDLE_PAUSE]
	    : st.idle_pause_s;
	if (watch.idle_pause_s > 0 && r->nmounts > 0)
		watch.idle_pause_s = 0;
	settings_free(&st);
	watch.boot_ms = mono_ms();
	watch.ttl_s = r->ttl_s;
	watch.idle_s = r->idle_s;
	if (net_start(r, &net_fd, cause) == 0) {
		*pid = proc_spawn_watched(
		    argv, net_fd, r->qemu_log, exit_path, &w, cause);
		if (net_fd >= 0) /* QEMU has it (or failed: passt ends) */
			close(net_fd);
	} else
		*pid = -1;
	argv_free(argv);
	free(exit_path);
	free(append);
	free(netdev);
	free(serial);
	free(gdb);
	free(root_overlay);
	for (size_t i = 0; i < cfg.nfs; i++)
		free(cfg.fs_socks[i]);
	free(cfg.fs_socks);
	if (*pid < 0) {
		*pid = 0;
		return -1;
	}
	return 0;
}

/* Outcomes of waiting for the agent. */
enum boot_result { BOOT_READY, BOOT_TIMEOUT, BOOT_QEMU_DIED, BOOT_FAILED };

/* Ping the agent until it answers, QEMU dies, or the deadline passes. */
static enum boot_result
launch_wait(const struct launch_opts *o, const struct session_record *r,
    uint64_t deadline, char **cause)
{
	struct vsock_target t;
	cJSON *req, *reply;
	enum boot_result res = BOOT_TIMEOUT;
	uint64_t restored_ms =
	    o->machine_id != NULL ? PING_NEW_CID_MS : PING_RESTORED_MS;

	session_target(r, &t);
	for (;;) {
		char *why = NULL;
		uint64_t now = mono_ms(), cd, rd, connect_ms;

		if (o->interrupted != NULL && *o->interrupted) {
			xasprintf(
			    cause, "interrupted while booting '%s'", r->name);
			res = BOOT_FAILED;
			break;
		}
		if (!session_qemu_alive(r)) {
			res = BOOT_QEMU_DIED;
			break;
		}
		if (!r->vsock_kernel && !session_bridge_alive(r)) {
			xasprintf(cause, "%s exited during boot",
			    SESSION_BRIDGE_NAME);
			add_tail(cause, SESSION_BRIDGE_LOG, r->bridge_log);
			res = BOOT_FAILED;
			break;
		}
		if (now >= deadline)
			break;
		connect_ms = PING_CONNECT_MS;
		if (o->incoming != NULL) {
			connect_ms = restored_ms;
			if (restored_ms < PING_RESTORED_MS)
				restored_ms *= 2;
		}
		cd = now + connect_ms < deadline ? now + connect_ms : deadline;
		rd = now + PING_REPLY_MS < deadline ? now + PING_REPLY_MS
		                                    : deadline;
		/* made anew each try: a resume's carries the host's time */
		req = o->ready_req != NULL ? o->ready_req(o, r)
		                           : agent_req_ping();
		reply = agent_call(&t, req, cd, rd, NULL, NULL, &why);
		cJSON_Delete(req);
		if (reply == NULL && o->ready_req != NULL &&
		    agent_refused(why)) {
			/* it answered, refusing: up all the same, and the
			 * caller hears why */
			reply = cJSON_CreateObject();
			cJSON_AddStringToObject(
			    reply, "error", why + strlen(AGENT_REFUSED));
			free(why);
			why = NULL;
		}
		if (reply != NULL && o->interrupted != NULL &&
		    *o->interrupted) {
			/* ready, but the user asked to stop: still stop */
			cJSON_Delete(reply);
			continue;
		}
		if (reply != NULL) {
			if (o->ready_reply != NULL) { /* the last one's */
				cJSON_Delete(*o->ready_reply);
				*o->ready_reply = reply;
			} else
				cJSON_Delete(reply);
			res = BOOT_READY;
			break;
		}
		log_debug("boot %s: ping: %s", r->name, why);
		free(why);
		/* failed fast (nothing listens yet): try again soon, as
		 * every ms here is boot time, but don't spin */
		if (mono_ms() < cd)
			usleep(PING_RETRY_MS * 1000);
	}
	return res;
}

/*
 * Without the agent to ask (--no-agent, --paused): wait until QEMU is up,
 * which is when its QMP socket is there (made once its devices are) and it
 * serves its gdbstub (--gdb).
 */
static enum boot_result
launch_wait_qemu(const struct launch_opts *o, const struct session_record *r,
    uint64_t deadline, char **cause)
{
	char *gdb = o->gdb ? session_gdb_path(r) : NULL;
	enum boot_result res = BOOT_TIMEOUT;
	struct stat st;

	while (mono_ms() < deadline) {
		if (!session_qemu_alive(r)) {
			res = BOOT_QEMU_DIED;
			break;
		}
		if (o->interrupted != NULL && *o->interrupted) {
			xasprintf(
			    cause, "interrupted while booting '%s'", r->name);
			res = BOOT_FAILED;
			break;
		}
		if (stat(r->qmp, &st) == 0 && S_ISSOCK(st.st_mode) &&
		    (gdb == NULL ||
		        (stat(gdb, &st) == 0 && S_ISSOCK(st.st_mode)))) {
			res = BOOT_READY;
			break;
		}
		poll(NULL, 0, 10);
	}
	free(gdb);
	return res;
}

/* Start the bridge and QEMU and wait for the agent; one boot attempt. */
static enum boot_result
launch_boot(const struct launch_opts *o, struct session_record *r,
    uint64_t deadline, char **cause)
{
	pid_t pid = 0;
	int rc;

	if (o->interrupted != NULL && *o->interrupted) {
		xasprintf(cause, "interrupted before booting '%s'", r->name);
		return BOOT_FAILED;
	}
	if (!r->vsock_kernel) {
		/* keep the pid even when it never got ready: cleanup needs it
		 */
		rc = launch_bridge(r, &pid, cause);
		r->bridge_pid = pid;
		if (rc != 0 || record_save(r, cause) != 0)
			return BOOT_FAILED;
	}
	if (fs_start(r, cause) != 0 || console_start(r, 0, cause) != 0 ||
	    record_save(r, cause) != 0 || launch_qemu(o, r, &pid, cause) != 0)
		return BOOT_FAILED;
	r->qemu_pid = pid;
	if (record_save(r, cause) != 0)
		return BOOT_FAILED;
	if (o->incoming != NULL &&
	    state_restore(r, o->incoming, deadline, cause) != 0) {
		add_tail(cause, SESSION_QEMU_LOG, r->qemu_log);
		return BOOT_FAILED;
	}
	/* nothing will answer (or not before gdb continues): QEMU up is
	 * ready */
	if (r->no_agent || o->paused)
		return launch_wait_qemu(o, r, deadline, cause);
	return launch_wait(o, r, deadline, cause);
}

/* Stop the processes of a failed attempt so the next one starts clean. */
void
launch_reset(struct session_record *r)
{
	char *needle = session_qemu_needle(r);

	proc_terminate(r->qemu_pid, needle, 0);
	free(needle);
	if (!r->vsock_kernel)
		proc_terminate(r->bridge_pid, r->vsock_uds, 1000);
	fs_stop(r, 1000);
	net_stop(r, 1000);
	console_stop(r, 1000);
	for (size_t i = 0; i < r->nmounts; i++)
		r->mounts[i].pid = 0;
	r->qemu_pid = r->bridge_pid = r->console_pid = 0;
}

/* Tell the user something through the caller's notice hook. */
static void
notice(const struct launch_opts *o, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (o->notice == NULL)
		return;
	va_start(ap, fmt);
	xvasprintf(&s, fmt, ap);
	va_end(ap);
	o->notice(s);
	free(s);
}

/* Check what launching needs before anything is created. */
static int
launch_check(
    const struct launch_opts *o, struct session_record *r, char **cause)
{
	const char *qemu = getenv("VMUX_QEMU");
	char *why = NULL;
	int from_env = 1;

	if (session_name_valid(o->name, cause) != 0)
		return -1;
	if (qemu == NULL || *qemu == '\0') {
		qemu = SESSION_QEMU_DEFAULT; /* when vmux-qemu is not there */
		from_env = 0;
	}
	r->qemu_bin = session_qemu_find(1);
	if (r->qemu_bin == NULL) {
		xasprintf(cause,
		    "%s not found%s (install the qemu-system-x86 package%s)",
		    qemu, strchr(qemu, '/') == NULL ? " in PATH" : "",
		    from_env ? ", or fix VMUX_QEMU" : " or set VMUX_QEMU");
		return -1;
	}
	if (!r->vsock_kernel) {
		r->bridge_bin =
		    find_program(SESSION_BRIDGE_NAME, "VMUX_BRIDGE", cause);
		if (r->bridge_bin == NULL)
			return -1;
	} else if (access("/dev/vhost-vsock", R_OK | W_OK) != 0) {
		xasprintf(cause,
		    "cannot use kernel vsock: /dev/vhost-vsock: %s",
		    strerror(errno));
		return -1;
	}
	if (guest_image_find(
	        o->kernel, o->initrd, &r->kernel, &r->initrd, cause) != 0)
		return -1;
	if (o->accel != NULL && strcmp(o->accel, "kvm") == 0) {
		/* asked for by name: no usable KVM is an error, not TCG */
		const char *a = accel_detect(&why);
		if (a == NULL || strcmp(a, "kvm") != 0) {
			xasprintf(cause,
			    "--accel kvm: KVM is not usable on this host (%s); "
			    "use --accel tcg, or leave --accel out to use what "
			    "works",
			    why != NULL ? why : "no /dev/kvm");
			free(why);
			return -1;
		}
		free(why);
		r->accel = xstrdup("kvm");
	} else if (o->accel != NULL)
		r->accel = xstrdup(o->accel);
	else {
		const char *a = accel_detect(&why);
		r->accel = xstrdup(a != NULL ? a : "tcg");
		log_debug(
		    "accel_detect: %s (%s)", r->accel, why != NULL ? why : "");
		free(why);
	}
	return 0;
}

/*
 * With --record: start `vmux record NAME` (this binary) beside the VM; it
 * ends when QEMU does. A recorder that cannot start is said in its log and
 * costs the boot nothing.
 */
static void
launch_recorder(struct session_record *r)
{
	char *self, *argv[7], *log, *exit_path, *into, *why = NULL;
	pid_t pid;

	r->recorder_pid = 0;
	if (!r->record || (self = exe_path()) == NULL)
		return;
	argv[0] = self;
	argv[1] = "record";
	argv[2] = r->name;
	argv[3] = "--into"; /* stop and rm find it by this path */
	xasprintf(&into, "%s/recordings", r->dir);
	argv[4] = into;
	argv[5] = r->record_input ? "--input" : NULL;
	argv[6] = NULL;
	xasprintf(&log, "%s/recorder.log", r->dir);
	xasprintf(&exit_path, "%s/recorder.exit", r->dir);
	pid = proc_spawn(argv, -1, log, exit_path, &why);
	if (pid > 0)
		r->recorder_pid = pid;
	else {
		log_debug("recorder of %s: %s", r->name, why);
		free(why);
	}
	free(log);
	free(exit_path);
	free(into);
	free(self);
}

/*
 * Boot r (its record already written): start the bridge and QEMU, wait for
 * the agent, fall back from KVM to TCG once, and save the record as ready.
 * On failure the processes are left for the caller to clean up.
 */
int
launch_run(const struct launch_opts *o, struct session_record *r, char **cause)
{
	enum boot_result res;
	uint64_t deadline, boot_ms = (uint64_t)o->boot_timeout_s * 1000;
	/* only a choice of ours falls back: --accel kvm given is kept to */
	int fallback = strcmp(r->accel, "kvm") == 0 && o->accel == NULL;

	r->status = SESSION_STARTING;
	r->started = (int64_t)time(NULL);
	for (;;) {
		uint64_t limit = boot_ms;
		if (fallback && limit > KVM_READY_MS)
			limit = KVM_READY_MS;
		deadline = mono_ms() + limit;
		res = launch_boot(o, r, deadline, cause);
		if (res == BOOT_READY)
			break;
		if (res == BOOT_FAILED)
			return -1;
		if (fallback) {
			if (res == BOOT_QEMU_DIED)
				notice(o,
				    "KVM guest failed to start; falling "
				    "back to TCG");
			else
				notice(o,
				    "KVM guest not ready after %d s; falling "
				    "back to TCG",
				    (int)(limit / 1000));
			launch_reset(r);
			free(r->accel);
			r->accel = xstrdup("tcg");
			fallback = 0;
			continue;
		}
		if (res == BOOT_QEMU_DIED)
			xasprintf(
			    cause, "QEMU exited while booting '%s'", r->name);
		else if (r->no_agent || o->paused)
			xasprintf(cause, "QEMU for '%s' was not up within %d s",
			    r->name, o->boot_timeout_s);
		else
			xasprintf(cause,
			    "guest agent of '%s' did not answer within %d s "
			    "(accel %s)",
			    r->name, o->boot_timeout_s, r->accel);
		add_tail(cause, SESSION_QEMU_LOG, r->qemu_log);
		add_tail(cause, SESSION_CONSOLE, r->console_log);
		return -1;
	}
	r->status = SESSION_READY;
	/* saved first: the recorder reads the record as it starts, and one
	 * that read the last boot's (QEMU gone) ended at once, unsaid */
	if (record_save(r, cause) != 0)
		return -1;
	launch_recorder(r);
	return record_save(r, cause);
}

/* Give r its workspace: the one o names, or a new one in its directory. */
static int
launch_workspace(
    const struct launch_opts *o, struct session_record *r, char **cause)
{
	char *real;
	int rc;

	if (o->rescue_disk != NULL) { /* the disk is all it has */
		if ((real = realpath(o->rescue_disk, NULL)) == NULL) {
			xasprintf(
			    cause, "%s: %s", o->rescue_disk, strerror(errno));
			return -1;
		}
		r->rescue_disk = real;
		r->rescue_rw = o->rescue_rw;
		return record_save(r, cause);
	}
	if (o->workspace != NULL) {
		if ((real = realpath(o->workspace, NULL)) == NULL) {
			xasprintf(cause, "workspace %s: %s", o->workspace,
			    strerror(errno));
			return -1;
		}
		r->workspace = real;
		r->workspace_owned = 0;
		return 0;
	}
	xasprintf(&r->workspace, "%s/%s", r->dir, SESSION_WORKSPACE);
	r->workspace_owned = 1;
	rc = workspace_create(r->workspace,
	    o->disk_mb > 0 ? o->disk_mb : WORKSPACE_DEFAULT_MB, cause);
	if (rc == 0)
		rc = record_save(r, cause);
	return rc;
}

/*
 * The template key of new session r (template.c), or NULL when it takes
 * settings a template cannot carry. Free it.
 */
char *
launch_template_key(const struct launch_opts *o, const struct session_record *r)
{
	struct session_record anon = *r;
	char *words, *skey, *key, *ram, *inplace;

	if (o->cold || o->dir != NULL || o->append != NULL || o->gdb ||
	    o->paused || o->no_agent || o->workspace != NULL ||
	    o->rescue_disk != NULL || o->kernel != NULL || o->initrd != NULL ||
	    r->nmounts > 0 || r->vsock_kernel || session_env_custom() ||
	    session_qemu_why_no_state(r->qemu_bin) != NULL)
		return NULL;
	/* RAM in the session's folder (a local file system) */
	ram = session_ram_path(r->dir);
	xasprintf(&inplace, "%s/%s", r->dir, SESSION_RAM_SAVED);
	if (ram == NULL || strcmp(ram, inplace) != 0) {
		free(ram);
		free(inplace);
		return NULL;
	}
	free(ram);
	free(inplace);
	/* the guest's words but its host name, which a resume sets */
	anon.hostname = NULL;
	anon.name = "-";
	words = launch_append(&anon, NULL);
	skey = state_key(r);
	xasprintf(&key, "%s disk=%lld nic=%d words=%s", skey,
	    (long long)(o->disk_mb > 0 ? o->disk_mb : WORKSPACE_DEFAULT_MB),
	    net_has_nic(r), words);
	free(words);
	free(skey);
	return key;
}

/* A copy of n strings (NULL when n is 0). */
static char **
strv_dup(char *const *v, size_t n)
{
	char **out = n > 0 ? xcalloc(n, sizeof *out) : NULL;
	size_t i;

	for (i = 0; i < n; i++)
		out[i] = xstrdup(v[i]);
	return out;
}

/* Boot a new session; on success *out is its record (caller frees). */
int
session_launch(
    const struct launch_opts *o, struct session_record *out, char **cause)
{
	struct session_record r;
	char *key = NULL, *why = NULL;
	int lock = -1, used = 0;

	memset(&r, 0, sizeof r);
	memset(out, 0, sizeof *out);
	r.vsock_kernel = o->vsock_kernel;
	if (launch_check(o, &r, cause) != 0)
		goto fail_early;
	if (o->workspace != NULL) {
		if (workspace_check(o->workspace, cause) != 0 ||
		    workspace_in_use(o->home, o->workspace, NULL, cause) != 0)
			goto fail_early;
	}
	if (o->image != NULL) {
		struct image_pull_opts po = {0};

		po.policy = o->pull_policy;
		po.notice = o->notice;
		po.progress = o->pull_progress;
		po.arg = o->pull_arg;
		if (image_resolve(
		        o->home, o->image, &po, &r.root_image, cause) != 0) {
			if (o->image_exit != NULL)
				*o->image_exit = po.exit;
			goto fail_early;
		}
		r.image_ref = po.ref;
		r.image_digest = po.digest;
		po.ref = po.digest = NULL;
		image_pull_opts_free(&po);
	}
	r.name = xstrdup(o->name);
	r.dir =
	    o->dir != NULL ? xstrdup(o->dir) : session_dir(o->home, o->name);
	r.status = SESSION_STARTING;
	r.created = (int64_t)time(NULL);
	r.instance = record_instance_new();
	launch_options(o, &r);
	r.no_agent = o->no_agent;
	r.record = o->record;
	r.record_input = o->record_input;
	if (o->append != NULL && o->persist_append)
		r.append = xstrdup(o->append);
	if (o->profile != NULL)
		r.profile = xstrdup(o->profile->name);
	r.allow_hosts = strv_dup(o->allow_hosts, o->nallow_hosts);
	r.nallow_hosts = o->nallow_hosts;
	r.labels = strv_dup(o->labels, o->nlabels);
	r.nlabels = o->nlabels;
	r.publish = strv_dup(o->publish, o->npublish);
	r.npublish = o->npublish;
	if (o->nmounts > 0)
		r.mounts = xcalloc(o->nmounts, sizeof *r.mounts);
	for (size_t i = 0; i < o->nmounts; i++) {
		r.mounts[i].host = xstrdup(o->mounts[i].host);
		r.mounts[i].guest = xstrdup(o->mounts[i].guest);
		r.mounts[i].ro = o->mounts[i].ro;
	}
	r.nmounts = o->nmounts;
	if (o->nallow_ports > 0) {
		r.allow_ports =
		    xreallocarray(NULL, o->nallow_ports, sizeof *r.allow_ports);
		memcpy(r.allow_ports, o->allow_ports,
		    o->nallow_ports * sizeof *r.allow_ports);
		r.nallow_ports = o->nallow_ports;
	}
	if (launch_claim(o, &r, cause) != 0)
		goto fail_early;
	lock = session_lock_one(r.dir, "vmux new", 0, NULL, cause);
	if (lock < 0)
		goto fail;
	key = launch_template_key(o, &r);
	if (key != NULL && (used = template_use(o, &r, key, &why)) == 1)
		goto done; /* booted nothing */
	if (used < 0 && o->interrupted != NULL && *o->interrupted) {
		*cause = why; /* asked to stop: not booted instead */
		goto fail;
	}
	if (used < 0) {
		notice(o, "its template failed (%s); booting instead", why);
		free(why);
	}
	if (launch_workspace(o, &r, cause) != 0 ||
	    launch_run(o, &r, cause) != 0)
		goto fail;
	if (key != NULL) /* the next new like it boots nothing */
		template_capture(o, &r, key);
done:
	free(key);
	session_unlock(lock);
	*out = r;
	return 0;
fail:
	free(key);
	launch_cleanup(&r);
	session_unlock(lock);
fail_early:
	record_free(&r);
	return -1;
}

/* Does path name an existing file? */
static int
file_exists(const char *path)
{
	return path != NULL && access(path, R_OK) == 0;
}

/*
 * Boot a stopped (or crashed) session again: same name, CID, resources and
 * workspace (a paused one is resumed, unless o->cold); programs and guest image
 * found afresh when the recorded ones are gone (vmux was moved or upgraded).
 * Holds the session's lock. On failure what was started is stopped and the
 * session is left stopped.
 */
int
session_start(
    const struct launch_opts *o, struct session_record *out, char **cause)
{
	struct launch_opts lo = *o;
	struct session_record r, fresh;
	char *why = NULL;
	int lock, rc = -1;

	memset(out, 0, sizeof *out);
	memset(&fresh, 0, sizeof fresh);
	lock = session_lock_record(o->home, o->name, "vmux start",
	    o->lock_wait_ms, o->notice, &r, cause);
	if (lock < 0)
		return -1;
	if (session_qemu_alive(&r)) {
		xasprintf(cause, "session '%s' is already %s", r.name,
		    session_state(&r));
		goto out;
	}
	if (strcmp(session_state(&r), "paused") == 0 && !o->cold) {
		record_free(&r); /* its state, resumed */
		session_unlock(lock);
		return session_resume(o, out, cause);
	}
	if (strcmp(session_state(&r), "paused") == 0)
		state_discard(&r);   /* --cold: the workspace alone */
	if (r.rescue_disk != NULL) { /* its vmux rescue was killed */
		xasprintf(cause,
		    "'%s' was a vmux rescue of %s and is not started again: "
		    "remove it (vmux rm %s)",
		    r.name, r.rescue_disk, r.name);
		goto out;
	}
	if (r.workspace != NULL &&
	    workspace_in_use(o->home, r.workspace, r.name, cause) != 0)
		goto out;
	/* A bridge left over from a crash would hold the sockets. */
	if (!r.vsock_kernel)
		proc_terminate(r.bridge_pid, r.vsock_uds, 1000);
	if (r.workspace != NULL && workspace_check(r.workspace, cause) != 0)
		goto out;
	if (r.root_image != NULL && access(r.root_image, R_OK) != 0) {
		xasprintf(cause, "the image %s of '%s' is gone", r.root_image,
		    r.name);
		goto out;
	}
	lo.kernel = file_exists(r.kernel) ? r.kernel : NULL;
	lo.initrd = file_exists(r.initrd) ? r.initrd : NULL;
	fresh.vsock_kernel = r.vsock_kernel;
	if (launch_check(&lo, &fresh, cause) != 0)
		goto out;
	free(r.qemu_bin);
	free(r.bridge_bin);
	free(r.kernel);
	free(r.initrd);
	free(r.accel);
	r.qemu_bin = fresh.qemu_bin;
	r.bridge_bin = fresh.bridge_bin;
	r.kernel = fresh.kernel;
	r.initrd = fresh.initrd;
	r.accel = fresh.accel;
	memset(&fresh, 0, sizeof fresh);
	free(r.stop_reason);
	r.stop_reason = NULL;
	r.qemu_pid = r.bridge_pid = 0;
	r.no_agent = o->no_agent; /* for this boot */
	if (o->persist_append) {  /* kept from now on ("" forgets them) */
		free(r.append);
		r.append = o->append != NULL && *o->append != '\0'
		    ? xstrdup(o->append)
		    : NULL;
	}
	if (launch_run(&lo, &r, cause) == 0) {
		rc = 0;
		*out = r;
		memset(&r, 0, sizeof r);
		goto out;
	}
	launch_reset(&r);
	r.status = SESSION_STOPPED;
	r.stopped = (int64_t)time(NULL);
	r.stop_reason = xstrdup("boot failed");
	if (record_save(&r, &why) != 0) {
		log_debug("start %s: %s", r.name, why);
		free(why);
	}
out:
	record_free(&fresh);
	record_free(&r);
	session_unlock(lock);
	return rc;
}
