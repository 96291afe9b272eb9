/*
 * main.c: vmux-agent's command line and listener.
 *
 *	vmux-agent [--port N] [--unix PATH] [--idle-timeout SEC]
 *	    [--max-conns N] [--max-shells N] [--scrollback BYTES]
 *	    [--memory-budget BYTES] [--poweroff-pid PID] [--home DIR]
 *	    [--cgroup DIR] [--cwd DIR] [--gate FD] [--listen-fd FD]
 *	    [--nofile N]
 *
 * By default it listens on AF_VSOCK port 5005, any CID, retrying for a while
 * if the vsock transport is not up yet. --unix listens on a Unix socket
 * instead (host-side testing); there "shutdown" ends the agent rather than
 * signalling PID 1 (unless --poweroff-pid says otherwise). --home sets the
 * user's HOME and default directory (/root; vmux-init gives /workspace).
 * --cwd sets a default directory other than the home (vmux rescue: the disk
 * at /sysroot, with HOME left on the initramfs so none of its dotfiles run).
 * --cgroup puts every command and shell in that cgroup v2 directory, where
 * vmux-init set the session's process and memory limits; the agent itself
 * stays outside, so a fork bomb or a memory hog cannot take it down.
 * --gate FD: listen, then serve nothing until FD (from vmux-init) brings the
 * home and the cgroup and closes (gate.c).
 * --nofile N: the open-file limit (RLIMIT_NOFILE, soft and hard) of every
 * command and shell it starts (vmux new --nofile); the agent's own is not
 * lowered.
 * --listen-fd FD: serve a listening socket vmux-init made and keeps (see
 * guest/init.c agent_listen), so a host that connects while this agent is
 * still starting, or restarting, waits in the kernel's queue instead of
 * being refused (--port is then unused). A Unix socket handed over counts
 * as --unix does: no OOM exemption, and "shutdown" ends the agent.
 *
 * --memory-budget caps what shells and execs make the agent hold (default:
 * a quarter of MemTotal; budget.c). On vsock (in the guest) the agent makes
 * itself exempt from the OOM killer; what it starts is not (spawn.c).
 */
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <linux/vm_sockets.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

#define LISTEN_RETRY_MS 10000

/* Print usage and exit with status. */
__attribute__((noreturn)) static void
usage(int status)
{
	fprintf(status ? stderr : stdout,
	    "usage: vmux-agent [--port N] [--unix PATH] [--idle-timeout SEC]\n"
	    "                  [--max-conns N] [--max-shells N] "
	    "[--scrollback BYTES]\n"
	    "                  [--memory-budget BYTES] [--poweroff-pid PID] "
	    "[--home DIR]\n"
	    "                  [--cgroup DIR] [--cwd DIR] [--gate FD] "
	    "[--listen-fd FD]\n"
	    "                  [--nofile N] [--version]\n");
	exit(status);
}

/* A number option in [min, max], or exit. */
static long long
number(const char *opt, const char *arg, long long min, long long max)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno != 0 || *arg == '\0' || *end != '\0' || v < min || v > max) {
		fprintf(stderr,
		    "vmux-agent: %s must be a number from %lld to "
		    "%lld\n",
		    opt, min, max);
		exit(2);
	}
	return v;
}

/*
 * Take over a listening socket passed by vmux-init: check that it is one,
 * and keep it from the commands and shells this agent starts. fd or -errno.
 */
static int
listen_inherited(int fd, char **desc, int *family)
{
	struct sockaddr_vm sa;
	socklen_t len = sizeof sa;
	int on = 0;
	socklen_t olen = sizeof on;

	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &olen) < 0)
		return -errno;
	if (!on)
		return -EINVAL; /* a socket, but not listening */
	olen = sizeof *family;
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, family, &olen) < 0)
		return -errno;
	if (*family != AF_VSOCK && *family != AF_UNIX)
		return -EAFNOSUPPORT; /* peers are checked for these only */
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return -errno;
	memset(&sa, 0, sizeof sa);
	if (getsockname(fd, (struct sockaddr *)&sa, &len) == 0 &&
	    sa.svm_family == AF_VSOCK)
		xasprintf(desc, "vsock port %u (from fd %d)", sa.svm_port, fd);
	else
		xasprintf(desc, "fd %d", fd);
	return fd;
}

/* Listen on a Unix socket (replacing a stale one); fd or -errno. */
static int
listen_unix(const char *path)
{
	struct sockaddr_un sa;
	struct stat st;

	if (strlen(path) >= sizeof sa.sun_path)
		return -ENAMETOOLONG;
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(path);
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	strcpy(sa.sun_path, path);
	return sock_listen((struct sockaddr *)&sa, sizeof sa);
}

