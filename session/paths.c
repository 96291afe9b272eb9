/*
 * paths.c: where sessions live and where vmux finds its helpers.
 *
 * The vmux home is $VMUX_HOME, else $XDG_STATE_HOME/vmux, else
 * ~/.local/state/vmux; each session is a directory sessions/NAME under it.
 * Unix socket paths are limited to 108 bytes, so a session whose directory
 * is too deep puts its sockets in a short private runtime directory instead.
 * QEMU, the bridge and the guest image are looked up here too.
 */
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common/common.h"
#include "session.h"

/* Longest name we put in a socket directory: "vsock.sock_<u32 port>". */
#define SOCK_NAME_MAX (sizeof SESSION_VSOCK_SOCK + 11)

/* Check a session name: [A-Za-z0-9][A-Za-z0-9_.-]{0,63}. 0 or -1. */
int
session_name_valid(const char *name, char **cause)
{
	size_t len = strlen(name), i;
	const char *why = NULL;

	if (len == 0)
		why = "empty";
	else if (len > SESSION_NAME_MAX)
		why = "longer than 64 characters";
	else if (!((name[0] >= 'a' && name[0] <= 'z') ||
	             (name[0] >= 'A' && name[0] <= 'Z') ||
	             (name[0] >= '0' && name[0] <= '9')))
		why = "must start with a letter or digit";
	for (i = 0; why == NULL && i < len; i++) {
		char c = name[i];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-')
			continue;
		why = "only letters, digits, '_', '.' and '-' are allowed";
	}
	if (why == NULL)
		return 0;
	if (cause != NULL) {
		/* Quote at most 64 bytes of a bad name, printable only. */
		char shown[SESSION_NAME_MAX + 1];
		for (i = 0; i < len && i < SESSION_NAME_MAX; i++)
			shown[i] =
			    (name[i] >= 0x20 && name[i] < 0x7f) ? name[i] : '?';
		shown[i] = '\0';
		xasprintf(cause, "invalid session name '%s%s': %s", shown,
		    len > SESSION_NAME_MAX ? "..." : "", why);
	}
	return -1;
}

/* Make a possibly relative path absolute against the current directory. */
static char *
absolute(const char *path)
{
	char cwd[PATH_MAX], *out;

	if (path[0] == '/' || getcwd(cwd, sizeof cwd) == NULL)
		return xstrdup(path);
	xasprintf(&out, "%s/%s", cwd, path);
	return out;
}

/* Resolve the vmux home from the environment (does not create it). */
char *
session_home(char **cause)
{
	const char *env = getenv("VMUX_HOME");
	char *out;

	if (env != NULL && *env != '\0')
		return absolute(env);
	env = getenv("XDG_STATE_HOME");
	if (env != NULL && env[0] == '/') { /* XDG: relative ones are ignored */
		xasprintf(&out, "%s/vmux", env);
		return out;
	}
	env = getenv("HOME");
	if (env == NULL || *env == '\0') {
		struct passwd *pw = getpwuid(getuid());
		env = pw != NULL ? pw->pw_dir : NULL;
	}
	if (env == NULL || *env == '\0') {
		xasprintf(
		    cause, "cannot find a state directory: set VMUX_HOME");
		return NULL;
	}
	xasprintf(&out, "%s/.local/state/vmux", env);
	return out;
}

/* Create home and home/sessions (mode 0700 for what we create). */
int
session_home_create(const char *home, char **cause)
{
	char *sessions;
	int error;

	xasprintf(&sessions, "%s/sessions", home);
	error = mkdir_p(sessions, 0700);
	if (error != 0)
		xasprintf(
		    cause, "cannot create %s: %s", sessions, strerror(-error));
	free(sessions);
	return error == 0 ? 0 : -1;
}

/* The state directory of session name. */
char *
session_dir(const char *home, const char *name)
{
	char *out;

	xasprintf(&out, "%s/sessions/%s", home, name);
	return out;
}

