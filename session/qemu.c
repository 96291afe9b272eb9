/*
 * qemu.c: the QEMU command line of a vmux guest.
 *
 * Machine: -M microvm with the uncompressed PVH vmlinux, no firmware, devices
 * on virtio-mmio (modern, not legacy: vhost-user back ends require
 * VIRTIO_F_VERSION_1). Measured with guest/boot-check on the 2-core TCG
 * development host (other jobs running, load ~2-3): QEMU start to "agent
 * started" median 3.2 s on microvm vs 3.35 s on q35 (8 interleaved pairs),
 * to /init ~2.0 s vs ~2.3 s; with both cores busy, ~7 s. q35 also needs
 * SeaBIOS and PCI enumeration, which cost more under KVM, and more devices.
 *
 * The catch under TCG: microvm has no HPET and no ACPI PM timer, so when the
 * PIT-based TSC calibration is disturbed (a busy host) the kernel finds no
 * TSC frequency, marks the TSC unstable and hangs in most loaded boots. Under
 * TCG the guest's TSC is the host's TSC (QEMU reads it with rdtsc), so we
 * measure the host's rate (once per host boot: $VMUX_HOME/tsc-khz, accel.c)
 * and pass tsc_early_khz=, which skips calibration,
 * and tsc=reliable, which keeps the TSC as the clocksource (the TSC sync
 * check between vCPUs fails spuriously under TCG and leaves the guest on
 * jiffies). Without them 12 of 12 loaded boots hung; with them 80+ loaded
 * boots passed. Under KVM the guest gets kvm-clock and needs neither.
 *
 * Idle cost under TCG (measured on the same host, one idle session): the
 * default qemu64 CPU has no ARAT (an APIC timer that runs in deep idle),
 * so Linux keeps the LAPIC in periodic mode without a broadcast timer: no
 * high-resolution timers, no NO_HZ, a 250 Hz tick forever (5.7% of a
 * core). +arat gives one-shot timers and a tickless idle (0.8%); microvm's
 * PIT, which the kernel never uses once the LAPIC runs (tsc_early_khz
 * calibrates without it), still woke QEMU's main loop 250 times a second:
 * pit=off leaves 0.35%. Only with tsc_early_khz: without it (no rate
 * measured) the kernel calibrates with the PIT and hangs if there is none;
 * a --kernel older than 5.5 ignores tsc_early_khz, so wants 5.5 or newer.
 * tb-size caps TCG's translation cache, by default a 1 GiB mapping of which an
 * idle boot leaves 47 MiB resident; 32 MiB keeps boot time and saves 16 MiB a
 * session (16 MiB saved 35 but retranslates more under real work).
 *
 * cryptomgr.notests skips the kernel's crypto self-tests (~0.4 s under TCG)
 * and initcall_blacklist=crypto_kdf108_init the one 6.1 runs regardless (its
 * init function is only that self-test; ~0.3 s). panic=-1 with -no-reboot
 * turns a guest panic into QEMU exiting.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "qemu.h"

#define QEMU_DEFAULT   "qemu-system-x86_64"
#define QEMU_TCG_TB_MB 32 /* TCG's translation cache, MiB (see above) */

/* A growing NULL-terminated argument vector. */
struct args {
	char **v;
	size_t n, size;
};

/* Append one formatted argument. */
static void __attribute__((format(printf, 2, 3)))
args_add(struct args *a, const char *fmt, ...)
{
	va_list ap;

	if (a->n + 2 > a->size) {
		a->size = a->size == 0 ? 32 : a->size * 2;
		a->v = xreallocarray(a->v, a->size, sizeof *a->v);
	}
	va_start(ap, fmt);
	xvasprintf(&a->v[a->n++], fmt, ap);
	va_end(ap);
	a->v[a->n] = NULL;
}

/* Double every comma, as QEMU's option parser wants inside a value. */
char *
qemu_escape(const char *value)
{
	size_t len = strlen(value), commas = 0, i;
	char *out, *p;

	for (i = 0; i < len; i++)
		commas += value[i] == ',';
	out = p = xmalloc(len + commas + 1);
	for (i = 0; i < len; i++) {
		*p++ = value[i];
		if (value[i] == ',')
			*p++ = ',';
	}
	*p = '\0';
	return out;
}

/* The kernel command line; tsc_khz 0 leaves the TSC options out. */
char *
qemu_cmdline(const struct qemu_config *cfg, unsigned long khz)
{
	char *line, *tsc = NULL;
	int tcg = cfg->accel == NULL || strcmp(cfg->accel, "kvm") != 0;

	if (tcg && khz != 0)
		xasprintf(&tsc, " tsc_early_khz=%lu tsc=reliable", khz);
	xasprintf(&line,
	    "console=ttyS0 panic=-1 quiet cryptomgr.notests=1 "
	    "initcall_blacklist=crypto_kdf108_init%s%s%s",
	    tsc != NULL ? tsc : "",
	    cfg->append != NULL && *cfg->append != '\0' ? " " : "",
	    cfg->append != NULL ? cfg->append : "");
	free(tsc);
	return line;
}

