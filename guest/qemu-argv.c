/*
 * qemu-argv.c: print the QEMU command line vmux would run (one argument per
 * line), so guest/boot-check boots exactly what session/qemu.c builds.
 * A test tool, not installed.
 *
 *   qemu-argv --kernel K [--initrd I] [--accel tcg|kvm] [--cpus N]
 *             [--memory MB] [--console LOG] [--qmp SOCK]
 *             [--vhost-user SOCK [--reconnect] | --cid N] [--append TEXT]
 *             [--qemu BIN] [--ram-file FILE]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "session/qemu.h"

/* Parse options into a qemu_config and print qemu_argv's answer. */
int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"kernel", required_argument, NULL, 'k'},
	    {"initrd", required_argument, NULL, 'i'},
	    {"accel", required_argument, NULL, 'a'},
	    {"cpus", required_argument, NULL, 'c'},
	    {"memory", required_argument, NULL, 'm'},
	    {"console", required_argument, NULL, 'l'},
	    {"qmp", required_argument, NULL, 'q'},
	    {"vhost-user", required_argument, NULL, 'v'},
	    {"cid", required_argument, NULL, 'C'},
	    {"append", required_argument, NULL, 'A'},
	    {"qemu", required_argument, NULL, 'Q'},
	    {"ram-file", required_argument, NULL, 'R'},
	    {"reconnect", no_argument, NULL, 'r'}, {NULL, 0, NULL, 0}};
	struct qemu_config cfg = {
	    .accel = "tcg", .cpus = 2, .memory_mb = 512, .cid = 3};
	char **out;
	int c, i;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'k':
			cfg.kernel = optarg;
			break;
		case 'i':
			cfg.initrd = optarg;
			break;
		case 'a':
			cfg.accel = optarg;
			break;
		case 'c':
			cfg.cpus = atoi(optarg);
			break;
		case 'm':
			cfg.memory_mb = atoi(optarg);
			break;
		case 'l':
			cfg.console_log = optarg;
			break;
		case 'q':
			cfg.qmp = optarg;
			break;
		case 'v':
			cfg.vhost_user = optarg;
			break;
		case 'C':
			cfg.cid = (unsigned)atoi(optarg);
			break;
		case 'A':
			cfg.append = optarg;
			break;
		case 'Q':
			cfg.qemu = optarg;
			break;
		case 'R':
			cfg.ram_file = optarg;
			break;
		case 'r':
			cfg.vsock_reconnect = 1;
			break;
		default:
			fprintf(
			    stderr, "usage: qemu-argv --kernel K [options]\n");
			return 2;
		}
	}
	if ((out = qemu_argv(&cfg)) == NULL) {
		fprintf(stderr, "qemu-argv: no command line (--kernel?)\n");
		return 1;
	}
	for (i = 0; out[i] != NULL; i++)
		printf("%s\n", out[i]);
	argv_free(out);
	return 0;
}
