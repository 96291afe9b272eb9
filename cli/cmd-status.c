/*
 * cmd-status.c: `vmux status [--json]`: vmux, its backend and its sessions
 * at a glance.
 *
 * Version; the backend (the QEMU found, its version, whether it is vmux's
 * own build and so can save a session's state, the accelerator new
 * sessions get and why); the built-in profiles; sessions by state; what
 * running sessions use (CPUs, memory, workspace space on the host) against
 * what the host has; and the ring of the last 50 errors (seed 002's
 * observability: status, active sessions, recent errors).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/common.h"
#include "proto/proto.h"
#include "session/qemu.h"
#include "session/session.h"
#include "cli.h"

static int cmd_status_exec(struct args *);

static const struct cmd_opt cmd_status_opts[] = {
    {"json", 0, NULL, 0, "print one JSON object"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_status_entry = {
    .name = "status",
    .summary = "Show vmux's version, the backend (QEMU and its version, "
               "the accelerator and why), the profiles, sessions by state, "
               "resources in use against the host's, and the last 50 "
               "errors with their time, session and message.",
    .opts = cmd_status_opts,
    .min_args = 0,
    .max_args = 0,
    .flags = CMD_READONLY,
    .exec = cmd_status_exec,
};

/* QEMU's first --version line, or NULL. Free it. */
static char *
qemu_version(const char *qemu)
{
	char *cmd, line[256], *out = NULL;
	FILE *p;

	xasprintf(&cmd, "'%s' --version 2>/dev/null", qemu);
	p = strchr(qemu, '\'') == NULL ? popen(cmd, "re") : NULL;
	free(cmd);
	if (p == NULL)
		return NULL;
	if (fgets(line, sizeof line, p) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		out = xstrdup(line);
	}
	pclose(p);
	return out;
}

/* The backend: QEMU, its version, the accelerator. */
static cJSON *
status_backend(void)
{
	const char *env = getenv("VMUX_QEMU"), *accel, *no_state;
	cJSON *b = cJSON_CreateObject();
	char *bin, *ver, *why = NULL;

	bin = session_qemu_find(1);
	cJSON_AddStringToObject(b, "name", "qemu");
	cJSON_AddBoolToObject(b, "available", bin != NULL);
	if (bin != NULL) {
		cJSON_AddStringToObject(b, "binary", bin);
		ver = qemu_version(bin);
		if (ver != NULL)
			cJSON_AddStringToObject(b, "version", ver);
		free(ver);
		/* which, and why: vmux's own unless VMUX_QEMU or a build
		 * without it (make QEMU=debian) chose another */
		cJSON_AddStringToObject(
		    b, "build", session_qemu_is_own(bin) ? "vmux" : "other");
		cJSON_AddStringToObject(b, "chosen_by",
		    env != NULL && *env != '\0' ? "VMUX_QEMU"
		        : session_qemu_is_own(bin)
		        ? "default"
		        : "default (no vmux-qemu beside vmux)");
		no_state = session_qemu_why_no_state(bin);
		cJSON_AddBoolToObject(b, "saves_state", no_state == NULL);
		if (no_state != NULL)
			cJSON_AddStringToObject(b, "no_state_reason", no_state);
	}
	accel = accel_detect(&why);
	cJSON_AddStringToObject(b, "accel", accel != NULL ? accel : "tcg");
	if (why != NULL)
		cJSON_AddStringToObject(b, "accel_reason", why);
	free(why);
	free(bin);
	return b;
}