/*
 * Check --append's kernel command line words: printable ASCII, at most
 * QEMU_APPEND_MAX bytes (the kernel's whole line is 2048), and no vmux.*
 * word: those carry the session's policy (limits, read-only root,
 * network, mounts), which profiles may lock and flags set. 0, or -1 with
 * cause.
 */
int
qemu_append_valid(const char *s, char **cause)
{
	const char *p;

	if (*s == '\0' || strspn(s, " ") == strlen(s)) {
		xasprintf(cause, "--append: no kernel arguments given");
		return -1;
	}
	if (strlen(s) > QEMU_APPEND_MAX) {
		xasprintf(
		    cause, "--append: longer than %d bytes", QEMU_APPEND_MAX);
		return -1;
	}
	for (p = s; *p != '\0'; p++) {
		if (*p < 0x20 || *p > 0x7e) {
			xasprintf(cause,
			    "--append: byte 0x%02x is not printable ASCII",
			    (unsigned char)*p);
			return -1;
		}
	}
	for (p = s; *p != '\0';) {
		size_t n;

		p += strspn(p, " ");
		n = strcspn(p, " ");
		if (n >= 5 && strncmp(p, "vmux.", 5) == 0) {
			xasprintf(cause,
			    "--append: '%.*s': vmux.* words are vmux's own "
			    "(set them with vmux's flags or a profile)",
			    (int)n, p);
			return -1;
		}
		p += n;
	}
	return 0;
}

