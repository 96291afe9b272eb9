/*
 * test_session_transport.c: the client side of the bridge's CONNECT/OK
 * handshake, against fake bridges over socketpairs and Unix sockets.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "unit.h"

/* Read one line (up to '\n') from fd into buf; its length or -1. */
static int
read_line(int fd, char *buf, size_t size)
{
	size_t n = 0;

	while (n + 1 < size) {
		if (read(fd, buf + n, 1) != 1)
			return -1;
		if (buf[n++] == '\n')
			break;
	}
	buf[n] = '\0';
	return (int)n;
}

/*
 * A fake bridge in a child: read the request line, check it is want (if
 * given), then write each reply piece with a pause between, then close.
 */
static pid_t
fake_bridge(int fd, const char *want, const char *const *pieces)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	char line[128];
	if (read_line(fd, line, sizeof line) < 0)
		_exit(3);
	if (want != NULL && strcmp(line, want) != 0)
		_exit(4);
	for (; pieces != NULL && *pieces != NULL; pieces++) {
		if (write_all(fd, *pieces, strlen(*pieces)) < 0)
			_exit(5);
		usleep(30000);
	}
	close(fd);
	_exit(0);
}

/* Wait for a child; its exit status (or 100+signal). */
static int
reap(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

/* Run one handshake against a socketpair fake; returns its result. */
static int
handshake(
    const char *const *pieces, unsigned *local, char **cause, int *rest_fd)
{
	int sv[2], rc;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		fatal("socketpair");
	pid = fake_bridge(sv[1], "CONNECT 5005\n", pieces);
	close(sv[1]);
	rc = transport_handshake(sv[0], 5005, mono_ms() + 5000, local, cause);
	if (reap(pid) != 0)
		rc = -99;
	if (rest_fd != NULL)
		*rest_fd = sv[0];
	else
		close(sv[0]);
	return rc;
}

TEST(handshake_ok_and_bytes_after_kept)
{
	const char *pieces[] = {"OK 1073741824\nhello", " world", NULL};
	char *cause = NULL, buf[64];
	unsigned local = 0;
	int fd;
	ssize_t n;

	CHECK_INT(handshake(pieces, &local, &cause, &fd), 0);
	CHECK_INT(local, 1073741824u);
	n = read_full(fd, buf, sizeof buf);
	CHECK_INT(n, 11);
	CHECK_MEM(buf, "hello world", 11);
	close(fd);
}

TEST(handshake_fragmented_and_crlf)
{
	const char *pieces[] = {"O", "K", " 4", "2\r", "\n", NULL};
	char *cause = NULL;
	unsigned local = 0;

	CHECK_INT(handshake(pieces, &local, &cause, NULL), 0);
	CHECK_INT(local, 42);
}

TEST(handshake_zero_bytes_is_retry)
{
	char *cause = NULL;

	CHECK_INT(handshake(NULL, NULL, &cause, NULL), TRANSPORT_RETRY);
	CHECK(cause == NULL);
}

TEST(handshake_garbage_is_error)
{
	static const char *bad[] = {"NO\n", "OK\n", "OK \n", "OK x\n",
	    "OK 12a\n", "OK 99999999999\n", "ok 5\n", "OK -1\n", "OK  5\n",
	    "\n"};
	size_t i;

	for (i = 0; i < nitems(bad); i++) {
		const char *pieces[] = {bad[i], NULL};
		char *cause = NULL;
		if (handshake(pieces, NULL, &cause, NULL) != -1) {
			unit_fail(__FILE__, __LINE__, "accepted '%s'", bad[i]);
			return;
		}
		CHECK(cause != NULL &&
		    strstr(cause, "unexpected reply from the bridge") != NULL);
		CHECK(strchr(cause, '\n') == NULL);
		free(cause);
	}
}

TEST(handshake_partial_then_close)
{
	const char *pieces[] = {"OK 12", NULL};
	char *cause = NULL;

	CHECK_INT(handshake(pieces, NULL, &cause, NULL), -1);
	CHECK(strstr(cause, "mid-reply") != NULL);
	free(cause);
}

TEST(handshake_overlong_line)
{
	char longline[200];
	const char *pieces[] = {longline, NULL};
	char *cause = NULL;

	memset(longline, '7', sizeof longline - 1);
	longline[sizeof longline - 1] = '\0';
	CHECK_INT(handshake(pieces, NULL, &cause, NULL), -1);
	CHECK(strstr(cause, "too long") != NULL);
	free(cause);
}

TEST(handshake_deadline)
{
	int sv[2];
	char *cause = NULL;
	uint64_t start;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	start = mono_ms();
	/* nobody answers on sv[1] */
	CHECK_INT(
	    transport_handshake(sv[0], 5005, start + 200, NULL, &cause), -1);
	CHECK(mono_ms() >= start + 200);
	CHECK(strstr(cause, "timed out") != NULL);
	free(cause);
	close(sv[0]);
	close(sv[1]);
}

/* A listening Unix socket at dir/s.sock; returns the fd, path in *path. */
static int
listen_at(const char *dir, char **path)
{
	struct sockaddr_un sun;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	xasprintf(path, "%s/s.sock", dir);
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	strcpy(sun.sun_path, *path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof sun) != 0 ||
	    listen(fd, 16) != 0)
		fatal("listen %s", *path);
	return fd;
}

