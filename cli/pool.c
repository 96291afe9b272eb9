/*
 * pool.c: a warm pool, VMs booted before anyone asks (the settings' `pool
 * SIZE [profile P] [image I]`), so that `vmux new` takes one that is ready.
 *
 * A pool VM is an ordinary session, booted as `vmux new --profile P
 * [--image I]` would boot it, but in HOME/pool/pool-XXXXXXXX under that
 * name: outside sessions/, so nothing lists it and nobody reaches it. Its
 * folder says where it is in its life: "ready" once its boot returned;
 * claiming renames that to "claimed", removing it to "removing". Who may
 * do either is settled first, in one atomic step that also says who: a
 * file holding "PID NAME" renamed to "taken" if there is none
 * (pool_mark), so a fill never sees a claim without its claimer. The claimer
 * checks that QEMU and the agent answer, gives the guest its new host name,
 * rewrites the record (name, labels) and makes sessions/NAME a symlink to the
 * folder; from then on it is NAME like any session (rm removes both). Nothing
 * ran in it but that `hostname`: no shell, no file, no history of anyone's.
 *
 * A refill (`vmux pool fill`, started detached after a claim) boots what is
 * missing, one at a time, under a lock; it removes the VMs that died, that
 * a killed fill left half booted, or that the settings no longer describe.
 */
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/common.h"
#include "proto/proto.h"
#include "session/session.h"
#include "cli.h"

#define POOL_CONNECT_MS 2000 /* a ready VM's agent answers at once */
#define POOL_REPLY_MS   10000

/* new's options a claim can honour, besides the session options flagged
 * SOPT_POOL (the table's); any other asks for a boot */
static const char *const pool_claim_opts[] = {
    "label", "profile", "image", "json", NULL};

/* Can a claim honour new's option name? */
static int
pool_can_take(const char *name)
{
	const struct session_option *so = session_option_find(name);

	for (int k = 0; pool_claim_opts[k] != NULL; k++) {
		if (strcmp(name, pool_claim_opts[k]) == 0)
			return 1;
	}
	return so != NULL && (so->flags & SOPT_POOL);
}

/* Free what pool_list filled in. */
void
pool_list_free(struct pool_vm *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].id);
		free(v[i].dir);
		free(v[i].spec);
		record_free(&v[i].rec);
	}
	free(v);
}

/* The file dir/name as a string (first line), or NULL. */
static char *
pool_read(const char *dir, const char *name)
{
	char *path, buf[512], *out = NULL;
	FILE *f;

	xasprintf(&path, "%s/%s", dir, name);
	if ((f = fopen(path, "re")) != NULL) {
		if (fgets(buf, sizeof buf, f) != NULL) {
			buf[strcspn(buf, "\n")] = '\0';
			out = xstrdup(buf);
		}
		fclose(f);
	}
	free(path);
	return out;
}

/* Does dir/name exist? */
static int
pool_has(const char *dir, const char *name)
{
	char *path;
	int yes;

	xasprintf(&path, "%s/%s", dir, name);
	yes = access(path, F_OK) == 0;
	free(path);
	return yes;
}

/* Every VM in HOME/pool, claimed ones included. 0 or -1 with cause. */
int
pool_list(const char *home, struct pool_vm **out, size_t *n, char **cause)
{
	struct dirent *de;
	char *pool;
	DIR *d;

	*out = NULL;
	*n = 0;
	xasprintf(&pool, "%s/pool", home);
	if ((d = opendir(pool)) == NULL) {
		int error = errno;
		free(pool);
		if (error == ENOENT)
			return 0;
		xasprintf(
		    cause, "cannot list %s/pool: %s", home, strerror(error));
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		struct pool_vm *vm;
		char *path, *why = NULL;
		if (strncmp(de->d_name, "pool-", 5) != 0)
			continue;
		*out = xreallocarray(*out, *n + 1, sizeof **out);
		vm = &(*out)[(*n)++];
		memset(vm, 0, sizeof *vm);
		vm->id = xstrdup(de->d_name);
		xasprintf(&vm->dir, "%s/%s", pool, de->d_name);
		path = record_path(vm->dir);
		vm->ok = record_read(path, &vm->rec, &why) == 0;
		free(why);
		free(path);
		/* ready first: a claim renames it to claimed, so looking
		 * the other way round could see neither */
		vm->state = pool_has(vm->dir, "ready") ? POOL_READY
		    : pool_has(vm->dir, "claimed")     ? POOL_CLAIMED
		    : pool_has(vm->dir, "removing")    ? POOL_REMOVING
		                                       : POOL_BOOTING;
		vm->spec = pool_read(vm->dir, "spec");
	}
	closedir(d);
	free(pool);
	return 0;
}

