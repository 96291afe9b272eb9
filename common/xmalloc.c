/*
 * xmalloc.c: allocation that aborts on failure, so no caller handles NULL.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* Allocate size bytes (at least one); never returns NULL. */
void *
xmalloc(size_t size)
{
	void *p;

	if (size == 0)
		size = 1;
	if ((p = malloc(size)) == NULL)
		fatalx("xmalloc: out of memory allocating %zu bytes", size);
	return p;
}

/* Allocate a zeroed array; never returns NULL. */
void *
xcalloc(size_t nmemb, size_t size)
{
	void *p;

	if (nmemb == 0 || size == 0)
		nmemb = size = 1;
	if ((p = calloc(nmemb, size)) == NULL)
		fatalx("xcalloc: out of memory allocating %zu * %zu bytes",
		    nmemb, size);
	return p;
}

/* Resize ptr to size bytes; never returns NULL. */
void *
xrealloc(void *ptr, size_t size)
{
	return xreallocarray(ptr, 1, size);
}

/* Resize ptr to nmemb * size bytes, checking the product for overflow. */
void *
xreallocarray(void *ptr, size_t nmemb, size_t size)
{
	void *p;

	if (size != 0 && nmemb > SIZE_MAX / size)
		fatalx("xreallocarray: %zu * %zu overflows", nmemb, size);
	if (nmemb * size == 0)
		nmemb = size = 1;
	if ((p = realloc(ptr, nmemb * size)) == NULL)
		fatalx("xreallocarray: out of memory allocating %zu bytes",
		    nmemb * size);
	return p;
}

/* Duplicate a string; never returns NULL. */
char *
xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

/* Duplicate at most n bytes of a string, always terminated. */
char *
xstrndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *p = xmalloc(len + 1);

	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

/* Format into a new string stored in *ret; returns its length. */
int
xasprintf(char **ret, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = xvasprintf(ret, fmt, ap);
	va_end(ap);
	return n;
}

/* va_list form of xasprintf. */
int
xvasprintf(char **ret, const char *fmt, va_list ap)
{
	int n = vasprintf(ret, fmt, ap);

	if (n < 0 || *ret == NULL)
		fatalx("xvasprintf: out of memory");
	return n;
}
