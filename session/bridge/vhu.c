/*
 * vhu.c: the vhost-user control plane, back-end side.
 *
 * One message at a time from QEMU: a 12-byte header (with any fds as
 * SCM_RIGHTS), then the payload. Only rx (0) and tx (1) exist here. A reply
 * is sent only when one is due: the GET_* requests always, and a u64 ack for
 * anything else that carried NEED_REPLY once REPLY_ACK was negotiated (QEMU
 * desynchronises on a reply it did not ask for). The struct vhu owns the
 * memory table, the rings and every fd QEMU sends; fds a message brought
 * but did not use are closed before vhu_dispatch returns.
 *
 * Dirty logging (VHOST_F_LOG_ALL, LOG_SHMFD) is offered but never done:
 * QEMU refuses to save the state of a vhost device without it, and vmux
 * only saves a stopped guest whose RAM stays in a shared file that is
 * never copied (x-ignore-shared), so there is nothing a log would tell.
 * SET_LOG_BASE is answered and its fd closed, SET_LOG_FD's fd closed. A
 * live migration that copies RAM would miss what the bridge wrote into
 * the rings: vmux must never do one.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/common.h"
#include "proto/attach.h" /* vmux_put_u* */
#include "bridge.h"

struct vhu_hdr {
	uint32_t request, flags, size;
};

union vhu_payload {
	uint64_t u64;
	struct {
		uint32_t index, num;
	} state;
	struct {
		uint32_t index, flags;
		uint64_t desc, used, avail, log;
	} addr;
	struct {
		uint32_t nregions, pad;
		struct {
			uint64_t gpa, size, uva, offset;
		} r[MEM_MAX_REGIONS];
	} mem;
	struct {
		uint32_t offset, size, flags;
		uint8_t data[VHU_MAX_PAYLOAD - 12];
	} config;
	uint8_t raw[VHU_MAX_PAYLOAD];
};

/* A device with no memory and idle rings, talking on fd. */
void
vhu_init(
    struct vhu *d, int fd, uint64_t cid, const struct vhu_ops *ops, void *arg)
{
	memset(d, 0, sizeof *d);
	d->fd = fd;
	d->cid = cid;
	d->ops = ops;
	d->arg = arg;
	mem_init(&d->mem);
	for (int i = 0; i < VHU_NQUEUES; i++)
		vring_init(&d->vq[i]);
}

/* Replace ring idx's kick fd, telling the owner first. */
static void
set_kick(struct vhu *d, int idx, int fd)
{
	struct vring *vr = &d->vq[idx];

	if (d->ops != NULL && d->ops->kick_changed != NULL)
		d->ops->kick_changed(d->arg, idx, vr->kick, fd);
	if (vr->kick >= 0)
		close(vr->kick);
	vr->kick = fd;
}

/* Drop the rings, the memory and the connection fd. */
void
vhu_free(struct vhu *d)
{
	for (int i = 0; i < VHU_NQUEUES; i++) {
		set_kick(d, i, -1);
		vring_close(&d->vq[i]);
	}
	mem_clear(&d->mem);
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
}

/*
 * Read one message: header with fds, then the payload (zero-filled beyond
 * what arrived; an oversized payload is read and dropped, *oversized set).
 * 0, -EPIPE when the peer is gone, or -errno.
 */
static int
recv_msg(int fd, struct vhu_hdr *h, union vhu_payload *p, int *fds, int *nfds,
    int *oversized)
{
	char cbuf[CMSG_SPACE(sizeof(int) * VHU_MAX_FDS)];
	struct iovec iov = {h, sizeof *h};
	struct msghdr mh = {0};
	struct cmsghdr *c;
	ssize_t n;

	*nfds = 0;
	*oversized = 0;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof cbuf;
	do
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		return -EPIPE;
	if (n < 0)
		return -errno;
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
		int *cfd = (int *)CMSG_DATA(c);
		size_t k;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int f;

			memcpy(&f, cfd + i, sizeof f);
			if (*nfds < VHU_MAX_FDS)
				fds[(*nfds)++] = f;
			else
				close(f);
		}
	}
	if ((size_t)n < sizeof *h) {
		ssize_t m = read_full(fd, (char *)h + n, sizeof *h - (size_t)n);
		if (m != (ssize_t)(sizeof *h - (size_t)n))
			return m < 0 ? (int)m : -EPIPE;
	}
	if (mh.msg_flags & MSG_CTRUNC)
		return -EPROTO;
	memset(p, 0, sizeof *p);
	if (h->size > sizeof *p) {
		size_t left = h->size;

		*oversized = 1;
		while (left > 0) {
			size_t k = left < sizeof *p ? left : sizeof *p;
			if (read_full(fd, p->raw, k) != (ssize_t)k)
				return -EPIPE;
			left -= k;
		}
		memset(p, 0, sizeof *p);
		return 0;
	}
	if (h->size > 0 && read_full(fd, p->raw, h->size) != (ssize_t)h->size)
		return -EPIPE;
	return 0;
}

