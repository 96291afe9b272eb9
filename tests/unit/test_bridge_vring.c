/*
 * test_bridge_vring.c: the bridge's memory table and split rings, driven by
 * a fake guest driver in shared memfd memory.
 */
#include <sys/eventfd.h>

#include "test_bridge_fake.h"

/* A started ring of num entries at ram offset 0. */
static int
setup(struct fake_guest *g, struct fake_ring *r, unsigned num)
{
	if (fg_init(g) != 0)
		return -1;
	fr_init(r, g, num, 0);
	return fr_start(r);
}

TEST(mem_translation_is_bounded)
{
	struct fake_guest g;
	uint64_t avail;

	CHECK(fg_init(&g) == 0);
	CHECK(mem_gpa(&g.mt, FG_GPA, &avail) == g.mt.r[0].host);
	CHECK_INT(avail, FG_SIZE);
	CHECK(mem_gpa(&g.mt, FG_GPA + FG_SIZE - 1, &avail) != NULL);
	CHECK_INT(avail, 1);
	CHECK(mem_gpa(&g.mt, FG_GPA + FG_SIZE, &avail) == NULL);
	CHECK(mem_gpa(&g.mt, FG_GPA - 1, &avail) == NULL);
	CHECK(mem_gpa(&g.mt, UINT64_MAX, &avail) == NULL);
	CHECK(mem_uva(&g.mt, FG_UVA, FG_SIZE) != NULL);
	CHECK(mem_uva(&g.mt, FG_UVA + 1, FG_SIZE) == NULL);
	CHECK(mem_uva(&g.mt, FG_UVA + FG_SIZE - 8, 16) == NULL);
	CHECK(mem_uva(&g.mt, UINT64_MAX - 4, 8) == NULL);
	CHECK_INT(mem_add(&g.mt, UINT64_MAX - 10, 4096, 0, 0, g.fd), -EINVAL);
	CHECK_INT(mem_add(&g.mt, 0, 4096, 0, UINT64_MAX - 10, g.fd), -EINVAL);
	CHECK_INT(mem_add(&g.mt, 0, 0, 0, 0, g.fd), -EINVAL);
	/* past the end of the file: would SIGBUS when touched */
	CHECK_INT(mem_add(&g.mt, 0, FG_SIZE + 4096, 0, 0, g.fd), -EINVAL);
	CHECK_INT(mem_add(&g.mt, 0, FG_SIZE, 0, 4096, g.fd), -EINVAL);
	CHECK_INT(g.mt.n, 1);
	mem_clear(&g.mt);
	CHECK(mem_gpa(&g.mt, FG_GPA, &avail) == NULL);
}

TEST(ring_outside_memory_or_misaligned_is_refused)
{
	struct fake_guest g;
	struct fake_ring r;

	CHECK(fg_init(&g) == 0);
	fr_init(&r, &g, 256, 0);
	r.vr.used_uva = FG_UVA + FG_SIZE - 16; /* used ring runs off the end */
	CHECK_INT(vring_map(&r.vr, &g.mt), -EFAULT);
	CHECK(!vring_ready(&r.vr));
	fr_init(&r, &g, 256, 0);
	r.vr.avail_uva += 1;
	CHECK_INT(vring_map(&r.vr, &g.mt), -EFAULT);
	fr_init(&r, &g, 256, 0);
	r.vr.desc_uva = 0x1000; /* not guest memory at all */
	CHECK_INT(vring_map(&r.vr, &g.mt), -EFAULT);
	fr_init(&r, &g, 256, 0);
	CHECK_INT(vring_map(&r.vr, &g.mt), 0);
	CHECK(!vring_ready(&r.vr)); /* not started */
	r.vr.started = 1;
	CHECK(!vring_ready(&r.vr)); /* not enabled */
	r.vr.enabled = 1;
	CHECK(vring_ready(&r.vr));
}

