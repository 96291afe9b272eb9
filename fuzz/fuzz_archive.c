/*
 * fuzz_archive.c: libFuzzer target for the archive module (archive/archive.h).
 *
 * Input: one control byte, then the archive. The control byte picks the
 * chunk size fed to tar_extract_feed (bits 0-2), TAR_X_SKIP_UNSAFE_LINKS
 * (0x08), tar_extract_rename_top (0x10) and gzip'ing the input first
 * (0x20, so mutations of plain tars also run through the inflater). Each run
 * extracts into a fresh ROOT/dest beside an empty ROOT/outside and then checks,
 * aborting on any failure:
 *  - ROOT holds exactly dest and outside, and outside is empty;
 *  - every symlink in dest that resolves, resolves inside dest;
 *  - every hard-linked file in dest has all its links inside dest;
 *  - if extraction succeeded, exporting dest with tar_export and
 *    extracting that again gives the same tree.
 * Where the kernel has Landlock, writes are confined to the scratch area
 * and the fuzzer's own corpus and artifact folders, so an escape fails
 * (EACCES, caught below) instead of damaging the machine.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/landlock.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>

#include "common/common.h"
#include "archive/archive.h"

/*
 * fuzz_layer.c builds this file with FUZZ_LAYER 1: the input is an OCI
 * image layer (TAR_X_LAYER), applied twice, the second time as an upper
 * layer over what the first made (whiteouts, replacements, opaque
 * directories against real lower content). A layer's symlinks may point
 * anywhere (they are data, resolved inside the guest's root), so only
 * what lands where is checked, and there is no round trip.
 */
#ifndef FUZZ_LAYER
#define FUZZ_LAYER 0
#endif

static char base[PATH_MAX]; /* scratch area: base/root/{dest,outside} */
static char root[PATH_MAX + 16], dest[PATH_MAX + 32], outside[PATH_MAX + 32];
static char dest2[PATH_MAX + 32];
static int landlocked;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "fuzz_archive: %s: ", #cond);          \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
			abort();                                               \
		}                                                              \
	} while (0)

