/*
 * test_bridge_vhu.c: the vhost-user dispatcher, replayed over a socketpair
 * with real memfd and eventfd descriptors; replies checked byte for byte,
 * and checked absent when none is due.
 */
#include <dirent.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "test_bridge_fake.h"

struct rec {
	int kicks[VHU_NQUEUES]; /* the fd the owner should watch */
	int changes;
};

static void
rec_kick(void *arg, int idx, int oldfd, int newfd)
{
	struct rec *r = arg;

	if (r->kicks[idx] != oldfd)
		abort(); /* told about a different old fd */
	r->kicks[idx] = newfd;
	r->changes++;
}

static const struct vhu_ops rec_ops = {rec_kick};

struct t {
	int qemu; /* our end */
	struct vhu d;
	struct rec rec;
};

static int
t_init(struct t *t)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return -1;
	t->qemu = sv[0];
	memset(&t->rec, 0, sizeof t->rec);
	t->rec.kicks[0] = t->rec.kicks[1] = -1;
	vhu_init(&t->d, sv[1], 3, &rec_ops, &t->rec);
	return 0;
}

/* Send a message and let the device handle it; vhu_dispatch's result. */
static int
roundtrip(struct t *t, uint32_t req, uint32_t flags, const void *p,
    uint32_t size, const int *fds, int nfds)
{
	if (fv_send(t->qemu, req, flags, p, size, fds, nfds) != 0)
		return -999;
	return vhu_dispatch(&t->d);
}

/* Bytes waiting on our end (all of them), without blocking. */
static ssize_t
pending(int fd, void *buf, size_t n)
{
	ssize_t r = recv(fd, buf, n, MSG_DONTWAIT);

	return r < 0 && errno == EAGAIN ? 0 : r;
}

/* Expect exactly this reply and nothing more. */
static void
expect_reply(struct t *t, uint32_t req, const void *p, uint32_t size)
{
	uint8_t got[1024], want[1024];
	uint32_t h[3] = {req, 0x5, size};

	memcpy(want, h, 12);
	memcpy(want + 12, p, size);
	CHECK_INT(pending(t->qemu, got, sizeof got), 12 + size);
	CHECK_MEM(got, want, 12 + size);
}

static void
expect_u64(struct t *t, uint32_t req, uint64_t v)
{
	expect_reply(t, req, &v, 8);
}

static void
expect_silence(struct t *t)
{
	uint8_t got[64];

	CHECK_INT(pending(t->qemu, got, sizeof got), 0);
}

/* Number of open fds in this process. */
static int
open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the DIR's own fd */
}

TEST(vhu_feature_negotiation_replies)
{
	struct t t;
	uint64_t v;

	CHECK(t_init(&t) == 0);
	CHECK_INT(roundtrip(&t, VHU_GET_FEATURES, 1, NULL, 0, NULL, 0), 0);
	/* VERSION_1, PROTOCOL_FEATURES and LOG_ALL (offered, never done) */
	expect_u64(
	    &t, VHU_GET_FEATURES, (1ULL << 32) | (1ULL << 30) | (1ULL << 26));
	CHECK_INT(
	    roundtrip(&t, VHU_GET_PROTOCOL_FEATURES, 1, NULL, 0, NULL, 0), 0);
	/* MQ, LOG_SHMFD, REPLY_ACK, CONFIG */
	expect_u64(&t, VHU_GET_PROTOCOL_FEATURES,
	    (1 << 0) | (1 << 1) | (1 << 3) | (1 << 9));
	v = (1 << 0) | (1 << 9); /* no REPLY_ACK yet */
	CHECK_INT(
	    roundtrip(&t, VHU_SET_PROTOCOL_FEATURES, 1, &v, 8, NULL, 0), 0);
	expect_silence(&t);
	CHECK_INT(roundtrip(&t, VHU_GET_QUEUE_NUM, 1, NULL, 0, NULL, 0), 0);
	expect_u64(&t, VHU_GET_QUEUE_NUM, 2);
	CHECK_INT(roundtrip(&t, VHU_SET_OWNER, 1, NULL, 0, NULL, 0), 0);
	expect_silence(&t);
	/* NEED_REPLY without REPLY_ACK negotiated: still no reply */
	CHECK_INT(roundtrip(&t, VHU_SET_OWNER, 1 | 8, NULL, 0, NULL, 0), 0);
	expect_silence(&t);
	v = (1ULL << 32) | (1ULL << 30);
	CHECK_INT(roundtrip(&t, VHU_SET_FEATURES, 1, &v, 8, NULL, 0), 0);
	expect_silence(&t);
	CHECK(t.d.features == v);
}