/* The profile a request means: given, else the settings', else default. */
static const char *
pool_profile_of(const char *given, const struct settings *st)
{
	if (given != NULL)
		return given;
	return st->profile != NULL ? st->profile : "default";
}

/*
 * The pool's spec as its VMs keep it: "PROFILE IMAGE HASH", the hash of
 * the profile's contents, vmux's version, the image file's identity and
 * boot, the identity of the QEMU, bridge, kernel and initrd a boot here
 * uses (session_boot_identity) (home: where image names are looked up;
 * NULL leaves both identities out, for comparing two requests of one
 * process), so
 * that a VM booted under a profile since changed, from an image, kernel
 * or initrd since replaced (a rebuild), or by another vmux, is never
 * handed out.
 */
static char *
pool_spec(const char *home, const char *boot, const struct settings *st,
    const char *profile, const char *image)
{
	const char *name = pool_profile_of(profile, st);
	struct profile p;
	char *s, *text = NULL, *why = NULL, *id;
	cJSON *j;

	if (profile_get(name, &p, &why) == 0) {
		j = profile_json(&p);
		text = cJSON_PrintUnformatted(j);
		cJSON_Delete(j);
	} else
		free(why);
	id = home != NULL ? image_identity(home, image) : xstrdup("-");
	xasprintf(&s, "%s %s %016llx", name, image != NULL ? image : "-",
	    (unsigned long long)hash_fnv1a(text != NULL ? text : "?") ^
	        hash_fnv1a(VMUX_VERSION) ^ (hash_fnv1a(id) * 31) ^
	        (hash_fnv1a(home != NULL ? boot : "-") * 131));
	free(text);
	free(id);
	return s;
}

/*
 * Can `vmux new` parsed into a be given a pool VM? Only when it asks for
 * nothing a booted VM cannot take now (labels can be; memory, mounts, a
 * network or a ttl cannot) and the same profile and image as the pool.
 * Nor when $VMUX_QEMU_EXTRA names QEMU arguments or $VMUX_QEMU,
 * $VMUX_BRIDGE or $VMUX_GUEST_DIR other files (session_env_custom): such
 * a request boots cold, with what it asks for, and leaves the pool alone
 * (pool VMs are plain: a fill ignores them).
 */
int
pool_eligible(const struct args *a, const struct settings *st)
{
	const struct cmd_opt *o;
	char *want, *have;
	int same;

	if (st->pool_size <= 0 || session_env_custom())
		return 0;
	for (o = a->entry->opts; o->name != NULL; o++) {
		if (!pool_can_take(o->name) && args_has(a, o->name))
			return 0;
	}
	want = pool_spec(
	    NULL, NULL, st, args_get(a, "profile"), args_get(a, "image"));
	have = pool_spec(NULL, NULL, st, st->pool_profile, st->pool_image);
	same = strcmp(want, have) == 0;
	free(want);
	free(have);
	return same;
}

/* Give the guest its new host name (as root, through the agent). */
static int
pool_hostname(const struct session_record *r, const char *name, char **cause)
{
	const char *argv[] = {"/bin/sh", "-c",
	    "hostname \"$0\" && { echo \"$0\" >/etc/hostname; } 2>/dev/null; "
	    "hostname \"$0\"",
	    name, NULL};
	struct vsock_target t;
	cJSON *req = agent_req_exec(argv, 10), *reply;
	const cJSON *code;
	uint64_t now = mono_ms();
	int rc = -1;

	session_target(r, &t);
	reply = agent_call(&t, req, now + POOL_CONNECT_MS, now + POOL_REPLY_MS,
	    NULL, NULL, cause);
	cJSON_Delete(req);
	if (reply == NULL)
		return -1;
	code = cJSON_GetObjectItemCaseSensitive(reply, "exit_code");
	if (cJSON_IsNumber(code) && code->valuedouble == 0)
		rc = 0;
	else
		xasprintf(cause, "could not set its host name");
	cJSON_Delete(reply);
	return rc;
}

