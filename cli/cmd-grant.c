/*
 * cmd-grant.c: `vmux grant`, `vmux revoke`, `vmux grants`: a student's SSH
 * key that opens their own session's shell and nothing else.
 *
 * A grant is one line in an authorized_keys file (the account's own, or
 * --authorized-keys FILE):
 *
 *   restrict,pty,command="env -i TERM=\"$TERM\" VMUX_HOME=H VMUX shell NAME
 *       --id ID --if-instance I --grant T --as LABEL [--read-only]" TYPE
 *       BLOB vmux-grant:NAME:ID:rw|ro:LABEL
 *
 * sshd runs the forced command whatever the client asked for
 * (SSH_ORIGINAL_COMMAND is never read), and `restrict` turns off port,
 * agent and X11 forwarding and ~/.ssh/rc; `pty` gives the shell its
 * terminal back. So the key reaches NAME's shell ID, or watches it with
 * --read-only (keys dropped, size never changed), and no other session,
 * vmux command or host shell; --if-instance pins the session (its random
 * instance id, session_record), so a session made again under the same
 * name (next term's student-4), even in the same second, is not reached;
 * --grant names the grant's token (grant-logins.c), live until revoked.
 * `env -i` leaves nothing of the client's environment but TERM (which
 * vmux filters). The comment is vmux's marker, which revoke and grants
 * read. One key has one grant: granting it again replaces the line, and a
 * key that has a line of another kind is refused (sshd takes the first
 * line, so it would win). The file is rewritten whole under a lock, through
 * a temporary file made beside it with the file's own mode and owner,
 * lines that are not vmux's kept as they were.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "proto/attach.h"
#include "session/session.h"
#include "cli.h"

#define GRANT_MARK "vmux-grant:"

static int cmd_grant_exec(struct args *);
static int cmd_revoke_exec(struct args *);
static int cmd_grants_exec(struct args *);

static const struct cmd_opt cmd_grant_opts[] = {
    {"key", 0, "FILE", 0, "the student's public key (an OpenSSH .pub)"},
    {"read-only", 0, NULL, 0,
        "watch the shell: nothing typed reaches it, its size never changes"},
    {"as", 0, "LABEL", 0,
        "who the key is: listed by vmux grants, and shown to the others "
        "attached to the shell (default: the session's name)"},
    {"shell", 0, "ID", 0, "the shell it opens (default: main)"},
    {"authorized-keys", 0, "FILE", 0,
        "the file to write (default: ~/.ssh/authorized_keys)"},
    {"web", 0, NULL, 0,
        "print a link that opens the shell in a browser (vmux web) "
        "instead of granting an SSH key"},
    {"expires", 0, "DURATION", 0,
        "with --web: the link stops working after DURATION (30m, 8h, 2d)"},
    {"url", 0, "URL", 0,
        "with --web: the link's start (default: what the running vmux web "
        "serves)"},
    {"allow-root", 0, NULL, 0,
        "grant although vmux runs as root: the key then logs in to this "
        "host as root (behind the forced command); a room is better run "
        "under an unprivileged account of its own"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_grant_entry = {
    .name = "grant",
    .pre = "NAME",
    .summary = "Let an SSH key reach session NAME's shell and nothing else: "
               "`ssh ACCOUNT@HOST` with that key lands in the shell (--shell "
               "ID, made on first use), or watches it with --read-only, "
               "whatever command the client asks for.",
    .opts = cmd_grant_opts,
    .min_args = 1,
    .max_args = 1,
    .exec = cmd_grant_exec,
};

static const struct cmd_opt cmd_revoke_opts[] = {
    {"key", 0, "FILE", 0, "the public key whose grant ends"},
    {"authorized-keys", 0, "FILE", 0,
        "the file to change (default: ~/.ssh/authorized_keys)"},
    {"web", 0, NULL, 0,
        "end NAME's web links (all, or --id's) instead of a key's grant: "
        "their open pages close at once"},
    {"id", 0, "ID", 0, "with --web: the link's id, as vmux grants --web shows"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_revoke_entry = {
    .name = "revoke",
    .pre = "NAME",
    .summary = "End a key's grant to session NAME (new logins are refused; "
               "a login already in is not cut off).",
    .opts = cmd_revoke_opts,
    .min_args = 1,
    .max_args = 1,
    .exec = cmd_revoke_exec,
};

static const struct cmd_opt cmd_grants_opts[] = {
    {"authorized-keys", 0, "FILE", 0,
        "the file to read (default: ~/.ssh/authorized_keys)"},
    {"json", 0, NULL, 0, "print a list of grants as JSON"},
    {"web", 0, NULL, 0,
        "list the web links (id, session, shell, mode, label, expiry)"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_grants_entry = {
    .name = "grants",
    .pre = "[NAME]",
    .summary = "List the SSH keys granted to sessions (or to NAME): "
               "session, shell, read-write or read-only, label, key.",
    .opts = cmd_grants_opts,
    .min_args = 0,
    .max_args = 1,
    .exec = cmd_grants_exec,
};

/* A public key: its type and base64 blob (the rest of the line is not). */
struct pubkey {
	char type[64];
	char *blob;
};

