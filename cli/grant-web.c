/*
 * grant-web.c: `vmux grant NAME --web`, `vmux revoke NAME --web`, `vmux
 * grants --web`: links that open one session's shell in a browser
 * (web/grants.c keeps them; `vmux web` serves them).
 *
 * The link is printed once: only the token's SHA-256 is kept, so a lost
 * link is revoked and granted again, never shown again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "proto/attach.h"
#include "session/session.h"
#include "web/web.h"
#include "cli.h"

/* Options of grant that are SSH's alone. */
static const char *const ssh_only[] = {"key", "authorized-keys", "allow-root"};

/* vmux grant NAME --web [--read-only] [--as L] [--shell ID] [--expires D]. */
int
grant_web_exec(struct args *a)
{
	const char *name = a->argv[0], *label = args_get(a, "as");
	const char *shell = args_get(a, "shell"), *exp = args_get(a, "expires");
	struct web_grant g;
	char *cause = NULL, *home, *instance = NULL, *token, *base;
	long long secs = 0;
	int rc;

	for (size_t i = 0; i < nitems(ssh_only); i++)
		if (args_get(a, ssh_only[i]) != NULL ||
		    args_has(a, ssh_only[i])) {
			return cli_usage_error(a->entry,
			    "--%s is for SSH grants, not --web", ssh_only[i]);
		}
	if (shell == NULL)
		shell = "main";
	if (session_name_valid(name, &cause) != 0 ||
	    shell_id_valid(shell, &cause) != 0 ||
	    (exp != NULL &&
	        option_duration("--expires", exp, &secs, &cause) != 0) ||
	    (label != NULL && !vmux_attach_as_valid(label) &&
	        xasprintf(&cause, "--as '%s': 1-%d letters, digits and ._-@",
	            label, VMUX_ATTACH_AS_MAX) > 0)) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	if ((home = cli_home()) == NULL)
		return EXIT_VMUX;
	{
		char *dir = session_dir(home, name);
		int there = access(dir, F_OK) == 0;

		free(dir);
		if (!there) {
			cli_error("no session %s", name);
			free(home);
			return EXIT_VMUX;
		}
	}
	if (record_instance_get(home, name, &instance, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		free(home);
		return EXIT_VMUX;
	}
	memset(&g, 0, sizeof g);
	g.session = (char *)name;
	g.instance = instance;
	g.shell = (char *)shell;
	g.as = (char *)label;
	g.read_only = args_has(a, "read-only");
	g.created = (int64_t)time(NULL);
	g.expires = secs > 0 ? g.created + secs : 0;
	if (web_grant_add(home, &g, &token, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		free(instance);
		free(home);
		return EXIT_VMUX;
	}
	base = args_get(a, "url") != NULL ? xstrdup(args_get(a, "url"))
	                                  : web_base_url(home);
	while (*base != '\0' && base[strlen(base) - 1] == '/')
		base[strlen(base) - 1] = '\0';
	printf("%s/shell.html#%s\n", base, token);
	fprintf(stderr,
	    "vmux: a %s link to %s's shell %s%s%s (printed once: keep it or "
	    "grant again)\n",
	    g.read_only ? "read-only" : "read-write", name, shell,
	    exp != NULL ? ", expires in " : "", exp != NULL ? exp : "");
	free(base);
	free(token);
	free(instance);
	free(home);
	return 0;
}

/* vmux revoke NAME --web [--id ID]: its open pages close at once. */
int
revoke_web_exec(struct args *a)
{
	const char *name = a->argv[0], *id = args_get(a, "id");
	char *cause = NULL, *home;
	size_t n;
	int rc;

	if (args_get(a, "key") != NULL || args_get(a, "authorized-keys"))
		return cli_usage_error(a->entry,
		    "--key and --authorized-keys are for SSH grants, not "
		    "--web");
	if (session_name_valid(name, &cause) != 0 ||
	    (id != NULL &&
	        (strlen(id) < 4 || strlen(id) > WEB_HASH_HEX ||
	            strspn(id, "0123456789abcdef") != strlen(id)) &&
	        xasprintf(&cause,
	            "--id %s: a grant's id, as vmux grants --web "
	            "shows it",
	            id) > 0)) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	if ((home = cli_home()) == NULL)
		return EXIT_VMUX;
	rc = web_grant_revoke(home, name, id, &n, &cause);
	free(home);
	if (rc != 0) {
		cli_error("%s", cause);
		free(cause);
		return EXIT_VMUX;
	}
	if (n == 0) {
		cli_error("no web grant%s%s to %s", id != NULL ? " " : "",
		    id != NULL ? id : "", name);
		return EXIT_VMUX;
	}
	fprintf(stderr, "vmux: revoked %zu web grant%s to %s\n", n,
	    n == 1 ? "" : "s", name);
	return 0;
}

/* vmux grants [NAME] --web [--json]. */
int
grants_web_exec(struct args *a)
{
	const char *only = a->argc > 0 ? a->argv[0] : NULL;
	struct web_grant *g;
	size_t n;
	char *home;
	cJSON *list = cJSON_CreateArray();

	if ((home = cli_home()) == NULL) {
		cJSON_Delete(list);
		return EXIT_VMUX;
	}
	web_grant_list(home, only, &g, &n);
	free(home);
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		char id[WEB_GRANT_ID_LEN + 1];

		memcpy(id, g[i].hash, WEB_GRANT_ID_LEN);
		id[WEB_GRANT_ID_LEN] = '\0';
		cJSON_AddStringToObject(o, "id", id);
		cJSON_AddStringToObject(o, "session", g[i].session);
		cJSON_AddStringToObject(o, "shell", g[i].shell);
		cJSON_AddStringToObject(
		    o, "mode", g[i].read_only ? "read-only" : "read-write");
		cJSON_AddStringToObject(
		    o, "as", g[i].as != NULL ? g[i].as : g[i].session);
		cJSON_AddNumberToObject(o, "created", (double)g[i].created);
		cJSON_AddNumberToObject(o, "expires", (double)g[i].expires);
		cJSON_AddItemToArray(list, o);
		web_grant_free(&g[i]);
	}
	free(g);
	if (args_has(a, "json")) {
		char *s = cJSON_Print(list);
		printf("%s\n", s);
		free(s);
	} else {
		const cJSON *o;

		printf("%-12s  %-20s  %-10s  %-10s  %-16s  %s\n", "ID",
		    "SESSION", "SHELL", "MODE", "AS", "EXPIRES");
		cJSON_ArrayForEach(o, list)
		{
			double e =
			    cJSON_GetObjectItem(o, "expires")->valuedouble;
			char when[32] = "never";

			if (e > 0) {
				time_t t = (time_t)e;
				strftime(when, sizeof when, "%Y-%m-%d %H:%M",
				    localtime(&t));
			}
			printf("%-12s  %-20s  %-10s  %-10s  %-16s  %s\n",
			    cJSON_GetObjectItem(o, "id")->valuestring,
			    cJSON_GetObjectItem(o, "session")->valuestring,
			    cJSON_GetObjectItem(o, "shell")->valuestring,
			    cJSON_GetObjectItem(o, "mode")->valuestring,
			    cJSON_GetObjectItem(o, "as")->valuestring, when);
		}
	}
	cJSON_Delete(list);
	return 0;
}
