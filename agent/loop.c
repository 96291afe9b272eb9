/*
 * loop.c: the agent's event loop.
 *
 * One thread, one poll(2) per pass over: the listener, a signalfd (SIGTERM,
 * SIGINT), every connection that is not an exec, and every shell's PTY
 * master and pidfd. Nothing here blocks: sockets and PTYs are non-blocking,
 * replies are buffered per connection, shell output goes into rings. Objects
 * are only marked dead while a pass handles events and freed at its end, so
 * the pass never touches freed memory. The loop owns every conn and shell;
 * exec connections leave it for their own thread (exec_serve.c).
 */
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

#define ACCEPT_BATCH    64
#define READ_CHUNK      65536
#define PIDFD_POLL_MS   20
#define ATTACH_PROBE_MS 5000

enum ref_kind { REF_LISTEN, REF_SIGNAL, REF_CONN, REF_PTY, REF_PIDFD };
struct pollref {
	enum ref_kind kind;
	void *ptr;
};
struct pollset {
	struct pollfd *pfd;
	struct pollref *ref;
	size_t n, cap;
};

static uint64_t accept_paused_until;

/* Add one fd to the poll set. */
static void
pollset_add(
    struct pollset *ps, int fd, short events, enum ref_kind kind, void *ptr)
{
	if (ps->n == ps->cap) {
		ps->cap = ps->cap ? ps->cap * 2 : 64;
		ps->pfd = xreallocarray(ps->pfd, ps->cap, sizeof *ps->pfd);
		ps->ref = xreallocarray(ps->ref, ps->cap, sizeof *ps->ref);
	}
	ps->pfd[ps->n] = (struct pollfd){fd, events, 0};
	ps->ref[ps->n] = (struct pollref){kind, ptr};
	ps->n++;
}

/* Close a connection and mark it for freeing. */
void
conn_kill(struct agent *a, struct conn *c)
{
	if (c->state == CONN_DEAD)
		return;
	if (c->is_attach)
		attach_detach(a, c);
	if (c->state == CONN_WAIT && c->wait == WAIT_CLOSE &&
	    c->shell != NULL && c->shell->closer == c)
		c->shell->closer = NULL;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	if (c->is_attach)
		a->nattach--;
	else
		a->nconns--;
	budget_release(c->charged);
	c->charged = 0;
	c->is_attach = 0;
	c->shell = NULL;
	c->state = CONN_DEAD;
}

/* Once a reply is out: close, start streaming, or power off. */
static void
conn_written(struct agent *a, struct conn *c)
{
	c->out.len = c->out_off = 0;
	switch (c->after) {
	case AFTER_ATTACH:
		c->state = CONN_ATTACHED;
		c->deadline = 0;
		attach_read(a, c); /* frames that came with the request */
		if (c->state == CONN_ATTACHED)
			attach_write(a, c);
		return;
	case AFTER_SHUTDOWN:
		shutdown(c->fd, SHUT_WR);
		conn_kill(a, c);
		if (a->opts->poweroff_pid > 0) {
			log_debug("shutdown: SIGUSR2 to pid %d",
			    (int)a->opts->poweroff_pid);
			kill(a->opts->poweroff_pid, SIGUSR2);
		} else
			a->quit = 1;
		return;
	case AFTER_CLOSE:
		shutdown(c->fd, SHUT_WR);
		conn_kill(a, c);
		return;
	}
}

/* Write what is pending of a reply. */
static void
conn_write(struct agent *a, struct conn *c)
{
	ssize_t n;

	while (c->out_off < c->out.len) {
		n = send(c->fd, c->out.data + c->out_off,
		    c->out.len - c->out_off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				conn_kill(a, c);
			return;
		}
		c->out_off += (size_t)n;
		c->deadline = a->now + AGENT_WRITE_TIMEOUT_MS;
	}
	conn_written(a, c);
}

/* Send a JSON reply (deleting obj), then do c->after. */
void
conn_reply(struct agent *a, struct conn *c, cJSON *obj)
{
	size_t len;
	char *line = response_print(obj, &len);

	cJSON_Delete(obj);
	c->out.len = c->out_off = 0;
	buf_add(&c->out, line, len);
	free(line);
	c->state = CONN_WRITE;
	c->wait = WAIT_NONE;
	c->deadline = a->now + AGENT_WRITE_TIMEOUT_MS;
	conn_write(a, c);
}

/* Send {"error": msg, "code": VMUX_E_FAILED} and close. */
void
conn_reply_error(struct agent *a, struct conn *c, const char *msg)
{
	conn_reply_code(a, c, VMUX_E_FAILED, msg);
}

/* Send {"error": msg, "code": code} (a VMUX_E_*) and close. */
void
conn_reply_code(
    struct agent *a, struct conn *c, const char *code, const char *msg)
{
	cJSON *obj = cJSON_CreateObject();

