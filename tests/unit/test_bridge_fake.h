/*
 * test_bridge_fake.h: fakes shared by the bridge's unit tests.
 *
 * fake_guest: "guest RAM" in a memfd, mapped twice like QEMU and a back end
 * would: once for the test (playing the guest driver) and once through the
 * bridge's own memory table. fake_ring: a split virtqueue the test drives
 * as the guest driver would. fake_net: in-memory sockets for the vsock
 * engine (bounded, so EAGAIN can be provoked). Static functions: each test
 * file uses what it needs.
 */
#ifndef TEST_BRIDGE_FAKE_H
#define TEST_BRIDGE_FAKE_H

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/common.h"
#include "session/bridge/bridge.h"
#include "unit.h"

#define FG_SIZE (4u << 20)
#define FG_GPA  0x40000000ULL     /* guest-physical base */
#define FG_UVA  0x7f1200000000ULL /* "QEMU's" virtual base */
#define FG_BUFS 0x100000u         /* offset where packet buffers start */

struct fake_guest {
	int fd;
	uint8_t *ram;  /* the driver's view */
	struct mem mt; /* the bridge's view */
	uint32_t next_buf;
};

__attribute__((unused)) static int
fg_init(struct fake_guest *g)
{
	memset(g, 0, sizeof *g);
	g->fd = memfd_create("fake-guest", MFD_CLOEXEC);
	if (g->fd < 0 || ftruncate(g->fd, FG_SIZE) != 0)
		return -1;
	g->ram =
	    mmap(NULL, FG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, g->fd, 0);
	if (g->ram == MAP_FAILED)
		return -1;
	mem_init(&g->mt);
	g->next_buf = FG_BUFS;
	return mem_add(&g->mt, FG_GPA, FG_SIZE, FG_UVA, 0, g->fd);
}

/* A guest buffer of len bytes; its guest-physical address. */
__attribute__((unused)) static uint64_t
fg_alloc(struct fake_guest *g, uint32_t len)
{
	uint64_t gpa = FG_GPA + g->next_buf;

	g->next_buf += (len + 63) & ~63u;
	if (g->next_buf > FG_SIZE)
		abort();
	return gpa;
}

__attribute__((unused)) static uint8_t *
fg_ptr(struct fake_guest *g, uint64_t gpa)
{
	return g->ram + (gpa - FG_GPA);
}

struct fake_ring {
	struct fake_guest *g;
	unsigned num;
	uint32_t off; /* ring area offset in guest RAM */
	uint8_t *desc, *avail, *used;
	uint16_t avail_idx, used_seen, free_desc;
	struct vring vr; /* device side, used directly by vring tests */
};

/* Ring area at ram offset off: desc, avail, used (4 KiB aligned). */
__attribute__((unused)) static void
fr_init(struct fake_ring *r, struct fake_guest *g, unsigned num, uint32_t off)
{
	memset(r, 0, sizeof *r);
	r->g = g;
	r->num = num;
	r->off = off;
	r->desc = g->ram + off;
	r->avail = r->desc + 16 * num;
	r->used = g->ram + off + ((16 * num + 6 + 2 * num + 4095) & ~4095u);
	vring_init(&r->vr);
	r->vr.num = num;
	r->vr.desc_uva = FG_UVA + off;
	r->vr.avail_uva = FG_UVA + (uint32_t)(r->avail - g->ram);
	r->vr.used_uva = FG_UVA + (uint32_t)(r->used - g->ram);
	r->vr.addr_set = 1;
}

/* Start the device side as QEMU would (map, kick, enable). */
__attribute__((unused)) static int
fr_start(struct fake_ring *r)
{
	if (vring_map(&r->vr, &r->g->mt) != 0)
		return -1;
	r->vr.started = r->vr.enabled = 1;
	return 0;
}

