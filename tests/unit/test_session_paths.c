/*
 * test_session_paths.c: session names, the vmux home from the environment,
 * socket directories for deep homes, finding programs and the guest image.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "unit.h"

/* A fresh temporary directory. */
static char *
tmpdir(void)
{
	char *d = xstrdup("/tmp/vmux-unit-XXXXXX");

	if (mkdtemp(d) == NULL)
		fatal("mkdtemp");
	return d;
}

/* Create an empty file (mode 0755 when exec). */
static void
touch(const char *path, int exec)
{
	int fd = open(path, O_WRONLY | O_CREAT, exec ? 0755 : 0644);

	if (fd < 0)
		fatal("touch %s", path);
	close(fd);
}

TEST(name_valid_accepts)
{
	static const char *good[] = {"a", "Z", "0", "web-1", "a.b_c-d",
	    "9lives",
	    "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl"};
	size_t i;

	for (i = 0; i < nitems(good); i++) {
		char *cause = NULL;
		if (session_name_valid(good[i], &cause) != 0) {
			unit_fail(__FILE__, __LINE__, "rejected '%s': %s",
			    good[i], cause);
			return;
		}
	}
	CHECK_INT(strlen(good[nitems(good) - 1]), 64);
}

TEST(name_valid_rejects)
{
	static const char *bad[] = {"", "-a", ".a", "_a", "a/b", "a b", "..",
	    ".", "a\n", "ä", "a:b", "a*",
	    "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl"
	    "m"};
	size_t i;

	for (i = 0; i < nitems(bad); i++) {
		char *cause = NULL;
		if (session_name_valid(bad[i], &cause) == 0) {
			unit_fail(__FILE__, __LINE__, "accepted '%s'", bad[i]);
			return;
		}
		CHECK(cause != NULL &&
		    strstr(cause, "invalid session name") != NULL);
		CHECK(strchr(cause, '\n') == NULL); /* one line */
		free(cause);
	}
}

TEST(home_from_vmux_home)
{
	char *h, *cause = NULL, cwd[PATH_MAX], *want;

	setenv("VMUX_HOME", "/srv/vmux-state", 1);
	setenv("XDG_STATE_HOME", "/xdg", 1);
	h = session_home(&cause);
	CHECK_STR(h, "/srv/vmux-state");
	free(h);
	/* a relative VMUX_HOME is made absolute */
	setenv("VMUX_HOME", "rel/dir", 1);
	h = session_home(&cause);
	CHECK(getcwd(cwd, sizeof cwd) != NULL);
	xasprintf(&want, "%s/rel/dir", cwd);
	CHECK_STR(h, want);
	free(h);
	free(want);
}

TEST(home_from_xdg_then_home)
{
	char *h, *cause = NULL;

	unsetenv("VMUX_HOME");
	setenv("XDG_STATE_HOME", "/xdg/state", 1);
	setenv("HOME", "/home/u", 1);
	h = session_home(&cause);
	CHECK_STR(h, "/xdg/state/vmux");
	free(h);
	setenv("XDG_STATE_HOME", "relative", 1); /* ignored, as XDG says */
	h = session_home(&cause);
	CHECK_STR(h, "/home/u/.local/state/vmux");
	free(h);
	unsetenv("XDG_STATE_HOME");
	setenv("VMUX_HOME", "", 1); /* empty counts as unset */
	h = session_home(&cause);
	CHECK_STR(h, "/home/u/.local/state/vmux");
	free(h);
}

TEST(home_create_and_session_dir)
{
	char *d = tmpdir(), *home, *cause = NULL, *sd;
	struct stat st;

	xasprintf(&home, "%s/a/b", d);
	CHECK(session_home_create(home, &cause) == 0);
	sd = session_dir(home, "x");
	CHECK(strncmp(sd, home, strlen(home)) == 0);
	CHECK_STR(sd + strlen(home), "/sessions/x");
	*strrchr(sd, '/') = '\0';
	CHECK(stat(sd, &st) == 0 && S_ISDIR(st.st_mode));
	CHECK_INT(st.st_mode & 0777, 0700);
	free(sd);
	free(home);
	rmtree(d);
	free(d);
}

TEST(sock_dir_short_is_state_dir)
{
	char *cause = NULL, *s = session_sock_dir("/tmp/x/sessions/a", &cause);

	CHECK_STR(s, "/tmp/x/sessions/a");
	free(s);
}

