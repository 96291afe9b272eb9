/*
 * ring.c: a shell's bounded output history.
 *
 * Output is addressed by absolute byte offsets ("cursors") since the shell
 * started; the ring keeps the last `cap` bytes. Memory grows with use up to
 * cap, so idle shells stay small: while alloc < cap no byte was ever evicted
 * and offset o sits at data[o]; once alloc == cap, offset o sits at
 * data[o % cap].
 */
#include <stdlib.h>
#include <string.h>

#include "agent.h"

/* Start an empty ring keeping at most cap bytes (cap > 0). */
void
ring_init(struct ring *r, size_t cap)
{
	r->data = NULL;
	r->alloc = 0;
	r->cap = cap;
	r->end = 0;
}

/* Release the ring's memory. */
void
ring_free(struct ring *r)
{
	free(r->data);
	r->data = NULL;
	r->alloc = 0;
}

/* The oldest offset still kept. */
uint64_t
ring_oldest(const struct ring *r)
{
	return r->end > r->cap ? r->end - r->cap : 0;
}

/* Append n bytes, evicting the oldest beyond cap. */
void
ring_write(struct ring *r, const void *p, size_t n)
{
	const uint8_t *src = p;
	size_t at, first;

	if (n == 0)
		return;
	if (r->alloc < r->cap && r->end + n > r->alloc) {
		size_t want = r->alloc ? r->alloc : 4096;

		while (want < r->end + n && want < r->cap)
			want *= 2;
		if (want > r->cap)
			want = r->cap;
		r->data = xrealloc(r->data, want);
		r->alloc = want;
	}
	if (n > r->cap) { /* only the tail survives */
		src += n - r->cap;
		r->end += n - r->cap;
		n = r->cap;
	}
	if (r->alloc < r->cap) { /* linear, never wrapped */
		memcpy(r->data + r->end, src, n);
		r->end += n;
		return;
	}
	at = (size_t)(r->end % r->cap);
	first = r->cap - at < n ? r->cap - at : n;
	memcpy(r->data + at, src, first);
	memcpy(r->data, src + first, n - first);
	r->end += n;
}

/*
 * Point *p at the contiguous bytes from offset `from` (oldest <= from <= end);
 * returns how many there are (0 at the end).
 */
size_t
ring_peek(const struct ring *r, uint64_t from, const uint8_t **p)
{
	size_t at;

	if (from < ring_oldest(r) || from >= r->end)
		return 0;
	if (r->alloc < r->cap) {
		*p = r->data + from;
		return (size_t)(r->end - from);
	}
	at = (size_t)(from % r->cap);
	*p = r->data + at;
	if (r->end - from < r->cap - at)
		return (size_t)(r->end - from);
	return r->cap - at;
}

/* Copy up to max bytes from offset `from` into dst; returns bytes copied. */
size_t
ring_copy(const struct ring *r, uint64_t from, void *dst, size_t max)
{
	const uint8_t *p;
	size_t done = 0, n;

	while (done < max && (n = ring_peek(r, from + done, &p)) != 0) {
		if (n > max - done)
			n = max - done;
		memcpy((uint8_t *)dst + done, p, n);
		done += n;
	}
	return done;
}
