/*
 * work.c: the session layer's blocking calls (connect with retries, agent
 * requests, reading records) run on libuv's thread pool, so a VM that hangs
 * never freezes the screen. A pool thread touches only its struct work;
 * the after callback runs on the loop and owns the results.
 */
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "tui.h"

#define WORK_CONNECT_MS 8000
#define WORK_REPLY_MS   15000

/* A job for fn on a pool thread, then after on the loop. */
struct work *
work_new(struct tui *t, work_fn fn, work_after after)
{
	struct work *w = xcalloc(1, sizeof *w);

	w->tui = t;
	w->fn = fn;
	w->after = after;
	w->home = xstrdup(t->home);
	w->fd = -1;
	w->cursor = -1;
	return w;
}

/* Pool thread: run the job. */
static void
work_run(uv_work_t *req)
{
	struct work *w = req->data;

	w->fn(w);
}

/* Loop: hand the results over and free the job. */
static void
work_done(uv_work_t *req, int status)
{
	struct work *w = req->data;

	if (status == UV_ECANCELED && w->cause == NULL) {
		w->rc = -1;
		w->cause = xstrdup("cancelled");
	}
	if (!w->tui->quit)
		w->after(w->tui, w);
	else if (w->fn == work_attach && w->rc == 0)
		attach_client_free(&w->ac);
	cJSON_Delete(w->request);
	cJSON_Delete(w->reply);
	cJSON_Delete(w->part);
	model_free(&w->model);
	free(w->home);
	free(w->group_by);
	free(w->session);
	free(w->shell);
	free(w->file);
	free(w->cause);
	free(w);
}

/* Queue w; its after callback always runs. */
void
work_queue(struct work *w)
{
	w->req.data = w;
	if (uv_queue_work(w->tui->loop, &w->req, work_run, work_done) != 0)
		NEVER("uv_queue_work with a valid loop and callbacks");
}

/* Load the session's record and its transport; 0 or -1 with w->cause. */
static int
work_target(struct work *w, struct session_record *r, struct vsock_target *t)
{
	const char *name;
	const struct host *h = hosts_target(w->tui, w->session, &name);

	if (h != NULL) { /* its own vmux knows whether it runs */
		memset(r, 0, sizeof *r);
		memset(t, 0, sizeof *t);
		t->host = h;
		t->session = name;
		return 0;
	}
	if (record_load(w->home, name, r, &w->cause) != 0)
		return -1;
	/* selecting or attaching a paused session resumes it (a pool
	 * thread: the TUI goes on meanwhile) */
	if (session_wake_child(w->home, r, &w->cause) != 0) {
		record_free(r);
		return -1;
	}
	if (!session_qemu_alive(r)) {
		xasprintf(&w->cause, "session %s is not running", w->session);
		record_free(r);
		return -1;
	}
	if (r->no_agent) {
		xasprintf(&w->cause,
		    "session %s runs without the agent: its console is the "
		    "way in",
		    w->session);
		record_free(r);
		return -1;
	}
	session_target(r, t);
	return 0;
}

/* Pool thread: send w->request to the session's agent, answer in reply. */
void
work_agent_call(struct work *w)
{
	struct session_record r;
	struct vsock_target t;
	uint64_t now = mono_ms();
	const cJSON *err;

	w->rc = -1;
	if (work_target(w, &r, &t) != 0)
		return;
	w->reply = agent_call(&t, w->request, now + WORK_CONNECT_MS,
	    now + WORK_REPLY_MS, NULL, NULL, &w->cause);
	record_free(&r);
	if (w->reply == NULL)
		return;
	err = cJSON_GetObjectItemCaseSensitive(w->reply, "error");
	if (cJSON_IsString(err)) {
		w->cause = xstrdup(err->valuestring);
		return;
	}
	w->rc = 0;
}

/* Pool thread: attach to w->shell from w->cursor (-1: the oldest kept). */
void
work_attach(struct work *w)
{
	struct session_record r;
	struct vsock_target t;

	w->rc = -1;
	if (work_target(w, &r, &t) != 0) {
		snprintf(w->code, sizeof w->code, "%s", WORK_NO_SESSION);
		return;
	}
	if (attach_shell_open(&t, w->shell, w->cursor, &w->who,
	        mono_ms() + WORK_REPLY_MS, &w->ac, &w->reply, &w->cause) == 0)
		w->rc = 0;
	else /* the agent's code travels to the loop thread with w */
		snprintf(w->code, sizeof w->code, "%s", agent_error_code());
	record_free(&r);
}
