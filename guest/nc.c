/*
 * nc.c: vmux-nc, a netcat for AF_VSOCK (built static, shipped in the guest).
 *
 *   vmux-nc -l PORT [-k] [-e CMD [ARG...]]   listen on PORT (any CID)
 *   vmux-nc CID PORT                          connect (CID 2 is the host)
 *
 * Without -e, bytes are relayed between stdin/stdout and the connection: at
 * EOF on stdin the write side is shut down (the peer sees EOF), and the
 * program ends when the peer closes (after sending the rest of stdin if the
 * peer only shut down its own sending side). With -e the connection becomes
 * CMD's stdin and stdout (`-e cat` is an echo server). -k keeps listening:
 * one connection after another, or, with -e, a child per connection.
 */
#include <sys/socket.h>
#include <sys/wait.h>

#include <linux/vm_sockets.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BUFSZ 65536

/* One direction of the relay: bytes read from `in` wait in buf for `out`. */
struct flow {
	int in, out;
	int out_is_sock;
	char buf[BUFSZ];
	size_t off, len;
	int eof;
};

/* Print usage and exit 2. */
static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr,
	    "usage: vmux-nc -l PORT [-k] [-e CMD [ARG...]]\n"
	    "       vmux-nc CID PORT\n");
	exit(2);
}

/* Parse a decimal number in [0, max]; -1 if it is not one. */
static long
parse_num(const char *s, unsigned long max)
{
	unsigned long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || v > max)
		return -1;
	return (long)v;
}

/* Pull bytes from f->in into the empty buffer; 0, or -1 on error. */
static int
flow_read(struct flow *f)
{
	ssize_t n = read(f->in, f->buf, sizeof f->buf);

	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -1;
	if (n == 0)
		f->eof = 1;
	f->off = 0;
	f->len = (size_t)n;
	return 0;
}

/* Push buffered bytes to f->out; 0, or -1 on error. */
static int
flow_write(struct flow *f)
{
	ssize_t n;

	if (f->out_is_sock)
		n = send(f->out, f->buf + f->off, f->len, MSG_NOSIGNAL);
	else
		n = write(f->out, f->buf + f->off, f->len);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -1;
	f->off += (size_t)n;
	f->len -= (size_t)n;
	return 0;
}

/* Set O_NONBLOCK on fd. */
static void
set_nonblock_fd(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags >= 0)
		fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

/* Is the peer still receiving? A zero-length send fails once it is not. */
static int
peer_reads(int s)
{
	return send(s, "", 0, MSG_NOSIGNAL) == 0;
}

/*
 * Relay stdin -> s and s -> stdout. Stdin's EOF shuts down our sending side;
 * the peer's EOF ends the relay once everything it sent is written out and,
 * if it still reads (it only shut down its sending side), stdin is sent too.
 * Returns 0, or -1 with a message printed.
 */
static int
relay(int s)
{
	static struct flow up, down;
	struct pollfd pfd[2];
	int up_done = 0, down_done;

	set_nonblock_fd(s); /* a full socket must not stall the other way */
	up = (struct flow){.in = 0, .out = s, .out_is_sock = 1};
	down = (struct flow){.in = s, .out = 1};
	for (;;) {
		if (!up_done && up.eof && up.len == 0) {
			shutdown(s, SHUT_WR);
			up_done = 1;
		}
		down_done = down.eof && down.len == 0;
		if (down_done && !up_done && !peer_reads(s))
			up_done = 1;
		if (down_done && up_done)
			return 0;

		/* Each flow waits either to read (empty) or to write. */
		pfd[0].fd = up_done ? -1 : up.len > 0 ? up.out : up.in;
		pfd[0].events = up.len > 0 ? POLLOUT : POLLIN;
		pfd[1].fd = down_done ? -1 : down.len > 0 ? down.out : down.in;
		pfd[1].events = down.len > 0 ? POLLOUT : POLLIN;
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			perror("vmux-nc: poll");
			return -1;
		}
		if (pfd[0].revents != 0) {
			if (up.len > 0 && flow_write(&up) < 0) {
				/* The peer no longer reads: stop sending. */
				if (errno != EPIPE && errno != ECONNRESET &&
				    errno != ENOTCONN)
					perror("vmux-nc: send");
				up_done = 1;
			} else if (up.len == 0 && flow_read(&up) < 0) {
				perror("vmux-nc: stdin");
				up.eof = 1;
			}
		}
		if (pfd[1].revents != 0) {
			if (down.len > 0) {
				if (flow_write(&down) < 0) {
					perror("vmux-nc: stdout");
					return -1;
				}
			} else if (flow_read(&down) < 0) {
				if (errno != ECONNRESET) {
					perror("vmux-nc: recv");
					return -1;
				}
				down.eof = 1; /* reset by the peer */
				up_done = 1;
			}
		}
	}
}

