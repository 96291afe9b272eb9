/*
 * test_oci.c: image references and short names (oci/ref.c,
 * oci/registries.c): the docker grammar, docker.io's library/, transports,
 * malformed words refused by name, and registries.conf's aliases and
 * search list, with an ambiguous short name an error naming the choices.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "oci/oci.h"
#include "unit.h"

/* Parse word and check its text (NULL: expect a failure naming why). */
static int
parse_is(const char *word, const char *text, const char *why)
{
	struct oci_ref r;
	char *cause = NULL;
	int ok;

	if (oci_ref_parse(word, &r, &cause) != 0) {
		ok = text == NULL && why != NULL && strstr(cause, why) != NULL;
		if (!ok)
			fprintf(stderr, "    %s: %s\n", word, cause);
		free(cause);
		return ok;
	}
	ok = text != NULL && strcmp(r.text, text) == 0;
	if (!ok)
		fprintf(stderr, "    %s -> %s\n", word, r.text);
	oci_ref_free(&r);
	return ok;
}

TEST(oci_references_parse_as_docker_reads_them)
{
	CHECK(parse_is(
	    "docker.io/alpine", "docker.io/library/alpine:latest", NULL));
	CHECK(parse_is("docker.io/library/python:3.12-slim",
	    "docker.io/library/python:3.12-slim", NULL));
	CHECK(parse_is(
	    "localhost:5000/team/img:v1", "localhost:5000/team/img:v1", NULL));
	CHECK(parse_is(
	    "ghcr.io/o/i@sha256:"
	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	    "ghcr.io/o/i@sha256:"
	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	    NULL));
	CHECK(parse_is("docker://quay.io/a/b:c", "quay.io/a/b:c", NULL));
	CHECK(parse_is("alpine:3", "alpine:3", NULL)); /* short: unresolved */
	CHECK(parse_is("Alpine", NULL, "bad name 'Alpine'"));
	CHECK(parse_is("alpine:", NULL, "bad tag"));
	CHECK(parse_is("a@sha256:12", NULL, "digest"));
	CHECK(parse_is("ftp://x/y", NULL, "unknown transport"));
	CHECK(parse_is("oci:/no/such/dir", NULL, "not found"));
	CHECK(parse_is("a//b", NULL, "bad name"));
}

/* Resolve word with registries.conf text conf; its text or NULL+cause. */
static char *
resolve(const char *conf, const char *word, char **cause)
{
	char path[] = "/tmp/vmux-unit-regconf.XXXXXX", *out = NULL;
	struct oci_ref r;
	int fd = mkstemp(path);

	if (fd < 0 || write_all(fd, conf, strlen(conf)) < 0)
		return NULL;
	close(fd);
	setenv("CONTAINERS_REGISTRIES_CONF", path, 1);
	if (oci_ref_parse(word, &r, cause) == 0 &&
	    oci_ref_resolve(&r, cause) == 0)
		out = xstrdup(r.text);
	oci_ref_free(&r);
	unlink(path);
	unsetenv("CONTAINERS_REGISTRIES_CONF");
	return out;
}

TEST(oci_short_names_resolve_by_alias_or_one_registry)
{
	char *cause = NULL, *t;

	t = resolve(
	    "unqualified-search-registries = [\"docker.io\"]\n"
	    "[aliases]\n  \"alpine\" = \"reg.example:5000/lib/alpine\"\n",
	    "alpine:3", &cause);
	CHECK_STR(t, "reg.example:5000/lib/alpine:3");
	free(t);
	t = resolve("# comment\nunqualified-search-registries = [\n"
	            "  \"docker.io\", # the hub\n]\n",
	    "busybox", &cause);
	CHECK_STR(t, "docker.io/library/busybox:latest");
	free(t);
	t = resolve("unqualified-search-registries = [\"quay.io\", "
	            "\"docker.io\"]\n",
	    "python:3", &cause);
	CHECK(t == NULL);
	CHECK(strstr(cause, "ambiguous") != NULL);
	CHECK(strstr(cause, "quay.io/python:3, docker.io/python:3") != NULL);
	free(cause);
	cause = NULL;
	t = resolve("[[registry]]\nprefix = \"x\"\n", "python", &cause);
	CHECK(t == NULL);
	CHECK(strstr(cause, "no alias") != NULL);
	free(cause);
	cause = NULL;
	t = resolve("[aliases]\n\"bad\" = \"no-registry\"\n", "bad", &cause);
	CHECK(t == NULL);
	free(cause);
	cause = NULL;
	t = resolve("unqualified-search-registries = [\"x\"\n", "a", &cause);
	CHECK(t == NULL);
	CHECK(strstr(cause, "TOML") != NULL);
	free(cause);
}

TEST(oci_pull_policies)
{
	enum oci_pull_policy p;
	char *cause = NULL;

	CHECK_INT(oci_pull_policy_parse("never", &p, &cause), 0);
	CHECK_INT(p, OCI_PULL_NEVER);
	CHECK_INT(oci_pull_policy_parse("sometimes", &p, &cause), -1);
	CHECK(strstr(cause, "always, missing or never") != NULL);
	free(cause);
}

TEST(oci_sha256_known_answers)
{
	struct sha256 h;
	char hex[65];

	sha256_init(&h);
	sha256_update(&h, "abc", 3);
	sha256_hex(&h, hex);
	CHECK_STR(hex,
	    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sha256_init(&h);
	for (int i = 0; i < 1000; i++) /* across block edges */
		sha256_update(&h, "abcdefghijklmnopq", 17);
	sha256_hex(&h, hex);
	CHECK_STR(hex,
	    "663717af67827c12233a03ef12a8adfb0c35502fe61f54aa9c0827e30a89b287");
}
