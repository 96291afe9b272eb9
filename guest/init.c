/*
 * init.c: vmux-init, PID 1 of the default vmux guest.
 *
 * Owns the guest's early life: console, pseudo file systems, hostname,
 * kernel modules, loopback, the agent (restarted with backoff when it dies),
 * zombie reaping and a clean power-off. Built fully static so it runs before
 * anything else exists. Console lines all start with "vmux-init: ";
 * guest/boot-check waits for "vmux-init: start" (kernel reached /init) and
 * "vmux-init: setup done"; bench/run reads the steps in between.
 *
 * Boot order: modules, then the root, the workspace, limits, network and
 * shared folders; the agent is started as soon as the vsock transport is
 * loaded (agent_early), but serves nothing until all of that is done
 * (gate_open), so whatever the host asks finds the guest set up. The
 * agent's port is opened here, the moment the transport is in, and kept
 * for every agent started (agent_listen): the host's first ping waits in
 * the kernel's queue rather than being refused and retried. Once the root
 * is in place, and before anything that may hang, a root shell is offered
 * on the serial console (console_shell.c): the way in when the agent is
 * dead or never serves.
 *
 * Signals (as busybox init): SIGUSR1, SIGUSR2 and SIGPWR power off; SIGTERM
 * and SIGINT (Ctrl-Alt-Del) reboot. Both end QEMU, which runs with
 * -no-reboot. Either way every process gets SIGTERM, then SIGKILL after a
 * grace period, then file systems are synced.
 *
 * Kernel command line: vmux.hostname=NAME sets the host name (default vmux);
 * vmux.pids_limit=N and vmux.mem_max=MIB limit the user's processes, which
 * the agent starts in the cgroup USER_CGROUP (the agent and init stay in
 * the root cgroup, out of reach of a fork bomb or a memory hog);
 * vmux.ro=1 makes the root file system read-only once set up (/tmp, /run,
 * /dev/shm and /workspace stay writable); vmux.net=nat|restricted
 * configures eth0 for QEMU's user network (10.0.2.15/24; with nat a default
 * route via 10.0.2.2 and DNS 10.0.2.3), and vmux.hosts=ADDR=NAME,... adds
 * the host-forwarded allowed names to /etc/hosts;
 * vmux.mounts=TAG:PATH:ro|rw,... mounts the host's shared folders (virtiofs)
 * once the workspace is up; vmux.rescue=ro|rw (vmux rescue) mounts the
 * vmux-rescue disk at /sysroot as the agent's working directory (HOME stays
 * /root on the initramfs, so no dotfile of the disk runs).
 *
 * Disks are told apart by their virtio serial. vmux-root (vmux new --image)
 * is a root file system: init mounts it, moves /dev, /proc and /sys into
 * it, makes vmux's own files (/vmux: the agent and its loader) visible
 * there and chroots into it before anything else, so any x86_64 Linux
 * rootfs runs the same agent with this kernel's modules. vmux-workspace
 * (the host's workspace image) is mounted at /workspace and becomes the agent's
 * --home, so commands and shells start there. At power-off it is synced and
 * unmounted after every process is gone, so the next boot finds it clean.
 */
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "guest/init.h"
#include "proto/proto.h"

/* Agent restarts: the delay doubles from MIN to MAX, and resets once an
 * agent has lived STABLE; at shutdown, SIGTERM comes GRACE before SIGKILL. */
#define BACKOFF_MIN_MS  100
#define BACKOFF_MAX_MS  5000
#define AGENT_STABLE_MS 10000
/* An agent that ends sooner than this after its start cannot serve the
 * socket vmux-init holds for it (agent_listen_drop). */
#define AGENT_QUICK_MS 2000
#define GRACE_MS       2000

static pid_t agent_pid = -1;
static pid_t console_pid = -1; /* the console shell's keeper, or -1 */
static sigset_t init_sigs;
static int workspace_mounted;
static int rescue_mounted;     /* vmux.rescue: RESCUE_DIR is a disk */
static const char *agent_home; /* the agent's --home, or NULL */
static const char *agent_cwd;  /* the agent's --cwd, or NULL */

#define ROOT_DIR       "/newroot"
#define WORKSPACE_DIR  "/workspace"
#define RESCUE_DIR     "/sysroot"
#define WORKSPACE_WAIT 2000 /* ms for the disk node to appear */
#define USER_CGROUP    "/sys/fs/cgroup/vmux-user"

static int user_cgroup_ok;

/* The module that brings AF_VSOCK up: the agent can start once it is in. */
#define VSOCK_TRANSPORT "vmw_vsock_virtio_transport.ko"
static int gate_fd = -1;   /* our end of the early agent's --gate, or -1 */
static int listen_fd = -1; /* the agent's listener (agent_listen), or -1 */
static long long agent_started_ms; /* uptime when the agent last started */

static pid_t agent_start(int gated);

/* Milliseconds since boot (CLOCK_BOOTTIME needs no /proc). */
static long long
uptime_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Print one "vmux-init: ..." line on the console in a single write. */
void
say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	n = snprintf(buf, sizeof buf, "vmux-init: ");
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof buf - 2)
		n = (int)sizeof buf - 2;
	buf[n++] = '\n';
	if (write(2, buf, (size_t)n) < 0) {
		/* Nowhere left to report to. */
	}
}

/*
 * Make sure fds 0-2 are the console. An initramfs built without root has no
 * /dev/console node, so the kernel hands us no fds: mount devtmpfs early.
 */