/* Is s made of the characters a path in the forced command may have? */
static int
plain_path(const char *s)
{
	for (; *s != '\0'; s++)
		if (!isalnum((unsigned char)*s) && strchr("/._-+", *s) == NULL)
			return 0;
	return 1;
}

/*
 * Read the key in path: its first line that is not blank or a comment,
 * "TYPE BLOB [COMMENT]", TYPE one OpenSSH knows and BLOB base64. A line
 * with options in front (an authorized_keys line) is refused: options are
 * vmux's to set. 0, or -1 with cause.
 */
static int
key_read(const char *path, struct pubkey *k, char **cause)
{
	static const char *const types[] = {"ssh-ed25519", "ssh-rsa",
	    "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
	    "sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com",
	    NULL};
	FILE *f = fopen(path, "r");
	char *line = NULL, *p, *t, *b;
	size_t cap = 0;
	int ok = 0;

	memset(k, 0, sizeof *k);
	if (f == NULL) {
		xasprintf(cause, "--key %s: %s", path, strerror(errno));
		return -1;
	}
	while (getline(&line, &cap, f) > 0) {
		p = line + strspn(line, " \t");
		if (*p == '#' || *p == '\n' || *p == '\0')
			continue;
		t = p;
		p += strcspn(p, " \t\n");
		if (*p == '\0' || *p == '\n')
			break; /* a type and nothing else */
		*p++ = '\0';
		b = p + strspn(p, " \t");
		b[strcspn(b, " \t\n")] = '\0';
		for (const char *const *ty = types; *ty != NULL; ty++)
			if (strcmp(t, *ty) == 0)
				ok = 1;
		if (ok && strlen(b) >= 16 &&
		    strspn(b,
		        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		        "0123456789+/=") == strlen(b)) {
			snprintf(k->type, sizeof k->type, "%s", t);
			k->blob = xstrdup(b);
		}
		break;
	}
	free(line);
	fclose(f);
	if (k->blob == NULL) {
		xasprintf(cause,
		    "--key %s: not an OpenSSH public key (want 'TYPE BASE64 "
		    "[COMMENT]', as in a .pub file; no options)",
		    path);
		return -1;
	}
	return 0;
}

/*
 * The authorized_keys file: the flag's, else ~/.ssh/authorized_keys,
 * symlinks resolved. Free it.
 */
static char *
keys_path(const struct args *a, int create_dir)
{
	const char *p = args_get(a, "authorized-keys"), *home;
	char *s, *real, *slash, *dir;

	if (p != NULL)
		s = xstrdup(p);
	else {
		home = getenv("HOME");
		xasprintf(&s, "%s/.ssh", home != NULL ? home : "/");
		if (create_dir)
			mkdir(s, 0700);
		free(s);
		xasprintf(
		    &s, "%s/.ssh/authorized_keys", home != NULL ? home : "/");
	}
	/* through its symlinks: whatever name a grant is given, the file
	 * locked, read and replaced is one, or two edits lose lines */
	if ((real = realpath(s, NULL)) != NULL) {
		free(s);
		return real;
	}
	/* not there yet: its folder resolved, the name kept */
	slash = strrchr(s, '/');
	xasprintf(&dir, "%.*s", slash == NULL ? 1 : (int)(slash - s + 1),
	    slash == NULL ? "." : s);
	if ((real = realpath(dir, NULL)) != NULL) {
		free(dir);
		xasprintf(&dir, "%s/%s", strcmp(real, "/") == 0 ? "" : real,
		    slash == NULL ? s : slash + 1);
		free(real);
		free(s);
		return dir;
	}
	free(dir);
	return s; /* a missing folder: the load or the save says so */
}

