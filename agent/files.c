/*
 * files.c: extract_archive and export_archive (what `vmux cp` uses), each
 * request in its own detached thread so disk and network waits never stall
 * the event loop. The tar code is the archive module's (archive/archive.h).
 *
 * extract_archive: {"destination", "archive_size": N, "cp"?,
 * "skip_unsafe_links"?} then exactly N raw bytes of a tar (plain or gzip).
 * Bytes the loop read past the request line are the first of them. The
 * answer is {"destination", "entry_count", "bytes_written", "skipped"} or
 * {"error"}. On an error the answer goes out at once and the rest of the N
 * bytes is read and dropped, so a client still sending sees the answer
 * instead of a reset. With "cp", destination follows docker cp's rules
 * (tar_cp_destination): an existing directory receives the archive's top
 * entry under its own name, any other path names the copy itself.
 *
 * export_archive: {"path"} -> one JSON line {"path", "type", "size"?} then
 * a tar of the path (named by its basename) until the agent closes; errors
 * before the stream are {"error"}. An error mid-stream just ends the stream
 * early, which the reader sees as a truncated archive.
 *
 * A transfer that makes no progress for AGENT_IDLE_TIMEOUT_MS is dropped.
 */
#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "archive/archive.h"

#define FILES_THREAD_STACK (1024 * 1024)
#define FILES_CHUNK        65536

struct files_job {
	int fd;
	struct agent_request *req;
	uint8_t *pre; /* archive bytes that came with the request */
	size_t pre_len;
};

static atomic_int active;

/* How many file transfers are running. */
int
files_serve_active(void)
{
	return atomic_load(&active);
}

/* Send one JSON object as a line (deleting it). */
static int
files_reply(int fd, cJSON *obj)
{
	size_t len;
	char *line = response_print(obj, &len);
	int rc;

	cJSON_Delete(obj);
	rc = agent_send_all(fd, line, len);
	free(line);
	return rc;
}

/* Send {"error": msg}. */
static void
files_error(int fd, const char *msg)
{
	size_t len;
	char *line = response_error(msg, &len);

	log_debug("files: %s", msg);
	agent_send_all(fd, line, len);
	free(line);
}

/*
 * Read up to len bytes, waiting at most the idle timeout for some. Returns
 * the count, 0 at EOF, -1 on error or timeout (*why says which).
 */
static ssize_t
files_recv(int fd, void *buf, size_t len, const char **why)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	ssize_t n;
	int r;

	for (;;) {
		n = recv(fd, buf, len, 0);
		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN) {
			*why = strerror(errno);
			return -1;
		}
		r = poll(&pfd, 1, AGENT_IDLE_TIMEOUT_MS);
		if (r == 0) {
			*why = "timed out waiting for the archive";
			return -1;
		}
		if (r < 0 && errno != EINTR) {
			*why = strerror(errno);
			return -1;
		}
	}
}

/* Set up the extraction, or NULL with *cause. */
static struct tar_extract *
extract_begin(const struct agent_request *req, char **cause)
{
	struct tar_extract *te;
	char *dir = NULL, *top = NULL;

	if (req->cp) {
		if (tar_cp_destination(req->destination, &dir, &top, cause) !=
		    0)
			return NULL;
	} else
		dir = xstrdup(req->destination);
	te = tar_extract_new(dir, cause);
	if (te != NULL && top != NULL &&
	    tar_extract_rename_top(te, top, cause) != 0) {
		tar_extract_free(te);
		te = NULL;
	}
	if (te != NULL)
		tar_extract_set_flags(te,
		    (req->skip_unsafe_links ? TAR_X_SKIP_UNSAFE_LINKS : 0) |
		        (req->cp ? TAR_X_KEEP_NONDIRS : 0));
	free(dir);
	free(top);
	return te;
}

/* extract_archive: read exactly archive_size bytes into the extractor. */
static void
do_extract(struct files_job *job)
{
	struct agent_request *req = job->req;
	uint64_t left = req->archive_size, got = 0;
	struct tar_extract *te;
	struct tar_result res;
	char *cause = NULL, *buf;
	const char *why = NULL;
	int answered = 0;
	size_t n;
	ssize_t r;
	cJSON *obj;

	te = extract_begin(req, &cause);
	n = job->pre_len < left ? job->pre_len : (size_t)left;
	if (te != NULL && n > 0)
		tar_extract_feed(te, job->pre, n, &cause);
	left -= n;
	got += n;
	buf = xmalloc(FILES_CHUNK);
	for (;;) {
		if (cause != NULL && !answered) {
			/* answer now; the client may still be sending */
			files_error(job->fd, cause);
			shutdown(job->fd, SHUT_WR);
			answered = 1;
		}
		if (left == 0)
			break;
		r = files_recv(job->fd, buf,
		    left < FILES_CHUNK ? (size_t)left : FILES_CHUNK, &why);
		if (r <= 0) {
			if (cause == NULL && r == 0)
				xasprintf(&cause,
				    "archive ended after %llu of %llu bytes",
				    (unsigned long long)got,
				    (unsigned long long)req->archive_size);
			else if (cause == NULL)
				xasprintf(
				    &cause, "reading the archive: %s", why);
			if (!answered)
				files_error(job->fd, cause);
			answered = 1;
			break;
		}
		left -= (uint64_t)r;
		got += (uint64_t)r;
		if (cause == NULL)
			tar_extract_feed(te, buf, (size_t)r, &cause);
	}
	free(buf);
	if (!answered && tar_extract_finish(te, &res, &cause) != 0)
		files_error(job->fd, cause);
	else if (!answered) {
		log_debug("extract %s: %llu entries, %llu bytes",
		    req->destination, (unsigned long long)res.entry_count,
		    (unsigned long long)res.bytes_written);
		obj = cJSON_CreateObject();
		json_add_str(obj, "destination", req->destination);
		cJSON_AddNumberToObject(
		    obj, "entry_count", (double)res.entry_count);
		cJSON_AddNumberToObject(
		    obj, "bytes_written", (double)res.bytes_written);
		cJSON_AddNumberToObject(obj, "skipped", (double)res.skipped);
		files_reply(job->fd, obj);
	}
	free(cause);
	tar_extract_free(te);
}

