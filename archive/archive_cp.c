/*
 * archive_cp.c: where `vmux cp` extracts a downloaded archive on the host.
 *
 * docker cp's rules for a local destination: an existing directory receives
 * the source under its own name; any other path names the copy itself, so
 * the archive's single top-level entry is extracted into the path's parent
 * under the path's basename (tar_extract_rename_top). A path ending in '/'
 * must be an existing directory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/common.h"
#include "archive.h"

/*
 * Split dst into the directory to extract into (*dir) and the name for the
 * top-level entry (*top, NULL to keep the archive's). Caller frees both.
 */
int
tar_cp_destination(const char *dst, char **dir, char **top, char **cause)
{
	struct stat st;
	char *copy, *slash;
	size_t n;

	*dir = *top = NULL;
	if (*dst == '\0') {
		xasprintf(cause, "empty destination");
		return -1;
	}
	if (stat(dst, &st) == 0 && S_ISDIR(st.st_mode)) {
		*dir = xstrdup(dst);
		return 0;
	}
	n = strlen(dst);
	if (dst[n - 1] == '/') {
		xasprintf(
		    cause, "destination directory '%s' does not exist", dst);
		return -1;
	}
	copy = xstrdup(dst);
	slash = strrchr(copy, '/');
	if (slash == NULL) {
		*dir = xstrdup(".");
		*top = copy;
		return 0;
	}
	*top = xstrdup(slash + 1);
	*slash = '\0';
	*dir = xstrdup(slash == copy ? "/" : copy);
	free(copy);
	if (strcmp(*top, ".") == 0 || strcmp(*top, "..") == 0 ||
	    stat(*dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		xasprintf(cause,
		    "destination '%s': parent is not a directory "
		    "or the name is invalid",
		    dst);
		free(*dir);
		free(*top);
		*dir = *top = NULL;
		return -1;
	}
	return 0;
}
