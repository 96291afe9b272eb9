/*
 * loop.c: the bridge's event loop; owns every file descriptor.
 *
 * One epoll set: a signalfd (SIGTERM/SIGINT), the two listening sockets,
 * the vhost-user connection, the rings' kick eventfds, clients still sending
 * their CONNECT line ("pending", at most BRIDGE_MAX_PENDING, each with a
 * deadline) and the sockets the vsock engine owns (edge-triggered; the
 * engine remembers readiness). Each fd has a slot with its kind and a
 * generation that is also in the epoll data, so an event for an fd closed
 * and reused within one epoll_wait batch is recognised and dropped.
 * Kick fds are shared with QEMU, so they are removed from epoll before they
 * are closed (closing ours alone would not remove them).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/common.h"
#include "bridge.h"

enum kind {
	K_NONE,
	K_SIGNAL,
	K_VHU_LISTEN,
	K_UDS_LISTEN,
	K_VHU,
	K_KICK,
	K_CLIENT,
	K_SOCK,
};

struct slot {
	uint8_t kind;
	uint8_t arg;  /* ring index for K_KICK */
	uint32_t gen; /* 24 bits used */
};

struct bridge {
	struct bridge_cfg cfg;
	int ep, sigfd, vhu_listen, uds_listen;
	int spare;   /* a reserved fd, given up to refuse clients at EMFILE */
	int fd_high; /* sockets get fds below this, the rest is for QEMU's */
	int made_vhu, made_uds; /* we created these paths */
	int connected;          /* QEMU connected at least once */
	int vhu_up;
	struct vhu vhu;
	struct vsock *vs;
	struct slot *slots;
	int nslots;
	uint32_t gen;
	int pending[BRIDGE_MAX_PENDING];
	uint64_t pending_deadline[BRIDGE_MAX_PENDING];
	int npending;
	int quit, status;
	uint64_t last_activity; /* for mem_trim */
	unsigned since_trim;    /* chains processed since the last trim */
};

#define SOCK_EVENTS (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)

/* The slot for fd, growing the table. */
static struct slot *
slot(struct bridge *b, int fd)
{
	if (fd >= b->nslots) {
		int n = b->nslots ? b->nslots : 64;

		while (n <= fd)
			n *= 2;
		b->slots = xreallocarray(b->slots, (size_t)n, sizeof *b->slots);
		memset(b->slots + b->nslots, 0,
		    (size_t)(n - b->nslots) * sizeof *b->slots);
		b->nslots = n;
	}
	return &b->slots[fd];
}

/* epoll data for fd as kind, with a fresh generation. */
static uint64_t
tag(struct bridge *b, int fd, enum kind kind, int arg)
{
	struct slot *s = slot(b, fd);

	s->kind = (uint8_t)kind;
	s->arg = (uint8_t)arg;
	s->gen = ++b->gen & 0xffffff;
	return ((uint64_t)kind << 56) | ((uint64_t)s->gen << 32) | (uint32_t)fd;
}