/* Both rings' indexes start at idx (the wrap tests start near 65535). */
__attribute__((unused)) static void
fr_set_idx(struct fake_ring *r, uint16_t idx)
{
	uint16_t le = htole16(idx);

	r->avail_idx = r->used_seen = idx;
	memcpy(r->avail + 2, &le, 2);
	memcpy(r->used + 2, &le, 2);
	r->vr.last_avail = r->vr.used_idx = idx;
}

__attribute__((unused)) static void
fr_desc(struct fake_ring *r, unsigned i, uint64_t addr, uint32_t len,
    uint16_t flags, uint16_t next)
{
	uint8_t *d = r->desc + 16 * i;
	uint64_t a = htole64(addr);
	uint32_t l = htole32(len);
	uint16_t f = htole16(flags), n = htole16(next);

	memcpy(d, &a, 8);
	memcpy(d + 8, &l, 4);
	memcpy(d + 12, &f, 2);
	memcpy(d + 14, &n, 2);
}

/* Publish head in the avail ring (release, as a driver does). */
__attribute__((unused)) static void
fr_publish(struct fake_ring *r, uint16_t head)
{
	uint16_t le = htole16(head);

	memcpy(r->avail + 4 + 2 * (r->avail_idx % r->num), &le, 2);
	r->avail_idx++;
	__atomic_store_n((uint16_t *)(r->avail + 2), htole16(r->avail_idx),
	    __ATOMIC_RELEASE);
}

struct fr_seg {
	uint64_t gpa;
	uint32_t len;
	int write;
};

/* Write a chain of n segments from descriptor slot first; publish it. */
__attribute__((unused)) static uint16_t
fr_chain(struct fake_ring *r, const struct fr_seg *s, int n)
{
	uint16_t first = r->free_desc;

	for (int i = 0; i < n; i++) {
		uint16_t idx = (uint16_t)((first + i) % r->num);
		uint16_t flags = (s[i].write ? VRING_DESC_F_WRITE : 0) |
		    (i + 1 < n ? VRING_DESC_F_NEXT : 0);

		fr_desc(r, idx, s[i].gpa, s[i].len, flags,
		    (uint16_t)((idx + 1) % r->num));
	}
	r->free_desc = (uint16_t)((first + n) % r->num);
	fr_publish(r, first);
	return first;
}

/* The next used element, or 0 if the device has not returned one. */
__attribute__((unused)) static int
fr_used(struct fake_ring *r, uint32_t *id, uint32_t *len)
{
	uint16_t idx = le16toh(
	    __atomic_load_n((uint16_t *)(r->used + 2), __ATOMIC_ACQUIRE));
	uint8_t *e;

	if (idx == r->used_seen)
		return 0;
	e = r->used + 4 + 8 * (r->used_seen % r->num);
	memcpy(id, e, 4);
	memcpy(len, e + 4, 4);
	*id = le32toh(*id);
	*len = le32toh(*len);
	r->used_seen++;
	return 1;
}

/* Fake sockets for the engine: ids 100.. */
#define FN_MAX 64
#define FN_BUF (1u << 20)

struct fake_sock {
	int open, shut_wr, eof, err, hup;
	uint8_t *in; /* client -> bridge, not yet read */
	size_t in_off, in_len;
	uint8_t *out; /* bridge -> client */
	size_t out_len, out_cap;
	uint32_t port; /* for sockets the engine opened */
};

struct fake_net {
	struct fake_sock s[FN_MAX];
	uint32_t listening[8]; /* host ports with a listener */
	int nlistening;
	int opened; /* sockets the engine opened */
	int closes;
};

__attribute__((unused)) static struct fake_sock *
fn_sock(struct fake_net *fn, int id)
{
	if (id < 100 || id >= 100 + FN_MAX)
		abort();
	return &fn->s[id - 100];
}

