/*
 * cp-args.c: the operands of `vmux cp`.
 *
 * As in docker cp, NAME:PATH names a path in session NAME's guest and
 * anything else a host path; exactly one side is remote. A word counts as
 * NAME: when the part before its first ':' has no '/', so host paths with a
 * colon can be written ./a:b or /abs/a:b. Guest paths must be absolute.
 */
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

/*
 * Split one operand: 1 (remote: *session and *path set, caller frees),
 * 0 (a host path), -1 with cause (a remote operand that is not valid).
 */
int
cp_split(const char *arg, char **session, char **path, char **cause)
{
	const char *colon = strchr(arg, ':');
	char *name, *why = NULL;

	*session = *path = NULL;
	if (colon == NULL || colon == arg ||
	    memchr(arg, '/', (size_t)(colon - arg)) != NULL)
		return 0;
	name = xstrndup(arg, (size_t)(colon - arg));
	/* a glob picks several sessions: cmd-cp copies to or from each */
	if (!name_is_glob(name) && session_name_valid(name, &why) != 0) {
		xasprintf(cause,
		    "'%s': %s (write a host path with ':' as ./%s)", arg, why,
		    arg);
		free(why);
		free(name);
		return -1;
	}
	if (colon[1] == '\0') {
		xasprintf(
		    cause, "'%s': missing the path after '%s:'", arg, name);
		free(name);
		return -1;
	}
	if (colon[1] != '/') {
		xasprintf(cause, "'%s': the guest path must be absolute", arg);
		free(name);
		return -1;
	}
	*session = name;
	*path = xstrdup(colon + 1);
	return 1;
}

/* Parse SRC and DST into spec; 0 or -1 with cause. */
int
cp_parse(const char *src, const char *dst, struct cp_spec *spec, char **cause)
{
	char *ss, *sp, *ds, *dp;
	int rs, rd;

	memset(spec, 0, sizeof *spec);
	if (*src == '\0' || *dst == '\0') {
		xasprintf(cause, "empty path");
		return -1;
	}
	if ((rs = cp_split(src, &ss, &sp, cause)) < 0)
		return -1;
	if ((rd = cp_split(dst, &ds, &dp, cause)) < 0) {
		free(ss);
		free(sp);
		return -1;
	}
	if (rs && rd) {
		xasprintf(cause,
		    "copying between two guests is not supported "
		    "(one of SRC and DST must be a host path)");
		free(ss);
		free(sp);
		free(ds);
		free(dp);
		return -1;
	}
	if (!rs && !rd) {
		xasprintf(cause,
		    "one of SRC and DST must be NAME:PATH (a path "
		    "in session NAME)");
		return -1;
	}
	spec->upload = rd;
	spec->session = rd ? ds : ss;
	spec->remote = rd ? dp : sp;
	spec->local = xstrdup(rd ? src : dst);
	return 0;
}

/* Free what cp_parse filled in. */
void
cp_spec_free(struct cp_spec *spec)
{
	free(spec->session);
	free(spec->remote);
	free(spec->local);
	memset(spec, 0, sizeof *spec);
}