/* Send a reply to request req: flags exactly VERSION | REPLY. */
static int
send_reply(struct vhu *d, uint32_t req, const void *payload, uint32_t size)
{
	struct vhu_hdr h = {req, VHU_VERSION | VHU_FLAG_REPLY, size};
	char buf[VHU_HDR_LEN + VHU_MAX_PAYLOAD];

	memcpy(buf, &h, VHU_HDR_LEN);
	memcpy(buf + VHU_HDR_LEN, payload, size);
	if (write_all(d->fd, buf, VHU_HDR_LEN + size) < 0) {
		log_debug("%s: reply to %u failed", __func__, req);
		return -EPIPE;
	}
	return 0;
}

/* Reply with one u64. */
static int
reply_u64(struct vhu *d, uint32_t req, uint64_t v)
{
	return send_reply(d, req, &v, sizeof v);
}

/* Re-translate both rings after the table or a ring changed. */
static void
map_rings(struct vhu *d)
{
	for (int i = 0; i < VHU_NQUEUES; i++) {
		if (vring_map(&d->vq[i], &d->mem) != 0)
			log_debug(
			    "%s: ring %d outside guest memory", __func__, i);
	}
}

/* SET_MEM_TABLE: replace every mapping; 0 or 1 (failure ack). */
static int
set_mem_table(struct vhu *d, const struct vhu_hdr *h,
    const union vhu_payload *p, int *fds, int nfds)
{
	uint32_t n = p->mem.nregions;
	int status = 0;

	if (n > MEM_MAX_REGIONS || (uint32_t)nfds != n ||
	    h->size < 8 + 32 * n) {
		log_debug("%s: %u regions, %d fds, size %u", __func__, n, nfds,
		    h->size);
		return 1;
	}
	mem_clear(&d->mem);
	for (uint32_t i = 0; i < n; i++) {
		int r = mem_add(&d->mem, p->mem.r[i].gpa, p->mem.r[i].size,
		    p->mem.r[i].uva, p->mem.r[i].offset, fds[i]);
		if (r != 0) {
			log_debug(
			    "%s: region %u: %s", __func__, i, strerror(-r));
			status = 1;
		}
	}
	if (status != 0)
		mem_clear(&d->mem);
	for (uint32_t i = 0; i < n; i++) {
		close(fds[i]);
		fds[i] = -1;
	}
	map_rings(d);
	return status;
}

/* SET_VRING_KICK/CALL/ERR: install fd (or none); 0 or 1. */
static int
set_vring_fd(struct vhu *d, uint32_t req, uint64_t v, int *fds, int nfds)
{
	unsigned idx = v & 0xff;
	int nofd = (v & VHU_VRING_NOFD) != 0, fd = -1;
	struct vring *vr;

	if (!nofd) {
		if (nfds < 1)
			return 1;
		fd = fds[0];
		fds[0] = -1;
	}
	if (idx >= VHU_NQUEUES) {
		if (fd >= 0)
			close(fd);
		return 1;
	}
	vr = &d->vq[idx];
	switch (req) {
	case VHU_SET_VRING_KICK:
		set_kick(d, idx, fd);
		/* A ring restarted from zero is a reset guest driver. */
		if (vr->ever_started && vr->desc != NULL &&
		    vr->last_avail == 0 && vring_used_idx_now(vr) == 0)
			d->reset = 1;
		vr->started = vr->ever_started = 1;
		vr->broken = 0;
		if (!(d->features & VHU_F_PROTOCOL_FEATURES))
			vr->enabled = 1;
		break;
	case VHU_SET_VRING_CALL:
		if (vr->call >= 0)
			close(vr->call);
		vr->call = fd;
		break;
	default:
		if (vr->err >= 0)
			close(vr->err);
		vr->err = fd;
		break;
	}
	return 0;
}

/* GET_CONFIG: the vsock config space is just le64 guest_cid. */
static int
get_config(struct vhu *d, const union vhu_payload *p)
{
	union vhu_payload r;
	uint8_t cid[8];
	uint32_t off = p->config.offset, size = p->config.size;

	vmux_put_u64(cid, d->cid); /* the device's config: le64 guest_cid */
	memset(&r, 0, sizeof r);
	if (size > sizeof r.config.data)
		size = 0;
	r.config.offset = off;
	r.config.size = size;
	r.config.flags = p->config.flags;
	for (uint32_t i = 0; i < size; i++) {
		if (off < sizeof cid && i < sizeof cid - off)
			r.config.data[i] = cid[off + i];
	}
	return send_reply(d, VHU_GET_CONFIG, &r, 12 + size);
}