/* Read the file's lines (none if it is missing). 0, or -1 said. */
static int
keys_load(const char *path, char ***lines, size_t *n)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	*lines = NULL;
	*n = 0;
	if (f == NULL) {
		if (errno == ENOENT)
			return 0;
		cli_error("%s: %s", path, strerror(errno));
		return -1;
	}
	while ((len = getline(&line, &cap, f)) > 0) {
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		if (memchr(line, '\0', (size_t)len) != NULL) {
			cli_error("%s: a line with a NUL byte; not touching it",
			    path);
			break;
		}
		*lines = xreallocarray(*lines, *n + 1, sizeof **lines);
		(*lines)[(*n)++] = xstrdup(line);
	}
	free(line);
	if (ferror(f) || len > 0) { /* a read error, or the NUL above */
		if (ferror(f))
			cli_error("%s: %s", path, strerror(errno));
		fclose(f);
		for (size_t i = 0; i < *n; i++)
			free((*lines)[i]);
		free(*lines);
		*lines = NULL;
		*n = 0;
		return -1;
	}
	fclose(f);
	return 0;
}

/*
 * Write lines to path (its real file, when path is a symlink) through a
 * mkstemp file beside it, given the old file's mode and owner (0600 and
 * ours when new), then renamed over it. 0, or -1 said.
 */
