/*
 * cmd-run.c: `vmux run [options] -- CMD [ARG...]`: a session for one
 * command.
 *
 * Boots a session (new's flags), runs CMD in it as `vmux exec` would
 * (output streamed, stdin forwarded, the same exit statuses), then stops
 * it, or removes it with --rm. --name of a session that exists reuses it
 * (started if need be, left running if it was), unless a flag asks for a
 * profile, resource, network or mount it does not have: that is a conflict
 * naming the field, never a silent restart. When --timeout expires the command
 * is killed, the status is TIMED_OUT with no exit code, and the session is
 * removed whatever --rm says (a sandbox that ran out of time is not kept).
 * Only a session this run created is ever removed: one that existed before
 * (a week of work made by `vmux new`) is left as it was found, running or
 * stopped, and the notice says so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "oci/oci.h"
#include "session/session.h"
#include "cli.h"

static int cmd_run_exec(struct args *);

static const struct cmd_opt cmd_run_common[] = {
    NEW_OPTS,
    {NULL, 0, NULL, 0, NULL},
};
static const struct cmd_opt cmd_run_own[] = {
    {"name", 0, "NAME", 0, "the session's name (default run-XXXXXXXX)"},
    {"rm", 0, NULL, 0, "remove the session when the command ends"},
    {"timeout", 't', "S", 0,
        "kill the command after S seconds: status TIMED_OUT, exit 124, "
        "the session removed (default 300)"},
    {"env", 'e', "K=V", 1, "set an environment variable"},
    {"cwd", 'C', "DIR", 0, "working directory in the guest"},
    {"user", 'u', "USER", 0,
        "run as this guest user: a name, uid or uid:gid (default: the "
        "image's User, else root)"},
    {"interactive", 'i', NULL, 0, "send standard input even from a terminal"},
    {"json", 0, NULL, 0,
        "print one JSON object: session, status (COMPLETED or TIMED_OUT), "
        "exit_code (null on timeout), signal, stdout, stderr, removed"},
    {NULL, 0, NULL, 0, NULL},
};

/* NEW_OPTS, the session options, run's own. */
static struct cmd_opt cmd_run_opts[NEW_OPTS_MAX];

/* Before main: run's options, built from the table. */
__attribute__((constructor)) static void
cmd_run_init(void)
{
	new_opts_build(cmd_run_opts, cmd_run_common, cmd_run_own);
}

const struct cmd_entry cmd_run_entry = {
    .name = "run",
    .post = "-- CMD [ARG...]",
    .summary = "Boot a session, run one command in it and stop it (remove "
               "it with --rm); exit with the command's status. On --timeout "
               "the status is TIMED_OUT (exit 124) and the session is "
               "removed.",
    .opts = cmd_run_opts,
    .flags = CMD_ARGV_AFTER_NAME | CMD_TTY | CMD_STDIN | CMD_CREATES,
    .min_args = 0,
    .max_args = -1,
    .exec = cmd_run_exec,
};

static volatile int run_interrupted;

/* Signal handler during the boot: give up and clean up. */
static void
run_signal(int sig)
{
	(void)sig;
	run_interrupted = sig; /* 128 + it is the exit status */
}

/* A fresh name: run- and 8 hex digits. */
static char *
run_name(void)
{
	unsigned char b[4];
	char *name;
	FILE *f = fopen("/dev/urandom", "re");

	if (f == NULL || fread(b, 1, sizeof b, f) != sizeof b) {
		uint64_t t = mono_ms() ^ (uint64_t)getpid() << 20;
		memcpy(b, &t, sizeof b);
	}
	if (f != NULL)
		fclose(f);
	xasprintf(&name, "run-%02x%02x%02x%02x", b[0], b[1], b[2], b[3]);
	return name;
}

/*
 * A flag given to `vmux run --name N` that N, which exists, does not have:
 * the field's name and N's value, or NULL when nothing differs. A session's
 * profile, resources, network and mounts are fixed when it is made (seed
 * 002: a conflict, never a silent restart).
 */
