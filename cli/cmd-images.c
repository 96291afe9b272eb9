/*
 * cmd-images.c: `vmux images [ls|pull REF|rm REF...] [--prune] [--json]`.
 *
 * ls (the default) lists the images new --image can name: NAME.img in
 * $VMUX_HOME/images and beside vmux's build, and the images pulled by
 * reference into vmux's OCI layout (reference, digest, size, when, the
 * sessions using it, its labels). pull fetches a reference (skopeo) and
 * makes its ext4 image, so a later new boots at once and offline; its exit
 * status says what failed (oci.h's OCI_EXIT_*). rm forgets pulled images
 * no session uses and their blobs; --prune removes every pulled image and
 * cached ext4 image no session uses.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "oci/oci.h"
#include "session/session.h"
#include "cli.h"

static int cmd_images_exec(struct args *);

static const struct cmd_opt cmd_images_opts[] = {
    {"prune", 0, NULL, 0,
        "remove the pulled images and the images made from directories "
        "and tars that no session uses"},
    {"pull", 0, "always|missing|never", 0,
        "pull: fetch even when pulled (always, the default for pull) or "
        "only when missing"},
    {"json", 0, NULL, 0,
        "print JSON: an array of images (ls), JSON lines of progress "
        "(pull), {\"pruned\": [...]} (--prune)"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_images_entry = {
    .name = "images",
    .post = "[ls | pull REF | rm REF...]",
    .summary = "List, pull and remove the images new --image can name: "
               "NAME.img in $VMUX_HOME/images and in vmux's build, and "
               "OCI/Docker images by reference (pulled with skopeo into "
               "$VMUX_HOME/images/oci). pull exits 2 for a bad reference, "
               "3 for an unknown image or tag, 4 for credentials, 5 for "
               "an unreachable registry or TLS, 6 for a bad image, 7 for "
               "space.",
    .opts = cmd_images_opts,
    .min_args = 0,
    .max_args = -1,
    .exec = cmd_images_exec,
};

/* The sessions whose image is ref, as a JSON array of names. */
static cJSON *
images_users(const struct session_entry *v, size_t n, const char *ref)
{
	cJSON *a = cJSON_CreateArray();

	for (size_t i = 0; i < n; i++) {
		if (v[i].ok && v[i].rec.image_ref != NULL &&
		    strcmp(v[i].rec.image_ref, ref) == 0)
			cJSON_AddItemToArray(a, cJSON_CreateString(v[i].name));
	}
	return a;
}

#define PULL_LINE_MS 2000 /* bytes lines when stderr is no terminal */

/*
 * An image pull's progress (vmux images pull, new and run --image): on a
 * terminal one line redrawn (layers and bytes so far); else a line a layer
 * and one of bytes every PULL_LINE_MS on stderr (the TUI shows the last
 * on its status line); JSON lines with --json.
 */
void
cli_pull_progress(void *arg, const char *event, const char *digest,
    int64_t done, int64_t total)
{
	static int drawn;
	static uint64_t said;

	/* arg set (new, run): never on stdout, which --json's one object
	 * owns; their lines on stderr are what vmux mcp passes on */
	if (cli_json() && arg == NULL) {
		if (strcmp(event, "bytes") == 0)
			printf("{\"event\":\"bytes\",\"bytes\":%lld,"
			       "\"layers\":%lld}\n",
			    (long long)done, (long long)total);
		else
			printf("{\"event\":\"%s\"%s%s%s}\n", event,
			    digest ? ",\"digest\":\"" : "",
			    digest ? digest : "", digest ? "\"" : "");
		fflush(stdout);
		return;
	}
	if (!isatty(STDERR_FILENO) || cli_json()) {
		if (strcmp(event, "blob") == 0 || strcmp(event, "config") == 0)
			fprintf(stderr, "vmux: %s %.19s\n",
			    event[0] == 'b' ? "layer" : "config", digest);
		else if (strcmp(event, "bytes") == 0 && done > 0 &&
		    mono_ms() - said >= PULL_LINE_MS) {
			said = mono_ms();
			fprintf(stderr,
			    "vmux: pulled %.1f MiB of %lld layer%s\n",
			    (double)done / 1048576, (long long)total,
			    total == 1 ? "" : "s");
		}
		return;
	}
	if (strcmp(event, "bytes") == 0) {
		fprintf(stderr, "\r\033[Kvmux: %lld layer%s, %.1f MiB",
		    (long long)total, total == 1 ? "" : "s",
		    (double)done / 1048576);
		drawn = 1;
	} else if ((strcmp(event, "done") == 0 ||
	               strcmp(event, "failed") == 0) &&
	    drawn) {
		fputc('\n', stderr);
		drawn = 0;
	}
}

