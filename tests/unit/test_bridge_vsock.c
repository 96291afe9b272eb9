/*
 * test_bridge_vsock.c: the vsock connection engine, table-driven.
 *
 * Each case is a script of steps against one engine with fake sockets and
 * an injected clock: the guest sends packets, the test takes the packets
 * the engine queues for the guest's rx ring one buffer (44 + 4096 bytes,
 * two pieces, as Linux 6.1 posts them) at a time, clients send, close and
 * stall, and the clock moves. Engine config: guest CID 3, buf_alloc 8192,
 * connect timeout 1000 ms, at most 8 connections, guest may reach 7000.
 */
#include <stdio.h>

#include "test_bridge_fake.h"

#define L0 (1u << 30) /* first local port handed out */
#define G  5005       /* a guest port */
#define BA 8192       /* the engine's buf_alloc in these tests */

enum act {
	CONNECT,  /* client .sock sends CONNECT .gport (expect .n as result) */
	GUEST,    /* the guest sends a packet */
	RX,       /* the next packet for the guest is this one */
	QUIET,    /* nothing for the guest */
	SEND,     /* client sends .data (or .n bytes) */
	CEOF,     /* client shuts down writing */
	HUP,      /* client closes */
	ERR,      /* client socket fails */
	CAP,      /* client accepts .n more bytes, then would block */
	DRAIN,    /* client reads everything, socket writable again */
	OUT,      /* client has received exactly .data (or .n bytes) */
	CLOSED,   /* the engine closed client .sock */
	OPEN,     /* client .sock still open */
	SHUTWR,   /* the engine half-closed client .sock */
	TIME,     /* the clock moves .n ms */
	NCONNS,   /* .n connections exist */
	POKE,     /* set every byte counter of a connection to .n */
	LISTEN,   /* a host listener on .hport */
	ACCEPT,   /* the socket the engine opened last is client .sock */
	NEXTPORT, /* the next local port to try is .n */
	RESET,    /* the device was reset */
	RSTS_DROPPED, /* .n RSTs for unknown connections were dropped */
};

struct step {
	enum act a;
	int sock;
	uint16_t op;
	uint32_t flags;
	uint32_t gport, hport;
	uint32_t buf_alloc, fwd_cnt;
	const char *data;
	long n;
	int check_fwd;             /* RX: check fwd_cnt too */
	uint16_t type;             /* GUEST/RX: other than STREAM */
	uint64_t src_cid, dst_cid; /* GUEST: other than 3 -> 2 */
	long len;                  /* GUEST: header len other than the data's */
	int short_pkt;             /* GUEST: fewer bytes than a header */
};

struct eng {
	struct fake_net fn;
	struct vsock *vs;
	int ids[16];
	uint64_t now;
	uint8_t rx[VSOCK_HDR_LEN + 4096];
	uint8_t pkt[VSOCK_HDR_LEN + 70000];
};

static void
guest_send(struct eng *e, const struct step *s)
{
	struct vsock_hdr h = {0};
	size_t plen = s->data ? strlen(s->data) : (size_t)s->n;
	struct iovec iov[2];

	h.src_cid = s->src_cid ? s->src_cid : 3;
	h.dst_cid = s->dst_cid ? s->dst_cid : 2;
	h.src_port = s->gport;
	h.dst_port = s->hport;
	h.len = s->len ? (uint32_t)s->len : (uint32_t)plen;
	h.type = s->type ? s->type : VSOCK_TYPE_STREAM;
	h.op = s->op;
	h.flags = s->flags;
	h.buf_alloc = s->buf_alloc ? s->buf_alloc : 65536;
	h.fwd_cnt = s->fwd_cnt;
	vsock_hdr_encode(e->pkt, &h);
	if (s->data)
		memcpy(e->pkt + VSOCK_HDR_LEN, s->data, plen);
	else
		memset(e->pkt + VSOCK_HDR_LEN, 'g', plen);
	/* header and payload split oddly, as a guest may */
	iov[0].iov_base = e->pkt;
	iov[0].iov_len = s->short_pkt ? 20 : 30;
	iov[1].iov_base = e->pkt + 30;
	iov[1].iov_len = s->short_pkt ? 0 : VSOCK_HDR_LEN - 30 + plen;
	vsock_tx(e->vs, iov, 2, e->now);
}

static void
expect_rx(struct eng *e, const struct step *s)
{
	struct iovec iov[2] = {
	    {e->rx, VSOCK_HDR_LEN}, {e->rx + VSOCK_HDR_LEN, 4096}};
	struct vsock_hdr h;
	size_t n = vsock_rx(e->vs, iov, 2, e->now);

	if (n == 0)
		unit_fail(
		    __FILE__, __LINE__, "no packet, expected op %u", s->op);
	CHECK(n >= VSOCK_HDR_LEN);
	vsock_hdr_decode(&h, e->rx);
	if (h.op != s->op)
		unit_fail(__FILE__, __LINE__, "op %u, expected %u (len %u)",
		    h.op, s->op, h.len);
	CHECK_INT(h.op, s->op);
	CHECK_INT(n, VSOCK_HDR_LEN + h.len);
	CHECK_INT(h.src_cid, 2);
	CHECK_INT(h.dst_cid, 3);
	CHECK_INT(h.src_port, s->hport);
	CHECK_INT(h.dst_port, s->gport);
	CHECK_INT(h.type, s->type ? s->type : VSOCK_TYPE_STREAM);
	CHECK_INT(h.flags, s->flags);
	if (h.op != VSOCK_OP_RST || s->hport != 0)
		CHECK_INT(h.buf_alloc, (s->buf_alloc ? s->buf_alloc : BA));
	if (s->check_fwd)
		CHECK_INT(h.fwd_cnt, s->fwd_cnt);
	if (s->data) {
		CHECK_INT(h.len, strlen(s->data));
		CHECK_MEM(e->rx + VSOCK_HDR_LEN, s->data, h.len);
	} else
		CHECK_INT(h.len, s->n);
}

