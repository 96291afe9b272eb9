/*
 * jobs.c: vmux CLI commands run from the TUI as children of the loop
 * (uv_spawn), so `new`, `rm`, `cp` and the rest keep their exact flags and
 * behaviour and never block the screen. A transfer (`cp --progress-lines`)
 * reports "vmux-progress BYTES TOTAL" lines on stderr, shown as a progress
 * bar; several run at once and each can be cancelled (SIGINT, which cp
 * answers by leaving the destination as it was).
 *
 * The TUI owns the job list; a job is freed once its process and both
 * pipes are closed, and its done callback runs just before, when all it
 * printed has been read.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "tui.h"

#define JOB_KEEP_BYTES (64 * 1024) /* of each output stream */

/* Unlink j from the list and free it, once all its handles are closed. */
static void
job_release(uv_handle_t *h)
{
	struct job *j = h->data;
	struct job **pp;

	if (--j->open_handles > 0)
		return;
	/* Now, not at exit: only now has all it printed been read. */
	if (j->exited && j->done != NULL && !j->tui->quit) {
		j->done(j->tui, j);
		draw_schedule(j->tui);
	}
	for (pp = &j->tui->jobs; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == j) {
			*pp = j->next;
			break;
		}
	}
	free(j->what);
	free(j->outbuf);
	free(j->errbuf);
	free(j->arg);
	free(j);
}

/* Buffer space for a pipe read. */
static void
job_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	buf->base = xmalloc(16384);
	buf->len = 16384;
}

/* Keep the last JOB_KEEP_BYTES of a stream. */
static void
keep(char **buf, size_t *len, const char *b, size_t n)
{
	*buf = xrealloc(*buf, *len + n + 1);
	memcpy(*buf + *len, b, n);
	*len += n;
	if (*len > JOB_KEEP_BYTES) {
		memmove(*buf, *buf + *len - JOB_KEEP_BYTES, JOB_KEEP_BYTES);
		*len = JOB_KEEP_BYTES;
	}
	(*buf)[*len] = '\0';
}

/* Pull whole progress lines out of stderr; keep the rest. */
static void
job_stderr(struct job *j, const char *b, size_t n)
{
	unsigned long long done, total;
	size_t r = 0, w = 0;

	keep(&j->errbuf, &j->errlen, b, n);
	while (r < j->errlen) {
		char *nl = memchr(j->errbuf + r, '\n', j->errlen - r);
		size_t ll;
		if (nl == NULL) {
			memmove(j->errbuf + w, j->errbuf + r, j->errlen - r);
			w += j->errlen - r;
			break;
		}
		ll = (size_t)(nl - (j->errbuf + r)) + 1;
		if (sscanf(j->errbuf + r, "vmux-progress %llu %llu", &done,
		        &total) == 2) {
			j->bytes = done;
			j->total = total;
			draw_schedule(j->tui);
		} else {
			memmove(j->errbuf + w, j->errbuf + r, ll);
			w += ll;
		}
		r += ll;
	}
	j->errlen = w;
	j->errbuf[w] = '\0';
}

/* Output from the child. */
static void
job_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct job *j = s->data;

	if (n > 0) {
		if (s == (uv_stream_t *)&j->err)
			job_stderr(j, buf->base, (size_t)n);
		else
			keep(&j->outbuf, &j->outlen, buf->base, (size_t)n);
	} else if (n < 0)
		uv_close((uv_handle_t *)s, job_release);
	free(buf->base);
}

/* The last line of stderr that is not progress (caller frees). */
char *
job_error_line(const struct job *j)
{
	const char *s = j->errlen > 0 ? j->errbuf : j->outbuf;
	size_t len = j->errlen > 0 ? j->errlen : j->outlen;
	char *copy, *line, *last = NULL, *save = NULL, *out;

	if (s == NULL || len == 0) {
		if (j->term_signal != 0)
			xasprintf(&out, "killed by signal %d", j->term_signal);
		else
			xasprintf(
			    &out, "exit status %lld", (long long)j->status);
		return out;
	}
	copy = xstrndup(s, len);
	for (line = strtok_r(copy, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save))
		if (strncmp(line, "vmux-progress ", 14) != 0 && *line != '\0')
			last = line;
	if (last != NULL && strncmp(last, "vmux: ", 6) == 0)
		last += 6; /* the TUI is vmux already */
	out = str_printable(last ? last : "failed", 0);
	free(copy);
	return out;
}