/* Remove a tree holding one descriptor at a time (trees may be deep). */
static void
rm_tree(const char *path)
{
	char **names = NULL;
	size_t depth = 0, cap = 0;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0) {
		unlink(path);
		return;
	}
	for (;;) {
		DIR *d = fdopendir(fcntl(fd, F_DUPFD_CLOEXEC, 0));
		struct dirent *de;
		char *found = NULL;

		CHECK(d != NULL, "fdopendir: %s", strerror(errno));
		rewinddir(d); /* the dup shares the offset of earlier reads */
		while ((de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") == 0 ||
			    strcmp(de->d_name, "..") == 0)
				continue;
			found = xstrdup(de->d_name);
			break;
		}
		closedir(d);
		if (found == NULL) {
			int up;

			if (depth == 0)
				break;
			up = openat(
			    fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			CHECK(up >= 0, "open ..: %s", strerror(errno));
			close(fd);
			fd = up;
			depth--;
			CHECK(unlinkat(fd, names[depth], AT_REMOVEDIR) == 0,
			    "rmdir: %s", strerror(errno));
			free(names[depth]);
			continue;
		}
		if (unlinkat(fd, found, 0) == 0) {
			free(found);
			continue;
		}
		/* A directory: make it writable and go down into it. */
		fchmodat(fd, found, 0700, 0);
		int down = openat(
		    fd, found, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		CHECK(down >= 0, "open %s: %s", found, strerror(errno));
		close(fd);
		fd = down;
		if (depth == cap) {
			cap = cap ? cap * 2 : 64;
			names = xreallocarray(names, cap, sizeof *names);
		}
		names[depth++] = found;
	}
	close(fd);
	free(names);
	CHECK(rmdir(path) == 0, "rmdir %s: %s", path, strerror(errno));
}

/* Number of entries in a directory. */
static int
count_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	int n = 0;

	CHECK(d != NULL, "opendir %s: %s", path, strerror(errno));
	while ((de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0;
	closedir(d);
	return n;
}

struct inode_count {
	dev_t dev;
	ino_t ino;
	nlink_t nlink, seen;
};
static struct inode_count *inodes;
static size_t ninodes, inodes_cap;
static char real_dest[PATH_MAX];

/* Count one more link of a multiply-linked file. */
static void
saw_inode(const struct stat *st)
{
	for (size_t i = 0; i < ninodes; i++) {
		if (inodes[i].dev == st->st_dev &&
		    inodes[i].ino == st->st_ino) {
			inodes[i].seen++;
			return;
		}
	}
	if (ninodes == inodes_cap) {
		inodes_cap = inodes_cap ? inodes_cap * 2 : 64;
		inodes = xreallocarray(inodes, inodes_cap, sizeof *inodes);
	}
	inodes[ninodes++] =
	    (struct inode_count){st->st_dev, st->st_ino, st->st_nlink, 1};
}

/* Check a symlink at dirfd/name resolves (if at all) inside dest. */
static void
check_symlink(int dirfd, const char *name)
{
	char proc[64], where[PATH_MAX];
	size_t dl = strlen(real_dest);
	ssize_t n;
	int fd = openat(dirfd, name, O_PATH | O_CLOEXEC); /* follows */

	if (fd < 0)
		return; /* dangling or a loop: harmless */
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	n = readlink(proc, where, sizeof where - 1);
	close(fd);
	if (n < 0)
		return; /* path too long to name: cannot tell */
	where[n] = '\0';
	CHECK(strncmp(where, real_dest, dl) == 0 &&
	        (where[dl] == '/' || where[dl] == '\0'),
	    "symlink '%s' resolves to '%s', outside '%s'", name, where,
	    real_dest);
}

/* Walk dest checking symlinks and counting hard links (fd per level). */
static void
walk(int dirfd, int depth)
{
	DIR *d;
	struct dirent *de;
	int dup = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);

	if (dup < 0 || (d = fdopendir(dup)) == NULL) {
		CHECK(errno == EMFILE, "fdopendir: %s", strerror(errno));
		if (dup >= 0)
			close(dup);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		CHECK(fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0,
		    "stat: %s", strerror(errno));
		if (S_ISLNK(st.st_mode) && !FUZZ_LAYER)
			check_symlink(dirfd, de->d_name);
		else if (!S_ISDIR(st.st_mode) && st.st_nlink > 1)
			saw_inode(&st);
		else if (S_ISDIR(st.st_mode) && depth < 200) {
			int sub = openat(dirfd, de->d_name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sub >= 0) {
				walk(sub, depth + 1);
				close(sub);
			}
		}
	}
	closedir(d);
}

/* Compare two trees by descriptor: 0 same, 1 different, -1 cannot tell. */
static int
same_tree(int a, int b, int depth)
{
	struct dirent **na = NULL, **nb = NULL;
	int ca, cb, rc = 0;
	char pa[64], pb[64];

	if (depth > 200)
		return -1;
	snprintf(pa, sizeof pa, "/proc/self/fd/%d", a);
	snprintf(pb, sizeof pb, "/proc/self/fd/%d", b);
	ca = scandir(pa, &na, NULL, alphasort);
	cb = scandir(pb, &nb, NULL, alphasort);
	if (ca < 0 || cb < 0)
		rc = -1;
	else if (ca != cb)
		rc = 1;
	for (int i = 0; rc == 0 && i < ca; i++) {
		const char *n = na[i]->d_name;
		struct stat sa, sb;

		if (strcmp(n, nb[i]->d_name) != 0) {
			rc = 1;
			break;
		}
		if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
			continue;
		if (fstatat(a, n, &sa, AT_SYMLINK_NOFOLLOW) != 0 ||
		    fstatat(b, n, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
			rc = -1;
			break;
		}
		if (sa.st_mode != sb.st_mode ||
		    (!S_ISDIR(sa.st_mode) && sa.st_mtime != sb.st_mtime) ||
		    (!S_ISDIR(sa.st_mode) && sa.st_nlink != sb.st_nlink) ||
		    (S_ISREG(sa.st_mode) && sa.st_size != sb.st_size)) {
			fprintf(stderr, "differs: %s\n", n);
			rc = 1;
			break;
		}
		if (S_ISLNK(sa.st_mode)) {
			char la[PATH_MAX + 1] = "", lb[PATH_MAX + 1] = "";

			readlinkat(a, n, la, PATH_MAX);
			readlinkat(b, n, lb, PATH_MAX);
			rc = strcmp(la, lb) != 0;
		} else if (S_ISREG(sa.st_mode)) {
			int fa = openat(a, n, O_RDONLY | O_CLOEXEC);
			int fb = openat(b, n, O_RDONLY | O_CLOEXEC);
			char ba[4096], bb[4096];
			ssize_t ra, rb;

			if (fa < 0 || fb < 0)
				rc = -1;
			while (rc == 0 && (ra = read(fa, ba, sizeof ba)) > 0) {
				rb = read_full(fb, bb, (size_t)ra);
				rc = (rb != ra ||
				    memcmp(ba, bb, (size_t)ra) != 0);
			}
			if (fa >= 0)
				close(fa);
			if (fb >= 0)
				close(fb);
		} else if (S_ISDIR(sa.st_mode)) {
			int da = openat(a, n,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			int db = openat(b, n,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			rc = (da < 0 || db < 0) ? -1
			                        : same_tree(da, db, depth + 1);
			if (da >= 0)
				close(da);
			if (db >= 0)
				close(db);
			if (rc == 0 && sa.st_mtime != sb.st_mtime) {
				fprintf(stderr, "dir mtime differs: %s\n", n);
				rc = 1;
			}
		}
	}
	for (int i = 0; i < ca; i++)
		free(na[i]);
	for (int i = 0; i < cb; i++)
		free(nb[i]);
	free(na);
	free(nb);
	return rc;
}

/* Export dest, extract it into dest2: the trees must match. */
static void
round_trip(void)
{
	struct tar_export *xp;
	struct tar_extract *te;
	static unsigned char buf[65536];
	char *cause = NULL;
	ssize_t n;
	int a, b, rc;

	xp = tar_export_new(dest, ".", &cause);
	CHECK(xp != NULL, "export: %s", cause);
	te = tar_extract_new(dest2, &cause);
	CHECK(te != NULL, "extract: %s", cause);
	while ((n = tar_export_read(xp, buf, sizeof buf, &cause)) > 0) {
		CHECK(tar_extract_feed(te, buf, (size_t)n, &cause) == 0,
		    "re-extract: %s", cause);
	}
	if (n < 0) {
		/* Deep trees can run out of descriptors; nothing else. */
		CHECK(strstr(cause, strerror(EMFILE)) != NULL, "export: %s",
		    cause);
		free(cause);
		tar_export_free(xp);
		tar_extract_free(te);
		return;
	}
	CHECK(
	    tar_extract_finish(te, NULL, &cause) == 0, "re-extract: %s", cause);
	tar_extract_free(te);
	tar_export_free(xp);
	a = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	b = open(dest2, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(a >= 0 && b >= 0, "open: %s", strerror(errno));
	rc = same_tree(a, b, 0);
	CHECK(rc != 1, "export/extract round trip changed the tree");
	close(a);
	close(b);
}

/* Confine writes to the given folders with Landlock, if the kernel can. */
static void
landlock(const char **paths, int n)
{
	struct landlock_ruleset_attr attr = {0};
	long abi;
	int rs;

	abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
	    LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 1) {
		fprintf(
		    stderr, "fuzz_archive: no Landlock, writes unconfined\n");
		return;
	}
	attr.handled_access_fs = LANDLOCK_ACCESS_FS_WRITE_FILE |
	    LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
	    LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |
	    LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |
	    LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
	    LANDLOCK_ACCESS_FS_MAKE_SYM;
	if (abi >= 2)
		attr.handled_access_fs |= LANDLOCK_ACCESS_FS_REFER;
#ifdef LANDLOCK_ACCESS_FS_TRUNCATE
	if (abi >= 3)
		attr.handled_access_fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
#endif
	rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	CHECK(rs >= 0, "landlock_create_ruleset: %s", strerror(errno));
	for (int i = 0; i < n; i++) {
		struct landlock_path_beneath_attr pb = {
		    .allowed_access = attr.handled_access_fs};

		/* Only folders: a file argument is an input to run. */
		pb.parent_fd = open(paths[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (pb.parent_fd < 0)
			continue;
		CHECK(syscall(SYS_landlock_add_rule, rs,
		          LANDLOCK_RULE_PATH_BENEATH, &pb, 0) == 0,
		    "landlock_add_rule %s: %s", paths[i], strerror(errno));
		close(pb.parent_fd);
	}
	CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "no_new_privs");
	CHECK(syscall(SYS_landlock_restrict_self, rs, 0) == 0,
	    "landlock_restrict_self: %s", strerror(errno));
	close(rs);
	landlocked = 1;
}

/*
 * Make the scratch area ($FUZZ_SCRATCH, reused, or a new folder in $TMPDIR
 * that stays behind), then confine writes to it and libFuzzer's folders.
 */
int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR"), *allow[64];
	const char *scratch = getenv("FUZZ_SCRATCH");
	static char artifacts[PATH_MAX];
	struct rlimit rl;
	int n = 0;

	if (scratch != NULL && *scratch != '\0') {
		snprintf(base, sizeof base, "%s", scratch);
		if (mkdir(base, 0700) != 0)
			CHECK(errno == EEXIST, "mkdir %s: %s", base,
			    strerror(errno));
	} else {
		snprintf(base, sizeof base, "%s/vmux-fuzz-archive-XXXXXX",
		    tmp && *tmp ? tmp : "/tmp");
		CHECK(mkdtemp(base) != NULL, "mkdtemp: %s", strerror(errno));
	}
	snprintf(root, sizeof root, "%s/root", base);
	if (access(root, F_OK) == 0)
		rm_tree(root); /* left by a crashed run */
	snprintf(dest, sizeof dest, "%s/dest", root);
	snprintf(dest2, sizeof dest2, "%s/dest2", root);
	snprintf(outside, sizeof outside, "%s/outside", root);

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max > 65536 ? 65536 : rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}

	/* libFuzzer writes into corpus folders and the artifact prefix. */
	allow[n++] = base;
	strcpy(artifacts, ".");
	for (int i = 1; i < *argc && n < 62; i++) {
		const char *a = (*argv)[i];

		if (strncmp(a, "-artifact_prefix=", 17) == 0) {
			char *slash;

			snprintf(artifacts, sizeof artifacts, "%s", a + 17);
			slash = strrchr(artifacts, '/');
			if (slash == NULL)
				strcpy(artifacts, ".");
			else
				slash[1] = '\0';
		} else if (a[0] != '-')
			allow[n++] = a;
	}
	allow[n++] = artifacts;
	if (getenv("FUZZ_NO_LANDLOCK") == NULL)
		landlock(allow, n);
	if (landlocked) {
		/* Probe: creating a file beside the scratch area must fail. */
		char probe[PATH_MAX + 32], *slash;
		int fd;

		snprintf(probe, sizeof probe, "%s", base);
		slash = strrchr(probe, '/');
		snprintf(slash ? slash + 1 : probe,
		    sizeof probe - (size_t)(slash ? slash + 1 - probe : 0),
		    ".landlock-probe-%d", (int)getpid());
		fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd >= 0) {
			close(fd);
			unlink(probe);
			fprintf(
			    stderr, "fuzz_archive: Landlock not effective\n");
		} else
			fprintf(stderr, "fuzz_archive: writes confined (%s)\n",
			    strerror(errno));
	}
	return 0;
}

/* A gzip'd copy of data (caller frees). */
static unsigned char *
gzip_copy(const uint8_t *data, size_t size, size_t *outlen)
{
	z_stream zs;
	size_t cap;
	unsigned char *out;

	memset(&zs, 0, sizeof zs);
	CHECK(deflateInit2(
	          &zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK,
	    "deflateInit2");
	cap = deflateBound(&zs, size) + 64;
	out = xmalloc(cap);
	zs.next_in = (unsigned char *)(uintptr_t)data;
	zs.avail_in = (uInt)size;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END, "deflate");
	*outlen = cap - zs.avail_out;
	deflateEnd(&zs);
	return out;
}

/* One run: extract, check containment, round-trip through export. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t chunks[] = {
	    1, 3, 64, 511, 512, 4096, 65536, SIZE_MAX};
	struct tar_extract *te;
	struct tar_result res;
	unsigned char *gz = NULL;
	char *cause = NULL;
	int rc = 0, ctl;

	if (size < 1)
		return 0;
	ctl = data[0];
	data++;
	size--;

	CHECK(mkdir(root, 0700) == 0, "mkdir %s: %s", root, strerror(errno));
	CHECK(mkdir(outside, 0700) == 0, "mkdir: %s", strerror(errno));
	te = tar_extract_new(dest, &cause);
	CHECK(te != NULL, "tar_extract_new: %s", cause);
	CHECK(realpath(dest, real_dest) != NULL, "realpath");
	if ((ctl & 0x08) && !FUZZ_LAYER)
		tar_extract_set_flags(te, TAR_X_SKIP_UNSAFE_LINKS);
	if (ctl & 0x10)
		CHECK(tar_extract_rename_top(te, "renamed", &cause) == 0,
		    "rename: %s", cause);
	if (ctl & 0x20) {
		/* Compress the rest, so mutations reach the gzip path too. */
		gz = gzip_copy(data, size, &size);
		data = gz;
	}
	if (FUZZ_LAYER)
		tar_extract_set_flags(te, TAR_X_LAYER);
	for (int pass = 0; pass < 1 + FUZZ_LAYER && rc == 0; pass++) {
		if (pass > 0) { /* the same layer again, over the first */
			tar_extract_free(te);
			te = tar_extract_new(dest, &cause);
			CHECK(te != NULL, "tar_extract_new: %s", cause);
			tar_extract_set_flags(te, TAR_X_LAYER);
		}
		for (size_t off = 0, chunk = chunks[ctl & 7];
		     rc == 0 && off < size; off += chunk) {
			size_t len = size - off < chunk ? size - off : chunk;

			rc = tar_extract_feed(te, data + off, len, &cause);
		}
		if (rc == 0)
			rc = tar_extract_finish(te, &res, &cause);
	}
	tar_extract_free(te);
	free(gz);
	if (rc != 0) {
		CHECK(cause != NULL && *cause != '\0', "failure without cause");
		/*
		 * Under Landlock, EACCES means a write tried to escape. System
		 * errors end the message; quoted input never does.
		 */
		size_t cl = strlen(cause), el = strlen(strerror(EACCES));

		CHECK(!landlocked || cl < el ||
		        strcmp(cause + cl - el, strerror(EACCES)) != 0,
		    "%s", cause);
		free(cause);
	}

	CHECK(count_entries(root) == 2, "something appeared beside dest");
	CHECK(count_entries(outside) == 0, "something appeared in outside");
	{
		int fd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		CHECK(fd >= 0, "open dest: %s", strerror(errno));
		ninodes = 0;
		walk(fd, 0);
		close(fd);
		for (size_t i = 0; i < ninodes; i++) {
			CHECK(inodes[i].seen == inodes[i].nlink,
			    "a hard link leaves dest (%d of %d links inside)",
			    (int)inodes[i].seen, (int)inodes[i].nlink);
		}
	}
	if (rc == 0 && !FUZZ_LAYER)
		round_trip();
	rm_tree(root);
	return 0;
}
