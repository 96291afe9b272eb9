#!/usr/bin/env bash
# run-all: alone (it loads both cores itself)
# 40-boot-under-load: 10 consecutive boots with both cores busy; each must
# reach a working agent (new + exec) and be removed cleanly. Guards the
# microvm/TCG TSC-calibration hang described in the guest-boot notes. Then,
# still loaded, one VM serves what users do next: a shell with piped input,
# 20 execs at once, and 16 MiB copied in and out intact.
source "$(dirname "$0")/lib.sh"
BOOTS=${VMUX_LOAD_BOOTS:-10}

for _ in $(nproc 2>/dev/null || echo 2); do
	(while :; do :; done) &
	bg_track $!
done

boot_once() {
	vmux new "ld$1" --boot-timeout 120 || return 1
	expect_eq exec "$(vmux exec "ld$1" -- echo up)" up || return 1
	vmux rm "ld$1"
}
for i in $(seq 1 "$BOOTS"); do
	check "loaded boot $i of $BOOTS" boot_once "$i"
done

vmux new busy --boot-timeout 120 >/dev/null || fail "vmux new busy failed"

t_shell_loaded() {
	local out rc
	out=$(printf 'echo loaded-$((6*7))\nexit 4\n' | vmux shell busy 2>/dev/null)
	rc=$?
	expect_eq status "$rc" 4 || return 1
	[[ $out == *loaded-42* ]] || fail "output: $out"
}

t_execs_at_once_loaded() {
	local i pids=() bad=0
	for i in $(seq 20); do
		vmux exec busy -- echo "n$i" >"$TMP/ex$i" 2>&1 &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do
		wait "${pids[$i]}" || bad=$((bad + 1))
	done
	for i in $(seq 20); do
		[[ $(cat "$TMP/ex$i") == "n$i" ]] ||
			{ bad=$((bad + 1)); echo "exec $i: $(cat "$TMP/ex$i")"; }
	done
	expect_eq failures "$bad" 0
}

t_cp_loaded() {
	head -c $((16 << 20)) /dev/urandom >"$TMP/blob"
	vmux cp "$TMP/blob" busy:/tmp/blob </dev/null || return 1
	vmux cp busy:/tmp/blob "$TMP/back" </dev/null || return 1
	cmp -s "$TMP/blob" "$TMP/back" || fail "the copy came back different"
}

check "loaded: shell with piped input, its status" t_shell_loaded
check "loaded: 20 execs at once" t_execs_at_once_loaded
check "loaded: 16 MiB up and down intact" t_cp_loaded
