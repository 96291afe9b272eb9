/*
 * remote.c: commands for sessions on other hosts (-H, $VMUX_HOST, the
 * settings' default-host, HOST:NAME).
 *
 * A command for one other host runs there: the remote vmux, through ssh
 * (host.c), with our stdin, stdout and stderr, so its output, --json and
 * exit status are what it would be there. Two exceptions run here: cp,
 * whose host side is this machine (it reaches the guest through a
 * host_stream), and ls over several hosts, which asks each for its JSON
 * and prints one table. When ssh itself fails (255 and the master is
 * gone) the status is 125 with what ssh said. main() owns the hosts list.
 */
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

#define REMOTE_LS_MAX    (16 * 1024 * 1024) /* one host's ls --json */
#define REMOTE_LS_VALUES 500000 /* ... and the values in it (json_values) */
#define REMOTE_LS_MS     15000  /* every host's answer, from the start */
#define REMOTE_ERR_MAX   4096   /* a host's stderr kept to be said */

static struct host remote_host; /* what cli_remote points to */
static char **remote_tui_hosts; /* what cli_tui_hosts points to */

/*
 * How ssh runs e there (host_ssh_argv's mode): a terminal for the
 * commands that want one (CMD_TTY) when we have one; our stdin only for
 * the commands that read it (CMD_STDIN: any other would swallow a
 * script's input).
 */
static int
remote_mode(const struct cmd_entry *e)
{
	int mode = 0;

	if (isatty(STDIN_FILENO) && isatty(STDOUT_FILENO) &&
	    (e->flags & CMD_TTY))
		mode |= HOST_TTY;
	if (!(e->flags & CMD_STDIN))
		mode |= HOST_NO_STDIN;
	return mode;
}

/* Is word (argv's index) one of the session names e's operands hold? */
static int
remote_is_name(const struct cmd_entry *e, const struct args *a, int k)
{
	if (e->flags & CMD_NAME_PATH)
		return k < 2;
	if (e->flags & CMD_NAME_ONE)
		return k == 0 && !args_has(a, "selector");
	if (e->flags & CMD_NAMES)
		return !(k == 0 && (e->flags & CMD_FIRST_NOT_NAME));
	return 0;
}

/*
 * If word starts with a host's name and ':' (a configured host or
 * "local"; for cp, HOST:NAME:PATH), its length with the colon, else 0.
 */
static size_t
remote_prefix(const struct cmd_entry *e, const struct settings *s,
    const char *word, char **host)
{
	const char *colon = strchr(word, ':');
	size_t n, i;

	if (colon == NULL || colon == word)
		return 0;
	n = (size_t)(colon - word);
	/* cp's NAME:PATH has one colon: a prefix needs a second */
	if ((e->flags & CMD_NAME_PATH) && strchr(colon + 1, ':') == NULL)
		return 0;
	if (n == 5 && strncmp(word, "local", 5) == 0) {
		*host = xstrdup("local");
		return n + 1;
	}
	for (i = 0; i < s->nhosts; i++) {
		if (strlen(s->hosts[i].name) == n &&
		    strncmp(s->hosts[i].name, word, n) == 0) {
			*host = xstrdup(s->hosts[i].name);
			return n + 1;
		}
	}
	return 0;
}

/* Wait for pid; its status as a shell's $?, 255 for ssh's own 255. */
static int
remote_wait(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR)
			return EXIT_VMUX;
	}
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
}

/*
 * Run the command words on h with our stdio; its exit status. 255 is
 * ssh's own failure when the master connection went with it.
 */
static int
remote_forward(const struct host *h, int mode, char *const *words, size_t n)
{
	char *cause = NULL, **v;
	void (*old_int)(int), (*old_quit)(int);
	pid_t pid;
	int rc;

	if (host_connect(h, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		return EXIT_VMUX;
	}
	if ((v = host_ssh_argv(h, mode, words, n, &cause)) == NULL) {
		cli_error("%s", cause);
		free(cause);
		return EXIT_VMUX;
	}
	fflush(stdout);
	/* ^C reaches ssh (our process group): it decides, we report */
	old_int = signal(SIGINT, SIG_IGN);
	old_quit = signal(SIGQUIT, SIG_IGN);
	pid = fork();
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		execvp(v[0], v);
		fprintf(
		    stderr, "vmux: cannot run %s: %s\n", v[0], strerror(errno));
		_exit(EXIT_VMUX);
	}
	host_argv_free(v);
	if (pid < 0) {
		cli_error("fork: %s", strerror(errno));
		rc = EXIT_VMUX;
	} else
		rc = remote_wait(pid);
	signal(SIGINT, old_int);
	signal(SIGQUIT, old_quit);
	if (rc == 255 && !host_alive(h)) {
		cli_error("host %s: the ssh connection failed (ssh said why "
		          "above)",
		    h->name);
		rc = EXIT_VMUX;
	}
	return rc;
}

