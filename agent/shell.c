/*
 * shell.c: persistent PTY shells living in the agent.
 *
 * A shell is a process (a login shell by default) in its own session with a
 * PTY as controlling terminal. The event loop owns it: it reads the master
 * whenever there is output, attached or not, into the shell's ring, so the
 * shell never blocks on output and agent memory stays bounded; keystrokes
 * wait in a bounded input buffer until the master takes them.
 *
 * Life: running -> (process exits) stopped -> (close_shell) gone. The exit
 * is observed with WNOWAIT and the zombie is reaped only when the shell is
 * closed, so the session id stays reserved and close can kill whatever is
 * left of the session without hitting a reused pid. Closing hangs up the
 * PTY (SIGHUP + SIGCONT to the session, master closed), gives the processes
 * SHELL_HUP_GRACE_MS, then SIGKILLs what remains and answers.
 */
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "agent.h"

#define SHELL_READ_CHUNK 65536
#define GIVE_UP_MS       2000

static const char *const shell_env_defaults[] = {
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "USER=root",
    "LOGNAME=root",
    "TERM=xterm-256color",
    "LANG=C.UTF-8",
    NULL,
};

static const char *state_names[] = {
    [SHELL_RUNNING] = "running",
    [SHELL_STOPPED] = "stopped",
    [SHELL_CLOSING] = "closing",
};

/* Find a live shell by id. */
struct shell *
shell_find(struct agent *a, const char *id)
{
	for (struct shell *s = a->shells; s != NULL; s = s->next) {
		if (!s->dead && strcmp(s->id, id) == 0)
			return s;
	}
	return NULL;
}

/* The shell record every shell reply carries; the caller deletes it. */
cJSON *
shell_record(const struct shell *s)
{
	cJSON *obj = cJSON_CreateObject(), *arr, *roster;
	const char *name;

	json_add_str(obj, "shell_id", s->id);
	json_add_str(obj, "cwd", s->cwd);
	cJSON_AddNumberToObject(obj, "cols", s->cols);
	cJSON_AddNumberToObject(obj, "rows", s->rows);
	cJSON_AddStringToObject(obj, "state", state_names[s->state]);
	cJSON_AddNumberToObject(obj, "started_at", s->started_at);
	if (s->exited)
		cJSON_AddNumberToObject(obj, "ended_at", s->ended_at);
	else
		cJSON_AddNullToObject(obj, "ended_at");
	if (s->exited && s->exit_code >= 0)
		cJSON_AddNumberToObject(obj, "exit_code", s->exit_code);
	else
		cJSON_AddNullToObject(obj, "exit_code");
	if (s->exited && s->exit_signal != 0 &&
	    (name = signame_name(s->exit_signal)) != NULL)
		cJSON_AddStringToObject(obj, "exit_signal", name);
	cJSON_AddNumberToObject(obj, "pid", s->pid);
	if (s->argv != NULL) {
		arr = cJSON_AddArrayToObject(obj, "command");
		for (char **p = s->argv; *p != NULL; p++) {
			cJSON *tmp = cJSON_CreateObject();

			json_add_str(tmp, "v", *p);
			cJSON_AddItemToArray(
			    arr, cJSON_DetachItemFromObject(tmp, "v"));
			cJSON_Delete(tmp);
		}
	} else
		json_add_str(obj, "command", s->command);
	cJSON_AddNumberToObject(obj, "output_bytes", (double)s->ring.end);
	cJSON_AddNumberToObject(
	    obj, "oldest_cursor", (double)ring_oldest(&s->ring));
	cJSON_AddNumberToObject(obj, "scrollback_bytes", (double)s->ring.cap);
	cJSON_AddNumberToObject(obj, "clients", s->nclients);
	roster = attach_roster(s, NULL);
	cJSON_AddItemToObject(
	    obj, "roster", cJSON_DetachItemFromObject(roster, "clients"));
	cJSON_AddItemToObject(
	    obj, "keyboard", cJSON_DetachItemFromObject(roster, "keyboard"));
	cJSON_Delete(roster);
	return obj;
}

