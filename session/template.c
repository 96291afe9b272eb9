/*
 * template.c: a cold vmux new that boots nothing. The first session made
 * with a given set of boot-shaping settings boots as ever; once its agent
 * answers, its state (a freshly booted, idle guest) is copied into
 * $VMUX_HOME/templates/KEY (device state, RAM, workspace, an --image
 * root's layer), a stop of the guest of some tens of ms. Every later new
 * with the same key copies those files into its own folder (reflinks where
 * the file system has them) and resumes them (pause.c's resume_boot) with
 * its own name, CID, host name, machine-id and limits, instead of booting
 * a kernel.
 *
 * The key (launch.c's launch_template_key) holds all that shapes a boot:
 * the QEMU build, kernel, initramfs and image (by size and time), memory,
 * CPUs, accelerator, workspace size, TCG's cache, the NIC and the guest's
 * kernel words but its host name. Settings a template cannot carry (a
 * pool's VM, --append, --kernel, --gdb, --no-agent, --mount, --workspace,
 * kernel vsock, Debian's QEMU) have no key and boot as ever. A template
 * that fails is removed and the session boots. The newest TEMPLATE_KEEP
 * templates are kept.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "session.h"

#define TEMPLATE_KEEP   4
#define TEMPLATE_QMP_MS 5000
#define TEMPLATE_KEY    "key"

/* The files a template holds, as a session's folder names them. */
static const char *const template_files[] = {
    SESSION_STATE, SESSION_RAM_SAVED, SESSION_WORKSPACE, SESSION_ROOT_OVERLAY};

/* HOME/templates/HEX-of-key; the caller frees it. */
static char *
template_dir(const char *home, const char *key)
{
	char *d;

	xasprintf(&d, "%s/templates/%016llx", home,
	    (unsigned long long)hash_fnv1a(key));
	return d;
}

/* Does the template in dir hold key (not another key of the same hash)? */
static int
template_matches(const char *dir, const char *key)
{
	char *path, buf[8192];
	int fd;
	ssize_t n;

	xasprintf(&path, "%s/%s", dir, TEMPLATE_KEY);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return 0;
	n = read_full(fd, buf, sizeof buf - 1);
	close(fd);
	if (n < 0)
		return 0;
	buf[n] = '\0';
	return strcmp(buf, key) == 0;
}

/* Keep the TEMPLATE_KEEP newest templates under home; remove the others. */
static void
template_prune(const char *home)
{
	char *root, *path;
	struct dirent *de;
	struct {
		char name[256];
		time_t t;
	} v[64];
	size_t n = 0;
	struct stat st;
	DIR *d;

	xasprintf(&root, "%s/templates", home);
	if ((d = opendir(root)) == NULL) {
		free(root);
		return;
	}
	while ((de = readdir(d)) != NULL && n < nitems(v)) {
		if (de->d_name[0] == '.' || strchr(de->d_name, '.') != NULL)
			continue;
		xasprintf(&path, "%s/%s", root, de->d_name);
		if (stat(path, &st) == 0) {
			snprintf(v[n].name, sizeof v[n].name, "%s", de->d_name);
			v[n++].t = st.st_mtime;
		}
		free(path);
	}
	closedir(d);
	while (n > TEMPLATE_KEEP) {
		size_t old = 0;

		for (size_t i = 1; i < n; i++)
			if (v[i].t < v[old].t)
				old = i;
		xasprintf(&path, "%s/%s", root, v[old].name);
		rmtree(path);
		free(path);
		v[old] = v[--n];
	}
	free(root);
}

/* Copy a template's (or a session's) files from one folder to another. */
static int
template_copy(const char *from, const char *to, char **cause)
{
	for (size_t i = 0; i < nitems(template_files); i++) {
		char *a, *b;
		int rc;

		xasprintf(&a, "%s/%s", from, template_files[i]);
		xasprintf(&b, "%s/%s", to, template_files[i]);
		rc = access(a, F_OK) != 0 ? 0 : file_copy_cow(a, b, cause);
		free(a);
		free(b);
		if (rc != 0)
			return -1;
	}
	return 0;
}

/*
 * Make session r (claimed and locked, nothing booted) from the template
 * for key, if there is one: its files copied in and resumed with r's own
 * identity. 1 when r runs from it, 0 when there is no template, -1 with
 * cause when it failed (r is then as it was, its copies gone, and the
 * template removed).
 */
