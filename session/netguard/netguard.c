/*
 * netguard.c: vmux-netguard.so, preloaded into passt (a --net session's
 * network stack) so a guest reaches the outside world and never the
 * host's loopback.
 *
 * passt --no-map-gw stops mapping the gateway to the host, but passt
 * still connects wherever the guest's packets say, and a guest's root can
 * route 127.0.0.0/8 out of its NIC: its packets to 127.0.0.1 then become
 * passt's connections to the host's 127.0.0.1. Debian 12's passt has no
 * option against that and the host may have no firewall, so every way
 * passt opens or sends to an address (connect, sendto, sendmsg, sendmmsg)
 * is checked here first: loopback (127.0.0.0/8, ::1, their v4-mapped
 * forms) and the unspecified address (which means "this host") are
 * refused with ECONNREFUSED. The one exception is port 53 of the host's
 * own resolver when /etc/resolv.conf names a loopback one (the DNS address
 * the guest is given forwards there).
 *
 * UDP sockets passt binds for a guest's flows get a port of the kernel's
 * choosing instead of the guest's own source port, so a guest cannot hold
 * a host port and receive what host programs send to 127.0.0.1 there.
 *
 * The real functions are looked up once, at load, before passt seals
 * itself with seccomp; then NETGUARD_LOADED is written to stderr (passt's
 * log), which vmux waits for: a preload the loader refused (AppArmor, a
 * bad path) fails the start instead of leaving passt unguarded.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>
#include <sys/socket.h>

#define NETGUARD_LOADED "vmux-netguard: loaded\n"

typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);
typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);
typedef ssize_t (*sendto_fn)(
    int, const void *, size_t, int, const struct sockaddr *, socklen_t);
typedef ssize_t (*sendmsg_fn)(int, const struct msghdr *, int);
typedef int (*sendmmsg_fn)(int, struct mmsghdr *, unsigned int, int);

static connect_fn real_connect;
static bind_fn real_bind;
static sendto_fn real_sendto;
static sendmsg_fn real_sendmsg;
static sendmmsg_fn real_sendmmsg;
static struct in_addr dns_v4; /* a loopback resolver, or 0 */

/* Look the real functions up and note a loopback resolver. */
__attribute__((constructor)) static void
netguard_init(void)
{
	char line[256], addr[64];
	ssize_t n;
	FILE *f;

	real_connect = (connect_fn)dlsym(RTLD_NEXT, "connect");
	real_bind = (bind_fn)dlsym(RTLD_NEXT, "bind");
	real_sendto = (sendto_fn)dlsym(RTLD_NEXT, "sendto");
	real_sendmsg = (sendmsg_fn)dlsym(RTLD_NEXT, "sendmsg");
	real_sendmmsg = (sendmmsg_fn)dlsym(RTLD_NEXT, "sendmmsg");
	/* as passt picks it: the first IPv4 "nameserver " line */
	if ((f = fopen("/etc/resolv.conf", "re")) != NULL) {
		while (fgets(line, sizeof line, f) != NULL) {
			if (strncmp(line, "nameserver ", 11) != 0 ||
			    sscanf(line + 11, "%63s", addr) != 1 ||
			    inet_pton(AF_INET, addr, &dns_v4) != 1)
				continue;
			if ((ntohl(dns_v4.s_addr) >> 24) != 127)
				dns_v4.s_addr =
				    0; /* not loopback: no exception */
			break;
		}
		fclose(f);
	}
	if (real_connect != NULL && real_bind != NULL && real_sendto != NULL &&
	    real_sendmsg != NULL && real_sendmmsg != NULL)
		n = write(2, NETGUARD_LOADED, sizeof NETGUARD_LOADED - 1);
	(void)n;
}

/* Is a (host order) IPv4 address this host: loopback or unspecified? */
static int
v4_is_host(uint32_t a)
{
	return (a >> 24) == 127 || a == 0;
}

/* Must passt not reach sa? */
static int
refused(const struct sockaddr *sa, socklen_t len)
{
	if (sa == NULL)
		return 0;
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const void *)sa;

		if (dns_v4.s_addr != 0 &&
		    in->sin_addr.s_addr == dns_v4.s_addr &&
		    ntohs(in->sin_port) == 53)
			return 0;
		return v4_is_host(ntohl(in->sin_addr.s_addr));
	}
	/* the kernel takes a sockaddr_in6 without its scope id (24 bytes) */
	if (sa->sa_family == AF_INET6 &&
	    len >= offsetof(struct sockaddr_in6, sin6_scope_id)) {
		const struct sockaddr_in6 *in6 = (const void *)sa;
		const struct in6_addr *a = &in6->sin6_addr;
		uint32_t v4;

		if (IN6_IS_ADDR_LOOPBACK(a) || IN6_IS_ADDR_UNSPECIFIED(a))
			return 1;
		if (IN6_IS_ADDR_V4MAPPED(a) || IN6_IS_ADDR_V4COMPAT(a)) {
			memcpy(&v4, &a->s6_addr[12], 4);
			return v4_is_host(ntohl(v4));
		}
	}
	return 0;
}

/* A UDP bind to an address and port: the same address, any port. */
int
bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	struct sockaddr_storage any;
	socklen_t tl = sizeof(int);
	int type = 0;

	if (sa != NULL &&
	    (sa->sa_family == AF_INET || sa->sa_family == AF_INET6) &&
	    len <= sizeof any &&
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 &&
	    type == SOCK_DGRAM) {
		memcpy(&any, sa, len);
		if (sa->sa_family == AF_INET)
			((struct sockaddr_in *)&any)->sin_port = 0;
		else
			((struct sockaddr_in6 *)&any)->sin6_port = 0;
		return real_bind(fd, (struct sockaddr *)&any, len);
	}
	return real_bind(fd, sa, len);
}

int
connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	if (refused(sa, len)) {
		errno = ECONNREFUSED;
		return -1;
	}
	return real_connect(fd, sa, len);
}

ssize_t
sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *sa,
    socklen_t len)
{
	if (refused(sa, len)) {
		errno = ECONNREFUSED;
		return -1;
	}
	return real_sendto(fd, buf, n, flags, sa, len);
}

ssize_t
sendmsg(int fd, const struct msghdr *m, int flags)
{
	if (m != NULL && refused(m->msg_name, m->msg_namelen)) {
		errno = ECONNREFUSED;
		return -1;
	}
	return real_sendmsg(fd, m, flags);
}

/* Send the messages before the first refused one (none: an error). */
int
sendmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (refused(v[i].msg_hdr.msg_name, v[i].msg_hdr.msg_namelen))
			break;
	}
	if (i == 0 && n > 0) {
		errno = ECONNREFUSED;
		return -1;
	}
	return real_sendmmsg(fd, v, i, flags);
}
