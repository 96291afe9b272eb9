#!/usr/bin/env bash
# 50-shell: persistent shells against a real guest, through `vmux shell`,
# `vmux shells/kill/close` and raw JSON over the bridge (socat): cursors,
# eviction, signals, resize, close, stopped shells, 50 shells, a `yes`
# flood, a client killed mid-attach, the idle timeout, and error paths.
source "$(dirname "$0")/lib.sh"
need_session sh
UDS=$(session_field sh vsock_uds)

# raw JSON: one request line through the bridge, prints the agent's answer.
raw() {
	printf 'CONNECT 5005\n%s\n' "$1" | socat -t 30 - UNIX-CONNECT:"$UDS" | tail -n 1
}

# jqr JSON FILTER
jqr() { jq -r "$2" <<<"$1"; }

# read_until ID REGEX [DEADLINE_S]: read a shell's output from cursor 0
# (long polls) until it matches; the whole output ends up in $TMP/out.
read_until() {
	local id=$1 re=$2 deadline=$((SECONDS + ${3:-30})) cur=0 r out="" next
	while ((SECONDS < deadline)); do
		r=$(raw "{\"action\":\"read_shell\",\"shell_id\":\"$id\",\"cursor\":$cur,\"wait_ms\":1000}")
		next=$(jqr "$r" .next_cursor)
		[[ $next =~ ^[0-9]+$ ]] || { echo "bad read: $r"; return 1; }
		out+=$(jqr "$r" .output)
		cur=$next
		if [[ $out =~ $re ]]; then
			printf '%s' "$out" >"$TMP/out"
			return 0
		fi
	done
	printf '%s' "$out" >"$TMP/out"
	echo "no /$re/ in output of $id:"
	tail -c 600 "$TMP/out"
	return 1
}

# type ID TEXT: type a line into a shell.
type_line() {
	local r
	r=$(raw "$(jq -cn --arg id "$1" --arg in "$2" '{action:"write_shell",shell_id:$id,input:$in,append_newline:true}')")
	[[ $(jqr "$r" .error) == null ]] || { echo "write: $r"; return 1; }
}

# shell_rec ID FIELD: a field of the shell's record in `vmux shells --json`.
shell_rec() {
	vmux shells sh --json | jq -r --arg id "$1" ".[] | select(.shell_id == \$id) | .$2"
}

# agent_rss: the agent's resident memory in KiB.
agent_rss() {
	local pid
	pid=$(vmux ping sh --json | jq -r .pid)
	vmux exec sh -- sh -c "awk '/^VmRSS/ { print \$2 }' /proc/$pid/status"
}

# An idle connection, started now and checked at the end (the agent's
# request deadline is 30 s): the other checks run meanwhile. Its input is a
# FIFO this shell holds open on fd 8, so it sends half a request and waits.
mkfifo "$TMP/idle.fifo"
socat -t 5 - UNIX-CONNECT:"$UDS" <"$TMP/idle.fifo" >"$TMP/idle.out" 2>&1 &
IDLE_PID=$!
bg_track $IDLE_PID
exec 8>"$TMP/idle.fifo"
printf 'CONNECT 5005\n{"action":' >&8

t_open_write_read() {
	local r c1 c2
	r=$(raw '{"action":"open_shell","shell_id":"raw","cols":100,"rows":30}')
	expect_eq state "$(jqr "$r" .state)" running || return 1
	type_line raw 'echo marker-$((40+2))' || return 1
	read_until raw 'marker-42' || return 1
	r=$(raw '{"action":"read_shell","shell_id":"raw","cursor":0}')
	c1=$(jqr "$r" .next_cursor)
	((c1 > 0)) || fail "next_cursor $c1"
	type_line raw 'echo second-$((1+1))' || return 1
	r=$(raw "{\"action\":\"read_shell\",\"shell_id\":\"raw\",\"cursor\":$c1,\"wait_ms\":5000}")
	c2=$(jqr "$r" .next_cursor)
	((c2 > c1)) || fail "next_cursor did not advance: $c1 -> $c2"
	[[ $(jqr "$r" .output) != *marker-42* ]] || fail "old output read again"
	expect_eq cursor "$(jqr "$r" .cursor)" "$c1"
}

