/*
 * vsock.c: the virtio-vsock connection engine.
 *
 * Pure protocol logic: guest packets come in (vsock_tx, from the tx ring),
 * packets for the guest go out into buffers the caller provides (vsock_rx,
 * from the rx ring), socket readiness and the clock are passed in, and the
 * sockets themselves are reached only through struct vsock_ops. So every
 * path can be driven from a table in a unit test.
 *
 * Memory stays bounded whatever the guest or a client does: at most
 * max_conns connections; per connection only the host-bound bytes a socket
 * would not take (never more than our advertised buf_alloc, or the guest is
 * reset for overrunning it) and an "OK" line; control packets owed to the
 * guest are flag bits on their connection; RSTs for unknown connections sit
 * in a fixed ring and are dropped when it is full. Guest-bound data is read
 * from the socket straight into the guest's rx buffer, never buffered here.
 *
 * A connection has two halves: the guest half (in the port hash until an
 * RST goes either way) and the socket half (until closed). It is freed when
 * both are gone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "proto/attach.h" /* vmux_put_u* */
#include "bridge.h"

#define PEND_REQUEST    0x01
#define PEND_RESPONSE   0x02
#define PEND_RST        0x04
#define PEND_SHUTDOWN   0x08
#define PEND_CREDIT     0x10
#define PEND_CREDIT_REQ 0x20

/* Bucket of a port pair. */
static unsigned
port_hash(uint32_t lport, uint32_t pport)
{
	return ((lport * 2654435761u) ^ (pport * 40503u)) % VSOCK_HASH;
}

/* Bucket of a socket id. */
static unsigned
sock_hash(int sock)
{
	return (unsigned)sock % VSOCK_HASH;
}

/* The live (guest-known) connection for a port pair, or NULL. */
struct vconn *
vsock_find(const struct vsock *vs, uint32_t lport, uint32_t pport)
{
	struct vconn *c;

	for (c = vs->ports[port_hash(lport, pport)]; c != NULL; c = c->pnext) {
		if (c->lport == lport && c->pport == pport)
			return c;
	}
	return NULL;
}

/* The connection owning socket id sock, or NULL. */
static struct vconn *
vsock_find_sock(const struct vsock *vs, int sock)
{
	struct vconn *c;

	for (c = vs->socks[sock_hash(sock)]; c != NULL; c = c->snext) {
		if (c->sock == sock)
			return c;
	}
	return NULL;
}

/* A new engine; cfg->allow is copied. */
struct vsock *
vsock_new(const struct vsock_cfg *cfg, const struct vsock_ops *ops, void *arg)
{
	struct vsock *vs = xcalloc(1, sizeof *vs);

	vs->cfg = *cfg;
	if (vs->cfg.buf_alloc == 0)
		vs->cfg.buf_alloc = VSOCK_BUF_ALLOC;
	if (vs->cfg.max_conns <= 0)
		vs->cfg.max_conns = VSOCK_MAX_CONNS;
	if (vs->cfg.buf_alloc_max == 0)
		vs->cfg.buf_alloc_max = VSOCK_BUF_ALLOC_MAX;
	if (vs->cfg.buf_alloc_max < vs->cfg.buf_alloc)
		vs->cfg.buf_alloc_max = vs->cfg.buf_alloc;
	if (cfg->nallow > 0) {
		vs->allow =
		    xreallocarray(NULL, (size_t)cfg->nallow, sizeof *vs->allow);
		memcpy(vs->allow, cfg->allow,
		    (size_t)cfg->nallow * sizeof *vs->allow);
	}
	vs->cfg.allow = vs->allow;
	vs->ops = ops;
	vs->arg = arg;
	TAILQ_INIT(&vs->all);
	TAILQ_INIT(&vs->active);
	vs->next_port = VSOCK_PORT_MIN;
	return vs;
}

/* Take c out of the port hash. */
static void
unlink_port(struct vsock *vs, struct vconn *c)
{
	struct vconn **pp = &vs->ports[port_hash(c->lport, c->pport)];

	for (; *pp != NULL; pp = &(*pp)->pnext) {
		if (*pp == c) {
			*pp = c->pnext;
			return;
		}
	}
}