static void
console_setup(void)
{
	int fd;

	if (fcntl(2, F_GETFD) >= 0)
		return;
	mkdir("/dev", 0755);
	mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755");
	if ((fd = open("/dev/console", O_RDWR | O_NOCTTY)) < 0)
		return;
	dup2(fd, 0);
	dup2(fd, 1);
	dup2(fd, 2);
	if (fd > 2)
		close(fd);
}

/* Is something mounted on dir (another device than its parent's)? */
static int
mounted_on(const char *dir)
{
	char parent[256];
	struct stat a, b;

	snprintf(parent, sizeof parent, "%s/..", dir);
	return stat(dir, &a) == 0 && stat(parent, &b) == 0 &&
	    a.st_dev != b.st_dev;
}

/*
 * Mount one file system, creating the mount point. One already there is
 * kept: proc, devpts and tmpfs would otherwise stack a second instance on
 * top (after an image's root switch, /dev, /proc and /sys came along).
 */
static void
mount_one(const char *src, const char *dst, const char *type,
    unsigned long flags, const char *data, mode_t mode)
{
	if (mkdir(dst, mode) < 0 && errno != EEXIST)
		say("mkdir %s: %s", dst, strerror(errno));
	if (mounted_on(dst))
		return;
	if (mount(src, dst, type, flags, data) < 0 && errno != EBUSY)
		say("mount %s on %s: %s", type, dst, strerror(errno));
}

/* The pseudo file systems every program expects. */
static void
mount_all(void)
{
	const unsigned long nse = MS_NOSUID | MS_NODEV | MS_NOEXEC;

	mount_one("proc", "/proc", "proc", nse, NULL, 0555);
	mount_one("sysfs", "/sys", "sysfs", nse, NULL, 0555);
	mount_one("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755", 0755);
	mount_one("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
	    "gid=5,mode=0620,ptmxmode=0666", 0755);
	mount_one("cgroup2", "/sys/fs/cgroup", "cgroup2", nse, NULL, 0555);
	mount_one("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
	    "mode=1777", 01777);
	mount_one(
	    "tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777", 01777);
	mount_one(
	    "tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755", 0755);

	/* devtmpfs has a ptmx node; fall back to the devpts one. */
	if (access("/dev/ptmx", F_OK) < 0)
		symlink("pts/ptmx", "/dev/ptmx");
	symlink("/proc/self/fd", "/dev/fd");
	symlink("/proc/self/fd/0", "/dev/stdin");
	symlink("/proc/self/fd/1", "/dev/stdout");
	symlink("/proc/self/fd/2", "/dev/stderr");
	mkdir("/root", 0700);
}

/* Read a small file into buf (NUL-terminated); length or -1. */
static ssize_t
read_small(const char *path, char *buf, size_t size)
{
	ssize_t n, done = 0;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	while ((size_t)done < size - 1) {
		n = read(fd, buf + done, size - 1 - (size_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += n;
	}
	close(fd);
	buf[done] = '\0';
	return done;
}

/* Write "text\n" to path unless it exists. */
static void
write_file(const char *path, const char *text)
{
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, text, strlen(text)) < 0 || write(fd, "\n", 1) < 0)
		say("%s: %s", path, strerror(errno));
	close(fd);
}

/*
 * The value of KEY=value on the kernel command line into buf; 0, or -1 if
 * absent.
 */
static int
cmdline_value(const char *key, char *buf, size_t size)
{
	char cmdline[4096], *p, *save;
	size_t klen = strlen(key);

	if (read_small("/proc/cmdline", cmdline, sizeof cmdline) <= 0)
		return -1;
	for (p = strtok_r(cmdline, " \n", &save); p != NULL;
	     p = strtok_r(NULL, " \n", &save)) {
		if (strncmp(p, key, klen) == 0 && p[klen] == '=' &&
		    strlen(p + klen + 1) < size) {
			strcpy(buf, p + klen + 1);
			return 0;
		}
	}
	return -1;
}

/* Write text to a cgroup control file; 0 or -1 (said on the console). */
static int
cgroup_write(const char *file, const char *text)
{
	int fd = open(file, O_WRONLY | O_CLOEXEC), ok;

	if (fd < 0) {
		say("%s: %s", file, strerror(errno));
		return -1;
	}
	ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
	if (!ok)
		say("%s: %s: %s", file, text, strerror(errno));
	close(fd);
	return ok ? 0 : -1;
}

/*
 * The user's cgroup: pids and memory controllers enabled below the root,
 * USER_CGROUP made with the limits from the command line ("max" where none
 * is given). Without it the agent runs commands unconfined and says so.
 */
static void
limits_setup(void)
{
	char pids[32] = "max", mem[32] = "max", v[32];
	long long mb;

	if (cgroup_write(
	        "/sys/fs/cgroup/cgroup.subtree_control", "+pids +memory") < 0)
		return;
	if (mkdir(USER_CGROUP, 0755) < 0 && errno != EEXIST) {
		say("mkdir %s: %s", USER_CGROUP, strerror(errno));
		return;
	}
	if (cmdline_value("vmux.pids_limit", v, sizeof v) == 0 && atoi(v) > 0)
		snprintf(pids, sizeof pids, "%d", atoi(v));
	if (cmdline_value("vmux.mem_max", v, sizeof v) == 0 &&
	    (mb = atoll(v)) > 0)
		snprintf(mem, sizeof mem, "%lld", mb * 1024 * 1024);
	if (cgroup_write(USER_CGROUP "/pids.max", pids) < 0 ||
	    cgroup_write(USER_CGROUP "/memory.max", mem) < 0)
		return;
	cgroup_write(USER_CGROUP "/memory.swap.max", "0");
	user_cgroup_ok = 1;
	say("limits: pids %s, memory %s", pids, mem);
}

