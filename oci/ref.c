/*
 * ref.c: image references, as `podman run` and skopeo take them.
 *
 * A word is a transport reference when it starts with one of skopeo's
 * transports (docker://, oci:, oci-archive:, docker-archive:,
 * containers-storage:, docker-daemon:); otherwise the docker grammar:
 * [DOMAIN[:PORT]/]PATH[:TAG][@sha256:HEX], whose first component is a
 * domain only if it holds a '.' or a ':' or is "localhost". Without a
 * domain it is a short name, resolved by registries.c. docker.io's
 * one-component names live under library/, and a name with neither tag nor
 * digest means :latest, as docker and podman read them.
 *
 * The oci_ref owns its strings.
 */
#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "oci.h"

#define REF_NAME_MAX 255 /* the docker grammar's limit on a name */
#define REF_TAG_MAX  128

static const struct {
	const char *prefix;
	enum oci_transport t;
} transports[] = {
    {"docker://", OCI_DOCKER},
    {"oci:", OCI_LAYOUT},
    {"oci-archive:", OCI_LAYOUT_ARCHIVE},
    {"docker-archive:", OCI_DOCKER_ARCHIVE},
    {"containers-storage:", OCI_CONTAINERS_STORAGE},
    {"docker-daemon:", OCI_DOCKER_DAEMON},
};

/* Does word start with a transport skopeo knows (or look like one)? */
int
oci_ref_has_transport(const char *word)
{
	for (size_t i = 0; i < nitems(transports); i++) {
		if (strncmp(word, transports[i].prefix,
		        strlen(transports[i].prefix)) == 0)
			return 1;
	}
	return 0;
}

/* Free a reference's strings (the struct is the caller's). */
void
oci_ref_free(struct oci_ref *r)
{
	free(r->text);
	free(r->source);
	free(r->domain);
	free(r->path);
	free(r->tag);
	free(r->digest);
	memset(r, 0, sizeof *r);
}

/* Is s[0..n) a path component: [a-z0-9]+ joined by '.', '_', "__", '-'+? */
static int
ref_component_ok(const char *s, size_t n)
{
	size_t i = 0;

	if (n == 0 ||
	    !(islower((unsigned char)s[0]) || isdigit((unsigned char)s[0])))
		return 0;
	while (i < n) {
		while (i < n &&
		    (islower((unsigned char)s[i]) ||
		        isdigit((unsigned char)s[i])))
			i++;
		if (i == n)
			return 1;
		if (s[i] == '.' || (s[i] == '_' && s[i + 1] != '_'))
			i++;
		else if (s[i] == '_' && i + 1 < n && s[i + 1] == '_')
			i += 2;
		else if (s[i] == '-')
			while (i < n && s[i] == '-')
				i++;
		else
			return 0;
		if (i == n ||
		    !(islower((unsigned char)s[i]) ||
		        isdigit((unsigned char)s[i])))
			return 0;
	}
	return 1;
}

/* Is s[0..n) a domain: host labels and '.', an optional :PORT? */
static int
ref_domain_ok(const char *s, size_t n)
{
	const char *colon = memchr(s, ':', n);
	size_t host = colon ? (size_t)(colon - s) : n;

	if (host == 0)
		return 0;
	for (size_t i = 0; i < host; i++) {
		if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '-')
			return 0;
	}
	if (colon != NULL) {
		size_t k = n - host - 1;

		if (k == 0 || k > 5)
			return 0;
		for (size_t i = host + 1; i < n; i++) {
			if (!isdigit((unsigned char)s[i]))
				return 0;
		}
	}
	return 1;
}

/* Is a digest "sha256:" and 64 lowercase hex digits? */
int
oci_digest_valid(const char *d)
{
	if (strncmp(d, "sha256:", 7) != 0 || strlen(d) != 71)
		return 0;
	for (const char *p = d + 7; *p; p++) {
		if (!isdigit((unsigned char)*p) && !(*p >= 'a' && *p <= 'f'))
			return 0;
	}
	return 1;
}

/* Is a tag [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}? */
static int
ref_tag_ok(const char *t)
{
	size_t n = strlen(t);

	if (n == 0 || n > REF_TAG_MAX || t[0] == '.' || t[0] == '-')
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (!isalnum((unsigned char)t[i]) && t[i] != '_' &&
		    t[i] != '.' && t[i] != '-')
			return 0;
	}
	return 1;
}

