/*
 * test_session_record.c: session records (round trip, atomic replacement,
 * malformed input), CID allocation, listing and the home lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "unit.h"

/* A fresh temporary directory (tests run in forked children). */
static char *
tmpdir(void)
{
	char *d = xstrdup("/tmp/vmux-unit-XXXXXX");

	if (mkdtemp(d) == NULL)
		fatal("mkdtemp");
	return d;
}

/* A record with every field set. */
static void
sample(struct session_record *r, const char *dir, const char *name)
{
	memset(r, 0, sizeof *r);
	r->name = xstrdup(name);
	r->dir = xstrdup(dir);
	r->status = SESSION_READY;
	r->accel = xstrdup("tcg");
	r->cid = 7;
	xasprintf(&r->vsock_uds, "%s/vsock.sock", dir);
	xasprintf(&r->vhost_user, "%s/vhost-user.sock", dir);
	xasprintf(&r->qmp, "%s/qmp.sock", dir);
	r->sock_dir = xstrdup("/tmp/vmux-0/abc");
	xasprintf(&r->console_log, "%s/console.log", dir);
	xasprintf(&r->qemu_log, "%s/qemu.log", dir);
	xasprintf(&r->bridge_log, "%s/bridge.log", dir);
	r->qemu_bin = xstrdup("/usr/bin/qemu-system-x86_64");
	r->bridge_bin = xstrdup("/x/bin/vmux-bridge");
	r->kernel = xstrdup("/x/guest/vmlinux");
	r->initrd = xstrdup("/x/guest/initrd.img");
	r->qemu_pid = 1234;
	r->bridge_pid = 1233;
	r->created = 1763740800; /* 2025-11-21T16:00:00Z */
	r->cpus = 2;
	r->memory_mb = 768;
	r->nallow_ports = 2;
	r->allow_ports = xcalloc(2, sizeof *r->allow_ports);
	r->allow_ports[0] = 7000;
	r->allow_ports[1] = 4000000000u;
}

/* Write s to path. */
static void
put(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || write_all(fd, s, strlen(s)) < 0)
		fatal("put %s", path);
	close(fd);
}

/* Number of entries in a directory (minus . and ..). */
static int
count_entries(const char *dir)
{
	char *cmd;
	int n = 0;
	FILE *f;

	xasprintf(&cmd, "ls -A '%s' | wc -l", dir);
	f = popen(cmd, "r");
	if (f == NULL || fscanf(f, "%d", &n) != 1)
		n = -1;
	if (f != NULL)
		pclose(f);
	free(cmd);
	return n;
}

