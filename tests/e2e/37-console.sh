#!/usr/bin/env bash
# 37-console: a guest debugged without its agent, on real guests. The
# serial console (vmux console, and the TUI's prefix C): the boot replayed
# on attach, a shell typed into when the guest has no agent (new --no-agent
# --append rdinit=/bin/sh), one keyboard (a second writer is refused, a read-only
# watcher sees everything and types nothing), a keeper that shrugs off a
# reader speaking nonsense, and a stopped session's console refused. Boot
# controls (and the TUI's console pane): --append for one boot or kept with --persist, vmux.* words and
# flag mistakes refused before anything is made, --gdb --paused (gdb reads
# the CPU at the reset vector; detaching lets the guest boot on).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../tui/tmux.sh"
tui_trap

# cs-1 has the agent; cs-2 boots busybox's sh as its init: no agent at all
"$VMUX" new cs-1 --memory 128 --append 'cstest=one' >"$TMP/new1.out" 2>&1 &
p1=$!
need_session cs-2 --memory 128 --no-agent --append 'rdinit=/bin/sh'
wait "$p1" || { echo "FAIL boot cs-1: $(cat "$TMP/new1.out")"; exit 1; }
console_sock=$(session_field cs-2 dir)/console.sock

t_boot_replayed() {
	# attached after the boot, the console still shows it from the start
	tm new-session -d -s w1 -x 100 -y 30 "$VMUX console -r cs-1; sleep 60"
	wait_on w1 'console of cs-1, read-only; detach with Ctrl-]' 10 || return 1
	wait_on w1 '^vmux-init: start' 10 || return 1
	wait_on w1 '^vmux-init: agent started' 10 || return 1
	tm send-keys -t w1 C-]
	wait_on w1 'detached from the console of cs-1' 10 || return 1
}

t_no_agent_shell() {
	local out
	expect_eq "agent in ls --json" "$(session_field cs-2 agent)" false || return 1
	expect_match "ls says how in" "$(vmux ls)" 'cs-2 +running .*no agent \(--no-agent\): vmux console' || return 1
	out=$(vmux exec cs-2 -- true 2>&1)
	expect_eq "exec status" $? 125 || return 1
	expect_match "exec says why" "$out" "runs without the guest agent \(--no-agent\): use vmux console cs-2" || return 1
	tm new-session -d -s w2 -x 100 -y 30 "$VMUX console cs-2; sleep 60"
	wait_on w2 'console of cs-2; detach with' 10 || return 1
	wait_on w2 '^/ #' 30 || return 1
	type_line 'echo sum-$((6*7))' w2
	wait_on w2 '^sum-42' 30 || return 1
}

t_one_keyboard() {
	local out
	# w2 holds the keyboard: a second writer is told so and exits
	out=$(vmux console cs-2 </dev/null 2>&1)
	expect_eq "second writer status" $? 125 || return 1
	expect_match "second writer" "$out" "someone else is typing on the console of 'cs-2'.*--read-only" || return 1
	# a watcher gets the ring (sum-42 was typed before it came) ...
	tm new-session -d -s w3 -x 100 -y 30 "$VMUX console --read-only cs-2; sleep 60"
	wait_on w3 '^sum-42' 10 || return 1
	# ... and what it types goes nowhere: w2's next line is seen by both,
	# the watcher's never ran
	type_line 'echo ro-$((1+1))' w3
	type_line 'echo rw-$((2+2))' w2
	wait_on w2 '^rw-4' 30 || return 1
	wait_on w3 '^rw-4' 10 || return 1
	if screen w2 | grep -q '^ro-2'; then fail "the watcher's line ran"; fi
}

t_keeper_shrugs_off_nonsense() {
	# a reader that speaks nonsense is dropped; the keeper serves on
	printf 'GET / HTTP/1.0\r\n\r\n' | socat -t 2 - UNIX-CONNECT:"$console_sock" >"$TMP/junk.out" 2>&1
	expect_eq "nothing for nonsense" "$(cat "$TMP/junk.out")" "" || return 1
	head -c 100000 /dev/urandom | socat -t 2 - UNIX-CONNECT:"$console_sock" >/dev/null 2>&1
	type_line 'echo still-$((3*3))' w2
	wait_on w2 '^still-9' 30 || return 1
	wait_on w3 '^still-9' 10 || return 1
}

