#!/usr/bin/env bash
# 35-script: output and exit statuses a script can trust, against a real
# guest: --json of every reporting command (one document, errors as
# {"error", "exit_code"} with nothing on stderr), Docker's exit statuses
# (125 for vmux's own errors), RFC 3339 times, and `vmux shell` on piped
# input ending by itself with the shell's status.
source "$(dirname "$0")/lib.sh"
need_session js
UDS=$(session_field js vsock_uds)
RFC3339='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$'

# raw JSON: one request line through the bridge, prints the agent's answer.
raw() {
	printf 'CONNECT 5005\n%s\n' "$1" | socat -t 30 - UNIX-CONNECT:"$UDS" | tail -n 1
}

# json_run WANT_STATUS CMD...: run vmux CMD; its stdout must be one JSON
# document and its stderr empty; the document is left in $TMP/doc.
json_run() {
	local want=$1 rc
	shift
	"$VMUX" "$@" >"$TMP/doc" 2>"$TMP/err"
	rc=$?
	expect_eq "status of vmux $*" "$rc" "$want" || { cat "$TMP/doc" "$TMP/err"; return 1; }
	[[ ! -s $TMP/err ]] || fail "stderr of vmux $*: $(cat "$TMP/err")" || return 1
	expect_eq "documents from vmux $*" "$(jq -s length <"$TMP/doc")" 1
}

# json_error WANT_STATUS CMD...: CMD fails with exactly the error object.
json_error() {
	json_run "$@" || return 1
	expect_eq "error keys of vmux ${*:2}" "$(jq -c 'keys' <"$TMP/doc")" '["error","exit_code"]' || return 1
	expect_eq "exit_code of vmux ${*:2}" "$(jq .exit_code <"$TMP/doc")" "$1" || return 1
	[[ -n $(jq -r .error <"$TMP/doc") ]] || fail "empty error"
}

# doc FILTER: a field of the last document.
doc() { jq -r "$1" <"$TMP/doc"; }

t_ping_nosuch_is_125() {
	local err
	err=$(vmux ping nosuch 2>&1)
	expect_eq status $? 125 || return 1
	expect_match error "$err" "^vmux: .*nosuch" || return 1
	json_error 125 ping nosuch --json || return 1
	expect_match "json error" "$(doc .error)" nosuch
}

t_ping_json() {
	json_run 0 ping js --json || return 1
	expect_match version "$(doc .version)" '^[0-9]+\.' || return 1
	expect_match kernel "$(doc .kernel)" '^[0-9]+\.' || return 1
	expect_match uptime "$(doc .uptime_seconds)" '^[0-9.]+$' || return 1
	expect_match time "$(doc .time)" "$RFC3339"
}

t_ls_json_times() {
	json_run 0 ls --json || return 1
	expect_match created "$(doc '.[] | select(.name == "js") | .created')" "$RFC3339" || return 1
	expect_match table "$(vmux ls)" 'js +running .* [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z '
}

t_new_and_rm_json() {
	json_run 0 new js2 --json || return 1
	expect_eq name "$(doc .name)" js2 || return 1
	expect_eq state "$(doc .state)" running || return 1
	expect_match created "$(doc .created)" "$RFC3339" || return 1
	test -S "$(doc .vsock_uds)" || fail "vsock_uds: $(doc .vsock_uds)" || return 1
	# the same object as ls --json shows
	expect_eq "same as ls" "$(jq -cS . <"$TMP/doc")" \
		"$(vmux ls --json | jq -cS '.[] | select(.name == "js2")')" || return 1
	json_error 125 new js2 --json || return 1
	expect_match duplicate "$(doc .error)" 'already exists' || return 1
	json_run 0 rm js2 --json || return 1
	expect_eq removed "$(jq -c . <"$TMP/doc")" '{"removed":"js2"}' || return 1
	json_error 125 rm js2 --json || return 1
	json_error 2 new 'bad/name' --json || return 1
	json_error 2 new bf --cpus abc --json || return 1
	json_error 2 ls --bogus --json
}

t_shells_kill_close_json() {
	local r
	r=$(raw '{"action":"open_shell","shell_id":"j1","command":["sleep","600"]}')
	[[ $(jq -r .state <<<"$r") == running ]] || fail "open: $r" || return 1
	json_run 0 shells js --json || return 1
	expect_match started_at "$(doc '.[] | select(.shell_id == "j1") | .started_at')" "$RFC3339" || return 1
	expect_eq ended_at "$(doc '.[] | select(.shell_id == "j1") | .ended_at')" null || return 1
	expect_match table "$(vmux shells js)" 'j1 +running +[0-9]+x[0-9]+ +[0-9-]{10}T[0-9:]{8}Z ' || return 1
	json_run 0 kill js j1 -s sigkill --json || return 1
	expect_eq kill "$(jq -c . <"$TMP/doc")" '{"session":"js","shell_id":"j1","signal":"KILL"}' || return 1
	wait_for 20 eval '[[ $(vmux shells js --json | jq -r ".[] | select(.shell_id == \"j1\") | .state") == stopped ]]' ||
		fail "j1 not stopped" || return 1
	json_run 0 shells js --json || return 1
	expect_match ended_at "$(doc '.[] | select(.shell_id == "j1") | .ended_at')" "$RFC3339" || return 1
	json_run 0 close js j1 --json || return 1
	expect_eq session "$(doc .session)" js || return 1
	expect_eq shell_id "$(doc '.closed[0].shell_id')" j1 || return 1
	expect_eq exit_code "$(doc '.closed[0].exit_code')" 137 || return 1
	expect_eq exit_signal "$(doc '.closed[0].exit_signal')" KILL || return 1
	json_error 125 kill js nope --json || return 1
	json_error 125 close js nope --json || return 1
	json_error 125 shells nosuch --json
}

