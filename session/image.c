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
 * by path, size and time. Sessions share an image read-only (QEMU's
 * snapshot=on): their changes outside /workspace last until they stop.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "session.h"

#define IMAGE_MIN_MB 256
#define EXT_MAGIC_AT (1024 + 56)

/* Does the file at path hold an ext2/3/4 file system? */
static int
is_ext4(const char *path)
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

/* Make an ext4 image at out from the root directory dir. */
static int
image_from_dir(const char *dir, const char *out, char **cause)
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
	xasprintf(&tmp, "%s.tmp", out);
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
		rc = run_quiet(argv, cause);
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

/* Unpack a tar into a new directory under cache; the directory or NULL. */
static char *
image_untar(const char *tar, const char *cache, char **cause)
{
	char *dir, *tarbin = find_in_path("tar");
	int rc;

	if (tarbin == NULL) {
		xasprintf(cause, "tar not found");
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
		rc = run_quiet(argv, cause);
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
 * The ext4 image for spec (see the top of this file) into *out (caller
 * frees): made and cached first when spec is a directory or a tar. 0 or
 * -1 with cause.
 */
int
image_resolve(const char *home, const char *spec, char **out,
    void (*notice)(const char *), char **cause)
{
	char *real = NULL, *cache = NULL, *img = NULL, *dir = NULL, *msg;
	char **dirs;
	struct stat st;
	size_t n, i;
	int rc = -1, tar;

	*out = NULL;
	if (strchr(spec, '/') == NULL && stat(spec, &st) != 0) {
		dirs = image_dirs(home, &n);
		for (i = 0; i < n && real == NULL; i++) {
			xasprintf(&img, "%s/%s.img", dirs[i], spec);
			if (is_ext4(img))
				real = realpath(img, NULL);
			free(img);
			img = NULL;
		}
		for (i = 0; i < n; i++)
			free(dirs[i]);
		free(dirs);
		if (real == NULL) {
			xasprintf(cause,
			    "no image '%s' (vmux images lists them; make "
			    "image-debian builds debian-12)",
			    spec);
			return -1;
		}
		*out = real;
		return 0;
	}
	if ((real = realpath(spec, NULL)) == NULL || stat(real, &st) != 0) {
		xasprintf(cause, "image %s: %s", spec, strerror(errno));
		free(real);
		return -1;
	}
	if (S_ISREG(st.st_mode) && is_ext4(real)) {
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
	xasprintf(&img, "%s/%016llx.img", cache,
	    (unsigned long long)(hash_fnv1a(real) ^
	        ((uint64_t)st.st_mtime << 20) ^ (uint64_t)st.st_size));
	if (is_ext4(img)) {
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
	if (tar && (dir = image_untar(real, cache, cause)) == NULL)
		goto out;
	if (image_from_dir(tar ? dir : real, img, cause) == 0) {
		*out = img;
		img = NULL;
		rc = 0;
	}
out:
	if (dir != NULL) {
		rmtree(dir);
		free(dir);
	}
	free(img);
	free(cache);
	free(real);
	return rc;
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
			if (stat(path, &st) == 0 && is_ext4(path)) {
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
