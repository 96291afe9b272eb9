#!/usr/bin/env bash
# 85-run: vmux run (status passed on, stop or --rm, TIMED_OUT removes the
# session), and isolation: the host's environment never reaches a guest
# (exec, shells, every guest process), state files are private.
source "$(dirname "$0")/lib.sh"

t_run_status_and_stop() {
	local out
	out=$(vmux run --name r1 -- sh -c 'echo hi > f; pwd; exit 3' 2>"$TMP/err")
	expect_eq status $? 3 || return 1
	expect_eq output "$out" /workspace || return 1
	expect_match notice "$(cat "$TMP/err")" "session 'r1' stopped" || return 1
	expect_eq state "$(session_field r1 state)" stopped || return 1
	expect_eq stopped_by "$(session_field r1 stopped_by)" run || return 1
	# the workspace is kept: start it and the file is there
	vmux start r1 && expect_eq file "$(vmux exec r1 -- cat f)" hi || return 1
	vmux rm r1
}

t_run_rm_json() {
	local j
	j=$(vmux run --rm --name r2 --json -- sh -c 'echo out; echo err >&2') || return 1
	expect_eq status "$(jq -r .status <<<"$j")" COMPLETED || return 1
	expect_eq exit_code "$(jq -r .exit_code <<<"$j")" 0 || return 1
	expect_eq stdout "$(jq -r .stdout <<<"$j")" out || return 1
	expect_eq removed "$(jq -r .removed <<<"$j")" true || return 1
	[[ ! -e $VMUX_HOME/sessions/r2 ]] || fail "r2 not removed"
}

t_run_timeout_is_timed_out() {
	local j rc
	j=$(vmux run --name r3 --timeout 2 --json -- sleep 60)
	rc=$?
	expect_eq "exit status" "$rc" 124 || return 1
	expect_eq status "$(jq -r .status <<<"$j")" TIMED_OUT || return 1
	expect_eq "exit_code null" "$(jq -c .exit_code <<<"$j")" null || return 1
	expect_eq session "$(jq -r .session <<<"$j")" r3 || return 1
	[[ -z $(vmux ls --json | jq -r '.[] | select(.name=="r3") | .name') ]] ||
		fail "timed-out session still listed" || return 1
	[[ -z $(e2e_leftovers) ]] || fail "left: $(e2e_leftovers)"
}

t_run_bad_flags() {
	expect_status 2 vmux run 2>/dev/null || return 1
	expect_status 2 vmux run --cpus 0 -- true 2>/dev/null || return 1
	expect_status 2 vmux run --name 'a/b' -- true 2>/dev/null || return 1
	[[ -z $(ls "$VMUX_HOME/sessions" 2>/dev/null) ]] || fail "left: $(ls "$VMUX_HOME/sessions")"
}

t_host_env_never_enters_the_guest() {
	local out secret=shouldnotleak-$RANDOM$RANDOM
	export VMUX_TEST_SECRET_ABC123=$secret
	need_session iso
	out=$(vmux exec iso -- sh -c 'env; cat /proc/cmdline; cat /proc/[0-9]*/environ 2>/dev/null | tr "\0" "\n"') ||
		return 1
	[[ $out != *"$secret"* && $out != *VMUX_TEST_SECRET* ]] || fail "secret in exec: $out" || return 1
	out=$(printf 'env\nexit\n' | vmux shell iso 2>&1)
	[[ $out == *HOME=/workspace* ]] || fail "shell did not run env: $out" || return 1
	[[ $out != *"$secret"* ]] || fail "secret in shell" || return 1
	# only what --env gives
	expect_eq "--env" "$(vmux exec iso --env "K=$secret" -- sh -c 'echo $K')" "$secret"
}

t_sessions_cannot_see_each_other() {
	local cid out
	need_session iso2
	vmux exec iso -- sh -c 'echo mine > /workspace/secret && sync' || return 1
	# (each look must have run: an exec that failed would see nothing)
	out=$(vmux exec iso2 -- sh -c 'cat /workspace/secret 2>&1; ls /workspace; echo looked') ||
		fail "the look in iso2 did not run" || return 1
	[[ $out == *looked* && $out != *mine* ]] || fail "iso2 sees iso's workspace: $out" || return 1
	# vsock from one guest to the other's agent goes nowhere
	cid=$(session_field iso cid)
	out=$(vmux exec iso2 -- sh -c "echo '{\"action\":\"ping\"}' | timeout 5 /vmux/bin/vmux-nc $cid 5005; echo tried" 2>&1)
	[[ $out == *tried* && $out != *version* ]] || fail "iso2 reached iso's agent over vsock: $out"
}

t_state_files_are_private() {
	local dir bad
	dir=$(session_field iso dir)
	expect_eq "session dir" "$(stat -c %a "$dir")" 700 || return 1
	bad=$(find "$dir" -type f -perm /077 -printf '%m %p\n')
	[[ -z $bad ]] || fail "readable by others: $bad" || return 1
	bad=$(find "$dir" -type s -perm /077 -printf '%m %p\n')
	[[ -z $bad ]] || fail "sockets open to others: $bad"
}

