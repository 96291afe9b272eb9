/*
 * grants.c: the web links, one file per grant.
 *
 * A link carries a random token (192 bits, base64url) after its '#', so
 * the browser never sends it in a request line or a Referer, and no proxy
 * logs it; the page hands it to the server in its first WebSocket message.
 * The server keeps only SHA-256 of each token: a grant is the file
 * HOME/web/grants/HASH.json (0600, in a 0700 folder), found by hashing
 * the token a page gives. Revoking deletes the file; the server watches the
 * folder and closes the grant's sockets at once. Callers own what these
 * functions return.
 */
#include <sys/random.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>

#include "common/common.h"
#include "session/session.h"
#include "web.h"

#define GRANT_FILE_MAX 8192

static const char b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* A new token: WEB_TOKEN_CHARS of base64url from the kernel's random. */
char *
web_token_new(void)
{
	unsigned char b[WEB_TOKEN_CHARS * 3 / 4];
	char *s = xmalloc(WEB_TOKEN_CHARS + 1);
	size_t got = 0;
	ssize_t n;

	while (got < sizeof b) {
		n = getrandom(b + got, sizeof b - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			fatalx("getrandom: %s",
			    strerror(errno)); /* can't happen */
		got += (size_t)n;
	}
	for (size_t i = 0, o = 0; i < sizeof b; i += 3) {
		uint32_t v =
		    (uint32_t)b[i] << 16 | (uint32_t)b[i + 1] << 8 | b[i + 2];
		for (int k = 3; k >= 0; k--)
			s[o++] = b64url[(v >> (6 * k)) & 63];
	}
	s[WEB_TOKEN_CHARS] = '\0';
	return s;
}

/* Is token shaped as web_token_new makes them? */
int
web_token_valid(const char *token)
{
	return token != NULL && strlen(token) == WEB_TOKEN_CHARS &&
	    strspn(token, b64url) == WEB_TOKEN_CHARS;
}

/* SHA-256 of token, in hex. */
void
web_token_hash(const char *token, char out[WEB_HASH_HEX + 1])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	if (EVP_Digest(token, strlen(token), md, &len, EVP_sha256(), NULL) !=
	        1 ||
	    len != WEB_HASH_HEX / 2)
		fatalx("SHA-256 failed"); /* can't happen */
	for (unsigned int i = 0; i < len; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* HOME/web/grants. */
char *
web_grants_dir(const char *home)
{
	char *d;

	xasprintf(&d, "%s/web/grants", home);
	return d;
}

/* Make HOME/web/grants (0700), and HOME itself on a first run, if
 * missing; 0, or -1 with cause. */
int
web_grants_mkdir(const char *home, char **cause)
{
	char *dir = web_grants_dir(home);
	int error = mkdir_p(dir, 0700);

	if (error != 0)
		xasprintf(cause, "cannot make %s: %s", dir, strerror(-error));
	free(dir);
	return error == 0 ? 0 : -1;
}

/*
 * The text of the small file path into buf (size bytes, NUL-terminated;
 * a symlink is not followed). Its length, or -1.
 */
static ssize_t
file_text(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read_full(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/* Is s WEB_HASH_HEX lowercase hex digits? */
static int
hash_valid(const char *s)
{
	return strlen(s) == WEB_HASH_HEX &&
	    strspn(s, "0123456789abcdef") == WEB_HASH_HEX;
}

/* A string field of o, copied, or NULL. */
static char *
field_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? xstrdup(v->valuestring) : NULL;
}

/* A number field of o, or 0. */
static int64_t
field_num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

/*
 * Make a grant for g (its hash is filled in here) and hand back its token.
 * 0, or -1 with cause.
 */
int
web_grant_add(
    const char *home, const struct web_grant *g, char **token, char **cause)
{
	char *dir = web_grants_dir(home), *path, *text;
	char hash[WEB_HASH_HEX + 1];
	cJSON *o;
	int rc;

	*token = NULL;
	if (web_grants_mkdir(home, cause) != 0) {
		free(dir);
		return -1;
	}
	*token = web_token_new();
	web_token_hash(*token, hash);
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "session", g->session);
	if (g->instance != NULL)
		cJSON_AddStringToObject(o, "instance", g->instance);
	cJSON_AddStringToObject(o, "shell", g->shell);
	if (g->as != NULL)
		cJSON_AddStringToObject(o, "as", g->as);
	cJSON_AddBoolToObject(o, "read_only", g->read_only);
	cJSON_AddNumberToObject(o, "created", (double)g->created);
	cJSON_AddNumberToObject(o, "expires", (double)g->expires);
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	xasprintf(&path, "%s/%s.json", dir, hash);
	rc = file_replace(path, text, strlen(text), 0600);
	if (rc != 0) {
		xasprintf(cause, "cannot write %s: %s", path, strerror(errno));
		free(*token);
		*token = NULL;
	}
	free(text);
	free(path);
	free(dir);
	return rc == 0 ? 0 : -1;
}

/*
 * Read the grant whose token hashes to hash. 0, or -1 if there is none, it
 * expired, or its file is not one vmux wrote.
 */
int
web_grant_by_hash(const char *home, const char *hash, struct web_grant *g)
{
	char *dir, *path, buf[GRANT_FILE_MAX];
	ssize_t n;
	cJSON *o;

	memset(g, 0, sizeof *g);
	if (!hash_valid(hash))
		return -1;
	dir = web_grants_dir(home);
	xasprintf(&path, "%s/%s.json", dir, hash);
	free(dir);
	n = file_text(path, buf, sizeof buf);
	free(path);
	if (n <= 0 || (o = cJSON_Parse(buf)) == NULL)
		return -1;
	memcpy(g->hash, hash, sizeof g->hash);
	g->session = field_str(o, "session");
	g->instance = field_str(o, "instance");
	g->shell = field_str(o, "shell");
	g->as = field_str(o, "as");
	g->read_only =
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "read_only"));
	g->created = field_num(o, "created");
	g->expires = field_num(o, "expires");
	cJSON_Delete(o);
	if (g->session == NULL || g->shell == NULL ||
	    (g->expires != 0 && g->expires <= (int64_t)time(NULL))) {
		web_grant_free(g);
		return -1;
	}
	return 0;
}

