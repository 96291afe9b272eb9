/* test_qemu.c: unit tests of QEMU command lines and accelerator choice. */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session/qemu.h"
#include "unit.h"

/* Index of the first argument equal to s, or -1. */
static int
find_arg(char **argv, const char *s)
{
	int i;

	for (i = 0; argv[i] != NULL; i++)
		if (strcmp(argv[i], s) == 0)
			return i;
	return -1;
}

/* The argument after option opt whose value equals val (any occurrence). */
static int
has_opt(char **argv, const char *opt, const char *val)
{
	int i;

	for (i = 0; argv[i] != NULL && argv[i + 1] != NULL; i++)
		if (strcmp(argv[i], opt) == 0 && strcmp(argv[i + 1], val) == 0)
			return 1;
	return 0;
}

/* The value of the first occurrence of option opt, or NULL. */
static const char *
opt_value(char **argv, const char *opt)
{
	int i = find_arg(argv, opt);

	return i < 0 ? NULL : argv[i + 1];
}

/* Does any argument contain s? */
static int
any_contains(char **argv, const char *s)
{
	int i;

	for (i = 0; argv[i] != NULL; i++)
		if (strstr(argv[i], s) != NULL)
			return 1;
	return 0;
}

static const struct qemu_config tcg_bridge = {
    .qemu = NULL,
    .accel = "tcg",
    .kernel = "/img/vmlinux",
    .initrd = "/img/initrd.img",
    .cpus = 2,
    .memory_mb = 256,
    .cid = 3,
    .vhost_user = "/run/s/vhu.sock",
    .console_log = "/run/s/console.log",
    .qmp = "/run/s/qmp.sock",
    .append = "vmux.hostname=box",
};

TEST(tcg_with_bridge_has_every_piece)
{
	char **argv = qemu_argv(&tcg_bridge);
	const char *append;

	CHECK(argv != NULL);
	CHECK_STR(argv[0], "qemu-system-x86_64");
	CHECK(find_arg(argv, "-nodefaults") > 0);
	CHECK(find_arg(argv, "-no-user-config") > 0);
	CHECK(find_arg(argv, "-nographic") > 0);
	CHECK(find_arg(argv, "-no-reboot") > 0);
	/* a capped translation cache; ARAT and no PIT: a tickless idle */
	CHECK(has_opt(argv, "-accel", "tcg,tb-size=32"));
	CHECK(has_opt(argv, "-cpu", "qemu64,+arat"));
	CHECK(has_opt(argv, "-object",
	    "memory-backend-memfd,id=mem0,size=256M,share=on"));
	CHECK(has_opt(argv, "-machine", "microvm,memory-backend=mem0,pit=off"));
	CHECK(has_opt(argv, "-global", "virtio-mmio.force-legacy=false"));
	CHECK(has_opt(argv, "-m", "256"));
	CHECK(has_opt(argv, "-smp", "2"));
	CHECK(has_opt(argv, "-kernel", "/img/vmlinux"));
	CHECK(has_opt(argv, "-initrd", "/img/initrd.img"));
	CHECK(has_opt(argv, "-chardev",
	    "file,id=console0,path=/run/s/console.log,append=on"));
	CHECK(has_opt(argv, "-serial", "chardev:console0"));
	CHECK(has_opt(argv, "-qmp", "unix:/run/s/qmp.sock,server=on,wait=off"));
	CHECK(
	    has_opt(argv, "-chardev", "socket,id=vsock0,path=/run/s/vhu.sock"));
	CHECK(
	    has_opt(argv, "-device", "vhost-user-vsock-device,chardev=vsock0"));
	CHECK(!any_contains(argv, "vhost-vsock-device"));

	append = opt_value(argv, "-append");
	CHECK(append != NULL);
	CHECK(strncmp(append, "console=ttyS0 ", 14) == 0);
	CHECK(strstr(append, " panic=-1") != NULL);
	CHECK(strstr(append, " tsc_early_khz=") != NULL);
	CHECK(strstr(append, " tsc=reliable") != NULL);
	/* The caller's words come last, so they can override ours. */
	CHECK(strlen(append) > 18);
	CHECK_STR(append + strlen(append) - 18, " vmux.hostname=box");
	argv_free(argv);
}

