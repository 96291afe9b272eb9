/*
 * stats.h: what the C benchmark tools share: a millisecond clock and a
 * quantile report (bench/stats.c).
 */
#ifndef VMUX_BENCH_STATS_H
#define VMUX_BENCH_STATS_H

double bench_now_ms(void);
void bench_report(const char *what, double *ms, int n);

#endif
