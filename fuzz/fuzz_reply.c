/*
 * fuzz_reply.c: libFuzzer target for what a hostile guest sends the host
 * past the request line: a list_shells reply as `vmux shells` and the TUI
 * read it (parse, each shell's command joined and escaped, the error code
 * kept), and an attach stream as the TUI and `vmux shell` read it (frames
 * split and each decoded).
 *
 * The first byte picks which; the rest is the guest's bytes. Every result
 * must stay within its bounds: a command line of at most AGENT_COMMAND_MAX
 * bytes plus "..." (escaped) and no control character but tab, an error
 * code of [a-z_] only,
 * frames whose lengths stay inside the input. ASan/UBSan catch memory
 * errors and leaks.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "proto/attach.h"
#include "proto/proto.h"
#include "session/session.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* A list_shells reply: parse, then every shell's command line. */
static void
reply(const uint8_t *data, size_t size)
{
	const cJSON *arr, *s;
	char *cause = NULL, *cmd;
	cJSON *o;

	o = agent_parse_reply((const char *)data, size, &cause);
	if (o == NULL) {
		const char *code = agent_error_code();
		if (cause == NULL ||
		    strspn(code, "abcdefghijklmnopqrstuvwxyz_") !=
		        strlen(code) ||
		    strlen(code) >= VMUX_E_CODE_MAX)
			abort();
		free(cause);
		return;
	}
	arr = cJSON_GetObjectItemCaseSensitive(o, "shells");
	cJSON_ArrayForEach(s, arr)
	{
		cmd = agent_shell_command(s, "-");
		if (strlen(cmd) > AGENT_COMMAND_MAX * 4 + 3)
			abort(); /* escaping at most quadruples a byte */
		for (const char *p = cmd; *p != '\0'; p++) {
			if (((unsigned char)*p < 0x20 && *p != '\t') ||
			    *p == 0x7f)
				abort();
		}
		free(cmd);
	}
	cJSON_Delete(o);
}

/* An attach stream: every whole frame, decoded as its type says. */
static void
frames(const uint8_t *data, size_t size)
{
	struct attach_client c;
	struct attach_frame f;
	struct attach_roster roster;
	const uint8_t *bytes;
	uint64_t cur, from, to;
	size_t len, seen = 0;
	int r, cols, rows, code, sig;

	attach_client_init(&c, -1, data, size);
	while ((r = attach_client_next(&c, &f)) == 1) {
		seen += VMUX_ATTACH_HDR + f.len;
		if (seen > size)
			abort();
		switch (f.type) {
		case VMUX_ATTACH_DATA:
			if (attach_decode_data(&f, &cur, &bytes, &len) == 0 &&
			    (bytes < f.payload ||
			        bytes + len > f.payload + f.len))
				abort();
			break;
		case VMUX_ATTACH_TRUNCATED:
			attach_decode_truncated(&f, &from, &to);
			break;
		case VMUX_ATTACH_RESIZE:
			if (attach_decode_resize(&f, &cols, &rows) == 0 &&
			    (cols < 0 || rows < 0 || cols > 65535 ||
			        rows > 65535))
				abort();
			break;
		case VMUX_ATTACH_EXIT:
			attach_decode_exit(&f, &code, &sig, &cur);
			break;
		case VMUX_ATTACH_CLIENTS: /* labels printed: all printable */
			if (attach_decode_clients(&f, &roster) == 0) {
				for (const char *s = roster.others; *s; s++)
					if ((unsigned char)*s < 0x20 ||
					    *s == 0x7f)
						abort();
				attach_roster_free(&roster);
			}
			break;
		default:
			break;
		}
	}
	attach_client_free(&c);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 4 * 1024 * 1024)
		return 0;
	if (data[0] & 1)
		frames(data + 1, size - 1);
	else
		reply(data + 1, size - 1);
	return 0;
}
