/*
 * printable.c: text from a guest made safe for the user's terminal.
 *
 * A guest (its agent, its shells' names and commands, its kernel string)
 * is untrusted; what vmux prints from it must not be able to drive the
 * terminal with escape sequences. str_printable shows every control
 * character as a visible escape: C0 bytes and DEL as `\xHH` (ESC is
 * `\x1b`), C1 characters (U+0080..U+009F, in UTF-8 form) as `\u00HH`, and
 * bytes that are not part of valid UTF-8 as `\xHH`. Tab is kept, and
 * newline when STR_KEEP_NL says the text is legitimately multi-line. A
 * backslash itself is left alone, so the escapes are for the eye only.
 *
 * json_printable does the same for JSON text without losing data: cJSON
 * already writes C0 controls as \uXXXX but passes DEL and C1 characters
 * raw, so those become \u007f and \u00HH (the same string once parsed);
 * bytes that are not valid UTF-8 become \ufffd.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if ill-formed. */
static size_t
utf8_len(const unsigned char *s)
{
	size_t n;
	unsigned min, c;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, min = 0x80, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, min = 0x800, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, min = 0x10000, c = s[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	return n;
}

/* Is the valid sequence at s (of length n) a C1 control, U+0080..U+009F? */
static int
is_c1(const unsigned char *s, size_t n)
{
	return n == 2 && s[0] == 0xc2 && s[1] <= 0x9f;
}

/* Append len bytes to *out (of *used, room for 7 more always kept). */
static void
put(char **out, size_t *used, size_t *cap, const void *p, size_t len)
{
	if (*used + len + 8 > *cap) {
		*cap = (*used + len + 8) * 2;
		*out = xrealloc(*out, *cap);
	}
	memcpy(*out + *used, p, len);
	*used += len;
	(*out)[*used] = '\0';
}

/* A copy of s with every control character escaped; caller frees. */
char *
str_printable(const char *s, int flags)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t used = 0, cap = 0, n;
	char *out = NULL, esc[8];

	put(&out, &used, &cap, "", 0);
	while (*p != '\0') {
		n = utf8_len(p);
		if (n == 0 || *p == 0x7f ||
		    (*p < 0x20 && *p != '\t' &&
		        !(*p == '\n' && (flags & STR_KEEP_NL)))) {
			snprintf(esc, sizeof esc, "\\x%02x", *p);
			put(&out, &used, &cap, esc, 4);
			p++;
		} else if (is_c1(p, n)) {
			snprintf(esc, sizeof esc, "\\u%04x", p[1]);
			put(&out, &used, &cap, esc, 6);
			p += n;
		} else {
			put(&out, &used, &cap, p, n);
			p += n;
		}
	}
	return out;
}

/* JSON text with DEL, C1 and ill-formed bytes escaped; caller frees. */
char *
json_printable(const char *json)
{
	const unsigned char *p = (const unsigned char *)json;
	size_t used = 0, cap = 0, n;
	char *out = NULL, esc[8];

	put(&out, &used, &cap, "", 0);
	while (*p != '\0') {
		n = utf8_len(p);
		if (n == 0) {
			put(&out, &used, &cap, "\\ufffd", 6);
			p++;
		} else if (*p == 0x7f || is_c1(p, n) || *p < 0x20) {
			/* outside strings JSON has only ' ', \t, \n, \r */
			if (*p == '\n' || *p == '\t' || *p == '\r')
				put(&out, &used, &cap, p, 1);
			else {
				snprintf(esc, sizeof esc, "\\u%04x",
				    n == 2 ? p[1] : p[0]);
				put(&out, &used, &cap, esc, 6);
			}
			p += n;
		} else {
			put(&out, &used, &cap, p, n);
			p += n;
		}
	}
	return out;
}
