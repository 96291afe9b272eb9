/*
 * fwdlimit.c: vmux-bridge --fwd-limit, a bound on the host processes a
 * guest's allowed connections cost.
 *
 * For --allow-host QEMU's user-mode network starts one host program per
 * connection the guest opens (guestfwd=...-cmd:...). Left alone, a guest
 * opening thousands of connections starts thousands of socat processes on
 * the host. So QEMU starts `vmux-bridge --fwd-limit DIR N PROGRAM ARGS...`
 * instead: it takes one of N slots and becomes PROGRAM, holding the slot
 * until PROGRAM ends; with every slot taken it exits at once and the
 * guest's connection is closed.
 *
 * A slot is an flock(2) on DIR/fwd.SLOT, DIR being the session's own
 * directory (private to the user, so no other user or session can take
 * or squat its slots, unlike names in the host-wide abstract socket
 * namespace): taking it is atomic, and the kernel releases it with the
 * last process holding the file open (the descriptor is inherited across
 * exec on purpose).
 */
#include <fcntl.h>
#include <sys/file.h>
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
 * Take a free slot of the N in directory dir: the locked file's fd (left
 * open across exec), -1 when all are taken, or -errno.
 */
int
fwd_slot_take(const char *dir, unsigned n)
{
	char path[4096];
	unsigned slot;

	for (slot = 0; slot < n; slot++) {
		int fd;

		if (snprintf(path, sizeof path, "%s/fwd.%u", dir, slot) >=
		    (int)sizeof path)
			return -ENAMETOOLONG;
		/* no CLOEXEC: PROGRAM holds the slot */
		fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW, 0600);
		if (fd < 0)
			return -errno;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return fd;
		close(fd);
		if (errno != EWOULDBLOCK)
			return -errno;
	}
	return -1;
}

/*
 * vmux-bridge --fwd-limit DIR N PROGRAM [ARG...]: run PROGRAM in one of N
 * slots, or exit FWD_LIMIT_FULL when all are taken. Returns only on error.
 */
int
fwd_limit_main(int argc, char **argv)
{
	unsigned long long n;
	char *end;
	int fd;

	if (argc < 5) {
		fprintf(stderr,
		    "vmux-bridge: usage: vmux-bridge --fwd-limit "
		    "DIR N PROGRAM [ARG...]\n");
		return 2;
	}
	errno = 0;
	if (argv[2][0] != '/') {
		fprintf(stderr,
		    "vmux-bridge: bad --fwd-limit DIR (not absolute): %s\n",
		    argv[2]);
		return 2;
	}
	n = strtoull(argv[3], &end, 10);
	if (errno != 0 || *end != '\0' || n < 1 || n > FWD_LIMIT_MAX) {
		fprintf(
		    stderr, "vmux-bridge: bad --fwd-limit N: %s\n", argv[3]);
		return 2;
	}
	fd = fwd_slot_take(argv[2], (unsigned)n);
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