/*
 * The dirty log QEMU asks for before it saves a VM: SET_LOG_BASE is
 * answered (a u64 0) only once LOG_SHMFD was negotiated, as QEMU waits for
 * it only then; its fd and SET_LOG_FD's are closed, nothing is mapped.
 */
TEST(vhu_dirty_log_answered_never_kept)
{
	struct t t;
	uint64_t v = 1 << 1, log[2] = {4096, 0};
	int before, fd;

	CHECK(t_init(&t) == 0);
	before = open_fds();
	fd = memfd_create("log", 0);
	CHECK(fd >= 0 && ftruncate(fd, 4096) == 0);
	CHECK_INT(roundtrip(&t, VHU_SET_LOG_BASE, 1, log, 16, &fd, 1), 0);
	expect_silence(&t); /* LOG_SHMFD not negotiated: no reply */
	CHECK_INT(
	    roundtrip(&t, VHU_SET_PROTOCOL_FEATURES, 1, &v, 8, NULL, 0), 0);
	CHECK_INT(roundtrip(&t, VHU_SET_LOG_BASE, 1, log, 16, &fd, 1), 0);
	expect_u64(&t, VHU_SET_LOG_BASE, 0);
	CHECK_INT(roundtrip(&t, VHU_SET_LOG_FD, 1, NULL, 0, &fd, 1), 0);
	expect_silence(&t);
	CHECK_INT(open_fds(), before + 1); /* only ours: the copies closed */
	close(fd);
	v = (1ULL << 32) | (1ULL << 30) | (1ULL << 26); /* as a save sets */
	CHECK_INT(roundtrip(&t, VHU_SET_FEATURES, 1, &v, 8, NULL, 0), 0);
	expect_silence(&t);
	CHECK(t.d.features == v);
}

TEST(vhu_reply_ack_only_when_asked)
{
	struct t t;
	uint64_t v = (1 << 3) | (1 << 9);
	uint32_t state[2] = {0, 3}; /* num not a power of two */

	CHECK(t_init(&t) == 0);
	CHECK_INT(
	    roundtrip(&t, VHU_SET_PROTOCOL_FEATURES, 1, &v, 8, NULL, 0), 0);
	expect_silence(&t);
	CHECK_INT(roundtrip(&t, VHU_SET_OWNER, 1 | 8, NULL, 0, NULL, 0), 0);
	expect_u64(&t, VHU_SET_OWNER, 0);
	CHECK_INT(roundtrip(&t, VHU_SET_OWNER, 1, NULL, 0, NULL, 0), 0);
	expect_silence(&t);
	CHECK_INT(
	    roundtrip(&t, VHU_SET_VRING_NUM, 1 | 8, state, 8, NULL, 0), 0);
	expect_u64(&t, VHU_SET_VRING_NUM, 1);
	state[1] = 256;
	CHECK_INT(
	    roundtrip(&t, VHU_SET_VRING_NUM, 1 | 8, state, 8, NULL, 0), 0);
	expect_u64(&t, VHU_SET_VRING_NUM, 0);
	state[0] = 2; /* the event queue never reaches the back end */
	CHECK_INT(
	    roundtrip(&t, VHU_SET_VRING_NUM, 1 | 8, state, 8, NULL, 0), 0);
	expect_u64(&t, VHU_SET_VRING_NUM, 1);
	/* a legacy driver (no VERSION_1) is fine */
	uint64_t f = 1ULL << 30;
	CHECK_INT(roundtrip(&t, VHU_SET_FEATURES, 1 | 8, &f, 8, NULL, 0), 0);
	expect_u64(&t, VHU_SET_FEATURES, 0);
	CHECK_INT(roundtrip(&t, 99, 1 | 8, NULL, 0, NULL, 0), 0);
	expect_u64(&t, 99, 1);
	CHECK_INT(roundtrip(&t, 99, 1, NULL, 0, NULL, 0), 0);
	expect_silence(&t);
	/* GET_* with NEED_REPLY get their normal reply only */
	CHECK_INT(roundtrip(&t, VHU_GET_FEATURES, 1 | 8, NULL, 0, NULL, 0), 0);
	expect_u64(
	    &t, VHU_GET_FEATURES, (1ULL << 32) | (1ULL << 30) | (1ULL << 26));
}

