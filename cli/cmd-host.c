/*
 * cmd-host.c: `vmux host ls|add|rm|default|check|disconnect`: the other
 * machines vmux reaches over ssh, kept as `host NAME URL` lines (and one
 * `default-host NAME`) in the settings file (settings.c). The file is
 * rewritten whole through a temporary and rename, so a failed edit leaves
 * it as it was; other lines and comments are kept as they are.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

static int cmd_host_exec(struct args *);

static const struct cmd_opt cmd_host_opts[] = {
    {"default", 0, NULL, 0,
        "with add: commands without -H go to this host from now on"},
    {"json", 0, NULL, 0, "ls: print a JSON array of {name, url, default}"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_host_entry = {
    .name = "host",
    .pre = "ls|add NAME URL|rm NAME|default NAME|check NAME|disconnect NAME",
    .summary = "Name other machines that run vmux, reached over ssh: URL is "
               "ssh://[USER@]HOST[:PORT][/PATH-OF-VMUX]; or a Slurm cluster "
               "whose jobs run the sessions: slurm://[PARTITION][?account=A&"
               "qos=Q&dir=/SHARED]. Then vmux -H NAME "
               "COMMAND, or NAME:SESSION, runs a command there. default makes "
               "one (or local) where commands go without -H; check connects "
               "and checks its vmux; disconnect closes the shared connection.",
    .flags = CMD_THIS_HOST,
    .opts = cmd_host_opts,
    .min_args = 1,
    .max_args = 3,
    .exec = cmd_host_exec,
};

/*
 * Rewrite the settings file: every line for which keep() says 1 stays,
 * then add (if not NULL) is appended. The file a symlink points to is the
 * one rewritten, with its mode, under a lock against another vmux host
 * doing the same. 0 or -1 (said).
 */
static int
host_rewrite(int (*keep)(const char *line, const char *name), const char *name,
    const char *add)
{
	char *path = settings_path(), *real = NULL, *tmp = NULL, *lock = NULL;
	char *dir, *line = NULL;
	size_t cap = 0;
	ssize_t len;
	struct stat st;
	mode_t mode = 0600;
	int rc = -1, fd, lock_fd = -1, last = '\n';
	FILE *in = NULL, *out;

	if (path == NULL) {
		cli_error("no settings file: set HOME or XDG_CONFIG_HOME");
		return -1;
	}
	dir = xstrdup(path);
	*strrchr(dir, '/') = '\0';
	if (mkdir_p(dir, 0700) != 0) {
		cli_error("cannot create %s: %s", dir, strerror(errno));
		goto out;
	}
	real = realpath(path, NULL);
	if (real == NULL && errno != ENOENT) {
		cli_error("%s: %s", path, strerror(errno));
		goto out;
	}
	if (real == NULL)
		real = xstrdup(path);
	xasprintf(&lock, "%s.lock", real);
	lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock_fd < 0 || flock(lock_fd, LOCK_EX) != 0) {
		cli_error("cannot lock %s: %s", lock, strerror(errno));
		goto out;
	}
	if ((in = fopen(real, "re")) == NULL && errno != ENOENT) {
		cli_error("cannot read %s: %s", real, strerror(errno));
		goto out;
	}
	if (in != NULL && fstat(fileno(in), &st) == 0)
		mode = st.st_mode & 07777;
	xasprintf(&tmp, "%s.tmp.%ld", real, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0 || (out = fdopen(fd, "w")) == NULL) {
		cli_error("cannot write %s: %s", tmp, strerror(errno));
		if (fd >= 0)
			close(fd), unlink(tmp);
		goto out;
	}
	fchmod(fd, mode); /* whatever the umask took away */
	while (in != NULL && (len = getline(&line, &cap, in)) > 0) {
		if (keep == NULL || keep(line, name)) {
			fwrite(line, 1, (size_t)len, out);
			last = line[len - 1];
		}
	}
	if (add != NULL) /* never glued to a last line without its newline */
		fprintf(out, "%s%s\n", last == '\n' ? "" : "\n", add);
	if (fflush(out) != 0 || fsync(fileno(out)) != 0) {
		cli_error("cannot write %s: %s", tmp, strerror(errno));
		fclose(out);
		unlink(tmp);
		goto out;
	}
	fclose(out);
	if (rename(tmp, real) != 0) {
		cli_error("cannot replace %s: %s", real, strerror(errno));
		unlink(tmp);
		goto out;
	}
	rc = 0;
