/*
 * labels.c: session labels and the selectors that pick sessions by them.
 *
 * A label is KEY=VALUE (`vmux new --label class=cs101`, several per
 * session), kept in the session's record as those strings. A selector is
 * kubectl's equality-based syntax: terms joined by commas, all of which
 * must hold: KEY=VALUE (or KEY==VALUE), KEY!=VALUE (also true where KEY is
 * unset), KEY (set), !KEY (unset). Names may also be globs (`student-*`,
 * fnmatch). Pure: no I/O; the caller owns what it gets.
 */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "session.h"

/* Is c allowed in a key (first: letter or digit)? */
static int
key_char(char c, int first)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return 1;
	return !first && (c == '.' || c == '_' || c == '-' || c == '/');
}

/* Is c allowed in a value? */
static int
value_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

/* Check key[0..n); 0 or -1 with cause naming what. */
static int
key_check(const char *what, const char *key, size_t n, char **cause)
{
	if (n == 0 || n > LABEL_PART_MAX) {
		xasprintf(cause, "%s: a label key is 1 to %d characters", what,
		    LABEL_PART_MAX);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (!key_char(key[i], i == 0)) {
			xasprintf(cause,
			    "%s: a label key starts with a letter or digit "
			    "and holds only letters, digits, '.', '_', '-' "
			    "and '/'",
			    what);
			return -1;
		}
	return 0;
}

/* Check value[0..n); 0 or -1 with cause naming what. */
static int
value_check(const char *what, const char *value, size_t n, char **cause)
{
	if (n > LABEL_PART_MAX) {
		xasprintf(cause, "%s: a label value is at most %d characters",
		    what, LABEL_PART_MAX);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (!value_char(value[i])) {
			xasprintf(cause,
			    "%s: a label value holds only letters, digits, "
			    "'.', '_' and '-'",
			    what);
			return -1;
		}
	return 0;
}

/* The printable quote of s for a message (freed by the caller). */
static char *
shown(const char *s)
{
	char *q, *p = str_printable(s, 0);

	if (strlen(p) > 80)
		p[80] = '\0';
	xasprintf(&q, "'%s'", p);
	free(p);
	return q;
}

/* Is key a valid label key (1 to 63 characters of the key's set)? */
int
label_key_valid(const char *key)
{
	size_t n = strlen(key);

	if (n == 0 || n > LABEL_PART_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!key_char(key[i], i == 0))
			return 0;
	return 1;
}

/* Is kv one valid KEY=VALUE label? 0, or -1 with cause. */
int
label_valid(const char *kv, char **cause)
{
	const char *eq = strchr(kv, '=');
	char *what = shown(kv);
	int rc;

	if (eq == NULL) {
		xasprintf(cause, "label %s: KEY=VALUE expected", what);
		free(what);
		return -1;
	}
	rc = key_check(what, kv, (size_t)(eq - kv), cause) != 0 ||
	        value_check(what, eq + 1, strlen(eq + 1), cause) != 0
	    ? -1
	    : 0;
	free(what);
	return rc;
}

/* Check a list of labels: each valid, no key twice. */
int
labels_valid(char *const *labels, size_t n, char **cause)
{
	for (size_t i = 0; i < n; i++) {
		size_t klen = strcspn(labels[i], "=");
		if (label_valid(labels[i], cause) != 0)
			return -1;
		for (size_t j = 0; j < i; j++)
			if (strncmp(labels[j], labels[i], klen + 1) == 0) {
				xasprintf(cause, "label key '%.*s' given twice",
				    (int)klen, labels[i]);
				return -1;
			}
	}
	return 0;
}

/* The value of key among labels, or NULL if it is unset. */
const char *
label_get(char *const *labels, size_t n, const char *key)
{
	size_t klen = strlen(key);

	for (size_t i = 0; i < n; i++)
		if (strncmp(labels[i], key, klen) == 0 &&
		    labels[i][klen] == '=')
			return labels[i] + klen + 1;
	return NULL;
}

/* Free a selector's terms. */
void
selector_free(struct selector *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->terms[i].key);
		free(s->terms[i].value);
	}
	free(s->terms);
	s->terms = NULL;
	s->n = 0;
}

/* Parse one term t[0..n) of selector what into s. */
static int
term_parse(
    const char *what, const char *t, size_t n, struct selector *s, char **cause)
{
	struct selector_term term = {NULL, NULL, SEL_EQ};
	size_t k = 0, v;

	if (n > 0 && t[0] == '!') {
		if (key_check(what, t + 1, n - 1, cause) != 0)
			return -1;
		term.op = SEL_UNSET;
		term.key = xstrndup(t + 1, n - 1);
		goto add;
	}
	while (k < n && t[k] != '=' && t[k] != '!')
		k++;
	if (key_check(what, t, k, cause) != 0)
		return -1;
	term.key = xstrndup(t, k);
	if (k == n) {
		term.op = SEL_SET;
		goto add;
	}
	if (t[k] == '!' && k + 1 < n && t[k + 1] == '=')
		term.op = SEL_NE, v = k + 2;
	else if (t[k] == '=' && k + 1 < n && t[k + 1] == '=')
		v = k + 2;
	else if (t[k] == '=')
		v = k + 1;
	else {
		xasprintf(cause,
		    "%s: KEY=VALUE, KEY!=VALUE, KEY or !KEY "
		    "expected",
		    what);
		free(term.key);
		return -1;
	}
	if (value_check(what, t + v, n - v, cause) != 0) {
		free(term.key);
		return -1;
	}
	term.value = xstrndup(t + v, n - v);
add:
	s->terms = xreallocarray(s->terms, s->n + 1, sizeof *s->terms);
	s->terms[s->n++] = term;
	return 0;
}

/* Parse selector str into s (empty on failure); 0 or -1 with cause. */
int
selector_parse(const char *str, struct selector *s, char **cause)
{
	char *what, *why = NULL;
	const char *p = str;

	memset(s, 0, sizeof *s);
	xasprintf(&what, "selector %s", (why = shown(str)));
	free(why);
	if (*str == '\0') {
		xasprintf(cause, "%s: empty", what);
		goto fail;
	}
	for (;;) {
		size_t n = strcspn(p, ",");
		if (n == 0) {
			xasprintf(cause, "%s: an empty term", what);
			goto fail;
		}
		if (term_parse(what, p, n, s, cause) != 0)
			goto fail;
		if (p[n] == '\0')
			break;
		p += n + 1;
	}
	free(what);
	return 0;
fail:
	free(what);
	selector_free(s);
	return -1;
}

/* Do labels satisfy every term of s? */
int
selector_match(const struct selector *s, char *const *labels, size_t nlabels)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct selector_term *t = &s->terms[i];
		const char *v = label_get(labels, nlabels, t->key);
		int ok;

		switch (t->op) {
		case SEL_EQ:
			ok = v != NULL && strcmp(v, t->value) == 0;
			break;
		case SEL_NE:
			ok = v == NULL || strcmp(v, t->value) != 0;
			break;
		case SEL_SET:
			ok = v != NULL;
			break;
		default: /* SEL_UNSET */
			ok = v == NULL;
			break;
		}
		if (!ok)
			return 0;
	}
	return 1;
}

/* Is name a glob (it holds *, ? or [) rather than a session's name? */
int
name_is_glob(const char *name)
{
	return strpbrk(name, "*?[") != NULL;
}

/* Does the session name match the glob pattern? */
int
name_glob_match(const char *pattern, const char *name)
{
	return fnmatch(pattern, name, 0) == 0;
}
