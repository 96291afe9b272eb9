/*
 * unit.c: runner for the tests registered with TEST().
 *
 * Usage: unit-NAME [SUBSTRING]  runs the tests whose name contains SUBSTRING.
 * Each test runs in a forked child with a 60 s alarm so a crash or a hang
 * fails that test alone.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"

static struct unit_test *head, **tail = &head;
int unit_failed;

/* Add a test at the end of the list (called from constructors). */
void
unit_register(struct unit_test *t)
{
	*tail = t;
	tail = &t->next;
}

/* Report a failed check from inside a test. */
void
unit_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "    %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	unit_failed = 1;
}

int
main(int argc, char **argv)
{
	const char *prog =
	    strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	int passed = 0, failed = 0;

	signal(SIGPIPE, SIG_IGN);
	for (struct unit_test *t = head; t != NULL; t = t->next) {
		if (argc > 1 && strstr(t->name, argv[1]) == NULL)
			continue;
		fflush(stdout);
		fflush(stderr);
		pid_t pid = fork();
		if (pid == 0) {
			alarm(60);
			t->fn();
			fflush(NULL);
			_exit(unit_failed ? 1 : 0);
		}
		int status = 0;
		waitpid(pid, &status, 0);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			passed++;
			printf("ok   %s\n", t->name);
		} else {
			failed++;
			if (WIFSIGNALED(status))
				printf("FAIL %s (signal %d)\n", t->name,
				    WTERMSIG(status));
			else
				printf("FAIL %s\n", t->name);
		}
	}
	printf("%s: %d passed, %d failed\n", prog, passed, failed);
	return failed ? 1 : 0;
}
