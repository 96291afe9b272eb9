/*
 * cmd-ls.c: `vmux ls [--json]`: list sessions.
 *
 * The state is judged live, not taken from the record: "running" only
 * while the recorded QEMU pid is alive and its command line names the
 * session's console log (a recycled pid does not count).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

static int cmd_ls_exec(struct args *);

static const struct cmd_opt cmd_ls_opts[] = {
    {"json", 0, NULL, 0, "print a JSON array instead of a table"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_ls_entry = {
    .name = "ls",
    .summary = "List sessions. Shows each one's name, state (running, "
               "starting, stopped or broken), accelerator, CID, CPUs, "
               "memory, pids, creation time and vsock socket.",
    .opts = cmd_ls_opts,
    .min_args = 0,
    .max_args = 0,
    .exec = cmd_ls_exec,
};

/* One session as `ls --json` (and `new --json`) shows it. */
cJSON *
ls_session_json(const struct session_entry *e)
{
	const struct session_record *r = &e->rec;
	cJSON *o = cJSON_CreateObject(), *pids;
	char *created;

	cJSON_AddStringToObject(o, "name", e->name);
	if (!e->ok) {
		cJSON_AddStringToObject(o, "state", "broken");
		cJSON_AddStringToObject(o, "error", e->error);
		return o;
	}
	created = time_rfc3339((double)r->created);
	cJSON_AddStringToObject(o, "state", session_state(r));
	cJSON_AddStringToObject(o, "accel", r->accel);
	cJSON_AddNumberToObject(o, "cid", r->cid);
	cJSON_AddStringToObject(
	    o, "vsock", r->vsock_kernel ? "kernel" : "bridge");
	if (r->vsock_uds != NULL)
		cJSON_AddStringToObject(o, "vsock_uds", r->vsock_uds);
	else
		cJSON_AddNullToObject(o, "vsock_uds");
	pids = cJSON_AddObjectToObject(o, "pids");
	cJSON_AddNumberToObject(pids, "qemu", r->qemu_pid);
	cJSON_AddNumberToObject(pids, "bridge", r->bridge_pid);
	if (created != NULL)
		cJSON_AddStringToObject(o, "created", created);
	else
		cJSON_AddNullToObject(o, "created");
	cJSON_AddNumberToObject(o, "cpus", r->cpus);
	cJSON_AddNumberToObject(o, "memory_mb", r->memory_mb);
	cJSON_AddStringToObject(o, "dir", r->dir);
	free(created);
	return o;
}

/* Print the sessions as a table. */
static void
ls_table(const struct session_entry *v, size_t n)
{
	size_t i, w = 4;

	if (n == 0)
		return;
	for (i = 0; i < n; i++) {
		if (strlen(v[i].name) > w)
			w = strlen(v[i].name);
	}
	printf("%-*s  %-8s  %-5s  %4s  %4s  %7s  %-13s  %-20s  %s\n", (int)w,
	    "NAME", "STATE", "ACCEL", "CID", "CPUS", "MEMORY", "PIDS",
	    "CREATED", "VSOCK");
	for (i = 0; i < n; i++) {
		const struct session_record *r = &v[i].rec;
		char mem[32], pids[32], *created;

		if (!v[i].ok) {
			printf("%-*s  %-8s  %s\n", (int)w, v[i].name, "broken",
			    v[i].error);
			continue;
		}
		created = time_rfc3339((double)r->created);
		snprintf(mem, sizeof mem, "%dM", r->memory_mb);
		snprintf(pids, sizeof pids, "%ld/%ld", (long)r->qemu_pid,
		    (long)r->bridge_pid);
		printf("%-*s  %-8s  %-5s  %4u  %4d  %7s  %-13s  %-20s  %s\n",
		    (int)w, v[i].name, session_state(r), r->accel, r->cid,
		    r->cpus, mem, pids, created != NULL ? created : "-",
		    r->vsock_uds != NULL ? r->vsock_uds : "vsock");
		free(created);
	}
}

/* List the sessions. */
static int
cmd_ls_exec(struct args *a)
{
	struct session_entry *v;
	char *home = cli_home(), *cause = NULL;
	size_t n, i;

	if (home == NULL)
		return EXIT_VMUX;
	if (session_list(home, &v, &n, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		free(home);
		return EXIT_VMUX;
	}
	free(home);
	if (cli_json()) {
		cJSON *arr = cJSON_CreateArray();
		for (i = 0; i < n; i++)
			cJSON_AddItemToArray(arr, ls_session_json(&v[i]));
		cli_result(arr);
	} else
		ls_table(v, n);
	session_list_free(v, n);
	return 0;
}