/* Take c out of the socket hash. */
static void
unlink_sock(struct vsock *vs, struct vconn *c)
{
	struct vconn **pp = &vs->socks[sock_hash(c->sock)];

	for (; *pp != NULL; pp = &(*pp)->snext) {
		if (*pp == c) {
			*pp = c->snext;
			return;
		}
	}
}

/* A connection for a port pair and socket, known to the guest. */
static struct vconn *
conn_new(struct vsock *vs, uint32_t lport, uint32_t pport, int sock)
{
	struct vconn *c = xcalloc(1, sizeof *c);
	unsigned h;

	c->lport = lport;
	c->pport = pport;
	c->sock = sock;
	c->guest = 1;
	c->readable = c->writable = 1;
	c->buf_alloc = vs->cfg.buf_alloc;
	vs->alloc_total += c->buf_alloc;
	h = port_hash(lport, pport);
	c->pnext = vs->ports[h];
	vs->ports[h] = c;
	h = sock_hash(sock);
	c->snext = vs->socks[h];
	vs->socks[h] = c;
	TAILQ_INSERT_TAIL(&vs->all, c, entry);
	vs->nconns++;
	return c;
}

/* Free a connection whose socket is closed and guest half gone. */
static void
conn_free(struct vsock *vs, struct vconn *c)
{
	if (c->sock >= 0 || c->guest)
		NEVER("freeing a live connection");
	if (c->active)
		TAILQ_REMOVE(&vs->active, c, aentry);
	TAILQ_REMOVE(&vs->all, c, entry);
	vs->nconns--;
	vs->alloc_total -= c->buf_alloc;
	free(c->buf);
	free(c);
}

/* Close the socket half (dropping unsent bytes); 1 if c was freed. */
static int
close_sock(struct vsock *vs, struct vconn *c)
{
	if (c->sock >= 0) {
		unlink_sock(vs, c);
		vs->ops->close(vs->arg, c->sock);
		c->sock = -1;
	}
	free(c->buf);
	c->buf = NULL;
	c->buf_cap = c->buf_off = c->buf_len = 0;
	c->ok_len = c->ok_off = 0;
	if (!c->guest) {
		conn_free(vs, c);
		return 1;
	}
	return 0;
}

/* Forget the guest half (an RST went either way); 1 if c was freed. */
static int
drop_guest(struct vsock *vs, struct vconn *c, uint64_t now)
{
	if (c->guest) {
		unlink_port(vs, c);
		c->guest = 0;
	}
	c->pend = 0;
	if (c->sock < 0) {
		conn_free(vs, c);
		return 1;
	}
	c->deadline = now + VSOCK_LINGER_MS; /* left: flush to the socket */
	return 0;
}

/* Credit the guest gives us for guest-bound data. */
static uint32_t
peer_credit(const struct vconn *c)
{
	uint32_t inflight = c->tx_cnt - c->peer_fwd_cnt;

	if (inflight >= c->peer_buf_alloc)
		return 0;
	return c->peer_buf_alloc - inflight;
}

/* Could we read the socket and send the bytes to the guest now? */
static int
can_send_data(const struct vconn *c)
{
	return c->state == VC_ESTABLISHED && c->sock >= 0 && c->guest &&
	    c->readable && !c->eof && !(c->pend & PEND_RST) &&
	    !(c->peer_shut & VSOCK_SHUT_RCV) &&
	    !(c->shut_sent & VSOCK_SHUT_SEND) && peer_credit(c) > 0;
}

/* Put c on, or take it off, the list of connections with guest work. */
static void
update(struct vsock *vs, struct vconn *c)
{
	int work;

	if (c->state == VC_ESTABLISHED && c->guest && c->sock >= 0 &&
	    c->readable && !c->eof && !(c->peer_shut & VSOCK_SHUT_RCV) &&
	    !(c->shut_sent & VSOCK_SHUT_SEND)) {
		/* Out of credit with bytes waiting: ask once per stall. */
		if (peer_credit(c) == 0 && !c->stalled) {
			c->stalled = 1;
			c->pend |= PEND_CREDIT_REQ;
		} else if (peer_credit(c) > 0)
			c->stalled = 0;
	}
	work = c->guest && (c->pend != 0 || can_send_data(c));
	if (work && !c->active) {
		TAILQ_INSERT_TAIL(&vs->active, c, aentry);
		c->active = 1;
	} else if (!work && c->active) {
		TAILQ_REMOVE(&vs->active, c, aentry);
		c->active = 0;
	}
}

