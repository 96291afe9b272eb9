/*
 * test_cli_download.c: `vmux cp NAME:/path DST` against a hostile guest.
 *
 * The guest side is untrusted: whatever tar its agent streams back, the
 * host must write only under DST. A fake bridge (a forked child on a Unix
 * socket) answers CONNECT 5005 and export_archive with archives built here,
 * and cp_download (cli/cp.c, the code `vmux cp` runs) extracts them.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <dirent.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "cli/cli.h"
#include "unit.h"

/* cp.c reports skipped entries through the CLI's error printer. */
void
cli_error(const char *fmt, ...)
{
	(void)fmt;
}

struct tarbuf {
	unsigned char *p;
	size_t len;
};

/* Append one ustar header (and data padded to 512 bytes). */
static void
tar_add(struct tarbuf *t, const char *name, char type, const char *link,
    const char *data)
{
	size_t size = data != NULL ? strlen(data) : 0;
	size_t padded = (size + 511) / 512 * 512;
	unsigned char *h;
	unsigned sum = 0;

	t->p = xrealloc(t->p, t->len + 512 + padded);
	h = t->p + t->len;
	memset(h, 0, 512 + padded);
	snprintf((char *)h, 100, "%s", name);
	snprintf((char *)h + 100, 8, "%07o", type == '5' ? 0755 : 0644);
	snprintf((char *)h + 108, 8, "%07o", 0);
	snprintf((char *)h + 116, 8, "%07o", 0);
	snprintf((char *)h + 124, 12, "%011o", (unsigned)size);
	snprintf((char *)h + 136, 12, "%011o", 0);
	h[156] = (unsigned char)type;
	if (link != NULL)
		snprintf((char *)h + 157, 100, "%s", link);
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	h[155] = ' ';
	if (size > 0)
		memcpy(h + 512, data, size);
	t->len += 512 + padded;
}

/* The two zero blocks that end an archive. */
static void
tar_end(struct tarbuf *t)
{
	t->p = xrealloc(t->p, t->len + 1024);
	memset(t->p + t->len, 0, 1024);
	t->len += 1024;
}

/* The "type" the fake export answers with. */
static const char *fake_type = "directory";

/* Read up to and including a newline (the child's side). */
static void
read_line(int fd)
{
	char c;

	while (read(fd, &c, 1) == 1 && c != '\n')
		;
}

/*
 * A fake bridge and agent on path: one connection, CONNECT answered with
 * OK, the request answered with a directory export of archive t.
 */
static pid_t
fake_export(const char *path, const struct tarbuf *t)
{
	char answer[128];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int ls = socket(AF_UNIX, SOCK_STREAM, 0), fd;
	pid_t pid;

	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof sa) != 0 ||
	    listen(ls, 1) != 0)
		fatal("fake bridge socket");
	snprintf(answer, sizeof answer, "{\"path\":\"/x\",\"type\":\"%s\"}\n",
	    fake_type);
	pid = fork();
	if (pid != 0) {
		close(ls);
		return pid;
	}
	fd = accept(ls, NULL, NULL);
	if (fd < 0)
		_exit(1);
	read_line(fd); /* CONNECT 5005 */
	if (write(fd, "OK 1073741824\n", 14) != 14)
		_exit(1);
	read_line(fd); /* {"action":"export_archive",...} */
	if (write(fd, answer, strlen(answer)) != (ssize_t)strlen(answer) ||
	    write(fd, t->p, t->len) != (ssize_t)t->len)
		_exit(1);
	close(fd);
	_exit(0);
}

/* Run cp_download of guest path remote from the fake at dir/v.sock to
 * dir/rel. */
static int
download_to(const char *dir, const struct tarbuf *t, const char *remote,
    const char *rel, char **cause)
{
	struct vsock_target target = {0};
	struct cp_spec spec = {0};
	char *sock, *local;
	pid_t pid;
	int rc, status;

	xasprintf(&sock, "%s/v.sock", dir);
	xasprintf(&local, "%s/%s", dir, rel);
	unlink(sock);
	target.cid = 3;
	target.uds = sock;
	spec.session = "guest";
	spec.remote = (char *)remote;
	spec.local = local;
	pid = fake_export(sock, t);
	rc = cp_download(&target, &spec, cause);
	waitpid(pid, &status, 0);
	free(sock);
	free(local);
	return rc;
}

/* Run cp_download of /x from the fake at dir/v.sock into dir/dst/out. */
static int
download(const char *dir, const struct tarbuf *t, char **cause)
{
	return download_to(dir, t, "/x", "dst/out", cause);
}

