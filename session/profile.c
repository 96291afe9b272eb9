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

/* Field names, as flags, files and error messages spell them. */
static const char *const field_names[] = {
    [PROFILE_NET] = "net",
    [PROFILE_READ_ONLY] = "read-only-root",
    [PROFILE_MOUNTS] = "mounts",
    [PROFILE_CPUS] = "cpus",
    [PROFILE_MEMORY] = "memory",
    [PROFILE_PIDS] = "pids",
    [PROFILE_DISK] = "disk",
    [PROFILE_QUOTA] = "quota",
    [PROFILE_MAX_TIMEOUT] = "max-timeout",
};

#define LOCK(f) (1u << (f))

/* The built-in profiles. */
static const struct profile builtin[] = {
    {"default", 0, 0, MOUNTS_RW, 1, 512, 1024, WORKSPACE_DEFAULT_MB, 0, 120, 0},
    {"offline_readonly", 0, 1, MOUNTS_RO, 1, 512, 256, 1024, 0, 60,
        LOCK(PROFILE_NET) | LOCK(PROFILE_READ_ONLY) | LOCK(PROFILE_MOUNTS)},
    {"network_basic", 1, 0, MOUNTS_RW, 1, 512, 1024, WORKSPACE_DEFAULT_MB, 0,
        120, 0},
    {"network_extended", 1, 0, MOUNTS_RW, 2, 1024, 4096, 16384, 0, 600, 0},
};

#define NBUILTIN (sizeof builtin / sizeof *builtin)

/* A field's name. */
const char *
profile_field_name(int field)
{
	return field >= 0 && field < PROFILE_NFIELDS ? field_names[field] : "?";
}

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

/* Field index from its name, or -1. */
static int
field_index(const char *name)
{
	int i;

	for (i = 0; i < PROFILE_NFIELDS; i++) {
		if (strcmp(field_names[i], name) == 0)
			return i;
	}
	return -1;
}

/* Parse "on"/"off" (and yes/no, true/false, 1/0). */
static int
parse_bool(const char *s, int *out)
{
	if (!strcmp(s, "on") || !strcmp(s, "yes") || !strcmp(s, "true") ||
	    !strcmp(s, "1"))
		*out = 1;
	else if (!strcmp(s, "off") || !strcmp(s, "no") || !strcmp(s, "false") ||
	    !strcmp(s, "0"))
		*out = 0;
	else
		return -1;
	return 0;
}

/* A whole number in [min, max]. */
static int
parse_num(const char *s, long long min, long long max, long long *out)
{
	char *end;

	errno = 0;
	*out = strtoll(s, &end, 10);
	return *s == '\0' || *end != '\0' || errno != 0 || *out < min ||
	        *out > max
	    ? -1
	    : 0;
}

/*
 * Set one field of p from text (a profile file's value). 0, or -1 with
 * cause naming what is wrong.
 */
int
profile_set(struct profile *p, int field, const char *v, char **cause)
{
	long long n;
	int b;

	switch (field) {
	case PROFILE_NET:
	case PROFILE_READ_ONLY:
		if (parse_bool(v, &b) != 0)
			goto bad;
		if (field == PROFILE_NET)
			p->net = b;
		else
			p->read_only_root = b;
		return 0;
	case PROFILE_MOUNTS:
		if (strcmp(v, "none") == 0)
			p->mounts = MOUNTS_NONE;
		else if (strcmp(v, "ro") == 0)
			p->mounts = MOUNTS_RO;
		else if (strcmp(v, "rw") == 0)
			p->mounts = MOUNTS_RW;
		else
			goto bad;
		return 0;
	case PROFILE_CPUS:
		if (parse_num(v, 1, 256, &n) != 0)
			goto bad;
		p->cpus = (int)n;
		return 0;
	case PROFILE_MEMORY:
		if (parse_num(v, SESSION_MEMORY_MIN, 1 << 24, &n) != 0)
			goto bad;
		p->memory_mb = (int)n;
		return 0;
	case PROFILE_PIDS:
		if (parse_num(v, 1, 4194304, &n) != 0)
			goto bad;
		p->pids_max = (int)n;
		return 0;
	case PROFILE_DISK:
		if (parse_num(v, WORKSPACE_MIN_MB, WORKSPACE_MAX_MB, &n) != 0)
			goto bad;
		p->disk_mb = n;
		return 0;
	case PROFILE_QUOTA:
		if (parse_num(v, 0, WORKSPACE_MAX_MB, &n) != 0)
			goto bad;
		p->quota_mb = n;
		return 0;
	case PROFILE_MAX_TIMEOUT:
		if (parse_num(v, 1, 86400, &n) != 0)
			goto bad;
		p->max_timeout_s = (int)n;
		return 0;
	default:
		NEVER("profile_set: bad field");
	}
bad:
	xasprintf(cause, "bad value '%s' for %s", v, field_names[field]);
	return -1;
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

/* The mount mode's name. */
const char *
profile_mounts_name(int mode)
{
	return mode == MOUNTS_NONE ? "none" : mode == MOUNTS_RO ? "ro" : "rw";
}

/* A profile as JSON (vmux status, vmux profiles). */
cJSON *
profile_json(const struct profile *p)
{
	cJSON *o = cJSON_CreateObject(), *locked;
	int i;

	cJSON_AddStringToObject(o, "name", p->name);
	cJSON_AddStringToObject(o, "network", p->net ? "on" : "off");
	cJSON_AddBoolToObject(o, "read_only_root", p->read_only_root);
	cJSON_AddStringToObject(o, "mounts", profile_mounts_name(p->mounts));
	cJSON_AddNumberToObject(o, "cpus", p->cpus);
	cJSON_AddNumberToObject(o, "memory_mb", p->memory_mb);
	cJSON_AddNumberToObject(o, "pids_limit", p->pids_max);
	cJSON_AddNumberToObject(o, "disk_mb", (double)p->disk_mb);
	cJSON_AddNumberToObject(o, "workspace_quota_mb", (double)p->quota_mb);
	cJSON_AddNumberToObject(o, "max_timeout_s", p->max_timeout_s);
	locked = cJSON_AddArrayToObject(o, "locked");
	for (i = 0; i < PROFILE_NFIELDS; i++) {
		if (profile_locked(p, i))
			cJSON_AddItemToArray(
			    locked, cJSON_CreateString(field_names[i]));
	}
	return o;
}