/*
 * Abort: close the socket at once and owe the guest an RST (unless it never
 * heard of the connection). 1 if c was freed.
 */
static int
conn_reset(struct vsock *vs, struct vconn *c, uint64_t now)
{
	c->deadline = 0;
	if (c->guest && (c->pend & PEND_REQUEST)) {
		if (drop_guest(vs, c, now))
			return 1;
	} else if (c->guest)
		c->pend = PEND_RST;
	if (close_sock(vs, c))
		return 1;
	update(vs, c);
	return 0;
}

/*
 * A connection that has carried four windows to a client keeping up is a
 * bulk stream: widen its window to buf_alloc_max (fewer credit round trips
 * and bigger guest packets: guest->host 64 MiB took 0.186 s instead of
 * 0.211 s under TCG), while all windows together stay within max_conns x
 * buf_alloc, the bound on buffered bytes the bridge had before. The guest
 * hears of it in the CREDIT_UPDATE this asks for.
 */
static void
window_grow(struct vsock *vs, struct vconn *c)
{
	uint32_t more = vs->cfg.buf_alloc_max - c->buf_alloc;

	if (more == 0 || c->buf_len > 0 || c->rx_cnt < 4 * c->buf_alloc ||
	    vs->alloc_total + more >
	        (uint64_t)vs->cfg.max_conns * vs->cfg.buf_alloc)
		return;
	c->buf_alloc += more;
	vs->alloc_total += more;
	c->pend |= PEND_CREDIT;
}

/* Ask for a CREDIT_UPDATE when the guest's view of our space runs low. */
static void
credit_check(struct vsock *vs, struct vconn *c)
{
	uint32_t view = c->rx_cnt - c->fwd_reported;

	if (!c->guest || c->state != VC_ESTABLISHED)
		return;
	window_grow(vs, c);
	if (c->fwd_cnt != c->fwd_reported && view >= c->buf_alloc / 2)
		c->pend |= PEND_CREDIT;
}

/*
 * The client closed its socket for good (or it failed): nothing more can
 * be delivered. Tell the guest with SHUTDOWN and give it VSOCK_GRACE_MS to
 * answer with RST. 1 if c was freed.
 */
static int
client_gone(struct vsock *vs, struct vconn *c, uint64_t now)
{
	if (c->state != VC_ESTABLISHED)
		return conn_reset(vs, c, now);
	if (close_sock(vs, c))
		return 1;
	if (!(c->pend & PEND_RST)) {
		c->shut_sent = VSOCK_SHUT_RCV | VSOCK_SHUT_SEND;
		c->pend |= PEND_SHUTDOWN;
		c->deadline = now + VSOCK_GRACE_MS;
	}
	update(vs, c);
	return 0;
}

/*
 * After output drained or a shutdown changed: once the guest sends nothing
 * more and everything is written, half-close the socket for the client, or
 * close it when nothing can come from it either. 1 if c was freed.
 */
static int
finish_sock(struct vsock *vs, struct vconn *c)
{
	int guest_done = !c->guest || (c->pend & PEND_RST) ||
	    (c->peer_shut & VSOCK_SHUT_SEND);

	if (c->sock < 0 || !guest_done || c->buf_len > 0 ||
	    c->ok_off < c->ok_len)
		return 0;
	if (!c->guest || (c->pend & PEND_RST) ||
	    (c->shut_sent & VSOCK_SHUT_SEND))
		return close_sock(vs, c);
	if (!c->shut_wr) {
		c->shut_wr = 1;
		vs->ops->shutdown_wr(vs->arg, c->sock);
	}
	return 0;
}