/* 64-bit FNV-1a of a string (short stable names for runtime dirs). */
uint64_t
hash_fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* Does dir leave room for our longest socket name under 108 bytes? */
static int
sock_dir_fits(const char *dir)
{
	struct sockaddr_un sun;

	return strlen(dir) + 1 + SOCK_NAME_MAX <= sizeof sun.sun_path;
}

/*
 * Pick the directory for a session's sockets: dir itself when paths fit,
 * else $XDG_RUNTIME_DIR/vmux-HASH or /tmp/vmux-UID/HASH (created, 0700).
 */
char *
session_sock_dir(const char *dir, char **cause)
{
	const char *rt = getenv("XDG_RUNTIME_DIR");
	uint64_t h = hash_fnv1a(dir);
	char *out = NULL, *parent;

	if (sock_dir_fits(dir))
		return xstrdup(dir);
	if (rt != NULL && rt[0] == '/') {
		xasprintf(&out, "%s/vmux-%016llx", rt, (unsigned long long)h);
		if (sock_dir_fits(out) &&
		    (mkdir(out, 0700) == 0 || errno == EEXIST) &&
		    private_dir(out))
			return out;
		free(out);
	}
	xasprintf(&parent, "/tmp/vmux-%u", (unsigned)getuid());
	if (mkdir(parent, 0700) != 0 && errno != EEXIST) {
		xasprintf(
		    cause, "cannot create %s: %s", parent, strerror(errno));
		free(parent);
		return NULL;
	}
	if (!private_dir(parent)) {
		xasprintf(
		    cause, "%s is not a private directory of ours", parent);
		free(parent);
		return NULL;
	}
	xasprintf(&out, "%s/%016llx", parent, (unsigned long long)h);
	free(parent);
	if ((mkdir(out, 0700) != 0 && errno != EEXIST) || !private_dir(out)) {
		xasprintf(cause, "cannot create socket directory %s", out);
		free(out);
		return NULL;
	}
	return out;
}

/*
 * Is the folder dir on a network or user-space file system (NFS, SMB,
 * FUSE, 9p, a cluster's), where a guest's RAM file would be slow to map and
 * write back? Unknown counts as local.
 */
static int
dir_is_remote(const char *dir)
{
	static const unsigned long remote[] = {0x6969 /* NFS */,
	    0x517b /* SMB */, 0xff534d42 /* CIFS */, 0xfe534d42 /* SMB2 */,
	    0x65735546 /* FUSE */, 0x01021997 /* 9p */, 0x00c36400 /* Ceph */,
	    0x47504653 /* GPFS */, 0x0bd00bd0 /* Lustre */};
	struct statfs fs;

	if (statfs(dir, &fs) != 0)
		return 0;
	for (size_t i = 0; i < nitems(remote); i++)
		if ((unsigned long)fs.f_type == remote[i])
			return 1;
	return 0;
}

/*
 * Where the guest RAM of the session in dir lives, so that QEMU's saved
 * state need not hold it (pause.c): dir/SESSION_RAM_SAVED, a sparse file
 * beside the workspace that a pause only syncs and a resume maps again.
 * On a network file system instead a file on a tmpfs, /dev/shm/vmux-UID/
 * HASH.ram (else under $XDG_RUNTIME_DIR), which a pause copies into dir.
 * NULL when neither can be used: the RAM is then a memfd. Free it.
 */
char *
session_ram_path(const char *dir)
{
	const char *rt = getenv("XDG_RUNTIME_DIR");
	char *parent[2] = {NULL, NULL}, *out = NULL, *why;

	if (!dir_is_remote(dir)) {
		xasprintf(&out, "%s/%s", dir, SESSION_RAM_SAVED);
		return out;
	}

	xasprintf(&parent[0], "/dev/shm/vmux-%u", (unsigned)getuid());
	if (rt != NULL && rt[0] == '/')
		xasprintf(&parent[1], "%s/vmux-ram", rt);
	for (int i = 0; i < 2; i++) {
		why = NULL;
		if (out == NULL && parent[i] != NULL &&
		    private_dir_make(parent[i], &why) == 0)
			xasprintf(&out, "%s/%016llx.ram", parent[i],
			    (unsigned long long)hash_fnv1a(dir));
		free(why); /* not said: the RAM is then a memfd */
		free(parent[i]);
	}
	return out;
}