/* Make the connection CMD's stdin and stdout and exec it. */
static void __attribute__((noreturn)) run_cmd(int c, char **cmd)
{
	signal(SIGCHLD, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	dup2(c, 0);
	dup2(c, 1);
	if (c > 1)
		close(c);
	execvp(cmd[0], cmd);
	fprintf(stderr, "vmux-nc: %s: %s\n", cmd[0], strerror(errno));
	_exit(127);
}

/* Listen on port; serve one connection, or keep going with -k. */
static int
do_listen(unsigned port, int keep, char **cmd)
{
	struct sockaddr_vm sa = {.svm_family = AF_VSOCK,
	    .svm_cid = VMADDR_CID_ANY,
	    .svm_port = port};
	int l, c, rc = 0;
	pid_t pid;

	if ((l = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
		perror("vmux-nc: socket(AF_VSOCK)");
		return 1;
	}
	if (bind(l, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    listen(l, SOMAXCONN) < 0) {
		fprintf(stderr, "vmux-nc: listen on port %u: %s\n", port,
		    strerror(errno));
		return 1;
	}
	if (cmd != NULL && keep)
		signal(SIGCHLD, SIG_IGN); /* children reap themselves */
	do {
		if ((c = accept4(l, NULL, NULL, SOCK_CLOEXEC)) < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			perror("vmux-nc: accept");
			return 1;
		}
		if (cmd == NULL) {
			rc = relay(c) < 0 ? 1 : 0;
			close(c);
			continue;
		}
		if (!keep) {
			close(l);
			run_cmd(c, cmd);
		}
		if ((pid = fork()) < 0)
			perror("vmux-nc: fork");
		else if (pid == 0) {
			close(l);
			run_cmd(c, cmd);
		}
		close(c);
	} while (keep);
	close(l);
	return rc;
}

/* Connect to cid:port and relay stdin/stdout. */
static int
do_connect(unsigned cid, unsigned port)
{
	struct sockaddr_vm sa = {
	    .svm_family = AF_VSOCK, .svm_cid = cid, .svm_port = port};
	int s, rc;

	if ((s = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
		perror("vmux-nc: socket(AF_VSOCK)");
		return 1;
	}
	if (connect(s, (struct sockaddr *)&sa, sizeof sa) < 0) {
		fprintf(stderr, "vmux-nc: connect to %u:%u: %s\n", cid, port,
		    strerror(errno));
		return 1;
	}
	rc = relay(s) < 0 ? 1 : 0;
	close(s);
	return rc;
}

/* Parse the command line and run. */
int
main(int argc, char **argv)
{
	long port = -1, cid;
	int i, listen_mode = 0, keep = 0;
	char **cmd = NULL;

	signal(SIGPIPE, SIG_IGN);
	for (i = 1; i < argc && cmd == NULL; i++) {
		if (strcmp(argv[i], "-l") == 0 && i + 1 < argc) {
			listen_mode = 1;
			if ((port = parse_num(argv[++i], UINT_MAX)) < 0)
				usage();
		} else if (strcmp(argv[i], "-k") == 0)
			keep = 1;
		else if (strcmp(argv[i], "-e") == 0 && i + 1 < argc)
			cmd = argv + i + 1;
		else
			break;
	}
	if (listen_mode) {
		if (i < argc && cmd == NULL)
			usage();
		return do_listen((unsigned)port, keep, cmd);
	}
	if (keep || cmd != NULL || argc - i != 2)
		usage();
	if ((cid = parse_num(argv[i], UINT_MAX)) < 0 ||
	    (port = parse_num(argv[i + 1], UINT_MAX)) < 0)
		usage();
	return do_connect((unsigned)cid, (unsigned)port);
}
