/*
 * local.c: the pane source of a host PTY running a local command instead
 * of a guest shell (`vmux tui --local-command CMD`, the command in
 * p->command). It lets the rendering tests and the render benchmark drive
 * exactly the pane code a guest shell uses, without a VM. The pane owns
 * the PTY master (p->fd) and the child.
 */
#include <sys/ioctl.h>
#include <sys/wait.h>

#include <errno.h>
#include <pty.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "tui.h"

#define LOCAL_BUDGET (256 * 1024)

/* The PTY is readable: parse a bounded amount. */
static void
local_poll_cb(uv_poll_t *h, int status, int events)
{
	struct pane *p = h->data;
	uint8_t buf[16384];
	size_t budget = LOCAL_BUDGET;

	p->feed_deadline = pane_clock_us() + PANE_FEED_US;
	while (budget > 0) {
		if (pane_backlogged(p)) {
			uv_poll_stop(h); /* local_resume restarts it */
			return;
		}
		if (pane_clock_us() >= p->feed_deadline)
			return; /* the keyboard's turn */
		ssize_t n = read(p->fd, buf, sizeof buf);
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			int st = 0;
			uv_poll_stop(h);
			if (p->pid > 0 && waitpid(p->pid, &st, 0) == p->pid)
				p->exit_status = WIFEXITED(st)
				    ? WEXITSTATUS(st)
				    : 128 + WTERMSIG(st);
			p->pid = 0;
			p->state = PANE_EXITED;
			draw_schedule(p->tui);
			return;
		}
		pane_feed(p, buf, (size_t)n);
		budget -= (size_t)n > budget ? budget : (size_t)n;
	}
}

/* Start p->command (by /bin/sh -c) on a new PTY of the pane's size. */
static int
local_start(struct pane *p, char **cause)
{
	struct winsize ws = {.ws_row = (unsigned short)p->rows,
	    .ws_col = (unsigned short)p->cols};
	int fd;
	pid_t pid = forkpty(&fd, NULL, NULL, &ws);

	if (pid < 0) {
		xasprintf(cause, "forkpty: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		setenv("TERM", "xterm-256color", 1);
		execl("/bin/sh", "sh", "-c", p->command, (char *)NULL);
		_exit(127);
	}
	set_nonblock(fd, 1);
	set_cloexec(fd);
	p->fd = fd;
	p->pid = pid;
	p->state = PANE_LIVE;
	p->poll = xmalloc(sizeof *p->poll);
	uv_poll_init(p->tui->loop, p->poll, fd);
	p->poll->data = p;
	uv_poll_start(p->poll, UV_READABLE, local_poll_cb);
	return 0;
}

/* The backlog is parsed: read the PTY again. */
static void
local_resume(struct pane *p)
{
	if (p->poll != NULL && p->state == PANE_LIVE)
		uv_poll_start(p->poll, UV_READABLE, local_poll_cb);
}

/* Type bytes into the PTY (a short write drops the rest: tests type little). */
static void
local_write(struct pane *p, const void *b, size_t len)
{
	if (p->fd >= 0 && p->state == PANE_LIVE)
		(void)write_all(p->fd, b, len);
}

/* Resize the PTY (the child gets SIGWINCH). */
static void
local_resize(struct pane *p, int cols, int rows)
{
	struct winsize ws = {
	    .ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};

	if (p->fd >= 0)
		ioctl(p->fd, TIOCSWINSZ, &ws);
}

/* Close the PTY and stop the child. */
static void
local_stop(struct pane *p)
{
	pane_poll_close(p);
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	if (p->pid > 0) {
		kill(p->pid, SIGHUP);
		waitpid(p->pid, NULL, 0);
		p->pid = 0;
	}
}

/* No signal menu: the child is the test's, and has the PTY's own keys. */
const struct pane_source local_source = {
    .name = "local",
    .shell = 0,
    .start = local_start,
    .write = local_write,
    .resize = local_resize,
    .signal = NULL,
    .stop = local_stop,
    .resume = local_resume,
};
