/*
 * cp.c: the transfers behind `vmux cp`.
 *
 * Upload: the host path is packed into an unlinked temporary tar first (so
 * its exact size is known), then sent as extract_archive {"destination":
 * guest path, "archive_size": N, "cp": true} plus N raw bytes; the agent
 * applies docker cp's destination rules in the guest. While sending we
 * also watch for an early answer (an error such as a missing guest
 * directory), so a refused copy stops at once.
 *
 * Download: export_archive {"path"} answers one JSON line, then streams a
 * tar until it closes; the archive module extracts it on the host into a
 * staging directory, accepting only the source's own top-level name, and
 * cp-place.c moves the copy into place under the same destination rules
 * (tar_cp_destination) only once the whole archive was valid. SIGINT,
 * SIGTERM and SIGHUP during a download end it like an error, so the staging
 * directory never outlives vmux.
 * Either way no progress for CP_IDLE_MS is an error.
 */
#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "proto/proto.h"
#include "archive/archive.h"
#include "session/session.h"
#include "cli.h"

#define CP_IDLE_MS   30000  /* no progress for this long: give up */
#define CP_FINISH_MS 120000 /* the agent's answer after the last byte */
#define CP_CHUNK     65536

/* An unlinked temporary file; fd or -1 with cause. */
static int
cp_tempfile(char **cause)
{
	const char *dir = getenv("TMPDIR");
	char *path;
	int fd;

	if (dir == NULL || *dir == '\0')
		dir = "/tmp";
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	xasprintf(&path, "%s/vmux-cp.XXXXXX", dir);
	fd = mkostemp(path, O_CLOEXEC);
	if (fd >= 0)
		unlink(path);
	else
		xasprintf(cause, "cannot make a temporary file in %s: %s", dir,
		    strerror(errno));
	free(path);
	return fd;
}

/* Read the agent's answer up to EOF or its newline, before deadline. */
static cJSON *
cp_read_answer(int fd, uint64_t deadline, char **cause)
{
	char buf[65536];
	size_t used = 0;
	ssize_t r;
	int n;

	for (;;) {
		n = wait_fd(fd, POLLIN, deadline);
		if (n <= 0) {
			xasprintf(cause, "%s waiting for the agent's answer",
			    n == 0 ? "timed out" : strerror(-n));
			return NULL;
		}
		r = recv(fd, buf + used, sizeof buf - used, MSG_DONTWAIT);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0) {
			xasprintf(cause, "reading the agent's answer: %s",
			    strerror(errno));
			return NULL;
		}
		if (r == 0 || memchr(buf + used, '\n', (size_t)r) != NULL) {
			used += (size_t)r;
			break;
		}
		used += (size_t)r;
		if (used == sizeof buf) {
			xasprintf(cause, "agent answer too long");
			return NULL;
		}
	}
	return agent_parse_reply(buf, used, cause);
}

/* Send the archive in fd (size bytes) unless the agent answers early. */
static int
cp_send_archive(
    int sock, int fd, uint64_t size, struct progress *pr, char **cause)
{
	char *buf = xmalloc(CP_CHUNK);
	uint64_t off = 0;
	size_t have = 0, sent = 0;
	ssize_t n;
	int rc = -1;

	while (off < size || sent < have) {
		struct pollfd p = {.fd = sock, .events = POLLIN | POLLOUT};

		if ((n = poll(&p, 1, CP_IDLE_MS)) < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			xasprintf(cause, "sending the archive: %s",
			    n == 0 ? "timed out" : strerror(errno));
			goto out;
		}
		if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
			rc = 0; /* an early answer: the caller reads it */
			goto out;
		}
		if (sent == have) {
			size_t want = size - off < CP_CHUNK
			    ? (size_t)(size - off)
			    : CP_CHUNK;
			n = pread(fd, buf, want, (off_t)off);
			if (n <= 0) {
				xasprintf(cause,
				    "reading the temporary archive: %s",
				    n == 0 ? "short file" : strerror(errno));
				goto out;
			}
			have = (size_t)n;
			sent = 0;
			off += (uint64_t)n;
		}
		n = send(
		    sock, buf + sent, have - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0) {
			rc = 0; /* the agent may have answered and closed */
			goto out;
		}
		sent += (size_t)n;
		progress_add(pr, (uint64_t)n);
	}
	rc = 0;
out:
	free(buf);
	return rc;
}

/* Count, and unless quiet warn about, entries the extraction left out. */
static void
cp_skipped(struct cp_spec *spec, const cJSON *reply, double skipped)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(reply, "skipped");

	if (cJSON_IsNumber(v))
		skipped = v->valuedouble;
	spec->skipped = skipped > 0 ? (uint64_t)skipped : 0;
	if (skipped > 0 && !spec->quiet)
		cli_error("skipped %.0f entries (devices, fifos, sockets or "
		          "links pointing outside the destination)",
		    skipped);
}

