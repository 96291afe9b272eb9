#!/usr/bin/env bash
# 27-helpers: a session's helper processes killed under it cost a second,
# not the session (vmux's own QEMU; Debian's ends the session, as it must).
# With `vmux shell` attached in tmux, a background process and a file in
# /tmp: the bridge is SIGKILLed (the watcher starts a new one, vmux's QEMU
# reconnects, the shell re-attaches by itself and types on), then the
# console keeper (a new one takes QEMU's FIFOs over: the console's root
# shell answers); nothing of the guest is lost and vmux ls says running.
# Also: Debian's QEMU runs the same first steps (new, exec, shell, rm)
# and vmux status says it cannot save a session's state.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../tui/tmux.sh"
tui_trap

need_session hk --memory 192

# guest_intact: the file and the background process made at the start
guest_intact() {
	local out
	out=$(vmux exec hk -- sh -c 'cat /tmp/mark; kill -0 $(cat /tmp/bg) && echo bg-alive' 2>&1)
	[[ $out == *kept* && $out == *bg-alive* ]] || fail "guest state lost: $out"
}
# ms_since T0: milliseconds since date +%s%N said T0
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }
keeper_pid() { jq .pids.console "$(session_field hk dir)/session.json"; }
answers() { [[ $(vmux exec hk -- echo up 2>/dev/null) == up ]]; }

t_setup() {
	vmux exec hk -- sh -c 'echo kept >/tmp/mark; sleep 1000 </dev/null >/dev/null 2>&1 & echo $! >/tmp/bg' ||
		return 1
	tm new-session -d -s sh -x 100 -y 30 "$VMUX shell hk; sleep 60"
	wait_on sh 'shell shell-1 in hk' 20 || return 1
	type_line 'echo one-$((40+2))' sh
	wait_on sh '^one-42' 20
}

t_bridge_killed() {
	local old new t0
	old=$(session_field hk pids.bridge)
	kill -9 "$old"
	t0=$(date +%s%N)
	wait_for 10 answers || fail "the session never answered again" || return 1
	echo "figure: bridge killed: the session answers again after $(ms_since "$t0") ms"
	new=$(session_field hk pids.bridge)
	[[ $new != "$old" ]] && kill -0 "$new" || fail "no new bridge recorded: $new" || return 1
	expect_match "ls" "$(vmux ls)" 'hk +running' || return 1
	guest_intact || return 1
	wait_on sh 'attached to shell shell-1 again' 20 || return 1
	type_line 'echo two-$((50+1))' sh
	wait_on sh '^two-51' 20 || return 1
	grep -q 'the bridge ended; restarted' "$(session_field hk dir)/bridge.log" ||
		fail "the bridge log does not say it was restarted"
}

t_console_keeper_killed() {
	local old new
	old=$(keeper_pid)
	kill -9 "$old"
	wait_for 10 bash -c "[[ \$(jq .pids.console '$(session_field hk dir)/session.json') != $old ]]" ||
		fail "no new console keeper recorded" || return 1
	new=$(keeper_pid)
	kill -0 "$new" || fail "the new keeper $new is not running" || return 1
	# QEMU's FIFOs, taken over: keys reach the guest's root shell and its
	# answer comes back
	tm new-session -d -s con -x 100 -y 30 "$VMUX console hk; sleep 60"
	wait_on con 'console of hk; detach with' 20 || return 1
	tm send-keys -t con Enter
	wait_on con '# *$' 30 || return 1
	type_line 'echo con-$((6*7))' con
	wait_on con '^con-42' 30 || return 1
	tm send-keys -t con C-]
	guest_intact || return 1
	type_line 'echo three-$((60+2))' sh
	wait_on sh '^three-62' 20
}

# Debian's QEMU, chosen with VMUX_QEMU: the first steps work as on vmux's
# own, and status says what it cannot do.
t_debian_qemu_smoke() {
	local q st
	q=$(command -v qemu-system-x86_64) || fail "no qemu-system-x86_64" || return 1
	VMUX_QEMU=$q vmux new dq --memory 128 >/dev/null || fail "new on Debian's QEMU failed" || return 1
	expect_eq "exec" "$(vmux exec dq -- echo deb-$((3 * 3)))" deb-9 || return 1
	expect_match "runs Debian's QEMU" "$(ps -o args= -p "$(session_field dq pids.qemu)")" "^$q " || return 1
	expect_eq "shell" "$(printf 'echo sh-$((2+2))\nexit\n' | vmux shell dq 2>/dev/null | tr -d '\r' | grep -x 'sh-4')" sh-4 || return 1
	st=$(VMUX_QEMU=$q vmux status --json)
	expect_eq "status: build" "$(jq -r .backend.build <<<"$st")" other || return 1
	expect_eq "status: saves" "$(jq -r .backend.saves_state <<<"$st")" false || return 1
	expect_match "status says why" "$(VMUX_QEMU=$q vmux status)" 'cannot save a session.s state: not vmux.s own QEMU' || return 1
	expect_eq "own by default" "$(vmux status --json | jq -r '.backend.build + " " + (.backend.saves_state | tostring)')" "vmux true" || return 1
	vmux rm -f dq >/dev/null || fail "rm failed"
}

check "a shell, a process and a file in the guest" t_setup
check "bridge SIGKILLed: restarted, the shell re-attaches, nothing lost" t_bridge_killed
check "console keeper SIGKILLed: a new one takes QEMU's console over" t_console_keeper_killed
check "Debian's QEMU (VMUX_QEMU): new, exec, shell, status, rm" t_debian_qemu_smoke
