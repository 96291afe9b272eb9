/* test_common.c: unit tests for common/ helpers. */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/common.h"
#include "unit.h"

TEST(xasprintf_formats)
{
	char *s;

	CHECK_INT(xasprintf(&s, "%s-%d", "a", 7), 3);
	CHECK_STR(s, "a-7");
	free(s);
}

TEST(time_rfc3339_is_utc_with_z)
{
	char *s = time_rfc3339(0);

	CHECK_STR(s, "1970-01-01T00:00:00Z");
	free(s);
	s = time_rfc3339(1763740800);
	CHECK_STR(s, "2025-11-21T16:00:00Z");
	free(s);
	s = time_rfc3339(1795474260.987); /* fractions are dropped */
	CHECK_STR(s, "2026-11-23T22:51:00Z");
	free(s);
	CHECK(time_rfc3339(-1) == NULL);
	CHECK(time_rfc3339(1e300) == NULL);
	CHECK(time_rfc3339(NAN) == NULL);
}

TEST(write_all_and_read_full_round_trip)
{
	int p[2];
	char buf[6] = {0};

	CHECK(pipe(p) == 0);
	CHECK_INT(write_all(p[1], "hello", 5), 5);
	close(p[1]);
	CHECK_INT(read_full(p[0], buf, sizeof buf), 5);
	CHECK_STR(buf, "hello");
	close(p[0]);
}
