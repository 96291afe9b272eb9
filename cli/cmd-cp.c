/*
 * cmd-cp.c: `vmux cp SRC DST`: copy files and directories between the host
 * and a session's guest, like docker cp.
 * The transfers are in cp.c, the operands in cp-args.c.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

static int cmd_cp_exec(struct args *);

static const struct cmd_opt cmd_cp_opts[] = {
    {"json", 0, NULL, 0,
        "print {\"source\", \"destination\", \"direction\", \"bytes\", "
        "\"skipped\"} as JSON; no progress"},
    {"progress-lines", 0, NULL, 0,
        "report progress on stderr as lines \"vmux-progress BYTES TOTAL\" "
        "(for programs such as vmux tui)"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_cp_entry = {
    .name = "cp",
    .pre = "SRC DST",
    .summary = "Copy files between the host and a guest. "
               "NAME:PATH names an absolute PATH in session NAME, and "
               "exactly one side is remote. As with docker cp, an "
               "existing directory DST receives SRC under its own name; "
               "any other DST names the copy (its parent must exist). "
               "A download is all or nothing: only the source's own name "
               "may come from the guest, any other entry is refused by "
               "name and DST is left as it was. "
               "Shows progress when stderr is a terminal. \"bytes\" in "
               "--json counts the tar archive that crossed.",
    .opts = cmd_cp_opts,
    .min_args = 2,
    .max_args = 2,
    .exec = cmd_cp_exec,
};

/* Copy. */
static int
cmd_cp_exec(struct args *a)
{
	struct session_record r;
	struct vsock_target t;
	struct cp_spec spec;
	cJSON *res;
	char *cause = NULL;
	int rc;

	progress_set_lines(args_has(a, "progress-lines"));
	if (cp_parse(a->argv[0], a->argv[1], &spec, &cause) != 0) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	if ((rc = cli_running_session(spec.session, &r, &t)) != 0) {
		cp_spec_free(&spec);
		return rc;
	}
	spec.quiet = cli_json();
	if (spec.upload)
		rc = cp_upload(&t, &spec, &cause);
	else
		rc = cp_download(&t, &spec, &cause);
	if (rc != 0) {
		cli_error("cp: %s", cause);
		free(cause);
		rc = EXIT_VMUX;
	} else {
		res = cJSON_CreateObject();
		cJSON_AddStringToObject(res, "source", a->argv[0]);
		cJSON_AddStringToObject(res, "destination", a->argv[1]);
		cJSON_AddStringToObject(
		    res, "direction", spec.upload ? "upload" : "download");
		cJSON_AddStringToObject(res, "session", spec.session);
		cJSON_AddNumberToObject(res, "bytes", (double)spec.bytes);
		cJSON_AddNumberToObject(res, "skipped", (double)spec.skipped);
		cli_result(res);
	}
	record_free(&r);
	cp_spec_free(&spec);
	return rc;
}
