/*
 * cmd-fork.c: `vmux fork NAME NEW...` or `vmux fork NAME --count N
 * --prefix P`: running copies of a session (session/fork.c), named as
 * given or PREFIX1 ... PREFIXN as new --count names them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

#define FORK_COUNT_MAX 64

static int cmd_fork_exec(struct args *);

static const struct cmd_opt cmd_fork_opts[] = {
    {"count", 0, "N", 0, "make N copies, named PREFIX1 ... PREFIXN"},
    {"prefix", 0, "PREFIX", 0, "the names --count makes"},
    {"json", 0, NULL, 0,
        "print {\"parent\", \"frozen_ms\", \"children\": [{\"name\", "
        "\"ready_ms\"} or {\"name\", \"error\"}]}"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_fork_entry = {
    .name = "fork",
    .pre = "NAME NEW... | NAME --count N --prefix P",
    .summary = "Make running copies of a session: each starts with its "
               "memory, processes, shells and workspace, then they go "
               "apart. Each gets its own name, host name, machine-id and "
               "CID; labels are kept, grants, web links, recordings and "
               "--publish ports are not. The parent stops only while its "
               "files are copied. Refused for a session with a host "
               "folder.",
    .flags = CMD_CREATES,
    .opts = cmd_fork_opts,
    .min_args = 1,
    .max_args = -1,
    .exec = cmd_fork_exec,
};

/* The children's names, from NEW... or --count/--prefix; NULL with cause. */
static char **
fork_names(struct args *a, size_t *n, char **cause)
{
	const char *count = args_get(a, "count"),
	           *prefix = args_get(a, "prefix");
	long long c = 0;
	char **names;

	*n = 0;
	if ((count == NULL) != (prefix == NULL)) {
		xasprintf(cause, "--count and --prefix go together");
		return NULL;
	}
	if (count != NULL && a->argc > 1) {
		xasprintf(cause, "NEW names, or --count/--prefix, not both");
		return NULL;
	}
	if (count == NULL && a->argc < 2) {
		xasprintf(cause, "name the copy: vmux fork %s NEW", a->argv[0]);
		return NULL;
	}
	if (count != NULL &&
	    option_number("--count", count, 1, FORK_COUNT_MAX, &c, cause) != 0)
		return NULL;
	*n = count != NULL ? (size_t)c : (size_t)a->argc - 1;
	names = xcalloc(*n, sizeof *names);
	for (size_t i = 0; i < *n; i++) {
		if (count != NULL)
			xasprintf(&names[i], "%s%zu", prefix, i + 1);
		else
			names[i] = xstrdup(a->argv[i + 1]);
		if (session_name_valid(names[i], cause) != 0) {
			for (size_t j = 0; j <= i; j++)
				free(names[j]);
			free(names);
			return NULL;
		}
	}
	return names;
}

/* Fork the session; EXIT_VMUX if any copy failed. */
static int
cmd_fork_exec(struct args *a)
{
	struct fork_result fr;
	cJSON *o, *arr;
	char *home, *cause = NULL, **names;
	size_t n;
	int rc = 0;

	memset(&fr, 0, sizeof fr);
	if (session_name_valid(a->argv[0], &cause) != 0 ||
	    (names = fork_names(a, &n, &cause)) == NULL) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	fr.child = xcalloc(n, sizeof *fr.child);
	fr.n = n;
	for (size_t i = 0; i < n; i++)
		fr.child[i].name = names[i]; /* fr owns them now */
	free(names);
	if ((home = cli_home()) == NULL) {
		fork_result_free(&fr);
		return EXIT_VMUX;
	}
	if (session_fork(home, a->argv[0], &fr, cli_notice, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		free(home);
		fork_result_free(&fr);
		return EXIT_VMUX;
	}
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "parent", a->argv[0]);
	cJSON_AddNumberToObject(o, "frozen_ms", (double)fr.frozen_ms);
	arr = cJSON_AddArrayToObject(o, "children");
	for (size_t i = 0; i < n; i++) {
		struct fork_child *ch = &fr.child[i];
		cJSON *c = cJSON_CreateObject();

		cJSON_AddStringToObject(c, "name", ch->name);
		if (ch->ok) {
			cJSON_AddNumberToObject(
			    c, "ready_ms", (double)ch->ready_ms);
			if (!cli_json())
				printf("forked %s\n", ch->name);
		} else {
			cli_error("%s: %s", ch->name,
			    ch->error != NULL ? ch->error : "failed");
			cJSON_AddStringToObject(c, "error",
			    ch->error != NULL ? ch->error : "failed");
			rc = EXIT_VMUX;
		}
		cJSON_AddItemToArray(arr, c);
	}
	cli_result(o);
	fork_result_free(&fr);
	free(home);
	return rc;
}
