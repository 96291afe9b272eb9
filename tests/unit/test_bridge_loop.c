/*
 * test_bridge_loop.c: the whole bridge (bridge_open + bridge_run) in a
 * child process, with this process playing QEMU (the vhost-user handshake
 * over the real socket) and the guest driver (rings in a shared memfd,
 * kicks and calls through real eventfds), and real Unix-socket clients.
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "test_bridge_fake.h"

#define NRX 32 /* rx buffers posted: header + 4 KiB, two descriptors */

struct drv {
	char dir[64], vhu[96], uds[96];
	pid_t pid;
	int qemu;
	struct fake_guest g;
	struct fake_ring rx, tx;
	int kick[2], call[2];
	uint64_t rxbuf[NRX][2];
	uint64_t txbuf[64];
	unsigned tx_slot;
	uint16_t tx_inflight;
};

static rlim_t child_nofile; /* RLIMIT_NOFILE for the bridge, 0: as is */

/* Start the bridge in a child; 0 when its sockets are up. */
static int
start_bridge(struct drv *d, uint32_t line_timeout, uint32_t allow)
{
	int p[2];
	char c;

	strcpy(d->dir, "/tmp/vmux-bridge-test.XXXXXX");
	if (mkdtemp(d->dir) == NULL || pipe(p) != 0)
		return -1;
	snprintf(d->vhu, sizeof d->vhu, "%s/vhu", d->dir);
	snprintf(d->uds, sizeof d->uds, "%s/vsock", d->dir);
	d->pid = fork();
	if (d->pid == 0) {
		struct bridge_cfg cfg = {0};
		struct bridge *b;
		char *cause;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (child_nofile > 0) {
			struct rlimit rl = {child_nofile, child_nofile};

			setrlimit(RLIMIT_NOFILE, &rl);
		}
		cfg.vhu_path = d->vhu;
		cfg.uds_path = d->uds;
		cfg.guest_cid = 3;
		cfg.connect_timeout_ms = 500;
		cfg.line_timeout_ms = line_timeout;
		cfg.allow[0] = allow;
		cfg.nallow = allow ? 1 : 0;
		b = bridge_open(&cfg, &cause);
		if (b == NULL)
			_exit(3);
		if (write(p[1], "r", 1) != 1)
			_exit(4);
		int st = bridge_run(b);
		bridge_close(b);
		exit(st); /* not _exit: let LeakSanitizer look */
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1)
		return -1;
	close(p[0]);
	return 0;
}

