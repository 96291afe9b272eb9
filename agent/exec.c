/*
 * exec.c: run one command to completion for the exec action.
 *
 * The command gets its own session and process group, /dev/null (or the
 * request's stdin) as input, pipes for output and a clean environment. One
 * poll loop reads both pipes, feeds stdin, watches the child through a pidfd
 * and enforces the timeout: SIGTERM to the whole group, SIGKILL after
 * EXEC_KILL_GRACE_MS. The exit is observed with WNOWAIT so the zombie keeps
 * the process group id reserved until the final SIGKILL went out. Output
 * past max_output is counted and discarded (a marker says so), and after the
 * command ends the pipes are drained for at most EXEC_DRAIN_MS, so a daemon
 * that inherited them cannot hold the reply. The caller owns the result.
 */
#include <sys/socket.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

#define CANCEL_PROBE_MS 1000
#define READ_CHUNK      65536

static const char *const exec_env_defaults[] = {
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "USER=root",
    "LOGNAME=root",
    "SHELL=/bin/sh",
    "TERM=dumb",
    "LANG=C.UTF-8",
    NULL,
};

/* Process groups of running commands, killed when the agent exits. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t *registry;
static size_t registry_len, registry_cap;

/* Remember a running command's process group. */
static void
registry_add(pid_t pid)
{
	pthread_mutex_lock(&registry_lock);
	if (registry_len == registry_cap) {
		registry_cap = registry_cap ? registry_cap * 2 : 16;
		registry =
		    xreallocarray(registry, registry_cap, sizeof *registry);
	}
	registry[registry_len++] = pid;
	pthread_mutex_unlock(&registry_lock);
}

/* Forget a command's process group. */
static void
registry_remove(pid_t pid)
{
	pthread_mutex_lock(&registry_lock);
	for (size_t i = 0; i < registry_len; i++) {
		if (registry[i] == pid) {
			registry[i] = registry[--registry_len];
			break;
		}
	}
	pthread_mutex_unlock(&registry_lock);
}

/* SIGKILL every running command's group (the agent is exiting). */
void
exec_kill_all(void)
{
	pthread_mutex_lock(&registry_lock);
	for (size_t i = 0; i < registry_len; i++)
		kill(-registry[i], SIGKILL);
	pthread_mutex_unlock(&registry_lock);
}

/* Free what a result holds. */
void
exec_result_free(struct exec_result *res)
{
	buf_free(&res->out.data);
	buf_free(&res->err.data);
	budget_release(res->out.charged + res->err.charged);
	res->out.charged = res->err.charged = 0;
}

/* Keep what fits under max, count the rest. */
static void
stream_add(struct exec_stream *s, const void *p, size_t n, size_t max)
{
	size_t keep = max > s->data.len ? max - s->data.len : 0;

	if (keep > n)
		keep = n;
	if (keep != 0 && budget_reserve(keep, NULL) != 0) {
		keep = 0;
		s->over_budget = 1;
	}
	s->charged += keep;
	s->total += n;
	if (keep != 0)
		buf_add(&s->data, p, keep);
	if (keep < n)
		s->truncated = 1;
}

/* Append the truncation marker to a stream that overflowed. */
static void
stream_finish(struct exec_stream *s)
{
	char *msg;

	if (!s->truncated)
		return;
	xasprintf(&msg,
	    "\n[vmux: output truncated%s: kept %zu of %llu bytes]\n",
	    s->over_budget ? " (agent memory budget exhausted)" : "",
	    s->data.len, (unsigned long long)s->total);
	buf_addstr(&s->data, msg);
	free(msg);
}

/* Read what a pipe has; closes and sets *fd to -1 at EOF. */
static void
pipe_read(int *fd, struct exec_stream *s, size_t max, uint8_t *chunk)
{
	ssize_t n = read(*fd, chunk, READ_CHUNK);

	if (n > 0)
		stream_add(s, chunk, (size_t)n, max);
	else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
		close(*fd);
		*fd = -1;
	}
}

/* Has the client behind fd gone away? (POLLHUP misses vsock, so probe.) */
static int
peer_gone(int fd, short revents)
{
	if (revents & (POLLHUP | POLLERR))
		return 1;
	if (send(fd, "", 0, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 &&
	    (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN))
		return 1;
	return 0;
}

/* Has the child exited? Leaves the zombie in place (WNOWAIT). */
static int
child_exited(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof si);
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		return errno == ECHILD;
	return si.si_pid == pid;
}