/* Host path -> guest; 0 or -1 with cause. */
int
cp_upload(const struct vsock_target *t, struct cp_spec *spec, char **cause)
{
	struct progress pr;
	struct tar_result tr;
	struct stat st;
	cJSON *req, *reply = NULL;
	char *line, *json;
	off_t size;
	int fd, sock = -1, rc = -1, n;

	if (lstat(spec->local, &st) != 0) {
		xasprintf(cause, "cannot copy '%s': %s", spec->local,
		    strerror(errno));
		return -1;
	}
	if ((fd = cp_tempfile(cause)) < 0)
		return -1;
	if (tar_export_fd(spec->local, NULL, fd, &tr, cause) != 0)
		goto out;
	if ((size = lseek(fd, 0, SEEK_END)) < 0) {
		xasprintf(cause, "temporary archive: %s", strerror(errno));
		goto out;
	}

	sock = transport_connect(
	    t, VMUX_AGENT_PORT, mono_ms() + CLI_CONNECT_MS, cause);
	if (sock < 0)
		goto out;
	set_nonblock(sock, 1);
	req = agent_req_extract_archive(spec->remote, (int64_t)size);
	json = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	xasprintf(&line, "%s\n", json);
	cJSON_free(json);
	n = send_all_deadline(sock, line, strlen(line), mono_ms() + CP_IDLE_MS);
	free(line);
	if (n < 0) {
		xasprintf(cause, "cannot send the request to the agent: %s",
		    strerror(-n));
		goto out;
	}
	progress_init(&pr, "upload", (uint64_t)size);
	if (spec->quiet) /* pr.on is 2 for --progress-lines: keep it */
		pr.on = 0;
	if (cp_send_archive(sock, fd, (uint64_t)size, &pr, cause) != 0) {
		progress_done(&pr, 0);
		goto out;
	}
	reply = cp_read_answer(sock, mono_ms() + CP_FINISH_MS, cause);
	progress_done(&pr, reply != NULL);
	if (reply == NULL)
		goto out;
	spec->bytes = pr.bytes;
	cp_skipped(spec, reply, 0);
	rc = 0;
out:
	cJSON_Delete(reply);
	if (sock >= 0)
		close(sock);
	close(fd);
	return rc;
}

/*
 * While a download is staged, SIGINT, SIGTERM and SIGHUP are held and
 * only let through while waiting for the guest (ppoll), where they end the
 * download like an error, so the staging directory is always removed.
 */
struct cp_signals {
	int on;
	sigset_t old_mask;
	struct sigaction old[3];
};
static const int cp_sigs[] = {SIGINT, SIGTERM, SIGHUP};
static volatile sig_atomic_t cp_caught;

/* Remember a signal (it is raised again once the staging is gone). */
static void
cp_on_signal(int sig)
{
	cp_caught = sig;
}

/* Hold the interrupting signals, catching them. */
static void
cp_signals_catch(struct cp_signals *s)
{
	struct sigaction sa;
	sigset_t set;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = cp_on_signal;
	sigemptyset(&set);
	for (size_t i = 0; i < nitems(cp_sigs); i++) {
		sigaction(cp_sigs[i], NULL, &s->old[i]);
		if (s->old[i].sa_handler == SIG_IGN)
			continue; /* ignored (a background job's SIGINT): still
			           */
		sigaddset(&set, cp_sigs[i]);
		sigaction(cp_sigs[i], &sa, NULL);
	}
	sigprocmask(SIG_BLOCK, &set, &s->old_mask);
	cp_caught = 0;
	s->on = 1;
}

/* Put the signals back; a caught one is raised again now. */
static void
cp_signals_restore(struct cp_signals *s)
{
	int sig = cp_caught;

	if (!s->on)
		return;
	for (size_t i = 0; i < nitems(cp_sigs); i++)
		sigaction(cp_sigs[i], &s->old[i], NULL);
	sigprocmask(SIG_SETMASK, &s->old_mask, NULL);
	s->on = 0;
	if (sig != 0)
		raise(sig);
}

/* Wait for the guest's next bytes: 0, or -1 with cause (idle, signal). */
static int
cp_wait(int sock, const struct cp_signals *s, char **cause)
{
	struct timespec ts = {CP_IDLE_MS / 1000, 0};
	struct pollfd p = {.fd = sock, .events = POLLIN};
	int n;

	do {
		n = ppoll(&p, 1, &ts, &s->old_mask);
		if (cp_caught != 0) {
			xasprintf(cause, "interrupted");
			return -1;
		}
	} while (n < 0 && errno == EINTR);
	if (n <= 0) {
		xasprintf(cause, "receiving the archive: %s",
		    n == 0 ? "timed out" : strerror(errno));
		return -1;
	}
	return 0;
}

