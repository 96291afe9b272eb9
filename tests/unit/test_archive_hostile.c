/*
 * test_archive_hostile.c: archives that try to write outside the
 * destination. Each case checks the error and that the sibling directory
 * "outside" is exactly as before. Targets point into the scratch directory,
 * never at real system paths, so a broken build cannot damage the host.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "unit.h"
#include "test_archive.h"

/* Extract a crafted archive byte by byte and in one go: same outcome. */
static int
both(struct scratch *s, struct tbuf *b, int flags, struct tar_result *res,
    char **cause)
{
	char *c1 = NULL;
	int r1, r2;

	r1 = extract_mem(s->dest, b->p, b->len, 1, flags, res, &c1);
	r2 = extract_mem(s->dest, b->p, b->len, b->len, flags, res, cause);
	if (r1 != r2 || (r1 != 0 && strcmp(c1, *cause) != 0)) {
		fprintf(stderr, "    chunked %d (%s) vs whole %d (%s)\n", r1,
		    c1 ? c1 : "", r2, *cause ? *cause : "");
		free(c1);
		return -2;
	}
	free(c1);
	return r2;
}

/* Expect failure with msg in the error and nothing outside. */
#define EXPECT_REFUSED(s, b, msg)                                              \
	do {                                                                   \
		struct tar_result res_;                                        \
		char *cause_ = NULL;                                           \
		CHECK_INT(both(s, b, 0, &res_, &cause_), -1);                  \
		if (strstr(cause_, msg) == NULL) {                             \
			fprintf(stderr, "    error: %s\n", cause_);            \
			CHECK(!"unexpected error message");                    \
		}                                                              \
		free(cause_);                                                  \
		CHECK_INT(dir_entries((s)->outside), 0);                       \
	} while (0)

TEST(archive_hostile_dotdot_names)
{
	static const char *names[] = {"../outside/x", "a/../../outside/x",
	    "./../outside/x", "a/b/../../../outside/x", "..", "a/.."};
	struct scratch s;

	scratch_new(&s);
	for (size_t i = 0; i < nitems(names); i++) {
		struct tbuf b = {0};

		tb_file(&b, names[i], "pwned");
		tb_end(&b);
		EXPECT_REFUSED(&s, &b, "contains '..'");
		tb_free(&b);
	}
	scratch_free(&s);
}

TEST(archive_hostile_absolute_names_stripped)
{
	struct tar_result res;
	struct tbuf b = {0};
	struct scratch s;
	char name[400], path[800], *cause = NULL;

	scratch_new(&s);
	/* "/ROOT/outside/abs" must land at DEST/ROOT/outside/abs. */
	snprintf(name, sizeof name, "%s/abs", s.outside);
	tb_file(&b, name, "inside");
	snprintf(name, sizeof name, "//%s/abs2", s.outside);
	tb_file(&b, name, "inside");
	tb_end(&b);
	CHECK_INT(both(&s, &b, 0, &res, &cause), 0);
	CHECK_INT(dir_entries(s.outside), 0);
	snprintf(path, sizeof path, "%s%s/abs", s.dest, s.outside);
	CHECK_INT(access(path, F_OK), 0);
	snprintf(path, sizeof path, "%s%s/abs2", s.dest, s.outside);
	CHECK_INT(access(path, F_OK), 0);
	tb_free(&b);
	scratch_free(&s);
}

TEST(archive_hostile_symlink_targets)
{
	struct scratch s;
	char abs[400];

	scratch_new(&s);
	snprintf(abs, sizeof abs, "%s", s.outside);
	struct {
		const char *name, *target, *msg;
	} cases[] = {
	    {"l", abs, "absolute symlink target"},
	    {"l", "../outside", "leaves the destination"},
	    {"d/l", "../../outside", "leaves the destination"},
	    {"d/e/l", "../../../outside/x", "leaves the destination"},
	    {"l", "..", "leaves the destination"},
	    {"l", "./../outside", "leaves the destination"},
	    {"m", "d/l/../..", "'..' after a name"},
	    {"m", "d/../../outside", "'..' after a name"},
	    {"l", "", "empty symlink target"},
	};
	for (size_t i = 0; i < nitems(cases); i++) {
		struct tbuf b = {0};

		tb_header(&b, cases[i].name, '2', 0, cases[i].target, 0777);
		tb_end(&b);
		EXPECT_REFUSED(&s, &b, cases[i].msg);
		tb_free(&b);
	}
	scratch_free(&s);
}

