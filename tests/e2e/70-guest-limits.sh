#!/usr/bin/env bash
# 70-guest-limits: what a process inside the guest cannot do to the agent,
# in a real guest (default image, 192 MiB so the limits are near).
#   - reach the root agent through vsock loopback: the guest does not ship
#     vsock_loopback, so connecting to CID 1 or to its own CID fails with
#     no answer (and the agent would close any non-host peer unanswered)
#   - get vmux-init or the agent OOM-killed: both run with oom_score_adj
#     -1000, what the agent starts (exec commands, shells) with 0; a memory
#     hog is killed, the agent keeps its pid and still answers ping
#   - exhaust the agent's memory: shells with large scrollback are refused
#     past the budget with a clear error, and closing one gives room back
#   - drive the user's terminal: an agent error quoting a cwd with escape
#     sequences, and a shell whose command holds them, reach vmux's
#     stdout and stderr only as visible escapes
source "$(dirname "$0")/lib.sh"
need_session g --memory 192
UDS=$(session_field g vsock_uds)
CID=$(session_field g cid)

# agent JSON: send one raw request through the bridge, print the answer.
agent() { printf 'CONNECT 5005\n%s\n' "$1" | socat -t 20 - UNIX-CONNECT:"$UDS" | tail -n 1; }

# gsh CMD: run a shell command in the guest.
gsh() { vmux exec g -- sh -c "$1"; }

agent_pid() { vmux ping g --json | jq -r .pid; }

t_no_loopback() {
	local out rc cid
	for cid in 1 "$CID"; do
		out=$(gsh "echo '{\"action\":\"ping\"}' | vmux-nc $cid 5005" 2>&1)
		rc=$?
		[[ $rc -ne 0 ]] || fail "vmux-nc $cid 5005 succeeded: $out" || return 1
		[[ $out != *'"ok"'* ]] || fail "the agent answered CID $cid: $out" || return 1
	done
	out=$(gsh 'find / -name "vsock_loopback*" 2>/dev/null; modprobe vsock_loopback 2>/dev/null && echo loaded')
	[[ -z $out ]] || fail "vsock_loopback is in the guest: $out"
}

t_oom_exempt() {
	local apid
	apid=$(agent_pid)
	[[ $apid =~ ^[0-9]+$ ]] || fail "no agent pid" || return 1
	expect_eq "init" "$(gsh 'cat /proc/1/oom_score_adj')" -1000 || return 1
	expect_eq "agent" "$(gsh "cat /proc/$apid/oom_score_adj")" -1000 || return 1
	expect_eq "exec" "$(gsh 'cat /proc/self/oom_score_adj')" 0 || return 1
	local r spid
	r=$(agent '{"action":"open_shell","shell_id":"oomcheck","command":["sleep","1000"]}')
	spid=$(jq -r .pid <<<"$r")
	[[ $spid =~ ^[0-9]+$ ]] || fail "open_shell: $r" || return 1
	expect_eq "shell" "$(gsh "cat /proc/$spid/oom_score_adj")" 0 || return 1
	agent '{"action":"close_shell","shell_id":"oomcheck"}' >/dev/null
}

t_memory_hog_dies_agent_lives() {
	local apid rc out
	apid=$(agent_pid)
	# a string that doubles until it no longer fits in the guest
	out=$(vmux exec g --timeout 300 -- awk 'BEGIN { s = "xxxxxxxx"; while (1) s = s s }' 2>&1)
	rc=$?
	expect_eq "hog's exit status (SIGKILL)" "$rc" 137 || { echo "$out"; return 1; }
	vmux ping g >/dev/null || fail "ping after the hog" || return 1
	expect_eq "agent pid" "$(agent_pid)" "$apid" || return 1
	gsh 'dmesg | grep -i "killed process"' | grep -q awk || fail "no OOM kill of awk in dmesg"
}

t_budget_refuses_shells() {
	local i r err= opened=0
	for i in $(seq 1 20); do
		r=$(agent "{\"action\":\"open_shell\",\"shell_id\":\"big$i\",\"scrollback_bytes\":16777216,\"command\":[\"sleep\",\"1000\"]}")
		if [[ $(jq -r '.error // empty' <<<"$r") != "" ]]; then
			err=$(jq -r .error <<<"$r")
			break
		fi
		opened=$((opened + 1))
	done
	echo "opened $opened shells, then: $err" >&2
	[[ $opened -ge 1 ]] || fail "no shell opened at all" || return 1
	expect_match error "$err" '^agent memory budget exhausted: [0-9]+ MiB in use of [0-9]+ MiB' || return 1
	vmux ping g >/dev/null || fail "ping after the refusal" || return 1
	# closing one gives its share back
	agent '{"action":"close_shell","shell_id":"big1"}' >/dev/null
	r=$(agent '{"action":"open_shell","shell_id":"again","scrollback_bytes":16777216,"command":["sleep","1000"]}')
	expect_eq "open after a close" "$(jq -r .shell_id <<<"$r")" again || return 1
	for i in $(seq 2 "$opened" | sed 's/^/big/') again; do
		agent "{\"action\":\"close_shell\",\"shell_id\":\"$i\"}" >/dev/null
	done
	expect_eq "shells left" "$(agent '{"action":"list_shells"}' | jq '.shells | length')" 0
}

# no_esc FILE: fail if FILE holds an ESC byte.
no_esc() {
	if LC_ALL=C grep -aq $'\e' "$1"; then
		echo "ESC reached the terminal:"; od -c "$1" | head -n 10; return 1
	fi
}

t_escapes_shown_escaped() {
	if vmux exec g --cwd $'/no\e[2Jdir' -- true >"$TMP/o" 2>&1; then
		fail "exec succeeded"
		return 1
	fi
	cat "$TMP/o"
	no_esc "$TMP/o" || return 1
	grep -qF 'no\x1b[2Jdir' "$TMP/o" || fail "cause not shown escaped" || return 1
	agent '{"action":"open_shell","shell_id":"esc","command":"sleep 1000 # \u001b[2J\u001b]0;t\u0007"}' >/dev/null
	vmux shells g >"$TMP/o" 2>&1 || return 1
	cat "$TMP/o"
	no_esc "$TMP/o" || return 1
	grep -qF '\x1b[2J' "$TMP/o" || fail "command not shown escaped" || return 1
	vmux shells g --json >"$TMP/o" 2>&1 || return 1
	no_esc "$TMP/o" || return 1
	expect_eq "json keeps the data" "$(jq -r '.[] | select(.shell_id == "esc") | .command' "$TMP/o")" \
		$'sleep 1000 # \e[2J\e]0;t\a' || return 1
	agent '{"action":"close_shell","shell_id":"esc"}' >/dev/null
}

check "no vsock loopback: a guest process cannot reach the agent" t_no_loopback
check "init and agent exempt from the OOM killer, children not" t_oom_exempt
check "a memory hog is OOM-killed, the agent lives on" t_memory_hog_dies_agent_lives
check "shells past the memory budget are refused clearly" t_budget_refuses_shells
check "guest text with escapes is shown escaped" t_escapes_shown_escaped