t_evicted_cursor_is_truncated() {
	local r
	r=$(raw '{"action":"open_shell","shell_id":"small","scrollback_bytes":4096}')
	[[ $(jqr "$r" .scrollback_bytes) == 4096 ]] || fail "open: $r" || return 1
	type_line small 'seq 1 5000; echo seq-$((1+1))-done' || return 1
	read_until small 'seq-2-done' >/dev/null 2>&1
	r=$(raw '{"action":"read_shell","shell_id":"small","cursor":0}')
	expect_eq truncated "$(jqr "$r" .truncated)" true || return 1
	(($(jqr "$r" .cursor) > 0)) || fail "cursor after eviction: $r"
}

t_signal_int_stops_sleep() {
	# Ctrl-C abandons the whole command line, so ask for $? afterwards;
	# it only runs in time if sleep was interrupted.
	type_line raw 'sleep 100' || return 1
	wait_guest_cmd sh 'sleep 100' || fail "sleep never ran" || return 1
	vmux kill sh raw -s INT || return 1
	type_line raw 'echo rc=$?' || return 1
	read_until raw 'rc=130' 20
}

t_kill_default_term() {
	type_line raw 'sleep 100; echo term-rc=$?' || return 1
	wait_guest_cmd sh 'sleep 100' || fail "sleep never ran" || return 1
	vmux kill sh raw || return 1
	read_until raw 'term-rc=143' 20
}

t_resize() {
	local r
	r=$(raw '{"action":"resize_shell","shell_id":"raw","cols":123,"rows":45}')
	expect_eq cols "$(jqr "$r" .cols)" 123 || return 1
	type_line raw 'stty size' || return 1
	read_until raw '45 123'
}

t_list() {
	local out
	out=$(vmux shells sh) || return 1
	[[ $out == *ID*STATE*SIZE* ]] || fail "no header: $out" || return 1
	[[ $out =~ raw\ +running\ +123x45 ]] || fail "raw not listed: $out" || return 1
	expect_eq json-state "$(shell_rec raw state)" running
}

# a guest may say any size up to 4096x4096; capture --plain draws at most
# the TUI's 512x256 (a 4096x4096 screen took 577 MiB)
t_capture_plain_clamped() {
	local out kb
	raw '{"action":"resize_shell","shell_id":"raw","cols":4096,"rows":4096}' >/dev/null
	out=$(/usr/bin/time -f '%M' -o "$TMP/capture.kb" "$VMUX" capture sh raw --plain --json) ||
		fail "capture --plain: $out" || return 1
	expect_eq "cols" "$(jq -r .cols <<<"$out")" 512 || return 1
	expect_eq "rows" "$(jq -r .rows <<<"$out")" 256 || return 1
	kb=$(tail -n 1 "$TMP/capture.kb")
	echo "figure: capture --plain of a 4096x4096 shell: $((kb / 1024)) MiB peak"
	((kb < 128 * 1024)) || fail "capture --plain peaked at $((kb / 1024)) MiB"
	raw '{"action":"resize_shell","shell_id":"raw","cols":123,"rows":45}' >/dev/null
}

t_stopped_shell_readable() {
	local r
	raw '{"action":"open_shell","shell_id":"done","command":["sh","-c","echo bye-bye; exit 7"]}' >/dev/null
	wait_for 20 eval '[[ $(shell_rec done state) == stopped ]]' || fail "not stopped" || return 1
	expect_eq exit_code "$(shell_rec done exit_code)" 7 || return 1
	r=$(raw '{"action":"read_shell","shell_id":"done","cursor":0}')
	[[ $(jqr "$r" .output) == *bye-bye* ]] || fail "output: $r" || return 1
	expect_eq exit_code "$(jqr "$r" .exit_code)" 7 || return 1
	[[ $(vmux shells sh) =~ done\ +stopped.*\ 7\  ]] || fail "shells: $(vmux shells sh)"
}