TEST(record_round_trip)
{
	char *d = tmpdir(), *path = record_path(d), *cause = NULL;
	struct session_record a, b;

	sample(&a, d, "web-1.x_y");
	CHECK(record_write(path, &a, &cause) == 0);
	CHECK(record_read(path, &b, &cause) == 0);
	CHECK_STR(b.name, "web-1.x_y");
	CHECK_STR(b.dir, d);
	CHECK_INT(b.status, SESSION_READY);
	CHECK_STR(b.accel, "tcg");
	CHECK_INT(b.cid, 7);
	CHECK_INT(b.vsock_kernel, 0);
	CHECK_STR(b.vsock_uds, a.vsock_uds);
	CHECK_STR(b.vhost_user, a.vhost_user);
	CHECK_STR(b.qmp, a.qmp);
	CHECK_STR(b.sock_dir, "/tmp/vmux-0/abc");
	CHECK_STR(b.console_log, a.console_log);
	CHECK_STR(b.qemu_log, a.qemu_log);
	CHECK_STR(b.bridge_log, a.bridge_log);
	CHECK_STR(b.qemu_bin, a.qemu_bin);
	CHECK_STR(b.bridge_bin, a.bridge_bin);
	CHECK_STR(b.kernel, a.kernel);
	CHECK_STR(b.initrd, a.initrd);
	CHECK_INT(b.qemu_pid, 1234);
	CHECK_INT(b.bridge_pid, 1233);
	CHECK_INT(b.created, 1763740800);
	CHECK_INT(b.cpus, 2);
	CHECK_INT(b.memory_mb, 768);
	CHECK_INT(b.nallow_ports, 2);
	CHECK_INT(b.allow_ports[0], 7000);
	CHECK_INT(b.allow_ports[1], 4000000000u);
	/* no temporary file is left beside the record */
	CHECK_INT(count_entries(d), 1);
	/* what console and boot controls keep; older records lack it */
	CHECK(b.console_sock == NULL && b.append == NULL);
	CHECK_INT(b.console_pid, 0);
	CHECK_INT(b.no_agent, 0);
	a.console_sock = xstrdup("/tmp/vmux-0/abc/console.sock");
	a.console_pid = 1235;
	a.append = xstrdup("rdinit=/bin/sh");
	a.no_agent = 1;
	a.record = 1;
	a.recorder_pid = 1236;
	record_free(&b);
	CHECK(record_write(path, &a, &cause) == 0);
	CHECK(record_read(path, &b, &cause) == 0);
	CHECK_STR(b.console_sock, a.console_sock);
	CHECK_INT(b.console_pid, 1235);
	CHECK_STR(b.append, "rdinit=/bin/sh");
	CHECK_INT(b.no_agent, 1);
	CHECK_INT(b.record, 1);
	CHECK_INT(b.recorder_pid, 1236);
	record_free(&a);
	record_free(&b);
	CHECK(rmtree(d) == 0);
	free(path);
	free(d);
}

TEST(record_round_trip_kernel_vsock_nulls)
{
	char *d = tmpdir(), *path = record_path(d), *cause = NULL;
	struct session_record a, b;

	memset(&a, 0, sizeof a);
	a.name = xstrdup("k");
	a.dir = xstrdup(d);
	a.accel = xstrdup("kvm");
	a.cid = 3;
	a.vsock_kernel = 1;
	a.cpus = 1;
	a.memory_mb = 512;
	CHECK(record_write(path, &a, &cause) == 0);
	CHECK(record_read(path, &b, &cause) == 0);
	CHECK_INT(b.vsock_kernel, 1);
	CHECK_INT(b.status, SESSION_STARTING);
	CHECK(b.vsock_uds == NULL);
	CHECK(b.sock_dir == NULL);
	CHECK(b.qemu_pid == 0);
	CHECK_INT(b.nallow_ports, 0);
	record_free(&a);
	record_free(&b);
	rmtree(d);
	free(path);
	free(d);
}

TEST(record_failed_write_keeps_old)
{
	char *d = tmpdir(), *path = record_path(d), *cause = NULL;
	struct session_record a, b, c;
	struct rlimit rl;

	sample(&a, d, "old");
	CHECK(record_write(path, &a, &cause) == 0);
	sample(&b, d, "new");
	b.cid = 99;
	/* A "disk full": no file may grow past 16 bytes. */
	signal(SIGXFSZ, SIG_IGN);
	rl.rlim_cur = rl.rlim_max = 16;
	CHECK(setrlimit(RLIMIT_FSIZE, &rl) == 0);
	CHECK(record_write(path, &b, &cause) == -1);
	CHECK(cause != NULL && strstr(cause, "cannot write") != NULL);
	CHECK(record_read(path, &c, &cause) == 0);
	CHECK_STR(c.name, "old");
	CHECK_INT(c.cid, 7);
	CHECK_INT(count_entries(d), 1); /* the temporary file is gone */
	record_free(&a);
	record_free(&b);
	record_free(&c);
	free(cause);
	rmtree(d);
	free(path);
	free(d);
}

TEST(record_failed_rename_leaves_no_tmp)
{
	char *d = tmpdir(), *path = record_path(d), *cause = NULL;
	struct session_record a;

	CHECK(mkdir(path, 0700) == 0); /* the record path is a directory */
	sample(&a, d, "x");
	CHECK(record_write(path, &a, &cause) == -1);
	CHECK(cause != NULL);
	CHECK_INT(count_entries(d), 1);
	record_free(&a);
	free(cause);
	rmtree(d);
	free(path);
	free(d);
}

