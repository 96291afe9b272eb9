/*
 * test_agent_client.h: run the agent's event loop in a child process on a
 * Unix socket and talk to it, for the agent's host-side tests. The server
 * dies with the test (PR_SET_PDEATHSIG), so a failed CHECK leaves nothing
 * running. Its shells and commands get a private, empty HOME (ta->home):
 * no test reads the invoking user's startup files.
 */
#ifndef VMUX_TEST_AGENT_CLIENT_H
#define VMUX_TEST_AGENT_CLIENT_H

#include <sys/types.h>

#include "agent/agent.h"

struct test_agent {
	pid_t pid;
	char dir[64];
	char path[128];
	char home[128]; /* the user's home for everything the agent starts */
	struct agent_opts opts;
};

int ta_start(struct test_agent *, int idle_timeout_ms);
int ta_start_gated(struct test_agent *, int idle_timeout_ms, int *gate);
int ta_stop(struct test_agent *);
int ta_connect(struct test_agent *);
char *ta_raw(struct test_agent *, const char *, size_t);
cJSON *ta_request(struct test_agent *, const char *);
cJSON *ta_requestf(struct test_agent *, const char *, ...)
    __attribute__((format(printf, 2, 3)));
const char *ta_str(const cJSON *, const char *);
double ta_num(const cJSON *, const char *);
int ta_wait_dead(pid_t, int);
cJSON *ta_line_request(struct test_agent *, const char *line, int *fd);
void ta_send_frame(int fd, uint8_t type, const void *, size_t);

#endif
