/*
 * net.c: a session's network, QEMU's user-mode stack (libslirp) on the host.
 *
 * No flag, no NIC: the guest has only loopback and vsock. --net gives a
 * virtio-net NIC with outbound NAT (guest 10.0.2.15, gateway and host
 * 10.0.2.2, DNS 10.0.2.3). --allow-host NAME:PORT instead gives a NIC on a
 * restricted stack (slirp restrict=on: nothing leaves the VM) where each
 * allowed destination is a guestfwd: the guest connects to a private
 * address (10.0.2.100 and up, which its /etc/hosts names NAME) and the
 * host, not the guest, opens the connection to NAME:PORT, with socat. So
 * the allowlist is enforced outside the guest's reach. QEMU starts one
 * socat per connection; each runs under vmux-bridge --fwd-limit, so a
 * session holds at most NET_FWD_CONNS of them at once. --publish H:G
 * forwards host port H (on 127.0.0.1 only) to guest port G.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "session.h"

#define NET_FWD_BASE 100 /* first private address: 10.0.2.100 */
#define NET_FWD_MAX  100 /* distinct allowed host names */

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
	xasprintf(&s, "user,id=net0,ipv6=off,restrict=%s",
	    r->net && r->nallow_hosts == 0 ? "off" : "on");
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
		    "%s,guestfwd=tcp:10.0.2.%zu:%s-cmd:%s --fwd-limit %u %d "
		    "socat STDIO TCP:%.*s:%s",
		    s, NET_FWD_BASE + slot, colon + 1, limiter, r->cid,
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