/* Handle one decoded message; *replied when a normal reply went out. */
static int
handle(struct vhu *d, const struct vhu_hdr *h, const union vhu_payload *p,
    int *fds, int nfds, int *replied, int *err)
{
	unsigned idx = p->state.index;
	struct vring *vr = idx < VHU_NQUEUES ? &d->vq[idx] : NULL;
	union vhu_payload r;

	*replied = 0;
	*err = 0;
	switch (h->request) {
	case VHU_GET_FEATURES:
		*replied = 1;
		*err = reply_u64(d, h->request, VHU_FEATURES);
		return 0;
	case VHU_SET_FEATURES:
		/*
		 * Without VERSION_1 the guest drives a legacy device (QEMU's
		 * virtio-mmio is legacy by default): same split ring, guest
		 * byte order, which on x86 is little-endian too.
		 */
		log_debug(
		    "%s: features %#llx", __func__, (unsigned long long)p->u64);
		d->features = p->u64;
		return 0;
	case VHU_SET_OWNER:
		return 0;
	case VHU_RESET_OWNER:
		for (int i = 0; i < VHU_NQUEUES; i++) {
			set_kick(d, i, -1);
			vring_close(&d->vq[i]);
		}
		d->reset = 1;
		return 0;
	case VHU_SET_MEM_TABLE:
		return set_mem_table(d, h, p, fds, nfds);
	case VHU_SET_LOG_BASE:
		/* no log kept (top comment): the fd is closed unused; QEMU
		 * waits for this reply when LOG_SHMFD was negotiated */
		if (d->protocol & VHU_PF_LOG_SHMFD) {
			*replied = 1;
			*err = reply_u64(d, h->request, 0);
		}
		return 0;
	case VHU_SET_LOG_FD:
		return 0; /* the eventfd for log syncs: closed unused */
	case VHU_SET_VRING_NUM:
		if (vr == NULL || p->state.num == 0 ||
		    p->state.num > VRING_MAX_NUM ||
		    (p->state.num & (p->state.num - 1)) != 0)
			return 1;
		vr->num = p->state.num;
		return vring_map(vr, &d->mem) == 0 ? 0 : 1;
	case VHU_SET_VRING_ADDR:
		idx = p->addr.index;
		if (idx >= VHU_NQUEUES)
			return 1;
		vr = &d->vq[idx];
		vr->desc_uva = p->addr.desc;
		vr->used_uva = p->addr.used;
		vr->avail_uva = p->addr.avail;
		vr->addr_set = 1;
		if (vring_map(vr, &d->mem) != 0)
			return 1;
		if (vr->used != NULL)
			vr->used_idx = vring_used_idx_now(vr);
		return 0;
	case VHU_SET_VRING_BASE:
		if (vr == NULL)
			return 1;
		vr->last_avail = (uint16_t)p->state.num;
		return 0;
	case VHU_GET_VRING_BASE:
		memset(&r, 0, sizeof r);
		r.state.index = idx;
		if (vr != NULL) {
			set_kick(d, idx, -1);
			vr->started = 0;
			r.state.num = vr->last_avail;
		}
		*replied = 1;
		*err = send_reply(d, h->request, &r, sizeof r.state);
		return 0;
	case VHU_SET_VRING_KICK:
	case VHU_SET_VRING_CALL:
	case VHU_SET_VRING_ERR:
		return set_vring_fd(d, h->request, p->u64, fds, nfds);
	case VHU_GET_PROTOCOL_FEATURES:
		*replied = 1;
		*err = reply_u64(d, h->request, VHU_PROTOCOL_FEATURES);
		return 0;
	case VHU_SET_PROTOCOL_FEATURES:
		d->protocol = p->u64 & VHU_PROTOCOL_FEATURES;
		return 0;
	case VHU_GET_QUEUE_NUM:
		*replied = 1;
		*err = reply_u64(d, h->request, VHU_NQUEUES);
		return 0;
	case VHU_SET_VRING_ENABLE:
		if (vr == NULL)
			return 1;
		vr->enabled = p->state.num != 0;
		return 0;
	case VHU_GET_CONFIG:
		*replied = 1;
		*err = get_config(d, p);
		return 0;
	default:
		log_debug("%s: unsupported request %u", __func__, h->request);
		return 1;
	}
}

/*
 * Read and handle one message from QEMU. 0, or -errno when the connection
 * is over (-EPIPE: QEMU went away; -EPROTO: it sent something unusable).
 */
int
vhu_dispatch(struct vhu *d)
{
	struct vhu_hdr h;
	union vhu_payload p;
	int fds[VHU_MAX_FDS], nfds, oversized, replied, err, status, r;
	int need_reply;

	r = recv_msg(d->fd, &h, &p, fds, &nfds, &oversized);
	if (r != 0)
		goto out;
	log_debug("%s: request %u flags %#x size %u fds %d", __func__,
	    h.request, h.flags, h.size, nfds);
	if ((h.flags & 3) != VHU_VERSION) {
		r = -EPROTO;
		goto out;
	}
	need_reply =
	    (h.flags & VHU_FLAG_NEED_REPLY) && (d->protocol & VHU_PF_REPLY_ACK);
	if (oversized) {
		status = 1;
		replied = err = 0;
	} else
		status = handle(d, &h, &p, fds, nfds, &replied, &err);
	if (err == 0 && !replied && need_reply)
		err = reply_u64(d, h.request, (uint64_t)status);
	r = err;
out:
	for (int i = 0; i < nfds; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
	}
	return r;
}
