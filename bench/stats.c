/*
 * stats.c: the clock and the report line of the C benchmark tools
 * (exec-rtt, shell-rtt).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "stats.h"

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Monotonic time in milliseconds with microsecond resolution. */
double
bench_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Print a series' quantiles, sorting it in place. */
void
bench_report(const char *what, double *ms, int n)
{
	const char *keep = getenv("BENCH_SAMPLES"); /* pooled by a caller */
	FILE *f = keep != NULL ? fopen(keep, "a") : NULL;

	for (int i = 0; f != NULL && i < n; i++)
		fprintf(f, "%.3f\n", ms[i]);
	if (f != NULL)
		fclose(f);
	qsort(ms, (size_t)n, sizeof *ms, cmp_double);
	printf(
	    "%-22s n=%d median=%.2f ms p90=%.2f ms p99=%.2f ms min=%.2f ms\n",
	    what, n, ms[n / 2], ms[(n * 9) / 10], ms[(n * 99) / 100], ms[0]);
}