/* Room for every connection, shell and exec pipe at the limits. */
static void
raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 4096) {
		rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Make sure fds 0-2 are open so no socket or pipe ever lands there. */
static void
sane_stdio(void)
{
	int fd;

	while ((fd = open("/dev/null", O_RDWR)) >= 0 && fd <= 2)
		;
	if (fd > 2)
		close(fd);
}

/* Parse flags, listen, serve until told to stop. */
int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"port", required_argument, NULL, 'p'},
	    {"unix", required_argument, NULL, 'u'},
	    {"idle-timeout", required_argument, NULL, 'i'},
	    {"max-conns", required_argument, NULL, 'c'},
	    {"max-shells", required_argument, NULL, 's'},
	    {"scrollback", required_argument, NULL, 'b'},
	    {"poweroff-pid", required_argument, NULL, 'P'},
	    {"memory-budget", required_argument, NULL, 'm'},
	    {"home", required_argument, NULL, 'H'},
	    {"cgroup", required_argument, NULL, 'G'},
	    {"cwd", required_argument, NULL, 'C'},
	    {"gate", required_argument, NULL, 'g'},
	    {"listen-fd", required_argument, NULL, 'L'},
	    {"nofile", required_argument, NULL, 'n'},
	    {"image-config", required_argument, NULL, 'I'},
	    {"version", no_argument, NULL, 'V'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct agent_opts opts;
	const char *unix_path = NULL;
	unsigned port = VMUX_AGENT_PORT;
	long long poweroff = -1;
	uint64_t give_up;
	char *desc;
	int ch, fd, rc, gate = -1, inherited = -1, family = AF_VSOCK;

	memset(&opts, 0, sizeof opts);
	opts.idle_timeout_ms = AGENT_IDLE_TIMEOUT_MS;
	opts.max_conns = AGENT_MAX_CONNS;
	opts.max_shells = AGENT_MAX_SHELLS;
	opts.scrollback = SHELL_DEFAULT_SCROLLBACK;
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'p':
			port =
			    (unsigned)number("--port", optarg, 1, 0xfffffffe);
			break;
		case 'u':
			unix_path = optarg;
			break;
		case 'i':
			opts.idle_timeout_ms =
			    (int)number("--idle-timeout", optarg, 1, 86400) *
			    1000;
			break;
		case 'c':
			opts.max_conns =
			    (int)number("--max-conns", optarg, 1, 4096);
			break;
		case 's':
			opts.max_shells =
			    (int)number("--max-shells", optarg, 1, 4096);
			break;
		case 'b':
			opts.scrollback = (size_t)number("--scrollback", optarg,
			    SHELL_MIN_SCROLLBACK, SHELL_MAX_SCROLLBACK);
			break;
		case 'm':
			budget_set((size_t)number("--memory-budget", optarg,
			    1 << 20, (long long)1 << 40));
			break;
		case 'H':
			if (optarg[0] != '/') {
				fprintf(stderr,
				    "vmux-agent: --home: not an "
				    "absolute path: %s\n",
				    optarg);
				exit(2);
			}
			user_home_set(optarg);
			break;
		case 'G':
			if (optarg[0] != '/') {
				fprintf(stderr,
				    "vmux-agent: --cgroup: not an "
				    "absolute path: %s\n",
				    optarg);
				exit(2);
			}
			user_cgroup_set(optarg);
			break;
		case 'I':
			image_config_load(optarg);
			break;
		case 'C':
			if (optarg[0] != '/') {
				fprintf(stderr,
				    "vmux-agent: --cwd: not an "
				    "absolute path: %s\n",
				    optarg);
				exit(2);
			}
			user_cwd_set(optarg);
			break;
		case 'P':
			poweroff = number("--poweroff-pid", optarg, 0, 1 << 22);
			break;
		case 'g':
			gate = (int)number("--gate", optarg, 3, 1 << 20);
			break;
		case 'n':
			user_nofile_set(
			    (long long)number("--nofile", optarg, 1, 1 << 30));
			break;
		case 'L':
			inherited =
			    (int)number("--listen-fd", optarg, 3, 1 << 20);
			break;
		case 'V':
			printf("vmux-agent %s\n", VMUX_VERSION);
			return 0;
		case 'h':
			usage(0);
		default:
			usage(2);
		}
	}
	if (optind != argc)
		usage(2);
	sane_stdio();
	raise_fd_limit();
	log_open("vmux-agent");

	if (inherited >= 0 && unix_path != NULL) {
		fprintf(stderr,
		    "vmux-agent: --listen-fd and --unix both say where to "
		    "listen; give one\n");
		return 2;
	}
	if (inherited >= 0) {
		fd = listen_inherited(inherited, &desc, &family);
		if (fd < 0)
			xasprintf(&desc, "--listen-fd %d", inherited);
	} else if (unix_path != NULL) {
		fd = listen_unix(unix_path);
		xasprintf(&desc, "unix %s", unix_path);
	} else {
		/* The vsock transport may still be loading: retry a while. */
		give_up = mono_ms() + LISTEN_RETRY_MS;
		while ((fd = vsock_listen(port)) < 0 && mono_ms() < give_up)
			usleep(100000);
		xasprintf(&desc, "vsock port %u", port);
	}
	if (fd < 0) {
		fprintf(stderr, "vmux-agent: listen on %s: %s\n", desc,
		    strerror(-fd));
		return 1;
	}
	/* on vsock it is the guest's agent, PID 1 its power switch; a Unix
	 * socket (ours or handed over) is a test on the host */
	if (unix_path == NULL && family == AF_VSOCK) {
		/* never an OOM victim: a memory hog is, not the agent */
		if ((rc = oom_score_adj("-1000")) < 0)
			log_debug("oom_score_adj: %s", strerror(-rc));
		opts.poweroff_pid = poweroff >= 0 ? (pid_t)poweroff : 1;
	} else
		opts.poweroff_pid = poweroff >= 0 ? (pid_t)poweroff : 0;
	opts.listen_desc = desc;
	fprintf(stderr, "vmux-agent: listening on %s\n", desc);
	log_debug("listening on %s", desc);
	if (gate >= 0)
		agent_gate_wait(gate);
	rc = agent_serve(fd, &opts);
	close(fd);
	if (unix_path != NULL)
		unlink(unix_path);
	free(desc);
	return rc;
}
