/*
 * vring.c: split virtqueues in guest memory, device side.
 *
 * The guest owns the descriptor table and the avail ring and may change them
 * at any time, so every field is loaded once into a local and checked:
 * indexes against num, addresses through mem_gpa (clamped at region ends),
 * chain length against num (loops), readable before writable. A malformed
 * chain with a valid head is returned to the guest as used with length 0; a
 * malformed ring (avail idx jump, head out of range) is marked broken and
 * left alone until QEMU restarts it. The ring structures themselves were
 * translated whole (mem_uva) so their fixed offsets need no further checks.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "bridge.h"

/* A 16-bit load from guest memory the compiler must perform exactly once. */
static uint16_t
ld16(const uint8_t *p)
{
	return le16toh(__atomic_load_n((const uint16_t *)p, __ATOMIC_RELAXED));
}

/* Likewise 32 bits. */
static uint32_t
ld32(const uint8_t *p)
{
	return le32toh(__atomic_load_n((const uint32_t *)p, __ATOMIC_RELAXED));
}

/* Likewise 64 bits. */
static uint64_t
ld64(const uint8_t *p)
{
	return le64toh(__atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED));
}

/* A 32-bit store into guest memory. */
static void
st32(uint8_t *p, uint32_t v)
{
	__atomic_store_n((uint32_t *)p, htole32(v), __ATOMIC_RELAXED);
}

/* A ring with nothing set and no fds. */
void
vring_init(struct vring *vr)
{
	memset(vr, 0, sizeof *vr);
	vr->kick = vr->call = vr->err = -1;
}

/* Close the ring's fds (the owner has stopped watching kick) and reset. */
void
vring_close(struct vring *vr)
{
	if (vr->kick >= 0)
		close(vr->kick);
	if (vr->call >= 0)
		close(vr->call);
	if (vr->err >= 0)
		close(vr->err);
	vring_init(vr);
}

/*
 * Translate the ring addresses through the current table. 0 when mapped or
 * when not all of num and addresses are known yet; -EFAULT when they do not
 * lie inside guest memory or are misaligned (the ring stays unusable).
 */
int
vring_map(struct vring *vr, const struct mem *m)
{
	uint64_t n = vr->num;

	vr->desc = vr->avail = vr->used = NULL;
	if (n == 0 || !vr->addr_set)
		return 0;
	if ((vr->desc_uva & 15) || (vr->avail_uva & 1) || (vr->used_uva & 3))
		return -EFAULT;
	vr->desc = mem_uva(m, vr->desc_uva, 16 * n);
	vr->avail = mem_uva(m, vr->avail_uva, 6 + 2 * n);
	vr->used = mem_uva(m, vr->used_uva, 6 + 8 * n);
	if (vr->desc == NULL || vr->avail == NULL || vr->used == NULL) {
		vr->desc = vr->avail = vr->used = NULL;
		return -EFAULT;
	}
	return 0;
}

/* May the ring be processed now? */
int
vring_ready(const struct vring *vr)
{
	return vr->started && vr->enabled && !vr->broken && vr->desc != NULL;
}

/* The used index as the guest sees it now (the ring must be mapped). */
uint16_t
vring_used_idx_now(const struct vring *vr)
{
	return ld16(vr->used + 2);
}

/* Append [addr, addr+len) of guest memory to an iovec array; -1 if bad. */
static int
add_iov(const struct mem *m, uint64_t addr, uint32_t len, struct iovec *iov,
    int *niov)
{
	while (len > 0) {
		uint64_t avail;
		void *p = mem_gpa(m, addr, &avail);

		if (p == NULL || *niov == VRING_MAX_IOV)
			return -1;
		if (avail > len)
			avail = len;
		iov[*niov].iov_base = p;
		iov[*niov].iov_len = (size_t)avail;
		(*niov)++;
		addr += avail;
		len -= (uint32_t)avail;
	}
	return 0;
}

