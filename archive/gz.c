/*
 * gz.c: streaming gzip decompression for the archive module.
 *
 * A thin zlib wrapper: input arrives in arbitrary chunks, output goes to a
 * sink in pieces of at most GZ_OUT bytes, so memory is fixed whatever the
 * size of the stream. gz_feed stops at the end of a gzip member; the caller
 * decides whether more members follow (gz_restart) or the rest is ignored.
 */
#include <stdlib.h>
#include <sys/types.h>
#include <string.h>
#include <zlib.h>

#include "common/common.h"
#include "archive.h"

#define GZ_OUT (64 * 1024)

struct gz {
	z_stream zs;
	int ended; /* the current member is complete */
	unsigned char out[GZ_OUT];
};

/* Start an inflater expecting a gzip header. */
struct gz *
gz_new(void)
{
	struct gz *gz = xcalloc(1, sizeof *gz);

	/* 15 + 16: maximum window, gzip wrapper only. */
	if (inflateInit2(&gz->zs, 15 + 16) != Z_OK)
		fatalx("inflateInit2 failed");
	return gz;
}

/*
 * Inflate up to len bytes, passing output to sink. Stops at the end of a
 * member; returns how many input bytes were consumed, or -1 with cause on
 * bad data or a sink error.
 */
ssize_t
gz_feed(struct gz *gz, const void *buf, size_t len, gz_sink sink, void *arg,
    char **cause)
{
	int more = 0;

	/* zlib counts in uInt: take at most 1 GiB per call. */
	if (len > (1u << 30))
		len = 1u << 30;
	gz->zs.next_in = (unsigned char *)(uintptr_t)buf;
	gz->zs.avail_in = (uInt)len;
	while (!gz->ended && (gz->zs.avail_in > 0 || more)) {
		size_t produced;
		int r;

		gz->zs.next_out = gz->out;
		gz->zs.avail_out = sizeof gz->out;
		r = inflate(&gz->zs, Z_NO_FLUSH);
		produced = sizeof gz->out - gz->zs.avail_out;
		more = (produced == sizeof gz->out);
		if (r == Z_STREAM_END)
			gz->ended = 1;
		else if (r == Z_BUF_ERROR && !more)
			break;
		else if (r != Z_OK && r != Z_BUF_ERROR) {
			xasprintf(cause, "bad gzip data: %s",
			    gz->zs.msg ? gz->zs.msg : "corrupt stream");
			return -1;
		}
		if (produced > 0 && sink(arg, gz->out, produced, cause) != 0)
			return -1;
	}
	return (ssize_t)(len - gz->zs.avail_in);
}

/* Whether the current member has been fully read (trailer checked). */
int
gz_ended(struct gz *gz)
{
	return gz->ended;
}

/* Expect another gzip member after the one that ended. */
void
gz_restart(struct gz *gz)
{
	if (gz->ended) {
		inflateReset(&gz->zs);
		gz->ended = 0;
	}
}

/* Free the inflater. */
void
gz_free(struct gz *gz)
{
	if (gz == NULL)
		return;
	inflateEnd(&gz->zs);
	free(gz);
}
