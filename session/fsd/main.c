/*
 * main.c: vmux-fsd, the jail one virtiofsd runs in for one --mount folder.
 *
 *   vmux-fsd --socket-path=SOCK --root=ROOT --dir=DIR [--ro] -- VIRTIOFSD
 *
 * A guest is hostile and virtiofsd does what guest root asks, so it must
 * not run as host root. vmux-fsd (as root):
 *  1. opens DIR beneath ROOT following no symlink (beneath.c), so what is
 *     served is what was checked, whatever was swapped since;
 *  2. clones that directory as a detached mount (read-only, nosuid, nodev
 *     for --ro; nosuid, nodev otherwise) while still privileged, so the
 *     flags are locked for the namespace below;
 *  3. binds the vhost-user socket at SOCK.part (QEMU looks at SOCK only);
 *  4. forks a child that enters a private mount namespace, mounts the clone
 *     on a small tmpfs at /mnt/vmux-fsd (or /tmp/...), then a user
 *     namespace where uid and gid 0 are the folder's owner
 *     (beneath_owner): guest root acts on the host as that user, cannot
 *     make device nodes, and its setuid files are that user's;
 *  5. execs VIRTIOFSD --fd=N -o source=THAT -o cache=auto (no user string
 *     reaches virtiofsd's option syntax) under a seccomp filter that
 *     refuses every mode with a setuid or setgid bit (chmod, create,
 *     mkdir, mknod): no host user can gain the owner's ids through a file
 *     a guest made;
 *  6. relays virtiofsd's messages to its own stderr (vmux's log) and, once
 *     virtiofsd says it waits for QEMU, renames SOCK.part to SOCK, so vmux's
 *     readiness wait still means "virtiofsd is serving";
 *  7. passes SIGTERM, SIGINT and SIGHUP on and exits as virtiofsd did
 *     (vmux finds this process by SOCK in its command line).
 * A refusal or setup failure is one line "vmux-fsd: ..." and exit 1; a bad
 * command line exit 2.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"

/* virtiofsd's line once it is ready for QEMU (QEMU 7.2's, at log level
 * info, the default). */
#define FSD_READY_LINE "Waiting for vhost-user socket connection"

static pid_t fsd_child = -1;
static sigset_t fsd_oldmask; /* the mask before vmux-fsd blocked signals */

/* One line on stderr, exit status. */
static __attribute__((noreturn, format(printf, 2, 3))) void
die(int status, const char *fmt, ...)
{
	va_list ap;

	fputs("vmux-fsd: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(status);
}

/* Pass a stopping signal on to virtiofsd. */
static void
fsd_forward(int sig)
{
	if (fsd_child > 0)
		kill(fsd_child, sig);
}

/* Write s to /proc/pid/what; 0 or -1. */
static int
write_proc(pid_t pid, const char *what, const char *s)
{
	char path[64];
	int fd, rc;

	snprintf(path, sizeof path, "/proc/%ld/%s", (long)pid, what);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		return -1;
	rc = write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -1;
	close(fd);
	return rc;
}

/* Bind and listen on a fresh socket at path; the descriptor. */
static int
listen_at(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof sa.sun_path)
		die(1, "socket path too long: %s", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
	    chmod(path, 0600) != 0 || listen(fd, 1) != 0)
		die(1, "socket %s: %s", path, strerror(errno));
	return fd;
}

/* What the relay copies to the log at most (a guest can make it chatty). */
#define FSD_LOG_MAX (4 * 1024 * 1024)

/* A BPF step: refuse syscall sysno (EPERM) when argument arg has mode
 * bits S_ISUID or S_ISGID. Five instructions. */
#define DENY_SUID_ARG(sysno, arg)                                              \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)), \
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (sysno), 0, 3),                \
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS,                                 \
	        offsetof(struct seccomp_data, args[arg])),                     \
	    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, S_ISUID | S_ISGID, 0, 1),     \
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)

#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452 /* Linux 6.6; older headers lack it */
#endif

/*
 * No file virtiofsd makes or changes may get a setuid or setgid bit: every
 * syscall that takes a mode is refused with EPERM when the mode has one
 * (glibc passes 0 where no mode applies); openat2, whose mode hides in a
 * struct, is refused as missing. virtiofsd's own filter stacks on this.
 */