/* Wait for the bridge to exit; its status, or -1. */
static int
bridge_exit(struct drv *d)
{
	int st;

	for (int i = 0; i < 500; i++) {
		if (waitpid(d->pid, &st, WNOHANG) == d->pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		usleep(10000);
	}
	kill(d->pid, SIGKILL);
	waitpid(d->pid, &st, 0);
	return -1;
}

static int
unix_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	strcpy(sa.sun_path, path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Expect one u64 reply to req. */
static int
reply_u64(int fd, uint32_t req, uint64_t *v)
{
	uint8_t buf[20];
	uint32_t h[3];

	if (read_full(fd, buf, 20) != 20)
		return -1;
	memcpy(h, buf, 12);
	memcpy(v, buf + 12, 8);
	return h[0] == req && h[1] == 5 && h[2] == 8 ? 0 : -1;
}

/* Connect as QEMU and bring the device up as at DRIVER_OK. */
static int
handshake(struct drv *d)
{
	uint64_t v;
	struct {
		uint32_t n, pad;
		uint64_t gpa, size, uva, off;
	} mt = {1, 0, FG_GPA, FG_SIZE, FG_UVA, 0};
	uint8_t cfg[20] = {0}, got[32];

	d->qemu = unix_connect(d->vhu);
	if (d->qemu < 0 || fg_init(&d->g) != 0)
		return -1;
	fr_init(&d->rx, &d->g, 128, 0);
	fr_init(&d->tx, &d->g, 128, 0x10000);
	if (fv_send(d->qemu, VHU_GET_FEATURES, 1, NULL, 0, NULL, 0) ||
	    reply_u64(d->qemu, VHU_GET_FEATURES, &v))
		return -1;
	v = VHU_PF_REPLY_ACK | VHU_PF_CONFIG | VHU_PF_MQ;
	fv_send(d->qemu, VHU_SET_PROTOCOL_FEATURES, 1, &v, 8, NULL, 0);
	fv_send(d->qemu, VHU_SET_OWNER, 1, NULL, 0, NULL, 0);
	cfg[4] = 8;
	fv_send(d->qemu, VHU_GET_CONFIG, 1, cfg, 20, NULL, 0);
	if (read_full(d->qemu, got, 32) != 32 || got[24] != 3)
		return -1;
	v = VHU_FEATURES;
	fv_send(d->qemu, VHU_SET_FEATURES, 1, &v, 8, NULL, 0);
	fv_send(d->qemu, VHU_SET_MEM_TABLE, 1 | 8, &mt, sizeof mt, &d->g.fd, 1);
	if (reply_u64(d->qemu, VHU_SET_MEM_TABLE, &v) || v != 0)
		return -1;
	for (uint32_t i = 0; i < 2; i++) {
		struct fake_ring *r = i ? &d->tx : &d->rx;
		uint32_t st[2] = {i, 128};
		struct {
			uint32_t index, flags;
			uint64_t desc, used, avail, log;
		} addr = {
		    i, 0, r->vr.desc_uva, r->vr.used_uva, r->vr.avail_uva, 0};
		uint64_t idx = i;

		d->kick[i] = eventfd(0, EFD_CLOEXEC);
		d->call[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		fv_send(d->qemu, VHU_SET_VRING_NUM, 1, st, 8, NULL, 0);
		st[1] = 0;
		fv_send(d->qemu, VHU_SET_VRING_BASE, 1, st, 8, NULL, 0);
		fv_send(d->qemu, VHU_SET_VRING_ADDR, 1, &addr, 40, NULL, 0);
		fv_send(
		    d->qemu, VHU_SET_VRING_KICK, 1, &idx, 8, &d->kick[i], 1);
		fv_send(
		    d->qemu, VHU_SET_VRING_CALL, 1, &idx, 8, &d->call[i], 1);
		st[1] = 1;
		fv_send(d->qemu, VHU_SET_VRING_ENABLE, 1 | 8, st, 8, NULL, 0);
		if (reply_u64(d->qemu, VHU_SET_VRING_ENABLE, &v) || v != 0)
			return -1;
	}
	/* rx buffers, as Linux 6.1 posts them */
	for (int i = 0; i < NRX; i++) {
		d->rxbuf[i][0] = fg_alloc(&d->g, VSOCK_HDR_LEN);
		d->rxbuf[i][1] = fg_alloc(&d->g, 4096);
		fr_desc(&d->rx, 2 * i, d->rxbuf[i][0], VSOCK_HDR_LEN,
		    VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 2 * i + 1);
		fr_desc(&d->rx, 2 * i + 1, d->rxbuf[i][1], 4096,
		    VRING_DESC_F_WRITE, 0);
		fr_publish(&d->rx, 2 * i);
	}
	for (int i = 0; i < 64; i++)
		d->txbuf[i] = fg_alloc(&d->g, VSOCK_HDR_LEN + 4096);
	v = 1;
	return write(d->kick[0], &v, 8) == 8 ? 0 : -1;
}

/* The guest receives one packet (waiting up to 5 s). 1, or 0 if none. */
static int
guest_recv(struct drv *d, struct vsock_hdr *h, char *payload, int wait_ms)
{
	uint32_t id, len;
	uint64_t v;

	for (int waited = 0;; waited += 10) {
		if (fr_used(&d->rx, &id, &len)) {
			int i = (int)id / 2;

			if (id % 2 != 0 || i >= NRX || len < VSOCK_HDR_LEN)
				abort();
			vsock_hdr_decode(h, fg_ptr(&d->g, d->rxbuf[i][0]));
			if (h->len != len - VSOCK_HDR_LEN || h->len > 4096)
				abort();
			memcpy(payload, fg_ptr(&d->g, d->rxbuf[i][1]), h->len);
			payload[h->len] = '\0';
			fr_publish(&d->rx, (uint16_t)id);
			v = 1;
			if (write(d->kick[0], &v, 8) != 8)
				abort();
			return 1;
		}
		if (waited >= wait_ms)
			return 0;
		struct pollfd p = {d->call[0], POLLIN, 0};
		if (poll(&p, 1, 10) == 1 && read(d->call[0], &v, 8) != 8)
			abort();
	}
}

/* The guest sends one packet on tx. */
static void
guest_send(struct drv *d, uint16_t op, uint32_t gport, uint32_t hport,
    uint32_t flags, const char *data)
{
	struct vsock_hdr h = {3, 2, gport, hport, 0, 1, op, flags, 262144, 0};
	uint32_t id, len;
	uint64_t b = d->txbuf[d->tx_slot % 64], v = 1;
	uint16_t slot = (uint16_t)(2 * (d->tx_slot % 64));

	/* reclaim sent buffers; wait (5 s at most) while all 64 are out */
	for (int waited = 0;; waited += 10) {
		while (fr_used(&d->tx, &id, &len))
			d->tx_inflight--;
		if (d->tx_inflight < 64)
			break;
		if (waited >= 5000)
			abort(); /* the bridge stopped consuming tx */
		struct pollfd p = {d->call[1], POLLIN, 0};
		uint64_t drained;
		if (poll(&p, 1, 10) == 1 && read(d->call[1], &drained, 8) != 8)
			abort();
	}
	h.len = data ? (uint32_t)strlen(data) : 0;
	vsock_hdr_encode(fg_ptr(&d->g, b), &h);
	if (h.len)
		memcpy(fg_ptr(&d->g, b) + 64, data, h.len);
	fr_desc(&d->tx, slot, b, VSOCK_HDR_LEN, h.len ? VRING_DESC_F_NEXT : 0,
	    slot + 1);
	fr_desc(&d->tx, slot + 1, b + 64, h.len, 0, 0);
	fr_publish(&d->tx, slot);
	d->tx_slot++;
	d->tx_inflight++;
	if (write(d->kick[1], &v, 8) != 8)
		abort();
}

/* Read from a client until n bytes or EOF (5 s at most). */
static ssize_t
client_read(int fd, char *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		struct pollfd p = {fd, POLLIN, 0};
		ssize_t r;

		if (poll(&p, 1, 5000) != 1)
			return -1;
		r = read(fd, buf + got, n - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	buf[got] = '\0';
	return (ssize_t)got;
}

static void
expect_pkt(struct drv *d, uint16_t op, uint32_t gport, uint32_t hport,
    const char *data)
{
	struct vsock_hdr h;
	char payload[4097];

	CHECK(guest_recv(d, &h, payload, 5000));
	if (h.op != op)
		unit_fail(__FILE__, __LINE__, "op %u, want %u", h.op, op);
	CHECK_INT(h.op, op);
	CHECK_INT(h.src_cid, 2);
	CHECK_INT(h.dst_cid, 3);
	CHECK_INT(h.dst_port, gport);
	CHECK_INT(h.src_port, hport);
	if (data)
		CHECK_STR(payload, data);
}

static void
cleanup(struct drv *d)
{
	char path[128];

	kill(d->pid, SIGKILL);
	waitpid(d->pid, NULL, 0);
	snprintf(path, sizeof path, "%s_7000", d->uds);
	unlink(path);
	unlink(d->vhu);
	unlink(d->uds);
	rmdir(d->dir);
}

TEST(loop_connect_data_and_close)
{
	struct drv d = {0};
	char buf[256];
	int c;
	uint32_t L = 1u << 30;

	CHECK(start_bridge(&d, 5000, 0) == 0);
	CHECK(handshake(&d) == 0);
	c = unix_connect(d.uds);
	CHECK(c >= 0);
	CHECK(write(c, "CONN", 4) == 4);
	usleep(20000); /* a fragmented line */
	CHECK(write(c, "ECT 5005\r\nfirst", 15) == 15);
	expect_pkt(&d, VSOCK_OP_REQUEST, 5005, L, NULL);
	guest_send(&d, VSOCK_OP_RESPONSE, 5005, L, 0, NULL);
	CHECK_INT(client_read(c, buf, 14), 14);
	CHECK_STR(buf, "OK 1073741824\n");
	expect_pkt(&d, VSOCK_OP_RW, 5005, L, "first");
	CHECK(write(c, "second", 6) == 6);
	expect_pkt(&d, VSOCK_OP_RW, 5005, L, "second");
	guest_send(&d, VSOCK_OP_RW, 5005, L, 0, "answer");
	CHECK_INT(client_read(c, buf, 6), 6);
	CHECK_STR(buf, "answer");
	/* the guest closes: the client reads EOF */
	guest_send(&d, VSOCK_OP_SHUTDOWN, 5005, L, 3, NULL);
	expect_pkt(&d, VSOCK_OP_RST, 5005, L, NULL);
	CHECK_INT(client_read(c, buf, 10), 0);
	close(c);

	/* no listener: RST, zero bytes, and the next port */
	c = unix_connect(d.uds);
	CHECK(write(c, "CONNECT 6001\n", 13) == 13);
	expect_pkt(&d, VSOCK_OP_REQUEST, 6001, L + 1, NULL);
	guest_send(&d, VSOCK_OP_RST, 6001, L + 1, 0, NULL);
	CHECK_INT(client_read(c, buf, 10), 0);
	close(c);

	/* QEMU goes away: the bridge exits 0 and removes its sockets */
	close(d.qemu);
	CHECK_INT(bridge_exit(&d), 0);
	struct stat st;
	CHECK(stat(d.uds, &st) != 0 && stat(d.vhu, &st) != 0);
	cleanup(&d);
}

TEST(loop_bad_lines_get_zero_bytes)
{
	struct drv d = {0};
	char buf[256];
	int c;

	CHECK(start_bridge(&d, 300, 0) == 0);
	CHECK(handshake(&d) == 0);
	c = unix_connect(d.uds);
	CHECK(write(c, "HELLO 5005\n", 11) == 11);
	CHECK_INT(client_read(c, buf, 10), 0);
	close(c);
	c = unix_connect(d.uds);
	memset(buf, '7', 200);
	CHECK(write(c, buf, 200) == 200);
	CHECK_INT(client_read(c, buf, 10), 0);
	close(c);
	c = unix_connect(d.uds);
	CHECK(write(c, "CONNECT 99999999999\n", 20) == 20);
	CHECK_INT(client_read(c, buf, 10), 0);
	close(c);
	/* too slow: closed at the line deadline */
	c = unix_connect(d.uds);
	CHECK(write(c, "CONNECT 50", 10) == 10);
	CHECK_INT(client_read(c, buf, 10), 0);
	close(c);
	/* half a line then EOF */
	c = unix_connect(d.uds);
	CHECK(write(c, "CONNECT 50", 10) == 10);
	shutdown(c, SHUT_WR);
	CHECK_INT(client_read(c, buf, 10), 0);
	close(c);
	/* the guest heard of none of these */
	struct vsock_hdr h;
	CHECK(!guest_recv(&d, &h, buf, 100));
	kill(d.pid, SIGTERM);
	CHECK_INT(bridge_exit(&d), 0);
	cleanup(&d);
}

TEST(loop_guest_initiated)
{
	struct drv d = {0};
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char buf[256];
	int l, c;

	CHECK(start_bridge(&d, 5000, 7000) == 0);
	CHECK(handshake(&d) == 0);
	/* nothing listens on 7000 yet: RST */
	guest_send(&d, VSOCK_OP_REQUEST, 1111, 7000, 0, NULL);
	expect_pkt(&d, VSOCK_OP_RST, 1111, 7000, NULL);
	/* not allowed */
	guest_send(&d, VSOCK_OP_REQUEST, 1112, 7001, 0, NULL);
	expect_pkt(&d, VSOCK_OP_RST, 1112, 7001, NULL);
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s_7000", d.uds);
	l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(bind(l, (struct sockaddr *)&sa, sizeof sa) == 0);
	CHECK(listen(l, 4) == 0);
	guest_send(&d, VSOCK_OP_REQUEST, 1113, 7000, 0, NULL);
	expect_pkt(&d, VSOCK_OP_RESPONSE, 1113, 7000, NULL);
	c = accept(l, NULL, NULL);
	CHECK(c >= 0);
	guest_send(&d, VSOCK_OP_RW, 1113, 7000, 0, "up");
	CHECK_INT(client_read(c, buf, 2), 2);
	CHECK_STR(buf, "up");
	CHECK(write(c, "down", 4) == 4);
	expect_pkt(&d, VSOCK_OP_RW, 1113, 7000, "down");
	/* the host side closes: SHUTDOWN, then the guest's RST */
	close(c);
	expect_pkt(&d, VSOCK_OP_SHUTDOWN, 1113, 7000, NULL);
	guest_send(&d, VSOCK_OP_RST, 1113, 7000, 0, NULL);
	CHECK(!guest_recv(&d, &(struct vsock_hdr){0}, buf, 100));
	close(l);
	close(d.qemu);
	CHECK_INT(bridge_exit(&d), 0);
	cleanup(&d);
}

TEST(loop_connect_before_the_guest_is_up_and_timeout)
{
	struct drv d = {0};
	char buf[64];
	int c;

	CHECK(start_bridge(&d, 5000, 0) == 0);
	/* a client before QEMU even connected: waits for the guest */
	c = unix_connect(d.uds);
	CHECK(write(c, "CONNECT 5005\n", 13) == 13);
	CHECK(handshake(&d) == 0);
	expect_pkt(&d, VSOCK_OP_REQUEST, 5005, 1u << 30, NULL);
	/* the guest never answers: closed with nothing at the deadline */
	CHECK_INT(client_read(c, buf, 10), 0);
	expect_pkt(&d, VSOCK_OP_RST, 5005, 1u << 30, NULL);
	close(c);
	kill(d.pid, SIGINT);
	CHECK_INT(bridge_exit(&d), 0);
	cleanup(&d);
}

TEST(loop_out_of_fds_refuses_clients_and_recovers)
{
	struct drv d = {0};
	char buf[64];
	int c[60], n = 0, zero = 0;

	child_nofile = 40;
	CHECK(start_bridge(&d, 5000, 0) == 0);
	CHECK(handshake(&d) == 0);
	/* more clients than the bridge has fds: the extra ones are closed */
	for (int i = 0; i < 60; i++) {
		c[i] = unix_connect(d.uds);
		CHECK(c[i] >= 0);
	}
	for (int i = 0; i < 60; i++) {
		struct pollfd p = {c[i], POLLIN, 0};

		if (poll(&p, 1, 200) == 1 && read(c[i], buf, 1) == 0)
			zero++;
	}
	CHECK(zero > 0);
	for (int i = 0; i < 60; i++)
		close(c[i]);
	/* and it still serves once fds are free again */
	for (int tries = 0; tries < 50 && n == 0; tries++) {
		int k = unix_connect(d.uds);

		CHECK(write(k, "CONNECT 5005\n", 13) == 13);
		struct vsock_hdr h;
		if (guest_recv(&d, &h, buf, 200) && h.op == VSOCK_OP_REQUEST) {
			guest_send(
			    &d, VSOCK_OP_RESPONSE, 5005, h.src_port, 0, NULL);
			CHECK_INT(client_read(k, buf, 14), 14);
			n = 1;
		}
		close(k);
	}
	CHECK(n == 1);
	kill(d.pid, SIGTERM);
	CHECK_INT(bridge_exit(&d), 0);
	cleanup(&d);
}

TEST(loop_300_connections_at_once)
{
	enum { N = 300 };
	struct drv d = {0};
	static int c[N];
	static uint32_t lport[N];
	char buf[4200];
	struct vsock_hdr h;
	int got = 0;

	CHECK(start_bridge(&d, 5000, 0) == 0);
	CHECK(handshake(&d) == 0);
	/* N clients ask for guest ports 10000 + i; the guest accepts all */
	for (int i = 0; i < N; i++) {
		char line[32];
		int n = snprintf(line, sizeof line, "CONNECT %d\n", 10000 + i);

		c[i] = unix_connect(d.uds);
		CHECK(c[i] >= 0);
		CHECK(write(c[i], line, (size_t)n) == n);
	}
	while (got < N && guest_recv(&d, &h, buf, 5000)) {
		CHECK_INT(h.op, VSOCK_OP_REQUEST);
		CHECK(h.dst_port >= 10000 && h.dst_port < 10000 + N);
		lport[h.dst_port - 10000] = h.src_port;
		guest_send(
		    &d, VSOCK_OP_RESPONSE, h.dst_port, h.src_port, 0, NULL);
		got++;
	}
	CHECK_INT(got, N);
	/* every one is live at once: each client gets its own reply */
	for (int i = 0; i < N; i++) {
		char want[32];

		snprintf(want, sizeof want, "to %d", i);
		guest_send(&d, VSOCK_OP_RW, 10000 + i, lport[i], 0, want);
		CHECK_INT(client_read(c[i], buf, 14 + strlen(want)),
		    14 + strlen(want));
		CHECK_STR(buf + 14, want);
	}
	for (int i = 0; i < N; i++) {
		char msg[32];
		int n = snprintf(msg, sizeof msg, "from %d", i);

		CHECK(write(c[i], msg, (size_t)n) == n);
	}
	got = 0;
	while (got < N && guest_recv(&d, &h, buf, 5000)) {
		char want[32];

		CHECK_INT(h.op, VSOCK_OP_RW);
		snprintf(want, sizeof want, "from %u", h.dst_port - 10000);
		CHECK_STR(buf, want);
		got++;
	}
	CHECK_INT(got, N);
	for (int i = 0; i < N; i++)
		close(c[i]);
	/* each hang-up reaches the guest as SHUTDOWN */
	got = 0;
	while (got < N && guest_recv(&d, &h, buf, 5000)) {
		CHECK_INT(h.op, VSOCK_OP_SHUTDOWN);
		guest_send(&d, VSOCK_OP_RST, h.dst_port, h.src_port, 0, NULL);
		got++;
	}
	CHECK_INT(got, N);
	close(d.qemu);
	CHECK_INT(bridge_exit(&d), 0);
	cleanup(&d);
}
