/*
 * exec_serve.c: each exec (and exec_stream) request runs in its own
 * detached thread, which takes over the connection and the parsed request,
 * runs the command, writes the reply (or streams, exec.c) and closes. The event
 * loop never waits on it. A client that hangs up cancels its command (the group
 * is killed); a client that stops reading fails the write after
 * AGENT_WRITE_TIMEOUT_MS.
 */
#include <sys/socket.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

#define EXEC_THREAD_STACK (1024 * 1024)

struct exec_job {
	int fd;
	struct agent_request *req;
};

static atomic_int active;

/* How many exec threads are running. */
int
exec_serve_active(void)
{
	return atomic_load(&active);
}

/*
 * Send all of p on a non-blocking socket, waiting at most
 * AGENT_WRITE_TIMEOUT_MS whenever it stalls; 0, or -1 on failure or stall.
 * Shared by the exec and file-transfer threads.
 */
int
agent_send_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	struct pollfd pfd;
	ssize_t w;

	while (n > 0) {
		w = send(fd, b, n, MSG_NOSIGNAL);
		if (w > 0) {
			b += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN)
			return -1;
		pfd.fd = fd;
		pfd.events = POLLOUT;
		if (poll(&pfd, 1, AGENT_WRITE_TIMEOUT_MS) <= 0)
			return -1;
	}
	return 0;
}

/* response_sink writing to the request's socket. */
static int
sock_sink(void *arg, const void *p, size_t n)
{
	return agent_send_all(*(int *)arg, p, n);
}

/* The thread: run, answer, clean up. */
static void *
exec_thread(void *arg)
{
	struct exec_job *job = arg;
	struct agent_request *req = job->req;
	struct exec_result res;
	struct exec_spec spec;
	char *cause = NULL, *line;
	size_t len;

	memset(&spec, 0, sizeof spec);
	spec.argv = req->argv;
	spec.env = req->env;
	spec.command_is_text = req->command_is_text;
	spec.cwd = req->cwd;
	spec.user = req->user;
	spec.timeout_ms = req->timeout_ms;
	spec.max_output = req->max_output;
	spec.stdin_data = req->stdin_data;
	spec.stdin_len = req->stdin_len;
	spec.cancel_fd = job->fd;
	spec.stream = req->action == ACTION_EXEC_STREAM;

	if (exec_run(&spec, &res, &cause) != 0) {
		log_debug("exec: %s", cause);
		if (spec.stream) /* the status a shell would give */
			line = response_error_status(cause, res.not_run, &len);
		else
			line = response_error(cause, &len);
		sock_sink(&job->fd, line, len);
		free(line);
		free(cause);
	} else if (spec.stream) {
		log_debug("exec_stream: %s: exit %d%s%s", req->argv[0],
		    res.exit_code, res.timed_out ? ", timed out" : "",
		    res.cancelled ? ", client gone" : "");
		exec_result_free(&res);
	} else {
		log_debug("exec: %s: exit %d, %llu ms%s%s", req->argv[0],
		    res.exit_code, (unsigned long long)res.duration_ms,
		    res.timed_out ? ", timed out" : "",
		    res.cancelled ? ", client gone" : "");
		if (!res.cancelled)
			response_exec(&res, sock_sink, &job->fd);
		exec_result_free(&res);
	}
	shutdown(job->fd, SHUT_WR);
	close(job->fd);
	request_free(req);
	free(job);
	activity_ended(); /* idle counts from here */
	atomic_fetch_sub(&active, 1);
	return NULL;
}

/*
 * Hand an exec request and its connection to a new thread, which owns both
 * from then on. Returns 0, or -1 with *cause (the caller keeps both).
 */
int
exec_serve_start(int fd, struct agent_request *req, char **cause)
{
	struct exec_job *job = xmalloc(sizeof *job);
	pthread_attr_t attr;
	pthread_t tid;
	int rc;

	job->fd = fd;
	job->req = req;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, EXEC_THREAD_STACK);
	atomic_fetch_add(&active, 1);
	rc = pthread_create(&tid, &attr, exec_thread, job);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		atomic_fetch_sub(&active, 1);
		free(job);
		xasprintf(cause, "cannot start a thread: %s", strerror(rc));
		return -1;
	}
	return 0;
}
