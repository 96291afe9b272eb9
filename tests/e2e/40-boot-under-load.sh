#!/usr/bin/env bash
# 40-boot-under-load: 10 consecutive boots with both cores busy; each must
# reach a working agent (new + exec) and be removed cleanly. Guards the
# microvm/TCG TSC-calibration hang described in the guest-boot notes.
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
