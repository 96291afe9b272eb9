/*
 * settings.c: vmux's own settings, $XDG_CONFIG_HOME/vmux/config.
 *
 * Lines of "key value" (# starts a comment):
 *   allowed-mount-root DIR   a host directory under which --mount may
 *                            share folders (repeatable; none: no mounts)
 *   profile NAME             the profile of sessions made without
 *                            --profile (default: default)
 *   console-log-max SIZE     how large a session's console log (and
 *                            QEMU's and the bridge's) grows before its
 *                            older part is rotated out
 *                            (logcap.c; K, M or G; default 4M)
 *   host NAME URL            another machine, ssh://[USER@]HOST[:PORT]
 *                            (host.c; repeatable, one line a name)
 *   default-host NAME        where commands go without -H (default:
 *                            this machine)
 *   pool SIZE [profile P] [image I]
 *                            keep SIZE VMs booted for vmux new to claim
 *                            (cli/pool.c; 0 to 64)
 *   idle-pause DURATION      pause a session nobody used this long (one
 *                            whose profile or --idle-pause says
 *                            otherwise keeps its own)
 * The TUI's settings live apart, in vmux.conf. A bad line is an error
 * naming the file and the line, and the command stops: a typo in a
 * security setting must not pass silently.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "session.h"

/* The settings file's path (caller frees), or NULL without any home. */
char *
settings_path(void)
{
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	char *path = NULL;

	if (xdg != NULL && *xdg == '/')
		xasprintf(&path, "%s/vmux/config", xdg);
	else if (home != NULL && *home == '/')
		xasprintf(&path, "%s/.config/vmux/config", home);
	return path;
}

/* Free what settings_load filled in. */
void
settings_free(struct settings *s)
{
	size_t i;

	for (i = 0; i < s->nroots; i++)
		free(s->roots[i]);
	free(s->roots);
	free(s->profile);
	for (i = 0; i < s->nhosts; i++) {
		free(s->hosts[i].name);
		free(s->hosts[i].url);
	}
	free(s->hosts);
	free(s->default_host);
	free(s->pool_profile);
	free(s->pool_image);
	memset(s, 0, sizeof *s);
}

/* A "host NAME URL" line's value into s; 0 or -1 with why. */
static int
settings_host(struct settings *s, char *val, char **why)
{
	char *url = val + strcspn(val, " \t");
	struct host h;
	size_t i;

	if (*url != '\0')
		*url++ = '\0';
	url += strspn(url, " \t");
	url[strcspn(url, " \t")] = '\0';
	if (host_name_valid(val, why) != 0)
		return -1;
	if (*url == '\0') {
		xasprintf(why, "host %s needs a URL (ssh://USER@HOST)", val);
		return -1;
	}
	if (host_parse_url(url, &h, why) != 0)
		return -1;
	host_free(&h);
	for (i = 0; i < s->nhosts; i++) {
		if (strcmp(s->hosts[i].name, val) == 0) {
			xasprintf(why, "host %s is named twice", val);
			return -1;
		}
	}
	s->hosts = xreallocarray(s->hosts, s->nhosts + 1, sizeof *s->hosts);
	s->hosts[s->nhosts].name = xstrdup(val);
	s->hosts[s->nhosts++].url = xstrdup(url);
	return 0;
}

/* A "pool SIZE [profile P] [image I]" line's value into s; 0 or -1. */
static int
settings_pool(struct settings *s, char *val, char **why)
{
	char *save, *w = strtok_r(val, " \t", &save), *end, *v;
	long n;

	errno = 0;
	n = strtol(w, &end, 10);
	if (errno != 0 || end == w || *end != '\0' || n < 0 || n > 64) {
		xasprintf(why, "pool %s: want a size from 0 to 64", w);
		return -1;
	}
	s->pool_size = (int)n;
	while ((w = strtok_r(NULL, " \t", &save)) != NULL) {
		char **into = strcmp(w, "profile") == 0 ? &s->pool_profile
		    : strcmp(w, "image") == 0           ? &s->pool_image
		                                        : NULL;
		if (into == NULL) {
			xasprintf(why,
			    "pool: unknown word '%s' (profile P, "
			    "image I)",
			    w);
			return -1;
		}
		if ((v = strtok_r(NULL, " \t", &save)) == NULL) {
			xasprintf(why, "pool: %s needs a value", w);
			return -1;
		}
		free(*into);
		*into = xstrdup(v);
	}
	return 0;
}

