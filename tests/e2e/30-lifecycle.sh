#!/usr/bin/env bash
# 30-lifecycle: sessions' records and errors: ls fields, duplicate and unknown
# names, bad flags, missing QEMU or guest image, drivers for the devices a
# VM has, crash, rm leaving nothing.
source "$(dirname "$0")/lib.sh"
need_session lc

no_session_dir() { [[ ! -e $VMUX_HOME/sessions/$1 ]]; }

t_ls_json() {
	local j
	j=$(vmux ls --json | jq '.[] | select(.name == "lc")') || return 1
	expect_eq state "$(jq -r .state <<<"$j")" running || return 1
	expect_match accel "$(jq -r .accel <<<"$j")" '^(tcg|kvm)$' || return 1
	expect_match cid "$(jq -r .cid <<<"$j")" '^[0-9]+$' || return 1
	(($(jq -r .cid <<<"$j") >= 3)) || fail "cid < 3" || return 1
	test -S "$(jq -r .vsock_uds <<<"$j")" || fail "vsock_uds is not a socket" || return 1
	kill -0 "$(jq -r .pids.qemu <<<"$j")" || fail "qemu pid not alive" || return 1
	kill -0 "$(jq -r .pids.bridge <<<"$j")" || fail "bridge pid not alive" || return 1
	expect_match created "$(jq -r .created <<<"$j")" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T'
}
t_ls_table() {
	expect_match table "$(vmux ls)" 'lc +running'
}
t_accel_visible_tcg_here() {
	# These hosts are kvm_pvm: TCG must be chosen unless overridden.
	[[ -d /sys/module/kvm_pvm ]] || return 0
	expect_eq accel "$(session_field lc accel)" tcg
}
t_duplicate_name() {
	local err rc
	err=$(vmux new lc 2>&1)
	rc=$?
	((rc != 0)) || fail "duplicate accepted" || return 1
	expect_match error "$err" 'already exists' || return 1
	expect_eq lines "$(wc -l <<<"$err")" 1 || return 1
	expect_eq "original untouched" "$(session_field lc state)" running
}
t_unknown_session() {
	local err
	err=$(vmux exec nosuch -- true 2>&1)
	[[ $? -ne 0 ]] || return 1
	expect_match error "$err" 'nosuch' || return 1
	err=$(vmux rm nosuch 2>&1)
	[[ $? -ne 0 ]] && expect_match error "$err" 'nosuch'
}
t_bad_flags() {
	expect_status 2 vmux new bf --cpus abc 2>/dev/null || return 1
	expect_status 2 vmux new bf --memory -5 2>/dev/null || return 1
	expect_status 2 vmux new 'bad/name' 2>/dev/null || return 1
	expect_status 2 vmux frobnicate 2>/dev/null || return 1
	no_session_dir bf
}
t_missing_qemu() {
	local err
	# (vmux's own QEMU beside vmux needs no PATH: VMUX_QEMU names none)
	err=$(VMUX_QEMU=no-such-qemu PATH=/var/empty "$VMUX" new nq 2>&1)
	[[ $? -ne 0 ]] || return 1
	expect_match error "$err" 'no-such-qemu not found in PATH.*VMUX_QEMU' || return 1
	no_session_dir nq
}
t_missing_image() {
	local err
	err=$(VMUX_GUEST_DIR=/var/empty "$VMUX" new ni 2>&1)
	[[ $? -ne 0 ]] || return 1
	expect_match error "$err" 'guest|kernel|image' || return 1
	no_session_dir ni
}
# A device QEMU adds works in the guest: an entropy source (virtio 4) on
# cr. (Debian's kernel loads its driver only then: 16-debian-kernel.)
t_extra_device() {
	VMUX_QEMU_EXTRA="-device virtio-rng-device" need_session cr
	vmux exec cr -- test -c /dev/hwrng || fail "cr has no /dev/hwrng" || return 1
	vmux exec lc -- test ! -e /sys/class/misc/hw_random/rng_current ||
		expect_eq "lc's entropy source" "$(vmux exec lc -- cat /sys/class/misc/hw_random/rng_current)" none
}
t_crash_then_rm() {
	[[ -d $VMUX_HOME/sessions/cr ]] || need_session cr
	local q b
	q=$(session_field cr pids.qemu) b=$(session_field cr pids.bridge)
	kill -9 "$q"
	wait_for 15 bash -c "[[ \$($VMUX ls --json | jq -r '.[] | select(.name==\"cr\") | .state') == crashed ]]" ||
		fail "state not crashed after QEMU died" || return 1
	# The bridge notices QEMU is gone and exits by itself.
	wait_for 15 bash -c "! kill -0 $b 2>/dev/null" || fail "bridge outlived QEMU" || return 1
	# several names, one failing: each is said, in --json a result each
	local j
	j=$(vmux rm cr nosuch --json)
	expect_eq status $? 125 || return 1
	expect_eq "cr removed" "$(jq -r '.results[0] | "\(.name) \(.removed)"' <<<"$j")" "cr true" || return 1
	expect_eq "nosuch said" "$(jq -r '.results[1].error' <<<"$j")" "no session named 'nosuch'" || return 1
	no_session_dir cr
}