TEST(sock_dir_long_uses_runtime_dir)
{
	char *d = tmpdir(), *rt, *deep, *s, *t, *cause = NULL;
	struct stat st;

	xasprintf(&rt, "%s/rt", d);
	CHECK(mkdir(rt, 0700) == 0);
	setenv("XDG_RUNTIME_DIR", rt, 1);
	xasprintf(&deep, "%s/%0100d/sessions/a", d, 0);
	s = session_sock_dir(deep, &cause);
	CHECK(s != NULL);
	CHECK(strncmp(s, rt, strlen(rt)) == 0);
	CHECK(strlen(s) + strlen("/vsock.sock_4294967295") < 108);
	CHECK(stat(s, &st) == 0 && S_ISDIR(st.st_mode));
	CHECK_INT(st.st_mode & 0777, 0700);
	/* stable for the same session, different for another */
	t = session_sock_dir(deep, &cause);
	CHECK_STR(t, s);
	free(t);
	deep[strlen(deep) - 1] = 'b';
	t = session_sock_dir(deep, &cause);
	CHECK(t != NULL && strcmp(t, s) != 0);
	free(t);
	free(s);
	free(deep);
	free(rt);
	rmtree(d);
	free(d);
}

TEST(sock_dir_long_falls_back_to_tmp)
{
	char *d = tmpdir(), *deep, *s, *cause = NULL, *parent;
	struct stat st;

	unsetenv("XDG_RUNTIME_DIR");
	xasprintf(&deep, "%s/%0100d/sessions/a", d, 0);
	xasprintf(&parent, "/tmp/vmux-%u/", (unsigned)getuid());
	s = session_sock_dir(deep, &cause);
	CHECK(s != NULL);
	CHECK(strncmp(s, parent, strlen(parent)) == 0);
	CHECK(stat(s, &st) == 0 && S_ISDIR(st.st_mode));
	CHECK(rmdir(s) == 0);
	free(s);
	free(parent);
	free(deep);
	rmtree(d);
	free(d);
}

TEST(mkdir_p_nested)
{
	char *d = tmpdir(), *p;

	xasprintf(&p, "%s/a/b/c", d);
	CHECK(mkdir_p(p, 0700) == 0);
	CHECK(mkdir_p(p, 0700) == 0); /* exists: fine */
	CHECK(access(p, F_OK) == 0);
	free(p);
	xasprintf(&p, "%s/file", d);
	touch(p, 0);
	free(p);
	xasprintf(&p, "%s/file/sub", d);
	CHECK(mkdir_p(p, 0700) < 0);
	free(p);
	rmtree(d);
	free(d);
}

TEST(find_in_path_and_programs)
{
	char *d = tmpdir(), *p, *cause = NULL, *tool;

	xasprintf(&tool, "%s/mytool", d);
	touch(tool, 1);
	setenv("PATH", d, 1);
	p = find_in_path("mytool");
	CHECK_STR(p, tool);
	free(p);
	CHECK(find_in_path("nosuchtool") == NULL);
	setenv("PATH", "/var/empty", 1);
	CHECK(find_in_path("mytool") == NULL);
	p = find_in_path(tool); /* a path is checked directly */
	CHECK_STR(p, tool);
	free(p);
	/* $env overrides; a bad override is an error, not a fallback */
	setenv("VMUX_TEST_TOOL", tool, 1);
	p = find_program("whatever", "VMUX_TEST_TOOL", &cause);
	CHECK_STR(p, tool);
	free(p);
	setenv("VMUX_TEST_TOOL", "/no/such", 1);
	CHECK(find_program("whatever", "VMUX_TEST_TOOL", &cause) == NULL);
	CHECK(strstr(cause, "VMUX_TEST_TOOL") != NULL);
	free(cause);
	cause = NULL;
	CHECK(find_program("vmux-no-such-helper", NULL, &cause) == NULL);
	CHECK(strstr(cause, "vmux-no-such-helper not found") != NULL);
	free(cause);
	free(tool);
	rmtree(d);
	free(d);
}

