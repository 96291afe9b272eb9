/*
 * cmd-pause.c: `vmux pause NAME...` and `vmux resume NAME...`.
 *
 * pause writes a session's memory and device state to files in its folder
 * and ends its processes (session/pause.c); resume boots it from them, its
 * processes and shells as they were. Any command that needs the guest
 * resumes a paused session by itself (cli_running_session), so resume is
 * mostly for scripts that want the time spent up front.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

#define RESUME_BOOT_S 60

static int cmd_pause_exec(struct args *);

static const struct cmd_opt cmd_pause_opts[] = {
    {"json", 0, NULL, 0,
        "print {\"paused\": NAME, \"ms\": N} ({\"resumed\": ...} for "
        "resume; a list for several)"},
    SELECT_OPT,
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_pause_entry = {
    .name = "pause",
    .pre = "NAME...",
    .summary = "Save sessions whole and end their processes: memory, "
               "processes and shells go to files beside the workspace "
               "(0600), and vmux ls says paused. Any command that needs the "
               "guest resumes it. Refused, and the session left running, "
               "for one with a host folder (--mount). TCP connections "
               "through --net end.",
    .flags = CMD_NAMES, /* on a cluster: inside its job, which then ends */
    .opts = cmd_pause_opts,
    .min_args = 1,
    .max_args = -1,
    .exec = cmd_pause_exec,
};

const struct cmd_entry cmd_resume_entry = {
    .name = "resume",
    .pre = "NAME...",
    .summary = "Boot paused sessions from their saved state: processes and "
               "shells go on where they were, the guest's clock is set from "
               "the host and its RNG reseeded. A state from another QEMU "
               "build or guest kernel, or damaged, is refused (vmux start "
               "--cold boots the workspace instead).",
    .flags = CMD_NAMES | CMD_BOOTS,
    .opts = cmd_pause_opts,
    .min_args = 1,
    .max_args = -1,
    .exec = cmd_pause_exec,
};

/* Pause or resume one session (arg: non-NULL to resume). */
static int
pause_one(const char *home, const char *name, cJSON *out, const char **note,
    void *arg, char **cause)
{
	struct launch_opts o;
	struct session_record r;
	uint64_t t0 = mono_ms();

	(void)note;
	if (arg == NULL && session_pause(home, name, cli_notice, cause) != 0)
		return -1;
	if (arg != NULL) {
		memset(&o, 0, sizeof o);
		o.home = home;
		o.name = name;
		o.boot_timeout_s = RESUME_BOOT_S;
		o.notice = cli_notice;
		if (session_resume(&o, &r, cause) != 0)
			return -1;
		record_free(&r);
	}
	cJSON_AddNumberToObject(out, "ms", (double)(mono_ms() - t0));
	return 0;
}

/* Pause (or resume) each named session; EXIT_VMUX if any failed. */
static int
cmd_pause_exec(struct args *a)
{
	int resume = a->entry == &cmd_resume_entry;
	char *cause = NULL;
	int rc;

	for (int i = 0; i < a->argc; i++) {
		if (session_name_valid(a->argv[i], &cause) != 0) {
			rc = cli_usage_error(a->entry, "%s", cause);
			free(cause);
			return rc;
		}
	}
	return cli_each_name(a, resume ? "resumed" : "paused", pause_one,
	    resume ? (void *)a : NULL);
}
