/*
 * log.c: debug logging and fatal errors.
 *
 * Debug lines go to the file named by $VMUX_LOG (append) when it is set, and
 * nowhere otherwise, so the CLI's stderr stays clean for user errors.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

static FILE *log_file;
static const char *log_name = "vmux";

/* Start logging as program `name`; opens $VMUX_LOG if set. */
void
log_open(const char *name)
{
	const char *path = getenv("VMUX_LOG");

	log_name = name;
	if (path != NULL && *path != '\0' && log_file == NULL) {
		log_file = fopen(path, "ae");
		if (log_file != NULL)
			setvbuf(log_file, NULL, _IOLBF, 0);
	}
}

/* One line in the log file: time, program[pid], prefix and message. */
static void
log_vwrite(const char *prefix, const char *fmt, va_list ap)
{
	if (log_file == NULL)
		return;
	fprintf(log_file, "%.3f %s[%ld]: %s", wall_time(), log_name,
	    (long)getpid(), prefix);
	vfprintf(log_file, fmt, ap);
	fputc('\n', log_file);
}

/* Write one debug line (only when logging is on). */
void
log_debug(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite("", fmt, ap);
	va_end(ap);
}

/* Print a message with strerror(errno) and abort. */
void
fatal(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	fprintf(stderr, "%s: fatal: ", log_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", strerror(saved));
	abort();
}

/* Print a message and abort. */
void
fatalx(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: fatal: ", log_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}
