/*
 * connect.c: the hybrid-vsock handshake line, "CONNECT <port>\n".
 *
 * Stateless over everything received so far, so the caller can feed it a
 * growing prefix (the event loop peeks at the socket and consumes only the
 * line, leaving what follows for the guest). Garbage is rejected as soon as
 * a byte cannot start a valid line; a line may end in "\r\n"; at most
 * CONNECT_MAX_LINE bytes including the newline.
 */
#include <string.h>

#include <sys/types.h>

#include "common/common.h"
#include "bridge.h"

static const char prefix[] = "CONNECT ";

/*
 * Parse buf[0..len). CONNECT_DONE with *port and *linelen (bytes up to and
 * including '\n'), CONNECT_MORE if it may still become valid, CONNECT_BAD.
 */
int
connect_parse(const char *buf, size_t len, uint32_t *port, size_t *linelen)
{
	const size_t plen = sizeof prefix - 1;
	uint64_t v = 0;
	size_t i, digits = 0;

	for (i = 0; i < len && i < plen; i++) {
		if (buf[i] != prefix[i])
			return CONNECT_BAD;
	}
	for (; i < len && i < CONNECT_MAX_LINE; i++) {
		char ch = buf[i];

		if (ch >= '0' && ch <= '9') {
			if (++digits > 10)
				return CONNECT_BAD;
			v = v * 10 + (uint64_t)(ch - '0');
			continue;
		}
		if (digits == 0)
			return CONNECT_BAD;
		if (ch == '\r') {
			if (i + 1 < len && buf[i + 1] != '\n')
				return CONNECT_BAD;
			continue;
		}
		if (ch != '\n')
			return CONNECT_BAD;
		if (v >= UINT32_MAX)
			return CONNECT_BAD; /* 4294967295 is "any port" */
		*port = (uint32_t)v;
		*linelen = i + 1;
		return CONNECT_DONE;
	}
	if (len >= CONNECT_MAX_LINE)
		return CONNECT_BAD;
	return CONNECT_MORE;
}
