/*
 * exec-many.c: one vmux command over several sessions at once: `vmux exec`
 * when a glob or -l picked more than one (`vmux exec -l class=cs101 --
 * make test`), `vmux kill` and `vmux close` likewise, `vmux check`, and
 * `vmux new --count`.
 *
 * Each session gets a child `vmux SUB NAME [the flags] [-- CMD]`, the same
 * binary (/proc/self/exe), at most m->parallel at a time; each
 * child's standard input is /dev/null and its output is kept, at most
 * EXEC_MANY_KEEP bytes per stream (the rest counted), so 30 sessions
 * printing megabytes cost little. At the end: a table of session, status,
 * exit code and first line of output (stdout's, else stderr's), or with
 * --json a list with each one's output (made printable, as a guest's
 * text always is here). The exit status is 0 when every
 * command exited 0, else 1. The parent owns every pipe and child and
 * reaps them all before returning.
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

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

#define EXEC_MANY_KEEP (64 * 1024)

/* The child's argv: vmux SUB NAME, a's flags as given, [-- CMD...] */
static char **
child_argv(const struct many *m, const char *self, const char *session)
{
	size_t n = 0;
	char **v = xcalloc(4, sizeof *v);

	v[n++] = xstrdup(self);
	v[n++] = xstrdup(m->sub);
	v[n++] = xstrdup(session);
	args_flags(m->a, m->skip, &v, &n); /* not the parent's (-l, --json) */
	v = xreallocarray(v, n + (size_t)m->ncmd + 2, sizeof *v);
	if (m->cmd != NULL) {
		if (!m->no_dashdash)
			v[n++] = xstrdup("--");
		for (int i = 0; i < m->ncmd; i++)
			v[n++] = xstrdup(m->cmd[i]);
	}
	v[n] = NULL;
	return v;
}

/* Start r's child, its stdin from input (NULL: /dev/null); -1 (status
 * 125) if it cannot. */
static int
run_start(struct run *r, char **argv, const char *input)
{
	int out[2], err[2], devnull;

	if (pipe2(out, O_CLOEXEC) != 0) {
		r->status = 125;
		return -1;
	}
	if (pipe2(err, O_CLOEXEC) != 0) {
		close(out[0]);
		close(out[1]);
		r->status = 125;
		return -1;
	}
	r->pid = fork();
	if (r->pid == 0) {
		devnull = open(
		    input != NULL ? input : "/dev/null", O_RDONLY | O_CLOEXEC);
		if (devnull < 0 || dup2(devnull, 0) < 0 ||
		    dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
			_exit(125);
		execvp(argv[0], argv); /* a path, or srun (slurm.c) */
		dprintf(2, "vmux: %s: %s\n", argv[0], strerror(errno));
		_exit(125);
	}
	close(out[1]);
	close(err[1]);
	if (r->pid < 0) {
		close(out[0]);
		close(err[0]);
		r->pid = -1;
		r->status = 125;
		r->out[1] = xstrdup("vmux: fork failed");
		r->len[1] = strlen(r->out[1]);
		return -1;
	}
	r->fd[0] = out[0];
	r->fd[1] = err[0];
	set_nonblock(out[0], 1);
	set_nonblock(err[0], 1);
	return 0;
}

/* Read what stream k of r has; keep up to EXEC_MANY_KEEP of it. */
static void
run_read(struct run *r, int k)
{
	char buf[16384];
	ssize_t n = read(r->fd[k], buf, sizeof buf);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		close(r->fd[k]);
		r->fd[k] = -1;
		return;
	}
	r->seen[k] += (size_t)n;
	if (r->len[k] < EXEC_MANY_KEEP) {
		size_t take = (size_t)n;
		if (take > EXEC_MANY_KEEP - r->len[k])
			take = EXEC_MANY_KEEP - r->len[k];
		r->out[k] = xrealloc(r->out[k], r->len[k] + take + 1);
		memcpy(r->out[k] + r->len[k], buf, take);
		r->len[k] += take;
		r->out[k][r->len[k]] = '\0';
	}
}

/* Wait for r's child once both its pipes are at EOF. */
static void
run_reap(struct run *r)
{
	int st = 125 << 8; /* can't happen: waitpid fails on our child */

	while (waitpid(r->pid, &st, 0) < 0 && errno == EINTR)
		;
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	r->pid = -1;
}

