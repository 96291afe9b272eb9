/*
 * config.c: the TUI's configuration, $XDG_CONFIG_HOME/vmux/vmux.conf.
 *
 * tmux-like lines: `set OPTION VALUE`, `bind KEY COMMAND...`, `unbind KEY`,
 * `#` comments, words split on blanks with "double" and 'single' quotes.
 * A bad line adds "FILE:LINE: message" to cfg->errors and is skipped; the
 * rest still applies, so a typo never keeps the TUI from starting. The
 * config owns its strings; config_free frees them.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "tui.h"

#define SIDEBAR_MIN_W 12
#define SIDEBAR_MAX_W 80

/* The default prefix table (tmux's keys where tmux has the command). */
static const struct {
	const char *key, *command;
} default_binds[] = {
    {"c", "new-shell"},
    {"n", "next-shell"},
    {"p", "previous-shell"},
    {"s", "choose-session"},
    {"x", "confirm-close-shell"},
    {"z", "zoom"},
    {"[", "copy-mode"},
    {"]", "paste"},
    {"d", "detach"},
    {"?", "help"},
    {":", "command-prompt"},
    {"k", "signal-menu"},
    {"u", "upload"},
    {"g", "download"},
    {"t", "transfers"},
    {"w", "grid"},
    {"b", "toggle-sidebar"},
    {"C-b", "send-prefix"},
    {"r", "refresh"},
    {"(", "previous-session"},
    {")", "next-session"},
    {"Up", "previous-shell-in-list"},
    {"Down", "next-shell-in-list"},
    {"PPage", "copy-mode -u"},
    {"B", "broadcast"},
    {"T", "takeover"},
    {"R", "replay"},
    {"C", "console"},
    {"N", "new-session"},
    {"X", "confirm-remove-session"},
};

