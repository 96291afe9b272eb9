/*
 * image.c: an OCI image's settings for what the agent starts.
 *
 * vmux writes an image's config into its root as /.vmux-image (lines of
 * "env K=V", "workdir DIR", "user SPEC"; session/image-oci.c) and
 * vmux-init passes it as --image-config. Env joins the defaults of every
 * command and shell (a request's own variables still win), WorkingDir is
 * the default working directory, and User (a name, uid, or uid:gid, names
 * looked up in the image's /etc/passwd and /etc/group) is who runs them.
 * Read once at start-up, before any thread; a user that cannot be found
 * fails every command, as docker refuses to start such a container.
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"

static char **image_env;   /* NAME=value, NULL-terminated, or NULL */
static int image_has_user; /* run as image_uid:image_gid */
static int image_user_bad; /* User names no one: run nothing */
static uid_t image_uid;
static gid_t image_gid;

/* The image's variables (NULL for none): env_build puts them over the
 * defaults. */
char *const *
image_env_list(void)
{
	return image_env;
}

/* Add NAME=value to the image's variables, replacing NAME. */
static void
image_env_put(const char *kv)
{
	size_t n = 0, len = strcspn(kv, "=");

	for (; image_env != NULL && image_env[n] != NULL; n++) {
		if (strncmp(image_env[n], kv, len + 1) == 0) {
			free(image_env[n]);
			image_env[n] = xstrdup(kv);
			return;
		}
	}
	image_env = xreallocarray(image_env, n + 2, sizeof *image_env);
	image_env[n] = xstrdup(kv);
	image_env[n + 1] = NULL;
}

/*
 * Find an entry of a passwd-style file by its name (field 0) or, with
 * name NULL, by its id (field 2): its id and, in passwd, its group
 * (field 3). 0, or -1 if absent. Empty ids never match (not uid 0).
 */
static int
image_lookup(const char *file, const char *name, long want, long *id, long *gid)
{
	char line[1024], *f[5], *end;
	FILE *fp = fopen(file, "re");
	int rc = -1, n;

	if (fp == NULL)
		return -1;
	while (rc != 0 && fgets(line, sizeof line, fp) != NULL) {
		char *p = line;

		line[strcspn(line, "\n")] = '\0';
		for (n = 0; n < 5 && (f[n] = strsep(&p, ":")) != NULL; n++)
			;
		if (n < 3 || *f[2] == '\0')
			continue;
		*id = strtol(f[2], &end, 10);
		if (*end != '\0' || *id < 0)
			continue;
		if (name != NULL ? strcmp(f[0], name) != 0 : *id != want)
			continue;
		*gid = -1;
		if (n >= 4 && *f[3] != '\0') {
			*gid = strtol(f[3], &end, 10);
			if (*end != '\0')
				*gid = -1;
		}
		rc = 0;
	}
	fclose(fp);
	return rc;
}

/* A decimal id, or -1. */
static long
image_id(const char *s)
{
	char *end;
	long v;

	if (*s < '0' || *s > '9')
		return -1;
	v = strtol(s, &end, 10);
	return *end == '\0' && v <= 0x7fffffff ? v : -1;
}

/*
 * Resolve a user as runc does: name, uid, name:group or uid:gid, names
 * looked up in the image's /etc/passwd and /etc/group; a uid without an
 * entry gets group 0. 0, or -1 with cause for a name or group the image
 * does not have (docker refuses to start such a container).
 */
int
image_user_parse(const char *spec, uid_t *uidp, gid_t *gidp, char **cause)
{
	char *u = xstrdup(spec), *g = strchr(u, ':');
	long uid, gid = 0, x;
	int rc = -1;

	if (g != NULL)
		*g++ = '\0';
	if ((uid = image_id(u)) >= 0) {
		if (image_lookup("/etc/passwd", NULL, uid, &x, &gid) != 0 ||
		    gid < 0)
			gid = 0;
	} else if (image_lookup("/etc/passwd", u, 0, &uid, &gid) != 0 ||
	    gid < 0) {
		xasprintf(
		    cause, "user '%.64s' is not in the guest's /etc/passwd", u);
		goto out;
	}
	if (g != NULL && (gid = image_id(g)) < 0 &&
	    image_lookup("/etc/group", g, 0, &gid, &x) != 0) {
		xasprintf(
		    cause, "group '%.64s' is not in the guest's /etc/group", g);
		goto out;
	}
	*uidp = (uid_t)uid;
	*gidp = (gid_t)gid;
	rc = 0;
out:
	free(u);
	return rc;
}

/* "user SPEC" of /.vmux-image: who runs what nobody asked otherwise. */
static void
image_user(const char *spec)
{
	char *cause = NULL, *name;

	if (image_user_parse(spec, &image_uid, &image_gid, &cause) != 0) {
		fprintf(stderr,
		    "vmux-agent: the image's %s: nothing will "
		    "run but as another --user\n",
		    cause);
		free(cause);
		image_user_bad = 1;
		return;
	}
	image_has_user = image_uid != 0 || image_gid != 0;
	name = xstrndup(spec, strcspn(spec, ":"));
	if (image_id(name) < 0) { /* a name: the variables say it */
		char *kv;

		xasprintf(&kv, "USER=%s", name);
		image_env_put(kv);
		free(kv);
		xasprintf(&kv, "LOGNAME=%s", name);
		image_env_put(kv);
		free(kv);
	}
	free(name);
}

/* Read the image's settings from file (agent --image-config). */
void
image_config_load(const char *file)
{
	char line[8192];
	FILE *f = fopen(file, "re");

	if (f == NULL) {
		fprintf(stderr, "vmux-agent: %s: %s\n", file, strerror(errno));
		return;
	}
	while (fgets(line, sizeof line, f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "env ", 4) == 0 && strchr(line + 4, '=') &&
		    line[4] != '=')
			image_env_put(line + 4);
		else if (strncmp(line, "workdir /", 9) == 0)
			user_cwd_set(xstrdup(line + 8));
		else if (strncmp(line, "user ", 5) == 0)
			image_user(line + 5);
	}
	fclose(f);
	/* the user's working places must be theirs to write */
	if (image_has_user) {
		struct stat st;

		if (stat(user_home(), &st) == 0 && st.st_uid == 0 &&
		    chown(user_home(), image_uid, image_gid) != 0)
			fprintf(stderr, "vmux-agent: chown %s: %s\n",
			    user_home(), strerror(errno));
	}
}

/*
 * In a child before exec: become the user sp asks for, else the image's
 * (async-signal-safe). -1 if that failed: the command must not run as
 * someone else.
 */
int
image_user_become(const struct spawn *sp)
{
	uid_t uid = sp->has_user ? sp->uid : image_uid;
	gid_t gid = sp->has_user ? sp->gid : image_gid;

	if (!sp->has_user && image_user_bad)
		return -1;
	if (!sp->has_user && !image_has_user)
		return 0;
	/* a terminal of its own to reopen (su, less, passphrase prompts) */
	if (isatty(0) && fchown(0, uid, gid) != 0)
		return -1;
	if (setgroups(1, &gid) != 0 || setgid(gid) != 0 || setuid(uid) != 0)
		return -1;
	return 0;
}
