/*
 * transport.c: a byte stream to a guest vsock port.
 *
 * Sessions on the kernel's vhost-vsock are reached with plain AF_VSOCK.
 * Sessions on vmux-bridge are reached through its hybrid-vsock Unix socket:
 * send "CONNECT <port>\n", read "OK <local_port>\n", then the socket is the
 * stream. The OK line is read one byte at a time so bytes the guest sends
 * right after it stay in the socket for the caller. A bridge that closes
 * with zero bytes means nobody listens on that guest port (yet): we retry
 * with backoff until the caller's deadline, since a guest that is still
 * booting looks exactly like that (Firecracker #1253).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <linux/vm_sockets.h>

#include "common/common.h"
#include "session.h"

/* The bridge's reply line is short; anything longer is garbage. */
#define OK_LINE_MAX 64

/* Backoff between attempts while the guest port is not accepting: kept
 * short, so a guest that is booting is seen the moment its agent listens
 * (at most 500 ms, a boot could wait up to that long for nothing). */
#define BACKOFF_FIRST_MS 20
#define BACKOFF_MAX_MS   80

/* Where the session's guest ports are reached. */
void
session_target(const struct session_record *r, struct vsock_target *t)
{
	t->cid = r->cid;
	t->uds = r->vsock_kernel ? NULL : r->vsock_uds;
	t->host = NULL;
	t->session = NULL;
}

static volatile int *cancel_flag; /* see transport_cancel_on */

/*
 * From now on, every wait here ends early (-ECANCELED, or "interrupted")
 * once *flag is non-zero: a signal handler sets it, so Ctrl-C during a
 * boot stops it at once instead of after a connect's deadline. NULL: off.
 */
void
transport_cancel_on(volatile int *flag)
{
	cancel_flag = flag;
}

/* Has the caller's flag asked every wait to end? */
int
transport_cancelled(void)
{
	return cancel_flag != NULL && *cancel_flag != 0;
}

/* poll one fd until events or deadline: 1 ready, 0 timed out, -errno. */
int
wait_fd(int fd, short events, uint64_t deadline)
{
	struct pollfd pfd = {.fd = fd, .events = events};

	for (;;) {
		uint64_t now = mono_ms();
		int left, n;

		if (transport_cancelled())
			return -ECANCELED;
		if (now >= deadline)
			return 0;
		left = deadline - now > 60000 ? 60000 : (int)(deadline - now);
		n = poll(&pfd, 1, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n > 0)
			return 1;
	}
}

/* Send all of buf before the deadline (never SIGPIPE); 0 or -errno. */
int
send_all_deadline(int fd, const void *buf, size_t len, uint64_t deadline)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		n = wait_fd(fd, POLLOUT, deadline);
		if (n < 0)
			return (int)n;
		if (n == 0)
			return -ETIMEDOUT;
	}
	return 0;
}

/* Show a reply line safely inside an error message. */
static void
sanitize(char *s)
{
	for (; *s != '\0'; s++) {
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			*s = '?';
	}
}

/* Parse "OK <u32>" (the '\n' already stripped, a '\r' allowed). */
static int
parse_ok(char *line, size_t len, unsigned *local_port)
{
	unsigned long long v = 0;
	size_t i;

	if (len > 0 && line[len - 1] == '\r')
		line[--len] = '\0';
	if (len < 4 || strncmp(line, "OK ", 3) != 0 || len - 3 > 10)
		return -1;
	for (i = 3; i < len; i++) {
		if (line[i] < '0' || line[i] > '9')
			return -1;
		v = v * 10 + (unsigned)(line[i] - '0');
	}
	if (v > 0xffffffffULL)
		return -1;
	if (local_port != NULL)
		*local_port = (unsigned)v;
	return 0;
}

/*
 * Send CONNECT on a connected bridge socket and read the OK line. Returns 0
 * (stream ready), TRANSPORT_RETRY (closed with zero bytes: nothing listens
 * yet) or -1 with cause. Reads nothing past the '\n'.
 */
int
transport_handshake(int fd, unsigned port, uint64_t deadline,
    unsigned *local_port, char **cause)
{
	char req[32], line[OK_LINE_MAX + 1];
	size_t got = 0;
	int n;

	snprintf(req, sizeof req, "CONNECT %u\n", port);
	n = send_all_deadline(fd, req, strlen(req), deadline);
	if (n == -EPIPE || n == -ECONNRESET)
		return TRANSPORT_RETRY;
	if (n < 0) {
		xasprintf(cause, "cannot send to the bridge: %s", strerror(-n));
		return -1;
	}
	for (;;) {
		char c;
		ssize_t r;

		n = wait_fd(fd, POLLIN, deadline);
		if (n < 0) {
			xasprintf(cause, "bridge socket: %s", strerror(-n));
			return -1;
		}
		if (n == 0) {
			xasprintf(cause,
			    "timed out waiting for the bridge to connect "
			    "guest port %u",
			    port);
			return -1;
		}
		r = recv(fd, &c, 1, MSG_DONTWAIT);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if ((r == 0 || (r < 0 && errno == ECONNRESET)) && got == 0)
			return TRANSPORT_RETRY;
		if (r < 0) {
			xasprintf(cause, "bridge socket: %s", strerror(errno));
			return -1;
		}
		if (r == 0) {
			line[got] = '\0';
			sanitize(line);
			xasprintf(cause,
			    "bridge closed the connection mid-reply ('%s')",
			    line);
			return -1;
		}
		if (c == '\n')
			break;
		if (got == OK_LINE_MAX) {
			xasprintf(cause, "bridge reply too long");
			return -1;
		}
		line[got++] = c;
	}
	line[got] = '\0';
	if (parse_ok(line, got, local_port) != 0) {
		sanitize(line);
		xasprintf(
		    cause, "unexpected reply from the bridge: '%s'", line);
		return -1;
	}
	return 0;
}

