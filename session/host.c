/*
 * host.c: other machines vmux reaches over SSH, and Slurm clusters.
 *
 * As with Docker contexts, a host is ssh://[USER@]ADDR[:PORT][/VMUX], named
 * in the settings (`host NAME URL`) or given as it is; /VMUX is where vmux
 * is on that machine when it is not on its PATH. Nothing of ours listens
 * on the network: a command is `ssh ADDR vmux ...`, the same vmux binary on
 * the other side, with the user's own keys and ~/.ssh/config
 * ($VMUX_SSH_COMMAND replaces "ssh", as GIT_SSH_COMMAND does for git).
 *
 * Every ssh to one host goes through one master connection (ControlMaster,
 * kept HOST_PERSIST_S after its last use), so a command after the first
 * costs no handshake. host_connect starts it under a lock and, when it
 * started it, checks the other side runs this version of vmux. A stream to
 * a guest port (host_stream) is a socketpair to an ssh that runs the
 * remote's `vmux connect --announce`. A struct host is its caller's.
 */
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session.h"

#define HOST_PERSIST_S  300   /* the master outlives its last use this long */
#define HOST_CHECK_MAX  4096  /* what `vmux --version` may print */
#define HOST_LINE_MAX   1024  /* host_stream's first line */
#define HOST_ALIVE_S    15    /* ServerAliveInterval: a dead link shows */
#define HOST_CONNECT_S  10    /* ssh's ConnectTimeout */
#define HOST_MASTER_MS  30000 /* a master's start, login included */
#define HOST_CHECK_MS   15000 /* the version check */
#define HOST_CONTROL_MS 5000  /* ssh -O check|exit, local */
#define HOST_SUN_MAX    107   /* sun_path less its NUL */
#define HOST_SSH_SUFFIX 17    /* ssh binds PATH.XXXXXXXXXXXXXXXX first */

/* Free what host_parse_url or host_resolve filled in. */
void
host_free(struct host *h)
{
	free(h->name);
	free(h->url);
	free(h->user);
	free(h->addr);
	free(h->vmux);
	free(h->partition);
	free(h->account);
	free(h->qos);
	free(h->dir);
	memset(h, 0, sizeof *h);
}

static int host_char_ok(char c);

/* Is s a Slurm name (partition, account, QOS): 1-64 of [A-Za-z0-9._-]? */
static int
slurm_word_ok(const char *s, size_t n)
{
	if (n == 0 || n > 64 || *s == '-')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!host_char_ok(s[i]) || s[i] == '@')
			return 0;
	return 1;
}

/*
 * Parse slurm://[PARTITION][?account=A&qos=Q&dir=/PATH] into h. 0, or -1
 * with cause.
 */
static int
host_parse_slurm(const char *url, struct host *h, char **cause)
{
	const char *p = url + 8, *q = strchr(p, '?');
	size_t n = q != NULL ? (size_t)(q - p) : strlen(p);

	h->slurm = 1;
	if (n > 0 && !slurm_word_ok(p, n))
		goto bad;
	if (n > 0)
		h->partition = xstrndup(p, n);
	while (q != NULL && *q != '\0') {
		const char *k = q + 1, *eq = strchr(k, '='), *amp;
		char **slot;
		size_t vn;

		if (eq == NULL)
			goto bad;
		amp = strchr(eq, '&');
		vn = amp != NULL ? (size_t)(amp - eq - 1) : strlen(eq + 1);
		if (strncmp(k, "account=", 8) == 0)
			slot = &h->account;
		else if (strncmp(k, "qos=", 4) == 0)
			slot = &h->qos;
		else if (strncmp(k, "dir=", 4) == 0)
			slot = &h->dir;
		else
			goto bad;
		if (*slot != NULL)
			goto bad;
		if (slot == &h->dir) {
			if (eq[1] != '/' || vn < 2)
				goto bad;
			for (size_t i = 1; i <= vn; i++)
				if (!host_char_ok(eq[i]) && eq[i] != '/')
					goto bad;
		} else if (!slurm_word_ok(eq + 1, vn))
			goto bad;
		*slot = xstrndup(eq + 1, vn);
		q = amp;
	}
	h->url = xstrdup(url);
	h->name = xstrdup(url);
	return 0;
bad:
	host_free(h);
	xasprintf(cause,
	    "invalid cluster '%s' (slurm://[PARTITION][?account=A&qos=Q&"
	    "dir=/SHARED/PATH]; letters, digits, '.', '-', '_')",
	    url);
	return -1;
}