t_cp_json() {
	head -c 100000 /dev/urandom >"$TMP/up.bin"
	json_run 0 cp "$TMP/up.bin" js:/tmp/up.bin --json || return 1
	expect_eq direction "$(doc .direction)" upload || return 1
	expect_eq source "$(doc .source)" "$TMP/up.bin" || return 1
	expect_eq destination "$(doc .destination)" js:/tmp/up.bin || return 1
	(($(doc .bytes) >= 100000)) || fail "bytes $(doc .bytes)" || return 1
	json_run 0 cp js:/tmp/up.bin "$TMP/down.bin" --json || return 1
	expect_eq direction "$(doc .direction)" download || return 1
	(($(doc .bytes) >= 100000)) || fail "bytes $(doc .bytes)" || return 1
	cmp "$TMP/up.bin" "$TMP/down.bin" || fail "copy differs" || return 1
	json_error 125 cp js:/nonexistent "$TMP/x" --json || return 1
	json_error 2 cp a b --json
}

# shell_piped INPUT [ARGS...]: `printf INPUT | vmux shell js ARGS` with a
# deadline; its status in $rc, output in $TMP/sh.out, stderr in $TMP/sh.err.
shell_piped() {
	local input=$1
	shift
	printf "$input" | timeout 60 "$VMUX" shell js "$@" >"$TMP/sh.out" 2>"$TMP/sh.err"
	rc=$?
	[[ $rc -ne 124 ]] || fail "vmux shell did not end on its input's end: $(tail -c 300 "$TMP/sh.out")"
}

t_shell_ends_at_eof() {
	local rc
	shell_piped 'exit 7\n' || return 1
	expect_eq "exit 7" "$rc" 7 || return 1
	shell_piped 'ls /\n' || return 1
	expect_eq "ls /" "$rc" 0 || return 1
	grep -q proc "$TMP/sh.out" || fail "ls output: $(cat "$TMP/sh.out")" || return 1
	# input ends while a command runs: the shell still reads end of file
	shell_piped 'sleep 2\necho after-$((6*7))\n' || return 1
	expect_eq "sleep; echo" "$rc" 0 || return 1
	grep -q after-42 "$TMP/sh.out" || fail "output: $(cat "$TMP/sh.out")" || return 1
	# a canonical-mode reader gets the last partial line, then end of file
	shell_piped 'one\ntwo' -- cat || return 1
	expect_eq "cat" "$rc" 0 || return 1
	grep -q two "$TMP/sh.out" || fail "cat output: $(cat "$TMP/sh.out")"
}

t_shell_killed_by_signal() {
	local rc
	shell_piped 'kill -9 $$\n' || return 1
	expect_eq "shell killed by KILL" "$rc" 137 || return 1
	shell_piped 'kill -TERM $$\n' -- sh -i || return 1
	# an interactive sh ignores TERM: it ends at the input's end
	expect_eq "sh -i ignores TERM" "$rc" 0 || return 1
	shell_piped '' -- sh -c 'kill -HUP $$' || return 1
	expect_eq "killed by HUP" "$rc" 129
}

slow_stopped() {
	[[ $(vmux shells js --json | jq -r '.[] | select(.shell_id == "slow") | .state') == stopped ]]
}

t_truncated_note_once() {
	local r rc n
	r=$(raw '{"action":"open_shell","shell_id":"slow","scrollback_bytes":4096,"command":["sh","-c","sleep 2; seq 1 500000 | cat"]}')
	[[ $(jq -r .state <<<"$r") == running ]] || fail "open: $r" || return 1
	# a client whose reader only starts once the shell has flooded its
	# 4 KiB ring with 3.4 MB and exited (through cat: in 4 KiB writes, as a
	# line per write takes a TCG guest minutes)
	timeout 120 "$VMUX" shell js --id slow </dev/null 2>"$TMP/slow.err" |
		{ wait_for 100 slow_stopped; cat >/dev/null; }
	rc=${PIPESTATUS[0]}
	expect_eq status "$rc" 0 || return 1
	n=$(grep -c 'bytes of output were dropped (client too slow)' "$TMP/slow.err")
	expect_eq "notes" "$n" 1 || { cat "$TMP/slow.err"; return 1; }
	expect_match note "$(cat "$TMP/slow.err")" 'vmux: [0-9]+ bytes of output were dropped'
}

check "vmux ping nosuch exits 125 (and as JSON)" t_ping_nosuch_is_125
check "ping --json: version, kernel, uptime, RFC 3339 time" t_ping_json
check "ls --json and the table show RFC 3339 times" t_ls_json_times
check "new --json, rm --json and their errors" t_new_and_rm_json
check "shells, kill and close --json and their errors" t_shells_kill_close_json
check "cp --json both ways and its errors" t_cp_json
check "vmux shell on piped input ends with the shell's status" t_shell_ends_at_eof
check "vmux shell: a shell killed by signal N gives 128+N" t_shell_killed_by_signal
check "dropped output is reported once" t_truncated_note_once