t_write_to_stopped_is_error() {
	local r
	r=$(raw '{"action":"write_shell","shell_id":"done","input":"x"}')
	[[ $(jqr "$r" .error) == *"not running"* ]] || fail "$r"
}

t_close() {
	local r
	raw '{"action":"open_shell","shell_id":"closeme"}' >/dev/null
	r=$(raw '{"action":"close_shell","shell_id":"closeme"}')
	expect_eq closed "$(jqr "$r" .closed)" true || return 1
	[[ -z $(shell_rec closeme state) ]] || fail "still listed" || return 1
	vmux close sh done || return 1
	[[ -z $(shell_rec done state) ]] || fail "done still listed"
}

t_fifty_shells() {
	local i r n
	for i in $(seq 1 50); do
		r=$(raw "{\"action\":\"open_shell\",\"shell_id\":\"many-$i\"}")
		[[ $(jqr "$r" .state) == running ]] || fail "open many-$i: $r" || return 1
	done
	n=$(vmux shells sh --json | jq '[.[] | select(.shell_id | startswith("many-"))] | length')
	expect_eq count "$n" 50 || return 1
	for i in 1 25 50; do
		type_line many-$i "echo hello-from-\$((1000+$i))" || return 1
		read_until many-$i "hello-from-$((1000 + i))" || return 1
	done
	vmux close sh $(seq -f 'many-%g' 1 50) || return 1
	n=$(vmux shells sh --json | jq '[.[] | select(.shell_id | startswith("many-"))] | length')
	expect_eq "count after close" "$n" 0
}

t_flood_keeps_others_responsive() {
	local before after vpid vrss start mark
	before=$(agent_rss) || return 1
	raw '{"action":"open_shell","shell_id":"flood","command":["yes","vmux-flood-line"]}' >/dev/null
	# A client that attaches and never reads (its stdout is a FIFO nobody
	# reads): vmux must not buffer it all.
	mkfifo "$TMP/flood.fifo"
	exec 9<>"$TMP/flood.fifo"
	"$VMUX" shell sh --id flood </dev/null >"$TMP/flood.fifo" 2>/dev/null &
	vpid=$!
	bg_track $vpid
	# the flood is on (a MiB out), and the stalled client has had it
	wait_for 20 eval '(( $(shell_rec flood output_bytes) > 1048576 ))' ||
		fail "no flood" || return 1
	start=$SECONDS
	type_line raw 'echo responsive-$((9*9))' || return 1
	read_until raw 'responsive-81' 20 || return 1
	((SECONDS - start < 15)) || fail "took $((SECONDS - start)) s under the flood" || return 1
	expect_match exec "$(vmux exec sh -- echo exec-ok)" exec-ok || return 1
	# another 4 MiB through the ring since: had the agent kept them for
	# the stalled client, its RSS would show it
	mark=$(shell_rec flood output_bytes)
	wait_for 30 eval '(( $(shell_rec flood output_bytes) > mark + 4194304 ))' ||
		fail "the flood stopped" || return 1
	after=$(agent_rss) || return 1
	echo "agent RSS: $before KiB -> $after KiB"
	((after - before < 16384)) || fail "agent grew by $((after - before)) KiB" || return 1
	vrss=$(awk '/^VmRSS/ { print $2 }' /proc/"$vpid"/status)
	echo "stalled vmux shell RSS: $vrss KiB"
	((vrss < 32768)) || fail "client RSS $vrss KiB" || return 1
	kill $vpid
	(($(shell_rec flood output_bytes) > 200000)) || fail "flood produced little: $(shell_rec flood output_bytes)" || return 1
	vmux close sh flood
}

# held_stdin: a FIFO kept open on fd 7, so `vmux shell` sees no EOF.
held_stdin() {
	rm -f "$TMP/fifo"
	mkfifo "$TMP/fifo"
	exec 7<>"$TMP/fifo"
}

