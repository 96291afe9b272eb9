/*
 * cmd-pool.c: `vmux pool ls|fill|drain`: the warm pool of booted VMs that
 * `vmux new` claims (pool.c; its size in the settings' `pool` line).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

static int cmd_pool_exec(struct args *);

static const struct cmd_opt cmd_pool_opts[] = {
    {"json", 0, NULL, 0,
        "ls: one object {size, profile, image, vms: [{id, state, spec, "
        "cid, memory_mb, created}]}"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_pool_entry = {
    .name = "pool",
    .pre = "ls|fill|drain",
    .summary = "The warm pool: VMs kept booted so that vmux new is ready at "
               "once (settings: pool SIZE [profile P] [image I]). ls shows "
               "them (booting, ready); fill boots what is missing and "
               "waits; drain stops them all. A new that asks for anything "
               "but labels, or another profile or image, boots as usual.",
    .opts = cmd_pool_opts,
    .min_args = 1,
    .max_args = 1,
    .exec = cmd_pool_exec,
};

/* The name of a pool VM's state. */
static const char *
pool_state_name(int state)
{
	return state == POOL_READY   ? "ready"
	    : state == POOL_CLAIMED  ? "claimed"
	    : state == POOL_REMOVING ? "removing"
	                             : "booting";
}

/* A fill's steps on stderr (not with --json). */
static void
pool_notice(const char *msg)
{
	cli_noticef("pool: %s", msg);
}

/* vmux pool ls. */
static int
pool_ls(const char *home, const struct settings *st)
{
	struct pool_vm *v;
	size_t n, i;
	char *cause = NULL;
	cJSON *o, *arr;
	int ready = 0;

	if (pool_list(home, &v, &n, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		return EXIT_VMUX;
	}
	o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "size", st->pool_size);
	cJSON_AddStringToObject(o, "profile",
	    st->pool_profile != NULL  ? st->pool_profile
	        : st->profile != NULL ? st->profile
	                              : "default");
	if (st->pool_image != NULL)
		cJSON_AddStringToObject(o, "image", st->pool_image);
	arr = cJSON_AddArrayToObject(o, "vms");
	for (i = 0; i < n; i++) {
		cJSON *e;
		char *when;
		if (v[i].state == POOL_CLAIMED) /* a session now: vmux ls */
			continue;
		e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "id", v[i].id);
		cJSON_AddStringToObject(
		    e, "state", pool_state_name(v[i].state));
		if (v[i].spec != NULL)
			cJSON_AddStringToObject(e, "spec", v[i].spec);
		if (v[i].ok) {
			cJSON_AddNumberToObject(e, "cid", v[i].rec.cid);
			cJSON_AddNumberToObject(
			    e, "memory_mb", v[i].rec.memory_mb);
			when = time_rfc3339((double)v[i].rec.created);
			if (when != NULL)
				cJSON_AddStringToObject(e, "created", when);
			free(when);
		}
		ready += v[i].state == POOL_READY;
		cJSON_AddItemToArray(arr, e);
	}
	pool_list_free(v, n);
	if (cli_json()) {
		cli_result(o);
		return 0;
	}
	printf("pool: %d ready of %d (profile %s%s%s)\n", ready, st->pool_size,
	    cJSON_GetObjectItem(o, "profile")->valuestring,
	    st->pool_image != NULL ? ", image " : "",
	    st->pool_image != NULL ? st->pool_image : "");
	cJSON *e;
	cJSON_ArrayForEach(e, arr)
	{
		const cJSON *c = cJSON_GetObjectItem(e, "created");
		printf("%-14s  %-8s  %s\n",
		    cJSON_GetObjectItem(e, "id")->valuestring,
		    cJSON_GetObjectItem(e, "state")->valuestring,
		    cJSON_IsString(c) ? c->valuestring : "-");
	}
	cJSON_Delete(o);
	return 0;
}

/* Run one of pool's subcommands. */
static int
cmd_pool_exec(struct args *a)
{
	const char *sub = a->argv[0];
	struct settings st;
	char *home, *cause = NULL;
	int rc = 0, removed;

	if (strcmp(sub, "ls") != 0 && strcmp(sub, "fill") != 0 &&
	    strcmp(sub, "drain") != 0)
		return cli_usage_error(a->entry,
		    "unknown pool command '%s' (ls, fill, drain)", sub);
	if (settings_load(&st, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		return EXIT_VMUX;
	}
	if ((home = cli_home()) == NULL) {
		settings_free(&st);
		return EXIT_VMUX;
	}
	if (strcmp(sub, "ls") == 0)
		rc = pool_ls(home, &st);
	else if (strcmp(sub, "fill") == 0) {
		if (pool_fill(home, cli_json() ? NULL : pool_notice, &cause) !=
		    0) {
			cli_error("pool fill: %s", cause);
			free(cause);
			rc = EXIT_VMUX;
		}
	} else if (pool_drain(home, &removed, &cause) != 0) {
		cli_error("pool drain: %s", cause);
		free(cause);
		rc = EXIT_VMUX;
	} else if (!cli_json())
		printf("drained %d\n", removed);
	free(home);
	settings_free(&st);
	return rc;
}