out:
	if (in != NULL)
		fclose(in);
	if (lock_fd >= 0)
		close(lock_fd);
	free(line);
	free(lock);
	free(tmp);
	free(real);
	free(dir);
	free(path);
	return rc;
}

/* Does line set key (a word) to name (the next word)? */
static int
host_line_is(const char *line, const char *key, const char *name)
{
	size_t k = strlen(key), n = name != NULL ? strlen(name) : 0;

	line += strspn(line, " \t");
	if (strncmp(line, key, k) != 0 || (line[k] != ' ' && line[k] != '\t'))
		return 0;
	if (name == NULL)
		return 1;
	line += k + strspn(line + k, " \t");
	return strncmp(line, name, n) == 0 &&
	    (line[n] == '\0' || strchr(" \t\n#", line[n]) != NULL);
}

/* keep(): every line but `host NAME ...` and `default-host NAME`. */
static int
host_keep_not_named(const char *line, const char *name)
{
	return !host_line_is(line, "host", name) &&
	    !host_line_is(line, "default-host", name);
}

/* keep(): every line but default-host. */
static int
host_keep_not_default(const char *line, const char *name)
{
	(void)name;
	return !host_line_is(line, "default-host", NULL);
}

/* Is name a configured host? */
static int
host_known(const struct settings *s, const char *name)
{
	for (size_t i = 0; i < s->nhosts; i++) {
		if (strcmp(s->hosts[i].name, name) == 0)
			return 1;
	}
	return 0;
}

/* vmux host ls. */
static int
host_ls(const struct settings *s, int json)
{
	const char *def = s->default_host != NULL ? s->default_host : "local";
	cJSON *arr = cJSON_CreateArray();
	size_t i, w = 5;

	for (i = 0; i < s->nhosts; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", s->hosts[i].name);
		cJSON_AddStringToObject(o, "url", s->hosts[i].url);
		cJSON_AddBoolToObject(
		    o, "default", strcmp(def, s->hosts[i].name) == 0);
		cJSON_AddItemToArray(arr, o);
		if (strlen(s->hosts[i].name) > w)
			w = strlen(s->hosts[i].name);
	}
	if (json) {
		cli_result(arr);
		return 0;
	}
	printf("%-*s  %-7s  %s\n", (int)w, "NAME", "DEFAULT", "URL");
	printf("%-*s  %-7s  %s\n", (int)w, "local",
	    strcmp(def, "local") == 0 ? "*" : "", "(this machine)");
	for (i = 0; i < s->nhosts; i++)
		printf("%-*s  %-7s  %s\n", (int)w, s->hosts[i].name,
		    strcmp(def, s->hosts[i].name) == 0 ? "*" : "",
		    s->hosts[i].url);
	cJSON_Delete(arr);
	return 0;
}