static void
step(struct eng *e, const struct step *s)
{
	struct fake_sock *fs = NULL;
	struct vconn *c;
	size_t n;

	if (s->a == SEND || s->a == CEOF || s->a == HUP || s->a == ERR ||
	    s->a == CAP || s->a == DRAIN || s->a == OUT || s->a == CLOSED ||
	    s->a == OPEN || s->a == SHUTWR)
		fs = fn_sock(&e->fn, e->ids[s->sock]);
	switch (s->a) {
	case CONNECT:
		e->ids[s->sock] = fn_new(&e->fn);
		CHECK_INT(
		    vsock_connect(e->vs, e->ids[s->sock], s->gport, e->now),
		    s->n);
		if (s->n != 0)
			fn_close(&e->fn, e->ids[s->sock]);
		break;
	case GUEST:
		guest_send(e, s);
		break;
	case RX:
		expect_rx(e, s);
		break;
	case QUIET: {
		struct iovec iov[2] = {
		    {e->rx, VSOCK_HDR_LEN}, {e->rx + VSOCK_HDR_LEN, 4096}};

		n = vsock_rx(e->vs, iov, 2, e->now);
		if (n != 0) {
			struct vsock_hdr h;

			vsock_hdr_decode(&h, e->rx);
			unit_fail(__FILE__, __LINE__,
			    "unexpected op %u %u->%u len %u", h.op, h.src_port,
			    h.dst_port, h.len);
		}
		CHECK(!vsock_rx_pending(e->vs));
		break;
	}
	case SEND:
		if (s->data)
			fn_client_send(
			    &e->fn, e->ids[s->sock], s->data, strlen(s->data));
		else {
			char *buf = xmalloc((size_t)s->n);

			memset(buf, 'c', (size_t)s->n);
			fn_client_send(
			    &e->fn, e->ids[s->sock], buf, (size_t)s->n);
			free(buf);
		}
		vsock_sock_event(e->vs, e->ids[s->sock], VSOCK_EV_IN, e->now);
		break;
	case CEOF:
		fs->eof = 1;
		vsock_sock_event(e->vs, e->ids[s->sock], VSOCK_EV_IN, e->now);
		break;
	case HUP:
		fs->eof = fs->hup = 1;
		vsock_sock_event(
		    e->vs, e->ids[s->sock], VSOCK_EV_IN | VSOCK_EV_HUP, e->now);
		break;
	case ERR:
		fs->err = 1;
		vsock_sock_event(e->vs, e->ids[s->sock], VSOCK_EV_ERR, e->now);
		break;
	case CAP:
		fs->out_cap = fs->out_len + (size_t)s->n;
		break;
	case DRAIN:
		fs->out_cap = FN_BUF;
		vsock_sock_event(e->vs, e->ids[s->sock], VSOCK_EV_OUT, e->now);
		break;
	case OUT:
		if (s->data) {
			CHECK_INT(fs->out_len, strlen(s->data));
			CHECK_MEM(fs->out, s->data, fs->out_len);
		} else
			CHECK_INT(fs->out_len, s->n);
		break;
	case CLOSED:
		CHECK(!fs->open);
		break;
	case OPEN:
		CHECK(fs->open);
		break;
	case SHUTWR:
		CHECK(fs->shut_wr);
		break;
	case TIME:
		e->now += (uint64_t)s->n;
		vsock_tick(e->vs, e->now);
		break;
	case NCONNS:
		CHECK_INT(e->vs->nconns, s->n);
		break;
	case POKE:
		c = vsock_find(e->vs, s->hport, s->gport);
		CHECK(c != NULL);
		c->tx_cnt = c->peer_fwd_cnt = (uint32_t)s->n;
		c->rx_cnt = c->fwd_cnt = c->fwd_reported = (uint32_t)s->n;
		break;
	case LISTEN:
		e->fn.listening[e->fn.nlistening++] = s->hport;
		break;
	case ACCEPT:
		CHECK(e->fn.opened > 0);
		for (int i = FN_MAX - 1; i >= 0; i--) {
			if (e->fn.s[i].port == s->hport && e->fn.s[i].in) {
				e->ids[s->sock] = 100 + i;
				break;
			}
		}
		break;
	case NEXTPORT:
		e->vs->next_port = (uint32_t)s->n;
		break;
	case RESET:
		vsock_reset(e->vs);
		break;
	case RSTS_DROPPED:
		CHECK_INT(e->vs->stats.rsts_dropped, s->n);
		break;
	}
}

/* Run a script on an engine with max_conns and buf_alloc_max as given. */
static void
run_with(const char *name, const struct step *st, size_t n, int max_conns,
    uint32_t buf_alloc_max)
{
	static const uint32_t allow[] = {7000};
	struct vsock_cfg cfg = {
	    3, BA, 1000, max_conns, allow, 1, buf_alloc_max};
	struct eng *e = xcalloc(1, sizeof *e);

	e->now = 1000000;
	e->vs = vsock_new(&cfg, &fn_ops, &e->fn);
	for (size_t i = 0; i < n; i++) {
		step(e, &st[i]);
		if (unit_failed) {
			fprintf(
			    stderr, "    %s: failed at step %zu\n", name, i);
			return;
		}
	}
	vsock_free(e->vs);
	/* every socket the engine had is closed exactly once */
	for (int i = 0; i < FN_MAX; i++)
		CHECK(!e->fn.s[i].open);
	free(e);
}

/* Run a script on the default engine (8 connections, no window growth:
 * 8 x BA leaves no room for a 256 KiB window). */
