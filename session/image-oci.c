/*
 * image-oci.c: an image by reference (`--image alpine:3`) as a session's
 * root: pulled into vmux's OCI layout (oci/), its layers applied by
 * vmux-unpack (under fakeroot for a user), made an ext4 image by
 * mkfs.ext4 -d and cached by the image's manifest digest, which names its
 * config and every layer: a second `new` of a pulled image builds nothing, and
 * a tag pulled once boots offline (--pull missing, the default, asks no
 * registry for a tag it has). The cache's lock is held from the pull to
 * the ext4, so two `vmux new --image X` at once pull and build once.
 *
 * The image's settings travel in its root as /.vmux-image (as docker's
 * /.dockerenv), lines of "env K=V", "workdir DIR", "user SPEC", read by
 * the guest's agent for the default environment, working directory and
 * user of exec and shells.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/common.h"
#include "oci/oci.h"
#include "session.h"

/* Free what image_resolve handed back in o. */
void
image_pull_opts_free(struct image_pull_opts *o)
{
	free(o->ref);
	free(o->digest);
	cJSON_Delete(o->config);
	o->ref = o->digest = NULL;
	o->config = NULL;
}

/* The text of /.vmux-image for an image's config (caller frees). */
static char *
image_note(const struct oci_image *img)
{
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(img->config, "Env");
	const cJSON *wd, *user, *e;
	char *s = xstrdup("# vmux: this image's settings (its OCI config)\n");
	char *t;

	cJSON_ArrayForEach(e, env)
	{
		/* a line each: a value with a newline cannot be one */
		if (!cJSON_IsString(e) || strchr(e->valuestring, '\n') ||
		    strchr(e->valuestring, '=') == NULL)
			continue;
		xasprintf(&t, "%senv %s\n", s, e->valuestring);
		free(s);
		s = t;
	}
	wd = cJSON_GetObjectItemCaseSensitive(img->config, "WorkingDir");
	if (cJSON_IsString(wd) && wd->valuestring[0] == '/' &&
	    strchr(wd->valuestring, '\n') == NULL) {
		xasprintf(&t, "%sworkdir %s\n", s, wd->valuestring);
		free(s);
		s = t;
	}
	user = cJSON_GetObjectItemCaseSensitive(img->config, "User");
	if (cJSON_IsString(user) && user->valuestring[0] != '\0' &&
	    strchr(user->valuestring, '\n') == NULL) {
		xasprintf(&t, "%suser %s\n", s, user->valuestring);
		free(s);
		s = t;
	}
	return s;
}

/*
 * Apply img's layers beneath a new directory of cache and make the ext4
 * at out from it. A blob that does not match its digest is forgotten
 * (*bad set). 0 or -1 with cause.
 */
static int
image_oci_build(const char *home, const char *cache, const char *ocidir,
    const struct oci_image *img, const char *out, int *bad, char **cause)
{
	char *dir = NULL, *notep = NULL, *note, *bin = NULL, *exe = exe_dir();
	char *fr = NULL, maxs[32], **argv, **v, *why = NULL;
	struct statvfs vfs;
	size_t n = 0;
	int rc = -1;

	*bad = 0;
	if (statvfs(cache, &vfs) == 0 &&
	    (long long)vfs.f_bavail * (long long)vfs.f_frsize < img->size * 4) {
		xasprintf(cause,
		    "image %s: %lld MiB free in %s, about %lld MiB needed to "
		    "unpack it and make its image",
		    img->ref,
		    (long long)vfs.f_bavail * (long long)vfs.f_frsize >> 20,
		    cache, (long long)(img->size * 4) >> 20);
		goto out;
	}
	if (exe != NULL)
		xasprintf(&bin, "%s/vmux-unpack", exe);
	if (bin == NULL || access(bin, X_OK) != 0) {
		xasprintf(cause, "vmux-unpack is missing beside vmux (%s)",
		    exe != NULL ? exe : "?");
		goto out;
	}
	xasprintf(&dir, "%s/unpack.XXXXXX", cache);
	if (mkdtemp(dir) == NULL) {
		xasprintf(cause, "mkdtemp %s: %s", dir, strerror(errno));
		free(dir);
		dir = NULL;
		goto out;
	}
	note = image_note(img);
	xasprintf(&notep, "%s.note", dir);
	if (file_replace(notep, note, strlen(note), 0644) != 0) {
		xasprintf(cause, "cannot write %s", notep);
		free(note);
		goto out;
	}
	free(note);
	snprintf(maxs, sizeof maxs, "%lld", image_max());
	argv = xcalloc(img->nlayers + 8, sizeof *argv);
	argv[n++] = bin;
	argv[n++] = "--max";
	argv[n++] = maxs;
	argv[n++] = "--note";
	argv[n++] = notep;
	argv[n++] = dir;
	for (size_t i = 0; i < img->nlayers; i++) {
		char *blob = oci_blob_path(ocidir, img->layers[i]);

		xasprintf(&argv[n++], "%s@%s", blob, img->layers[i]);
		free(blob);
	}
	fr = fakeroot_state(cache);
	if (fr == NULL && geteuid() != 0) {
		xasprintf(cause,
		    "image %s: its owners and devices need root or fakeroot "
		    "(apt-get install fakeroot)",
		    img->ref);
		for (size_t i = 6; i < n; i++)
			free(argv[i]);
		free(argv);
		rc = -1;
		goto out;
	}
	v = under_fakeroot(argv, fr, 0);
	rc = run_quiet(v, &why);
	free(v);
	for (size_t i = 6; i < n; i++)
		free(argv[i]);
	free(argv);
	if (rc != 0) {
		*bad = why != NULL && strstr(why, "does not match its digest");
		xasprintf(cause, "image %s: %s%s", img->ref, why ? why : "",
		    why && strstr(why, "add up to more") ? " (image-max in "
		                                           "$XDG_CONFIG_HOME/"
		                                           "vmux/config)"
		                                         : "");
		free(why);
		goto out;
	}
	rc = image_from_dir(dir, out, fr, cause);
out:
	if (dir != NULL) {
		rmtree(dir);
		free(dir);
	}
	if (notep != NULL) {
		unlink(notep);
		free(notep);
	}
	if (fr != NULL) {
		unlink(fr);
		free(fr);
	}
	free(bin);
	free(exe);
	return rc;
}

