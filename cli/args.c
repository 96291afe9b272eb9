/*
 * args.c: parse one command's arguments against its option table.
 *
 * Accepted forms: --name, --name=value, --name value, -c, -c value,
 * -cvalue; options may come before or after positional arguments, "--"
 * ends options, --help/-h is built in. For CMD_ARGV_AFTER_NAME commands
 * (exec) the first non-option after NAME starts the guest command, so
 * `vmux exec NAME ls -l` and `vmux exec NAME -- ls -l` mean the same.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "agent/agent.h"
#include "cli.h"

/* Number of rows in an option table. */
static size_t
opts_count(const struct cmd_opt *opts)
{
	size_t n = 0;

	while (opts != NULL && opts[n].name != NULL)
		n++;
	return n;
}

/* Find a long option by name (len bytes of s); -1 if unknown. */
static int
find_long(const struct cmd_opt *opts, const char *s, size_t len)
{
	size_t i;

	for (i = 0; opts != NULL && opts[i].name != NULL; i++) {
		if (strlen(opts[i].name) == len &&
		    strncmp(opts[i].name, s, len) == 0)
			return (int)i;
	}
	return -1;
}

/* Find a short option; -1 if unknown. */
static int
find_short(const struct cmd_opt *opts, char c)
{
	size_t i;

	for (i = 0; opts != NULL && opts[i].name != NULL; i++) {
		if (opts[i].short_name != 0 && opts[i].short_name == c)
			return (int)i;
	}
	return -1;
}

/* Record one value (or a flag's presence) for option i. */
static void
add_value(struct args *a, int i, const char *value)
{
	struct args_value *v = &a->vals[i];

	v->values =
	    xreallocarray(v->values, (size_t)v->count + 1, sizeof *v->values);
	v->values[v->count++] = value != NULL ? xstrdup(value) : NULL;
}

/* Has a -l (the "selector" option) been given so far? */
static int
selector_given(const struct cmd_entry *e, const struct args *a)
{
	int o = find_long(e->opts, "selector", strlen("selector"));

	return (e->flags & (CMD_NAMES | CMD_NAME_ONE)) && o >= 0 &&
	    a->vals[o].count > 0;
}

/* Parse argv (argv[0] is the command name) into a; 0 or -1 with cause. */
int
args_parse(const struct cmd_entry *e, int argc, char **argv, struct args *a,
    char **cause)
{
	int i, rest = 0, sel_rest = 0, min, max;

	memset(a, 0, sizeof *a);
	a->entry = e;
	a->vals = xcalloc(opts_count(e->opts) + 1, sizeof *a->vals);
	a->argv = xcalloc((size_t)argc + 1, sizeof *a->argv);
	for (i = 1; i < argc; i++) {
		const char *s = argv[i], *value = NULL;
		int o;

		if (rest && sel_rest && a->argc == 1 && strcmp(s, "--") == 0) {
			/* `exec -l SEL NAME -- CMD`: NAME is not a command */
			xasprintf(cause, "'%s' and -l: a NAME or -l, not both",
			    a->argv[0]);
			goto fail;
		}
		if (rest || s[0] != '-' || s[1] == '\0') {
			a->argv[a->argc++] = argv[i];
			/* a command follows the NAME (none with -l) */
			if ((e->flags & CMD_ARGV_AFTER_NAME) &&
			    a->argc >= ((e->flags & CMD_NAME_ONE) &&
			                           selector_given(e, a)
			                       ? 1
			                       : 2)) {
				sel_rest = selector_given(e, a);
				rest = 1;
			}
			continue;
		}
		if (strcmp(s, "--") == 0) {
			rest = 1;
			continue;
		}
		if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
			a->help = 1;
			continue;
		}
		if (s[1] == '-') {
			const char *eq = strchr(s + 2, '=');
			size_t len =
			    eq != NULL ? (size_t)(eq - (s + 2)) : strlen(s + 2);
			o = find_long(e->opts, s + 2, len);
			if (o < 0) {
				xasprintf(cause, "unknown option --%.*s",
				    (int)len, s + 2);
				goto fail;
			}
			if (eq != NULL && e->opts[o].arg == NULL) {
				xasprintf(cause, "--%s takes no value",
				    e->opts[o].name);
				goto fail;
			}
			if (eq != NULL)
				value = eq + 1;
		} else {
			o = find_short(e->opts, s[1]);
			if (o < 0) {
				xasprintf(cause, "unknown option -%c", s[1]);
				goto fail;
			}
			if (s[2] != '\0') {
				if (e->opts[o].arg == NULL) {
					xasprintf(
					    cause, "-%c takes no value", s[1]);
					goto fail;
				}
				value = s + 2;
			}
		}
		if (e->opts[o].arg != NULL && value == NULL) {
			if (i + 1 >= argc) {
				xasprintf(cause, "--%s needs a value (%s)",
				    e->opts[o].name, e->opts[o].arg);
				goto fail;
			}
			value = argv[++i];
		}
		add_value(a, o, value);
		if ((e->flags & CMD_NAME_ONE) && a->argc > 0 &&
		    strcmp(e->opts[o].name, "selector") == 0) {
			xasprintf(cause, "'%s' and -l: a NAME or -l, not both",
			    a->argv[0]);
			goto fail;
		}
	}
	a->argv[a->argc] = NULL;
	if (a->help)
		return 0;
	min = e->min_args;
	max = e->max_args;
	if (selector_given(e, a) && (e->flags & CMD_NAMES))
		min = (e->flags & CMD_FIRST_NOT_NAME) ? 1 : 0; /* -l names */
	else if (selector_given(e, a)) { /* -l is the NAME */
		min = min > 0 ? min - 1 : 0;
		max = max > 0 ? max - 1 : max;
	}
	if (a->argc < min || (max >= 0 && a->argc > max)) {
		char *usage = cmd_usage(e);
		xasprintf(cause, "%s arguments (usage: %s)",
		    a->argc < min ? "missing" : "too many", usage);
		free(usage);
		goto fail;
	}
	return 0;
