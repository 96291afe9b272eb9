#!/usr/bin/env bash
# 32-failures: the paths where things go wrong, each run for real: a boot
# that times out, a broken initrd (the kernel panics), a forced stop of a
# hung VM (QEMU stopped with SIGSTOP: QMP quit unanswered, SIGTERM pending,
# SIGKILL), several `vmux new` at once (CIDs stay unique), and `logs -f`
# following the console live. Each leaves nothing running and no record
# half-made.
source "$(dirname "$0")/lib.sh"

# none_of NAME: no session NAME and no process of it.
none_of() {
	[[ ! -e $VMUX_HOME/sessions/$1 ]] || fail "session $1 left behind" || return 1
	[[ -z $(pgrep -f "$VMUX_HOME/sessions/$1/") ]] || fail "processes of $1 left running"
}

# A guest that boots and never answers, on purpose (not hoping the machine
# is slow): an initramfs whose /init is busybox's init, with no agent; it
# waits at the console for Enter forever.
t_boot_timeout() {
	local out root=$TMP/silent
	mkdir -p "$root/bin"
	cp /bin/busybox "$root/init" && ln -s ../init "$root/bin/sh" || { fail "busybox-static"; return 1; }
	(cd "$root" && find . | cpio -o -H newc --quiet) >"$TMP/silent.initrd" || { fail "cpio"; return 1; }
	out=$(vmux new bt --initrd "$TMP/silent.initrd" --boot-timeout 2 2>&1)
	expect_eq status $? 125 || return 1
	expect_match said "$out" "guest agent of 'bt' did not answer within 2 s" || return 1
	none_of bt
}

t_broken_initrd() {
	local out
	head -c 1M /dev/urandom >"$TMP/junk.initrd"
	out=$(vmux new bi --initrd "$TMP/junk.initrd" --boot-timeout 120 2>&1)
	expect_eq status $? 125 || return 1
	expect_match said "$out" "QEMU exited while booting 'bi'" || return 1
	# the console's last lines say why
	expect_match console "$out" "Initramfs unpacking failed|Kernel panic" || return 1
	none_of bi
}

t_forced_stop_of_a_hung_vm() {
	local q out
	need_session hung
	vmux exec hung -- sh -c 'echo kept > /workspace/k && sync' || return 1
	q=$(session_field hung pids.qemu)
	kill -STOP "$q"
	out=$(vmux stop hung -t 1 2>&1)
	expect_eq status $? 0 || return 1
	# a stopped QEMU's agent cannot even take the request
	expect_match forced "$out" "guest agent of 'hung' did not answer within 3 s \\(the guest still booting, paused or hung\\): QEMU was ended" || return 1
	! kill -0 "$q" 2>/dev/null || fail "QEMU $q still there" || return 1
	expect_eq state "$(session_field hung state)" stopped || return 1
	expect_eq "stopped by" "$(session_field hung stopped_by)" user || return 1
	# what was synced survives; the session starts again
	vmux start hung >/dev/null || return 1
	expect_eq kept "$(vmux exec hung -- cat /workspace/k)" kept || return 1
	vmux rm -f hung && none_of hung
}

t_concurrent_new_unique_cids() {
	local p i cids
	for i in 1 2 3; do
		"$VMUX" new "c$i" >"$TMP/c$i.out" 2>&1 &
		p[$i]=$!
	done
	for i in 1 2 3; do
		wait "${p[$i]}" || fail "c$i: $(cat "$TMP/c$i.out")" || return 1
	done
	cids=$(vmux ls --json | jq -r '.[] | select(.name | test("^c[123]$")) | .cid' | sort -u | wc -l)
	expect_eq "distinct CIDs" "$cids" 3 || return 1
	for i in 1 2 3; do
		expect_eq "c$i answers" "$(vmux exec "c$i" -- echo "c$i")" "c$i" || return 1
	done
	vmux rm -f c1 c2 c3 >/dev/null
}

t_logs_follow() {
	local p
	need_session lf
	"$VMUX" logs lf -f >"$TMP/follow" 2>&1 &
	p=$!
	bg_track "$p"
	vmux exec lf -- sh -c 'echo follow-marker-$((6*7)) > /dev/console' || return 1
	wait_for 20 grep -q follow-marker-42 "$TMP/follow" || fail "not followed: $(tail -n 3 "$TMP/follow")" || return 1
	kill "$p"
	vmux rm -f lf
}

check "a boot that times out: said, nothing left" t_boot_timeout
check "a broken initrd: QEMU's end and the console said, nothing left" t_broken_initrd
check "a hung VM (SIGSTOP): stop ends it and says why, the workspace survives" t_forced_stop_of_a_hung_vm
check "three new at once: distinct CIDs, all answer" t_concurrent_new_unique_cids
check "logs -f follows the console live" t_logs_follow