t_silent_readers_dropped() {
	local i
	# 64 connections that never say hello take every slot, for 5 s only
	for i in $(seq 64); do
		sleep 30 | socat - UNIX-CONNECT:"$console_sock" >/dev/null 2>&1 &
		bg_track $!
	done
	wait_for 25 sh -c "'$VMUX' console -r cs-2 </dev/null >/dev/null 2>&1" ||
		fail "the silent connections kept the console from its readers"
}

t_unread_keys_never_hang() {
	local rc
	# nothing reads cs-1's ttyS0: the keys fill the queue, the end of input
	# still detaches (at most 5 s later) and nothing hangs
	head -c 400000 /dev/zero | timeout 60 "$VMUX" console cs-1 >/dev/null 2>"$TMP/unread.err"
	rc=$?
	expect_eq "status ($(tr '\n' ' ' <"$TMP/unread.err"))" $rc 0 || return 1
}

t_tui_console() {
	# the keyboard is free once the terminals above detach
	tm send-keys -t w2 C-]
	tm send-keys -t w3 C-]
	wait_on w2 'detached from the console of cs-2' 10 || return 1
	tm new-session -d -s tui -x 100 -y 30 "$VMUX tui cs-2"
	wait_on tui 'SESSIONS' 20 || return 1
	tm send-keys -t tui C-b C
	wait_on tui 'cs-2:\[console\] live' 20 || return 1
	wait_on tui '│sum-42' 10 || return 1 # the ring: typed before it came
	type_line 'echo tui-$((5*5))' tui
	wait_on tui '│tui-25' 30 || return 1
	tm send-keys -t tui C-b C
	wait_on tui '^ cs-2 ' 10 || return 1
	tm send-keys -t tui C-b d
}

t_append_for_one_boot() {
	local out
	expect_match "this boot" "$(vmux exec cs-1 -- cat /proc/cmdline)" ' cstest=one( |$)' || return 1
	expect_eq "not kept" "$(session_field cs-1 append)" null || return 1
	vmux restart cs-1 >/dev/null || return 1
	out=$(vmux exec cs-1 -- cat /proc/cmdline)
	[[ $out == *cstest* ]] && fail "--append outlived its boot: $out"
	vmux restart cs-1 --append 'cstest=two' --persist >/dev/null || return 1
	vmux restart cs-1 >/dev/null || return 1
	expect_match "kept" "$(vmux exec cs-1 -- cat /proc/cmdline)" ' cstest=two( |$)' || return 1
	expect_eq "kept in ls" "$(session_field cs-1 append)" cstest=two || return 1
	vmux stop cs-1 >/dev/null || return 1
	vmux start cs-1 --append '' --persist >/dev/null || return 1
	expect_eq "forgotten" "$(session_field cs-1 append)" null || return 1
}

t_boot_flags_refused() {
	local out
	out=$(vmux new cs-x --append 'vmux.ro=0' 2>&1)
	expect_eq "vmux.* status" $? 2 || return 1
	expect_match "vmux.* why" "$out" "'vmux.ro=0': vmux.\* words are vmux's own" || return 1
	out=$(vmux new cs-x --append $'a\tb' 2>&1)
	expect_eq "control byte status" $? 2 || return 1
	out=$(vmux new cs-x --persist 2>&1)
	expect_eq "--persist alone" $? 2 || return 1
	out=$(vmux new cs-x --paused 2>&1)
	expect_eq "--paused alone" $? 2 || return 1
	expect_match "--paused why" "$out" 'waits for gdb: add --gdb' || return 1
	out=$(vmux run --no-agent -- true 2>&1)
	expect_eq "run --no-agent" $? 2 || return 1
	[[ -e $VMUX_HOME/sessions/cs-x ]] && fail "a refused new left cs-x"
	return 0
}

