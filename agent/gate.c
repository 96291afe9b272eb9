/*
 * gate.c: the early agent's gate (vmux-agent --gate FD).
 *
 * vmux-init starts the agent as soon as the vsock transport is loaded,
 * before the workspace is mounted and the limits are set, so that the
 * agent's own start-up overlaps the rest of the boot and the host's first
 * ping connects at once. What connects waits in the listen backlog: nothing
 * is served until vmux-init has finished and sent, on FD, the user's home,
 * cgroup and default working directory (one line each, empty for none; the
 * third may be missing) and closed it. The caller owns FD; it is closed
 * here.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

/* The gate's message: three paths and their newlines. */
#define GATE_MAX (3 * 4096 + 3)

/*
 * Block until the gate closes, then take the home, cgroup and working
 * directory it brought.
 * 0, or -1 when it closed without a whole message (vmux-init gone): the
 * agent then serves with what its command line gave.
 */
int
agent_gate_wait(int fd)
{
	static char msg[GATE_MAX + 1]; /* user_home_set keeps the pointer */
	size_t len = 0;
	ssize_t n;
	char *home = msg, *cgroup, *cwd, *end;

	while (len < GATE_MAX) {
		n = read(fd, msg + len, GATE_MAX - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	msg[len] = '\0';
	if ((end = strchr(home, '\n')) == NULL)
		return -1;
	*end = '\0';
	cgroup = end + 1;
	if ((end = strchr(cgroup, '\n')) == NULL)
		return -1;
	*end = '\0';
	cwd = end + 1;
	if ((end = strchr(cwd, '\n')) != NULL)
		*end = '\0';
	else
		cwd[0] = '\0'; /* no third line, or a cut one */
	if (cwd[0] == '/')
		user_cwd_set(cwd);
	if (home[0] == '/')
		user_home_set(home);
	if (cgroup[0] == '/')
		user_cgroup_set(cgroup);
	return 0;
}
