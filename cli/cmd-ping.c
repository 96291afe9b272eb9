/*
 * cmd-ping.c: `vmux ping NAME`: ask the guest agent who it is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "session/session.h"
#include "cli.h"

#define PING_CONNECT_MS 10000
#define PING_REPLY_MS   15000

static int cmd_ping_exec(struct args *);

static const struct cmd_opt cmd_ping_opts[] = {
    {"json", 0, NULL, 0,
        "print the agent's reply as JSON (version, kernel, "
        "uptime_seconds, time, ...)"},
    SELECT_OPT,
    {NULL, 0, NULL, 0, NULL},
};

const struct cmd_entry cmd_ping_entry = {
    .name = "ping",
    .pre = "NAME",
    .summary = "Ask the guest agent of session NAME who it is. Prints the "
               "agent's version, the guest kernel, uptime, the guest's "
               "clock and more.",
    .flags = CMD_NAME_ONE | CMD_READONLY,
    .opts = cmd_ping_opts,
    .min_args = 1,
    .max_args = 1,
    .exec = cmd_ping_exec,
};

/* A string field of the reply, or NULL. */
static const char *
ping_str(const cJSON *reply, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(reply, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/*
 * Print "vmux-agent VERSION, OS KERNEL MACHINE, up N s" when the agent
 * says so, then any other scalar field as "key: value".
 */
static void
ping_print(const cJSON *reply)
{
	static const char *shown[] = {"version", "os", "kernel", "machine",
	    "uptime_seconds", "ok", "actions"};
	const char *version = ping_str(reply, "version");
	const char *os = ping_str(reply, "os");
	const char *kernel = ping_str(reply, "kernel");
	const char *machine = ping_str(reply, "machine");
	const cJSON *up =
	    cJSON_GetObjectItemCaseSensitive(reply, "uptime_seconds");
	const cJSON *f;
	size_t i;

	printf("vmux-agent %s, %s %s %s", version != NULL ? version : "?",
	    os != NULL ? os : "?", kernel != NULL ? kernel : "?",
	    machine != NULL ? machine : "");
	if (cJSON_IsNumber(up))
		printf(", up %.1f s", up->valuedouble);
	printf("\n");
	cJSON_ArrayForEach(f, reply)
	{
		for (i = 0; i < nitems(shown); i++) {
			if (strcmp(f->string, shown[i]) == 0)
				break;
		}
		if (i < nitems(shown) || cJSON_IsObject(f) || cJSON_IsArray(f))
			continue;
		if (cJSON_IsString(f))
			printf("%s: %s\n", f->string, f->valuestring);
		else {
			char *s = cJSON_PrintUnformatted(f);
			printf("%s: %s\n", f->string, s != NULL ? s : "?");
			cJSON_free(s);
		}
	}
}

/* The agent's clock ("time", seconds since the epoch) as RFC 3339. */
static void
ping_times(cJSON *reply)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(reply, "time");
	char *s;

	if (!cJSON_IsNumber(v))
		return;
	s = time_rfc3339(v->valuedouble);
	if (s != NULL)
		cJSON_ReplaceItemInObjectCaseSensitive(
		    reply, "time", cJSON_CreateString(s));
	else
		cJSON_ReplaceItemInObjectCaseSensitive(
		    reply, "time", cJSON_CreateNull());
	free(s);
}

/* Ping the agent. */
static int
cmd_ping_exec(struct args *a)
{
	struct session_record r;
	struct vsock_target t;
	cJSON *req, *reply;
	char *cause = NULL;
	uint64_t now;
	int rc;

	if ((rc = cli_running_session(a->argv[0], &r, &t)) != 0)
		return rc;
	req = agent_req_ping();
	now = mono_ms();
	reply = agent_call(&t, req, now + PING_CONNECT_MS, now + PING_REPLY_MS,
	    NULL, NULL, &cause);
	cJSON_Delete(req);
	record_free(&r);
	if (reply == NULL) {
		cli_error("%s", cause);
		free(cause);
		return EXIT_VMUX;
	}
	ping_times(reply);
	if (cli_json())
		cli_result(reply);
	else {
		cli_json_printable(reply);
		ping_print(reply);
		cJSON_Delete(reply);
	}
	return 0;
}