/* Is c allowed in a user or host part? (no shell or ssh option syntax) */
static int
host_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

/*
 * A host's name in the settings: 1-32 of [A-Za-z0-9_-], not starting with
 * '-'; "local" (this machine) and "all" (every host) are taken. 0 or -1.
 */
int
host_name_valid(const char *name, char **cause)
{
	size_t i, n = strlen(name);

	for (i = 0; i < n; i++) {
		if (!host_char_ok(name[i]) || name[i] == '.')
			break;
	}
	if (n == 0 || n > 32 || i != n || name[0] == '-') {
		xasprintf(cause,
		    "invalid host name '%s' (1 to 32 letters, digits, '_' or "
		    "'-')",
		    name);
		return -1;
	}
	if (strcmp(name, "local") == 0 || strcmp(name, "all") == 0) {
		xasprintf(cause,
		    "'%s' is reserved (local is this machine, "
		    "all every host)",
		    name);
		return -1;
	}
	return 0;
}

/* Parse ssh://[USER@]ADDR[:PORT][/PATH] into h (name unset). 0 or -1. */
int
host_parse_url(const char *url, struct host *h, char **cause)
{
	const char *p, *at, *end, *colon;
	long port = 0;

	memset(h, 0, sizeof *h);
	if (strncmp(url, "slurm://", 8) == 0)
		return host_parse_slurm(url, h, cause);
	if (strncmp(url, "ssh://", 6) != 0) {
		xasprintf(cause,
		    "'%s' is not a host: write ssh://[USER@]HOST[:PORT], "
		    "slurm://PARTITION or a name from vmux host ls",
		    url);
		return -1;
	}
	p = url + 6;
	end = p + strcspn(p, "/");
	at = memchr(p, '@', (size_t)(end - p));
	if (at != NULL) {
		for (const char *c = p; c < at; c++) {
			if (!host_char_ok(*c))
				goto bad;
		}
		if (at == p)
			goto bad;
		h->user = xstrndup(p, (size_t)(at - p));
		p = at + 1;
	}
	colon = memchr(p, ':', (size_t)(end - p));
	if (colon != NULL) {
		char *e;
		errno = 0;
		port = strtol(colon + 1, &e, 10);
		if (e != end || colon + 1 == end || errno != 0 || port < 1 ||
		    port > 65535)
			goto bad;
	} else
		colon = end;
	if (colon == p || *p == '-' || *p == '.')
		goto bad;
	for (const char *c = p; c < colon; c++) {
		if (!host_char_ok(*c))
			goto bad;
	}
	h->addr = xstrndup(p, (size_t)(colon - p));
	h->port = (int)port;
	if (*end == '/' && end[1] != '\0') {
		for (const char *c = end; *c != '\0'; c++) {
			if (!host_char_ok(*c) && *c != '/' && *c != '+')
				goto bad;
		}
		h->vmux = xstrdup(end);
	} else
		h->vmux = xstrdup("vmux");
	h->url = xstrdup(url);
	h->name = xstrdup(url);
	return 0;
bad:
	host_free(h);
	xasprintf(cause,
	    "invalid host '%s' (ssh://[USER@]HOST[:PORT][/PATH-OF-VMUX]; "
	    "letters, digits, '.', '-', '_')",
	    url);
	return -1;
}

/*
 * A host given by name (from the settings) or as a URL, into h. Returns
 * 0, or -1 with cause (no such name, or a bad URL).
 */
int
host_resolve(
    const char *spec, const struct settings *s, struct host *h, char **cause)
{
	size_t i;

	if (strstr(spec, "://") != NULL || strchr(spec, '@') != NULL)
		return host_parse_url(spec, h, cause);
	for (i = 0; i < s->nhosts; i++) {
		if (strcmp(s->hosts[i].name, spec) != 0)
			continue;
		if (host_parse_url(s->hosts[i].url, h, cause) != 0)
			return -1;
		free(h->name);
		h->name = xstrdup(spec);
		return 0;
	}
	xasprintf(cause,
	    "no host named '%s' (vmux host ls lists them; vmux host add "
	    "NAME ssh://USER@HOST adds one)",
	    spec);
	return -1;
}

