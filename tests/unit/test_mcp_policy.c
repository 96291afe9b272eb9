/* test_mcp_policy.c: unit tests for what an MCP server lets its agent do
 * (mcp/policy.c): host paths beneath the given folders, its own sessions
 * only, its limits, its selector. */
#include <sys/stat.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "mcp/mcp.h"
#include "unit.h"

/* A fresh folder (real path: /tmp may be a link). */
static char *
tmpdir(void)
{
	char d[] = "/tmp/vmux-unit-XXXXXX", real[PATH_MAX];

	if (mkdtemp(d) == NULL || realpath(d, real) == NULL)
		fatal("mkdtemp");
	return xstrdup(real);
}

/* A policy over home with one root (NULL: none). */
static void
policy(struct mcp_policy *p, const char *home, const char *root)
{
	memset(p, 0, sizeof *p);
	p->name = xstrdup("agent");
	p->max_sessions = 2;
	p->home = xstrdup(home);
	if (root != NULL) {
		p->roots = xcalloc(1, sizeof *p->roots);
		p->roots[p->nroots++] = xstrdup(root);
	}
}

/* policy_host_path's answer for path: the resolved path, or "!" + cause. */
static char *
host(const struct mcp_policy *p, const char *path, int write)
{
	char *out = NULL, *cause = NULL, *r;

	if (policy_host_path(p, path, write, &out, &cause) == 0)
		return out;
	xasprintf(&r, "!%s", cause);
	free(cause);
	return r;
}

TEST(policy_host_paths_stay_beneath_the_roots)
{
	char *home = tmpdir(), *root, *path, *r;
	struct mcp_policy p, none;

	xasprintf(&root, "%s/share", home);
	CHECK(mkdir(root, 0700) == 0);
	xasprintf(&path, "%s/f", root);
	CHECK(file_replace(path, "x", 1, 0600) == 0);
	free(path);
	xasprintf(&path, "%s/etc", root);
	CHECK(symlink("/etc", path) == 0);
	free(path);
	policy(&p, home, root);
	policy(&none, home, NULL);

	xasprintf(&path, "%s/f", root);
	r = host(&p, path, 0);
	CHECK_STR(r, path); /* beneath: as it is */
	free(r);
	r = host(&none, path, 0);
	CHECK(strstr(r, "given no folders") != NULL);
	free(r);
	free(path);
	r = host(&p, "share/f", 0);
	CHECK(strstr(r, "must be absolute") != NULL);
	free(r);
	/* a symlink out, .. out, and the root's own parent: refused */
	xasprintf(&path, "%s/etc/passwd", root);
	r = host(&p, path, 0);
	CHECK(strstr(r, "outside the folders") != NULL);
	free(r);
	free(path);
	xasprintf(&path, "%s/../../../../../../../etc/passwd", root);
	r = host(&p, path, 0);
	CHECK(strstr(r, "outside the folders") != NULL);
	free(r);
	free(path);
	r = host(&p, home, 0);
	CHECK(strstr(r, "outside the folders") != NULL);
	free(r);
	/* beneath, but not named as it is: a link or .. on the way */
	xasprintf(&path, "%s/self", root);
	CHECK(symlink(".", path) == 0);
	free(path);
	xasprintf(&path, "%s/self/f", root);
	r = host(&p, path, 0);
	CHECK(strstr(r, "goes through a symlink or '..'") != NULL);
	free(r);
	free(path);
	xasprintf(&path, "%s/etc/../f", root);
	r = host(&p, path, 0);
	CHECK(r[0] == '!');
	free(r);
	free(path);
	xasprintf(&path, "%s/self/new", root);
	r = host(&p, path, 1);
	CHECK(strstr(r, "goes through a symlink or '..'") != NULL);
	free(r);
	free(path);
	/* a copy's destination may be new; its folder must be beneath */
	xasprintf(&path, "%s/new.bin", root);
	r = host(&p, path, 1);
	CHECK_STR(r, path);
	free(r);
	r = host(&p, path, 0); /* read: it must exist */
	CHECK(r[0] == '!');
	free(r);
	free(path);
	xasprintf(&path, "%s/etc/new", root);
	r = host(&p, path, 1);
	CHECK(strstr(r, "outside the folders") != NULL);
	free(r);
	free(path);
	xasprintf(&path, "%s/../new", root);
	r = host(&p, path, 1);
	CHECK(strstr(r, "outside the folders") != NULL);
	free(r);
	free(path);
	xasprintf(&path, "%s/..", root);
	r = host(&p, path, 1); /* exists: resolved to home, outside */
	CHECK(strstr(r, "outside the folders") != NULL);
	free(r);
	free(path);
	policy_free(&p);
	policy_free(&none);
	free(root);
	free(home);
}

