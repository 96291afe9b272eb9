#!/usr/bin/env bash
# 25-bridge-device.sh: vmux-bridge against a real guest under QEMU (TCG).
#
# Boots $BUILD/guest/{vmlinux,initrd.img} with a vhost-user-vsock device
# served by $BUILD/bin/vmux-bridge, then checks through the hybrid-vsock
# socket: the agent on 5005, 1 MiB echo both ways with checksums, a slow
# reader over 16 MiB (credit), refused and malformed connections, 50
# concurrent connections, 300 held open at once, guest-initiated
# connections (allowed and not),
# QMP stop/cont with a live connection, a guest reboot (device reset), and
# that the bridge exits 0 and removes its sockets when QEMU goes away; also
# bad command lines and stale sockets.
# Prints the bridge's RSS idle and while moving data.
#
#   BUILD=build-bridge tests/e2e/25-bridge-device.sh
#   MACHINE=microvm-legacy|q35 ... (default microvm, modern virtio-mmio)
#   KEEP=1 keeps the logs in /tmp
#
# Needs qemu-system-x86_64, socat, jq. Ends with "e2e-bridge: N passed, N
# failed"; everything it started is killed on exit.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
BRIDGE=$BUILD/bin/vmux-bridge
KERNEL=$BUILD/guest/vmlinux
INITRD=$BUILD/guest/initrd.img
MACHINE=${MACHINE:-microvm}
NC=/vmux/bin/vmux-nc

for f in "$BRIDGE" "$KERNEL" "$INITRD" "$BUILD/tests/vsock-hold"; do
	[[ -e $f ]] || { echo "e2e-bridge: missing $f (make BUILD=... all)"; echo "e2e-bridge: 0 passed, 1 failed"; exit 1; }
done

TMP=$(mktemp -d /tmp/vmux-bridge-e2e.XXXXXX)
VHU=$TMP/vhu.sock UDS=$TMP/vsock.sock QMP=$TMP/qmp.sock
BPID= QPID= BG=()
pass=0 fail=0

cleanup() {
	local p
	for p in "${BG[@]}" $QPID $BPID; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	if [[ -n ${KEEP:-} ]]; then say "e2e-bridge: kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

say() { printf '%s\n' "$*"; }
# fail MSG: print MSG and fail the current check, whatever follows.
fail() { say "    $*"; check_failed=1; return 1; }
check() {
	local name=$1; shift
	check_failed=0
	if "$@" && ((check_failed == 0)); then pass=$((pass + 1)); say "ok   $name"
	else fail=$((fail + 1)); say "FAIL $name"; fi
}
# wait_for SECONDS CMD...: poll CMD until it succeeds.
wait_for() {
	local end=$((SECONDS + $1)); shift
	until "$@"; do ((SECONDS < end)) || return 1; sleep 0.2; done
}
rss() { grep -E '^(VmHWM|VmRSS|RssAnon|RssFile|RssShmem)' /proc/"$BPID"/status | tr -s ' \t' ' ' | paste -sd' '; }

# The agent: one JSON request, one JSON reply (after the OK line).
agent() {
	printf 'CONNECT 5005\n%s\n' "$1" | timeout 60 socat -t 60 - UNIX-CONNECT:"$UDS" 2>/dev/null | tail -n +2
}
gexec() { agent "$(jq -cn --arg c "$1" '{command: $c, timeout_seconds: 60}')"; }
agent_up() { [[ $(gexec 'echo up' | jq -r .stdout 2>/dev/null) == up ]]; }

start_bridge() {
	exec 3>"$TMP/ready"
	VMUX_LOG=$TMP/bridge.log "$BRIDGE" --vhost-user "$VHU" --uds "$UDS" \
		--guest-cid 3 --allow-port 7000 --connect-timeout 10000 --ready-fd 3 &
	BPID=$!
	exec 3>&-
	wait_for 10 grep -qx ready "$TMP/ready"
}

start_qemu() {
	local dev=vhost-user-vsock-device
	local append="console=ttyS0 panic=-1 quiet cryptomgr.notests=1"
	local mach=(-M microvm)
	case $MACHINE in
	q35) dev=vhost-user-vsock-pci mach=(-M q35) ;;
	microvm | microvm-legacy)
		# modern virtio-mmio as vmux runs it; -legacy: QEMU's default
		[[ $MACHINE == microvm ]] &&
			mach+=(-global virtio-mmio.force-legacy=false)
		append="$append pci=off tsc=reliable"
		# microvm has no HPET/PM timer: give the TSC rate (guest-boot notes)
		local khz
		khz=$(awk -F': ' '/^cpu MHz/ {printf "%d", $2 * 1000; exit}' /proc/cpuinfo)
		[[ -n $khz ]] && append="$append tsc_early_khz=$khz"
		;;
	*) say "e2e-bridge: MACHINE is microvm, microvm-legacy or q35"; return 1 ;;
	esac
	qemu-system-x86_64 -accel tcg "${mach[@]}" -m 256 -smp 1 \
		-object memory-backend-memfd,id=mem0,size=256M,share=on \
		-machine memory-backend=mem0 \
		-kernel "$KERNEL" -initrd "$INITRD" -append "$append" \
		-chardev socket,id=vsk,path="$VHU" -device "$dev",chardev=vsk \
		-nodefaults -display none -serial file:"$TMP/console" \
		-qmp unix:"$QMP",server=on,wait=off </dev/null >"$TMP/qemu.out" 2>&1 &
	QPID=$!
}