fail:
	args_free(a);
	return -1;
}

/* Free what args_parse allocated (positionals point into argv). */
void
args_free(struct args *a)
{
	size_t i, n;

	if (a->entry == NULL)
		return;
	n = opts_count(a->entry->opts);
	for (i = 0; a->vals != NULL && i < n; i++) {
		for (int j = 0; j < a->vals[i].count; j++)
			free(a->vals[i].values[j]);
		free(a->vals[i].values);
	}
	free(a->vals);
	free(a->argv);
	for (i = 0; i < a->nowned; i++)
		free(a->owned[i]);
	free(a->owned);
	memset(a, 0, sizeof *a);
}

/* Does a's command have option name, and was it given? */
int
args_has_opt(const struct args *a, const char *name)
{
	int o = find_long(a->entry->opts, name, strlen(name));

	return o >= 0 && a->vals[o].count > 0;
}

/* The values slot of option name, or NULL (a table typo is a bug). */
static const struct args_value *
lookup(const struct args *a, const char *name)
{
	int o = find_long(a->entry->opts, name, strlen(name));

	if (o < 0)
		NEVER("option not in the command's table");
	return &a->vals[o];
}

/* Was option name given? */
int
args_has(const struct args *a, const char *name)
{
	return lookup(a, name)->count > 0;
}

/* The last value given for name, or NULL. */
const char *
args_get(const struct args *a, const char *name)
{
	const struct args_value *v = lookup(a, name);

	return v->count > 0 ? v->values[v->count - 1] : NULL;
}

/* Every value given for a repeatable option. */
char **
args_values(const struct args *a, const char *name, int *n)
{
	const struct args_value *v = lookup(a, name);

	*n = v->count;
	return v->values;
}

/*
 * The options given, as words to pass to another vmux ("--name=value",
 * "--name"), but those named in skip (NULL-terminated, may be NULL).
 * Appended to *v (grown; the words are the caller's to free) at *n.
 */
void
args_flags(const struct args *a, const char *const *skip, char ***v, size_t *n)
{
	for (const struct cmd_opt *o = a->entry->opts; o->name != NULL; o++) {
		const struct args_value *val = &a->vals[o - a->entry->opts];
		const char *const *s = skip;

		while (s != NULL && *s != NULL && strcmp(*s, o->name) != 0)
			s++;
		if (s != NULL && *s != NULL)
			continue;
		for (int i = 0; i < val->count; i++) {
			*v = xreallocarray(*v, *n + 2, sizeof **v);
			if (o->arg != NULL)
				xasprintf(&(*v)[(*n)++], "--%s=%s", o->name,
				    val->values[i]);
			else
				xasprintf(&(*v)[(*n)++], "--%s", o->name);
			(*v)[*n] = NULL;
		}
	}
}

/* Check a KEY=VALUE environment assignment. */
int
args_env_valid(const char *kv, char **cause)
{
	const char *eq = strchr(kv, '=');
	const char *p;

	if (eq == NULL || eq == kv)
		goto bad;
	if (!((kv[0] >= 'A' && kv[0] <= 'Z') ||
	        (kv[0] >= 'a' && kv[0] <= 'z') || kv[0] == '_'))
		goto bad;
	for (p = kv; p < eq; p++) {
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		        (*p >= '0' && *p <= '9') || *p == '_'))
			goto bad;
	}
	return 0;
bad:
	xasprintf(cause,
	    "invalid --env '%s': want KEY=VALUE with KEY made of letters, "
	    "digits and '_'",
	    kv);
	return -1;
}

/* A terminal size "COLSxROWS" (each 1-4096); 0, or -1 with *cause. */
int
args_size(const char *s, int *cols, int *rows, char **cause)
{
	char *safe;
	int n = -1;

	if (sscanf(s, "%dx%d%n", cols, rows, &n) == 2 && n == (int)strlen(s) &&
	    *cols >= 1 && *cols <= 4096 && *rows >= 1 && *rows <= 4096)
		return 0;
	safe = str_printable(s, 0);
	xasprintf(
	    cause, "invalid size '%s': COLSxROWS, each 1-4096 (80x24)", safe);
	free(safe);
	return -1;
}

/*
 * Add --env's K=V words (checked by args_env_valid) to obj as members; a
 * later word for the same key wins, as in a shell.
 */
void
args_env_add(cJSON *obj, char *const *env, int n)
{
	for (int i = 0; i < n; i++) {
		const char *eq = strchr(env[i], '=');
		char *key = xstrndup(env[i], (size_t)(eq - env[i]));

		cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
		cJSON_AddStringToObject(obj, key, eq + 1);
		free(key);
	}
}