/* Set one IPv4 address ioctl (SIOCSIFADDR, SIOCSIFNETMASK) on ifr. */
static int
set_addr(int s, struct ifreq *ifr, unsigned long req, const char *addr)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr->ifr_addr;

	memset(sin, 0, sizeof *sin);
	sin->sin_family = AF_INET;
	if (inet_pton(AF_INET, addr, &sin->sin_addr) != 1)
		return -1;
	return ioctl(s, req, ifr);
}

/* Append the allowed hosts (vmux.hosts=ADDR=NAME,...) to /etc/hosts. */
static void
hosts_add(void)
{
	char v[2048], *p, *save, *eq, line[320];
	int fd;

	if (cmdline_value("vmux.hosts", v, sizeof v) != 0)
		return;
	if ((fd = open("/etc/hosts", O_WRONLY | O_APPEND | O_CLOEXEC)) < 0) {
		say("/etc/hosts: %s", strerror(errno));
		return;
	}
	for (p = strtok_r(v, ",", &save); p != NULL;
	     p = strtok_r(NULL, ",", &save)) {
		if ((eq = strchr(p, '=')) == NULL)
			continue;
		*eq = '\0';
		snprintf(line, sizeof line, "%s\t%s\n", p, eq + 1);
		if (write(fd, line, strlen(line)) < 0)
			say("/etc/hosts: %s", strerror(errno));
	}
	close(fd);
}

/*
 * With vmux.net=: bring eth0 up on QEMU's user network. Only "nat" gets a
 * default route and a resolver: on a restricted network the allowed hosts
 * are on the local /24 and everything else is unreachable at once.
 */
static void
net_up(void)
{
	struct rtentry rt;
	struct ifreq ifr;
	char mode[16];
	int s;

	if (cmdline_value("vmux.net", mode, sizeof mode) != 0)
		return;
	if ((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0) {
		say("eth0: socket: %s", strerror(errno));
		return;
	}
	memset(&ifr, 0, sizeof ifr);
	strcpy(ifr.ifr_name, "eth0");
	if (set_addr(s, &ifr, SIOCSIFADDR, "10.0.2.15") < 0 ||
	    set_addr(s, &ifr, SIOCSIFNETMASK, "255.255.255.0") < 0 ||
	    ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
		say("eth0: %s", strerror(errno));
		close(s);
		return;
	}
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0) {
		say("eth0 up: %s", strerror(errno));
		close(s);
		return;
	}
	if (strcmp(mode, "nat") == 0) {
		struct sockaddr_in *gw = (struct sockaddr_in *)&rt.rt_gateway;
		memset(&rt, 0, sizeof rt);
		rt.rt_dst.sa_family = AF_INET;
		rt.rt_genmask.sa_family = AF_INET;
		gw->sin_family = AF_INET;
		inet_pton(AF_INET, "10.0.2.2", &gw->sin_addr);
		rt.rt_flags = RTF_UP | RTF_GATEWAY;
		if (ioctl(s, SIOCADDRT, &rt) < 0)
			say("default route: %s", strerror(errno));
		write_file("/etc/resolv.conf", "nameserver 10.0.2.3");
	}
	close(s);
	hosts_add();
	say("eth0 up (%s)", mode);
}