/* Build QEMU's argv for cfg (see the top of this file for the choices). */
char **
qemu_argv(const struct qemu_config *cfg)
{
	struct args a = {NULL, 0, 0};
	char *e, *cmdline;
	int kvm = cfg->accel != NULL && strcmp(cfg->accel, "kvm") == 0;
	int mem =
	    cfg->memory_mb > 0 ? cfg->memory_mb : 512; /* launch always says */
	unsigned long khz;

	if (cfg->kernel == NULL)
		return NULL;
	khz = kvm ? 0 : cfg->tsc_khz != 0 ? cfg->tsc_khz : tsc_khz();
	args_add(&a, "%s", cfg->qemu != NULL ? cfg->qemu : QEMU_DEFAULT);
	args_add(&a, "-nodefaults");
	args_add(&a, "-no-user-config");
	args_add(&a, "-nographic");
	args_add(&a, "-no-reboot");

	args_add(&a, "-accel");
	if (kvm)
		args_add(&a, "kvm");
	else
		args_add(&a, "tcg,tb-size=%d",
		    cfg->tb_mb > 0 ? cfg->tb_mb : QEMU_TCG_TB_MB);
	args_add(&a, "-cpu");
	args_add(&a, kvm ? "host" : "qemu64,+arat");
	/*
	 * vhost-user maps guest memory: it must be shared. In a file (on a
	 * tmpfs) a saved state need not hold it (x-ignore-shared); QEMU 7.2
	 * would skip a memfd's RAM there without a word.
	 */
	args_add(&a, "-object");
	if (cfg->ram_file != NULL) {
		e = qemu_escape(cfg->ram_file);
		args_add(&a,
		    "memory-backend-file,id=mem0,size=%dM,mem-path=%s,share=on",
		    mem, e);
		free(e);
	} else
		args_add(
		    &a, "memory-backend-memfd,id=mem0,size=%dM,share=on", mem);
	args_add(&a, "-machine");
	/* without tsc_early_khz the kernel calibrates the TSC with the PIT */
	args_add(
	    &a, "microvm,memory-backend=mem0%s", khz > 0 ? ",pit=off" : "");
	args_add(&a, "-global");
	args_add(&a, "virtio-mmio.force-legacy=false");
	args_add(&a, "-m");
	args_add(&a, "%d", mem);
	args_add(&a, "-smp");
	args_add(&a, "%d", cfg->cpus > 0 ? cfg->cpus : 1);

	args_add(&a, "-kernel");
	args_add(&a, "%s", cfg->kernel);
	if (cfg->initrd != NULL) {
		args_add(&a, "-initrd");
		args_add(&a, "%s", cfg->initrd);
	}
	cmdline = qemu_cmdline(cfg, khz);
	args_add(&a, "-append");
	args_add(&a, "%s", cmdline);
	free(cmdline);

	if (cfg->console_log != NULL && cfg->serial_sock != NULL) {
		/* the console keeper's socket; QEMU writes the log too */
		char *l = qemu_escape(cfg->console_log);

		e = qemu_escape(cfg->serial_sock);
		args_add(&a, "-chardev");
		args_add(&a, "pipe,id=console0,path=%s,logfile=%s,logappend=on",
		    e, l);
		args_add(&a, "-serial");
		args_add(&a, "chardev:console0");
		free(l);
		free(e);
	} else if (cfg->console_log != NULL) {
		e = qemu_escape(cfg->console_log);
		args_add(&a, "-chardev");
		args_add(&a, "file,id=console0,path=%s,append=on", e);
		args_add(&a, "-serial");
		args_add(&a, "chardev:console0");
		free(e);
	}
	if (cfg->gdb_sock != NULL) { /* the user's own socket: 0600 */
		e = qemu_escape(cfg->gdb_sock);
		args_add(&a, "-chardev");
		args_add(&a, "socket,id=gdb0,path=%s,server=on,wait=off", e);
		args_add(&a, "-gdb");
		args_add(&a, "chardev:gdb0");
		if (cfg->paused)
			args_add(&a, "-S");
		free(e);
	}
	if (cfg->qmp != NULL) {
		e = qemu_escape(cfg->qmp);
		args_add(&a, "-qmp");
		args_add(&a, "unix:%s,server=on,wait=off", e);
		free(e);
	}
	if (cfg->incoming) { /* the state comes over QMP (pause.c) */
		args_add(&a, "-incoming");
		args_add(&a, "defer");
	}

	if (cfg->workspace != NULL) {
		e = qemu_escape(cfg->workspace);
		args_add(&a, "-drive");
		args_add(&a,
		    "file=%s,if=none,id=ws0,format=raw,discard=unmap,"
		    "detect-zeroes=unmap",
		    e);
		args_add(&a, "-device");
		args_add(
		    &a, "virtio-blk-device,drive=ws0,serial=vmux-workspace");
		free(e);
	}
	if (cfg->root_image != NULL && cfg->root_overlay != NULL) {
		/* its backing file is root_image, named in its header */
		e = qemu_escape(cfg->root_overlay);
		args_add(&a, "-drive");
		args_add(&a,
		    "file=%s,if=none,id=root0,format=qcow2,discard=unmap", e);
		args_add(&a, "-device");
		args_add(&a, "virtio-blk-device,drive=root0,serial=vmux-root");
		free(e);
	} else if (cfg->root_image != NULL) {
		e = qemu_escape(cfg->root_image);
		args_add(&a, "-drive");
		args_add(&a,
		    "file=%s,if=none,id=root0,format=raw,snapshot=on,"
		    "discard=unmap",
		    e);
		args_add(&a, "-device");
		args_add(&a, "virtio-blk-device,drive=root0,serial=vmux-root");
		free(e);
	}

	if (cfg->rescue_disk != NULL) {
		e = qemu_escape(cfg->rescue_disk);
		args_add(&a, "-drive");
		args_add(&a, "file=%s,if=none,id=rescue0,format=raw%s", e,
		    cfg->rescue_rw ? "" : ",readonly=on");
		args_add(&a, "-device");
		args_add(
		    &a, "virtio-blk-device,drive=rescue0,serial=vmux-rescue");
		free(e);
	}

	for (size_t i = 0; i < cfg->nfs; i++) {
		e = qemu_escape(cfg->fs_socks[i]);
		args_add(&a, "-chardev");
		args_add(&a, "socket,id=fs%zu,path=%s", i, e);
		args_add(&a, "-device");
		args_add(&a, "vhost-user-fs-device,chardev=fs%zu,tag=vmuxfs%zu",
		    i, i);
		free(e);
	}

	if (cfg->netdev != NULL) { /* already spelled as QEMU wants it */
		args_add(&a, "-netdev");
		args_add(&a, "%s", cfg->netdev);
		args_add(&a, "-device");
		args_add(&a, "virtio-net-device,netdev=net0");
	}

	/*
	 * No balloon: with free page reporting (the guest's kernel has the
	 * driver; VMUX_QEMU_EXTRA="-device virtio-balloon-device,
	 * free-page-reporting=on" adds one) an idle session kept about as
	 * much (bench/qemu: 94 MiB with Debian's QEMU, 91-99 without), and a
	 * shell's output flood ran about a quarter slower (pages churned and
	 * reported back and forth).
	 */

	if (cfg->vhost_user != NULL) {
		e = qemu_escape(cfg->vhost_user);
		/* vmux's QEMU takes a restarted bridge: it tries again every
		 * 100 ms for 3 s, then each second (qemu/patches/03, 04) */
		args_add(&a, "-chardev");
		args_add(&a, "socket,id=vsock0,path=%s%s", e,
		    cfg->vsock_reconnect ? ",reconnect=1" : "");
		args_add(&a, "-device");
		args_add(&a, "vhost-user-vsock-device,chardev=vsock0");
		free(e);
	} else {
		args_add(&a, "-device");
		args_add(&a, "vhost-vsock-device,guest-cid=%u", cfg->cid);
	}
	return a.v;
}

/* Free an argv from qemu_argv. */
void
argv_free(char **argv)
{
	size_t i;

	if (argv == NULL)
		return;
	for (i = 0; argv[i] != NULL; i++)
		free(argv[i]);
	free(argv);
}