TEST(archive_symlink_targets_inside_allowed)
{
	struct tar_result res;
	struct tbuf b = {0};
	struct scratch s;
	char *cause = NULL, path[512], buf[64];
	ssize_t n;

	scratch_new(&s);
	tb_header(&b, "d/e/up", '2', 0, "../../top", 0777);
	tb_header(&b, "d/sib", '2', 0, "../x/./y", 0777);
	tb_header(&b, "self", '2', 0, ".", 0777);
	tb_end(&b);
	CHECK_INT(both(&s, &b, 0, &res, &cause), 0);
	CHECK_INT(res.entry_count, 3);
	snprintf(path, sizeof path, "%s/d/e/up", s.dest);
	n = readlink(path, buf, sizeof buf - 1);
	CHECK_INT(n, 9);
	CHECK_MEM(buf, "../../top", 9);
	CHECK_INT(dir_entries(s.outside), 0);
	tb_free(&b);
	scratch_free(&s);
}

TEST(archive_hostile_unsafe_symlinks_skipped_on_request)
{
	struct tar_result res;
	struct tbuf b = {0};
	struct scratch s;
	char *cause = NULL, path[512], name[400];
	struct stat st;

	scratch_new(&s);
	tb_header(&b, "a", '2', 0, s.outside, 0777);
	snprintf(name, sizeof name, "a/passwd");
	tb_file(&b, name, "pwned");
	tb_end(&b);
	CHECK_INT(both(&s, &b, TAR_X_SKIP_UNSAFE_LINKS, &res, &cause), 0);
	CHECK_INT(res.skipped, 1);
	CHECK_INT(res.entry_count, 1);
	CHECK_INT(dir_entries(s.outside), 0);
	/* The file went to a real directory "a" inside the destination. */
	snprintf(path, sizeof path, "%s/a", s.dest);
	CHECK_INT(lstat(path, &st), 0);
	CHECK(S_ISDIR(st.st_mode));
	tb_free(&b);
	scratch_free(&s);
}

/* The classic: a symlink (harmless on its own) then a file through it. */
TEST(archive_hostile_file_through_extracted_symlink)
{
	struct tbuf b = {0};
	struct scratch s;

	scratch_new(&s);
	tb_header(&b, "sub/", '5', 0, NULL, 0755);
	tb_header(&b, "a", '2', 0, "sub", 0777);
	tb_file(&b, "a/passwd", "pwned");
	tb_end(&b);
	EXPECT_REFUSED(&s, &b, "'a' is a symbolic link");
	tb_free(&b);

	/* Same through a hard link of the symlink, and deeper. */
	tb_header(&b, "x/y", '2', 0, "..", 0777);
	tb_file(&b, "x/y/z/f", "pwned");
	tb_end(&b);
	EXPECT_REFUSED(&s, &b, "is a symbolic link");
	tb_free(&b);
	scratch_free(&s);
}

/* Symlinks already in the destination are never followed either. */
TEST(archive_hostile_preexisting_symlinks)
{
	struct tar_result res;
	struct tbuf b = {0};
	struct scratch s;
	char *cause = NULL, path[512];
	struct stat st;

	scratch_new(&s);
	CHECK_INT(run("mkdir -p '%s' && ln -s '%s' '%s/evil' && "
	              "ln -s ../outside '%s/rel'",
	              s.dest, s.outside, s.dest, s.dest),
	    0);
	tb_file(&b, "evil/passwd", "pwned");
	tb_end(&b);
	EXPECT_REFUSED(&s, &b, "'evil' is a symbolic link");
	tb_free(&b);

	tb_file(&b, "rel/deeper/passwd", "pwned");
	tb_end(&b);
	EXPECT_REFUSED(&s, &b, "'rel' is a symbolic link");
	tb_free(&b);

	/* A file named like the symlink replaces it; nothing written through.
	 */
	CHECK_INT(run("printf secret > '%s/target' && ln -sf '%s/target' "
	              "'%s/victim'",
	              s.root, s.root, s.dest),
	    0);
	tb_file(&b, "victim", "replaced");
	tb_end(&b);
	CHECK_INT(both(&s, &b, 0, &res, &cause), 0);
	CHECK_INT(run("test \"$(cat '%s/target')\" = secret", s.root), 0);
	snprintf(path, sizeof path, "%s/victim", s.dest);
	CHECK_INT(lstat(path, &st), 0);
	CHECK(S_ISREG(st.st_mode));
	tb_free(&b);
	CHECK_INT(dir_entries(s.outside), 0);
	scratch_free(&s);
}

