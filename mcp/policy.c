/*
 * policy.c: what an MCP server may do, decided by whoever started it.
 *
 * An agent gets what its server was given and nothing more: the sessions
 * it makes carry the label vmux.mcp=NAME and it sees only those (unless
 * --see-all), it holds at most so many sessions and so much memory, its
 * copies touch host files only beneath the folders it was given, and with
 * --no-net its sessions have no network. The labels it sets are under the
 * keys it was given (--label-key; by default mcp.* alone), so that its
 * sessions join no person's selector (a class's wall, cp -l, check -l). The
 * profile it creates under (and what that profile locks) is enforced by vmux
 * new itself. The caller owns struct mcp_policy.
 */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "session/session.h"
#include "mcp.h"

/* Is session rec this server's? */
int
policy_owns(const struct mcp_policy *p, const struct session_record *rec)
{
	const char *v = label_get(rec->labels, rec->nlabels, MCP_LABEL_KEY);

	return v != NULL && strcmp(v, p->name) == 0;
}

/*
 * May the agent act on session name? 0, or -1 with *cause. A session the
 * server may not see is answered as one that does not exist: the agent
 * learns nothing of the others' sessions.
 */
int
policy_session_visible(
    const struct mcp_policy *p, const char *name, char **cause)
{
	struct session_record rec;
	char *why = NULL;
	int ok;

	if (session_name_valid(name, cause) != 0)
		return -1;
	if (record_load(p->home, name, &rec, &why) != 0) {
		free(why);
		xasprintf(cause, "no session named '%s'", name);
		return -1;
	}
	ok = p->see_all || policy_owns(p, &rec);
	record_free(&rec);
	if (!ok) {
		xasprintf(cause, "no session named '%s'", name);
		return -1;
	}
	return 0;
}

/*
 * May the agent make one more session of memory_mb? Counts the sessions
 * labelled as this server's, whatever their state (a stopped one keeps
 * its workspace and may start again). 0, or -1 with *cause.
 */
int
policy_may_create(const struct mcp_policy *p, long long memory_mb, char **cause)
{
	struct session_entry *list;
	size_t n, i;
	int count = 0;
	long long mem = 0;

	if (session_list(p->home, &list, &n, cause) != 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (!list[i].ok || !policy_owns(p, &list[i].rec))
			continue;
		count++;
		mem += list[i].rec.memory_mb;
	}
	session_list_free(list, n);
	count += p->pending_sessions; /* being made now */
	mem += p->pending_memory_mb;
	if (count >= p->max_sessions) {
		xasprintf(cause,
		    "this server may hold at most %d sessions and holds %d: "
		    "remove one first",
		    p->max_sessions, count);
		return -1;
	}
	if (p->max_memory_mb > 0 && mem + memory_mb > p->max_memory_mb) {
		xasprintf(cause,
		    "this server may hold at most %lld MiB of guest memory; "
		    "its sessions hold %lld MiB and this one asks %lld",
		    p->max_memory_mb, mem, memory_mb);
		return -1;
	}
	return 0;
}

/*
 * Resolve a host path the agent named for a copy: it must be absolute and
 * lie beneath one of the server's roots once symlinks are resolved. For a
 * write (the destination of copy_out) the path itself may not exist yet:
 * its parent is resolved instead. 0 with *resolved (caller frees), or -1
 * with *cause.
 */