int
template_use(const struct launch_opts *o, struct session_record *r,
    const char *key, char **cause)
{
	struct launch_opts lo = *o;
	char *dir = template_dir(o->home, key), *st, *ram, *id;
	struct stat sb;
	int rc = -1;

	if (!template_matches(dir, key)) {
		free(dir);
		return 0;
	}
	utimensat(AT_FDCWD, dir, NULL, 0); /* the newest used: kept */
	st = state_path(r, SESSION_STATE);
	ram = state_path(r, SESSION_RAM_SAVED);
	free(r->workspace);
	xasprintf(&r->workspace, "%s/%s", r->dir, SESSION_WORKSPACE);
	r->workspace_owned = 1;
	if (template_copy(dir, r->dir, cause) != 0 || stat(ram, &sb) != 0 ||
	    (r->state_sum = state_sum_of(st, sb.st_size)) == NULL) {
		if (*cause == NULL)
			xasprintf(cause, "the template's files are incomplete");
		goto fail;
	}
	r->state_key = state_key(r);
	r->status = SESSION_PAUSED;
	if (record_save(r, cause) != 0)
		goto fail;
	lo.machine_id = id = record_instance_new(); /* its own identity */
	rc = resume_boot(&lo, r, cause);
	free(id);
	if (rc == 0) {
		rc = 1;
		goto out;
	}
fail:
	state_discard(r);
	unlink(r->workspace);
	free(r->workspace);
	r->workspace = NULL;
	r->status = SESSION_STARTING;
	free(r->stop_reason);
	r->stop_reason = NULL;
	rmtree(dir); /* it will be made again */
	rc = -1;
out:
	free(st);
	free(ram);
	free(dir);
	return rc;
}

/*
 * Keep running session r, just booted with key, as the template for key:
 * its guest stopped while its state is saved and its files copied, then
 * continued. Nothing is said when it cannot be (the next new boots, and
 * tries again); r runs on either way.
 */
void
template_capture(const struct launch_opts *o, const struct session_record *r,
    const char *key)
{
	char *dir = template_dir(o->home, key), *tmp, *path, *why = NULL;
	struct qmp q;
	sigset_t held;
	int fd = -1, ok = 0;

	if (template_matches(dir, key)) { /* made by another new meanwhile */
		free(dir);
		return;
	}
	xasprintf(&path, "%s/templates", o->home);
	if (private_dir_make(path, &why) != 0) {
		log_debug("template: %s", why);
		free(why);
		free(path);
		free(dir);
		return;
	}
	free(path);
	/* one new makes it (a class of 30 at once copies once); a making
	 * left by a new that died is taken over after a minute */
	xasprintf(&tmp, "%s.making", dir);
	{
		struct stat st;

		if (stat(tmp, &st) == 0 && time(NULL) - st.st_mtime > 60)
			rmtree(tmp);
	}
	if (mkdir(tmp, 0700) != 0) {
		free(tmp);
		free(dir);
		return;
	}
	if (qmp_open(&q, r->qmp, mono_ms() + TEMPLATE_QMP_MS, &why) != 0) {
		log_debug("template %s: %s", tmp, why);
		free(why);
		rmtree(tmp);
		free(tmp);
		free(dir);
		return;
	}
	signals_hold(&held);
	xasprintf(&path, "%s/%s", tmp, SESSION_STATE);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) <
	    0)
		xasprintf(&why, "%s: %s", path, strerror(errno));
	else if (state_save_begin(&q, fd, &why) == 0 &&
	    qmp_run(&q, "{\"execute\":\"stop\"}", mono_ms() + TEMPLATE_QMP_MS,
	        &why) == 0 &&
	    state_save(&q, &why) == 0) {
		/* the session's folder holds what the template needs */
		char *ram;

		xasprintf(&ram, "%s/%s", tmp, SESSION_RAM_SAVED);
		ok = file_copy_cow(r->ram_file, ram, &why) == 0;
		free(ram);
		if (ok && r->workspace != NULL) {
			xasprintf(&ram, "%s/%s", tmp, SESSION_WORKSPACE);
			ok = file_copy_cow(r->workspace, ram, &why) == 0;
			free(ram);
		}
		if (ok && r->root_image != NULL) {
			char *from = state_path(r, SESSION_ROOT_OVERLAY);

			xasprintf(&ram, "%s/%s", tmp, SESSION_ROOT_OVERLAY);
			ok = access(from, F_OK) != 0 ||
			    file_copy_cow(from, ram, &why) == 0;
			free(ram);
			free(from);
		}
	}
	if (fd >= 0)
		close(fd);
	free(path);
	/* run on, whatever happened (a stopped guest always continues) */
	{
		char *w = NULL;

		if (qmp_run(&q, "{\"execute\":\"cont\"}",
		        mono_ms() + TEMPLATE_QMP_MS, &w) != 0)
			log_debug("template: cont: %s", w);
		free(w);
	}
	qmp_close(&q);
	signals_release(&held);
	xasprintf(&path, "%s/%s", tmp, TEMPLATE_KEY);
	if (ok && (ok = file_replace(path, key, strlen(key), 0600) == 0) != 0 &&
	    rename(tmp, dir) != 0)
		ok = 0; /* another new made it meanwhile */
	free(path);
	if (!ok) {
		log_debug(
		    "template %s: %s", dir, why != NULL ? why : "not made");
		rmtree(tmp);
	}
	free(why);
	free(tmp);
	free(dir);
	template_prune(o->home);
}