/* Write what is queued for the socket; 1 if c was freed. */
static int
flush_sock(struct vsock *vs, struct vconn *c, uint64_t now)
{
	while (c->sock >= 0 && c->writable &&
	    (c->ok_off < c->ok_len || c->buf_len > 0)) {
		struct iovec iov[2];
		size_t want, okpart;
		ssize_t n;
		int k = 0;

		okpart = (size_t)(c->ok_len - c->ok_off);
		if (okpart > 0) {
			iov[k].iov_base = c->ok + c->ok_off;
			iov[k++].iov_len = okpart;
		}
		if (c->buf_len > 0) {
			iov[k].iov_base = c->buf + c->buf_off;
			iov[k++].iov_len = c->buf_len;
		}
		want = okpart + c->buf_len;
		n = vs->ops->writev(vs->arg, c->sock, iov, k);
		if (n == -EAGAIN || n == -EINTR) {
			c->writable = 0;
			break;
		}
		if (n < 0)
			return client_gone(vs, c, now);
		if ((size_t)n < want)
			c->writable = 0;
		if ((size_t)n <= okpart)
			c->ok_off += (uint8_t)n;
		else {
			size_t data = (size_t)n - okpart;

			c->ok_off = c->ok_len;
			c->buf_off += (uint32_t)data;
			c->buf_len -= (uint32_t)data;
			c->fwd_cnt += (uint32_t)data;
		}
		if (!c->guest)
			c->deadline = now + VSOCK_LINGER_MS;
	}
	if (c->buf_len == 0 && c->buf != NULL) {
		free(c->buf);
		c->buf = NULL;
		c->buf_cap = c->buf_off = 0;
	}
	if (finish_sock(vs, c))
		return 1;
	credit_check(vs, c);
	update(vs, c);
	return 0;
}

/* Keep len bytes of iov from off for the socket (space was checked). */
static void
buffer_bytes(struct vsock *vs, struct vconn *c, const struct iovec *iov,
    int niov, size_t off, uint32_t len)
{
	uint32_t need = c->buf_len + len;

	if (len == 0)
		return;
	if (c->buf_off + need > c->buf_cap) {
		if (c->buf_off > 0 && c->buf_len > 0)
			memmove(c->buf, c->buf + c->buf_off, c->buf_len);
		c->buf_off = 0;
	}
	if (need > c->buf_cap) {
		uint32_t cap = c->buf_cap ? c->buf_cap * 2 : 4096;

		while (cap < need)
			cap *= 2;
		if (cap > c->buf_alloc)
			cap = c->buf_alloc;
		if (cap < need)
			NEVER("host-bound buffer over buf_alloc");
		c->buf = xrealloc(c->buf, cap);
		c->buf_cap = cap;
	}
	iov_copy_from(iov, niov, off, c->buf + c->buf_off + c->buf_len, len);
	c->buf_len += len;
}

/* An RW packet from the guest; 1 if c was freed. */
static int
guest_rw(struct vsock *vs, struct vconn *c, const struct vsock_hdr *h,
    const struct iovec *iov, int niov, size_t total, uint64_t now)
{
	uint32_t len = h->len, done = 0;

	if (c->state != VC_ESTABLISHED || (c->peer_shut & VSOCK_SHUT_SEND) ||
	    len > total - VSOCK_HDR_LEN) {
		vs->stats.dropped++;
		return conn_reset(vs, c, now);
	}
	if (len > c->buf_alloc - c->buf_len) {
		log_debug("%s: %u:%u overran its credit (%u + %u)", __func__,
		    c->lport, c->pport, c->buf_len, len);
		vs->stats.overruns++;
		return conn_reset(vs, c, now);
	}
	c->rx_cnt += len;
	if (len == 0)
		return 0;
	if (c->sock < 0) {
		c->fwd_cnt += len; /* the client is gone: discard */
		credit_check(vs, c);
		return 0;
	}
	if (c->buf_len == 0 && c->ok_off == c->ok_len && c->writable) {
		struct iovec sub[VRING_MAX_IOV];
		int ns = iov_slice(
		    iov, niov, VSOCK_HDR_LEN, len, sub, VRING_MAX_IOV);
		ssize_t n = vs->ops->writev(vs->arg, c->sock, sub, ns);

		if (n < 0 && n != -EAGAIN && n != -EINTR)
			return client_gone(vs, c, now);
		if (n < 0)
			n = 0;
		if ((uint32_t)n < len)
			c->writable = 0;
		done = (uint32_t)n;
		c->fwd_cnt += done;
	}
	buffer_bytes(vs, c, iov, niov, VSOCK_HDR_LEN + done, len - done);
	credit_check(vs, c);
	return 0;
}

