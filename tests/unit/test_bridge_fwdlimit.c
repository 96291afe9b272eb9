/*
 * test_bridge_fwdlimit.c: vmux-bridge --fwd-limit: slots taken and freed,
 * the program run in a slot, a full set refused, bad arguments.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_bridge_fake.h"

/* A CID no real session of this host uses at the same time. */
static uint32_t
test_cid(void)
{
	return 4000000000u + (uint32_t)getpid() % 100000u;
}

/* Run fwd_limit_main(argv) in a child; its exit status, or -1. */
static int
run_limit(char **argv)
{
	int argc = 0, status;
	pid_t pid;

	while (argv[argc] != NULL)
		argc++;
	pid = fork();
	if (pid == 0) {
		freopen("/dev/null", "w", stderr);
		_exit(fwd_limit_main(argc, argv));
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

TEST(fwd_slots_are_taken_and_freed)
{
	uint32_t cid = test_cid();
	int a, b, c;

	a = fwd_slot_take(cid, 2);
	b = fwd_slot_take(cid, 2);
	CHECK(a >= 0);
	CHECK(b >= 0);
	CHECK_INT(fwd_slot_take(cid, 2), -1); /* both taken */
	/* another session's slots are its own */
	c = fwd_slot_take(cid + 1, 2);
	CHECK(c >= 0);
	close(c);
	close(a); /* the kernel frees it with the socket */
	a = fwd_slot_take(cid, 2);
	CHECK(a >= 0);
	close(a);
	close(b);
}

TEST(fwd_limit_runs_the_program_in_a_slot_or_refuses)
{
	char cid[16];
	char *run[] = {"vmux-bridge", "--fwd-limit", cid, "1", "/bin/sh", "-c",
	    "exit 5", NULL};
	int held;

	snprintf(cid, sizeof cid, "%u", test_cid());
	CHECK_INT(run_limit(run), 5);
	/* the slot is free again once the program ended */
	CHECK_INT(run_limit(run), 5);
	held = fwd_slot_take(test_cid(), 1);
	CHECK(held >= 0);
	CHECK_INT(run_limit(run), FWD_LIMIT_FULL);
	close(held);
	CHECK_INT(run_limit(run), 5);
}

TEST(fwd_limit_bad_arguments)
{
	char *few[] = {"vmux-bridge", "--fwd-limit", "5", "1", NULL};
	char *cid[] = {
	    "vmux-bridge", "--fwd-limit", "2", "1", "/bin/true", NULL};
	char *cid2[] = {
	    "vmux-bridge", "--fwd-limit", "5x", "1", "/bin/true", NULL};
	char *n0[] = {
	    "vmux-bridge", "--fwd-limit", "5", "0", "/bin/true", NULL};
	char *nbig[] = {
	    "vmux-bridge", "--fwd-limit", "5", "1025", "/bin/true", NULL};
	char *noexec[] = {
	    "vmux-bridge", "--fwd-limit", "5", "1", "/no/such/program", NULL};

	CHECK_INT(run_limit(few), 2);
	CHECK_INT(run_limit(cid), 2);
	CHECK_INT(run_limit(cid2), 2);
	CHECK_INT(run_limit(n0), 2);
	CHECK_INT(run_limit(nbig), 2);
	CHECK_INT(run_limit(noexec), 127);
}
