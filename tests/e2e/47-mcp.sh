#!/usr/bin/env bash
# 47-mcp: `vmux mcp` over stdio, driven by the official MCP TypeScript SDK
# client (tests/mcp/client.mjs, @modelcontextprotocol/sdk pinned by its
# lockfile) against real guests: the tools and their schemas, a session's
# whole life (create, a 1 MiB exec cut head and tail, a shell that keeps
# its cwd across calls and clients, C-c to a running sleep, the plain
# screen, binary files byte-exact both ways, copies under the allowed
# folder only), cancellation that ends the command in the guest, progress,
# bad arguments, hostile output, a session another client made that the
# server does not see, a person who takes the keyboard in the TUI, stop
# and start, the server's limits, and the call log. The JSON-RPC errors are
# checked on the raw stream, without the SDK.
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/tui/tmux.sh"
# the file's status survives the tmux server's end (gone already: 1)
trap 'rc=$?; tui_tmux_kill; (exit $rc); e2e_cleanup' EXIT

CLIENT=$ROOT/tests/mcp/client.mjs
[[ -d $ROOT/tests/mcp/node_modules/@modelcontextprotocol/sdk ]] || {
	echo "FAIL the MCP SDK client is not installed (make test runs npm ci in tests/mcp)"
	exit 1
}
export VMUX
SHARE=$TMP/share
mkdir -p "$SHARE"
export VMUX_MCP_ARGS="--allow-root $SHARE"
# a host secret in the server's environment: no guest may see it
export MCP_CANARY=host-secret-$RANDOM$RANDOM

# mcp SCENARIO ARGS...: one run of the SDK client.
mcp() { node "$CLIENT" "$@"; }

# raw LINES...: the lines on the server's stdin; its stdout.
raw() { printf '%s\n' "$@" | timeout 30 "$VMUX" mcp; }

t_jsonrpc_errors() {
	local out
	out=$(raw 'garbage' '{"jsonrpc":"2.0","id":1,"method":"nope"}' \
		'[{"jsonrpc":"2.0","id":2,"method":"ping"}]' \
		'{"jsonrpc":"2.0","id":3,"method":"ping","params":7}' \
		'{"jsonrpc":"2.0","method":"notifications/initialized"}' \
		'{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"nope"}}' \
		'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"arguments":{}}}' \
		'{"jsonrpc":"2.0","id":5,"method":"ping"}') || fail "vmux mcp: $?" || return 1
	# one answer a request, none for the notification, in this order
	expect_eq "answers" "$(jq -c '[.id, .error.code // "ok"]' <<<"$out" | tr '\n' ' ')" \
		'[null,-32700] [1,-32601] [null,-32600] [3,-32602] ["x",-32602] [4,-32602] [5,"ok"] '
}

t_oversized_message() {
	local out
	# 25 MiB on one line: refused, skipped to its end, the next one served
	out=$( { head -c $((25 << 20)) /dev/zero | tr '\0' a; echo;
		echo '{"jsonrpc":"2.0","id":9,"method":"ping"}'; } | timeout 60 "$VMUX" mcp) ||
		fail "vmux mcp: $?" || return 1
	expect_eq "answers" "$(jq -c '[.id, .error.code // "ok"]' <<<"$out" | tr '\n' ' ')" \
		'[null,-32600] [9,"ok"] '
}

t_tools_and_schemas() { mcp tools; }

t_create() {
	mcp create m1 || return 1
	# a person sees it, labelled as the server's
	expect_match "ls" "$(vmux ls --show-labels)" 'm1 .*vmux\.mcp=agent'
}

t_invisible() { mcp invisible m1 other; }
t_bigexec() { mcp bigexec m1; }
t_shell() { mcp shell m1 open && mcp shell m1 use; }
t_files() { mcp files m1 "$SHARE"; }
t_cancel() { mcp cancel m1; }
t_progress() { mcp progress m1; }
t_badargs() { mcp badargs m1; }
t_hostile() { mcp hostile m1; }