static void
run(const char *name, const struct step *st, size_t n)
{
	run_with(name, st, n, 8, 0);
}

#define RUN(t) run(#t, t, nitems(t))

/* Host-initiated connection up to established, client 0, port L0. */
#define ESTABLISH(ba)                                                          \
	{.a = CONNECT, .sock = 0, .gport = G},                                 \
	    {.a = RX, .op = VSOCK_OP_REQUEST, .gport = G, .hport = L0},        \
	    {.a = GUEST,                                                       \
	        .op = VSOCK_OP_RESPONSE,                                       \
	        .gport = G,                                                    \
	        .hport = L0,                                                   \
	        .buf_alloc = (ba)},                                            \
	{                                                                      \
		.a = OUT, .sock = 0, .data = "OK 1073741824\n"                 \
	}

TEST(engine_host_connect_and_echo)
{
	static const struct step t[] = {
	    {.a = CONNECT, .sock = 0, .gport = G},
	    {.a = RX, .op = VSOCK_OP_REQUEST, .gport = G, .hport = L0},
	    {.a = QUIET},
	    {.a = OUT, .sock = 0, .data = ""},
	    /* bytes sent before the guest accepts wait in the socket */
	    {.a = SEND, .sock = 0, .data = "early"},
	    {.a = QUIET},
	    {.a = GUEST,
	        .op = VSOCK_OP_RESPONSE,
	        .gport = G,
	        .hport = L0,
	        .buf_alloc = 65536},
	    {.a = OUT, .sock = 0, .data = "OK 1073741824\n"},
	    {.a = RX,
	        .op = VSOCK_OP_RW,
	        .gport = G,
	        .hport = L0,
	        .data = "early"},
	    {.a = SEND, .sock = 0, .data = "hello"},
	    {.a = RX,
	        .op = VSOCK_OP_RW,
	        .gport = G,
	        .hport = L0,
	        .data = "hello"},
	    {.a = GUEST,
	        .op = VSOCK_OP_RW,
	        .gport = G,
	        .hport = L0,
	        .buf_alloc = 65536,
	        .data = "world"},
	    {.a = OUT, .sock = 0, .data = "OK 1073741824\nworld"},
	    {.a = QUIET},
	    {.a = NCONNS, .n = 1},
	};
	RUN(t);
}

TEST(engine_no_listener_closes_with_zero_bytes)
{
	static const struct step t[] = {
	    {.a = CONNECT, .sock = 0, .gport = 6001},
	    {.a = RX, .op = VSOCK_OP_REQUEST, .gport = 6001, .hport = L0},
	    {.a = GUEST, .op = VSOCK_OP_RST, .gport = 6001, .hport = L0},
	    {.a = CLOSED, .sock = 0},
	    {.a = OUT, .sock = 0, .data = ""},
	    {.a = QUIET}, /* never RST on RST */
	    {.a = NCONNS, .n = 0},
	};
	RUN(t);
}

TEST(engine_connect_timeout)
{
	static const struct step t[] = {
	    {.a = CONNECT, .sock = 0, .gport = G},
	    {.a = RX, .op = VSOCK_OP_REQUEST, .gport = G, .hport = L0},
	    {.a = TIME, .n = 999},
	    {.a = OPEN, .sock = 0},
	    {.a = TIME, .n = 1},
	    {.a = CLOSED, .sock = 0},
	    {.a = OUT, .sock = 0, .data = ""},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = G, .hport = L0},
	    {.a = QUIET},
	    {.a = NCONNS, .n = 0},
	    /* the guest's late answer finds nothing: RST */
	    {.a = GUEST, .op = VSOCK_OP_RESPONSE, .gport = G, .hport = L0},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = G, .hport = L0},
	    {.a = QUIET},
	};
	RUN(t);
}

TEST(engine_connect_timeout_before_request_went_out)
{
	static const struct step t[] = {
	    {.a = CONNECT, .sock = 0, .gport = G},
	    {.a = TIME, .n = 1000},
	    {.a = CLOSED, .sock = 0},
	    {.a = QUIET}, /* the guest never heard of it */
	    {.a = NCONNS, .n = 0},
	};
	RUN(t);
}

TEST(engine_rst_pending_then_guest_rst_is_not_answered)
{
	static const struct step t[] = {
	    {.a = CONNECT, .sock = 0, .gport = G},
	    {.a = RX, .op = VSOCK_OP_REQUEST, .gport = G, .hport = L0},
	    {.a = TIME, .n = 1000}, /* RST now owed */
	    {.a = GUEST, .op = VSOCK_OP_RST, .gport = G, .hport = L0},
	    {.a = QUIET},
	    {.a = NCONNS, .n = 0},
	};
	RUN(t);
}

TEST(engine_local_ports_skip_ports_in_use_and_wrap)
{
	static const struct step t[] = {
	    {.a = CONNECT, .sock = 0, .gport = G},
	    {.a = RX, .op = VSOCK_OP_REQUEST, .gport = G, .hport = L0},
	    {.a = CONNECT, .sock = 1, .gport = G},
	    {.a = RX, .op = VSOCK_OP_REQUEST, .gport = G, .hport = L0 + 1},
	    {.a = NEXTPORT, .n = L0},
	    {.a = CONNECT, .sock = 2, .gport = G},
	    {.a = RX, .op = VSOCK_OP_REQUEST, .gport = G, .hport = L0 + 2},
	    {.a = NEXTPORT, .n = (1u << 31) - 1},
	    {.a = CONNECT, .sock = 3, .gport = G},
	    {.a = RX,
	        .op = VSOCK_OP_REQUEST,
	        .gport = G,
	        .hport = (1u << 31) - 1},
	    {.a = CONNECT, .sock = 4, .gport = G},
	    {.a = RX, .op = VSOCK_OP_REQUEST, .gport = G, .hport = L0 + 3},
	    {.a = NCONNS, .n = 5},
	};
	RUN(t);
}

