/*
 * peer.c: who may talk to the agent.
 *
 * The agent runs as root and serves only the host. Over AF_VSOCK the host
 * is CID 2 (VMADDR_CID_HOST); any other peer is a process inside the guest
 * reaching the agent through vsock loopback (CID 1 or the guest's own CID)
 * or another VM, and is closed before its request is read. Other families
 * are the Unix socket of host-side tests, where the socket's own
 * permissions decide.
 */
#include <sys/socket.h>

#include <linux/vm_sockets.h>

#include "agent.h"

/* May the peer at sa (len bytes, from accept) be served? */
int
agent_peer_allowed(const struct sockaddr *sa, socklen_t len)
{
	const struct sockaddr_vm *vm = (const struct sockaddr_vm *)sa;

	if (len < (socklen_t)sizeof sa->sa_family)
		return 0;
	if (sa->sa_family != AF_VSOCK)
		return 1;
	if (len < (socklen_t)sizeof *vm)
		return 0;
	return vm->svm_cid == VMADDR_CID_HOST;
}