TEST(vhu_get_config_is_the_cid)
{
	struct t t;
	uint8_t req[20] = {0}, want[20] = {0};
	uint32_t off = 0, size = 8;

	CHECK(t_init(&t) == 0);
	t.d.cid = 0x0102030405ULL;
	memcpy(req, &off, 4);
	memcpy(req + 4, &size, 4);
	CHECK_INT(roundtrip(&t, VHU_GET_CONFIG, 1, req, 20, NULL, 0), 0);
	memcpy(want, req, 12);
	uint64_t cid = htole64(0x0102030405ULL);
	memcpy(want + 12, &cid, 8);
	expect_reply(&t, VHU_GET_CONFIG, want, 20);
	/* the upper half alone */
	off = 4;
	size = 4;
	memcpy(req, &off, 4);
	memcpy(req + 4, &size, 4);
	CHECK_INT(roundtrip(&t, VHU_GET_CONFIG, 1, req, 16, NULL, 0), 0);
	memcpy(want, req, 12);
	memcpy(want + 12, (uint8_t *)&cid + 4, 4);
	expect_reply(&t, VHU_GET_CONFIG, want, 16);
	/* past the 8 bytes of config: zeros, never a crash */
	off = 6;
	size = 64;
	memcpy(req, &off, 4);
	memcpy(req + 4, &size, 4);
	CHECK_INT(roundtrip(&t, VHU_GET_CONFIG, 1, req, 12, NULL, 0), 0);
	uint8_t want2[12 + 64] = {0};
	memcpy(want2, req, 12);
	memcpy(want2 + 12, (uint8_t *)&cid + 6, 2);
	expect_reply(&t, VHU_GET_CONFIG, want2, 12 + 64);
}

/* Start ring idx on fake ring r as QEMU does at DRIVER_OK. */
static void
start_ring(struct t *t, struct fake_ring *r, uint32_t idx, uint16_t base,
    int *kick, int *call)
{
	uint32_t st[2] = {idx, r->num};
	struct {
		uint32_t index, flags;
		uint64_t desc, used, avail, log;
	} addr = {idx, 0, r->vr.desc_uva, r->vr.used_uva, r->vr.avail_uva, 0};
	uint64_t v = idx;

	*kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	*call = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	CHECK_INT(roundtrip(t, VHU_SET_VRING_NUM, 1, st, 8, NULL, 0), 0);
	st[1] = base;
	CHECK_INT(roundtrip(t, VHU_SET_VRING_BASE, 1, st, 8, NULL, 0), 0);
	CHECK_INT(roundtrip(t, VHU_SET_VRING_ADDR, 1, &addr, 40, NULL, 0), 0);
	CHECK_INT(roundtrip(t, VHU_SET_VRING_KICK, 1, &v, 8, kick, 1), 0);
	CHECK_INT(roundtrip(t, VHU_SET_VRING_CALL, 1, &v, 8, call, 1), 0);
	st[1] = 1;
	CHECK_INT(roundtrip(t, VHU_SET_VRING_ENABLE, 1, st, 8, NULL, 0), 0);
	expect_silence(t);
}

/* SET_FEATURES + SET_MEM_TABLE of the fake guest (one region). */
static void
set_memory(struct t *t, struct fake_guest *g)
{
	uint64_t f = (1ULL << 32) | (1ULL << 30);
	struct {
		uint32_t n, pad;
		uint64_t gpa, size, uva, off;
	} mt = {1, 0, FG_GPA, FG_SIZE, FG_UVA, 0};

	CHECK_INT(roundtrip(t, VHU_SET_FEATURES, 1, &f, 8, NULL, 0), 0);
	CHECK_INT(
	    roundtrip(t, VHU_SET_MEM_TABLE, 1, &mt, sizeof mt, &g->fd, 1), 0);
	CHECK_INT(t->d.mem.n, 1);
}

