/*
 * options.c: the session options, one table of every setting a session is
 * made with and keeps (tmux's options-table.c, for sessions).
 *
 * A row says everything the rest of vmux needs of a setting: its `vmux
 * new` flag (and --help text), its type, bounds and unit, its key in
 * profiles, session.json, ls --json and a profile's JSON (one name for one
 * fact), where struct session_record, struct profile and struct
 * launch_opts keep it, whether a profile sets it (and may lock it) and
 * whether a warm pool's VM can be given it when claimed. The flag parser
 * (cli/cmd-new.c), profiles (profile.c), records (record.c), ls --json
 * (cli/cmd-ls.c), the pool's matching (cli/pool.c) and the man page's
 * check (tests/unit) all read this table, so a new setting is one row here
 * and its effect where it takes effect.
 *
 * The value parsers are here too, the one place a size, a duration or a
 * number is read, for flags and profile files alike.
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "session.h"

/* Where a struct keeps a row's value: its offset and size, or none. */
#define IN(type, member)                                                       \
	offsetof(struct type, member), sizeof(((struct type *)0)->member)
#define NOWHERE SOPT_NOWHERE, 0

static const char *const mounts_choices[] = {"none", "ro", "rw", NULL};

const struct session_option session_options[] = {
    [SOPT_CPUS] = {"cpus", "N", "virtual CPUs, 1 to the host's (default 1)",
        SOPT_NUMBER, 1, 256, NULL, "cpus", NULL, IN(session_record, cpus),
        IN(profile, cpus), IN(launch_opts, cpus),
        SOPT_NEW | SOPT_PROFILE | SOPT_LS | SOPT_FIXED | SOPT_MCP, NULL, NULL},
    [SOPT_MEMORY] = {"memory", "SIZE",
        "guest memory, in MiB or with a unit (512M, 2G), 96M to the host's "
        "(default 512M)",
        SOPT_SIZE, SESSION_MEMORY_MIN, 1 << 24, "MiB", "memory_mb", NULL,
        IN(session_record, memory_mb), IN(profile, memory_mb),
        IN(launch_opts, memory_mb),
        SOPT_NEW | SOPT_PROFILE | SOPT_LS | SOPT_FIXED | SOPT_MCP, NULL, NULL},
    [SOPT_PIDS] = {"pids", "N",
        "most processes the user's commands may have (cgroup)", SOPT_NUMBER, 1,
        4194304, NULL, "pids_limit", "pids_max", IN(session_record, pids_limit),
        IN(profile, pids_limit), NOWHERE,
        SOPT_NEW | SOPT_PROFILE | SOPT_LS | SOPT_FIXED | SOPT_MCP, NULL,
        "vmux.pids_limit"},
    [SOPT_DISK] = {"disk", "SIZE",
        "size of the new workspace disk, e.g. 512M or 20G (default 4G; "
        "sparse: it takes host space only as the guest writes)",
        SOPT_SIZE, WORKSPACE_MIN_MB, WORKSPACE_MAX_MB, "MiB", "disk_mb", NULL,
        NOWHERE, IN(profile, disk_mb), IN(launch_opts, disk_mb),
        SOPT_NEW | SOPT_PROFILE, NULL, NULL},
    [SOPT_QUOTA] = {"quota", "SIZE",
        "most bytes the writable mounts may hold: exec refuses to start "
        "over it and reports going over",
        SOPT_SIZE, 0, WORKSPACE_MAX_MB, "MiB", "quota_mb", NULL,
        IN(session_record, quota_mb), IN(profile, quota_mb), NOWHERE,
        SOPT_NEW | SOPT_PROFILE | SOPT_LS, NULL, NULL},
    [SOPT_NET] = {"net", NULL,
        "a NIC with outbound NAT (QEMU user networking); default: no NIC",
        SOPT_BOOL, 0, 1, NULL, "network", "net", IN(session_record, net),
        IN(profile, net), NOWHERE,
        SOPT_NEW | SOPT_PROFILE | SOPT_ONOFF | SOPT_FIXED, NULL, NULL},
    [SOPT_READ_ONLY] = {"read-only-root", NULL, "make the guest's / read-only",
        SOPT_BOOL, 0, 1, NULL, "read_only_root", NULL,
        IN(session_record, read_only_root), IN(profile, read_only_root),
        NOWHERE, SOPT_NEW | SOPT_PROFILE | SOPT_LS | SOPT_FIXED, NULL, NULL},
    [SOPT_MOUNTS] = {"mounts", "none|ro|rw",
        "host mounts allowed: none, read-only, read-write", SOPT_CHOICE, 0, 2,
        NULL, "mounts_mode", NULL, IN(session_record, mounts_mode),
        IN(profile, mounts), NOWHERE, SOPT_PROFILE | SOPT_LS, mounts_choices,
        NULL},
    [SOPT_MAX_TIMEOUT] = {"max-timeout", "S",
        "the longest exec timeout; longer ones are clamped", SOPT_NUMBER, 1,
        86400, "s", "max_timeout_s", NULL, IN(session_record, max_timeout_s),
        IN(profile, max_timeout_s), NOWHERE, SOPT_PROFILE | SOPT_LS, NULL,
        NULL},
    [SOPT_TTL] = {"ttl", "DURATION",
        "stop the session this long after each boot (90, 30m, 8h, 2d)",
        SOPT_DURATION, 1, 365LL * 86400, "s", "ttl_s", NULL,
        IN(session_record, ttl_s), NOWHERE, IN(launch_opts, ttl_s),
        SOPT_NEW | SOPT_LS, NULL, NULL},
    [SOPT_IDLE] = {"idle-timeout", "DURATION",
        "stop the session once nobody used it this long (no command, "
        "transfer, key or shell output)",
        SOPT_DURATION, 1, 365LL * 86400, "s", "idle_timeout_s", "idle_s",
        IN(session_record, idle_s), NOWHERE, IN(launch_opts, idle_s),
        SOPT_NEW | SOPT_LS, NULL, NULL},
    [SOPT_HOSTNAME] = {"hostname", "NAME",
        "the guest's host name (default: the session's name)",
        SOPT_HOSTNAME_TEXT, 1, 63, NULL, "hostname", NULL,
        IN(session_record, hostname), NOWHERE, IN(launch_opts, hostname),
        SOPT_NEW | SOPT_POOL | SOPT_LS, NULL, NULL},
    [SOPT_NOFILE] = {"nofile", "N",
        "most files each of the user's processes may have open "
        "(RLIMIT_NOFILE of exec and shells; default 4096)",
        SOPT_NUMBER, 16, 1048576, NULL, "nofile", NULL,
        IN(session_record, sopt[SOPT_NOFILE]), IN(profile, sopt[SOPT_NOFILE]),
        NOWHERE, SOPT_NEW | SOPT_PROFILE | SOPT_LS | SOPT_FIXED | SOPT_MCP,
        NULL, "vmux.nofile"},
    [SOPT_TB_SIZE] = {"tb-size", "SIZE",
        "TCG's translation cache, 4M to 1G (default 32M): smaller saves "
        "host memory, and costs time where code runs anew (KVM: unused)",
        SOPT_SIZE, 4, 1024, "MiB", "tb_size_mb", NULL,
        IN(session_record, sopt[SOPT_TB_SIZE]), IN(profile, sopt[SOPT_TB_SIZE]),
        NOWHERE, SOPT_NEW | SOPT_PROFILE | SOPT_LS, NULL, NULL},
    [SOPT_IDLE_PAUSE] = {"idle-pause", "DURATION",
        "pause the session once nobody used it this long and no client is "
        "attached (any touch resumes it; vmux's config may set it for all)",
        SOPT_DURATION, 1, 365LL * 86400, "s", "idle_pause_s", NULL,
        IN(session_record, sopt[SOPT_IDLE_PAUSE]),
        IN(profile, sopt[SOPT_IDLE_PAUSE]), NOWHERE,
        SOPT_NEW | SOPT_PROFILE | SOPT_LS | SOPT_MCP, NULL, NULL},
};