/* Sessions by state and what the running ones use. */
static void
status_sessions(
    cJSON *o, const struct session_entry *v, size_t n, const char *home)
{
	static const char *const states[] = {
	    "starting", "running", "stopping", "stopped", "crashed", "broken"};
	cJSON *by = cJSON_AddObjectToObject(o, "sessions"), *res;
	long long counts[6] = {0}, cpus = 0, mem = 0, ws = 0;
	long host_cpus = sysconf(_SC_NPROCESSORS_ONLN);
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	struct statvfs fs;
	struct stat st;
	size_t i, k;

	for (i = 0; i < n; i++) {
		const char *s = v[i].ok ? session_state(&v[i].rec) : "broken";
		for (k = 0; k < 6; k++) {
			if (strcmp(s, states[k]) == 0)
				counts[k]++;
		}
		if (!v[i].ok)
			continue;
		if (strcmp(s, "stopped") != 0 && strcmp(s, "crashed") != 0) {
			cpus += v[i].rec.cpus;
			mem += v[i].rec.memory_mb;
		}
		if (v[i].rec.workspace != NULL &&
		    stat(v[i].rec.workspace, &st) == 0)
			ws += (long long)st.st_blocks * 512;
	}
	/* the pool's VMs take the host's CPUs and memory too */
	{
		struct pool_vm *pv;
		size_t pn;
		char *why = NULL;
		long long ready = 0, booting = 0;
		cJSON *pool = cJSON_AddObjectToObject(o, "pool");
		if (pool_list(home, &pv, &pn, &why) == 0) {
			for (i = 0; i < pn; i++) {
				if (pv[i].state == POOL_CLAIMED || !pv[i].ok ||
				    !session_qemu_alive(&pv[i].rec))
					continue;
				ready += pv[i].state == POOL_READY;
				booting += pv[i].state == POOL_BOOTING;
				cpus += pv[i].rec.cpus;
				mem += pv[i].rec.memory_mb;
			}
			pool_list_free(pv, pn);
		} else
			free(why);
		cJSON_AddNumberToObject(pool, "ready", (double)ready);
		cJSON_AddNumberToObject(pool, "booting", (double)booting);
	}
	cJSON_AddNumberToObject(by, "total", (double)n);
	for (k = 0; k < 6; k++)
		cJSON_AddNumberToObject(by, states[k], (double)counts[k]);
	cJSON_AddNumberToObject(
	    o, "active_sessions", (double)(counts[0] + counts[1] + counts[2]));
	res = cJSON_AddObjectToObject(o, "resources");
	cJSON_AddNumberToObject(res, "cpus_in_use", (double)cpus);
	cJSON_AddNumberToObject(res, "host_cpus", (double)host_cpus);
	cJSON_AddNumberToObject(res, "memory_mb_in_use", (double)mem);
	cJSON_AddNumberToObject(
	    res, "host_memory_mb", (double)((long long)pages * psize >> 20));
	cJSON_AddNumberToObject(res, "workspace_host_bytes", (double)ws);
	if (statvfs(home, &fs) == 0)
		cJSON_AddNumberToObject(res, "home_free_bytes",
		    (double)fs.f_bavail * (double)fs.f_frsize);
}

/* The whole status object. */
static cJSON *
status_json(const char *home, const struct session_entry *v, size_t n)
{
	cJSON *o = cJSON_CreateObject(), *profiles, *errors;
	const char *const *names = profile_builtin_names();
	struct profile p;
	char *cause = NULL;
	size_t i;

	cJSON_AddStringToObject(o, "version", VMUX_VERSION);
	cJSON_AddStringToObject(o, "home", home);
	cJSON_AddItemToObject(o, "backend", status_backend());
	cJSON_AddStringToObject(o, "profile", "default");
	profiles = cJSON_AddArrayToObject(o, "profiles");
	for (i = 0; names[i] != NULL; i++) {
		if (profile_get(names[i], &p, &cause) == 0)
			cJSON_AddItemToArray(profiles, profile_json(&p));
		else {
			free(cause);
			cause = NULL;
		}
	}
	status_sessions(o, v, n, home);
	errors = errors_read(home);
	cJSON_AddNumberToObject(
	    o, "recent_error_count", cJSON_GetArraySize(errors));
	cJSON_AddItemToObject(o, "recent_errors", errors);
	return o;
}

/* Print a number field of o. */
static double
num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* Print a string field of o ("-" when absent). */
static const char *
str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : "-";
}