/* Is the grant of hash still there and unexpired? */
int
web_grant_live(const char *home, const char *hash)
{
	struct web_grant g;

	if (web_grant_by_hash(home, hash, &g) != 0)
		return 0;
	web_grant_free(&g);
	return 1;
}

/* The grants (of session, or all), sorted by when made: *out, *n. */
int
web_grant_list(
    const char *home, const char *session, struct web_grant **out, size_t *n)
{
	char *dir = web_grants_dir(home);
	DIR *d = opendir(dir);
	struct dirent *e;

	*out = NULL;
	*n = 0;
	free(dir);
	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		char hash[WEB_HASH_HEX + 1];
		struct web_grant g;
		size_t len = strlen(e->d_name);

		if (len != WEB_HASH_HEX + 5 ||
		    strcmp(e->d_name + WEB_HASH_HEX, ".json") != 0)
			continue;
		memcpy(hash, e->d_name, WEB_HASH_HEX);
		hash[WEB_HASH_HEX] = '\0';
		if (web_grant_by_hash(home, hash, &g) != 0)
			continue;
		if (session != NULL && strcmp(g.session, session) != 0) {
			web_grant_free(&g);
			continue;
		}
		*out = xreallocarray(*out, *n + 1, sizeof **out);
		(*out)[(*n)++] = g;
	}
	closedir(d);
	for (size_t i = 1; i < *n; i++) /* few: insertion sort */
		for (size_t j = i;
		     j > 0 && (*out)[j - 1].created > (*out)[j].created; j--) {
			struct web_grant t = (*out)[j];
			(*out)[j] = (*out)[j - 1];
			(*out)[j - 1] = t;
		}
	return 0;
}

/*
 * Revoke session's web grants: all, or the one whose id (the hash's first
 * digits, as vmux grants --web shows) is id. Expired grants of the session
 * go too. *n says how many went; 0, or -1 with cause.
 */
int
web_grant_revoke(const char *home, const char *session, const char *id,
    size_t *n, char **cause)
{
	char *dir = web_grants_dir(home), *path;
	DIR *d = opendir(dir);
	struct dirent *e;
	int rc = 0;

	*n = 0;
	if (d == NULL) {
		free(dir);
		return 0;
	}
	while ((e = readdir(d)) != NULL) {
		char buf[GRANT_FILE_MAX], *s;
		cJSON *o;
		int mine;

		if (strlen(e->d_name) != WEB_HASH_HEX + 5 ||
		    strcmp(e->d_name + WEB_HASH_HEX, ".json") != 0)
			continue;
		if (id != NULL && strncmp(e->d_name, id, strlen(id)) != 0)
			continue;
		xasprintf(&path, "%s/%s", dir, e->d_name);
		o = file_text(path, buf, sizeof buf) > 0 ? cJSON_Parse(buf)
		                                         : NULL;
		s = field_str(o, "session");
		mine = s != NULL && strcmp(s, session) == 0;
		free(s);
		cJSON_Delete(o);
		if (mine && unlink(path) != 0) {
			xasprintf(cause, "cannot remove %s: %s", path,
			    strerror(errno));
			rc = -1;
		} else if (mine)
			(*n)++;
		free(path);
		if (rc != 0)
			break;
	}
	closedir(d);
	free(dir);
	return rc;
}

/* Free what a grant holds. */
void
web_grant_free(struct web_grant *g)
{
	free(g->session);
	free(g->instance);
	free(g->shell);
	free(g->as);
	memset(g, 0, sizeof *g);
}

/*
 * The links' start: what the running vmux web wrote in HOME/web/url, else
 * WEB_URL_DEFAULT.
 */
char *
web_base_url(const char *home)
{
	char *path, buf[1024];
	ssize_t n;

	xasprintf(&path, "%s/web/url", home);
	n = file_text(path, buf, sizeof buf);
	free(path);
	if (n <= 0)
		return xstrdup(WEB_URL_DEFAULT);
	buf[strcspn(buf, "\r\n")] = '\0';
	return xstrdup(buf);
}