TEST(vhu_rings_start_stop_and_restart)
{
	struct t t;
	struct fake_guest g;
	struct fake_ring r0, r1;
	int k0, c0, k1, c1;
	uint32_t st[2] = {1, 0};

	CHECK(t_init(&t) == 0);
	CHECK(fg_init(&g) == 0);
	fr_init(&r0, &g, 128, 0);
	fr_init(&r1, &g, 128, 0x10000);
	set_memory(&t, &g);
	start_ring(&t, &r0, 0, 0, &k0, &c0);
	start_ring(&t, &r1, 1, 0, &k1, &c1);
	CHECK(vring_ready(&t.d.vq[0]));
	CHECK(vring_ready(&t.d.vq[1]));
	CHECK(t.rec.kicks[0] >= 0 && t.rec.kicks[1] >= 0);
	CHECK(!t.d.reset); /* first start */
	/* the ring pointers land on the driver's memory */
	CHECK(t.d.vq[1].avail - t.d.mem.r[0].host == r1.avail - g.ram);
	CHECK(t.d.vq[1].used - t.d.mem.r[0].host == r1.used - g.ram);

	/* traffic happened: a pause must keep connections */
	struct fr_seg s[] = {{fg_alloc(&g, 64), 64, 0}};
	fr_chain(&r1, s, 1);
	struct vring_chain ch;
	CHECK_INT(vring_pop(&t.d.vq[1], &t.d.mem, &ch), 1);
	vring_push(&t.d.vq[1], ch.head, 0);

	CHECK_INT(roundtrip(&t, VHU_SET_VRING_ENABLE, 1, st, 8, NULL, 0), 0);
	CHECK(!vring_ready(&t.d.vq[1]));
	CHECK_INT(roundtrip(&t, VHU_GET_VRING_BASE, 1, st, 8, NULL, 0), 0);
	uint32_t want[2] = {1, 1};
	expect_reply(&t, VHU_GET_VRING_BASE, want, 8);
	CHECK_INT(t.rec.kicks[1], -1);
	CHECK(!t.d.vq[1].started);

	/* resume where it stopped: not a reset */
	start_ring(&t, &r1, 1, 1, &k1, &c1);
	CHECK(vring_ready(&t.d.vq[1]));
	CHECK(!t.d.reset);
	CHECK_INT(t.d.vq[1].used_idx, 1);

	/* guest reboot: the driver's fresh rings start from zero */
	CHECK_INT(roundtrip(&t, VHU_GET_VRING_BASE, 1, st, 8, NULL, 0), 0);
	expect_reply(&t, VHU_GET_VRING_BASE, want, 8);
	fr_set_idx(&r1, 0);
	start_ring(&t, &r1, 1, 0, &k1, &c1);
	CHECK(t.d.reset);
	CHECK_INT(t.d.vq[1].used_idx, 0);
	CHECK_INT(t.d.vq[1].last_avail, 0);
}

TEST(vhu_kick_call_fds_are_replaced_and_closed)
{
	struct t t;
	struct fake_guest g;
	struct fake_ring r0;
	int k, c, before, k2;
	uint64_t v = 0;

	CHECK(t_init(&t) == 0);
	CHECK(fg_init(&g) == 0);
	fr_init(&r0, &g, 64, 0);
	set_memory(&t, &g);
	before = open_fds();
	start_ring(&t, &r0, 0, 0, &k, &c);
	CHECK_INT(open_fds(), before + 4); /* ours and the device's copies */
	close(k);
	close(c);
	CHECK_INT(open_fds(), before + 2);
	k2 = eventfd(0, EFD_CLOEXEC);
	CHECK_INT(roundtrip(&t, VHU_SET_VRING_KICK, 1, &v, 8, &k2, 1), 0);
	close(k2);
	CHECK_INT(open_fds(), before + 2); /* old kick closed */
	v = VHU_VRING_NOFD;
	CHECK_INT(roundtrip(&t, VHU_SET_VRING_CALL, 1, &v, 8, NULL, 0), 0);
	CHECK_INT(open_fds(), before + 1);
	CHECK_INT(t.d.vq[0].call, -1);
	/* an fd for a ring that does not exist is closed, not kept */
	v = 5;
	k2 = eventfd(0, EFD_CLOEXEC);
	CHECK_INT(roundtrip(&t, VHU_SET_VRING_KICK, 1, &v, 8, &k2, 1), 0);
	close(k2);
	CHECK_INT(open_fds(), before + 1);
	/* fds on a message that takes none are closed too */
	k2 = eventfd(0, EFD_CLOEXEC);
	CHECK_INT(roundtrip(&t, VHU_SET_OWNER, 1, NULL, 0, &k2, 1), 0);
	close(k2);
	CHECK_INT(open_fds(), before + 1);
	vhu_free(&t.d);
	CHECK_INT(open_fds(), before - 1); /* the device's socket end too */
}

