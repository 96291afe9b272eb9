/*
 * spawn.c: start a process in its own session with a clean environment.
 *
 * The agent is multithreaded, so the child between fork and exec calls only
 * async-signal-safe functions; everything it needs (argv, envp, the file to
 * run) is prepared before fork. A close-on-exec pipe carries the child's
 * failure (which step, errno) back, so "failed before it ran" is an error
 * with a message and never an exit status. Also here: the helpers that find
 * and signal the processes of a session.
 */
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

#define DEFAULT_PATH                                                           \
	"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

enum spawn_step { STEP_SETUP = 1, STEP_CWD, STEP_EXEC };

/* Free a NULL-terminated string list (NULL is fine). */
void
env_free(char **list)
{
	if (list == NULL)
		return;
	for (char **p = list; *p != NULL; p++)
		free(*p);
	free(list);
}

/* Length of the NAME part of NAME=value. */
static size_t
env_name_len(const char *s)
{
	const char *eq = strchr(s, '=');

	return eq != NULL ? (size_t)(eq - s) : strlen(s);
}

/*
 * The home of the guest's user: HOME and the default working directory of
 * every command and shell. /root in a guest; the agent's unit tests run it
 * on the host and point it at a private folder, so no test reads the
 * invoking user's startup files. Set once at start-up, before any thread.
 */
static const char *home_dir = "/root";

/*
 * The default working directory when it is not the home (agent --cwd), or
 * NULL. A rescue starts there, in the disk being repaired, while HOME stays
 * on vmux's own initramfs: no startup file of the disk is read.
 */
static const char *cwd_dir;

/*
 * The cgroup v2 directory the user's commands and shells run in (agent
 * --cgroup), or NULL. Set once at start-up, before any thread.
 */
static const char *user_cgroup;

/* The open-file limit of what the agent starts (agent --nofile), or 0:
 * theirs is the agent's own. */
static long long user_nofile;

/* Set the open-file limit of the user's commands and shells. */
void
user_nofile_set(long long n)
{
	user_nofile = n;
}

/* Set the user's cgroup. The string must outlive the agent. */
void
user_cgroup_set(const char *dir)
{
	user_cgroup = dir;
}

/*
 * In the child: move into the user's cgroup. -1 if that failed: the
 * limits were promised, so the command must not run without them.
 */
static int
cgroup_join(void)
{
	char path[4096];
	int fd, ok;

	if (user_cgroup == NULL)
		return 0;
	if (snprintf(path, sizeof path, "%s/cgroup.procs", user_cgroup) >=
	    (int)sizeof path)
		return -1;
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		return -1;
	ok = write(fd, "0", 1) == 1;
	close(fd);
	return ok ? 0 : -1;
}

/* Set the user's home (agent --home). The string must outlive the agent. */
void
user_home_set(const char *dir)
{
	home_dir = dir;
}

/* Set the default working directory (agent --cwd); same lifetime rule. */
void
user_cwd_set(const char *dir)
{
	cwd_dir = dir;
}

/* The user's home. */
const char *
user_home(void)
{
	return home_dir;
}

/*
 * Build an environment: the defaults (NAME=value strings) and HOME (the
 * user's home, unless a default sets it), each replaced or extended by
 * the request's.
 * Returns a new list the caller frees (env_free).
 */
char **
env_build(char *const *request_env, const char *const *defaults)
{
	size_t n = 0, m = 0, i, j;
	char **out;

	char *const *image = image_env_list();
	char *const *layers[2] = {image, request_env};
	size_t ni = 0;

	while (defaults != NULL && defaults[n] != NULL)
		n++;
	while (request_env != NULL && request_env[m] != NULL)
		m++;
	while (image != NULL && image[ni] != NULL)
		ni++;
	out = xcalloc(n + ni + m + 2, sizeof *out);
	for (i = 0; i < n; i++)
		out[i] = xstrdup(defaults[i]);
	for (i = 0; i < n && strncmp(out[i], "HOME=", 5) != 0; i++)
		;
	if (i == n)
		xasprintf(&out[n++], "HOME=%s", home_dir);
	/* the image's variables over the defaults, the request's over both */
	for (int l = 0; l < 2; l++) {
		for (j = 0; layers[l] != NULL && layers[l][j] != NULL; j++) {
			const char *kv = layers[l][j];
			size_t len = env_name_len(kv), k;

			for (k = 0; k < n; k++) {
				if (env_name_len(out[k]) == len &&
				    strncmp(out[k], kv, len) == 0)
					break;
			}
			if (k < n) {
				free(out[k]);
				out[k] = xstrdup(kv);
			} else
				out[n++] = xstrdup(kv);
		}
	}
	return out;
}

