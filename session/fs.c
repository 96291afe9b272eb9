/*
 * fs.c: the virtiofsd processes that serve a session's --mount folders.
 *
 * One virtiofsd per mount (QEMU's, /usr/lib/qemu/virtiofsd in Debian 12,
 * or $VMUX_VIRTIOFSD), on a vhost-user socket fsN.sock beside the others,
 * started before QEMU and ended after it (it exits by itself once QEMU is
 * gone). Each runs inside vmux-fsd (session/fsd/): the folder opened
 * beneath its allowed root without following symlinks at every start, the
 * file server in a user namespace where guest root is the folder's owner,
 * and a read-only mount read-only on the host, so the guest cannot write
 * to it even as root. QEMU's device tag is vmuxfsN; vmux-init mounts it
 * where vmux.mounts= says.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "session.h"

#define FS_READY_MS 30000 /* said in the error below */

/* Where virtiofsd may be when PATH does not have it. */
static const char *const fs_dirs[] = {"/usr/lib/qemu", "/usr/libexec"};

/* Mount i's vhost-user socket path. Free it. */
char *
fs_sock_path(const struct session_record *r, size_t i)
{
	char *p;

	xasprintf(
	    &p, "%s/fs%zu.sock", r->sock_dir != NULL ? r->sock_dir : r->dir, i);
	return p;
}

/* The virtiofsd program, or NULL with cause. Free it. */
static char *
fs_find(char **cause)
{
	const char *env = getenv("VMUX_VIRTIOFSD");
	char *p = NULL;
	size_t i;

	if (env != NULL && *env != '\0')
		return find_program("virtiofsd", "VMUX_VIRTIOFSD", cause);
	if ((p = find_in_path("virtiofsd")) != NULL)
		return p;
	for (i = 0; i < sizeof fs_dirs / sizeof *fs_dirs; i++) {
		xasprintf(&p, "%s/virtiofsd", fs_dirs[i]);
		if (access(p, X_OK) == 0)
			return p;
		free(p);
	}
	xasprintf(cause,
	    "virtiofsd not found (install qemu-system-common, "
	    "or set VMUX_VIRTIOFSD): --mount needs it");
	return NULL;
}

/*
 * Check mount m where it is used, now: beneath an allowed root of the
 * current settings, no symlink on its path, an owner a guest may write as.
 * The root it is under, or NULL with cause naming the mount.
 */
