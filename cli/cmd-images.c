/*
 * cmd-images.c: `vmux images [--prune] [--json]`: the guest images vmux
 * new --image can name (NAME.img in $VMUX_HOME/images and beside vmux's
 * build); --prune removes the images cached from directories and tars
 * that no session uses.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

static int cmd_images_exec(struct args *);

static const struct cmd_opt cmd_images_opts[] = {
    {"prune", 0, NULL, 0,
        "remove the images made from directories and tars (the cache) that "
        "no session uses"},
    {"json", 0, NULL, 0,
        "print a JSON array of {name, path, size_bytes} ({\"pruned\": "
        "[PATH...]} with --prune)"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_images_entry = {
    .name = "images",
    .summary = "List the guest images new --image can name: NAME.img in "
               "$VMUX_HOME/images and in vmux's build (make image-debian "
               "makes debian-12). The built-in busybox guest needs none.",
    .opts = cmd_images_opts,
    .min_args = 0,
    .max_args = 0,
    .exec = cmd_images_exec,
};

/* List the images. */
static int
cmd_images_exec(struct args *a)
{
	char *home = cli_home();
	const cJSON *e;
	cJSON *arr;

	if (home == NULL)
		return EXIT_VMUX;
	if (args_has(a, "prune")) {
		cJSON *res = cJSON_CreateObject(), *pruned;
		char *cause = NULL;

		pruned = cJSON_AddArrayToObject(res, "pruned");
		if (image_prune(home, pruned, &cause) != 0) {
			cli_error("%s", cause);
			free(cause);
			cJSON_Delete(res);
			free(home);
			return EXIT_VMUX;
		}
		free(home);
		cJSON_ArrayForEach(e, pruned)
		{
			if (!cli_json())
				printf("removed %s\n", e->valuestring);
		}
		cli_result(res);
		return 0;
	}
	arr = image_list(home);
	free(home);
	if (cli_json()) {
		cli_result(arr);
		return 0;
	}
	printf("%-20s  %8s  %s\n", "NAME", "SIZE", "PATH");
	printf("%-20s  %8s  %s\n", "(built in)", "-", "busybox initramfs");
	cJSON_ArrayForEach(e, arr)
	{
		printf("%-20s  %7.0fM  %s\n",
		    cJSON_GetObjectItem(e, "name")->valuestring,
		    cJSON_GetObjectItem(e, "size_bytes")->valuedouble / 1048576,
		    cJSON_GetObjectItem(e, "path")->valuestring);
	}
	cJSON_Delete(arr);
	return 0;
}
