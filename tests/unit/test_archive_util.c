/*
 * test_archive_util.c: scratch directories, tree comparison and a small
 * hand-written tar writer for the archive tests (see test_archive.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"
#include "test_archive.h"

/* Make a fresh scratch directory with an empty "outside" sibling. */
void
scratch_new(struct scratch *s)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(s->root, sizeof s->root, "%s/vmux-archive-XXXXXX",
	    tmp && *tmp ? tmp : "/tmp");
	if (mkdtemp(s->root) == NULL)
		fatal("mkdtemp");
	snprintf(s->dest, sizeof s->dest, "%s/dest", s->root);
	snprintf(s->outside, sizeof s->outside, "%s/outside", s->root);
	if (mkdir(s->outside, 0755) != 0)
		fatal("mkdir");
}

/* Remove a scratch directory (failed tests leave theirs for a look). */
void
scratch_free(struct scratch *s)
{
	run("chmod -R u+rwX '%s' 2>/dev/null; rm -rf '%s'", s->root, s->root);
}

/* Run a shell command; returns its exit status. */
int
run(const char *fmt, ...)
{
	va_list ap;
	char *cmd;
	int rc;

	va_start(ap, fmt);
	xvasprintf(&cmd, fmt, ap);
	va_end(ap);
	rc = system(cmd);
	if (rc != 0)
		fprintf(stderr, "    command failed (%d): %s\n", rc, cmd);
	free(cmd);
	return rc == -1 ? -1 : WEXITSTATUS(rc);
}

/* Read a whole file (NULL if it cannot be read). */
unsigned char *
slurp(const char *path, size_t *len)
{
	unsigned char *buf = NULL;
	size_t cap = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*len = 0;
	if (fd < 0)
		return NULL;
	for (;;) {
		if (*len == cap) {
			cap = cap ? cap * 2 : 65536;
			buf = xrealloc(buf, cap);
		}
		n = read(fd, buf + *len, cap - *len);
		if (n <= 0)
			break;
		*len += (size_t)n;
	}
	close(fd);
	return buf;
}

/* Number of entries in a directory, -1 if it cannot be read. */
int
dir_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0)
			n++;
	}
	closedir(d);
	return n;
}

/* Compare one pair of paths, recursing into directories. */
static int
tree_diff_at(const char *a, const char *b, char **why)
{
	struct stat sa, sb;

	if (lstat(a, &sa) != 0 || lstat(b, &sb) != 0) {
		xasprintf(why, "missing: %s or %s", a, b);
		return 1;
	}
	if (sa.st_mode != sb.st_mode) {
		xasprintf(why, "mode %o != %o: %s", sa.st_mode, sb.st_mode, b);
		return 1;
	}
	if (sa.st_mtime != sb.st_mtime) {
		xasprintf(why, "mtime %lld != %lld: %s", (long long)sa.st_mtime,
		    (long long)sb.st_mtime, b);
		return 1;
	}
	if (!S_ISDIR(sa.st_mode) && sa.st_nlink != sb.st_nlink) {
		xasprintf(why, "nlink %d != %d: %s", (int)sa.st_nlink,
		    (int)sb.st_nlink, b);
		return 1;
	}
	if (S_ISREG(sa.st_mode)) {
		size_t la, lb;
		unsigned char *ca = slurp(a, &la), *cb = slurp(b, &lb);
		int diff = (la != lb || (la && memcmp(ca, cb, la) != 0));

		free(ca);
		free(cb);
		if (diff) {
			xasprintf(why, "content differs: %s", b);
			return 1;
		}
	} else if (S_ISLNK(sa.st_mode)) {
		char la[4096] = "", lb[4096] = "";

		if (readlink(a, la, sizeof la - 1) < 0 ||
		    readlink(b, lb, sizeof lb - 1) < 0 || strcmp(la, lb) != 0) {
			xasprintf(why, "link target differs: %s", b);
			return 1;
		}
	} else if (S_ISDIR(sa.st_mode)) {
		struct dirent **na, **nb;
		int ca = scandir(a, &na, NULL, alphasort);
		int cb = scandir(b, &nb, NULL, alphasort);
		int rc = 0;

		if (ca != cb) {
			xasprintf(why, "entry count %d != %d: %s", ca, cb, b);
			rc = 1;
		}
		for (int i = 0; rc == 0 && i < ca; i++) {
			char *pa, *pb;

			if (strcmp(na[i]->d_name, nb[i]->d_name) != 0) {
				xasprintf(why, "names differ in %s: %s/%s", b,
				    na[i]->d_name, nb[i]->d_name);
				rc = 1;
				break;
			}
			if (strcmp(na[i]->d_name, ".") == 0 ||
			    strcmp(na[i]->d_name, "..") == 0)
				continue;
			xasprintf(&pa, "%s/%s", a, na[i]->d_name);
			xasprintf(&pb, "%s/%s", b, na[i]->d_name);
			rc = tree_diff_at(pa, pb, why);
			free(pa);
			free(pb);
		}
		for (int i = 0; i < ca; i++)
			free(na[i]);
		for (int i = 0; i < cb; i++)
			free(nb[i]);
		free(na);
		free(nb);
		return rc;
	}
	return 0;
}