/* Open a PTY pair sized cols x rows; 0 or -1 with *cause. */
static int
pty_open(int cols, int rows, int *master, int *slave, char **cause)
{
	struct winsize ws = {.ws_row = rows, .ws_col = cols};
	struct termios tio;
	char name[128];

	*master = *slave = -1;
	*master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*master < 0 || grantpt(*master) != 0 || unlockpt(*master) != 0 ||
	    ptsname_r(*master, name, sizeof name) != 0)
		goto fail;
	if (ioctl(*master, TIOCSWINSZ, &ws) < 0)
		goto fail;
	*slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*slave < 0)
		goto fail;
	if (tcgetattr(*slave, &tio) == 0) {
		tio.c_iflag |= IUTF8; /* backspace over UTF-8 characters */
		tcsetattr(*slave, TCSANOW, &tio);
	}
	return 0;
fail:
	xasprintf(cause, "pty: %s", strerror(errno));
	if (*master >= 0)
		close(*master);
	*master = -1;
	return -1;
}

/* A new id "shell-N" not in use. */
static char *
shell_new_id(struct agent *a)
{
	char *id;

	for (;;) {
		xasprintf(&id, "shell-%u", ++a->next_id);
		if (shell_find(a, id) == NULL)
			return id;
		free(id);
	}
}

/* Copy a NULL-terminated string list. */
static char **
strv_copy(char *const *v)
{
	size_t n = 0;
	char **out;

	while (v[n] != NULL)
		n++;
	out = xcalloc(n + 1, sizeof *out);
	for (size_t i = 0; i < n; i++)
		out[i] = xstrdup(v[i]);
	return out;
}

/* Free a shell and what it owns (its clients are gone already). */
void
shell_free(struct shell *s)
{
	if (s->master >= 0)
		close(s->master);
	if (s->pidfd >= 0)
		close(s->pidfd);
	ring_free(&s->ring);
	buf_free(&s->input);
	budget_release(s->charged);
	free(s->id);
	free(s->cwd);
	free(s->command);
	free(s->path);
	env_free(s->argv);
	free(s);
}

/* The shell an image without one gets (the initramfs's busybox, bind
 * mounted into every image's root with the agent). */
#define SHELL_FALLBACK VMUX_GUEST_DIR "/bin/busybox"

/*
 * The default shell: bash, else sh, else (an image without a shell, as
 * distroless ones are) vmux's own busybox, *fallback set.
 */
static const char *
shell_default_path(int *fallback)
{
	*fallback = 0;
	if (access("/bin/bash", X_OK) == 0)
		return "/bin/bash";
	if (access("/bin/sh", X_OK) == 0 || access(SHELL_FALLBACK, X_OK) != 0)
		return "/bin/sh";
	*fallback = 1;
	return SHELL_FALLBACK;
}
/*
 * Start a shell for an open_shell request. Returns it (linked into the
 * agent), or NULL with *cause when it could not start.
 */