/* docker.io keeps its one-component names under library/, as docker and
 * podman read them (alpine is docker.io/library/alpine). */
static void
ref_docker_library(struct oci_ref *r)
{
	char *lib;

	if (r->domain == NULL || strcmp(r->domain, "docker.io") != 0 ||
	    strchr(r->path, '/') != NULL)
		return;
	xasprintf(&lib, "library/%s", r->path);
	free(r->path);
	r->path = lib;
}

/* Set text and source from the parts of a docker reference. */
static void
ref_docker_text(struct oci_ref *r)
{
	free(r->text);
	free(r->source);
	xasprintf(&r->text, "%s%s%s%s%s%s%s", r->domain ? r->domain : "",
	    r->domain ? "/" : "", r->path, r->tag ? ":" : "",
	    r->tag ? r->tag : "", r->digest ? "@" : "",
	    r->digest ? r->digest : "");
	xasprintf(&r->source, "docker://%s", r->text);
}

/*
 * Give a short name its domain (name is "DOMAIN" or "DOMAIN/PATH..."
 * from an alias, which replaces the path too). 0 or -1 with cause.
 */
int
oci_ref_set_domain(struct oci_ref *r, const char *name, char **cause)
{
	const char *slash = strchr(name, '/');

	if (slash == NULL) {
		if (!ref_domain_ok(name, strlen(name))) {
			xasprintf(
			    cause, "registry '%s' is not a host name", name);
			return -1;
		}
		free(r->domain);
		r->domain = xstrdup(name);
		ref_docker_library(r);
	} else {
		struct oci_ref full;
		const char *last = strrchr(name, '/');
		int ok = strchr(last, ':') == NULL && strchr(name, '@') == NULL;
		char *why = NULL;

		/* an alias's value is a whole name without tag or digest */
		if (ok && oci_ref_parse(name, &full, &why) == 0) {
			if (full.domain == NULL) {
				oci_ref_free(&full);
				ok = 0;
			}
		} else
			ok = 0;
		free(why);
		if (!ok) {
			xasprintf(cause,
			    "alias '%s' is not a registry and a name (as "
			    "docker.io/library/alpine)",
			    name);
			return -1;
		}
		free(r->domain);
		free(r->path);
		r->domain = full.domain;
		r->path = full.path;
		full.domain = full.path = NULL;
		oci_ref_free(&full);
	}
	ref_docker_text(r);
	return 0;
}

/* Parse the docker grammar's reference (no transport) into r. */
static int
ref_parse_docker(const char *word, struct oci_ref *r, char **cause)
{
	const char *at = strchr(word, '@'), *p, *slash, *colon;
	char *name;
	size_t n;

	r->transport = OCI_DOCKER;
	if (at != NULL) {
		if (!oci_digest_valid(at + 1)) {
			xasprintf(cause,
			    "image reference '%s': the digest must be "
			    "sha256: and 64 hex digits",
			    word);
			return -1;
		}
		r->digest = xstrdup(at + 1);
		name = xstrndup(word, (size_t)(at - word));
	} else
		name = xstrdup(word);
	/* a tag is after the last ':' that follows the last '/' */
	slash = strrchr(name, '/');
	colon = strrchr(slash ? slash : name, ':');
	if (colon != NULL) {
		r->tag = xstrdup(colon + 1);
		name[colon - name] = '\0';
		if (!ref_tag_ok(r->tag)) {
			xasprintf(cause,
			    "image reference '%s': bad tag '%s' (letters, "
			    "digits, '_', '.', '-'; at most %d)",
			    word, r->tag, REF_TAG_MAX);
			free(name);
			return -1;
		}
	} else if (r->digest == NULL)
		r->tag = xstrdup("latest");
	if ((n = strlen(name)) == 0 || n > REF_NAME_MAX) {
		xasprintf(cause, "image reference '%s': %s", word,
		    n == 0 ? "no name" : "name longer than 255");
		free(name);
		return -1;
	}
	slash = strchr(name, '/');
	if (slash != NULL &&
	    (memchr(name, '.', (size_t)(slash - name)) != NULL ||
	        memchr(name, ':', (size_t)(slash - name)) != NULL ||
	        strncmp(name, "localhost/", 10) == 0)) {
		if (!ref_domain_ok(name, (size_t)(slash - name))) {
			xasprintf(cause,
			    "image reference '%s': bad registry '%.*s'", word,
			    (int)(slash - name), name);
			free(name);
			return -1;
		}
		r->domain = xstrndup(name, (size_t)(slash - name));
		p = slash + 1;
	} else
		p = name;
	for (const char *c = p;;) {
		size_t k = strcspn(c, "/");

		if (!ref_component_ok(c, k)) {
			xasprintf(cause,
			    "image reference '%s': bad name '%.*s' (lowercase "
			    "letters and digits joined by '.', '_', '-')",
			    word, (int)k, c);
			free(name);
			return -1;
		}
		if (c[k] == '\0')
			break;
		c += k + 1;
	}
	r->path = xstrdup(p);
	free(name);
	ref_docker_library(r);
	ref_docker_text(r);
	return 0;
}