/* Add an error for file:line. */
static void config_error(struct config *cfg, const char *file, int line,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void
config_error(
    struct config *cfg, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	char *msg, *s;

	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	if (line > 0)
		xasprintf(&s, "%s:%d: %s", file, line, msg);
	else
		xasprintf(&s, "%s: %s", file, msg);
	free(msg);
	cfg->errors =
	    xreallocarray(cfg->errors, cfg->nerrors + 1, sizeof *cfg->errors);
	cfg->errors[cfg->nerrors++] = s;
}

/* Bind key to command in the prefix table (replacing its binding). */
static void
config_bind(struct config *cfg, int key, const char *command)
{
	for (size_t i = 0; i < cfg->nbinds; i++) {
		if (cfg->binds[i].key == key) {
			free(cfg->binds[i].command);
			cfg->binds[i].command = xstrdup(command);
			return;
		}
	}
	cfg->binds =
	    xreallocarray(cfg->binds, cfg->nbinds + 1, sizeof *cfg->binds);
	cfg->binds[cfg->nbinds].key = key;
	cfg->binds[cfg->nbinds++].command = xstrdup(command);
}

/* Remove key's binding, if any. */
static void
config_unbind(struct config *cfg, int key)
{
	for (size_t i = 0; i < cfg->nbinds; i++) {
		if (cfg->binds[i].key == key) {
			free(cfg->binds[i].command);
			memmove(&cfg->binds[i], &cfg->binds[i + 1],
			    (cfg->nbinds - i - 1) * sizeof *cfg->binds);
			cfg->nbinds--;
			return;
		}
	}
}

/* The command bound to key, or NULL. */
const char *
config_binding(const struct config *cfg, int key)
{
	for (size_t i = 0; i < cfg->nbinds; i++)
		if (cfg->binds[i].key == key)
			return cfg->binds[i].command;
	return NULL;
}

/* Defaults: prefix C-b, the default theme and key table. */
void
config_defaults(struct config *cfg)
{
	char *cause = NULL;
	int key;

	memset(cfg, 0, sizeof *cfg);
	cfg->prefix = 0x02;
	cfg->theme = xstrdup("default");
	cfg->scrollback = CONFIG_SCROLLBACK_DEFAULT;
	cfg->sidebar_width = CONFIG_SIDEBAR_DEFAULT;
	cfg->sidebar = 1;
	cfg->mouse = 1;
	for (size_t i = 0; i < nitems(default_binds); i++) {
		if (key_parse(default_binds[i].key, &key, &cause) != 0)
			NEVER("a default binding's key does not parse");
		config_bind(cfg, key, default_binds[i].command);
	}
	for (int d = 0; d <= 9; d++) {
		char cmd[32];
		snprintf(cmd, sizeof cmd, "select-shell %d", d);
		config_bind(cfg, '0' + d, cmd);
	}
}

/* Free what cfg holds. */
void
config_free(struct config *cfg)
{
	for (size_t i = 0; i < cfg->nbinds; i++)
		free(cfg->binds[i].command);
	free(cfg->binds);
	for (size_t i = 0; i < cfg->nerrors; i++)
		free(cfg->errors[i]);
	free(cfg->errors);
	free(cfg->theme);
	free(cfg->group_by);
	memset(cfg, 0, sizeof *cfg);
}

/* on/off (also yes/no, 1/0); -1 if neither. */
static int
parse_flag(const char *s)
{
	if (!strcmp(s, "on") || !strcmp(s, "yes") || !strcmp(s, "1"))
		return 1;
	if (!strcmp(s, "off") || !strcmp(s, "no") || !strcmp(s, "0"))
		return 0;
	return -1;
}

/* Split a line into words (quotes group, # starts a comment); -1 on an
 * unterminated quote. */
static int
split_line(const char *s, char ***out, int *n)
{
	char **v = xcalloc(strlen(s) + 1, sizeof *v);
	char *w = xmalloc(strlen(s) + 1);
	int c = 0;

	while (*s != '\0') {
		size_t len = 0;
		char q = 0;
		while (*s == ' ' || *s == '\t' || *s == '\r')
			s++;
		if (*s == '\0' || *s == '#')
			break;
		for (; *s != '\0' &&
		     (q || (*s != ' ' && *s != '\t' && *s != '\r'));
		     s++) {
			if (q != 0 && *s == q)
				q = 0;
			else if (q == 0 && (*s == '"' || *s == '\''))
				q = *s;
			else
				w[len++] = *s;
		}
		if (q != 0) {
			for (int i = 0; i < c; i++)
				free(v[i]);
			free(v);
			free(w);
			return -1;
		}
		v[c++] = xstrndup(w, len);
	}
	free(w);
	*out = v;
	*n = c;
	return 0;
}

/* `set NAME VALUE`. */
static void
config_set(
    struct config *cfg, const char *file, int line, int argc, char **argv)
{
	const char *name = argv[1], *val = argv[2];
	char *cause = NULL, *end;
	long n;
	int f;

	if (argc != 3) {
		config_error(
		    cfg, file, line, "set needs an option and a value");
		return;
	}
	if (strcmp(name, "prefix") == 0) {
		if (key_parse(val, &cfg->prefix, &cause) != 0) {
			config_error(cfg, file, line, "%s", cause);
			free(cause);
		}
	} else if (strcmp(name, "theme") == 0) {
		free(cfg->theme);
		cfg->theme = xstrdup(val);
	} else if (strcmp(name, "scrollback") == 0) {
		long long v;

		if (option_size_bytes(
		        "scrollback", val, 4096, 1LL << 30, &v, &cause) != 0)
			config_error(cfg, file, line,
			    "bad value \"%s\" for scrollback: want 4K-1G", val);
		else
			cfg->scrollback = (size_t)v;
		free(cause);
		cause = NULL;
	} else if (strcmp(name, "sidebar-width") == 0) {
		n = strtol(val, &end, 10);
		if (*end != '\0' || n < SIDEBAR_MIN_W || n > SIDEBAR_MAX_W)
			config_error(cfg, file, line,
			    "bad value \"%s\" for sidebar-width: want %d-%d",
			    val, SIDEBAR_MIN_W, SIDEBAR_MAX_W);
		else
			cfg->sidebar_width = (int)n;
	} else if (strcmp(name, "group-by") == 0) {
		if (*val != '\0' && !label_key_valid(val))
			config_error(cfg, file, line,
			    "bad value \"%s\" for group-by: want a label key",
			    val);
		else {
			free(cfg->group_by);
			cfg->group_by = *val != '\0' ? xstrdup(val) : NULL;
		}
	} else if (strcmp(name, "sidebar") == 0 || strcmp(name, "mouse") == 0) {
		if ((f = parse_flag(val)) < 0)
			config_error(cfg, file, line,
			    "bad value \"%s\" for %s: want on or off", val,
			    name);
		else if (name[0] == 's')
			cfg->sidebar = f;
		else
			cfg->mouse = f;
	} else
		config_error(cfg, file, line, "unknown option \"%s\"", name);
}

/* Apply one line. */
static void
config_line(struct config *cfg, const char *file, int line, const char *text)
{
	char **argv, *cause = NULL, *cmd;
	int argc, key;
	size_t len = 0;

	if (split_line(text, &argv, &argc) != 0) {
		config_error(cfg, file, line, "unterminated quote");
		return;
	}
	if (argc == 0)
		;
	else if (strcmp(argv[0], "set") == 0 ||
	    strcmp(argv[0], "set-option") == 0)
		config_set(cfg, file, line, argc, argv);
	else if (strcmp(argv[0], "bind") == 0 ||
	    strcmp(argv[0], "bind-key") == 0) {
		if (argc < 3)
			config_error(
			    cfg, file, line, "bind needs a key and a command");
		else if (key_parse(argv[1], &key, &cause) != 0)
			config_error(cfg, file, line, "%s", cause);
		else {
			for (int i = 2; i < argc; i++)
				len += strlen(argv[i]) + 1;
			cmd = xcalloc(len + 1, 1);
			for (int i = 2; i < argc; i++) {
				if (i > 2)
					strcat(cmd, " ");
				strcat(cmd, argv[i]);
			}
			config_bind(cfg, key, cmd);
			free(cmd);
		}
	} else if (strcmp(argv[0], "unbind") == 0 ||
	    strcmp(argv[0], "unbind-key") == 0) {
		if (argc != 2)
			config_error(cfg, file, line, "unbind needs a key");
		else if (key_parse(argv[1], &key, &cause) != 0)
			config_error(cfg, file, line, "%s", cause);
		else
			config_unbind(cfg, key);
	} else
		config_error(
		    cfg, file, line, "unknown command \"%s\"", argv[0]);
	free(cause);
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	free(argv);
}

/* Apply every line of text; file names the source in errors. */
void
config_parse(struct config *cfg, const char *text, const char *file)
{
	int line = 0;

	while (*text != '\0') {
		const char *nl = strchr(text, '\n');
		size_t len = nl ? (size_t)(nl - text) : strlen(text);
		char *l = xstrndup(text, len);
		config_line(cfg, file, ++line, l);
		free(l);
		text += len + (nl ? 1 : 0);
	}
}

/* A whole text file into *text (caller frees); 0, or -errno. */
int
config_read_file(const char *path, char **text)
{
	FILE *f = fopen(path, "r");
	size_t len = 0, n;
	char buf[4096];
	int err;

	*text = NULL;
	if (f == NULL)
		return -errno;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
		*text = xrealloc(*text, len + n + 1);
		memcpy(*text + len, buf, n);
		len += n;
	}
	err = ferror(f) ? (errno != 0 ? errno : EIO) : 0;
	fclose(f);
	if (err != 0) {
		free(*text);
		*text = NULL;
		return -err;
	}
	if (*text == NULL)
		*text = xstrdup("");
	else
		(*text)[len] = '\0';
	return 0;
}

