/*
 * test_archive_layer.c: OCI image layers (TAR_X_LAYER): whiteouts, opaque
 * directories, a directory replaced by a file, owners and setuid bits,
 * any symlink target kept as data; and hostile layers that try to reach
 * outside the root through names, links or whiteouts.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "unit.h"
#include "test_archive.h"

/* Apply a crafted layer to s->dest; 0 or -1 with cause. */
static int
layer(struct scratch *s, struct tbuf *b, char **cause)
{
	struct tar_result res;

	tb_end(b);
	return extract_mem(
	    s->dest, b->p, b->len, b->len, TAR_X_LAYER, &res, cause);
}

/* Does dest/rel exist (not following a last symlink)? */
static int
there(const struct scratch *s, const char *rel)
{
	char p[600];
	struct stat st;

	snprintf(p, sizeof p, "%s/%s", s->dest, rel);
	return lstat(p, &st) == 0;
}

TEST(layer_whiteouts_and_opaque_directories)
{
	struct tbuf lower = {0}, upper = {0};
	struct scratch s;
	char *cause = NULL;

	scratch_new(&s);
	tb_header(&lower, "etc/", '5', 0, NULL, 0755);
	tb_file(&lower, "etc/keep", "k");
	tb_file(&lower, "etc/gone", "g");
	tb_header(&lower, "opq/", '5', 0, NULL, 0755);
	tb_file(&lower, "opq/old", "o");
	tb_header(&lower, "opq/sub/", '5', 0, NULL, 0755);
	tb_file(&lower, "opq/sub/older", "o");
	tb_header(&lower, "dir/", '5', 0, NULL, 0755);
	tb_file(&lower, "dir/inside", "i");
	CHECK_INT(layer(&s, &lower, &cause), 0);
	/* new before the marker, in the same layer: kept */
	tb_file(&upper, "opq/new", "n");
	tb_file(&upper, "opq/.wh..wh..opq", "");
	tb_file(&upper, "etc/.wh.gone", "");
	tb_file(&upper, "etc/.wh.never-was", "");
	tb_file(&upper, "dir", "now a file"); /* a dir replaced by a file */
	CHECK_INT(layer(&s, &upper, &cause), 0);
	CHECK(there(&s, "etc/keep"));
	CHECK(!there(&s, "etc/gone"));
	CHECK(!there(&s, "etc/.wh.gone"));
	CHECK(there(&s, "opq/new"));
	CHECK(!there(&s, "opq/old"));
	CHECK(!there(&s, "opq/sub"));
	CHECK(!there(&s, "opq/.wh..wh..opq"));
	CHECK(there(&s, "dir") && !there(&s, "dir/inside"));
	tb_free(&lower);
	tb_free(&upper);
	scratch_free(&s);
}

TEST(layer_keeps_setuid_and_absolute_symlinks)
{
	struct tbuf b = {0};
	struct scratch s;
	char *cause = NULL, p[600], link[64];
	struct stat st;
	ssize_t n;

	scratch_new(&s);
	tb_header(&b, "bin/", '5', 0, NULL, 0755);
	tb_header(&b, "bin/su", '0', 2, NULL, 04755);
	tb_data(&b, "su", 2);
	tb_header(&b, "bin/sh", '2', 0, "/bin/busybox", 0777);
	CHECK_INT(layer(&s, &b, &cause), 0);
	snprintf(p, sizeof p, "%s/bin/su", s.dest);
	CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 04755);
	snprintf(p, sizeof p, "%s/bin/sh", s.dest);
	n = readlink(p, link, sizeof link - 1);
	CHECK(n > 0);
	link[n] = '\0';
	CHECK_STR(link, "/bin/busybox");
	tb_free(&b);
	scratch_free(&s);
}

