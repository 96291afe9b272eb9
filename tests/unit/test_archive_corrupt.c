/*
 * test_archive_corrupt.c: truncated, corrupt and oversized input. Every
 * case must fail with a message naming the problem, write nothing outside
 * the destination, and never crash.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "unit.h"
#include "test_archive.h"

/* Extract and expect failure with msg in the error. */
static int
refused(struct scratch *s, const void *buf, size_t len, size_t chunk,
    const char *msg)
{
	struct tar_result res;
	char *cause = NULL;
	int ok;

	if (extract_mem(s->dest, buf, len, chunk, 0, &res, &cause) == 0) {
		fprintf(stderr, "    accepted (expected '%s')\n", msg);
		return 0;
	}
	ok = strstr(cause, msg) != NULL;
	if (!ok)
		fprintf(stderr, "    error '%s' (expected '%s')\n", cause, msg);
	free(cause);
	return ok && dir_entries(s->outside) == 0;
}

/* A small valid archive: a directory, two files, a symlink. */
static void
sample(struct tbuf *b)
{
	tb_header(b, "d/", '5', 0, NULL, 0755);
	tb_file(b, "d/one", "first file\n");
	tb_file(b, "d/two", "second\n");
	tb_header(b, "d/l", '2', 0, "one", 0777);
	tb_end(b);
}

TEST(archive_bad_checksums)
{
	struct tbuf b = {0};
	struct scratch s;

	scratch_new(&s);
	sample(&b);
	b.p[0] ^= 1; /* first header */
	CHECK(refused(&s, b.p, b.len, 512, "not a tar archive"));
	b.p[0] ^= 1;
	b.p[512 + 10] ^= 0x40; /* second header */
	CHECK(
	    refused(&s, b.p, b.len, 512, "bad header checksum at offset 512"));
	b.p[512 + 10] ^= 0x40;
	memcpy(b.p + 148, "zzzzzz", 6); /* unparsable checksum field */
	CHECK(refused(&s, b.p, b.len, 512, "not a tar archive"));
	tb_free(&b);
	scratch_free(&s);
}

TEST(archive_every_truncation_fails)
{
	struct tbuf b = {0};
	struct scratch s;
	size_t end;

	scratch_new(&s);
	sample(&b);
	end = b.len - 1024; /* where the end-of-archive marker starts */
	for (size_t n = 0; n < end + 512; n += (n < 1100 ? 1 : 37)) {
		char *cause = NULL;
		struct tar_result res;

		CHECK_INT(
		    extract_mem(s.dest, b.p, n, 100, 0, &res, &cause), -1);
		CHECK(strstr(cause, n == 0 ? "empty" : "truncated") != NULL);
		free(cause);
		CHECK_INT(dir_entries(s.outside), 0);
	}
	tb_free(&b);
	scratch_free(&s);
}

TEST(archive_truncated_data_names_member)
{
	struct tbuf b = {0};
	struct scratch s;

	scratch_new(&s);
	tb_header(&b, "big", '0', 5000, NULL, 0644);
	tb_append(&b, "abc", 3);
	CHECK(refused(&s, b.p, b.len, 512, "'big' is missing 4997 bytes"));
	tb_free(&b);
	tb_header(&b, "x", '0', 0, NULL, 0644);
	tb_append(&b, "\0\0\0", 3);
	CHECK(refused(&s, b.p, b.len, 512, "partial header at offset 512"));
	tb_free(&b);
	tb_file(&b, "y", "z");
	CHECK(refused(&s, b.p, b.len, 512, "no end-of-archive marker"));
	tb_free(&b);
	scratch_free(&s);
}

TEST(archive_gzip_truncations_and_garbage)
{
	struct scratch s;
	unsigned char *gz;
	size_t len;
	char path[512];

	scratch_new(&s);
	CHECK_INT(run("cd '%s' && mkdir t && seq 1 5000 > t/n && "
	              "tar -czf a.tgz t",
	              s.root),
	    0);
	snprintf(path, sizeof path, "%s/a.tgz", s.root);
	gz = slurp(path, &len);
	CHECK(gz != NULL);
	for (size_t n = 1; n < len; n += (n < 64 || n > len - 64 ? 1 : 97)) {
		char *cause = NULL;
		struct tar_result res;

		CHECK_INT(extract_mem(s.dest, gz, n, 50, 0, &res, &cause), -1);
		CHECK(strstr(cause, "truncated") != NULL);
		free(cause);
	}
	/* Corrupt the deflate data in the middle. */
	for (size_t i = 20; i < 60; i++)
		gz[i] ^= 0x55;
	CHECK(refused(&s, gz, len, 4096, "bad gzip data"));
	/* Garbage after the gzip magic. */
	CHECK(refused(&s, "\x1f\x8bgarbage-garbage", 17, 1, "bad gzip data"));
	free(gz);
	scratch_free(&s);
}

