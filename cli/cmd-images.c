/*
 * cmd-images.c: `vmux images [--json]`: the guest images vmux new --image
 * can name (NAME.img in $VMUX_HOME/images and beside vmux's build).
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

static int cmd_images_exec(struct args *);

static const struct cmd_opt cmd_images_opts[] = {
    {"json", 0, NULL, 0, "print a JSON array of {name, path, size_bytes}"},
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

	(void)a;
	if (home == NULL)
		return EXIT_VMUX;
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
