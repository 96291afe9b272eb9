/*
 * theme.c: themes colour vmux's own chrome (sidebar, borders, status bar,
 * dialogs, tiles), never the guest's output. A theme is lines of
 * `ITEM FG BG [ATTR...]`; the built-in ones come from themes/NAME.theme,
 * embedded at build time (scripts/embed-themes), and a user's
 * $XDG_CONFIG_HOME/vmux/themes/NAME.theme takes precedence. Every item
 * must be set. The theme owns its name; theme_free frees it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "tui.h"

/* Name, text, name, text, ..., NULL (generated into the build). */
extern const char *const theme_builtin[];

static const char *const item_names[TH_NITEMS] = {
    [TH_SIDEBAR] = "sidebar",
    [TH_SIDEBAR_SEL] = "sidebar-selected",
    [TH_SIDEBAR_HEAD] = "sidebar-session",
    [TH_BORDER] = "border",
    [TH_STATUS] = "status",
    [TH_STATUS_ACCENT] = "status-accent",
    [TH_MESSAGE] = "message",
    [TH_ERROR] = "error",
    [TH_DIALOG] = "dialog",
    [TH_DIALOG_SEL] = "dialog-selected",
    [TH_RUNNING] = "running",
    [TH_STARTING] = "starting",
    [TH_STOPPED] = "stopped",
    [TH_COPY_SEL] = "copy-selection",
    [TH_TILE_TITLE] = "tile-title",
    [TH_TILE_FOCUS] = "tile-focus",
};

static const char *const colour_names[16] = {"black", "red", "green", "yellow",
    "blue", "magenta", "cyan", "white", "bright-black", "bright-red",
    "bright-green", "bright-yellow", "bright-blue", "bright-magenta",
    "bright-cyan", "bright-white"};

/* The built-in themes' names, NULL-ended. */
const char *const *
theme_builtin_names(void)
{
	static const char *names[16];

	if (names[0] == NULL) {
		size_t n = 0;
		for (size_t i = 0;
		     theme_builtin[i] != NULL && n + 1 < nitems(names); i += 2)
			names[n++] = theme_builtin[i];
	}
	return names;
}