/* Follow the chain from head; 0, or -1 if it is malformed. */
static int
walk(const struct vring *vr, const struct mem *m, uint16_t head,
    struct vring_chain *ch)
{
	unsigned i = head, count = 0;
	int seen_write = 0;

	ch->head = head;
	ch->nout = ch->nin = 0;
	ch->out_len = ch->in_len = 0;
	for (;;) {
		const uint8_t *d;
		uint64_t addr;
		uint32_t len;
		uint16_t flags, next;

		if (i >= vr->num || ++count > vr->num)
			return -1;
		d = vr->desc + 16 * i;
		addr = ld64(d);
		len = ld32(d + 8);
		flags = ld16(d + 12);
		next = ld16(d + 14);
		if (flags & VRING_DESC_F_INDIRECT)
			return -1;
		if (flags & VRING_DESC_F_WRITE) {
			seen_write = 1;
			if (add_iov(m, addr, len, ch->in, &ch->nin) != 0)
				return -1;
			ch->in_len += len;
		} else {
			if (seen_write)
				return -1; /* readable after writable */
			if (add_iov(m, addr, len, ch->out, &ch->nout) != 0)
				return -1;
			ch->out_len += len;
		}
		if (!(flags & VRING_DESC_F_NEXT))
			return 0;
		i = next;
	}
}

/*
 * Take the next available chain. 1 and *ch filled; 0 if none (or the ring is
 * not ready); -EIO if the ring is broken. Malformed chains are given back
 * as used (length 0) on the way.
 */
int
vring_pop(struct vring *vr, const struct mem *m, struct vring_chain *ch)
{
	for (unsigned tries = 0; tries < vr->num; tries++) {
		uint16_t idx, pending, head;

		if (!vring_ready(vr))
			return vr->broken ? -EIO : 0;
		idx = le16toh(__atomic_load_n(
		    (const uint16_t *)(vr->avail + 2), __ATOMIC_ACQUIRE));
		pending = (uint16_t)(idx - vr->last_avail);
		if (pending == 0)
			return 0;
		if (pending > vr->num) {
			log_debug("%s: avail idx %u jumped from %u", __func__,
			    idx, vr->last_avail);
			vr->broken = 1;
			return -EIO;
		}
		head = ld16(vr->avail + 4 + 2 * (vr->last_avail % vr->num));
		if (head >= vr->num) {
			log_debug(
			    "%s: head %u >= num %u", __func__, head, vr->num);
			vr->broken = 1;
			return -EIO;
		}
		vr->last_avail++;
		if (walk(vr, m, head, ch) == 0)
			return 1;
		vr->nbad++;
		log_debug("%s: malformed chain at head %u", __func__, head);
		vring_push(vr, head, 0);
	}
	return 0;
}

/* Give back the chain just popped, unused: it is popped again next time. */
void
vring_unpop(struct vring *vr)
{
	vr->last_avail--;
}

/* Return a chain to the guest with len bytes written into it. */
void
vring_push(struct vring *vr, uint16_t head, uint32_t len)
{
	uint8_t *e = vr->used + 4 + 8 * (vr->used_idx % vr->num);

	st32(e, head);
	st32(e + 4, len);
	vr->used_idx++;
	__atomic_store_n((uint16_t *)(vr->used + 2), htole16(vr->used_idx),
	    __ATOMIC_RELEASE);
	vr->need_notify = 1;
}

/*
 * After a batch of pushes: interrupt the guest unless it asked not to be.
 * The full fence orders our used idx store before reading its flags (the
 * guest does the mirror image). 1 if the call eventfd was signalled.
 */
int
vring_notify(struct vring *vr)
{
	uint64_t one = 1;

	if (!vr->need_notify || vr->avail == NULL)
		return 0;
	vr->need_notify = 0;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (ld16(vr->avail) & VRING_AVAIL_F_NO_INTERRUPT)
		return 0;
	if (vr->call < 0)
		return 0;
	if (write(vr->call, &one, sizeof one) != sizeof one)
		log_debug("%s: call eventfd write failed", __func__);
	return 1;
}
