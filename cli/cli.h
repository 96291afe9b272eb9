/*
 * cli.h: the vmux command line (owned by the session/CLI helper).
 *
 * Modelled on tmux: each command is one file (cmd-*.c) exporting a
 * cmd_entry (name, usage, options, flags, exec function); cmd-table.c
 * holds the table, cmd.c the help texts, args.c parses a command's
 * arguments, vmux.c is main(). Commands return their exit status: 0 ok,
 * 1 failure, 2 usage error (exec passes the guest command's status on).
 */
#ifndef VMUX_CLI_H
#define VMUX_CLI_H

#include <stddef.h>

#define EXIT_USAGE 2

/* One option of a command. */
struct cmd_opt {
	const char *name; /* long name, without "--" */
	char short_name;  /* 0: none */
	const char *arg;  /* NULL: a flag; else the value's name in help */
	int repeat;       /* may be given more than once */
	const char *help;
};

/* After the first positional argument, the rest is a command to run. */
#define CMD_ARGV_AFTER_NAME 0x1

struct args;

/* One command: a row of the command table. */
struct cmd_entry {
	const char *name;
	const char *pre;  /* positionals shown before the options */
	const char *post; /* positionals shown after them */
	const char *summary;
	const struct cmd_opt *opts; /* terminated by a NULL name */
	int flags;
	int min_args, max_args; /* positional count; max -1: unlimited */
	int (*exec)(struct args *);
};

/* Values given for one option. */
struct args_value {
	int count;
	char **values; /* count entries (NULL for flags) */
};

/* A parsed command line. */
struct args {
	const struct cmd_entry *entry;
	struct args_value *vals; /* one per entry->opts row */
	int argc;                /* positional arguments */
	char **argv;
	int help; /* --help/-h was given */
};

/* args.c */
int args_parse(const struct cmd_entry *, int argc, char **argv, struct args *,
    char **cause);
void args_free(struct args *);
int args_has(const struct args *, const char *name);
const char *args_get(const struct args *, const char *name);
char **args_values(const struct args *, const char *name, int *n);
int args_number(const char *what, const char *s, long long min, long long max,
    long long *out, char **cause);
int args_env_valid(const char *kv, char **cause);

/* cmd-table.c */
extern const struct cmd_entry *cmd_table[];
const struct cmd_entry *cmd_find(const char *name);
void cmd_print_overview(int to_stderr);

/* cmd.c */
char *cmd_usage(const struct cmd_entry *);
void cmd_print_help(const struct cmd_entry *);
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int cli_usage_error(const struct cmd_entry *, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
char *cli_home(void);

/* The commands (cmd-*.c). */
extern const struct cmd_entry cmd_new_entry;
extern const struct cmd_entry cmd_exec_entry;
extern const struct cmd_entry cmd_ls_entry;
extern const struct cmd_entry cmd_rm_entry;
extern const struct cmd_entry cmd_connect_entry;
extern const struct cmd_entry cmd_ping_entry;
extern const struct cmd_entry cmd_help_entry;

/* cmd-exec.c, for tests: build the exec request from parsed args. */
struct cJSON;
int cmd_exec_request(
    const struct args *, int *timeout_s, struct cJSON **req, char **cause);

#endif