/* A colour word: COLOUR_DEFAULT, 0-255; -2 if not a colour. */
static int
parse_colour(const char *s)
{
	char *end;
	long v;

	if (strcmp(s, "default") == 0)
		return COLOUR_DEFAULT;
	for (int i = 0; i < 16; i++)
		if (strcmp(s, colour_names[i]) == 0)
			return i;
	if (strncmp(s, "colour", 6) == 0 || strncmp(s, "color", 5) == 0) {
		const char *d = s + (s[5] == 'r' ? 6 : 5);
		v = strtol(d, &end, 10);
		if (*d != '\0' && *end == '\0' && v >= 0 && v <= 255)
			return (int)v;
		return -2;
	}
	if (s[0] == '#' && strlen(s) == 7) {
		v = strtol(s + 1, &end, 16);
		if (*end == '\0')
			return colour_rgb_to_256(
			    (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v);
	}
	return -2;
}

/* An attribute word; 0 if not one. */
static int
parse_attr(const char *s)
{
	if (strcmp(s, "bold") == 0)
		return THEME_ATTR_BOLD;
	if (strcmp(s, "reverse") == 0)
		return THEME_ATTR_REVERSE;
	if (strcmp(s, "underline") == 0)
		return THEME_ATTR_UNDERLINE;
	if (strcmp(s, "dim") == 0)
		return THEME_ATTR_DIM;
	return 0;
}

/* Parse one theme line into th; 0, or -1 with *msg. */
static int
theme_line(struct theme *th, char *line, int *seen, char **msg)
{
	char *save = NULL, *w[8];
	int n = 0, item = -1, fg, bg, a;

	for (char *tok = strtok_r(line, " \t\r", &save); tok != NULL;
	     tok = strtok_r(NULL, " \t\r", &save)) {
		if (*tok == '#' &&
		    !(strlen(tok) == 7 &&
		        strspn(tok + 1, "0123456789abcdefABCDEF") == 6))
			break; /* a comment, not a #rrggbb colour */
		if (n == (int)nitems(w)) {
			xasprintf(msg, "too many words");
			return -1;
		}
		w[n++] = tok;
	}
	if (n == 0)
		return 0;
	for (int i = 0; i < TH_NITEMS; i++)
		if (strcmp(w[0], item_names[i]) == 0)
			item = i;
	if (item < 0) {
		xasprintf(msg, "unknown item \"%s\"", w[0]);
		return -1;
	}
	if (n < 3) {
		xasprintf(msg, "%s needs a foreground and a background", w[0]);
		return -1;
	}
	if ((fg = parse_colour(w[1])) == -2 ||
	    (bg = parse_colour(w[2])) == -2) {
		xasprintf(msg, "bad colour \"%s\"",
		    parse_colour(w[1]) == -2 ? w[1] : w[2]);
		return -1;
	}
	th->st[item].fg = fg;
	th->st[item].bg = bg;
	th->st[item].attrs = 0;
	for (int i = 3; i < n; i++) {
		if ((a = parse_attr(w[i])) == 0) {
			xasprintf(msg, "unknown attribute \"%s\"", w[i]);
			return -1;
		}
		th->st[item].attrs |= a;
	}
	seen[item] = 1;
	return 0;
}

/* Parse text as theme name into th; 0, or -1 with cause "NAME:LINE: ...". */
int
theme_parse(struct theme *th, const char *name, const char *text, char **cause)
{
	int seen[TH_NITEMS] = {0}, line = 0;
	char *msg = NULL;

	memset(th, 0, sizeof *th);
	while (*text != '\0') {
		const char *nl = strchr(text, '\n');
		size_t len = nl ? (size_t)(nl - text) : strlen(text);
		char *l = xstrndup(text, len);
		line++;
		if (theme_line(th, l, seen, &msg) != 0) {
			xasprintf(cause, "%s:%d: %s", name, line, msg);
			free(msg);
			free(l);
			return -1;
		}
		free(l);
		text += len + (nl ? 1 : 0);
	}
	for (int i = 0; i < TH_NITEMS; i++)
		if (!seen[i]) {
			xasprintf(cause, "%s: item \"%s\" is not set", name,
			    item_names[i]);
			return -1;
		}
	th->name = xstrdup(name);
	return 0;
}

/* A user theme file's text, or NULL (missing); -1 on a read error. */
static int
theme_user_text(const char *name, char **text, char **path, char **cause)
{
	char *rel;
	int rc;

	*text = NULL;
	xasprintf(&rel, "themes/%s.theme", name);
	*path = config_file(rel);
	free(rel);
	if (*path == NULL || (rc = config_read_file(*path, text)) == -ENOENT)
		return 0;
	if (rc != 0) {
		xasprintf(cause, "%s: %s", *path, strerror(-rc));
		return -1;
	}
	return 0;
}

/* Load theme name: the user's file, else the built-in; 0 or -1 with cause. */
int
theme_load(struct theme *th, const char *name, char **cause)
{
	char *text = NULL, *path = NULL, *list;
	size_t n = strspn(name,
	    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRST"
	    "UVWXYZ0123456789_-");
	int rc;

	if (n == 0 || name[n] != '\0') {
		xasprintf(cause,
		    "invalid theme name \"%s\": want letters, "
		    "digits, '-' or '_'",
		    name);
		return -1;
	}
	if (theme_user_text(name, &text, &path, cause) != 0) {
		free(path);
		return -1;
	}
	if (text != NULL) {
		rc = theme_parse(th, path, text, cause);
		if (rc == 0) {
			free(th->name);
			th->name = xstrdup(name);
		}
		free(text);
		free(path);
		return rc;
	}
	free(path);
	for (size_t i = 0; theme_builtin[i] != NULL; i += 2)
		if (strcmp(theme_builtin[i], name) == 0)
			return theme_parse(
			    th, name, theme_builtin[i + 1], cause);
	list = xstrdup("");
	for (const char *const *b = theme_builtin_names(); *b; b++) {
		char *s;
		xasprintf(&s, "%s%s%s", list, *list ? ", " : "", *b);
		free(list);
		list = s;
	}
	xasprintf(cause, "unknown theme \"%s\" (built in: %s)", name, list);
	free(list);
	return -1;
}

/* Free what th holds. */
void
theme_free(struct theme *th)
{
	free(th->name);
	th->name = NULL;
}