/* A new client socket (as accepted): its id. */
__attribute__((unused)) static int
fn_new(struct fake_net *fn)
{
	for (int i = 0; i < FN_MAX; i++) {
		struct fake_sock *s = &fn->s[i];

		if (!s->open && s->in == NULL) {
			memset(s, 0, sizeof *s);
			s->open = 1;
			s->in = xmalloc(FN_BUF);
			s->out = xmalloc(FN_BUF);
			s->out_cap = FN_BUF;
			return 100 + i;
		}
	}
	abort();
}

__attribute__((unused)) static void
fn_client_send(struct fake_net *fn, int id, const void *p, size_t n)
{
	struct fake_sock *s = fn_sock(fn, id);

	if (s->in_off > 0) {
		memmove(s->in, s->in + s->in_off, s->in_len);
		s->in_off = 0;
	}
	if (s->in_len + n > FN_BUF)
		abort();
	memcpy(s->in + s->in_len, p, n);
	s->in_len += n;
}

static ssize_t
fn_readv(void *arg, int id, const struct iovec *iov, int n)
{
	struct fake_sock *s = fn_sock(arg, id);
	size_t done = 0;

	if (!s->open)
		abort(); /* the engine used a closed socket */
	if (s->err)
		return -ECONNRESET;
	for (int i = 0; i < n && s->in_len > 0; i++) {
		size_t k =
		    iov[i].iov_len < s->in_len ? iov[i].iov_len : s->in_len;
		memcpy(iov[i].iov_base, s->in + s->in_off, k);
		s->in_off += k;
		s->in_len -= k;
		done += k;
	}
	if (done > 0)
		return (ssize_t)done;
	return s->eof ? 0 : -EAGAIN;
}

static ssize_t
fn_writev(void *arg, int id, const struct iovec *iov, int n)
{
	struct fake_sock *s = fn_sock(arg, id);
	size_t done = 0;

	if (!s->open || s->shut_wr)
		abort();
	if (s->err || s->hup)
		return -EPIPE;
	for (int i = 0; i < n; i++) {
		size_t room = s->out_cap - s->out_len;
		size_t k = iov[i].iov_len < room ? iov[i].iov_len : room;

		memcpy(s->out + s->out_len, iov[i].iov_base, k);
		s->out_len += k;
		done += k;
		if (k < iov[i].iov_len)
			break;
	}
	if (done == 0 && iov_total(iov, n) > 0)
		return -EAGAIN;
	return (ssize_t)done;
}

static int
fn_open(void *arg, uint32_t port)
{
	struct fake_net *fn = arg;

	for (int i = 0; i < fn->nlistening; i++) {
		if (fn->listening[i] == port) {
			int id = fn_new(fn);

			fn_sock(fn, id)->port = port;
			fn->opened++;
			return id;
		}
	}
	return -ECONNREFUSED;
}

static void
fn_shutdown_wr(void *arg, int id)
{
	fn_sock(arg, id)->shut_wr = 1;
}

static void
fn_close(void *arg, int id)
{
	struct fake_sock *s = fn_sock(arg, id);

	if (!s->open)
		abort(); /* double close */
	s->open = 0;
	((struct fake_net *)arg)->closes++;
}

__attribute__((unused)) static const struct vsock_ops fn_ops = {
    fn_readv,
    fn_writev,
    fn_open,
    fn_shutdown_wr,
    fn_close,
};

/* Send one message as QEMU does (fds attached to the header). */
__attribute__((unused)) static int
fv_send(int fd, uint32_t req, uint32_t flags, const void *p, uint32_t size,
    const int *fds, int nfds)
{
	uint8_t buf[12 + 1024];
	uint32_t h[3] = {req, flags, size};
	char cbuf[CMSG_SPACE(sizeof(int) * 8)];
	struct iovec iov = {buf, 12 + size};
	struct msghdr mh = {0};

	memcpy(buf, h, 12);
	if (size > 0)
		memcpy(buf + 12, p, size);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (nfds > 0) {
		struct cmsghdr *c;

		memset(cbuf, 0, sizeof cbuf);
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	return sendmsg(fd, &mh, 0) == (ssize_t)(12 + size) ? 0 : -1;
}

#endif