TEST(engine_connection_limit)
{
	static const struct step t[] = {
	    {.a = CONNECT, .sock = 0, .gport = G},
	    {.a = CONNECT, .sock = 1, .gport = G},
	    {.a = CONNECT, .sock = 2, .gport = G},
	    {.a = CONNECT, .sock = 3, .gport = G},
	    {.a = CONNECT, .sock = 4, .gport = G},
	    {.a = CONNECT, .sock = 5, .gport = G},
	    {.a = CONNECT, .sock = 6, .gport = G},
	    {.a = CONNECT, .sock = 7, .gport = G},
	    {.a = CONNECT, .sock = 8, .gport = G, .n = -EBUSY},
	    {.a = NCONNS, .n = 8},
	    {.a = TIME, .n = 1000},
	    {.a = NCONNS, .n = 0},
	    {.a = CONNECT, .sock = 9, .gport = G},
	};
	RUN(t);
}

TEST(engine_guest_closes_both_ways_flush_then_close)
{
	static const struct step t[] = {
	    ESTABLISH(65536),
	    {.a = CAP, .sock = 0, .n = 0},
	    {.a = GUEST,
	        .op = VSOCK_OP_RW,
	        .gport = G,
	        .hport = L0,
	        .buf_alloc = 65536,
	        .data = "reply"},
	    {.a = GUEST,
	        .op = VSOCK_OP_SHUTDOWN,
	        .gport = G,
	        .hport = L0,
	        .flags = 3},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = G, .hport = L0},
	    {.a = QUIET},
	    {.a = OPEN, .sock = 0}, /* still flushing */
	    {.a = OUT, .sock = 0, .data = "OK 1073741824\n"},
	    {.a = DRAIN, .sock = 0},
	    {.a = OUT, .sock = 0, .data = "OK 1073741824\nreply"},
	    {.a = CLOSED, .sock = 0},
	    {.a = NCONNS, .n = 0},
	    /* late packets for it: RST, never for RST */
	    {.a = GUEST,
	        .op = VSOCK_OP_RW,
	        .gport = G,
	        .hport = L0,
	        .data = "x"},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = G, .hport = L0},
	    {.a = GUEST, .op = VSOCK_OP_RST, .gport = G, .hport = L0},
	    {.a = QUIET},
	};
	RUN(t);
}

TEST(engine_guest_half_close_then_client_eof)
{
	static const struct step t[] = {
	    ESTABLISH(65536),
	    {.a = GUEST,
	        .op = VSOCK_OP_SHUTDOWN,
	        .gport = G,
	        .hport = L0,
	        .flags = VSOCK_SHUT_SEND},
	    {.a = SHUTWR, .sock = 0},
	    {.a = OPEN, .sock = 0},
	    {.a = QUIET},
	    {.a = SEND, .sock = 0, .data = "more"},
	    {.a = RX,
	        .op = VSOCK_OP_RW,
	        .gport = G,
	        .hport = L0,
	        .data = "more"},
	    {.a = CEOF, .sock = 0},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = G, .hport = L0},
	    {.a = CLOSED, .sock = 0},
	    {.a = QUIET},
	    {.a = NCONNS, .n = 0},
	};
	RUN(t);
}

TEST(engine_client_half_close_then_guest_closes)
{
	static const struct step t[] = {
	    ESTABLISH(65536),
	    {.a = SEND, .sock = 0, .data = "request"},
	    {.a = CEOF, .sock = 0},
	    {.a = RX,
	        .op = VSOCK_OP_RW,
	        .gport = G,
	        .hport = L0,
	        .data = "request"},
	    {.a = RX,
	        .op = VSOCK_OP_SHUTDOWN,
	        .gport = G,
	        .hport = L0,
	        .flags = VSOCK_SHUT_SEND},
	    {.a = QUIET},
	    {.a = GUEST,
	        .op = VSOCK_OP_RW,
	        .gport = G,
	        .hport = L0,
	        .data = "response"},
	    {.a = OUT, .sock = 0, .data = "OK 1073741824\nresponse"},
	    {.a = GUEST,
	        .op = VSOCK_OP_SHUTDOWN,
	        .gport = G,
	        .hport = L0,
	        .flags = 3},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = G, .hport = L0},
	    {.a = CLOSED, .sock = 0},
	    {.a = NCONNS, .n = 0},
	};
	RUN(t);
}

TEST(engine_client_hangup_shutdown_then_guest_rst)
{
	static const struct step t[] = {
	    ESTABLISH(65536),
	    {.a = SEND, .sock = 0, .data = "bye"},
	    {.a = HUP, .sock = 0},
	    {.a = RX,
	        .op = VSOCK_OP_RW,
	        .gport = G,
	        .hport = L0,
	        .data = "bye"},
	    {.a = RX,
	        .op = VSOCK_OP_SHUTDOWN,
	        .gport = G,
	        .hport = L0,
	        .flags = 3},
	    {.a = CLOSED, .sock = 0},
	    {.a = QUIET},
	    /* data still in flight from the guest is dropped, credited */
	    {.a = GUEST, .op = VSOCK_OP_RW, .gport = G, .hport = L0, .n = 5000},
	    {.a = GUEST, .op = VSOCK_OP_RW, .gport = G, .hport = L0, .n = 5000},
	    {.a = RX,
	        .op = VSOCK_OP_CREDIT_UPDATE,
	        .gport = G,
	        .hport = L0,
	        .check_fwd = 1,
	        .fwd_cnt = 10000},
	    {.a = GUEST, .op = VSOCK_OP_RST, .gport = G, .hport = L0},
	    {.a = QUIET},
	    {.a = NCONNS, .n = 0},
	};
	RUN(t);
}