static const char *
fs_check(const struct session_mount *m, const struct settings *st, char **cause)
{
	const char *root = beneath_root(m->host, st->roots, st->nroots);
	struct stat sb;
	char *why = NULL;
	uid_t uid;
	gid_t gid;
	int fd;

	if (root == NULL) {
		xasprintf(cause,
		    "--mount %s: no longer under an allowed-mount-root of %s",
		    m->host, "$XDG_CONFIG_HOME/vmux/config");
		return NULL;
	}
	if ((fd = beneath_open(root, m->host, &why)) < 0 ||
	    fstat(fd, &sb) != 0 ||
	    beneath_owner(m->host, &sb, m->ro, &uid, &gid, &why) != 0) {
		if (why == NULL)
			xasprintf(&why, "%s: %s", m->host, strerror(errno));
		xasprintf(cause, "--mount %s: %s", m->host, why);
		free(why);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	close(fd);
	return root;
}

/* Start the virtiofsd of mount i and wait for its socket. */
static int
fs_start_one(struct session_record *r, size_t i, const char *bin,
    const char *fsd, const struct settings *st, char **cause)
{
	struct session_mount *m = &r->mounts[i];
	char *sock = fs_sock_path(r, i), *log, *path, *tail, *exit_path;
	char *rootarg = NULL, *dirarg = NULL;
	const char *root;
	struct session_exit x;
	char *argv[16];
	uint64_t deadline;
	struct stat sb;
	int n = 0, rc = -1;

	xasprintf(&log, "%s/virtiofsd%zu.log", r->dir, i);
	xasprintf(&exit_path, "%s/virtiofsd%zu.exit", r->dir, i);
	unlink(exit_path);
	xasprintf(&path, "--socket-path=%s", sock);
	unlink(sock);
	if ((root = fs_check(m, st, cause)) == NULL)
		goto out;
	xasprintf(&rootarg, "--root=%s", root);
	xasprintf(&dirarg, "--dir=%s", m->host);
	argv[n++] = (char *)fsd;
	argv[n++] = path;
	argv[n++] = rootarg;
	argv[n++] = dirarg;
	if (m->ro)
		argv[n++] = "--ro";
	argv[n++] = "--";
	argv[n++] = (char *)bin;
	argv[n] = NULL;
	m->pid = proc_spawn(argv, -1, log, exit_path, cause);
	if (m->pid < 0) {
		m->pid = 0;
		goto out;
	}
	/*
	 * Whether it died is its reaper's record, not /proc. The socket
	 * appears once virtiofsd is serving (vmux-fsd renames it then).
	 */
	deadline = mono_ms() + FS_READY_MS;
	while (stat(sock, &sb) != 0 || !S_ISSOCK(sb.st_mode)) {
		int died = proc_exit_read(exit_path, &x) == 0;

		if (died || mono_ms() >= deadline) {
			tail = file_tail(log, 5);
			xasprintf(cause, "virtiofsd for --mount %s %s%s%s",
			    m->host,
			    !died               ? "did not start within 30 s"
			        : x.signal != 0 ? "was killed by a signal"
			                        : "exited",
			    tail != NULL ? ":\n" : "",
			    tail != NULL ? tail : "");
			free(tail);
			goto out;
		}
		poll(NULL, 0, 20);
	}
	rc = 0;
out:
	free(exit_path);
	free(sock);
	free(log);
	free(path);
	free(rootarg);
	free(dirarg);
	return rc;
}

/* Start every mount's virtiofsd; 0 or -1 with cause (some may run). */
int
fs_start(struct session_record *r, char **cause)
{
	struct settings st;
	char *bin, *fsd;
	size_t i;
	int rc = 0;

	if (r->nmounts == 0)
		return 0;
	if ((bin = fs_find(cause)) == NULL)
		return -1;
	if ((fsd = find_program("vmux-fsd", "VMUX_FSD", cause)) == NULL) {
		free(bin);
		return -1;
	}
	if (settings_load(&st, cause) != 0) {
		free(fsd);
		free(bin);
		return -1;
	}
	for (i = 0; i < r->nmounts && rc == 0; i++)
		rc = fs_start_one(r, i, bin, fsd, &st, cause);
	settings_free(&st);
	free(fsd);
	free(bin);
	return rc;
}

/* End the mounts' virtiofsd processes (after QEMU), within term_ms each. */
void
fs_stop(const struct session_record *r, int term_ms)
{
	size_t i;
	char *sock;

	for (i = 0; i < r->nmounts; i++) {
		char *exit_path;
		int was;

		sock = fs_sock_path(r, i);
		was = proc_matches(r->mounts[i].pid, sock);
		proc_wait_gone(r->mounts[i].pid, sock, mono_ms() + 1000);
		proc_terminate(r->mounts[i].pid, sock, term_ms);
		xasprintf(&exit_path, "%s/virtiofsd%zu.exit", r->dir, i);
		if (was) /* its reaper too, as session_stop does */
			proc_exit_wait(exit_path, mono_ms() + 2000);
		free(exit_path);
		free(sock);
	}
}

/* Kernel command line words: " vmux.mounts=vmuxfs0:/p:ro,..." or "". */
char *
fs_cmdline(const struct session_record *r)
{
	char *s = xstrdup(""), *t;
	size_t i;

	for (i = 0; i < r->nmounts; i++) {
		xasprintf(&t, "%s%svmuxfs%zu:%s:%s", s,
		    i == 0 ? " vmux.mounts=" : ",", i, r->mounts[i].guest,
		    r->mounts[i].ro ? "ro" : "rw");
		free(s);
		s = t;
	}
	return s;
}
