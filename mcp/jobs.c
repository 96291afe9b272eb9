/*
 * jobs.c: the vmux commands behind MCP tool calls, as child processes.
 *
 * Every tool runs a vmux command (`vmux exec --json`, `vmux capture`, ...)
 * so that the server shares every rule with the command line. The server
 * is one thread: mcp_job_pollfds() adds the children's pipes to its poll set,
 * mcp_job_service() reads and writes what is ready, mcp_job_reap() collects the
 * ended ones and calls their on_done. Output is kept bounded (JOB_OUT_MAX
 * of stdout, JOB_ERR_MAX of stderr). This module owns the list of jobs;
 * a job is freed by its owner (mcp_job_free) once on_done has run.
 */
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "mcp.h"

#define JOB_STOP_MS 10000 /* at exit: how long TERM has before KILL */

static struct mcp_job *jobs; /* started, not yet done */

/* Close *fd if open. */
static void
close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/*
 * Start argv (argv[0] "vmux": this vmux) with in[0..in_len) on its stdin
 * (NULL: /dev/null). The job, or NULL with *cause.
 */
struct mcp_job *
mcp_job_start(char *const argv[], const void *in, size_t in_len, char **cause)
{
	int out[2], err[2], inp[2] = {-1, -1}, devnull;
	struct mcp_job *j;
	char *exe = exe_path();
	pid_t pid;

	if (pipe2(out, O_CLOEXEC) != 0) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		free(exe);
		return NULL;
	}
	if (pipe2(err, O_CLOEXEC) != 0 ||
	    (in != NULL && pipe2(inp, O_CLOEXEC) != 0)) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		close(out[0]), close(out[1]);
		free(exe);
		return NULL;
	}
	pid = fork();
	if (pid < 0) {
		xasprintf(cause, "fork: %s", strerror(errno));
		free(exe);
		close(out[0]), close(out[1]), close(err[0]), close(err[1]);
		if (in != NULL)
			close(inp[0]), close(inp[1]);
		return NULL;
	}
	if (pid == 0) {
		/* Its own process group: a ^C meant for the server's terminal
		 * does not reach the commands under way. */
		setpgid(0, 0);
		signal(SIGPIPE, SIG_DFL);
		if (in != NULL)
			dup2(inp[0], STDIN_FILENO);
		else if ((devnull = open("/dev/null", O_RDONLY)) >= 0)
			dup2(devnull, STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		dup2(err[1], STDERR_FILENO);
		execv(exe, argv);
		_exit(127);
	}
	free(exe);
	close(out[1]);
	close(err[1]);
	j = xcalloc(1, sizeof *j);
	j->pid = pid;
	j->out_fd = out[0];
	j->err_fd = err[0];
	j->in_fd = -1;
	set_nonblock(j->out_fd, 1);
	set_nonblock(j->err_fd, 1);
	if (in != NULL) {
		close(inp[0]);
		j->in_fd = inp[1];
		set_nonblock(j->in_fd, 1);
		j->in = xmalloc(in_len > 0 ? in_len : 1);
		memcpy(j->in, in, in_len);
		j->in_len = in_len;
		if (in_len == 0)
			close_fd(&j->in_fd);
	}
	j->next = jobs;
	jobs = j;
	return j;
}

/* End a job early (notifications/cancelled) with sig: SIGKILL for a
 * vmux exec (its connection closes and the agent kills the command's
 * process group in the guest), SIGTERM for a command that cleans up after
 * itself (vmux new). on_done still runs. */
void
mcp_job_cancel(struct mcp_job *j, int sig)
{
	j->cancelled = 1;
	if (!j->reaped && j->pid > 0)
		kill(-j->pid, sig);
}

/* Add the open pipes of every job to pfd (at most max); how many. */
size_t
mcp_job_pollfds(struct pollfd *pfd, size_t max)
{
	size_t n = 0;

	for (struct mcp_job *j = jobs; j != NULL; j = j->next) {
		if (j->out_fd >= 0 && n < max)
			pfd[n++] = (struct pollfd){j->out_fd, POLLIN, 0};
		if (j->err_fd >= 0 && n < max)
			pfd[n++] = (struct pollfd){j->err_fd, POLLIN, 0};
		if (j->in_fd >= 0 && n < max)
			pfd[n++] = (struct pollfd){j->in_fd, POLLOUT, 0};
	}
	return n;
}

/* Read what fd has into *buf (kept up to max; the rest is dropped). */
static void
drain(int *fd, char **buf, size_t *len, size_t max)
{
	char chunk[65536];
	ssize_t got;

	for (;;) {
		got = read(*fd, chunk, sizeof chunk);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 && errno == EAGAIN)
			return;
		if (got <= 0) {
			close_fd(fd);
			return;
		}
		if (*len + (size_t)got > max)
			got = (ssize_t)(max - *len);
		if (got > 0) {
			*buf = xrealloc(*buf, *len + (size_t)got + 1);
			memcpy(*buf + *len, chunk, (size_t)got);
			*len += (size_t)got;
			(*buf)[*len] = '\0';
		}
	}
}

/*
 * Hand complete stdout lines to on_line. They are not kept, but the last
 * one (a --json-lines result): a command streaming output for hours holds
 * one line at a time, never all it printed.
 */