TEST(policy_selector_adds_the_servers_label)
{
	struct mcp_policy p;
	char *s;

	policy(&p, "/nonexistent", NULL);
	s = policy_selector(&p, NULL);
	CHECK_STR(s, "vmux.mcp=agent");
	free(s);
	s = policy_selector(&p, "class=cs101");
	CHECK_STR(s, "class=cs101,vmux.mcp=agent");
	free(s);
	p.see_all = 1;
	CHECK(policy_selector(&p, NULL) == NULL);
	s = policy_selector(&p, "a=b");
	CHECK_STR(s, "a=b");
	free(s);
	policy_free(&p);
}

/* The agent's labels: mcp.* alone by default, --label-key's globs when
 * given, never the server's own vmux.mcp. */
TEST(policy_label_keys_default_to_the_agents_own)
{
	struct mcp_policy p;
	char *cause = NULL;

	policy(&p, "/nonexistent", NULL);
	CHECK(policy_label_key(&p, "mcp.task", &cause) == 0);
	CHECK(policy_label_key(&p, "class", &cause) == -1);
	CHECK(strstr(cause, "class") != NULL && strstr(cause, "mcp.*") != NULL);
	free(cause);
	cause = NULL;
	CHECK(policy_label_key(&p, "vmux.mcp", &cause) == -1);
	free(cause);
	cause = NULL;
	p.label_keys = xcalloc(2, sizeof *p.label_keys);
	p.label_keys[p.nlabel_keys++] = xstrdup("task");
	p.label_keys[p.nlabel_keys++] = xstrdup("team.*");
	CHECK(policy_label_key(&p, "task", &cause) == 0);
	CHECK(policy_label_key(&p, "team.red", &cause) == 0);
	CHECK(policy_label_key(&p, "mcp.task", &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(policy_label_key(&p, "tasks", &cause) == -1);
	free(cause);
	policy_free(&p);
}

/* Write session name's record under home, labelled label (NULL: none). */
static void
session_put(const char *home, const char *name, const char *label, int mem)
{
	struct session_record r;
	char *dir, *path, *cause = NULL;

	xasprintf(&dir, "%s/sessions/%s", home, name);
	if (mkdir_p(dir, 0700) != 0)
		fatal("mkdir %s", dir);
	memset(&r, 0, sizeof r);
	r.name = xstrdup(name);
	r.dir = dir;
	r.status = SESSION_STOPPED;
	r.accel = xstrdup("tcg");
	r.cid = 3;
	r.cpus = 1;
	r.memory_mb = mem;
	if (label != NULL) {
		r.labels = xcalloc(1, sizeof *r.labels);
		r.labels[r.nlabels++] = xstrdup(label);
	}
	path = record_path(dir);
	if (record_write(path, &r, &cause) != 0)
		fatalx("record_write: %s", cause);
	free(path);
	record_free(&r);
}

TEST(policy_sees_its_own_sessions_and_counts_them)
{
	char *home = tmpdir(), *cause = NULL;
	struct mcp_policy p;

	session_put(home, "mine", "vmux.mcp=agent", 512);
	session_put(home, "theirs", "vmux.mcp=other", 512);
	session_put(home, "plain", NULL, 512);
	policy(&p, home, NULL);
	CHECK(policy_session_visible(&p, "mine", &cause) == 0);
	/* another's, or none: the same answer, nothing learnt */
	CHECK(policy_session_visible(&p, "theirs", &cause) == -1);
	CHECK_STR(cause, "no session named 'theirs'");
	free(cause);
	CHECK(policy_session_visible(&p, "plain", &cause) == -1);
	CHECK_STR(cause, "no session named 'plain'");
	free(cause);
	CHECK(policy_session_visible(&p, "nosuch", &cause) == -1);
	CHECK_STR(cause, "no session named 'nosuch'");
	free(cause);
	CHECK(policy_session_visible(&p, "../mine", &cause) == -1);
	free(cause);
	p.see_all = 1;
	CHECK(policy_session_visible(&p, "theirs", &cause) == 0);
	p.see_all = 0;
	/* limits count its own sessions only */
	CHECK(policy_may_create(&p, 512, &cause) == 0);
	p.max_sessions = 1;
	CHECK(policy_may_create(&p, 512, &cause) == -1);
	CHECK(strstr(cause, "at most 1 sessions and holds 1") != NULL);
	free(cause);
	p.max_sessions = 8;
	p.max_memory_mb = 1024;
	CHECK(policy_may_create(&p, 512, &cause) == 0);
	CHECK(policy_may_create(&p, 513, &cause) == -1);
	CHECK(strstr(cause, "1024 MiB") != NULL);
	free(cause);
	policy_free(&p);
	free(home);
}