/* Run every child, m->parallel at a time, until all are reaped. */
static void
run_all(struct run *runs, size_t n, const struct many *m, const char *self)
{
	size_t next = 0, live = 0;
	struct pollfd *pfd = xcalloc(2 * n + 1, sizeof *pfd);

	for (;;) {
		size_t np = 0;
		while (live < (size_t)m->parallel && next < n) {
			char **argv = m->argv_of != NULL
			    ? m->argv_of(m, self, runs[next].session)
			    : child_argv(m, self, runs[next].session);
			runs[next].started_ms = mono_ms();
			if (run_start(&runs[next], argv, m->input) == 0)
				live++;
			else if (m->done != NULL)
				m->done(&runs[next]);
			for (char **p = argv; *p != NULL; p++)
				free(*p);
			free(argv);
			next++;
		}
		if (live == 0 && next == n)
			break;
		for (size_t i = 0; i < n; i++)
			for (int k = 0; k < 2; k++)
				if (runs[i].pid > 0 && runs[i].fd[k] >= 0)
					pfd[np++] = (struct pollfd){
					    runs[i].fd[k], POLLIN, 0};
		if (np > 0 && poll(pfd, np, -1) < 0 && errno != EINTR)
			fatal("poll: %s", strerror(errno)); /* can't happen */
		for (size_t i = 0; i < n; i++) {
			struct run *r = &runs[i];
			if (r->pid <= 0)
				continue;
			for (int k = 0; k < 2; k++)
				if (r->fd[k] >= 0)
					run_read(r, k);
			if (r->fd[0] < 0 && r->fd[1] < 0) {
				run_reap(r);
				live--;
				if (m->done != NULL)
					m->done(r);
			}
		}
	}
	free(pfd);
}

/* What a status means, in a word or two (a check passes or fails). */
static const char *
status_word(int st, int check)
{
	if (check) /* 125: vmux could not run it (stopped, unreachable) */
		return st == 0  ? "pass"
		    : st == 124 ? "timed out"
		    : st == 125 ? "error"
		                : "fail";
	switch (st) {
	case 0:
		return "ok";
	case 124:
		return "timed out";
	case 125:
		return "error";
	case 126:
		return "cannot run";
	case 127:
		return "not found";
	default:
		return st > 128 ? "killed" : "failed";
	}
}

/* The first (or last) non-empty line of s (len bytes), printable, at
 * most 60 characters. */
char *
many_line(const char *s, size_t len, int last)
{
	char *line, *safe;
	size_t i = 0, end;

	if (last) {
		end = len;
		while (end > 0 && (s[end - 1] == '\n' || s[end - 1] == '\r'))
			end--;
		i = end;
		while (i > 0 && s[i - 1] != '\n' && s[i - 1] != '\r')
			i--;
	} else {
		while (i < len && (s[i] == '\n' || s[i] == '\r'))
			i++;
		end = i;
		while (end < len && s[end] != '\n' && s[end] != '\r')
			end++;
	}
	line = xstrndup(s + i, end - i);
	safe = str_printable(line, 0);
	free(line);
	if (strlen(safe) > 60) {
		size_t cut = 57;
		while (cut > 0 && ((unsigned char)safe[cut] & 0xc0) == 0x80)
			cut--; /* not inside a UTF-8 character */
		strcpy(safe + cut, "...");
	}
	return safe;
}

/* s[0..len) as a C string, each NUL shown as \\0 (freed by the caller). */
static char *
nul_shown(const char *s, size_t len)
{
	char *t = xmalloc(2 * len + 1), *o = t;

	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\0') {
			*o++ = '\\';
			*o++ = '0';
		} else
			*o++ = s[i];
	}
	*o = '\0';
	return t;
}

