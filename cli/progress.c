/*
 * progress.c: transfer progress for `vmux cp`: bytes, percentage when the total
 * is known, and rate, redrawn in place on stderr at most ten times a second,
 * and only when stderr is a terminal; otherwise nothing is printed.
 * `cp --progress-lines` asks for machine-readable lines instead,
 * "vmux-progress BYTES TOTAL", whatever stderr is (the TUI reads them).
 */
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/common.h"
#include "cli.h"

#define PROGRESS_EVERY_MS 100

static int progress_lines; /* print vmux-progress lines */

/* Report progress as "vmux-progress BYTES TOTAL" lines from now on. */
void
progress_set_lines(int on)
{
	progress_lines = on;
}

/* "12.3 MiB" (caller frees). */
char *
progress_human(uint64_t bytes)
{
	static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	size_t u = 0;
	char *s;

	while (v >= 1024 && u + 1 < nitems(units)) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		xasprintf(&s, "%llu B", (unsigned long long)bytes);
	else
		xasprintf(&s, "%.1f %s", v, units[u]);
	return s;
}

/* Start counting; shown only if stderr is a terminal. */
void
progress_init(struct progress *p, const char *what, uint64_t total)
{
	p->on = progress_lines ? 2 : isatty(STDERR_FILENO);
	p->what = what;
	p->bytes = 0;
	p->total = total;
	p->start = mono_ms();
	p->last = 0;
}

/* Draw the line (final: with the average rate and a newline). */
static void
progress_draw(struct progress *p, int final)
{
	uint64_t ms = mono_ms() - p->start;
	char *done = progress_human(p->bytes);
	char *rate = progress_human(
	    ms > 0 ? (uint64_t)((double)p->bytes * 1000 / (double)ms) : 0);
	char pct[16] = "";

	if (p->on == 2) {
		fprintf(stderr, "vmux-progress %llu %llu\n",
		    (unsigned long long)p->bytes, (unsigned long long)p->total);
		fflush(stderr);
		free(done);
		free(rate);
		return;
	}

	if (p->total > 0) /* a download's total is the file, not the tar */
		snprintf(pct, sizeof pct, " %3.0f%%",
		    p->bytes >= p->total
		        ? 100.0
		        : 100.0 * (double)p->bytes / (double)p->total);
	fprintf(stderr, "\r\033[K%s  %s%s  %s/s%s", p->what, done, pct, rate,
	    final ? "\n" : "");
	fflush(stderr);
	free(done);
	free(rate);
}

/* Count n more bytes; redraw when it is time. */
void
progress_add(struct progress *p, uint64_t n)
{
	uint64_t now;

	p->bytes += n;
	if (!p->on)
		return;
	now = mono_ms();
	if (now - p->last >= PROGRESS_EVERY_MS) {
		p->last = now;
		progress_draw(p, 0);
	}
}

/* The end: a final line after success, the line cleared after failure. */
void
progress_done(struct progress *p, int ok)
{
	if (!p->on)
		return;
	if (ok || p->on == 2)
		progress_draw(p, 1);
	else {
		fprintf(stderr, "\r\033[K");
		fflush(stderr);
	}
}

#define PULL_LINE_MS 2000 /* bytes lines when stderr is no terminal */

/*
 * An image pull's progress (vmux images pull, new and run --image): on a
 * terminal one line redrawn (layers and bytes so far); else a line a layer
 * and one of bytes every PULL_LINE_MS on stderr (the TUI shows the last
 * on its status line); JSON lines with --json.
 */
void
cli_pull_progress(void *arg, const char *event, const char *digest,
    int64_t done, int64_t total)
{
	static int drawn;
	static uint64_t said;

	(void)arg;
	if (cli_json()) {
		if (strcmp(event, "bytes") == 0)
			printf("{\"event\":\"bytes\",\"bytes\":%lld,"
			       "\"layers\":%lld}\n",
			    (long long)done, (long long)total);
		else
			printf("{\"event\":\"%s\"%s%s%s}\n", event,
			    digest ? ",\"digest\":\"" : "",
			    digest ? digest : "", digest ? "\"" : "");
		fflush(stdout);
		return;
	}
	if (!isatty(STDERR_FILENO)) {
		if (strcmp(event, "blob") == 0 || strcmp(event, "config") == 0)
			fprintf(stderr, "vmux: %s %.19s\n",
			    event[0] == 'b' ? "layer " : "config", digest);
		else if (strcmp(event, "bytes") == 0 && done > 0 &&
		    mono_ms() - said >= PULL_LINE_MS) {
			said = mono_ms();
			fprintf(stderr,
			    "vmux: pulled %.1f MiB of %lld layer%s\n",
			    (double)done / 1048576, (long long)total,
			    total == 1 ? "" : "s");
		}
		return;
	}
	if (strcmp(event, "bytes") == 0) {
		fprintf(stderr, "\r\033[Kvmux: %lld layer%s, %.1f MiB",
		    (long long)total, total == 1 ? "" : "s",
		    (double)done / 1048576);
		drawn = 1;
	} else if ((strcmp(event, "done") == 0 ||
	               strcmp(event, "failed") == 0) &&
	    drawn) {
		fputc('\n', stderr);
		drawn = 0;
	}
}