/* One host's part of a many-host ls: its child and what it printed. */
struct remote_part {
	const char *host;
	pid_t pid;   /* its own process group's leader */
	int fd, efd; /* its stdout and stderr, or -1 */
	char *out;   /* stdout, NUL-terminated */
	size_t len;
	char err[REMOTE_ERR_MAX + 1]; /* the start of its stderr */
	size_t elen;
	int status;
	int late; /* killed at the deadline */
};

/*
 * Read from *fd into out (grown, up to max: past it the part is cut off)
 * or, with out NULL, into the fixed err buffer (the rest is dropped).
 * 0 while it stays open, -1 once closed.
 */
static int
remote_take(struct remote_part *p, int *fd, int is_err)
{
	char buf[65536];
	ssize_t r = read(*fd, buf, sizeof buf);

	if (r < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (r > 0 && is_err) {
		size_t k = (size_t)r;
		if (k > REMOTE_ERR_MAX - p->elen)
			k = REMOTE_ERR_MAX - p->elen;
		memcpy(p->err + p->elen, buf, k);
		p->elen += k;
		p->err[p->elen] = '\0';
		return 0;
	}
	if (r > 0 && p->len + (size_t)r <= REMOTE_LS_MAX) {
		p->out = xrealloc(p->out, p->len + (size_t)r + 1);
		memcpy(p->out + p->len, buf, (size_t)r);
		p->len += (size_t)r;
		p->out[p->len] = '\0';
		return 0;
	}
	if (r > 0) { /* a host that never stops */
		kill(-p->pid, SIGKILL);
		free(p->out);
		p->out = NULL;
		p->len = 0;
	}
	close(*fd);
	*fd = -1;
	return -1;
}

/* A signal that came while the hosts were asked (0: none). */
static volatile sig_atomic_t remote_signal;

/* Handler: stop asking (remote_collect sees it). */
static void
remote_on_signal(int sig)
{
	remote_signal = sig;
}

/*
 * Read every part's stdout and stderr until all close or the deadline (or
 * a signal: the children are in their own process groups, so the
 * terminal's ^C reaches only us), when the slow ones are killed (their
 * process group: ssh too), then reap them.
 */
static void
remote_collect(struct remote_part *p, size_t n, uint64_t deadline)
{
	size_t i;
	struct pollfd *pfd = xcalloc(2 * n, sizeof *pfd);

	for (;;) {
		size_t open = 0;
		uint64_t now = mono_ms();

		for (i = 0; i < n; i++) {
			pfd[2 * i] = (struct pollfd){p[i].fd, POLLIN, 0};
			pfd[2 * i + 1] = (struct pollfd){p[i].efd, POLLIN, 0};
			open += (p[i].fd >= 0) + (p[i].efd >= 0);
		}
		if (open == 0)
			break;
		if (now >= deadline || remote_signal != 0) {
			for (i = 0; i < n; i++) {
				if (p[i].fd < 0 && p[i].efd < 0)
					continue;
				kill(-p[i].pid, SIGKILL);
				p[i].late = 1;
				if (p[i].fd >= 0)
					close(p[i].fd);
				if (p[i].efd >= 0)
					close(p[i].efd);
				p[i].fd = p[i].efd = -1;
			}
			break;
		}
		if (poll(pfd, 2 * n, (int)(deadline - now)) < 0 &&
		    errno != EINTR)
			break;
		for (i = 0; i < n; i++) {
			if (p[i].fd >= 0 && pfd[2 * i].revents != 0)
				remote_take(&p[i], &p[i].fd, 0);
			if (p[i].efd >= 0 && pfd[2 * i + 1].revents != 0)
				remote_take(&p[i], &p[i].efd, 1);
		}
	}
	free(pfd);
	for (i = 0; i < n; i++)
		p[i].status = p[i].pid > 0 ? remote_wait(p[i].pid) : EXIT_VMUX;
}

/*
 * Say what host p wrote on stderr, each line after "vmux: host H: " and
 * made printable (another host's text is untrusted: an escape there
 * would reach this terminal).
 */
static void
remote_say_stderr(const struct remote_part *p)
{
	char *copy = xstrdup(p->err), *line, *save;

	for (line = strtok_r(copy, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		char *safe = str_printable(line, 0);
		const char *tail =
		    strncmp(safe, "vmux: ", 6) == 0 ? safe + 6 : safe;
		if (*tail != '\0')
			fprintf(stderr, "vmux: host %s: %s\n", p->host, tail);
		free(safe);
	}
	if (p->elen == REMOTE_ERR_MAX)
		fprintf(stderr, "vmux: host %s: (more on stderr, not shown)\n",
		    p->host);
	free(copy);
}

/*
 * A JSON field as text for the table ("-" when missing). Strings were
 * made printable when the host's answer was read (remote_printable).
 */
static const char *
remote_field(const cJSON *o, const char *key, char *buf, size_t len)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (cJSON_IsString(v))
		return v->valuestring;
	if (cJSON_IsNumber(v)) {
		snprintf(buf, len, "%.0f", v->valuedouble);
		return buf;
	}
	return "-";
}

/* Make every string in j printable: another host's text is untrusted. */
static void
remote_printable(cJSON *j)
{
	cJSON *c;

	if (cJSON_IsString(j)) {
		char *p = str_printable(j->valuestring, 0);
		cJSON_SetValuestring(j, p);
		free(p);
	}
	cJSON_ArrayForEach(c, j) remote_printable(c);
}

/*
 * ls over several hosts (this machine is "local"): each lists its own as
 * JSON, in parallel; one table (or one JSON array, each session with its
 * "host") of them all. A host that fails is said on stderr and the rest
 * are still listed; the status is then 125. Every host is untrusted: one
 * that has not answered within REMOTE_LS_MS is cut off, what it says on
 * stderr is made printable, and an answer is refused past REMOTE_LS_MAX
 * bytes or REMOTE_LS_VALUES values (before it is parsed).
 */
static int
remote_ls(struct args *a, char **hosts, size_t nhosts)
{
	struct remote_part *p = xcalloc(nhosts, sizeof *p);
	const char *sel = args_get(a, "selector");
	char *self = exe_path();
	cJSON *all = cJSON_CreateArray();
	size_t i, hw = 4, nw = 4;
	int rc = 0, j;

	if (self == NULL) {
		cli_error("cannot find vmux's own path: %s", strerror(errno));
		free(p);
		cJSON_Delete(all);
		return EXIT_VMUX;
	}
	{
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = remote_on_signal; /* no SA_RESTART: poll ends */
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
	}
	for (i = 0; i < nhosts; i++) {
		char *argv[8];
		int k = 0, fd[2], efd[2];
		argv[k++] = self;
		argv[k++] = "-H";
		argv[k++] = hosts[i];
		argv[k++] = "ls";
		argv[k++] = "--json";
		if (sel != NULL) {
			argv[k++] = "-l";
			argv[k++] = (char *)sel;
		}
		argv[k] = NULL;
		p[i].host = hosts[i];
		p[i].fd = p[i].efd = -1;
		if (pipe2(fd, O_CLOEXEC) != 0)
			continue;
		if (pipe2(efd, O_CLOEXEC) != 0) {
			close(fd[0]);
			close(fd[1]);
			continue;
		}
		fflush(stdout);
		fflush(stderr);
		p[i].pid = fork();
		if (p[i].pid == 0) {
			setpgid(
			    0, 0); /* its ssh goes with it at the deadline */
			dup2(fd[1], STDOUT_FILENO);
			dup2(efd[1], STDERR_FILENO);
			execv(self, argv);
			_exit(EXIT_VMUX);
		}
		if (p[i].pid > 0)
			setpgid(p[i].pid, p[i].pid); /* either wins the race */
		close(fd[1]);
		close(efd[1]);
		p[i].fd = fd[0];
		p[i].efd = efd[0];
		if (p[i].pid < 0) {
			close(fd[0]);
			close(efd[0]);
			p[i].fd = p[i].efd = -1;
		}
	}
	remote_collect(p, nhosts, mono_ms() + REMOTE_LS_MS);
	if (remote_signal != 0) { /* what the signal means, now all are gone */
		signal(remote_signal, SIG_DFL);
		raise(remote_signal);
	}
	for (i = 0; i < nhosts; i++) {
		cJSON *doc = NULL, *s;
		int many = p[i].out != NULL &&
		    json_values(p[i].out, REMOTE_LS_VALUES) > REMOTE_LS_VALUES;

		remote_say_stderr(&p[i]);
		if (p[i].out != NULL && !many)
			doc = cJSON_Parse(p[i].out);
		if (p[i].late || many || p[i].status != 0 ||
		    !cJSON_IsArray(doc)) {
			const cJSON *err;
			remote_printable(doc);
			err = cJSON_GetObjectItemCaseSensitive(doc, "error");
			if (p[i].late)
				fprintf(stderr,
				    "vmux: host %s: no answer within %d s\n",
				    p[i].host, REMOTE_LS_MS / 1000);
			else if (many)
				fprintf(stderr,
				    "vmux: host %s: its answer holds more "
				    "than %d values; not read\n",
				    p[i].host, REMOTE_LS_VALUES);
			else
				fprintf(stderr, "vmux: host %s: %s\n",
				    p[i].host,
				    cJSON_IsString(err) ? err->valuestring
				                        : "ls failed");
			cJSON_Delete(doc);
			rc = EXIT_VMUX;
			continue;
		}
		remote_printable(doc);
		while ((s = cJSON_DetachItemFromArray(doc, 0)) != NULL) {
			char buf[32];
			if (!cJSON_IsObject(s)) {
				cJSON_Delete(s);
				continue;
			}
			/* ours, whatever the host said */
			cJSON_DeleteItemFromObjectCaseSensitive(s, "host");
			cJSON_AddStringToObject(s, "host", p[i].host);
			if (strlen(p[i].host) > hw)
				hw = strlen(p[i].host);
			if (strlen(remote_field(s, "name", buf, 32)) > nw)
				nw = strlen(remote_field(s, "name", buf, 32));
			cJSON_AddItemToArray(all, s);
		}
		cJSON_Delete(doc);
	}
	if (args_has(a, "json")) {
		cli_result(all);
		all = NULL;
	} else if (cJSON_GetArraySize(all) > 0) {
		printf("%-*s  %-*s  %-8s  %-5s  %4s  %6s  %s\n", (int)hw,
		    "HOST", (int)nw, "NAME", "STATE", "ACCEL", "CPUS", "MEMORY",
		    "CREATED");
		for (j = 0; j < cJSON_GetArraySize(all); j++) {
			const cJSON *s = cJSON_GetArrayItem(all, j);
			char b[6][32], mem[40];
			snprintf(mem, sizeof mem, "%sM",
			    remote_field(s, "memory_mb", b[5], 32));
			printf("%-*s  %-*s  %-8s  %-5s  %4s  %6s  %s\n",
			    (int)hw, remote_field(s, "host", b[0], 32), (int)nw,
			    remote_field(s, "name", b[1], 32),
			    remote_field(s, "state", b[2], 32),
			    remote_field(s, "accel", b[3], 32),
			    remote_field(s, "cpus", b[4], 32),
			    strcmp(mem, "-M") == 0 ? "-" : mem,
			    remote_field(s, "created", b[4], 32));
		}
	}
	cJSON_Delete(all);
	for (i = 0; i < nhosts; i++)
		free(p[i].out);
	free(p);
	free(self);
	return rc;
}

/* Is h a host spec meaning this machine? */
static int
remote_is_local(const char *h)
{
	return h == NULL || strcmp(h, "local") == 0;
}

/*
 * Route command e (parsed into a from argc/argv, argv[0] its name) to the
 * host it is for. Returns 0 when it runs here (HOST:NAME prefixes of
 * "local" removed, cli_remote set for cp on another host), or 1 when it
 * was handled (*rc its status).
 */
int
remote_route(const struct cmd_entry *e, struct args *a, int argc, char **argv,
    char **hosts, size_t nhosts, int *rc)
{
	struct settings s;
	char *cause = NULL, *prefix_host = NULL, **words;
	const char *want = NULL, *env = getenv("VMUX_HOST");
	size_t i;
	int k, handled = 1;

	if (e->flags & CMD_THIS_HOST)
		return 0; /* about this machine's settings */
	if (settings_load_hosts(&s, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		*rc = EXIT_VMUX;
		return 1;
	}
	/* every configured host, for -H all */
	char **expanded = NULL;
	size_t nexp = 0;
	for (i = 0; i < nhosts; i++) {
		if (strcmp(hosts[i], "all") != 0) {
			expanded =
			    xreallocarray(expanded, nexp + 1, sizeof *expanded);
			expanded[nexp++] = hosts[i];
			continue;
		}
		for (size_t j = 0; j < s.nhosts; j++) {
			expanded =
			    xreallocarray(expanded, nexp + 1, sizeof *expanded);
			expanded[nexp++] = s.hosts[j].name;
		}
	}
	if (nexp == 1)
		want = expanded[0];
	else if (nexp == 0)
		want = env != NULL && *env != '\0' ? env : s.default_host;
	/* HOST:NAME operands: one host for all, agreeing with -H */
	for (k = 0; k < a->argc; k++) {
		char *h = NULL;
		size_t n;
		if (!remote_is_name(e, a, k) ||
		    (n = remote_prefix(e, &s, a->argv[k], &h)) == 0)
			continue;
		if (prefix_host != NULL && strcmp(prefix_host, h) != 0) {
			*rc = cli_usage_error(e,
			    "'%s' and '%s:...' are on two hosts: one command "
			    "a host",
			    a->argv[k], prefix_host);
			free(h);
			goto out;
		}
		if (nexp > 0 && (nexp > 1 || strcmp(want, h) != 0)) {
			*rc = cli_usage_error(e, "'%s' is on host %s, not %s",
			    a->argv[k], h, nexp > 1 ? "the -H hosts" : want);
			free(h);
			goto out;
		}
		free(prefix_host);
		prefix_host = h;
		/* strip it where both argv and a->argv point */
		for (int m = 0; m < argc; m++) {
			if (argv[m] == a->argv[k])
				argv[m] += n;
		}
		a->argv[k] += n;
	}
	if (prefix_host != NULL)
		want = prefix_host;
	if ((e->flags & CMD_HOSTS_HERE) && !args_has(a, "model-json") &&
	    (nexp > 1 || (nexp == 1 && !remote_is_local(want)))) {
		/* one TUI here over every host asked for (tui/hosts.c) */
		remote_tui_hosts = xreallocarray(
		    remote_tui_hosts, nexp, sizeof *remote_tui_hosts);
		for (i = 0; i < nexp; i++)
			remote_tui_hosts[i] = xstrdup(expanded[i]);
		cli_tui_hosts = remote_tui_hosts;
		cli_tui_nhosts = nexp;
		handled = 0;
		goto out;
	}
	if (nexp > 1) {
		if (e->flags & CMD_ALL_SESSIONS)
			*rc = remote_ls(a, expanded, nexp);
		else
			*rc = cli_usage_error(e,
			    "several hosts (-H) work with ls and tui; run %s "
			    "on one host at a time",
			    e->name);
		goto out;
	}
	if (remote_is_local(want)) {
		handled = 0;
		goto out;
	}
	host_free(&remote_host);
	if (host_resolve(want, &s, &remote_host, &cause) != 0) {
		cli_error("%s", cause);
		free(cause);
		*rc = EXIT_VMUX;
		goto out;
	}
	if (remote_host.slurm) { /* a cluster: Slurm's tools, not ssh */
		*rc = slurm_route(&remote_host, e, a, argc, argv);
		goto out;
	}
	if (e->flags & CMD_NAME_PATH) {
		/* the host side of cp is this machine */
		if (host_connect(&remote_host, &cause) != 0) {
			cli_error("%s", cause);
			free(cause);
			*rc = EXIT_VMUX;
			goto out;
		}
		cli_remote = &remote_host;
		handled = 0;
		goto out;
	}
	words = argv; /* argv[0] is the command's name: vmux NAME ... */
	*rc = remote_forward(&remote_host, remote_mode(e), words, (size_t)argc);
out:
	free(expanded);
	free(prefix_host);
	settings_free(&s);
	return handled;
}