/*
 * Compare two trees: types, modes, mtimes (seconds), link counts, file
 * contents, link targets. Returns 0 if equal, else 1 with *why set.
 */
int
tree_diff(const char *a, const char *b, char **why)
{
	*why = NULL;
	return tree_diff_at(a, b, why);
}

/* Extract a buffer fed chunk bytes at a time. */
int
extract_mem(const char *dest, const void *buf, size_t len, size_t chunk,
    int flags, struct tar_result *res, char **cause)
{
	struct tar_extract *te;
	const unsigned char *p = buf;
	int rc = 0;

	*cause = NULL;
	te = tar_extract_new(dest, cause);
	if (te == NULL)
		return -1;
	tar_extract_set_flags(te, flags);
	while (len > 0 && rc == 0) {
		size_t n = len < chunk ? len : chunk;

		rc = tar_extract_feed(te, p, n, cause);
		p += n;
		len -= n;
	}
	if (rc == 0)
		rc = tar_extract_finish(te, res, cause);
	tar_extract_free(te);
	return rc;
}

/* Export path into memory, pulling chunk bytes at a time. */
unsigned char *
export_mem(const char *path, const char *arcname, size_t chunk, size_t *len,
    char **cause)
{
	struct tar_export *te;
	unsigned char *buf = NULL;
	size_t cap = 0;
	ssize_t n;

	*len = 0;
	*cause = NULL;
	te = tar_export_new(path, arcname, cause);
	if (te == NULL)
		return NULL;
	for (;;) {
		if (cap - *len < chunk) {
			cap = cap * 2 + chunk;
			buf = xrealloc(buf, cap);
		}
		n = tar_export_read(te, buf + *len, chunk, cause);
		if (n <= 0)
			break;
		*len += (size_t)n;
	}
	tar_export_free(te);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Append raw bytes. */
void
tb_append(struct tbuf *b, const void *data, size_t len)
{
	b->p = xrealloc(b->p, b->len + len + 1);
	memcpy(b->p + b->len, data, len);
	b->len += len;
}

/* Append a ustar header, written field by field with its own checksum. */
void
tb_header(struct tbuf *b, const char *name, char type, uint64_t size,
    const char *link, unsigned mode)
{
	unsigned char h[512];
	unsigned sum = 0;

	memset(h, 0, sizeof h);
	strncpy((char *)h, name, 100);
	snprintf((char *)h + 100, 8, "%07o", mode);
	snprintf((char *)h + 108, 8, "%07o", 0);
	snprintf((char *)h + 116, 8, "%07o", 0);
	snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size);
	snprintf((char *)h + 136, 12, "%011o", 1600000000);
	h[156] = (unsigned char)type;
	if (link != NULL)
		strncpy((char *)h + 157, link, 100);
	memcpy(h + 257,
	    "ustar\0"
	    "00",
	    8);
	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	tb_append(b, h, sizeof h);
}

/* Append data padded to a block. */
void
tb_data(struct tbuf *b, const void *data, size_t len)
{
	static const unsigned char zeros[512];

	tb_append(b, data, len);
	tb_append(b, zeros, (512 - len % 512) % 512);
}

/* Append a regular file member. */
void
tb_file(struct tbuf *b, const char *name, const char *content)
{
	tb_header(b, name, '0', strlen(content), NULL, 0644);
	tb_data(b, content, strlen(content));
}

/* Append the end-of-archive marker. */
void
tb_end(struct tbuf *b)
{
	static const unsigned char zeros[1024];

	tb_append(b, zeros, sizeof zeros);
}

/* Free a buffer. */
void
tb_free(struct tbuf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = 0;
}

/*
 * Build the sample tree DIR/top: files (empty, binary, modes 0755 0600),
 * a read-only directory with a file in it, an empty directory, symlinks to
 * a file, a directory and up a level, a hard link, distinct mtimes, and
 * with long_names a 200-character directory pair and a link target over
 * 100 characters (GNU 'L'/'K' or pax records).
 */
int
make_tree(const char *dir, int long_names)
{
	return run(
	    "set -e; cd '%s'; umask 022; t=top; mkdir -p $t/sub/deeper "
	    "$t/empty $t/ro; printf 'hello\\n' > $t/a.txt; : > $t/zero; "
	    "seq 1 30000 > $t/sub/numbers; head -c 70000 /dev/urandom > "
	    "$t/sub/deeper/random.bin; printf '#!/bin/sh\\n' > $t/script; "
	    "chmod 0755 $t/script; printf secret > $t/secret; "
	    "chmod 0600 $t/secret; printf x > $t/ro/file; "
	    "ln -s a.txt $t/link; ln -s sub/deeper $t/dirlink; "
	    "ln -s ../a.txt $t/sub/uplink; ln $t/a.txt $t/hard; "
	    "if [ %d = 1 ]; then L=$(printf 'n%%.0s' $(seq 1 200)); "
	    "mkdir -p $t/$L/$L; printf long > $t/$L/$L/file-at-a-long-path; "
	    "ln -s $L/$L/file-at-a-long-path $t/longlink; fi; "
	    "find $t -exec touch -h -d @1600000000 {} +; "
	    "touch -d @1500000000 $t/a.txt; touch -h -d @1400000000 $t/link; "
	    "touch -d @1300000000 $t/sub; chmod 0555 $t/ro",
	    dir, long_names);
}