static int
keys_save(const char *path, char **lines, size_t n)
{
	char *real = realpath(path, NULL), *tmp;
	const char *target = real != NULL ? real : path;
	struct stat st;
	FILE *f;
	int fd, rc = 0, had = stat(target, &st) == 0;

	xasprintf(&tmp, "%s.vmux-XXXXXX", target);
	fd = mkstemp(tmp);
	if (fd < 0 || (f = fdopen(fd, "w")) == NULL) {
		cli_error("%s: %s", tmp, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		free(tmp);
		free(real);
		return -1;
	}
	if (had &&
	    (fchmod(fd, st.st_mode & 07777) != 0 ||
	        (fchown(fd, st.st_uid, st.st_gid) != 0 && errno != EPERM)))
		rc = -1;
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s\n", lines[i]);
	if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		rc = -1;
	if (fclose(f) != 0 || rc != 0 || rename(tmp, target) != 0) {
		cli_error("%s: %s", target, strerror(errno));
		unlink(tmp);
		rc = -1;
	}
	free(tmp);
	free(real);
	return rc;
}

/* Lock path's file for a read-modify-write; the fd, or -1 said. */
static int
keys_lock(const char *path)
{
	char *lock;
	int fd;

	xasprintf(&lock, "%s.vmux-lock", path);
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || flock(fd, LOCK_EX) != 0) {
		cli_error("%s: %s", lock, strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	free(lock);
	return fd;
}

/* Free n lines. */
static void
lines_free(char **lines, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
}

/* A vmux grant line's parts (pointers into copy, which grant_free frees). */
struct grant {
	char *copy;
	const char *blob, *session, *shell, *mode, *label;
};

/* Parse line into g; 0 if it is not vmux's (free g either way). */
static int
grant_parse(const char *line, struct grant *g)
{
	char *m = strstr(line, " " GRANT_MARK), *c, *p, *end;
	const char **f[4] = {&g->session, &g->shell, &g->mode, &g->label};
	int i;

	memset(g, 0, sizeof *g);
	if (m == NULL || strncmp(line, "restrict,", 9) != 0)
		return 0;
	c = g->copy = xstrdup(line);
	m = c + (m - line);
	*m = '\0'; /* the key ends before the marker */
	if ((end = strrchr(c, ' ')) == NULL)
		return 0;
	g->blob = end + 1;
	p = m + 1 + strlen(GRANT_MARK);
	for (i = 0; i < 4; i++) {
		*f[i] = p;
		if ((p = strchr(p, ':')) == NULL)
			break;
		*p++ = '\0';
	}
	return i >= 3;
}

/* Free what grant_parse kept. */
static void
grant_free(struct grant *g)
{
	free(g->copy);
	g->copy = NULL;
}

static int
cmd_grant_exec(struct args *a)
{
	const char *name = a->argv[0], *keyfile = args_get(a, "key");
	const char *label = args_get(a, "as"), *shell = args_get(a, "shell");
	int ro = args_has(a, "read-only"), rc;
	struct session_record r;
	struct pubkey k;
	char **lines, *path, *home, *line, self[4096], *exe, *cause = NULL;
	char *instance, *token = NULL, **replaced = NULL;
	size_t n, out = 0, nreplaced = 0;
	int lock;

	if (args_has(a, "web"))
		return grant_web_exec(a);
	if (args_get(a, "expires") != NULL || args_get(a, "url") != NULL)
		return cli_usage_error(
		    a->entry, "--expires and --url go with --web");
	if (shell == NULL)
		shell = "main";
	if (label == NULL)
		label = "";
	if (keyfile == NULL)
		cause = xstrdup("--key FILE is needed (the student's .pub)");
	else if (session_name_valid(name, &cause) == 0 &&
	    shell_id_valid(shell, &cause) == 0 && *label != '\0' &&
	    !vmux_attach_as_valid(label))
		xasprintf(&cause, "--as '%s': 1-%d letters, digits and ._-@",
		    label, VMUX_ATTACH_AS_MAX);
	if (cause != NULL || key_read(keyfile, &k, &cause) != 0) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	/* the login runs vmux as this account (its VMUX_HOME is this
	 * account's alone): as root, any flaw behind the forced command
	 * would be a root flaw on the host */
	if (geteuid() == 0 && !args_has(a, "allow-root")) {
		cli_error("vmux runs as root here, so the key would log in to "
		          "this host as root: run the room under an "
		          "unprivileged account (see vmux(1), GRANTS), or pass "
		          "--allow-root");
		free(k.blob);
		return EXIT_VMUX;
	}
	if (cli_session_record(name, &r) != 0) { /* it must exist */
		free(k.blob);
		return EXIT_VMUX;
	}
	record_free(&r);
	exe = exe_path();
	home = cli_home();
	if (exe == NULL || home == NULL || strlen(exe) >= sizeof self) {
		cli_error("cannot find the vmux binary or its home");
		free(k.blob);
		free(home);
		free(exe);
		return EXIT_VMUX;
	}
	snprintf(self, sizeof self, "%s", exe);
	free(exe);
	if (!plain_path(self) || !plain_path(home)) {
		cli_error("vmux (%s) or its home (%s) has characters an "
		          "authorized_keys command cannot carry safely",
		    self, home);
		free(k.blob);
		free(home);
		return EXIT_VMUX;
	}
	path = keys_path(a, args_get(a, "authorized-keys") == NULL);
	if ((lock = keys_lock(path)) < 0 || keys_load(path, &lines, &n) != 0) {
		if (lock >= 0)
			close(lock);
		free(k.blob);
		free(home);
		free(path);
		return EXIT_VMUX;
	}
	/* the key's earlier grant goes: sshd would take the first line; a
	 * line of the user's own for it would win over ours: refused */
	for (size_t i = 0; i < n; i++) {
		struct grant g;

		if (!grant_parse(lines[i], &g) &&
		    strstr(lines[i], k.blob) != NULL) {
			cli_error(
			    "this key already has a line in %s (line %zu) "
			    "that is not a vmux grant: sshd would take it "
			    "first; remove it or use another key",
			    path, i + 1);
			grant_free(&g);
			lines_free(lines, n);
			close(lock);
			free(k.blob);
			free(home);
			free(path);
			return EXIT_VMUX;
		}
		if (g.copy != NULL && g.blob != NULL &&
		    strcmp(g.blob, k.blob) == 0) {
			if (strcmp(g.session, name) != 0)
				cli_noticef("this key was granted %s; now %s",
				    g.session, name);
			replaced = xreallocarray(
			    replaced, nreplaced + 1, sizeof *replaced);
			replaced[nreplaced++] = lines[i];
		} else {
			lines[out++] = lines[i];
		}
		grant_free(&g);
	}
	n = out;
	/* pins this session, not a later namesake */
	if (record_instance_get(home, name, &instance, &cause) != 0 ||
	    grant_token_new(home, name, &token, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		rc = EXIT_VMUX;
		goto done;
	}
	xasprintf(&line,
	    "restrict,pty,command=\"env -i TERM=\\\"$TERM\\\" VMUX_HOME=%s %s "
	    "shell %s --id %s --if-instance %s --grant %s --as %s%s\" %s "
	    "%s " GRANT_MARK "%s:%s:%s:%s",
	    home, self, name, shell, instance, token, *label ? label : name,
	    ro ? " --read-only" : "", k.type, k.blob, name, shell,
	    ro ? "ro" : "rw", label);
	lines = xreallocarray(lines, n + 1, sizeof *lines);
	lines[n++] = line;
	rc = keys_save(path, lines, n) == 0 ? 0 : EXIT_VMUX;
	/* the key's earlier grant is over: its logins too (a student moved
	 * to another session, or down to watching) */
	for (size_t i = 0; rc == 0 && i < nreplaced; i++)
		grant_logins_end(home, replaced[i]);
	if (rc == 0 && !cli_json())
		printf("granted %s shell %s%s to %s%s\n", name, shell,
		    ro ? " (read-only)" : "", *label ? label : k.type,
		    *label ? "" : " key");
	free(instance);
done:
	lines_free(replaced, nreplaced);
	free(token);
	lines_free(lines, n);
	close(lock);
	free(k.blob);
	free(home);
	free(path);
	return rc;
}

static int
cmd_revoke_exec(struct args *a)
{
	const char *name = a->argv[0], *keyfile = args_get(a, "key");
	struct pubkey k;
	char **lines, **removed = NULL, *path, *home, *cause = NULL;
	size_t n, out = 0, gone = 0;
	int rc, lock, ended = 0;

	if (args_has(a, "web"))
		return revoke_web_exec(a);
	if (args_get(a, "id") != NULL)
		return cli_usage_error(a->entry, "--id goes with --web");
	if (keyfile == NULL)
		cause = xstrdup("--key FILE is needed");
	else
		session_name_valid(name, &cause);
	if (cause != NULL || key_read(keyfile, &k, &cause) != 0) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	if ((home = cli_home()) == NULL) {
		free(k.blob);
		return EXIT_VMUX;
	}
	path = keys_path(a, 0);
	if ((lock = keys_lock(path)) < 0 || keys_load(path, &lines, &n) != 0) {
		if (lock >= 0)
			close(lock);
		free(k.blob);
		free(path);
		free(home);
		return EXIT_VMUX;
	}
	for (size_t i = 0; i < n; i++) {
		struct grant g;

		if (grant_parse(lines[i], &g) && strcmp(g.blob, k.blob) == 0 &&
		    strcmp(g.session, name) == 0) {
			removed =
			    xreallocarray(removed, gone + 1, sizeof *removed);
			removed[gone++] = lines[i];
		} else {
			lines[out++] = lines[i];
		}
		grant_free(&g);
	}
	if (gone == 0) {
		cli_error("that key has no grant to %s in %s", name, path);
		rc = EXIT_VMUX;
	} else {
		rc = keys_save(path, lines, out) == 0 ? 0 : EXIT_VMUX;
		/* no new login now: the ones in are ended too */
		for (size_t i = 0; rc == 0 && i < gone; i++)
			ended += grant_logins_end(home, removed[i]);
		if (rc == 0 && !cli_json())
			printf("revoked %s's grant%s\n", name,
			    ended == 1      ? "; its login ended"
			        : ended > 1 ? "; its logins ended"
			                    : "");
	}
	lines_free(removed, gone);
	lines_free(lines, out);
	close(lock);
	free(k.blob);
	free(path);
	free(home);
	return rc;
}

static int
cmd_grants_exec(struct args *a)
{
	const char *only = a->argc > 0 ? a->argv[0] : NULL;
	char **lines, *path = keys_path(a, 0);
	cJSON *list = cJSON_CreateArray();
	size_t n;
	int json = args_has(a, "json"), any = 0;

	if (args_has(a, "web")) {
		free(path);
		return grants_web_exec(a);
	}
	if (keys_load(path, &lines, &n) != 0) {
		cJSON_Delete(list);
		free(path);
		return EXIT_VMUX;
	}
	for (size_t i = 0; i < n; i++) {
		struct grant g;
		char key[32];

		if (grant_parse(lines[i], &g) &&
		    (only == NULL || strcmp(g.session, only) == 0)) {
			size_t bl = strlen(g.blob);
			int ro = strcmp(g.mode, "ro") == 0;
			cJSON *o = cJSON_CreateObject();

			/* the blob's end tells keys apart at a glance */
			snprintf(key, sizeof key, "...%s",
			    g.blob + (bl > 12 ? bl - 12 : 0));
			cJSON_AddStringToObject(o, "session", g.session);
			cJSON_AddStringToObject(o, "shell", g.shell);
			cJSON_AddBoolToObject(o, "read_only", ro);
			cJSON_AddStringToObject(o, "label", g.label);
			cJSON_AddStringToObject(o, "key", key);
			cJSON_AddItemToArray(list, o);
			if (!json && !any)
				printf("%-16s %-10s %-10s %-16s %s\n",
				    "SESSION", "SHELL", "MODE", "LABEL", "KEY");
			if (!json)
				printf("%-16s %-10s %-10s %-16s %s\n",
				    g.session, g.shell,
				    ro ? "read-only" : "read-write",
				    *g.label ? g.label : "-", key);
			any = 1;
		}
		grant_free(&g);
	}
	if (json) {
		char *s = cJSON_PrintUnformatted(list);

		printf("%s\n", s);
		free(s);
	}
	cJSON_Delete(list);
	lines_free(lines, n);
	free(path);
	return 0;
}