/* word in POSIX shell single quotes, for the remote's login shell. */
char *
host_quote(const char *word)
{
	size_t n = 2, i;
	char *out, *o;

	for (i = 0; word[i] != '\0'; i++)
		n += word[i] == '\'' ? 4 : 1;
	o = out = xmalloc(n + 1);
	*o++ = '\'';
	for (i = 0; word[i] != '\0'; i++) {
		if (word[i] == '\'') {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else
			*o++ = word[i];
	}
	*o++ = '\'';
	*o = '\0';
	return out;
}

/* The master's control socket, under the vmux home; NULL with cause. */
static char *
host_control_path(const struct host *h, char **cause)
{
	char *home = session_home(cause), *dir, *key, *sdir, *out;

	if (home == NULL)
		return NULL;
	/* '%' is escaped (host_percent_escape); "${" cannot be */
	if (strstr(home, "${") != NULL) {
		xasprintf(cause,
		    "the vmux home %s holds '${', which ssh would expand in "
		    "its ControlPath: set another VMUX_HOME",
		    home);
		free(home);
		return NULL;
	}
	xasprintf(&dir, "%s/ssh", home);
	free(home);
	if (mkdir_p(dir, 0700) != 0) {
		xasprintf(cause, "cannot create %s: %s", dir, strerror(errno));
		free(dir);
		return NULL;
	}
	sdir = session_sock_dir(dir, cause);
	free(dir);
	if (sdir == NULL)
		return NULL;
	/* one master a vmux there: its version was checked when it started */
	xasprintf(&key, "%s@%s:%d%s", h->user != NULL ? h->user : "", h->addr,
	    h->port, h->vmux);
	xasprintf(
	    &out, "%s/m-%016llx", sdir, (unsigned long long)hash_fnv1a(key));
	free(key);
	free(sdir);
	if (strlen(out) + HOST_SSH_SUFFIX > HOST_SUN_MAX) {
		xasprintf(cause,
		    "the ssh control socket %s is too long a path for a Unix "
		    "socket: set a shorter VMUX_HOME",
		    out);
		free(out);
		return NULL;
	}
	return out;
}

/*
 * prefix, then path with every '%' doubled: ssh expands %-tokens in
 * ControlPath, so a VMUX_HOME holding "%h" would otherwise put the socket
 * somewhere else than where vmux looks for it. Free it.
 */
static char *
host_percent_escape(const char *prefix, const char *path)
{
	size_t n = strlen(prefix), i;
	char *out = xmalloc(n + 2 * strlen(path) + 1), *o = out + n;

	memcpy(out, prefix, n);
	for (i = 0; path[i] != '\0'; i++) {
		if (path[i] == '%')
			*o++ = '%';
		*o++ = path[i];
	}
	*o = '\0';
	return out;
}

/* Append one word to a NULL-terminated argv being built. */
static void
argv_add(char ***v, size_t *n, const char *word)
{
	*v = xreallocarray(*v, *n + 2, sizeof **v);
	(*v)[(*n)++] = xstrdup(word);
	(*v)[*n] = NULL;
}

/* Free a NULL-terminated argv. */
void
host_argv_free(char **v)
{
	for (size_t i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

/*
 * The ssh command for h up to its options: $VMUX_SSH_COMMAND (or
 * ssh), batch mode, the control socket, port and user. mode is the
 * ControlMaster setting. NULL with cause.
 */
static char **
host_ssh_base(const struct host *h, const char *mode, size_t *n, char **cause)
{
	const char *cmd = getenv("VMUX_SSH_COMMAND");
	char **v = NULL, *ctl, *copy, *opt;

	if ((ctl = host_control_path(h, cause)) == NULL)
		return NULL;
	*n = 0;
	if (cmd != NULL && *cmd != '\0') {
		/* as git runs GIT_SSH_COMMAND: through the shell, so its
		 * quotes and variables mean what they mean there */
		argv_add(&v, n, "/bin/sh");
		argv_add(&v, n, "-c");
		xasprintf(&copy, "%s \"$@\"", cmd);
		argv_add(&v, n, copy);
		free(copy);
		argv_add(&v, n, "ssh"); /* $0 */
	} else
		argv_add(&v, n, "ssh");
	argv_add(&v, n, "-o");
	argv_add(&v, n, "BatchMode=yes");
	/* AES-GCM first (ssh's defaults after it): with AES-NI it moves
	 * bytes faster than chacha20, ssh's first choice */
	argv_add(&v, n, "-o");
	argv_add(
	    &v, n, "Ciphers=^aes128-gcm@openssh.com,aes256-gcm@openssh.com");
	argv_add(&v, n, "-o");
	xasprintf(&opt, "ConnectTimeout=%d", HOST_CONNECT_S);
	argv_add(&v, n, opt);
	free(opt);
	argv_add(&v, n, "-o");
	xasprintf(&opt, "ServerAliveInterval=%d", HOST_ALIVE_S);
	argv_add(&v, n, opt);
	free(opt);
	argv_add(&v, n, "-o");
	xasprintf(&opt, "ControlMaster=%s", mode);
	argv_add(&v, n, opt);
	free(opt);
	argv_add(&v, n, "-o");
	opt = host_percent_escape("ControlPath=", ctl);
	argv_add(&v, n, opt);
	free(opt);
	free(ctl);
	if (h->port != 0) {
		char port[16];
		snprintf(port, sizeof port, "%d", h->port);
		argv_add(&v, n, "-p");
		argv_add(&v, n, port);
	}
	if (h->user != NULL) {
		argv_add(&v, n, "-l");
		argv_add(&v, n, h->user);
	}
	return v;
}

/*
 * The ssh command that runs the remote's vmux with words (quoted for its
 * login shell, which must be a POSIX one), through the master. mode:
 * HOST_TTY asks for a terminal (-t, no escape character), HOST_NO_STDIN
 * keeps ours (-n). NULL-terminated (host_argv_free), or NULL with cause.
 * A Slurm cluster's is this machine's own vmux -H CLUSTER with the words
 * (cli/slurm.c takes them to the session's job).
 */
char **
host_ssh_argv(
    const struct host *h, int mode, char *const *words, size_t nw, char **cause)
{
	size_t n = 0, i, len;
	char **v, *line, *q;

	if (h->slurm) { /* a cluster: this machine's vmux, through Slurm */
		v = NULL;
		if ((line = exe_path()) == NULL) {
			xasprintf(cause, "cannot find the vmux binary: %s",
			    strerror(errno));
			return NULL;
		}
		argv_add(&v, &n, line);
		free(line);
		argv_add(&v, &n, "-H");
		argv_add(&v, &n, h->name);
		for (i = 0; i < nw; i++)
			argv_add(&v, &n, words[i]);
		return v;
	}
	if ((v = host_ssh_base(h, "no", &n, cause)) == NULL)
		return NULL;
	argv_add(&v, &n, (mode & HOST_TTY) ? "-t" : "-T");
	if (mode & HOST_TTY) {
		argv_add(&v, &n, "-e");
		argv_add(&v, &n, "none");
	}
	if (mode & HOST_NO_STDIN)
		argv_add(&v, &n, "-n");
	argv_add(&v, &n, "--");
	argv_add(&v, &n, h->addr);
	q = host_quote(h->vmux);
	/* -H local: its own VMUX_HOST or default-host must not send it on */
	xasprintf(
	    &line, "%s -H local", strcmp(h->vmux, "vmux") == 0 ? "vmux" : q);
	free(q);
	for (i = 0; i < nw; i++) {
		q = host_quote(words[i]);
		len = strlen(line);
		line = xrealloc(line, len + strlen(q) + 2);
		line[len] = ' ';
		strcpy(line + len + 1, q);
		free(q);
	}
	argv_add(&v, &n, line);
	free(line);
	return v;
}

/*
 * Run argv with stdin and stderr from /dev/null (or stderr into the
 * capture too), keeping its stdout in *out (NUL-terminated, caller frees,
 * set whatever happens). Killed at deadline, or when it prints more than
 * max bytes. Its wait status, or -1 with errno (ETIMEDOUT: too slow,
 * EFBIG: too much).
 */
int
host_run(char *const *argv, int with_stderr, uint64_t deadline, size_t max,
    char **out)
{
	int p[2], status, devnull, error = 0;
	size_t len = 0;
	pid_t pid;

	*out = xstrdup("");
	if (pipe2(p, O_CLOEXEC) != 0)
		return -1;
	pid = fork();
	if (pid < 0) {
		error = errno;
		close(p[0]);
		close(p[1]);
		errno = error;
		return -1;
	}
	if (pid == 0) {
		devnull = open("/dev/null", O_RDWR);
		dup2(devnull, STDIN_FILENO);
		dup2(p[1], STDOUT_FILENO);
		dup2(with_stderr ? p[1] : devnull, STDERR_FILENO);
		signal(SIGPIPE, SIG_DFL);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		char buf[65536];
		ssize_t r;
		if (wait_fd(p[0], POLLIN, deadline) <= 0) {
			error = ETIMEDOUT;
			break;
		}
		r = read(p[0], buf, sizeof buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if ((size_t)r > max - len) {
			error = EFBIG;
			break;
		}
		*out = xrealloc(*out, len + (size_t)r + 1);
		memcpy(*out + len, buf, (size_t)r);
		len += (size_t)r;
		(*out)[len] = '\0';
	}
	if (error != 0)
		kill(pid, SIGKILL);
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return -1;
	}
	if (error != 0) {
		errno = error;
		return -1;
	}
	return status;
}

/* The last non-empty line of text, printable, or "" (caller frees). */
char *
host_last_line(const char *text)
{
	const char *end = text + strlen(text), *start;

	while (end > text && (end[-1] == '\n' || end[-1] == '\r'))
		end--;
	start = end;
	while (start > text && start[-1] != '\n')
		start--;
	char *line = xstrndup(start, (size_t)(end - start));
	for (char *c = line; *c != '\0'; c++) {
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	}
	return line;
}

/* Run ssh -O CMD (check, exit) against h's master; 1 if it said yes. */
static int
host_control(const struct host *h, const char *what)
{
	size_t n;
	char **v = host_ssh_base(h, "no", &n, &(char *){NULL}), *out = NULL;
	int st;

	if (v == NULL)
		return 0;
	argv_add(&v, &n, "-O");
	argv_add(&v, &n, what);
	argv_add(&v, &n, "--");
	argv_add(&v, &n, h->addr);
	st = host_run(v, 1, mono_ms() + HOST_CONTROL_MS, HOST_CHECK_MAX, &out);
	free(out);
	host_argv_free(v);
	return st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Is h's master connection up? */
int
host_alive(const struct host *h)
{
	return host_control(h, "check");
}

/* Close h's master connection, if up; 1 if there was one. */
int
host_disconnect(const struct host *h)
{
	return host_control(h, "exit");
}

/*
 * Check that h runs this vmux: its `vmux --version` must say ours. 0, or
 * -1 with a cause that says what to install.
 */
static int
host_check_version(const struct host *h, char **cause)
{
	char *const words[] = {"--version"};
	char **v = host_ssh_argv(h, HOST_NO_STDIN, words, 1, cause);
	char want[64], *out = NULL, *line, *at;
	int st, saved;

	if (v == NULL)
		return -1;
	/* stdout only: a login's own noise on stderr is not an answer */
	st = host_run(v, 0, mono_ms() + HOST_CHECK_MS, HOST_CHECK_MAX, &out);
	saved = errno;
	host_argv_free(v);
	snprintf(want, sizeof want, "vmux %s\n", VMUX_VERSION);
	at = strstr(out, want);
	if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0 && at != NULL &&
	    (at == out || at[-1] == '\n')) {
		free(out);
		return 0;
	}
	at = strstr(out, "vmux ");
	line = xstrndup(
	    at != NULL ? at : out, strcspn(at != NULL ? at : out, "\n"));
	for (char *c = line; *c != '\0'; c++) {
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	}
	if (st == -1 && saved == ETIMEDOUT)
		xasprintf(cause,
		    "host %s: '%s --version' did not answer in %d s", h->name,
		    h->vmux, HOST_CHECK_MS / 1000);
	else if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 127)
		xasprintf(cause,
		    "host %s has no vmux ('%s' was not found there): install "
		    "vmux %s on it (make install), or give its path as "
		    "ssh://HOST/PATH-OF-VMUX",
		    h->name, h->vmux, VMUX_VERSION);
	else if (at != NULL)
		xasprintf(cause,
		    "host %s runs %s, this is vmux %s: install the same "
		    "version on both",
		    h->name, line, VMUX_VERSION);
	else
		xasprintf(cause,
		    "host %s: '%s --version' did not answer as vmux (%s): "
		    "install vmux %s on it",
		    h->name, h->vmux, *line ? line : "no output", VMUX_VERSION);
	free(line);
	free(out);
	return -1;
}

/* Leave the mark that this master's other side was checked. 0 or -1. */
static int
host_mark(const char *path, char **cause)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

	if (fd < 0) {
		xasprintf(cause, "cannot create %s: %s", path, strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

/*
 * Make sure h's master connection is up, starting it (and checking the
 * version on the other side) when it is not. 0, or -1 with a cause that
 * names the host and what ssh said.
 */
int
host_connect(const struct host *h, char **cause)
{
	char **v, *ctl, *lock_path, *log_path, *ok_path, *out = NULL, *line;
	size_t n;
	int lock_fd, st, rc = -1;

	if (h->slurm)
		return 0; /* Slurm's tools: nothing to hold open */
	if ((ctl = host_control_path(h, cause)) == NULL)
		return -1;
	xasprintf(&lock_path, "%s.lock", ctl);
	xasprintf(&log_path, "%s.log", ctl);
	xasprintf(&ok_path, "%s.ok", ctl);
	lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lock_fd < 0 || flock(lock_fd, LOCK_EX) != 0) {
		xasprintf(
		    cause, "cannot lock %s: %s", lock_path, strerror(errno));
		goto out;
	}
	if (host_alive(h)) {
		/* up, but was its other side checked? (a checker may have
		 * been killed half-way) */
		if (access(ok_path, F_OK) == 0 ||
		    host_check_version(h, cause) == 0)
			rc = host_mark(ok_path, cause);
		else
			host_disconnect(h);
		goto out;
	}
	/* a master killed without cleaning up leaves its socket behind: ssh
	 * would then say "already exists" and run unshared, for ever */
	unlink(ctl);
	unlink(ok_path);
	if ((v = host_ssh_base(h, "yes", &n, cause)) == NULL)
		goto out;
	char persist[48];
	snprintf(persist, sizeof persist, "ControlPersist=%d", HOST_PERSIST_S);
	argv_add(&v, &n, "-o");
	argv_add(&v, &n, persist);
	argv_add(&v, &n, "-f");
	argv_add(&v, &n, "-N");
	argv_add(&v, &n, "-E");
	argv_add(&v, &n, log_path);
	argv_add(&v, &n, "--");
	argv_add(&v, &n, h->addr);
	unlink(log_path);
	st = host_run(v, 0, mono_ms() + HOST_MASTER_MS, HOST_CHECK_MAX, &out);
	host_argv_free(v);
	free(out);
	if (st == 0 && access(ctl, F_OK) != 0) { /* up, but not shared */
		host_disconnect(h);
		st = -1;
	}
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		char *text = NULL;
		size_t len = 0;
		FILE *f = fopen(log_path, "re");
		if (f != NULL) {
			text = xmalloc(HOST_CHECK_MAX + 1);
			len = fread(text, 1, HOST_CHECK_MAX, f);
			text[len] = '\0';
			fclose(f);
		}
		line = host_last_line(text != NULL ? text : "");
		xasprintf(cause, "cannot reach host %s over ssh: %s", h->name,
		    *line ? line : "ssh failed");
		free(line);
		free(text);
		goto out;
	}
	if (host_check_version(h, cause) != 0) {
		host_disconnect(h);
		goto out;
	}
	rc = host_mark(ok_path, cause);
out:
	if (lock_fd >= 0)
		close(lock_fd);
	free(lock_path);
	free(log_path);
	free(ok_path);
	free(ctl);
	return rc;
}

/*
 * A stream to guest port `port` of session `name` on h: a socketpair to
 * an ssh running the remote's `vmux connect --announce`, whose first line
 * says "OK" or why not. The ssh is a grandchild, so nobody has to reap
 * it; it ends when the stream is closed. The fd (blocking), or -1.
 */
int
host_stream(const struct host *h, const char *name, unsigned port,
    uint64_t deadline, char **cause)
{
	char portstr[16], secs[24], line[HOST_LINE_MAX + 1];
	uint64_t now = mono_ms();
	long wait_s =
	    deadline > now ? (long)((deadline - now + 999) / 1000) : 1;
	size_t got = 0;
	int sv[2], st;
	pid_t pid;

	if (host_connect(h, cause) != 0)
		return -1;
	snprintf(portstr, sizeof portstr, "%u", port);
	snprintf(secs, sizeof secs, "%ld", wait_s);
	char *const words[] = {"connect", "--announce", "--timeout", secs, "--",
	    (char *)name, portstr};
	char **v = host_ssh_argv(h, 0, words, 7, cause); /* stdin: the stream */
	if (v == NULL)
		return -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
		xasprintf(cause, "socketpair: %s", strerror(errno));
		host_argv_free(v);
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		if (fork() != 0)
			_exit(0);
		int devnull = open("/dev/null", O_RDWR);
		dup2(sv[1], STDIN_FILENO);
		dup2(sv[1], STDOUT_FILENO);
		dup2(devnull, STDERR_FILENO);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGINT, SIG_IGN); /* the stream's owner ends it */
		execvp(v[0], v);
		_exit(127);
	}
	host_argv_free(v);
	close(sv[1]);
	if (pid < 0) {
		xasprintf(cause, "fork: %s", strerror(errno));
		close(sv[0]);
		return -1;
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	/* the first line, a byte at a time: what follows is the stream's */
	for (;;) {
		char c;
		ssize_t r;
		int w = wait_fd(sv[0], POLLIN, deadline + 5000);
		if (w <= 0) {
			xasprintf(
			    cause, "host %s: no answer from its vmux", h->name);
			break;
		}
		r = read(sv[0], &c, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			xasprintf(cause,
			    "host %s: the connection closed before the "
			    "session answered",
			    h->name);
			break;
		}
		if (c == '\n') {
			line[got] = '\0';
			if (strcmp(line, "OK") == 0)
				return sv[0];
			char *why = host_last_line(line);
			xasprintf(cause, "host %s: %s", h->name,
			    strncmp(why, "ERR ", 4) == 0 ? why + 4 : why);
			free(why);
			break;
		}
		if (got == HOST_LINE_MAX) {
			xasprintf(
			    cause, "host %s: its answer is too long", h->name);
			break;
		}
		line[got++] = c;
	}
	close(sv[0]);
	return -1;
}

/*
 * Run the remote's vmux with words, stdin from /dev/null, and keep its
 * stdout (up to max bytes: more is an error) in *out, NUL-terminated
 * (caller frees). Gives up at deadline, killing the ssh. Its exit status
 * (0 is success), or -1 with cause (ssh failed, too slow, too much).
 */
int
host_capture(const struct host *h, char *const *words, size_t nw,
    uint64_t deadline, size_t max, char **out, char **cause)
{
	char **v;
	int st;

	*out = NULL;
	if (host_connect(h, cause) != 0)
		return -1;
	if ((v = host_ssh_argv(h, HOST_NO_STDIN, words, nw, cause)) == NULL)
		return -1;
	st = host_run(v, 0, deadline, max, out);
	host_argv_free(v);
	if (st != -1 && WIFEXITED(st))
		return WEXITSTATUS(st);
	if (st == -1 && errno == ETIMEDOUT)
		xasprintf(cause, "host %s did not answer in time", h->name);
	else if (st == -1 && errno == EFBIG)
		xasprintf(cause, "host %s answered more than %zu bytes",
		    h->name, max);
	else if (st == -1)
		xasprintf(cause, "host %s: %s", h->name, strerror(errno));
	else
		xasprintf(cause, "host %s: ssh ended by a signal", h->name);
	free(*out);
	*out = NULL;
	return -1;
}