/* Shrink *timeout to the time until `at`. */
static void
until(int *timeout, uint64_t now, uint64_t at)
{
	int ms = at > now ? (int)(at - now) : 0;

	if (*timeout < 0 || ms < *timeout)
		*timeout = ms;
}

struct exec_run {
	pid_t pid;
	int pidfd;
	int fd_out, fd_err, fd_in;
	const char *in_data;
	size_t in_left;
	int exited, reaped, term_sent, killed;
	uint64_t start, deadline, kill_at, drain_until, probe_at;
	int status;
};

/* Start stopping the group: SIGTERM now, SIGKILL after the grace. */
static void
run_terminate(struct exec_run *x, uint64_t now)
{
	if (x->term_sent)
		return;
	kill(-x->pid, SIGTERM);
	kill(-x->pid, SIGCONT);
	x->term_sent = 1;
	x->kill_at = now + EXEC_KILL_GRACE_MS;
}

/* Advance the timeout / kill / reap state; returns 1 when all is done. */
static int
run_step(struct exec_run *x, struct exec_result *res, uint64_t now)
{
	if (!x->exited && !x->term_sent && now >= x->deadline) {
		res->timed_out = 1;
		run_terminate(x, now);
	}
	if (x->term_sent && !x->killed && (now >= x->kill_at || x->exited)) {
		kill(-x->pid, SIGKILL); /* the rest of the group too */
		x->killed = 1;
	}
	if (x->exited && !x->reaped && (!x->term_sent || x->killed)) {
		while (waitpid(x->pid, &x->status, 0) < 0 && errno == EINTR)
			;
		x->reaped = 1;
		res->duration_ms = now - x->start;
		x->drain_until = now + EXEC_DRAIN_MS;
	}
	return x->reaped &&
	    ((x->fd_out < 0 && x->fd_err < 0) || now >= x->drain_until);
}

/* The poll loop of one command. */
static void
run_loop(
    struct exec_run *x, const struct exec_spec *spec, struct exec_result *res)
{
	uint8_t *chunk = xmalloc(READ_CHUNK);
	struct pollfd pfd[5];
	int idx_out, idx_err, idx_in, idx_pid, idx_cancel, n, timeout;
	int cancel_fd = spec->cancel_fd;
	uint64_t now;
	ssize_t w;

	for (;;) {
		now = mono_ms();
		if (run_step(x, res, now))
			break;
		n = 0;
		idx_out = idx_err = idx_in = idx_pid = idx_cancel = -1;
		if (x->fd_out >= 0) {
			pfd[idx_out = n++] =
			    (struct pollfd){x->fd_out, POLLIN, 0};
		}
		if (x->fd_err >= 0) {
			pfd[idx_err = n++] =
			    (struct pollfd){x->fd_err, POLLIN, 0};
		}
		if (x->fd_in >= 0)
			pfd[idx_in = n++] =
			    (struct pollfd){x->fd_in, POLLOUT, 0};
		if (x->pidfd >= 0 && !x->exited)
			pfd[idx_pid = n++] =
			    (struct pollfd){x->pidfd, POLLIN, 0};
		if (cancel_fd >= 0 && !x->reaped)
			pfd[idx_cancel = n++] =
			    (struct pollfd){cancel_fd, 0, 0};

		timeout = -1;
		if (!x->exited && !x->term_sent)
			until(&timeout, now, x->deadline);
		if (x->term_sent && !x->killed)
			until(&timeout, now, x->kill_at);
		if (x->reaped)
			until(&timeout, now, x->drain_until);
		if (cancel_fd >= 0 && !x->reaped)
			until(&timeout, now, x->probe_at);
		if (x->pidfd < 0 && !x->exited)
			until(&timeout, now, now + 20);
		if (poll(pfd, (nfds_t)n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			fatal("exec poll");
		}
		now = mono_ms();

		if (idx_out >= 0 && pfd[idx_out].revents != 0)
			pipe_read(
			    &x->fd_out, &res->out, spec->max_output, chunk);
		if (idx_err >= 0 && pfd[idx_err].revents != 0)
			pipe_read(
			    &x->fd_err, &res->err, spec->max_output, chunk);
		if (idx_in >= 0 && pfd[idx_in].revents != 0) {
			w = write(x->fd_in, x->in_data, x->in_left);
			if (w > 0) {
				x->in_data += w;
				x->in_left -= (size_t)w;
			}
			if (x->in_left == 0 ||
			    (w < 0 && errno != EAGAIN && errno != EINTR)) {
				close(x->fd_in);
				x->fd_in = -1;
			}
		}
		if (!x->exited &&
		    (x->pidfd < 0 || (idx_pid >= 0 && pfd[idx_pid].revents)))
			x->exited = child_exited(x->pid);
		if (idx_cancel >= 0 &&
		    (pfd[idx_cancel].revents != 0 || now >= x->probe_at)) {
			x->probe_at = now + CANCEL_PROBE_MS;
			if (peer_gone(cancel_fd, pfd[idx_cancel].revents)) {
				res->cancelled = 1;
				cancel_fd = -1;
				run_terminate(x, now);
			}
		}
	}
	free(chunk);
}

/* Open the child's stdin: a pipe with the request's data, or /dev/null. */
static int
open_stdin(
    const struct exec_spec *spec, int *child_end, int *parent_end, char **cause)
{
	int p[2];

	*parent_end = -1;
	if (spec->stdin_data == NULL) {
		*child_end = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (*child_end < 0) {
			xasprintf(cause, "/dev/null: %s", strerror(errno));
			return -1;
		}
		return 0;
	}
	if (pipe2(p, O_CLOEXEC) < 0) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		return -1;
	}
	*child_end = p[0];
	*parent_end = p[1];
	if (spec->stdin_len == 0) {
		close(p[1]);
		*parent_end = -1;
	}
	return 0;
}

