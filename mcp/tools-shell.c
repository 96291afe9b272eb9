/*
 * tools-shell.c: the shell tools (shell_open, _write, _read, _signal,
 * _resize, _close, _list): persistent PTY shells a person can watch.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "mcp.h"
#include "tools-int.h"

/* ---- shells ---- */

int
t_shell_open(struct mcp_call *c, const cJSON *args, char **cause)
{
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(args, "command");
	const char *name, *id, *cwd;
	long long cols, rows;
	struct argv_b a = {0};

	if (arg_session(c, args, &name, cause) != 0 ||
	    arg_str(args, "shell_id", 0, &id, cause) != 0 ||
	    (id != NULL && shell_id_valid(id, cause) != 0) ||
	    arg_str(args, "cwd", 0, &cwd, cause) != 0 ||
	    arg_int(args, "cols", 1, 4096, 80, &cols, cause) != 0 ||
	    arg_int(args, "rows", 1, 4096, 24, &rows, cause) != 0)
		return -1;
	if (cmd != NULL && !cJSON_IsNull(cmd) && !cJSON_IsString(cmd)) {
		xasprintf(cause, "argument \"command\" must be a shell line");
		return -1;
	}
	av_add(&a, "vmux");
	av_add(&a, "open");
	av_add(&a, name);
	av_add(&a, "--json");
	av_addf(&a, "--size=%lldx%lld", cols, rows);
	if (id != NULL)
		av_addf(&a, "--id=%s", id);
	if (cwd != NULL)
		av_addf(&a, "--cwd=%s", cwd);
	if (arg_pairs(args, "env", "--env", &a, cause) != 0) {
		av_free(&a);
		return -1;
	}
	if (cJSON_IsString(cmd)) {
		av_add(&a, "--");
		av_add(&a, "/bin/sh");
		av_add(&a, "-c");
		av_add(&a, cmd->valuestring);
	}
	return tool_run(c, &a, NULL, 0, finish_object, cause);
}

int
t_shell_write(struct mcp_call *c, const cJSON *args, char **cause)
{
	const cJSON *keys = cJSON_GetObjectItemCaseSensitive(args, "keys"), *k;
	const char *name, *id, *text;
	char kb[KEY_BYTES_MAX], *input = NULL;
	size_t len = 0;
	int enter, n;
	struct argv_b a = {0};

	if (arg_session(c, args, &name, cause) != 0 ||
	    arg_shell(args, &id, cause) != 0 ||
	    arg_str(args, "text", 0, &text, cause) != 0 ||
	    arg_bool(args, "enter", 0, &enter, cause) != 0)
		return -1;
	if (keys != NULL && !cJSON_IsNull(keys) && !cJSON_IsArray(keys)) {
		xasprintf(cause,
		    "argument \"keys\" must be a list of key "
		    "names");
		return -1;
	}
	if (text != NULL) {
		len = strlen(text);
		input = xstrdup(text);
	}
	cJSON_ArrayForEach(k, keys)
	{
		if (!cJSON_IsString(k) ||
		    (n = key_bytes(k->valuestring, kb)) < 0) {
			char *safe = str_printable(
			    cJSON_IsString(k) ? k->valuestring : "?", 0);

			xasprintf(cause,
			    "unknown key '%.32s' (Enter, Tab, Escape, BSpace, "
			    "Up, Down, Left, Right, Home, End, PageUp, "
			    "PageDown, Delete, F1-F12, C-x, M-x)",
			    safe);
			free(safe);
			free(input);
			return -1;
		}
		input = xrealloc(input, len + (size_t)n + 1);
		memcpy(input + len, kb, (size_t)n);
		len += (size_t)n;
	}
	if (enter) {
		input = xrealloc(input, len + 2);
		input[len++] = '\r';
	}
	if (len == 0 || len > MCP_ARG_MAX) {
		free(input);
		if (len == 0)
			xasprintf(cause,
			    "nothing to write: give \"text\", "
			    "\"keys\" or \"enter\"");
		else
			xasprintf(cause,
			    "at most %d bytes a write; write the "
			    "rest in another call",
			    MCP_ARG_MAX);
		return -1;
	}
	input[len] = '\0';
	av_add(&a, "vmux");
	av_add(&a, "send-keys");
	av_add(&a, "--json");
	av_add(&a, "-l");
	av_add(&a, "--");
	av_add(&a, name);
	av_add(&a, id);
	av_add(&a, input);
	free(input);
	return tool_run(c, &a, NULL, 0, finish_object, cause);
}