TEST(record_rejects_malformed)
{
	static const char *bad[] = {
	    "",
	    "{",
	    "[]",
	    "42",
	    "{}",
	    "{\"version\":1}",
	    "{\"version\":2,\"name\":\"a\"}",
	    "{\"version\":1,\"name\":\"a/b\",\"dir\":\"/x\",\"status\":"
	    "\"ready\",\"accel\":\"tcg\",\"vsock\":\"bridge\",\"cid\":3,"
	    "\"pids\":{\"qemu\":1,\"bridge\":2},\"created_unix\":1,"
	    "\"cpus\":1,\"memory_mb\":1}",
	    "{\"version\":1,\"name\":\"a\",\"dir\":\"/x\",\"status\":"
	    "\"weird\",\"accel\":\"tcg\",\"vsock\":\"bridge\",\"cid\":3,"
	    "\"pids\":{\"qemu\":1,\"bridge\":2},\"created_unix\":1,"
	    "\"cpus\":1,\"memory_mb\":1}",
	    "{\"version\":1,\"name\":\"a\",\"dir\":\"/x\",\"status\":"
	    "\"ready\",\"accel\":\"tcg\",\"vsock\":\"bridge\",\"cid\":2,"
	    "\"pids\":{\"qemu\":1,\"bridge\":2},\"created_unix\":1,"
	    "\"cpus\":1,\"memory_mb\":1}",
	    "{\"version\":1,\"name\":\"a\",\"dir\":\"/x\",\"status\":"
	    "\"ready\",\"accel\":\"tcg\",\"vsock\":\"bridge\",\"cid\":3,"
	    "\"pids\":{\"qemu\":-1,\"bridge\":2},\"created_unix\":1,"
	    "\"cpus\":1,\"memory_mb\":1}",
	    "{\"version\":1,\"name\":\"a\",\"dir\":\"/x\",\"status\":"
	    "\"ready\",\"accel\":\"tcg\",\"vsock\":\"bridge\",\"cid\":3,"
	    "\"pids\":{\"qemu\":1,\"bridge\":2},\"created_unix\":1,"
	    "\"cpus\":1.5,\"memory_mb\":1}",
	    "{\"version\":1,\"name\":\"a\",\"dir\":\"/x\",\"status\":"
	    "\"ready\",\"accel\":\"tcg\",\"vsock\":\"bridge\",\"cid\":3,"
	    "\"pids\":{\"qemu\":1,\"bridge\":2},\"created_unix\":1,"
	    "\"cpus\":1,\"memory_mb\":1,\"allow_ports\":[\"x\"]}",
	    "{\"version\":1,\"name\":\"a\",\"dir\":7,\"status\":"
	    "\"ready\",\"accel\":\"tcg\",\"vsock\":\"bridge\",\"cid\":3,"
	    "\"pids\":{\"qemu\":1,\"bridge\":2},\"created_unix\":1,"
	    "\"cpus\":1,\"memory_mb\":1}",
	};
	static const char good[] =
	    "{\"version\":1,\"name\":\"a\",\"dir\":\"/x\",\"status\":"
	    "\"ready\",\"accel\":\"tcg\",\"vsock\":\"bridge\",\"cid\":3,"
	    "\"pids\":{\"qemu\":1,\"bridge\":2},\"created_unix\":1,"
	    "\"cpus\":1,\"memory_mb\":1}";
	char *d = tmpdir(), *path = record_path(d), *cause = NULL;
	struct session_record r;
	size_t i;

	for (i = 0; i < nitems(bad); i++) {
		put(path, bad[i]);
		cause = NULL;
		if (record_read(path, &r, &cause) != -1) {
			unit_fail(__FILE__, __LINE__, "accepted: %s", bad[i]);
			return;
		}
		CHECK(cause != NULL && strstr(cause, path) != NULL);
		CHECK(r.name == NULL); /* nothing half-filled */
		free(cause);
	}
	put(path, good);
	CHECK(record_read(path, &r, &cause) == 0);
	CHECK_STR(r.name, "a");
	record_free(&r);
	rmtree(d);
	free(path);
	free(d);
}