struct shell *
shell_open(struct agent *a, struct agent_request *req, char **cause)
{
	struct shell *s;
	struct spawn sp;
	const char *defaults[nitems(shell_env_defaults) + 2];
	char **envp = NULL, *login_argv[2], *shell_var, *id_var, *login;
	int slave = -1, fallback = 0;
	size_t n;

	if (a->nshells >= a->opts->max_shells) {
		xasprintf(cause, "too many shells (%d)", a->opts->max_shells);
		return NULL;
	}
	if (req->shell_id != NULL && shell_find(a, req->shell_id) != NULL) {
		xasprintf(cause, "shell \"%s\" already exists", req->shell_id);
		return NULL;
	}
	/* the ring and the input buffer may grow to their caps */
	n = (req->scrollback ? req->scrollback : a->opts->scrollback) +
	    SHELL_INPUT_MAX;
	if (budget_reserve(n, cause) != 0)
		return NULL;
	s = xcalloc(1, sizeof *s);
	s->charged = n;
	s->master = s->pidfd = -1;
	s->exit_code = -1;
	s->id = req->shell_id ? xstrdup(req->shell_id) : shell_new_id(a);
	s->cwd = xstrdup(req->cwd ? req->cwd : default_cwd());
	s->cols = req->cols ? req->cols : 80;
	s->rows = req->rows ? req->rows : 24;
	ring_init(
	    &s->ring, req->scrollback ? req->scrollback : a->opts->scrollback);

	if (req->argv == NULL) {
		s->path = xstrdup(shell_default_path(&fallback));
		s->command = xstrdup(s->path);
	} else if (req->command_is_text)
		s->command = xstrdup(req->command);
	else
		s->argv = strv_copy(req->argv);

	/* Defaults, then the request's variables over them. */
	for (n = 0; shell_env_defaults[n] != NULL; n++)
		defaults[n] = shell_env_defaults[n];
	xasprintf(&shell_var, "SHELL=%s", s->path ? s->path : "/bin/sh");
	xasprintf(&id_var, "VMUX_SHELL_ID=%s", s->id);
	defaults[n++] = shell_var;
	defaults[n++] = id_var;
	defaults[n] = NULL;
	envp = env_build(req->env, defaults);
	free(shell_var);
	free(id_var);

	memset(&sp, 0, sizeof sp);
	if (req->user != NULL) {
		if (image_user_parse(req->user, &sp.uid, &sp.gid, cause) != 0)
			goto fail;
		sp.has_user = 1;
	}
	if (s->path == NULL &&
	    (s->path = path_resolve(req->argv[0], envp, cause)) == NULL)
		goto fail;
	if (pty_open(s->cols, s->rows, &s->master, &slave, cause) != 0)
		goto fail;

	/* A login shell is told so by a '-' in front of argv[0]. */
	xasprintf(&login, "-%s", fallback ? "sh" : strrchr(s->path, '/') + 1);
	if (fallback) { /* said first, so nobody takes it for the image's */
		static const char note[] =
		    "vmux: this image has no /bin/sh: this is vmux's busybox "
		    "sh (" SHELL_FALLBACK "), with the image at /\r\n";

		ring_write(&s->ring, note, sizeof note - 1);
	}
	login_argv[0] = login;
	login_argv[1] = NULL;

	sp.path = s->path;
	sp.argv = req->argv ? req->argv : login_argv;
	sp.envp = envp;
	sp.cwd = s->cwd;
	sp.fd_in = sp.fd_out = sp.fd_err = slave;
	sp.ctty = 1;
	s->pid = spawn_start(&sp, cause);
	free(login);
	close(slave);
	slave = -1;
	if (s->pid < 0)
		goto fail;
	env_free(envp);
	set_nonblock(s->master, 1);
	s->pidfd = pidfd_open_compat(s->pid);
	s->started_at = wall_time();
	s->state = SHELL_RUNNING;
	s->next = a->shells;
	a->shells = s;
	a->nshells++;
	log_debug("shell %s: pid %d, %s", s->id, (int)s->pid, s->path);
	return s;
fail:
	if (slave >= 0)
		close(slave);
	env_free(envp);
	shell_free(s);
	return NULL;
}

/* The shell has finished: no more input, clients get EXIT after output. */
static void
shell_stopped(struct agent *a, struct shell *s)
{
	if (s->state != SHELL_RUNNING)
		return;
	s->state = SHELL_STOPPED;
	s->stop_cursor = s->ring.end;
	s->stop_deadline = 0;
	s->input.len = 0;
	log_debug("shell %s: stopped, exit %d, signal %d", s->id, s->exit_code,
	    s->exit_signal);
	for (struct conn *c = s->clients; c != NULL; c = c->snext) {
		if (c->state == CONN_ATTACHED)
			attach_write(a, c);
	}
}

