/*
 * foreground.c: `vmux new --foreground`: vmux stays while the VM runs.
 *
 * A batch system's job is a process: Slurm (or a systemd unit, or a
 * container's entry point) runs it for the session's life and ends it
 * with SIGTERM (scancel, the time limit, preemption) before SIGKILL. So
 * the job's body is `vmux new --foreground NAME`: booted, it waits for the
 * VM to end by itself (a poweroff, --ttl), or for SIGTERM, SIGINT or SIGHUP,
 * which power the guest off cleanly as `vmux stop` does (the workspace is
 * whole, the record says why), then returns. SIGUSR2 is the notice a
 * Slurm job of vmux's asks for ahead of its time limit (sbatch --signal,
 * slurm.c): the session is paused (its memory and shells in its shared
 * folder, for the next job's vmux start to resume), or stopped with the
 * reason "time limit" if it cannot be. A VM that ends by itself (a
 * poweroff, --ttl, an idle-pause) ends the job.
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

#define FOREGROUND_POLL_MS 500 /* how often the VM's life is looked at */

static volatile sig_atomic_t foreground_sig;

/* SIGTERM, SIGINT, SIGHUP, SIGUSR2: end the VM and return. */
static void
foreground_on_signal(int sig)
{
	foreground_sig = sig;
}

/* A stop's notice, on stderr (the job's log). */
static void
foreground_notice(const char *text)
{
	fprintf(stderr, "vmux: %s\n", text);
}

/*
 * Before new or start --foreground boots: a time-limit notice (SIGUSR2)
 * this early is let go rather than end vmux half-way; session_foreground
 * takes it once booted.
 */
void
session_foreground_early(void)
{
	cli_trap_signal(SIGUSR2, SIG_IGN);
}

/*
 * Wait while session name's VM runs; on a signal, stop it cleanly. The
 * exit status: 0 once the VM is down, EXIT_VMUX if stopping failed.
 * *sig_seen is a signal that came before this was called (0: none).
 */
int
session_foreground(const char *home, const char *name, int sig_seen)
{
	struct session_record r;
	char *cause = NULL, reason[64];
	int alive = 1;

	foreground_sig = sig_seen;
	cli_trap_interrupts(foreground_on_signal);
	cli_trap_signal(SIGUSR2, foreground_on_signal);
	fflush(stdout);
	while (foreground_sig == 0 && alive) {
		poll(NULL, 0, FOREGROUND_POLL_MS); /* a signal ends it early */
		if (record_load(home, name, &r, &cause) != 0) {
			free(cause); /* removed under us: nothing to stop */
			return 0;
		}
		alive = session_qemu_alive(&r);
		record_free(&r);
	}
	if (!alive)
		return 0;
	if (foreground_sig == SIGUSR2) {
		/* the time limit: paused, with its memory and shells, for
		 * the next job to resume (vmux start); stopped if it cannot
		 * be (a host folder) */
		fprintf(stderr, "vmux: time limit: pausing %s\n", name);
		if (session_pause(home, name, foreground_notice, &cause) == 0)
			return 0;
		fprintf(stderr, "vmux: %s\n", cause);
		free(cause);
		cause = NULL;
		snprintf(reason, sizeof reason, "time limit");
	} else
		snprintf(reason, sizeof reason, "SIG%s",
		    sigabbrev_np(foreground_sig));
	fprintf(stderr, "vmux: %s: stopping %s\n", reason, name);
	if (session_halt(home, name, reason, 0, foreground_notice, &cause) <
	    0) {
		cli_error("%s", cause);
		free(cause);
		return EXIT_VMUX;
	}
	return 0;
}