TEST(guest_image_from_env_dir)
{
	char *d = tmpdir(), *k, *i, *cause = NULL, *p;

	setenv("VMUX_GUEST_DIR", d, 1);
	CHECK(guest_image_find(NULL, NULL, &k, &i, &cause) == -1);
	CHECK(strstr(cause, "guest image not found") != NULL);
	CHECK(strstr(cause, "vmlinux") != NULL);
	CHECK(strchr(cause, '\n') == NULL);
	free(cause);
	cause = NULL;
	xasprintf(&p, "%s/vmlinux", d);
	touch(p, 0);
	free(p);
	CHECK(guest_image_find(NULL, NULL, &k, &i, &cause) == -1);
	CHECK(strstr(cause, "initrd.img") != NULL);
	free(cause);
	cause = NULL;
	xasprintf(&p, "%s/initrd.img", d);
	touch(p, 0);
	CHECK(guest_image_find(NULL, NULL, &k, &i, &cause) == 0);
	CHECK(strstr(k, "/vmlinux") != NULL && k[0] == '/');
	CHECK_STR(i, p);
	free(k);
	free(i);
	/* the default ignores the variable; the variable is "other" only
	 * when there is a default to differ from (the pool's rule) */
	if (guest_image_default(&k, &i, &cause) == 0) {
		CHECK(strcmp(i, p) != 0);
		CHECK(session_env_other("VMUX_GUEST_DIR") == 1);
		free(k);
		free(i);
	} else {
		CHECK(k == NULL && i == NULL);
		CHECK(session_env_other("VMUX_GUEST_DIR") == 0);
		free(cause);
		cause = NULL;
	}
	/* explicit files win; a missing explicit file is an error */
	CHECK(guest_image_find(NULL, "/no/such/initrd", &k, &i, &cause) == -1);
	CHECK(strstr(cause, "/no/such/initrd") != NULL);
	free(cause);
	cause = NULL;
	setenv("VMUX_GUEST_DIR", "/var/empty", 1);
	CHECK(guest_image_find(p, p, &k, &i, &cause) == 0);
	CHECK_STR(k, p);
	free(k);
	free(i);
	free(p);
	rmtree(d);
	free(d);
}

TEST(fnv1a_known_values)
{
	CHECK(hash_fnv1a("") == 0xcbf29ce484222325ULL);
	CHECK(hash_fnv1a("a") == 0xaf63dc4c8601ec8cULL);
}

/* rm --keep-workspace twice, in the same second: both kept, none lost. */
TEST(workspace_keep_never_overwrites)
{
	char *home = tmpdir(), *a, *b, *k1, *k2, *k3, *cause = NULL, *cmd;

	xasprintf(&a, "%s/a.img", home);
	xasprintf(&b, "%s/b.img", home);
	touch(a, 0);
	touch(b, 0);
	k1 = workspace_keep(home, "dev", a, &cause);
	k2 = workspace_keep(home, "dev", b, &cause);
	CHECK(k1 != NULL && k2 != NULL);
	CHECK(strcmp(k1, k2) != 0);
	CHECK(strstr(k1, "/workspaces/dev.img") != NULL);
	CHECK(strstr(k2, "/workspaces/dev-2.img") != NULL);
	CHECK_INT(access(k1, F_OK), 0);
	CHECK_INT(access(k2, F_OK), 0);
	/* a missing image: an error naming it, nothing moved */
	k3 = workspace_keep(home, "dev", a, &cause);
	CHECK(k3 == NULL && strstr(cause, "a.img") != NULL);
	free(cause);
	xasprintf(&cmd, "rm -rf '%s'", home);
	CHECK_INT(system(cmd), 0);
	free(cmd);
	free(k1);
	free(k2);
	free(a);
	free(b);
	free(home);
}

/* A pool VM's spec holds its image's identity: a NAME.img replaced under
 * the same name (a new import) is another image; a missing name is "-". */
/* Files for the checks below: DIR/bin/{qemu-system-x86_64,vmux-bridge},
 * DIR/other (a program), DIR/link (to the bridge), DIR/guest/{vmlinux,
 * initrd.img}; PATH is DIR/bin. */
static char *
boot_files(void)
{
	static const char *const files[] = {"bin/qemu-system-x86_64",
	    "bin/vmux-bridge", "other", "guest/vmlinux", "guest/initrd.img"};
	char *d = tmpdir(), *p, *q;
	size_t i;

	xasprintf(&p, "%s/bin", d);
	if (mkdir(p, 0700) != 0)
		fatal("mkdir %s", p);
	setenv("PATH", p, 1);
	free(p);
	xasprintf(&p, "%s/guest", d);
	if (mkdir(p, 0700) != 0)
		fatal("mkdir %s", p);
	free(p);
	for (i = 0; i < sizeof files / sizeof *files; i++) {
		xasprintf(&p, "%s/%s", d, files[i]);
		touch(p, 1);
		free(p);
	}
	xasprintf(&p, "%s/link", d);
	xasprintf(&q, "%s/bin/vmux-bridge", d);
	if (symlink(q, p) != 0)
		fatal("symlink %s", p);
	free(p);
	free(q);
	return d;
}

