/*
 * test_session_beneath.c: opening a --mount folder beneath its allowed
 * root with no symlink on the way (the check a swap cannot defeat), and
 * whose ids a guest acts as in it.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <pwd.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "unit.h"

/* root/a/b (directories), root/link -> /etc, root/a/up -> .., root/f. */
static char *
beneath_tree(void)
{
	char *d = xstrdup("/tmp/vmux-unit-XXXXXX"), *p;

	if (mkdtemp(d) == NULL)
		fatal("mkdtemp");
	xasprintf(&p,
	    "mkdir -p %s/a/b && ln -s /etc %s/link && "
	    "ln -s .. %s/a/up && touch %s/f",
	    d, d, d, d);
	if (system(p) != 0)
		fatal("%s", p);
	free(p);
	return d;
}

/* Open path beneath root; the fd's status into st. Returns 0 or -1. */
static int
open_st(const char *root, const char *rel, struct stat *st, char **cause)
{
	char *path;
	int fd;

	xasprintf(&path, "%s%s", root, rel);
	fd = beneath_open(root, path, cause);
	free(path);
	if (fd < 0)
		return -1;
	if (fstat(fd, st) != 0)
		fatal("fstat");
	close(fd);
	return 0;
}

TEST(beneath_opens_real_directories)
{
	char *root = beneath_tree(), *cause = NULL, *p;
	struct stat st, want;

	CHECK_INT(open_st(root, "", &st, &cause), 0);
	CHECK_INT(open_st(root, "/a/b", &st, &cause), 0);
	xasprintf(&p, "%s/a/b", root);
	CHECK_INT(stat(p, &want), 0);
	CHECK(st.st_ino == want.st_ino && st.st_dev == want.st_dev);
	free(p);
	xasprintf(&p, "rm -rf %s", root);
	CHECK_INT(system(p), 0);
	free(p);
	free(root);
}

TEST(beneath_refuses_symlinks_and_outside)
{
	char *root = beneath_tree(), *cause = NULL, *p;
	struct stat st;

	/* a symlink at the end, or on the way, even one staying inside */
	CHECK_INT(open_st(root, "/link", &st, &cause), -1);
	CHECK(
	    strstr(cause, "/link is a symlink or has one on its path") != NULL);
	free(cause);
	CHECK_INT(open_st(root, "/a/up/a", &st, &cause), -1);
	CHECK(strstr(cause, "symlink") != NULL);
	free(cause);
	CHECK_INT(open_st(root, "/f", &st, &cause), -1);
	CHECK(strstr(cause, "is not a directory") != NULL);
	free(cause);
	CHECK_INT(open_st(root, "/missing", &st, &cause), -1);
	CHECK(strstr(cause, "No such file") != NULL);
	free(cause);
	/* a path not under the root at all */
	CHECK_INT(beneath_open(root, "/etc", &cause), -1);
	CHECK(strstr(cause, "not under the allowed mount root") != NULL);
	free(cause);
	/* a swap between two opens: the second sees the symlink */
	xasprintf(&p, "rm -rf %s/a/b && ln -s /etc %s/a/b", root, root);
	CHECK_INT(system(p), 0);
	free(p);
	CHECK_INT(open_st(root, "/a/b", &st, &cause), -1);
	CHECK(strstr(cause, "symlink") != NULL);
	free(cause);
	xasprintf(&p, "rm -rf %s", root);
	CHECK_INT(system(p), 0);
	free(p);
	free(root);
}

TEST(beneath_root_longest_match)
{
	char *roots[] = {"/srv", "/srv/course", "/srvx"};

	CHECK_STR(beneath_root("/srv/course/a", roots, 3), "/srv/course");
	CHECK_STR(beneath_root("/srv/other", roots, 3), "/srv");
	CHECK_STR(beneath_root("/srv", roots, 3), "/srv");
	CHECK(beneath_root("/srvy/a", roots, 3) == NULL);
	CHECK(beneath_root("/sr", roots, 3) == NULL);
}

/* A uid of 4242 or above with no passwd entry on this machine. */
static uid_t
uid_unnamed(void)
{
	uid_t u = 4242;

	while (getpwuid(u) != NULL)
		u++;
	return u;
}

TEST(beneath_owner_never_root)
{
	struct stat st;
	char *cause = NULL;
	uid_t u, none = uid_unnamed();
	gid_t g;

	memset(&st, 0, sizeof st);
	st.st_uid = none; /* no passwd entry: its group must do */
	st.st_gid = 4243;
	CHECK_INT(beneath_owner("/x", &st, 0, &u, &g, &cause), 0);
	CHECK(u == none && g == 4243);
	/* a system group (root's, shadow's) is never the guest's */
	st.st_gid = 0;
	CHECK_INT(beneath_owner("/x", &st, 0, &u, &g, &cause), -1);
	CHECK(strstr(cause, "group 0, a system group") != NULL);
	free(cause);
	CHECK_INT(beneath_owner("/x", &st, 1, &u, &g, &cause), 0);
	CHECK(u == none && g == BENEATH_NOBODY);
	/* root or a system account: refused writable, nobody read-only */
	st.st_uid = 0;
	CHECK_INT(beneath_owner("/x", &st, 1, &u, &g, &cause), 0);
	CHECK(u == BENEATH_NOBODY && g == BENEATH_NOBODY);
	CHECK_INT(beneath_owner("/x", &st, 0, &u, &g, &cause), -1);
	CHECK(strstr(cause, "/x is owned by root") != NULL);
	free(cause);
	st.st_uid = 33; /* www-data */
	CHECK_INT(beneath_owner("/x", &st, 0, &u, &g, &cause), -1);
	CHECK(strstr(cause, "a system account (uid 33)") != NULL);
	free(cause);
}
