/*
 * utf8.c: turn arbitrary bytes into valid UTF-8 JSON strings.
 *
 * Program output is bytes; JSON strings must be valid UTF-8. The policy:
 * every maximal ill-formed subsequence (Unicode 3.9, "substitution of
 * maximal subparts") becomes one U+FFFD; NUL and other control characters
 * are escaped, so nothing is lost but invalid bytes. A multibyte character
 * is never split: when the bytes end inside one and more may follow
 * (final = 0), the encoder stops before it and reports how much it consumed,
 * so the caller resumes from there. The attach stream carries raw bytes and
 * needs none of this.
 */
#include <stdio.h>
#include <string.h>

#include "agent.h"

/*
 * Decode one character at p (len >= 1). Returns its length with *cp set, 0 if
 * the bytes are a valid prefix cut short by len, or -n for an ill-formed
 * subsequence of n bytes (replace it with one U+FFFD and move on by n).
 */
int
utf8_decode(const uint8_t *p, size_t len, uint32_t *cp)
{
	uint8_t c = p[0], lo = 0x80, hi = 0xbf;
	uint32_t v;
	int need;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		need = 1;
		v = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 2;
		v = c & 0x0f;
		if (c == 0xe0)
			lo = 0xa0; /* overlong */
		if (c == 0xed)
			hi = 0x9f; /* surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 3;
		v = c & 0x07;
		if (c == 0xf0)
			lo = 0x90; /* overlong */
		if (c == 0xf4)
			hi = 0x8f; /* over U+10FFFF */
	} else
		return -1;
	for (int i = 1; i <= need; i++) {
		if ((size_t)i >= len)
			return 0;
		if (p[i] < lo || p[i] > hi)
			return -i;
		lo = 0x80;
		hi = 0xbf;
		v = (v << 6) | (p[i] & 0x3f);
	}
	*cp = v;
	return need + 1;
}

/* Append the JSON escape for an ASCII control or quoting character. */
static void
put_escape(struct buf *out, uint8_t c)
{
	char tmp[8];

	switch (c) {
	case '"':
		buf_add(out, "\\\"", 2);
		break;
	case '\\':
		buf_add(out, "\\\\", 2);
		break;
	case '\n':
		buf_add(out, "\\n", 2);
		break;
	case '\r':
		buf_add(out, "\\r", 2);
		break;
	case '\t':
		buf_add(out, "\\t", 2);
		break;
	case '\b':
		buf_add(out, "\\b", 2);
		break;
	case '\f':
		buf_add(out, "\\f", 2);
		break;
	default:
		snprintf(tmp, sizeof tmp, "\\u%04x", c);
		buf_add(out, tmp, 6);
		break;
	}
}

/*
 * Append p[0..len) to out as a quoted JSON string of at most max_chars
 * characters (code points; U+FFFD counts one). With final set, a truncated
 * character at the end becomes U+FFFD; otherwise it is left unconsumed.
 * Returns the characters written; *consumed (if not NULL) gets the bytes used.
 */
size_t
utf8_json_string(struct buf *out, const uint8_t *p, size_t len,
    size_t max_chars, int final, size_t *consumed)
{
	static const uint8_t fffd[] = {0xef, 0xbf, 0xbd};
	size_t i = 0, run = 0, chars = 0;
	uint32_t cp;
	int n;

	buf_reserve(out, len + 2);
	buf_add(out, "\"", 1);
	while (i < len && chars < max_chars) {
		n = utf8_decode(p + i, len - i, &cp);
		if (n > 0 && (cp >= 0x20 && cp != '"' && cp != '\\')) {
			i += (size_t)n;
			chars++;
			continue; /* part of a run copied as is */
		}
		if (i > run)
			buf_add(out, p + run, i - run);
		run = i;
		if (n == 0 && !final)
			break;
		if (n > 0)
			put_escape(out, p[i]);
		else
			buf_add(out, fffd, sizeof fffd);
		i += n > 0 ? (size_t)n : (n == 0 ? len - i : (size_t)-n);
		chars++;
		run = i;
	}
	if (i > run)
		buf_add(out, p + run, i - run);
	buf_add(out, "\"", 1);
	if (consumed != NULL)
		*consumed = i;
	return chars;
}

/* Characters in p[0..len) as utf8_json_string would count them (final). */
size_t
utf8_count(const uint8_t *p, size_t len)
{
	size_t i = 0, chars = 0;
	uint32_t cp;
	int n;

	while (i < len) {
		n = utf8_decode(p + i, len - i, &cp);
		i += n > 0 ? (size_t)n : (n == 0 ? len - i : (size_t)-n);
		chars++;
	}
	return chars;
}

/* Add bytes as a JSON string member (invalid UTF-8 repaired). */
void
json_add_bytes(cJSON *obj, const char *name, const uint8_t *p, size_t len)
{
	struct buf b;

	buf_init(&b);
	utf8_json_string(&b, p, len, SIZE_MAX, 1, NULL);
	cJSON_AddRawToObject(obj, name, buf_cstr(&b));
	buf_free(&b);
}

/* Add a C string member, or null when s is NULL. */
void
json_add_str(cJSON *obj, const char *name, const char *s)
{
	if (s == NULL)
		cJSON_AddNullToObject(obj, name);
	else
		json_add_bytes(obj, name, (const uint8_t *)s, strlen(s));
}
