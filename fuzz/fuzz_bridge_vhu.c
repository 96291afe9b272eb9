/*
 * fuzz_bridge_vhu.c: libFuzzer target for vmux-bridge's vhost-user
 * dispatcher (session/bridge/vhu.c).
 *
 * The input is a stream of vhost-user messages (12-byte header, payload),
 * written one at a time into a socketpair as QEMU would, with descriptors
 * attached where QEMU attaches them: SET_MEM_TABLE gets one memfd (64 KiB
 * of zeros) per region it claims, SET_LOG_BASE the memfd (the dirty log
 * QEMU maps), SET_LOG_FD and SET_VRING_KICK/CALL/ERR one eventfd. A
 * message cut short by the end of the input arrives cut short, then EOF.
 * After each message the device's rings are pumped (an empty engine), so
 * ring addresses and sizes from the input are exercised against memory.
 * Checks: no crash or out-of-bounds access (ASan/UBSan), replies never
 * stall the peer, and no descriptor outlives vhu_free.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/common.h"
#include "session/bridge/bridge.h"

/* Open descriptors in this process. */
static int
open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		abort();
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* No sockets in this engine: none of these is ever called. */
static ssize_t
no_io(void *arg, int id, const struct iovec *iov, int n)
{
	(void)arg, (void)id, (void)iov, (void)n;
	abort();
}

/* Guest-initiated connections are refused (no port is allowed anyway). */
static int
no_open(void *arg, uint32_t port)
{
	(void)arg, (void)port;
	return -ECONNREFUSED;
}

/* Never called either. */
static void
no_sock(void *arg, int id)
{
	(void)arg, (void)id;
	abort();
}

static const struct vsock_ops ops = {no_io, no_io, no_open, no_sock, no_sock};

/* Send one message with n copies of fd attached. */
static void
send_msg(int s, const uint8_t *p, size_t len, int fd, int n)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 8)];
	struct iovec iov = {(void *)p, len};
	struct msghdr mh = {0};
	int fds[8];

	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (n > 0) {
		struct cmsghdr *c;

		for (int i = 0; i < n; i++)
			fds[i] = fd;
		memset(cbuf, 0, sizeof cbuf);
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)n);
	}
	if (sendmsg(s, &mh, MSG_NOSIGNAL) != (ssize_t)len)
		abort();
}

/* Read and drop whatever the device replied. */
static void
drain(int s)
{
	char buf[4096];

	while (recv(s, buf, sizeof buf, MSG_DONTWAIT) > 0)
		continue;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vsock_cfg cfg = {3, 4096, 100, 16, NULL, 0, 0};
	static int memfd = -1, efd = -1;
	int base;
	struct vsock *vs;
	struct vhu d;
	size_t off = 0;
	int sv[2];

	if (memfd < 0) {
		memfd = memfd_create("fuzz-vhu", MFD_CLOEXEC);
		efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (memfd < 0 || efd < 0 || ftruncate(memfd, 65536) != 0)
			abort();
	}
	/* counted per input: libFuzzer's symbolizer pipes come and go */
	base = open_fds();
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		abort();
	vhu_init(&d, sv[1], 3, NULL, NULL);
	vs = vsock_new(&cfg, &ops, NULL);
	while (off < size) {
		uint32_t h[3] = {0, 0, 0};
		size_t len = size - off < 12 ? size - off : 12;
		int nfds = 0, last;

		memcpy(h, data + off, len);
		if (len == 12)
			len += h[2] < size - off - 12 ? h[2] : size - off - 12;
		if (h[0] == VHU_SET_MEM_TABLE && len >= 16)
			nfds = data[off + 12] % 9; /* nregions claimed */
		else if (((h[0] >= VHU_SET_VRING_KICK &&
		              h[0] <= VHU_SET_VRING_ERR) ||
		             h[0] == VHU_SET_LOG_BASE ||
		             h[0] == VHU_SET_LOG_FD) &&
		    !(data[off] & 0x80))
			nfds = 1;
		last = off + len >= size;
		send_msg(sv[0], data + off, len,
		    h[0] == VHU_SET_MEM_TABLE || h[0] == VHU_SET_LOG_BASE
		        ? memfd
		        : efd,
		    nfds);
		off += len;
		if (last)
			shutdown(sv[0], SHUT_WR);
		if (vhu_dispatch(&d) != 0)
			break;
		drain(sv[0]);
		d.reset = 0;
		pump_tx(&d, vs, 0, 16);
		pump_rx(&d, vs, 0, 16);
		if (d.mem.n > MEM_MAX_REGIONS)
			abort();
	}
	vsock_free(vs);
	vhu_free(&d);
	close(sv[0]);
	if (open_fds() != base)
		abort(); /* a descriptor leaked */
	return 0;
}
