/*
 * fs.c: the virtiofsd processes that serve a session's --mount folders.
 *
 * One virtiofsd per mount (QEMU's, /usr/lib/qemu/virtiofsd in Debian 12,
 * or $VMUX_VIRTIOFSD), on a vhost-user socket fsN.sock beside the others,
 * started before QEMU and ended after it (it exits by itself once QEMU is
 * gone). A read-only mount runs virtiofsd under unshare(1) in a private
 * mount namespace where the folder is bind-mounted read-only first, so the
 * guest cannot write to it even as root. QEMU's device tag is vmuxfsN;
 * vmux-init mounts it where vmux.mounts= says.
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

/* Start the virtiofsd of mount i and wait for its socket. */
static int
fs_start_one(struct session_record *r, size_t i, const char *bin, char **cause)
{
	struct session_mount *m = &r->mounts[i];
	char *sock = fs_sock_path(r, i), *log, *src, *path, *tail, *exit_path;
	struct session_exit x;
	char *argv[16];
	uint64_t deadline;
	struct stat st;
	int n = 0, rc = -1;

	xasprintf(&log, "%s/virtiofsd%zu.log", r->dir, i);
	xasprintf(&exit_path, "%s/virtiofsd%zu.exit", r->dir, i);
	unlink(exit_path);
	xasprintf(&path, "--socket-path=%s", sock);
	xasprintf(&src, "source=%s", m->host);
	unlink(sock);
	if (m->ro) {
		argv[n++] = "/usr/bin/unshare";
		argv[n++] = "--mount";
		argv[n++] = "--propagation";
		argv[n++] = "private";
		argv[n++] = "--";
		argv[n++] = "/bin/sh";
		argv[n++] = "-c";
		argv[n++] = "mount --bind \"$1\" \"$1\" && "
		            "mount -o remount,bind,ro \"$1\" && shift && "
		            "exec \"$@\"";
		argv[n++] = "vmux-ro";
		argv[n++] = m->host;
	}
	argv[n++] = (char *)bin;
	argv[n++] = path;
	argv[n++] = "-o";
	argv[n++] = src;
	argv[n++] = "-o";
	argv[n++] = "cache=auto";
	argv[n] = NULL;
	m->pid = proc_spawn(argv, -1, log, exit_path, cause);
	if (m->pid < 0) {
		m->pid = 0;
		goto out;
	}
	/*
	 * Whether it died is its reaper's record, not /proc: with :ro the
	 * pid execs twice (unshare, sh, virtiofsd), and a look at its
	 * command line in the middle of an exec can come back empty.
	 */
	deadline = mono_ms() + FS_READY_MS;
	while (stat(sock, &st) != 0 || !S_ISSOCK(st.st_mode)) {
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
	free(src);
	return rc;
}

/* Start every mount's virtiofsd; 0 or -1 with cause (some may run). */
int
fs_start(struct session_record *r, char **cause)
{
	char *bin;
	size_t i;
	int rc = 0;

	if (r->nmounts == 0)
		return 0;
	if ((bin = fs_find(cause)) == NULL)
		return -1;
	for (i = 0; i < r->nmounts && rc == 0; i++)
		rc = fs_start_one(r, i, bin, cause);
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