/* Guest path -> host; 0 or -1 with cause. */
int
cp_download(const struct vsock_target *t, struct cp_spec *spec, char **cause)
{
	struct tar_extract *te = NULL;
	struct progress pr;
	struct tar_result tr;
	struct cp_signals sigs = {0};
	struct stat st, dst;
	char *dir = NULL, *top = NULL, *buf = NULL, *name = NULL;
	char *stage = NULL, *root = NULL, *from = NULL, *to = NULL;
	uint8_t *rest = NULL;
	size_t rest_len = 0;
	const cJSON *type, *size;
	cJSON *req, *reply = NULL;
	int sock = -1, rc = -1;
	ssize_t n;

	if (tar_cp_destination(spec->local, &dir, &top, cause) != 0)
		return -1;
	name = cp_source_name(spec->remote);
	sock = transport_connect(
	    t, VMUX_AGENT_PORT, mono_ms() + CLI_CONNECT_MS, cause);
	if (sock < 0)
		goto out;
	req = agent_req_export_archive(spec->remote);
	reply = agent_line_call(
	    sock, req, mono_ms() + CP_IDLE_MS, &rest, &rest_len, cause);
	cJSON_Delete(req);
	if (reply == NULL)
		goto out;
	type = cJSON_GetObjectItemCaseSensitive(reply, "type");
	size = cJSON_GetObjectItemCaseSensitive(reply, "size");
	if (cJSON_IsString(type) &&
	    strcmp(type->valuestring, "directory") == 0 && top != NULL &&
	    stat(spec->local, &st) == 0 && !S_ISDIR(st.st_mode)) {
		xasprintf(cause, "cannot copy directory %s:%s over file '%s'",
		    spec->session, spec->remote, spec->local);
		goto out;
	}

	/* Everything lands in staging first: see cp-place.c. */
	cp_signals_catch(&sigs);
	if (stat(dir, &dst) != 0) {
		xasprintf(
		    cause, "cannot copy into '%s': %s", dir, strerror(errno));
		goto out;
	}
	if ((stage = cp_stage_new(dir, cause)) == NULL)
		goto out;
	if (name == NULL)
		xasprintf(&root, "%s/c", stage);
	else
		root = xstrdup(stage);
	if ((te = tar_extract_new(root, cause)) == NULL)
		goto out;
	if (name != NULL && tar_extract_expect_top(te, name, cause) != 0)
		goto out;
	tar_extract_set_flags(te, TAR_X_SKIP_UNSAFE_LINKS);
	set_nonblock(sock, 1);
	progress_init(&pr, "download",
	    cJSON_IsNumber(size) ? (uint64_t)size->valuedouble : 0);
	if (spec->quiet) /* pr.on is 2 for --progress-lines: keep it */
		pr.on = 0;
	if (rest_len > 0) {
		progress_add(&pr, rest_len);
		if (tar_extract_feed(te, rest, rest_len, cause) != 0)
			goto fail;
	}
	buf = xmalloc(CP_CHUNK);
	for (;;) {
		int w = cp_wait(sock, &sigs, cause);
		if (w < 0)
			goto fail;
		n = recv(sock, buf, CP_CHUNK, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0) {
			xasprintf(cause, "receiving the archive: %s",
			    strerror(errno));
			goto fail;
		}
		if (n == 0)
			break;
		progress_add(&pr, (uint64_t)n);
		if (tar_extract_feed(te, buf, (size_t)n, cause) != 0)
			goto fail;
	}
	if (tar_extract_finish(te, &tr, cause) != 0)
		goto fail;
	progress_done(&pr, 1);
	if (name != NULL)
		xasprintf(&from, "%s/%s", stage, name);
	else
		from = xstrdup(root);
	if (name == NULL && top == NULL)
		to = xstrdup(dir);
	else
		xasprintf(&to, "%s/%s", dir, top != NULL ? top : name);
	if (cp_place(from, to, name == NULL && top == NULL, cause) != 0)
		goto out;
	spec->bytes = pr.bytes;
	cp_skipped(spec, NULL, (double)tr.skipped);
	rc = 0;
	goto out;
fail:
	progress_done(&pr, 0);
out:
	tar_extract_free(te);
	if (stage != NULL) {
		rmtree(stage);
		if (rc != 0) /* refused: not even dir's times change */
			cp_restore_times(dir, &dst);
	}
	cp_signals_restore(&sigs); /* an interrupt ends vmux only now */
	cJSON_Delete(reply);
	free(rest);
	free(buf);
	free(dir);
	free(top);
	free(name);
	free(stage);
	free(root);
	free(from);
	free(to);
	if (sock >= 0)
		close(sock);
	return rc;
}
