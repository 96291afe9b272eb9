/*
 * init.h: what vmux-init's files share (guest/init.c is PID 1,
 * guest/console_shell.c its console shell keeper).
 */
#ifndef VMUX_GUEST_INIT_H
#define VMUX_GUEST_INIT_H

#include <stddef.h>
#include <sys/types.h>

/* init.c */
void say(const char *, ...) __attribute__((format(printf, 1, 2)));
void describe_exit(int, char *, size_t);

/* console_shell.c */
pid_t console_shell_start(void);

#endif
