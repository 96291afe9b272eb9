/* test_common.c: unit tests for common/ helpers. */
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