TEST(record_load_unknown_and_missing)
{
	char *d = tmpdir(), *cause = NULL, *sd;
	struct session_record r;

	CHECK(record_load(d, "nosuch", &r, &cause) == -1);
	CHECK_STR(cause, "no session named 'nosuch'");
	free(cause);
	cause = NULL;
	CHECK(record_load(d, "bad/name", &r, &cause) == -1);
	CHECK(strstr(cause, "invalid session name") != NULL);
	free(cause);
	cause = NULL;
	CHECK(session_home_create(d, &cause) == 0);
	sd = session_dir(d, "half");
	CHECK(mkdir(sd, 0700) == 0);
	CHECK(record_load(d, "half", &r, &cause) == -1);
	CHECK(strstr(cause, "no record") != NULL);
	free(cause);
	free(sd);
	rmtree(d);
	free(d);
}

TEST(cid_pick_lowest_free)
{
	unsigned a[] = {3, 4, 6}, b[] = {4, 5}, c[] = {5, 3, 4};

	CHECK_INT(cid_pick(NULL, 0), 3);
	CHECK_INT(cid_pick(a, 3), 5);
	CHECK_INT(cid_pick(b, 2), 3);
	CHECK_INT(cid_pick(c, 3), 6);
}

TEST(session_list_sorted_with_broken)
{
	char *d = tmpdir(), *cause = NULL, *sd, *path;
	struct session_entry *v;
	struct session_record a;
	size_t n;

	CHECK(session_list(d, &v, &n, &cause) == 0); /* no sessions dir */
	CHECK_INT(n, 0);
	CHECK(session_home_create(d, &cause) == 0);
	const char *names[] = {"zeta", "alpha", "mid"};
	for (size_t i = 0; i < 3; i++) {
		sd = session_dir(d, names[i]);
		CHECK(mkdir(sd, 0700) == 0);
		path = record_path(sd);
		if (i == 2)
			put(path, "{garbage");
		else {
			sample(&a, sd, names[i]);
			a.cid = 3 + (unsigned)i;
			CHECK(record_write(path, &a, &cause) == 0);
			record_free(&a);
		}
		free(path);
		free(sd);
	}
	sd = session_dir(d, ".hidden");
	CHECK(mkdir(sd, 0700) == 0);
	free(sd);
	CHECK(session_list(d, &v, &n, &cause) == 0);
	CHECK_INT(n, 3);
	CHECK_STR(v[0].name, "alpha");
	CHECK_INT(v[0].ok, 1);
	CHECK_INT(v[0].rec.cid, 4);
	CHECK_STR(v[1].name, "mid");
	CHECK_INT(v[1].ok, 0);
	CHECK(v[1].error != NULL && strstr(v[1].error, "JSON") != NULL);
	CHECK_STR(v[2].name, "zeta");
	CHECK_INT(v[2].rec.cid, 3);
	session_list_free(v, n);
	rmtree(d);
	free(d);
}

