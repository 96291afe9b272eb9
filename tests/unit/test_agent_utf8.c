/* test_agent_utf8.c: unit tests of the bytes -> UTF-8 JSON encoder. */
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "unit.h"

/* Encode bytes; returns the JSON text (static) and the counts. */
static const char *
enc(const char *p, size_t len, size_t max, int final, size_t *chars,
    size_t *used)
{
	static struct buf b;

	b.len = 0;
	*chars =
	    utf8_json_string(&b, (const uint8_t *)p, len, max, final, used);
	return buf_cstr(&b);
}

TEST(utf8_plain_and_escapes)
{
	size_t c, u;

	CHECK_STR(enc("hi", 2, SIZE_MAX, 1, &c, &u), "\"hi\"");
	CHECK_INT(c, 2);
	CHECK_STR(enc("a\"b\\c\n\r\t\x01", 9, SIZE_MAX, 1, &c, &u),
	    "\"a\\\"b\\\\c\\n\\r\\t\\u0001\"");
	CHECK_STR(enc("a\0b", 3, SIZE_MAX, 1, &c, &u), "\"a\\u0000b\"");
	CHECK_INT(u, 3);
	CHECK_STR(enc("\x1b[0m", 4, SIZE_MAX, 1, &c, &u), "\"\\u001b[0m\"");
}

TEST(utf8_valid_multibyte_kept)
{
	size_t c, u;

	/* é (2 bytes), € (3), 😀 (4) */
	CHECK_STR(
	    enc("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9, SIZE_MAX, 1, &c, &u),
	    "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
	CHECK_INT(c, 3);
	CHECK_INT(u, 9);
}

TEST(utf8_invalid_becomes_fffd)
{
	size_t c, u;

	CHECK_STR(enc("a\xffz", 3, SIZE_MAX, 1, &c, &u), "\"a\xef\xbf\xbdz\"");
	CHECK_INT(c, 3);
	/* overlong, surrogate, over U+10FFFF, lone continuation */
	CHECK_STR(enc("\xc0\xaf", 2, SIZE_MAX, 1, &c, &u),
	    "\"\xef\xbf\xbd\xef\xbf\xbd\"");
	CHECK_STR(enc("\xed\xa0\x80", 3, SIZE_MAX, 1, &c, &u),
	    "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
	CHECK_STR(enc("\xf4\x90\x80\x80", 4, SIZE_MAX, 1, &c, &u),
	    "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
	CHECK_STR(enc("\x80", 1, SIZE_MAX, 1, &c, &u), "\"\xef\xbf\xbd\"");
	/* a truncated sequence followed by ASCII: one U+FFFD for the part */
	CHECK_STR(
	    enc("\xe2\x82z", 3, SIZE_MAX, 1, &c, &u), "\"\xef\xbf\xbdz\"");
	CHECK_INT(c, 2);
}

TEST(utf8_never_splits_at_the_end)
{
	size_t c, u;

	/* € cut after two bytes: held back unless final */
	CHECK_STR(enc("ab\xe2\x82", 4, SIZE_MAX, 0, &c, &u), "\"ab\"");
	CHECK_INT(u, 2);
	CHECK_STR(
	    enc("ab\xe2\x82", 4, SIZE_MAX, 1, &c, &u), "\"ab\xef\xbf\xbd\"");
	CHECK_INT(u, 4);
}

TEST(utf8_max_chars_counts_characters)
{
	size_t c, u;

	CHECK_STR(enc("\xc3\xa9\xc3\xa9\xc3\xa9", 6, 2, 0, &c, &u),
	    "\"\xc3\xa9\xc3\xa9\"");
	CHECK_INT(c, 2);
	CHECK_INT(u, 4);
	CHECK_STR(enc("abc", 3, 0, 0, &c, &u), "\"\"");
	CHECK_INT(u, 0);
}

TEST(utf8_count_matches_encoder)
{
	CHECK_INT(utf8_count((const uint8_t *)"pwd", 3), 3);
	CHECK_INT(utf8_count((const uint8_t *)"\xc3\xa9t\xc3\xa9", 5), 3);
	CHECK_INT(utf8_count((const uint8_t *)"\xff\xfe", 2), 2);
}

TEST(utf8_output_always_parses)
{
	uint8_t bytes[4096];
	struct buf b;
	cJSON *v;

	srand(3);
	buf_init(&b);
	for (int round = 0; round < 200; round++) {
		for (size_t i = 0; i < sizeof bytes; i++)
			bytes[i] = (uint8_t)rand();
		b.len = 0;
		utf8_json_string(&b, bytes, sizeof bytes, SIZE_MAX, 1, NULL);
		v = cJSON_Parse(buf_cstr(&b));
		CHECK(v != NULL && cJSON_IsString(v));
		/* every byte >= 0x80 left in the text is valid UTF-8 */
		for (size_t i = 0; i < b.len;) {
			uint32_t cp;
			int n = utf8_decode(b.data + i, b.len - i, &cp);

			CHECK(n > 0);
			i += (size_t)n;
		}
		cJSON_Delete(v);
	}
	buf_free(&b);
}

TEST(utf8_json_add_str_null)
{
	cJSON *obj = cJSON_CreateObject();
	char *s;

	json_add_str(obj, "a", NULL);
	json_add_str(obj, "b", "x\xff");
	s = cJSON_PrintUnformatted(obj);
	CHECK_STR(s, "{\"a\":null,\"b\":\"x\xef\xbf\xbd\"}");
	cJSON_free(s);
	cJSON_Delete(obj);
}