t_gdb_paused() {
	local cmd out
	out=$(vmux gdb cs-1 2>&1)
	expect_eq "no stub status" $? 125 || return 1
	expect_match "no stub" "$out" "has no gdbstub: boot it with --gdb" || return 1
	vmux new cs-3 --memory 128 --gdb --paused >/dev/null || return 1
	cmd=$(vmux gdb cs-3) || return 1
	expect_match "gdb command" "$cmd" "^gdb -ex 'target remote /.*/gdb.sock' '/.*vmlinux'$" || return 1
	# the CPU has not run an instruction: it sits at the reset vector
	out=$(eval "${cmd/#gdb -ex/gdb -nx -batch -ex} -ex 'info registers rip' -ex detach" 2>&1)
	expect_match "reset vector" "$out" 'rip +0xfff0 ' || return 1
	# gdb detached: the guest boots on and its agent answers
	wait_for 60 vmux exec cs-3 -- true || fail "cs-3 never booted after gdb detached"
}

# boots NAME: how many boots NAME's console log holds.
boots() { vmux logs "$1" | grep -ac 'vmux-init: start'; }
# agent_serves NAME N: boot N of NAME (not an earlier one, whose lines are
# all there is while the new boot has printed nothing) has set up, so its
# agent serves: vmux-init opens the agent's gate just before it says so.
agent_serves() {
	vmux logs "$1" | awk -v n="$2" '/vmux-init: start/ { k++ }
	    k == n && /vmux-init: setup done/ { ok = 1 } END { exit !ok }'
}

t_no_agent_is_per_boot() {
	local out
	# --no-agent skips the boot's wait only: the agent still powers off
	local n
	n=$(boots cs-3)
	vmux restart cs-3 --no-agent >/dev/null || return 1
	out=$(vmux exec cs-3 -- true 2>&1)
	expect_eq "exec this boot" $? 125 || return 1
	# (a stop while it still boots has no agent to ask yet)
	wait_for 60 agent_serves cs-3 $((n + 1)) ||
		fail "cs-3's agent never started: $(vmux logs cs-3 | tail -n 8)" || return 1
	expect_status 0 vmux stop cs-3 || return 1
	expect_match "clean power-off" "$(vmux logs cs-3 | tail -n 5)" 'vmux-init: workspace unmounted' || return 1
	vmux start cs-3 >/dev/null || return 1
	expect_eq "the next boot waits for the agent" "$(session_field cs-3 agent)" true || return 1
	vmux exec cs-3 -- true || fail "exec after a plain start"
}

t_stopped_console() {
	local out
	vmux stop cs-2 >/dev/null 2>&1
	tm has-session -t w2 2>/dev/null && wait_on w2 'the console of cs-2 ended: the VM stopped' 10
	out=$(vmux console cs-2 </dev/null 2>&1)
	expect_eq "stopped status" $? 125 || return 1
	expect_match "stopped" "$out" "session 'cs-2' has no console keeper running \(it is stopped\)" || return 1
	[[ -z $(pgrep -f -- "vmux-console .*$VMUX_HOME/sessions/cs-2/") ]] || fail "cs-2's keeper outlived it"
}

check "the console replays the boot to a late reader, Ctrl-] detaches" t_boot_replayed
check "--no-agent: exec says to use the console, a shell is typed into there" t_no_agent_shell
check "one keyboard: a second writer refused, a watcher sees all and types nothing" t_one_keyboard
check "the keeper drops a reader speaking nonsense and serves on" t_keeper_shrugs_off_nonsense
check "readers that never say hello are dropped after 5 s" t_silent_readers_dropped
check "keys the guest never reads do not hang vmux console" t_unread_keys_never_hang
check "the TUI: prefix C shows the console (typed into), again goes back" t_tui_console
check "--append for one boot; --persist keeps it; '' --persist forgets" t_append_for_one_boot
check "vmux.* words, control bytes and flag mistakes refused, nothing made" t_boot_flags_refused
check "--gdb --paused: gdb sees the reset vector; detached, the guest boots" t_gdb_paused
check "--no-agent is for one boot; stop still powers off cleanly" t_no_agent_is_per_boot
check "a stopped session's console is refused and its keeper gone" t_stopped_console