static void
lines(struct mcp_job *j)
{
	char *nl, *line;
	size_t from = 0, n;

	if (j->on_line == NULL)
		return;
	while (from < j->out_len &&
	    (nl = memchr(j->out + from, '\n', j->out_len - from)) != NULL) {
		line = j->out + from;
		n = (size_t)(nl - line);
		j->on_line(j, line, n);
		free(j->last_line);
		j->last_line = xstrndup(line, n);
		j->last_len = n;
		from += n + 1;
	}
	memmove(j->out, j->out + from, j->out_len - from);
	j->out_len -= from;
	if (j->out != NULL)
		j->out[j->out_len] = '\0';
}

/*
 * Hand complete stderr lines not handed yet to on_err_line; stderr stays
 * kept whole (the error line of a failed command is its last).
 */
static void
err_lines(struct mcp_job *j)
{
	char *nl;

	while (j->on_err_line != NULL && j->err_seen < j->err_len &&
	    (nl = memchr(j->err + j->err_seen, '\n',
	         j->err_len - j->err_seen)) != NULL) {
		j->on_err_line(j, j->err + j->err_seen,
		    (size_t)(nl - (j->err + j->err_seen)));
		j->err_seen = (size_t)(nl - j->err) + 1;
	}
}

/* Serve the ready descriptors among pfd[0..n). */
void
mcp_job_service(const struct pollfd *pfd, size_t n)
{
	ssize_t put;

	for (size_t i = 0; i < n; i++) {
		if (pfd[i].revents == 0)
			continue;
		for (struct mcp_job *j = jobs; j != NULL; j = j->next) {
			if (pfd[i].fd == j->out_fd) {
				drain(&j->out_fd, &j->out, &j->out_len,
				    JOB_OUT_MAX);
				lines(j);
			} else if (pfd[i].fd == j->err_fd) {
				drain(&j->err_fd, &j->err, &j->err_len,
				    JOB_ERR_MAX);
				err_lines(j);
			} else if (pfd[i].fd == j->in_fd) {
				put = write(j->in_fd, j->in + j->in_off,
				    j->in_len - j->in_off);
				if (put > 0)
					j->in_off += (size_t)put;
				if ((put < 0 && errno != EAGAIN &&
				        errno != EINTR) ||
				    j->in_off == j->in_len)
					close_fd(&j->in_fd);
			} else
				continue;
			break;
		}
	}
}

/* Collect the jobs that ended (and whose output pipes closed): each is
 * taken off the list and its on_done called. */
void
mcp_job_reap(void)
{
	struct mcp_job **jp = &jobs, *j;
	pid_t r;

	while ((j = *jp) != NULL) {
		/* Output closed: the command is exiting now, wait the moment
		 * it takes (a vmux command closes its output only at exit). */
		for (int tries = 0; !j->reaped && tries < 1000; tries++) {
			r = waitpid(j->pid, &j->status, WNOHANG);
			if (r == j->pid || (r < 0 && errno == ECHILD))
				j->reaped = 1;
			else if (j->out_fd >= 0 || j->err_fd >= 0)
				break;
			else
				usleep(1000);
		}
		if (!j->reaped || j->out_fd >= 0 || j->err_fd >= 0) {
			/* a grandchild may hold the pipes: once ours is
			 * gone, what is there is all there is */
			if (j->reaped) {
				if (j->out_fd >= 0)
					drain(&j->out_fd, &j->out, &j->out_len,
					    JOB_OUT_MAX);
				if (j->err_fd >= 0)
					drain(&j->err_fd, &j->err, &j->err_len,
					    JOB_ERR_MAX);
				close_fd(&j->out_fd);
				close_fd(&j->err_fd);
				lines(j);
			} else {
				jp = &j->next;
				continue;
			}
		}
		close_fd(&j->in_fd);
		*jp = j->next;
		j->next = NULL;
		if (j->on_done != NULL)
			j->on_done(j);
	}
}

/* Jobs under way. */
int
mcp_job_count(void)
{
	int n = 0;

	for (struct mcp_job *j = jobs; j != NULL; j = j->next)
		n++;
	return n;
}

/* Its exit status as a shell's $? (128+N for signal N). */
int
mcp_job_exit_code(const struct mcp_job *j)
{
	if (WIFEXITED(j->status))
		return WEXITSTATUS(j->status);
	if (WIFSIGNALED(j->status))
		return 128 + WTERMSIG(j->status);
	return -1;
}

/* Free a job that is done. */
void
mcp_job_free(struct mcp_job *j)
{
	if (j == NULL)
		return;
	close_fd(&j->out_fd);
	close_fd(&j->err_fd);
	close_fd(&j->in_fd);
	free(j->out);
	free(j->err);
	free(j->in);
	free(j->last_line);
	free(j);
}

/* The server is leaving: end every job and wait for it. on_done is not
 * called; the jobs stay their owners' to free. */
void
mcp_jobs_stop_all(void)
{
	struct mcp_job *j;
	uint64_t deadline = mono_ms() + JOB_STOP_MS;
	int left;

	for (j = jobs; j != NULL; j = j->next)
		if (!j->reaped)
			kill(-j->pid, SIGTERM); /* vmux new cleans up */
	do {
		left = 0;
		for (j = jobs; j != NULL; j = j->next) {
			if (!j->reaped &&
			    waitpid(j->pid, &j->status, WNOHANG) == 0)
				left++;
			else
				j->reaped = 1;
		}
		if (left > 0)
			usleep(20000);
	} while (left > 0 && mono_ms() < deadline);
	while ((j = jobs) != NULL) {
		jobs = j->next;
		j->next = NULL;
		if (!j->reaped) {
			kill(-j->pid, SIGKILL);
			waitpid(j->pid, &j->status, 0);
			j->reaped = 1;
		}
	}
}
