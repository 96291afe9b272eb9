/*
 * test_cli_cp.c: `vmux cp`'s operands (NAME:PATH on exactly one side) and
 * the progress line's byte counts.
 */
#include <stdlib.h>

#include "common/common.h"
#include "session/session.h"
#include "cli/cli.h"
#include "unit.h"

TEST(cp_split_remote_and_local)
{
	char *s, *p, *cause = NULL;

	CHECK_INT(cp_split("box:/tmp/x", &s, &p, &cause), 1);
	CHECK_STR(s, "box");
	CHECK_STR(p, "/tmp/x");
	free(s);
	free(p);
	CHECK_INT(cp_split("a.b-c_1:/", &s, &p, &cause), 1);
	CHECK_STR(s, "a.b-c_1");
	CHECK_STR(p, "/");
	free(s);
	free(p);
	/* host paths: no colon, a '/' before it, or nothing before it */
	CHECK_INT(cp_split("file.txt", &s, &p, &cause), 0);
	CHECK_INT(cp_split("./a:b", &s, &p, &cause), 0);
	CHECK_INT(cp_split("/abs/a:b", &s, &p, &cause), 0);
	CHECK_INT(cp_split(":x", &s, &p, &cause), 0);
	CHECK(s == NULL && p == NULL);
}

TEST(cp_split_errors)
{
	static const char *bad[] = {
	    "box:", "box:rel/path", "-bad:/x", "sp ace:/x"};
	char *s, *p, *cause;

	for (size_t i = 0; i < nitems(bad); i++) {
		cause = NULL;
		CHECK_INT(cp_split(bad[i], &s, &p, &cause), -1);
		CHECK(cause != NULL && strstr(cause, bad[i]) != NULL);
		free(cause);
	}
	cause = NULL;
	CHECK_INT(cp_split("box:tmp", &s, &p, &cause), -1);
	CHECK(strstr(cause, "absolute") != NULL);
	free(cause);
}

TEST(cp_parse_directions)
{
	struct cp_spec sp;
	char *cause = NULL;

	CHECK(cp_parse("f.txt", "vm:/tmp/", &sp, &cause) == 0);
	CHECK_INT(sp.upload, 1);
	CHECK_STR(sp.session, "vm");
	CHECK_STR(sp.remote, "/tmp/");
	CHECK_STR(sp.local, "f.txt");
	cp_spec_free(&sp);
	CHECK(cp_parse("vm:/etc/hosts", ".", &sp, &cause) == 0);
	CHECK_INT(sp.upload, 0);
	CHECK_STR(sp.session, "vm");
	CHECK_STR(sp.remote, "/etc/hosts");
	CHECK_STR(sp.local, ".");
	cp_spec_free(&sp);
}

TEST(cp_parse_needs_exactly_one_remote)
{
	struct cp_spec sp;
	char *cause = NULL;

	CHECK(cp_parse("a", "b", &sp, &cause) == -1);
	CHECK(strstr(cause, "NAME:PATH") != NULL);
	free(cause);
	cause = NULL;
	CHECK(cp_parse("x:/a", "y:/b", &sp, &cause) == -1);
	CHECK(strstr(cause, "two guests") != NULL);
	free(cause);
	cause = NULL;
	CHECK(cp_parse("", "vm:/x", &sp, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(cp_parse("f", "vm:", &sp, &cause) == -1);
	free(cause);
}

TEST(progress_human_units)
{
	char *s;

	s = progress_human(0);
	CHECK_STR(s, "0 B");
	free(s);
	s = progress_human(1023);
	CHECK_STR(s, "1023 B");
	free(s);
	s = progress_human(1536);
	CHECK_STR(s, "1.5 KiB");
	free(s);
	s = progress_human(16u << 20);
	CHECK_STR(s, "16.0 MiB");
	free(s);
}