/* mkdir -p for a mount point; 0 or -1. */
static int
mkdirs(const char *path)
{
	char buf[256], *p;

	if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
		return -1;
	for (p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

/* Mount the host's shared folders listed in vmux.mounts=. */
static void
mounts_up(void)
{
	char v[2048], *p, *save, *path, *mode;

	if (cmdline_value("vmux.mounts", v, sizeof v) != 0)
		return;
	for (p = strtok_r(v, ",", &save); p != NULL;
	     p = strtok_r(NULL, ",", &save)) {
		if ((path = strchr(p, ':')) == NULL ||
		    (mode = strchr(path + 1, ':')) == NULL)
			continue;
		*path++ = '\0';
		*mode++ = '\0';
		if (mkdirs(path) < 0) {
			say("mount %s: mkdir %s: %s", p, path, strerror(errno));
			continue;
		}
		if (mount(p, path, "virtiofs",
		        MS_NOSUID | MS_NODEV |
		            (strcmp(mode, "ro") == 0 ? MS_RDONLY : 0),
		        NULL) < 0)
			say("mount %s on %s: %s", p, path, strerror(errno));
		else
			say("%s mounted on %s (%s)", p, path, mode);
	}
}

/* With vmux.ro=1: remount / read-only (after everything was written). */
static void
root_readonly(void)
{
	char v[8];

	if (cmdline_value("vmux.ro", v, sizeof v) != 0 || strcmp(v, "1") != 0)
		return;
	if (mount(NULL, "/", NULL, MS_REMOUNT | MS_RDONLY, NULL) < 0)
		say("read-only root: %s", strerror(errno));
	else
		say("root file system read-only");
}

/* Host name from vmux.hostname= on the kernel command line, else "vmux". */
static void
set_hostname(void)
{
	char cmdline[4096], name[65] = "vmux", *p, hosts[256];
	size_t len;

	if (read_small("/proc/cmdline", cmdline, sizeof cmdline) > 0) {
		for (p = strtok(cmdline, " \n"); p != NULL;
		     p = strtok(NULL, " \n")) {
			if (strncmp(p, "vmux.hostname=", 14) != 0)
				continue;
			len = strlen(p + 14);
			if (len > 0 && len < sizeof name)
				memcpy(name, p + 14, len + 1);
		}
	}
	if (sethostname(name, strlen(name)) < 0)
		say("sethostname %s: %s", name, strerror(errno));

	/* Resolvers want their own name in /etc/hosts. */
	mkdir("/etc", 0755);
	write_file("/etc/hostname", name);
	snprintf(hosts, sizeof hosts,
	    "127.0.0.1\tlocalhost\n::1\tlocalhost\n127.0.1.1\t%s", name);
	write_file("/etc/hosts", hosts);
}

/* Does the kernel command line have KEY=...? */
static int
cmdline_has(const char *key)
{
	char v[4096];

	return cmdline_value(key, v, sizeof v) == 0;
}

/*
 * Is there a virtio device of type id (the spec's device ID: 3 console,
 * 4 entropy)? Asked once virtio_mmio has bound the machine's devices, which
 * it does while it loads.
 */
static int
virtio_present(long id)
{
	char path[300], buf[32];
	struct dirent *e;
	DIR *d;
	int found = 0;

	if ((d = opendir("/sys/bus/virtio/devices")) == NULL)
		return 0;
	while (!found && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/sys/bus/virtio/devices/%s/device",
		    e->d_name);
		if (read_small(path, buf, sizeof buf) > 0 &&
		    strtol(buf, NULL, 0) == id)
			found = 1;
	}
	closedir(d);
	return found;
}

/*
 * Should a vmux.load line's module load? Its keys (a comma list after the
 * name, or none) say what needs it: a command line word (vmux.net for the
 * NIC's driver, vmux.mounts for virtiofs) or a virtio device ("virtio:3",
 * a console QEMU was given). Unneeded drivers cost boot time. The line is
 * cut to the module's file name.
 */
static int
module_wanted(char *line)
{
	char *keys = strchr(line, ' '), *key, *save;

	if (keys == NULL)
		return 1;
	*keys++ = '\0';
	for (key = strtok_r(keys, ",", &save); key != NULL;
	     key = strtok_r(NULL, ",", &save)) {
		if (strncmp(key, "virtio:", 7) == 0
		        ? virtio_present(strtol(key + 7, NULL, 10))
		        : cmdline_has(key))
			return 1;
	}
	return 0;
}

/* Keep line ("NAME.ko [KEYS]") among the three slowest loads so far. */
static void
note_slow(
    char slow[3][64], long long slow_ms[3], const char *line, long long ms)
{
	int i = 3;
	size_t n = strcspn(line, ". ");

	while (i > 0 && ms > slow_ms[i - 1])
		i--;
	if (i == 3)
		return;
	memmove(&slow[i + 1], &slow[i], (size_t)(2 - i) * sizeof slow[0]);
	memmove(
	    &slow_ms[i + 1], &slow_ms[i], (size_t)(2 - i) * sizeof slow_ms[0]);
	snprintf(slow[i], sizeof slow[i], "%.*s %lld ms",
	    (int)(n < 40 ? n : 40), line, ms);
	slow_ms[i] = ms;
}

/*
 * Listen on the agent's vsock port for it, once the transport is in. The
 * socket stays open here and each agent started gets it (--listen-fd): a
 * connection made while the agent is still loading, or restarting, is
 * queued by the kernel, where before it was refused and the host had to
 * back off and retry (socket activation, as systemd does it). No agent, no
 * listener: the host must see "refused", not a connection nobody serves;
 * for the same reason the socket is given up when an agent cannot run or
 * ends at once (agent_listen_drop). On failure the agent listens by
 * itself, as it always could. Kept at fd 3 or above, where --listen-fd
 * expects it even if the console left 0-2 free.
 */
static void
agent_listen(void)
{
	int fd;

	if (listen_fd >= 0 || access(VMUX_AGENT_PATH, F_OK) < 0)
		return;
	if ((fd = vsock_listen(VMUX_AGENT_PORT)) < 0) {
		say("agent: listen on vsock port %d: %s", VMUX_AGENT_PORT,
		    strerror(-fd));
		return;
	}
	if (fd < 3) {
		int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		close(fd);
		if (high < 0) {
			say("agent: listener: %s", strerror(errno));
			return;
		}
		fd = high;
	}
	listen_fd = fd;
}

/*
 * Stop holding the agent's port: an agent that cannot be started, or that
 * ends at once (one that does not know --listen-fd, a broken build), would
 * leave the host's connections queued with nobody to serve them until
 * their deadlines. The next agent listens by itself, and while none does
 * the host is refused and retries, as before vmux-init held the port.
 */
static void
agent_listen_drop(const char *why)
{
	if (listen_fd < 0)
		return;
	say("agent: %s; the next agent listens by itself", why);
	close(listen_fd);
	listen_fd = -1;
}

/*
 * Start the agent now, behind its gate (agent/gate.c): its own
 * start-up then overlaps the rest of the boot and it listens before the
 * workspace is mounted; vmux-init opens the gate when it has finished
 * (gate_open). Not when the root is about to switch to an image's disk: the
 * agent would keep the initramfs as its root.
 */
static void
agent_early(void)
{
	if (agent_pid >= 0 || cmdline_has("vmux.root") ||
	    access(VMUX_AGENT_PATH, F_OK) < 0)
		return;
	if ((agent_pid = agent_start(1)) < 0)
		agent_listen_drop("it did not start");
}

/*
 * Load the modules listed, in dependency order, in
 * /lib/modules/<release>/vmux.load (written when the image was built),
 * those a session needs only when its command line says it does. A
 * failure is reported and the rest still load. Returns whether the vsock
 * transport was loaded here (else it is built in, or there is none).
 */
static int
load_modules(void)
{
	struct utsname u;
	char dir[300], list[8192], path[600], *line, *save;
	char slow[3][64] = {"", "", ""}; /* the slowest three, "NAME MS" */
	long long slow_ms[3] = {-1, -1, -1};
	int fd, loaded = 0, failed = 0, transport = 0;
	long long t0 = uptime_ms(), t1;

	if (uname(&u) < 0)
		return 0;
	snprintf(dir, sizeof dir, "/lib/modules/%s", u.release);
	snprintf(path, sizeof path, "%s/vmux.load", dir);
	if (read_small(path, list, sizeof list) < 0) {
		if (errno == ENOENT) /* vmux's own kernel: all built in */
			say("no modules to load");
		else
			say("module list %s: %s", path, strerror(errno));
		return 0;
	}
	for (line = strtok_r(list, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		if (*line == '\0' || *line == '#' || !module_wanted(line))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, line);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
			say("module %s: %s", line, strerror(errno));
			failed++;
			continue;
		}
		t1 = uptime_ms();
		if (syscall(SYS_finit_module, fd, "", 0) < 0 &&
		    errno != EEXIST) {
			say("module %s: %s", line, strerror(errno));
			failed++;
		} else {
			loaded++;
			if (strcmp(line, VSOCK_TRANSPORT) == 0) {
				transport = 1;
				agent_listen();
				agent_early();
			}
		}
		close(fd);
		note_slow(slow, slow_ms, line, uptime_ms() - t1);
	}
	if (failed != 0)
		say("%d modules loaded, %d FAILED (%lld ms; slowest %s, %s, "
		    "%s)",
		    loaded, failed, uptime_ms() - t0, slow[0], slow[1],
		    slow[2]);
	else if (loaded > 0)
		say("%d modules loaded (%lld ms; slowest %s, %s, %s)", loaded,
		    uptime_ms() - t0, slow[0], slow[1], slow[2]);
	else
		say("0 modules loaded (%lld ms)", uptime_ms() - t0);
	return transport;
}