/*
 * Run a command. Returns 0 with *res filled (whatever its exit), or -1 with
 * *cause if it could not be started (bad cwd, missing program, ...).
 */
int
exec_run(const struct exec_spec *spec, struct exec_result *res, char **cause)
{
	struct exec_run x;
	struct spawn sp;
	int out[2] = {-1, -1}, err[2] = {-1, -1}, in_child = -1, sig, rc = -1;
	char **envp, *path = NULL;

	memset(res, 0, sizeof *res);
	memset(&x, 0, sizeof x);
	x.fd_in = x.fd_out = x.fd_err = x.pidfd = -1;
	envp = env_build(spec->env, exec_env_defaults);
	if ((path = path_resolve(spec->argv[0], envp, cause)) == NULL)
		goto out;
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		goto out;
	}
	if (open_stdin(spec, &in_child, &x.fd_in, cause) < 0)
		goto out;

	memset(&sp, 0, sizeof sp);
	sp.path = path;
	sp.argv = spec->argv;
	sp.envp = envp;
	sp.cwd = spec->cwd != NULL ? spec->cwd : default_cwd();
	sp.fd_in = in_child;
	sp.fd_out = out[1];
	sp.fd_err = err[1];
	x.start = mono_ms();
	if ((x.pid = spawn_start(&sp, cause)) < 0)
		goto out;
	registry_add(x.pid);
	close(out[1]);
	close(err[1]);
	close(in_child);
	out[1] = err[1] = in_child = -1;

	x.fd_out = out[0];
	x.fd_err = err[0];
	out[0] = err[0] = -1;
	set_nonblock(x.fd_out, 1);
	set_nonblock(x.fd_err, 1);
	if (x.fd_in >= 0)
		set_nonblock(x.fd_in, 1);
	x.in_data = spec->stdin_data;
	x.in_left = spec->stdin_len;
	x.pidfd = pidfd_open_compat(x.pid);
	x.deadline = x.start + (uint64_t)spec->timeout_ms;
	x.probe_at = x.start + CANCEL_PROBE_MS;

	run_loop(&x, spec, res);
	registry_remove(x.pid);

	if (res->timed_out || res->cancelled)
		res->exit_code = -1;
	else {
		res->exit_code = wait_status_code(x.status, &sig);
		res->signal = sig;
	}
	stream_finish(&res->out);
	stream_finish(&res->err);
	rc = 0;
out:
	if (x.pidfd >= 0)
		close(x.pidfd);
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (err[i] >= 0)
			close(err[i]);
	}
	if (in_child >= 0)
		close(in_child);
	if (x.fd_out >= 0)
		close(x.fd_out);
	if (x.fd_err >= 0)
		close(x.fd_err);
	if (x.fd_in >= 0)
		close(x.fd_in);
	free(path);
	env_free(envp);
	return rc;
}