TEST(kvm_with_kernel_vsock)
{
	struct qemu_config c = tcg_bridge;
	char **argv;

	c.accel = "kvm";
	c.vhost_user = NULL;
	c.cid = 7;
	c.qemu = "/opt/qemu/bin/qemu-system-x86_64";
	c.append = NULL;
	argv = qemu_argv(&c);
	CHECK(argv != NULL);
	CHECK_STR(argv[0], "/opt/qemu/bin/qemu-system-x86_64");
	CHECK(has_opt(argv, "-accel", "kvm"));
	CHECK(has_opt(argv, "-cpu", "host"));
	CHECK(has_opt(argv, "-machine", "microvm,memory-backend=mem0"));
	CHECK(has_opt(argv, "-device", "vhost-vsock-device,guest-cid=7"));
	CHECK(!any_contains(argv, "vhost-user"));
	CHECK(!any_contains(argv, "tsc_early_khz"));
	CHECK_STR(opt_value(argv, "-append"),
	    "console=ttyS0 panic=-1 quiet cryptomgr.notests=1 "
	    "initcall_blacklist=crypto_kdf108_init");
	argv_free(argv);
}

TEST(commas_in_paths_are_escaped)
{
	struct qemu_config c = tcg_bridge;
	char **argv;

	c.console_log = "/tmp/a,b/console.log";
	c.qmp = "/tmp/a,b/qmp";
	c.vhost_user = "/tmp/a,b/vhu";
	argv = qemu_argv(&c);
	CHECK(has_opt(argv, "-chardev",
	    "file,id=console0,path=/tmp/a,,b/console.log,append=on"));
	CHECK(has_opt(argv, "-qmp", "unix:/tmp/a,,b/qmp,server=on,wait=off"));
	CHECK(has_opt(argv, "-chardev", "socket,id=vsock0,path=/tmp/a,,b/vhu"));
	argv_free(argv);
}

TEST(console_keeper_socket_keeps_the_log)
{
	struct qemu_config c = tcg_bridge;
	char **argv;

	c.console_log = "/s/a,b/console.log";
	c.serial_sock = "/r/a,b/serial";
	argv = qemu_argv(&c);
	/* the keeper's FIFOs (.in, .out); QEMU still writes the log itself */
	CHECK(has_opt(argv, "-chardev",
	    "pipe,id=console0,path=/r/a,,b/serial,"
	    "logfile=/s/a,,b/console.log,logappend=on"));
	CHECK(has_opt(argv, "-serial", "chardev:console0"));
	CHECK(!any_contains(argv, "gdb"));
	CHECK(find_arg(argv, "-S") < 0);
	argv_free(argv);
}

TEST(gdbstub_and_paused)
{
	struct qemu_config c = tcg_bridge;
	char **argv;

	c.gdb_sock = "/r/gdb.sock";
	argv = qemu_argv(&c);
	CHECK(has_opt(argv, "-chardev",
	    "socket,id=gdb0,path=/r/gdb.sock,server=on,wait=off"));
	CHECK(has_opt(argv, "-gdb", "chardev:gdb0"));
	CHECK(find_arg(argv, "-S") < 0);
	argv_free(argv);
	c.paused = 1;
	argv = qemu_argv(&c);
	CHECK(find_arg(argv, "-S") >= 0);
	argv_free(argv);
}

TEST(rescue_disk_read_only_unless_rw)
{
	struct qemu_config c = tcg_bridge;
	char **argv;

	c.rescue_disk = "/w/a,b.img";
	argv = qemu_argv(&c);
	CHECK(has_opt(argv, "-drive",
	    "file=/w/a,,b.img,if=none,id=rescue0,format=raw,readonly=on"));
	CHECK(has_opt(argv, "-device",
	    "virtio-blk-device,drive=rescue0,serial=vmux-rescue"));
	argv_free(argv);
	c.rescue_rw = 1;
	argv = qemu_argv(&c);
	CHECK(has_opt(
	    argv, "-drive", "file=/w/a,,b.img,if=none,id=rescue0,format=raw"));
	argv_free(argv);
}