/* Bring the loopback interface up (the kernel then adds 127.0.0.1, ::1). */
static void
loopback_up(void)
{
	struct ifreq ifr;
	int s;

	if ((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0) {
		say("lo: socket: %s", strerror(errno));
		return;
	}
	memset(&ifr, 0, sizeof ifr);
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		if (ioctl(s, SIOCSIFFLAGS, &ifr) == 0) {
			close(s);
			return;
		}
	}
	say("lo: %s", strerror(errno));
	close(s);
}

/*
 * Make /workspace root's home in /etc/passwd too: shells and tools that
 * look the home up there (busybox's prompt shows ~ from it) agree with
 * HOME. Only the root line's sixth field changes.
 */
static void
passwd_home(void)
{
	char buf[8192], out[8400], *line, *save, *f[8], *p;
	size_t used = 0;
	int n, fd;

	if (read_small("/etc/passwd", buf, sizeof buf) <= 0)
		return;
	for (line = strtok_r(buf, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		const char *text = line;
		char fixed[1024];
		if (strncmp(line, "root:", 5) == 0) {
			for (n = 0, p = line; n < 7 && p != NULL; n++) {
				f[n] = p;
				if ((p = strchr(p, ':')) != NULL)
					*p++ = '\0';
			}
			if (n == 7 &&
			    snprintf(fixed, sizeof fixed,
			        "%s:%s:%s:%s:%s:%s:%s", f[0], f[1], f[2], f[3],
			        f[4], WORKSPACE_DIR, f[6]) < (int)sizeof fixed)
				text = fixed;
		}
		n = snprintf(out + used, sizeof out - used, "%s\n", text);
		if (n < 0 || (size_t)n >= sizeof out - used)
			return; /* too big to be ours to rewrite */
		used += (size_t)n;
	}
	fd = open(
	    "/etc/passwd.vmux", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, out, used) == (ssize_t)used && close(fd) == 0)
		rename("/etc/passwd.vmux", "/etc/passwd");
	else {
		close(fd);
		unlink("/etc/passwd.vmux");
	}
}

/*
 * The /dev node of the virtio disk whose serial is want, into buf; 0, or
 * -1 if there is none (after waiting a moment for it to appear).
 */
static int
disk_by_serial(const char *want, char *buf, size_t size)
{
	long long t0 = uptime_ms();
	char path[128], serial[64];
	int i;

	for (;;) {
		for (i = 0; i < 26; i++) {
			snprintf(path, sizeof path, "/sys/block/vd%c/serial",
			    'a' + i);
			if (read_small(path, serial, sizeof serial) < 0)
				continue;
			serial[strcspn(serial, "\n")] = '\0';
			if (strcmp(serial, want) != 0)
				continue;
			snprintf(buf, size, "/dev/vd%c", 'a' + i);
			if (access(buf, F_OK) == 0)
				return 0;
		}
		if (uptime_ms() - t0 >= WORKSPACE_WAIT)
			return -1;
		usleep(10 * 1000);
	}
}