# A person opens the agent's shell in the TUI and takes the keyboard: the
# agent's writes fail until it is handed back, then they go through.
t_takeover() {
	tm new-session -d -s wall -x 160 -y 40 \
		"env -i PATH=/usr/bin:/bin HOME=$TMP/home TERM=tmux-256color LANG=C.UTF-8 VMUX_HOME=$VMUX_HOME $VMUX tui --grid --as person" || return 1
	wait_on wall 'm1:work live' 60 || return 1
	tm send-keys -t wall / || return 1
	wait_on wall '^filter:' 10 || return 1
	tm send-keys -t wall -l 'm1' && tm send-keys -t wall Enter z || return 1
	wait_on wall 't takes the keyboard, z back' 20 || return 1
	mcp write m1 work 'echo before-$((2+3))' || return 1
	wait_on wall '^before-5' 30 || return 1
	tm send-keys -t wall t || return 1
	wait_on wall 'm1:work live .*YOU TYPE' 30 || return 1
	mcp taken m1 work refused || return 1
	tm send-keys -t wall C-b T || return 1
	wait_for 30 mcp taken m1 work accepted || fail "writes still refused after the hand-back" || return 1
	wait_on wall '^agent-accepted' 30 || return 1
	tm send-keys -t wall q || return 1
	tm send-keys -t wall C-b d
}

t_stop_start() { mcp stopstart m1; }
t_pause_fork() { mcp pausefork m1; }

t_limits() {
	VMUX_MCP_ARGS="--max-sessions 1 --no-net --profile offline_readonly" mcp limit &&
		VMUX_MCP_ARGS="--no-net" mcp nonet
}

t_call_log() {
	local log=$VMUX_HOME/mcp.log
	[[ -s $log ]] || fail "no $log" || return 1
	jq -se 'any(.[]; .tool == "exec" and .session == "m1" and .outcome == "ok")' "$log" >/dev/null ||
		fail "no exec in the log" || return 1
	jq -se 'any(.[]; .tool == "exec" and .outcome == "cancelled")' "$log" >/dev/null ||
		fail "no cancelled call in the log" || return 1
	jq -se 'any(.[]; .outcome == "error" and (.message | test("no session named")))' "$log" >/dev/null ||
		fail "no refused call in the log" || return 1
	jq -se 'all(.[]; .time and .server == "agent" and .tool)' "$log" >/dev/null ||
		fail "a line without its fields" || return 1
}

t_remove() { mcp remove m1; }

vmux new other --memory 256 >/dev/null || { echo "FAIL boot other"; exit 1; }
check "JSON-RPC errors on the raw stream: -32700, -32600, -32601, -32602" t_jsonrpc_errors
check "a 25 MiB message is refused and the next served" t_oversized_message
check "SDK client: initialize, every tool with input and output schemas" t_tools_and_schemas
check "session_create boots a session people see, labelled" t_create
check "a session the server did not make is not there for it" t_invisible
check "exec: 1 MiB cut head and tail; argv, stdin, cwd, env; timeout" t_bigexec
check "a shell keeps its cwd across clients; C-c ends a sleep; plain screen" t_shell
check "binary files byte-exact; copies only under the allowed folder" t_files
check "a cancelled exec ends its command in the guest" t_cancel
check "exec output arrives as progress notifications" t_progress
check "bad arguments are the tool's errors, one sentence each" t_badargs
check "a person takes the agent's shell in the TUI: writes refused, then back" t_takeover
check "escapes, invalid UTF-8 and floods reach the client as valid JSON" t_hostile
check "stop and start keep the workspace; the console log" t_stop_start
check "session_pause keeps memory, a call resumes, session_fork goes apart" t_pause_fork
check "the server's limits: profile, sessions and network" t_limits
check "every call is a line in the call log" t_call_log
check "session_remove" t_remove
