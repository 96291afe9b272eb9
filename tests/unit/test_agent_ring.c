/* test_agent_ring.c: unit tests of the shell output ring. */
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "unit.h"

TEST(ring_small_writes_and_peek)
{
	struct ring r;
	const uint8_t *p;
	char out[16];

	ring_init(&r, 8);
	CHECK_INT(r.end, 0);
	CHECK_INT(ring_peek(&r, 0, &p), 0);
	ring_write(&r, "abc", 3);
	CHECK_INT(ring_oldest(&r), 0);
	CHECK_INT(r.end, 3);
	CHECK_INT(ring_peek(&r, 1, &p), 2);
	CHECK_MEM(p, "bc", 2);
	CHECK_INT(ring_copy(&r, 0, out, sizeof out), 3);
	CHECK_MEM(out, "abc", 3);
	ring_free(&r);
}

TEST(ring_evicts_and_wraps)
{
	struct ring r;
	char out[16];

	ring_init(&r, 8);
	ring_write(&r, "0123456", 7);
	ring_write(&r, "789ab", 5); /* 12 bytes written, 8 kept */
	CHECK_INT(r.end, 12);
	CHECK_INT(ring_oldest(&r), 4);
	CHECK_INT(ring_copy(&r, 4, out, sizeof out), 8);
	CHECK_MEM(out, "456789ab", 8);
	CHECK_INT(ring_copy(&r, 10, out, sizeof out), 2);
	CHECK_MEM(out, "ab", 2);
	CHECK_INT(ring_copy(&r, 3, out, sizeof out), 0);  /* evicted */
	CHECK_INT(ring_copy(&r, 12, out, sizeof out), 0); /* at the end */
	CHECK_INT(ring_copy(&r, 5, out, 3), 3);
	CHECK_MEM(out, "567", 3);
	ring_free(&r);
}

TEST(ring_write_larger_than_cap)
{
	struct ring r;
	char out[8];

	ring_init(&r, 4);
	ring_write(&r, "xy", 2);
	ring_write(&r, "abcdefghij", 10);
	CHECK_INT(r.end, 12);
	CHECK_INT(ring_oldest(&r), 8);
	CHECK_INT(ring_copy(&r, 8, out, sizeof out), 4);
	CHECK_MEM(out, "ghij", 4);
	ring_free(&r);
}

TEST(ring_grows_lazily_and_matches_model)
{
	size_t cap = 100000, total = 0;
	uint8_t *model = xmalloc(1 << 20), chunk[7777], *out = xmalloc(cap);
	struct ring r;

	ring_init(&r, cap);
	CHECK(r.alloc == 0);
	srand(7);
	for (int i = 0; i < 120; i++) {
		size_t n = (size_t)rand() % sizeof chunk;

		for (size_t j = 0; j < n; j++)
			chunk[j] = model[total + j] = (uint8_t)rand();
		ring_write(&r, chunk, n);
		total += n;
		CHECK_INT(r.end, total);
		CHECK(r.alloc <= cap);
		uint64_t oldest = ring_oldest(&r);
		CHECK_INT(oldest, total > cap ? total - cap : 0);
		uint64_t from = oldest + (total - oldest) / 3;
		size_t got = ring_copy(&r, from, out, cap);
		CHECK_INT(got, total - from);
		CHECK_MEM(out, model + from, got);
	}
	free(model);
	free(out);
	ring_free(&r);
}
