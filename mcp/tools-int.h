/*
 * tools-int.h: what the MCP tools' files share (tools*.c): the command
 * builder, the argument readers, the result makers and each tool's
 * handler. Not for the rest of vmux: mcp.h is the MCP server's interface.
 */
#ifndef VMUX_MCP_TOOLS_INT_H
#define VMUX_MCP_TOOLS_INT_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "mcp.h"

#define EXEC_OUTPUT_DEFAULT (64 << 10)
#define EXEC_OUTPUT_MAX     (16 << 20)
#define FILE_READ_DEFAULT   (1 << 20)
#define FILE_MAX            ((16 << 20) - 1)
#define PROGRESS_TEXT_MAX   4096
#define LIST_ENTRIES_MAX    10000
#define MCP_ARG_MAX         65536 /* a command or a write: argv's room */

/* An argv being built. */
struct argv_b {
	char **v;
	size_t n;
};

/* tools-args.c: the command, the arguments, the results */
void av_add(struct argv_b *a, const char *w);
void __attribute__((format(printf, 2, 3)))
av_addf(struct argv_b *a, const char *fmt, ...);
void av_free(struct argv_b *a);
int tool_run(struct mcp_call *c, struct argv_b *a, const void *in,
    size_t in_len, void (*finish)(struct mcp_call *), char **cause);
int arg_str(const cJSON *args, const char *key, int required, const char **out,
    char **cause);
int arg_int(const cJSON *args, const char *key, long long min, long long max,
    long long def, long long *out, char **cause);
int arg_options(const cJSON *args, long long *opt, char **cause);
void av_options(struct argv_b *a, const long long *opt);
void schema_options(cJSON *props);
int arg_bool(
    const cJSON *args, const char *key, int def, int *out, char **cause);
int arg_session(
    struct mcp_call *c, const cJSON *args, const char **name, char **cause);
int arg_shell(const cJSON *args, const char **id, char **cause);
int arg_pairs(const cJSON *args, const char *key, const char *flag,
    struct argv_b *a, char **cause);
char *job_err_line(struct mcp_call *c);
cJSON *call_json(struct mcp_call *c, char **cause);
void finish_wrapped(struct mcp_call *c, const char *key);
void finish_object(struct mcp_call *c);
void finish_sessions(struct mcp_call *c);
void finish_shells(struct mcp_call *c);

/* the tools, by group: tools-session.c (and logs, check), tools-exec.c,
 * tools-shell.c, tools-file.c */
int t_session_create(struct mcp_call *c, const cJSON *args, char **cause);
int t_session_list(struct mcp_call *c, const cJSON *args, char **cause);
int t_session_status(struct mcp_call *c, const cJSON *args, char **cause);
int t_session_stop(struct mcp_call *c, const cJSON *args, char **cause);
int t_session_start(struct mcp_call *c, const cJSON *args, char **cause);
int t_session_remove(struct mcp_call *c, const cJSON *args, char **cause);
int t_session_pause(struct mcp_call *c, const cJSON *args, char **cause);
int t_session_resume(struct mcp_call *c, const cJSON *args, char **cause);
int t_session_fork(struct mcp_call *c, const cJSON *args, char **cause);
int t_exec(struct mcp_call *c, const cJSON *args, char **cause);
int t_shell_open(struct mcp_call *c, const cJSON *args, char **cause);
int t_shell_write(struct mcp_call *c, const cJSON *args, char **cause);
int t_shell_read(struct mcp_call *c, const cJSON *args, char **cause);
int t_shell_signal(struct mcp_call *c, const cJSON *args, char **cause);
int t_shell_resize(struct mcp_call *c, const cJSON *args, char **cause);
int t_shell_close(struct mcp_call *c, const cJSON *args, char **cause);
int t_shell_list(struct mcp_call *c, const cJSON *args, char **cause);
int t_file_read(struct mcp_call *c, const cJSON *args, char **cause);
int t_file_write(struct mcp_call *c, const cJSON *args, char **cause);
int t_file_list(struct mcp_call *c, const cJSON *args, char **cause);
int t_copy_in(struct mcp_call *c, const cJSON *args, char **cause);
int t_copy_out(struct mcp_call *c, const cJSON *args, char **cause);
int t_logs(struct mcp_call *c, const cJSON *args, char **cause);
int t_check(struct mcp_call *c, const cJSON *args, char **cause);

#endif
