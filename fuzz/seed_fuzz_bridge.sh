#!/bin/sh
# seed_fuzz_bridge.sh DIR: seed inputs for fuzz_bridge (see its layout):
# 64 KiB of guest memory with a tx ring of 16 at offset 0 (avail 0x800),
# an rx ring of 16 at 0x1000 (avail 0x1800) and packets from 0x2000.
set -eu
dir=$1
mkdir -p "$dir"

# Little-endian fields as printf escapes.
le() { # le BYTES VALUE
	n=$1 v=$2 out=""
	while [ "$n" -gt 0 ]; do
		out="$out\\$(printf %03o $((v & 255)))"
		v=$((v >> 8)) n=$((n - 1))
	done
	printf '%s' "$out"
}
put() { # put FILE OFFSET ESCAPES
	printf "$3" | dd of="$1" bs=1 seek="$(($2))" conv=notrunc status=none
}
desc() { # desc FILE RINGOFF INDEX GPA LEN FLAGS NEXT
	put "$1" $(($2 + 16 * $3)) "$(le 8 $4)$(le 4 $5)$(le 2 $6)$(le 2 $7)"
}
pkt() { # pkt FILE OFF OP SRCPORT DSTPORT FLAGS PAYLOAD
	put "$1" "$2" "$(le 8 3)$(le 8 2)$(le 4 $4)$(le 4 $5)$(le 4 ${#7})$(le 2 1)$(le 2 $3)$(le 4 $6)$(le 4 65536)$(le 4 0)$7"
}
avail() { # avail FILE AVAILOFF IDX HEADS...
	f=$1 off=$2 idx=$3
	shift 3
	put "$f" "$off" "$(le 2 0)$(le 2 $idx)"
	i=0
	for h in "$@"; do put "$f" $((off + 4 + 2 * i)) "$(le 2 $h)"; i=$((i + 1)); done
}
base() { # base FILE: zeros, 16-entry rings, control bytes, rx buffers
	head -c 65536 /dev/zero >"$1"
	# ring sizes 16/16; client: 192 bytes readable, room for 3200
	put "$1" 0 "$(le 1 0x44)$(le 1 0)$(le 1 0)$(le 1 3)$(le 1 0)$(le 1 100)$(le 1 1)$(le 1 50)"
	for k in 1 2 3 4; do
		desc "$1" 0x1000 "$k" $((0x10000 + 0x3000 + k * 0x1100)) 4140 2 0
	done
	avail "$1" 0x1800 4 1 2 3 4
}

# The guest accepts the host's CONNECT and sends data, then closes.
f=$dir/host-connect
base "$f"
pkt "$f" 0x2000 2 5005 1073741824 0 ""
pkt "$f" 0x2100 5 5005 1073741824 0 "hello"
pkt "$f" 0x2200 4 5005 1073741824 3 ""
desc "$f" 0 1 $((0x12000)) 44 0 0
desc "$f" 0 2 $((0x12100)) 49 0 0
desc "$f" 0 3 $((0x12200)) 44 0 0
avail "$f" 0x800 3 1 2 3

# A guest-initiated connection to the allowed port, header and payload in
# two descriptors, then an RST.
f=$dir/guest-connect
base "$f"
pkt "$f" 0x2000 1 1234 7000 0 ""
pkt "$f" 0x2100 5 1234 7000 0 "payload"
pkt "$f" 0x2200 3 1234 7000 0 ""
desc "$f" 0 1 $((0x12000)) 44 0 0
desc "$f" 0 2 $((0x12100)) 44 1 3
desc "$f" 0 3 $((0x12100 + 44)) 7 0 0
desc "$f" 0 4 $((0x12200)) 44 0 0
avail "$f" 0x800 3 1 2 4

# Unknown connections and a credit request.
f=$dir/unknown
base "$f"
pkt "$f" 0x2000 5 9 9 0 "x"
pkt "$f" 0x2100 7 5005 1073741824 0 ""
desc "$f" 0 1 $((0x12000)) 45 0 0
desc "$f" 0 2 $((0x12100)) 44 0 0
avail "$f" 0x800 2 1 2