/*
 * A transport reference other than docker://: its file made absolute
 * (vmux runs skopeo from elsewhere), the rest kept as given.
 */
static int
ref_parse_local(const char *word, size_t plen, enum oci_transport t,
    struct oci_ref *r, char **cause)
{
	const char *rest = word + plen, *colon;
	char *file, *real, *abs;

	r->transport = t;
	if (*rest == '\0') {
		xasprintf(cause, "image reference '%s': nothing after '%.*s'",
		    word, (int)plen, word);
		return -1;
	}
	if (t == OCI_CONTAINERS_STORAGE || t == OCI_DOCKER_DAEMON) {
		r->text = xstrdup(word);
		r->source = xstrdup(word);
		return 0;
	}
	colon = strchr(rest, ':');
	file = colon ? xstrndup(rest, (size_t)(colon - rest)) : xstrdup(rest);
	if ((real = realpath(file, NULL)) == NULL) {
		xasprintf(
		    cause, "image reference '%s': %s: not found", word, file);
		free(file);
		return -1;
	}
	xasprintf(&abs, "%.*s%s%s", (int)plen, word, real, colon ? colon : "");
	free(real);
	free(file);
	r->text = abs;
	r->source = xstrdup(abs);
	return 0;
}

/*
 * Parse word into r (cleared first). A docker reference without a domain
 * is left short (r->domain NULL): oci_ref_resolve qualifies it.
 */
int
oci_ref_parse(const char *word, struct oci_ref *r, char **cause)
{
	int rc = -1;

	memset(r, 0, sizeof *r);
	r->exit = OCI_EXIT_REF;
	for (size_t i = 0; i < nitems(transports); i++) {
		size_t plen = strlen(transports[i].prefix);

		if (strncmp(word, transports[i].prefix, plen) != 0)
			continue;
		if (transports[i].t == OCI_DOCKER)
			rc = ref_parse_docker(word + plen, r, cause);
		else
			rc = ref_parse_local(
			    word, plen, transports[i].t, r, cause);
		goto out;
	}
	if (strstr(word, "://") != NULL) {
		xasprintf(cause,
		    "image reference '%s': unknown transport (vmux takes "
		    "docker://, oci:, oci-archive:, docker-archive:, "
		    "containers-storage:, docker-daemon:)",
		    word);
		goto out;
	}
	rc = ref_parse_docker(word, r, cause);
out:
	if (rc != 0) {
		int exit = r->exit;

		oci_ref_free(r);
		r->exit = exit;
	}
	return rc;
}

/* Parse --pull's word (podman's: always, missing, never). */
int
oci_pull_policy_parse(const char *s, enum oci_pull_policy *p, char **cause)
{
	if (strcmp(s, "missing") == 0)
		*p = OCI_PULL_MISSING;
	else if (strcmp(s, "always") == 0)
		*p = OCI_PULL_ALWAYS;
	else if (strcmp(s, "never") == 0)
		*p = OCI_PULL_NEVER;
	else {
		xasprintf(cause,
		    "invalid --pull '%s': want always, missing or never", s);
		return -1;
	}
	return 0;
}
