#!/usr/bin/env bash
# 26-qemu-state.sh: vmux's own QEMU (qemu/build) with the parts the next
# steps stand on, by hand, on a real guest: the command line vmux builds
# (guest/qemu-argv: RAM in a file, the bridge's socket with reconnect=1).
#  - its bridge killed: a new one takes over, and the guest's shells,
#    processes and files are all there (the QEMU side of a restart; vmux's
#    own restart is checked in 27-helpers);
#  - its state saved over QMP (stop, x-ignore-shared, migrate) and
#    restored into a new QEMU and a new bridge: the agent, an open shell,
#    a background process and /tmp answer as before; a save that would
#    copy RAM (no x-ignore-shared) is refused;
#  - Debian's QEMU refuses the same save (its vhost-user-vsock device is
#    unmigratable), which is why vmux builds its own.
# Prints how long the agent took to answer again in each case.
. "$(dirname "$0")/lib.sh"

QEMU_OWN=$BUILD/bin/vmux-qemu
ARGV=$BUILD/guest/qemu-argv
BRIDGE=$BUILD/bin/vmux-bridge
VHU=$TMP/vhu.sock UDS=$TMP/vsock.sock QMP=$TMP/qmp.sock
RAM=$TMP/guest.ram STATE=$TMP/state

# agent JSON: one request to the agent, its reply line.
agent() {
	printf 'CONNECT 5005\n%s\n' "$1" |
		timeout 30 socat -t 30 - UNIX-CONNECT:"$UDS" 2>/dev/null | tail -n +2
}
gexec() { agent "$(jq -cn --arg c "$1" '{action: "exec", command: $c, timeout_seconds: 20}')"; }
agent_up() { [[ $(gexec 'echo up' | jq -r .stdout 2>/dev/null) == up ]]; }
# shell_has TEXT: shell t1's output holds TEXT
shell_has() {
	agent '{"action":"read_shell","shell_id":"t1","cursor":0,"max_chars":1048576}' |
		jq -r .output 2>/dev/null | grep -q -- "$1"
}
shell_type() {
	agent "$(jq -cn --arg i "$1" '{action: "write_shell", shell_id: "t1", input: $i, append_newline: true}')" >/dev/null
}

# qmp JSON...: run QMP commands in one connection, printing each answer
# line ("return" or "error"; events skipped).
qmp() {
	python3 - "$QMP" "$@" <<'EOF'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(30)
s.connect(sys.argv[1])
f = s.makefile("rw")
def answer():
    while True:
        m = json.loads(f.readline())
        if "return" in m or "error" in m:
            return m
f.readline()  # greeting
f.write('{"execute":"qmp_capabilities"}\n'); f.flush(); answer()
for c in sys.argv[2:]:
    f.write(c + "\n"); f.flush()
    print(json.dumps(answer()))
EOF
}
qmp_field() { qmp "{\"execute\":\"$1\"}" | jq -r "$2"; }
migrated() { [[ $(qmp_field query-migrate .return.status) == completed ]]; }
paused() { [[ $(qmp_field query-status .return.status) == paused ]]; }

start_bridge() {
	exec 3>"$TMP/ready"
	VMUX_LOG=$TMP/bridge.log "$BRIDGE" --vhost-user "$VHU" --uds "$UDS" \
		--guest-cid 3 --ready-fd 3 >>"$TMP/bridge.out" 2>&1 &
	echo $! >"$TMP/bridge.pid"
	bg_track $!
	exec 3>&-
	wait_for 10 grep -qx ready "$TMP/ready"
}
# start_qemu BIN [ARG...]: the guest vmux boots, on BIN, with extra args
start_qemu() {
	local bin=$1 own=()
	shift
	[[ $bin == "$QEMU_OWN" ]] && own=(--reconnect --ram-file "$RAM")
	mapfile -t cmd < <("$ARGV" --qemu "$bin" --kernel "$BUILD/guest/vmlinux" \
		--initrd "$BUILD/guest/initrd.img" --cpus 1 --memory 256 \
		--vhost-user "$VHU" --qmp "$QMP" --console "$TMP/console" "${own[@]}")
	"${cmd[@]}" "$@" </dev/null >>"$TMP/qemu.out" 2>&1 &
	echo $! >"$TMP/qemu.pid"
	bg_track $!
}
stop_all() {
	kill -9 $(cat "$TMP/qemu.pid" "$TMP/bridge.pid" 2>/dev/null) 2>/dev/null
	wait 2>/dev/null
	rm -f "$RAM" "$STATE"
}
# ms_since T0: milliseconds since date +%s%N said T0
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

