/*
 * headtail.c: a command's output kept within a limit, head and tail.
 *
 * A command that prints more than the reader can take loses its middle, not
 * its end: the first bytes say what it did, the last ones how it ended (an
 * error, a summary). A struct headtail keeps the first `limit` bytes and a
 * ring of the last `limit` bytes, and counts the rest; headtail_result()
 * joins half of each around a notice saying how many bytes were left out,
 * the whole at most `limit` bytes. Output within the limit is kept exactly.
 * The caller owns the struct; headtail_free() releases its buffers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* Start keeping at most limit bytes of a stream. */
void
headtail_init(struct headtail *h, size_t limit)
{
	memset(h, 0, sizeof *h);
	h->limit = limit;
}

/* Release the buffers (the struct itself is the caller's). */
void
headtail_free(struct headtail *h)
{
	free(h->head);
	free(h->tail);
	memset(h, 0, sizeof *h);
}

/* Keep the last bytes of p[0..n) in the tail ring. */
static void
tail_add(struct headtail *h, const unsigned char *p, size_t n)
{
	size_t k;

	if (h->tail == NULL)
		h->tail = xmalloc(h->limit);
	if (n > h->limit) { /* only the last limit bytes can stay */
		p += n - h->limit;
		n = h->limit;
	}
	while (n > 0) {
		k = h->limit - h->tail_pos;
		if (k > n)
			k = n;
		memcpy(h->tail + h->tail_pos, p, k);
		h->tail_pos = (h->tail_pos + k) % h->limit;
		if (h->tail_len < h->limit)
			h->tail_len = h->tail_len + k > h->limit
			    ? h->limit
			    : h->tail_len + k;
		p += k;
		n -= k;
	}
}

/* Add n bytes of output. */
void
headtail_add(struct headtail *h, const void *data, size_t n)
{
	const unsigned char *p = data;
	size_t k;

	h->total += n;
	if (h->limit == 0 || n == 0)
		return;
	if (h->head_len < h->limit) {
		k = h->limit - h->head_len;
		if (k > n)
			k = n;
		if (h->head == NULL)
			h->head = xmalloc(h->limit);
		memcpy(h->head + h->head_len, p, k);
		h->head_len += k;
		p += k;
		n -= k;
	}
	/* The tail ring sees every byte past the head; the bytes of the
	 * head itself are never needed again from it. */
	if (n > 0)
		tail_add(h, p, n);
}

/* Was anything left out? */
int
headtail_cut(const struct headtail *h)
{
	return h->total > h->limit;
}

/*
 * The i-th of the stream's last n bytes (n <= limit). They are in the ring,
 * or, when the stream passed the head by less than n, partly at the head's
 * end.
 */
static unsigned char
tail_byte(const struct headtail *h, size_t n, size_t i)
{
	uint64_t j = h->total - n + i; /* its place in the stream */
	uint64_t ring_from = h->total - h->tail_len; /* the ring's first */

	if (j < ring_from)
		return h->head[j];
	return h->tail[(h->tail_pos + h->limit - h->tail_len +
	                   (size_t)(j - ring_from)) %
	    h->limit];
}

/* A UTF-8 continuation byte: a cut must not fall just before one. */
static int
utf8_cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

/*
 * The kept output as one buffer (NUL-terminated, *len bytes, caller frees):
 * everything when it fit, else the head, "\n[... N bytes truncated ...]\n"
 * and the tail, at most limit bytes in all (cut on UTF-8 character
 * boundaries). *dropped (may be NULL) is how many bytes were left out.
 * A limit too small to hold the notice keeps the head alone.
 */
char *
headtail_result(const struct headtail *h, size_t *len, uint64_t *dropped)
{
	char notice[80], *out;
	size_t room, head, tail, nl, skip, i;
	uint64_t gone;
	int pass;

	if (!headtail_cut(h)) {
		out = xmalloc(h->head_len + 1);
		if (h->head_len > 0)
			memcpy(out, h->head, h->head_len);
		out[h->head_len] = '\0';
		*len = h->head_len;
		if (dropped != NULL)
			*dropped = 0;
		return out;
	}
	head = tail = 0;
	nl = 0;
	gone = h->total;
	/* The notice's length depends on the count it shows: settle it in two
	 * passes (the count only shrinks as the notice grows). */
	for (pass = 0; pass < 2; pass++) {
		nl = (size_t)snprintf(notice, sizeof notice,
		    "\n[... %llu bytes truncated ...]\n",
		    (unsigned long long)gone);
		if (nl >= h->limit) {
			head = h->limit;
			tail = 0;
			nl = 0;
			break;
		}
		room = h->limit - nl;
		head = room / 2;
		tail = room - head;
		gone = h->total - head - tail;
	}
	/* Keep whole characters: the head ends before a partial one, the
	 * tail starts after one. */
	while (head > 0 && head < h->head_len && utf8_cont(h->head[head]))
		head--;
	skip = 0;
	while (skip < tail && skip < 4 && utf8_cont(tail_byte(h, tail, skip)))
		skip++;
	if (skip == 4)
		skip = 0; /* not UTF-8 text: cut where it falls */
	tail -= skip;
	gone = h->total - head - tail;
	if (nl > 0)
		nl = (size_t)snprintf(notice, sizeof notice,
		    "\n[... %llu bytes truncated ...]\n",
		    (unsigned long long)gone);
	out = xmalloc(head + nl + tail + 1);
	memcpy(out, h->head, head);
	memcpy(out + head, notice, nl);
	for (i = 0; i < tail; i++)
		out[head + nl + i] = (char)tail_byte(h, tail, i);
	out[head + nl + tail] = '\0';
	*len = head + nl + tail;
	if (dropped != NULL)
		*dropped = gone;
	return out;
}