/* The guest sent SHUTDOWN; 1 if c was freed. */
static int
guest_shutdown(struct vsock *vs, struct vconn *c, uint32_t flags, uint64_t now)
{
	if (c->state != VC_ESTABLISHED)
		return conn_reset(vs, c, now);
	c->peer_shut |= flags & (VSOCK_SHUT_RCV | VSOCK_SHUT_SEND);
	if (c->peer_shut == (VSOCK_SHUT_RCV | VSOCK_SHUT_SEND) ||
	    ((c->peer_shut & VSOCK_SHUT_SEND) &&
	        (c->shut_sent & VSOCK_SHUT_SEND))) {
		/* Both directions are over: answer RST, finish the socket. */
		c->pend = PEND_RST;
		c->deadline = 0;
	}
	return finish_sock(vs, c);
}

/* The guest accepted a host-initiated connection. */
static int
guest_response(struct vsock *vs, struct vconn *c, uint64_t now)
{
	int n;

	if (c->state != VC_CONNECTING || (c->pend & PEND_REQUEST))
		return conn_reset(vs, c, now);
	c->state = VC_ESTABLISHED;
	c->deadline = 0;
	n = snprintf(c->ok, sizeof c->ok, "OK %u\n", c->lport);
	c->ok_len = (uint8_t)n;
	c->ok_off = 0;
	return flush_sock(vs, c, now);
}

/* Queue an RST for a packet that matched no connection. */
static void
queue_rst(struct vsock *vs, const struct vsock_hdr *h)
{
	int i;

	if (vs->rst_len == VSOCK_RST_QUEUE) {
		vs->stats.rsts_dropped++;
		return;
	}
	i = (vs->rst_head + vs->rst_len) % VSOCK_RST_QUEUE;
	vs->rst[i].lport = h->dst_port;
	vs->rst[i].pport = h->src_port;
	vs->rst[i].type = h->type;
	vs->rst_len++;
}

/* Is the guest allowed to connect to host port p? */
static int
allowed(const struct vsock *vs, uint32_t p)
{
	for (int i = 0; i < vs->cfg.nallow; i++) {
		if (vs->cfg.allow[i] == p)
			return 1;
	}
	return 0;
}

/* A packet for no known connection. */
static void
guest_unknown(struct vsock *vs, const struct vsock_hdr *h)
{
	struct vconn *c;
	int id;

	if (h->op == VSOCK_OP_RST)
		return; /* never answer RST with RST */
	if (h->op != VSOCK_OP_REQUEST || !allowed(vs, h->dst_port) ||
	    vs->nconns >= vs->cfg.max_conns) {
		queue_rst(vs, h);
		return;
	}
	id = vs->ops->open(vs->arg, h->dst_port);
	if (id < 0) {
		log_debug("%s: host port %u: %s", __func__, h->dst_port,
		    strerror(-id));
		queue_rst(vs, h);
		return;
	}
	c = conn_new(vs, h->dst_port, h->src_port, id);
	c->state = VC_ESTABLISHED;
	c->peer_buf_alloc = h->buf_alloc;
	c->peer_fwd_cnt = h->fwd_cnt;
	c->pend = PEND_RESPONSE;
	update(vs, c);
}

