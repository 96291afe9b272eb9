/*
 * qemu.h: QEMU command lines for vmux guests and the choice of accelerator.
 *
 * Implemented in session/qemu.c and session/accel.c; the session code fills a
 * qemu_config, spawns the argv it gets back and frees it. Guests always boot
 * the uncompressed PVH vmlinux on -M microvm (why: see qemu.c), with memory
 * shared (a file, or a memfd) so a vhost-user back end can map it.
 */
#ifndef VMUX_QEMU_H
#define VMUX_QEMU_H

struct qemu_config {
	const char *qemu;   /* binary; NULL = "qemu-system-x86_64" */
	const char *accel;  /* "tcg" or "kvm" */
	const char *kernel; /* uncompressed vmlinux */
	const char *initrd;
	int cpus;
	int memory_mb;
	unsigned long tsc_khz;   /* TCG: the host TSC rate; 0 = measure now */
	unsigned cid;            /* guest CID, >= 3 */
	const char *vhost_user;  /* bridge's vhost-user socket; NULL = kernel
	                            vhost-vsock with cid */
	const char *console_log; /* file that receives the serial console */
	const char *serial_sock; /* the keeper's FIFOs (.in, .out), or NULL */
	const char *gdb_sock;    /* serve the gdbstub here, or NULL */
	int paused;              /* with gdb_sock: start with the CPU stopped */
	const char *rescue_disk; /* raw disk for vmux rescue (vmux-rescue) */
	int rescue_rw;           /* ... writable; else QEMU refuses writes */
	const char *qmp;         /* QMP unix socket path (server, nowait) */
	const char *append;      /* extra kernel command line, may be NULL */
	const char *workspace;   /* raw disk image for /workspace, or NULL */
	const char *root_image;  /* ext4 image for / (shared, read-only: the
	                            guest's writes go to a throw-away layer) */
	const char *root_overlay; /* ... that layer, a qcow2 over root_image
	                             kept in the session's folder; NULL:
	                             QEMU's own (snapshot=on) */
	const char *netdev;       /* -netdev value of the NIC, or NULL: none */
	char **fs_socks;          /* vhost-user-fs sockets (tags vmuxfsN) */
	size_t nfs;
	const char *ram_file; /* guest RAM in this file (shared), so the
	                         state can be saved without it; NULL: a
	                         memfd */
	int vsock_reconnect;  /* vmux's QEMU: a new bridge may take over */
	int tb_mb;            /* TCG's translation cache (MiB); 0: 32 */
	int incoming;         /* wait for a saved state (migrate-incoming) */
};

/* qemu.c */
char **qemu_argv(const struct qemu_config *cfg); /* NULL-terminated */
void argv_free(char **argv);
char *qemu_cmdline(const struct qemu_config *cfg, unsigned long tsc_khz);
char *qemu_escape(const char *value);
#define QEMU_APPEND_MAX 1024 /* --append's bytes */
int qemu_append_valid(const char *, char **cause);

/* accel.c */
const char *accel_detect(char **why);
const char *accel_decide(
    int kvm_errno, int kvm_api, const char *modules_dir, char **why);
unsigned long tsc_khz(void);
unsigned long tsc_khz_cached(const char *path);

#endif
