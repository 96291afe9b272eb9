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
	static const char answer[] =
	    "{\"path\":\"/x\",\"type\":\"directory\"}\n";
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int ls = socket(AF_UNIX, SOCK_STREAM, 0), fd;
	pid_t pid;

	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof sa) != 0 ||
	    listen(ls, 1) != 0)
		fatal("fake bridge socket");
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
	if (write(fd, answer, sizeof answer - 1) !=
	        (ssize_t)sizeof answer - 1 ||
	    write(fd, t->p, t->len) != (ssize_t)t->len)
		_exit(1);
	close(fd);
	_exit(0);
}

/* Run cp_download from the fake at dir/v.sock into dir/dst/out. */
static int
download(const char *dir, const struct tarbuf *t, char **cause)
{
	struct vsock_target target;
	struct cp_spec spec = {0};
	char *sock, *local;
	pid_t pid;
	int rc, status;

	xasprintf(&sock, "%s/v.sock", dir);
	xasprintf(&local, "%s/dst/out", dir);
	target.cid = 3;
	target.uds = sock;
	spec.session = "guest";
	spec.remote = "/x";
	spec.local = local;
	pid = fake_export(sock, t);
	rc = cp_download(&target, &spec, cause);
	waitpid(pid, &status, 0);
	free(sock);
	free(local);
	return rc;
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
 * Each hostile entry after a good one: the good one arrives (the stream got
 * through), and nothing is written beside dst/, whether the download fails
 * or the entry is skipped.
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
		download(d, &t, &cause);
		if (!exists(d, "dst/out/ok.txt"))
			fprintf(stderr, "    case %zu: %s\n", i,
			    cause ? cause : "no ok.txt");
		CHECK(exists(d, "dst/out/ok.txt"));
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
