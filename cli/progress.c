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
