/*
 * main.c: vmux-console, the keeper of one session's serial console.
 *
 *   vmux-console [--adopt] SERIAL_BASE CLIENT_SOCK [READY_FD]
 *
 * READY_FD, when given, is closed once QEMU can open the FIFOs, so vmux
 * wakes then instead of polling for them. --adopt takes over the FIFOs of
 * a keeper that died under a running QEMU (which holds them open): vmux's
 * session watcher restarts a dead keeper so; its ring starts empty (the
 * boot so far is in console.log), and it is ready once CLIENT_SOCK is.
 *
 * QEMU's serial port is a pipe chardev on the FIFOs SERIAL_BASE.out (what
 * the guest writes) and SERIAL_BASE.in (its keys), made here; this process
 * is the other end (QEMU itself still appends the same bytes to
 * console.log: the chardev's logfile). FIFOs, not a socket: a serial port
 * writes a byte at a time and drops one it cannot write after a few tries,
 * and a socket's buffer is spent on such writes at a few hundred bytes
 * (seen under load: whole lines lost), while a pipe packs them, 1 MiB of
 * them here. Everything the guest writes on
 * ttyS0 (the kernel's messages, vmux-init's lines, a getty or an emergency
 * shell) is
 *  - kept in a ring of the last RING_SIZE bytes, replayed to each reader
 *    as it attaches, so `vmux console` shows the boot so far;
 *  - copied to every attached reader.
 * Readers attach at CLIENT_SOCK (mode 0600 under vmux's umask) and send
 * one line, "console rw\n" or "console ro\n". The answer is "ok rw\n",
 * "ok ro\n" or "busy\n" (someone holds the keyboard: there is one writer,
 * the first to ask; the others watch), then the ring and the live bytes.
 * What the writer sends goes to the guest's ttyS0.
 *
 * The guest is hostile and readers may be slow: nothing here blocks on a
 * reader. A reader more than CLIENT_MAX bytes behind is dropped (it can
 * attach again and gets the ring), so a stalled `vmux console` never stops
 * the guest's console, the log or the other readers. Input waiting for the
 * guest is bounded too (the writer's socket is not read while INPUT_MAX is
 * queued, and what a writer leaves untaken goes with it). A reader that
 * has not said hello within HELLO_WAIT_MS is dropped, so silent
 * connections cannot take every slot.
 *
 * Ready means the FIFOs and the socket exist: each is made at NAME.part
 * and renamed, SERIAL_BASE.out last, which vmux waits for. The keeper
 * exits once QEMU has closed its end of SERIAL_BASE.out (QEMU exited), or
 * on SIGTERM; CLIENT_SOCK is removed.
 * A setup failure is one line "vmux-console: ..." and exit 1; a bad command
 * line exit 2.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/common.h"

#define RING_SIZE     (256 * 1024)  /* the boot log replayed on attach */
#define CLIENT_MAX    (1024 * 1024) /* a reader this far behind is dropped */
#define INPUT_MAX     (64 * 1024)   /* the writer's bytes not yet taken */
#define MAX_CLIENTS   64
#define HELLO_MAX     64            /* "console rw\n" and some slack */
#define HELLO_WAIT_MS 5000          /* a reader says what it wants by then */
#define PIPE_SIZE     (1024 * 1024) /* guest output QEMU can hand us */

/* A queue of bytes (a reader's pending output, the writer's input). */
struct queue {
	char *buf;
	size_t off, len, cap;
};

/* One attached reader. */
struct client {
	int fd;
	int hello_done; /* its first line was read and answered */
	int writer;     /* holds the keyboard */
	int busy;       /* was told "busy": dropped once that is written */
	char hello[HELLO_MAX];
	size_t hello_len;
	uint64_t since;   /* mono_ms it connected (for HELLO_WAIT_MS) */
	struct queue out; /* bytes not yet written to it */
};

static struct {
	char ring[RING_SIZE];
	size_t ring_start, ring_len; /* the ring's oldest byte, and how many */
	struct client clients[MAX_CLIENTS];
	size_t nclients;
	struct queue input; /* the writer's bytes for the guest */
	const char *client_path;
	int sig_pipe[2]; /* on_stop's byte: poll wakes for a stop signal */
} K;

static volatile sig_atomic_t stopping;