/* One packet the guest sent (a tx chain's readable part). */
void
vsock_tx(struct vsock *vs, const struct iovec *iov, int niov, uint64_t now)
{
	uint8_t raw[VSOCK_HDR_LEN];
	struct vsock_hdr h;
	struct vconn *c;
	size_t total = iov_total(iov, niov);
	int gone = 0;

	vs->stats.tx_pkts++;
	if (total < VSOCK_HDR_LEN) {
		vs->stats.dropped++;
		return;
	}
	iov_copy_from(iov, niov, 0, raw, sizeof raw);
	vsock_hdr_decode(&h, raw);
	if (h.src_cid != vs->cfg.guest_cid || h.dst_cid != VSOCK_HOST_CID) {
		vs->stats.dropped++;
		return;
	}
	c = vsock_find(vs, h.dst_port, h.src_port);
	if (h.type != VSOCK_TYPE_STREAM) {
		if (h.op == VSOCK_OP_RST)
			return;
		if (c != NULL)
			conn_reset(vs, c, now);
		else
			queue_rst(vs, &h);
		return;
	}
	if (c == NULL) {
		guest_unknown(vs, &h);
		return;
	}
	if (h.op == VSOCK_OP_RST) {
		if (!drop_guest(vs, c, now))
			close_sock(vs, c);
		return;
	}
	if (c->pend & PEND_RST)
		return; /* being reset already */
	c->peer_buf_alloc = h.buf_alloc;
	c->peer_fwd_cnt = h.fwd_cnt;
	switch (h.op) {
	case VSOCK_OP_RESPONSE:
		gone = guest_response(vs, c, now);
		break;
	case VSOCK_OP_RW:
		gone = guest_rw(vs, c, &h, iov, niov, total, now);
		break;
	case VSOCK_OP_SHUTDOWN:
		gone = guest_shutdown(vs, c, h.flags, now);
		break;
	case VSOCK_OP_CREDIT_UPDATE:
		break;
	case VSOCK_OP_CREDIT_REQUEST:
		c->pend |= PEND_CREDIT;
		break;
	default: /* REQUEST on a live connection, unknown ops */
		gone = conn_reset(vs, c, now);
		break;
	}
	if (!gone)
		update(vs, c);
}

/* A client sent "CONNECT port": ask the guest. 0 or -errno. */
int
vsock_connect(struct vsock *vs, int sock, uint32_t port, uint64_t now)
{
	struct vconn *c;
	uint32_t lport = 0;

	if (vs->nconns >= vs->cfg.max_conns)
		return -EBUSY;
	for (int tries = 0; tries <= vs->nconns + vs->cfg.nallow; tries++) {
		uint32_t p = vs->next_port;
		int used = allowed(vs, p);

		vs->next_port = p + 1 < VSOCK_PORT_MAX ? p + 1 : VSOCK_PORT_MIN;
		TAILQ_FOREACH(c, &vs->all, entry)
		{
			if (c->lport == p)
				used = 1;
		}
		if (!used) {
			lport = p;
			break;
		}
	}
	if (lport == 0)
		return -EADDRNOTAVAIL;
	c = conn_new(vs, lport, port, sock);
	c->state = VC_CONNECTING;
	c->pend = PEND_REQUEST;
	c->deadline = now + vs->cfg.connect_timeout_ms;
	update(vs, c);
	return 0;
}

/* Readiness of a socket (VSOCK_EV_* bits). */
void
vsock_sock_event(struct vsock *vs, int sock, unsigned ev, uint64_t now)
{
	struct vconn *c = vsock_find_sock(vs, sock);

	if (c == NULL)
		return;
	if (ev & VSOCK_EV_ERR) {
		client_gone(vs, c, now);
		return;
	}
	if (ev & VSOCK_EV_HUP) {
		c->hup = 1;
		if (c->state != VC_ESTABLISHED || c->eof || !c->guest ||
		    (c->pend & PEND_RST) || (c->peer_shut & VSOCK_SHUT_RCV)) {
			/* nothing more to read for the guest */
			client_gone(vs, c, now);
			return;
		}
	}
	if (ev & (VSOCK_EV_IN | VSOCK_EV_HUP))
		c->readable = 1;
	if (ev & VSOCK_EV_OUT) {
		c->writable = 1;
		if (flush_sock(vs, c, now))
			return;
	}
	update(vs, c);
}