TEST(engine_client_hangup_grace_then_rst)
{
	static const struct step t[] = {
	    ESTABLISH(65536),
	    {.a = HUP, .sock = 0},
	    {.a = RX,
	        .op = VSOCK_OP_SHUTDOWN,
	        .gport = G,
	        .hport = L0,
	        .flags = 3},
	    {.a = TIME, .n = VSOCK_GRACE_MS - 1},
	    {.a = QUIET},
	    {.a = TIME, .n = 1},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = G, .hport = L0},
	    {.a = QUIET},
	    {.a = NCONNS, .n = 0},
	};
	RUN(t);
}

TEST(engine_client_hangup_while_connecting)
{
	static const struct step t[] = {
	    {.a = CONNECT, .sock = 0, .gport = G},
	    {.a = RX, .op = VSOCK_OP_REQUEST, .gport = G, .hport = L0},
	    {.a = HUP, .sock = 0},
	    {.a = CLOSED, .sock = 0},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = G, .hport = L0},
	    {.a = GUEST, .op = VSOCK_OP_RESPONSE, .gport = G, .hport = L0},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = G, .hport = L0},
	    {.a = QUIET},
	    {.a = NCONNS, .n = 0},
	};
	RUN(t);
}

TEST(engine_socket_error_is_client_gone)
{
	static const struct step t[] = {
	    ESTABLISH(65536),
	    {.a = ERR, .sock = 0},
	    {.a = CLOSED, .sock = 0},
	    {.a = RX,
	        .op = VSOCK_OP_SHUTDOWN,
	        .gport = G,
	        .hport = L0,
	        .flags = 3},
	    {.a = GUEST,
	        .op = VSOCK_OP_SHUTDOWN,
	        .gport = G,
	        .hport = L0,
	        .flags = 3},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = G, .hport = L0},
	    {.a = QUIET},
	    {.a = NCONNS, .n = 0},
	};
	RUN(t);
}

TEST(engine_guest_rst_closes_at_once)
{
	static const struct step t[] = {
	    ESTABLISH(65536),
	    {.a = CAP, .sock = 0, .n = 0},
	    {.a = GUEST,
	        .op = VSOCK_OP_RW,
	        .gport = G,
	        .hport = L0,
	        .data = "lost"},
	    {.a = GUEST, .op = VSOCK_OP_RST, .gport = G, .hport = L0},
	    {.a = CLOSED, .sock = 0},
	    {.a = QUIET},
	    {.a = NCONNS, .n = 0},
	};
	RUN(t);
}

TEST(engine_unknown_connections)
{
	static const struct step t[] = {
	    {.a = GUEST,
	        .op = VSOCK_OP_RW,
	        .gport = 40,
	        .hport = 50,
	        .data = "x"},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = 40, .hport = 50},
	    {.a = GUEST, .op = VSOCK_OP_RST, .gport = 40, .hport = 50},
	    {.a = QUIET},
	    {.a = GUEST,
	        .op = VSOCK_OP_SHUTDOWN,
	        .gport = 41,
	        .hport = 50,
	        .flags = 3},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = 41, .hport = 50},
	    {.a = GUEST,
	        .op = VSOCK_OP_CREDIT_REQUEST,
	        .gport = 42,
	        .hport = 50},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = 42, .hport = 50},
	    {.a = GUEST, .op = VSOCK_OP_RESPONSE, .gport = 43, .hport = 50},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = 43, .hport = 50},
	    {.a = GUEST, .op = 99, .gport = 44, .hport = 50},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = 44, .hport = 50},
	    {.a = QUIET},
	    {.a = NCONNS, .n = 0},
	};
	RUN(t);
}

TEST(engine_foreign_cids_and_short_packets_are_dropped)
{
	static const struct step t[] = {
	    {.a = GUEST,
	        .op = VSOCK_OP_REQUEST,
	        .gport = 1,
	        .hport = 7000,
	        .src_cid = 4},
	    {.a = GUEST,
	        .op = VSOCK_OP_REQUEST,
	        .gport = 1,
	        .hport = 7000,
	        .dst_cid = 3},
	    {.a = GUEST,
	        .op = VSOCK_OP_RW,
	        .gport = 1,
	        .hport = 7000,
	        .short_pkt = 1},
	    {.a = QUIET},
	    {.a = NCONNS, .n = 0},
	};
	RUN(t);
}

TEST(engine_non_stream_gets_rst_of_its_type)
{
	static const struct step t[] = {
	    {.a = LISTEN, .hport = 7000},
	    {.a = GUEST,
	        .op = VSOCK_OP_REQUEST,
	        .gport = 1,
	        .hport = 7000,
	        .type = 2},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = 1, .hport = 7000, .type = 2},
	    {.a = GUEST,
	        .op = VSOCK_OP_RST,
	        .gport = 1,
	        .hport = 7000,
	        .type = 2},
	    {.a = QUIET},
	    {.a = NCONNS, .n = 0},
	};
	RUN(t);
}

TEST(engine_guest_initiated_allowed_port)
{
	static const struct step t[] = {
	    {.a = LISTEN, .hport = 7000},
	    {.a = GUEST,
	        .op = VSOCK_OP_REQUEST,
	        .gport = 1234,
	        .hport = 7000,
	        .buf_alloc = 65536},
	    {.a = RX, .op = VSOCK_OP_RESPONSE, .gport = 1234, .hport = 7000},
	    {.a = ACCEPT, .sock = 0, .hport = 7000},
	    {.a = GUEST,
	        .op = VSOCK_OP_RW,
	        .gport = 1234,
	        .hport = 7000,
	        .buf_alloc = 65536,
	        .data = "from guest"},
	    {.a = OUT, .sock = 0, .data = "from guest"}, /* no OK line */
	    {.a = SEND, .sock = 0, .data = "from host"},
	    {.a = RX,
	        .op = VSOCK_OP_RW,
	        .gport = 1234,
	        .hport = 7000,
	        .data = "from host"},
	    /* the same port pair again while live: protocol error */
	    {.a = GUEST, .op = VSOCK_OP_REQUEST, .gport = 1234, .hport = 7000},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = 1234, .hport = 7000},
	    {.a = CLOSED, .sock = 0},
	    {.a = NCONNS, .n = 0},
	};
	RUN(t);
}