qmp() {
	printf '{"execute":"qmp_capabilities"}\n{"execute":"%s"}\n' "$1" |
		socat -t 2 - UNIX-CONNECT:"$QMP" >/dev/null 2>&1
}
# qmp_status: the VM's run state as QMP says it ("paused", "running").
qmp_status() {
	printf '{"execute":"qmp_capabilities"}\n{"execute":"query-status"}\n' |
		socat -t 2 - UNIX-CONNECT:"$QMP" 2>/dev/null |
		jq -r 'select(.return.status != null) | .return.status' 2>/dev/null
}
# hwm_kib: the bridge's peak RSS in KiB.
hwm_kib() { awk '/^VmHWM/ { print $2 }' /proc/"$BPID"/status; }

t_cli() {
	local err rc
	err=$("$BRIDGE" --vhost-user "$VHU" --uds "$UDS" --guest-cid 3 --bogus 2>&1)
	rc=$?
	[[ $rc == 2 && $(wc -l <<<"$err") == 1 && $err == *--bogus* ]] ||
		fail "unknown flag: rc $rc, '$err'" || return 1
	err=$("$BRIDGE" --vhost-user "$VHU" --uds "$UDS" 2>&1)
	rc=$?
	[[ $rc == 2 && $err == *--guest-cid* ]] || fail "missing cid: rc $rc" || return 1
	err=$("$BRIDGE" --vhost-user "$VHU" --uds "$UDS" --guest-cid 2 2>&1)
	[[ $? == 2 ]] || fail "cid 2 accepted" || return 1
	[[ ! -e $VHU && ! -e $UDS ]] || fail "sockets created by a bad command line"
}
# Stale sockets from a previous bridge are replaced.
make_stale() {
	local p
	for p in "$VHU" "$UDS"; do
		socat -u UNIX-LISTEN:"$p",unlink-close=0 /dev/null &
		local s=$!
		wait_for 5 test -S "$p"
		kill "$s"
		wait "$s" 2>/dev/null
	done
	[[ -S $VHU && -S $UDS ]]
}
t_boot() {
	make_stale || fail "could not make stale sockets" || return 1
	start_bridge || fail "bridge never said ready" || return 1
	start_qemu || return 1
	wait_for 120 agent_up || { tail -5 "$TMP/console"; fail "agent never answered"; }
}
t_agent() {
	local out
	out=$(gexec 'uname -r; echo $((6 * 7))')
	[[ $(jq -r .exit_code <<<"$out") == 0 && $(jq -r .stdout <<<"$out") == *42* ]] ||
		fail "agent reply: $out"
}
t_echo_server() {
	gexec "$NC -l 6000 -k -e cat >/dev/null 2>&1 &" >/dev/null
	wait_for 30 bash -c "[[ \$(printf 'CONNECT 6000\nping\n' | timeout 10 socat -t 10 - UNIX-CONNECT:$UDS | tail -n 1) == ping ]]"
}
# echo_bytes FILE: send FILE through the guest's echo server; the reply
# without the OK line goes to FILE.back.
echo_bytes() {
	{ printf 'CONNECT 6000\n'; cat "$1"; } |
		timeout 120 socat -t 60 - UNIX-CONNECT:"$UDS" >"$1.raw" || return 1
	[[ $(head -c 3 "$1.raw") == "OK " ]] || return 1
	tail -c +15 "$1.raw" >"$1.back"
}
t_h2g_echo_1m() {
	head -c 1048576 /dev/urandom >"$TMP/in1"
	echo_bytes "$TMP/in1" || fail "transfer failed" || return 1
	[[ $(md5sum <"$TMP/in1.back") == $(md5sum <"$TMP/in1") ]] ||
		fail "checksum: got $(stat -c %s "$TMP/in1.back") bytes"
}
t_slow_reader_16m() {
	# The client reads nothing for 3 s: the guest must be held back by
	# credit while the bridge buffers at most its buf_alloc.
	head -c 16777216 /dev/urandom >"$TMP/in16"
	{ printf 'CONNECT 6000\n'; cat "$TMP/in16"; } |
		timeout 180 socat -t 60 - UNIX-CONNECT:"$UDS" |
		{ sleep 3; say "     rss with a stalled reader: $(rss)" >&2; cat; } \
		>"$TMP/in16.raw" || fail "transfer failed" || return 1
	[[ $(tail -c +15 "$TMP/in16.raw" | md5sum) == $(md5sum <"$TMP/in16") ]] ||
		fail "checksum: got $(stat -c %s "$TMP/in16.raw") bytes"
}
t_g2h_1m() {
	local sum
	rm -f "$TMP/recv"
	socat -u UNIX-LISTEN:"${UDS}_7000" CREATE:"$TMP/recv" &
	BG+=($!)
	local l=$!
	wait_for 10 test -S "${UDS}_7000" || fail "host listener not up" || return 1
	sum=$(gexec "head -c 1048576 /dev/urandom >/tmp/g && $NC 2 7000 </tmp/g && md5sum </tmp/g" | jq -r .stdout)
	wait "$l"
	[[ $(stat -c %s "$TMP/recv") == 1048576 ]] || fail "size $(stat -c %s "$TMP/recv")" || return 1
	[[ $(md5sum <"$TMP/recv") == "$sum" ]] || fail "checksum"
}
t_g2h_refused() {
	socat -u UNIX-LISTEN:"${UDS}_7001",fork - >/dev/null &
	BG+=($!)
	wait_for 10 test -S "${UDS}_7001" || return 1
	local code
	code=$(gexec "echo x | $NC 2 7001" | jq -r .exit_code)
	[[ $code != 0 ]] || fail "guest reached a port that was not allowed"
	rm -f "$TMP/recv"
	code=$(gexec "echo x | $NC 2 7000" | jq -r .exit_code)
	[[ $code != 0 ]] || fail "guest reached an allowed port with no listener"
}
t_no_listener() {
	local n
	n=$(printf 'CONNECT 6001\n' | timeout 30 socat -t 30 - UNIX-CONNECT:"$UDS" | wc -c)
	[[ $n == 0 ]] || fail "$n bytes"
}
t_malformed() {
	local n
	n=$(printf 'HELLO 5005\n' | timeout 10 socat -t 10 - UNIX-CONNECT:"$UDS" | wc -c)
	[[ $n == 0 ]] || fail "garbage: $n bytes" || return 1
	n=$(head -c 200 /dev/zero | tr '\0' 7 | timeout 10 socat -t 10 - UNIX-CONNECT:"$UDS" | wc -c)
	[[ $n == 0 ]] || fail "overlong: $n bytes" || return 1
	n=$(printf 'CONNECT 99999999999\n' | timeout 10 socat -t 10 - UNIX-CONNECT:"$UDS" | wc -c)
	[[ $n == 0 ]] || fail "bad port: $n bytes"
}
t_ok_line() {
	local out ok port
	out=$(printf 'CONNECT 6000\r\nsame-packet\n' | timeout 20 socat -t 20 - UNIX-CONNECT:"$UDS")
	ok=${out%%$'\n'*}
	[[ $ok =~ ^OK\ [0-9]+$ ]] || fail "OK line: $ok" || return 1
	port=${ok#OK }
	((port >= 1073741824 && port < 2147483648)) || fail "local port $port" || return 1
	[[ $out == *same-packet* ]] || fail "trailing bytes lost: $out"
}
t_50_concurrent() {
	local i pids=()
	for i in $(seq 1 50); do
		(printf 'CONNECT 6000\nhello %d\n' "$i" | timeout 60 socat -t 30 - UNIX-CONNECT:"$UDS" >"$TMP/c$i") &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || fail "a connection failed" || return 1; done
	for i in $(seq 1 50); do
		[[ $(tail -n 1 "$TMP/c$i") == "hello $i" ]] || fail "conn $i: $(cat "$TMP/c$i")" || return 1
	done
}
# 300 echo connections held open at once, from one process (a poll loop
# in tests/tools/vsock-hold.c that retries refused connections), so the
# harness does not starve the guest it measures.
t_300_held_open() {
	local out
	out=$("$BUILD/tests/vsock-hold" "$UDS" 6000 300 240)
	local rc=$?
	say "     $out"
	say "     rss after 300 connections: $(rss)"
	((rc == 0)) || fail "not all 300 echoed while held open" || return 1
	# the bound the figures above show: 300 connections cost little
	(($(hwm_kib) < 16384)) || fail "bridge peak RSS $(hwm_kib) KiB over 16 MiB"
}
t_pause_resume() {
	# A connection stays up across QMP stop/cont (GET_VRING_BASE, restart).
	local out
	out=$( { printf 'CONNECT 6000\nbefore\n'; sleep 1; qmp stop; qmp_status >"$TMP/paused"; sleep 1; qmp cont; sleep 1; printf 'after\n'; } |
		timeout 30 socat -t 10 - UNIX-CONNECT:"$UDS")
	# the pause happened (QMP said so in the middle), and the connection
	# carried data on both sides of it
	[[ $(cat "$TMP/paused") == paused ]] || fail "not paused: $(cat "$TMP/paused")" || return 1
	[[ $(qmp_status) == running ]] || fail "not running again" || return 1
	[[ $out == *before*after* ]] || fail "got: $out"
}
t_reboot() {
	# The guest reboots (device reset): the bridge drops what it had and
	# serves the new guest.
	local before after
	before=$(gexec 'cat /proc/sys/kernel/random/boot_id' | jq -r .stdout)
	[[ -n $before ]] || fail "no boot id" || return 1
	gexec 'kill -TERM 1' >/dev/null
	sleep 2
	wait_for 120 agent_up || fail "agent not back after reboot" || return 1
	# the guest really rebooted: a new boot id
	after=$(gexec 'cat /proc/sys/kernel/random/boot_id' | jq -r .stdout)
	[[ -n $after && $after != "$before" ]] || fail "same boot ($before, $after): no reboot" || return 1
	kill -0 "$BPID" || fail "bridge died"
}
t_qemu_gone() {
	kill "$QPID"
	wait_for 15 bash -c "! kill -0 $BPID 2>/dev/null" || fail "bridge outlived QEMU" || return 1
	wait "$BPID"
	local rc=$?
	BPID=
	[[ $rc == 0 ]] || fail "bridge exit status $rc" || return 1
	[[ ! -e $UDS && ! -e $VHU ]] || fail "sockets left behind"
}

check "bad command lines: exit 2, one line, nothing created" t_cli
check "boot guest with the bridge ($MACHINE, TCG), stale sockets replaced" t_boot
if ((fail > 0)); then
	say "e2e-bridge: $pass passed, $fail failed"
	exit 1
fi
sleep 1.5
say "     rss idle: $(rss)"
check "agent exec through CONNECT 5005" t_agent
check "echo server in the guest (vmux-nc)" t_echo_server
check "host-to-guest 1 MiB echo with checksum" t_h2g_echo_1m
check "16 MiB echo with a slow reader (credit)" t_slow_reader_16m
say "     rss after moving data: $(rss)"
check "guest-to-host 1 MiB with checksum (allowed port)" t_g2h_1m
check "guest-initiated: not allowed / no listener refused" t_g2h_refused
check "CONNECT to a port with no listener: zero bytes" t_no_listener
check "malformed CONNECT: zero bytes" t_malformed
check "OK line, local port range, trailing bytes" t_ok_line
check "50 concurrent connections" t_50_concurrent
check "300 concurrent connections held open" t_300_held_open
check "connection survives QMP stop/cont" t_pause_resume
check "guest reboot: device reset, bridge serves again" t_reboot
check "echo server again after the reboot" t_echo_server
sleep 1.5
say "     rss idle after all: $(rss)"
check "QEMU exits: bridge exits 0, sockets removed" t_qemu_gone
say "e2e-bridge: $pass passed, $fail failed"
((fail == 0))