/*
 * Find `name` on the PATH of envp, as execvp would. A name with a slash is
 * returned as is (the exec reports if it is missing). Returns a new string,
 * or NULL with *cause.
 */
char *
path_resolve(const char *name, char *const *envp, char **cause)
{
	const char *path = DEFAULT_PATH, *p, *colon;
	char *file;
	struct stat st;

	if (strchr(name, '/') != NULL)
		return xstrdup(name);
	for (; envp != NULL && *envp != NULL; envp++) {
		if (strncmp(*envp, "PATH=", 5) == 0)
			path = *envp + 5;
	}
	for (p = path;; p = colon + 1) {
		colon = strchr(p, ':');
		if (colon == NULL)
			colon = p + strlen(p);
		xasprintf(&file, "%.*s/%s", (int)(colon - p),
		    colon == p ? "." : p, name);
		if (stat(file, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(file, X_OK) == 0)
			return file;
		free(file);
		if (*colon == '\0')
			break;
	}
	xasprintf(cause, "command not found: %s", name);
	return NULL;
}

/*
 * The default working directory: --cwd if it is a directory, else the
 * user's home (made if missing), else /.
 */
const char *
default_cwd(void)
{
	struct stat st;

	if (cwd_dir != NULL && stat(cwd_dir, &st) == 0 && S_ISDIR(st.st_mode))
		return cwd_dir;
	if (stat(home_dir, &st) == 0 && S_ISDIR(st.st_mode))
		return home_dir;
	if (mkdir(home_dir, 0700) == 0 || errno == EEXIST)
		return home_dir;
	return "/";
}

/* pidfd_open(2): a pollable handle on a child; fd or -errno. */
int
pidfd_open_compat(pid_t pid)
{
#ifdef SYS_pidfd_open
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	return fd < 0 ? -errno : fd;
#else
	return -ENOSYS;
#endif
}

/* Exit status as a code (128+signal when killed); *sig gets the signal. */
int
wait_status_code(int status, int *sig)
{
	*sig = 0;
	if (WIFSIGNALED(status)) {
		*sig = WTERMSIG(status);
		return 128 + *sig;
	}
	return WEXITSTATUS(status);
}

/* Move fd to target in the child (async-signal-safe). */
static int
child_dup(int fd, int target)
{
	if (fd == target)
		return fcntl(fd, F_SETFD, 0); /* keep it across exec */
	return dup2(fd, target) < 0 ? -1 : 0;
}

/* Report a failed step to the parent and exit (child only). */
__attribute__((noreturn)) static void
child_fail(int errfd, int step)
{
	int msg[2] = {step, errno};
	ssize_t n;

	n = write(errfd, msg, sizeof msg);
	(void)n;
	_exit(127);
}

/* The child between fork and exec. */
__attribute__((noreturn)) static void
child_run(const struct spawn *sp, int errfd)
{
	struct sigaction sa;
	sigset_t none;

	/*
	 * Masks and ignored signals survive exec: undo the agent's (and
	 * whatever it inherited, e.g. SIGINT ignored by a background start).
	 */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++) {
		if (sig != SIGKILL && sig != SIGSTOP)
			sigaction(sig, &sa, NULL);
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	/*
	 * The agent is exempt from the OOM killer (-1000); what it starts is
	 * not, so a memory hog is what gets killed. Best effort: on a host
	 * test without privileges the value may already be what we want.
	 */
	oom_score_adj("0");
	if (cgroup_join() < 0)
		child_fail(errfd, STEP_SETUP);
	if (user_nofile > 0) { /* promised, like the cgroup: or no run */
		struct rlimit rl = {(rlim_t)user_nofile, (rlim_t)user_nofile};
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			child_fail(errfd, STEP_SETUP);
	}

	if (setsid() < 0)
		child_fail(errfd, STEP_SETUP);
	if (sp->ctty && ioctl(sp->fd_in, TIOCSCTTY, 0) < 0)
		child_fail(errfd, STEP_SETUP);
	if (child_dup(sp->fd_in, 0) < 0 || child_dup(sp->fd_out, 1) < 0 ||
	    child_dup(sp->fd_err, 2) < 0)
		child_fail(errfd, STEP_SETUP);
		/* Everything else is close-on-exec already; this is belt and
		 * braces. */
#ifdef SYS_close_range
	if (errfd > 3)
		syscall(SYS_close_range, 3, errfd - 1, 0);
	syscall(SYS_close_range, errfd + 1, ~0U, 0);
#endif
	if (image_user_become(sp) < 0) /* the asked or image's user, or none */
		child_fail(errfd, STEP_SETUP);
	if (sp->cwd != NULL && chdir(sp->cwd) < 0)
		child_fail(errfd, STEP_CWD);
	execve(sp->path, sp->argv, sp->envp);
	child_fail(errfd, STEP_EXEC);
}

/*
 * Start sp->path in a new session (pgid = sid = pid). Returns the pid, or -1
 * with *cause when it could not start (the child is reaped then).
 */
pid_t
spawn_start(const struct spawn *sp, char **cause)
{
	int errpipe[2], msg[2], status;
	ssize_t n;
	pid_t pid;

	if (pipe2(errpipe, O_CLOEXEC) < 0) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		xasprintf(cause, "fork: %s", strerror(errno));
		close(errpipe[0]);
		close(errpipe[1]);
		return -1;
	}
	if (pid == 0)
		child_run(sp, errpipe[1]);
	close(errpipe[1]);
	do
		n = read(errpipe[0], msg, sizeof msg);
	while (n < 0 && errno == EINTR);
	close(errpipe[0]);
	if (n <= 0)
		return pid; /* exec closed the pipe: it runs */

	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	/* exec's errno says not found (127) or cannot run (126); a missing
	 * cwd is "cannot run", never "command not found" */
	if (n == sizeof msg && sp->fail_errno != NULL && msg[0] == STEP_EXEC)
		*sp->fail_errno = msg[1];
	else if (n == sizeof msg && sp->fail_errno != NULL &&
	    msg[0] == STEP_CWD)
		*sp->fail_errno = msg[1] == ENOENT ? ENOTDIR : msg[1];
	if (n != sizeof msg)
		xasprintf(cause, "spawn %s: child failed", sp->path);
	else if (msg[0] == STEP_CWD)
		xasprintf(cause, "cwd %s: %s", sp->cwd, strerror(msg[1]));
	else if (msg[0] == STEP_EXEC)
		xasprintf(cause, "exec %s: %s", sp->path, strerror(msg[1]));
	else
		xasprintf(cause, "spawn %s: %s", sp->path, strerror(msg[1]));
	return -1;
}

/* The session id of a process from /proc/PID/stat, or -1. */
static pid_t
proc_session(const char *pid)
{
	char path[64], buf[512], *p;
	int fd, sid;
	ssize_t n;

	snprintf(path, sizeof path, "/proc/%s/stat", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* "pid (comm) state ppid pgrp session ...": comm may hold anything. */
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 1, " %*c %*d %*d %d", &sid) != 1)
		return -1;
	return sid;
}

/*
 * Send sig to every process of session sid (the shell's, whatever process
 * group it put them in). The leader must not be reaped yet, or sid could
 * name someone else's session.
 */
void
kill_session(pid_t sid, int sig)
{
	struct dirent *de;
	DIR *d;

	if (sid <= 1)
		NEVER("kill_session of init");
	log_debug("kill_session %d: signal %d", (int)sid, sig);
	kill(-sid, sig);
	if ((d = opendir("/proc")) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		if (proc_session(de->d_name) == sid)
			kill((pid_t)atoi(de->d_name), sig);
	}
	closedir(d);
}