/* Connect fd to the bridge's Unix socket; 0, TRANSPORT_RETRY or -1. */
static int
connect_uds(int fd, const char *path, uint64_t deadline, char **cause)
{
	struct sockaddr_un sun;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sun.sun_path) {
		xasprintf(cause, "socket path too long: %s", path);
		return -1;
	}
	strcpy(sun.sun_path, path);
	if (connect(fd, (struct sockaddr *)&sun, sizeof sun) == 0)
		return 0;
	if (errno == EAGAIN || errno == EINTR)
		return TRANSPORT_RETRY; /* backlog full: try again */
	if (errno == EINPROGRESS) {
		int n = wait_fd(fd, POLLOUT, deadline), error = 0;
		socklen_t len = sizeof error;
		if (n > 0 &&
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) == 0 &&
		    error == 0)
			return 0;
		return TRANSPORT_RETRY;
	}
	xasprintf(cause,
	    "cannot connect to the bridge socket %s: %s (is the session "
	    "running?)",
	    path, strerror(errno));
	return -1;
}

/* Connect fd to a guest CID and port over AF_VSOCK; 0, RETRY or -1. */
static int
connect_vsock(
    int fd, unsigned cid, unsigned port, uint64_t deadline, char **cause)
{
	struct sockaddr_vm svm;
	int error = 0, n;
	socklen_t len = sizeof error;

	memset(&svm, 0, sizeof svm);
	svm.svm_family = AF_VSOCK;
	svm.svm_cid = cid;
	svm.svm_port = port;
	if (connect(fd, (struct sockaddr *)&svm, sizeof svm) == 0)
		return 0;
	error = errno;
	if (error == EINPROGRESS) {
		n = wait_fd(fd, POLLOUT, deadline);
		if (n <= 0)
			return TRANSPORT_RETRY;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0)
			error = errno;
		if (error == 0)
			return 0;
	}
	if (error == ECONNRESET || error == ECONNREFUSED ||
	    error == ETIMEDOUT || error == EINTR || error == EAGAIN)
		return TRANSPORT_RETRY;
	xasprintf(cause, "vsock connect to CID %u port %u: %s", cid, port,
	    strerror(error));
	return -1;
}

/*
 * A connected, blocking stream to guest port `port`, retrying while the
 * port does not accept yet, until deadline. Returns the fd or -1.
 */
int
transport_connect(const struct vsock_target *t, unsigned port,
    uint64_t deadline, char **cause)
{
	uint64_t backoff = BACKOFF_FIRST_MS;

	if (t->host != NULL) /* its vmux connects there, retries included */
		return host_stream(t->host, t->session, port, deadline, cause);
	for (;;) {
		char *why = NULL;
		int fd, rc;

		if (t->uds != NULL)
			fd = socket(AF_UNIX,
			    SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		else
			fd = socket(AF_VSOCK,
			    SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0) {
			xasprintf(cause, "%s socket: %s",
			    t->uds != NULL ? "unix" : "vsock", strerror(errno));
			return -1;
		}
		if (t->uds != NULL) {
			rc = connect_uds(fd, t->uds, deadline, &why);
			if (rc == 0)
				rc = transport_handshake(
				    fd, port, deadline, NULL, &why);
		} else
			rc = connect_vsock(fd, t->cid, port, deadline, &why);
		if (rc == 0 && set_nonblock(fd, 0) == 0)
			return fd;
		close(fd);
		uint64_t now = mono_ms();
		if (rc < 0 && now < deadline) {
			*cause = why;
			return -1;
		}
		free(why);
		if (now >= deadline) {
			/* out of time, whichever step we were in */
			xasprintf(cause,
			    "guest port %u is not accepting connections "
			    "(nothing listening, or the guest is not up)",
			    port);
			return -1;
		}
		if (transport_cancelled()) {
			xasprintf(cause, "interrupted");
			return -1;
		}
		if (backoff > deadline - now)
			backoff = deadline - now;
		usleep((useconds_t)backoff * 1000);
		backoff =
		    backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
	}
}
