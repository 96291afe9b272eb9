/*
 * registries.c: where a short name (`alpine:3`) leads, as podman decides.
 *
 * registries.conf(5) is read as the containers tools read it: the file in
 * $CONTAINERS_REGISTRIES_CONF alone when that is set; otherwise the user's
 * ($XDG_CONFIG_HOME or ~/.config/containers/registries.conf) or else
 * /etc/containers/registries.conf, then the drop-ins of
 * /etc/containers/registries.conf.d and the user's registries.conf.d in
 * name order, later files overriding earlier ones. Two settings matter
 * here: the [aliases] table (short name -> whole name; Debian ships
 * shortnames.conf) and unqualified-search-registries. An alias wins; else
 * one search registry is used; none, or more than one, is an error that
 * names the choices: vmux never guesses which registry a name meant.
 * Mirrors, insecure and blocked registries are skopeo's to honour.
 *
 * Only the TOML this needs is parsed: tables, bare or quoted keys, strings
 * and arrays of strings; anything else is skipped.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "oci.h"

#define CONF_MAX (1 << 20) /* a registries.conf larger than this is odd */

/* What the files said. */
struct regconf {
	char **search; /* unqualified-search-registries */
	size_t nsearch;
	int search_set;
	char **alias_key, **alias_val;
	size_t nalias;
	char *files; /* the files read, for messages */
};

/* Free a list of n strings. */
static void
strs_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Skip spaces, tabs, newlines and comments. */
static const char *
toml_skip(const char *p, const char *end)
{
	while (p < end) {
		if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
			p++;
		else if (*p == '#')
			while (p < end && *p != '\n')
				p++;
		else
			break;
	}
	return p;
}

/* A "..." or '...' string at p into *out; the position after it or NULL. */
static const char *
toml_string(const char *p, const char *end, char **out)
{
	const char *close = p + 1;
	char q = *p++, *o, *s;

	while (close < end && *close != q && *close != '\n')
		close +=
		    (q == '"' && *close == '\\' && close + 1 < end) ? 2 : 1;
	o = s = xmalloc((size_t)(close - p) + 1);
	while (p < end && *p != q && *p != '\n') {
		if (q == '"' && *p == '\\' && p + 1 < end)
			p++;
		*s++ = *p++;
	}
	*s = '\0';
	if (p >= end || *p != q) {
		free(o);
		return NULL;
	}
	*out = o;
	return p + 1;
}

/* Skip a value we do not use, to the end of its line or array. */
static const char *
toml_skip_value(const char *p, const char *end)
{
	int depth = 0;

	while (p < end) {
		if (*p == '[')
			depth++;
		else if (*p == ']')
			depth--;
		else if (*p == '"' || *p == '\'') {
			char *s;
			const char *n = toml_string(p, end, &s);

			if (n == NULL)
				return end;
			free(s);
			p = n;
			continue;
		} else if (*p == '\n' && depth <= 0)
			break;
		p++;
	}
	return p;
}

/* Parse an array of strings at p (after '['). */
static const char *
toml_array(const char *p, const char *end, char ***v, size_t *n)
{
	char *s;

	*v = NULL;
	*n = 0;
	for (;;) {
		p = toml_skip(p, end);
		if (p >= end)
			return NULL;
		if (*p == ']')
			return p + 1;
		if (*p == ',') {
			p++;
			continue;
		}
		if (*p != '"' && *p != '\'')
			return NULL;
		if ((p = toml_string(p, end, &s)) == NULL)
			return NULL;
		*v = xreallocarray(*v, *n + 1, sizeof **v);
		(*v)[(*n)++] = s;
	}
}

/* Set an alias (a later file's replaces an earlier one's). */
static void
regconf_alias(struct regconf *c, char *key, char *val)
{
	for (size_t i = 0; i < c->nalias; i++) {
		if (strcmp(c->alias_key[i], key) == 0) {
			free(c->alias_val[i]);
			c->alias_val[i] = val;
			free(key);
			return;
		}
	}
	c->alias_key = xreallocarray(c->alias_key, c->nalias + 1, sizeof key);
	c->alias_val = xreallocarray(c->alias_val, c->nalias + 1, sizeof val);
	c->alias_key[c->nalias] = key;
	c->alias_val[c->nalias++] = val;
}

