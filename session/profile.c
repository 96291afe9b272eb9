/*
 * profile.c: session profiles, the policy a session is created under.
 *
 * A profile gives a session its network mode, read-only root, host-mount
 * mode, CPUs, memory, process limit, workspace size and quota, and the
 * longest exec timeout; fields it locks cannot be changed by flags (vmux
 * new refuses, naming the field and the profile). Four are built in (the
 * policy of seed 002's sandbox service): default, offline_readonly,
 * network_basic, network_extended. A user profile is a file
 * $XDG_CONFIG_HOME/vmux/profiles/NAME.profile of "key value" lines, which
 * starts from `inherit NAME` (default: default) and may `lock` fields.
 * Profiles are resolved once, at vmux new; the record keeps the result, so
 * editing a profile never changes a session that exists.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session.h"

#define LOCK(f) (1u << (f))

/* The built-in profiles. */
static const struct profile builtin[] = {
    {"default", 0, 0, MOUNTS_RW, 1, SESSION_MEMORY_DEFAULT, 1024,
        WORKSPACE_DEFAULT_MB, 0, 120, 0, {0}, ""},
    {"offline_readonly", 0, 1, MOUNTS_RO, 1, SESSION_MEMORY_DEFAULT, 256, 1024,
        0, 60, LOCK(SOPT_NET) | LOCK(SOPT_READ_ONLY) | LOCK(SOPT_MOUNTS), {0},
        ""},
    {"network_basic", 1, 0, MOUNTS_RW, 1, SESSION_MEMORY_DEFAULT, 1024,
        WORKSPACE_DEFAULT_MB, 0, 120, 0, {0}, ""},
    {"network_extended", 1, 0, MOUNTS_RW, 2, 1024, 4096, 16384, 0, 600, 0, {0},
        ""},
};

#define NBUILTIN (sizeof builtin / sizeof *builtin)

/* Does p lock field? */
int
profile_locked(const struct profile *p, int field)
{
	return (p->locked & LOCK(field)) != 0;
}

/* The names of the built-in profiles, NULL-terminated (static). */
const char *const *
profile_builtin_names(void)
{
	static const char *names[NBUILTIN + 1];
	size_t i;

	for (i = 0; i < NBUILTIN; i++)
		names[i] = builtin[i].name;
	return names;
}

/* Field index from its name (a row a profile sets), or -1. */
static int
field_index(const char *name)
{
	const struct session_option *o = session_option_find(name);

	return o != NULL && (o->flags & SOPT_PROFILE)
	    ? (int)(o - session_options)
	    : -1;
}

/*
 * Set one field of p (a session option a profile sets) from text, parsed as
 * its row says. 0, or -1 with cause naming what is wrong.
 */
static int
profile_set(struct profile *p, int field, const char *v, char **cause)
{
	const struct session_option *o = &session_options[field];
	long long n;
	char *why = NULL;

	if (field < 0 || field >= SOPT_N || !(o->flags & SOPT_PROFILE))
		NEVER("profile_set: not a profile's field");
	if (option_parse(o, o->flag, v, &n, &why) != 0) {
		free(why);
		xasprintf(cause, "bad value '%s' for %s", v, o->flag);
		return -1;
	}
	option_set(p, o->prof_off, o->prof_size, n);
	return 0;
}

/* Copy a built-in profile by name; 0 or -1. */
static int
builtin_get(const char *name, struct profile *out)
{
	size_t i;

	for (i = 0; i < NBUILTIN; i++) {
		if (strcmp(builtin[i].name, name) == 0) {
			*out = builtin[i];
			return 0;
		}
	}
	return -1;
}

/* Is name fit to be a profile (and file) name? */
static int
profile_name_ok(const char *name)
{
	return session_name_valid(name, NULL) == 0;
}

/*
 * Read a user profile file into *p. Lines: "inherit NAME" (first; a
 * built-in, default when absent), "FIELD VALUE", "lock FIELD...", comments with
 * #. 0 or -1 with cause "FILE:LINE: message".
 */