TEST(layer_hostile_paths_get_nothing)
{
	static const struct {
		const char *name;
		char type;
		const char *link;
		const char *why;
	} cases[] = {
	    {"../outside/x", '0', NULL, "'..'"},
	    {"a/../../outside/x", '0', NULL, "'..'"},
	    {"../outside/.wh.y", '0', NULL, "'..'"},
	    {"hl", '1', "../outside/f", "'..'"},
	    {".wh...", '0', NULL, "names no entry"},
	    {"a/.wh..", '0', NULL, "names no entry"},
	    {".wh.", '0', NULL, "names no entry"},
	};
	struct scratch s;

	scratch_new(&s);
	run("echo keep > '%s/sibling'", s.root);
	for (size_t i = 0; i < nitems(cases); i++) {
		struct tbuf b = {0};
		char *cause = NULL;

		if (cases[i].type == '0')
			tb_file(&b, cases[i].name, "pwned");
		else
			tb_header(&b, cases[i].name, cases[i].type, 0,
			    cases[i].link, 0644);
		CHECK_INT(layer(&s, &b, &cause), -1);
		if (strstr(cause, cases[i].why) == NULL) {
			fprintf(stderr, "    %s: %s\n", cases[i].name, cause);
			CHECK(!"unexpected error");
		}
		free(cause);
		CHECK_INT(dir_entries(s.outside), 0);
		CHECK_INT(dir_entries(s.root), 3); /* dest, outside, sibling */
		tb_free(&b);
	}
	scratch_free(&s);
}

TEST(layer_long_names_are_refused_not_stored)
{
	struct tbuf b = {0};
	struct scratch s;
	char *cause = NULL, *name = xmalloc(2000 * 2 + 2);

	scratch_new(&s);
	for (int i = 0; i < 2000; i++)
		memcpy(name + 2 * i, "a/", 2);
	strcpy(name + 4000, "f");
	/* a GNU long name record carries it */
	tb_header(&b, "././@LongLink", 'L', strlen(name) + 1, NULL, 0644);
	tb_data(&b, name, strlen(name) + 1);
	tb_file(&b, "short", "x");
	CHECK_INT(layer(&s, &b, &cause), -1);
	CHECK(strstr(cause, "bytes") != NULL);
	free(cause);
	free(name);
	tb_free(&b);
	scratch_free(&s);
}

TEST(layer_writes_and_whiteouts_never_pass_a_symlink)
{
	struct tbuf one = {0}, two = {0}, three = {0};
	struct scratch s;
	char *cause = NULL, target[600];

	scratch_new(&s);
	snprintf(target, sizeof target, "%s", s.outside);
	run("echo keep > '%s/victim'", s.outside);
	/* a symlink to the host's folder, then a write and a whiteout
	 * through it: both refused, the folder untouched */
	tb_header(&one, "esc", '2', 0, target, 0777);
	CHECK_INT(layer(&s, &one, &cause), 0);
	tb_file(&two, "esc/pwned", "x");
	CHECK_INT(layer(&s, &two, &cause), -1);
	CHECK(strstr(cause, "symbolic link") != NULL);
	free(cause);
	cause = NULL;
	tb_file(&three, "esc/.wh.victim", "");
	CHECK_INT(layer(&s, &three, &cause), -1);
	free(cause);
	CHECK_INT(dir_entries(s.outside), 1);
	CHECK(there(&s, "esc"));
	tb_free(&one);
	tb_free(&two);
	tb_free(&three);
	scratch_free(&s);
}

TEST(layer_bounded_by_max_bytes)
{
	struct tbuf b = {0};
	struct scratch s;
	struct tar_extract *te;
	char *cause = NULL, big[4096];

	scratch_new(&s);
	memset(big, 'z', sizeof big);
	tb_header(&b, "bomb", '0', sizeof big, NULL, 0644);
	tb_data(&b, big, sizeof big);
	tb_end(&b);
	te = tar_extract_new(s.dest, &cause);
	CHECK(te != NULL);
	tar_extract_set_flags(te, TAR_X_LAYER);
	tar_extract_set_max(te, 1000);
	CHECK_INT(tar_extract_feed(te, b.p, b.len, &cause), -1);
	CHECK(strstr(cause, "add up to more than") != NULL);
	free(cause);
	tar_extract_free(te);
	CHECK(!there(&s, "bomb"));
	tb_free(&b);
	scratch_free(&s);
}