t_ttl_stops_the_session() {
	need_session ttl --ttl 6
	expect_eq ttl "$(session_field ttl ttl_s)" 6 || return 1
	wait_for 60 bash -c "[[ \$('$VMUX' ls --json | jq -r '.[] | select(.name==\"ttl\") | .stopped_by') == ttl ]]" ||
		fail "not stopped: $(session_field ttl state)" || return 1
	expect_eq state "$(session_field ttl state)" stopped || return 1
	expect_match table "$(vmux ls)" 'ttl +stopped .*by ttl' || return 1
	expect_status 2 vmux new bad --ttl 5x 2>/dev/null
}

t_idle_timeout_waits_for_activity() {
	local idle
	need_session idle --idle-timeout 5
	# a command running for longer than the timeout keeps it alive
	vmux exec idle -- sleep 9 || return 1
	expect_eq "alive after a long command" "$(session_field idle state)" running || return 1
	# idle counts from the command's end, not from its request
	idle=$(vmux ping idle --json | jq .idle_seconds)
	awk -v i="$idle" 'BEGIN { exit !(i < 3) }' || fail "idle $idle s just after a 9 s command" || return 1
	wait_for 60 bash -c "[[ \$('$VMUX' ls --json | jq -r '.[] | select(.name==\"idle\") | .stopped_by') == idle-timeout ]]" ||
		fail "not stopped: $(session_field idle state)" || return 1
	expect_eq state "$(session_field idle state)" stopped
}

t_run_reuses_by_name_and_refuses_changes() {
	local out
	vmux run --name re -- sh -c 'echo kept > f' 2>/dev/null || return 1
	# a stopped session of that name is started and used again
	expect_eq reuse "$(vmux run --name re -- cat f 2>/dev/null)" kept || return 1
	expect_eq "stopped again" "$(session_field re state)" stopped || return 1
	# a running one is used and left running
	vmux start re >/dev/null || return 1
	vmux run --name re -- true || return 1
	expect_eq "left running" "$(session_field re state)" running || return 1
	# asking for other limits is a conflict naming the field, no restart
	local q
	q=$(session_field re pids.qemu)
	out=$(vmux run --name re --cpus 2 -- true 2>&1)
	[[ $? -eq 125 ]] && expect_match cpus "$out" "conflict: session 're' exists with cpus 1" || return 1
	out=$(vmux run --name re --profile network_basic -- true 2>&1)
	[[ $? -eq 125 ]] && expect_match profile "$out" "exists with profile default" || return 1
	expect_eq "same VM" "$(session_field re pids.qemu)" "$q" || return 1
	vmux rm re
}

# A week of work made by `new` survives a hurried `run --name` with a
# timeout or --rm: only a session the run created is removed.
t_run_never_removes_an_existing_session() {
	local j rc out
	need_session week
	vmux exec week -- sh -c 'echo work > /workspace/w && sync' || return 1
	j=$(vmux run --name week --timeout 2 --json -- sleep 30 2>/dev/null)
	rc=$?
	expect_eq "exit status" "$rc" 124 || return 1
	expect_eq status "$(jq -r .status <<<"$j")" TIMED_OUT || return 1
	expect_eq removed "$(jq -r .removed <<<"$j")" false || return 1
	expect_eq created "$(jq -r .created <<<"$j")" false || return 1
	expect_eq "still running" "$(session_field week state)" running || return 1
	out=$(vmux run --rm --name week -- cat /workspace/w 2>"$TMP/err") || return 1
	expect_eq "work kept" "$out" work || return 1
	expect_match notice "$(cat "$TMP/err")" "existed before this run: kept" || return 1
	expect_eq "kept after --rm" "$(session_field week state)" running || return 1
	# stopped before: started for the command, stopped again, not removed
	vmux stop week >/dev/null || return 1
	vmux run --name week --timeout 2 -- sleep 30 2>"$TMP/err"
	expect_eq "timeout status" $? 124 || return 1
	expect_match notice "$(cat "$TMP/err")" "existed before this run and is kept" || return 1
	expect_eq "stopped as it was" "$(session_field week state)" stopped || return 1
	vmux start week >/dev/null || return 1
	expect_eq "workspace intact" "$(vmux exec week -- cat /workspace/w)" work || return 1
	vmux rm -f week
}

check "run: status passed on, session stopped and startable" t_run_status_and_stop
check "run --name: reuses the session, refuses changed limits by name" t_run_reuses_by_name_and_refuses_changes
check "run --rm --json: COMPLETED, output, removed" t_run_rm_json
check "run --timeout/--rm never remove a session made before the run" t_run_never_removes_an_existing_session
check "run --timeout: TIMED_OUT, exit_code null, session removed" t_run_timeout_is_timed_out
check "run: bad flags exit 2 and leave nothing" t_run_bad_flags
check "the host's environment never enters the guest" t_host_env_never_enters_the_guest
check "sessions see neither each other's workspace nor agent (vsock)" t_sessions_cannot_see_each_other
check "state files and sockets are private (0700/0600)" t_state_files_are_private
check "--ttl stops the session by itself; ls says so" t_ttl_stops_the_session
check "--idle-timeout: not while a command runs, then stopped" t_idle_timeout_waits_for_activity