/* Write a header for c's next packet into iov. */
static size_t
emit(struct vsock *vs, struct vconn *c, const struct iovec *iov, int niov,
    uint16_t op, uint32_t flags, uint32_t len)
{
	struct vsock_hdr h = {0};
	uint8_t raw[VSOCK_HDR_LEN];

	h.src_cid = VSOCK_HOST_CID;
	h.dst_cid = vs->cfg.guest_cid;
	h.src_port = c->lport;
	h.dst_port = c->pport;
	h.len = len;
	h.type = VSOCK_TYPE_STREAM;
	h.op = op;
	h.flags = flags;
	h.buf_alloc = c->buf_alloc;
	h.fwd_cnt = c->fwd_cnt;
	c->fwd_reported = c->fwd_cnt;
	c->pend &= ~PEND_CREDIT;
	vsock_hdr_encode(raw, &h);
	iov_copy_to(iov, niov, 0, raw, sizeof raw);
	vs->stats.rx_pkts++;
	return VSOCK_HDR_LEN + len;
}

/* Send c to the back of the queue after it produced a packet. */
static void
requeue(struct vsock *vs, struct vconn *c)
{
	if (c->active) {
		TAILQ_REMOVE(&vs->active, c, aentry);
		c->active = 0;
	}
	update(vs, c);
}

/*
 * The next packet from c into iov (space bytes, at least a header). 0 if
 * it produced none: then *again says c is still on the active list and may
 * have something now (a read found EOF, say); else it is off it or freed.
 */
static size_t
conn_rx(struct vsock *vs, struct vconn *c, const struct iovec *iov, int niov,
    size_t space, uint64_t now, int *again)
{
	size_t n;
	uint16_t op = 0;
	uint32_t flags = 0;

	*again = 0;
	if (c->pend & PEND_RST) {
		n = emit(vs, c, iov, niov, VSOCK_OP_RST, 0, 0);
		if (!drop_guest(vs, c, now)) {
			if (finish_sock(vs, c) == 0)
				requeue(vs, c);
		}
		return n;
	}
	if (c->pend & PEND_REQUEST) {
		c->pend &= ~PEND_REQUEST;
		op = VSOCK_OP_REQUEST;
	} else if (c->pend & PEND_RESPONSE) {
		c->pend &= ~PEND_RESPONSE;
		op = VSOCK_OP_RESPONSE;
	} else if (can_send_data(c)) {
		struct iovec sub[VRING_MAX_IOV];
		size_t max = space - VSOCK_HDR_LEN;
		uint32_t credit = peer_credit(c);
		ssize_t r;
		int ns;

		if (max > credit)
			max = credit;
		if (max > VSOCK_MAX_PKT)
			max = VSOCK_MAX_PKT;
		ns = iov_slice(
		    iov, niov, VSOCK_HDR_LEN, max, sub, VRING_MAX_IOV);
		r = max == 0 ? -EAGAIN
		             : vs->ops->readv(vs->arg, c->sock, sub, ns);
		if (r > 0) {
			if ((size_t)r > max)
				NEVER("readv returned more than asked");
			c->tx_cnt += (uint32_t)r;
			n = emit(vs, c, iov, niov, VSOCK_OP_RW, 0, (uint32_t)r);
			requeue(vs, c);
			return n;
		}
		if (r == 0) {
			c->eof = 1;
			if (c->peer_shut & VSOCK_SHUT_SEND) {
				/* both directions over */
				c->pend = PEND_RST;
				c->shut_sent |= VSOCK_SHUT_SEND;
			} else if (c->hup) {
				if (client_gone(vs, c, now))
					return 0;
			} else {
				c->shut_sent |= VSOCK_SHUT_SEND;
				c->pend |= PEND_SHUTDOWN;
			}
		} else if (r == -EAGAIN || r == -EINTR)
			c->readable = 0;
		else if (client_gone(vs, c, now))
			return 0;
		*again = c->active;
		return 0;
	} else if (c->pend & PEND_SHUTDOWN) {
		c->pend &= ~PEND_SHUTDOWN;
		op = VSOCK_OP_SHUTDOWN;
		flags = c->shut_sent;
	} else if (c->pend & PEND_CREDIT) {
		op = VSOCK_OP_CREDIT_UPDATE;
	} else if (c->pend & PEND_CREDIT_REQ) {
		c->pend &= ~PEND_CREDIT_REQ;
		op = VSOCK_OP_CREDIT_REQUEST;
	}
	if (op == 0) {
		update(vs, c);
		*again = c->active;
		return 0;
	}
	n = emit(vs, c, iov, niov, op, flags, 0);
	requeue(vs, c);
	return n;
}