TEST(append_words_checked)
{
	char big[QEMU_APPEND_MAX + 2], *cause = NULL;

	CHECK(qemu_append_valid("rdinit=/bin/sh loglevel=7", &cause) == 0);
	CHECK(qemu_append_valid("myvmux.x=1 novmux.", &cause) == 0);
	CHECK(qemu_append_valid("quiet vmux.ro=0", &cause) != 0);
	CHECK(cause != NULL && strstr(cause, "'vmux.ro=0'") != NULL);
	free(cause);
	cause = NULL;
	CHECK(qemu_append_valid("vmux.", &cause) != 0);
	free(cause);
	cause = NULL;
	CHECK(qemu_append_valid("a\tb", &cause) != 0);
	CHECK(cause != NULL && strstr(cause, "0x09") != NULL);
	free(cause);
	cause = NULL;
	CHECK(qemu_append_valid("caf\xc3\xa9", &cause) != 0);
	free(cause);
	cause = NULL;
	CHECK(qemu_append_valid("   ", &cause) != 0);
	free(cause);
	cause = NULL;
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	CHECK(qemu_append_valid(big, &cause) != 0);
	free(cause);
	cause = NULL;
	big[QEMU_APPEND_MAX] = '\0';
	CHECK(qemu_append_valid(big, &cause) == 0);
}

TEST(workspace_is_a_raw_virtio_blk_disk)
{
	struct qemu_config c = tcg_bridge;
	char **argv;

	argv = qemu_argv(&c);
	CHECK(!any_contains(argv, "virtio-blk"));
	argv_free(argv);
	c.workspace = "/s/a,b/workspace.img";
	argv = qemu_argv(&c);
	CHECK(has_opt(argv, "-drive",
	    "file=/s/a,,b/workspace.img,if=none,id=ws0,format=raw,"
	    "discard=unmap,detect-zeroes=unmap"));
	CHECK(has_opt(argv, "-device",
	    "virtio-blk-device,drive=ws0,serial=vmux-workspace"));
	CHECK(!any_contains(argv, "vmux-root"));
	argv_free(argv);
	c.root_image = "/i/debian.img";
	argv = qemu_argv(&c);
	CHECK(has_opt(argv, "-drive",
	    "file=/i/debian.img,if=none,id=root0,format=raw,snapshot=on,"
	    "discard=unmap"));
	CHECK(has_opt(
	    argv, "-device", "virtio-blk-device,drive=root0,serial=vmux-root"));
	argv_free(argv);
}

TEST(optional_pieces_left_out)
{
	struct qemu_config c = tcg_bridge;
	char **argv;

	c.initrd = NULL;
	c.console_log = NULL;
	c.qmp = NULL;
	c.cpus = 0;
	c.memory_mb = 0;
	argv = qemu_argv(&c);
	CHECK(argv != NULL);
	CHECK(find_arg(argv, "-initrd") < 0);
	CHECK(find_arg(argv, "-serial") < 0);
	CHECK(find_arg(argv, "-qmp") < 0);
	CHECK(has_opt(argv, "-smp", "1"));
	CHECK(has_opt(argv, "-m", "512"));
	argv_free(argv);

	c.kernel = NULL;
	CHECK(qemu_argv(&c) == NULL);
	argv_free(NULL);
}

TEST(cmdline_is_exact)
{
	struct qemu_config c = tcg_bridge;
	char *s;

	s = qemu_cmdline(&c, 2100000);
	CHECK_STR(s,
	    "console=ttyS0 panic=-1 quiet cryptomgr.notests=1 "
	    "initcall_blacklist=crypto_kdf108_init "
	    "tsc_early_khz=2100000 tsc=reliable vmux.hostname=box");
	free(s);
	c.append = "";
	s = qemu_cmdline(&c, 0);
	CHECK_STR(s,
	    "console=ttyS0 panic=-1 quiet cryptomgr.notests=1 "
	    "initcall_blacklist=crypto_kdf108_init");
	free(s);
	c.accel = "kvm";
	c.append = "vmux.hostname=box";
	s = qemu_cmdline(&c, 2100000);
	CHECK_STR(s,
	    "console=ttyS0 panic=-1 quiet cryptomgr.notests=1 "
	    "initcall_blacklist=crypto_kdf108_init "
	    "vmux.hostname=box");
	free(s);
}

TEST(escape_doubles_commas_only)
{
	char *s;

	s = qemu_escape(",a,,b,");
	CHECK_STR(s, ",,a,,,,b,,");
	free(s);
	s = qemu_escape("");
	CHECK_STR(s, "");
	free(s);
}

/* A fake /sys/module with the named module directories. */
static char *
fake_modules(const char *a, const char *b)
{
	char *dir = xstrdup("/tmp/vmux-test-mod.XXXXXX"), *p;

	if (mkdtemp(dir) == NULL)
		return NULL;
	if (a != NULL) {
		xasprintf(&p, "%s/%s", dir, a);
		mkdir(p, 0755);
		free(p);
	}
	if (b != NULL) {
		xasprintf(&p, "%s/%s", dir, b);
		mkdir(p, 0755);
		free(p);
	}
	return dir;
}