/* vmux images pull REF. */
static int
images_pull(const char *home, const char *word, struct args *a)
{
	struct image_pull_opts po = {0};
	char *cause = NULL, *out = NULL;

	po.policy = OCI_PULL_ALWAYS;
	if (args_get(a, "pull") != NULL) {
		enum oci_pull_policy pp;

		if (oci_pull_policy_parse(args_get(a, "pull"), &pp, &cause) !=
		    0) {
			cli_error("%s", cause);
			free(cause);
			return OCI_EXIT_REF;
		}
		po.policy = (int)pp;
	}
	po.notice = cli_json() ? NULL : cli_notice;
	po.progress = cli_pull_progress;
	if (!oci_ref_has_transport(word) && access(word, F_OK) == 0) {
		cli_error("'%s' is a file here: pull takes a reference "
		          "(docker-archive:%s, oci:%s, ...)",
		    word, word, word);
		return OCI_EXIT_REF;
	}
	if (image_oci_resolve(home, word, &po, &out, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		return po.exit ? po.exit : EXIT_VMUX;
	}
	if (cli_json())
		printf(
		    "{\"event\":\"pulled\",\"ref\":\"%s\",\"digest\":\"%s\"}\n",
		    po.ref, po.digest);
	else
		printf("%s %s\n", po.ref, po.digest);
	image_pull_opts_free(&po);
	free(out);
	return 0;
}

/* vmux images rm REF...: forget pulled images no session uses. */
static int
images_rm(const char *home, struct args *a)
{
	struct session_entry *v = NULL;
	char *cause = NULL;
	size_t n = 0;
	int lock, rc = 0;

	if (session_list_all(home, &v, &n, &cause) != 0 ||
	    (lock = oci_cache_lock(home, &cause)) < 0) {
		cli_error("%s", cause);
		free(cause);
		session_list_free(v, n);
		return EXIT_VMUX;
	}
	for (int i = 1; i < a->argc; i++) {
		struct oci_ref r;
		cJSON *users;
		char *ref;

		if (oci_ref_parse(a->argv[i], &r, &cause) != 0 ||
		    oci_ref_resolve(&r, &cause) != 0) {
			cli_error("%s", cause);
			free(cause);
			cause = NULL;
			oci_ref_free(&r);
			rc = EXIT_VMUX;
			continue;
		}
		ref = xstrdup(r.text);
		oci_ref_free(&r);
		users = images_users(v, n, ref);
		if (cJSON_GetArraySize(users) > 0) {
			char *names = cJSON_PrintUnformatted(users);

			cli_error("image %s is used by %s: vmux rm them first",
			    ref, cJSON_GetArrayItem(users, 0)->valuestring);
			free(names);
			rc = EXIT_VMUX;
		} else {
			int got = oci_cache_remove(home, ref, &cause);

			if (got < 0) {
				cli_error("%s", cause);
				rc = EXIT_VMUX;
			} else if (got == 0) {
				cli_error("image %s is not pulled", ref);
				rc = EXIT_VMUX;
			} else if (!cli_json())
				printf("removed %s\n", ref);
			free(cause);
			cause = NULL;
		}
		cJSON_Delete(users);
		free(ref);
	}
	if (oci_cache_gc(home, NULL, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		rc = EXIT_VMUX;
	}
	close(lock);
	session_list_free(v, n);
	return rc;
}

/* --prune: pulled images no session uses, then cached ext4 images. */
static int
images_prune(const char *home)
{
	struct session_entry *v = NULL;
	struct oci_image *imgs = NULL;
	cJSON *res = cJSON_CreateObject(), *pruned, *e;
	char *cause = NULL;
	size_t n = 0, ni = 0;
	int lock = -1;

	pruned = cJSON_AddArrayToObject(res, "pruned");
	if (session_list_all(home, &v, &n, &cause) != 0 ||
	    (lock = oci_cache_lock(home, &cause)) < 0 ||
	    oci_cache_list(home, &imgs, &ni, &cause) != 0)
		goto fail;
	for (size_t i = 0; i < ni; i++) {
		cJSON *users = images_users(v, n, imgs[i].ref);

		if (cJSON_GetArraySize(users) == 0 &&
		    oci_cache_remove(home, imgs[i].ref, &cause) == 1)
			cJSON_AddItemToArray(
			    pruned, cJSON_CreateString(imgs[i].ref));
		free(cause);
		cause = NULL;
		cJSON_Delete(users);
	}
	if (oci_cache_gc(home, NULL, &cause) != 0 ||
	    image_prune(home, pruned, &cause) != 0)
		goto fail;
	close(lock);
	oci_images_free(imgs, ni);
	session_list_free(v, n);
	cJSON_ArrayForEach(e, pruned)
	{
		if (!cli_json())
			printf("removed %s\n", e->valuestring);
	}
	cli_result(res);
	return 0;
fail:
	cli_error("%s", cause);
	free(cause);
	if (lock >= 0)
		close(lock);
	oci_images_free(imgs, ni);
	session_list_free(v, n);
	cJSON_Delete(res);
	return EXIT_VMUX;
}

/* The pulled images as JSON objects appended to arr. */
static int
images_pulled(const char *home, cJSON *arr, char **cause)
{
	struct session_entry *v = NULL;
	struct oci_image *imgs = NULL;
	size_t n = 0, ni = 0;

	if (session_list_all(home, &v, &n, cause) != 0 ||
	    oci_cache_list(home, &imgs, &ni, cause) != 0) {
		session_list_free(v, n);
		return -1;
	}
	for (size_t i = 0; i < ni; i++) {
		cJSON *o = cJSON_CreateObject();
		const cJSON *labels =
		    cJSON_GetObjectItemCaseSensitive(imgs[i].config, "Labels");

		cJSON_AddStringToObject(o, "ref", imgs[i].ref);
		cJSON_AddStringToObject(o, "digest", imgs[i].manifest_digest);
		cJSON_AddStringToObject(
		    o, "config_digest", imgs[i].config_digest);
		cJSON_AddNumberToObject(o, "size_bytes", (double)imgs[i].size);
		cJSON_AddStringToObject(o, "pulled", imgs[i].pulled);
		cJSON_AddItemToObject(
		    o, "sessions", images_users(v, n, imgs[i].ref));
		cJSON_AddItemToObject(o, "labels",
		    cJSON_IsObject(labels) ? cJSON_Duplicate(labels, 1)
		                           : cJSON_CreateObject());
		cJSON_AddItemToArray(arr, o);
	}
	oci_images_free(imgs, ni);
	session_list_free(v, n);
	return 0;
}

/* List, pull, remove or prune. */
static int
cmd_images_exec(struct args *a)
{
	const char *verb = a->argc > 0 ? a->argv[0] : "ls";
	char *home = cli_home(), *cause = NULL;
	const cJSON *e;
	cJSON *arr;
	int rc;

	if (home == NULL)
		return EXIT_VMUX;
	if (strcmp(verb, "pull") == 0 || strcmp(verb, "rm") == 0) {
		if (a->argc < 2 || (verb[0] == 'p' && a->argc > 2)) {
			free(home);
			return cli_usage_error(a->entry, "images %s takes %s",
			    verb, verb[0] == 'p' ? "one REF" : "REF...");
		}
		rc = verb[0] == 'p' ? images_pull(home, a->argv[1], a)
		                    : images_rm(home, a);
		free(home);
		return rc;
	}
	if (strcmp(verb, "ls") != 0 || a->argc > 1) {
		free(home);
		return cli_usage_error(a->entry,
		    "unknown images command '%s' (ls, pull, rm)", verb);
	}
	if (args_has(a, "prune")) {
		rc = images_prune(home);
		free(home);
		return rc;
	}
	arr = image_list(home);
	if (images_pulled(home, arr, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
	}
	free(home);
	if (cli_json()) {
		cli_result(arr);
		return 0;
	}
	printf("%-40s  %8s  %s\n", "NAME", "SIZE", "PATH / DIGEST, SESSIONS");
	printf("%-40s  %8s  %s\n", "(built in)", "-", "busybox initramfs");
	cJSON_ArrayForEach(e, arr)
	{
		const cJSON *ref = cJSON_GetObjectItem(e, "ref"), *s;
		double size = cJSON_GetObjectItem(e, "size_bytes")->valuedouble;

		if (ref == NULL) {
			printf("%-40s  %7.0fM  %s\n",
			    cJSON_GetObjectItem(e, "name")->valuestring,
			    size / 1048576,
			    cJSON_GetObjectItem(e, "path")->valuestring);
			continue;
		}
		printf("%-40s  %7.1fM  %.19s", ref->valuestring, size / 1048576,
		    cJSON_GetObjectItem(e, "digest")->valuestring);
		cJSON_ArrayForEach(s, cJSON_GetObjectItem(e, "sessions"))
		    printf(" %s", s->valuestring);
		printf("\n");
	}
	cJSON_Delete(arr);
	return 0;
}