TEST(engine_guest_initiated_refused)
{
	static const struct step t[] = {
	    {.a = LISTEN, .hport = 7001},
	    /* not allowed, although something listens */
	    {.a = GUEST, .op = VSOCK_OP_REQUEST, .gport = 1, .hport = 7001},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = 1, .hport = 7001},
	    /* allowed, but nothing listens */
	    {.a = GUEST, .op = VSOCK_OP_REQUEST, .gport = 2, .hport = 7000},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = 2, .hport = 7000},
	    {.a = QUIET},
	    {.a = NCONNS, .n = 0},
	};
	RUN(t);
}

TEST(engine_overrun_gets_rst)
{
	static const struct step t[] = {
	    ESTABLISH(65536),
	    {.a = CAP, .sock = 0, .n = 0},
	    {.a = GUEST, .op = VSOCK_OP_RW, .gport = G, .hport = L0, .n = 4096},
	    {.a = GUEST, .op = VSOCK_OP_RW, .gport = G, .hport = L0, .n = 4096},
	    {.a = QUIET},
	    {.a = OPEN, .sock = 0},
	    {.a = GUEST, .op = VSOCK_OP_RW, .gport = G, .hport = L0, .n = 1},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = G, .hport = L0},
	    {.a = CLOSED, .sock = 0},
	    {.a = OUT, .sock = 0, .data = "OK 1073741824\n"},
	    {.a = NCONNS, .n = 0},
	};
	RUN(t);
}

TEST(engine_single_packet_over_buf_alloc_gets_rst)
{
	static const struct step t[] = {
	    ESTABLISH(65536),
	    {.a = GUEST,
	        .op = VSOCK_OP_RW,
	        .gport = G,
	        .hport = L0,
	        .n = BA + 1},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = G, .hport = L0},
	    {.a = CLOSED, .sock = 0},
	};
	RUN(t);
}

TEST(engine_rw_length_beyond_the_chain_gets_rst)
{
	static const struct step t[] = {
	    ESTABLISH(65536),
	    {.a = GUEST,
	        .op = VSOCK_OP_RW,
	        .gport = G,
	        .hport = L0,
	        .data = "abc",
	        .len = 100},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = G, .hport = L0},
	    {.a = CLOSED, .sock = 0},
	    {.a = OUT, .sock = 0, .data = "OK 1073741824\n"},
	};
	RUN(t);
}

TEST(engine_protocol_errors_get_rst)
{
	static const struct step t[] = {
	    /* RW before the guest accepted */
	    {.a = CONNECT, .sock = 0, .gport = G},
	    {.a = RX, .op = VSOCK_OP_REQUEST, .gport = G, .hport = L0},
	    {.a = GUEST,
	        .op = VSOCK_OP_RW,
	        .gport = G,
	        .hport = L0,
	        .data = "x"},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = G, .hport = L0},
	    {.a = CLOSED, .sock = 0},
	    /* RESPONSE twice */
	    {.a = CONNECT, .sock = 1, .gport = G},
	    {.a = RX, .op = VSOCK_OP_REQUEST, .gport = G, .hport = L0 + 1},
	    {.a = GUEST, .op = VSOCK_OP_RESPONSE, .gport = G, .hport = L0 + 1},
	    {.a = GUEST, .op = VSOCK_OP_RESPONSE, .gport = G, .hport = L0 + 1},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = G, .hport = L0 + 1},
	    {.a = CLOSED, .sock = 1},
	    /* RW after the guest said it sends no more */
	    {.a = CONNECT, .sock = 2, .gport = G},
	    {.a = RX, .op = VSOCK_OP_REQUEST, .gport = G, .hport = L0 + 2},
	    {.a = GUEST,
	        .op = VSOCK_OP_RESPONSE,
	        .gport = G,
	        .hport = L0 + 2,
	        .buf_alloc = 100},
	    {.a = GUEST,
	        .op = VSOCK_OP_SHUTDOWN,
	        .gport = G,
	        .hport = L0 + 2,
	        .flags = VSOCK_SHUT_SEND},
	    {.a = GUEST,
	        .op = VSOCK_OP_RW,
	        .gport = G,
	        .hport = L0 + 2,
	        .data = "x"},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = G, .hport = L0 + 2},
	    {.a = CLOSED, .sock = 2},
	    {.a = QUIET},
	    {.a = NCONNS, .n = 0},
	};
	RUN(t);
}

TEST(engine_credit_update_when_guest_view_runs_low)
{
	static const struct step t[] = {
	    ESTABLISH(65536),
	    {.a = GUEST, .op = VSOCK_OP_RW, .gport = G, .hport = L0, .n = 100},
	    {.a = QUIET}, /* plenty of room in the guest's view */
	    {.a = GUEST, .op = VSOCK_OP_RW, .gport = G, .hport = L0, .n = 4000},
	    {.a = RX,
	        .op = VSOCK_OP_CREDIT_UPDATE,
	        .gport = G,
	        .hport = L0,
	        .check_fwd = 1,
	        .fwd_cnt = 4100},
	    {.a = QUIET},
	    {.a = GUEST,
	        .op = VSOCK_OP_CREDIT_REQUEST,
	        .gport = G,
	        .hport = L0},
	    {.a = RX,
	        .op = VSOCK_OP_CREDIT_UPDATE,
	        .gport = G,
	        .hport = L0,
	        .check_fwd = 1,
	        .fwd_cnt = 4100},
	    {.a = OUT, .sock = 0, .n = 14 + 4100},
	};
	RUN(t);
}