# A shell with known output, a process in the background, a file in /tmp.
t_boot_and_mark() {
	start_bridge || fail "bridge not ready" || return 1
	start_qemu "$QEMU_OWN"
	wait_for 120 agent_up || { tail -5 "$TMP/console" "$TMP/qemu.out"; fail "agent never answered"; return 1; }
	[[ -s $RAM ]] || fail "guest RAM is not in $RAM" || return 1
	agent '{"action":"open_shell","shell_id":"t1"}' | jq -e .shell_id >/dev/null ||
		fail "open_shell failed" || return 1
	shell_type 'echo one-$((40 + 2))'
	wait_for 20 shell_has one-42 || fail "shell never answered" || return 1
	gexec 'echo kept >/tmp/mark; sleep 1000 </dev/null >/dev/null 2>&1 & echo $! >/tmp/bg' >/dev/null
	[[ $(gexec 'cat /tmp/mark' | jq -r .stdout) == kept ]] || fail "no /tmp/mark"
}
# everything t_boot_and_mark left is there, and the shell still types
all_there() {
	local word=$1 out
	out=$(gexec 'cat /tmp/mark; kill -0 $(cat /tmp/bg) && echo bg-alive')
	[[ $out == *kept* && $out == *bg-alive* ]] || fail "guest state lost: $out" || return 1
	shell_has one-42 || fail "shell t1's scrollback is gone" || return 1
	shell_type "echo $word-\$((50 + 1))"
	wait_for 20 shell_has "$word-51" || fail "shell t1 does not answer"
}

t_bridge_killed() {
	local t0
	kill -9 "$(cat "$TMP/bridge.pid")"
	t0=$(date +%s%N)
	start_bridge || fail "a new bridge not ready" || return 1
	wait_for 20 agent_up || fail "agent never answered through the new bridge" || return 1
	echo "figure: bridge killed and started again: agent answers after $(ms_since "$t0") ms"
	kill -0 "$(cat "$TMP/qemu.pid")" || fail "QEMU died" || return 1
	all_there two
}

mig_failed() { [[ $(qmp_field query-migrate .return.status) == failed ]]; }
t_save_restore() {
	local t0 out size
	# a save that would copy RAM is refused: the bridge's writes into it
	# are not logged (qemu/patches/02)
	qmp '{"execute":"stop"}' "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"exec:cat >$STATE\"}}" >/dev/null
	wait_for 30 mig_failed || fail "a save copying RAM was not refused: $(qmp_field query-migrate .)" || return 1
	grep -q 'only with x-ignore-shared' "$TMP/qemu.out" || fail "QEMU did not say why" || return 1
	qmp '{"execute":"cont"}' >/dev/null # QEMU wants a run between two
	out=$(qmp '{"execute":"stop"}' \
		'{"execute":"migrate-set-capabilities","arguments":{"capabilities":[{"capability":"x-ignore-shared","state":true}]}}' \
		"{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"exec:cat >$STATE\"}}")
	[[ $out != *error* ]] || fail "save refused: $out" || return 1
	wait_for 30 migrated || fail "save never completed: $(qmp_field query-migrate .)" || return 1
	size=$(stat -c %s "$STATE")
	((size < 4 * 1024 * 1024)) || fail "state is $size bytes: RAM was copied" || return 1
	echo "figure: state without RAM: $size bytes"
	qmp '{"execute":"quit"}' >/dev/null
	wait_for 20 bash -c "! kill -0 $(cat "$TMP/qemu.pid") 2>/dev/null && ! kill -0 $(cat "$TMP/bridge.pid") 2>/dev/null" ||
		fail "QEMU or its bridge did not end" || return 1
	[[ -s $RAM ]] || fail "the RAM file went with QEMU" || return 1
	t0=$(date +%s%N)
	start_bridge || fail "a new bridge not ready" || return 1
	start_qemu "$QEMU_OWN" -incoming defer
	wait_for 20 test -S "$QMP" || fail "no QMP" || return 1
	out=$(qmp '{"execute":"migrate-set-capabilities","arguments":{"capabilities":[{"capability":"x-ignore-shared","state":true}]}}' \
		"{\"execute\":\"migrate-incoming\",\"arguments\":{\"uri\":\"exec:cat $STATE\"}}")
	[[ $out != *error* ]] || fail "restore refused: $out" || return 1
	wait_for 30 paused || fail "restore never finished: $(qmp_field query-status .)" || return 1
	qmp '{"execute":"cont"}' >/dev/null
	wait_for 30 agent_up || { tail -5 "$TMP/qemu.out"; fail "agent never answered after the restore"; return 1; }
	echo "figure: restored into a new QEMU and bridge: agent answers after $(ms_since "$t0") ms"
	all_there three
}

t_debian_refuses() {
	local out
	stop_all
	start_bridge || fail "bridge not ready" || return 1
	start_qemu "$(command -v qemu-system-x86_64)"
	wait_for 120 agent_up || fail "agent never answered on Debian's QEMU" || return 1
	out=$(qmp '{"execute":"stop"}' \
		"{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"exec:cat >$STATE\"}}")
	[[ $out == *non-migratable* ]] || fail "Debian's QEMU saved: $out"
	stop_all
}

[[ -x $QEMU_OWN ]] || { fail "missing $QEMU_OWN (make qemu)"; exit 1; }
check "vmux's QEMU boots the guest with its RAM in a file" t_boot_and_mark
check "its bridge killed: a new one takes over, nothing of the guest lost" t_bridge_killed
check "state saved over QMP restores into a new QEMU and bridge" t_save_restore
check "Debian's QEMU refuses to save (vhost-user-vsock is unmigratable)" t_debian_refuses
stop_all