static const char *
run_conflict(struct args *a, const struct session_record *r,
    const struct launch_opts *o, const struct profile *p, char *have,
    size_t size)
{
	size_t i;

	if (args_get(a, "profile") != NULL &&
	    (r->profile == NULL || strcmp(r->profile, p->name) != 0)) {
		snprintf(
		    have, size, "%s", r->profile != NULL ? r->profile : "none");
		return "profile";
	}
	/* the table's fixed settings: given, and not what the session has */
	for (i = 0; i < SOPT_N; i++) {
		const struct session_option *so = &session_options[i];
		long long want, got;

		if (!(so->flags & SOPT_FIXED) || so->prof_off == SOPT_NOWHERE ||
		    so->rec_off == SOPT_NOWHERE)
			continue;
		if (new_option_text(a, so) == NULL)
			continue;
		want = option_get(p, so->prof_off, so->prof_size);
		got = option_get(r, so->rec_off, so->rec_size);
		if (want == got)
			continue;
		if (so->type == SOPT_BOOL)
			snprintf(have, size, "%s", got ? "on" : "off");
		else
			snprintf(have, size, "%lld%s%s", got,
			    so->unit != NULL ? " " : "",
			    so->unit != NULL ? so->unit : "");
		return so->flag;
	}
	if (o->hostname != NULL &&
	    strcmp(o->hostname, r->hostname != NULL ? r->hostname : r->name) !=
	        0) {
		snprintf(have, size, "%s",
		    r->hostname != NULL ? r->hostname : r->name);
		return "hostname";
	}
	if (o->nallow_hosts > 0) {
		int same = o->nallow_hosts == r->nallow_hosts;
		for (i = 0; same && i < r->nallow_hosts; i++)
			same =
			    strcmp(o->allow_hosts[i], r->allow_hosts[i]) == 0;
		if (!same) {
			snprintf(
			    have, size, "%zu allowed hosts", r->nallow_hosts);
			return "allow-host";
		}
	}
	for (i = 0; i < o->nlabels; i++) {
		size_t k = strcspn(o->labels[i], "=");
		char *key = xstrndup(o->labels[i], k);
		const char *v = label_get(r->labels, r->nlabels, key);
		free(key);
		if (v == NULL || strcmp(v, o->labels[i] + k + 1) != 0) {
			snprintf(have, size, "%.*s=%s", (int)k, o->labels[i],
			    v != NULL ? v : "(unset)");
			return "label";
		}
	}
	if (o->nmounts > 0) {
		int same = o->nmounts == r->nmounts;
		for (i = 0; same && i < r->nmounts; i++)
			same =
			    strcmp(o->mounts[i].host, r->mounts[i].host) == 0 &&
			    strcmp(o->mounts[i].guest, r->mounts[i].guest) ==
			        0 &&
			    o->mounts[i].ro == r->mounts[i].ro;
		if (!same) {
			snprintf(have, size, "%zu mounts", r->nmounts);
			return "mount";
		}
	}
	return NULL;
}

/*
 * `vmux run --name N` where N exists: reuse it (start it when it is not
 * running) unless a flag asks for something it does not have. 0 (reused;
 * *was_running says whether to leave it running after), -1 with cause.
 */
static int
run_reuse(struct args *a, const char *home, const struct launch_opts *o,
    const struct profile *p, int *was_running, char **cause)
{
	struct session_record r, started;
	const char *field, *state;
	char have[128];

	if (record_load(home, o->name, &r, cause) != 0)
		return -1;
	if ((field = run_conflict(a, &r, o, p, have, sizeof have)) != NULL) {
		xasprintf(cause,
		    "conflict: session '%s' exists with %s %s; a session's %s "
		    "cannot change (vmux rm it, or run under another --name)",
		    o->name, field, have, field);
		record_free(&r);
		return -1;
	}
	state = session_state(&r);
	*was_running = strcmp(state, "running") == 0;
	record_free(&r);
	if (*was_running)
		return 0;
	if (session_start(o, &started, cause) != 0)
		return -1;
	record_free(&started);
	return 0;
}

/* Append the strings of a JSON array to v (n grows). */
static void
run_add_strings(char ***v, size_t *n, const cJSON *arr)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, arr)
	{
		if (!cJSON_IsString(e))
			continue;
		*v = xreallocarray(*v, *n + 2, sizeof **v);
		(*v)[(*n)++] = xstrdup(e->valuestring);
	}
}

/*
 * The command run runs: CMD as given, or with --image by reference what
 * docker run runs, the image's Entrypoint followed by CMD or else its
 * Cmd. A NULL-terminated list (caller frees each), or NULL with cause.
 */
static char **
run_command(struct args *a, const char *home, size_t *n, char **cause)
{
	struct image_pull_opts po = {0};
	const char *image = args_get(a, "image");
	char **v = NULL, *path = NULL;

	*n = 0;
	if (image != NULL) {
		if (args_get(a, "pull") != NULL &&
		    oci_pull_policy_parse(args_get(a, "pull"),
		        (enum oci_pull_policy *)&po.policy, cause) != 0)
			return NULL;
		po.notice = cli_notice;
		if (!cli_json())
			po.progress = cli_pull_progress;
		if (image_resolve(home, image, &po, &path, cause) != 0)
			return NULL;
		free(path);
		run_add_strings(&v, n,
		    cJSON_GetObjectItemCaseSensitive(po.config, "Entrypoint"));
	}
	for (int i = 0; i < a->argc; i++) {
		v = xreallocarray(v, *n + 2, sizeof *v);
		v[(*n)++] = xstrdup(a->argv[i]);
	}
	if (a->argc == 0)
		run_add_strings(
		    &v, n, cJSON_GetObjectItemCaseSensitive(po.config, "Cmd"));
	image_pull_opts_free(&po);
	if (*n == 0) {
		xasprintf(cause, "run needs a command (-- CMD [ARG...])%s",
		    image != NULL ? ": the image has no Entrypoint or Cmd"
		                  : "");
		free(v);
		return NULL;
	}
	v[*n] = NULL;
	return v;
}