int
t_shell_read(struct mcp_call *c, const cJSON *args, char **cause)
{
	const char *name, *id;
	long long cursor, idle, timeout, max;
	int plain;
	struct argv_b a = {0};

	if (arg_session(c, args, &name, cause) != 0 ||
	    arg_shell(args, &id, cause) != 0 ||
	    arg_int(args, "cursor", 0, 1LL << 53, -1, &cursor, cause) != 0 ||
	    arg_int(args, "wait_for_idle_ms", 0, 60000, 0, &idle, cause) != 0 ||
	    arg_int(args, "timeout_s", 1, 600, 10, &timeout, cause) != 0 ||
	    arg_int(args, "max_chars", 1, 1048576, 65536, &max, cause) != 0 ||
	    arg_bool(args, "plain", 0, &plain, cause) != 0)
		return -1;
	av_add(&a, "vmux");
	av_add(&a, "capture");
	av_add(&a, "--json");
	if (cursor >= 0)
		av_addf(&a, "--cursor=%lld", cursor);
	if (idle > 0)
		av_addf(&a, "--wait-idle=%lld", idle);
	av_addf(&a, "--timeout=%lld", timeout);
	av_addf(&a, "--max-chars=%lld", max);
	if (plain)
		av_add(&a, "--plain");
	av_add(&a, "--"); /* a shell id may start with '-' */
	av_add(&a, name);
	av_add(&a, id);
	return tool_run(c, &a, NULL, 0, finish_object, cause);
}

int
t_shell_signal(struct mcp_call *c, const cJSON *args, char **cause)
{
	const char *name, *id, *sig;
	struct argv_b a = {0};

	if (arg_session(c, args, &name, cause) != 0 ||
	    arg_shell(args, &id, cause) != 0 ||
	    arg_str(args, "signal", 1, &sig, cause) != 0 ||
	    shell_signal_name(sig, cause) == NULL)
		return -1;
	av_add(&a, "vmux");
	av_add(&a, "kill");
	av_add(&a, "--json");
	av_addf(&a, "--signal=%s", sig);
	av_add(&a, "--");
	av_add(&a, name);
	av_add(&a, id);
	return tool_run(c, &a, NULL, 0, finish_object, cause);
}

int
t_shell_resize(struct mcp_call *c, const cJSON *args, char **cause)
{
	const char *name, *id;
	long long cols, rows;
	struct argv_b a = {0};

	if (arg_session(c, args, &name, cause) != 0 ||
	    arg_shell(args, &id, cause) != 0 ||
	    arg_int(args, "cols", 1, 4096, 0, &cols, cause) != 0 ||
	    arg_int(args, "rows", 1, 4096, 0, &rows, cause) != 0)
		return -1;
	if (cols == 0 || rows == 0) {
		xasprintf(cause, "give \"cols\" and \"rows\"");
		return -1;
	}
	av_add(&a, "vmux");
	av_add(&a, "resize");
	av_add(&a, "--json");
	av_add(&a, "--");
	av_add(&a, name);
	av_add(&a, id);
	av_addf(&a, "%lldx%lld", cols, rows);
	return tool_run(c, &a, NULL, 0, finish_object, cause);
}

static void
finish_close(struct mcp_call *c)
{
	finish_wrapped(c, "closed");
}

int
t_shell_close(struct mcp_call *c, const cJSON *args, char **cause)
{
	const char *name, *id;
	struct argv_b a = {0};

	if (arg_session(c, args, &name, cause) != 0 ||
	    arg_shell(args, &id, cause) != 0)
		return -1;
	av_add(&a, "vmux");
	av_add(&a, "close");
	av_add(&a, "--json");
	av_add(&a, "--");
	av_add(&a, name);
	av_add(&a, id);
	return tool_run(c, &a, NULL, 0, finish_close, cause);
}

int
t_shell_list(struct mcp_call *c, const cJSON *args, char **cause)
{
	const char *name;
	struct argv_b a = {0};

	if (arg_session(c, args, &name, cause) != 0)
		return -1;
	av_add(&a, "vmux");
	av_add(&a, "shells");
	av_add(&a, name);
	av_add(&a, "--json");
	return tool_run(c, &a, NULL, 0, finish_shells, cause);
}