	json_add_str(obj, "error", msg);
	cJSON_AddStringToObject(obj, "code", code);
	c->after = AFTER_CLOSE;
	conn_reply(a, c, obj);
}

/*
 * Clients attached to shells to use them, all told (ping's "attached"):
 * one that only watches (a teacher's wall) does not keep a session from
 * sleeping.
 */
static int
attached(const struct agent *a)
{
	int n = 0;

	for (const struct shell *s = a->shells; s != NULL; s = s->next) {
		if (s->dead)
			continue;
		for (const struct conn *c = s->clients; c != NULL; c = c->snext)
			n += !c->watching;
	}
	return n;
}

/* Act on one parsed request line (the line is already drained from in). */
static void
conn_request(struct agent *a, struct conn *c, struct agent_request *req)
{
	char *cause = NULL;
	cJSON *obj;

	log_debug("request: %s", request_action_name(req->action));
	if (req->action != ACTION_PING)
		activity_touch();
	switch (req->action) {
	case ACTION_EXEC:
	case ACTION_EXEC_STREAM:
		if (exec_serve_start(c->fd, req, &cause) != 0) {
			conn_reply_error(a, c, cause);
			free(cause);
			break;
		}
		c->fd = -1; /* the thread owns it now, and counts itself */
		conn_kill(a, c);
		return;
	case ACTION_EXTRACT_ARCHIVE:
	case ACTION_EXPORT_ARCHIVE:
		/* bytes read past the request line are the archive's */
		if (files_serve_start(
		        c->fd, req, c->in.data, c->in.len, &cause) != 0) {
			conn_reply_error(a, c, cause);
			free(cause);
			break;
		}
		c->fd = -1; /* the thread owns it now, and counts itself */
		conn_kill(a, c);
		return;
	case ACTION_PING:
		conn_reply(a, c,
		    ping_info(a->nshells, exec_serve_active(), attached(a)));
		break;
	case ACTION_RESUMED:
		conn_reply(a, c, resumed_apply(req));
		break;
	case ACTION_SHUTDOWN:
		obj = cJSON_CreateObject();
		cJSON_AddBoolToObject(obj, "ok", 1);
		cJSON_AddBoolToObject(
		    obj, "poweroff", a->opts->poweroff_pid > 0);
		c->after = AFTER_SHUTDOWN;
		conn_reply(a, c, obj);
		break;
	default:
		actions_dispatch(a, c, req);
		break;
	}
	request_free(req);
}

/* Parse the first len bytes of in as the request, keep what follows. */
static void
conn_parse(struct agent *a, struct conn *c, size_t len, size_t skip)
{
	struct agent_request *req;
	char *cause = NULL;

	req = request_parse((const char *)c->in.data, len, &cause);
	buf_drain(&c->in, len + skip);
	if (req == NULL) {
		log_debug("bad request: %s", cause);
		conn_reply_code(a, c, VMUX_E_BAD_REQUEST, cause);
		free(cause);
		return;
	}
	conn_request(a, c, req);
}

/* Read the request line. */
static void
conn_read(struct agent *a, struct conn *c)
{
	size_t limit = VMUX_MAX_REQUEST + 1, want;
	uint8_t *nl;
	ssize_t n;
	char *msg;

	want = limit - c->in.len < READ_CHUNK ? limit - c->in.len : READ_CHUNK;
	buf_reserve(&c->in, want);
	n = read(c->fd, c->in.data + c->in.len, want);
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			conn_kill(a, c);
		return;
	}
	if (n == 0) { /* EOF: what came is the request, newline or not */
		if (c->in.len == 0)
			conn_kill(a, c);
		else
			conn_parse(a, c, c->in.len, 0);
		return;
	}
	nl = memchr(c->in.data + c->in.len, '\n', (size_t)n);
	c->in.len += (size_t)n;
	if (nl != NULL) {
		conn_parse(a, c, (size_t)(nl - c->in.data), 1);
		return;
	}
	if (c->in.len > VMUX_MAX_REQUEST) {
		xasprintf(&msg, "request is over %d bytes", VMUX_MAX_REQUEST);
		c->in.len = 0;
		conn_reply_code(a, c, VMUX_E_BAD_REQUEST, msg);
		free(msg);
	}
}