/*
 * With vmux.root=1: mount the vmux-root disk and make it the root. /dev,
 * /proc and /sys move into it; /vmux (the agent) is bind-mounted from the
 * initramfs. A failure is said and the guest stays on the initramfs,
 * perhaps without what was moved before it (main mounts that again).
 */
static void
root_switch(void)
{
	char dev[32], v[8];

	if (cmdline_value("vmux.root", v, sizeof v) != 0)
		return; /* no image: the guest stays on the initramfs */
	if (disk_by_serial("vmux-root", dev, sizeof dev) < 0) {
		say("root: no vmux-root disk");
		return;
	}
	mkdir(ROOT_DIR, 0755);
	if (mount(dev, ROOT_DIR, "ext4", MS_NOATIME, NULL) < 0) {
		say("root: mount %s: %s", dev, strerror(errno));
		return;
	}
	mkdir(ROOT_DIR VMUX_GUEST_DIR, 0755);
	if (mount(VMUX_GUEST_DIR, ROOT_DIR VMUX_GUEST_DIR, NULL, MS_BIND,
	        NULL) < 0) {
		say("root: bind %s: %s", VMUX_GUEST_DIR, strerror(errno));
		umount2(ROOT_DIR, MNT_DETACH);
		return;
	}
	mkdir(ROOT_DIR "/dev", 0755);
	mkdir(ROOT_DIR "/proc", 0555);
	mkdir(ROOT_DIR "/sys", 0555);
	if (mount("/dev", ROOT_DIR "/dev", NULL, MS_MOVE, NULL) < 0 ||
	    mount("/proc", ROOT_DIR "/proc", NULL, MS_MOVE, NULL) < 0 ||
	    mount("/sys", ROOT_DIR "/sys", NULL, MS_MOVE, NULL) < 0 ||
	    chdir(ROOT_DIR) < 0 || mount(".", "/", NULL, MS_MOVE, NULL) < 0 ||
	    chroot(".") < 0 || chdir("/") < 0) {
		say("root: switch: %s", strerror(errno));
		return;
	}
	say("root is %s (the session's image)", dev);
}

/*
 * Mount the workspace disk at /workspace if the VM has one. The journal is
 * replayed here when the last run did not unmount (QEMU killed); a disk
 * that will not mount is reported and the guest runs without it.
 */
static void
workspace_mount(void)
{
	long long t0 = uptime_ms();
	char dev[32];

	if (disk_by_serial("vmux-workspace", dev, sizeof dev) < 0)
		return; /* no disk: a VM without a workspace */
	if (mkdir(WORKSPACE_DIR, 0755) < 0 && errno != EEXIST)
		say("mkdir %s: %s", WORKSPACE_DIR, strerror(errno));
	if (mount(dev, WORKSPACE_DIR, "ext4", MS_NOATIME,
	        "errors=remount-ro,noinit_itable") < 0) {
		say("workspace: mount %s: %s", dev, strerror(errno));
		return;
	}
	workspace_mounted = 1;
	agent_home = WORKSPACE_DIR;
	passwd_home();
	say("workspace mounted (%lld ms)", uptime_ms() - t0);
}

/* Sync and unmount the disk at dir, called what (all processes are gone). */
static void
disk_unmount(const char *dir, const char *what)
{
	long long deadline = uptime_ms() + 1000;

	sync();
	for (;;) { /* killed processes may still be letting go of files */
		if (umount2(dir, 0) == 0) {
			say("%s unmounted", what);
			return;
		}
		if (errno != EBUSY || uptime_ms() >= deadline)
			break;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		usleep(20 * 1000);
	}
	say("%s: umount: %s; remounting read-only", what, strerror(errno));
	if (mount(NULL, dir, NULL, MS_REMOUNT | MS_RDONLY, NULL) < 0)
		say("%s: remount: %s", what, strerror(errno));
}

/*
 * With vmux.rescue=ro|rw (vmux rescue): mount the vmux-rescue disk, a
 * stopped session's workspace or an image being repaired, at RESCUE_DIR
 * (read-only unless rw, and then without replaying its journal, so looking
 * changes nothing) and make it the agent's working directory. The root and
 * HOME stay vmux's own initramfs: nothing of the disk runs, not even its
 * .profile (a broken one is often why it is being rescued).
 */
static void
rescue_mount(void)
{
	char dev[32], v[8];
	unsigned long flags = MS_NOATIME;
	int rw;

	if (cmdline_value("vmux.rescue", v, sizeof v) != 0)
		return;
	rw = strcmp(v, "rw") == 0;
	if (disk_by_serial("vmux-rescue", dev, sizeof dev) < 0) {
		say("rescue: no vmux-rescue disk");
		return;
	}
	if (!rw)
		flags |= MS_RDONLY;
	mkdir(RESCUE_DIR, 0755);
	if (mount(dev, RESCUE_DIR, "ext4", flags, rw ? NULL : "noload") < 0) {
		say("rescue: mount %s: %s", dev, strerror(errno));
		return;
	}
	rescue_mounted = 1;
	agent_cwd = RESCUE_DIR;
	say("rescue: %s mounted %s at %s", dev, rw ? "read-write" : "read-only",
	    RESCUE_DIR);
}

/* Close both ends of a gate that will not be used (-1s are skipped). */
static void
gate_close(int g[2])
{
	if (g[0] >= 0)
		close(g[0]);
	if (g[1] >= 0)
		close(g[1]);
}

/*
 * Open the early agent's gate: send its home, the user's cgroup and its
 * working directory (a line each, empty for none) and close, which lets it
 * serve. If it has died
 * meanwhile, the send fails quietly and the main loop starts a new one.
 */
