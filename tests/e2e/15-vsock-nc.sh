#!/usr/bin/env bash
# 15-vsock-nc.sh: vmux-nc end to end in a real guest. Boots the default image with
# vmux-bridge (session/qemu.c's command line), then through the agent and
# the bridge's hybrid-vsock socket checks:
#   - host -> guest: `vmux-nc -l PORT -k -e cat` echoes 1 MiB intact, twice
#   - guest -> host: `vmux-nc 2 PORT` uploads 256 KiB intact
#   - `vmux-nc -l PORT` (no -e) writes what a client sent to its stdout
#   - connecting to a host port nobody listens on fails with status 1
#   - usage errors exit 2
# then asks the agent to shut down and requires QEMU to exit by itself.
#
#   tests/e2e/15-vsock-nc.sh [--build DIR] [--deadline S]
#
# Prints "ok"/"FAIL" per check and "nc-check: N passed, N failed".
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
deadline=90
while [[ $# -gt 0 ]]; do
	case $1 in
	--build) BUILD=$2; shift 2 ;;
	--deadline) deadline=$2; shift 2 ;;
	*) echo "nc-check: unknown option $1" >&2; exit 2 ;;
	esac
done
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
img=$BUILD/guest
for f in "$img/vmlinux" "$img/initrd.img" "$img/qemu-argv" "$BUILD/bin/vmux-bridge"; do
	[[ -e $f ]] || { echo "nc-check: $f missing (make BUILD=$BUILD all)" >&2; exit 2; }
done
for t in socat jq; do
	command -v $t >/dev/null || { echo "nc-check: $t missing" >&2; exit 2; }
done

D=$(mktemp -d /tmp/vmux-nc-check.XXXXXX)
qpid= bpid= lpids=()
cleanup() {
	local p
	for p in "${lpids[@]}" $qpid $bpid; do kill "$p" 2>/dev/null; done
	for p in $qpid $bpid; do
		for _ in $(seq 20); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
passed=0 failed=0

# check NAME CMD...: run one check.
check() {
	local name=$1; shift
	if "$@" >"$D/check.out" 2>&1; then
		passed=$((passed + 1)); echo "ok   $name"
	else
		failed=$((failed + 1)); echo "FAIL $name"
		sed 's/^/    /' "$D/check.out" | tail -n 20
	fi
}

# vsock PORT: stdin to guest port PORT through the bridge; prints the reply
# without the "OK <port>" line.
vsock() {
	{ printf 'CONNECT %s\n' "$1"; cat; } |
		timeout 60 socat -t 30 - "UNIX-CONNECT:$D/vsock.sock" >"$D/vsock.out" || return 1
	head -n 1 "$D/vsock.out" | grep -q '^OK [0-9]*$' || { echo "no OK line"; return 1; }
	tail -n +2 "$D/vsock.out"
}

# gexec SHELL-COMMAND: run it in the guest through the agent; prints its
# stdout, fails unless it exits 0.
gexec() {
	local req reply
	req=$(jq -cn --arg c "$1" '{action: "exec", command: $c, timeout_seconds: 60}')
	reply=$(printf '%s\n' "$req" | vsock 5005) || return 1
	jq -r '.stdout // empty' <<<"$reply"
	[[ $(jq -r '.exit_code' <<<"$reply") == 0 ]] || { echo "guest: $reply"; return 1; }
}

# Boot with the bridge and wait for the agent.
"$BUILD/bin/vmux-bridge" --vhost-user "$D/vhu.sock" --uds "$D/vsock.sock" \
	--guest-cid 3 --allow-port 7001 --allow-port 7002 >"$D/bridge.log" 2>&1 &
bpid=$!
for _ in $(seq 100); do [[ -S $D/vhu.sock ]] && break; sleep 0.05; done
mapfile -t args < <("$img/qemu-argv" --kernel "$img/vmlinux" --initrd "$img/initrd.img" \
	--console "$D/console.log" --qmp "$D/qmp" --vhost-user "$D/vhu.sock")
"${args[@]}" </dev/null >"$D/qemu.log" 2>&1 &
qpid=$!
booted() {
	local end=$((SECONDS + deadline))
	while ((SECONDS < end)); do
		printf '{"action":"ping"}\n' | vsock 5005 | grep -q '"hostname"' && return 0
		kill -0 "$qpid" 2>/dev/null || { echo "QEMU exited"; return 1; }
		sleep 0.3
	done
	echo "no agent within ${deadline}s"
	return 1
}
if ! booted; then
	echo "FAIL boot"; tail -n 20 "$D/console.log" | sed 's/^/    /'
	echo "nc-check: 0 passed, 1 failed"
	exit 1
fi

head -c 1048576 /dev/urandom >"$D/big"
big_sum=$(md5sum <"$D/big" | cut -d' ' -f1)

echo_server() {
	gexec '/vmux/bin/vmux-nc -l 7000 -k -e cat </dev/null >/dev/null 2>&1 &' || return 1
	local i got
	for i in 1 2; do
		got=$(vsock 7000 <"$D/big" | md5sum | cut -d' ' -f1)
		[[ $got == "$big_sum" ]] || { echo "connection $i: echo differs"; return 1; }
	done
}
check "host -> guest: -l -k -e cat echoes 1 MiB, two connections" echo_server

upload() {
	local want got
	socat -u "UNIX-LISTEN:$D/vsock.sock_7001" "OPEN:$D/up,creat,trunc" &
	lpids+=($!)
	for _ in $(seq 100); do [[ -S $D/vsock.sock_7001 ]] && break; sleep 0.05; done
	want=$(gexec 'head -c 262144 /dev/urandom >/tmp/up; /vmux/bin/vmux-nc 2 7001 </tmp/up && md5sum </tmp/up') || return 1
	wait "${lpids[-1]}"
	got=$(md5sum <"$D/up")
	[[ ${want%% *} == "${got%% *}" ]] || { echo "upload differs: $want / $got"; return 1; }
}
check "guest -> host: vmux-nc 2 PORT uploads 256 KiB" upload

receive() {
	gexec '/vmux/bin/vmux-nc -l 7003 </dev/null >/tmp/got 2>&1 & echo started' || return 1
	printf 'payload\n' | vsock 7003 >/dev/null || return 1
	local got
	for _ in $(seq 20); do
		got=$(gexec 'cat /tmp/got') || return 1
		[[ $got == payload ]] && return 0
		sleep 0.2
	done
	echo "listener wrote '$got'"
	return 1
}
check "-l without -e: the client's bytes reach stdout" receive

refused() {
	gexec '/vmux/bin/vmux-nc 2 7002 </dev/null; echo "rc=$?"' | grep -qx 'rc=1'
}
check "no host listener: exit status 1" refused

usage() {
	gexec 'nc=/vmux/bin/vmux-nc; $nc >/dev/null 2>&1; a=$?
		$nc -l x >/dev/null 2>&1; b=$?; $nc 1 >/dev/null 2>&1; echo "$a$b$?"' |
		grep -qx 222
}
check "usage errors exit 2" usage

poweroff() {
	printf '{"action":"shutdown"}\n' | vsock 5005 >/dev/null
	for _ in $(seq 300); do
		kill -0 "$qpid" 2>/dev/null || return 0
		sleep 0.1
	done
	echo "QEMU still running 30 s after shutdown"
	tail -n 5 "$D/console.log"
	return 1
}
check "agent shutdown powers the guest off, QEMU exits" poweroff

echo "nc-check: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
