/*
 * cmd-cp.c: `vmux cp SRC DST`: copy files and directories between the host
 * and a session's guest, like docker cp.
 * The transfers are in cp.c, the operands in cp-args.c.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    {"selector", 'l', "SELECTOR", 0,
        "each session whose labels match: write the guest side as :PATH"},
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
               "--json counts the tar archive that crossed. A glob NAME "
               "('student-*:/workspace/') or -l copies to each session "
               "picked, or from each into DST/NAME.",
    .flags = CMD_NAME_PATH,
    .opts = cmd_cp_opts,
    .min_args = 2,
    .max_args = 2,
    .exec = cmd_cp_exec,
};

/* A child's argv for cp_many: this copy with one session's name. */
static char **
cp_child_argv(const struct many *m, const char *self, const char *session)
{
	const struct cp_spec *spec = m->arg;
	char **v = xcalloc(6, sizeof *v);

	v[0] = xstrdup(self);
	v[1] = xstrdup("cp");
	v[2] = xstrdup("--"); /* a path may start with '-' */
	if (spec->upload) {
		v[3] = xstrdup(spec->local);
		xasprintf(&v[4], "%s:%s", session, spec->remote);
	} else {
		xasprintf(&v[3], "%s:%s", session, spec->remote);
		xasprintf(&v[4], "%s/%s", spec->local, session);
	}
	return v;
}

/*
 * The copy to every session spec's glob and sel pick (the handout), or
 * from each into DST/NAME (the collection), a child `vmux cp` each, a
 * table at the end as exec -l prints.
 */
static int
cp_many(struct args *a, struct cp_spec *spec, const char *sel)
{
	static const char *const skip[] = {
	    "selector", "json", "progress-lines", NULL};
	const char *glob = strcmp(spec->session, "*") == 0 && sel != NULL
	    ? NULL
	    : spec->session;
	struct many m = {.a = a,
	    .sub = "cp",
	    .skip = skip,
	    .argv_of = cp_child_argv,
	    .arg = spec,
	    .parallel = MANY_PARALLEL};
	struct stat st;
	char **names, *dir;
	size_t n;
	int rc;

	if ((rc = select_sessions(glob, sel, &names, &n)) != 0)
		return rc;
	if (!spec->upload &&
	    (stat(spec->local, &st) != 0 || !S_ISDIR(st.st_mode))) {
		rc = cli_usage_error(a->entry,
		    "copying from several sessions needs DST to be a directory "
		    "(each copy goes to DST/NAME): %s",
		    spec->local);
		goto out;
	}
	for (size_t i = 0; !spec->upload && i < n; i++) {
		xasprintf(&dir, "%s/%s", spec->local, names[i]);
		if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
			cli_error("%s: %s", dir, strerror(errno));
			rc = EXIT_VMUX;
		}
		free(dir);
	}
	if (rc == 0)
		rc = many_run(&m, names, n);
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

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

	const char *sel = args_get(a, "selector");
	char *src = xstrdup(a->argv[0]), *dst = xstrdup(a->argv[1]), *t2;

	progress_set_lines(args_has(a, "progress-lines"));
	if (sel != NULL) { /* :PATH is each session -l picks */
		char **side = src[0] == ':' ? &src
		    : dst[0] == ':'         ? &dst
		                            : NULL;
		if (side == NULL) {
			free(src);
			free(dst);
			return cli_usage_error(a->entry,
			    "with -l, write the guest side as :PATH (a path "
			    "in each session picked)");
		}
		xasprintf(&t2, "*%s", *side);
		free(*side);
		*side = t2;
	}
	rc = cp_parse(src, dst, &spec, &cause);
	free(src);
	free(dst);
	if (rc != 0) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	if (cli_remote != NULL && (sel != NULL || name_is_glob(spec.session))) {
		cp_spec_free(&spec);
		return cli_usage_error(a->entry,
		    "on another host, cp takes one session (no -l or globs)");
	}
	if (sel != NULL || name_is_glob(spec.session)) {
		rc = cp_many(a, &spec, sel);
		cp_spec_free(&spec);
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