/* One line on stderr, exit status (the client socket goes first). */
static __attribute__((noreturn, format(printf, 2, 3))) void
die(int status, const char *fmt, ...)
{
	va_list ap;

	if (K.client_path != NULL)
		unlink(K.client_path);
	fputs("vmux-console: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(status);
}

static void
on_stop(int sig)
{
	int saved = errno;

	(void)sig;
	stopping = 1;
	if (write(K.sig_pipe[1], "", 1) < 0) {
		/* full: a wake-up is pending already */
	}
	errno = saved;
}

/* Append n bytes to q (the caller has checked its bound). */
static void
queue_add(struct queue *q, const void *p, size_t n)
{
	if (q->off > 0 && q->off == q->len)
		q->off = q->len = 0;
	if (q->len + n > q->cap) {
		if (q->off > 0) { /* reuse the space already written */
			memmove(q->buf, q->buf + q->off, q->len - q->off);
			q->len -= q->off;
			q->off = 0;
		}
		if (q->len + n > q->cap) {
			q->cap =
			    q->len + n > 2 * q->cap ? q->len + n : 2 * q->cap;
			q->buf = xrealloc(q->buf, q->cap);
		}
	}
	memcpy(q->buf + q->len, p, n);
	q->len += n;
}

/* Bytes of q not yet written. */
static size_t
queue_pending(const struct queue *q)
{
	return q->len - q->off;
}

/*
 * Write what q can to the non-blocking fd: 0, or -1 when fd is gone.
 */
static int
queue_flush(struct queue *q, int fd)
{
	while (queue_pending(q) > 0) {
		ssize_t n = write(fd, q->buf + q->off, queue_pending(q));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0)
			return -1;
		q->off += (size_t)n;
	}
	return 0;
}

/* Keep the last RING_SIZE bytes the guest wrote. */
static void
ring_add(const char *p, size_t n)
{
	size_t end, first;

	if (n >= RING_SIZE) {
		p += n - RING_SIZE;
		n = RING_SIZE;
	}
	end = (K.ring_start + K.ring_len) % RING_SIZE;
	first = RING_SIZE - end < n ? RING_SIZE - end : n;
	memcpy(K.ring + end, p, first);
	memcpy(K.ring, p + first, n - first);
	K.ring_len += n;
	if (K.ring_len > RING_SIZE) { /* the oldest bytes were overwritten */
		K.ring_start =
		    (K.ring_start + K.ring_len - RING_SIZE) % RING_SIZE;
		K.ring_len = RING_SIZE;
	}
}

/* Queue the ring's bytes, oldest first, for c. */
static void
ring_replay(struct client *c)
{
	size_t first = RING_SIZE - K.ring_start;

	if (first > K.ring_len)
		first = K.ring_len;
	queue_add(&c->out, K.ring + K.ring_start, first);
	queue_add(&c->out, K.ring, K.ring_len - first);
}

/* Drop client i (the last one takes its place). */
static void
client_drop(size_t i)
{
	struct client *c = &K.clients[i];

	close(c->fd);
	free(c->out.buf);
	if (c->writer) /* its keys not yet taken go with it */
		K.input.off = K.input.len = 0;
	K.clients[i] = K.clients[--K.nclients];
}

/* Does some attached client hold the keyboard? */
static int
writer_present(void)
{
	for (size_t i = 0; i < K.nclients; i++)
		if (K.clients[i].writer)
			return 1;
	return 0;
}

/*
 * Read c's hello line; once whole, answer it and queue the ring. -1 drops
 * c (closed, or not speaking this protocol).
 */
static int
client_hello(struct client *c)
{
	ssize_t n = read(
	    c->fd, c->hello + c->hello_len, sizeof c->hello - c->hello_len);
	char *nl;
	const char *answer;

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0)
		return -1;
	c->hello_len += (size_t)n;
	nl = memchr(c->hello, '\n', c->hello_len);
	if (nl == NULL)
		return c->hello_len < sizeof c->hello ? 0 : -1;
	*nl = '\0';
	if (strcmp(c->hello, "console ro") == 0) {
		answer = "ok ro\n";
	} else if (strcmp(c->hello, "console rw") == 0) {
		if (writer_present()) {
			answer = "busy\n";
			c->busy = 1;
		} else {
			c->writer = 1;
			answer = "ok rw\n";
		}
	} else {
		return -1;
	}
	c->hello_done = 1;
	queue_add(&c->out, answer, strlen(answer));
	if (c->busy)
		return 0; /* flushed, then dropped */
	ring_replay(c);
	/* what the writer typed after its hello is input already */
	if (c->writer && (size_t)(c->hello + c->hello_len - nl - 1) > 0)
		queue_add(&K.input, nl + 1,
		    (size_t)(c->hello + c->hello_len - nl - 1));
	return 0;
}

