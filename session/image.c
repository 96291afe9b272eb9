/*
 * image.c: guest images for `vmux new --image IMG`.
 *
 * An image is an ext4 file system holding an x86_64 Linux root; the VM
 * boots vmux's own kernel and initramfs, and vmux-init switches into the
 * image (guest/init.c), so any rootfs works with vmux's agent and modules.
 * IMG may be such an image (ext4 or raw file), a root directory, a tar
 * (.tar, .tar.gz, .tgz) of one, or a name: NAME.img in $VMUX_HOME/images
 * or in the images/ directory beside vmux's build (where `make
 * image-debian` puts debian-12.img). Directories and tars are made into an
 * ext4 image once, by mkfs.ext4 -d, and cached in $VMUX_HOME/images/cache
 * under a key of their content: a tar's bytes, a tree's manifest (paths,
 * sizes, modes, owners, mtimes in ns, link targets), so a changed source
 * is built again. One build at a time per key (an flock), each into a
 * private temporary file renamed in whole: two `vmux new --image X` at
 * once build once and both boot, and a half-built image is never used.
 * Owners, modes, setuid bits and device nodes are kept (tar -p
 * --numeric-owner as root; under fakeroot otherwise). What a tar unpacks
 * to is bounded (image-max in the settings, 8G by default) and checked
 * against the free space first. `vmux images --prune` removes cached
 * images no session uses. Sessions share an image read-only (QEMU's
 * snapshot=on): their changes outside /workspace last until they stop.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"
#include "oci/oci.h"
#include "session.h"

#define IMAGE_MIN_MB      256
#define IMAGE_MAX_DEFAULT (8LL << 30) /* what a tar may unpack to */
#define EXT_MAGIC_AT      (1024 + 56)

/* Does the file at path hold an ext2/3/4 file system? */
int
image_is_ext4(const char *path)
{
	unsigned char m[2];
	int fd = open(path, O_RDONLY | O_CLOEXEC), ok;

	if (fd < 0)
		return 0;
	ok = pread(fd, m, 2, EXT_MAGIC_AT) == 2 && m[0] == 0x53 && m[1] == 0xEF;
	close(fd);
	return ok;
}

/* Does s end with suffix? */
static int
ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Directories where named images live: $VMUX_HOME/images, build/images. */
static char **
image_dirs(const char *home, size_t *n)
{
	char **v = xcalloc(2, sizeof *v), *exe = exe_dir();

	*n = 0;
	xasprintf(&v[(*n)++], "%s/images", home);
	if (exe != NULL)
		xasprintf(&v[(*n)++], "%s/../images", exe);
	free(exe);
	return v;
}

static long long tree_bytes;

/* nftw: add up a tree's sizes. */
static int
tree_add(const char *p, const struct stat *st, int type, struct FTW *f)
{
	(void)p;
	(void)type;
	(void)f;
	tree_bytes += st->st_size + 4096;
	return 0;
}

static uint64_t tree_key; /* nftw has no argument: one walk at a time */

/* FNV-1a over len bytes, continuing from h. */
static uint64_t
fnv(uint64_t h, const void *p, size_t len)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* nftw: fold one entry of a tree into the manifest key. */
static int
tree_manifest(const char *p, const struct stat *st, int type, struct FTW *f)
{
	char link[4096];
	ssize_t n;
	int64_t fields[] = {(int64_t)st->st_size, (int64_t)st->st_mode,
	    (int64_t)st->st_uid, (int64_t)st->st_gid,
	    (int64_t)st->st_mtim.tv_sec, (int64_t)st->st_mtim.tv_nsec,
	    (int64_t)st->st_rdev};

	(void)type;
	(void)f;
	tree_key = fnv(tree_key, p, strlen(p) + 1);
	tree_key = fnv(tree_key, fields, sizeof fields);
	if (S_ISLNK(st->st_mode) && (n = readlink(p, link, sizeof link)) > 0)
		tree_key = fnv(tree_key, link, (size_t)n);
	return 0;
}

