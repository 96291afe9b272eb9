/*
 * net.c: a session's network, a user-mode stack on the host: passt for
 * --net, QEMU's own (libslirp) for the restricted modes.
 *
 * No flag, no NIC: the guest has only loopback and vsock. --net gives a
 * virtio-net NIC with outbound NAT by passt (guest 10.0.2.15, gateway
 * 10.0.2.2, DNS 10.0.2.3 forwarded to the host's resolver), started by
 * vmux with one end of a socketpair, QEMU holding the other (-netdev
 * stream, fd 3); passt ends when QEMU does. passt runs with --no-map-gw
 * and vmux-netguard.so preloaded, so no address a guest can use reaches a
 * service on the host's loopback (libslirp maps 10.0.2.2 to it, and a
 * guest's root can route 127.0.0.0/8 out of its NIC): the outside world,
 * not the host. --allow-host NAME:PORT instead gives a NIC on a
 * restricted stack (slirp restrict=on: nothing leaves the VM) where each
 * allowed destination is a guestfwd: the guest connects to a private
 * address (10.0.2.100 and up, which its /etc/hosts names NAME) and the
 * host, not the guest, opens the connection to NAME:PORT, with socat. So
 * the allowlist is enforced outside the guest's reach. QEMU starts one
 * socat per connection; each runs under vmux-bridge --fwd-limit with the
 * session's own directory (its slots are locks there), so a session holds
 * at most NET_FWD_CONNS of them at once. --publish H:G
 * forwards host port H (on 127.0.0.1 only) to guest port G.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "session.h"

#define NET_FWD_BASE 100   /* first private address: 10.0.2.100 */
#define NET_FWD_MAX  100   /* distinct allowed host names */
#define NET_GUARD_MS 10000 /* passt's loader says the guard is in */

/* A host name or IPv4 address: letters, digits, '.', '-', 1-253 bytes. */
static int
host_ok(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > 253 || s[0] == '-' || s[0] == '.')
		return 0;
	for (i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		        (c >= '0' && c <= '9') || c == '.' || c == '-'))
			return 0;
	}
	return 1;
}

/* A TCP port 1-65535 spelled in decimal; the number or -1. */
static long
port_parse(const char *s)
{
	char *end;
	long v;

	if (*s < '0' || *s > '9')
		return -1;
	v = strtol(s, &end, 10);
	return *end == '\0' && v >= 1 && v <= 65535 ? v : -1;
}

/* Check an --allow-host NAME:PORT value; 0 or -1 with cause. */
int
net_allow_check(const char *v, char **cause)
{
	const char *colon = strrchr(v, ':');

	if (colon == NULL) {
		xasprintf(cause,
		    "--allow-host '%s': give a port, NAME:PORT (the host "
		    "forwards exactly the ports allowed)",
		    v);
		return -1;
	}
	if (!host_ok(v, (size_t)(colon - v)) || port_parse(colon + 1) < 0) {
		xasprintf(cause,
		    "invalid --allow-host '%s': want HOST:PORT, a host name or "
		    "IPv4 address and a port 1-65535",
		    v);
		return -1;
	}
	return 0;
}

/* Check a --publish HOSTPORT:GUESTPORT value; 0 or -1 with cause. */
int
net_publish_check(const char *v, char **cause)
{
	const char *colon = strchr(v, ':');
	char *host;
	long h;

	if (colon != NULL) {
		host = xstrndup(v, (size_t)(colon - v));
		h = port_parse(host);
		free(host);
		if (h > 0 && port_parse(colon + 1) > 0)
			return 0;
	}
	xasprintf(cause,
	    "invalid --publish '%s': want HOSTPORT:GUESTPORT, ports 1-65535",
	    v);
	return -1;
}

/* Does the session get a NIC at all? */
int
net_has_nic(const struct session_record *r)
{
	return r->net || r->nallow_hosts > 0 || r->npublish > 0;
}

/* Is r's network passt's (--net without --allow-host)? */
int
net_uses_passt(const struct session_record *r)
{
	return r->net && r->nallow_hosts == 0;
}

/* passt's pid file in r's directory. Free it. */
static char *
net_pid_path(const struct session_record *r)
{
	char *p;

	xasprintf(&p, "%s/passt.pid", r->dir);
	return p;
}

/* The size of the file at path, 0 when there is none. */
static off_t
file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : 0;
}

/*
 * Wait (NET_GUARD_MS at most) until passt's log, past offset from, says
 * vmux-netguard.so loaded. 0, or -1.
 */
static int
net_guard_loaded(const char *log, off_t from)
{
	uint64_t deadline = mono_ms() + NET_GUARD_MS;
	char buf[4096];
	ssize_t n;
	int fd;

	for (;;) {
		if ((fd = open(log, O_RDONLY | O_CLOEXEC)) >= 0) {
			n = pread(fd, buf, sizeof buf - 1, from);
			close(fd);
			if (n > 0) {
				buf[n] = '\0';
				if (strstr(buf, "vmux-netguard: loaded") !=
				    NULL)
					return 0;
			}
		}
		if (mono_ms() >= deadline)
			return -1;
		usleep(5000);
	}
}

