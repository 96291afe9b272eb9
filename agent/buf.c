/*
 * buf.c: a growable byte buffer. The buffer owns its data; buf_free releases
 * it and leaves an empty buffer that may be used again.
 */
#include <stdlib.h>
#include <string.h>

#include "agent.h"

/* Start an empty buffer (no allocation until something is added). */
void
buf_init(struct buf *b)
{
	b->data = NULL;
	b->len = b->cap = 0;
}

/* Release the data and leave an empty buffer. */
void
buf_free(struct buf *b)
{
	free(b->data);
	buf_init(b);
}

/* Make room for n more bytes (plus a terminating NUL). */
void
buf_reserve(struct buf *b, size_t n)
{
	size_t need = b->len + n + 1, cap = b->cap ? b->cap : 256;

	if (need < b->len)
		fatalx("buf_reserve: size overflow");
	if (need <= b->cap)
		return;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	b->data = xrealloc(b->data, cap);
	b->cap = cap;
}

/* Append n bytes. */
void
buf_add(struct buf *b, const void *p, size_t n)
{
	buf_reserve(b, n);
	if (n != 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

/* Append a C string (without its NUL). */
void
buf_addstr(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

/* Remove n bytes from the front. */
void
buf_drain(struct buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
}

/* The contents as a NUL-terminated string (owned by the buffer). */
char *
buf_cstr(struct buf *b)
{
	buf_reserve(b, 0);
	b->data[b->len] = '\0';
	return (char *)b->data;
}