/* Add fd to the epoll set as kind. */
static int
watch(struct bridge *b, int fd, enum kind kind, int arg, uint32_t events)
{
	struct epoll_event ev = {.events = events};

	ev.data.u64 = tag(b, fd, kind, arg);
	if (epoll_ctl(b->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
		log_debug(
		    "%s: epoll add %d: %s", __func__, fd, strerror(errno));
		slot(b, fd)->kind = K_NONE;
		return -errno;
	}
	return 0;
}

/* Remove fd from the epoll set (it is not closed). */
static void
unwatch(struct bridge *b, int fd)
{
	epoll_ctl(b->ep, EPOLL_CTL_DEL, fd, NULL);
	slot(b, fd)->kind = K_NONE;
}

/* vsock_ops: read from a socket into guest memory. */
static ssize_t
op_readv(void *arg, int id, const struct iovec *iov, int n)
{
	ssize_t r = readv(id, iov, n);

	(void)arg;
	return r < 0 ? -errno : r;
}

/* vsock_ops: write to a socket, never blocking, never SIGPIPE. */
static ssize_t
op_writev(void *arg, int id, const struct iovec *iov, int n)
{
	struct msghdr mh = {0};
	ssize_t r;

	(void)arg;
	mh.msg_iov = (struct iovec *)iov;
	mh.msg_iovlen = (size_t)n;
	r = sendmsg(id, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	return r < 0 ? -errno : r;
}

/* vsock_ops: a guest connects to host port: connect to <uds>_<port>. */
static int
op_open(void *arg, uint32_t port)
{
	struct bridge *b = arg;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, r;

	r = snprintf(
	    sa.sun_path, sizeof sa.sun_path, "%s_%u", b->cfg.uds_path, port);
	if (r < 0 || (size_t)r >= sizeof sa.sun_path)
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (fd >= b->fd_high) {
		close(fd);
		return -EMFILE;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		r = -errno;
		close(fd);
		return r;
	}
	r = watch(b, fd, K_SOCK, 0, SOCK_EVENTS);
	if (r != 0) {
		close(fd);
		return r;
	}
	log_debug("%s: guest connected to %s", __func__, sa.sun_path);
	return fd;
}

/* vsock_ops: the guest will send nothing more. */
static void
op_shutdown_wr(void *arg, int id)
{
	(void)arg;
	shutdown(id, SHUT_WR);
}

/* vsock_ops: done with a socket. */
static void
op_close(void *arg, int id)
{
	struct bridge *b = arg;

	unwatch(b, id);
	close(id);
}

static const struct vsock_ops sock_ops = {
    op_readv,
    op_writev,
    op_open,
    op_shutdown_wr,
    op_close,
};

/* vhu_ops: watch the new kick fd of ring idx instead of the old one. */
static void
kick_changed(void *arg, int idx, int oldfd, int newfd)
{
	struct bridge *b = arg;

	if (oldfd >= 0)
		unwatch(b, oldfd);
	if (newfd >= 0)
		watch(b, newfd, K_KICK, idx, EPOLLIN);
}

static const struct vhu_ops dev_ops = {kick_changed};

/* A listening Unix socket at path, replacing a stale socket there. */
static int
listen_at(const char *path, int backlog, char **cause)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	int fd;

	if (strlen(path) >= sizeof sa.sun_path) {
		xasprintf(cause, "socket path too long: %s", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			xasprintf(cause, "%s exists and is not a socket", path);
			return -1;
		}
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		xasprintf(cause, "socket: %s", strerror(errno));
		return -1;
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
	    listen(fd, backlog) != 0) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Hundreds of connections need more than 1024 fds: raise the soft limit
 * towards the hard one. Returns the fd number clients must stay below, so
 * that fds QEMU sends (kick, call, memory) always fit.
 */
static int
raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 1024 - BRIDGE_FD_RESERVE;
	if (rl.rlim_cur < 4096 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur > 1 << 20)
		rl.rlim_cur = 1 << 20;
	return (int)rl.rlim_cur - BRIDGE_FD_RESERVE;
}

/*
 * Create the signalfd and both listening sockets. NULL with *cause on
 * failure (nothing left behind).
 */
struct bridge *
bridge_open(const struct bridge_cfg *cfg, char **cause)
{
	struct bridge *b = xcalloc(1, sizeof *b);
	struct vsock_cfg vc = {0};
	sigset_t set;

	b->cfg = *cfg;
	b->ep = b->sigfd = b->vhu_listen = b->uds_listen = b->spare = -1;
	vhu_init(&b->vhu, -1, cfg->guest_cid, &dev_ops, b);
	if (strlen(cfg->uds_path) + sizeof "_4294967295" >
	    sizeof(((struct sockaddr_un *)0)->sun_path)) {
		xasprintf(cause, "socket path too long: %s", cfg->uds_path);
		goto fail;
	}
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	b->fd_high = raise_fd_limit();
	b->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	b->ep = epoll_create1(EPOLL_CLOEXEC);
	b->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (b->ep < 0 || b->sigfd < 0) {
		xasprintf(cause, "epoll/signalfd: %s", strerror(errno));
		goto fail;
	}
	b->vhu_listen = listen_at(cfg->vhu_path, 1, cause);
	if (b->vhu_listen < 0)
		goto fail;
	b->made_vhu = 1;
	b->uds_listen = listen_at(cfg->uds_path, 128, cause);
	if (b->uds_listen < 0)
		goto fail;
	b->made_uds = 1;
	if (watch(b, b->sigfd, K_SIGNAL, 0, EPOLLIN) != 0 ||
	    watch(b, b->vhu_listen, K_VHU_LISTEN, 0, EPOLLIN) != 0 ||
	    watch(b, b->uds_listen, K_UDS_LISTEN, 0, EPOLLIN) != 0) {
		xasprintf(cause, "epoll: %s", strerror(errno));
		goto fail;
	}
	vc.guest_cid = cfg->guest_cid;
	vc.connect_timeout_ms = cfg->connect_timeout_ms;
	vc.allow = cfg->allow;
	vc.nallow = cfg->nallow;
	b->vs = vsock_new(&vc, &sock_ops, b);
	log_debug("%s: listening on %s and %s", __func__, cfg->vhu_path,
	    cfg->uds_path);
	return b;
fail:
	bridge_close(b);
	return NULL;
}

/* Remove a pending client by index and close it (zero bytes written). */
static void
drop_pending(struct bridge *b, int i, int close_it)
{
	int fd = b->pending[i];

	b->npending--;
	b->pending[i] = b->pending[b->npending];
	b->pending_deadline[i] = b->pending_deadline[b->npending];
	if (close_it) {
		unwatch(b, fd);
		close(fd);
	}
}

/* Index of pending client fd, or -1. */
static int
find_pending(struct bridge *b, int fd)
{
	for (int i = 0; i < b->npending; i++) {
		if (b->pending[i] == fd)
			return i;
	}
	return -1;
}

/* A pending client sent something: look for its CONNECT line. */
static void
client_input(struct bridge *b, int fd, uint32_t events, uint64_t now)
{
	char buf[CONNECT_MAX_LINE];
	struct epoll_event ev = {.events = SOCK_EVENTS};
	size_t linelen = 0;
	uint32_t port = 0;
	ssize_t n;
	int i = find_pending(b, fd), r;

	if (i < 0)
		return;
	n = recv(fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	r = n > 0 ? connect_parse(buf, (size_t)n, &port, &linelen)
	          : CONNECT_BAD;
	if (r == CONNECT_MORE && !(events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
		return;
	if (r != CONNECT_DONE) {
		log_debug("%s: bad CONNECT line on %d", __func__, fd);
		drop_pending(b, i, 1);
		return;
	}
	if (recv(fd, buf, linelen, MSG_DONTWAIT) != (ssize_t)linelen) {
		drop_pending(b, i, 1);
		return;
	}
	drop_pending(b, i, 0);
	if (vsock_connect(b->vs, fd, port, now) != 0) {
		log_debug("%s: no room for another connection", __func__);
		unwatch(b, fd);
		close(fd);
		return;
	}
	ev.data.u64 = tag(b, fd, K_SOCK, 0);
	if (epoll_ctl(b->ep, EPOLL_CTL_MOD, fd, &ev) != 0)
		vsock_sock_event(b->vs, fd, VSOCK_EV_ERR, now);
	log_debug("%s: CONNECT %u on %d", __func__, port, fd);
}

/* Accept every waiting client on the hybrid-vsock socket. */
static void
accept_clients(struct bridge *b, uint64_t now)
{
	for (;;) {
		int fd = accept4(
		    b->uds_listen, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0 && (errno == EINTR || errno == ECONNABORTED))
			continue;
		if (fd < 0 && (errno == EMFILE || errno == ENFILE) &&
		    b->spare >= 0) {
			/* Out of fds: refuse this client rather than spin. */
			close(b->spare);
			fd = accept4(b->uds_listen, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0)
				close(fd);
			b->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
			log_debug("%s: out of file descriptors", __func__);
			if (fd < 0)
				return;
			continue;
		}
		if (fd < 0)
			return;
		if (fd >= b->fd_high || b->npending == BRIDGE_MAX_PENDING ||
		    watch(b, fd, K_CLIENT, 0, EPOLLIN | EPOLLRDHUP | EPOLLET) !=
		        0) {
			close(fd);
			continue;
		}
		b->pending[b->npending] = fd;
		b->pending_deadline[b->npending] = now + b->cfg.line_timeout_ms;
		b->npending++;
		client_input(b, fd, 0, now);
	}
}

/* QEMU connects: the one vhost-user session of this bridge's life. */
static void
accept_vhu(struct bridge *b)
{
	int fd = accept4(b->vhu_listen, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return;
	if (b->vhu_up) {
		close(fd);
		return;
	}
	b->vhu.fd = fd;
	b->vhu_up = b->connected = 1;
	watch(b, fd, K_VHU, 0, EPOLLIN);
	unwatch(b, b->vhu_listen);
	close(b->vhu_listen);
	b->vhu_listen = -1;
	log_debug("%s: QEMU connected", __func__);
}

/* One vhost-user message; the end of the session ends the bridge. */
static void
vhu_input(struct bridge *b)
{
	int r = vhu_dispatch(&b->vhu);

	if (r != 0) {
		log_debug(
		    "%s: vhost-user session over: %s", __func__, strerror(-r));
		b->quit = 1;
		b->status = r == -EPIPE || r == -ECONNRESET ? 0 : 1;
		return;
	}
	if (b->vhu.reset) {
		log_debug("%s: device reset, dropping connections", __func__);
		b->vhu.reset = 0;
		vsock_reset(b->vs);
	}
}

/* Dispatch one epoll event. */
static void
event(struct bridge *b, const struct epoll_event *ev, uint64_t now)
{
	enum kind kind = (enum kind)(ev->data.u64 >> 56);
	uint32_t gen = (ev->data.u64 >> 32) & 0xffffff;
	int fd = (int)(uint32_t)ev->data.u64;
	struct slot *s = slot(b, fd);
	unsigned bits = 0;

	if (s->kind != kind || s->gen != gen)
		return; /* stale: fd closed (and maybe reused) meanwhile */
	switch (kind) {
	case K_SIGNAL: {
		struct signalfd_siginfo si;

		if (read(fd, &si, sizeof si) == sizeof si) {
			log_debug("%s: signal %u", __func__, si.ssi_signo);
			b->quit = 1;
		}
		break;
	}
	case K_VHU_LISTEN:
		accept_vhu(b);
		break;
	case K_UDS_LISTEN:
		accept_clients(b, now);
		break;
	case K_VHU:
		vhu_input(b);
		break;
	case K_KICK: {
		uint64_t v;

		if (s->arg < VHU_NQUEUES && b->vhu.vq[s->arg].kick == fd &&
		    read(fd, &v, sizeof v) < 0)
			log_debug(
			    "%s: kick read: %s", __func__, strerror(errno));
		break;
	}
	case K_CLIENT:
		client_input(b, fd, ev->events, now);
		break;
	case K_SOCK:
		if (ev->events & (EPOLLIN | EPOLLRDHUP))
			bits |= VSOCK_EV_IN;
		if (ev->events & EPOLLOUT)
			bits |= VSOCK_EV_OUT;
		if (ev->events & EPOLLHUP)
			bits |= VSOCK_EV_HUP;
		if (ev->events & EPOLLERR)
			bits |= VSOCK_EV_ERR;
		vsock_sock_event(b->vs, fd, bits, now);
		break;
	default:
		break;
	}
}

/* Milliseconds to sleep until the next deadline (-1: none). */
static int
next_timeout(struct bridge *b, uint64_t now)
{
	uint64_t d = vsock_deadline(b->vs);

	for (int i = 0; i < b->npending; i++) {
		if (d == 0 || b->pending_deadline[i] < d)
			d = b->pending_deadline[i];
	}
	if (b->since_trim > 0) {
		uint64_t t = b->last_activity + BRIDGE_TRIM_IDLE_MS;

		if (d == 0 || t < d)
			d = t;
	}
	if (d == 0)
		return -1;
	if (d <= now)
		return 0;
	return d - now > 60000 ? 60000 : (int)(d - now);
}

/*
 * Keep guest pages out of our RSS: after a quiet second, or every few
 * hundred chains while busy (each chain touches a page or two of guest
 * memory; refaulting them costs little next to moving the data).
 */
static void
maybe_trim(struct bridge *b, uint64_t now)
{
	if (b->since_trim == 0)
		return;
	if (b->since_trim < BRIDGE_TRIM_CHAINS &&
	    now - b->last_activity < BRIDGE_TRIM_IDLE_MS)
		return;
	mem_trim(&b->vhu.mem);
	b->since_trim = 0;
}

/* Run until QEMU goes away or a signal; the exit status. */
int
bridge_run(struct bridge *b)
{
	struct epoll_event evs[64];
	int busy = 0;

	while (!b->quit) {
		uint64_t now = mono_ms();
		int n, timeout = busy ? 0 : next_timeout(b, now);

		n = epoll_wait(b->ep, evs, (int)nitems(evs), timeout);
		if (n < 0 && errno != EINTR)
			fatal("epoll_wait");
		now = mono_ms();
		for (int i = 0; i < n && !b->quit; i++)
			event(b, &evs[i], now);
		if (b->quit)
			break;
		vsock_tick(b->vs, now);
		for (int i = b->npending - 1; i >= 0; i--) {
			if (b->pending_deadline[i] <= now)
				drop_pending(b, i, 1);
		}
		busy = 0;
		if (b->vhu_up) {
			uint16_t rx = b->vhu.vq[0].last_avail;
			uint16_t tx = b->vhu.vq[1].last_avail;

			/* small batches: mem_trim keeps up with them */
			busy |= pump_tx(&b->vhu, b->vs, now, BRIDGE_BATCH);
			busy |= pump_rx(&b->vhu, b->vs, now, BRIDGE_BATCH);
			rx = (uint16_t)(b->vhu.vq[0].last_avail - rx);
			tx = (uint16_t)(b->vhu.vq[1].last_avail - tx);
			if (rx + tx > 0) {
				b->last_activity = now;
				b->since_trim += rx + tx;
			}
			maybe_trim(b, now);
		}
	}
	return b->status;
}

/* Close everything, unlink our sockets, free b. */
void
bridge_close(struct bridge *b)
{
	if (b == NULL)
		return;
	while (b->npending > 0)
		drop_pending(b, 0, 1);
	if (b->vs != NULL) {
		struct vsock_stats *st = &b->vs->stats;

		log_debug("%s: %lu packets from the guest, %lu to it, %lu "
		          "dropped, %lu RSTs dropped, %lu overruns, %lu bad "
		          "chains",
		    __func__, st->tx_pkts, st->rx_pkts, st->dropped,
		    st->rsts_dropped, st->overruns,
		    b->vhu.vq[0].nbad + b->vhu.vq[1].nbad);
	}
	vsock_free(b->vs);
	b->vs = NULL;
	vhu_free(&b->vhu);
	if (b->vhu_listen >= 0)
		close(b->vhu_listen);
	if (b->uds_listen >= 0)
		close(b->uds_listen);
	if (b->made_vhu)
		unlink(b->cfg.vhu_path);
	if (b->made_uds)
		unlink(b->cfg.uds_path);
	if (b->sigfd >= 0)
		close(b->sigfd);
	if (b->spare >= 0)
		close(b->spare);
	if (b->ep >= 0)
		close(b->ep);
	free(b->slots);
	free(b);
}