/*
 * Read and apply path. A missing file is no error (0); an unreadable one
 * adds an error and returns -1.
 */
int
config_load(struct config *cfg, const char *path)
{
	const char *base = strrchr(path, '/');
	char *text;
	int rc = config_read_file(path, &text);

	if (rc == -ENOENT)
		return 0;
	if (rc != 0) {
		config_error(cfg, path, 0, "%s", strerror(-rc));
		return -1;
	}
	/* errors name the file as the user calls it: vmux.conf:3: */
	config_parse(cfg, text, base != NULL ? base + 1 : path);
	free(text);
	return 0;
}

/* rel under vmux's config directory, $XDG_CONFIG_HOME/vmux (else
 * ~/.config/vmux); caller frees; NULL without XDG_CONFIG_HOME or HOME. */
char *
config_file(const char *rel)
{
	const char *x = getenv("XDG_CONFIG_HOME"), *h = getenv("HOME");
	char *p;

	if (x != NULL && *x == '/')
		xasprintf(&p, "%s/vmux/%s", x, rel);
	else if (h != NULL && *h != '\0')
		xasprintf(&p, "%s/.config/vmux/%s", h, rel);
	else
		p = NULL;
	return p;
}

/* The config file's path (caller frees); NULL without XDG or HOME. */
char *
config_path(void)
{
	return config_file("vmux.conf");
}