/* A fresh directory with dst/ and outside/ in it. */
static char *
setup(void)
{
	char *d = xstrdup("/tmp/vmux-unit-XXXXXX"), *p;

	if (mkdtemp(d) == NULL)
		fatal("mkdtemp");
	xasprintf(&p, "%s/dst", d);
	if (mkdir(p, 0755) != 0)
		fatal("mkdir %s", p);
	free(p);
	xasprintf(&p, "%s/outside", d);
	if (mkdir(p, 0755) != 0)
		fatal("mkdir %s", p);
	free(p);
	return d;
}

/* Append one line per entry beneath path (name, type, mode, size, mtime). */
static void
listing_add(char **out, const char *path, const char *rel)
{
	struct dirent **names;
	struct stat st;
	char *p, *r, *line;
	int n;

	n = scandir(path, &names, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		const char *e = names[i]->d_name;

		if (strcmp(e, ".") != 0 && strcmp(e, "..") != 0) {
			xasprintf(&p, "%s/%s", path, e);
			xasprintf(&r, "%s%s", rel, e);
			if (lstat(p, &st) == 0) {
				xasprintf(&line, "%s%s %o %lld %lld.%09ld\n",
				    *out, r, (unsigned)st.st_mode,
				    (long long)st.st_size,
				    (long long)st.st_mtim.tv_sec,
				    st.st_mtim.tv_nsec);
				free(*out);
				*out = line;
				if (S_ISDIR(st.st_mode)) {
					char *sub;

					xasprintf(&sub, "%s/", r);
					listing_add(out, p, sub);
					free(sub);
				}
			}
			free(p);
			free(r);
		}
		free(names[i]);
	}
	if (n >= 0)
		free(names);
}

/* Everything beneath dir/rel, one line per entry; caller frees. */
static char *
listing(const char *dir, const char *rel)
{
	char *path, *out = xstrdup("");

	xasprintf(&path, "%s/%s", dir, rel);
	listing_add(&out, path, "");
	free(path);
	return out;
}

/* Write text to dir/rel. */
static void
put(const char *dir, const char *rel, const char *text)
{
	char *p;
	FILE *f;

	xasprintf(&p, "%s/%s", dir, rel);
	f = fopen(p, "w");
	if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
		fatal("write %s", p);
	free(p);
}

/* Does dir/rel exist (without following a final symlink)? */
static int
exists(const char *dir, const char *rel)
{
	struct stat st;
	char *p;
	int r;

	xasprintf(&p, "%s/%s", dir, rel);
	r = lstat(p, &st) == 0;
	free(p);
	return r;
}

TEST(download_benign_tree_lands_under_the_destination)
{
	struct tarbuf t = {0};
	char *d = setup(), *cause = NULL;

	tar_add(&t, "x/", '5', NULL, NULL);
	tar_add(&t, "x/ok.txt", '0', NULL, "fine\n");
	tar_add(&t, "x/sub/", '5', NULL, NULL);
	tar_add(&t, "x/sub/deep.txt", '0', NULL, "deeper\n");
	tar_end(&t);
	CHECK_INT(download(d, &t, &cause), 0);
	CHECK(exists(d, "dst/out/ok.txt"));
	CHECK(exists(d, "dst/out/sub/deep.txt"));
	free(cause);
	free(t.p);
	rmtree(d);
	free(d);
}

/*
 * Each hostile entry after a good one: nothing is written beside dst/,
 * whether the download fails or the entry is skipped; a failed download
 * leaves dst/ as it was (empty), a skipped entry lets the good one land.
 */
