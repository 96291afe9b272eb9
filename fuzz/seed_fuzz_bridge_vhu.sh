#!/bin/sh
# seed_fuzz_bridge_vhu.sh DIR: a QEMU 7.2 style vhost-user session for
# fuzz_bridge_vhu: realize, DRIVER_OK with one 64 KiB region and two rings
# of 16, then a save's dirty log set-up, a stop and RESET_OWNER.
set -eu
dir=$1
mkdir -p "$dir"
f=$dir/session
: >"$f"

le() { # le BYTES VALUE
	n=$1 v=$2 out=""
	while [ "$n" -gt 0 ]; do
		out="$out\\$(printf %03o $((v & 255)))"
		v=$((v >> 8)) n=$((n - 1))
	done
	printf '%s' "$out"
}
msg() { # msg REQUEST FLAGS SIZE PAYLOAD-ESCAPES
	printf "$(le 4 $1)$(le 4 $2)$(le 4 $3)$4" >>"$f"
}
UVA=$((0x7f0000000000))

msg 1 1 0 ""                                  # GET_FEATURES
msg 15 1 0 ""                                 # GET_PROTOCOL_FEATURES
msg 16 1 8 "$(le 8 $((1 | 2 | 8 | 512)))"     # SET_PROTOCOL_FEATURES
msg 17 1 0 ""                                 # GET_QUEUE_NUM
msg 3 1 0 ""                                  # SET_OWNER
msg 24 1 20 "$(le 4 0)$(le 4 8)$(le 4 0)$(le 8 0)" # GET_CONFIG
msg 2 1 8 "$(le 8 $((1 << 30)))"              # SET_FEATURES (legacy)
msg 5 9 40 "$(le 4 1)$(le 4 0)$(le 8 0)$(le 8 65536)$(le 8 $UVA)$(le 8 0)"
for q in 0 1; do
	b=$((UVA + q * 4096))
	msg 8 1 8 "$(le 4 $q)$(le 4 16)"      # SET_VRING_NUM
	msg 10 1 8 "$(le 4 $q)$(le 4 0)"      # SET_VRING_BASE
	msg 9 1 40 "$(le 4 $q)$(le 4 0)$(le 8 $b)$(le 8 $((b + 512)))$(le 8 $((b + 256)))$(le 8 0)"
	msg 12 1 8 "$(le 8 $q)"               # SET_VRING_KICK
	msg 13 1 8 "$(le 8 $q)"               # SET_VRING_CALL
	msg 18 9 8 "$(le 4 $q)$(le 4 1)"      # SET_VRING_ENABLE
done
msg 6 1 16 "$(le 8 4096)$(le 8 0)"            # SET_LOG_BASE (a save)
msg 7 1 0 ""                                  # SET_LOG_FD
msg 2 1 8 "$(le 8 $(((1 << 30) | (1 << 26))))" # SET_FEATURES + LOG_ALL
msg 11 1 8 "$(le 4 0)$(le 4 0)"               # GET_VRING_BASE
msg 11 1 8 "$(le 4 1)$(le 4 0)"
msg 4 1 0 ""                                  # RESET_OWNER
