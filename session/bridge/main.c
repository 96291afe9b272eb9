/*
 * main.c: vmux-bridge's command line.
 *
 *   vmux-bridge --vhost-user PATH --uds PATH --guest-cid N
 *       [--allow-port P]... [--connect-timeout MS] [--ready-fd FD]
 *   vmux-bridge --fwd-limit DIR N PROGRAM [ARG...]    (fwdlimit.c)
 *
 * Creates both listening sockets, writes "ready\n" to --ready-fd and closes
 * it, then serves until QEMU disconnects or SIGTERM/SIGINT (exit 0). A bad
 * command line is one line on stderr and exit 2; a setup failure exit 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "bridge.h"

/* Exit 2 with one line on stderr. */
static __attribute__((noreturn)) void
usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "vmux-bridge: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr,
	    " (usage: vmux-bridge --vhost-user PATH --uds PATH "
	    "--guest-cid N [--allow-port P]... "
	    "[--connect-timeout MS] [--ready-fd FD])\n");
	exit(2);
}

/* Parse a whole decimal number in [min, max]; 0 or -1. */
static int
number(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Parse the command line, open, say ready, serve. */
int
main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"vhost-user", required_argument, NULL, 'v'},
	    {"uds", required_argument, NULL, 'u'},
	    {"guest-cid", required_argument, NULL, 'c'},
	    {"allow-port", required_argument, NULL, 'a'},
	    {"connect-timeout", required_argument, NULL, 't'},
	    {"ready-fd", required_argument, NULL, 'r'},
	    {NULL, 0, NULL, 0},
	};
	struct bridge_cfg cfg = {0};
	struct bridge *b;
	char *cause = NULL;
	uint64_t v;
	int ch, status;

	if (argc > 1 && strcmp(argv[1], "--fwd-limit") == 0)
		return fwd_limit_main(argc, argv);
	log_open("vmux-bridge");
	cfg.ready_fd = -1;
	cfg.connect_timeout_ms = BRIDGE_DEFAULT_CONNECT_TIMEOUT;
	cfg.line_timeout_ms = BRIDGE_LINE_TIMEOUT;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		switch (ch) {
		case 'v':
			cfg.vhu_path = optarg;
			break;
		case 'u':
			cfg.uds_path = optarg;
			break;
		case 'c':
			if (number(optarg, 3, UINT32_MAX - 1, &v) != 0)
				usage_error("bad --guest-cid: %s", optarg);
			cfg.guest_cid = v;
			break;
		case 'a':
			if (number(optarg, 0, UINT32_MAX - 1, &v) != 0)
				usage_error("bad --allow-port: %s", optarg);
			if (cfg.nallow == BRIDGE_MAX_ALLOW)
				usage_error(
				    "too many --allow-port (%s)", "at most 64");
			cfg.allow[cfg.nallow++] = (uint32_t)v;
			break;
		case 't':
			if (number(optarg, 1, 3600000, &v) != 0)
				usage_error(
				    "bad --connect-timeout: %s", optarg);
			cfg.connect_timeout_ms = (uint32_t)v;
			break;
		case 'r':
			if (number(optarg, 0, 1 << 20, &v) != 0 ||
			    fcntl((int)v, F_GETFD) < 0)
				usage_error("bad --ready-fd: %s", optarg);
			cfg.ready_fd = (int)v;
			break;
		case ':':
			usage_error("%s needs a value", argv[optind - 1]);
		default:
			usage_error("unknown option %s", argv[optind - 1]);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument %s", argv[optind]);
	if (cfg.vhu_path == NULL || *cfg.vhu_path == '\0')
		usage_error("%s is required", "--vhost-user");
	if (cfg.uds_path == NULL || *cfg.uds_path == '\0')
		usage_error("%s is required", "--uds");
	if (cfg.guest_cid == 0)
		usage_error("%s is required", "--guest-cid");

	b = bridge_open(&cfg, &cause);
	if (b == NULL) {
		fprintf(stderr, "vmux-bridge: %s\n", cause);
		free(cause);
		return 1;
	}
	if (cfg.ready_fd >= 0) {
		if (write_all(cfg.ready_fd, "ready\n", 6) < 0)
			log_debug("ready fd: %s", strerror(errno));
		close(cfg.ready_fd);
	}
	status = bridge_run(b);
	bridge_close(b);
	log_debug("exiting with %d", status);
	return status;
}
