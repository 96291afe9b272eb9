/*
 * vsock.c: the agent's listening socket, made the same way by vmux-init
 * (which opens it for the agent, see guest/init.c agent_listen) and by the
 * agent when it runs without vmux-init (and, for host tests, on a Unix
 * socket). Linked into both.
 */
#include <sys/socket.h>

#include <linux/vm_sockets.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "proto.h"

/* A close-on-exec stream socket listening at sa; fd or -errno. */
int
sock_listen(const struct sockaddr *sa, socklen_t len)
{
	int fd, err;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, sa, len) < 0 || listen(fd, SOMAXCONN) < 0) {
		err = errno;
		close(fd);
		return -err;
	}
	return fd;
}

/* Listen on AF_VSOCK port `port`, any CID, close-on-exec; fd or -errno. */
int
vsock_listen(unsigned port)
{
	struct sockaddr_vm sa;

	memset(&sa, 0, sizeof sa);
	sa.svm_family = AF_VSOCK;
	sa.svm_cid = VMADDR_CID_ANY;
	sa.svm_port = port;
	return sock_listen((struct sockaddr *)&sa, sizeof sa);
}