TEST(archive_garbage_is_not_a_tar)
{
	unsigned char junk[4096];
	struct scratch s;
	unsigned seed = 12345;

	scratch_new(&s);
	for (int round = 0; round < 20; round++) {
		for (size_t i = 0; i < sizeof junk; i++)
			junk[i] = (unsigned char)(rand_r(&seed) >> 7);
		junk[0] = 'x';
		CHECK(refused(&s, junk, sizeof junk, 333, "not a tar archive"));
	}
	CHECK(refused(&s, "hello world\n", 12, 4, "truncated"));
	CHECK(refused(&s, "", 0, 4, "empty archive"));
	scratch_free(&s);
}

TEST(archive_oversized_meta_headers)
{
	struct tbuf b = {0};
	struct scratch s;

	scratch_new(&s);
	tb_header(&b, "././@LongLink", 'L', TAR_MAX_LONGNAME + 1, NULL, 0);
	CHECK(refused(&s, b.p, b.len, 512, "over the limit"));
	tb_free(&b);
	tb_header(&b, "PaxHeader", 'x', TAR_MAX_PAX + 1, NULL, 0);
	CHECK(refused(&s, b.p, b.len, 512, "over the limit"));
	tb_free(&b);
	/* A 60 KiB long name is fine (but too long for the filesystem). */
	{
		size_t n = 60 * 1024;
		char *name = xmalloc(n + 1);

		memset(name, 'a', n);
		for (size_t i = 200; i < n; i += 200)
			name[i] = '/';
		name[n] = '\0';
		tb_header(&b, "././@LongLink", 'L', n + 1, NULL, 0);
		tb_data(&b, name, n + 1);
		tb_file(&b, "short", "x");
		tb_end(&b);
		struct tar_result res;
		char *cause = NULL;
		int rc = extract_mem(s.dest, b.p, b.len, 4096, 0, &res, &cause);
		/* Deep paths are fine for openat; the result must be exact. */
		CHECK_INT(rc, 0);
		CHECK_INT(res.entry_count, 1);
		free(name);
		tb_free(&b);
	}
	scratch_free(&s);
}

TEST(archive_bad_fields)
{
	struct tbuf b = {0};
	struct scratch s;
	static const char *bad_pax[] = {
	    "9 path\n",       /* no '=' */
	    "99 path=x\n",    /* length past the end */
	    "x path=y\n",     /* no length */
	    "12 size=abc\n",  /* bad number */
	    "11 size=-1\n",   /* negative */
	    "13 mtime=1.x\n", /* bad time */
	};

	scratch_new(&s);
	/* Size field with a non-octal digit, checksum still right. */
	tb_header(&b, "f", '0', 0, NULL, 0644);
	b.p[124] = '9';
	{
		unsigned sum = 0;

		memset(b.p + 148, ' ', 8);
		for (int i = 0; i < 512; i++)
			sum += b.p[i];
		snprintf((char *)b.p + 148, 8, "%06o", sum);
	}
	tb_end(&b);
	CHECK(refused(&s, b.p, b.len, 512, "bad size field"));
	tb_free(&b);

	for (size_t i = 0; i < nitems(bad_pax); i++) {
		size_t n = strlen(bad_pax[i]);

		tb_header(&b, "PaxHeader", 'x', n, NULL, 0644);
		tb_data(&b, bad_pax[i], n);
		tb_file(&b, "f", "x");
		tb_end(&b);
		CHECK(refused(&s, b.p, b.len, 512, "pax"));
		tb_free(&b);
	}
	scratch_free(&s);
}

/* Random damage to a valid archive: no crash, nothing outside. */
TEST(archive_random_mutations_stay_inside)
{
	struct tbuf b = {0};
	struct scratch s;
	unsigned seed = 4242;

	scratch_new(&s);
	tb_header(&b, "d/", '5', 0, NULL, 0755);
	tb_file(&b, "d/one", "first file\n");
	tb_header(&b, "d/l", '2', 0, "one", 0777);
	tb_header(&b, "d/h", '1', 0, "d/one", 0644);
	tb_header(&b, "././@LongLink", 'L', 12, NULL, 0);
	tb_data(&b, "d/long-name", 12);
	tb_file(&b, "ignored", "data");
	tb_end(&b);
	for (int round = 0; round < 300; round++) {
		unsigned char *m = xmalloc(b.len);
		struct tar_result res;
		char *cause = NULL;
		int flips = 1 + rand_r(&seed) % 4;

		memcpy(m, b.p, b.len);
		for (int i = 0; i < flips; i++)
			m[rand_r(&seed) % b.len] = (unsigned char)rand_r(&seed);
		if (extract_mem(s.dest, m, b.len, 1 + rand_r(&seed) % 600,
		        rand_r(&seed) % 2, &res, &cause) != 0)
			free(cause);
		free(m);
		CHECK_INT(dir_entries(s.outside), 0);
		CHECK_INT(dir_entries(s.root), 2);
		run("chmod -R u+rwX '%s' 2>/dev/null; rm -rf '%s'", s.dest,
		    s.dest);
	}
	tb_free(&b);
	scratch_free(&s);
}