TEST(download_hostile_entries_write_nothing_outside)
{
	static const struct {
		const char *name, *link, *data;
		char type;
	} hostile[][2] = {
	    {{"x/evil", "../../outside", NULL, '2'},
	        {"x/evil/pwned.txt", NULL, "pwned\n", '0'}},
	    {{"x/evil", "/tmp", NULL, '2'},
	        {"x/evil/pwned.txt", NULL, "pwned\n", '0'}},
	    {{"x/../../pwned.txt", NULL, "dotdot\n", '0'},
	        {NULL, NULL, NULL, 0}},
	    {{"x/sub/../../../pwned.txt", NULL, "dotdot\n", '0'},
	        {NULL, NULL, NULL, 0}},
	    {{"/pwned.txt", NULL, "abs\n", '0'}, {NULL, NULL, NULL, 0}},
	    {{"x/hard", "../../outside/secret", NULL, '1'},
	        {"x/hard", NULL, "overwrite\n", '0'}},
	};

	for (size_t i = 0; i < nitems(hostile); i++) {
		struct tarbuf t = {0};
		char *d = setup(), *cause = NULL, *secret, *text;
		FILE *f;

		xasprintf(&secret, "%s/outside/secret", d);
		f = fopen(secret, "w");
		CHECK(f != NULL && fputs("secret\n", f) >= 0 && fclose(f) == 0);
		tar_add(&t, "x/", '5', NULL, NULL);
		tar_add(&t, "x/ok.txt", '0', NULL, "fine\n");
		for (int j = 0; j < 2 && hostile[i][j].name != NULL; j++)
			tar_add(&t, hostile[i][j].name, hostile[i][j].type,
			    hostile[i][j].link, hostile[i][j].data);
		tar_end(&t);
		if (download(d, &t, &cause) == 0)
			CHECK(exists(d, "dst/out/ok.txt"));
		else {
			char *l = listing(d, "dst");

			CHECK_STR(l, "");
			free(l);
		}
		CHECK(!exists(d, "outside/pwned.txt"));
		CHECK(!exists(d, "pwned.txt"));
		CHECK(!exists(d, "dst/pwned.txt"));
		CHECK(!exists("/tmp", "pwned.txt"));
		CHECK(!exists("/", "pwned.txt"));
		text = xcalloc(1, 64);
		f = fopen(secret, "r");
		CHECK(f != NULL && fread(text, 1, 63, f) > 0 && fclose(f) == 0);
		CHECK_STR(text, "secret\n");
		free(text);
		free(secret);
		free(cause);
		free(t.p);
		rmtree(d);
		free(d);
	}
}

/*
 * docker cp NAME:/x DIR with an existing DIR: only x may be created. An
 * archive that also holds any other top-level name (or a trick that
 * resolves to one) is refused naming it, after good entries too, and DIR
 * is exactly as it was: nothing appears, nothing changes.
 */
TEST(download_into_a_directory_accepts_only_the_source)
{
	static const struct {
		const char *name, *link, *data;
		char type;
		const char *named; /* the error names this */
	} extra[] = {
	    {".bashrc", NULL, "evil\n", '0', ".bashrc"},
	    {"y/evil", NULL, "evil\n", '0', "y/evil"},
	    {"keep.txt", NULL, "evil\n", '0', "keep.txt"},
	    {"/etc/evil", NULL, "abs\n", '0', "etc/evil"},
	    {"../evil", NULL, "up\n", '0', ".."},
	    {"x/../.bashrc", NULL, "up\n", '0', ".."},
	    {"z", "x", NULL, '2', "z"},
	    {"x/hard", ".bashrc", NULL, '1', ".bashrc"},
	    {"./.profile", NULL, "dot\n", '0', ".profile"},
	};

	for (size_t i = 0; i < nitems(extra); i++) {
		struct tarbuf t = {0};
		char *d = setup(), *cause = NULL, *before, *after, *p;

		put(d, "dst/keep.txt", "mine\n");
		put(d, "dst/.bashrc", "my rc\n");
		xasprintf(&p, "%s/dst/y", d);
		CHECK(mkdir(p, 0755) == 0);
		free(p);
		before = listing(d, "dst");
		tar_add(&t, "x/", '5', NULL, NULL);
		tar_add(&t, "x/ok.txt", '0', NULL, "fine\n");
		tar_add(&t, extra[i].name, extra[i].type, extra[i].link,
		    extra[i].data);
		tar_add(&t, "x/late.txt", '0', NULL, "late\n");
		tar_end(&t);
		CHECK(download_to(d, &t, "/x", "dst", &cause) != 0);
		if (cause == NULL || strstr(cause, extra[i].named) == NULL)
			fprintf(stderr, "    case %zu: %s\n", i,
			    cause ? cause : "no error");
		CHECK(cause != NULL && strstr(cause, extra[i].named) != NULL);
		after = listing(d, "dst");
		CHECK_STR(after, before);
		free(before);
		free(after);
		free(cause);
		free(t.p);
		rmtree(d);
		free(d);
	}
}