int
policy_host_path(const struct mcp_policy *p, const char *path, int for_write,
    char **resolved, char **cause)
{
	char real[PATH_MAX], *parent, *slash, *full;
	const char *base = NULL;

	*resolved = NULL;
	if (p->nroots == 0) {
		xasprintf(cause,
		    "host paths are refused: this server was given no "
		    "folders (vmux mcp --allow-root DIR)");
		return -1;
	}
	if (path[0] != '/') {
		xasprintf(cause, "host path '%s' must be absolute", path);
		return -1;
	}
	if (realpath(path, real) != NULL)
		full = xstrdup(real);
	else if (for_write && errno == ENOENT) {
		parent = xstrdup(path);
		slash = strrchr(parent, '/');
		base = slash + 1;
		*slash = '\0';
		if (*base == '\0' || strcmp(base, ".") == 0 ||
		    strcmp(base, "..") == 0) {
			free(parent);
			xasprintf(cause, "host path '%s' names no file", path);
			return -1;
		}
		if (realpath(*parent ? parent : "/", real) == NULL) {
			free(parent);
			xasprintf(
			    cause, "host path '%s': %s", path, strerror(errno));
			return -1;
		}
		xasprintf(&full, "%s/%s", strcmp(real, "/") ? real : "",
		    path + (base - parent));
		free(parent);
	} else {
		xasprintf(cause, "host path '%s': %s", path, strerror(errno));
		return -1;
	}
	if (beneath_root(full, p->roots, p->nroots) == NULL) {
		xasprintf(cause,
		    "host path '%s' is outside the folders this server may "
		    "use",
		    path);
		free(full);
		return -1;
	}
	/* Named as it is, with no symlink or .. on the way: what was checked
	 * is what vmux cp opens by name (a path through a link could be
	 * pointed elsewhere between the two). */
	if (strcmp(full, path) != 0) {
		xasprintf(cause,
		    "host path '%s' goes through a symlink or '..': name it "
		    "as it is, %s",
		    path, full);
		free(full);
		return -1;
	}
	*resolved = full;
	return 0;
}

/* The selector that picks what the agent may see among given's matches
 * (given may be NULL): caller frees. */
char *
policy_selector(const struct mcp_policy *p, const char *given)
{
	char *s;

	if (p->see_all)
		return given != NULL && *given ? xstrdup(given) : NULL;
	if (given != NULL && *given)
		xasprintf(&s, "%s,%s=%s", given, MCP_LABEL_KEY, p->name);
	else
		xasprintf(&s, "%s=%s", MCP_LABEL_KEY, p->name);
	return s;
}

/*
 * May the agent set a label under key? Its own vmux.mcp never; else a key
 * that matches one of --label-key's patterns (fnmatch), MCP_LABEL_KEYS
 * when none was given. 0, or -1 with *cause naming what is allowed.
 */
int
policy_label_key(const struct mcp_policy *p, const char *key, char **cause)
{
	static const char *const defaults[] = {MCP_LABEL_KEYS};
	const char *const *keys =
	    p->nlabel_keys > 0 ? (const char *const *)p->label_keys : defaults;
	size_t n = p->nlabel_keys > 0 ? p->nlabel_keys : nitems(defaults);
	char *allowed = NULL, *more;

	if (strcmp(key, MCP_LABEL_KEY) == 0) {
		xasprintf(
		    cause, "the label %s is the server's own", MCP_LABEL_KEY);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (fnmatch(keys[i], key, 0) == 0)
			return 0;
	for (size_t i = 0; i < n; i++) {
		xasprintf(&more, "%s%s%s", allowed != NULL ? allowed : "",
		    allowed != NULL ? ", " : "", keys[i]);
		free(allowed);
		allowed = more;
	}
	xasprintf(cause,
	    "the label key %s is not one this server may set (allowed: %s; "
	    "vmux mcp --label-key)",
	    key, allowed);
	free(allowed);
	return -1;
}

/*
 * May the agent pull the image reference ref (its resolved text, as
 * docker.io/library/alpine:3)? Only when an --allow-image glob matches.
 */
int
policy_image(const struct mcp_policy *p, const char *ref)
{
	for (size_t i = 0; i < p->nallow_images; i++)
		if (fnmatch(p->allow_images[i], ref, 0) == 0)
			return 1;
	return 0;
}

/* Release what the policy holds. */
void
policy_free(struct mcp_policy *p)
{
	free(p->name);
	free(p->profile);
	for (size_t i = 0; i < p->nroots; i++)
		free(p->roots[i]);
	free(p->roots);
	for (size_t i = 0; i < p->nlabel_keys; i++)
		free(p->label_keys[i]);
	free(p->label_keys);
	for (size_t i = 0; i < p->nallow_images; i++)
		free(p->allow_images[i]);
	free(p->allow_images);
	free(p->home);
	memset(p, 0, sizeof p[0]);
}
