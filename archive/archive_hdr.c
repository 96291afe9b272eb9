/*
 * archive_hdr.c: tar header fields and pax extended records.
 *
 * Pure functions on caller-owned bytes, shared by extraction and export:
 * numeric fields (octal, or GNU base-256 for values octal cannot hold), the
 * header checksum, and "LEN key=value\n" pax records.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "archive.h"

/*
 * Parse a numeric header field: base-256 when the top bit of the first byte
 * is set, otherwise octal digits padded by spaces or NULs. An empty field
 * is 0 (v7 and some writers leave fields blank). Returns -1 if malformed.
 */
int
tar_get_number(const unsigned char *field, size_t len, int64_t *out)
{
	size_t i = 0;
	uint64_t v = 0;

	if (len == 0)
		return -1;
	if (field[0] & 0x80) {
		int neg = (field[0] == 0xff);

		if (!neg && field[0] != 0x80)
			return -1;
		/* Leading bytes beyond 8 must be sign extension only. */
		for (i = 1; i + 8 < len; i++) {
			if (field[i] != (neg ? 0xff : 0x00))
				return -1;
		}
		for (; i < len; i++)
			v = (v << 8) | field[i];
		if (!neg && v > (uint64_t)INT64_MAX)
			return -1;
		if (neg && len - 1 < 8)
			v |= ~(uint64_t)0 << (8 * (len - 1));
		if (neg && (int64_t)v >= 0)
			return -1;
		*out = (int64_t)v;
		return 0;
	}
	while (i < len && (field[i] == ' ' || field[i] == '\0'))
		i++;
	for (; i < len && field[i] >= '0' && field[i] <= '7'; i++) {
		if (v > ((uint64_t)INT64_MAX >> 3))
			return -1;
		v = (v << 3) | (uint64_t)(field[i] - '0');
	}
	for (; i < len; i++) {
		if (field[i] != ' ' && field[i] != '\0')
			return -1;
	}
	*out = (int64_t)v;
	return 0;
}

/* Whether v fits a len-byte octal field (len - 1 digits and a NUL). */
int
tar_fits_octal(size_t len, int64_t v)
{
	if (v < 0)
		return 0;
	if (len - 1 >= 21)
		return 1;
	return (uint64_t)v < ((uint64_t)1 << (3 * (len - 1)));
}

/* Store v as zero-padded octal with a NUL, or base-256 if it does not fit. */
void
tar_put_number(unsigned char *field, size_t len, int64_t v)
{
	uint64_t u = (uint64_t)v;

	if (tar_fits_octal(len, v)) {
		field[len - 1] = '\0';
		for (size_t i = len - 1; i > 0; i--) {
			field[i - 1] = (unsigned char)('0' + (u & 7));
			u >>= 3;
		}
		return;
	}
	for (size_t i = len; i > 1; i--) {
		field[i - 1] = (unsigned char)(u & 0xff);
		u = (v < 0) ? (u >> 8) | ((uint64_t)0xff << 56) : u >> 8;
	}
	field[0] = (v < 0) ? 0xff : 0x80;
}

/* The header checksum: the sum of all bytes, the checksum field as spaces. */
unsigned int
tar_checksum(const unsigned char *block, int is_signed)
{
	unsigned int sum = 0;

	for (size_t i = 0; i < TAR_BLOCK; i++) {
		if (i >= 148 && i < 156)
			sum += ' ';
		else if (is_signed)
			sum += (unsigned int)(int)(signed char)block[i];
		else
			sum += block[i];
	}
	return sum;
}

/* Whether a block is all zeros (an end-of-archive marker). */
int
tar_block_is_zero(const unsigned char *block)
{
	for (size_t i = 0; i < TAR_BLOCK; i++) {
		if (block[i] != 0)
			return 0;
	}
	return 1;
}

/*
 * Read the pax record at *p: "LEN key=value\n", LEN counting the whole
 * record. Returns 1 with key and value pointing into the buffer, 0 at the
 * end, -1 with cause if malformed.
 */
int
tar_pax_next(const char **p, const char *end, const char **key, size_t *keylen,
    const char **val, size_t *vallen, char **cause)
{
	const char *s = *p, *rec, *eq;
	size_t n = 0;

	if (s >= end)
		return 0;
	/* Writers pad the header data with NULs after the last record. */
	if (*s == '\0')
		return 0;
	rec = s;
	while (s < end && *s >= '0' && *s <= '9') {
		if (n > (size_t)(end - rec))
			break;
		n = n * 10 + (size_t)(*s - '0');
		s++;
	}
	if (s == rec || s >= end || *s != ' ' || n > (size_t)(end - rec) ||
	    n < (size_t)(s - rec) + 4 || rec[n - 1] != '\n') {
		xasprintf(cause, "malformed pax extended header record");
		return -1;
	}
	s++;
	eq = memchr(s, '=', (size_t)(rec + n - 1 - s));
	if (eq == NULL || eq == s) {
		xasprintf(cause, "malformed pax extended header record");
		return -1;
	}
	*key = s;
	*keylen = (size_t)(eq - s);
	*val = eq + 1;
	*vallen = (size_t)(rec + n - 1 - (eq + 1));
	*p = rec + n;
	return 1;
}

/* Append one pax record to a growing buffer. */
void
tar_pax_add(
    char **buf, size_t *len, const char *key, const char *val, size_t vallen)
{
	size_t body = strlen(key) + vallen + 3, n = body, digits;
	char *p;

	/* The length counts its own digits: iterate until stable. */
	for (;;) {
		char tmp[32];

		digits = (size_t)snprintf(tmp, sizeof tmp, "%zu", n);
		if (body + digits == n)
			break;
		n = body + digits;
	}
	*buf = xrealloc(*buf, *len + n + 1);
	p = *buf + *len;
	p += sprintf(p, "%zu %s=", n, key);
	memcpy(p, val, vallen);
	p[vallen] = '\n';
	*len += n;
}

/* Parse a pax time "[-]SECONDS[.FRACTION]". Returns -1 if malformed. */
int
tar_parse_time(const char *s, size_t len, int64_t *sec, long *nsec)
{
	size_t i = 0;
	int neg = 0, digits = 0;
	uint64_t v = 0;
	long ns = 0;

	if (i < len && s[i] == '-') {
		neg = 1;
		i++;
	}
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
		if (v > (uint64_t)INT64_MAX / 10 - 1)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (digits == 0)
		return -1;
	if (i < len && s[i] == '.') {
		long scale = 100000000;

		for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
			ns += (s[i] - '0') * scale;
			scale /= 10;
		}
	}
	if (i != len)
		return -1;
	if (neg) {
		*sec = -(int64_t)v;
		if (ns != 0) {
			*sec -= 1;
			ns = 1000000000 - ns;
		}
	} else
		*sec = (int64_t)v;
	*nsec = ns;
	return 0;
}