/* The status as text. */
static void
status_print(const cJSON *o)
{
	const cJSON *b = cJSON_GetObjectItem(o, "backend");
	const cJSON *s = cJSON_GetObjectItem(o, "sessions");
	const cJSON *r = cJSON_GetObjectItem(o, "resources");
	const cJSON *e, *errs = cJSON_GetObjectItem(o, "recent_errors");
	char *safe, *sess, *cmd;

	printf("vmux %s, home %s\n", str(o, "version"), str(o, "home"));
	printf("backend: %s (%s), accel %s%s%s%s\n", str(b, "version"),
	    str(b, "binary"), str(b, "accel"),
	    cJSON_GetObjectItem(b, "accel_reason") != NULL ? " (" : "",
	    cJSON_GetObjectItem(b, "accel_reason") != NULL
	        ? str(b, "accel_reason")
	        : "",
	    cJSON_GetObjectItem(b, "accel_reason") != NULL ? ")" : "");
	if (cJSON_GetObjectItem(b, "build") != NULL)
		printf("qemu: %s, chosen by %s; %s%s\n",
		    strcmp(str(b, "build"), "vmux") == 0 ? "vmux's own build"
		                                         : "not vmux's build",
		    str(b, "chosen_by"),
		    cJSON_IsTrue(cJSON_GetObjectItem(b, "saves_state"))
		        ? "a session's state can be saved and its bridge "
		          "restarted"
		        : "cannot save a session's state: ",
		    cJSON_IsTrue(cJSON_GetObjectItem(b, "saves_state"))
		        ? ""
		        : str(b, "no_state_reason"));
	printf("sessions: %.0f (%.0f running, %.0f starting, %.0f stopping, "
	       "%.0f stopped, %.0f crashed, %.0f broken)\n",
	    num(s, "total"), num(s, "running"), num(s, "starting"),
	    num(s, "stopping"), num(s, "stopped"), num(s, "crashed"),
	    num(s, "broken"));
	if (num(cJSON_GetObjectItem(o, "pool"), "ready") +
	        num(cJSON_GetObjectItem(o, "pool"), "booting") >
	    0)
		printf("pool: %.0f ready, %.0f booting (vmux pool ls)\n",
		    num(cJSON_GetObjectItem(o, "pool"), "ready"),
		    num(cJSON_GetObjectItem(o, "pool"), "booting"));
	printf("in use: %.0f of %.0f CPUs, %.0f of %.0f MiB memory, "
	       "workspaces %.0f MiB on the host\n",
	    num(r, "cpus_in_use"), num(r, "host_cpus"),
	    num(r, "memory_mb_in_use"), num(r, "host_memory_mb"),
	    num(r, "workspace_host_bytes") / 1048576);
	printf("recent errors: %.0f\n", num(o, "recent_error_count"));
	cJSON_ArrayForEach(e, errs)
	{
		/* argv as typed and messages: newlines and escapes shown
		 * escaped, so no line can pass for vmux's own */
		safe = str_printable(str(e, "message"), 0);
		sess = str_printable(str(e, "session"), 0);
		cmd = str_printable(str(e, "command"), 0);
		printf(
		    "  %s  %-12s %-8s %s\n", str(e, "time"), sess, cmd, safe);
		free(cmd);
		free(sess);
		free(safe);
	}
}

/* Gather and show the status. */
static int
cmd_status_exec(struct args *a)
{
	struct session_entry *v = NULL;
	char *home = cli_home(), *cause = NULL;
	size_t n = 0;
	cJSON *o;

	(void)a;
	if (home == NULL)
		return EXIT_VMUX;
	if (session_list(home, &v, &n, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		free(home);
		return EXIT_VMUX;
	}
	o = status_json(home, v, n);
	session_list_free(v, n);
	free(home);
	if (cli_json())
		cli_result(o);
	else {
		status_print(o);
		cJSON_Delete(o);
	}
	return 0;
}
