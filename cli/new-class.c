/*
 * new-class.c: `vmux new --count N --prefix P` (or --roster FILE): a class
 * of sessions made at once, as many booting together as the host has
 * CPUs, each a child `vmux new NAME [the flags]` (exec-many.c), with a
 * progress line as each is ready or fails, then a count; --json: a list.
 * A name that exists fails alone; the others are made.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

/* Read a roster: a name per line, blank lines and # comments skipped. */
static int
roster_read(const char *path, char ***names, size_t *n, char **cause)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	int no = 0;

	*names = NULL;
	*n = 0;
	if (f == NULL) {
		xasprintf(cause, "roster %s: %s", path, strerror(errno));
		return -1;
	}
	while (getline(&line, &cap, f) != -1) {
		char *s = line, *e;
		no++;
		s += strspn(s, " \t");
		e = s + strcspn(s, "#\r\n");
		while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		*e = '\0';
		if (*s == '\0')
			continue;
		if (session_name_valid(s, cause) != 0 || *n >= CLASS_MAX) {
			if (*n >= CLASS_MAX) {
				free(*cause);
				xasprintf(cause,
				    "roster %s: more than %d names", path,
				    CLASS_MAX);
			} else {
				char *c = *cause;
				xasprintf(
				    cause, "roster %s:%d: %s", path, no, c);
				free(c);
			}
			free(line);
			fclose(f);
			return -1;
		}
		*names = xreallocarray(*names, *n + 1, sizeof **names);
		(*names)[(*n)++] = xstrdup(s);
	}
	free(line);
	fclose(f);
	if (*n == 0) {
		xasprintf(cause, "roster %s: no names", path);
		return -1;
	}
	return 0;
}

/* Progress: one line as each session is ready or fails. */
static void
class_done(const struct run *r)
{
	double s = (double)(mono_ms() - r->started_ms) / 1000;

	if (cli_json())
		return;
	if (r->status == 0)
		printf("%s  ready (%.1f s)\n", r->session, s);
	else {
		char *why = many_line(r->out[1] ? r->out[1] : "", r->len[1], 1);
		printf("%s  failed: %s\n", r->session, why);
		free(why);
	}
	fflush(stdout);
}

/* At the end: how many were made; --json: a result each. */
static void
class_result(const struct run *runs, size_t n)
{
	size_t ok = 0;
	cJSON *arr;

	for (size_t i = 0; i < n; i++)
		ok += runs[i].status == 0;
	if (!cli_json()) {
		printf("%zu of %zu sessions created\n", ok, n);
		return;
	}
	arr = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", runs[i].session);
		cJSON_AddBoolToObject(o, "created", runs[i].status == 0);
		if (runs[i].status != 0) {
			char *why =
			    many_line(runs[i].out[1] ? runs[i].out[1] : "",
			        runs[i].len[1], 1);
			cJSON_AddStringToObject(o, "error", why);
			free(why);
		}
		cJSON_AddItemToArray(arr, o);
	}
	cli_result(arr);
}

/* vmux new --count/--roster: flags already checked by the caller. */
int
new_class(struct args *a)
{
	static const char *const skip[] = {
	    "count", "prefix", "roster", "json", NULL};
	const char *count = args_get(a, "count"),
	           *roster = args_get(a, "roster");
	const char *prefix = args_get(a, "prefix");
	char **names = NULL, *cause = NULL;
	size_t n = 0;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct many m = {.a = a,
	    .sub = "new",
	    .skip = skip,
	    .parallel = cpus > 0 ? (int)cpus : 1,
	    .done = class_done,
	    .result = class_result};
	int rc;

	if (count != NULL && roster != NULL) {
		rc = cli_usage_error(a->entry, "--count or --roster, not both");
		goto out;
	}
	/* what one session alone can have */
	if (args_get(a, "workspace") != NULL || args_has(a, "publish")) {
		rc = cli_usage_error(a->entry,
		    "--%s is for one session, not a class",
		    args_get(a, "workspace") != NULL ? "workspace" : "publish");
		goto out;
	}
	if (roster != NULL) {
		if (prefix != NULL) {
			rc = cli_usage_error(
			    a->entry, "--prefix goes with --count");
			goto out;
		}
		if (roster_read(roster, &names, &n, &cause) != 0) {
			rc = cli_usage_error(a->entry, "%s", cause);
			goto out;
		}
	} else {
		long long k;
		if (option_number("--count", count, 1, CLASS_MAX, &k, &cause) !=
		    0) {
			rc = cli_usage_error(a->entry, "%s", cause);
			goto out;
		}
		if (prefix == NULL) {
			rc = cli_usage_error(a->entry,
			    "--count needs --prefix (names PREFIX1 ... "
			    "PREFIXN)");
			goto out;
		}
		for (long long i = 1; i <= k; i++) {
			names = xreallocarray(names, n + 1, sizeof *names);
			xasprintf(&names[n++], "%s%lld", prefix, i);
			if (session_name_valid(names[n - 1], &cause) != 0) {
				rc = cli_usage_error(a->entry, "%s", cause);
				goto out;
			}
		}
	}
	rc = many_run(&m, names, n) == 0 ? 0 : EXIT_VMUX;
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(cause);
	return rc;
}
