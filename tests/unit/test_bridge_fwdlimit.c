/*
 * test_bridge_fwdlimit.c: vmux-bridge --fwd-limit: slots taken and freed,
 * the program run in a slot, a full set refused, bad arguments.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_bridge_fake.h"

/* A private directory for one test's slots (two: two sessions). */
static char slot_dirs[2][64];

/* Remove the slot directories (at the end of each test). */
static void
remove_dirs(void)
{
	char cmd[200];

	for (int i = 0; i < 2; i++) {
		if (slot_dirs[i][0] == '\0')
			continue;
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", slot_dirs[i]);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", slot_dirs[i]);
		slot_dirs[i][0] = '\0';
	}
}

static const char *
test_dir(int i)
{
	if (slot_dirs[i][0] == '\0') {
		snprintf(
		    slot_dirs[i], sizeof slot_dirs[i], "/tmp/vmux-fwd-XXXXXX");
		if (mkdtemp(slot_dirs[i]) == NULL)
			abort();
	}
	return slot_dirs[i];
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
	const char *dir = test_dir(0);
	int a, b, c;

	a = fwd_slot_take(dir, 2);
	b = fwd_slot_take(dir, 2);
	CHECK(a >= 0);
	CHECK(b >= 0);
	CHECK_INT(fwd_slot_take(dir, 2), -1); /* both taken */
	/* another session's slots are its own */
	c = fwd_slot_take(test_dir(1), 2);
	CHECK(c >= 0);
	close(c);
	close(a); /* the kernel frees it with the file */
	a = fwd_slot_take(dir, 2);
	CHECK(a >= 0);
	close(a);
	close(b);
	CHECK(fwd_slot_take("/no/such/dir", 2) < -1);
	remove_dirs();
}

TEST(fwd_limit_runs_the_program_in_a_slot_or_refuses)
{
	char *run[] = {"vmux-bridge", "--fwd-limit", (char *)test_dir(0), "1",
	    "/bin/sh", "-c", "exit 5", NULL};
	int held;

	CHECK_INT(run_limit(run), 5);
	/* the slot is free again once the program ended */
	CHECK_INT(run_limit(run), 5);
	held = fwd_slot_take(test_dir(0), 1);
	CHECK(held >= 0);
	CHECK_INT(run_limit(run), FWD_LIMIT_FULL);
	close(held);
	CHECK_INT(run_limit(run), 5);
	remove_dirs();
}

TEST(fwd_limit_bad_arguments)
{
	char *d = (char *)test_dir(0);
	char *few[] = {"vmux-bridge", "--fwd-limit", d, "1", NULL};
	char *rel[] = {
	    "vmux-bridge", "--fwd-limit", "rel/dir", "1", "/bin/true", NULL};
	char *n0[] = {"vmux-bridge", "--fwd-limit", d, "0", "/bin/true", NULL};
	char *nbig[] = {
	    "vmux-bridge", "--fwd-limit", d, "1025", "/bin/true", NULL};
	char *noexec[] = {
	    "vmux-bridge", "--fwd-limit", d, "1", "/no/such/program", NULL};

	CHECK_INT(run_limit(few), 2);
	CHECK_INT(run_limit(rel), 2);
	CHECK_INT(run_limit(n0), 2);
	CHECK_INT(run_limit(nbig), 2);
	CHECK_INT(run_limit(noexec), 127);
	remove_dirs();
}