/* Read one file's settings into c. A missing file is no error. */
static int
regconf_read(struct regconf *c, const char *path, char **cause)
{
	char *buf = xmalloc(CONF_MAX + 1), *key, *table = xstrdup(""), *val;
	const char *p, *end, *at = NULL;
	ssize_t n;
	FILE *f;

	if ((f = fopen(path, "re")) == NULL) {
		free(buf);
		free(table);
		if (errno == ENOENT)
			return 0;
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	n = (ssize_t)fread(buf, 1, CONF_MAX + 1, f);
	fclose(f);
	if (n > CONF_MAX) {
		xasprintf(cause, "%s: larger than %d bytes", path, CONF_MAX);
		goto fail;
	}
	buf[n] = '\0';
	xasprintf(&val, "%s%s%s", c->files ? c->files : "",
	    c->files ? ", " : "", path);
	free(c->files);
	c->files = val;
	p = buf;
	end = buf + n;
	while ((p = toml_skip(p, end)) < end) {
		at = p;
		if (*p == '[') { /* [table] or [[array of tables]] */
			const char *close = memchr(p, ']', (size_t)(end - p));

			if (close == NULL)
				goto bad;
			free(table);
			p += p[1] == '[' ? 2 : 1;
			table = xstrndup(p, (size_t)(close - p));
			p = close + 1;
			while (p < end && *p == ']')
				p++;
			continue;
		}
		if (*p == '"' || *p == '\'') {
			if ((p = toml_string(p, end, &key)) == NULL)
				goto bad;
		} else {
			const char *k = p;

			while (p < end && *p != '=' && *p != ' ' &&
			    *p != '\t' && *p != '\n')
				p++;
			key = xstrndup(k, (size_t)(p - k));
		}
		p = toml_skip(p, end);
		if (p >= end || *p != '=') {
			free(key);
			goto bad;
		}
		p = toml_skip(p + 1, end);
		if (*table == '\0' &&
		    strcmp(key, "unqualified-search-registries") == 0 &&
		    p < end && *p == '[') {
			strs_free(c->search, c->nsearch);
			if ((p = toml_array(p + 1, end, &c->search,
			         &c->nsearch)) == NULL) {
				free(key);
				goto bad;
			}
			c->search_set = 1;
			free(key);
		} else if (strcmp(table, "aliases") == 0 && p < end &&
		    (*p == '"' || *p == '\'')) {
			if ((p = toml_string(p, end, &val)) == NULL) {
				free(key);
				goto bad;
			}
			regconf_alias(c, key, val);
		} else {
			free(key);
			p = toml_skip_value(p, end);
		}
	}
	free(buf);
	free(table);
	return 0;
bad:
	xasprintf(cause, "%s: cannot read it as TOML near byte %ld", path,
	    (long)(at - buf));
fail:
	free(buf);
	free(table);
	return -1;
}

/* Read the *.conf files of dir in name order. */
static int
regconf_dropins(struct regconf *c, const char *dir, char **cause)
{
	struct dirent **names;
	char *path;
	int n, rc = 0;

	if ((n = scandir(dir, &names, NULL, alphasort)) < 0)
		return 0;
	for (int i = 0; i < n; i++) {
		size_t len = strlen(names[i]->d_name);

		if (rc == 0 && len > 5 &&
		    strcmp(names[i]->d_name + len - 5, ".conf") == 0) {
			xasprintf(&path, "%s/%s", dir, names[i]->d_name);
			rc = regconf_read(c, path, cause);
			free(path);
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

/* Load every file that applies (see the top of this file). */
static int
regconf_load(struct regconf *c, char **cause)
{
	const char *env = getenv("CONTAINERS_REGISTRIES_CONF");
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	char *user = NULL, *userd = NULL;
	int rc;

	memset(c, 0, sizeof *c);
	if (env != NULL && *env != '\0')
		return regconf_read(c, env, cause);
	if (xdg != NULL && *xdg == '/')
		xasprintf(&user, "%s/containers/registries.conf", xdg);
	else if (home != NULL && *home == '/')
		xasprintf(&user, "%s/.config/containers/registries.conf", home);
	if (user != NULL)
		xasprintf(&userd, "%s.d", user);
	if (user != NULL && access(user, F_OK) == 0)
		rc = regconf_read(c, user, cause);
	else
		rc = regconf_read(c, "/etc/containers/registries.conf", cause);
	if (rc == 0)
		rc = regconf_dropins(
		    c, "/etc/containers/registries.conf.d", cause);
	if (rc == 0 && userd != NULL)
		rc = regconf_dropins(c, userd, cause);
	free(user);
	free(userd);
	return rc;
}

/* Free what regconf_load read. */
static void
regconf_free(struct regconf *c)
{
	strs_free(c->search, c->nsearch);
	strs_free(c->alias_key, c->nalias);
	strs_free(c->alias_val, c->nalias);
	free(c->files);
}

/*
 * Qualify a short docker reference (no registry) by the aliases and
 * search registries; anything else is left as it is. 0 or -1 with cause.
 */
int
oci_ref_resolve(struct oci_ref *r, char **cause)
{
	struct regconf c;
	char *list = NULL, *s, *tail;
	int rc = -1;

	if (r->transport != OCI_DOCKER || r->domain != NULL)
		return 0;
	if (regconf_load(&c, cause) != 0) {
		regconf_free(&c);
		r->exit = OCI_EXIT_REF;
		return -1;
	}
	for (size_t i = 0; i < c.nalias; i++) {
		if (strcmp(c.alias_key[i], r->path) == 0) {
			if (strchr(c.alias_val[i], '/') == NULL) {
				xasprintf(cause,
				    "alias \"%s\" = \"%s\" (in %s) is not a "
				    "registry and a name",
				    c.alias_key[i], c.alias_val[i], c.files);
				goto out;
			}
			rc = oci_ref_set_domain(r, c.alias_val[i], cause);
			goto out;
		}
	}
	if (c.nsearch == 1) {
		rc = oci_ref_set_domain(r, c.search[0], cause);
		goto out;
	}
	xasprintf(&tail, "%s%s%s", r->tag ? ":" : "", r->tag ? r->tag : "",
	    r->digest ? "@..." : "");
	if (c.nsearch == 0)
		xasprintf(cause,
		    "short name '%s%s' has no alias and no "
		    "unqualified-search-registries in %s: give the whole "
		    "name (docker.io/library/%s%s) or add an alias "
		    "(registries.conf(5))",
		    r->path, tail, c.files ? c.files : "no registries.conf",
		    r->path, tail);
	else {
		for (size_t i = 0; i < c.nsearch; i++) {
			xasprintf(&s, "%s%s%s/%s%s", list ? list : "",
			    list ? ", " : "", c.search[i], r->path, tail);
			free(list);
			list = s;
		}
		xasprintf(cause,
		    "short name '%s%s' is ambiguous: it could be %s (the "
		    "unqualified-search-registries of %s); give the whole "
		    "name or add an alias",
		    r->path, tail, list, c.files);
		free(list);
	}
	free(tail);
out:
	if (rc != 0)
		r->exit = OCI_EXIT_REF;
	regconf_free(&c);
	return rc;
}