/* vmux host check|disconnect NAME. */
static int
host_reach(const struct settings *s, const char *what, const char *name)
{
	struct host h;
	char *cause = NULL;
	int rc = 0;

	if (host_resolve(name, s, &h, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		return EXIT_VMUX;
	}
	if (h.slurm && strcmp(what, "check") == 0) {
		/* a cluster: ask Slurm what ls would (squeue, the folder) */
		char *words[] = {"ls", "--json"}, *out = NULL, *line;
		char **v = host_ssh_argv(&h, HOST_NO_STDIN, words, 2, &cause);
		int st = v != NULL
		    ? host_run(v, 1, mono_ms() + 60000, 16 * 1024 * 1024, &out)
		    : -1;
		host_argv_free(v);
		if (st != 0) {
			line = host_last_line(out != NULL ? out : "");
			cli_error("%s: %s", h.name,
			    cause != NULL ? cause
			        : *line != '\0'
			        ? line
			        : "its sessions cannot be listed");
			free(line);
			rc = EXIT_VMUX;
		} else if (!cli_json())
			printf("%s: ok, Slurm answers\n", h.name);
		free(cause);
		free(out);
	} else if (h.slurm)
		cli_notice("a cluster holds no connection");
	else if (strcmp(what, "disconnect") == 0) {
		if (!host_disconnect(&h))
			cli_notice("no connection to it was open");
	} else if (host_connect(&h, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		rc = EXIT_VMUX;
	} else if (!cli_json())
		printf("%s: ok, vmux %s\n", h.name, VMUX_VERSION);
	host_free(&h);
	return rc;
}

/* Run one of host's subcommands. */
static int
cmd_host_exec(struct args *a)
{
	const char *sub = a->argv[0], *name = a->argc > 1 ? a->argv[1] : NULL;
	struct settings s;
	struct host h;
	char *cause = NULL, *line;
	int rc = 0, want = 2;

	if (strcmp(sub, "ls") == 0)
		want = 1;
	else if (strcmp(sub, "add") == 0)
		want = 3;
	else if (strcmp(sub, "rm") != 0 && strcmp(sub, "default") != 0 &&
	    strcmp(sub, "check") != 0 && strcmp(sub, "disconnect") != 0)
		return cli_usage_error(a->entry,
		    "unknown host command '%s' (ls, add, rm, default, check, "
		    "disconnect)",
		    sub);
	if (a->argc != want)
		return cli_usage_error(a->entry, "host %s takes %s", sub,
		    want == 1       ? "no more words"
		        : want == 2 ? "a NAME"
		                    : "a NAME and a URL");
	if (settings_load_hosts(&s, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		return EXIT_VMUX;
	}
	if (strcmp(sub, "ls") == 0) {
		rc = host_ls(&s, args_has(a, "json"));
	} else if (strcmp(sub, "add") == 0) {
		if (host_name_valid(name, &cause) != 0 ||
		    host_parse_url(a->argv[2], &h, &cause) != 0) {
			rc = cli_usage_error(a->entry, "%s", cause);
			free(cause);
		} else if (host_known(&s, name)) {
			host_free(&h);
			cli_error("host %s exists (vmux host rm %s first)",
			    name, name);
			rc = EXIT_VMUX;
		} else {
			host_free(&h);
			xasprintf(&line, "host %s %s", name, a->argv[2]);
			rc =
			    host_rewrite(NULL, NULL, line) != 0 ? EXIT_VMUX : 0;
			free(line);
			if (rc == 0 && args_has(a, "default")) {
				xasprintf(&line, "default-host %s", name);
				if (host_rewrite(
				        host_keep_not_default, NULL, line) != 0)
					rc = EXIT_VMUX;
				free(line);
			}
		}
	} else if (strcmp(sub, "rm") == 0) {
		if (!host_known(&s, name)) {
			cli_error("no host named '%s'", name);
			rc = EXIT_VMUX;
		} else {
			if (host_resolve(name, &s, &h, &cause) == 0) {
				host_disconnect(&h);
				host_free(&h);
			} else
				free(cause);
			rc = host_rewrite(host_keep_not_named, name, NULL) != 0
			    ? EXIT_VMUX
			    : 0;
		}
	} else if (strcmp(sub, "default") == 0) {
		if (strcmp(name, "local") != 0 && !host_known(&s, name)) {
			cli_error("no host named '%s' (vmux host ls)", name);
			rc = EXIT_VMUX;
		} else {
			line = NULL;
			if (strcmp(name, "local") != 0)
				xasprintf(&line, "default-host %s", name);
			rc =
			    host_rewrite(host_keep_not_default, NULL, line) != 0
			    ? EXIT_VMUX
			    : 0;
			free(line);
		}
	} else
		rc = host_reach(&s, sub, name);
	settings_free(&s);
	return rc;
}
