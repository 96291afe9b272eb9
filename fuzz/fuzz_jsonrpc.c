/*
 * fuzz_jsonrpc.c: libFuzzer target for the MCP server's JSON-RPC layer
 * (mcp/jsonrpc.c) and the head-and-tail output keeper (common/headtail.c),
 * where an agent's messages and a guest's output enter `vmux mcp`.
 *
 * The input is one message line. A parsed message must be consistent (a
 * request has an id and a method, an invalid one a JSON-RPC error code and
 * a reason), and the answer built for it must be one line of JSON that
 * carries the id back. The same bytes, fed as output in uneven pieces to a
 * small headtail, must come out within its limit, starting with the input's
 * first bytes when nothing was left out.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "mcp/mcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* Check one message's parse and answer. */
static void
fuzz_message(const char *text, size_t size)
{
	struct jsonrpc_msg m;
	char *reply;
	cJSON *back;
	int rc = jsonrpc_parse(text, size, &m);

	if (rc == 0) {
		if (m.kind == JSONRPC_INVALID || m.root == NULL)
			abort();
		if (m.kind == JSONRPC_REQUEST &&
		    (m.id == NULL || m.method == NULL))
			abort();
		if (m.kind == JSONRPC_NOTIFICATION && m.id != NULL)
			abort();
		reply = jsonrpc_result(m.id, cJSON_CreateObject());
	} else {
		if (m.kind != JSONRPC_INVALID || m.message == NULL ||
		    m.error > -32600 + 100 || m.error < -32700)
			abort();
		reply = jsonrpc_error(m.id, m.error, m.message);
	}
	if (strchr(reply, '\n') != NULL)
		abort(); /* stdio frames messages by lines */
	back = cJSON_Parse(reply);
	if (back == NULL)
		abort();
	if (m.id != NULL &&
	    !cJSON_Compare(cJSON_GetObjectItem(back, "id"), m.id, 1))
		abort();
	cJSON_Delete(back);
	free(reply);
	jsonrpc_msg_free(&m);
}

/* Feed the bytes to a headtail in pieces and check what it keeps. */
static void
fuzz_headtail(const uint8_t *data, size_t size)
{
	struct headtail h;
	size_t limit = 64 + (size > 0 ? data[0] : 0), len, i, step;
	uint64_t gone;
	char *out;

	headtail_init(&h, limit);
	for (i = 0; i < size; i += step) {
		step = 1 + (data[i] % 37);
		headtail_add(&h, data + i, size - i < step ? size - i : step);
	}
	out = headtail_result(&h, &len, &gone);
	if (len > limit || h.total != size)
		abort();
	if (!headtail_cut(&h) &&
	    (len != size || gone != 0 ||
	        (size > 0 && memcmp(out, data, size) != 0)))
		abort();
	if (headtail_cut(&h) && (gone == 0 || gone > size))
		abort();
	free(out);
	headtail_free(&h);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > (1 << 20))
		return 0;
	fuzz_message((const char *)data, size);
	fuzz_headtail(data, size);
	return 0;
}