static int
profile_file(
    const char *path, const char *name, struct profile *p, char **cause)
{
	FILE *f = fopen(path, "re");
	char line[512], *why = NULL, *save, *key, *val;
	int lineno = 0, field, have_base = 0;

	if (f == NULL) {
		xasprintf(cause, "profile %s: %s", path, strerror(errno));
		return -1;
	}
	builtin_get("default", p);
	while (fgets(line, sizeof line, f) != NULL) {
		lineno++;
		line[strcspn(line, "#\n")] = '\0';
		key = strtok_r(line, " \t", &save);
		if (key == NULL)
			continue;
		val = strtok_r(NULL, " \t", &save);
		if (strcmp(key, "inherit") == 0) {
			if (have_base) {
				xasprintf(&why, "inherit must come first");
				goto fail;
			}
			if (val == NULL || builtin_get(val, p) != 0) {
				xasprintf(&why,
				    "inherit: no built-in profile "
				    "'%s'",
				    val != NULL ? val : "");
				goto fail;
			}
			have_base = 1;
			continue;
		}
		have_base = 1;
		if (strcmp(key, "image") == 0) { /* text: not a table row */
			if (val == NULL ||
			    strtok_r(NULL, " \t", &save) != NULL ||
			    strlen(val) >= sizeof p->image) {
				xasprintf(&why,
				    "want: image REF (a name, file "
				    "or reference of --image)");
				goto fail;
			}
			snprintf(p->image, sizeof p->image, "%s", val);
			continue;
		}
		if (strcmp(key, "lock") == 0) {
			for (; val != NULL;
			     val = strtok_r(NULL, " \t", &save)) {
				if ((field = field_index(val)) < 0) {
					xasprintf(
					    &why, "unknown field '%s'", val);
					goto fail;
				}
				p->locked |= LOCK(field);
			}
			continue;
		}
		if ((field = field_index(key)) < 0) {
			xasprintf(&why, "unknown field '%s'", key);
			goto fail;
		}
		if (val == NULL || strtok_r(NULL, " \t", &save) != NULL) {
			xasprintf(&why, "want: %s VALUE", key);
			goto fail;
		}
		if (profile_set(p, field, val, &why) != 0)
			goto fail;
	}
	fclose(f);
	snprintf(p->name, sizeof p->name, "%s", name);
	return 0;
fail:
	fclose(f);
	xasprintf(cause, "%s:%d: %s", path, lineno, why);
	free(why);
	return -1;
}

/*
 * The profile called name: a user's file in $XDG_CONFIG_HOME/vmux/profiles
 * (which may shadow a built-in), else a built-in. 0 or -1 with cause.
 */
int
profile_get(const char *name, struct profile *out, char **cause)
{
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	char *path = NULL;
	int rc;

	memset(out, 0, sizeof *out);
	if (!profile_name_ok(name)) {
		xasprintf(cause, "invalid profile name '%s'", name);
		return -1;
	}
	if (xdg != NULL && *xdg == '/')
		xasprintf(&path, "%s/vmux/profiles/%s.profile", xdg, name);
	else if (home != NULL && *home == '/')
		xasprintf(
		    &path, "%s/.config/vmux/profiles/%s.profile", home, name);
	if (path != NULL && access(path, F_OK) == 0) {
		rc = profile_file(path, name, out, cause);
		free(path);
		return rc;
	}
	free(path);
	if (builtin_get(name, out) == 0)
		return 0;
	xasprintf(cause,
	    "unknown profile '%s' (built in: default, "
	    "offline_readonly, network_basic, network_extended)",
	    name);
	return -1;
}

/* A profile as JSON (vmux status, the pool's spec): its rows' keys. */
cJSON *
profile_json(const struct profile *p)
{
	cJSON *o = cJSON_CreateObject(), *locked;
	int i;

	cJSON_AddStringToObject(o, "name", p->name);
	for (i = 0; i < SOPT_N; i++) {
		const struct session_option *so = &session_options[i];
		long long v;
		if (!(so->flags & SOPT_PROFILE))
			continue;
		v = option_get(p, so->prof_off, so->prof_size);
		cJSON_AddItemToObject(o, so->key, option_value_json(so, v));
	}
	if (p->image[0] != '\0')
		cJSON_AddStringToObject(o, "image", p->image);
	locked = cJSON_AddArrayToObject(o, "locked");
	for (i = 0; i < SOPT_N; i++) {
		if (profile_locked(p, i))
			cJSON_AddItemToArray(locked,
			    cJSON_CreateString(session_options[i].flag));
	}
	return o;
}
