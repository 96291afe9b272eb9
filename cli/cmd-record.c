/*
 * cmd-record.c: recordings of shells as asciicast v2 files.
 *
 *   vmux record NAME       the recorder (vmux starts one after each boot of
 *                          a session made with --record)
 *   vmux recordings NAME   what was recorded
 *   vmux replay FILE       play one in this terminal
 *
 * The recorder runs on the host, beside the VM, never in it: a student
 * cannot edit what was recorded. Each second it asks the agent for the
 * shells and attaches to each new one as a watcher from its oldest byte
 * (so the output before it looked is there too), and writes what the shell
 * printed, with the time and every resize, to
 * SESSION_DIR/recordings/ID-UNIXTIME.cast: a header line, then
 * [seconds, "o", text] and [seconds, "r", "COLSxROWS"] lines, the format
 * asciinema plays, with --input [seconds, "i", text] for what any client
 * typed (the agent's TYPED frames), and a [seconds, "m", "N bytes of output
 * lost ..."] marker where the agent's ring let go of output before it was read.
 * Text is UTF-8: a sequence split between two reads is carried over; a byte
 * that is not UTF-8 becomes U+FFFD (asciicast can hold only text). A file past
 * RECORD_PART_MAX ends and ID-UNIXTIME.N.cast goes on. The recorder ends when
 * the session's QEMU does.
 *
 * The guest decides how many shells there are and how often they come and
 * go, so what it can make the host keep is bounded per session, over every
 * boot: RECORD_FILES_MAX files and RECORD_TOTAL_MAX bytes (headers
 * included), counted from what the directory already holds when the
 * recorder starts. Past the byte cap nothing more is written; past the
 * file cap no new shell is recorded, the ones being recorded go on (each
 * said once in recorder.log); the shells seen are at most RECORD_FILES_MAX.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "proto/attach.h"
#include "session/session.h"
#include "cli.h"

#define RECORD_PART_MAX  (64 * 1024 * 1024)     /* one file's bytes */
#define RECORD_MAX       64                     /* shells at once */
#define RECORD_LIST_MS   1000                   /* shells listed this often */
#define RECORD_TOTAL_MAX (1024LL * 1024 * 1024) /* a session's, all files */
#define RECORD_FILES_MAX 512                    /* a session's files */
#define REPLAY_LINE_MAX  (8 * 1024 * 1024)      /* one event, as text */

/* The session's recordings, bytes and files: past a cap, no more. */
static long long rec_total;
static long long rec_files;
static int rec_said_full; /* 1: the byte cap said, 2: the file cap */

static int cmd_record_exec(struct args *);
static int cmd_recordings_exec(struct args *);
static int cmd_replay_exec(struct args *);

