/*
 * unpack.c: vmux-unpack, which applies an image's layers to a directory.
 *
 *   vmux-unpack [--max BYTES] [--note FILE] DEST BLOB@sha256:HEX...
 *
 * Each blob is a layer (tar, gzip'd tar or zstd'd tar), applied in order
 * with archive/'s TAR_X_LAYER rules: nothing lands outside DEST, owners,
 * setuid bits and device nodes are kept, whiteouts delete what lower
 * layers left. Every blob's bytes are checked against its digest as they
 * are read (zstd's before, as `zstd -dc` reads the file itself); a
 * mismatch, a hostile member or files adding up past --max fail the whole
 * unpack, naming the layer and the path. --note copies FILE to
 * DEST/.vmux-image (the image's settings for the guest, made by vmux).
 *
 * It is a program of its own so that a user who is not root runs it under
 * fakeroot (session/image-oci.c), which records the owners and devices it
 * makes for mkfs.ext4 -d; as root it makes them for real. Exits 0, or 1
 * with one line on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "archive/archive.h"
#include "common/common.h"

#define CHUNK (256 * 1024)

/* Fail with one line naming the layer. */
static void __attribute__((noreturn))
die_layer(const char *digest, const char *cause)
{
	fprintf(stderr, "layer %s: %s\n", digest, cause);
	exit(1);
}

/* Hash a whole file (zstd layers: checked before zstd reads them). */
static void
hash_file(int fd, const char *digest)
{
	struct sha256 h;
	char hex[65], *buf = xmalloc(CHUNK);
	ssize_t n;

	sha256_init(&h);
	while ((n = read(fd, buf, CHUNK)) > 0)
		sha256_update(&h, buf, (size_t)n);
	free(buf);
	if (n < 0)
		die_layer(digest, strerror(errno));
	sha256_hex(&h, hex);
	if (strcmp(hex, digest + 7) != 0)
		die_layer(digest, "the blob does not match its digest");
	if (lseek(fd, 0, SEEK_SET) != 0)
		die_layer(digest, strerror(errno));
}

/* A pipe reading `zstd -dc` of fd; *pid gets zstd's pid. */
static int
zstd_open(int fd, const char *digest, pid_t *pid)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) != 0)
		die_layer(digest, strerror(errno));
	if ((*pid = fork()) == 0) {
		dup2(fd, 0);
		dup2(p[1], 1);
		execlp("zstd", "zstd", "-dcq", (char *)NULL);
		fprintf(stderr, "layer %s: cannot run zstd: %s\n", digest,
		    strerror(errno));
		_exit(127);
	}
	if (*pid < 0)
		die_layer(digest, strerror(errno));
	close(p[1]);
	return p[0];
}

/* Apply one layer; *used grows by the bytes of files it wrote. */
static void
apply(const char *dest, const char *arg, uint64_t max, uint64_t *used)
{
	const char *at = strrchr(arg, '@');
	char *path, *cause = NULL, *buf, hex[65];
	const char *digest;
	unsigned char magic[4] = {0};
	struct tar_extract *te;
	struct tar_result res;
	struct sha256 h;
	int fd, in, hashing = 1, status = 0;
	pid_t zpid = -1;
	ssize_t n;

	if (at == NULL || strncmp(at + 1, "sha256:", 7) != 0 ||
	    strlen(at + 1) != 71) {
		fprintf(
		    stderr, "vmux-unpack: want BLOB@sha256:HEX, not %s\n", arg);
		exit(1);
	}
	digest = at + 1;
	path = xstrndup(arg, (size_t)(at - arg));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		die_layer(digest, strerror(errno));
	free(path);
	if (pread(fd, magic, 4, 0) == 4 &&
	    memcmp(magic, "\x28\xb5\x2f\xfd", 4) == 0) {
		hash_file(fd, digest);
		in = zstd_open(fd, digest, &zpid);
		hashing = 0;
	} else
		in = fd;
	if ((te = tar_extract_new(dest, &cause)) == NULL)
		die_layer(digest, cause);
	tar_extract_set_flags(te, TAR_X_LAYER);
	if (max > 0)
		tar_extract_set_max(te, max > *used ? max - *used : 1);
	sha256_init(&h);
	buf = xmalloc(CHUNK);
	while ((n = read(in, buf, CHUNK)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die_layer(digest, strerror(errno));
		if (hashing)
			sha256_update(&h, buf, (size_t)n);
		if (tar_extract_feed(te, buf, (size_t)n, &cause) != 0)
			die_layer(digest, cause);
	}
	free(buf);
	if (hashing) {
		sha256_hex(&h, hex);
		if (strcmp(hex, digest + 7) != 0)
			die_layer(digest, "the blob does not match its digest");
	}
	if (zpid > 0) {
		close(in);
		while (waitpid(zpid, &status, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			die_layer(digest, "zstd could not decompress it");
	}
	if (tar_extract_finish(te, &res, &cause) != 0)
		die_layer(digest, cause);
	tar_extract_free(te);
	close(fd);
	*used += res.bytes_written;
}

/* Copy the note into DEST/.vmux-image, owned by root (or fakeroot's). */
static void
note(const char *dest, const char *file)
{
	char *path, *buf = xmalloc(1 << 20);
	ssize_t n;
	int fd;

	if ((fd = open(file, O_RDONLY | O_CLOEXEC)) < 0 ||
	    (n = read_full(fd, buf, 1 << 20)) < 0) {
		fprintf(stderr, "vmux-unpack: %s: %s\n", file, strerror(errno));
		exit(1);
	}
	close(fd);
	xasprintf(&path, "%s/.vmux-image", dest);
	unlink(path);
	if ((fd = open(path,
	         O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)) <
	        0 ||
	    write_all(fd, buf, (size_t)n) < 0 || fchown(fd, 0, 0) != 0 ||
	    close(fd) != 0) {
		fprintf(stderr, "vmux-unpack: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	free(path);
	free(buf);
}

/* Parse the arguments, apply every layer, write the note. */
int
main(int argc, char **argv)
{
	const char *notefile = NULL;
	uint64_t max = 0, used = 0;
	int i = 1;

	umask(022); /* parents a layer leaves out are 0755, as in a build */
	for (; i < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
		if (i + 1 >= argc)
			break;
		if (strcmp(argv[i], "--max") == 0)
			max = strtoull(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--note") == 0)
			notefile = argv[i + 1];
		else
			break;
	}
	if (argc - i < 1) {
		fprintf(stderr,
		    "usage: vmux-unpack [--max BYTES] [--note FILE] "
		    "DEST BLOB@sha256:HEX...\n");
		return 2;
	}
	for (int k = i + 1; k < argc; k++)
		apply(argv[i], argv[k], max, &used);
	if (notefile != NULL)
		note(argv[i], notefile);
	return 0;
}