TEST(pop_tx_chain_readable_parts)
{
	struct fake_guest g;
	struct fake_ring r;
	struct vring_chain ch;
	uint64_t a = 0, b = 0;
	uint32_t id, len;

	CHECK(setup(&g, &r, 128) == 0);
	a = fg_alloc(&g, 44);
	b = fg_alloc(&g, 100);
	memset(fg_ptr(&g, a), 'h', 44);
	memset(fg_ptr(&g, b), 'p', 100);
	struct fr_seg s[] = {{a, 44, 0}, {b, 100, 0}};
	uint16_t head = fr_chain(&r, s, 2);
	CHECK_INT(vring_pop(&r.vr, &g.mt, &ch), 1);
	CHECK_INT(ch.head, head);
	CHECK_INT(ch.nout, 2);
	CHECK_INT(ch.nin, 0);
	CHECK_INT(ch.out_len, 144);
	CHECK_INT(ch.out[0].iov_len, 44);
	CHECK_MEM(ch.out[1].iov_base, fg_ptr(&g, b), 100);
	CHECK(((uint8_t *)ch.out[1].iov_base)[99] == 'p');
	CHECK_INT(vring_pop(&r.vr, &g.mt, &ch), 0);
	CHECK(!fr_used(&r, &id, &len));
	vring_push(&r.vr, head, 0);
	CHECK(fr_used(&r, &id, &len));
	CHECK_INT(id, head);
	CHECK_INT(len, 0);
}

TEST(pop_rx_header_and_4k_as_two_descriptors)
{
	struct fake_guest g;
	struct fake_ring r;
	struct vring_chain ch;
	uint64_t h, b;

	CHECK(setup(&g, &r, 128) == 0);
	h = fg_alloc(&g, 44);
	b = fg_alloc(&g, 4096);
	struct fr_seg s[] = {{h, 44, 1}, {b, 4096, 1}};
	fr_chain(&r, s, 2);
	CHECK_INT(vring_pop(&r.vr, &g.mt, &ch), 1);
	CHECK_INT(ch.nout, 0);
	CHECK_INT(ch.nin, 2);
	CHECK_INT(ch.in_len, 44 + 4096);
	/* the bridge's own mapping of the same guest memory */
	CHECK(ch.in[0].iov_base == g.mt.r[0].host + (h - FG_GPA));
	CHECK(ch.in[1].iov_base == g.mt.r[0].host + (b - FG_GPA));
}

TEST(pop_rx_one_buffer)
{
	struct fake_guest g;
	struct fake_ring r;
	struct vring_chain ch;
	uint64_t b;

	CHECK(setup(&g, &r, 128) == 0);
	b = fg_alloc(&g, 44 + 4096);
	struct fr_seg s[] = {{b, 44 + 4096, 1}};
	fr_chain(&r, s, 1);
	CHECK_INT(vring_pop(&r.vr, &g.mt, &ch), 1);
	CHECK_INT(ch.nin, 1);
	CHECK_INT(ch.in_len, 44 + 4096);
}

TEST(descriptor_split_across_regions)
{
	struct fake_guest g;
	struct fake_ring r;
	struct vring_chain ch;
	struct mem two;
	uint64_t half = FG_SIZE / 2;

	CHECK(setup(&g, &r, 64) == 0);
	mem_init(&two);
	CHECK_INT(mem_add(&two, FG_GPA, half, FG_UVA, 0, g.fd), 0);
	CHECK_INT(
	    mem_add(&two, FG_GPA + half, half, FG_UVA + half, half, g.fd), 0);
	CHECK_INT(vring_map(&r.vr, &two), 0);
	struct fr_seg s[] = {{FG_GPA + half - 100, 300, 0}};
	fr_chain(&r, s, 1);
	CHECK_INT(vring_pop(&r.vr, &two, &ch), 1);
	CHECK_INT(ch.nout, 2);
	CHECK_INT(ch.out[0].iov_len, 100);
	CHECK_INT(ch.out[1].iov_len, 200);
	g.ram[half] = 'x';
	CHECK(*(uint8_t *)ch.out[1].iov_base == 'x');
	CHECK(ch.out[1].iov_base == two.r[1].host);
}

TEST(index_wraps_from_65530)
{
	struct fake_guest g;
	struct fake_ring r;
	struct vring_chain ch;
	uint32_t id, len;

	CHECK(setup(&g, &r, 8) == 0);
	fr_set_idx(&r, 65530);
	for (int round = 0; round < 3; round++) {
		uint16_t heads[4];

		for (int i = 0; i < 4; i++) {
			struct fr_seg s[] = {{fg_alloc(&g, 64), 64, 1}};
			heads[i] = fr_chain(&r, s, 1);
		}
		for (int i = 0; i < 4; i++) {
			CHECK_INT(vring_pop(&r.vr, &g.mt, &ch), 1);
			CHECK_INT(ch.head, heads[i]);
			vring_push(&r.vr, ch.head, 10 + i);
		}
		CHECK_INT(vring_pop(&r.vr, &g.mt, &ch), 0);
		for (int i = 0; i < 4; i++) {
			CHECK(fr_used(&r, &id, &len));
			CHECK_INT(id, heads[i]);
			CHECK_INT(len, 10 + i);
		}
	}
	CHECK_INT(r.vr.last_avail, (uint16_t)(65530 + 12));
	CHECK_INT(r.vr.used_idx, 6);
	CHECK(!r.vr.broken);
}

