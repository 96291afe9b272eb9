/*
 * exec-rtt.c: exec round-trip benchmark against a running session.
 *
 * Usage: exec-rtt NAME [ITERATIONS]. Sends {"command": ["true"]} to the
 * session's agent ITERATIONS times, one connection each as `vmux exec`
 * does, and prints the median, p90, p99 and min in milliseconds. A second
 * series measures the transport alone (CONNECT 5005 + OK, then close), so
 * the report shows how much of the round trip is the bridge handshake.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "proto.h"
#include "session.h"

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Print a series' quantiles, sorting it in place. */
static void
report(const char *what, double *ms, int n)
{
	qsort(ms, (size_t)n, sizeof *ms, cmp_double);
	printf(
	    "%-22s n=%d median=%.2f ms p90=%.2f ms p99=%.2f ms min=%.2f ms\n",
	    what, n, ms[n / 2], ms[(n * 9) / 10], ms[(n * 99) / 100], ms[0]);
}

/* Monotonic time in milliseconds with microsecond resolution. */
static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int
main(int argc, char **argv)
{
	struct session_record rec;
	struct vsock_target target;
	char *cause = NULL, *home;
	int n = argc > 2 ? atoi(argv[2]) : 200;

	if (argc < 2 || n < 1) {
		fprintf(stderr, "usage: exec-rtt NAME [ITERATIONS]\n");
		return 2;
	}
	if ((home = session_home(&cause)) == NULL ||
	    record_load(home, argv[1], &rec, &cause) != 0) {
		fprintf(stderr, "exec-rtt: %s\n", cause);
		return 1;
	}
	session_target(&rec, &target);

	double *ms = xcalloc((size_t)n, sizeof *ms);
	cJSON *req = cJSON_CreateObject();
	cJSON *argvj = cJSON_AddArrayToObject(req, "command");
	cJSON_AddItemToArray(argvj, cJSON_CreateString("true"));
	cJSON_AddNumberToObject(req, "timeout_seconds", 30);

	for (int i = 0; i < n; i++) {
		uint64_t dl = mono_ms() + 30000;
		double t0 = now_ms();
		cJSON *reply =
		    agent_call(&target, req, dl, dl, NULL, NULL, &cause);
		ms[i] = now_ms() - t0;
		if (reply == NULL) {
			fprintf(stderr, "exec-rtt: %s\n", cause);
			return 1;
		}
		cJSON_Delete(reply);
	}
	report("exec true round trip", ms, n);

	for (int i = 0; i < n; i++) {
		double t0 = now_ms();
		int fd = transport_connect(
		    &target, VMUX_AGENT_PORT, mono_ms() + 30000, &cause);
		ms[i] = now_ms() - t0;
		if (fd < 0) {
			fprintf(stderr, "exec-rtt: %s\n", cause);
			return 1;
		}
		close(fd);
	}
	report("CONNECT+OK alone", ms, n);
	cJSON_Delete(req);
	free(ms);
	record_free(&rec);
	free(home);
	return 0;
}
