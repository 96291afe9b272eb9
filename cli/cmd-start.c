/*
 * cmd-start.c: `vmux start NAME` and `vmux restart NAME`.
 *
 * start boots a stopped or crashed session again with its name, CID,
 * resources and workspace; restart is stop, then start. Both return once
 * the agent answers, like `vmux new`, and a boot that fails leaves the
 * session stopped (never removed: its workspace is the user's work).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session/qemu.h"
#include "session/session.h"
#include "cli.h"

#define START_BOOT_DEFAULT 60
#define START_LOCK_WAIT_MS 120000

static int cmd_start_exec(struct args *);

static const struct cmd_opt cmd_start_opts[] = {
    {"boot-timeout", 0, "S", 0, "seconds to wait for the agent (default 60)"},
    {"json", 0, NULL, 0, "print the session as ls --json shows it"},
    {"foreground", 0, NULL, 0,
        "stay while the VM runs; SIGTERM, SIGINT or SIGHUP powers it off "
        "cleanly (as vmux stop) and ends vmux; SIGUSR2 (a 'time "
        "limit') pauses it instead (a batch job's body)"},
    {"append", 0, "ARGS", 0, "more kernel command line words for this boot"},
    {"persist", 0, NULL, 0,
        "keep --append for every later boot (--append '' --persist "
        "forgets them)"},
    {"gdb", 0, NULL, 0,
        "serve QEMU's gdbstub on a socket for this boot (vmux gdb NAME)"},
    {"paused", 0, NULL, 0,
        "with --gdb: the CPU waits for gdb's continue (returns at once)"},
    {"no-agent", 0, NULL, 0,
        "do not wait for the guest agent this boot (use vmux console)"},
    {"cold", 0, NULL, 0,
        "a paused session: forget its saved state and boot its workspace "
        "(without it, start resumes it)"},
    SELECT_OPT,
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_start_entry = {
    .name = "start",
    .pre = "NAME",
    .summary = "Boot a stopped or crashed session again: same name, "
               "resources and workspace. Returns once the agent answers; a "
               "failed boot leaves the session stopped. A paused session "
               "is resumed (--cold: booted afresh).",
    .flags = CMD_NAME_ONE | CMD_FANOUT | CMD_BOOTS,
    .opts = cmd_start_opts,
    .min_args = 1,
    .max_args = 1,
    .exec = cmd_start_exec,
};

const struct cmd_entry cmd_restart_entry = {
    .name = "restart",
    .pre = "NAME",
    .summary = "Stop a session (as vmux stop) and start it again (as vmux "
               "start). Shells and running commands end; the workspace "
               "stays.",
    .flags = CMD_NAME_ONE | CMD_FANOUT | CMD_HALT_FIRST,
    .opts = cmd_start_opts,
    .min_args = 1,
    .max_args = 1,
    .exec = cmd_start_exec,
};

static volatile int start_interrupted;

/* Signal handler: ask the boot loop to give up. */
static void
start_signal(int sig)
{
	(void)sig;
	start_interrupted = sig; /* 128 + it is the exit status */
}

/*
 * For restart: the session is running now, though our start failed: a
 * command that ran between our stop and our start (another restart, a
 * start) booted it.
 */
static int
restarted_meanwhile(const struct args *a, const char *home)
{
	struct session_record r;
	char *cause = NULL;
	int running;

	if (!(a->entry->flags & CMD_HALT_FIRST))
		return 0;
	if (record_load(home, a->argv[0], &r, &cause) != 0) {
		free(cause);
		return 0;
	}
	running = strcmp(session_state(&r), "running") == 0;
	record_free(&r);
	return running;
}

/* Boot the session (stopping it first for restart). */
static int
cmd_start_exec(struct args *a)
{
	const char *s = args_get(a, "boot-timeout");
	struct launch_opts o;
	struct session_record r;
	char *home, *cause = NULL;
	long long secs = START_BOOT_DEFAULT;
	int rc, started;

	const char *append = args_get(a, "append");
	int persist = args_has(a, "persist");

	if (persist && append == NULL)
		cause = xstrdup("--persist keeps --append, which is missing");
	else if (args_has(a, "paused") && !args_has(a, "gdb"))
		cause = xstrdup("--paused waits for gdb: add --gdb");
	else if (append != NULL && !(persist && *append == '\0'))
		(void)qemu_append_valid(append, &cause);
	if (cause == NULL && s != NULL)
		(void)option_number(
		    "--boot-timeout", s, 1, 3600, &secs, &cause);
	if (cause == NULL && a->nnames > 1) {
		/* a glob or -l picked several: as many booting at once as the
		 * host has CPUs, each its own start */
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);

		return many_sub(a, cpus > 0 ? (int)cpus : 1);
	}
	if (cause != NULL ||
	    (s != NULL &&
	        option_number("--boot-timeout", s, 1, 3600, &secs, &cause) !=
	            0) ||
	    session_name_valid(a->argv[0], &cause) != 0) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	if ((home = cli_home()) == NULL)
		return EXIT_VMUX;
	if ((a->entry->flags & CMD_HALT_FIRST) &&
	    session_halt(home, a->argv[0], "restart", 0, cli_notice, &cause) <
	        0) {
		cli_error("%s", cause);
		free(cause);
		free(home);
		return EXIT_VMUX;
	}
	memset(&o, 0, sizeof o);
	o.home = home;
	o.name = a->argv[0];
	o.boot_timeout_s = (int)secs;
	o.lock_wait_ms = START_LOCK_WAIT_MS;
	o.append = append;
	o.persist_append = persist;
	o.gdb = args_has(a, "gdb");
	o.paused = args_has(a, "paused");
	o.no_agent = args_has(a, "no-agent");
	o.cold = args_has(a, "cold");
	o.notice = cli_notice;
	o.interrupted = &start_interrupted;
	cli_trap_interrupts(start_signal);
	if (args_has(a, "foreground"))
		session_foreground_early();
	transport_cancel_on(&start_interrupted);
	started = session_start(&o, &r, &cause) == 0;
	if (!started && restarted_meanwhile(a, home)) {
		/* our halt, then another command's boot: a fresh VM all the
		 * same, which is what restart promises */
		free(cause);
		cli_noticef("session '%s' was started by another command after "
		            "this restart stopped it",
		    a->argv[0]);
		rc = 0;
	} else if (!started) {
		cli_error("%s", cause);
		free(cause);
		rc = start_interrupted ? 128 + start_interrupted : EXIT_VMUX;
	} else if (start_interrupted) {
		/* booted just as the signal came: stop it, as asked */
		record_free(&r);
		if (session_halt(home, a->argv[0], "user", 0, NULL, &cause) < 0)
			free(cause);
		cli_error("interrupted: session '%s' left stopped", a->argv[0]);
		rc = 128 + start_interrupted;
	} else {
		struct session_entry e = {.name = r.name, .ok = 1, .rec = r};
		cli_result(ls_session_json(&e));
		record_free(&r);
		rc = args_has(a, "foreground")
		    ? session_foreground(home, a->argv[0], start_interrupted)
		    : 0;
	}
	free(home);
	return rc;
}
