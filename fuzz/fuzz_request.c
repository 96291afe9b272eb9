/*
 * fuzz_request.c: libFuzzer target for the guest agent's request parser
 * (agent/request.c) and the host's reply parser (session/agent_client.c),
 * the two places untrusted JSON enters a vmux program.
 *
 * The input is one request line as a client could send it. A parsed request
 * must be internally consistent (argv NULL-terminated, a known action,
 * bounded sizes); a rejected one must come with a cause. The same bytes are
 * then read as an agent reply the way `vmux` would, which must either give a
 * JSON object or a cause. ASan/UBSan catch memory errors and leaks.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "agent/agent.h"
#include "proto/proto.h"
#include "session/session.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct agent_request *req;
	char *cause = NULL;
	cJSON *reply;

	if (size > VMUX_MAX_REQUEST)
		return 0;
	req = request_parse((const char *)data, size, &cause);
	if (req == NULL) {
		if (cause == NULL || *cause == '\0')
			abort(); /* every rejection names its problem */
		free(cause);
	} else {
		if (cause != NULL)
			abort();
		if (request_action_name(req->action) == NULL)
			abort();
		for (size_t i = 0; req->argv != NULL && req->argv[i] != NULL;
		     i++)
			if (strlen(req->argv[i]) > size)
				abort(); /* nothing longer than the input */
		request_free(req);
	}

	cause = NULL;
	reply = agent_parse_reply((const char *)data, size, &cause);
	if (reply == NULL) {
		if (cause == NULL)
			abort();
		free(cause);
	} else {
		if (!cJSON_IsObject(reply))
			abort();
		cJSON_Delete(reply);
	}
	return 0;
}
