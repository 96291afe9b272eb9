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
 * is said on stderr and commands run as root, as they would without one.
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
 * Look a name up in a passwd-style file: the third and fourth fields of
 * its line. 0, or -1 if absent.
 */
static int
image_lookup(const char *file, const char *name, long *id, long *gid)
{
	char line[1024];
	size_t len = strlen(name);
	FILE *f = fopen(file, "re");
	int rc = -1;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL) {
		char *p;

		if (strncmp(line, name, len) != 0 || line[len] != ':')
			continue;
		p = strchr(line + len + 1, ':'); /* past the password */
		if (p == NULL)
			break;
		*id = strtol(p + 1, &p, 10);
		*gid = *p == ':' ? strtol(p + 1, NULL, 10) : -1;
		rc = 0;
		break;
	}
	fclose(f);
	return rc;
}

/* Parse "user SPEC": name, uid, name:group or uid:gid. */
static void
image_user(const char *spec)
{
	char *u = xstrdup(spec), *g = strchr(u, ':'), *end;
	long uid = -1, gid = -1, x;
	int named;

	if (g != NULL)
		*g++ = '\0';
	uid = strtol(u, &end, 10);
	named = *u == '\0' || *end != '\0';
	if (named) {
		if (image_lookup("/etc/passwd", u, &uid, &gid) != 0) {
			fprintf(stderr,
			    "vmux-agent: image user '%s' is not in "
			    "/etc/passwd: running as root\n",
			    u);
			free(u);
			return;
		}
	} else if (image_lookup("/etc/passwd", u, &x, &gid) != 0) {
		gid = uid; /* a uid with no entry: its own group */
	}
	if (g != NULL) {
		gid = strtol(g, &end, 10);
		if (*g == '\0' || *end != '\0') {
			if (image_lookup("/etc/group", g, &gid, &x) != 0) {
				fprintf(stderr,
				    "vmux-agent: image group '%s' is "
				    "not in /etc/group: gid %ld\n",
				    g, uid);
				gid = uid;
			}
		}
	}
	if (uid < 0 || gid < 0 || uid > 0x7fffffff || gid > 0x7fffffff) {
		fprintf(stderr, "vmux-agent: image user '%s': bad ids\n", spec);
		free(u);
		return;
	}
	image_uid = (uid_t)uid;
	image_gid = (gid_t)gid;
	image_has_user = uid != 0 || gid != 0;
	if (named) {
		char *kv;

		xasprintf(&kv, "USER=%s", u);
		image_env_put(kv);
		free(kv);
		xasprintf(&kv, "LOGNAME=%s", u);
		image_env_put(kv);
		free(kv);
	}
	free(u);
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

/* In a child before exec: become the image's user (async-signal-safe).
 * -1 if that failed: the command must not run as someone else. */
int
image_user_become(void)
{
	if (!image_has_user)
		return 0;
	if (setgroups(1, &image_gid) != 0 || setgid(image_gid) != 0 ||
	    setuid(image_uid) != 0)
		return -1;
	return 0;
}