/* Answer a connection we have no room for, best effort, and close it. */
static void
refuse(int fd, const char *why)
{
	size_t len;
	char *line = response_error(why, &len);
	ssize_t n;

	n = send(fd, line, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	(void)n;
	free(line);
	close(fd);
}

/* Accept new connections. */
static void
do_accept(struct agent *a)
{
	struct sockaddr_storage ss;
	struct conn *c;
	socklen_t len;
	int fd;

	for (int i = 0; i < ACCEPT_BATCH; i++) {
		len = sizeof ss;
		fd = accept4(a->listen_fd, (struct sockaddr *)&ss, &len,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				log_debug("accept: %s", strerror(errno));
				accept_paused_until = a->now + 100;
			}
			return;
		}
		if (!agent_peer_allowed((struct sockaddr *)&ss, len)) {
			/* a guest process through vsock loopback: no answer */
			log_debug("closed a connection from a peer that is not "
			          "the host");
			close(fd);
			continue;
		}
		if (a->nconns + exec_serve_active() + files_serve_active() >=
		    a->opts->max_conns) {
			refuse(fd, "agent busy: too many connections");
			continue;
		}
		c = xcalloc(1, sizeof *c);
		c->fd = fd;
		c->state = CONN_READ;
		c->deadline = a->now + (uint64_t)a->opts->idle_timeout_ms;
		c->next = a->conns;
		a->conns = c;
		a->nconns++;
	}
}

/* SIGTERM or SIGINT: leave the loop. */
static void
do_signal(struct agent *a)
{
	struct signalfd_siginfo si;

	while (read(a->sig_fd, &si, sizeof si) == sizeof si) {
		log_debug("signal %u: exiting", si.ssi_signo);
		a->quit = 1;
	}
}

/* Per-connection timers: idle requests, stalled replies, read waits. */
static void
conn_timers(struct agent *a, struct conn *c)
{
	char *msg;

	if (c->state == CONN_WAIT && c->wait == WAIT_READ) {
		actions_wait_check(a, c);
		return;
	}
	if (c->state == CONN_ATTACHED && c->closing) {
		/* Last frames out, but a client that does not read them
		 * must not keep the connection forever. */
		if (c->deadline == 0 ||
		    c->deadline > a->now + AGENT_WRITE_TIMEOUT_MS)
			c->deadline = a->now + AGENT_WRITE_TIMEOUT_MS;
		else if (a->now >= c->deadline)
			conn_kill(a, c);
		return;
	}
	if (c->state == CONN_ATTACHED) {
		/* A client that stopped sending may be gone (vsock gives no
		 * POLLHUP): probe now and then. */
		if (!c->eof)
			return;
		if (c->deadline == 0)
			c->deadline = a->now + ATTACH_PROBE_MS;
		else if (a->now >= c->deadline) {
			c->deadline = a->now + ATTACH_PROBE_MS;
			if (send(c->fd, "", 0, MSG_NOSIGNAL | MSG_DONTWAIT) <
			        0 &&
			    errno != EAGAIN && errno != EINTR)
				conn_kill(a, c);
		}
		return;
	}
	if (c->deadline == 0 || a->now < c->deadline)
		return;
	if (c->state == CONN_READ) {
		xasprintf(&msg, "no complete request within %d ms",
		    a->opts->idle_timeout_ms);
		conn_reply_code(a, c, VMUX_E_BAD_REQUEST, msg);
		free(msg);
	} else if (c->state == CONN_WRITE)
		conn_kill(a, c);
}

/* Fill the poll set for this pass; returns the poll timeout. */
static int
build_pollset(struct agent *a, struct pollset *ps)
{
	uint64_t next = 0, d;
	short ev;

	ps->n = 0;
	if (a->now >= accept_paused_until)
		pollset_add(ps, a->listen_fd, POLLIN, REF_LISTEN, NULL);
	else
		next = accept_paused_until;
	pollset_add(ps, a->sig_fd, POLLIN, REF_SIGNAL, NULL);
	for (struct shell *s = a->shells; s != NULL; s = s->next) {
		if (s->dead)
			continue;
		if (s->master >= 0 && !s->pty_eof) {
			ev = POLLIN | (s->input.len ? POLLOUT : 0);
			pollset_add(ps, s->master, ev, REF_PTY, s);
		}
		if (!s->exited && s->pidfd >= 0)
			pollset_add(ps, s->pidfd, POLLIN, REF_PIDFD, s);
		if (!s->exited && s->pidfd < 0)
			d = a->now + PIDFD_POLL_MS;
		else
			d = shell_next_deadline(s);
		if (d != 0 && (next == 0 || d < next))
			next = d;
	}
	if (a->norphans > 0 && (next == 0 || a->now + 100 < next))
		next = a->now + 100;
	for (struct conn *c = a->conns; c != NULL; c = c->next) {
		switch (c->state) {
		case CONN_READ:
			ev = POLLIN;
			break;
		case CONN_WRITE:
			ev = POLLOUT;
			break;
		case CONN_WAIT:
			ev = 0;
			break;
		case CONN_ATTACHED:
			ev = (c->input_blocked || c->eof) ? 0 : POLLIN;
			if (attach_wants_write(c))
				ev |= POLLOUT;
			break;
		default:
			continue;
		}
		pollset_add(ps, c->fd, ev, REF_CONN, c);
		if (c->deadline != 0 && (next == 0 || c->deadline < next))
			next = c->deadline;
	}
	if (next == 0)
		return -1;
	return next > a->now ? (int)(next - a->now) : 0;
}

