#!/usr/bin/env bash
# 38-rescue: a session that no longer boots (its kept kernel arguments make
# init exit: a kernel panic) is read through its console log, opened by
# vmux rescue (read-only first: looking changes nothing), fixed with --rw,
# and booted again with its work intact; an ext4 image file is rescued the
# same way (its fix read back on the host with debugfs); a running session
# and a missing target are refused; while a rescue has a disk open no
# session may take it; leaving the rescue shell removes the rescue VM and
# boots nothing.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../tui/tmux.sh"
tui_trap

need_session rb --memory 128
vmux exec rb -- sh -c 'echo precious > /workspace/keep' || { echo "FAIL write keep"; exit 1; }

t_running_refused() {
	local out
	out=$(vmux rescue rb </dev/null 2>&1)
	expect_eq "status" $? 125 || return 1
	expect_match "why" "$out" "session 'rb' is running: stop it first \(vmux stop rb\)" || return 1
	out=$(vmux rescue no-such-thing </dev/null 2>&1)
	expect_eq "missing status" $? 125 || return 1
	expect_match "missing" "$out" "no session or disk image 'no-such-thing'" || return 1
}

t_broken_boot_seen() {
	# kept arguments that make init exit: every boot from now on panics
	vmux restart rb --append 'rdinit=/bin/false' --persist --no-agent >/dev/null || return 1
	wait_for 60 sh -c "[ \"\$($VMUX ls --json | jq -r '.[] | select(.name == \"rb\") | .state')\" = crashed ]" ||
		fail "rb did not crash: $(vmux ls)"
	expect_match "console log" "$(vmux logs rb)" 'Kernel panic - not syncing: Attempted to kill init' || return 1
}

t_rescue_read_only() {
	local out
	out=$(printf 'cat /sysroot/keep\npwd\ntouch /sysroot/x\n' | vmux rescue rb 2>&1)
	expect_match "workspace at /sysroot" "$out" $'precious\r?\n/sysroot' || return 1
	expect_match "read-only" "$out" "touch: /sysroot/x: Read-only file system" || return 1
	expect_match "said" "$out" "rescue of rb ended; nothing else booted" || return 1
	# nothing booted, the rescue VM gone
	expect_eq "sessions after" "$(vmux ls --json | jq -c '[.[] | [.name, .state]]')" '[["rb","crashed"]]' || return 1
}

t_fix_and_boot() {
	printf 'echo fixed > /sysroot/fixed\n' | vmux rescue rb --rw >/dev/null 2>&1 || return 1
	vmux start rb --append '' --persist >/dev/null || return 1
	expect_eq "the fix" "$(vmux exec rb -- cat /workspace/fixed)" fixed || return 1
	expect_eq "the work" "$(vmux exec rb -- cat /workspace/keep)" precious || return 1
}

t_disk_image() {
	local img=$TMP/my\ root.img out
	mkdir -p "$TMP/tree/etc" && echo broken >"$TMP/tree/etc/config"
	mkfs.ext4 -q -F -d "$TMP/tree" "$img" 32M || return 1
	out=$(printf 'cat /sysroot/etc/config\n' | vmux rescue "$img" 2>&1)
	expect_match "image read" "$out" 'broken' || return 1
	expect_match "named after it" "$out" 'as session rescue-my_root.img' || return 1
	printf 'echo mended > /sysroot/etc/config\n' | vmux rescue "$img" --rw >/dev/null 2>&1 || return 1
	expect_eq "fixed on the host" "$(debugfs -R 'cat /etc/config' "$img" 2>/dev/null)" mended || return 1
}

t_disk_in_use() {
	local img=$TMP/my\ root.img out
	tm new-session -d -s r1 -x 100 -y 30 "$VMUX rescue '$img'; sleep 60"
	wait_on r1 '^/sysroot #' 60 || return 1
	out=$(vmux new taker --memory 128 --workspace "$img" 2>&1)
	expect_eq "taker status" $? 125 || return 1
	expect_match "taker" "$out" "is in use by session 'rescue-my_root.img'" || return 1
	type_line 'exit' r1
	wait_on r1 'rescue of .*my root.img ended; nothing else booted' 60 || return 1
	[[ -e $VMUX_HOME/sessions/taker ]] && fail "a refused new left taker"
	return 0
}

t_killed_rescue() {
	local out
	vmux stop rb >/dev/null || return 1
	tm new-session -d -s r2 -x 100 -y 30 "$VMUX rescue rb --rw; sleep 60"
	wait_on r2 '^/sysroot #' 60 || return 1
	pkill -9 -f -- "$VMUX rescue rb --rw" || return 1
	vmux stop rescue-rb >/dev/null 2>&1
	out=$(vmux start rescue-rb 2>&1)
	expect_eq "leftover start status" $? 125 || return 1
	expect_match "leftover" "$out" "'rescue-rb' was a vmux rescue of .*: remove it \(vmux rm rescue-rb\)" || return 1
	out=$(vmux start rb 2>&1)
	expect_eq "rb start status" $? 125 || return 1
	expect_match "rb's disk" "$out" "is in use by session 'rescue-rb'" || return 1
	vmux rm -f rescue-rb >/dev/null || return 1
	vmux start rb >/dev/null || return 1
	expect_eq "the work" "$(vmux exec rb -- cat /workspace/keep)" precious || return 1
}

check "a running session or a missing target is refused" t_running_refused
check "a boot that panics: the console log says why" t_broken_boot_seen
check "rescue: the workspace read-only at /sysroot, then nothing booted" t_rescue_read_only
check "rescue --rw fixes it; the session boots with its work" t_fix_and_boot
check "an ext4 image file rescued: read, fixed, read back on the host" t_disk_image
check "a disk open in a rescue is taken by no session" t_disk_in_use
check "a killed rescue's leftover is never started; it holds the disk until removed" t_killed_rescue