# Ctrl-C (or SIGTERM) to vmux new while the VM boots stops the boot at
# once and cleans up: status 128+N, no session, no process left; at any
# moment, including the very start. (--cold: a boot to interrupt, not a
# template's resume, over before the signal could come.)
t_interrupt_during_boot() {
	local p rc sig n
	for sig in INT TERM; do
		"$VMUX" new "i$sig" --cold >/dev/null 2>"$TMP/err" &
		p=$!
		wait_for 60 pgrep -f "$VMUX_HOME/sessions/i$sig/console.log" >/dev/null ||
			fail "no QEMU for i$sig" || return 1
		kill -"$sig" "$p"
		wait "$p"
		rc=$?
		n=$(kill -l "$sig")
		expect_eq "$sig status" "$rc" $((128 + n)) || return 1
		expect_match "$sig said" "$(cat "$TMP/err")" "interrupted" || return 1
		no_session_dir "i$sig" || fail "i$sig left a session" || return 1
	done
	# at once, before anything started
	# (once the child is vmux: a signal before bash's exec meets the
	# script's own trap in the child, which may swallow it)
	"$VMUX" new iearly >/dev/null 2>&1 &
	p=$!
	local exe deadline=$((SECONDS + 10))
	exe=$(readlink -f "$VMUX")
	until [[ $(readlink /proc/"$p"/exe 2>/dev/null) == "$exe" ]]; do
		((SECONDS < deadline)) || fail "new never started" || return 1
	done
	kill -TERM "$p"
	wait "$p"
	no_session_dir iearly || fail "iearly left a session" || return 1
	# nothing of theirs runs (lc's processes are the only ones left)
	[[ -z $(pgrep -f "$VMUX_HOME/sessions/i(INT|TERM|early)/") ]] || fail "left running"
}

# Human output of several names: what was done on stdout, each failure on
# stderr (as docker stop/rm).
t_several_names_say_each() {
	local out
	need_session two
	out=$(vmux stop two nosuch 2>"$TMP/err")
	expect_eq status $? 125 || return 1
	expect_eq stdout "$out" "stopped two" || return 1
	expect_match stderr "$(cat "$TMP/err")" "no session named 'nosuch'" || return 1
	out=$(vmux rm two nosuch2 2>"$TMP/err")
	expect_eq status $? 125 || return 1
	expect_eq stdout "$out" "removed two" || return 1
	no_session_dir two
}
t_rm_leaves_nothing() {
	local q b uds
	q=$(session_field lc pids.qemu) b=$(session_field lc pids.bridge)
	uds=$(session_field lc vsock_uds)
	vmux rm lc || return 1
	! kill -0 "$q" 2>/dev/null || fail "qemu $q still alive" || return 1
	! kill -0 "$b" 2>/dev/null || fail "bridge $b still alive" || return 1
	[[ ! -e $uds ]] || fail "socket left: $uds" || return 1
	no_session_dir lc || return 1
	[[ -z $(e2e_leftovers) ]] || fail "left: $(e2e_leftovers)"
}

check "ls --json fields" t_ls_json
check "ls table" t_ls_table
check "TCG chosen on a kvm_pvm host" t_accel_visible_tcg_here
check "duplicate name is one clear error" t_duplicate_name
check "unknown session is a clear error" t_unknown_session
check "bad flags exit 2 and create nothing" t_bad_flags
check "missing QEMU: clear error, nothing left" t_missing_qemu
check "missing guest image: clear error, nothing left" t_missing_image
check "a device QEMU adds works in the guest" t_extra_device
check "crashed VM shows crashed, bridge exits, rm works" t_crash_then_rm
check "stop and rm of several names say each" t_several_names_say_each
check "Ctrl-C or SIGTERM during new stops the boot and cleans up" t_interrupt_during_boot
check "rm leaves no process, socket or state" t_rm_leaves_nothing

# new --foreground: a batch job's body. vmux stays while the VM runs;
# SIGTERM (Slurm's scancel and time limit) powers the guest off cleanly and
# vmux exits 0 with the workspace whole; start --foreground boots it again,
# and a poweroff inside the guest ends vmux too.
t_foreground() {
	local pid rc
	"$VMUX" new fg --foreground >"$TMP/fg.out" 2>"$TMP/fg.err" &
	pid=$!
	bg_track "$pid"
	wait_for 120 grep -qx fg "$TMP/fg.out" || { fail "never booted: $(cat "$TMP/fg.err")"; return 1; }
	kill -0 "$pid" || fail "vmux new --foreground returned while the VM runs" || return 1
	vmux exec fg -- sh -c 'echo kept > /workspace/f && sync' || return 1
	kill -TERM "$pid"
	wait "$pid"
	rc=$?
	expect_eq "exit status after SIGTERM" "$rc" 0
	expect_eq state "$(session_field fg state)" stopped
	grep -q 'SIGTERM: stopping fg' "$TMP/fg.err" || fail "said: $(cat "$TMP/fg.err")"
	"$VMUX" start fg --foreground >"$TMP/fg.out" 2>"$TMP/fg.err" &
	pid=$!
	bg_track "$pid"
	wait_for 120 "$VMUX" exec fg -- true 2>/dev/null || { fail "never started: $(cat "$TMP/fg.err")"; return 1; }
	expect_eq "the workspace after the stop" "$(vmux exec fg -- cat /workspace/f)" kept
	vmux exec fg -- poweroff >/dev/null 2>&1
	wait "$pid"
	expect_eq "exit status after a poweroff" "$?" 0
	expect_status 2 vmux new --count 2 --prefix x --foreground
	vmux rm -f fg >/dev/null
}
check "new --foreground: SIGTERM stops cleanly, start --foreground, poweroff" t_foreground