TEST(archive_hostile_hard_links)
{
	struct tbuf b = {0};
	struct scratch s;
	char target[400];
	struct stat st;

	/* ROOT/secret sits beside the destination; evil -> ROOT. */
	scratch_new(&s);
	CHECK_INT(run("printf secret > '%s/secret' && mkdir -p '%s' && "
	              "ln -s '%s' '%s/evil'",
	              s.root, s.dest, s.root, s.dest),
	    0);

	tb_header(&b, "h", '1', 0, "../secret", 0644);
	tb_end(&b);
	EXPECT_REFUSED(&s, &b, "contains '..'");
	tb_free(&b);

	/* An absolute target is stripped like a name: inside, missing. */
	snprintf(target, sizeof target, "%s/secret", s.root);
	tb_header(&b, "h", '1', 0, target, 0644);
	tb_end(&b);
	EXPECT_REFUSED(&s, &b, "No such file");
	tb_free(&b);

	/* Through a symlink in the destination. */
	tb_header(&b, "h", '1', 0, "evil/secret", 0644);
	tb_end(&b);
	EXPECT_REFUSED(&s, &b, "'evil' is a symbolic link");
	tb_free(&b);

	/* A link to itself is a no-op; a file then replaces the symlink. */
	tb_header(&b, "evil", '1', 0, "evil", 0644);
	tb_file(&b, "evil", "pwned");
	tb_end(&b);
	{
		struct tar_result res;
		char *cause = NULL;

		CHECK_INT(both(&s, &b, 0, &res, &cause), 0);
	}
	tb_free(&b);

	CHECK_INT(stat(target, &st), 0);
	CHECK_INT(st.st_nlink, 1);
	CHECK_INT(st.st_size, 6);
	CHECK_INT(run("test \"$(cat '%s')\" = secret", target), 0);
	CHECK_INT(dir_entries(s.outside), 0);
	scratch_free(&s);
}

/* A hard link made inside, then a file written "through" it replaces it. */
TEST(archive_hard_link_then_file_replaces_not_writes_through)
{
	struct tar_result res;
	struct tbuf b = {0};
	struct scratch s;
	char *cause = NULL;

	scratch_new(&s);
	tb_file(&b, "orig", "original");
	tb_header(&b, "link", '1', 0, "orig", 0644);
	tb_file(&b, "link", "changed");
	tb_end(&b);
	CHECK_INT(both(&s, &b, 0, &res, &cause), 0);
	CHECK_INT(run("test \"$(cat '%s/orig')\" = original && "
	              "test \"$(cat '%s/link')\" = changed",
	              s.dest, s.dest),
	    0);
	tb_free(&b);
	scratch_free(&s);
}

TEST(archive_hostile_long_names_and_pax_paths)
{
	struct tbuf b = {0};
	struct scratch s;
	const char *bad = "../outside/long";
	char pax[128];
	int n;

	scratch_new(&s);
	/* GNU long name. */
	tb_header(&b, "././@LongLink", 'L', strlen(bad) + 1, NULL, 0);
	tb_data(&b, bad, strlen(bad) + 1);
	tb_file(&b, "harmless", "pwned");
	tb_end(&b);
	EXPECT_REFUSED(&s, &b, "contains '..'");
	tb_free(&b);

	/* GNU long link target of a symlink. */
	tb_header(&b, "././@LongLink", 'K', strlen(bad) + 1, NULL, 0);
	tb_data(&b, bad, strlen(bad) + 1);
	tb_header(&b, "l", '2', 0, "harmless", 0777);
	tb_end(&b);
	EXPECT_REFUSED(&s, &b, "leaves the destination");
	tb_free(&b);

	/* pax path. */
	/* Two length digits + " path=" + name + "\n". */
	n = snprintf(
	    pax, sizeof pax, "%d path=%s\n", (int)(strlen(bad) + 9), bad);
	tb_header(&b, "PaxHeader", 'x', (uint64_t)n, NULL, 0644);
	tb_data(&b, pax, (size_t)n);
	tb_file(&b, "harmless", "pwned");
	tb_end(&b);
	EXPECT_REFUSED(&s, &b, "contains '..'");
	tb_free(&b);
	scratch_free(&s);
}

