/*
 * fuzz_bridge.c: libFuzzer target for vmux-bridge's guest-facing parsers
 * (session/bridge/): split-ring chains, vsock packets and the connection
 * engine, and the CONNECT line.
 *
 * The input is guest memory: it is copied over a 64 KiB memfd that the
 * bridge sees through its memory table at guest-physical 0x10000, with the
 * tx ring at offset 0 and the rx ring at 0x1000 (descriptors, avail and
 * used all input-controlled, sizes from the first byte). One run, with a
 * fresh engine: a host client connects (so live connections exist), then
 * a few rounds of pump_tx, pump_rx and a clock tick, as the event loop
 * would, with fake sockets that abort on any use after close. The last 80
 * bytes also go through connect_parse. ASan/UBSan catch any access outside
 * guest memory or the bridge's own buffers; the checks below catch broken
 * invariants (a chain taken and not given back, or given back twice; more
 * connections or queued RSTs than the limits; a socket left open).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/common.h"
#include "session/bridge/bridge.h"

#define RAM_SIZE 65536
#define RAM_GPA  0x10000ULL
#define RAM_UVA  0x7f0000000000ULL
#define NSOCK    64

static int ram_fd = -1;
static uint8_t *ram; /* the "guest" view */

struct fsock {
	int open;
	size_t readable; /* bytes the client still has for the guest */
	int eof;
	size_t room; /* bytes it will still take */
};

static struct fsock socks[NSOCK];

/* A socket the engine owns; abort if it is not one. */
static struct fsock *
sock(int id)
{
	if (id < 0 || id >= NSOCK || !socks[id].open)
		abort(); /* the engine used a socket it does not own */
	return &socks[id];
}

/* The client's bytes, as many as asked and available. */
static ssize_t
f_readv(void *arg, int id, const struct iovec *iov, int n)
{
	struct fsock *s = sock(id);
	size_t want = iov_total(iov, n), k;

	(void)arg;
	if (s->readable == 0)
		return s->eof ? 0 : -EAGAIN;
	k = want < s->readable ? want : s->readable;
	if (k == 0)
		return -EAGAIN;
	for (int i = 0, left = (int)k; i < n && left > 0; i++) {
		size_t m = iov[i].iov_len < (size_t)left ? iov[i].iov_len
		                                         : (size_t)left;
		memset(iov[i].iov_base, 'h', m);
		left -= (int)m;
	}
	s->readable -= k;
	return (ssize_t)k;
}

/* Read every byte handed over (ASan checks them), take some. */
static ssize_t
f_writev(void *arg, int id, const struct iovec *iov, int n)
{
	struct fsock *s = sock(id);
	size_t want = iov_total(iov, n), k;
	volatile uint8_t sink = 0;

	(void)arg;
	for (int i = 0; i < n; i++) /* touch every byte handed to us */
		for (size_t j = 0; j < iov[i].iov_len; j++)
			sink ^= ((const uint8_t *)iov[i].iov_base)[j];
	(void)sink;
	if (want > 0 && s->room == 0)
		return -EAGAIN;
	k = want < s->room ? want : s->room;
	s->room -= k;
	return (ssize_t)k;
}

/* Only host port 7000 listens. */
static int
f_open(void *arg, uint32_t port)
{
	(void)arg;
	if (port != 7000)
		return -ECONNREFUSED;
	for (int i = 0; i < NSOCK; i++) {
		if (!socks[i].open) {
			socks[i] = (struct fsock){1, 100, 0, 3000};
			return i;
		}
	}
	return -EMFILE;
}

/* Half-close: only checks the id. */
static void
f_shutdown_wr(void *arg, int id)
{
	(void)arg;
	sock(id);
}

/* Close: later use of the id aborts. */
static void
f_close(void *arg, int id)
{
	(void)arg;
	sock(id)->open = 0;
}

static const struct vsock_ops ops = {
    f_readv,
    f_writev,
    f_open,
    f_shutdown_wr,
    f_close,
};

/* Every chain taken was given back, exactly once. */
static void
check_ring(const struct vring *vr)
{
	if (vr->last_avail != vr->used_idx)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t allow[] = {7000};
	struct vsock_cfg cfg = {3, 4096, 100, 16, allow, 1, 0};
	struct vhu d;
	struct vsock *vs;
	uint64_t now = 1000;
	unsigned ntx, nrx;

	if (ram_fd < 0) {
		ram_fd = memfd_create("fuzz-ram", MFD_CLOEXEC);
		if (ram_fd < 0 || ftruncate(ram_fd, RAM_SIZE) != 0)
			abort();
		ram = mmap(NULL, RAM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		    ram_fd, 0);
		if (ram == MAP_FAILED)
			abort();
	}
	if (size < 8)
		return 0;
	memset(ram, 0, RAM_SIZE);
	memcpy(ram, data, size < RAM_SIZE ? size : RAM_SIZE);
	ntx = 1u << (data[0] & 7); /* 1..128 entries */
	nrx = 1u << ((data[0] >> 4) & 7);

	vhu_init(&d, -1, 3, NULL, NULL);
	if (mem_add(&d.mem, RAM_GPA, RAM_SIZE, RAM_UVA, 0, ram_fd) != 0)
		abort();
	for (int q = 0; q < 2; q++) {
		struct vring *vr = &d.vq[q];
		uint64_t base = RAM_UVA + (q ? 0 : 0x1000);

		vr->num = q ? ntx : nrx;
		vr->desc_uva = base;
		vr->avail_uva = base + 0x800;
		vr->used_uva = base + 0xc00;
		vr->addr_set = 1;
		if (vring_map(vr, &d.mem) != 0)
			abort();
		vr->last_avail = vr->used_idx = (uint16_t)(data[1 + q] * 257);
		vr->started = vr->enabled = 1;
	}

	memset(socks, 0, sizeof socks);
	vs = vsock_new(&cfg, &ops, NULL);
	socks[NSOCK - 1] =
	    (struct fsock){1, data[3] * 64u, data[4] & 1, data[5] * 32u};
	vsock_connect(vs, NSOCK - 1, 5005, now);
	for (int round = 0; round < 4; round++) {
		/* rx first: the host's REQUEST goes out before the guest's
		 * packets are read, so its RESPONSE can match */
		pump_rx(&d, vs, now, 64);
		pump_tx(&d, vs, now, 64);
		pump_rx(&d, vs, now, 64);
		for (int i = 0; i < NSOCK; i++) {
			if (socks[i].open) {
				socks[i].room += 1000;
				vsock_sock_event(vs, i,
				    VSOCK_EV_IN | VSOCK_EV_OUT |
				        (round == 3 && (data[6] & 1)
				                ? VSOCK_EV_HUP
				                : 0),
				    now);
			}
		}
		now += data[7] * 8u;
		vsock_tick(vs, now);
		if (vs->nconns > cfg.max_conns || vs->rst_len > VSOCK_RST_QUEUE)
			abort();
		check_ring(&d.vq[0]);
		check_ring(&d.vq[1]);
	}
	vsock_free(vs);
	for (int i = 0; i < NSOCK; i++) {
		if (socks[i].open)
			abort(); /* leaked by the engine */
	}
	mem_clear(&d.mem);

	{
		uint32_t port;
		size_t linelen;
		size_t n = size - 8 < 80 ? size - 8 : 80;
		const uint8_t *line = data + size - n;
		int r = connect_parse((const char *)line, n, &port, &linelen);

		if (r == CONNECT_DONE &&
		    (linelen > n || linelen > CONNECT_MAX_LINE ||
		        line[linelen - 1] != '\n' || port == UINT32_MAX))
			abort();
	}
	return 0;
}
