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
#include <unistd.h>

#include "common/common.h"
#include "proto/proto.h"
#include "session/session.h"
#include "stats.h"

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
		double t0 = bench_now_ms();
		cJSON *reply =
		    agent_call(&target, req, dl, dl, NULL, NULL, &cause);
		ms[i] = bench_now_ms() - t0;
		if (reply == NULL) {
			fprintf(stderr, "exec-rtt: %s\n", cause);
			return 1;
		}
		cJSON_Delete(reply);
	}
	bench_report("exec true round trip", ms, n);

	for (int i = 0; i < n; i++) {
		double t0 = bench_now_ms();
		int fd = transport_connect(
		    &target, VMUX_AGENT_PORT, mono_ms() + 30000, &cause);
		ms[i] = bench_now_ms() - t0;
		if (fd < 0) {
			fprintf(stderr, "exec-rtt: %s\n", cause);
			return 1;
		}
		close(fd);
	}
	bench_report("CONNECT+OK alone", ms, n);
	cJSON_Delete(req);
	free(ms);
	record_free(&rec);
	free(home);
	return 0;
}