static const struct cmd_opt cmd_record_opts[] = {
    {"into", 0, "DIR", 0,
        "the session's recordings directory (vmux passes it, so stop and "
        "rm find this recorder by it)"},
    {"input", 0, NULL, 0,
        "record what is typed into each shell too (\"i\" events; vmux "
        "new --record-input)"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_record_entry = {
    .name = "record",
    .pre = "NAME",
    .summary = "Record every shell of session NAME until its VM stops, as "
               "asciicast files under its directory (vmux runs this after "
               "each boot of a session made with --record).",
    .opts = cmd_record_opts,
    .min_args = 1,
    .max_args = 1,
    .exec = cmd_record_exec,
};

static const struct cmd_opt cmd_recordings_opts[] = {
    {"json", 0, NULL, 0, "print a list of {file, shell, started, bytes}"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_recordings_entry = {
    .name = "recordings",
    .pre = "NAME",
    .summary = "List session NAME's recordings: file, shell, when it "
               "started, size.",
    .opts = cmd_recordings_opts,
    .min_args = 1,
    .max_args = 1,
    .flags = CMD_READONLY,
    .exec = cmd_recordings_exec,
};

static const struct cmd_opt cmd_replay_opts[] = {
    {"speed", 0, "X", 0, "play X times as fast (default 1; 0: no waiting)"},
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_replay_entry = {
    .name = "replay",
    .pre = "FILE",
    .summary = "Play a recording (asciicast v2) in this terminal, with its "
               "timing.",
    .opts = cmd_replay_opts,
    .min_args = 1,
    .max_args = 1,
    .exec = cmd_replay_exec,
};

/* One shell being recorded. */
struct rec {
	char *id;
	struct attach_client ac;
	FILE *f;
	char *base;       /* dir/recordings/ID-UNIXTIME */
	int part;         /* 0, then 1, 2 ... past RECORD_PART_MAX */
	size_t bytes;     /* written to this part */
	uint64_t t0;      /* mono_ms of this part's start */
	int cols, rows;   /* the size the header says */
	uint8_t carry[4]; /* an unfinished UTF-8 sequence: output's */
	size_t ncarry;
	uint8_t icarry[4]; /* ... and input's */
	size_t nicarry;
};

/*
 * Has the session reached its byte cap, or (files set) its file cap? Each
 * is said once in the log. Past the file cap the shells being recorded go
 * on; no new one is.
 */
static int
rec_full(const char *name, int files)
{
	if (rec_total > RECORD_TOTAL_MAX) {
		if (!(rec_said_full & 1))
			fprintf(stderr,
			    "vmux record: %s: the session's recordings reached "
			    "%lld bytes; nothing more is recorded\n",
			    name, rec_total);
		rec_said_full |= 1;
		return 1;
	}
	if (files && rec_files >= RECORD_FILES_MAX) {
		if (!(rec_said_full & 2))
			fprintf(stderr,
			    "vmux record: %s: the session's recordings reached "
			    "%lld files; no new shell is recorded\n",
			    name, rec_files);
		rec_said_full |= 2;
		return 1;
	}
	return 0;
}

/*
 * Count what dir already holds (earlier boots' recordings) into rec_files
 * and rec_total.
 */
static void
rec_count_existing(const char *dir)
{
	struct dirent *e;
	struct stat st;
	DIR *d = opendir(dir);

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);

		if (len < 5 || strcmp(e->d_name + len - 5, ".cast") != 0 ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		rec_files++;
		rec_total += (long long)st.st_size;
	}
	closedir(d);
}

/* Start rec's next file with its header. 0, or -1 (errno). */
static int
rec_open(struct rec *r, const char *name)
{
	char *path;
	cJSON *h = cJSON_CreateObject(), *env;
	char *line;

	if (rec_full(name, 1)) {
		cJSON_Delete(h);
		errno = ENOSPC;
		return -1;
	}
	if (r->part == 0)
		xasprintf(&path, "%s.cast", r->base);
	else
		xasprintf(&path, "%s.%d.cast", r->base, r->part);
	r->f = fopen(path, "wx");
	free(path);
	if (r->f == NULL) {
		cJSON_Delete(h);
		return -1;
	}
	cJSON_AddNumberToObject(h, "version", 2);
	cJSON_AddNumberToObject(h, "width", r->cols);
	cJSON_AddNumberToObject(h, "height", r->rows);
	cJSON_AddNumberToObject(h, "timestamp", (double)time(NULL));
	env = cJSON_AddObjectToObject(h, "env");
	cJSON_AddStringToObject(env, "TERM", "xterm-256color");
	cJSON_AddStringToObject(env, "SHELL", "/bin/sh");
	{
		char *title;

		xasprintf(&title, "%s:%s", name, r->id);
		cJSON_AddStringToObject(h, "title", title);
		free(title);
	}
	line = cJSON_PrintUnformatted(h);
	cJSON_Delete(h);
	rec_files++;
	{
		int w = fprintf(r->f, "%s\n", line);

		rec_total += w > 0 ? w : 0; /* headers count too */
	}
	free(line);
	fflush(r->f);
	r->bytes = 0;
	r->t0 = mono_ms();
	return 0;
}

/* One event line: [seconds, code, text] (text NUL-free UTF-8). */
static void
rec_event(struct rec *r, const char *name, const char *code, const char *text)
{
	cJSON *ev = cJSON_CreateArray();
	char *line;

	if (r->f == NULL || rec_full(name, 0)) {
		cJSON_Delete(ev);
		return;
	}
	cJSON_AddItemToArray(
	    ev, cJSON_CreateNumber((double)(mono_ms() - r->t0) / 1000.0));
	cJSON_AddItemToArray(ev, cJSON_CreateString(code));
	cJSON_AddItemToArray(ev, cJSON_CreateString(text));
	line = cJSON_PrintUnformatted(ev);
	cJSON_Delete(ev);
	{
		int w = fprintf(r->f, "%s\n", line);

		r->bytes += w > 0 ? (size_t)w : 0;
		rec_total += w > 0 ? w : 0;
	}
	free(line);
	fflush(r->f);
	if (rec_full(name, 0)) /* a guest that floods: bounded */
		return;
	if (r->bytes > RECORD_PART_MAX) { /* bounded: the next part */
		fclose(r->f);
		r->f = NULL;
		r->part++;
		if (rec_open(r, name) != 0)
			r->f = NULL; /* the disk said no: stop writing */
	}
}

/* Length of the UTF-8 sequence led by b, 0 if b cannot lead one. */
static size_t
utf8_len(uint8_t b)
{
	return b < 0x80                       ? 1
	    : (b & 0xe0) == 0xc0 && b >= 0xc2 ? 2
	    : (b & 0xf0) == 0xe0              ? 3
	    : (b & 0xf8) == 0xf0 && b <= 0xf4 ? 4
	                                      : 0;
}

/*
 * Bytes as UTF-8 text for an "o" or "i" event: a sequence cut at the end is
 * kept in carry for the next call, a NUL or a byte that is not UTF-8
 * becomes U+FFFD. Returns a string the caller frees.
 */
static char *
rec_text(uint8_t carry[4], size_t *ncarry, const uint8_t *p, size_t n)
{
	uint8_t *all = xmalloc(*ncarry + n);
	char *out = xmalloc(3 * (*ncarry + n) + 1), *o = out;
	size_t len = *ncarry + n, i = 0;

	memcpy(all, carry, *ncarry);
	memcpy(all + *ncarry, p, n);
	*ncarry = 0;
	while (i < len) {
		size_t k = utf8_len(all[i]), j;
		int ok = k > 0 && all[i] != 0;

		if (ok && i + k > len) { /* cut: wait for the rest */
			for (j = i + 1; j < len && (all[j] & 0xc0) == 0x80; j++)
				;
			if (j == len) {
				memcpy(carry, all + i, len - i);
				*ncarry = len - i;
				break;
			}
			ok = 0;
		}
		for (j = 1; ok && j < k; j++)
			if ((all[i + j] & 0xc0) != 0x80)
				ok = 0;
		/* no overlong forms, surrogates, or past U+10FFFF */
		if (ok && k > 2 &&
		    ((all[i] == 0xe0 && all[i + 1] < 0xa0) ||
		        (all[i] == 0xed && all[i + 1] > 0x9f) ||
		        (all[i] == 0xf0 && all[i + 1] < 0x90) ||
		        (all[i] == 0xf4 && all[i + 1] > 0x8f)))
			ok = 0;
		if (!ok) {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(o, all + i, k);
		o += k;
		i += k;
	}
	*o = '\0';
	free(all);
	return out;
}

/* Stop recording r (its file is complete). */
static void
rec_close(struct rec *r)
{
	if (r->f != NULL)
		fclose(r->f);
	attach_client_free(&r->ac);
	free(r->id);
	free(r->base);
	memset(r, 0, sizeof *r);
}

/* Write the whole frames r has received; -1 once the shell ended. */
static int
rec_frames(struct rec *r, const char *name)
{
	struct attach_frame f;
	int more;

	while ((more = attach_client_next(&r->ac, &f)) == 1) {
		const uint8_t *bytes;
		uint64_t cursor, from, to;
		size_t len;
		int cols, rows;
		char *text, size[32], gap[96];

		if (attach_decode_data(&f, &cursor, &bytes, &len) == 0) {
			text = rec_text(r->carry, &r->ncarry, bytes, len);
			if (*text != '\0')
				rec_event(r, name, "o", text);
			free(text);
		} else if (f.type == VMUX_ATTACH_TYPED) {
			text =
			    rec_text(r->icarry, &r->nicarry, f.payload, f.len);
			if (*text != '\0')
				rec_event(r, name, "i", text);
			free(text);
		} else if (attach_decode_truncated(&f, &from, &to) == 0) {
			/* the agent's ring let go of output before it was
			 * read: a marker, so a replay says what is missing */
			snprintf(gap, sizeof gap,
			    "%llu bytes of output lost (the shell's scrollback "
			    "overtook the recorder)",
			    (unsigned long long)(to - from));
			rec_event(r, name, "m", gap);
		} else if (attach_decode_resize(&f, &cols, &rows) == 0) {
			r->cols = cols; /* the next part's header */
			r->rows = rows;
			snprintf(size, sizeof size, "%dx%d", cols, rows);
			rec_event(r, name, "r", size);
		} else if (f.type == VMUX_ATTACH_EXIT ||
		    f.type == VMUX_ATTACH_ERROR) {
			return -1;
		}
	}
	return more < 0 || r->ac.eof ? -1 : 0;
}

/* Read r's stream; 0, or -1 when the shell (or the stream) ended. */
static int
rec_read(struct rec *r, const char *name)
{
	ssize_t n = attach_client_read(&r->ac);

	if (n == -EAGAIN)
		return 0;
	if (n < 0)
		return -1;
	return rec_frames(r, name);
}

/* Is shell id recorded (or finished) already? */
static int
rec_known(char **done, size_t ndone, const char *id)
{
	for (size_t i = 0; i < ndone; i++)
		if (strcmp(done[i], id) == 0)
			return 1;
	return 0;
}

static int
cmd_record_exec(struct args *a)
{
	const char *name = a->argv[0];
	struct rec recs[RECORD_MAX];
	struct session_record r;
	struct vsock_target t;
	char **seen = NULL, *dir, *cause = NULL;
	size_t nrecs = 0, nseen = 0;
	uint64_t next_list = 0;
	int record_input = args_has(a, "input");

	memset(recs, 0, sizeof recs);
	if (session_name_valid(name, &cause) != 0) {
		int rc = cli_usage_error(a->entry, "%s", cause);

		free(cause);
		return rc;
	}
	if (cli_session_record(name, &r) != 0)
		return EXIT_VMUX;
	xasprintf(&dir, "%s/recordings", r.dir);
	if (args_get(a, "into") != NULL &&
	    strcmp(args_get(a, "into"), dir) != 0) {
		cli_error("--into %s: %s's recordings go to %s",
		    args_get(a, "into"), name, dir);
		free(dir);
		record_free(&r);
		return EXIT_VMUX;
	}
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		cli_error("%s: %s", dir, strerror(errno));
		free(dir);
		record_free(&r);
		return EXIT_VMUX;
	}
	rec_count_existing(dir);
	session_target(&r, &t);
	while (session_qemu_alive(&r)) {
		struct pollfd p[RECORD_MAX];
		uint64_t now = mono_ms();

		/* new shells to record, while there is room for them */
		if (now >= next_list && !rec_full(name, 1)) {
			cJSON *req = agent_req_list_shells(), *reply, *s;

			next_list = now + RECORD_LIST_MS;
			reply = agent_call(&t, req, now + 2000, now + 5000,
			    NULL, NULL, &cause);
			cJSON_Delete(req);
			free(
			    cause); /* booting, or gone: the loop's test says */
			cause = NULL;
			cJSON_ArrayForEach(s,
			    cJSON_GetObjectItemCaseSensitive(reply, "shells"))
			{
				const cJSON
				    *id = cJSON_GetObjectItemCaseSensitive(
				        s, "shell_id"),
				    *st = cJSON_GetObjectItemCaseSensitive(
				        s, "state");
				const cJSON
				    *c = cJSON_GetObjectItemCaseSensitive(
				        s, "cols"),
				    *rw = cJSON_GetObjectItemCaseSensitive(
				        s, "rows");
				struct rec *x = &recs[nrecs];
				cJSON *info = NULL;
				/* students see they are recorded */
				const struct attach_who recorder = {
				    "recorder", 1, record_input};

				/* an ended shell too: a short one may have come
				 * and gone between two looks; its output is
				 * kept */
				const cJSON *at =
				    cJSON_GetObjectItemCaseSensitive(
				        s, "started_at");
				char *key;

				if (!cJSON_IsString(id) ||
				    !cJSON_IsString(st) ||
				    strcmp(st->valuestring, "closing") == 0 ||
				    nrecs == RECORD_MAX)
					continue;
				/* an id an ended shell had may be a new shell's
				 * now (vmux shell --id respawns): both count */
				xasprintf(&key, "%s@%.3f", id->valuestring,
				    cJSON_IsNumber(at) ? at->valuedouble : 0.0);
				if (rec_known(seen, nseen, key) ||
				    shell_id_valid(id->valuestring, &cause) !=
				        0) { /* seen, or no name for a path */
					free(cause);
					cause = NULL;
					free(key);
					continue;
				}
				if (attach_shell_open(&t, id->valuestring, -1,
				        &recorder, mono_ms() + 5000, &x->ac,
				        &info, &cause) != 0) {
					free(cause); /* tried again next look */
					cause = NULL;
					free(key);
					continue;
				}
				cJSON_Delete(info);
				set_nonblock(x->ac.fd, 1);
				x->id = xstrdup(id->valuestring);
				x->cols = cJSON_IsNumber(c) ? c->valueint : 80;
				x->rows =
				    cJSON_IsNumber(rw) ? rw->valueint : 24;
				for (int k = 1; k < 100;
				     k++) { /* a free name */
					free(x->base);
					if (k == 1)
						xasprintf(&x->base,
						    "%s/%s-%lld", dir, x->id,
						    (long long)time(NULL));
					else
						xasprintf(&x->base,
						    "%s/%s-%lld_%d", dir, x->id,
						    (long long)time(NULL), k);
					if (rec_open(x, name) == 0 ||
					    errno != EEXIST)
						break;
				}
				if (x->f == NULL) {
					if (errno != ENOSPC ||
					    !rec_full(name, 1))
						cli_error("%s.cast: %s",
						    x->base, strerror(errno));
					rec_close(x);
					free(key);
					continue;
				}
				seen = xreallocarray(
				    seen, nseen + 1, sizeof *seen);
				seen[nseen++] = key;
				/* what came with the agent's answer */
				if (rec_frames(x, name) != 0) {
					rec_close(x);
					continue;
				}
				nrecs++;
			}
			cJSON_Delete(reply);
		}
		for (size_t i = 0; i < nrecs; i++)
			p[i] = (struct pollfd){recs[i].ac.fd, POLLIN, 0};
		if (poll(p, nrecs, RECORD_LIST_MS) < 0 && errno != EINTR)
			break;
		for (size_t i = nrecs; i-- > 0;) {
			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (rec_read(&recs[i], name) != 0) {
				rec_close(&recs[i]);
				recs[i] = recs[--nrecs];
				memset(&recs[nrecs], 0, sizeof recs[nrecs]);
			}
		}
	}
	for (size_t i = 0; i < nrecs; i++)
		rec_close(&recs[i]);
	for (size_t i = 0; i < nseen; i++)
		free(seen[i]);
	free(seen);
	free(dir);
	record_free(&r);
	return 0;
}

/* qsort order of file names. */
static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The recordings (*.cast) in dir, by name, sorted (caller frees each and
 * the array); a dir that does not exist has none. -1 (errno) if unreadable.
 */
int
recording_files(const char *dir, char ***out, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	*out = NULL;
	*n = 0;
	if (d == NULL)
		return errno == ENOENT ? 0 : -1;
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);

		if (l > 5 && strcmp(e->d_name + l - 5, ".cast") == 0) {
			*out = xreallocarray(*out, *n + 1, sizeof **out);
			(*out)[(*n)++] = xstrdup(e->d_name);
		}
	}
	closedir(d);
	qsort(*out, *n, sizeof **out, name_cmp);
	return 0;
}

static int
cmd_recordings_exec(struct args *a)
{
	struct session_record r;
	cJSON *list = cJSON_CreateArray();
	char **files, *dir;
	size_t n;

	if (cli_session_record(a->argv[0], &r) != 0) {
		cJSON_Delete(list);
		return EXIT_VMUX;
	}
	xasprintf(&dir, "%s/recordings", r.dir);
	if (recording_files(dir, &files, &n) != 0) {
		cli_error("%s: %s", dir, strerror(errno));
		free(dir);
		record_free(&r);
		cJSON_Delete(list);
		return EXIT_VMUX;
	}
	if (!args_has(a, "json") && n > 0)
		printf("%-8s %-20s %10s  %s\n", "SHELL", "STARTED", "BYTES",
		    "FILE");
	for (size_t i = 0; i < n; i++) {
		char *path, *shell = xstrdup(files[i]), *dash, *when;
		struct stat st;
		long long started = 0;
		cJSON *o = cJSON_CreateObject();

		xasprintf(&path, "%s/%s", dir, files[i]);
		if ((dash = strrchr(shell, '-')) != NULL) {
			started = atoll(dash + 1);
			*dash = '\0';
		}
		when = time_rfc3339((double)started);
		if (stat(path, &st) != 0)
			st.st_size = 0;
		cJSON_AddStringToObject(o, "file", path);
		cJSON_AddStringToObject(o, "shell", shell);
		cJSON_AddStringToObject(o, "started", when ? when : "");
		cJSON_AddNumberToObject(o, "bytes", (double)st.st_size);
		cJSON_AddItemToArray(list, o);
		if (!args_has(a, "json"))
			printf("%-8s %-20s %10lld  %s\n", shell,
			    when ? when : "-", (long long)st.st_size, path);
		free(when);
		free(shell);
		free(path);
		free(files[i]);
	}
	if (args_has(a, "json")) {
		char *s = cJSON_PrintUnformatted(list);

		printf("%s\n", s);
		free(s);
	}
	cJSON_Delete(list);
	free(files);
	free(dir);
	record_free(&r);
	return 0;
}

static int
cmd_replay_exec(struct args *a)
{
	const char *sp = args_get(a, "speed");
	char *end = NULL;
	double speed = sp != NULL ? strtod(sp, &end) : 1.0, last = 0;
	FILE *f = fopen(a->argv[0], "r");
	char *line = NULL;
	size_t cap = 0;
	long lineno = 0;
	int rc = 0, cut;

	if (sp != NULL &&
	    (end == sp || *end != '\0' || !(speed >= 0) || speed > 1000 ||
	        (speed > 0 && speed < 0.001))) {
		if (f != NULL)
			fclose(f);
		return cli_usage_error(a->entry,
		    "--speed %s: want 0 (no waiting), or 0.001 to 1000", sp);
	}
	if (f == NULL) {
		cli_error("%s: %s", a->argv[0], strerror(errno));
		return EXIT_VMUX;
	}
	while (getline_max(&line, &cap, f, REPLAY_LINE_MAX, &cut) >= 0) {
		cJSON *ev, *v;
		double at;

		if (cut) { /* refused as read: nothing past the cap is held */
			cli_error("%s:%ld: a line over %d bytes", a->argv[0],
			    lineno + 1, REPLAY_LINE_MAX);
			rc = EXIT_VMUX;
			break;
		}
		ev = cJSON_Parse(line);

		if (++lineno == 1) { /* the header */
			v = cJSON_GetObjectItemCaseSensitive(ev, "version");
			if (!cJSON_IsNumber(v) || v->valueint != 2) {
				cli_error("%s: not an asciicast v2 recording",
				    a->argv[0]);
				rc = EXIT_VMUX;
				cJSON_Delete(ev);
				break;
			}
			cJSON_Delete(ev);
			continue;
		}
		if (!cJSON_IsArray(ev) || cJSON_GetArraySize(ev) < 3 ||
		    !cJSON_IsNumber(cJSON_GetArrayItem(ev, 0)) ||
		    !cJSON_IsString(cJSON_GetArrayItem(ev, 1)) ||
		    !cJSON_IsString(cJSON_GetArrayItem(ev, 2))) {
			cli_error("%s:%ld: not an event", a->argv[0], lineno);
			rc = EXIT_VMUX;
			cJSON_Delete(ev);
			break;
		}
		at = cJSON_GetArrayItem(ev, 0)->valuedouble;
		if (!(at >= 0 && at < 1e9)) { /* NaN, negative, absurd */
			cli_error(
			    "%s:%ld: a time of %g", a->argv[0], lineno, at);
			rc = EXIT_VMUX;
			cJSON_Delete(ev);
			break;
		}
		if (speed > 0 && at > last) {
			/* at most 60 s between two events, as a player would */
			double d =
			    (at - last) / speed > 60 ? 60 : (at - last) / speed;
			struct timespec ts = {
			    (time_t)d, (long)((d - (double)(time_t)d) * 1e9)};

			nanosleep(&ts, NULL);
		}
		last = at;
		if (strcmp(cJSON_GetArrayItem(ev, 1)->valuestring, "o") == 0) {
			const char *s = cJSON_GetArrayItem(ev, 2)->valuestring;

			write_all(STDOUT_FILENO, s, strlen(s));
		}
		cJSON_Delete(ev);
	}
	free(line);
	fclose(f);
	return rc;
}