TEST(unpop_returns_the_chain)
{
	struct fake_guest g;
	struct fake_ring r;
	struct vring_chain ch;

	CHECK(setup(&g, &r, 16) == 0);
	struct fr_seg s[] = {{fg_alloc(&g, 64), 64, 1}};
	uint16_t head = fr_chain(&r, s, 1);
	CHECK_INT(vring_pop(&r.vr, &g.mt, &ch), 1);
	vring_unpop(&r.vr);
	CHECK_INT(vring_pop(&r.vr, &g.mt, &ch), 1);
	CHECK_INT(ch.head, head);
	CHECK_INT(vring_pop(&r.vr, &g.mt, &ch), 0);
}

/* Read an eventfd without blocking: its count, or 0. */
static uint64_t
efd_count(int fd)
{
	uint64_t v = 0;

	if (read(fd, &v, sizeof v) != sizeof v)
		return 0;
	return v;
}

TEST(notify_once_per_batch_and_honour_no_interrupt)
{
	struct fake_guest g;
	struct fake_ring r;
	struct vring_chain ch;

	CHECK(setup(&g, &r, 16) == 0);
	r.vr.call = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(r.vr.call >= 0);
	CHECK_INT(vring_notify(&r.vr), 0); /* nothing pushed */
	for (int i = 0; i < 3; i++) {
		struct fr_seg s[] = {{fg_alloc(&g, 64), 64, 1}};
		fr_chain(&r, s, 1);
	}
	for (int i = 0; i < 3; i++) {
		CHECK_INT(vring_pop(&r.vr, &g.mt, &ch), 1);
		vring_push(&r.vr, ch.head, 1);
	}
	CHECK_INT(vring_notify(&r.vr), 1);
	CHECK_INT(efd_count(r.vr.call), 1);
	CHECK_INT(vring_notify(&r.vr), 0);

	uint16_t flags = htole16(VRING_AVAIL_F_NO_INTERRUPT);
	memcpy(r.avail, &flags, 2);
	struct fr_seg s[] = {{fg_alloc(&g, 64), 64, 1}};
	fr_chain(&r, s, 1);
	CHECK_INT(vring_pop(&r.vr, &g.mt, &ch), 1);
	vring_push(&r.vr, ch.head, 1);
	CHECK_INT(vring_notify(&r.vr), 0);
	CHECK_INT(efd_count(r.vr.call), 0);
}

/* Expect the next pop to skip one malformed chain (used, length 0). */
static void
expect_skipped(struct fake_guest *g, struct fake_ring *r, uint16_t bad_head)
{
	struct vring_chain ch;
	uint32_t id, len;
	struct fr_seg ok[] = {{fg_alloc(g, 64), 64, 1}};
	unsigned long nbad = r->vr.nbad;

	/* a good chain after the bad one, in other descriptor slots */
	r->free_desc = (uint16_t)(r->num - 1);
	uint16_t good = fr_chain(r, ok, 1);
	CHECK_INT(vring_pop(&r->vr, &g->mt, &ch), 1);
	CHECK_INT(ch.head, good);
	CHECK_INT(r->vr.nbad, nbad + 1);
	CHECK(fr_used(r, &id, &len));
	CHECK_INT(id, bad_head);
	CHECK_INT(len, 0);
	CHECK(!r->vr.broken);
}

TEST(malformed_chain_loop)
{
	struct fake_guest g;
	struct fake_ring r;
	uint64_t b;

	CHECK(setup(&g, &r, 16) == 0);
	b = fg_alloc(&g, 64);
	fr_desc(&r, 0, b, 64, VRING_DESC_F_NEXT, 1);
	fr_desc(&r, 1, b, 64, VRING_DESC_F_NEXT, 0);
	fr_publish(&r, 0);
	expect_skipped(&g, &r, 0);
	/* a descriptor pointing at itself */
	fr_desc(&r, 2, b, 64, VRING_DESC_F_NEXT, 2);
	fr_publish(&r, 2);
	expect_skipped(&g, &r, 2);
}