/* The result list for --json. */
static cJSON *
runs_json(const struct run *runs, size_t n, int check)
{
	cJSON *arr = cJSON_CreateArray();

	for (size_t i = 0; i < n; i++) {
		const struct run *r = &runs[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "session", r->session);
		cJSON_AddStringToObject(
		    o, "status", status_word(r->status, check));
		cJSON_AddNumberToObject(o, "exit_code", r->status);
		for (int k = 0; k < 2; k++) {
			const char *name = k ? "stderr" : "stdout";
			char *text = nul_shown(r->out[k], r->len[k]);
			char *key, *safe = str_printable(text, STR_KEEP_NL);
			cJSON_AddStringToObject(o, name, safe);
			free(safe);
			free(text);
			if (r->seen[k] > r->len[k]) {
				xasprintf(&key, "%s_truncated", name);
				cJSON_AddBoolToObject(o, key, 1);
				free(key);
				xasprintf(&key, "%s_bytes", name);
				cJSON_AddNumberToObject(
				    o, key, (double)r->seen[k]);
				free(key);
			}
		}
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}

/* The table: session, status, exit code, first line of output (a
 * check's: its last line, which says why). */
static void
runs_table(const struct run *runs, size_t n, int check)
{
	int w = 7;

	for (size_t i = 0; i < n; i++)
		if ((int)strlen(runs[i].session) > w)
			w = (int)strlen(runs[i].session);
	printf("%-*s  %-10s  %4s  %s\n", w, "SESSION",
	    check ? "RESULT" : "STATUS", "EXIT",
	    check ? "LAST LINE" : "OUTPUT");
	for (size_t i = 0; i < n; i++) {
		const struct run *r = &runs[i];
		int k = r->len[0] > 0 ? 0 : 1;
		char *line =
		    many_line(r->out[k] ? r->out[k] : "", r->len[k], check);
		printf("%-*s  %-10s  %4d  %s\n", w, r->session,
		    status_word(r->status, check), r->status, line);
		free(line);
	}
}

/* Order for qsort: runs by session name. */
static int
run_cmp(const void *a, const void *b)
{
	return strcmp(
	    ((const struct run *)a)->session, ((const struct run *)b)->session);
}

/*
 * Run m's command in sessions[0..n); print the table or the JSON list
 * unless m->quiet. 0 if every child exited 0, else 1.
 */
int
many_run(const struct many *m, char *const *sessions, size_t n)
{
	struct run *runs = xcalloc(n, sizeof *runs);
	char *self = exe_path();
	int rc = 0;

	if (self == NULL) {
		cli_error("cannot find the vmux binary: %s", strerror(errno));
		free(runs);
		return EXIT_VMUX;
	}
	for (size_t i = 0; i < n; i++) {
		runs[i].session = sessions[i];
		runs[i].fd[0] = runs[i].fd[1] = -1;
	}
	run_all(runs, n, m, self);
	free(self);
	qsort(runs, n, sizeof *runs, run_cmp);
	for (size_t i = 0; i < n; i++) {
		struct run *r = &runs[i];
		if (r->status != 0)
			rc = 1;
		if (m->record != NULL) {
			int k = r->len[0] > 0 ? 0 : 1;
			char *line =
			    many_line(r->out[k] ? r->out[k] : "", r->len[k], 1);
			m->record(r->session, r->status, line);
			free(line);
		}
	}
	if (m->result != NULL)
		m->result(runs, n);
	else if (cli_json())
		cli_result(runs_json(runs, n, m->check));
	else
		runs_table(runs, n, m->check);
	for (size_t i = 0; i < n; i++) {
		free(runs[i].out[0]);
		free(runs[i].out[1]);
	}
	free(runs);
	return rc;
}

/*
 * a's own command (kill, close) in each of the a->nnames sessions leading
 * argv, with the arguments that follow them: vmux SUB NAME ARGS...
 */
int
many_sub(struct args *a, int parallel)
{
	static const char *const skip[] = {"selector", "json", NULL};
	struct many m = {.a = a,
	    .sub = a->entry->name,
	    .skip = skip,
	    .cmd = a->argv + a->nnames,
	    .ncmd = a->argc - a->nnames,
	    .no_dashdash = 1,
	    .parallel = parallel};

	return many_run(&m, a->argv, (size_t)a->nnames);
}

/* vmux exec over the a->nnames sessions leading argv; the command
 * follows them. */
int
exec_many(struct args *a)
{
	static const char *const skip[] = {
	    "selector", "json", "interactive", NULL};
	struct many m = {.a = a,
	    .sub = "exec",
	    .skip = skip,
	    .cmd = a->argv + a->nnames,
	    .ncmd = a->argc - a->nnames,
	    .parallel = MANY_PARALLEL};

	return many_run(&m, a->argv, (size_t)a->nnames);
}