/*
 * Start passt for r when its network is passt's: *qemu_fd is the socket
 * end QEMU gets as fd 3 (the caller closes it once QEMU has it), -1 when
 * there is no passt. 0, or -1 with cause.
 */
int
net_start(const struct session_record *r, int *qemu_fd, char **cause)
{
	char *argv[40], *passt = NULL, *guard = NULL, *preload = NULL;
	char *log = NULL, *exit_path = NULL, *pidp, **ports = NULL, buf[32];
	char *tail;
	int n = 0, sv[2] = {-1, -1}, rc = -1, fd;
	off_t log_from;
	size_t i, nports = 0;
	pid_t pid;

	*qemu_fd = -1;
	if (!net_uses_passt(r))
		return 0;
	if ((passt = find_program("passt", "VMUX_PASST", cause)) == NULL) {
		free(*cause);
		xasprintf(cause,
		    "--net needs passt (apt-get install passt, "
		    "or set VMUX_PASST)");
		return -1;
	}
	if ((guard = find_program(
	         "vmux-netguard.so", "VMUX_NETGUARD", cause)) == NULL)
		goto out;
	xasprintf(&preload, "LD_PRELOAD=%s", guard);
	argv[n++] = "/usr/bin/env";
	argv[n++] = preload;
	argv[n++] = passt;
	argv[n++] = "--foreground";
	argv[n++] = "--fd";
	argv[n++] = "3";
	argv[n++] = "-4";
	argv[n++] = "--address";
	argv[n++] = "10.0.2.15";
	argv[n++] = "--netmask";
	argv[n++] = "24";
	argv[n++] = "--gateway";
	argv[n++] = "10.0.2.2";
	argv[n++] = "--dns-forward";
	argv[n++] = "10.0.2.3";
	argv[n++] = "--no-map-gw";
	argv[n++] = "--udp-ports";
	argv[n++] = "none";
	ports = xcalloc(r->npublish + 1, sizeof *ports);
	for (i = 0; i < r->npublish && n + 3 < (int)nitems(argv); i++) {
		char *why = NULL;
		if (net_publish_check(r->publish[i], &why) != 0) {
			free(why); /* checked at creation; a record is data */
			continue;
		}
		xasprintf(&ports[nports], "127.0.0.1/%s", r->publish[i]);
		argv[n++] = "--tcp-ports";
		argv[n++] = ports[nports++];
	}
	if (nports == 0) {
		argv[n++] = "--tcp-ports";
		argv[n++] = "none";
	}
	argv[n] = NULL;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
		xasprintf(cause, "socketpair: %s", strerror(errno));
		goto out;
	}
	xasprintf(&log, "%s/passt.log", r->dir);
	xasprintf(&exit_path, "%s/passt.exit", r->dir);
	unlink(exit_path);
	log_from = file_size(log);
	if ((pid = proc_spawn(argv, sv[1], log, exit_path, cause)) < 0)
		goto out;
	/* never an unguarded passt: the guard says it loaded, or no --net */
	if (net_guard_loaded(log, log_from) != 0) {
		proc_terminate(pid, "passt", 1000);
		tail = file_tail(log, 5);
		xasprintf(cause,
		    "--net: %s was not loaded into passt (an AppArmor profile "
		    "or a path the loader refuses?); not starting without "
		    "it%s%s",
		    guard, tail != NULL ? ":\n" : "", tail != NULL ? tail : "");
		free(tail);
		goto out;
	}
	pidp = net_pid_path(r);
	snprintf(buf, sizeof buf, "%ld\n", (long)pid);
	fd = open(pidp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0) {
		write_all(fd, buf, strlen(buf));
		close(fd);
	}
	free(pidp);
	*qemu_fd = sv[0];
	sv[0] = -1;
	rc = 0;
out:
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	for (i = 0; i < nports; i++)
		free(ports[i]);
	free(ports);
	free(log);
	free(exit_path);
	free(preload);
	free(guard);
	free(passt);
	return rc;
}

/*
 * End r's passt, if it has one (it ends by itself once QEMU is gone: this
 * waits for that, then insists), and wait for its reaper's record.
 */
void
net_stop(const struct session_record *r, int term_ms)
{
	char *pidp, *exit_path, buf[32];
	long pid = 0;
	int fd;
	ssize_t got;

	if (!net_uses_passt(r))
		return;
	pidp = net_pid_path(r);
	if ((fd = open(pidp, O_RDONLY | O_CLOEXEC)) >= 0) {
		got = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (got > 0) {
			buf[got] = '\0';
			pid = strtol(buf, NULL, 10);
		}
	}
	xasprintf(&exit_path, "%s/passt.exit", r->dir);
	if (pid > 0 && proc_matches((pid_t)pid, "passt")) {
		proc_wait_gone((pid_t)pid, "passt", mono_ms() + 1000);
		proc_terminate((pid_t)pid, "passt", term_ms);
		proc_exit_wait(exit_path, mono_ms() + 2000);
	}
	unlink(pidp);
	free(exit_path);
	free(pidp);
}