/* Read the writer's keystrokes into the input queue. -1: it is gone. */
static int
client_input(struct client *c)
{
	char buf[4096];
	ssize_t n = read(c->fd, buf, sizeof buf);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0)
		return -1;
	if (c->writer)
		queue_add(&K.input, buf, (size_t)n);
	/* a reader's bytes are read and dropped: it cannot type */
	return 0;
}

/* What the guest wrote: to the ring and every reader (QEMU logs it). */
static void
guest_output(const char *p, size_t n)
{
	size_t i;

	ring_add(p, n);
	for (i = 0; i < K.nclients;) {
		struct client *c = &K.clients[i];

		if (c->hello_done && !c->busy) {
			if (queue_pending(&c->out) + n > CLIENT_MAX) {
				client_drop(
				    i); /* too slow: not worth a stall */
				continue;
			}
			queue_add(&c->out, p, n);
		}
		i++;
	}
}

/* Bind a listening socket at path (through path.part, renamed later). */
static int
listen_at(const char *path, char **part)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	xasprintf(part, "%s.part", path);
	if (strlen(*part) >= sizeof sa.sun_path)
		die(1, "socket path too long: %s", *part);
	memcpy(sa.sun_path, *part, strlen(*part) + 1);
	unlink(*part);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
	    listen(fd, 16) != 0)
		die(1, "cannot listen at %s: %s", *part, strerror(errno));
	return fd;
}

/*
 * Make the FIFO base.SUFFIX (at a .part name, renamed by the caller) and
 * open it: our end of QEMU's pipe chardev. Its fd.
 */