TEST(session_lock_excludes)
{
	char *d = tmpdir(), *cause = NULL, *path;
	int fd, status;
	pid_t pid;

	fd = session_lock(d, &cause);
	CHECK(fd >= 0);
	xasprintf(&path, "%s/lock", d);
	pid = fork();
	if (pid == 0) {
		int fd2 = open(path, O_RDWR);
		_exit(flock(fd2, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK
		        ? 0
		        : 1);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(fd);
	fd = session_lock(d, &cause); /* free again */
	CHECK(fd >= 0);
	close(fd);
	free(path);
	rmtree(d);
	free(d);
}

/*
 * A record from before the options table (its own names for facts: status
 * "ready", net, pids_max, idle_s, mounts_mode as a number, stop_reason)
 * reads as the same session; written again it uses one name a fact.
 */
TEST(record_older_names_read)
{
	static const char old[] =
	    "{\"version\":1,\"name\":\"o\",\"dir\":\"/tmp/o\",\"status\":"
	    "\"ready\",\"accel\":\"tcg\",\"cid\":5,\"vsock\":\"bridge\","
	    "\"pids\":{\"qemu\":0,\"bridge\":0},\"created_unix\":1,\"cpus\":1,"
	    "\"memory_mb\":256,\"net\":true,\"pids_max\":64,\"idle_s\":30,"
	    "\"mounts_mode\":1,\"quota_mb\":100,\"stop_reason\":\"user\"}";
	struct session_record r;
	char *cause = NULL;
	cJSON *j = cJSON_Parse(old), *back;

	CHECK(record_from_json(j, &r, &cause) == 0);
	CHECK_INT(r.status, SESSION_READY);
	CHECK_INT(r.net, 1);
	CHECK_INT(r.pids_limit, 64);
	CHECK_INT((int)r.idle_s, 30);
	CHECK_INT(r.mounts_mode, MOUNTS_RO);
	CHECK_INT((int)r.quota_mb, 100);
	CHECK_STR(r.stop_reason, "user");
	CHECK(r.hostname == NULL);
	back = record_to_json(&r);
	CHECK_STR(cJSON_GetObjectItem(back, "state")->valuestring, "running");
	CHECK_STR(cJSON_GetObjectItem(back, "network")->valuestring, "on");
	CHECK_INT(cJSON_GetObjectItem(back, "pids_limit")->valueint, 64);
	CHECK_INT(cJSON_GetObjectItem(back, "idle_timeout_s")->valueint, 30);
	CHECK_STR(cJSON_GetObjectItem(back, "mounts_mode")->valuestring, "ro");
	CHECK_STR(cJSON_GetObjectItem(back, "stopped_by")->valuestring, "user");
	CHECK(cJSON_GetObjectItem(back, "status") == NULL);
	CHECK(cJSON_GetObjectItem(back, "pids_max") == NULL);
	cJSON_Delete(back);
	cJSON_Delete(j);
	record_free(&r);
	/* a bad value under an option's key is named */
	j = cJSON_Parse("{\"version\":1,\"name\":\"o\",\"dir\":\"/tmp/o\","
	                "\"state\":\"running\",\"accel\":\"tcg\",\"cid\":5,"
	                "\"vsock\":\"bridge\",\"pids\":{\"qemu\":0,\"bridge\":"
	                "0},\"created_unix\":1,\"cpus\":1,\"memory_mb\":256,"
	                "\"hostname\":\"a b\"}");
	CHECK(record_from_json(j, &r, &cause) == -1);
	CHECK_STR(cause, "bad \"hostname\"");
	free(cause);
	cJSON_Delete(j);
}

TEST(options_parse_one_size_parser)
{
	const struct session_option *m = session_option_find("memory");
	const struct session_option *h = session_option_find("hostname");
	char *cause = NULL;
	long long v;

	/* --memory takes units as --disk does */
	CHECK(option_parse(m, "--memory", "2G", &v, &cause) == 0);
	CHECK(v == 2048);
	CHECK(option_parse(m, "--memory", "512", &v, &cause) == 0);
	CHECK(v == 512);
	CHECK(option_parse(m, "--memory", "64M", &v, &cause) == -1);
	CHECK(strstr(cause, "invalid --memory '64M'") != NULL);
	free(cause);
	cause = NULL;
	CHECK(option_parse(h, "--hostname", "lab-1.example", &v, &cause) == 0);
	CHECK(option_parse(h, "--hostname", "-bad", &v, &cause) == -1);
	free(cause);
	cause = NULL;
	CHECK(option_parse(h, "--hostname", "a..b", &v, &cause) == -1);
	free(cause);
	CHECK(session_option_find("no-such") == NULL);
	/* durations: lowercase units only (30M would be a size) */
	CHECK(option_duration("--ttl", "30m", &v, &cause) == 0 && v == 1800);
	CHECK(option_duration("--ttl", "30M", &v, &cause) == -1);
	free(cause);
}
