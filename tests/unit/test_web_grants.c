/* test_web_grants.c: unit tests for vmux web's links (web/grants.c): the
 * tokens' shape and randomness, SHA-256 against a known answer, grants
 * kept as hashes only, expiry, listing and revoking by session and id. */
#include <sys/stat.h>

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "web/web.h"
#include "unit.h"

/* A fresh folder. */
static char *
tmpdir(void)
{
	char d[] = "/tmp/vmux-unit-XXXXXX";

	if (mkdtemp(d) == NULL)
		fatal("mkdtemp");
	return xstrdup(d);
}

/* Remove home's grants and home. */
static void
tmpdir_rm(const char *home)
{
	char *cmd;

	xasprintf(&cmd, "rm -rf '%s'", home);
	if (system(cmd) != 0)
		fatal("rm");
	free(cmd);
}

/* A grant to session (shell main) expiring at expires. */
static char *
grant(const char *home, const char *session, int ro, int64_t expires)
{
	struct web_grant g;
	char *token = NULL, *cause = NULL;

	memset(&g, 0, sizeof g);
	g.session = (char *)session;
	g.instance = "0123456789abcdef0123456789abcdef";
	g.shell = "main";
	g.read_only = ro;
	g.created = (int64_t)time(NULL);
	g.expires = expires;
	if (web_grant_add(home, &g, &token, &cause) != 0)
		fatalx("web_grant_add: %s", cause);
	return token;
}

TEST(token_shape_and_randomness)
{
	char *a = web_token_new(), *b = web_token_new();

	CHECK_INT(strlen(a), WEB_TOKEN_CHARS);
	CHECK(web_token_valid(a));
	CHECK(strcmp(a, b) != 0);
	CHECK(!web_token_valid("short"));
	CHECK(!web_token_valid("ZFuWVbRV4hETzMLmfEzMixm4vNhpWT_=")); /* '=' */
	CHECK(!web_token_valid(NULL));
	free(a);
	free(b);
}

TEST(hash_is_sha256)
{
	char h[WEB_HASH_HEX + 1];

	web_token_hash("abc", h); /* FIPS 180-2's first example */
	CHECK_STR(h,
	    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff6"
	    "1f20015ad");
}

TEST(grant_kept_as_hash_only)
{
	char *home = tmpdir(), *token = grant(home, "s1", 0, 0), *dir, *cmd;
	char h[WEB_HASH_HEX + 1];
	struct web_grant g;

	web_token_hash(token, h);
	CHECK_INT(web_grant_by_hash(home, h, &g), 0);
	CHECK_STR(g.session, "s1");
	CHECK_STR(g.shell, "main");
	CHECK_INT(g.read_only, 0);
	web_grant_free(&g);
	/* the token itself is nowhere under home */
	/* -F -e: a token may start with '-' (1 in 64), which grep would read
	 * as an option and fail with 2, passing this check untested */
	xasprintf(&cmd, "grep -rqF -e '%s' '%s'", token, home);
	CHECK(system(cmd) == 256); /* 1: not found; 2 would be grep's error */
	free(cmd);
	/* the file is its owner's alone */
	dir = web_grants_dir(home);
	{
		struct stat st;
		char *path;

		xasprintf(&path, "%s/%s.json", dir, h);
		CHECK_INT(stat(path, &st), 0);
		CHECK_INT(st.st_mode & 077, 0);
		free(path);
	}
	free(dir);
	free(token);
	tmpdir_rm(home);
	free(home);
}

TEST(expired_and_unknown_refused)
{
	char *home = tmpdir();
	char *old = grant(home, "s1", 1, (int64_t)time(NULL) - 1);
	char h[WEB_HASH_HEX + 1];
	struct web_grant g;

	web_token_hash(old, h);
	CHECK(web_grant_by_hash(home, h, &g) != 0);
	CHECK(!web_grant_live(home, h));
	web_token_hash("never-granted", h);
	CHECK(!web_grant_live(home, h));
	CHECK(!web_grant_live(home, "../../etc/passwd"));
	free(old);
	tmpdir_rm(home);
	free(home);
}

TEST(list_and_revoke)
{
	char *home = tmpdir(), *cause = NULL;
	char *a = grant(home, "s1", 0, 0), *b = grant(home, "s1", 1, 0);
	char *c = grant(home, "s2", 0, 0), hb[WEB_HASH_HEX + 1], id[13];
	struct web_grant *g;
	size_t n;

	CHECK_INT(web_grant_list(home, NULL, &g, &n), 0);
	CHECK_INT(n, 3);
	for (size_t i = 0; i < n; i++)
		web_grant_free(&g[i]);
	free(g);
	CHECK_INT(web_grant_list(home, "s1", &g, &n), 0);
	CHECK_INT(n, 2);
	for (size_t i = 0; i < n; i++)
		web_grant_free(&g[i]);
	free(g);
	/* one by its id; another session's is not touched by the id */
	web_token_hash(b, hb);
	memcpy(id, hb, 12);
	id[12] = '\0';
	CHECK_INT(web_grant_revoke(home, "s2", id, &n, &cause), 0);
	CHECK_INT(n, 0);
	CHECK_INT(web_grant_revoke(home, "s1", id, &n, &cause), 0);
	CHECK_INT(n, 1);
	CHECK(!web_grant_live(home, hb));
	/* the rest of s1's at once */
	CHECK_INT(web_grant_revoke(home, "s1", NULL, &n, &cause), 0);
	CHECK_INT(n, 1);
	CHECK_INT(web_grant_list(home, NULL, &g, &n), 0);
	CHECK_INT(n, 1);
	CHECK_STR(g[0].session, "s2");
	web_grant_free(&g[0]);
	free(g);
	free(a);
	free(b);
	free(c);
	tmpdir_rm(home);
	free(home);
}
