/*
 * mounts.c: host folders shared into a guest (--mount HOST:GUEST[:ro]).
 *
 * A folder is shared only from under a root the settings allow
 * (allowed-mount-root): the host path must exist, be a directory, have no
 * ".." in it, and resolve (symlinks followed) to a place under a root, so a
 * symlink cannot lead out, and owned by a user a guest may write as (never
 * root, beneath.c). These are checked again at every start, where the
 * folder is used (fs.c, vmux-fsd). Each mount is served by its own
 * virtiofsd; a read-only mount is made read-only on the host, not merely
 * in the guest, where root could remount it. The quota (seed 002) counts the
 * bytes of the files in a session's writable mounts.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/common.h"
#include "session.h"

/* Guest paths vmux will not mount over. */
static const char *const guest_reserved[] = {"/", "/proc", "/sys", "/dev",
    "/run", "/tmp", "/vmux", "/workspace", "/etc", "/bin", "/sbin", "/lib",
    "/usr"};

/* Does path contain a ".." component? */
static int
has_dotdot(const char *path)
{
	const char *p = path;

	while ((p = strstr(p, "..")) != NULL) {
		if ((p == path || p[-1] == '/') &&
		    (p[2] == '\0' || p[2] == '/'))
			return 1;
		p += 2;
	}
	return 0;
}

/* Is real (resolved) equal to root or under it? */
static int
under_root(const char *real, const char *root)
{
	size_t n = strlen(root);

	if (strcmp(root, "/") == 0)
		return 1;
	return strncmp(real, root, n) == 0 &&
	    (real[n] == '\0' || real[n] == '/');
}

/*
 * Check one --mount HOST:GUEST[:ro] against the allowed roots and the
 * profile's mount mode (MOUNTS_*); fill m (host resolved; caller frees with
 * mount_free). 0 or -1 with cause.
 */
int
mount_check(const char *spec, char *const *roots, size_t nroots, int mode,
    const char *profile, struct session_mount *m, char **cause)
{
	char *copy = xstrdup(spec), *host, *guest, *opt, *real = NULL;
	struct stat st;
	size_t i;

	memset(m, 0, sizeof *m);
	host = copy;
	guest = strchr(host, ':');
	if (guest == NULL || guest == host) {
		xasprintf(
		    cause, "invalid --mount '%s': want HOST:GUEST[:ro]", spec);
		goto fail;
	}
	*guest++ = '\0';
	if ((opt = strchr(guest, ':')) != NULL) {
		*opt++ = '\0';
		if (strcmp(opt, "ro") == 0)
			m->ro = 1;
		else if (strcmp(opt, "rw") != 0) {
			xasprintf(cause,
			    "invalid --mount '%s': the option is ro or rw, not "
			    "'%s'",
			    spec, opt);
			goto fail;
		}
	}
	if (mode == MOUNTS_NONE) {
		xasprintf(cause,
		    "--mount: 'mounts' is locked by profile '%s' "
		    "(no host mounts)",
		    profile);
		goto fail;
	}
	if (mode == MOUNTS_RO && !m->ro) {
		xasprintf(cause,
		    "--mount %s: 'mounts' is locked by profile '%s' to "
		    "read-only (add :ro)",
		    spec, profile);
		goto fail;
	}
	if (*host != '/' || has_dotdot(host)) {
		xasprintf(cause,
		    "--mount %s: the host path must be absolute, without '..'",
		    spec);
		goto fail;
	}
	if (*guest != '/' || has_dotdot(guest) ||
	    strpbrk(guest, ",: \t\n") != NULL || strlen(guest) > 200) {
		xasprintf(cause,
		    "--mount %s: the guest path must be absolute, without "
		    "'..', spaces, ',' or ':'",
		    spec);
		goto fail;
	}
	for (i = 0; i < sizeof guest_reserved / sizeof *guest_reserved; i++) {
		size_t n = strlen(guest_reserved[i]);
		if (strcmp(guest, guest_reserved[i]) == 0 ||
		    (n > 1 && strncmp(guest, guest_reserved[i], n) == 0 &&
		        guest[n] == '/' &&
		        strcmp(guest_reserved[i], "/workspace") != 0)) {
			xasprintf(cause,
			    "--mount %s: vmux will not mount over %s", spec,
			    guest_reserved[i]);
			goto fail;
		}
	}
	if ((real = realpath(host, NULL)) == NULL) {
		xasprintf(
		    cause, "--mount %s: %s: %s", spec, host, strerror(errno));
		goto fail;
	}
	if (stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
		xasprintf(
		    cause, "--mount %s: %s is not a directory", spec, host);
		goto fail;
	}
	for (i = 0; i < nroots && !under_root(real, roots[i]); i++)
		;
	if (i == nroots) {
		if (nroots == 0)
			xasprintf(cause,
			    "--mount %s: no host folder may be shared: list "
			    "one with allowed-mount-root in %s",
			    spec, "$XDG_CONFIG_HOME/vmux/config");
		else if (strcmp(real, host) != 0)
			xasprintf(cause,
			    "--mount %s: %s resolves to %s, outside the "
			    "allowed mount roots",
			    spec, host, real);
		else
			xasprintf(cause,
			    "--mount %s: %s is outside the allowed mount roots",
			    spec, host);
		goto fail;
	}
	{
		char *why = NULL;
		uid_t uid;
		gid_t gid;

		if (beneath_owner(real, &st, m->ro, &uid, &gid, &why) != 0) {
			xasprintf(cause, "--mount %s: %s", spec, why);
			free(why);
			goto fail;
		}
	}
	m->host = real;
	m->guest = xstrdup(guest);
	free(copy);
	return 0;
fail:
	free(real);
	free(copy);
	return -1;
}

/* Free a mount's strings. */
void
mount_free(struct session_mount *m)
{
	free(m->host);
	free(m->guest);
	memset(m, 0, sizeof *m);
}

static long long usage_sum;

/* nftw callback: add a regular file's size. */
static int
usage_add(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)path;
	(void)f;
	if (type == FTW_F && S_ISREG(st->st_mode))
		usage_sum += st->st_size;
	return 0;
}

/* Bytes in the regular files under dir (symlinks not followed). */
long long
mount_usage_bytes(const char *dir)
{
	usage_sum = 0;
	if (nftw(dir, usage_add, 32, FTW_PHYS | FTW_MOUNT) != 0)
		log_debug("usage %s: %s", dir, strerror(errno));
	return usage_sum;
}
