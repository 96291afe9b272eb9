/*
 * test_bridge_connect.c: the "CONNECT <port>\n" line parser.
 */
#include "test_bridge_fake.h"

struct ccase {
	const char *in;
	int want;
	uint32_t port;
	size_t linelen;
};

static const struct ccase cases[] = {
    {"CONNECT 5005\n", CONNECT_DONE, 5005, 13},
    {"CONNECT 5005\r\n", CONNECT_DONE, 5005, 14},
    {"CONNECT 0\n", CONNECT_DONE, 0, 10},
    {"CONNECT 4294967294\n", CONNECT_DONE, 4294967294u, 19},
    {"CONNECT 5005\nhello", CONNECT_DONE, 5005, 13}, /* trailing kept */
    {"CONNECT 5005\r\n\r\n", CONNECT_DONE, 5005, 14},
    {"", CONNECT_MORE, 0, 0},
    {"C", CONNECT_MORE, 0, 0},
    {"CONNECT", CONNECT_MORE, 0, 0},
    {"CONNECT ", CONNECT_MORE, 0, 0},
    {"CONNECT 50", CONNECT_MORE, 0, 0},
    {"CONNECT 50\r", CONNECT_MORE, 0, 0},
    {"GET / HTTP/1.0\r\n", CONNECT_BAD, 0, 0},
    {"X", CONNECT_BAD, 0, 0},
    {"connect 5005\n", CONNECT_BAD, 0, 0},
    {"CONNECT\n", CONNECT_BAD, 0, 0},
    {"CONNECT \n", CONNECT_BAD, 0, 0},
    {"CONNECT  5005\n", CONNECT_BAD, 0, 0},
    {"CONNECT -1\n", CONNECT_BAD, 0, 0},
    {"CONNECT 5005 \n", CONNECT_BAD, 0, 0},
    {"CONNECT 50a5\n", CONNECT_BAD, 0, 0},
    {"CONNECT 5005\r\r\n", CONNECT_BAD, 0, 0},
    {"CONNECT 5005\rx", CONNECT_BAD, 0, 0},
    {"CONNECT 4294967295\n", CONNECT_BAD, 0, 0}, /* VMADDR_PORT_ANY */
    {"CONNECT 4294967296\n", CONNECT_BAD, 0, 0},
    {"CONNECT 99999999999\n", CONNECT_BAD, 0, 0},
    {"CONNECT 00000000005\n", CONNECT_BAD, 0, 0}, /* 11 digits */
    {"CONNECT 0x10\n", CONNECT_BAD, 0, 0},
};

TEST(connect_table)
{
	for (size_t i = 0; i < nitems(cases); i++) {
		uint32_t port = 12345;
		size_t linelen = 999;
		int r = connect_parse(
		    cases[i].in, strlen(cases[i].in), &port, &linelen);

		if (r != cases[i].want)
			unit_fail(
			    __FILE__, __LINE__, "\"%s\": %d", cases[i].in, r);
		CHECK_INT(r, cases[i].want);
		if (r == CONNECT_DONE) {
			CHECK_INT(port, cases[i].port);
			CHECK_INT(linelen, cases[i].linelen);
		}
	}
}

TEST(connect_every_fragment_of_a_good_line_asks_for_more)
{
	const char *line = "CONNECT 1234\r\nDATA";
	uint32_t port;
	size_t linelen;

	for (size_t n = 0; n < 14; n++)
		CHECK_INT(
		    connect_parse(line, n, &port, &linelen), CONNECT_MORE);
	for (size_t n = 14; n <= strlen(line); n++) {
		CHECK_INT(
		    connect_parse(line, n, &port, &linelen), CONNECT_DONE);
		CHECK_INT(port, 1234);
		CHECK_INT(linelen, 14);
	}
}

TEST(connect_garbage_is_refused_at_the_first_bad_byte)
{
	uint32_t port;
	size_t linelen;

	CHECK_INT(connect_parse("CONNEC", 6, &port, &linelen), CONNECT_MORE);
	CHECK_INT(connect_parse("CONNEX", 6, &port, &linelen), CONNECT_BAD);
	CHECK_INT(
	    connect_parse("\0CONNECT 1\n", 11, &port, &linelen), CONNECT_BAD);
	CHECK_INT(
	    connect_parse("CONNECT 1\0\n", 11, &port, &linelen), CONNECT_BAD);
}

TEST(connect_overlong)
{
	char buf[200];
	uint32_t port;
	size_t linelen;

	memset(buf, '7', sizeof buf);
	CHECK_INT(connect_parse(buf, sizeof buf, &port, &linelen), CONNECT_BAD);
	/* a valid prefix that never ends within 64 bytes */
	memcpy(buf, "CONNECT 5", 9);
	memset(buf + 9, '\r', 1);
	CHECK_INT(connect_parse(buf, 10, &port, &linelen), CONNECT_MORE);
	/* 64 bytes of digits: bad long before the length limit */
	memcpy(buf, "CONNECT ", 8);
	memset(buf + 8, '0', 56);
	CHECK_INT(connect_parse(buf, 64, &port, &linelen), CONNECT_BAD);
	/* the longest valid line fits easily */
	CHECK_INT(connect_parse("CONNECT 4294967294\r\n", 20, &port, &linelen),
	    CONNECT_DONE);
}