t_client_killed_mid_attach() {
	local vpid
	held_stdin
	"$VMUX" shell sh --id k9 <&7 >"$TMP/k9.out" 2>&1 & # not the function: $! must be vmux
	vpid=$!
	bg_track $vpid
	wait_for 20 eval '[[ $(shell_rec k9 clients) == 1 ]]' || fail "never attached" || return 1
	kill -9 $vpid
	wait $vpid 2>/dev/null
	# dropped at once (the hang-up reaches the agent), not at the next output
	wait_for 10 eval '[[ $(shell_rec k9 clients) == 0 ]]' || fail "client not dropped while the shell is quiet" || return 1
	expect_eq state "$(shell_rec k9 state)" running || return 1
	type_line k9 'echo still-alive-$((2*21))' || return 1
	read_until k9 'still-alive-42' || return 1
}

t_term_detaches() {
	local vpid rc
	held_stdin
	"$VMUX" shell sh --id termed <&7 >"$TMP/term.out" 2>&1 &
	vpid=$!
	bg_track $vpid
	wait_for 20 eval '[[ $(shell_rec termed clients) == 1 ]]' || fail "never attached" || return 1
	kill -TERM $vpid
	wait $vpid
	rc=$?
	expect_eq status "$rc" 143 || return 1
	grep -q 'detached from shell termed in sh' "$TMP/term.out" || fail "$(cat "$TMP/term.out")" || return 1
	expect_eq state "$(shell_rec termed state)" running
}

t_shell_piped_input() {
	local out rc
	out=$(printf 'echo piped-$((3*5))\nexit 3\n' | vmux shell sh 2>"$TMP/err")
	rc=$?
	expect_eq status "$rc" 3 || return 1
	[[ $out == *piped-15* ]] || fail "output: $out" || return 1
	grep -Eq '^\[shell shell-[0-9]+ in sh\]$' "$TMP/err" || fail "stderr: $(cat "$TMP/err")"
}

t_shell_command_status() {
	local out
	out=$(vmux shell sh -- sh -c 'echo from-cmd; exit 5' </dev/null 2>/dev/null)
	expect_eq status $? 5 || return 1
	[[ $out == *from-cmd* ]] || fail "output: $out" || return 1
	vmux shell sh -- sh -c 'kill -9 $$' </dev/null >/dev/null 2>&1
	expect_eq "killed status" $? 137
}

t_shell_new_id_then_reattach() {
	local out
	# --detach-key makes the key work on piped input too
	out=$(printf 'echo first-$((2+3))\n\035' | vmux shell sh --id newid --detach-key '^]' 2>&1)
	expect_eq "detach status" $? 0 || return 1
	[[ $out == *"[shell newid in sh; detach with Ctrl-]]"* ]] || fail "notice: $out" || return 1
	[[ $out == *"[detached from shell newid in sh]"* ]] || fail "detach: $out" || return 1
	expect_eq state "$(shell_rec newid state)" running || return 1
	# reattach replays recent output; exit ends it
	out=$(printf 'exit 4\n' | vmux shell sh --id newid 2>&1)
	expect_eq status $? 4 || return 1
	[[ $out == *first-5* ]] || fail "no replay: $out" || return 1
	[[ $out == *"attached to shell newid in sh"* ]] || fail "no notice: $out"
}