TEST(vhu_mem_table_errors_and_remap)
{
	struct t t;
	struct fake_guest g;
	struct fake_ring r0;
	int k, c, before;
	uint64_t v = (1 << 3) | (1 << 9);
	struct {
		uint32_t n, pad;
		uint64_t gpa, size, uva, off;
	} mt = {1, 0, FG_GPA, FG_SIZE, FG_UVA, 0};
	int fds[2];

	CHECK(t_init(&t) == 0);
	CHECK(fg_init(&g) == 0);
	fr_init(&r0, &g, 64, 0);
	CHECK_INT(
	    roundtrip(&t, VHU_SET_PROTOCOL_FEATURES, 1, &v, 8, NULL, 0), 0);
	set_memory(&t, &g);
	start_ring(&t, &r0, 0, 0, &k, &c);
	CHECK(vring_ready(&t.d.vq[0]));
	before = open_fds();
	/* two fds for one region: refused, both fds closed */
	fds[0] = fds[1] = g.fd;
	CHECK_INT(
	    roundtrip(&t, VHU_SET_MEM_TABLE, 1 | 8, &mt, sizeof mt, fds, 2), 0);
	expect_u64(&t, VHU_SET_MEM_TABLE, 1);
	CHECK_INT(open_fds(), before);
	CHECK(vring_ready(&t.d.vq[0])); /* old table kept */
	/* a table that does not cover the ring: ring unusable */
	mt.uva = FG_UVA + FG_SIZE;
	CHECK_INT(
	    roundtrip(&t, VHU_SET_MEM_TABLE, 1 | 8, &mt, sizeof mt, &g.fd, 1),
	    0);
	expect_u64(&t, VHU_SET_MEM_TABLE, 0);
	CHECK(!vring_ready(&t.d.vq[0]));
	/* the right table again: ring back */
	mt.uva = FG_UVA;
	CHECK_INT(
	    roundtrip(&t, VHU_SET_MEM_TABLE, 1 | 8, &mt, sizeof mt, &g.fd, 1),
	    0);
	expect_u64(&t, VHU_SET_MEM_TABLE, 0);
	CHECK(vring_ready(&t.d.vq[0]));
	CHECK_INT(open_fds(), before);
	/* a region larger than the file cannot be touched beyond its end:
	 * mmap succeeds but the region is still bounded by size */
	CHECK_INT(t.d.mem.n, 1);
	/* nregions over the limit */
	mt.n = 9;
	CHECK_INT(
	    roundtrip(&t, VHU_SET_MEM_TABLE, 1 | 8, &mt, sizeof mt, &g.fd, 1),
	    0);
	expect_u64(&t, VHU_SET_MEM_TABLE, 1);
	CHECK_INT(open_fds(), before);
}

TEST(vhu_reset_owner_drops_everything)
{
	struct t t;
	struct fake_guest g;
	struct fake_ring r0;
	int k, c;

	CHECK(t_init(&t) == 0);
	CHECK(fg_init(&g) == 0);
	fr_init(&r0, &g, 64, 0);
	set_memory(&t, &g);
	start_ring(&t, &r0, 0, 0, &k, &c);
	CHECK_INT(roundtrip(&t, VHU_RESET_OWNER, 1, NULL, 0, NULL, 0), 0);
	expect_silence(&t);
	CHECK(t.d.reset);
	CHECK(!vring_ready(&t.d.vq[0]));
	CHECK_INT(t.rec.kicks[0], -1);
}

TEST(vhu_oversized_payload_keeps_sync)
{
	struct t t;
	uint8_t big[1000] = {0};
	uint64_t v = (1 << 3) | (1 << 9);

	CHECK(t_init(&t) == 0);
	CHECK_INT(
	    roundtrip(&t, VHU_SET_PROTOCOL_FEATURES, 1, &v, 8, NULL, 0), 0);
	CHECK_INT(
	    roundtrip(&t, VHU_SET_MEM_TABLE, 1 | 8, big, sizeof big, NULL, 0),
	    0);
	expect_u64(&t, VHU_SET_MEM_TABLE, 1);
	CHECK_INT(roundtrip(&t, VHU_GET_QUEUE_NUM, 1, NULL, 0, NULL, 0), 0);
	expect_u64(&t, VHU_GET_QUEUE_NUM, 2);
}

TEST(vhu_end_of_session_and_bad_version)
{
	struct t t;

	CHECK(t_init(&t) == 0);
	CHECK_INT(
	    roundtrip(&t, VHU_GET_FEATURES, 2, NULL, 0, NULL, 0), -EPROTO);
	expect_silence(&t);
	/* a header cut short, then EOF */
	CHECK(write(t.qemu, "\x01\x00", 2) == 2);
	close(t.qemu);
	CHECK_INT(vhu_dispatch(&t.d), -EPIPE);
}

TEST(vhu_short_payload_reads_as_zero)
{
	struct t t;
	uint32_t idx = 1;

	CHECK(t_init(&t) == 0);
	/* GET_VRING_BASE with only 4 payload bytes still gets its reply */
	CHECK_INT(roundtrip(&t, VHU_GET_VRING_BASE, 1, &idx, 4, NULL, 0), 0);
	uint32_t want[2] = {1, 0};
	expect_reply(&t, VHU_GET_VRING_BASE, want, 8);
}
