#!/bin/sh
# seed_fuzz_request.sh DIR: one seed per request shape the agent knows.
set -e
d=$1
i=0
seed() { i=$((i + 1)); printf '%s\n' "$1" >"$d/seed$i"; }
seed '{"command": "echo ok", "timeout_seconds": 30}'
seed '{"action": "exec", "command": ["sh", "-c", "exit 3"], "env": {"A": "b"}, "cwd": "/tmp", "max_output_bytes": 10}'
seed '{"action": "ping"}'
seed '{"action": "shutdown"}'
seed '{"action": "open_shell", "shell_id": "s1", "cwd": "/", "cols": 120, "rows": 30, "env": {"X": "1"}, "command": "sh"}'
seed '{"action": "read_shell", "shell_id": "s1", "cursor": 12, "max_chars": 1024, "wait_ms": 10}'
seed '{"action": "write_shell", "shell_id": "s1", "input": "pwd\u00e9", "append_newline": true}'
seed '{"action": "signal_shell", "shell_id": "s1", "signal": "SIGINT"}'
seed '{"action": "resize_shell", "shell_id": "s1", "cols": 80, "rows": 24}'
seed '{"action": "close_shell", "shell_id": "s1"}'
seed '{"action": "list_shells"}'
seed '{"action": "attach_shell", "shell_id": "s1", "cursor": 0}'
seed '{"action": "extract_archive", "destination": "/workspace", "archive_size": 512}'
seed '{"action": "export_archive", "path": "/etc/hosts"}'
seed '{"stdout":"ok\n","stderr":"","exit_code":0,"duration_ms":7}'
seed '[]'