static void
deny_setid_modes(void)
{
	struct sock_filter f[] = {
	    BPF_STMT(
	        BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	    DENY_SUID_ARG(__NR_chmod, 1),
	    DENY_SUID_ARG(__NR_fchmod, 1),
	    DENY_SUID_ARG(__NR_fchmodat, 2),
	    DENY_SUID_ARG(__NR_fchmodat2, 2),
	    DENY_SUID_ARG(__NR_open, 2),
	    DENY_SUID_ARG(__NR_openat, 3),
	    DENY_SUID_ARG(__NR_creat, 1),
	    DENY_SUID_ARG(__NR_mkdir, 1),
	    DENY_SUID_ARG(__NR_mkdirat, 2),
	    DENY_SUID_ARG(__NR_mknod, 1),
	    DENY_SUID_ARG(__NR_mknodat, 2),
	    BPF_STMT(
	        BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat2, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = nitems(f), .filter = f};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
		die(1, "cannot install the mode filter: %s", strerror(errno));
}

/* A detached copy of directory dirfd's mount, flags set and locked. */
static int
clone_tree(int dirfd, int ro)
{
	struct mount_attr attr = {0};
	int tree;

	tree = open_tree(dirfd, "",
	    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
	if (tree < 0)
		die(1, "cannot clone the folder's mount: %s", strerror(errno));
	attr.attr_set =
	    MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (ro ? MOUNT_ATTR_RDONLY : 0);
	if (mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
	        sizeof attr) != 0)
		die(1, "cannot set the folder's mount flags: %s",
		    strerror(errno));
	return tree;
}

/* Where the folder is mounted in the child's namespace. */
static const char *
stage_dir(void)
{
	struct stat st;

	return stat("/mnt", &st) == 0 && S_ISDIR(st.st_mode) ? "/mnt" : "/tmp";
}

/*
 * The child: mount the clone, become guest-root-as-owner, exec virtiofsd.
 * sync_rd/sync_wr talk to the parent, which writes the id maps.
 */
static __attribute__((noreturn)) void
child(int tree, int lfd, int sync_wr, int sync_rd, char **vfs)
{
	/* Opened while privileged: its folder may be closed to the owner.
	 * Not CLOEXEC: a script (a test's stand-in) is run through it. */
	int prog = open(vfs[0], O_PATH), prog_errno = errno;
	const char *base = stage_dir();
	char src[64], fdarg[32], srcarg[80], c = 0;
	char *argv[8];

	snprintf(src, sizeof src, "%s/src", base);
	if (setgroups(0, NULL) != 0 || unshare(CLONE_NEWNS) != 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("vmux-fsd", base, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	        "mode=0755,size=16k") != 0 ||
	    mkdir(src, 0755) != 0 ||
	    move_mount(tree, "", AT_FDCWD, src, MOVE_MOUNT_F_EMPTY_PATH) != 0)
		die(1, "cannot stage the folder at %s: %s", src,
		    strerror(errno));
	/* Mounts copied into a less privileged namespace keep their flags. */
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
		die(1, "cannot make a user namespace: %s", strerror(errno));
	if (write(sync_wr, &c, 1) != 1 || read(sync_rd, &c, 1) != 1 || c != 1)
		die(1, "the id maps were not written");
	if (setresgid(0, 0, 0) != 0 || setresuid(0, 0, 0) != 0)
		die(1, "cannot become root in the namespace: %s",
		    strerror(errno));
	if (fcntl(lfd, F_SETFD, 0) != 0)
		die(1, "socket: %s", strerror(errno));
	/* stdout too goes through the relay (and its cap), not to the log */
	dup2(STDERR_FILENO, STDOUT_FILENO);
	sigprocmask(SIG_SETMASK, &fsd_oldmask, NULL);
	deny_setid_modes();
	snprintf(fdarg, sizeof fdarg, "--fd=%d", lfd);
	snprintf(srcarg, sizeof srcarg, "source=%s", src);
	argv[0] = vfs[0];
	argv[1] = fdarg;
	argv[2] = "-o";
	argv[3] = srcarg;
	argv[4] = "-o";
	argv[5] = "cache=auto";
	argv[6] = NULL;
	if (prog >= 0) {
		execveat(prog, "", argv, environ, AT_EMPTY_PATH);
		prog_errno = errno;
	}
	die(127, "cannot run %s: %s", vfs[0], strerror(prog_errno));
}

/*
 * Copy the child's messages to stderr line by line; at the ready line
 * rename part to sock. Returns at end of file.
 */
static void
relay(int fd, const char *part, const char *sock)
{
	char buf[4096];
	size_t have = 0, copied = 0;
	int ready = 0;
	ssize_t n;

	for (;;) {
		n = read(fd, buf + have, sizeof buf - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (copied < FSD_LOG_MAX) /* past it, read and dropped */
			write_all(STDERR_FILENO, buf + have, (size_t)n);
		copied += (size_t)n;
		have += (size_t)n;
		buf[have] = '\0';
		if (!ready && strstr(buf, FSD_READY_LINE) != NULL) {
			if (rename(part, sock) != 0)
				fprintf(stderr, "vmux-fsd: rename %s: %s\n",
				    part, strerror(errno));
			ready = 1;
		}
		/* keep only the unfinished last line (or the tail) */
		char *nl = strrchr(buf, '\n');
		size_t keep = nl != NULL ? have - (size_t)(nl + 1 - buf)
		                         : (have > 256 ? 256 : have);
		memmove(buf, buf + have - keep, keep);
		have = keep;
	}
	if (!ready)
		unlink(part);
}

int
main(int argc, char **argv)
{
	const char *sock = NULL, *root = NULL, *dir = NULL;
	int ro = 0, i, dirfd, tree, lfd, to_child[2], to_parent[2], errp[2];
	char *part, *cause = NULL, map[64], c;
	struct sigaction sa;
	sigset_t block;
	struct stat st;
	uid_t uid;
	gid_t gid;
	int status;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strncmp(argv[i], "--socket-path=", 14) == 0)
			sock = argv[i] + 14;
		else if (strncmp(argv[i], "--root=", 7) == 0)
			root = argv[i] + 7;
		else if (strncmp(argv[i], "--dir=", 6) == 0)
			dir = argv[i] + 6;
		else if (strcmp(argv[i], "--ro") == 0)
			ro = 1;
		else
			die(2, "unknown argument '%s'", argv[i]);
	}
	if (sock == NULL || root == NULL || dir == NULL || i + 1 >= argc)
		die(2,
		    "usage: vmux-fsd --socket-path=SOCK --root=ROOT "
		    "--dir=DIR [--ro] -- VIRTIOFSD");
	if ((dirfd = beneath_open(root, dir, &cause)) < 0)
		die(1, "%s", cause);
	if (fstat(dirfd, &st) != 0)
		die(1, "%s: %s", dir, strerror(errno));
	if (beneath_owner(dir, &st, ro, &uid, &gid, &cause) != 0)
		die(1, "%s", cause);
	tree = clone_tree(dirfd, ro);
	close(dirfd);
	xasprintf(&part, "%s.part", sock);
	unlink(sock);
	lfd = listen_at(part);
	if (pipe2(to_child, O_CLOEXEC) != 0 ||
	    pipe2(to_parent, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0)
		die(1, "pipe: %s", strerror(errno));
	/* no signal between fork and the handlers may orphan virtiofsd */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = fsd_forward;
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &fsd_oldmask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	fflush(stderr);
	if ((fsd_child = fork()) < 0)
		die(1, "fork: %s", strerror(errno));
	if (fsd_child == 0) {
		dup2(errp[1], STDERR_FILENO);
		close(to_child[1]);
		close(to_parent[0]);
		child(tree, lfd, to_parent[1], to_child[0], argv + i + 1);
	}
	close(tree);
	close(lfd);
	close(errp[1]);
	close(to_parent[1]); /* a child that dies early reads as EOF */
	close(to_child[0]);
	sigprocmask(SIG_SETMASK, &fsd_oldmask, NULL);
	c = 0;
	if (read(to_parent[0], &c, 1) == 1) {
		snprintf(map, sizeof map, "0 %lu 1\n", (unsigned long)uid);
		if (write_proc(fsd_child, "setgroups", "deny") == 0 &&
		    write_proc(fsd_child, "uid_map", map) == 0) {
			snprintf(
			    map, sizeof map, "0 %lu 1\n", (unsigned long)gid);
			c = write_proc(fsd_child, "gid_map", map) == 0;
		}
		if (c != 1)
			fprintf(stderr, "vmux-fsd: cannot map ids: %s\n",
			    strerror(errno));
		if (write(to_child[1], &c, 1) != 1)
			c = 0;
	}
	relay(errp[0], part, sock);
	while (waitpid(fsd_child, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
