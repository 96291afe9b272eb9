/*
 * pull.c: skopeo copies an image into vmux's OCI layout.
 *
 * One pull at a time holds the cache's lock, so two `vmux new --image X`
 * at once pull once: the second finds X in the index when its turn comes.
 * skopeo writes into a private layout (tmp.XXXXXX, with its blobs straight
 * into the shared blobs/sha256, each renamed into place only once its
 * digest matched) and vmux names the image in index.json only after
 * reading its manifest and config back: a pull cut short, refused or
 * tampered with names nothing, and its leftovers go with the next lock.
 * skopeo picks linux/amd64 from a multi-platform index; an image without
 * one is refused naming the platforms it has. skopeo's one-line errors
 * become one sentence each and an OCI_EXIT_* status.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"
#include "oci.h"

#define SKOPEO_ERR_MAX (64 * 1024) /* stderr kept for the message */
#define PULL_TICK_MS   250         /* how often the bytes are counted */
#define PULL_PARTS     16          /* skopeo's blobs being written at once */

/* Remove stale private layouts a killed pull left (lock held). */
static void
pull_leftovers(const char *cache)
{
	struct dirent *de;
	char *path;
	DIR *d;

	if ((d = opendir(cache)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "tmp.", 4) != 0)
			continue;
		xasprintf(&path, "%s/%s", cache, de->d_name);
		rmtree(path);
		free(path);
	}
	closedir(d);
}

/* The message of skopeo's `level=fatal msg="..."` line (caller frees). */
static char *
skopeo_message(const char *err)
{
	const char *m = strstr(err, "msg=\""), *p;
	char *out, *o;

	if (m == NULL) {
		size_t n = strcspn(err, "\n");

		return n ? xstrndup(err, n) : xstrdup("skopeo failed");
	}
	m += 5;
	o = out = xmalloc(strlen(m) + 1);
	for (p = m; *p && *p != '\n'; p++) {
		if (*p == '\\' && p[1] != '\0')
			p++;
		else if (*p == '"')
			break;
		*o++ = *p;
	}
	*o = '\0';
	return out;
}

/*
 * Run skopeo with argv: stdout lines go to line (if not NULL), stderr is
 * kept in *err (caller frees). The exit status, or -1 with cause.
 */
static int
skopeo_run(char *const argv[], void (*line)(void *, const char *),
    void (*tick)(void *), void *arg, char **err, char **cause)
{
	int out[2], errp[2], status = 0, open_fds = 2;
	char obuf[4096], *ebuf = xmalloc(SKOPEO_ERR_MAX + 1);
	size_t olen = 0, elen = 0;
	pid_t pid;

	*err = NULL;
	if (pipe2(out, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		free(ebuf);
		return -1;
	}
	if ((pid = fork()) == 0) {
		dup2(out[1], 1);
		dup2(errp[1], 2);
		execvp(argv[0], argv);
		dprintf(2, "level=fatal msg=\"cannot run %s: %s\"\n", argv[0],
		    strerror(errno));
		_exit(127);
	}
	close(out[1]);
	close(errp[1]);
	if (pid < 0) {
		xasprintf(cause, "fork: %s", strerror(errno));
		close(out[0]);
		close(errp[0]);
		free(ebuf);
		return -1;
	}
	while (open_fds > 0) {
		struct pollfd p[2] = {
		    {out[0], POLLIN, 0}, {errp[0], POLLIN, 0}};
		ssize_t n;

		int r = poll(p, 2, tick != NULL ? PULL_TICK_MS : -1);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (tick != NULL)
			tick(arg);
		if (p[0].revents && p[0].fd >= 0) {
			n = read(out[0], obuf + olen, sizeof obuf - 1 - olen);
			if (n <= 0) {
				close(out[0]);
				out[0] = -1;
				open_fds--;
			} else {
				char *nl;

				olen += (size_t)n;
				obuf[olen] = '\0';
				while ((nl = strchr(obuf, '\n')) != NULL) {
					*nl = '\0';
					if (line != NULL)
						line(arg, obuf);
					olen -= (size_t)(nl + 1 - obuf);
					memmove(obuf, nl + 1, olen + 1);
				}
				if (olen == sizeof obuf - 1)
					olen = 0; /* a line too long: drop */
			}
		}
		if (p[1].revents && p[1].fd >= 0) {
			char tmp[4096];

			n = read(errp[0], tmp, sizeof tmp);
			if (n <= 0) {
				close(errp[0]);
				errp[0] = -1;
				open_fds--;
			} else {
				size_t k = (size_t)n;

				if (k > SKOPEO_ERR_MAX - elen)
					k = SKOPEO_ERR_MAX - elen;
				memcpy(ebuf + elen, tmp, k);
				elen += k;
			}
		}
	}
	ebuf[elen] = '\0';
	*err = ebuf;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status))
		return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	return WEXITSTATUS(status);
}

