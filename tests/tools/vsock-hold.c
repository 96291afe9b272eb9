/*
 * vsock-hold.c: hold N connections to a guest's echo server open at once
 * through a hybrid-vsock Unix socket, from one process (a test tool).
 *
 *	vsock-hold UDS PORT N DEADLINE_S
 *
 * Each connection sends "CONNECT PORT\n" and "hello I\n" and counts as
 * established once the OK line and its own echo came back. A connection
 * closed before that (the guest refused it, say with its listen backlog
 * full) is retried after a short, growing backoff, as real clients must.
 * Only when all N are established at the same time (none is closed on the
 * way) does each send "bye I\n"; every echo is then read in one pass. One
 * poll(2) loop drives everything, so the tool costs the machine almost
 * nothing and the guest, not the harness, is what is measured.
 *
 * Prints "established N, refused R, echoed E of N" and exits 0 only when
 * all N echoed both lines before the deadline; 1 otherwise, 2 on bad use.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum state { IDLE, WAIT_HELLO, HELD, WAIT_BYE, DONE };

struct conn {
	int fd;
	enum state state;
	int tries;
	long long retry_at; /* IDLE: when to connect again (ms) */
	char in[256];
	size_t len;
};

static const char *uds;
static int port;

/* Monotonic milliseconds. */
static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Write all of s to fd (a short line; the socket has room): 0 or -1. */
static int
send_line(int fd, const char *s)
{
	size_t len = strlen(s);

	return send(fd, s, len, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

/* Open connection i and send its CONNECT and hello lines: 0 or -1. */
static int
conn_open(struct conn *c, int i)
{
	struct sockaddr_un sa;
	char line[64];

	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", uds);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0)
		return -1;
	snprintf(line, sizeof line, "CONNECT %d\nhello %d\n", port, i);
	if (send_line(c->fd, line) != 0)
		return -1;
	c->len = 0;
	c->state = WAIT_HELLO;
	return 0;
}

/* Drop connection c and schedule a retry with a growing backoff. */
static void
conn_retry(struct conn *c)
{
	int backoff = 10 << (c->tries < 6 ? c->tries : 6);

	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->tries++;
	c->state = IDLE;
	c->retry_at = now_ms() + backoff + rand() % backoff;
}

/* Does c's input hold the line "WORD I\n" after its OK line? */
static int
conn_has(const struct conn *c, const char *word, int i)
{
	char want[64];

	snprintf(want, sizeof want, "\n%s %d\n", word, i);
	return c->len > 3 && memcmp(c->in, "OK ", 3) == 0 &&
	    memmem(c->in, c->len, want, strlen(want)) != NULL;
}

int
main(int argc, char **argv)
{
	struct conn *conns;
	struct pollfd *pfd;
	int *idx; /* pfd[k] watches conns[idx[k]] */
	int n, established = 0, refused = 0, echoed = 0, byes = 0, i, np, ms;
	long long deadline, now;
	char line[64];
	ssize_t r;

	if (argc != 5 || (port = atoi(argv[2])) <= 0 ||
	    (n = atoi(argv[3])) <= 0 || atoi(argv[4]) <= 0) {
		fprintf(stderr, "usage: vsock-hold UDS PORT N DEADLINE_S\n");
		return 2;
	}
	uds = argv[1];
	deadline = now_ms() + atoll(argv[4]) * 1000;
	srand((unsigned)getpid());
	conns = calloc((size_t)n, sizeof *conns);
	pfd = calloc((size_t)n, sizeof *pfd);
	idx = calloc((size_t)n, sizeof *idx);
	if (conns == NULL || pfd == NULL || idx == NULL)
		return 1;
	for (i = 0; i < n; i++) {
		conns[i].fd = -1;
		if (conn_open(&conns[i], i) != 0)
			conn_retry(&conns[i]);
	}

	while ((now = now_ms()) < deadline && echoed < n) {
		/* All held at once: say bye on each, then read every echo. */
		if (established == n && !byes) {
			for (i = 0; i < n; i++) {
				snprintf(line, sizeof line, "bye %d\n", i);
				if (send_line(conns[i].fd, line) != 0)
					goto out;
				conns[i].state = WAIT_BYE;
			}
			byes = 1;
		}
		ms = 200;
		for (i = np = 0; i < n; i++) {
			struct conn *c = &conns[i];

			if (c->state == IDLE && c->retry_at <= now &&
			    conn_open(c, i) != 0)
				conn_retry(c);
			if (c->state == IDLE && c->retry_at - now < ms)
				ms = (int)(c->retry_at > now ? c->retry_at - now
				                             : 0);
			if (c->state == WAIT_HELLO || c->state == WAIT_BYE ||
			    c->state == HELD) {
				pfd[np].fd = c->fd;
				pfd[np].events = POLLIN;
				idx[np++] = i;
			}
		}
		if (poll(pfd, (nfds_t)np, ms) < 0 && errno != EINTR)
			return 1;
		for (i = 0; i < np; i++) {
			struct conn *c = &conns[idx[i]];

			if (pfd[i].revents == 0)
				continue;
			r = recv(c->fd, c->in + c->len, sizeof c->in - c->len,
			    MSG_DONTWAIT);
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (r <= 0) {
				if (c->state == WAIT_HELLO) {
					refused++;
					conn_retry(c);
					continue;
				}
				printf("connection %d closed while held\n",
				    (int)(c - conns));
				goto out;
			}
			c->len += (size_t)r;
			if (c->state == WAIT_HELLO &&
			    conn_has(c, "hello", (int)(c - conns))) {
				c->state = HELD;
				established++;
			} else if (c->state == WAIT_BYE &&
			    conn_has(c, "bye", (int)(c - conns))) {
				c->state = DONE;
				echoed++;
				close(c->fd);
				c->fd = -1;
			} else if (c->len == sizeof c->in) {
				printf("connection %d: unexpected bytes\n",
				    (int)(c - conns));
				goto out;
			}
		}
	}
out:
	for (i = established = 0; i < n; i++)
		established += conns[i].state >= HELD;
	free(idx);
	free(pfd);
	free(conns);
	printf("established %d, refused %d, echoed %d of %d\n", established,
	    refused, echoed, n);
	return echoed == n ? 0 : 1;
}