TEST(env_other_compares_files_not_names)
{
	char *d = boot_files(), *p;

	xasprintf(&p, "%s/other", d);
	unsetenv("VMUX_BRIDGE");
	CHECK(session_env_other("VMUX_BRIDGE") == 0);
	setenv("VMUX_BRIDGE", p, 1);
	CHECK(session_env_other("VMUX_BRIDGE") == 1);
	setenv("VMUX_QEMU", p, 1);
	CHECK(session_env_other("VMUX_QEMU") == 1);
	free(p);
	xasprintf(&p, "%s/link", d); /* a link to the default is the default */
	setenv("VMUX_BRIDGE", p, 1);
	CHECK(session_env_other("VMUX_BRIDGE") == 0);
	free(p);
	setenv("VMUX_QEMU", "qemu-system-x86_64", 1); /* by name, from PATH */
	CHECK(session_env_other("VMUX_QEMU") == 0);
	/* no default anywhere: what the variable names is the one there is */
	xasprintf(&p, "%s/other", d);
	setenv("VMUX_BRIDGE", p, 1);
	setenv("VMUX_QEMU", p, 1);
	setenv("PATH", "/var/empty", 1);
	CHECK(session_env_other("VMUX_BRIDGE") == 0);
	CHECK(session_env_other("VMUX_QEMU") == 0);
	unsetenv("VMUX_BRIDGE");
	unsetenv("VMUX_QEMU");
	free(p);
	rmtree(d);
	free(d);
}

/* vmux's own QEMU is known by its name, wherever it is; only it saves. */
TEST(qemu_own_build_is_known_by_name)
{
	char *d = boot_files(), *p, *got;

	CHECK(session_qemu_is_own("/usr/lib/vmux/vmux-qemu"));
	CHECK(session_qemu_is_own("vmux-qemu"));
	CHECK(!session_qemu_is_own("/usr/bin/qemu-system-x86_64"));
	CHECK(!session_qemu_is_own("/opt/vmux-qemu/qemu"));
	CHECK(!session_qemu_is_own(NULL));
	CHECK(session_qemu_why_no_state("/x/vmux-qemu") == NULL);
	CHECK(strstr(session_qemu_why_no_state("/usr/bin/qemu-system-x86_64"),
	          "cannot be saved") != NULL);
	/* not beside this test: Debian's, from PATH; VMUX_QEMU wins */
	unsetenv("VMUX_QEMU");
	xasprintf(&p, "%s/bin/qemu-system-x86_64", d);
	got = session_qemu_find(1);
	CHECK_STR(got, p);
	free(got);
	free(p);
	xasprintf(&p, "%s/other", d);
	setenv("VMUX_QEMU", p, 1);
	got = session_qemu_find(1);
	CHECK_STR(got, p);
	free(got);
	got = session_qemu_find(0);
	CHECK(strcmp(got, p) != 0);
	free(got);
	unsetenv("VMUX_QEMU");
	free(p);
	rmtree(d);
	free(d);
}

TEST(boot_identity_changes_when_a_file_is_replaced)
{
	char *d = boot_files(), *g, *initrd, *tmp, *a, *b, *c;
	const char *missing = "x";

	xasprintf(&g, "%s/guest", d);
	xasprintf(&initrd, "%s/initrd.img", g);
	xasprintf(&tmp, "%s/initrd.new", g);
	setenv("VMUX_GUEST_DIR", g, 1);
	a = session_boot_identity(&missing);
	CHECK(missing == NULL);
	b = session_boot_identity(NULL);
	CHECK_STR(a, b); /* the same files: the same identity */
	touch(tmp, 0);
	CHECK(rename(tmp, initrd) == 0); /* a rebuild */
	c = session_boot_identity(&missing);
	CHECK(missing == NULL);
	CHECK(strcmp(a, c) != 0);
	free(c);
	CHECK(unlink(initrd) == 0);
	c = session_boot_identity(&missing);
	CHECK(missing != NULL && strcmp(missing, "guest image") == 0);
	free(c);
	setenv("PATH", "/var/empty", 1);
	c = session_boot_identity(&missing);
	CHECK(missing != NULL && strcmp(missing, "QEMU") == 0);
	unsetenv("VMUX_GUEST_DIR");
	free(a);
	free(b);
	free(c);
	free(g);
	free(initrd);
	free(tmp);
	rmtree(d);
	free(d);
}

TEST(image_identity_changes_when_the_image_is_replaced)
{
	char *home = tmpdir(), *imgs, *img, *tmp, *a, *b, *c;

	xasprintf(&imgs, "%s/images", home);
	xasprintf(&img, "%s/course.img", imgs);
	xasprintf(&tmp, "%s/course.img.new", imgs);
	CHECK(mkdir(imgs, 0700) == 0);
	a = image_identity(home, "course");
	CHECK_STR(a, "-");
	touch(img, 0);
	b = image_identity(home, "course");
	CHECK(strcmp(b, "-") != 0);
	touch(tmp, 0);
	CHECK(rename(tmp, img) == 0); /* imported again */
	c = image_identity(home, "course");
	CHECK(strcmp(c, b) != 0);
	free(a);
	free(b);
	free(c);
	a = image_identity(home, NULL);
	CHECK_STR(a, "-");
	free(a);
	unlink(img);
	rmdir(imgs);
	rmdir(home);
	free(imgs);
	free(img);
	free(tmp);
	free(home);
}
