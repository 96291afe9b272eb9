/*
 * signame.c: the signals a client may send to a shell, by name. Names are
 * what signal_shell answers with ("INT"); "SIGINT" and lower case are also
 * accepted. Anything else is refused rather than guessed.
 */
#include <signal.h>
#include <strings.h>

#include "agent.h"

static const struct {
	const char *name;
	int sig;
} signames[] = {
    {"HUP", SIGHUP},
    {"INT", SIGINT},
    {"QUIT", SIGQUIT},
    {"TERM", SIGTERM},
    {"KILL", SIGKILL},
    {"USR1", SIGUSR1},
    {"USR2", SIGUSR2},
    {"TSTP", SIGTSTP},
    {"CONT", SIGCONT},
    {"WINCH", SIGWINCH},
};

/* A signal number from a name, or -1 if it is not one of ours. */
int
signame_parse(const char *name)
{
	if (name == NULL)
		return -1;
	if (strncasecmp(name, "SIG", 3) == 0)
		name += 3;
	for (size_t i = 0; i < nitems(signames); i++) {
		if (strcasecmp(name, signames[i].name) == 0)
			return signames[i].sig;
	}
	return -1;
}

/* The short name of a signal ("INT"), or NULL for one we do not name. */
const char *
signame_name(int sig)
{
	static const struct {
		const char *name;
		int sig;
	} more[] = {
	    {"ABRT", SIGABRT},
	    {"ALRM", SIGALRM},
	    {"BUS", SIGBUS},
	    {"FPE", SIGFPE},
	    {"ILL", SIGILL},
	    {"PIPE", SIGPIPE},
	    {"SEGV", SIGSEGV},
	    {"SYS", SIGSYS},
	    {"TRAP", SIGTRAP},
	    {"XCPU", SIGXCPU},
	    {"XFSZ", SIGXFSZ},
	};

	for (size_t i = 0; i < nitems(signames); i++) {
		if (signames[i].sig == sig)
			return signames[i].name;
	}
	for (size_t i = 0; i < nitems(more); i++) {
		if (more[i].sig == sig)
			return more[i].name;
	}
	return NULL;
}