/*
 * Read the settings (a missing file is empty). 0 or -1 with cause.
 * hosts_only: only the host and default-host lines are read (and must be
 * right): routing a command to its host must not trip over a setting that
 * only the command itself would use, and report.
 */
static int
settings_read(struct settings *s, int hosts_only, char **cause)
{
	char *path = settings_path(), line[PATH_MAX + 64], *key, *val, *save;
	char *why = NULL, *real;
	int lineno = 0;
	FILE *f;

	memset(s, 0, sizeof *s);
	if (path == NULL || (f = fopen(path, "re")) == NULL) {
		if (path != NULL && errno != ENOENT) {
			xasprintf(cause, "%s: %s", path, strerror(errno));
			free(path);
			return -1;
		}
		free(path);
		return 0;
	}
	while (fgets(line, sizeof line, f) != NULL) {
		lineno++;
		line[strcspn(line, "#\n")] = '\0';
		if ((key = strtok_r(line, " \t", &save)) == NULL)
			continue;
		val = strtok_r(NULL, "\n", &save);
		while (val != NULL && (*val == ' ' || *val == '\t'))
			val++;
		if (hosts_only && strcmp(key, "host") != 0 &&
		    strcmp(key, "default-host") != 0)
			continue;
		if (val == NULL || *val == '\0') {
			xasprintf(&why, "%s needs a value", key);
			goto fail;
		}
		if (strcmp(key, "allowed-mount-root") == 0) {
			if (*val != '/') {
				xasprintf(
				    &why, "not an absolute path: %s", val);
				goto fail;
			}
			if ((real = realpath(val, NULL)) == NULL) {
				xasprintf(&why, "%s: %s", val, strerror(errno));
				goto fail;
			}
			s->roots = xreallocarray(
			    s->roots, s->nroots + 1, sizeof *s->roots);
			s->roots[s->nroots++] = real;
		} else if (strcmp(key, "profile") == 0) {
			free(s->profile);
			s->profile = xstrdup(val);
		} else if (strcmp(key, "console-log-max") == 0) {
			long long v;
			if (option_size_bytes("size", val, LOGCAP_MIN,
			        LOGCAP_MAX, &v, &why) != 0)
				goto fail;
			s->console_max = v;
		} else if (strcmp(key, "idle-pause") == 0) {
			long long v;
			if (option_duration("idle-pause", val, &v, &why) != 0)
				goto fail;
			s->idle_pause_s = v;
		} else if (strcmp(key, "image-max") == 0) {
			long long v;
			if (option_size_bytes("size", val, 1LL << 20, 1LL << 42,
			        &v, &why) != 0)
				goto fail;
			s->image_max = v;
		} else if (strcmp(key, "host") == 0) {
			if (settings_host(s, val, &why) != 0)
				goto fail;
		} else if (strcmp(key, "pool") == 0) {
			if (settings_pool(s, val, &why) != 0)
				goto fail;
		} else if (strcmp(key, "default-host") == 0) {
			if (strcmp(val, "local") != 0 &&
			    host_name_valid(val, &why) != 0)
				goto fail;
			free(s->default_host);
			s->default_host = xstrdup(val);
		} else {
			xasprintf(&why, "unknown setting '%s'", key);
			goto fail;
		}
	}
	fclose(f);
	free(path);
	return 0;
fail:
	fclose(f);
	xasprintf(cause, "%s:%d: %s", path, lineno, why);
	free(why);
	free(path);
	settings_free(s);
	return -1;
}

/* Read the settings (a missing file is empty). 0 or -1 with cause. */
int
settings_load(struct settings *s, char **cause)
{
	return settings_read(s, 0, cause);
}

/* Only the settings' hosts (host, default-host). 0 or -1 with cause. */
int
settings_load_hosts(struct settings *s, char **cause)
{
	return settings_read(s, 1, cause);
}