/*
 * The running executable's path (vmux runs itself for recorders, fan-outs,
 * the TUI's commands), or NULL with errno.
 */
char *
exe_path(void)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);

	if (n <= 0) {
		if (n == 0)
			errno = ENOENT;
		return NULL;
	}
	buf[n] = '\0';
	return xstrdup(buf);
}

/* Directory of the running executable, or NULL. */
char *
exe_dir(void)
{
	char *path = exe_path(), *slash, *dir;

	if (path == NULL || (slash = strrchr(path, '/')) == NULL) {
		free(path);
		return NULL;
	}
	*slash = '\0';
	dir = xstrdup(path[0] == '\0' ? "/" : path);
	free(path);
	return dir;
}

/* Find an executable in $PATH (or check a path with a slash); NULL if not. */
char *
find_in_path(const char *name)
{
	const char *path = getenv("PATH"), *p, *end;
	char *cand;

	if (strchr(name, '/') != NULL)
		return access(name, X_OK) == 0 ? absolute(name) : NULL;
	if (path == NULL)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path;; p = end + 1) {
		end = strchr(p, ':');
		if (end == NULL)
			end = p + strlen(p);
		if (end > p) {
			xasprintf(&cand, "%.*s/%s", (int)(end - p), p, name);
			if (access(cand, X_OK) == 0) {
				struct stat st;
				if (stat(cand, &st) == 0 && S_ISREG(st.st_mode))
					return absolute(cand);
			}
			free(cand);
		}
		if (*end == '\0')
			return NULL;
	}
}

/*
 * Find helper program name: $env when set, else beside the vmux binary,
 * else in PATH.
 */
char *
find_program(const char *name, const char *env, char **cause)
{
	const char *over = env != NULL ? getenv(env) : NULL;
	char *dir, *cand;

	if (over != NULL && *over != '\0') {
		cand = find_in_path(over);
		if (cand == NULL)
			xasprintf(cause, "%s (from $%s) is not an executable",
			    over, env);
		return cand;
	}
	dir = exe_dir();
	if (dir != NULL) {
		xasprintf(&cand, "%s/%s", dir, name);
		if (access(cand, X_OK) == 0) {
			free(dir);
			return cand;
		}
		free(cand);
	}
	cand = find_in_path(name);
	if (cand == NULL)
		xasprintf(cause, "%s not found beside vmux (%s) or in PATH",
		    name, dir != NULL ? dir : "?");
	free(dir);
	return cand;
}

/*
 * The QEMU a `vmux new` runs: $VMUX_QEMU when set (and use_env), else
 * vmux's own (vmux-qemu, beside vmux), else Debian's qemu-system-x86_64
 * in PATH. An absolute path, or NULL when none is there. Free it.
 */
char *
session_qemu_find(int use_env)
{
	const char *env = use_env ? getenv("VMUX_QEMU") : NULL;
	char *dir, *cand;

	if (env != NULL && *env != '\0')
		return find_in_path(env);
	dir = exe_dir();
	if (dir != NULL) {
		xasprintf(&cand, "%s/%s", dir, SESSION_QEMU_OWN);
		free(dir);
		if (access(cand, X_OK) == 0)
			return cand;
		free(cand);
	}
	return find_in_path(SESSION_QEMU_DEFAULT);
}

/*
 * Is the QEMU at path vmux's own build (qemu/build), known by its name?
 * It alone has the vhost-user-vsock state and reconnect (qemu/patches).
 */
int
session_qemu_is_own(const char *path)
{
	const char *base;

	if (path == NULL)
		return 0;
	base = strrchr(path, '/') != NULL ? strrchr(path, '/') + 1 : path;
	return strcmp(base, SESSION_QEMU_OWN) == 0;
}

/*
 * Why a session on the QEMU at path cannot have its state saved nor its
 * bridge restarted, or NULL when it can.
 */
const char *
session_qemu_why_no_state(const char *path)
{
	if (session_qemu_is_own(path))
		return NULL;
	return "not vmux's own QEMU: its vhost-user-vsock device cannot be "
	       "saved (unmigratable in QEMU 7.2) nor take a new bridge";
}