/* The platforms an index at source lists, as "os/arch, ..." or NULL. */
static char *
index_platforms(const char *source)
{
	char *argv[] = {"skopeo", "inspect", "--raw", (char *)source, NULL};
	char *list = NULL, *s, *raw;
	const cJSON *m, *pl;
	cJSON *j;
	int fd[2], status = 0;
	pid_t pid;
	size_t len = 0;
	ssize_t n;

	if (pipe2(fd, O_CLOEXEC) != 0)
		return NULL;
	if ((pid = fork()) == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(fd[1], 1);
		if (null >= 0)
			dup2(null, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fd[1]);
	raw = xmalloc(1 << 20);
	while (pid > 0 && (n = read(fd[0], raw + len, (1 << 20) - 1 - len)) > 0)
		len += (size_t)n;
	raw[len] = '\0';
	close(fd[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	if ((j = cJSON_Parse(raw)) == NULL) {
		free(raw);
		return NULL;
	}
	free(raw);
	cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(j, "manifests"))
	{
		const cJSON *os, *arch, *var;

		pl = cJSON_GetObjectItemCaseSensitive(m, "platform");
		os = cJSON_GetObjectItemCaseSensitive(pl, "os");
		arch = cJSON_GetObjectItemCaseSensitive(pl, "architecture");
		var = cJSON_GetObjectItemCaseSensitive(pl, "variant");
		if (!cJSON_IsString(os) || !cJSON_IsString(arch))
			continue;
		xasprintf(&s, "%s%s%s/%s%s%s", list ? list : "",
		    list ? ", " : "", os->valuestring, arch->valuestring,
		    cJSON_IsString(var) ? "/" : "",
		    cJSON_IsString(var) ? var->valuestring : "");
		free(list);
		list = s;
	}
	cJSON_Delete(j);
	return list;
}

/* The registry of a reference, for messages. */
static const char *
ref_where(const struct oci_ref *r)
{
	return r->transport == OCI_DOCKER && r->domain ? r->domain : r->text;
}

/* Turn skopeo's failure into one sentence and an exit status. */
static void
pull_failed(
    const struct oci_ref *r, const char *err, int *exit_status, char **cause)
{
	char *msg = skopeo_message(err), *platforms;
	const char *where = ref_where(r);

#define HAS(s) (strstr(msg, (s)) != NULL)
	if (HAS("manifest unknown") || HAS("name unknown") ||
	    HAS("no descriptor found for reference") ||
	    HAS("repository does not exist")) {
		*exit_status = OCI_EXIT_NOTFOUND;
		xasprintf(cause, "image %s: no such image or tag in %s",
		    r->text, where);
	} else if (HAS("unauthorized") || HAS("authentication required") ||
	    HAS("denied")) {
		*exit_status = OCI_EXIT_AUTH;
		xasprintf(cause,
		    "image %s: %s refused the credentials (none found, or "
		    "wrong): skopeo reads $REGISTRY_AUTH_FILE, "
		    "$XDG_RUNTIME_DIR/containers/auth.json, "
		    "~/.config/containers/auth.json and ~/.docker/config.json; "
		    "run `skopeo login %s`",
		    r->text, where, where);
	} else if (HAS("x509:") || HAS("tls:") || HAS("certificate")) {
		*exit_status = OCI_EXIT_NET;
		xasprintf(cause,
		    "image %s: the TLS certificate of %s is not trusted (%s): "
		    "put its CA in /etc/containers/certs.d/%s/ca.crt or "
		    "~/.config/containers/certs.d/%s/ca.crt",
		    r->text, where, msg, where, where);
	} else if (HAS("Digest did not match") || HAS("digest mismatch")) {
		*exit_status = OCI_EXIT_IMAGE;
		xasprintf(cause,
		    "image %s: a blob from %s does not match its digest "
		    "(%s); nothing was cached",
		    r->text, where,
		    strstr(msg, "expected") ? strstr(msg, "expected") : msg);
	} else if (HAS("no image found in")) {
		*exit_status = OCI_EXIT_IMAGE;
		platforms = index_platforms(r->source);
		xasprintf(cause,
		    "image %s has no linux/amd64 image (it has %s); vmux "
		    "boots linux/amd64 guests",
		    r->text, platforms ? platforms : "other platforms only");
		free(platforms);
	} else if (HAS("no space left")) {
		*exit_status = OCI_EXIT_SPACE;
		xasprintf(
		    cause, "image %s: the disk is full (%s)", r->text, msg);
	} else if (HAS("unexpected EOF") || HAS("connection reset") ||
	    HAS("broken pipe")) {
		*exit_status = OCI_EXIT_NET;
		xasprintf(cause,
		    "image %s: the connection to %s broke during the pull "
		    "(%s); nothing was cached",
		    r->text, where, msg);
	} else if (HAS("connection refused") || HAS("no such host") ||
	    HAS("i/o timeout") || HAS("network is unreachable") ||
	    HAS("dial tcp") || HAS("pinging container registry")) {
		*exit_status = OCI_EXIT_NET;
		xasprintf(cause, "image %s: cannot reach %s (%s)", r->text,
		    where, msg);
	} else if (HAS("cannot run skopeo")) {
		*exit_status = OCI_EXIT_IMAGE;
		xasprintf(cause,
		    "image %s: skopeo is not installed (apt-get install "
		    "skopeo)",
		    r->text);
	} else if (HAS("opening file") || HAS("no such file")) {
		*exit_status = OCI_EXIT_NOTFOUND;
		xasprintf(cause, "image %s: %s", r->text, msg);
	} else {
		*exit_status = OCI_EXIT_IMAGE;
		xasprintf(cause, "image %s: %s", r->text, msg);
	}
#undef HAS
	free(msg);
}

/*
 * What a pull has done, for the caller's hook: skopeo's "Copying blob"
 * lines count the layers, and the bytes are its partial blobs
 * (tmp/oci-put-blob*, renamed away once complete) plus those finished.
 */
struct pull_watch {
	oci_progress_fn fn;
	void *arg;
	const char *tmp;
	int64_t layers, done;
	struct {
		char name[64];
		int64_t size;
		int seen;
	} part[PULL_PARTS];
};

/* Every PULL_TICK_MS: the bytes so far, by the partial blobs' sizes. */
static void
pull_tick(void *arg)
{
	struct pull_watch *w = arg;
	struct dirent *de;
	int64_t partial = 0;
	struct stat st;
	char *path;
	DIR *d;

	if (w->fn == NULL || (d = opendir(w->tmp)) == NULL)
		return;
	for (int i = 0; i < PULL_PARTS; i++)
		w->part[i].seen = 0;
	while ((de = readdir(d)) != NULL) {
		int i, free_slot = -1;

		if (strncmp(de->d_name, "oci-put-blob", 12) != 0 ||
		    strlen(de->d_name) >= sizeof w->part[0].name)
			continue;
		xasprintf(&path, "%s/%s", w->tmp, de->d_name);
		if (stat(path, &st) != 0)
			st.st_size = 0;
		free(path);
		for (i = 0; i < PULL_PARTS; i++) {
			if (strcmp(w->part[i].name, de->d_name) == 0)
				break;
			if (w->part[i].name[0] == '\0' && free_slot < 0)
				free_slot = i;
		}
		if (i == PULL_PARTS && (i = free_slot) < 0)
			continue; /* more at once than we follow */
		snprintf(
		    w->part[i].name, sizeof w->part[i].name, "%s", de->d_name);
		w->part[i].size = st.st_size;
		w->part[i].seen = 1;
		partial += st.st_size;
	}
	closedir(d);
	for (int i = 0; i < PULL_PARTS; i++) { /* gone: complete */
		if (w->part[i].name[0] != '\0' && !w->part[i].seen) {
			w->done += w->part[i].size;
			w->part[i].name[0] = '\0';
		}
	}
	w->fn(w->arg, "bytes", NULL, w->done + partial, w->layers);
}

/* skopeo's stdout: "Copying blob sha256:..." and "Copying config ...". */
static void
pull_line(void *arg, const char *line)
{
	struct pull_watch *w = arg;
	const char *d;

	if (w->fn == NULL)
		return;
	if (strncmp(line, "Copying blob ", 13) == 0) {
		d = line + 13;
		w->layers++;
		w->fn(w->arg, "blob", d, w->layers, 0);
	} else if (strncmp(line, "Copying config ", 15) == 0)
		w->fn(w->arg, "config", line + 15, 0, 0);
}

/*
 * The manifest skopeo left in the private layout tmp: its digest and
 * size. 0 or -1 with cause.
 */
static int
pull_manifest(const char *tmp, char **digest, int64_t *size, char **cause)
{
	char *path, buf[65536];
	const cJSON *m;
	cJSON *j;
	ssize_t n;
	int fd;

	xasprintf(&path, "%s/index.json", tmp);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd < 0) {
		xasprintf(cause, "skopeo wrote no index.json");
		return -1;
	}
	n = read_full(fd, buf, sizeof buf - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	j = cJSON_Parse(buf);
	m = cJSON_GetArrayItem(
	    cJSON_GetObjectItemCaseSensitive(j, "manifests"), 0);
	if (m == NULL ||
	    !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(m, "digest")) ||
	    !oci_digest_valid(
	        cJSON_GetObjectItemCaseSensitive(m, "digest")->valuestring)) {
		xasprintf(cause, "skopeo's index.json names no manifest");
		cJSON_Delete(j);
		return -1;
	}
	*digest =
	    xstrdup(cJSON_GetObjectItemCaseSensitive(m, "digest")->valuestring);
	{
		double v = cJSON_GetNumberValue(
		    cJSON_GetObjectItemCaseSensitive(m, "size"));

		*size = v >= 0 && v <= 4194304 ? (int64_t)v : 0;
	}
	cJSON_Delete(j);
	return 0;
}

/*
 * Pull r into the cache (the caller holds the cache's lock). 0, or -1 with
 * cause and *exit_status.
 */
int
oci_pull(const char *home, const struct oci_ref *r, oci_progress_fn fn,
    void *arg, int *exit_status, char **cause)
{
	char *cache = oci_cache_dir(home), *tmp, *blobs, *dest, *err = NULL;
	char *manifest = NULL, *regconf = NULL, *why = NULL;
	const char *rc_env = getenv("CONTAINERS_REGISTRIES_CONF");
	struct pull_watch w;
	struct oci_image img;
	int64_t msize = 0;
	char *argv[16];
	int n = 0, st, rc = -1;

	*exit_status = OCI_EXIT_IMAGE;
	pull_leftovers(cache);
	xasprintf(&tmp, "%s/tmp.XXXXXX", cache);
	if (mkdtemp(tmp) == NULL) {
		xasprintf(cause, "cannot create %s: %s", tmp, strerror(errno));
		*exit_status =
		    errno == ENOSPC ? OCI_EXIT_SPACE : OCI_EXIT_IMAGE;
		free(tmp);
		free(cache);
		return -1;
	}
	xasprintf(&blobs, "%s/blobs", cache);
	xasprintf(&dest, "oci:%s:vmux", tmp);
	argv[n++] = "skopeo";
	argv[n++] = "--override-os";
	argv[n++] = "linux";
	argv[n++] = "--override-arch";
	argv[n++] = "amd64";
	argv[n++] = "copy";
	if (rc_env != NULL && *rc_env != '\0') {
		/* skopeo 1.9 reads only its flag, not the variable */
		xasprintf(&regconf, "--registries-conf=%s", rc_env);
		argv[n++] = regconf;
	}
	argv[n++] = "--dest-shared-blob-dir";
	argv[n++] = blobs;
	argv[n++] = r->source;
	argv[n++] = dest;
	argv[n] = NULL;
	if (fn != NULL)
		fn(arg, "start", NULL, 0, 0);
	memset(&w, 0, sizeof w);
	w.fn = fn;
	w.arg = arg;
	w.tmp = tmp;
	st = skopeo_run(argv, pull_line, pull_tick, &w, &err, cause);
	if (st < 0)
		goto out;
	if (st != 0) {
		pull_failed(r, err, exit_status, cause);
		goto out;
	}
	if (pull_manifest(tmp, &manifest, &msize, cause) != 0)
		goto out;
	/* read back: the manifest and config match their digests and it is
	 * linux/amd64, or the image is not named at all */
	if (oci_image_read(cache, manifest, &img, &why) != 0) {
		xasprintf(cause, "image %s: %s", r->text, why);
		free(why);
		goto out;
	}
	oci_image_free(&img);
	if (oci_cache_add(home, r->text, manifest, msize, cause) != 0)
		goto out;
	if (fn != NULL)
		fn(arg, "done", manifest, 0, 0);
	rc = 0;
out:
	if (fn != NULL && rc != 0)
		fn(arg, "failed", NULL, 0, 0);
	rmtree(tmp);
	free(tmp);
	free(blobs);
	free(dest);
	free(err);
	free(manifest);
	free(regconf);
	free(cache);
	return rc;
}
