/*
 * test_agent_misc.c: signal names, the attach frame encoding, the peer
 * check and the memory budget.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <linux/vm_sockets.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "proto/attach.h"
#include "unit.h"

TEST(signame_parse_names)
{
	CHECK_INT(signame_parse("INT"), SIGINT);
	CHECK_INT(signame_parse("SIGINT"), SIGINT);
	CHECK_INT(signame_parse("int"), SIGINT);
	CHECK_INT(signame_parse("HUP"), SIGHUP);
	CHECK_INT(signame_parse("QUIT"), SIGQUIT);
	CHECK_INT(signame_parse("TERM"), SIGTERM);
	CHECK_INT(signame_parse("KILL"), SIGKILL);
	CHECK_INT(signame_parse("USR1"), SIGUSR1);
	CHECK_INT(signame_parse("USR2"), SIGUSR2);
	CHECK_INT(signame_parse("TSTP"), SIGTSTP);
	CHECK_INT(signame_parse("CONT"), SIGCONT);
	CHECK_INT(signame_parse("SIGWINCH"), SIGWINCH);
	CHECK_INT(signame_parse("SEGV"), -1);
	CHECK_INT(signame_parse("SIG"), -1);
	CHECK_INT(signame_parse(""), -1);
	CHECK_INT(signame_parse("2"), -1);
	CHECK_INT(signame_parse(NULL), -1);
}

TEST(signame_names)
{
	CHECK_STR(signame_name(SIGINT), "INT");
	CHECK_STR(signame_name(SIGKILL), "KILL");
	CHECK_STR(signame_name(SIGSEGV), "SEGV");
	CHECK(signame_name(0) == NULL);
}

TEST(attach_frame_round_trip)
{
	uint8_t buf[64], type = 0;
	uint32_t len = 0;

	vmux_attach_header(buf, VMUX_ATTACH_INPUT, 3);
	memcpy(buf + VMUX_ATTACH_HDR, "abc", 3);
	CHECK_INT(buf[0], 2);
	CHECK_INT(buf[1], 3);
	CHECK_INT(buf[2] | buf[3] | buf[4], 0);
	for (size_t n = 0; n < VMUX_ATTACH_HDR + 3; n++)
		CHECK_INT(vmux_attach_parse(buf, n, &type, &len), 0);
	CHECK_INT(vmux_attach_parse(buf, VMUX_ATTACH_HDR + 3, &type, &len),
	    VMUX_ATTACH_HDR + 3);
	CHECK_INT(type, VMUX_ATTACH_INPUT);
	CHECK_INT(len, 3);
	/* a frame followed by another: only the first is measured */
	vmux_attach_header(buf + 8, VMUX_ATTACH_DETACH, 0);
	CHECK_INT(vmux_attach_parse(buf, 13, &type, &len), 8);
}

TEST(attach_frame_too_large)
{
	uint8_t buf[VMUX_ATTACH_HDR], type;
	uint32_t len;

	vmux_attach_header(buf, VMUX_ATTACH_INPUT, VMUX_ATTACH_MAX_PAYLOAD + 1);
	CHECK_INT(vmux_attach_parse(buf, sizeof buf, &type, &len), -1);
	vmux_attach_header(buf, VMUX_ATTACH_INPUT, 0xffffffffu);
	CHECK_INT(vmux_attach_parse(buf, sizeof buf, &type, &len), -1);
}

TEST(attach_little_endian_helpers)
{
	uint8_t p[8];

	vmux_put_u16(p, 0x1234);
	CHECK(p[0] == 0x34 && p[1] == 0x12);
	CHECK_INT(vmux_get_u16(p), 0x1234);
	vmux_put_u32(p, 0xdeadbeef);
	CHECK(p[0] == 0xef && p[3] == 0xde);
	CHECK_INT(vmux_get_u32(p), 0xdeadbeef);
	vmux_put_u64(p, 0x0102030405060708ull);
	CHECK(p[0] == 0x08 && p[7] == 0x01);
	CHECK(vmux_get_u64(p) == 0x0102030405060708ull);
}

TEST(env_build_overrides_defaults)
{
	const char *defaults[] = {"PATH=/bin", "TERM=dumb", NULL};
	char *req[] = {"HOME=/tmp", "NEW=1", "TERM=xterm", NULL};
	char **env = env_build(req, defaults);

	CHECK_STR(env[0], "PATH=/bin");
	CHECK_STR(env[1], "TERM=xterm");
	CHECK_STR(env[2], "HOME=/tmp");
	CHECK_STR(env[3], "NEW=1");
	CHECK(env[4] == NULL);
	env_free(env);
}