/* Remove a fake module directory. */
static void
rm_modules(char *dir)
{
	char *cmd;

	xasprintf(&cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	free(cmd);
	free(dir);
}

TEST(accel_needs_real_hardware_kvm)
{
	char *why = NULL, *dir;

	dir = fake_modules("kvm", "kvm_intel");
	CHECK(dir != NULL);
	CHECK_STR(accel_decide(0, 12, dir, &why), "kvm");
	CHECK(strstr(why, "kvm_intel") != NULL);
	free(why);
	CHECK_STR(accel_decide(ENOENT, -1, dir, &why), "tcg");
	CHECK(strstr(why, "/dev/kvm") != NULL);
	CHECK(strstr(why, strerror(ENOENT)) != NULL);
	free(why);
	CHECK_STR(accel_decide(0, 11, dir, &why), "tcg");
	CHECK(strstr(why, "API version") != NULL);
	free(why);
	rm_modules(dir);

	dir = fake_modules("kvm_amd", NULL);
	CHECK_STR(accel_decide(0, 12, dir, &why), "kvm");
	free(why);
	rm_modules(dir);

	dir = fake_modules("kvm", "kvm_pvm");
	CHECK_STR(accel_decide(0, 12, dir, &why), "tcg");
	CHECK_STR(why, "kvm_pvm host module: stock guest kernels hang");
	free(why);
	rm_modules(dir);

	dir = fake_modules("kvm", NULL);
	CHECK_STR(accel_decide(0, 12, dir, &why), "tcg");
	CHECK(strstr(why, "kvm_intel or kvm_amd") != NULL);
	free(why);
	rm_modules(dir);
}

TEST(accel_detect_answers)
{
	char *why = NULL;
	const char *a = accel_detect(&why);

	CHECK(strcmp(a, "kvm") == 0 || strcmp(a, "tcg") == 0);
	CHECK(why != NULL && *why != '\0');
	free(why);
}

TEST(tsc_rate_is_plausible_and_cached)
{
	unsigned long khz = tsc_khz();

	/* Between 100 MHz and 10 GHz; a second call returns the same. */
	CHECK(khz > 100000 && khz < 10000000);
	CHECK_INT(tsc_khz(), khz);
}

/* The rate tsc_khz_cached gives with the line written to path first. */
static unsigned long
tsc_cached_from(const char *path, const char *line)
{
	FILE *f = fopen(path, "w");

	if (f != NULL) {
		fputs(line, f);
		fclose(f);
	}
	return tsc_khz_cached(path);
}

TEST(tsc_rate_file_holds_until_the_host_reboots)
{
	char dir[] = "/tmp/vmux-tsc.XXXXXX", path[64], boot[64], line[128];
	char next[128];
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof path, "%s/tsc-khz", dir);
	f = fopen("/proc/sys/kernel/random/boot_id", "r");
	CHECK(f != NULL && fgets(boot, sizeof boot, f) != NULL);
	fclose(f);
	boot[strcspn(boot, "\n")] = '\0';

	/* none yet: measured and written down with this boot's id */
	CHECK_INT(tsc_khz_cached(path), tsc_khz());
	f = fopen(path, "r");
	CHECK(f != NULL && fgets(line, sizeof line, f) != NULL);
	fclose(f);
	CHECK(strncmp(line, boot, strlen(boot)) == 0);

	/* this boot's: taken as it is (1.234567 GHz, not this host's) */
	CHECK(tsc_khz() != 1234567);
	snprintf(next, sizeof next, "%s 1234567\n", boot);
	CHECK_INT(tsc_cached_from(path, next), 1234567);

	/* an earlier boot's, garbage, or no rate a host has: measured again */
	CHECK_INT(tsc_cached_from(
	              path, "00000000-0000-0000-0000-000000000000 1234567\n"),
	    tsc_khz());
	snprintf(next, sizeof next, "%s\n", boot);
	CHECK_INT(tsc_cached_from(path, next), tsc_khz());
	snprintf(next, sizeof next, "%s -1\n", boot); /* %lu: ULONG_MAX */
	CHECK_INT(tsc_cached_from(path, next), tsc_khz());
	snprintf(next, sizeof next, "%s 5\n", boot);
	CHECK_INT(tsc_cached_from(path, next), tsc_khz());

	unlink(path);
	CHECK_INT(rmdir(dir), 0);
}
