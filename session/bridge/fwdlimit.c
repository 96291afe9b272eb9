/*
 * fwdlimit.c: vmux-bridge --fwd-limit, a bound on the host processes a
 * guest's allowed connections cost.
 *
 * For --allow-host QEMU's user-mode network starts one host program per
 * connection the guest opens (guestfwd=...-cmd:...). Left alone, a guest
 * opening thousands of connections starts thousands of socat processes on
 * the host. So QEMU starts `vmux-bridge --fwd-limit CID N PROGRAM ARGS...`
 * instead: it takes one of N slots and becomes PROGRAM, holding the slot
 * until PROGRAM ends; with every slot taken it exits at once and the
 * guest's connection is closed.
 *
 * A slot is an abstract unix socket named after the session's CID (unique
 * on the host) and the slot number: binding it is atomic, it needs no file
 * and no cleanup, and the kernel frees it with the last process holding it
 * (the socket is inherited across exec on purpose).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/common.h"
#include "bridge.h"

/*
 * Take a free slot of the N for cid: the bound socket's fd (left open
 * across exec), -1 when all are taken, or -errno.
 */
int
fwd_slot_take(uint32_t cid, unsigned n)
{
	struct sockaddr_un sun;
	unsigned slot;

	for (slot = 0; slot < n; slot++) {
		socklen_t len;
		int fd = socket(AF_UNIX, SOCK_STREAM, 0); /* no CLOEXEC */

		if (fd < 0)
			return -errno;
		memset(&sun, 0, sizeof sun);
		sun.sun_family = AF_UNIX;
		/* sun_path[0] stays NUL: the abstract namespace */
		len = (socklen_t)snprintf(sun.sun_path + 1,
		    sizeof sun.sun_path - 1, "vmux-fwd/%u/%u", cid, slot);
		if (bind(fd, (struct sockaddr *)&sun,
		        (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
		            len)) == 0)
			return fd;
		close(fd);
		if (errno != EADDRINUSE)
			return -errno;
	}
	return -1;
}

/*
 * vmux-bridge --fwd-limit CID N PROGRAM [ARG...]: run PROGRAM in one of N
 * slots, or exit FWD_LIMIT_FULL when all are taken. Returns only on error.
 */
int
fwd_limit_main(int argc, char **argv)
{
	unsigned long long cid, n;
	char *end;
	int fd;

	if (argc < 5) {
		fprintf(stderr,
		    "vmux-bridge: usage: vmux-bridge --fwd-limit "
		    "CID N PROGRAM [ARG...]\n");
		return 2;
	}
	errno = 0;
	cid = strtoull(argv[2], &end, 10);
	if (errno != 0 || *end != '\0' || cid < 3 || cid > UINT32_MAX - 1) {
		fprintf(
		    stderr, "vmux-bridge: bad --fwd-limit CID: %s\n", argv[2]);
		return 2;
	}
	n = strtoull(argv[3], &end, 10);
	if (errno != 0 || *end != '\0' || n < 1 || n > FWD_LIMIT_MAX) {
		fprintf(
		    stderr, "vmux-bridge: bad --fwd-limit N: %s\n", argv[3]);
		return 2;
	}
	fd = fwd_slot_take((uint32_t)cid, (unsigned)n);
	if (fd == -1)
		return FWD_LIMIT_FULL; /* said nowhere: a guest could flood a
		                          log */
	if (fd < 0) {
		fprintf(
		    stderr, "vmux-bridge: --fwd-limit: %s\n", strerror(-fd));
		return 1;
	}
	execvp(argv[4], argv + 4);
	fprintf(stderr, "vmux-bridge: cannot run %s: %s\n", argv[4],
	    strerror(errno));
	return 127;
}