/* Four windows through a client keeping up: the window doubles (to
 * buf_alloc_max) and a packet only the new window allows is taken. */
#define GUEST_RW(len)                                                          \
	{                                                                      \
		.a = GUEST, .op = VSOCK_OP_RW, .gport = G, .hport = L0,        \
		.n = (len)                                                     \
	}
#define CREDIT(fwd, ba)                                                        \
	{                                                                      \
		.a = RX, .op = VSOCK_OP_CREDIT_UPDATE, .gport = G,             \
		.hport = L0, .check_fwd = 1, .fwd_cnt = (fwd),                 \
		.buf_alloc = (ba)                                              \
	}

/* Three windows' worth through a client keeping up, each reported. */
#define THREE_WINDOWS                                                          \
	GUEST_RW(BA), CREDIT(BA, BA), GUEST_RW(BA), CREDIT(2 * BA, BA),        \
	    GUEST_RW(BA), CREDIT(3 * BA, BA)

TEST(engine_bulk_stream_window_grows)
{
	static const struct step t[] = {
	    ESTABLISH(65536),
	    THREE_WINDOWS,
	    GUEST_RW(BA),
	    CREDIT(4 * BA, 2 * BA), /* grown */
	    GUEST_RW(2 * BA),       /* over the old window */
	    CREDIT(6 * BA, 2 * BA),
	    {.a = QUIET},
	    {.a = OUT, .sock = 0, .n = 14 + 6 * BA},
	};
	run_with("engine_bulk_stream_window_grows", t, nitems(t), 8, 2 * BA);
}

/* With the windows' total at max_conns x BA already, none grows. */
TEST(engine_window_growth_stays_within_the_bound)
{
	static const struct step t[] = {
	    ESTABLISH(65536),
	    THREE_WINDOWS,
	    GUEST_RW(BA),
	    CREDIT(4 * BA, BA), /* not grown: one connection allowed */
	    {.a = QUIET},
	    {.a = OUT, .sock = 0, .n = 14 + 4 * BA},
	};
	run_with("engine_window_growth_stays_within_the_bound", t, nitems(t), 1,
	    2 * BA);
}

TEST(engine_stalled_client_then_credit_update)
{
	static const struct step t[] = {
	    ESTABLISH(65536),
	    {.a = CAP, .sock = 0, .n = 0},
	    {.a = GUEST, .op = VSOCK_OP_RW, .gport = G, .hport = L0, .n = 5000},
	    {.a = QUIET}, /* nothing forwarded: nothing to report */
	    {.a = OUT, .sock = 0, .n = 14},
	    {.a = DRAIN, .sock = 0},
	    {.a = OUT, .sock = 0, .n = 14 + 5000},
	    {.a = RX,
	        .op = VSOCK_OP_CREDIT_UPDATE,
	        .gport = G,
	        .hport = L0,
	        .check_fwd = 1,
	        .fwd_cnt = 5000},
	    {.a = QUIET},
	};
	RUN(t);
}

TEST(engine_guest_bound_credit_exhaustion)
{
	static const struct step t[] = {
	    ESTABLISH(8192),
	    {.a = SEND, .sock = 0, .n = 10000},
	    {.a = RX, .op = VSOCK_OP_RW, .gport = G, .hport = L0, .n = 4096},
	    {.a = RX, .op = VSOCK_OP_RW, .gport = G, .hport = L0, .n = 4096},
	    {.a = RX, .op = VSOCK_OP_CREDIT_REQUEST, .gport = G, .hport = L0},
	    {.a = QUIET},
	    {.a = GUEST,
	        .op = VSOCK_OP_CREDIT_UPDATE,
	        .gport = G,
	        .hport = L0,
	        .buf_alloc = 8192,
	        .fwd_cnt = 4096},
	    {.a = RX, .op = VSOCK_OP_RW, .gport = G, .hport = L0, .n = 1808},
	    {.a = QUIET},
	    /* the guest shrinks its buffer below what is in flight */
	    {.a = GUEST,
	        .op = VSOCK_OP_CREDIT_UPDATE,
	        .gport = G,
	        .hport = L0,
	        .buf_alloc = 1000,
	        .fwd_cnt = 4096},
	    {.a = SEND, .sock = 0, .n = 10},
	    {.a = RX, .op = VSOCK_OP_CREDIT_REQUEST, .gport = G, .hport = L0},
	    {.a = QUIET},
	    {.a = GUEST,
	        .op = VSOCK_OP_CREDIT_UPDATE,
	        .gport = G,
	        .hport = L0,
	        .buf_alloc = 1000,
	        .fwd_cnt = 10000},
	    {.a = RX, .op = VSOCK_OP_RW, .gport = G, .hport = L0, .n = 10},
	};
	RUN(t);
}