/* What kind of file st is, in the export answer's words. */
static const char *
files_type(const struct stat *st)
{
	if (S_ISREG(st->st_mode))
		return "file";
	if (S_ISDIR(st->st_mode))
		return "directory";
	if (S_ISLNK(st->st_mode))
		return "symlink";
	return "other";
}

/* export_archive: the answer line, then the tar stream. */
static void
do_export(struct files_job *job)
{
	struct agent_request *req = job->req;
	struct tar_export *te;
	char *cause = NULL, *buf, *line;
	struct stat st;
	size_t len;
	ssize_t n;
	cJSON *obj;

	if (lstat(req->path, &st) != 0) {
		xasprintf(&cause, "%s: %s", req->path, strerror(errno));
		files_error(job->fd, cause);
		free(cause);
		return;
	}
	if ((te = tar_export_new(req->path, NULL, &cause)) == NULL) {
		files_error(job->fd, cause);
		free(cause);
		return;
	}
	obj = cJSON_CreateObject();
	json_add_str(obj, "path", req->path);
	cJSON_AddStringToObject(obj, "type", files_type(&st));
	if (S_ISREG(st.st_mode))
		cJSON_AddNumberToObject(obj, "size", (double)st.st_size);
	/*
	 * The answer line leads the first chunk, so every send ends at a
	 * multiple of FILES_CHUNK in the connection's byte stream. The guest
	 * kernel cuts packets at send boundaries and at the credit the bridge
	 * grants in whole windows; sends out of step with those windows leave
	 * a sliver of credit before each boundary and twice the packets
	 * (measured: a 64 MiB download went from 0.55x to 0.8x of a raw
	 * stream, 4100 packets down to 2050).
	 */
	line = response_print(obj, &len);
	cJSON_Delete(obj);
	buf = xmalloc(FILES_CHUNK + len);
	memcpy(buf, line, len);
	free(line);
	for (;;) {
		size_t room =
		    len < FILES_CHUNK ? FILES_CHUNK - len : FILES_CHUNK;

		n = tar_export_read(te, buf + len, room, &cause);
		if (n > 0)
			len += (size_t)n;
		if (len > 0 && agent_send_all(job->fd, buf, len) != 0)
			break; /* the client is gone */
		if (n <= 0)
			break;
		len = 0;
	}
	if (n < 0) {
		log_debug("export %s: %s", req->path, cause);
		free(cause);
	}
	free(buf);
	tar_export_free(te);
}

/* The thread: serve, close, clean up. */
static void *
files_thread(void *arg)
{
	struct files_job *job = arg;

	if (job->req->action == ACTION_EXTRACT_ARCHIVE)
		do_extract(job);
	else
		do_export(job);
	shutdown(job->fd, SHUT_WR);
	close(job->fd);
	request_free(job->req);
	free(job->pre);
	free(job);
	activity_ended(); /* idle counts from here */
	atomic_fetch_sub(&active, 1);
	return NULL;
}

/*
 * Hand a file request, its connection and the pre_len bytes already read
 * past the request line to a new thread, which owns the fd and request from
 * then on. Returns 0, or -1 with *cause (the caller keeps both).
 */
int
files_serve_start(int fd, struct agent_request *req, const void *pre,
    size_t pre_len, char **cause)
{
	struct files_job *job = xcalloc(1, sizeof *job);
	pthread_attr_t attr;
	pthread_t tid;
	int rc;

	job->fd = fd;
	job->req = req;
	if (pre_len > 0) {
		job->pre = xmalloc(pre_len);
		memcpy(job->pre, pre, pre_len);
		job->pre_len = pre_len;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, FILES_THREAD_STACK);
	atomic_fetch_add(&active, 1);
	rc = pthread_create(&tid, &attr, files_thread, job);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		atomic_fetch_sub(&active, 1);
		free(job->pre);
		free(job);
		xasprintf(cause, "cannot start a thread: %s", strerror(rc));
		return -1;
	}
	return 0;
}
