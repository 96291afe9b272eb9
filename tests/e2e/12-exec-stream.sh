#!/usr/bin/env bash
# 12-exec-stream: `vmux exec` streams through the agent's exec_stream in a
# real guest: output as it is produced, exact bytes, stdin with EOF, 16 MiB
# both ways, Docker's exit statuses, host write failures, signals passed
# on, 256 MiB in constant memory, --json; and the JSON exec request of
# seed 001 still answered as before.
source "$(dirname "$0")/lib.sh"
need_session st

# guest_has CMDLINE: a process in the guest runs exactly CMDLINE.
guest_has() {
	local re=" [${1:0:1}]${1:1}\$"
	vmux exec st -- sh -c "ps | grep -q '$re'" </dev/null
}

t_output_before_the_end() {
	local pid rc
	"$VMUX" exec st -- sh -c 'echo first; exec sleep 300' </dev/null >"$TMP/early" &
	pid=$!
	bg_track "$pid"
	wait_for 30 grep -qx first "$TMP/early" || fail "no output while the command ran" || return 1
	wait_for 20 guest_has 'sleep 300' || fail "sleep never ran" || return 1
	kill -TERM "$pid"
	wait "$pid"
	rc=$?
	expect_eq "status after SIGTERM" "$rc" 143 || return 1
	wait_for 20 eval '! guest_has "sleep 300"' || fail "the command outlived vmux exec"
}
t_bytes_exact() {
	vmux exec st -- printf 'a\0\377\376b' </dev/null >"$TMP/bytes" || return 1
	expect_eq bytes "$(od -An -tx1 "$TMP/bytes" | tr -d ' \n')" 6100fffe62
}
t_stderr_apart() {
	local out
	out=$(vmux exec st -- sh -c 'echo out; echo err >&2' </dev/null 2>"$TMP/err")
	expect_eq stdout "$out" out && expect_eq stderr "$(cat "$TMP/err")" err
}
t_stdin_to_eof() {
	expect_eq "piped stdin" "$(printf 'one\ntwo\n' | vmux exec st -- wc -l)" 2
}
t_16m_both_ways() {
	head -c 16777216 /dev/urandom >"$TMP/up"
	vmux exec st -- sh -c 'cat > /tmp/up' <"$TMP/up" || fail "upload failed" || return 1
	expect_eq "md5 in the guest" "$(vmux exec st -- md5sum /tmp/up </dev/null | cut -d' ' -f1)" \
		"$(md5sum <"$TMP/up" | cut -d' ' -f1)" || return 1
	vmux exec st -- cat /tmp/up </dev/null >"$TMP/down" || fail "download failed" || return 1
	cmp "$TMP/up" "$TMP/down" || fail "bytes differ after the round trip"
}
t_exit_statuses() {
	expect_status 3 vmux exec st -- sh -c 'exit 3' </dev/null || return 1
	expect_status 124 vmux exec st --timeout 1 -- sleep 30 </dev/null || return 1
	expect_status 126 vmux exec st -- /etc/passwd </dev/null || return 1
	expect_status 127 vmux exec st -- no-such-command </dev/null || return 1
	expect_status 137 vmux exec st -- sh -c 'kill -9 $$' </dev/null || return 1
	expect_status 125 vmux exec no-such-session -- true </dev/null
}
t_closed_pipe_stops_the_command() {
	local n
	local rc
	n=$(
		timeout 60 "$VMUX" exec st -- cat /dev/zero </dev/null 2>"$TMP/err" | head -c 1048576 | wc -c
		echo " ${PIPESTATUS[0]}"
	)
	rc=${n##* } n=${n% *}
	expect_eq "bytes through head" "${n//[^0-9]/}" 1048576 || return 1
	# quiet, as any Unix tool whose reader left: 141 (SIGPIPE), no message
	expect_eq status "$rc" 141 || return 1
	[[ ! -s $TMP/err ]] || fail "a message: $(cat "$TMP/err")" || return 1
	wait_for 20 eval '! guest_has "cat /dev/zero"' || fail "cat /dev/zero still runs"
}
t_full_disk_fails() {
	expect_status 125 vmux exec st -- echo hi </dev/null >/dev/full 2>"$TMP/err" || return 1
	grep -q "No space left" "$TMP/err" || fail "message: $(cat "$TMP/err")"
}
t_256m_constant_memory() {
	local pid hwm
	"$VMUX" exec st -- dd if=/dev/zero bs=65536 count=4096 </dev/null 2>/dev/null >"$TMP/big" &
	pid=$!
	# sample the peak while it runs; the result is checked after
	hwm=$(peak_rss_kib "$pid")
	wait "$pid" || fail "exec failed" || return 1
	expect_eq size "$(stat -c %s "$TMP/big")" 268435456 || return 1
	rm -f "$TMP/big"
	echo "figure: vmux exec peak RSS for 256 MiB: ${hwm} KiB"
	((hwm > 0 && hwm < 32768)) || fail "peak RSS ${hwm} KiB"
}
t_json() {
	local out
	out=$(vmux exec st --json -- sh -c 'printf "x\377"; echo e >&2; exit 4' </dev/null)
	expect_status 4 vmux exec st --json -- sh -c 'exit 4' </dev/null >/dev/null || return 1
	expect_eq exit_code "$(jq -r .exit_code <<<"$out")" 4 || return 1
	expect_eq stdout_base64 "$(jq -r .stdout_base64 <<<"$out")" "eP8=" || return 1
	expect_eq stderr "$(jq -r .stderr <<<"$out")" "e" || return 1
	expect_eq timed_out "$(jq -r .timed_out <<<"$out")" false
}
# --json keeps at most 16 MiB of a stream, says so, and on a timeout keeps
# what it captured: `cat /dev/zero` once grew vmux to 1.17 GB.
t_json_output_capped() {
	local pid hwm
	"$VMUX" exec st --json --timeout 6 -- cat /dev/zero </dev/null >"$TMP/j" 2>/dev/null &
	pid=$!
	hwm=$(peak_rss_kib "$pid")
	wait "$pid"
	expect_eq status $? 124 || return 1
	expect_eq timed_out "$(jq -r .timed_out "$TMP/j")" true || return 1
	expect_eq exit_code "$(jq -r .exit_code "$TMP/j")" null || return 1
	expect_eq truncated "$(jq -r .stdout_truncated "$TMP/j")" true || return 1
	(($(jq -r .stdout_bytes "$TMP/j") > 16777216)) ||
		fail "stdout_bytes $(jq -r .stdout_bytes "$TMP/j")" || return 1
	expect_eq kept "$(jq -r .stdout_base64 "$TMP/j" | base64 -d | wc -c)" 16777216 || return 1
	expect_eq "stderr not cut" "$(jq -r '.stderr_truncated // "no"' "$TMP/j")" no || return 1
	echo "figure: vmux exec --json peak RSS facing cat /dev/zero: ${hwm} KiB"
	((hwm > 0 && hwm < 131072)) || fail "peak RSS ${hwm} KiB"
}
# Past --max-output the middle goes: the head and the tail stay, around a
# notice of how many bytes were left out (what an agent needs: how it
# began, how it ended). --json-lines streams pieces, the result last.
t_json_head_and_tail() {
	local out n kept
	out=$("$VMUX" exec st --json --max-output 1K -- sh -c \
		'echo START; head -c 100000 /dev/zero | tr "\0" x; echo; echo END' </dev/null) ||
		fail "exec: $?" || return 1
	kept=$(jq -r .stdout <<<"$out")
	expect_match head "$kept" '^START' || return 1
	expect_match tail "$kept" $'xxx\nEND$' || return 1
	[[ $kept =~ \[\.\.\.\ ([0-9]+)\ bytes\ truncated\ \.\.\.\] ]] || fail "no notice" || return 1
	n=${BASH_REMATCH[1]}
	expect_eq bytes "$(jq -r .stdout_bytes <<<"$out")" 100011 || return 1
	(($(jq -r '.stdout | utf8bytelength' <<<"$out") <= 1024)) || fail "kept more than 1K" || return 1
	expect_eq "kept + left out" $(($(jq -r '.stdout | utf8bytelength' <<<"$out") - ${#BASH_REMATCH[0]} - 2 + n)) 100011 || return 1
	jq -e '.duration_ms >= 0' <<<"$out" >/dev/null || fail "no duration_ms" || return 1
	out=$("$VMUX" exec st --json --json-lines -- sh -c 'echo one; sleep 0.3; echo two >&2' </dev/null)
	expect_eq "pieces" "$(head -n -1 <<<"$out" | jq -c . | tr '\n' ' ')" '{"stdout":"one\n"} {"stderr":"two\n"} ' || return 1
	expect_eq "result last" "$(tail -n 1 <<<"$out" | jq -c '[.stdout, .stderr, .exit_code]')" '["one\n","two\n",0]' || return 1
	expect_status 2 vmux exec st --max-output 1K -- true </dev/null 2>/dev/null
}
t_seed_json_exec() {
	local out
	out=$(printf '%s\n' '{"command":["sh","-c","echo hi; exit 5"]}' | timeout 30 "$VMUX" connect st 5005)
	expect_eq stdout "$(jq -r .stdout <<<"$out")" "hi" || return 1
	expect_eq exit_code "$(jq -r .exit_code <<<"$out")" 5
}

check "output arrives while the command runs; SIGTERM is passed on" t_output_before_the_end
check "bytes pass exactly (NUL, invalid UTF-8)" t_bytes_exact
check "stdout and stderr stay apart" t_stderr_apart
check "stdin is forwarded and closed at EOF" t_stdin_to_eof
check "16 MiB up and down intact" t_16m_both_ways
check "exit statuses: 3, 124, 126, 127, 137, 125" t_exit_statuses
check "a closed pipe on the host stops the command" t_closed_pipe_stops_the_command
check "a full disk on the host: 125 and a message" t_full_disk_fails
check "256 MiB guest to host in constant memory" t_256m_constant_memory
check "--json: one object, base64 for non-UTF-8" t_json
check "--json keeps 16 MiB of endless output, says so, keeps it on timeout" t_json_output_capped
check "--json past --max-output keeps head and tail; --json-lines streams" t_json_head_and_tail
check "seed 001's JSON exec still answered" t_seed_json_exec