/*
 * The cache key of a source: a tar's bytes, or a tree's manifest (so any
 * change to it, even within a second, is a new key). 0 or -1 with cause.
 */
static int
image_key(const char *real, int tar, uint64_t *key, char **cause)
{
	char buf[65536];
	ssize_t n;
	int fd;

	*key = 0xcbf29ce484222325ULL;
	if (!tar) {
		tree_key = *key;
		if (nftw(real, tree_manifest, 32, FTW_PHYS) != 0) {
			xasprintf(cause, "image %s: cannot read the tree: %s",
			    real, strerror(errno));
			return -1;
		}
		*key = tree_key ^ 0x5452; /* never a tar's key */
		return 0;
	}
	if ((fd = open(real, O_RDONLY | O_CLOEXEC)) < 0) {
		xasprintf(cause, "image %s: %s", real, strerror(errno));
		return -1;
	}
	while ((n = read(fd, buf, sizeof buf)) > 0)
		*key = fnv(*key, buf, (size_t)n);
	close(fd);
	if (n < 0) {
		xasprintf(cause, "image %s: %s", real, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * The bytes a tar unpacks to, from `tar -tv` (sizes of its members), or
 * -1 with cause.
 */
static long long
tar_unpacked_bytes(const char *tarbin, const char *tar, char **cause)
{
	char line[8192];
	long long total = 0, sz;
	int fds[2], status;
	pid_t pid;
	FILE *p;

	if (pipe2(fds, O_CLOEXEC) != 0) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		return -1;
	}
	if ((pid = fork()) == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(fds[1], 1);
		if (null >= 0)
			dup2(null, 2);
		execl(tarbin, "tar", "-tv", "--numeric-owner", "-f", tar,
		    (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	if (pid < 0 || (p = fdopen(fds[0], "r")) == NULL) {
		xasprintf(cause, "cannot list %s: %s", tar, strerror(errno));
		close(fds[0]);
		return -1;
	}
	/* "-rw-r--r-- 0/0 1234 2024-01-01 00:00 path": the third field */
	while (fgets(line, sizeof line, p) != NULL) {
		if (sscanf(line, "%*s %*s %lld", &sz) == 1 && sz > 0)
			total += sz + 4096;
	}
	fclose(p);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		xasprintf(cause, "image %s: not a tar tar(1) can read", tar);
		return -1;
	}
	return total;
}

/*
 * argv run under fakeroot with state file fr (kept between the unpacking
 * and mkfs, so owners and device nodes a user cannot make survive into the
 * image), or as it is when fr is NULL (root keeps them itself). Returns a
 * new argv whose strings are borrowed; free the array only.
 */
char **
under_fakeroot(char *const *argv, const char *fr, int load)
{
	static char *bin; /* where fakeroot is, looked up once */

	size_t n = 0, k = 0;
	char **v;

	while (argv[n] != NULL)
		n++;
	v = xcalloc(n + 5, sizeof *v);
	if (fr != NULL && bin == NULL)
		bin = find_in_path("fakeroot");
	if (fr != NULL && bin != NULL) {
		v[k++] = bin;
		v[k++] = load ? "-i" : "-s";
		v[k++] = (char *)fr;
		v[k++] = "--";
	}
	for (size_t i = 0; i < n; i++)
		v[k++] = argv[i];
	return v;
}

/*
 * The fakeroot state file for a build by a user who is not root (NULL for
 * root, or when fakeroot is missing: then owners are the user's). Free it.
 */
char *
fakeroot_state(const char *cache)
{
	char *bin, *p;

	if (geteuid() == 0 || (bin = find_in_path("fakeroot")) == NULL)
		return NULL;
	free(bin);
	xasprintf(&p, "%s/fakeroot.%ld", cache, (long)getpid());
	return p;
}

/* Make an ext4 image at out from the root directory dir. */
int
image_from_dir(const char *dir, const char *out, const char *fr, char **cause)
{
	char *mkfs, size[32], *tmp;
	long long mb;
	int fd, rc;

	if ((mkfs = mkfs_find(cause)) == NULL)
		return -1;
	tree_bytes = 0;
	nftw(dir, tree_add, 32, FTW_PHYS);
	mb = tree_bytes / 1048576 * 2 + 128;
	if (mb < IMAGE_MIN_MB)
		mb = IMAGE_MIN_MB;
	snprintf(size, sizeof size, "%lldM", mb);
	/* private to this build: never another's half-made file */
	xasprintf(&tmp, "%s.tmp.%ld", out, (long)getpid());
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 || ftruncate(fd, (off_t)mb * 1048576) != 0) {
		xasprintf(cause, "cannot create %s: %s", tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		free(tmp);
		free(mkfs);
		return -1;
	}
	close(fd);
	{
		char *argv[] = {mkfs, "-q", "-F", "-L", "vmux-root", "-d",
		    (char *)dir, tmp, NULL};
		char **v = under_fakeroot(argv, fr, 1);
		rc = run_quiet(v, cause);
		free(v);
	}
	if (rc == 0 && rename(tmp, out) != 0) {
		xasprintf(cause, "cannot rename %s: %s", tmp, strerror(errno));
		rc = -1;
	}
	if (rc != 0)
		unlink(tmp);
	free(tmp);
	free(mkfs);
	return rc;
}

/*
 * Unpack a tar into a new directory under cache, keeping owners, modes and
 * device nodes; the directory or NULL. What it unpacks to must fit under
 * max bytes and in the free space (with room for the image made of it).
 */
static char *
image_untar(const char *tar, const char *cache, long long max, const char *fr,
    char **cause)
{
	char *dir, *tarbin = find_in_path("tar");
	struct statvfs vfs;
	long long need;
	int rc;

	if (tarbin == NULL) {
		xasprintf(cause, "tar not found");
		return NULL;
	}
	if ((need = tar_unpacked_bytes(tarbin, tar, cause)) < 0) {
		free(tarbin);
		return NULL;
	}
	if (need > max) {
		xasprintf(cause,
		    "image %s unpacks to %lld MiB, over image-max (%lld MiB; "
		    "set image-max in $XDG_CONFIG_HOME/vmux/config)",
		    tar, need >> 20, max >> 20);
		free(tarbin);
		return NULL;
	}
	if (statvfs(cache, &vfs) == 0 &&
	    (long long)vfs.f_bavail * (long long)vfs.f_frsize < need * 3) {
		xasprintf(cause,
		    "image %s: %lld MiB free in %s, %lld MiB needed to unpack "
		    "it and make its image",
		    tar,
		    (long long)vfs.f_bavail * (long long)vfs.f_frsize >> 20,
		    cache, need * 3 >> 20);
		free(tarbin);
		return NULL;
	}
	xasprintf(&dir, "%s/unpack.XXXXXX", cache);
	if (mkdtemp(dir) == NULL) {
		xasprintf(cause, "mkdtemp %s: %s", dir, strerror(errno));
		free(dir);
		free(tarbin);
		return NULL;
	}
	{
		char *argv[] = {tarbin, "-x", "-p", "--numeric-owner", "-f",
		    (char *)tar, "-C", dir, NULL};
		char **v = under_fakeroot(argv, fr, 0);
		rc = run_quiet(v, cause);
		free(v);
	}
	free(tarbin);
	if (rc != 0) {
		rmtree(dir);
		free(dir);
		return NULL;
	}
	return dir;
}

/*
 * What identifies the file spec names now, without building anything:
 * "DEV:INODE:SIZE:MTIME" of NAME.img as image_resolve finds it, or of the
 * path (a directory's own; its cached build follows its content). A pool
 * VM keeps it in its spec, so an image replaced under the same name is
 * not handed out from VMs booted before; for an image by reference, the
 * manifest digest it names now (a tag pulled again is another image).
 * "-" for none or not found.
 */
char *
image_identity(const char *home, const char *spec)
{
	struct stat st;
	char *path = NULL, *id, **dirs;
	size_t n, i;

	if (spec == NULL)
		return xstrdup("-");
	if (!oci_ref_has_transport(spec) && strchr(spec, '/') == NULL &&
	    stat(spec, &st) != 0) {
		dirs = image_dirs(home, &n);
		for (i = 0; i < n; i++) {
			if (path == NULL) {
				xasprintf(&path, "%s/%s.img", dirs[i], spec);
				if (stat(path, &st) != 0) {
					free(path);
					path = NULL;
				}
			}
			free(dirs[i]);
		}
		free(dirs);
	}
	id = path != NULL || stat(spec, &st) == 0
	    ? file_identity(path != NULL ? path : spec)
	    : NULL;
	free(path);
	if (id == NULL) /* a reference: the manifest it names now */
		id = image_oci_identity(home, spec);
	return id != NULL ? id : xstrdup("-");
}

/*
 * The ext4 image for spec (see the top of this file) into *out (caller
 * frees): made and cached first when spec is a directory or a tar. 0 or
 * -1 with cause.
 */
int
image_resolve(const char *home, const char *spec, struct image_pull_opts *o,
    char **out, char **cause)
{
	void (*notice)(const char *) = o != NULL ? o->notice : NULL;
	char *real = NULL, *cache = NULL, *img = NULL, *dir = NULL, *msg;
	char **dirs, *lockp = NULL, *fr = NULL;
	struct stat st;
	size_t n, i;
	int rc = -1, tar, lock = -1;
	uint64_t key;

	*out = NULL;
	if (oci_ref_has_transport(spec))
		return image_oci_resolve(home, spec, o, out, cause);
	if (strchr(spec, '/') == NULL && stat(spec, &st) != 0) {
		dirs = image_dirs(home, &n);
		for (i = 0; i < n && real == NULL; i++) {
			xasprintf(&img, "%s/%s.img", dirs[i], spec);
			if (image_is_ext4(img))
				real = realpath(img, NULL);
			free(img);
			img = NULL;
		}
		for (i = 0; i < n; i++)
			free(dirs[i]);
		free(dirs);
		if (real == NULL) /* not a named image: a reference */
			return image_oci_resolve(home, spec, o, out, cause);
		*out = real;
		return 0;
	}
	if ((real = realpath(spec, NULL)) == NULL && errno == ENOENT &&
	    spec[0] != '/' && spec[0] != '.') /* no such file: a reference */
		return image_oci_resolve(home, spec, o, out, cause);
	if (real == NULL || stat(real, &st) != 0) {
		xasprintf(cause, "image %s: %s", spec, strerror(errno));
		free(real);
		return -1;
	}
	if (S_ISREG(st.st_mode) && image_is_ext4(real)) {
		*out = real;
		return 0;
	}
	tar = S_ISREG(st.st_mode) &&
	    (ends_with(real, ".tar") || ends_with(real, ".tar.gz") ||
	        ends_with(real, ".tgz"));
	if (!tar && !S_ISDIR(st.st_mode)) {
		xasprintf(cause,
		    "image %s: not an ext4 image, a root directory or a tar "
		    "(.tar, .tar.gz, .tgz)",
		    spec);
		free(real);
		return -1;
	}
	xasprintf(&cache, "%s/images/cache", home);
	if (mkdir_p(cache, 0700) != 0) {
		xasprintf(
		    cause, "cannot create %s: %s", cache, strerror(errno));
		goto out;
	}
	if (image_key(real, tar, &key, cause) != 0)
		goto out;
	xasprintf(&img, "%s/%016llx.img", cache, (unsigned long long)key);
	xasprintf(&lockp, "%s/%016llx.lock", cache, (unsigned long long)key);
	/* one build per key; the others wait, then find it made */
	if ((lock = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0 ||
	    flock(lock, LOCK_EX) != 0) {
		xasprintf(cause, "cannot lock %s: %s", lockp, strerror(errno));
		goto out;
	}
	if (image_is_ext4(img)) {
		*out = img;
		img = NULL;
		rc = 0;
		goto out;
	}
	if (notice != NULL) {
		xasprintf(
		    &msg, "making an ext4 image of %s (once; cached)", spec);
		notice(msg);
		free(msg);
	}
	fr = tar ? fakeroot_state(cache) : NULL;
	if (tar &&
	    (dir = image_untar(real, cache, image_max(), fr, cause)) == NULL)
		goto out;
	if (image_from_dir(tar ? dir : real, img, fr, cause) == 0) {
		*out = img;
		img = NULL;
		rc = 0;
	}
out:
	if (dir != NULL) {
		rmtree(dir);
		free(dir);
	}
	if (fr != NULL) {
		unlink(fr);
		free(fr);
	}
	if (lock >= 0)
		close(lock); /* releases the flock */
	free(lockp);
	free(img);
	free(cache);
	free(real);
	return rc;
}

/* image-max from the settings, or the default. */
long long
image_max(void)
{
	struct settings st;
	char *cause = NULL;
	long long v = IMAGE_MAX_DEFAULT;

	if (settings_load(&st, &cause) != 0) {
		free(cause);
		return v;
	}
	if (st.image_max > 0)
		v = st.image_max;
	settings_free(&st);
	return v;
}

/*
 * Remove the cached images (made from a directory or a tar) that no
 * session uses; the names removed are added to removed. 0 or -1 with
 * cause.
 */
int
image_prune(const char *home, cJSON *removed, char **cause)
{
	struct session_entry *v = NULL;
	char *cache, *path;
	struct dirent *de;
	size_t n = 0, i;
	int used;
	DIR *d;

	if (session_list_all(home, &v, &n, cause) != 0)
		return -1;
	xasprintf(&cache, "%s/images/cache", home);
	if ((d = opendir(cache)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			xasprintf(&path, "%s/%s", cache, de->d_name);
			used = 0;
			for (i = 0; i < n && !used; i++)
				used = v[i].ok && v[i].rec.root_image != NULL &&
				    strcmp(v[i].rec.root_image, path) == 0;
			if (!used && ends_with(de->d_name, ".img") &&
			    unlink(path) == 0)
				cJSON_AddItemToArray(
				    removed, cJSON_CreateString(path));
			free(path);
		}
		closedir(d);
	}
	free(cache);
	session_list_free(v, n);
	return 0;
}

/* The named images: [{"name", "path", "size_bytes"}], for vmux images. */
cJSON *
image_list(const char *home)
{
	cJSON *arr = cJSON_CreateArray(), *o;
	char **dirs, *path, *name;
	struct dirent *de;
	struct stat st;
	size_t n, i;
	DIR *d;

	dirs = image_dirs(home, &n);
	for (i = 0; i < n; i++) {
		if ((d = opendir(dirs[i])) == NULL)
			continue;
		while ((de = readdir(d)) != NULL) {
			if (!ends_with(de->d_name, ".img"))
				continue;
			xasprintf(&path, "%s/%s", dirs[i], de->d_name);
			if (stat(path, &st) == 0 && image_is_ext4(path)) {
				o = cJSON_CreateObject();
				name = xstrndup(
				    de->d_name, strlen(de->d_name) - 4);
				cJSON_AddStringToObject(o, "name", name);
				free(name);
				free(path);
				path = realpath(dirs[i], NULL);
				xasprintf(&name, "%s/%s",
				    path != NULL ? path : dirs[i], de->d_name);
				cJSON_AddStringToObject(o, "path", name);
				free(name);
				cJSON_AddNumberToObject(
				    o, "size_bytes", (double)st.st_size);
				cJSON_AddItemToArray(arr, o);
			}
			free(path);
		}
		closedir(d);
	}
	for (i = 0; i < n; i++)
		free(dirs[i]);
	free(dirs);
	return arr;
}
