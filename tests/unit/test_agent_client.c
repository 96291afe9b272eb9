/*
 * test_agent_client.c: a tiny client and a disposable agent for tests (see
 * test_agent_client.h). Everything here blocks with timeouts: a test that
 * goes wrong fails instead of hanging.
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/attach.h"
#include "test_agent_client.h"

/* LeakSanitizer's entry point, when the test is built with it. */
extern void __lsan_do_leak_check(void) __attribute__((weak));

/* Remove the agent's folder: its socket and the private home. */
static void
ta_remove_files(struct test_agent *ta)
{
	char *cmd;

	unlink(ta->path);
	if (ta->home[0] != '\0') {
		xasprintf(&cmd, "rm -rf '%s'", ta->home);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", ta->home);
		free(cmd);
	}
	rmdir(ta->dir);
}

/*
 * Start an agent serving a fresh Unix socket; 0 or -1. With gate >= 0 the
 * agent first waits on that gate (agent_gate_wait) for its home, as when
 * vmux-init starts it early; the caller keeps the other end, ours.
 */
static int
ta_start_with(struct test_agent *ta, int idle_timeout_ms, int gate, int ours)
{
	struct sockaddr_un sa;
	pid_t parent = getpid();
	int fd;

	memset(ta, 0, sizeof *ta);
	snprintf(ta->dir, sizeof ta->dir, "/tmp/vmux-agent-test.XXXXXX");
	if (mkdtemp(ta->dir) == NULL)
		return -1;
	snprintf(ta->path, sizeof ta->path, "%s/agent.sock", ta->dir);
	snprintf(ta->home, sizeof ta->home, "%s/home", ta->dir);
	if (mkdir(ta->home, 0700) != 0)
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	strcpy(sa.sun_path, ta->path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    listen(fd, 128) < 0)
		return -1;
	ta->opts.idle_timeout_ms = idle_timeout_ms;
	ta->opts.max_conns = 32;
	ta->opts.max_shells = 64;
	ta->opts.scrollback = SHELL_DEFAULT_SCROLLBACK;
	ta->opts.poweroff_pid = 0;
	fflush(NULL);
	ta->pid = fork();
	if (ta->pid < 0)
		return -1;
	if (ta->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		log_open("vmux-agent-test");
		if (getppid() != parent)
			_exit(1);
		if (gate >= 0) {
			close(ours); /* or the gate never reads EOF */
			agent_gate_wait(gate);
		} else
			user_home_set(ta->home);
		int rc = agent_serve(fd, &ta->opts);

		/* Tidy up here too: a failed CHECK never reaches ta_stop. */
		ta_remove_files(ta);

		if (__lsan_do_leak_check != NULL)
			__lsan_do_leak_check(); /* _exit skips it */
		_exit(rc);
	}
	close(fd);
	if (gate >= 0)
		close(gate);
	return 0;
}

/* Start an agent serving a fresh Unix socket; 0 or -1. */
int
ta_start(struct test_agent *ta, int idle_timeout_ms)
{
	return ta_start_with(ta, idle_timeout_ms, -1, -1);
}

/*
 * Start an agent that serves nothing until *gate (ours: write the home and
 * the cgroup, a line each, and close it) lets it; 0 or -1.
 */
int
ta_start_gated(struct test_agent *ta, int idle_timeout_ms, int *gate)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	*gate = sv[0];
	return ta_start_with(ta, idle_timeout_ms, sv[1], sv[0]);
}

/* Stop the agent (SIGTERM), wait for it; returns its exit status. */
int
ta_stop(struct test_agent *ta)
{
	int status = -1;

	if (ta->pid > 0) {
		kill(ta->pid, SIGTERM);
		waitpid(ta->pid, &status, 0);
		ta->pid = 0;
	}
	ta_remove_files(ta);
	return status;
}

/* A new connection to the agent (10 s send/receive timeouts), or -1. */
int
ta_connect(struct test_agent *ta)
{
	struct timeval tv = {10, 0};
	struct sockaddr_un sa;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	strcpy(sa.sun_path, ta->path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	return fd;
}

/* Send data on a new connection and read the reply to EOF (NUL-ended). */
char *
ta_raw(struct test_agent *ta, const char *data, size_t len)
{
	struct buf b;
	char chunk[65536];
	ssize_t n;
	int fd = ta_connect(ta);

	if (fd < 0)
		return NULL;
	if (write_all(fd, data, len) < 0) {
		close(fd);
		return NULL;
	}
	buf_init(&b);
	while ((n = read(fd, chunk, sizeof chunk)) > 0)
		buf_add(&b, chunk, (size_t)n);
	close(fd);
	return buf_cstr(&b);
}

/* Send one request line; the parsed reply or NULL. */
cJSON *
ta_request(struct test_agent *ta, const char *json)
{
	char *line, *reply;
	cJSON *obj;

	xasprintf(&line, "%s\n", json);
	reply = ta_raw(ta, line, strlen(line));
	free(line);
	if (reply == NULL)
		return NULL;
	obj = cJSON_Parse(reply);
	free(reply);
	return obj;
}

/* ta_request with printf formatting. */
cJSON *
ta_requestf(struct test_agent *ta, const char *fmt, ...)
{
	va_list ap;
	char *json;
	cJSON *obj;

	va_start(ap, fmt);
	xvasprintf(&json, fmt, ap);
	va_end(ap);
	obj = ta_request(ta, json);
	free(json);
	return obj;
}

/* A string member, or NULL. */
const char *
ta_str(const cJSON *obj, const char *name)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A number member, or -1e9 when missing. */
double
ta_num(const cJSON *obj, const char *name)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	return cJSON_IsNumber(v) ? v->valuedouble : -1e9;
}

/* Is pid gone (or a zombie)? Polls up to ms; 1 if dead. */
int
ta_wait_dead(pid_t pid, int ms)
{
	char path[64], buf[512], *p;
	uint64_t until = mono_ms() + (uint64_t)ms;
	int fd;
	ssize_t n;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	for (;;) {
		if ((fd = open(path, O_RDONLY)) < 0)
			return 1;
		n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n <= 0)
			return 1;
		buf[n] = '\0';
		if ((p = strrchr(buf, ')')) != NULL && p[2] == 'Z')
			return 1;
		if (mono_ms() >= until)
			return 0;
		usleep(20000);
	}
}

/*
 * Open a connection, send line (a request with its newline) and parse the
 * agent's first answer line, byte by byte so nothing after it is taken:
 * the stream that follows stays on *fd (-1 if no connection).
 */
cJSON *
ta_line_request(struct test_agent *ta, const char *line, int *fd)
{
	struct buf b;
	cJSON *o;
	char c;

	if ((*fd = ta_connect(ta)) < 0)
		return NULL;
	write_all(*fd, line, strlen(line));
	buf_init(&b);
	while (read(*fd, &c, 1) == 1 && c != '\n')
		buf_add(&b, &c, 1);
	o = cJSON_Parse(buf_cstr(&b));
	buf_free(&b);
	return o;
}

/* Send one frame of the attach framing. */
void
ta_send_frame(int fd, uint8_t type, const void *p, size_t len)
{
	uint8_t hdr[VMUX_ATTACH_HDR];

	vmux_attach_header(hdr, type, (uint32_t)len);
	write_all(fd, hdr, sizeof hdr);
	if (len > 0)
		write_all(fd, p, len);
}
