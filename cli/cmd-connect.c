/*
 * cmd-connect.c: `vmux connect NAME PORT`: a raw byte stream to a guest
 * vsock port on stdin/stdout, like netcat.
 *
 * stdin EOF half-closes the stream (shutdown SHUT_WR) and we keep reading
 * until the guest closes its side. The socket is non-blocking and both
 * directions are buffered, so a peer that echoes (and so stops reading
 * while we do not read) cannot deadlock us.
 *
 * Inside a Slurm job (slurm.c), srun hands our stdout over as a terminal
 * (srun -u: a pipe there is forwarded only a line at a time), so a stdout
 * that is a terminal while stdin is not is made raw: a stream of bytes.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

#define CONNECT_TIMEOUT_DEFAULT 10
#define CONNECT_BUF             65536

static int cmd_connect_exec(struct args *);

static const struct cmd_opt cmd_connect_opts[] = {
    {"timeout", 't', "S", 0,
        "give up if the port does not accept within S seconds "
        "(default 10)"},
    {"announce", 0, NULL, 0,
        "print OK on a line once connected, or ERR and why (how vmux "
        "on another host reaches this one's guests)"},
    SELECT_OPT,
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_connect_entry = {
    .name = "connect",
    .pre = "NAME PORT",
    .summary = "Connect stdin and stdout to vsock port PORT of session "
               "NAME's guest. EOF on stdin half-closes the stream; vmux "
               "exits when the guest closes its side.",
    .flags = CMD_NAME_ONE | CMD_STDIN | CMD_OWN_TERMINAL | CMD_STREAM,
    .opts = cmd_connect_opts,
    .min_args = 2,
    .max_args = 2,
    .exec = cmd_connect_exec,
};

/* Copy between stdin/stdout and the stream until the guest closes. */
static int
connect_pump(int fd)
{
	char *in = xmalloc(CONNECT_BUF), *out = xmalloc(CONNECT_BUF);
	size_t in_off = 0, in_len = 0;
	int stdin_open = 1, sock_open = 1, shut = 0, rc = 0;

	set_nonblock(fd, 1);
	for (;;) {
		struct pollfd p[2];
		ssize_t n;

		if (!stdin_open && in_len == 0 && !shut) {
			shutdown(fd, SHUT_WR);
			shut = 1;
		}
		if (!sock_open)
			break;
		p[0].fd = stdin_open && in_len == 0 ? STDIN_FILENO : -1;
		p[0].events = POLLIN;
		p[1].fd = fd;
		p[1].events = POLLIN | (in_len > 0 ? POLLOUT : 0);
		p[0].revents = p[1].revents = 0;
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			cli_error("poll: %s", strerror(errno));
			rc = EXIT_VMUX;
			break;
		}
		if (p[0].revents != 0) {
			n = read(STDIN_FILENO, in, CONNECT_BUF);
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0)
				stdin_open = 0;
			else {
				in_off = 0;
				in_len = (size_t)n;
			}
		}
		if ((p[1].revents & POLLOUT) && in_len > 0) {
			n = send(fd, in + in_off, in_len, MSG_NOSIGNAL);
			if (n > 0) {
				in_off += (size_t)n;
				in_len -= (size_t)n;
			} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
				/* the guest stopped reading: drop input */
				in_len = 0;
				stdin_open = 0;
			}
		}
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			n = recv(fd, out, CONNECT_BUF, 0);
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (n < 0) {
				cli_error("connection: %s", strerror(errno));
				rc = EXIT_VMUX;
				break;
			}
			if (n == 0) {
				sock_open = 0;
				continue;
			}
			if (write_all(STDOUT_FILENO, out, (size_t)n) < 0)
				break; /* our reader went away */
		}
	}
	free(in);
	free(out);
	return rc;
}

/* Connect and pump. */
static int
cmd_connect_exec(struct args *a)
{
	struct session_record r;
	struct vsock_target t;
	const char *s = args_get(a, "timeout");
	char *cause = NULL;
	long long port, timeout = CONNECT_TIMEOUT_DEFAULT;
	int fd, rc, announce = args_has(a, "announce");
	struct termios was, raw;
	int restore = 0;

	if (option_number("port", a->argv[1], 0, 0xffffffffLL, &port, &cause) !=
	        0 ||
	    (s != NULL &&
	        option_number("--timeout", s, 1, 86400, &timeout, &cause) !=
	            0)) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	if ((rc = cli_running_session(a->argv[0], &r, &t)) != 0) {
		if (announce)
			printf("ERR %s\n",
			    cli_last_error != NULL ? cli_last_error : "failed");
		return rc;
	}
	fd = transport_connect(
	    &t, (unsigned)port, mono_ms() + (uint64_t)timeout * 1000, &cause);
	record_free(&r);
	if (fd < 0) {
		if (announce)
			printf("ERR %s\n", cause);
		cli_error("%s", cause);
		free(cause);
		return EXIT_VMUX;
	}
	if (!isatty(STDIN_FILENO) && tcgetattr(STDOUT_FILENO, &was) == 0) {
		raw = was; /* put back as it was when the stream ends */
		cfmakeraw(&raw);
		restore = tcsetattr(STDOUT_FILENO, TCSANOW, &raw) == 0;
	}
	/* the other host's vmux reads this line, then the stream */
	if (announce && write_all(STDOUT_FILENO, "OK\n", 3) < 0)
		rc = EXIT_VMUX;
	else
		rc = connect_pump(fd);
	close(fd);
	if (restore)
		tcsetattr(STDOUT_FILENO, TCSANOW, &was);
	return rc;
}