/* Read what the PTY has into the ring and push it to attached clients. */
void
shell_read_pty(struct agent *a, struct shell *s)
{
	static uint8_t chunk[SHELL_READ_CHUNK];
	ssize_t n;

	if (s->master < 0 || s->pty_eof)
		return;
	n = read(s->master, chunk, sizeof chunk);
	if (n > 0) {
		activity_touch();
		ring_write(&s->ring, chunk, (size_t)n);
		for (struct conn *c = s->clients; c != NULL; c = c->snext) {
			if (c->state == CONN_ATTACHED)
				attach_write(a, c);
		}
		return;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	/*
	 * EIO: every slave fd is closed. Closing the master now would hang
	 * up a shell that is still on its way out (SIGHUP after it closed
	 * its fds), so keep it until the process has exited.
	 */
	s->pty_eof = 1;
	if (s->exited) {
		close(s->master);
		s->master = -1;
		shell_stopped(a, s);
	}
}

/* Write what the PTY takes of the pending input. */
static void
pty_flush(struct shell *s)
{
	ssize_t n;

	if (s->master < 0 || s->input.len == 0)
		return;
	n = write(s->master, s->input.data, s->input.len);
	if (n > 0)
		buf_drain(&s->input, (size_t)n);
	else if (n < 0 && errno != EAGAIN && errno != EINTR)
		s->input.len = 0;
}

/* The PTY is writable: feed it, and let blocked clients send again. */
void
shell_write_pty(struct agent *a, struct shell *s)
{
	pty_flush(s);
	if (s->input.len < SHELL_INPUT_MAX / 2)
		attach_input_drained(a, s);
}

/* Answer the close request, drop clients, and mark the shell dead. */
static void
shell_close_finish(struct agent *a, struct shell *s)
{
	cJSON *obj;

	if (!s->reaped && s->exited) {
		kill_session(s->pid, SIGKILL);
		while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
			;
		s->reaped = 1;
	} else if (!s->reaped) {
		a->orphans = xreallocarray(
		    a->orphans, (size_t)a->norphans + 1, sizeof *a->orphans);
		a->orphans[a->norphans++] = s->pid;
	}
	s->state = SHELL_STOPPED;
	attach_shell_gone(a, s);
	for (struct conn *c = a->conns; c != NULL; c = c->next) {
		if (c->state == CONN_WAIT && c->wait == WAIT_READ &&
		    c->shell == s)
			actions_wait_check(a, c);
	}
	if (s->closer != NULL) {
		obj = shell_record(s);
		cJSON_AddBoolToObject(obj, "closed", 1);
		s->closer->shell = NULL;
		conn_reply(a, s->closer, obj);
		s->closer = NULL;
	}
	log_debug("shell %s: closed", s->id);
	s->dead = 1;
	a->nshells--;
}

/* Check (without reaping) whether the shell's process has exited. */
void
shell_check_exit(struct agent *a, struct shell *s)
{
	siginfo_t si;

	if (s->exited)
		return;
	memset(&si, 0, sizeof si);
	if (waitid(P_PID, (id_t)s->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0) {
		if (errno != ECHILD)
			return;
		s->reaped = 1; /* somebody else reaped it */
	} else if (si.si_pid != s->pid)
		return;
	s->exited = 1;
	log_debug("shell %s: pid %d code %d status %d", s->id, (int)s->pid,
	    si.si_code, si.si_status);
	s->ended_at = wall_time();
	if (si.si_code == CLD_EXITED)
		s->exit_code = si.si_status;
	else if (si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED) {
		s->exit_signal = si.si_status;
		s->exit_code = 128 + si.si_status;
	}
	if (s->pidfd >= 0) {
		close(s->pidfd);
		s->pidfd = -1;
	}
	if (s->state == SHELL_CLOSING) {
		shell_close_finish(a, s);
		return;
	}
	shell_read_pty(a, s); /* what is already there */
	if (s->master >= 0 && s->pty_eof) {
		close(s->master);
		s->master = -1;
	}
	if (s->master < 0)
		shell_stopped(a, s);
	else
		s->stop_deadline = a->now + SHELL_STOP_GRACE_MS;
}

/*
 * Is process pid blocked in read(2)? (from /proc/PID/syscall: the number
 * of the system call it waits in, "running" or -1 otherwise)
 */
static int
blocked_in_read(pid_t pid)
{
	char path[64], buf[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/syscall", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return atoi(buf) == SYS_read && buf[0] >= '0' && buf[0] <= '9';
}

/*
 * The input is closed: once everything typed before is written, type the
 * terminal's end-of-file character (VEOF, Ctrl-D unless changed). A
 * reader in canonical mode then reads end of file (a partial line is
 * passed on first, and the next VEOF is end of file); a line editor at an
 * empty line takes Ctrl-D as end of file too. It is typed again every
 * SHELL_EOF_REPEAT_MS while the shell runs, as a closed pipe keeps reading
 * as end of file. In canonical mode only while the foreground process
 * waits in read(2): a VEOF nobody reads stays queued as an empty line end,
 * which the shell's line editor would later read as a NUL in its command
 * line (ash, between two commands), and then no Ctrl-D ends it: so a line
 * editor (no ICANON) still running after the first is sent Ctrl-U (kill
 * the line: nothing more will be typed on it) before each later one.
 */
static void
shell_type_eof(struct agent *a, struct shell *s)
{
	struct termios tio;
	uint8_t c[2] = {0x15, 0x04}; /* Ctrl-U, then VEOF */
	size_t off = 1;
	pid_t fg;

	if (!s->input_eof || s->state != SHELL_RUNNING || s->exited ||
	    s->master < 0 || s->input.len > 0 || a->now < s->eof_next)
		return;
	s->eof_next = a->now + SHELL_EOF_REPEAT_MS;
	if (tcgetattr(s->master, &tio) == 0) {
		if (tio.c_cc[VEOF] != _POSIX_VDISABLE)
			c[1] = tio.c_cc[VEOF];
		fg = tcgetpgrp(s->master);
		if ((tio.c_lflag & ICANON) && (fg <= 0 || !blocked_in_read(fg)))
			return; /* nobody reads the terminal now */
		if (!(tio.c_lflag & ICANON) && s->eof_typed > 0)
			off = 0; /* a line editor: clear what it holds first */
	}
	s->eof_typed++;
	if (write(s->master, c + off, 2 - off) < 0 && errno != EAGAIN &&
	    errno != EINTR)
		s->input_eof = 0; /* the terminal is gone */
}

/* Deadlines: output grace after exit, SIGKILL on close, giving up. */
void
shell_timers(struct agent *a, struct shell *s)
{
	shell_type_eof(a, s);
	if (s->state == SHELL_RUNNING && s->stop_deadline != 0 &&
	    a->now >= s->stop_deadline)
		shell_stopped(a, s);
	if (s->state != SHELL_CLOSING)
		return;
	if (s->kill_deadline != 0 && a->now >= s->kill_deadline) {
		log_debug("shell %s: SIGKILL", s->id);
		kill_session(s->pid, SIGKILL);
		s->kill_deadline = 0;
		s->give_up = a->now + GIVE_UP_MS;
	}
	if (s->give_up != 0 && a->now >= s->give_up)
		shell_close_finish(a, s);
}

/* The next time shell_timers has something to do, or 0. */
uint64_t
shell_next_deadline(const struct shell *s)
{
	uint64_t next = 0;

	if (s->state == SHELL_RUNNING && s->stop_deadline != 0)
		next = s->stop_deadline;
	if (s->state == SHELL_RUNNING && s->input_eof && s->input.len == 0 &&
	    (next == 0 || s->eof_next < next))
		next = s->eof_next;
	if (s->state == SHELL_CLOSING) {
		if (s->kill_deadline != 0)
			next = s->kill_deadline;
		else if (s->give_up != 0)
			next = s->give_up;
	}
	return next;
}

/*
 * Close a shell for conn (which waits for the answer; may be NULL). Answers
 * at once when the process is gone already, else after it dies.
 */
void
shell_close_begin(struct agent *a, struct shell *s, struct conn *c)
{
	s->closer = c;
	if (c != NULL) {
		c->state = CONN_WAIT;
		c->wait = WAIT_CLOSE;
		c->shell = s;
		c->deadline = 0;
	}
	s->state = SHELL_CLOSING;
	s->stop_deadline = 0;
	s->input.len = 0;
	/* The zombie (if exited) still holds the session id: safe to use. */
	kill_session(s->pid, SIGHUP);
	kill_session(s->pid, SIGCONT);
	if (s->master >= 0) {
		close(s->master); /* hang up */
		s->master = -1;
	}
	if (s->exited) {
		shell_close_finish(a, s);
		return;
	}
	s->kill_deadline = a->now + SHELL_HUP_GRACE_MS;
}

/*
 * Send sig to the PTY's foreground process group (what Ctrl-C reaches), or
 * to the shell's own group. 0 or -errno.
 */
int
shell_signal(struct shell *s, int sig)
{
	pid_t pg = -1;

	if (s->state != SHELL_RUNNING || s->exited)
		return -ESRCH;
	if (s->master < 0 || ioctl(s->master, TIOCGPGRP, &pg) < 0 || pg <= 0)
		pg = s->pid;
	if (kill(-pg, sig) == 0)
		return 0;
	if (kill(s->pid, sig) == 0)
		return 0;
	return -errno;
}

/* Resize the PTY (the kernel sends SIGWINCH); 0 or -errno. */
int
shell_resize(struct agent *a, struct shell *s, int cols, int rows)
{
	struct winsize ws = {.ws_row = rows, .ws_col = cols};

	(void)a;
	if (s->master < 0 || s->state == SHELL_CLOSING)
		return -EIO;
	if (ioctl(s->master, TIOCSWINSZ, &ws) < 0)
		return -errno;
	if (cols != s->cols || rows != s->rows) {
		s->cols = cols;
		s->rows = rows;
		attach_send_resize(s);
	}
	return 0;
}

/* Queue keystrokes; 0, -EPIPE (not running) or -ENOBUFS (buffer full). */
int
shell_input(struct agent *a, struct shell *s, const void *p, size_t n)
{
	if (s->state != SHELL_RUNNING || s->exited || s->master < 0)
		return -EPIPE;
	if (s->input.len + n > SHELL_INPUT_MAX)
		return -ENOBUFS;
	(void)a;
	buf_add(&s->input, p, n);
	pty_flush(s);
	return 0;
}

/*
 * A client closed the input (EOF frame): end of file follows what it
 * typed. 0, or -EPIPE if the shell is not running.
 */
int
shell_input_eof(struct agent *a, struct shell *s)
{
	if (s->state != SHELL_RUNNING || s->exited || s->master < 0)
		return -EPIPE;
	if (!s->input_eof) {
		s->input_eof = 1;
		s->eof_next = a->now;
	}
	shell_type_eof(a, s);
	return 0;
}

/* Reap shells given up on at close once they finally die. */
void
shell_reap_orphans(struct agent *a)
{
	for (int i = 0; i < a->norphans; i++) {
		if (waitpid(a->orphans[i], NULL, WNOHANG) != 0)
			a->orphans[i--] = a->orphans[--a->norphans];
	}
}

/* Has the shell's process exited? (leaves the zombie) */
static int
leader_exited(struct shell *s)
{
	siginfo_t si;

	if (s->exited || s->reaped)
		return 1;
	memset(&si, 0, sizeof si);
	if (waitid(P_PID, (id_t)s->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		return 1;
	return si.si_pid == s->pid;
}

/* The agent is exiting: hang up every shell, then kill and reap them. */
void
shell_destroy_all(struct agent *a)
{
	struct shell *s;
	uint64_t until = mono_ms() + 500;
	int left;

	for (s = a->shells; s != NULL; s = s->next) {
		if (s->dead || s->reaped)
			continue;
		kill_session(s->pid, SIGHUP);
		kill_session(s->pid, SIGCONT);
		if (s->master >= 0) {
			close(s->master);
			s->master = -1;
		}
	}
	do {
		left = 0;
		for (s = a->shells; s != NULL; s = s->next) {
			if (!s->dead && !leader_exited(s))
				left++;
		}
		if (left)
			usleep(10000);
	} while (left && mono_ms() < until);
	for (s = a->shells; s != NULL; s = s->next) {
		if (s->dead)
			continue;
		if (!s->reaped) {
			kill_session(s->pid, SIGKILL);
			while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
				;
			s->reaped = 1;
		}
		attach_shell_gone(a, s);
		s->dead = 1;
		a->nshells--;
	}
	for (int i = 0; i < a->norphans; i++)
		waitpid(a->orphans[i], NULL, WNOHANG);
}