static int
fifo_make(const char *base, const char *suffix, int flags, char **part)
{
	int fd;

	xasprintf(part, "%s.%s.part", base, suffix);
	unlink(*part);
	if (mkfifo(*part, 0600) != 0)
		die(1, "mkfifo %s: %s", *part, strerror(errno));
	fd = open(*part, flags | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		die(1, "open %s: %s", *part, strerror(errno));
	return fd;
}

/*
 * Open the FIFO base.SUFFIX a dead keeper made (--adopt): a FIFO, not a
 * link to one. Its fd.
 */
static int
fifo_adopt(const char *base, const char *suffix, int flags)
{
	struct stat sb;
	char *path;
	int fd;

	xasprintf(&path, "%s.%s", base, suffix);
	fd = open(path, flags | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		die(1, "open %s: %s", path, strerror(errno));
	if (fstat(fd, &sb) != 0 || !S_ISFIFO(sb.st_mode))
		die(1, "%s is not a FIFO", path);
	free(path);
	return fd;
}

/* Rename base.SUFFIX.part to base.SUFFIX. */
static void
fifo_ready(const char *base, const char *suffix, const char *part)
{
	char *path;

	xasprintf(&path, "%s.%s", base, suffix);
	if (rename(part, path) != 0)
		die(1, "rename %s: %s", part, strerror(errno));
	free(path);
}

/*
 * The loop: QEMU's output (qfd), new readers, the readers; keys go to
 * qin. Returns when QEMU closed its end (a FIFO reports that only once a
 * writer came and went, so the wait for QEMU to start is the same loop).
 */
static void
serve(int qfd, int qin, int listen_fd)
{
	struct pollfd p[MAX_CLIENTS + 4];
	char buf[16384];

	while (!stopping) {
		size_t i, np = 0;
		int r, timeout = -1;
		uint64_t now = mono_ms();

		p[np++] = (struct pollfd){qfd, POLLIN, 0};
		/* keys the FIFO would not take yet: wake when it will */
		p[np++] = (struct pollfd){
		    qin, queue_pending(&K.input) > 0 ? POLLOUT : 0, 0};
		p[np++] = (struct pollfd){
		    listen_fd, K.nclients < MAX_CLIENTS ? POLLIN : 0, 0};
		p[np++] = (struct pollfd){K.sig_pipe[0], POLLIN, 0};
		for (i = 0; i < K.nclients; i++) {
			struct client *c = &K.clients[i];
			short ev = 0;

			if (!c->hello_done) { /* wake when its time is up */
				uint64_t left = c->since + HELLO_WAIT_MS > now
				    ? c->since + HELLO_WAIT_MS - now
				    : 0;
				if (timeout < 0 || (int)left < timeout)
					timeout = (int)left;
			}

			/* the writer is not read while its input is queued */
			if (!c->hello_done || !c->writer ||
			    queue_pending(&K.input) < INPUT_MAX)
				ev |= POLLIN;
			if (queue_pending(&c->out) > 0)
				ev |= POLLOUT;
			p[np++] = (struct pollfd){c->fd, ev, 0};
		}
		r = poll(p, np, timeout);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			die(1, "poll: %s", strerror(errno));

		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t n = read(qfd, buf, sizeof buf);

			if (n == 0 ||
			    (n < 0 && errno != EINTR && errno != EAGAIN))
				return; /* QEMU is gone */
			if (n > 0)
				guest_output(buf, (size_t)n);
		}
		if (p[2].revents & POLLIN) {
			int fd = accept4(listen_fd, NULL, NULL,
			    SOCK_CLOEXEC | SOCK_NONBLOCK);

			if (fd >= 0 && K.nclients < MAX_CLIENTS) {
				K.clients[K.nclients++] = (struct client){
				    .fd = fd, .since = mono_ms()};
			} else if (fd >= 0) {
				close(fd); /* can't happen: not polled when full
				            */
			}
		}
		/* Clients, back to front: a drop moves the last one down. */
		for (i = np - 4; i-- > 0;) {
			struct client *c = &K.clients[i];
			short re = p[i + 4].revents;
			int gone = 0;

			if (i >= K.nclients || p[i + 4].fd != c->fd)
				continue; /* dropped while output was copied */
			if (!c->hello_done &&
			    mono_ms() >= c->since + HELLO_WAIT_MS)
				gone = 1; /* silent: its slot is for others */
			if (!gone && (re & POLLOUT))
				gone = queue_flush(&c->out, c->fd) < 0;
			if (!gone && (re & (POLLIN | POLLHUP | POLLERR)))
				gone = c->hello_done ? client_input(c) < 0
				                     : client_hello(c) < 0;
			if (!gone && c->busy && queue_pending(&c->out) == 0)
				gone = 1; /* told "busy": done with it */
			if (gone)
				client_drop(i);
		}
		/* keys, the ones just read too: a FIFO of our own, O_RDWR, so
		 * never a broken pipe; what it will not take now waits in
		 * K.input (bounded), POLLOUT wakes us for it */
		if (queue_pending(&K.input) > 0 &&
		    queue_flush(&K.input, qin) < 0)
			K.input.off = K.input.len = 0;
	}
}

int
main(int argc, char **argv)
{
	int clisten, qfd, qin, adopt;
	char *qpart = NULL, *inpart = NULL, *cpart;
	struct sigaction sa = {.sa_handler = on_stop};

	adopt = argc > 1 && strcmp(argv[1], "--adopt") == 0;
	argc -= adopt;
	argv += adopt;
	if (argc != 3 && argc != 4) {
		fprintf(stderr,
		    "usage: vmux-console [--adopt] SERIAL_BASE "
		    "CLIENT_SOCK [READY_FD]\n");
		return 2;
	}
	if (pipe2(K.sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
		die(1, "pipe: %s", strerror(errno));
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* QEMU's pipe chardev: it writes BASE.out, reads BASE.in. A pipe, not
	 * a socket: 1-byte serial writes pack into its pages, and at 1 MiB it
	 * holds a long while of output if this process is slow to run (a
	 * serial port drops a byte it cannot write after a few tries) */
	qfd = adopt ? fifo_adopt(argv[1], "out", O_RDONLY)
	            : fifo_make(argv[1], "out", O_RDONLY, &qpart);
	if (fcntl(qfd, F_SETPIPE_SZ, PIPE_SIZE) < 0)
		fprintf(stderr, "vmux-console: F_SETPIPE_SZ: %s\n",
		    strerror(errno)); /* the default 64 KiB still works */
	qin = adopt ? fifo_adopt(argv[1], "in", O_RDWR)
	            : fifo_make(argv[1], "in", O_RDWR, &inpart);
	clisten = listen_at(argv[2], &cpart);
	if (rename(cpart, argv[2]) != 0)
		die(1, "rename %s: %s", cpart, strerror(errno));
	K.client_path = argv[2];
	if (!adopt) {
		fifo_ready(argv[1], "in", inpart);
		fifo_ready(argv[1], "out", qpart); /* last: vmux waits */
	}
	if (argc == 4 && atoi(argv[3]) > 2)
		close(atoi(argv[3])); /* vmux's wake-up */
	serve(qfd, qin, clisten);
	unlink(argv[2]);
	return 0;
}
