/* test_mcp_jsonrpc.c: unit tests for the MCP server's JSON-RPC layer. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/common.h"
#include "mcp/mcp.h"
#include "unit.h"

/* Parse s; the kind (and on error the code in *code). */
static int
kind_of(const char *s, int *code)
{
	struct jsonrpc_msg m;
	int k;

	jsonrpc_parse(s, strlen(s), &m);
	k = (int)m.kind;
	*code = m.error;
	jsonrpc_msg_free(&m);
	return k;
}

TEST(jsonrpc_sorts_requests_notifications_and_responses)
{
	int code;

	CHECK_INT(kind_of("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
	              &code),
	    JSONRPC_REQUEST);
	CHECK_INT(kind_of("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"x\","
	                  "\"params\":{}}",
	              &code),
	    JSONRPC_REQUEST);
	CHECK_INT(kind_of("{\"jsonrpc\":\"2.0\",\"method\":"
	                  "\"notifications/initialized\"}",
	              &code),
	    JSONRPC_NOTIFICATION);
	CHECK_INT(
	    kind_of("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}", &code),
	    JSONRPC_RESPONSE);
	CHECK_INT(
	    kind_of(
	        " {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\"}\r\n", &code),
	    JSONRPC_REQUEST);
}

TEST(jsonrpc_answers_bad_messages_with_the_right_code)
{
	static const struct {
		const char *text;
		int code;
	} cases[] = {
	    {"", JSONRPC_PARSE_ERROR},
	    {"{", JSONRPC_PARSE_ERROR},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\"} x",
	        JSONRPC_PARSE_ERROR},
	    {"nul\x01l", JSONRPC_PARSE_ERROR},
	    {"[]", JSONRPC_INVALID_REQUEST},
	    {"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\"}]",
	        JSONRPC_INVALID_REQUEST},
	    {"42", JSONRPC_INVALID_REQUEST},
	    {"{\"id\":1,\"method\":\"p\"}", JSONRPC_INVALID_REQUEST},
	    {"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"p\"}",
	        JSONRPC_INVALID_REQUEST},
	    {"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"p\"}",
	        JSONRPC_INVALID_REQUEST},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1e400,\"method\":\"p\"}",
	        JSONRPC_INVALID_REQUEST},
	    {"{\"jsonrpc\":\"2.0\",\"id\":0.5,\"method\":\"p\"}",
	        JSONRPC_INVALID_REQUEST},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}",
	        JSONRPC_INVALID_REQUEST},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\"}",
	        JSONRPC_INVALID_REQUEST},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1}", JSONRPC_INVALID_REQUEST},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\",\"params\":3}",
	        JSONRPC_INVALID_PARAMS},
	};
	int code;

	for (size_t i = 0; i < nitems(cases); i++) {
		CHECK_INT(kind_of(cases[i].text, &code), JSONRPC_INVALID);
		CHECK_INT(code, cases[i].code);
	}
}

TEST(jsonrpc_error_keeps_the_id_when_it_could_be_read)
{
	struct jsonrpc_msg m;
	char *s;
	const char *t = "{\"jsonrpc\":\"1.0\",\"id\":\"abc\",\"method\":\"p\"}";

	CHECK_INT(jsonrpc_parse(t, strlen(t), &m), -1);
	CHECK(m.id != NULL && cJSON_IsString(m.id));
	s = jsonrpc_error(m.id, m.error, m.message);
	CHECK(strstr(s, "\"id\":\"abc\"") != NULL);
	CHECK(strstr(s, "-32600") != NULL);
	free(s);
	jsonrpc_msg_free(&m);
	s = jsonrpc_error(NULL, JSONRPC_PARSE_ERROR, "parse error");
	CHECK(strstr(s, "\"id\":null") != NULL);
	free(s);
}

TEST(jsonrpc_oversized_message_is_refused_before_parsing)
{
	struct jsonrpc_msg m;

	/* the length is checked first: the text is never read */
	CHECK_INT(jsonrpc_parse("{}", (size_t)MCP_MESSAGE_MAX + 1, &m), -1);
	CHECK_INT(m.error, JSONRPC_INVALID_REQUEST);
	CHECK(m.root == NULL);
	jsonrpc_msg_free(&m);
}

TEST(jsonrpc_replies_are_one_line_objects)
{
	char *s = jsonrpc_result(NULL, cJSON_CreateObject());
	cJSON *o = cJSON_Parse(s);

	CHECK(o != NULL);
	CHECK(strchr(s, '\n') == NULL);
	CHECK(cJSON_IsObject(cJSON_GetObjectItem(o, "result")));
	cJSON_Delete(o);
	free(s);
	s = jsonrpc_notification("notifications/progress", NULL);
	CHECK(strcmp(s,
	          "{\"jsonrpc\":\"2.0\",\"method\":"
	          "\"notifications/progress\"}") == 0);
	free(s);
}
