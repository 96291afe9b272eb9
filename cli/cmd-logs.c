/*
 * cmd-logs.c: `vmux logs [-f] [-n N] NAME`: the guest's serial console.
 *
 * The console log keeps every boot of the session (QEMU appends), kernel
 * messages and vmux-init's lines included, so it is where a crash or a
 * failed boot explains itself. It is bounded (logcap.c): past 4 MiB the
 * older part moves to console.log.1, which is printed first. What the guest
 * wrote is shown through str_printable: escape sequences from a hostile guest
 * never reach the user's terminal. -f follows new output until the session
 * stops.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

#define LOGS_POLL_US  (100 * 1000)
#define LOGS_LINE_MAX 65536

static int cmd_logs_exec(struct args *);

static const struct cmd_opt cmd_logs_opts[] = {
    {"follow", 'f', NULL, 0,
        "keep printing new output until the session stops (Ctrl-C ends)"},
    {"lines", 'n', "N", 0, "only the last N lines"},
    SELECT_OPT,
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_logs_entry = {
    .name = "logs",
    .pre = "NAME",
    .summary = "Show the guest's serial console (kernel, vmux-init), every "
               "boot of the session; works for stopped and crashed "
               "sessions too. Control characters are shown escaped.",
    .flags = CMD_NAME_ONE | CMD_READONLY,
    .opts = cmd_logs_opts,
    .min_args = 1,
    .max_args = 1,
    .exec = cmd_logs_exec,
};

/* A line buffer: bytes not yet ended by a newline. */
struct logs_buf {
	char line[LOGS_LINE_MAX + 1];
	size_t len;
};

/* Print the buffered line, made safe, and empty the buffer. */
static void
logs_flush(struct logs_buf *b)
{
	char *safe;
	size_t i;

	while (b->len > 0 && b->line[b->len - 1] == '\r')
		b->len--;
	for (i = 0; i < b->len; i++) { /* keep the C string whole */
		if (b->line[i] == '\0')
			b->line[i] = ' ';
	}
	b->line[b->len] = '\0';
	safe = str_printable(b->line, 0);
	printf("%s\n", safe);
	free(safe);
	b->len = 0;
}

/* Feed len bytes: print each complete line. */
static void
logs_feed(struct logs_buf *b, const char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (p[i] == '\n' || b->len == LOGS_LINE_MAX) {
			logs_flush(b);
			if (p[i] == '\n')
				continue;
		}
		b->line[b->len++] = p[i];
	}
}

/*
 * Offset where the last n lines of fd begin (0 if it has fewer); *have
 * gets how many lines that is.
 */
static off_t
logs_tail_start(int fd, long long n, long long *have)
{
	char buf[8192];
	off_t end = lseek(fd, 0, SEEK_END), pos = end;
	long long seen = 0;

	*have = end > 0 ? 1 : 0; /* the first line has no newline before it */
	if (n == 0) {
		*have = 0;
		return end;
	}
	while (pos > 0) {
		size_t chunk =
		    pos > (off_t)sizeof buf ? sizeof buf : (size_t)pos;
		ssize_t got;
		pos -= (off_t)chunk;
		got = pread(fd, buf, chunk, pos);
		if (got <= 0)
			return 0;
		for (ssize_t i = got - 1; i >= 0; i--) {
			if (buf[i] != '\n' || pos + i == end - 1)
				continue;
			*have = ++seen;
			if (seen == n)
				return pos + i + 1;
		}
	}
	*have = end > 0 ? seen + 1 : 0;
	return 0;
}

/* Feed fd from its offset to its end; 0, or -1 on a read error. */
static int
logs_drain(struct logs_buf *b, int fd)
{
	char buf[65536];

	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -1 : 0;
		logs_feed(b, buf, (size_t)n);
	}
}

/*
 * Print the console (the part before the last rotation, console.log.1,
 * then console.log: together the last lines of every boot), then follow
 * it if asked.
 */
static int
cmd_logs_exec(struct args *a)
{
	const char *ns = args_get(a, "lines");
	struct session_record r;
	static struct logs_buf b;
	struct stat st;
	char *prev, *cause = NULL;
	long long lines = 0, have = 0, prev_have;
	int fd, pfd, follow = args_has(a, "follow"), rc, split;
	off_t at;
	char last;

	if ((ns != NULL &&
	        option_number("--lines", ns, 0, 1LL << 40, &lines, &cause) !=
	            0) ||
	    session_name_valid(a->argv[0], &cause) != 0) {
		rc = cli_usage_error(a->entry, "%s", cause);
		free(cause);
		return rc;
	}
	if (cli_session_record(a->argv[0], &r) != 0)
		return EXIT_VMUX;
	if (follow && cli_wake(&r) != 0) { /* a live view resumes it */
		record_free(&r);
		return EXIT_VMUX;
	}
	fd = open(r.console_log, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT && !follow) { /* never booted: no output */
			record_free(&r);
			return 0;
		}
		cli_error("%s: %s", r.console_log, strerror(errno));
		record_free(&r);
		return EXIT_VMUX;
	}
	prev = logcap_prev_path(r.console_log);
	pfd = open(prev, O_RDONLY | O_CLOEXEC);
	free(prev);
	at = ns != NULL ? logs_tail_start(fd, lines, &have) : 0;
	/* the earlier part ends inside a line the current part's first ends */
	split = pfd >= 0 &&
	    pread(pfd, &last, 1, lseek(pfd, 0, SEEK_END) - 1) == 1 &&
	    last != '\n';
	if (pfd >= 0 &&
	    (ns == NULL || have < lines || (at == 0 && have > 0 && split))) {
		/*
		 * The rest of the lines asked for come from the earlier part;
		 * one more when it ends inside a line, which the current
		 * part's first line completes (also when that first line is
		 * all the lines asked for: its start is there).
		 */
		long long want = lines - have + (have > 0 && split);
		off_t from;

		from = ns != NULL ? logs_tail_start(pfd, want, &prev_have) : 0;
		if (lseek(pfd, from, SEEK_SET) >= 0)
			logs_drain(&b, pfd);
	}
	if (pfd >= 0)
		close(pfd);
	if (lseek(fd, at, SEEK_SET) < 0)
		lseek(fd, 0, SEEK_SET);
	for (;;) {
		logs_drain(&b, fd);
		fflush(stdout);
		if (!follow || !session_qemu_alive(&r))
			break;
		usleep(LOGS_POLL_US);
		/* rotated (logcap.c): the log starts again from 0 */
		if (fstat(fd, &st) == 0 && st.st_size < lseek(fd, 0, SEEK_CUR))
			lseek(fd, 0, SEEK_SET);
	}
	if (b.len > 0)
		logs_flush(&b);
	close(fd);
	record_free(&r);
	return 0;
}