/*
 * Mark vm taken by this process for name ("-": to remove it), in one
 * step: "PID NAME" written beside, then renamed to "taken" unless one is
 * there. 1 won, 0 someone else has it (or the mark could not be written).
 */
static int
pool_mark(const char *dir, const char *name)
{
	char *tmp, *taken;
	int won = 0;
	FILE *f;

	xasprintf(&tmp, "%s/taken.%ld", dir, (long)getpid());
	xasprintf(&taken, "%s/taken", dir);
	if ((f = fopen(tmp, "we")) != NULL) {
		fprintf(f, "%ld %s\n", (long)getpid(), name);
		/* link fails if "taken" is there, atomically, on every file
		 * system (renameat2's NOREPLACE is refused by some) */
		if (fclose(f) == 0)
			won = link(tmp, taken) == 0;
	}
	unlink(tmp);
	free(tmp);
	free(taken);
	return won;
}

/*
 * Clear a ready VM's mark left by a claimer or fill that died between
 * marking and renaming (else no claim or fill could ever take it). Only
 * under the pool lock (a fill), so two never clear one at once; a live
 * marker's is left.
 */
static void
pool_mark_clear_stale(const struct pool_vm *vm)
{
	char *line = pool_read(vm->dir, "taken"), *taken;
	long pid = 0;

	if (line == NULL)
		return;
	sscanf(line, "%ld", &pid);
	free(line);
	if (pid > 0 && (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
		return; /* at it still */
	xasprintf(&taken, "%s/taken", vm->dir);
	unlink(taken);
	free(taken);
}

/* Give a mark up (a claim that gave the VM back). */
static void
pool_unmark(const char *dir)
{
	char *taken;

	xasprintf(&taken, "%s/taken", dir);
	unlink(taken);
	free(taken);
}

/*
 * Is a claimed VM an orphan: its claimer gone without naming it (killed
 * between the rename and the symlink)? Its session's link must point to
 * it, or the claim must be young and its claimer alive.
 */
static int
pool_orphan(const char *home, const struct pool_vm *vm)
{
	char *line = pool_read(vm->dir, "taken"), *link, *want, buf[256];
	char name[128] = "";
	long pid = 0;
	ssize_t n;
	int orphan = 1;

	if (line == NULL) /* claimed before "taken" marks */
		line = pool_read(vm->dir, "claimed");
	if (line != NULL)
		sscanf(line, "%ld %127s", &pid, name);
	free(line);
	if (*name != '\0' && session_name_valid(name, NULL) == 0) {
		link = session_dir(home, name);
		xasprintf(&want, "../pool/%s", vm->id);
		n = readlink(link, buf, sizeof buf - 1);
		if (n > 0) {
			buf[n] = '\0';
			orphan = strcmp(buf, want) != 0;
		}
		free(want);
		free(link);
	}
	if (orphan && pid > 0 && kill((pid_t)pid, 0) == 0)
		orphan = 0; /* still at it */
	return orphan;
}

/*
 * Take a ready VM out of the pool before removing it (rename ready to
 * removing: the step a claim races for). 1 won, 0 a claim got it.
 */
static int
pool_take(const struct pool_vm *vm)
{
	char *from, *to;
	int won;

	if (!pool_mark(vm->dir, "-"))
		return 0;
	xasprintf(&from, "%s/ready", vm->dir);
	xasprintf(&to, "%s/removing", vm->dir);
	won = rename(from, to) == 0;
	free(from);
	free(to);
	return won;
}

/* Stop and remove one pool VM (quietly: a pool VM is nobody's yet). */
static void
pool_remove(const char *home, const struct pool_vm *vm)
{
	char *cause = NULL;

	if (session_remove_at(home, vm->dir, vm->id, 1, 0, NULL, &cause) != 0) {
		log_debug("pool: removing %s: %s", vm->id, cause);
		free(cause);
	}
}

/*
 * Give session name (its labels from a) a ready pool VM. Returns 0 with
 * its record in *out, 1 when none is ready, or -1 with cause (the name is
 * taken). VMs found dead or deaf on the way are removed.
 */
int
pool_claim(const char *home, const struct settings *st, const struct args *a,
    const char *name, struct session_record *out, char **cause)
{
	struct pool_vm *v;
	struct stat sb;
	char *want, *boot, *link = NULL, *target = NULL, *path;
	size_t n, i;
	int rc = 1, nlabels;
	char **labels = args_values(a, "label", &nlabels);
	const char *host = args_get(a, "hostname"); /* checked by new_parse */

	memset(out, 0, sizeof *out);
	if (pool_list(home, &v, &n, cause) != 0)
		return -1;
	boot = session_boot_identity(NULL);
	want = pool_spec(home, boot, st, st->pool_profile, st->pool_image);
	free(boot);
	link = session_dir(home, name);
	for (i = 0; i < n && rc == 1; i++) {
		struct pool_vm *vm = &v[i];
		char *from, *to, *why = NULL;
		if (vm->state != POOL_READY || !vm->ok || vm->spec == NULL ||
		    strcmp(vm->spec, want) != 0)
			continue;
		if (lstat(link, &sb) == 0) {
			xasprintf(cause, "session '%s' already exists", name);
			rc = -1;
			break;
		}
		if (transport_cancelled()) { /* ^C: leave the pool be */
			xasprintf(cause, "interrupted");
			rc = -1;
			break;
		}
		/* ours, and who we are, in one step: a fill that looks
		 * now sees this process's claim (another vmux new lost) */
		if (!pool_mark(vm->dir, name))
			continue;
		xasprintf(&from, "%s/ready", vm->dir);
		xasprintf(&to, "%s/claimed", vm->dir);
		if (rename(from, to) !=
		    0) { /* can't happen: the mark is ours */
			pool_unmark(vm->dir);
			free(from);
			free(to);
			continue;
		}
		if (!session_qemu_alive(&vm->rec) ||
		    pool_hostname(&vm->rec, host != NULL ? host : name, &why) !=
		        0) {
			if (transport_cancelled()) { /* not the VM's fault */
				rename(to, from);
				pool_unmark(vm->dir);
				free(why);
				free(from);
				free(to);
				xasprintf(cause, "interrupted");
				rc = -1;
				break;
			}
			log_debug("pool: %s: %s", vm->id,
			    why != NULL ? why : "QEMU is gone");
			free(why);
			free(from);
			free(to);
			pool_remove(home, vm);
			continue;
		}
		free(from);
		free(to);
		free(vm->rec.name);
		vm->rec.name = xstrdup(name);
		vm->rec.created = (int64_t)time(NULL); /* its life starts now */
		free(vm->rec.hostname);
		vm->rec.hostname = host != NULL ? xstrdup(host) : NULL;
		free(vm->rec.instance); /* and it is a session of its own */
		vm->rec.instance = record_instance_new();
		vm->rec.instance_late = 0;
		for (size_t k = 0; k < vm->rec.nlabels; k++)
			free(vm->rec.labels[k]);
		free(vm->rec.labels);
		vm->rec.labels = xcalloc((size_t)nlabels + 1, sizeof(char *));
		for (int k = 0; k < nlabels; k++)
			vm->rec.labels[k] = xstrdup(labels[k]);
		vm->rec.nlabels = (size_t)nlabels;
		path = record_path(vm->dir);
		if (record_write(path, &vm->rec, cause) != 0) {
			free(path);
			pool_remove(home, vm);
			rc = -1;
			break;
		}
		free(path);
		xasprintf(&target, "../pool/%s", vm->id);
		if (session_home_create(home, cause) != 0 ||
		    symlink(target, link) != 0) {
			if (*cause == NULL)
				xasprintf(cause,
				    errno == EEXIST
				        ? "session '%s' already exists"
				        : "cannot name it %s",
				    name);
			pool_remove(home, vm);
			rc = -1;
			break;
		}
		*out = vm->rec;
		memset(&vm->rec, 0, sizeof vm->rec);
		rc = 0;
	}
	free(target);
	free(link);
	free(want);
	pool_list_free(v, n);
	return rc;
}

/*
 * The pool's lock, held by a fill and by a drain, so that a drain never
 * races a boot: its fd, or -1 when wait is 0 and another holds it.
 */
static int
pool_lock(const char *home, int wait)
{
	char *dir, *path;
	int fd;

	xasprintf(&dir, "%s/pool", home);
	mkdir_p(dir, 0700);
	xasprintf(&path, "%s/fill.lock", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	free(path);
	free(dir);
	if (fd >= 0 && flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Write text as dir/name (0) or say why not (-1 with cause). */
static int
pool_write(const char *dir, const char *name, const char *text, char **cause)
{
	char *path;
	FILE *f;
	int rc = 0;

	xasprintf(&path, "%s/%s", dir, name);
	if ((f = fopen(path, "we")) == NULL) {
		xasprintf(cause, "cannot write %s: %s", path, strerror(errno));
		free(path);
		return -1;
	}
	if ((fprintf(f, "%s\n", text) < 0) + (fclose(f) != 0) > 0) {
		xasprintf(cause, "cannot write %s: %s", path, strerror(errno));
		rc = -1;
	}
	free(path);
	return rc;
}

/*
 * Boot one pool VM as `vmux new --profile P [--image I]` would, into
 * HOME/pool/pool-XXXXXXXX; ready once it answers. 0 or -1 with cause.
 */
static int
pool_boot(const char *home, const struct settings *st, const char *spec,
    void (*notice)(const char *), char **cause)
{
	char *argv[6], id[32], *dir, *msg;
	struct launch_opts o;
	struct session_record r;
	struct session_mount *mounts = NULL;
	struct profile p;
	struct args a;
	unsigned *allow = NULL;
	int argc = 0, rc = -1;

	argv[argc++] = "new";
	argv[argc++] = "--profile";
	argv[argc++] = (char *)pool_profile_of(st->pool_profile, st);
	if (st->pool_image != NULL) {
		argv[argc++] = "--image";
		argv[argc++] = st->pool_image;
	}
	argv[argc] = NULL;
	memset(&o, 0, sizeof o);
	if (args_parse(&cmd_new_entry, argc, argv, &a, cause) != 0)
		return -1;
	if (new_parse(&a, &o, &p, &allow, &mounts, cause) != 0) {
		args_free(&a);
		free(allow);
		return -1;
	}
	uint32_t rnd = 0;
	if (getrandom(&rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
		rnd = (uint32_t)mono_ms() ^ (uint32_t)getpid() << 16;
	snprintf(id, sizeof id, "pool-%08x", (unsigned)rnd);
	xasprintf(&dir, "%s/pool/%s", home, id);
	o.home = home;
	o.name = id;
	o.dir = dir;
	if (notice != NULL) {
		xasprintf(&msg, "booting %s (%s)", id, spec);
		notice(msg);
		free(msg);
	}
	if (session_launch(&o, &r, cause) == 0) {
		/* the spec before the mark: a ready VM always has one */
		if (pool_write(dir, "spec", spec, cause) == 0 &&
		    pool_write(dir, "ready", "", cause) == 0)
			rc = 0;
		record_free(&r);
	}
	free(dir);
	free(allow);
	new_mounts_free(mounts, o.nmounts);
	args_free(&a);
	return rc;
}

/*
 * Boot what the pool is missing (and remove what it should not hold).
 * Another fill already running makes this one return at once. notice says
 * each step (NULL: quiet). 0, or -1 with cause (a boot failed).
 */
int
pool_fill(const char *home, void (*notice)(const char *), char **cause)
{
	struct settings st;
	char *want = NULL, *msg, *boot;
	const char *missing = NULL;
	int lock_fd, rc = 0;

	if (settings_load(&st, cause) != 0)
		return -1;
	/* pool VMs are plain (the default QEMU, bridge and guest, no extra
	 * devices): a request asking for other is never given one
	 * (pool_eligible); a variable naming the only one there is stays */
	unsetenv("VMUX_QEMU_EXTRA");
	if (session_env_other("VMUX_QEMU"))
		unsetenv("VMUX_QEMU");
	if (session_env_other("VMUX_BRIDGE"))
		unsetenv("VMUX_BRIDGE");
	if (session_env_other("VMUX_GUEST_DIR"))
		unsetenv("VMUX_GUEST_DIR");
	/* wait for a fill under way: it may have looked before our claim */
	if ((lock_fd = pool_lock(home, 1)) < 0) {
		xasprintf(cause, "cannot lock the pool: %s", strerror(errno));
		settings_free(&st);
		return -1;
	}
	/* a boot here would fail: keep the VMs there are, whatever the spec */
	boot = session_boot_identity(&missing);
	if (missing != NULL && st.pool_size > 0) {
		xasprintf(cause, "cannot fill the pool: no %s found", missing);
		free(boot);
		settings_free(&st);
		close(lock_fd);
		return -1;
	}
	want = pool_spec(home, boot, &st, st.pool_profile, st.pool_image);
	free(boot);
	for (int boots = 0;; boots++) {
		struct pool_vm *v;
		size_t n, i;
		int ready = 0;
		if (pool_list(home, &v, &n, cause) != 0) {
			rc = -1;
			break;
		}
		for (i = 0; i < n; i++) {
			struct pool_vm *vm = &v[i];
			if (vm->state == POOL_CLAIMED && !pool_orphan(home, vm))
				continue;
			if (vm->state == POOL_READY)
				pool_mark_clear_stale(vm);
			/* half booted (we hold the lock), dead, stale or
			 * too many; a ready one only if no claim takes it */
			if (vm->state != POOL_READY || !vm->ok ||
			    !session_qemu_alive(&vm->rec) || vm->spec == NULL ||
			    strcmp(vm->spec, want) != 0 ||
			    ready >= st.pool_size) {
				if (vm->state == POOL_READY && !pool_take(vm))
					continue;
				if (notice != NULL) {
					xasprintf(&msg, "removing %s", vm->id);
					notice(msg);
					free(msg);
				}
				pool_remove(home, vm);
				continue;
			}
			ready++;
		}
		pool_list_free(v, n);
		if (ready >= st.pool_size)
			break;
		if (boots >= 2 * st.pool_size + 2) { /* they keep dying */
			xasprintf(cause, "%d boots and the pool is still short",
			    boots);
			rc = -1;
			break;
		}
		if (pool_boot(home, &st, want, notice, cause) != 0) {
			rc = -1;
			break;
		}
	}
	free(want);
	settings_free(&st);
	close(lock_fd);
	return rc;
}

/*
 * Stop and remove every pool VM nobody claimed, after any fill under way
 * ends (a fill started later fills the pool again). 0 or -1 with cause.
 */
int
pool_drain(const char *home, int *removed, char **cause)
{
	struct pool_vm *v;
	size_t n, i;
	int lock_fd = pool_lock(home, 1);

	*removed = 0;
	if (lock_fd < 0) {
		xasprintf(cause, "cannot lock the pool: %s", strerror(errno));
		return -1;
	}
	if (pool_list(home, &v, &n, cause) != 0) {
		close(lock_fd);
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (v[i].state == POOL_READY)
			pool_mark_clear_stale(&v[i]);
		if ((v[i].state == POOL_CLAIMED && !pool_orphan(home, &v[i])) ||
		    (v[i].state == POOL_READY && !pool_take(&v[i])))
			continue;
		pool_remove(home, &v[i]);
		(*removed)++;
	}
	pool_list_free(v, n);
	close(lock_fd);
	return 0;
}

/*
 * Start `vmux pool fill` detached (its output in HOME/pool/fill.log), so
 * the pool refills behind a claim without the claimer waiting.
 */
void
pool_refill_later(const char *home)
{
	char *self = exe_path(), *log, *cause = NULL, *dir;
	char *argv[] = {self, "pool", "fill", NULL};

	if (self == NULL)
		return;
	xasprintf(&dir, "%s/pool", home);
	mkdir_p(dir, 0700);
	xasprintf(&log, "%s/fill.log", dir);
	logcap_rotate(log, 1 << 20); /* fills after fills: the last MiB */
	if (proc_spawn(argv, -1, log, NULL, &cause) < 0) {
		log_debug("pool: refill: %s", cause);
		free(cause);
	}
	free(log);
	free(dir);
	free(self);
}