/* An existing DIR/x is merged into, as docker cp does. */
TEST(download_merges_into_an_existing_copy)
{
	struct tarbuf t = {0};
	char *d = setup(), *cause = NULL, *p;

	xasprintf(&p, "%s/dst/x", d);
	CHECK(mkdir(p, 0755) == 0);
	free(p);
	put(d, "dst/x/old.txt", "old\n");
	put(d, "dst/x/ok.txt", "stale\n");
	tar_add(&t, "x/", '5', NULL, NULL);
	tar_add(&t, "x/ok.txt", '0', NULL, "fine\n");
	tar_add(&t, "x/sub/", '5', NULL, NULL);
	tar_add(&t, "x/sub/new.txt", '0', NULL, "new\n");
	tar_end(&t);
	CHECK_INT(download_to(d, &t, "/x", "dst", &cause), 0);
	CHECK(exists(d, "dst/x/old.txt"));
	CHECK(exists(d, "dst/x/sub/new.txt"));
	p = listing(d, "dst/x");
	CHECK(strstr(p, "ok.txt 100644 5 ") != NULL);
	free(p);
	CHECK(!exists(d, "dst/x/x"));
	p = listing(d, "dst");
	CHECK(strstr(p, ".vmux-cp") == NULL);
	free(p);
	free(cause);
	free(t.p);
	rmtree(d);
	free(d);
}

/* /x/. copies the directory's contents: any names, but only within DST. */
TEST(download_contents_of_a_directory)
{
	struct tarbuf t = {0};
	char *d = setup(), *cause = NULL, *l;

	put(d, "dst/keep.txt", "mine\n");
	tar_add(&t, "./", '5', NULL, NULL);
	tar_add(&t, "./a.txt", '0', NULL, "a\n");
	tar_add(&t, "./b/", '5', NULL, NULL);
	tar_add(&t, "./b/c.txt", '0', NULL, "c\n");
	tar_end(&t);
	CHECK_INT(download_to(d, &t, "/x/.", "dst", &cause), 0);
	CHECK(exists(d, "dst/a.txt") && exists(d, "dst/b/c.txt"));
	CHECK(exists(d, "dst/keep.txt"));
	CHECK_INT(download_to(d, &t, "/x/.", "dst/new", &cause), 0);
	CHECK(exists(d, "dst/new/a.txt") && exists(d, "dst/new/b/c.txt"));
	/* DST may be the user's symlink to a directory */
	l = NULL;
	xasprintf(&l, "%s/dst/lnk", d);
	CHECK(symlink("new", l) == 0);
	free(l);
	put(d, "dst/new/a.txt", "old\n");
	CHECK_INT(download_to(d, &t, "/x/.", "dst/lnk", &cause), 0);
	l = listing(d, "dst/new");
	CHECK(strstr(l, "a.txt 100644 2 ") != NULL); /* "a\n" again */
	free(l);
	l = listing(d, "dst");
	CHECK(strstr(l, ".vmux-cp") == NULL);
	free(l);

	/* a failure late in the stream leaves DST as it was */
	free(t.p);
	t = (struct tarbuf){0};
	tar_add(&t, "./", '5', NULL, NULL);
	tar_add(&t, "./fresh.txt", '0', NULL, "a\n");
	tar_add(&t, "./../evil", '0', NULL, "up\n");
	tar_end(&t);
	l = listing(d, "dst");
	free(cause);
	cause = NULL;
	CHECK(download_to(d, &t, "/x/.", "dst", &cause) != 0);
	CHECK(!exists(d, "dst/fresh.txt"));
	{
		char *after = listing(d, "dst");

		CHECK_STR(after, l);
		free(after);
	}
	free(l);
	free(cause);
	free(t.p);
	rmtree(d);
	free(d);
}

/* A file to a new name, and to a directory; an extra entry is refused. */
TEST(download_a_file)
{
	struct tarbuf t = {0};
	char *d = setup(), *cause = NULL, *l, *after;

	fake_type = "file";
	tar_add(&t, "f.txt", '0', NULL, "file\n");
	tar_end(&t);
	CHECK_INT(download_to(d, &t, "/etc/f.txt", "dst/g.txt", &cause), 0);
	CHECK(exists(d, "dst/g.txt") && !exists(d, "dst/f.txt"));
	CHECK_INT(download_to(d, &t, "/etc/f.txt", "dst", &cause), 0);
	CHECK(exists(d, "dst/f.txt"));
	free(t.p);
	t = (struct tarbuf){0};
	tar_add(&t, "f.txt", '0', NULL, "file\n");
	tar_add(&t, ".bashrc", '0', NULL, "evil\n");
	tar_end(&t);
	l = listing(d, "dst");
	CHECK(download_to(d, &t, "/etc/f.txt", "dst/h.txt", &cause) != 0);
	CHECK(cause != NULL && strstr(cause, ".bashrc") != NULL);
	after = listing(d, "dst");
	CHECK_STR(after, l);
	free(after);
	free(l);
	fake_type = "directory";
	free(cause);
	free(t.p);
	rmtree(d);
	free(d);
}
