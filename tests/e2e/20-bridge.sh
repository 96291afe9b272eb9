#!/usr/bin/env bash
# 20-bridge: the hybrid-vsock bridge with a real guest: bulk echo both ways
# with checksums, concurrency, refused and malformed connections.
source "$(dirname "$0")/lib.sh"
need_session br --allow-port 7000
UDS=$(session_field br vsock_uds)
NC=/vmux/bin/vmux-nc

# An echo server on guest port 6000, and nothing on 6001.
vmux exec br -- sh -c "$NC -l 6000 -k -e cat >/dev/null 2>&1 &"

echo_ready() { [[ $(echo ping | vmux connect br 6000 2>/dev/null) == ping ]]; }

t_h2g_echo_1m() {
	wait_for 30 echo_ready || fail "echo server never answered" || return 1
	head -c 1048576 /dev/urandom >"$TMP/in"
	vmux connect br 6000 <"$TMP/in" >"$TMP/out" || return 1
	expect_eq checksum "$(md5sum <"$TMP/out")" "$(md5sum <"$TMP/in")"
}
t_g2h_1m() {
	local sum_guest
	rm -f "$TMP/recv"
	socat -u UNIX-LISTEN:"${UDS}_7000" CREATE:"$TMP/recv" &
	bg_track $!
	local l=$!
	wait_for 10 test -S "${UDS}_7000" || fail "host listener not up" || return 1
	sum_guest=$(vmux exec br -- sh -c "head -c 1048576 /dev/urandom >/tmp/g && $NC 2 7000 </tmp/g && md5sum </tmp/g") || return 1
	wait "$l"
	expect_eq size "$(stat -c %s "$TMP/recv")" 1048576 &&
		expect_eq checksum "$(md5sum <"$TMP/recv")" "$sum_guest"
}
t_g2h_refused() {
	# Port 7001 was not allowed: the guest's connect must fail even with a
	# host listener present.
	socat -u UNIX-LISTEN:"${UDS}_7001" - >/dev/null &
	bg_track $!
	wait_for 10 test -S "${UDS}_7001" || return 1
	! vmux exec br -- sh -c "echo x | $NC 2 7001"
}
t_50_concurrent() {
	local i pids=()
	for i in $(seq 1 50); do
		(echo "hello $i" | vmux connect br 6000 >"$TMP/c$i") &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || fail "connection $p failed" || return 1; done
	for i in $(seq 1 50); do
		expect_eq "conn $i" "$(cat "$TMP/c$i")" "hello $i" || return 1
	done
}
t_no_listener_zero_bytes() {
	local n
	n=$(printf 'CONNECT 6001\n' | socat -t 30 - UNIX-CONNECT:"$UDS" | wc -c)
	expect_eq bytes "$n" 0
}
t_malformed_connect() {
	local n
	n=$(printf 'HELLO 5005\n' | socat -t 10 - UNIX-CONNECT:"$UDS" | wc -c)
	expect_eq "bytes for garbage" "$n" 0 || return 1
	n=$(head -c 200 /dev/zero | tr '\0' 7 | socat -t 10 - UNIX-CONNECT:"$UDS" | wc -c)
	expect_eq "bytes for overlong" "$n" 0 || return 1
	n=$(printf 'CONNECT 99999999999\n' | socat -t 10 - UNIX-CONNECT:"$UDS" | wc -c)
	expect_eq "bytes for bad port" "$n" 0
}
t_ok_line_and_trailing_bytes() {
	# CONNECT, OK <port in [2^30, 2^31)>, and bytes sent right after the
	# newline reach the guest.
	local out
	out=$(printf 'CONNECT 6000\r\nsame-packet\n' | socat -t 20 - UNIX-CONNECT:"$UDS")
	local ok=${out%%$'\n'*} port
	expect_match "OK line" "$ok" '^OK [0-9]+$' || return 1
	port=${ok#OK }
	((port >= 1073741824 && port < 2147483648)) || fail "local port $port" || return 1
	expect_match echo "$out" 'same-packet'
}
t_bridge_alive() {
	expect_eq "still working" "$(vmux exec br -- echo fine)" fine
}

check "host-to-guest 1 MiB echo with checksum" t_h2g_echo_1m
check "guest-to-host 1 MiB with checksum (allowed port)" t_g2h_1m
check "guest-initiated connection refused when not allowed" t_g2h_refused
check "50 concurrent connections" t_50_concurrent
check "CONNECT to a port with no listener: zero bytes" t_no_listener_zero_bytes
check "malformed CONNECT: zero bytes" t_malformed_connect
check "OK line, local port range, trailing bytes" t_ok_line_and_trailing_bytes
check "bridge and agent still serve" t_bridge_alive