/* Look for file in the guest image directories; NULL if in none. */
static char *
guest_file(char *const *dirs, size_t ndirs, const char *file)
{
	char *cand;
	size_t i;

	for (i = 0; i < ndirs; i++) {
		xasprintf(&cand, "%s/%s", dirs[i], file);
		if (access(cand, R_OK) == 0) {
			char *real = realpath(cand, NULL);
			free(cand);
			return real;
		}
		free(cand);
	}
	return NULL;
}

/* Check a user-given image file; absolute path or NULL with cause. */
static char *
given_file(const char *what, const char *path, char **cause)
{
	char *real;

	if (access(path, R_OK) != 0) {
		xasprintf(cause, "%s %s: %s", what, path, strerror(errno));
		return NULL;
	}
	real = realpath(path, NULL);
	if (real == NULL)
		xasprintf(cause, "%s %s: %s", what, path, strerror(errno));
	return real;
}

/*
 * Find the guest kernel and initrd: the given files, else those in dir
 * (NULL or "": no such directory), else <exe dir>/../guest, then
 * <exe dir>/../share/vmux/guest.
 */
static int
guest_image_in(const char *dir, const char *kernel, const char *initrd,
    char **kernel_out, char **initrd_out, char **cause)
{
	char *dirs[2] = {NULL, NULL}, *exe = NULL, *where = NULL;
	size_t ndirs = 0, i;
	int rc = -1;

	*kernel_out = *initrd_out = NULL;
	if (dir != NULL && *dir != '\0')
		dirs[ndirs++] = xstrdup(dir);
	else if ((exe = exe_dir()) != NULL) {
		xasprintf(&dirs[ndirs++], "%s/../guest", exe);
		xasprintf(&dirs[ndirs++], "%s/../share/vmux/guest", exe);
	}
	if (kernel != NULL)
		*kernel_out = given_file("kernel", kernel, cause);
	else
		*kernel_out = guest_file(dirs, ndirs, SESSION_KERNEL_NAME);
	if (kernel != NULL && *kernel_out == NULL)
		goto out;
	if (initrd != NULL)
		*initrd_out = given_file("initrd", initrd, cause);
	else
		*initrd_out = guest_file(dirs, ndirs, SESSION_INITRD_NAME);
	if (initrd != NULL && *initrd_out == NULL)
		goto out;
	if (*kernel_out == NULL || *initrd_out == NULL) {
		if (ndirs == 0)
			where = xstrdup("(no image directory)");
		else if (ndirs == 1)
			where = xstrdup(dirs[0]);
		else
			xasprintf(&where, "%s or %s", dirs[0], dirs[1]);
		xasprintf(cause,
		    "guest image not found: no %s in %s (build it with make, "
		    "set VMUX_GUEST_DIR, or pass --kernel and --initrd)",
		    *kernel_out == NULL ? SESSION_KERNEL_NAME
		                        : SESSION_INITRD_NAME,
		    where);
		goto out;
	}
	rc = 0;
out:
	if (rc != 0) {
		free(*kernel_out);
		free(*initrd_out);
		*kernel_out = *initrd_out = NULL;
	}
	for (i = 0; i < ndirs; i++)
		free(dirs[i]);
	free(exe);
	free(where);
	return rc;
}

/*
 * Find the guest kernel and initrd: the given files, else $VMUX_GUEST_DIR,
 * else <exe dir>/../guest, then <exe dir>/../share/vmux/guest.
 */
int
guest_image_find(const char *kernel, const char *initrd, char **kernel_out,
    char **initrd_out, char **cause)
{
	return guest_image_in(getenv("VMUX_GUEST_DIR"), kernel, initrd,
	    kernel_out, initrd_out, cause);
}

/* The guest kernel and initrd as if $VMUX_GUEST_DIR were not set. */
int
guest_image_default(char **kernel_out, char **initrd_out, char **cause)
{
	return guest_image_in(NULL, NULL, NULL, kernel_out, initrd_out, cause);
}