TEST(env_build_home_is_the_users)
{
	const char *defaults[] = {"PATH=/bin", NULL};
	char **env;

	CHECK_STR(user_home(), "/root");
	user_home_set("/tmp/private-home");
	env = env_build(NULL, defaults);
	CHECK_STR(env[1], "HOME=/tmp/private-home");
	CHECK(env[2] == NULL);
	env_free(env);
	user_home_set("/root");
}

TEST(path_resolve_uses_path)
{
	char *env[] = {"PATH=/nonexistent:/bin:/usr/bin", NULL};
	char *cause = NULL, *p;

	p = path_resolve("sh", env, &cause);
	CHECK(p != NULL);
	CHECK(strcmp(p, "/bin/sh") == 0 || strcmp(p, "/usr/bin/sh") == 0);
	free(p);
	CHECK(path_resolve("no-such-command-x", env, &cause) == NULL);
	CHECK_STR(cause, "command not found: no-such-command-x");
	free(cause);
	p = path_resolve("/x/y", env, &cause);
	CHECK_STR(p, "/x/y");
	free(p);
}

TEST(peer_only_the_host_over_vsock)
{
	struct sockaddr_vm vm = {.svm_family = AF_VSOCK, .svm_port = 1234};
	struct sockaddr_un un = {.sun_family = AF_UNIX};

	vm.svm_cid = VMADDR_CID_HOST;
	CHECK(agent_peer_allowed((struct sockaddr *)&vm, sizeof vm));
	for (unsigned cid = 0; cid < 64; cid++) {
		if (cid == VMADDR_CID_HOST)
			continue;
		vm.svm_cid = cid; /* 1 is loopback, 3+ the guest itself */
		CHECK(!agent_peer_allowed((struct sockaddr *)&vm, sizeof vm));
	}
	vm.svm_cid = VMADDR_CID_ANY;
	CHECK(!agent_peer_allowed((struct sockaddr *)&vm, sizeof vm));
	vm.svm_cid = VMADDR_CID_HOST;
	CHECK(!agent_peer_allowed((struct sockaddr *)&vm, 4)); /* short */
	CHECK(agent_peer_allowed((struct sockaddr *)&un, sizeof un));
	CHECK(!agent_peer_allowed((struct sockaddr *)&un, 0));
}

TEST(budget_reserve_release_and_refusal)
{
	char *cause = NULL;
	size_t base = budget_used();

	budget_set(8 << 20);
	CHECK(budget_limit() == (8 << 20));
	CHECK_INT(budget_reserve(5 << 20, &cause), 0);
	CHECK_INT(budget_reserve(2 << 20, &cause), 0);
	CHECK(budget_used() == base + (7 << 20));
	CHECK_INT(budget_reserve(2 << 20, &cause), -1);
	CHECK(cause != NULL);
	CHECK_STR(cause,
	    "agent memory budget exhausted: 7 MiB in use of 8 MiB, 2 MiB "
	    "more asked");
	free(cause);
	CHECK(budget_used() == base + (7 << 20)); /* a refusal takes nothing */
	CHECK_INT(budget_reserve(1 << 20, NULL), 0); /* exactly full */
	CHECK_INT(budget_reserve(1, NULL), -1);
	CHECK_INT(budget_reserve((size_t)-1, NULL), -1); /* no wrap */
	budget_release(5 << 20);
	CHECK_INT(budget_reserve(4 << 20, NULL), 0);
	budget_release((4 << 20) + (2 << 20) + (1 << 20));
	CHECK(budget_used() == base);
	budget_set(0); /* back to a quarter of MemTotal */
	CHECK(budget_limit() > (8 << 20));
}

TEST(gate_brings_home_cgroup_and_working_directory)
{
	int sv[2];

	/* vmux rescue: HOME stays on the initramfs, work starts on the disk */
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK(write(sv[1], "/tmp\n\n/\n", 8) == 8);
	close(sv[1]);
	CHECK(agent_gate_wait(sv[0]) == 0);
	CHECK_STR(user_home(), "/tmp");
	CHECK_STR(default_cwd(), "/");
	/* an old two-line gate leaves the working directory as it was */
	user_cwd_set(NULL);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK(write(sv[1], "/tmp\n\n", 6) == 6);
	close(sv[1]);
	CHECK(agent_gate_wait(sv[0]) == 0);
	CHECK_STR(default_cwd(), "/tmp");
	/* a --cwd that is no directory falls back to the home */
	user_cwd_set("/nonexistent/dir");
	CHECK_STR(default_cwd(), "/tmp");
	user_cwd_set(NULL);
	user_home_set("/root");
}