/*
 * The manifest digest the reference word names in the cache now, as
 * "oci:sha256:HEX" (caller frees), or NULL if it is none or not pulled.
 */
char *
image_oci_identity(const char *home, const char *word)
{
	struct oci_image img;
	struct oci_ref r;
	char *why = NULL, *id = NULL;

	if (oci_ref_parse(word, &r, &why) != 0 ||
	    oci_ref_resolve(&r, &why) != 0) {
		free(why);
		oci_ref_free(&r);
		return NULL;
	}
	if (oci_cache_find(home, r.text, &img, &why) == 1)
		xasprintf(&id, "oci:%s", img.manifest_digest);
	free(why);
	oci_image_free(&img);
	oci_ref_free(&r);
	return id;
}

/*
 * Why word is no image: a word that could have been a listed name says it
 * is neither that nor a reference. Takes why.
 */
static void
image_ref_error(const char *word, char *why, char **cause)
{
	if (!oci_ref_has_transport(word) && strchr(word, '/') == NULL)
		xasprintf(cause,
		    "no image '%s': not a listed image (vmux images lists "
		    "them), and as a reference: %s",
		    word, why);
	else
		*cause = xstrdup(why);
	free(why);
}

/*
 * The ext4 image of the image word names (a reference: see the top of
 * this file) into *out. o (may be NULL) says the pull policy and gets the
 * reference, digest and config. 0 or -1 with cause (and o->exit).
 */
int
image_oci_resolve(const char *home, const char *word, struct image_pull_opts *o,
    char **out, char **cause)
{
	struct oci_ref r;
	struct oci_image img;
	char *ocidir = oci_cache_dir(home), *cache = NULL, *img_path = NULL;
	char *msg, *why = NULL;
	int policy = o != NULL ? o->policy : OCI_PULL_MISSING;
	int lock = -1, found, exit = OCI_EXIT_IMAGE, bad = 0, rc = -1;

	memset(&img, 0, sizeof img);
	*out = NULL;
	if (oci_ref_parse(word, &r, &why) != 0) {
		exit = r.exit;
		image_ref_error(word, why, cause);
		free(ocidir);
		goto fail;
	}
	if (oci_ref_resolve(&r, &why) != 0) {
		exit = r.exit;
		image_ref_error(word, why, cause);
		goto out;
	}
	if ((lock = oci_cache_lock(home, cause)) < 0)
		goto out;
	if (r.transport != OCI_DOCKER && policy == OCI_PULL_MISSING)
		policy = OCI_PULL_ALWAYS; /* a file: cheap to read again */
	found = policy == OCI_PULL_ALWAYS
	    ? 0
	    : oci_cache_find(home, r.text, &img, &why);
	if (found < 0) { /* a damaged entry: pull it again */
		free(why);
		why = NULL;
		found = 0;
	}
	if (!found && policy == OCI_PULL_NEVER) {
		exit = OCI_EXIT_NOTFOUND;
		xasprintf(
		    cause, "image %s is not pulled (--pull never)", r.text);
		goto out;
	}
	if (!found) {
		if (o != NULL && o->notice != NULL) {
			xasprintf(&msg, "pulling %s", r.text);
			o->notice(msg);
			free(msg);
		}
		if (oci_pull(home, &r, o ? o->progress : NULL,
		        o ? o->arg : NULL, &exit, cause) != 0)
			goto out;
		if (oci_cache_find(home, r.text, &img, cause) != 1)
			goto out;
	}
	xasprintf(&cache, "%s/images/cache", home);
	if (mkdir_p(cache, 0700) != 0) {
		xasprintf(
		    cause, "cannot create %s: %s", cache, strerror(errno));
		goto out;
	}
	/* the manifest names the config and every layer by digest: a config
	 * reused with other layers is another image */
	xasprintf(
	    &img_path, "%s/oci-%.32s.img", cache, img.manifest_digest + 7);
	if (!image_is_ext4(img_path)) {
		if (o != NULL && o->notice != NULL) {
			xasprintf(&msg,
			    "making an ext4 image of %s (once; cached)",
			    r.text);
			o->notice(msg);
			free(msg);
		}
		if (image_oci_build(home, cache, ocidir, &img, img_path, &bad,
		        cause) != 0) {
			if (bad) { /* nothing of a tampered image stays */
				oci_cache_remove(home, r.text, &why);
				free(why);
				why = NULL;
				oci_cache_gc(home, NULL, &why);
				free(why);
			}
			goto out;
		}
	}
	if (o != NULL) {
		o->ref = xstrdup(r.text);
		o->digest = xstrdup(img.manifest_digest);
		o->config = img.config;
		img.config = NULL;
	}
	*out = img_path;
	img_path = NULL;
	rc = 0;
out:
	if (lock >= 0)
		close(lock);
	oci_image_free(&img);
	oci_ref_free(&r);
	free(img_path);
	free(cache);
	free(ocidir);
fail:
	if (o != NULL)
		o->exit = rc == 0 ? 0 : exit;
	return rc;
}