/* Boot (or reuse), run, stop or remove. */
static int
cmd_run_exec(struct args *a)
{
	struct launch_opts o;
	struct session_record r;
	struct profile p;
	struct session_mount *mounts = NULL;
	struct args ea;
	char *cause = NULL, *home = NULL, *name, **argv = NULL, **cmd = NULL;
	size_t ncmd = 0;
	unsigned *allow = NULL;
	cJSON *req = NULL, *result = NULL;
	int rc, timeout_s, timed_out = 0, remove, i, was_running = 0;
	int created = 0;
	struct stat st;
	char *dir;

	memset(&o, 0, sizeof o);
	name = args_get(a, "name") != NULL ? xstrdup(args_get(a, "name"))
	                                   : run_name();
	if ((home = cli_home()) == NULL) {
		rc = EXIT_VMUX;
		goto out;
	}
	if ((cmd = run_command(a, home, &ncmd, &cause)) == NULL) {
		if (args_get(a, "image") != NULL && a->argc > 0) {
			cli_error("%s", cause); /* the image failed */
			rc = EXIT_VMUX;
		} else
			rc = cli_usage_error(a->entry, "%s", cause);
		goto out;
	}
	/* exec's request builder wants NAME first, then the command. */
	argv = xcalloc(ncmd + 2, sizeof *argv);
	argv[0] = name;
	for (i = 0; i < (int)ncmd; i++)
		argv[i + 1] = cmd[i];
	ea = *a;
	ea.argc = (int)ncmd + 1;
	ea.argv = argv;
	o.name = name;
	if (session_name_valid(name, &cause) != 0 ||
	    new_parse(a, &o, &p, &allow, &mounts, &cause) != 0 ||
	    cmd_exec_request(&ea, &timeout_s, &req, &cause) != 0) {
		rc = cli_usage_error(a->entry, "%s", cause);
		goto out;
	}
	if (o.no_agent || o.paused) { /* run's command needs the agent */
		rc = cli_usage_error(a->entry,
		    "%s: run needs the guest agent now (use vmux new and vmux "
		    "console)",
		    o.no_agent ? "--no-agent" : "--paused");
		goto out;
	}
	o.home = home;
	o.notice = cli_notice;
	if (!cli_json())
		o.pull_progress = cli_pull_progress;
	o.interrupted = &run_interrupted;
	cli_trap_interrupts(run_signal);
	transport_cancel_on(&run_interrupted);
	dir = session_dir(home, name);
	if (args_get(a, "name") != NULL && stat(dir, &st) == 0) {
		free(dir);
		o.lock_wait_ms = 120000;
		if (run_reuse(a, home, &o, &p, &was_running, &cause) != 0) {
			cli_error("%s", cause);
			rc = EXIT_VMUX;
			goto out;
		}
	} else {
		free(dir);
		if (session_launch(&o, &r, &cause) != 0) {
			cli_error("%s", cause);
			rc = EXIT_VMUX;
			goto out;
		}
		record_free(&r);
		created = 1;
	}
	rc = exec_in_session(name, req, &timeout_s,
	    args_get(a, "timeout") != NULL,
	    args_has(a, "interactive") || !isatty(STDIN_FILENO), &result,
	    &timed_out);
	remove = created && (args_has(a, "rm") || timed_out);
	if (timed_out && !cli_json())
		cli_noticef("TIMED_OUT: the command was killed after %d s; "
		            "session '%s' %s",
		    timeout_s, name,
		    created ? "is removed"
		            : "existed before this run and is kept");
	else if (!created && args_has(a, "rm"))
		cli_noticef("session '%s' existed before this run: kept, not "
		            "removed (vmux rm %s removes it)",
		    name, name);
	free(cause);
	cause = NULL;
	if (!remove && was_running)
		; /* it was running before: leave it so */
	else if (remove
	        ? session_remove(home, name, 0, 0, NULL, &cause) != 0
	        : session_halt(home, name, "run", 0, cli_notice, &cause) < 0) {
		cli_error("%s", cause);
		if (rc == 0)
			rc = EXIT_VMUX;
	} else if (!remove)
		cli_noticef("session '%s' stopped (vmux start %s; vmux rm %s)",
		    name, name, name);
	if (cli_json()) {
		if (result == NULL)
			result = cJSON_CreateObject();
		cJSON_AddStringToObject(result, "session", name);
		cJSON_AddStringToObject(
		    result, "status", timed_out ? "TIMED_OUT" : "COMPLETED");
		if (timed_out) {
			cJSON_DeleteItemFromObject(result, "exit_code");
			cJSON_AddNullToObject(result, "exit_code");
		}
		cJSON_AddBoolToObject(result, "removed", remove);
		cJSON_AddBoolToObject(result, "created", created);
		cli_result(result);
		result = NULL;
	}
out:
	cJSON_Delete(result);
	cJSON_Delete(req);
	free(cause);
	free(allow);
	new_mounts_free(mounts, o.nmounts);
	free(home);
	free(argv);
	for (size_t k = 0; k < ncmd; k++)
		free(cmd[k]);
	free(cmd);
	free(name);
	return rc;
}