/* Is there anything for the guest's rx queue? */
int
vsock_rx_pending(const struct vsock *vs)
{
	return vs->rst_len > 0 || !TAILQ_EMPTY(&vs->active);
}

/*
 * Fill one guest rx buffer (its writable iovecs) with the next packet.
 * Bytes written (header + payload), or 0 when there is nothing to send or
 * the buffer cannot hold a header (then it was not touched).
 */
size_t
vsock_rx(struct vsock *vs, const struct iovec *iov, int niov, uint64_t now)
{
	size_t space = iov_total(iov, niov), n;
	struct vconn *c;

	if (space < VSOCK_HDR_LEN)
		return 0;
	if (vs->rst_len > 0) {
		struct vconn tmp = {0};
		uint16_t type = vs->rst[vs->rst_head].type;

		tmp.lport = vs->rst[vs->rst_head].lport;
		tmp.pport = vs->rst[vs->rst_head].pport;
		tmp.buf_alloc = vs->cfg.buf_alloc;
		vs->rst_head = (vs->rst_head + 1) % VSOCK_RST_QUEUE;
		vs->rst_len--;
		n = emit(vs, &tmp, iov, niov, VSOCK_OP_RST, 0, 0);
		if (type != VSOCK_TYPE_STREAM) {
			uint8_t t[2];
			vmux_put_u16(t, type);
			iov_copy_to(iov, niov, 28, t, sizeof t);
		}
		return n;
	}
	while ((c = TAILQ_FIRST(&vs->active)) != NULL) {
		int again = 0;

		/* A few rounds: a read can turn into EOF, then SHUTDOWN. */
		for (int round = 0; round < 4; round++) {
			n = conn_rx(vs, c, iov, niov, space, now, &again);
			if (n > 0)
				return n;
			if (!again)
				break;
		}
		if (again) {
			log_debug("%s: %u:%u stuck on the active list",
			    __func__, c->lport, c->pport);
			TAILQ_REMOVE(&vs->active, c, aentry);
			c->active = 0;
		}
	}
	return 0;
}

/* Fire the deadlines that have passed. */
void
vsock_tick(struct vsock *vs, uint64_t now)
{
	struct vconn *c, *next;

	for (c = TAILQ_FIRST(&vs->all); c != NULL; c = next) {
		next = TAILQ_NEXT(c, entry);
		if (c->deadline == 0 || c->deadline > now)
			continue;
		c->deadline = 0;
		if (!c->guest) {
			log_debug("%s: %u:%u: client stalled, closing",
			    __func__, c->lport, c->pport);
			close_sock(vs, c);
		} else {
			log_debug("%s: %u:%u: timed out", __func__, c->lport,
			    c->pport);
			conn_reset(vs, c, now);
		}
	}
}

/* The earliest deadline (monotonic ms), or 0 if none. */
uint64_t
vsock_deadline(const struct vsock *vs)
{
	const struct vconn *c;
	uint64_t d = 0;

	TAILQ_FOREACH(c, &vs->all, entry)
	{
		if (c->deadline != 0 && (d == 0 || c->deadline < d))
			d = c->deadline;
	}
	return d;
}

/* Drop every connection without telling the guest (it was reset). */
void
vsock_reset(struct vsock *vs)
{
	struct vconn *c;

	while ((c = TAILQ_FIRST(&vs->all)) != NULL) {
		if (c->guest) {
			unlink_port(vs, c);
			c->guest = 0;
		}
		c->pend = 0;
		close_sock(vs, c);
	}
	vs->rst_len = 0;
}

/* Close everything and free the engine. */
void
vsock_free(struct vsock *vs)
{
	if (vs == NULL)
		return;
	vsock_reset(vs);
	free(vs->allow);
	free(vs);
}
