/*
 * select.c: the sessions a command's NAME arguments stand for. A command
 * whose entry says CMD_NAMES (stop, rm, ...) or CMD_NAME_ONE (exec, shell,
 * ...) takes, besides plain names, globs (`'student-*'`, fnmatch, against
 * the sessions there are) and `-l SELECTOR` (labels.c), which replaces
 * the NAME of a one-session command or adds to the names of a many-session
 * one. cli_select rewrites a->argv to plain names before the command runs,
 * so no command knows; a->selected says the names were not typed (rm asks
 * before removing what a pattern chose).
 */
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

/* Add name to v (n entries) unless it is there. */
static void
add_name(char ***v, size_t *n, const char *name)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*v)[i], name) == 0)
			return;
	*v = xreallocarray(*v, *n + 1, sizeof **v);
	(*v)[(*n)++] = xstrdup(name);
}

/* "a, b, c" (at most 8, then "..."), freed by the caller. */
static char *
name_list(char *const *v, size_t n)
{
	char *s = xstrdup(""), *t;

	for (size_t i = 0; i < n && i < 8; i++) {
		xasprintf(&t, "%s%s%s", s, i ? ", " : "", v[i]);
		free(s);
		s = t;
	}
	if (n > 8) {
		xasprintf(&t, "%s, ...", s);
		free(s);
		s = t;
	}
	return s;
}

/* Order for qsort: session entries by name. */
static int
entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct session_entry *)a)->name,
	    ((const struct session_entry *)b)->name);
}

/*
 * The sessions glob (NULL: any) and selector (NULL: no labels asked)
 * both pick, sorted; *names is the caller's (free each and it). 0, or an
 * exit status after saying why (2: a bad selector; EXIT_VMUX: none
 * matches, or the sessions could not be listed).
 */
int
select_sessions(
    const char *glob, const char *selector, char ***names, size_t *n)
{
	struct session_entry *ents = NULL;
	struct selector s = {NULL, 0};
	size_t nents = 0;
	char *home, *cause = NULL;
	int rc = 0;

	*names = NULL;
	*n = 0;
	if (selector != NULL && selector_parse(selector, &s, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		return EXIT_USAGE;
	}
	if ((home = cli_home()) == NULL) {
		selector_free(&s);
		return EXIT_VMUX;
	}
	if (session_list(home, &ents, &nents, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		rc = EXIT_VMUX;
	}
	qsort(ents, nents, sizeof *ents, entry_cmp);
	for (size_t k = 0; rc == 0 && k < nents; k++)
		if ((glob == NULL || name_glob_match(glob, ents[k].name)) &&
		    (selector == NULL ||
		        (ents[k].ok &&
		            selector_match(
		                &s, ents[k].rec.labels, ents[k].rec.nlabels))))
			add_name(names, n, ents[k].name);
	if (rc == 0 && *n == 0) {
		cli_error("no session matches %s%s%s", glob ? glob : "",
		    glob && selector ? " and " : "",
		    selector ? "the -l selector" : "");
		rc = EXIT_VMUX;
	}
	session_list_free(ents, nents);
	selector_free(&s);
	free(home);
	return rc;
}

/*
 * Rewrite a's NAME arguments (and -l) as the sessions they stand for;
 * 0, or an exit status after saying why (2: a bad pattern or one that
 * picks several sessions for a one-session command; EXIT_VMUX: no session
 * matches).
 */
int
cli_select(struct args *a)
{
	const struct cmd_entry *e = a->entry;
	const char *sel = (e->flags & (CMD_NAMES | CMD_NAME_ONE))
	    ? args_get(a, "selector")
	    : NULL;
	int one = (e->flags & CMD_NAME_ONE) != 0, nnames, glob = 0, rc = 0;
	int first = (e->flags & CMD_FIRST_NOT_NAME) && a->argc > 0 ? 1 : 0;
	struct session_entry *ents = NULL;
	size_t nents = 0, nout = 0;
	char **out = NULL, *home = NULL, *cause = NULL, *list;
	struct selector s = {NULL, 0};

	if (!(e->flags & (CMD_NAMES | CMD_NAME_ONE)))
		return 0;
	nnames = one ? (sel != NULL ? 0 : 1) : a->argc - first;
	if (nnames > a->argc)
		nnames = a->argc;
	for (int i = first; i < first + nnames; i++) {
		if (name_is_glob(a->argv[i]))
			glob = 1;
		else if (session_name_valid(a->argv[i], &cause) != 0) {
			rc = cli_usage_error(e, "%s", cause);
			goto out;
		}
	}
	if (sel == NULL && !glob)
		return 0;
	if (sel != NULL && selector_parse(sel, &s, &cause) != 0) {
		rc = cli_usage_error(e, "%s", cause);
		goto out;
	}
	if ((home = cli_home()) == NULL) {
		rc = EXIT_VMUX;
		goto out;
	}
	if (session_list(home, &ents, &nents, &cause) != 0) {
		cli_error("%s", cause);
		rc = EXIT_VMUX;
		goto out;
	}
	qsort(ents, nents, sizeof *ents, entry_cmp);
	for (int i = first; i < first + nnames; i++) {
		size_t matched = 0;
		if (!name_is_glob(a->argv[i])) {
			add_name(&out, &nout, a->argv[i]);
			continue;
		}
		for (size_t k = 0; k < nents; k++)
			if (name_glob_match(a->argv[i], ents[k].name)) {
				add_name(&out, &nout, ents[k].name);
				matched++;
			}
		if (matched == 0 && !args_has_opt(a, "force")) {
			/* rm -f: nothing there is no complaint */
			cli_error("no session matches '%s'", a->argv[i]);
			rc = EXIT_VMUX;
			goto out;
		}
	}
	if (sel != NULL) {
		size_t matched = 0;
		for (size_t k = 0; k < nents; k++)
			if (ents[k].ok &&
			    selector_match(
			        &s, ents[k].rec.labels, ents[k].rec.nlabels)) {
				add_name(&out, &nout, ents[k].name);
				matched++;
			}
		if (matched == 0) {
			cli_error("no session has labels matching -l %s", sel);
			rc = EXIT_VMUX;
			goto out;
		}
	}
	if (one && nout != 1 && !((e->flags & CMD_FANOUT) && nout > 1)) {
		list = name_list(out, nout);
		rc = cli_usage_error(e,
		    "%s%s picks %zu sessions (%s); vmux %s works on one: name "
		    "it",
		    sel != NULL ? "-l " : "", sel != NULL ? sel : a->argv[0],
		    nout, list, e->name);
		free(list);
		goto out;
	}
	/* the new argv: what came first, the names, then what followed */
	{
		int rest = a->argc - first - nnames;
		char **argv = xcalloc(
		    (size_t)first + nout + (size_t)rest + 1, sizeof *argv);
		for (int i = 0; i < first; i++)
			argv[i] = a->argv[i];
		for (size_t i = 0; i < nout; i++)
			argv[(size_t)first + i] = out[i];
		for (int i = 0; i < rest; i++)
			argv[(size_t)first + nout + (size_t)i] =
			    a->argv[first + nnames + i];
		free(a->argv);
		a->argv = argv;
		a->argc = first + (int)nout + rest;
		a->owned = out;
		a->nowned = nout;
		a->selected = 1;
		a->nnames = (int)nout;
		out = NULL;
		nout = 0;
	}
out:
	for (size_t i = 0; i < nout; i++)
		free(out[i]);
	free(out);
	session_list_free(ents, nents);
	selector_free(&s);
	free(home);
	free(cause);
	return rc;
}
