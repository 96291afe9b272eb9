/*
 * test_session_host.c: other hosts' URLs, names and the quoting of the
 * words their shell gets (session/host.c); and the settings' host lines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "unit.h"

TEST(host_url_parts)
{
	struct host h;
	char *cause = NULL;

	CHECK_INT(
	    host_parse_url("ssh://alice@lab1.example:2222", &h, &cause), 0);
	CHECK_STR(h.user, "alice");
	CHECK_STR(h.addr, "lab1.example");
	CHECK_INT(h.port, 2222);
	CHECK_STR(h.vmux, "vmux");
	host_free(&h);
	CHECK_INT(
	    host_parse_url("ssh://10.0.0.7/opt/vmux/bin/vmux", &h, &cause), 0);
	CHECK(h.user == NULL);
	CHECK_INT(h.port, 0);
	CHECK_STR(h.vmux, "/opt/vmux/bin/vmux");
	host_free(&h);
}

TEST(host_url_refused)
{
	static const char *const bad[] = {"lab1", "ftp://x", "ssh://",
	    "ssh://@x", "ssh://a;b@x", "ssh://x:0", "ssh://x:65536",
	    "ssh://x:", "ssh://-oProxyCommand=x", "ssh://x y", "ssh://x/a b",
	    "ssh://x/$(id)", "ssh://x:22a", NULL};
	struct host h;

	for (size_t i = 0; bad[i] != NULL; i++) {
		char *cause = NULL;
		if (host_parse_url(bad[i], &h, &cause) == 0) {
			printf("accepted %s\n", bad[i]);
			host_free(&h);
			CHECK(0);
		}
		CHECK(cause != NULL && strstr(cause, bad[i]) != NULL);
		free(cause);
	}
}

TEST(host_slurm_urls)
{
	static const char *bad[] = {"slurm://v;m", "slurm://vm?what=1",
	    "slurm://vm?dir=relative", "slurm://vm?account=a&account=b",
	    "slurm://-vm", "slurm://vm?qos", "slurm://vm?dir=/a b"};
	struct host h;
	char *cause = NULL;

	CHECK_INT(
	    host_parse_url(
	        "slurm://gpu?account=cs101&qos=low&dir=/nfs/vmux", &h, &cause),
	    0);
	CHECK(h.slurm);
	CHECK_STR(h.partition, "gpu");
	CHECK_STR(h.account, "cs101");
	CHECK_STR(h.qos, "low");
	CHECK_STR(h.dir, "/nfs/vmux");
	host_free(&h);
	CHECK_INT(host_parse_url("slurm://", &h, &cause), 0);
	CHECK(h.slurm && h.partition == NULL && h.dir == NULL);
	host_free(&h);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		if (host_parse_url(bad[i], &h, &cause) == 0) {
			unit_fail(__FILE__, __LINE__, "accepted %s", bad[i]);
			return;
		}
		CHECK(strstr(cause, "slurm://") != NULL);
		free(cause);
		cause = NULL;
	}
}

TEST(host_names)
{
	char *cause = NULL;

	CHECK_INT(host_name_valid("lab-1_a", &cause), 0);
	CHECK_INT(host_name_valid("local", &cause), -1);
	CHECK(strstr(cause, "reserved") != NULL);
	free(cause);
	cause = NULL;
	CHECK_INT(host_name_valid("all", &cause), -1);
	free(cause);
	cause = NULL;
	CHECK_INT(host_name_valid("a.b", &cause), -1);
	free(cause);
	cause = NULL;
	CHECK_INT(host_name_valid("-x", &cause), -1);
	free(cause);
	cause = NULL;
	CHECK_INT(host_name_valid("", &cause), -1);
	free(cause);
}

TEST(host_quote_survives_the_shell)
{
	char *q = host_quote("it's $(x) `y` \"z\"");

	CHECK_STR(q, "'it'\\''s $(x) `y` \"z\"'");
	free(q);
	q = host_quote("");
	CHECK_STR(q, "''");
	free(q);
}

/* A private XDG_CONFIG_HOME in dir (a mkdtemp template); its config's path. */
static char *
config_dir(char *dir)
{
	char *path;

	if (mkdtemp(dir) == NULL)
		return NULL;
	setenv("XDG_CONFIG_HOME", dir, 1);
	xasprintf(&path, "%s/vmux", dir);
	mkdir_p(path, 0700);
	free(path);
	xasprintf(&path, "%s/vmux/config", dir);
	return path;
}

/* Make the config hold text. */
static void
config_put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f != NULL) {
		fputs(text, f);
		fclose(f);
	}
}

/* Remove what config_dir made. */
static void
config_gone(char *dir, char *path)
{
	unlink(path);
	free(path);
	xasprintf(&path, "%s/vmux", dir);
	rmdir(path);
	free(path);
	rmdir(dir);
	unsetenv("XDG_CONFIG_HOME");
}

TEST(settings_host_lines)
{
	char dir[] = "/tmp/vmux-unit-host.XXXXXX", *path, *cause = NULL;
	struct settings s;
	struct host h;

	CHECK((path = config_dir(dir)) != NULL);
	config_put(path,
	    "host lab1 ssh://root@lab1:22 # the first\n"
	    "host lab2\tssh://lab2\ndefault-host lab2\n");
	CHECK_INT(settings_load(&s, &cause), 0);
	CHECK_INT((int)s.nhosts, 2);
	CHECK_STR(s.default_host, "lab2");
	CHECK_INT(host_resolve("lab1", &s, &h, &cause), 0);
	CHECK_STR(h.name, "lab1");
	CHECK_STR(h.user, "root");
	host_free(&h);
	CHECK_INT(host_resolve("nosuch", &s, &h, &cause), -1);
	CHECK(strstr(cause, "no host named 'nosuch'") != NULL);
	free(cause);
	cause = NULL;
	settings_free(&s);
	/* a bad line names the file and the line */
	config_put(path, "host lab1 ssh://root@lab1\nhost lab1 ssh://other\n");
	CHECK_INT(settings_load(&s, &cause), -1);
	CHECK(strstr(cause, "config:2: host lab1 is named twice") != NULL);
	free(cause);
	cause = NULL;
	config_put(path, "host lab1\n");
	CHECK_INT(settings_load(&s, &cause), -1);
	CHECK(strstr(cause, "needs a URL") != NULL);
	free(cause);
	config_gone(dir, path);
}

/* settings.c's pool line: size, profile, image; bad ones name the line. */
TEST(settings_pool_line)
{
	char dir[] = "/tmp/vmux-unit-pool.XXXXXX", *path, *cause = NULL;
	static const char *const bad[] = {"pool 65\n", "pool -1\n", "pool x\n",
	    "pool 2 flavour big\n", "pool 2 profile\n", NULL};
	struct settings s;

	CHECK((path = config_dir(dir)) != NULL);
	config_put(path, "pool 3 profile network_basic image debian-12\n");
	CHECK_INT(settings_load(&s, &cause), 0);
	CHECK_INT(s.pool_size, 3);
	CHECK_STR(s.pool_profile, "network_basic");
	CHECK_STR(s.pool_image, "debian-12");
	settings_free(&s);
	for (size_t i = 0; bad[i] != NULL; i++) {
		config_put(path, bad[i]);
		CHECK_INT(settings_load(&s, &cause), -1);
		CHECK(strstr(cause, "config:1: pool") != NULL);
		free(cause);
		cause = NULL;
	}
	config_gone(dir, path);
}
