/*
 * test_archive_big.c: a 64 MiB member streamed through extraction (plain
 * and gzip) and export while the process's peak memory barely moves. The
 * archive is generated on the fly in 64 KiB pieces, never held whole.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/common.h"
#include "unit.h"
#include "test_archive.h"

#define BIG   (64ull * 1024 * 1024)
#define PIECE (64 * 1024)
/* Peak RSS may grow by this much while streaming BIG bytes. */
#define SLACK_KB (8 * 1024)

/* Peak resident set size so far, in KiB. */
static long
peak_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* The byte at offset i of the big file: not constant, cheap to check. */
static unsigned char
pattern(uint64_t i)
{
	return (unsigned char)((i * 7 + (i >> 12)) & 0xff);
}

/* Fill buf with the pattern from offset off. */
static void
fill(unsigned char *buf, size_t n, uint64_t off)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = pattern(off + i);
}

/* Check a file holds BIG pattern bytes. */
static int
check_big(const char *path)
{
	unsigned char buf[PIECE], want[PIECE];
	FILE *f = fopen(path, "r");
	uint64_t off = 0;
	size_t n;

	if (f == NULL)
		return 0;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
		fill(want, n, off);
		if (memcmp(buf, want, n) != 0)
			break;
		off += n;
	}
	fclose(f);
	return off == BIG;
}

/* Feed one piece, through deflate when zs is not NULL. */
static int
feed(struct tar_extract *te, z_stream *zs, const unsigned char *p, size_t n,
    int last, char **cause)
{
	static unsigned char out[PIECE];
	int rc = 0;

	if (zs == NULL)
		return tar_extract_feed(te, p, n, cause);
	zs->next_in = (unsigned char *)(uintptr_t)p;
	zs->avail_in = (uInt)n;
	do {
		zs->next_out = out;
		zs->avail_out = sizeof out;
		deflate(zs, last ? Z_FINISH : Z_NO_FLUSH);
		rc = tar_extract_feed(
		    te, out, sizeof out - zs->avail_out, cause);
	} while (rc == 0 && zs->avail_out == 0);
	return rc;
}

/* Feed the header, BIG pattern bytes and the end marker. */
static int
stream_big(struct tar_extract *te, int gzip, char **cause)
{
	static unsigned char in[PIECE];
	struct tbuf h = {0}, end = {0};
	z_stream zs, *z = NULL;
	int rc;

	tb_header(&h, "big.bin", '0', BIG, NULL, 0644);
	tb_end(&end);
	memset(&zs, 0, sizeof zs);
	if (gzip) {
		if (deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8,
		        Z_DEFAULT_STRATEGY) != Z_OK)
			return -1;
		z = &zs;
	}
	rc = feed(te, z, h.p, h.len, 0, cause);
	for (uint64_t off = 0; rc == 0 && off < BIG; off += PIECE) {
		fill(in, PIECE, off);
		rc = feed(te, z, in, PIECE, 0, cause);
	}
	if (rc == 0)
		rc = feed(te, z, end.p, end.len, 1, cause);
	if (gzip)
		deflateEnd(&zs);
	tb_free(&h);
	tb_free(&end);
	return rc;
}

TEST(archive_big_file_bounded_memory)
{
	struct tar_result res;
	struct scratch s;
	char path[512], *cause = NULL;

	scratch_new(&s);
	snprintf(path, sizeof path, "%s/big.bin", s.dest);
	for (int gzip = 0; gzip < 2; gzip++) {
		struct tar_extract *te = tar_extract_new(s.dest, &cause);
		long before;

		CHECK(te != NULL);
		before = peak_kb();
		if (stream_big(te, gzip, &cause) != 0) {
			fprintf(stderr, "    %s\n", cause);
			CHECK(0);
		}
		CHECK_INT(tar_extract_finish(te, &res, &cause), 0);
		tar_extract_free(te);
		CHECK_INT(res.bytes_written, BIG);
		CHECK_INT(res.entry_count, 1);
		if (peak_kb() - before > SLACK_KB) {
			fprintf(
			    stderr, "    grew %ld KiB\n", peak_kb() - before);
			CHECK(0);
		}
		CHECK(check_big(path));
	}

	/* Export the same file back: bounded too, and the bytes match. */
	{
		struct tar_export *xp = tar_export_new(path, NULL, &cause);
		static unsigned char buf[PIECE];
		uint64_t total = 0, data = 0, bad = 0;
		long before = peak_kb();
		ssize_t n;

		CHECK(xp != NULL);
		while ((n = tar_export_read(xp, buf, sizeof buf, &cause)) > 0) {
			for (ssize_t i = 0; i < n; i++, total++) {
				if (total >= 512 && data < BIG) {
					bad += buf[i] != pattern(data);
					data++;
				}
			}
		}
		CHECK_INT(n, 0);
		tar_export_free(xp);
		CHECK_INT(data, BIG);
		CHECK_INT(bad, 0);
		CHECK_INT(total, 512 + BIG + 1024);
		CHECK(peak_kb() - before <= SLACK_KB);
	}
	scratch_free(&s);
}