static void
gate_open(void)
{
	char msg[256];
	int len;

	if (gate_fd < 0)
		return;
	len = snprintf(msg, sizeof msg, "%s\n%s\n%s\n",
	    agent_home != NULL ? agent_home : "",
	    user_cgroup_ok ? USER_CGROUP : "",
	    agent_cwd != NULL ? agent_cwd : "");
	if (send(gate_fd, msg, (size_t)len, MSG_NOSIGNAL) != len)
		say("agent: gate: %s", strerror(errno));
	close(gate_fd);
	gate_fd = -1;
}

/*
 * Start the agent through vmux's own loader so it runs whatever libc the
 * root file system has (or none). Returns the pid, or -1 if exec failed
 * (reported through a close-on-exec pipe, so "started" means exec'd).
 */
static pid_t
agent_start(int gated)
{
	char *argv[16], gate_arg[16], listen_arg[16], nofile[24];
	int argc = 0;
	const char *prog = VMUX_GUEST_LOADER;
	int p[2], g[2] = {-1, -1}, err = 0, fd, direct = 0;
	pid_t pid;
	ssize_t n;

	argv[argc++] = (char *)VMUX_GUEST_LOADER;
	argv[argc++] = (char *)VMUX_AGENT_PATH;
	if (gated) { /* home and cgroup come through the gate */
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, g) < 0) {
			say("agent: socketpair: %s", strerror(errno));
			return -1;
		}
		snprintf(gate_arg, sizeof gate_arg, "%d", g[1]);
		argv[argc++] = "--gate";
		argv[argc++] = gate_arg;
	} else {
		if (agent_home != NULL) {
			argv[argc++] = "--home";
			argv[argc++] = (char *)agent_home;
		}
		if (agent_cwd != NULL) {
			argv[argc++] = "--cwd";
			argv[argc++] = (char *)agent_cwd;
		}
	}
	if (!gated && user_cgroup_ok) {
		argv[argc++] = "--cgroup";
		argv[argc++] = (char *)USER_CGROUP;
	}
	/* vmux.nofile: the open-file limit of what the agent starts (its own
	 * stays what it needs) */
	if (cmdline_value("vmux.nofile", nofile, sizeof nofile) == 0 &&
	    atoll(nofile) > 0) {
		argv[argc++] = "--nofile";
		argv[argc++] = nofile;
	}
	/* an OCI image's Env, WorkingDir and User (session/image-oci.c) */
	if (!gated && !rescue_mounted && access("/.vmux-image", R_OK) == 0) {
		argv[argc++] = "--image-config";
		argv[argc++] = "/.vmux-image";
	}
	if (listen_fd >= 0) {
		snprintf(listen_arg, sizeof listen_arg, "%d", listen_fd);
		argv[argc++] = "--listen-fd";
		argv[argc++] = listen_arg;
	}
	argv[argc] = NULL;
	if (access(VMUX_GUEST_LOADER, X_OK) < 0)
		direct = 1; /* a static agent needs no loader */
	if (direct)
		prog = VMUX_AGENT_PATH;
	if (pipe2(p, O_CLOEXEC) < 0) {
		say("agent: pipe: %s", strerror(errno));
		gate_close(g);
		return -1;
	}
	if ((pid = fork()) < 0) {
		say("agent: fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		gate_close(g);
		return -1;
	}
	if (pid == 0) {
		sigprocmask(SIG_UNBLOCK, &init_sigs, NULL);
		if (gated && fcntl(g[1], F_SETFD, 0) < 0)
			_exit(127);
		if (listen_fd >= 0 && fcntl(listen_fd, F_SETFD, 0) < 0)
			_exit(127);
		setsid();
		if ((fd = open("/dev/null", O_RDONLY)) >= 0) {
			dup2(fd, 0);
			if (fd != 0)
				close(fd);
		}
		execv(prog, direct ? argv + 1 : argv);
		err = errno;
		if (write(p[1], &err, sizeof err) < 0) {
			/* The parent sees EOF and believes exec worked. */
		}
		_exit(127);
	}
	close(p[1]);
	do
		n = read(p[0], &err, sizeof err);
	while (n < 0 && errno == EINTR);
	close(p[0]);
	if (n == (ssize_t)sizeof err) {
		say("agent: exec %s: %s", prog, strerror(err));
		waitpid(pid, NULL, 0);
		gate_close(g);
		return -1;
	}
	if (gated) {
		close(g[1]);
		gate_fd = g[0];
	}
	agent_started_ms = uptime_ms();
	say("agent started (pid %d, uptime %lld ms%s)", (int)pid,
	    agent_started_ms, gated ? ", serving once set up" : "");
	return pid;
}

/* Describe how a child ended, for the console. */
void
describe_exit(int status, char *buf, size_t size)
{
	if (WIFEXITED(status))
		snprintf(buf, size, "exited %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, size, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(buf, size, "status %#x", status);
}

/*
 * Reap every dead child; returns 1 if the agent was among them. A console
 * shell keeper that died is started again at once.
 */
static int
reap(void)
{
	char how[64];
	int status, agent_died = 0;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid == console_pid) {
			describe_exit(status, how, sizeof how);
			say("console shell keeper %s; starting it again", how);
			console_pid = console_shell_start();
			continue;
		}
		if (pid != agent_pid)
			continue;
		describe_exit(status, how, sizeof how);
		say("agent (pid %d) %s", (int)pid, how);
		agent_pid = -1;
		agent_died = 1;
	}
	return agent_died;
}

