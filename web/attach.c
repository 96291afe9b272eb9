/*
 * attach.c: the blocking part of joining a page to a shell, off the loop.
 *
 * Loading the record, asking the agent for the shell (opening it when it
 * is not there yet) and attaching all wait on the guest, which under
 * load or when hostile can take seconds; the server's loop must not. So
 * each attach runs in a thread of its own and hands back a connected
 * socket (or a refusal) through a queue that the loop empties when
 * lws_cancel_service wakes it (web_attach_done). The job is the caller's
 * from web_attach_start until web_attach_done returns it.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libwebsockets.h>

#include "common/common.h"
#include "proto/attach.h"
#include "session/session.h"
#include "web-int.h"

#define ATTACH_REQUEST_MS 15000
#define ATTACH_REPLAY     (32 * 1024) /* repainted on a first connect */

static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static struct web_attach *done_head;
static struct lws_context *done_ctx;

/* A number field of o, or def. */
static double
num_field(const cJSON *o, const char *key, double def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : def;
}

/* Open j's shell at the page's size; 0 or -1 with cause. */
static int
shell_open(const struct vsock_target *t, struct web_attach *j, char **cause)
{
	uint64_t now = mono_ms();
	cJSON *req = agent_req_open_shell(j->shell, j->cols, j->rows), *reply;

	reply = agent_call(t, req, now + ATTACH_REQUEST_MS,
	    now + ATTACH_REQUEST_MS, NULL, NULL, cause);
	cJSON_Delete(req);
	if (reply == NULL)
		return -1;
	cJSON_Delete(reply);
	return 0;
}

/* Refuse j with code and a reason for the page. */
static void
refuse(struct web_attach *j, int code, char *reason)
{
	j->close_code = code;
	j->cause = reason;
}

/* Do the job: fill in j->fd and what came with it, or a refusal. */
static void
attach_run(struct web_attach *j)
{
	struct session_record r;
	struct vsock_target t;
	struct attach_client ac;
	struct attach_who who = {j->as, j->watch, 0};
	int64_t cursor = j->cursor, end = 0;
	cJSON *rec = NULL;
	char *cause = NULL;
	int found;

	if (record_load(j->home, j->session, &r, &cause) != 0) {
		free(cause);
		xasprintf(&cause, "there is no session %s", j->session);
		refuse(j, WEB_CLOSE_NOSUCH, cause);
		return;
	}
	if (j->instance != NULL &&
	    (r.instance == NULL || strcmp(r.instance, j->instance) != 0)) {
		record_free(&r);
		xasprintf(&cause,
		    "session %s is not the one this link was made for",
		    j->session);
		refuse(j, WEB_CLOSE_NOSUCH, cause);
		return;
	}
	/* a page that only watches (the wall's tiles) lets a paused session
	 * sleep; one that may type wakes it */
	if (j->watch && strcmp(session_state(&r), "paused") == 0) {
		xasprintf(&cause, "session %s is paused", j->session);
		record_free(&r);
		refuse(j, WEB_CLOSE_DOWN, cause);
		return;
	}
	if (session_wake_child(j->home, &r, &cause) != 0) {
		record_free(&r);
		refuse(j, WEB_CLOSE_DOWN, cause);
		return;
	}
	if (strcmp(session_state(&r), "running") != 0) {
		xasprintf(
		    &cause, "session %s is %s", j->session, session_state(&r));
		record_free(&r);
		refuse(j, WEB_CLOSE_DOWN, cause);
		return;
	}
	session_target(&r, &t);
	found = attach_shell_find(&t, j->shell, ATTACH_REPLAY,
	    mono_ms() + ATTACH_REQUEST_MS, mono_ms() + ATTACH_REQUEST_MS,
	    &cursor, &end, &cause);
	if (found == 0 && !j->may_open) {
		xasprintf(
		    &cause, "no shell %s in %s yet", j->shell, j->session);
		record_free(&r);
		refuse(j, WEB_CLOSE_DOWN, cause);
		return;
	}
	if (found == 0 && shell_open(&t, j, &cause) == 0) {
		cursor = -1;
		end = 0;
	} else if (found == 0)
		found = -1;
	/* a reconnect: from where the page was, unless that is past this
	 * shell's end (the VM started again: a new shell of the same id) */
	if (found >= 0 && j->cursor >= 0 && j->cursor <= end)
		cursor = j->cursor;
	else if (found >= 0 && j->cursor >= 0) {
		cursor = -1;
		j->reset = 1;
	}
	if (found >= 0 &&
	    attach_shell_open(&t, j->shell, cursor, &who,
	        mono_ms() + ATTACH_REQUEST_MS, &ac, &rec, &cause) == 0) {
		j->fd = ac.fd;
		j->rest_len = ac.in_len - ac.in_off;
		j->rest = xmalloc(j->rest_len + 1);
		if (j->rest_len > 0)
			memcpy(j->rest, ac.in + ac.in_off, j->rest_len);
		j->start = (int64_t)num_field(rec, "cursor", 0);
		j->end = (int64_t)num_field(rec, "output_bytes", 0);
		j->cols = (int)num_field(rec, "cols", 0); /* the shell's size */
		j->rows = (int)num_field(rec, "rows", 0);
		ac.fd = -1; /* the socket is the loop's now */
		attach_client_free(&ac);
		cJSON_Delete(rec);
	} else
		refuse(j, WEB_CLOSE_GONE, cause);
	record_free(&r);
}

/* The thread: run one job, queue it, wake the loop. */
static void *
attach_thread(void *arg)
{
	struct web_attach *j = arg;

	attach_run(j);
	pthread_mutex_lock(&done_lock);
	j->next = done_head;
	done_head = j;
	if (done_ctx != NULL) /* else the server is stopping */
		lws_cancel_service(done_ctx);
	pthread_mutex_unlock(&done_lock);
	return NULL;
}

/* Start job j (its fd -1, its close_code 0); 0, or -1 if no thread. */
int
web_attach_start(struct lws_context *ctx, struct web_attach *j)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t th;
	int rc;

	pthread_mutex_lock(&done_lock);
	done_ctx = ctx;
	pthread_mutex_unlock(&done_lock);
	j->fd = -1;
	j->close_code = 0;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	sigfillset(&all); /* signals are the loop's: the thread blocks them */
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&th, &attr, attach_thread, j);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return rc == 0 ? 0 : -1;
}

/* The jobs finished since the last call, as a list (oldest last). */
struct web_attach *
web_attach_done(void)
{
	struct web_attach *j;

	pthread_mutex_lock(&done_lock);
	j = done_head;
	done_head = NULL;
	pthread_mutex_unlock(&done_lock);
	return j;
}

/* Free a finished job (closing its socket if nobody took it). */
void
web_attach_free(struct web_attach *j)
{
	if (j->fd >= 0)
		close(j->fd);
	free(j->home);
	free(j->session);
	free(j->instance);
	free(j->shell);
	free(j->as);
	free(j->rest);
	free(j->cause);
	free(j);
}

/* The server stops: threads still working wake nobody (their jobs leak). */
void
web_attach_shutdown(void)
{
	pthread_mutex_lock(&done_lock);
	done_ctx = NULL;
	pthread_mutex_unlock(&done_lock);
}