t_errors() {
	local r err
	r=$(raw '{"action":"read_shell","shell_id":"nope"}')
	[[ $(jqr "$r" .error) == *'no shell "nope"'* ]] || fail "unknown shell: $r" || return 1
	# each error carries a code a program switches on
	expect_eq "no_shell code" "$(jqr "$r" .code)" no_shell || return 1
	r=$(raw '{"action":"open_shell","shell_id":"raw"}')
	expect_eq "shell_exists code" "$(jqr "$r" .code)" shell_exists || return 1
	r=$(raw '{"action":"frobnicate"}')
	expect_eq "bad_request code" "$(jqr "$r" .code)" bad_request || return 1
	r=$(raw '[]')
	[[ $(jqr "$r" .error) == *"JSON object"* ]] || fail "non-object: $r" || return 1
	r=$(raw '{"action":"signal_shell","shell_id":"raw","signal":"BOGUS"}')
	[[ $(jqr "$r" .error) == *"unknown signal"* ]] || fail "bad signal: $r" || return 1
	err=$(vmux kill sh nope 2>&1)
	expect_eq "kill status" $? 125 || return 1
	expect_match "kill error" "$err" 'no shell "nope"' || return 1
	err=$(vmux close sh nope 2>&1)
	expect_eq "close status" $? 125 || return 1
	expect_match "close error" "$err" 'no shell "nope"' || return 1
	err=$(vmux shell sh --id 'bad id!' </dev/null 2>&1)
	expect_eq "bad id status" $? 2 || return 1
	expect_match "bad id" "$err" 'invalid shell id' || return 1
	err=$(vmux shells nosuch 2>&1)
	expect_eq "bad session" $? 125 || return 1
	expect_match "bad session" "$err" "nosuch" || return 1
	# usage errors are found on the host: exit 2, in the user's words
	err=$(vmux kill sh 'bad id!' 2>&1)
	expect_eq "kill bad id" $? 2 || return 1
	expect_match "kill bad id" "$err" "invalid shell id 'bad id!'" || return 1
	err=$(vmux close sh raw 'x y' 2>&1)
	expect_eq "close bad id" $? 2 || return 1
	expect_match "close bad id" "$err" "invalid shell id 'x y'" || return 1
	err=$(vmux open sh --cwd '' 2>&1)
	expect_eq "open empty cwd" $? 2 || return 1
	expect_match "open empty cwd" "$err" "--cwd needs a directory" || return 1
	err=$(vmux kill sh raw -s BOGUS 2>&1)
	expect_eq "bad signal" $? 2 || return 1
	expect_match "bad signal" "$err" "invalid signal 'BOGUS'" || return 1
	err=$(vmux kill sh raw -s 99 2>&1)
	expect_eq "bad number" $? 2 || return 1
	# numbers as kill(1) takes them: 18 is CONT, harmless to the shell
	expect_eq "numeric signal" "$(vmux kill sh raw -s 18 --json | jq -r .signal)" CONT
}

t_idle_timeout() {
	wait_for 60 eval '! kill -0 $IDLE_PID 2>/dev/null' || fail "idle client still running" || return 1
	grep -q 'no complete request within' "$TMP/idle.out" || fail "idle answer: $(cat "$TMP/idle.out")" || return 1
	type_line raw 'echo after-idle-$((5*5))' || return 1
	read_until raw 'after-idle-25'
}

check "open, write, read with advancing cursors" t_open_write_read
check "an evicted cursor reads as truncated" t_evicted_cursor_is_truncated
check "kill -s INT stops sleep 100" t_signal_int_stops_sleep
check "kill sends TERM by default" t_kill_default_term
check "resize shows in stty size" t_resize
check "shells lists id, state, size" t_list
check "capture --plain draws at most 512x256, whatever the guest says" t_capture_plain_clamped
check "a stopped shell stays readable with its exit code" t_stopped_shell_readable
check "write to a stopped shell is an error" t_write_to_stopped_is_error
check "close_shell and vmux close remove shells" t_close
check "50 shells at once" t_fifty_shells
check "a yes flood: others responsive, memory bounded" t_flood_keeps_others_responsive
check "kill -9 of an attached client leaves the shell" t_client_killed_mid_attach
check "SIGTERM detaches vmux shell (143), shell runs on" t_term_detaches
check "vmux shell with piped input exits with the status" t_shell_piped_input
check "vmux shell -- CMD: its status, 128+N when killed" t_shell_command_status
check "--id creates, then reattaches with replay" t_shell_new_id_then_reattach
check "error paths: unknown shell, non-object, bad signal" t_errors
check "an idle connection times out, later requests work" t_idle_timeout