/*
 * A fake bridge server: the first `refuse` connections are closed with
 * zero bytes after the CONNECT line, the next gets `reply`. -1: refuse all.
 */
static pid_t
serve(int lfd, int refuse, const char *reply)
{
	pid_t pid = fork();
	int i;

	if (pid != 0)
		return pid;
	for (i = 0; refuse < 0 || i <= refuse; i++) {
		char line[128];
		int c = accept(lfd, NULL, NULL);
		if (c < 0)
			_exit(2);
		if (read_line(c, line, sizeof line) < 0 ||
		    strcmp(line, "CONNECT 6000\n") != 0)
			_exit(3);
		if (refuse >= 0 && i == refuse) {
			write_all(c, reply, strlen(reply));
			close(c);
			_exit(0);
		}
		close(c);
	}
	_exit(0);
}

/* A temporary directory. */
static char *
tmpdir(void)
{
	char *d = xstrdup("/tmp/vmux-unit-XXXXXX");

	if (mkdtemp(d) == NULL)
		fatal("mkdtemp");
	return d;
}

TEST(connect_retries_until_listener)
{
	char *d = tmpdir(), *path, *cause = NULL, buf[32];
	struct vsock_target t = {0};
	int lfd = listen_at(d, &path), fd;
	pid_t pid = serve(lfd, 3, "OK 1073741830\nstream-bytes");
	ssize_t n;

	t.cid = 3;
	t.uds = path;
	fd = transport_connect(&t, 6000, mono_ms() + 10000, &cause);
	CHECK(fd >= 0);
	n = read_full(fd, buf, sizeof buf);
	CHECK_INT(n, 12);
	CHECK_MEM(buf, "stream-bytes", 12);
	CHECK_INT(reap(pid), 0); /* it saw 4 well-formed CONNECTs */
	close(fd);
	close(lfd);
	rmtree(d);
	free(path);
	free(d);
}

TEST(connect_gives_up_at_deadline)
{
	char *d = tmpdir(), *path, *cause = NULL;
	struct vsock_target t = {0};
	int lfd = listen_at(d, &path);
	pid_t pid = serve(lfd, -1, NULL);
	uint64_t start = mono_ms();

	t.cid = 3;
	t.uds = path;
	CHECK_INT(transport_connect(&t, 6000, start + 400, &cause), -1);
	CHECK(mono_ms() >= start + 400);
	CHECK(strstr(cause, "port 6000 is not accepting") != NULL);
	free(cause);
	kill(pid, SIGKILL);
	reap(pid);
	close(lfd);
	rmtree(d);
	free(path);
	free(d);
}

TEST(connect_garbage_is_not_retried)
{
	char *d = tmpdir(), *path, *cause = NULL;
	struct vsock_target t = {0};
	int lfd = listen_at(d, &path);
	pid_t pid = serve(lfd, 0, "HELLO\n");

	t.cid = 3;
	t.uds = path;
	CHECK_INT(transport_connect(&t, 6000, mono_ms() + 5000, &cause), -1);
	CHECK(strstr(cause, "unexpected reply") != NULL);
	free(cause);
	CHECK_INT(reap(pid), 0);
	close(lfd);
	rmtree(d);
	free(path);
	free(d);
}

TEST(connect_missing_socket_fails_fast)
{
	struct vsock_target t = {.cid = 3, .uds = "/nonexistent/vsock.sock"};
	char *cause = NULL;
	uint64_t start = mono_ms();

	CHECK_INT(transport_connect(&t, 5005, start + 10000, &cause), -1);
	CHECK(mono_ms() < start + 5000);
	CHECK(strstr(cause, "/nonexistent/vsock.sock") != NULL);
	free(cause);
}

TEST(session_target_picks_transport)
{
	struct session_record r;
	struct vsock_target t = {0};

	memset(&r, 0, sizeof r);
	r.cid = 9;
	r.vsock_uds = "/x/vsock.sock";
	session_target(&r, &t);
	CHECK_INT(t.cid, 9);
	CHECK_STR(t.uds, "/x/vsock.sock");
	r.vsock_kernel = 1;
	session_target(&r, &t);
	CHECK(t.uds == NULL);
}
