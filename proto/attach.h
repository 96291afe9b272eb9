/*
 * attach.h: the framing of an attached shell stream (host and guest share it).
 *
 * A client sends {"action": "attach_shell", "shell_id": ID, "cursor": N}\n
 * (without "cursor" the replay starts at the oldest byte kept). The agent
 * answers with one JSON line: the shell record plus "cursor" (the byte
 * offset the replay starts from) and "attached": true, or {"error": ...}
 * and a close. After a successful answer the connection
 * carries binary frames both ways:
 *
 *	u8 type | u32 length (little endian) | length bytes of payload
 *
 * Agent to client:
 *   DATA      u64 cursor (offset of the first byte) + raw output bytes. Output
 *             is replayed from the requested cursor, then sent live; bytes are
 *             the PTY's, untouched (no UTF-8 repair).
 *   TRUNCATED u64 from, u64 to: the ring evicted [from, to) before this client
 *             read it (a slow client or an old cursor); DATA resumes at `to`.
 *   RESIZE    u16 cols, u16 rows: the PTY size changed (any client's doing).
 *   EXIT      i32 exit_code (-1 unknown), i32 signal number (0 none), u64
 *             cursor (end of output): the shell ended or was closed; sent
 *             after all output up to the cursor, then the agent closes.
 *   ERROR     UTF-8 text: a bad frame or a refused action; the stream goes on
 *             unless the frame could not be parsed (then the agent closes).
 *   DETACH    empty: answer to the client's DETACH, then the agent closes.
 *   CLIENTS   JSON: who is attached, sent on attach and whenever that or the
 *             keyboard changes: {"clients": [{"as": LABEL, "watching":
 *             bool, "keyboard": bool, "you": bool}, ...], "keyboard": LABEL
 *             or null, "more": N (clients past the 32 listed)}.
 * Client to agent:
 *   INPUT     raw bytes to type into the PTY (Ctrl-C is just 0x03).
 *   RESIZE    u16 cols, u16 rows (1..4096): resize the PTY (SIGWINCH).
 *   SIGNAL    signal name ("INT", "SIGTERM", ...) for the foreground group.
 *   DETACH    empty: stop streaming; the shell keeps running. Closing the
 *             socket does the same.
 *   EOF       empty: no more input from this client (`vmux shell < file`).
 *             Once the input before it is written, the agent types the
 *             terminal's VEOF character (Ctrl-D), and again every 200 ms
 *             while the shell runs, as a closed pipe keeps reading as end
 *             of file; in canonical mode only while the foreground process
 *             waits in read(2). Output goes on streaming until EXIT.
 *   TYPED     raw bytes another client typed (INPUT the shell took), only
 *             to a client that asked ("input": true); dropped rather than
 *             queued past the client's control queue (a recorder's "i").
 *   TAKE      empty: this client alone types (and resizes, signals) until
 *             it sends RELEASE or goes; the others' keys are dropped. A
 *             teacher's takeover; every client is told by CLIENTS.
 *   RELEASE   empty: hand the keyboard back.
 * The attach request may say who the client is ("as": 1-64 of
 * [A-Za-z0-9._@-]) and that it only watches ("watch": true: its keys,
 * resizes and signals are dropped unless it takes the keyboard).
 * Unknown frame types are answered with ERROR and otherwise ignored, so
 * either side may add types later. A length over VMUX_ATTACH_MAX_PAYLOAD is a
 * broken stream.
 *
 * The agent writes output to each client from the shell's ring by cursor, so
 * a slow client lags behind (and gets TRUNCATED) instead of buffering without
 * bound, and reading client frames never waits on writing output.
 */
#ifndef VMUX_ATTACH_H
#define VMUX_ATTACH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define VMUX_ATTACH_HDR         5
#define VMUX_ATTACH_MAX_PAYLOAD (1024 * 1024)

enum vmux_attach_type {
	VMUX_ATTACH_DATA = 1,
	VMUX_ATTACH_INPUT = 2,
	VMUX_ATTACH_RESIZE = 3,
	VMUX_ATTACH_SIGNAL = 4,
	VMUX_ATTACH_EXIT = 5,
	VMUX_ATTACH_TRUNCATED = 6,
	VMUX_ATTACH_ERROR = 7,
	VMUX_ATTACH_DETACH = 8,
	VMUX_ATTACH_EOF = 9,
	VMUX_ATTACH_TAKE = 10,    /* client: take the keyboard */
	VMUX_ATTACH_RELEASE = 11, /* client: hand it back */
	VMUX_ATTACH_CLIENTS = 12, /* agent: who is attached (JSON) */
	VMUX_ATTACH_TYPED = 13,   /* agent: what another client typed */
	/* exec_stream (agent/PROTOCOL.md): the same framing, its own types */
	VMUX_EXEC_STDOUT = 16, /* agent: the command's stdout bytes */
	VMUX_EXEC_STDERR = 17, /* agent: the command's stderr bytes */
	VMUX_EXEC_EXIT = 18,   /* agent: i32 code, i32 signal, u8 timed out */
	VMUX_EXEC_STDIN = 19,  /* client: bytes for the command's stdin */
	VMUX_EXEC_STDIN_EOF = 20, /* client: close the command's stdin */
};
#define VMUX_EXEC_EXIT_LEN 9

#define VMUX_ATTACH_AS_MAX     64 /* bytes of an attach's "as" label */
#define VMUX_ATTACH_ROSTER_MAX 32 /* clients a CLIENTS frame lists */
#define VMUX_ATTACH_AS_CHARS                                                   \
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-@"

/* Is s a label an attach may carry ("as")? */
static inline int
vmux_attach_as_valid(const char *s)
{
	size_t n = 0;

	while (s[n] != '\0') {
		const char *c = VMUX_ATTACH_AS_CHARS;
		while (*c != '\0' && *c != s[n])
			c++;
		if (*c == '\0')
			return 0;
		n++;
	}
	return n >= 1 && n <= VMUX_ATTACH_AS_MAX;
}

/* Store v little endian at p. */
static inline void
vmux_put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

/* Store v little endian at p. */
static inline void
vmux_put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Store v little endian at p. */
static inline void
vmux_put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Load a little-endian u16. */
static inline uint16_t
vmux_get_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

/* Load a little-endian u32. */
static inline uint32_t
vmux_get_u32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* Load a little-endian u64. */
static inline uint64_t
vmux_get_u64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* Fill a frame header for a payload of len bytes. */
static inline void
vmux_attach_header(uint8_t hdr[VMUX_ATTACH_HDR], uint8_t type, uint32_t len)
{
	hdr[0] = type;
	vmux_put_u32(hdr + 1, len);
}

/*
 * Look at the start of buf for a whole frame. Returns the frame's total size
 * (header + payload) with *type and *len set, 0 if more bytes are needed, -1
 * if the declared length is over VMUX_ATTACH_MAX_PAYLOAD.
 */
static inline ssize_t
vmux_attach_parse(
    const uint8_t *buf, size_t avail, uint8_t *type, uint32_t *len)
{
	uint32_t n;

	if (avail < VMUX_ATTACH_HDR)
		return 0;
	n = vmux_get_u32(buf + 1);
	if (n > VMUX_ATTACH_MAX_PAYLOAD)
		return -1;
	if (avail - VMUX_ATTACH_HDR < n)
		return 0;
	*type = buf[0];
	*len = n;
	return (ssize_t)(VMUX_ATTACH_HDR + n);
}

#endif