TEST(engine_credit_counters_wrap)
{
	static const struct step t[] = {
	    ESTABLISH(8192),
	    {.a = POKE, .gport = G, .hport = L0, .n = 0xfffff000},
	    {.a = GUEST,
	        .op = VSOCK_OP_CREDIT_UPDATE,
	        .gport = G,
	        .hport = L0,
	        .buf_alloc = 8192,
	        .fwd_cnt = 0xfffff000},
	    {.a = SEND, .sock = 0, .n = 9000},
	    {.a = RX,
	        .op = VSOCK_OP_RW,
	        .gport = G,
	        .hport = L0,
	        .n = 4096,
	        .check_fwd = 1,
	        .fwd_cnt = 0xfffff000},
	    {.a = RX, .op = VSOCK_OP_RW, .gport = G, .hport = L0, .n = 4096},
	    {.a = RX, .op = VSOCK_OP_CREDIT_REQUEST, .gport = G, .hport = L0},
	    {.a = QUIET},
	    /* the guest consumed across the wrap */
	    {.a = GUEST,
	        .op = VSOCK_OP_CREDIT_UPDATE,
	        .gport = G,
	        .hport = L0,
	        .buf_alloc = 8192,
	        .fwd_cnt = 0x00001000},
	    {.a = RX, .op = VSOCK_OP_RW, .gport = G, .hport = L0, .n = 808},
	    {.a = QUIET},
	    /* host-bound: fwd_cnt wraps too */
	    {.a = GUEST,
	        .op = VSOCK_OP_RW,
	        .gport = G,
	        .hport = L0,
	        .n = 4096,
	        .buf_alloc = 8192,
	        .fwd_cnt = 0x1000},
	    {.a = GUEST,
	        .op = VSOCK_OP_RW,
	        .gport = G,
	        .hport = L0,
	        .n = 4096,
	        .buf_alloc = 8192,
	        .fwd_cnt = 0x1000},
	    {.a = RX,
	        .op = VSOCK_OP_CREDIT_UPDATE,
	        .gport = G,
	        .hport = L0,
	        .check_fwd = 1,
	        .fwd_cnt = 0x00001000},
	    {.a = CAP, .sock = 0, .n = 0},
	    {.a = GUEST,
	        .op = VSOCK_OP_RW,
	        .gport = G,
	        .hport = L0,
	        .n = 8192,
	        .buf_alloc = 8192,
	        .fwd_cnt = 0x1000},
	    {.a = QUIET},
	    {.a = GUEST,
	        .op = VSOCK_OP_RW,
	        .gport = G,
	        .hport = L0,
	        .n = 1,
	        .buf_alloc = 8192,
	        .fwd_cnt = 0x1000},
	    {.a = RX, .op = VSOCK_OP_RST, .gport = G, .hport = L0},
	};
	RUN(t);
}

TEST(engine_rst_queue_is_bounded)
{
	struct step t[VSOCK_RST_QUEUE + 40 + VSOCK_RST_QUEUE + 2];
	size_t n = 0;

	memset(t, 0, sizeof t);
	for (int i = 0; i < VSOCK_RST_QUEUE + 40; i++) {
		t[n].a = GUEST;
		t[n].op = VSOCK_OP_RW;
		t[n].gport = (uint32_t)i;
		t[n].hport = 9;
		t[n++].data = "x";
	}
	for (int i = 0; i < VSOCK_RST_QUEUE; i++) {
		t[n].a = RX;
		t[n].op = VSOCK_OP_RST;
		t[n].gport = (uint32_t)i;
		t[n++].hport = 9;
	}
	t[n++].a = QUIET;
	t[n].a = RSTS_DROPPED;
	t[n++].n = 40;
	run("rst_queue", t, n);
}

TEST(engine_device_reset_drops_all_silently)
{
	static const struct step t[] = {
	    ESTABLISH(65536),
	    {.a = CONNECT, .sock = 1, .gport = G},
	    {.a = GUEST,
	        .op = VSOCK_OP_RW,
	        .gport = 9,
	        .hport = 9,
	        .data = "x"},
	    {.a = RESET},
	    {.a = CLOSED, .sock = 0},
	    {.a = CLOSED, .sock = 1},
	    {.a = QUIET},
	    {.a = NCONNS, .n = 0},
	};
	RUN(t);
}

TEST(engine_many_connections_round_robin)
{
	static const struct step t[] = {
	    ESTABLISH(65536),
	    {.a = CONNECT, .sock = 1, .gport = G + 1},
	    {.a = RX, .op = VSOCK_OP_REQUEST, .gport = G + 1, .hport = L0 + 1},
	    {.a = GUEST,
	        .op = VSOCK_OP_RESPONSE,
	        .gport = G + 1,
	        .hport = L0 + 1,
	        .buf_alloc = 65536},
	    {.a = SEND, .sock = 0, .n = 9000},
	    {.a = SEND, .sock = 1, .n = 9000},
	    /* one buffer each in turn: a busy client cannot starve others */
	    {.a = RX,
	        .op = VSOCK_OP_RW,
	        .gport = G + 1,
	        .hport = L0 + 1,
	        .n = 4096},
	    {.a = RX, .op = VSOCK_OP_RW, .gport = G, .hport = L0, .n = 4096},
	    {.a = RX,
	        .op = VSOCK_OP_RW,
	        .gport = G + 1,
	        .hport = L0 + 1,
	        .n = 4096},
	    {.a = RX, .op = VSOCK_OP_RW, .gport = G, .hport = L0, .n = 4096},
	    {.a = RX,
	        .op = VSOCK_OP_RW,
	        .gport = G + 1,
	        .hport = L0 + 1,
	        .n = 808},
	    {.a = RX, .op = VSOCK_OP_RW, .gport = G, .hport = L0, .n = 808},
	    {.a = QUIET},
	};
	RUN(t);
}

TEST(engine_tiny_rx_buffer_is_left_untouched)
{
	struct vsock_cfg cfg = {3, BA, 1000, 8, NULL, 0, 0};
	struct fake_net fn = {0};
	struct vsock *vs = vsock_new(&cfg, &fn_ops, &fn);
	uint8_t buf[43];
	struct iovec iov = {buf, sizeof buf};
	int id = fn_new(&fn);

	CHECK_INT(vsock_connect(vs, id, G, 0), 0);
	CHECK_INT(vsock_rx(vs, &iov, 1, 0), 0);
	CHECK(vsock_rx_pending(vs));
	vsock_free(vs);
	CHECK(!fn_sock(&fn, id)->open);
}
