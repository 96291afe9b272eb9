/*
 * test_archive_export.c: tar_export round trips through tar_extract and
 * GNU tar, naming rules (like `tar -C dirname basename`), and the `vmux cp`
 * destination helper.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "unit.h"
#include "test_archive.h"

/* Write a buffer to ROOT/name. */
static int
save(struct scratch *s, const char *name, const void *buf, size_t len)
{
	char path[512];
	int fd, rc;

	snprintf(path, sizeof path, "%s/%s", s->root, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	rc = write_all(fd, buf, len) == (ssize_t)len ? 0 : -1;
	close(fd);
	return rc;
}

TEST(archive_export_extract_round_trip)
{
	struct tar_result res;
	struct scratch s;
	char src[512], top[512], *cause = NULL, *why = NULL;
	unsigned char *a, *b;
	size_t alen, blen;

	scratch_new(&s);
	snprintf(src, sizeof src, "%s/src", s.root);
	CHECK_INT(run("mkdir '%s'", src), 0);
	CHECK_INT(make_tree(src, 1), 0);
	/* Times octal cannot hold go through pax. */
	CHECK_INT(run("cd '%s/top' && printf old > old && printf new > new && "
	              "touch -d @-86400 old && touch -d @9999999999 new",
	              src),
	    0);
	snprintf(src, sizeof src, "%s/src/top", s.root);
	a = export_mem(src, NULL, 65536, &alen, &cause);
	CHECK(a != NULL);
	CHECK(alen % 512 == 0);
	/* Pulling one byte at a time gives the same bytes. */
	b = export_mem(src, NULL, 1, &blen, &cause);
	CHECK(b != NULL);
	CHECK_INT(alen, blen);
	CHECK_MEM(a, b, alen);
	free(b);

	CHECK_INT(extract_mem(s.dest, a, alen, 7777, 0, &res, &cause), 0);
	CHECK_INT(res.entry_count, 22);
	snprintf(top, sizeof top, "%s/top", s.dest);
	if (tree_diff(src, top, &why) != 0) {
		fprintf(stderr, "    %s\n", why);
		CHECK(0);
	}

	/* GNU tar reads it the same way. */
	CHECK_INT(save(&s, "ours.tar", a, alen), 0);
	CHECK_INT(
	    run("mkdir '%s/gnu' && tar -C '%s/gnu' --warning=no-timestamp "
	        "-xf '%s/ours.tar' "
	        "&& tar -tvf '%s/ours.tar' > /dev/null",
	        s.root, s.root, s.root, s.root),
	    0);
	snprintf(top, sizeof top, "%s/gnu/top", s.root);
	if (tree_diff(src, top, &why) != 0) {
		fprintf(stderr, "    gnu: %s\n", why);
		CHECK(0);
	}
	free(a);
	scratch_free(&s);
}

TEST(archive_export_names_like_tar_C)
{
	struct scratch s;
	char path[512], *cause = NULL;
	unsigned char *a;
	size_t len;

	scratch_new(&s);
	CHECK_INT(run("mkdir -p '%s/etc/sub' && printf '127.0.0.1 x\\n' > "
	              "'%s/etc/hosts' && ln -s hosts '%s/etc/link'",
	              s.root, s.root, s.root),
	    0);

	/* A file: one member named by its basename. */
	snprintf(path, sizeof path, "%s/etc/hosts", s.root);
	a = export_mem(path, NULL, 4096, &len, &cause);
	CHECK(a != NULL);
	CHECK_INT(save(&s, "f.tar", a, len), 0);
	free(a);
	CHECK_INT(run("test \"$(tar -tf '%s/f.tar')\" = hosts", s.root), 0);

	/* Under another name. */
	a = export_mem(path, "renamed/h", 4096, &len, &cause);
	CHECK(a != NULL);
	CHECK_INT(save(&s, "r.tar", a, len), 0);
	free(a);
	CHECK_INT(run("test \"$(tar -tf '%s/r.tar')\" = renamed/h", s.root), 0);

	/* A directory with a trailing slash: etc/, etc/hosts, ... */
	snprintf(path, sizeof path, "%s/etc/", s.root);
	a = export_mem(path, NULL, 4096, &len, &cause);
	CHECK(a != NULL);
	CHECK_INT(save(&s, "d.tar", a, len), 0);
	free(a);
	CHECK_INT(run("test \"$(tar -tf '%s/d.tar' | tr '\\n' ' ')\" = "
	              "'etc/ etc/hosts etc/link etc/sub/ '",
	              s.root),
	    0);

	/* A symlink is stored as a link, not followed. */
	snprintf(path, sizeof path, "%s/etc/link", s.root);
	a = export_mem(path, NULL, 4096, &len, &cause);
	CHECK(a != NULL);
	CHECK_INT(save(&s, "l.tar", a, len), 0);
	free(a);
	CHECK_INT(
	    run("tar -tvf '%s/l.tar' | grep -q 'link -> hosts'", s.root), 0);

	/* "." exports the contents: ./, ./hosts ... */
	snprintf(path, sizeof path, "%s/etc/.", s.root);
	a = export_mem(path, NULL, 4096, &len, &cause);
	CHECK(a != NULL);
	CHECK_INT(save(&s, "dot.tar", a, len), 0);
	free(a);
	CHECK_INT(
	    run("tar -tf '%s/dot.tar' | head -1 | grep -qx './'", s.root), 0);

	/* Missing paths fail before any byte is produced. */
	snprintf(path, sizeof path, "%s/etc/missing", s.root);
	CHECK(export_mem(path, NULL, 4096, &len, &cause) == NULL);
	CHECK(strstr(cause, "No such file") != NULL);
	free(cause);
	CHECK(export_mem(path, "../x", 4096, &len, &cause) == NULL);
	free(cause);
	scratch_free(&s);
}

TEST(archive_export_fd_skips_its_own_output)
{
	struct tar_result res;
	struct scratch s;
	char path[512], *cause = NULL;
	int fd;

	scratch_new(&s);
	CHECK_INT(
	    run("mkdir '%s/t' && printf abc > '%s/t/f'", s.root, s.root), 0);
	snprintf(path, sizeof path, "%s/t/out.tar", s.root);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	snprintf(path, sizeof path, "%s/t", s.root);
	CHECK_INT(tar_export_fd(path, NULL, fd, &res, &cause), 0);
	close(fd);
	CHECK_INT(res.entry_count, 2);
	CHECK_INT(res.bytes_written, 3);
	CHECK_INT(run("test \"$(tar -tf '%s/t/out.tar' | tr '\\n' ' ')\" = "
	              "'t/ t/f '",
	              s.root),
	    0);
	scratch_free(&s);
}

TEST(archive_export_special_files)
{
	struct tar_result res;
	struct scratch s;
	char path[512], *cause = NULL;
	unsigned char *a;
	size_t len;

	scratch_new(&s);
	CHECK_INT(run("mkdir '%s/t' && mkfifo '%s/t/fifo' && "
	              "python3 -c 'import socket,sys; "
	              "socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "
	              "'%s/t/sock' 2>/dev/null || true",
	              s.root, s.root, s.root),
	    0);
	snprintf(path, sizeof path, "%s/t", s.root);
	a = export_mem(path, NULL, 4096, &len, &cause);
	CHECK(a != NULL);
	CHECK_INT(save(&s, "s.tar", a, len), 0);
	CHECK_INT(
	    run("tar -tvf '%s/s.tar' | grep -q '^p.* t/fifo'", s.root), 0);
	CHECK_INT(run("! tar -tf '%s/s.tar' | grep -q sock", s.root), 0);
	/* Extraction skips the fifo. */
	CHECK_INT(extract_mem(s.dest, a, len, 512, 0, &res, &cause), 0);
	CHECK_INT(res.skipped, 1);
	free(a);
	scratch_free(&s);
}

TEST(archive_cp_destination_rules)
{
	struct scratch s;
	char path[512], *dir, *top, *cause = NULL;

	scratch_new(&s);
	/* Existing directory: extract into it, keep the name. */
	CHECK_INT(tar_cp_destination(s.outside, &dir, &top, &cause), 0);
	CHECK_STR(dir, s.outside);
	CHECK(top == NULL);
	free(dir);
	/* New name: extract into the parent as that name. */
	snprintf(path, sizeof path, "%s/newname", s.outside);
	CHECK_INT(tar_cp_destination(path, &dir, &top, &cause), 0);
	CHECK_STR(dir, s.outside);
	CHECK_STR(top, "newname");
	free(dir);
	free(top);
	CHECK_INT(tar_cp_destination("rel", &dir, &top, &cause), 0);
	CHECK_STR(dir, ".");
	CHECK_STR(top, "rel");
	free(dir);
	free(top);
	/* Trailing slash: must be an existing directory. */
	snprintf(path, sizeof path, "%s/nodir/", s.outside);
	CHECK_INT(tar_cp_destination(path, &dir, &top, &cause), -1);
	CHECK(strstr(cause, "does not exist") != NULL);
	free(cause);
	/* Parent missing. */
	snprintf(path, sizeof path, "%s/a/b", s.outside);
	CHECK_INT(tar_cp_destination(path, &dir, &top, &cause), -1);
	free(cause);
	scratch_free(&s);
}