/* Are a and b the same file? Either NULL: no. */
static int
same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return a != NULL && b != NULL && stat(a, &sa) == 0 &&
	    stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	    sa.st_ino == sb.st_ino;
}

/*
 * Does $var (VMUX_QEMU, VMUX_BRIDGE or VMUX_GUEST_DIR) pick other files
 * than vmux would use without it? Compared as files, so a link to the
 * default is the default; when there is no default, what it picks is the
 * default. 1 or 0.
 */
int
session_env_other(const char *var)
{
	const char *v = getenv(var);
	char *mine[2] = {NULL, NULL}, *plain[2] = {NULL, NULL};
	char *why[2] = {NULL, NULL}; /* not said: a default boot says it */
	int other = 0, i;

	if (v == NULL || *v == '\0')
		return 0;
	if (strcmp(var, "VMUX_QEMU") == 0) {
		mine[0] = find_in_path(v);
		plain[0] = session_qemu_find(0);
	} else if (strcmp(var, "VMUX_BRIDGE") == 0) {
		mine[0] = find_program(SESSION_BRIDGE_NAME, var, &why[0]);
		plain[0] = find_program(SESSION_BRIDGE_NAME, NULL, &why[1]);
	} else if (strcmp(var, "VMUX_GUEST_DIR") == 0) {
		guest_image_find(NULL, NULL, &mine[0], &mine[1], &why[0]);
		guest_image_default(&plain[0], &plain[1], &why[1]);
	} else
		abort(); /* can't happen: a variable no caller names */
	for (i = 0; i < 2; i++)
		if (plain[i] != NULL && !same_file(mine[i], plain[i]))
			other = 1;
	for (i = 0; i < 2; i++) {
		free(mine[i]);
		free(plain[i]);
		free(why[i]);
	}
	return other;
}

/*
 * A file's identity, "dev:ino:size:mtime": the file, not the name (a link
 * to it is the same), and another once it is replaced or rewritten. NULL
 * if path is NULL or not there. Free it.
 */
char *
file_identity(const char *path)
{
	struct stat sb;
	char *id;

	if (path == NULL || stat(path, &sb) != 0)
		return NULL;
	xasprintf(&id, "%llx:%llx:%llx:%lld.%09ld",
	    (unsigned long long)sb.st_dev, (unsigned long long)sb.st_ino,
	    (unsigned long long)sb.st_size, (long long)sb.st_mtim.tv_sec,
	    sb.st_mtim.tv_nsec);
	return id;
}

/*
 * Append path's file_identity (or "-") to *s. If it is not there and
 * *missing is still NULL, name it what.
 */
static void
identity_add(char **s, const char *path, const char *what, const char **missing)
{
	char *old = *s, *id = file_identity(path);

	xasprintf(s, "%s %s", old, id != NULL ? id : "-");
	if (id == NULL && *missing == NULL)
		*missing = what;
	free(id);
	free(old);
}

/*
 * The files a `vmux new` here would boot with (QEMU, the bridge, the
 * guest kernel and initrd) and each one's identity, as one string: a VM
 * booted before one of them was replaced (a rebuild) has another. If
 * missing is not NULL it is set to what is not found (the first), or
 * NULL. Free the string.
 */
char *
session_boot_identity(const char **missing)
{
	const char *none = NULL;
	char *s = xstrdup("boot"), *path, *kernel, *initrd, *why = NULL;

	if (missing == NULL)
		missing = &none;
	*missing = NULL;
	path = session_qemu_find(1);
	identity_add(&s, path, "QEMU", missing);
	free(path);
	path = find_program(SESSION_BRIDGE_NAME, "VMUX_BRIDGE", &why);
	identity_add(&s, path, SESSION_BRIDGE_NAME, missing);
	free(path);
	free(why); /* the caller names what is missing */
	why = NULL;
	guest_image_find(NULL, NULL, &kernel, &initrd, &why);
	/* either missing: guest_image_find gives neither */
	identity_add(&s, kernel, "guest image", missing);
	identity_add(&s, initrd, "guest image", missing);
	free(kernel);
	free(initrd);
	free(why);
	return s;
}