/* Handle one ready connection. */
static void
conn_event(struct agent *a, struct conn *c, short rev)
{
	switch (c->state) {
	case CONN_READ:
		conn_read(a, c);
		break;
	case CONN_WRITE:
		conn_write(a, c);
		break;
	case CONN_WAIT:
		if (rev & (POLLHUP | POLLERR))
			conn_kill(a, c);
		break;
	case CONN_ATTACHED:
		if (rev & (POLLIN | POLLHUP | POLLERR))
			attach_read(a, c);
		if (c->state == CONN_ATTACHED && (rev & (POLLHUP | POLLERR)) &&
		    (c->eof || c->input_blocked))
			conn_kill(a, c); /* both ways closed */
		if (c->state == CONN_ATTACHED && (rev & POLLOUT))
			attach_write(a, c);
		break;
	default:
		break;
	}
}

/* Free what the pass marked dead. */
static void
sweep(struct agent *a)
{
	struct conn **cp = &a->conns, *c;
	struct shell **sp = &a->shells, *s;

	while ((c = *cp) != NULL) {
		if (c->state == CONN_ATTACHED && c->broken)
			conn_kill(a, c);
		if (c->state != CONN_DEAD) {
			cp = &c->next;
			continue;
		}
		*cp = c->next;
		buf_free(&c->in);
		buf_free(&c->out);
		buf_free(&c->ctl);
		free(c->as);
		free(c);
	}
	while ((s = *sp) != NULL) {
		if (!s->dead) {
			sp = &s->next;
			continue;
		}
		*sp = s->next;
		shell_free(s);
	}
}

/* One pass: poll, handle events, run timers, free the dead. */
static void
loop_pass(struct agent *a, struct pollset *ps)
{
	int timeout = build_pollset(a, ps);

	if (poll(ps->pfd, (nfds_t)ps->n, timeout) < 0 && errno != EINTR)
		fatal("poll");
	a->now = mono_ms();
	for (size_t i = 0; i < ps->n; i++) {
		short rev = ps->pfd[i].revents;
		struct shell *s = ps->ref[i].ptr;

		if (rev == 0)
			continue;
		switch (ps->ref[i].kind) {
		case REF_LISTEN:
			do_accept(a);
			break;
		case REF_SIGNAL:
			do_signal(a);
			break;
		case REF_CONN:
			conn_event(a, ps->ref[i].ptr, rev);
			break;
		case REF_PTY:
			if (s->dead)
				break;
			if (rev & POLLOUT)
				shell_write_pty(a, s);
			if (rev & (POLLIN | POLLHUP | POLLERR))
				shell_read_pty(a, s);
			break;
		case REF_PIDFD:
			if (!s->dead)
				shell_check_exit(a, s);
			break;
		}
	}
	for (struct shell *s = a->shells; s != NULL; s = s->next) {
		if (!s->dead && !s->exited && s->pidfd < 0)
			shell_check_exit(a, s);
		if (!s->dead)
			shell_timers(a, s);
	}
	for (struct conn *c = a->conns; c != NULL; c = c->next) {
		if (c->state != CONN_DEAD)
			conn_timers(a, c);
	}
	shell_reap_orphans(a);
	sweep(a);
}

/*
 * Serve on listen_fd until SIGTERM/SIGINT (or shutdown when poweroff_pid is
 * 0). Blocks those signals in the calling thread (and so in every thread it
 * starts). Returns 0; on the way out every shell and running command is
 * killed.
 */
int
agent_serve(int listen_fd, const struct agent_opts *opts)
{
	struct pollset ps = {0};
	struct agent a;
	sigset_t set;

	memset(&a, 0, sizeof a);
	a.opts = opts;
	a.listen_fd = listen_fd;
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);  /* a console hangup must not end us */
	signal(SIGCHLD, SIG_DFL); /* ignored, children would reap themselves */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	a.sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (a.sig_fd < 0)
		fatal("signalfd");
	set_nonblock(listen_fd, 1);
	set_cloexec(listen_fd);
	a.now = mono_ms();

	while (!a.quit)
		loop_pass(&a, &ps);

	for (struct conn *c = a.conns; c != NULL; c = c->next)
		conn_kill(&a, c);
	shell_destroy_all(&a);
	exec_kill_all();
	sweep(&a);
	free(a.orphans);
	free(ps.pfd);
	free(ps.ref);
	close(a.sig_fd);
	return 0;
}
