/*
 * cmd-rescue.c: `vmux rescue SESSION|DISK [--rw]`: repair what will not
 * boot, as virt-rescue does.
 *
 * A throwaway session, rescue-NAME, boots vmux's own kernel and initramfs
 * (never the session's --kernel, --initrd or --append) with the disk
 * attached as vmux-rescue: a stopped session's workspace, or any ext4
 * image. vmux-init mounts it at /sysroot, read-only unless --rw (and then
 * QEMU refuses writes too), and the agent's shell starts there. When the
 * shell ends, the rescue session is removed and nothing else boots: the
 * session is left stopped, to be started when the user is ready.
 *
 * The session's lock is held throughout, so it cannot be started (or
 * rescued twice) while its disk is open here; an image being rescued counts
 * as in use for every other session (workspace_in_use).
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

#define RESCUE_MEMORY_MB 256
#define RESCUE_BOOT_S    60

static int cmd_rescue_exec(struct args *);

static const struct cmd_opt cmd_rescue_opts[] = {
    {"rw", 0, NULL, 0, "attach the disk writable (default: read-only)"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_rescue_entry = {
    .name = "rescue",
    .pre = "SESSION|DISK",
    .summary = "Boot vmux's own kernel and initramfs with a stopped "
               "session's workspace (or an ext4 image) at /sysroot, "
               "read-only unless --rw, and open a shell there. Leaving the "
               "shell removes the rescue VM and boots nothing.",
    .opts = cmd_rescue_opts,
    .min_args = 1,
    .max_args = 1,
    .flags = CMD_TTY | CMD_STDIN | CMD_OWN_TERMINAL,
    .exec = cmd_rescue_exec,
};

static volatile int rescue_interrupted;

/* Signal handler while booting: give up and clean up. */
static void
rescue_signal(int sig)
{
	rescue_interrupted = sig;
}

/* "rescue-" and what is rescued, as a session name. Free it. */
static char *
rescue_name(const char *what)
{
	const char *base = strrchr(what, '/');
	char *s, *p;

	xasprintf(&s, "rescue-%.50s", base != NULL ? base + 1 : what);
	for (p = s + 7; *p != '\0'; p++) {
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.' &&
		    *p != '-')
			*p = '_';
	}
	return s;
}

/*
 * Run `vmux shell NAME` (this binary) and wait for it; its exit status as a
 * shell's, or EXIT_VMUX.
 */
static int
rescue_shell(const char *name)
{
	char *self = exe_path();
	int status;
	pid_t pid;

	if (self == NULL) {
		cli_error("cannot find the vmux binary: %s", strerror(errno));
		return EXIT_VMUX;
	}
	pid = fork();
	if (pid < 0) {
		cli_error("fork: %s", strerror(errno));
		free(self);
		return EXIT_VMUX;
	}
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		execl(self, "vmux", "shell", name, (char *)NULL);
		_exit(EXIT_VMUX);
	}
	free(self);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return EXIT_VMUX;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * What to rescue: the workspace of stopped session what (its lock taken
 * into *lock), or the ext4 image at path what (writable if rw). Fills
 * *disk (free it).
 * 0, or EXIT_VMUX after saying why.
 */
static int
rescue_target(
    const char *home, const char *what, int rw, char **disk, int *lock)
{
	struct session_record r;
	char *cause = NULL, *dir;
	struct stat st;

	*disk = NULL;
	*lock = -1;
	dir = session_name_valid(what, NULL) == 0 ? session_dir(home, what)
	                                          : NULL;
	if (dir == NULL || stat(dir, &st) != 0) { /* not a session: a disk */
		free(dir);
		if (stat(what, &st) != 0) {
			cli_error("no session or disk image '%s'", what);
			return EXIT_VMUX;
		}
		if (workspace_check_mode(what, rw, &cause) != 0 ||
		    workspace_in_use(home, what, NULL, &cause) != 0) {
			cli_error("%s", cause);
			free(cause);
			return EXIT_VMUX;
		}
		*disk = xstrdup(what);
		return 0;
	}
	*lock = session_lock_one(dir, "vmux rescue", 0, NULL, &cause);
	free(dir);
	if (*lock < 0 || record_load(home, what, &r, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		if (*lock >= 0)
			session_unlock(*lock);
		*lock = -1;
		return EXIT_VMUX;
	}
	if (session_qemu_alive(&r)) {
		cli_error(
		    "session '%s' is running: stop it first (vmux stop %s)",
		    what, what);
	} else if (r.workspace == NULL) {
		cli_error("session '%s' has no workspace to rescue", what);
	} else if (workspace_check_mode(r.workspace, rw, &cause) != 0 ||
	    workspace_in_use(home, r.workspace, what, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
	} else {
		*disk = xstrdup(r.workspace);
	}
	record_free(&r);
	if (*disk == NULL) {
		session_unlock(*lock);
		*lock = -1;
		return EXIT_VMUX;
	}
	return 0;
}

static int
cmd_rescue_exec(struct args *a)
{
	const char *what = a->argv[0];
	struct launch_opts o;
	struct session_record r;
	char *home, *disk, *name, *cause = NULL;
	int lock, rc, rw = args_has(a, "rw");

	if ((home = cli_home()) == NULL)
		return EXIT_VMUX;
	if ((rc = rescue_target(home, what, rw, &disk, &lock)) != 0) {
		free(home);
		return rc;
	}
	name = rescue_name(what);
	memset(&o, 0, sizeof o);
	o.home = home;
	o.name = name;
	o.cpus = 1;
	o.memory_mb = RESCUE_MEMORY_MB;
	o.boot_timeout_s = RESCUE_BOOT_S;
	o.rescue_disk = disk;
	o.rescue_rw = rw;
	o.notice = cli_notice;
	o.interrupted = &rescue_interrupted;
	cli_trap_interrupts(rescue_signal);
	transport_cancel_on(&rescue_interrupted);
	if (session_launch(&o, &r, &cause) != 0) {
		cli_error("rescue of %s: %s", what, cause);
		free(cause);
		rc = EXIT_VMUX;
		goto out;
	}
	record_free(&r);
	fprintf(stderr,
	    "[rescue of %s as session %s: %s at /sysroot, %s; leave the shell "
	    "to end it]\n",
	    what, name, disk, rw ? "read-write" : "read-only");
	/* the shell has the terminal: its keys (Ctrl-C too) are the shell's */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	rc = rescue_shell(name);
	/* powered off cleanly first: vmux-init syncs and unmounts the disk */
	switch (session_halt(home, name, "rescue", 0, cli_notice, &cause)) {
	case 0:
		break;
	case 1: /* it had to be killed: say what that may cost */
		if (rw)
			cli_error("%s did not power off cleanly: check %s "
			          "(e2fsck -n) before booting from it",
			    name, disk);
		break;
	default:
		cli_error("stopping %s: %s", name, cause);
		free(cause);
		cause = NULL;
		rc = EXIT_VMUX;
	}
	if (session_remove(home, name, 1, 0, NULL, &cause) != 0) {
		cli_error("removing %s: %s", name, cause);
		free(cause);
		rc = EXIT_VMUX;
	} else {
		fprintf(stderr, "[rescue of %s ended; nothing else booted]\n",
		    what);
	}
out:
	if (lock >= 0)
		session_unlock(lock);
	free(name);
	free(disk);
	free(home);
	return rc;
}