/* Do allowed hosts i and j name the same host? */
static int
same_host(const struct session_record *r, size_t i, size_t j)
{
	const char *a = r->allow_hosts[i], *b = r->allow_hosts[j];
	size_t la = (size_t)(strrchr(a, ':') - a);

	return la == (size_t)(strrchr(b, ':') - b) && strncmp(a, b, la) == 0;
}

/* Is allowed host i the first entry naming its host? */
static int
first_of_host(const struct session_record *r, size_t i)
{
	size_t k;

	for (k = 0; k < i; k++) {
		if (same_host(r, k, i))
			return 0;
	}
	return 1;
}

/* The private address index of allowed host i: one per distinct host. */
static size_t
allow_slot(const struct session_record *r, size_t i)
{
	size_t j, slot = 0;

	for (j = 0; j < r->nallow_hosts; j++) {
		if (!first_of_host(r, j))
			continue;
		if (same_host(r, j, i))
			return slot;
		slot++;
	}
	NEVER("allow_slot: host not found");
}

/*
 * Can path go into a guestfwd cmd: as it is? QEMU's option syntax and
 * libslirp's argument split leave these characters alone.
 */
int
net_cmd_path_ok(const char *path)
{
	const char *p;

	if (path == NULL || *path != '/')
		return 0;
	for (p = path; *p != '\0'; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		        (*p >= '0' && *p <= '9') || strchr("/._+-@", *p)))
			return 0;
	}
	return 1;
}

/*
 * QEMU's -netdev value for r, or NULL when it has no NIC; limiter is the
 * vmux-bridge that bounds the allowed hosts' connections (a path
 * net_cmd_path_ok accepts; unused without --allow-host). Values were
 * checked when the session was made (and again here: a record is data).
 */
char *
net_netdev(const struct session_record *r, const char *limiter)
{
	char *s, *t, *cause = NULL;
	size_t i;

	if (!net_has_nic(r))
		return NULL;
	if (net_uses_passt(r)) /* net_start gives QEMU its socket as fd 3 */
		return xstrdup(
		    "stream,id=net0,server=off,addr.type=fd,addr.str=3");
	xasprintf(&s, "user,id=net0,ipv6=off,restrict=on");
	for (i = 0; i < r->npublish; i++) {
		const char *v = r->publish[i], *colon = strchr(v, ':');
		if (net_publish_check(v, &cause) != 0) {
			free(cause);
			continue;
		}
		xasprintf(&t, "%s,hostfwd=tcp:127.0.0.1:%.*s-:%s", s,
		    (int)(colon - v), v, colon + 1);
		free(s);
		s = t;
	}
	for (i = 0; i < r->nallow_hosts; i++) {
		const char *v = r->allow_hosts[i], *colon = strrchr(v, ':');
		size_t slot = allow_slot(r, i);
		if (net_allow_check(v, &cause) != 0 || slot >= NET_FWD_MAX) {
			free(cause);
			cause = NULL;
			continue;
		}
		xasprintf(&t,
		    "%s,guestfwd=tcp:10.0.2.%zu:%s-cmd:%s --fwd-limit %s %d "
		    "socat STDIO TCP:%.*s:%s",
		    s, NET_FWD_BASE + slot, colon + 1, limiter, r->dir,
		    NET_FWD_CONNS, (int)(colon - v), v, colon + 1);
		free(s);
		s = t;
	}
	return s;
}

/*
 * Kernel command line words for vmux-init: vmux.net=nat (a default route)
 * or vmux.net=restricted, and vmux.hosts=ADDR=NAME,... for the allowed
 * hosts' private addresses. "" when there is no NIC. Free it.
 */
char *
net_cmdline(const struct session_record *r)
{
	char *s, *t;
	size_t i;

	if (!net_has_nic(r))
		return xstrdup("");
	xasprintf(&s, " vmux.net=%s",
	    r->net && r->nallow_hosts == 0 ? "nat" : "restricted");
	for (i = 0; i < r->nallow_hosts; i++) {
		const char *v = r->allow_hosts[i], *colon = strrchr(v, ':');
		size_t slot = allow_slot(r, i);
		if (!first_of_host(r, i) || slot >= NET_FWD_MAX)
			continue;
		xasprintf(&t, "%s%s10.0.2.%zu=%.*s", s,
		    strstr(s, "vmux.hosts=") == NULL ? " vmux.hosts=" : ",",
		    NET_FWD_BASE + slot, (int)(colon - v), v);
		free(s);
		s = t;
	}
	return s;
}