/* The child exited. */
static void
job_exit(uv_process_t *pr, int64_t status, int sig)
{
	struct job *j = pr->data;

	j->exited = 1;
	j->status = status;
	j->term_signal = sig;
	if (!uv_is_closing((uv_handle_t *)pr))
		uv_close((uv_handle_t *)pr, job_release);
	if (!j->tui->quit)
		draw_schedule(j->tui);
}

/*
 * Start the vmux executable with argv (argv[0] is ignored; the running
 * binary is used), stdin from /dev/null. 0, or -1.
 */
int
job_start(struct tui *t, char **argv, int transfer,
    void (*done)(struct tui *, struct job *), const char *arg)
{
	struct job *j = xcalloc(1, sizeof *j);
	uv_process_options_t o;
	uv_stdio_container_t io[3];
	char *exe = exe_path();
	size_t wlen = 0;
	int rc;

	if (exe == NULL) {
		free(j);
		return -1;
	}
	j->tui = t;
	j->id = ++t->next_job_id;
	j->transfer = transfer;
	j->done = done;
	j->arg = arg ? xstrdup(arg) : NULL;
	j->started_ms = mono_ms();
	for (int i = 1; argv[i] != NULL; i++) {
		if (strcmp(argv[i], "--progress-lines") == 0)
			continue;
		wlen += strlen(argv[i]) + 1;
	}
	j->what = xcalloc(wlen + 1, 1);
	for (int i = 1; argv[i] != NULL; i++) {
		if (strcmp(argv[i], "--progress-lines") == 0)
			continue;
		if (*j->what != '\0')
			strcat(j->what, " ");
		strcat(j->what, argv[i]);
	}
	uv_pipe_init(t->loop, &j->out, 0);
	uv_pipe_init(t->loop, &j->err, 0);
	j->out.data = j->err.data = j->proc.data = j;
	memset(&o, 0, sizeof o);
	io[0].flags = UV_IGNORE;
	io[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
	io[1].data.stream = (uv_stream_t *)&j->out;
	io[2].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
	io[2].data.stream = (uv_stream_t *)&j->err;
	o.file = exe;
	o.args = argv;
	o.exit_cb = job_exit;
	o.stdio = io;
	o.stdio_count = 3;
	j->open_handles = 3;
	j->next = t->jobs;
	t->jobs = j;
	rc = uv_spawn(t->loop, &j->proc, &o);
	if (rc != 0)
		tui_message(t, 1, "cannot start %s: %s", exe, uv_strerror(rc));
	free(exe); /* uv_spawn has forked by now */
	if (rc != 0) {
		j->exited = 1;
		j->done = NULL; /* it never ran */
		uv_close((uv_handle_t *)&j->proc, job_release);
		uv_close((uv_handle_t *)&j->out, job_release);
		uv_close((uv_handle_t *)&j->err, job_release);
		return -1;
	}
	uv_read_start((uv_stream_t *)&j->out, job_alloc, job_read);
	uv_read_start((uv_stream_t *)&j->err, job_alloc, job_read);
	draw_schedule(t);
	return 0;
}

/* Ask a running job to stop, as Ctrl-C would. */
void
job_cancel(struct job *j)
{
	if (!j->exited)
		uv_process_kill(&j->proc, SIGINT);
}

/* Stop every running job (the TUI is going away). */
void
jobs_cancel_all(struct tui *t)
{
	for (struct job *j = t->jobs; j != NULL; j = j->next)
		job_cancel(j);
}