/* The row whose flag (or profile key) is name, or NULL. */
const struct session_option *
session_option_find(const char *name)
{
	for (int i = 0; i < SOPT_N; i++) {
		if (strcmp(session_options[i].flag, name) == 0)
			return &session_options[i];
	}
	return NULL;
}

/* Parse a whole decimal number in [min, max]; 0 or -1 with cause. */
int
option_number(const char *what, const char *s, long long min, long long max,
    long long *out, char **cause)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno != 0 || v < min || v > max ||
	    strspn(s, "+-0123456789") != strlen(s)) {
		xasprintf(cause,
		    "invalid %s '%s': want a whole number from "
		    "%lld to %lld",
		    what, s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

/*
 * A number with an optional one-letter unit from letters (each with its
 * multiple; the first is the default), in either case if fold; -1 if s is
 * not one.
 */
static long long
with_unit(const char *s, const char *letters, const long long *mult, int fold)
{
	size_t len = strlen(s), digits = strspn(s, "0123456789");
	const char *u;
	long long v, m = 1;

	if (len > 0 && digits == len - 1) {
		int c = (unsigned char)s[len - 1];
		if ((u = strchr(letters, fold ? tolower(c) : c)) == NULL)
			return -1;
		m = mult[u - letters];
	} else if (digits != len || len == 0)
		return -1;
	if (digits == 0 || digits > 12)
		return -1;
	v = strtoll(s, NULL, 10);
	return v > (long long)4e18 / m ? -1 : v * m;
}

/*
 * A size in MiB: a whole number with an optional unit M (the default), G or
 * T (binary: 1G = 1024 MiB), in [min_mb, max_mb]. 0 or -1 with cause.
 */
int
option_size_mb(const char *what, const char *s, long long min_mb,
    long long max_mb, long long *out, char **cause)
{
	static const long long mult[] = {1, 1024, 1024 * 1024};
	long long v = with_unit(s, "mgt", mult, 1); /* 512M, 512m alike */

	if (v < 0 || v < min_mb || v > max_mb) {
		if (min_mb > 0)
			xasprintf(cause,
			    "invalid %s '%s': want a size such as 512M or 4G, "
			    "from %lldM to %lldG",
			    what, s, min_mb, max_mb / 1024);
		else
			xasprintf(cause,
			    "invalid %s '%s': want a size such as 512M or 4G, "
			    "up to %lldG",
			    what, s, max_mb / 1024);
		return -1;
	}
	*out = v;
	return 0;
}

/* A size in bytes as people write it: 4K, 1G, 512 (bytes). */
static void
size_human(long long v, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (u < 3 && v >= 1024 && v % 1024 == 0)
		v /= 1024, u++;
	if (u < 0)
		snprintf(buf, len, "%lld", v);
	else
		snprintf(buf, len, "%lld%c", v, units[u]);
}

/*
 * A size in bytes: a whole number with an optional unit K, M, G or T
 * (binary; "KiB", "KB" and "B" taken too; bytes by default), in [min,
 * max]. The one size parser of vmux's settings and the TUI's config
 * (option_size_mb is sessions' sizes, in MiB by default). 0 or -1 with
 * cause.
 */
int
option_size_bytes(const char *what, const char *s, long long min, long long max,
    long long *out, char **cause)
{
	static const long long mult[] = {
	    1, 1LL << 10, 1LL << 20, 1LL << 30, 1LL << 40};
	char buf[32], lo[32], hi[32];
	size_t n = strlen(s);
	long long v = -1;

	if (n < sizeof buf) {
		memcpy(buf, s, n + 1);
		if (n > 2 && strcmp(buf + n - 2, "iB") == 0 &&
		    strchr("kKmMgGtT", buf[n - 3]) != NULL)
			buf[n -= 2] = '\0';
		else if (n > 1 && buf[n - 1] == 'B' &&
		    strchr("kKmMgGtT", buf[n - 2]) != NULL)
			buf[--n] = '\0';
		v = with_unit(buf, "bkmgt", mult, 1);
	}
	if (v < 0 || v < min || v > max) {
		size_human(min, lo, sizeof lo);
		size_human(max, hi, sizeof hi);
		xasprintf(cause, "invalid %s '%s' (%s to %s)", what, s, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

/*
 * A duration in seconds: a whole number with an optional unit s (the
 * default), m, h or d, from 1 s to 365 days. 0 or -1 with cause.
 */
int
option_duration(const char *what, const char *s, long long *out, char **cause)
{
	static const long long mult[] = {1, 60, 3600, 86400};
	long long v = with_unit(s, "smhd", mult, 0); /* 30M is no duration */

	if (v < 1 || v > 365LL * 86400) {
		xasprintf(cause,
		    "invalid %s '%s': want a duration such as 90, 30m, 8h or "
		    "2d (1 s to 365 days)",
		    what, s);
		return -1;
	}
	*out = v;
	return 0;
}

/* Parse "on"/"off" (and yes/no, true/false, 1/0). */
static int
option_bool(const char *s, long long *out)
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

/*
 * Is s a host name (RFC 1123: letters, digits and '-' in dot-separated
 * labels of 1 to 63, no label starting or ending with '-'), at most max
 * bytes?
 */
static int
option_hostname_ok(const char *s, size_t max)
{
	size_t label = 0, n = strlen(s);

	if (n == 0 || n > max || s[0] == '.' || s[n - 1] == '.')
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '.') {
			if (label == 0 || s[i - 1] == '-')
				return 0;
			label = 0;
			continue;
		}
		if (!isalnum((unsigned char)s[i]) && s[i] != '-')
			return 0;
		if (s[i] == '-' && label == 0)
			return 0;
		if (++label > 63)
			return 0;
	}
	return s[n - 1] != '-';
}

/*
 * Parse text as row o's value: *num for numbers, sizes, durations, booleans
 * and choices (the choice's index). A string row (the host name) is only
 * checked: its value is text itself. what names it in the cause ("--cpus",
 * "memory"). 0, or -1 with cause.
 */
int
option_parse(const struct session_option *o, const char *what, const char *text,
    long long *num, char **cause)
{
	*num = 0;
	switch (o->type) {
	case SOPT_NUMBER:
		return option_number(what, text, o->min, o->max, num, cause);
	case SOPT_SIZE:
		return option_size_mb(what, text, o->min, o->max, num, cause);
	case SOPT_DURATION:
		return option_duration(what, text, num, cause);
	case SOPT_BOOL:
		if (option_bool(text, num) == 0)
			return 0;
		xasprintf(cause, "invalid %s '%s': want on or off", what, text);
		return -1;
	case SOPT_CHOICE:
		for (int i = 0; o->choices[i] != NULL; i++) {
			if (strcmp(o->choices[i], text) == 0) {
				*num = i;
				return 0;
			}
		}
		xasprintf(
		    cause, "invalid %s '%s': want %s", what, text, o->arg);
		return -1;
	case SOPT_HOSTNAME_TEXT:
		if (option_hostname_ok(text, (size_t)o->max))
			return 0;
		xasprintf(cause,
		    "invalid %s '%s': want a host name (letters, digits, '-' "
		    "and '.', at most %lld)",
		    what, text, o->max);
		return -1;
	}
	NEVER("option_parse: a type the table does not use");
}

/* Read a number kept at off (size bytes: an int or an int64_t) in base. */
long long
option_get(const void *base, size_t off, size_t size)
{
	const char *p = (const char *)base + off;

	if (size == sizeof(int)) {
		int v;
		memcpy(&v, p, sizeof v);
		return v;
	}
	if (size == sizeof(int64_t)) {
		int64_t v;
		memcpy(&v, p, sizeof v);
		return v;
	}
	NEVER("option_get: a member of another size");
}

/* Store a number at off (an int or an int64_t) in base. */
void
option_set(void *base, size_t off, size_t size, long long v)
{
	char *p = (char *)base + off;

	if (size == sizeof(int)) {
		int i = (int)v;
		memcpy(p, &i, sizeof i);
	} else if (size == sizeof(int64_t)) {
		int64_t i = v;
		memcpy(p, &i, sizeof i);
	} else
		NEVER("option_set: a member of another size");
}

/* The string kept at off in base (a char *), or NULL. */
char **
option_str(void *base, size_t off)
{
	return (char **)(void *)((char *)base + off);
}

/* Row o's value in record r as JSON (a number, true/false, a string). */
cJSON *
option_to_json(const struct session_option *o, const struct session_record *r)
{
	if (o->type == SOPT_HOSTNAME_TEXT) {
		const char *s = *option_str((void *)r, o->rec_off);
		return s != NULL ? cJSON_CreateString(s) : cJSON_CreateNull();
	}
	return option_value_json(o, option_get(r, o->rec_off, o->rec_size));
}

/*
 * A number row's value v as JSON, the one way records, ls --json and
 * profiles show it: a number, true/false or on/off, a choice's name.
 */
cJSON *
option_value_json(const struct session_option *o, long long v)
{
	if (o->type == SOPT_BOOL && (o->flags & SOPT_ONOFF))
		return cJSON_CreateString(v ? "on" : "off");
	if (o->type == SOPT_BOOL)
		return cJSON_CreateBool(v != 0);
	if (o->type == SOPT_CHOICE)
		return cJSON_CreateString(o->choices[v]);
	return cJSON_CreateNumber((double)v);
}

/*
 * Set row o's value in record r from JSON j (under o->key, or the row's
 * older name; missing is 0 or NULL). 0, or -1 with cause.
 */
int
option_from_json(const struct session_option *o, const cJSON *j,
    struct session_record *r, char **cause)
{
	double d;

	if (j == NULL || cJSON_IsNull(j))
		return 0;
	if (o->type == SOPT_HOSTNAME_TEXT) {
		char **s = option_str(r, o->rec_off);
		if (!cJSON_IsString(j) ||
		    !option_hostname_ok(j->valuestring, (size_t)o->max))
			goto bad;
		free(*s);
		*s = xstrdup(j->valuestring);
		return 0;
	}
	if (o->type == SOPT_BOOL) {
		long long b;
		if (cJSON_IsBool(j)) /* older records: true/false */
			b = cJSON_IsTrue(j);
		else if (!cJSON_IsString(j) || option_bool(j->valuestring, &b))
			goto bad;
		option_set(r, o->rec_off, o->rec_size, b);
		return 0;
	}
	if (o->type == SOPT_CHOICE && cJSON_IsString(j)) {
		for (int i = 0; o->choices[i] != NULL; i++) {
			if (strcmp(o->choices[i], j->valuestring) == 0) {
				option_set(r, o->rec_off, o->rec_size, i);
				return 0;
			}
		}
		goto bad;
	}
	if (!cJSON_IsNumber(j)) /* a choice as its index: older records */
		goto bad;
	d = j->valuedouble;
	if (!(d >= 0 && d <= (double)o->max) || d != (double)(long long)d)
		goto bad; /* 0 is "none" for every number a record keeps */
	option_set(r, o->rec_off, o->rec_size, (long long)d);
	return 0;
bad:
	xasprintf(cause, "bad \"%s\"", o->key);
	return -1;
}
