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
 *
 * exec_stream (spec->stream) runs the same loop with the connection as a
 * framed pipe both ways (proto/attach.h): output goes out as STDOUT/STDERR
 * frames as it is read, STDIN frames feed the command's stdin, STDIN_EOF
 * closes it, SIGNAL signals the group, and EXIT ends the stream. Memory
 * stays bounded whatever the sizes: a pipe is read only when the frame
 * before it has left, and the connection only when stdin took the last
 * STDIN frame, so a slow reader or a slow command stalls the other side.
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

#include "proto/attach.h"
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
	if (keep != 0) {
		size_t got = budget_reserve_upto(keep);

		if (got < keep) {
			keep = got;
			s->over_budget = 1;
		}
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

/* exec_stream's side of the connection. */
struct exec_wire {
	int fd;
	struct buf out;  /* frames to send (at most one output chunk) */
	size_t out_off;  /* out: bytes already sent */
	struct buf in;   /* bytes received, not yet parsed or written */
	size_t in_frame; /* in: size of the STDIN frame being written, or 0 */
	int stdin_eof;   /* close stdin once in_frame is written */
	int gone;        /* the client hung up or broke the stream */
};

struct exec_run {
	pid_t pid;
	int pidfd;
	int fd_out, fd_err, fd_in;
	const char *in_data;
	size_t in_left;
	struct exec_wire *wire; /* exec_stream, or NULL */
	int exited, reaped, term_sent, killed;
	uint64_t start, deadline, kill_at, drain_until, probe_at;
	int status;
};

/*
 * Read what a pipe has into s, or as a frame of type `type` on the wire;
 * closes and sets *fd to -1 at EOF. A frame is read straight into the
 * wire's empty output buffer behind its header: under TCG every copy in the
 * guest costs, and this one bought nothing.
 */
static void
pipe_read(int *fd, struct exec_stream *s, size_t max, uint8_t *chunk,
    struct exec_wire *w, uint8_t type)
{
	ssize_t n;

	if (w != NULL) {
		/* On the wire a frame is exactly 64 KiB with its header, so
		 * sends end in step with the bridge's credit windows (no
		 * sliver packets). */
		if (w->out.len != 0)
			fatalx("pipe_read: wire output not empty"); /* can't */
		buf_reserve(&w->out, READ_CHUNK);
		n = read(*fd, w->out.data + VMUX_ATTACH_HDR,
		    READ_CHUNK - VMUX_ATTACH_HDR);
		if (n > 0) {
			vmux_attach_header(w->out.data, type, (uint32_t)n);
			w->out.len = VMUX_ATTACH_HDR + (size_t)n;
		}
	} else if ((n = read(*fd, chunk, READ_CHUNK)) > 0)
		stream_add(s, chunk, (size_t)n, max);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
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

/* Send what the wire has queued, without waiting. */
static void
wire_send(struct exec_wire *w)
{
	ssize_t n = send(w->fd, w->out.data + w->out_off,
	    w->out.len - w->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);

	if (n > 0) {
		w->out_off += (size_t)n; /* no memmove per partial send */
		if (w->out_off == w->out.len)
			w->out.len = w->out_off = 0;
	} else if (n < 0 && errno != EAGAIN && errno != EINTR)
		w->gone = 1;
}

/*
 * Act on the client's frames in w->in up to the next STDIN frame, which
 * becomes the command's pending input (x->in_data). Unknown types are
 * skipped; a broken frame ends the stream.
 */
static void
wire_frames(struct exec_run *x, struct exec_wire *w)
{
	uint8_t type;
	uint32_t len;
	ssize_t size;
	char name[32];
	int sig;

	while (x->in_left == 0 && w->in_frame == 0) {
		size = vmux_attach_parse(w->in.data, w->in.len, &type, &len);
		if (size < 0) {
			w->gone = 1;
			return;
		}
		if (size == 0)
			return;
		if (type == VMUX_EXEC_STDIN && x->fd_in >= 0 && len > 0) {
			x->in_data = (const char *)w->in.data + VMUX_ATTACH_HDR;
			x->in_left = len;
			w->in_frame = (size_t)size;
			return;
		}
		if (type == VMUX_EXEC_STDIN_EOF)
			w->stdin_eof = 1;
		else if (type == VMUX_ATTACH_SIGNAL && len < sizeof name) {
			memcpy(name, w->in.data + VMUX_ATTACH_HDR, len);
			name[len] = '\0';
			if ((sig = signame_parse(name)) > 0 && !x->reaped)
				kill(-x->pid, sig);
		}
		buf_drain(&w->in, (size_t)size);
	}
}

/* Stdin took what was pending: drop that frame, take the next, and close
 * stdin once STDIN_EOF came and nothing is left to write. */
static void
wire_stdin_done(struct exec_run *x, struct exec_wire *w)
{
	if (w->in_frame != 0) {
		buf_drain(&w->in, w->in_frame);
		w->in_frame = 0;
	}
	wire_frames(x, w);
	if (x->in_left == 0 && w->stdin_eof && x->fd_in >= 0) {
		close(x->fd_in);
		x->fd_in = -1;
	}
}

/* Read the client's bytes (only while stdin has nothing pending). */
static void
wire_read(struct exec_run *x, struct exec_wire *w, uint8_t *chunk)
{
	ssize_t n = recv(w->fd, chunk, READ_CHUNK, MSG_DONTWAIT);

	if (n > 0) {
		buf_add(&w->in, chunk, (size_t)n);
		wire_stdin_done(x, w);
	} else if (n == 0 || (errno != EAGAIN && errno != EINTR))
		w->gone = 1;
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
	struct exec_wire *wire = x->wire;
	int room; /* the wire can take another output chunk */
	uint64_t now;
	ssize_t wr;

	for (;;) {
		now = mono_ms();
		/* A reader that lags is no daemon holding the pipes. */
		if (wire != NULL && x->reaped && wire->out.len > 0)
			x->drain_until = now + EXEC_DRAIN_MS;
		if (run_step(x, res, now))
			break;
		if (wire != NULL && wire->gone && !res->cancelled) {
			res->cancelled = 1;
			run_terminate(x, now);
		}
		room = wire == NULL || (wire->out.len == 0 && !wire->gone);
		n = 0;
		idx_out = idx_err = idx_in = idx_pid = idx_cancel = -1;
		if (x->fd_out >= 0 && room) {
			pfd[idx_out = n++] =
			    (struct pollfd){x->fd_out, POLLIN, 0};
		}
		if (x->fd_err >= 0 && room) {
			pfd[idx_err = n++] =
			    (struct pollfd){x->fd_err, POLLIN, 0};
		}
		if (x->fd_in >= 0 && x->in_left > 0)
			pfd[idx_in = n++] =
			    (struct pollfd){x->fd_in, POLLOUT, 0};
		if (x->pidfd >= 0 && !x->exited)
			pfd[idx_pid = n++] =
			    (struct pollfd){x->pidfd, POLLIN, 0};
		if (wire != NULL && !wire->gone) {
			short ev = wire->out.len > 0 ? POLLOUT : 0;

			if (x->in_left == 0 && wire->in_frame == 0 &&
			    !x->reaped)
				ev |= POLLIN;
			pfd[idx_cancel = n++] =
			    (struct pollfd){wire->fd, ev, 0};
		} else if (cancel_fd >= 0 && !x->reaped && wire == NULL)
			pfd[idx_cancel = n++] =
			    (struct pollfd){cancel_fd, 0, 0};

		timeout = -1;
		if (!x->exited && !x->term_sent)
			until(&timeout, now, x->deadline);
		if (x->term_sent && !x->killed)
			until(&timeout, now, x->kill_at);
		if (x->reaped)
			until(&timeout, now, x->drain_until);
		if (cancel_fd >= 0 && !x->reaped && wire == NULL)
			until(&timeout, now, x->probe_at);
		if (x->pidfd < 0 && !x->exited)
			until(&timeout, now, now + 20);
		if (poll(pfd, (nfds_t)n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			fatal("exec poll");
		}
		now = mono_ms();

		if (wire != NULL && idx_cancel >= 0) {
			if (pfd[idx_cancel].revents & POLLOUT)
				wire_send(wire);
			if (pfd[idx_cancel].revents & (POLLIN | POLLHUP))
				wire_read(x, wire, chunk);
			if (pfd[idx_cancel].revents & POLLERR)
				wire->gone = 1;
			idx_cancel =
			    -1; /* no probing: the stream shows a hang-up */
		}
		if (idx_out >= 0 && pfd[idx_out].revents != 0)
			pipe_read(&x->fd_out, &res->out, spec->max_output,
			    chunk, wire, VMUX_EXEC_STDOUT);
		if (idx_err >= 0 && pfd[idx_err].revents != 0 &&
		    (wire == NULL || wire->out.len == 0))
			pipe_read(&x->fd_err, &res->err, spec->max_output,
			    chunk, wire, VMUX_EXEC_STDERR);
		if (wire != NULL && wire->out.len > 0)
			wire_send(wire);
		if (idx_in >= 0 && pfd[idx_in].revents != 0) {
			wr = write(x->fd_in, x->in_data, x->in_left);
			if (wr > 0) {
				x->in_data += wr;
				x->in_left -= (size_t)wr;
			}
			if (wr < 0 && errno != EAGAIN && errno != EINTR) {
				close(x->fd_in); /* the command closed it */
				x->fd_in = -1;
				x->in_left = 0;
			}
			if (x->wire != NULL && x->in_left == 0)
				wire_stdin_done(x, x->wire);
			else if (x->wire == NULL && x->in_left == 0 &&
			    x->fd_in >= 0) {
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
	if (spec->stdin_data == NULL && !spec->stream) {
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
	if (spec->stdin_len == 0 && !spec->stream) {
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
	struct exec_wire wire;
	struct spawn sp;
	int out[2] = {-1, -1}, err[2] = {-1, -1}, in_child = -1, sig, rc = -1;
	int fail_errno = 0;
	char **envp, *path = NULL, line[64];
	uint8_t exitf[VMUX_ATTACH_HDR + VMUX_EXEC_EXIT_LEN];

	memset(res, 0, sizeof *res);
	memset(&x, 0, sizeof x);
	memset(&wire, 0, sizeof wire);
	x.fd_in = x.fd_out = x.fd_err = x.pidfd = -1;
	envp = env_build(spec->env, exec_env_defaults);
	if ((path = path_resolve(spec->argv[0], envp, cause)) == NULL) {
		res->not_run = 127;
		goto out;
	}
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		goto out;
	}
	if (open_stdin(spec, &in_child, &x.fd_in, cause) < 0)
		goto out;

	memset(&sp, 0, sizeof sp);
	if (spec->user != NULL) {
		if (image_user_parse(spec->user, &sp.uid, &sp.gid, cause) !=
		    0) {
			res->not_run = 126;
			goto out;
		}
		sp.has_user = 1;
	}
	sp.path = path;
	sp.argv = spec->argv;
	sp.envp = envp;
	sp.cwd = spec->cwd != NULL ? spec->cwd : default_cwd();
	sp.fd_in = in_child;
	sp.fd_out = out[1];
	sp.fd_err = err[1];
	sp.fail_errno = &fail_errno;
	x.start = mono_ms();
	if ((x.pid = spawn_start(&sp, cause)) < 0) {
		/* as a shell says: 127 not found, 126 found but not run */
		res->not_run = fail_errno == ENOENT ? 127 : 126;
		goto out;
	}
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

	if (spec->stream) {
		/* It runs: the answer line, then frames both ways. */
		wire.fd = spec->cancel_fd;
		x.wire = &wire;
		snprintf(line, sizeof line, "{\"pid\":%d}\n", (int)x.pid);
		if (agent_send_all(wire.fd, line, strlen(line)) != 0)
			wire.gone = 1;
	}
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
	if (spec->stream && !wire.gone) {
		vmux_attach_header(exitf, VMUX_EXEC_EXIT, VMUX_EXEC_EXIT_LEN);
		vmux_put_u32(exitf + VMUX_ATTACH_HDR, (uint32_t)res->exit_code);
		vmux_put_u32(
		    exitf + VMUX_ATTACH_HDR + 4, (uint32_t)res->signal);
		exitf[VMUX_ATTACH_HDR + 8] = (uint8_t)res->timed_out;
		buf_add(&wire.out, exitf, sizeof exitf);
		agent_send_all(wire.fd, wire.out.data + wire.out_off,
		    wire.out.len - wire.out_off);
	}
	rc = 0;
out:
	buf_free(&wire.out);
	buf_free(&wire.in);
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