/* When to try the agent again; doubles the delay for next time. */
static long long
backoff_next(int *backoff)
{
	long long at = uptime_ms() + *backoff;

	say("restarting agent in %d ms", *backoff);
	*backoff =
	    *backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : *backoff * 2;
	return at;
}

/* Stop everything and power off or reboot; never returns. */
static void __attribute__((noreturn)) shutdown_now(int cmd)
{
	long long deadline;
	pid_t pid;

	say("%s", cmd == RB_POWER_OFF ? "powering off" : "rebooting");
	kill(-1, SIGTERM);
	deadline = uptime_ms() + GRACE_MS;
	for (;;) {
		pid = waitpid(-1, NULL, WNOHANG);
		if (pid > 0)
			continue;
		if (pid < 0 && errno == ECHILD)
			break; /* everyone is gone */
		if (uptime_ms() >= deadline)
			break;
		usleep(20 * 1000);
	}
	kill(-1, SIGKILL);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	sync();
	if (workspace_mounted)
		disk_unmount(WORKSPACE_DIR, "workspace");
	if (rescue_mounted)
		disk_unmount(RESCUE_DIR, "rescue disk");
	reboot(cmd);
	say("reboot: %s", strerror(errno));
	for (;;)
		pause();
}

/*
 * Never an OOM victim (the kernel spares PID 1 anyway; the value is also
 * what the agent inherits, and the agent resets it to 0 for everything it
 * starts).
 */
static void
oom_exempt(void)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);

	if (fd < 0 || write(fd, "-1000", 5) != 5)
		say("oom_score_adj: %s", strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* PID 1: set the guest up, then supervise the agent until told to stop. */
int
main(void)
{
	struct timespec ts, *timeout;
	long long next_start = 0, started_at = 0;
	int backoff = BACKOFF_MIN_MS, sig, have_agent, said_start = 0;

	console_setup();
	say("start (uptime %lld ms)", uptime_ms());
	if (getpid() != 1) {
		say("must run as PID 1");
		return 1;
	}

	/* Signals are taken synchronously in the loop below. */
	sigemptyset(&init_sigs);
	sigaddset(&init_sigs, SIGCHLD);
	sigaddset(&init_sigs, SIGTERM);
	sigaddset(&init_sigs, SIGINT);
	sigaddset(&init_sigs, SIGUSR1);
	sigaddset(&init_sigs, SIGUSR2);
	sigaddset(&init_sigs, SIGPWR);
	sigaddset(&init_sigs, SIGHUP);
	sigprocmask(SIG_BLOCK, &init_sigs, NULL);
	reboot(RB_DISABLE_CAD); /* Ctrl-Alt-Del becomes SIGINT */

	umask(022);
	if (chdir("/") < 0)
		say("chdir /: %s", strerror(errno));
	mount_all();
	oom_exempt();
	setenv("PATH",
	    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
	    "/sbin:/bin:" VMUX_GUEST_DIR "/bin",
	    1);
	setenv("HOME", "/root", 1);
	setenv("TERM", "xterm-256color", 1);
	if (!load_modules()) { /* vsock built in (or none): the port now */
		agent_listen();
		agent_early();
	}
	root_switch();
	/* in the image's root: /tmp and /run; after a switch that failed
	 * half-way: what it moved away; else nothing (mount_one keeps what
	 * is there) */
	mount_all();
	/* from here on, in the root it will have; before what may hang */
	console_pid = console_shell_start();
	set_hostname();
	loopback_up();
	workspace_mount();
	rescue_mount();
	limits_setup();
	net_up();
	mounts_up();
	root_readonly();
	gate_open();
	say("setup done (uptime %lld ms)", uptime_ms());

	have_agent = access(VMUX_AGENT_PATH, F_OK) == 0;
	if (!have_agent)
		say("no agent at %s", VMUX_AGENT_PATH);

	for (;;) {
		if (have_agent && agent_pid < 0 && uptime_ms() >= next_start) {
			started_at = uptime_ms();
			if ((agent_pid = agent_start(0)) < 0) {
				agent_listen_drop("it did not start");
				next_start = backoff_next(&backoff);
			} else if (!said_start) {
				/* bench/run reads the steps */
				say("agent started (uptime %lld ms)",
				    started_at);
				said_start = 1;
			}
		}

		timeout = NULL;
		if (have_agent && agent_pid < 0) {
			long long wait = next_start - uptime_ms();
			if (wait < 0)
				wait = 0;
			ts.tv_sec = wait / 1000;
			ts.tv_nsec = (wait % 1000) * 1000000;
			timeout = &ts;
		}
		sig = sigtimedwait(&init_sigs, NULL, timeout);
		if (sig < 0)
			continue; /* timeout or EINTR */

		switch (sig) {
		case SIGCHLD:
			if (!reap())
				break;
			if (uptime_ms() - agent_started_ms < AGENT_QUICK_MS)
				agent_listen_drop("it ended at once");
			if (uptime_ms() - started_at >= AGENT_STABLE_MS)
				backoff = BACKOFF_MIN_MS;
			next_start = backoff_next(&backoff);
			break;
		case SIGUSR1:
		case SIGUSR2:
		case SIGPWR:
			shutdown_now(RB_POWER_OFF);
		case SIGTERM:
		case SIGINT:
			shutdown_now(RB_AUTOBOOT);
		default:
			break; /* SIGHUP: nothing to reload */
		}
	}
}