TEST(archive_devices_and_fifos_skipped)
{
	struct tar_result res;
	struct tbuf b = {0};
	struct scratch s;
	char *cause = NULL;

	scratch_new(&s);
	tb_header(&b, "null", '3', 0, NULL, 0666);
	tb_header(&b, "disk", '4', 0, NULL, 0660);
	tb_header(&b, "fifo", '6', 0, NULL, 0644);
	tb_header(&b, "weird", 'Q', 5, NULL, 0644);
	tb_data(&b, "12345", 5);
	tb_file(&b, "real", "ok");
	tb_end(&b);
	CHECK_INT(both(&s, &b, 0, &res, &cause), 0);
	CHECK_INT(res.skipped, 4);
	CHECK_INT(res.entry_count, 1);
	CHECK_INT(dir_entries(s.dest), 1);
	tb_free(&b);
	scratch_free(&s);
}

/* Hard-link to a directory, link named like the destination, NUL in pax. */
TEST(archive_hostile_odd_links)
{
	struct tbuf b = {0};
	struct scratch s;
	static const char pax[] = "21 linkpath=a\0/../..\n";

	scratch_new(&s);
	tb_header(&b, "d/", '5', 0, NULL, 0755);
	tb_header(&b, "h", '1', 0, "d", 0644);
	tb_end(&b);
	EXPECT_REFUSED(&s, &b, "to a directory");
	tb_free(&b);

	tb_header(&b, "h", '1', 0, ".", 0644);
	tb_end(&b);
	EXPECT_REFUSED(&s, &b, "to a directory");
	tb_free(&b);

	tb_header(&b, "PaxHeader", 'x', sizeof pax - 1, NULL, 0644);
	tb_data(&b, pax, sizeof pax - 1);
	tb_header(&b, "l", '2', 0, "x", 0777);
	tb_end(&b);
	EXPECT_REFUSED(&s, &b, "NUL");
	tb_free(&b);
	scratch_free(&s);
}

/*
 * tar_extract_expect_top: members beneath the expected name only; any
 * other top-level name (also through ./, a leading /, or a hard link's
 * target) fails naming the member.
 */
TEST(archive_expect_top_refuses_other_names)
{
	static const struct {
		const char *name, *link, *named;
		char type;
	} bad[] = {
	    {".bashrc", NULL, "'.bashrc'", '0'},
	    {"y/evil", NULL, "'y/evil'", '0'},
	    {"./z", NULL, "'z'", '0'},
	    {"/etc/evil", NULL, "'etc/evil'", '0'},
	    {"xy", NULL, "'xy'", '0'},
	    {"x/h", ".bashrc", "'.bashrc'", '1'},
	};
	struct scratch s;

	scratch_new(&s);
	for (size_t i = 0; i < nitems(bad); i++) {
		struct tbuf b = {0};
		struct tar_extract *te;
		char *cause = NULL;
		int rc;

		tb_header(&b, "x/", '5', 0, NULL, 0755);
		tb_file(&b, "x/ok.txt", "fine");
		if (bad[i].type == '0')
			tb_file(&b, bad[i].name, "evil");
		else
			tb_header(
			    &b, bad[i].name, bad[i].type, 0, bad[i].link, 0644);
		tb_end(&b);
		te = tar_extract_new(s.dest, &cause);
		CHECK(te != NULL);
		CHECK_INT(tar_extract_expect_top(te, "x", &cause), 0);
		rc = tar_extract_feed(te, b.p, b.len, &cause);
		if (rc == 0)
			rc = tar_extract_finish(te, NULL, &cause);
		CHECK_INT(rc, -1);
		CHECK(cause != NULL && strstr(cause, bad[i].named) != NULL);
		tar_extract_free(te);
		free(cause);
		tb_free(&b);
		run("rm -rf '%s'/* '%s'/.[!.]*", s.dest, s.dest);
	}
	/* the expected name itself, and names with slashes, are checked */
	{
		struct tar_extract *te = tar_extract_new(s.dest, NULL);
		char *cause = NULL;

		CHECK_INT(tar_extract_expect_top(te, "a/b", &cause), -1);
		free(cause);
		cause = NULL;
		CHECK_INT(tar_extract_expect_top(te, "..", &cause), -1);
		free(cause);
		tar_extract_free(te);
	}
	scratch_free(&s);
}