TEST(malformed_chain_next_out_of_range)
{
	struct fake_guest g;
	struct fake_ring r;

	CHECK(setup(&g, &r, 16) == 0);
	fr_desc(&r, 0, fg_alloc(&g, 64), 64, VRING_DESC_F_NEXT, 16);
	fr_publish(&r, 0);
	expect_skipped(&g, &r, 0);
	fr_desc(&r, 1, fg_alloc(&g, 64), 64, VRING_DESC_F_NEXT, 0xffff);
	fr_publish(&r, 1);
	expect_skipped(&g, &r, 1);
}

TEST(malformed_chain_bad_addresses)
{
	struct fake_guest g;
	struct fake_ring r;

	CHECK(setup(&g, &r, 16) == 0);
	fr_desc(&r, 0, 0x1000, 64, 0, 0); /* below guest memory */
	fr_publish(&r, 0);
	expect_skipped(&g, &r, 0);
	fr_desc(&r, 1, FG_GPA + FG_SIZE - 10, 64, 0, 0); /* runs off the end */
	fr_publish(&r, 1);
	expect_skipped(&g, &r, 1);
	fr_desc(&r, 2, UINT64_MAX - 8, 64, VRING_DESC_F_WRITE, 0);
	fr_publish(&r, 2);
	expect_skipped(&g, &r, 2);
	fr_desc(&r, 3, FG_GPA, 0xffffffffu, 0, 0); /* 4 GiB descriptor */
	fr_publish(&r, 3);
	expect_skipped(&g, &r, 3);
}

TEST(malformed_chain_readable_after_writable_or_indirect)
{
	struct fake_guest g;
	struct fake_ring r;
	uint64_t b;

	CHECK(setup(&g, &r, 16) == 0);
	b = fg_alloc(&g, 64);
	fr_desc(&r, 0, b, 64, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT, 1);
	fr_desc(&r, 1, b, 64, 0, 0);
	fr_publish(&r, 0);
	expect_skipped(&g, &r, 0);
	fr_desc(&r, 2, b, 64, VRING_DESC_F_INDIRECT, 0);
	fr_publish(&r, 2);
	expect_skipped(&g, &r, 2);
}

TEST(malformed_chain_too_many_pieces)
{
	struct fake_guest g;
	struct fake_ring r;
	uint64_t b;

	CHECK(setup(&g, &r, 128) == 0);
	b = fg_alloc(&g, 64);
	for (int i = 0; i < VRING_MAX_IOV + 1; i++)
		fr_desc(&r, (unsigned)i, b, 8,
		    i < VRING_MAX_IOV ? VRING_DESC_F_NEXT : 0,
		    (uint16_t)(i + 1));
	fr_publish(&r, 0);
	expect_skipped(&g, &r, 0);
}

TEST(avail_idx_jump_breaks_the_ring)
{
	struct fake_guest g;
	struct fake_ring r;
	struct vring_chain ch;

	CHECK(setup(&g, &r, 16) == 0);
	uint16_t idx = htole16(17); /* 17 new entries in a ring of 16 */
	__atomic_store_n((uint16_t *)(r.avail + 2), idx, __ATOMIC_RELEASE);
	CHECK_INT(vring_pop(&r.vr, &g.mt, &ch), -EIO);
	CHECK(r.vr.broken);
	CHECK(!vring_ready(&r.vr));
	CHECK_INT(vring_pop(&r.vr, &g.mt, &ch), -EIO);
}

TEST(head_out_of_range_breaks_the_ring)
{
	struct fake_guest g;
	struct fake_ring r;
	struct vring_chain ch;
	uint32_t id, len;

	CHECK(setup(&g, &r, 16) == 0);
	fr_publish(&r, 16);
	CHECK_INT(vring_pop(&r.vr, &g.mt, &ch), -EIO);
	CHECK(r.vr.broken);
	CHECK(!fr_used(&r, &id, &len)); /* an invalid id is never returned */
}

TEST(zero_length_descriptors_are_harmless)
{
	struct fake_guest g;
	struct fake_ring r;
	struct vring_chain ch;

	CHECK(setup(&g, &r, 16) == 0);
	struct fr_seg s[] = {{FG_GPA, 0, 0}, {0x1000, 0, 1}};
	fr_chain(&r, s, 2);
	CHECK_INT(vring_pop(&r.vr, &g.mt, &ch), 1);
	CHECK_INT(ch.out_len, 0);
	CHECK_INT(ch.in_len, 0);
}
