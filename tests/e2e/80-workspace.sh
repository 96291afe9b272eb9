#!/usr/bin/env bash
# 80-workspace: workspaces that persist and the session lifecycle: the disk
# at /workspace, stop and start with data checked, kill -9 of QEMU in the
# middle of fsync'ed writes then start (and of the bridge, and of all
# processes as a host reboot would), crashed state and logs, concurrent
# commands on one session, rm with and without --keep-workspace, --disk.
source "$(dirname "$0")/lib.sh"
need_session ws

state() { session_field "$1" state; }

t_workspace_is_home() {
	local out img
	out=$(vmux exec ws -- sh -c 'pwd; echo $HOME; grep " /workspace " /proc/mounts') || return 1
	expect_match pwd "$out" $'^/workspace\n/workspace\n' || return 1
	expect_match mount "$out" $'\n/dev/vda /workspace ext4 rw' || return 1
	out=$(vmux exec ws -- df -k /workspace | tail -1) || return 1
	# 4 GiB less ext4's own metadata
	(($(awk '{print $2}' <<<"$out") > 3900000)) || fail "size: $out" || return 1
	img=$(session_field ws workspace.path)
	[[ $img == "$VMUX_HOME/sessions/ws/workspace.img" ]] || fail "image: $img" || return 1
	expect_eq mode "$(stat -c %a "$img")" 600 || return 1
	# sparse: a 4 GiB workspace takes a few MiB on the host
	(($(session_field ws workspace.host_bytes) < 64 * 1024 * 1024)) ||
		fail "not sparse: $(session_field ws workspace.host_bytes) bytes"
}

t_stop_start_keeps_data() {
	local cid out
	cid=$(session_field ws cid)
	vmux exec ws -- sh -c 'head -c 1048576 /dev/urandom > data && md5sum data > data.md5 && sync' || return 1
	vmux stop ws || return 1
	expect_eq state "$(state ws)" stopped || return 1
	expect_eq stopped_by "$(session_field ws stopped_by)" user || return 1
	expect_eq "qemu exit" "$(session_field ws qemu_exit.code)" 0 || return 1
	expect_match console "$(vmux logs ws)" 'vmux-init: workspace unmounted' || return 1
	expect_match table "$(vmux ls)" 'ws +stopped .*by user' || return 1
	# stopping a stopped session is not an error
	vmux stop ws || return 1
	# commands on a stopped session say so
	out=$(vmux exec ws -- true 2>&1)
	[[ $? -eq 125 ]] && expect_match "exec on stopped" "$out" "is stopped" || return 1
	vmux start ws || return 1
	expect_eq state "$(state ws)" running || return 1
	expect_eq "same cid" "$(session_field ws cid)" "$cid" || return 1
	vmux exec ws -- md5sum -c data.md5 || return 1
	out=$(vmux start ws 2>&1)
	[[ $? -eq 125 ]] && expect_match "start running" "$out" "already running"
}

# kill9_mid_write WHAT INFO [FIELD VALUE]: the guest appends numbers to a
# file, syncing after each, and tells the host; kill -9 WHAT (qemu, bridge,
# or all: QEMU, bridge and their reapers at once, as a host reboot would),
# expect crashed with INFO in vmux ls (and FIELD of ls --json VALUE), start,
# and find every number the host saw.
kill9_mid_write() {
	local what=$1 info=$2 field=${3:-} value=${4:-} q b synced last n out log=log-$1
	vmux exec ws -- sh -c "i=0; while :; do echo \$i >> $log; sync; echo \$i; i=\$((i+1)); done" \
		>"$TMP/synced-$what" 2>/dev/null &
	bg_track $!
	wait_for 60 bash -c "n=\$(tail -n 1 '$TMP/synced-$what' 2>/dev/null); (( \${n:-0} >= 20 ))" ||
		fail "writer did not get going" || return 1
	q=$(session_field ws pids.qemu) b=$(session_field ws pids.bridge)
	case $what in
	qemu) kill -9 "$q" ;;
	bridge) kill -9 "$b" ;;
	all) kill -9 "$(ps -o ppid= -p "$q")" "$(ps -o ppid= -p "$b")" "$q" "$b" ;;
	esac
	wait_for 30 bash -c "[[ \$('$VMUX' ls --json | jq -r '.[] | select(.name==\"ws\") | .state') == crashed ]]" ||
		fail "state: $(state ws)" || return 1
	# QEMU and the bridge are both gone, whichever was killed
	wait_for 15 bash -c "! kill -0 $q 2>/dev/null && ! kill -0 $b 2>/dev/null" ||
		fail "QEMU $q or bridge $b still there" || return 1
	synced=$(tail -n 1 "$TMP/synced-$what")
	expect_match table "$(vmux ls)" "ws +crashed .*$info" || return 1
	if [[ -n $field ]]; then
		expect_eq "$field" "$(session_field ws "$field")" "$value" || return 1
	fi
	expect_match tail "$(session_field ws console_tail)" 'vmux-' || return 1
	vmux start ws || return 1
	out=$(vmux exec ws -- sh -c "grep ' /workspace ' /proc/mounts; tail -n 1 $log; wc -l < $log") || return 1
	expect_match "mounted rw" "$out" '/workspace ext4 rw' || return 1
	last=$(sed -n 2p <<<"$out") n=$(sed -n 3p <<<"$out")
	((last >= synced)) || fail "lost fsync'ed data: last $last < synced $synced" || return 1
	# every line is there and in order: 0..last
	vmux exec ws -- sh -c "seq 0 $last | cmp - $log" || fail "$log is not 0..$last" || return 1
	((n == last + 1)) || fail "lines $n, last $last"
}

t_kill9_qemu_mid_write() {
	kill9_mid_write qemu 'QEMU killed by SIGKILL' qemu_exit.signal 9
}

# On Debian's QEMU a dead bridge cannot be replaced: the session crashes
# with the cause, and the fsync'ed data is there after a start (which
# boots on vmux's QEMU again).
t_kill9_bridge_mid_write() {
	vmux stop ws >/dev/null || return 1
	VMUX_QEMU=$(command -v qemu-system-x86_64) vmux start ws || return 1
	kill9_mid_write bridge 'the bridge was killed by SIGKILL' \
		qemu_exit.cause 'the bridge was killed by SIGKILL'
}

# On vmux's QEMU the bridge killed mid-write is replaced: the session stays
# running (no restart, no journal replay), the writer's exec ends with its
# connection, and every line the host saw synced is in the file, in order.
t_kill9_bridge_replaced_mid_write() {
	local b synced last log=log-replaced
	vmux exec ws -- sh -c "i=0; while [ ! -e /tmp/stop ]; do echo \$i >> $log; sync; echo \$i; i=\$((i+1)); done" \
		>"$TMP/synced-replaced" 2>/dev/null &
	bg_track $!
	wait_for 60 bash -c "n=\$(tail -n 1 '$TMP/synced-replaced' 2>/dev/null); (( \${n:-0} >= 20 ))" ||
		fail "writer did not get going" || return 1
	b=$(session_field ws pids.bridge)
	kill -9 "$b"
	wait_for 15 bash -c "b2=\$('$VMUX' ls --json | jq -r '.[] | select(.name==\"ws\") | .pids.bridge'); [[ \$b2 != $b ]] && kill -0 \$b2" ||
		fail "no new bridge: $(vmux ls)" || return 1
	wait_for 15 bash -c "'$VMUX' exec ws -- touch /tmp/stop" || fail "the session does not answer" || return 1
	expect_match table "$(vmux ls)" "ws +running" || return 1
	synced=$(tail -n 1 "$TMP/synced-replaced")
	last=$(vmux exec ws -- tail -n 1 "$log") || return 1
	((last >= synced)) || fail "lost fsync'ed data: last $last < synced $synced" || return 1
	vmux exec ws -- sh -c "seq 0 $last | cmp - $log" || fail "$log is not 0..$last"
}

t_kill9_everything_mid_write() {
	kill9_mid_write all 'QEMU gone \(exit status unknown\)'
}

t_logs() {
	local out
	out=$(vmux logs ws) || return 1
	expect_match boots "$(grep -c 'vmux-init: start' <<<"$out")" '^[3-9]$' || return 1
	expect_eq "-n 1" "$(vmux logs -n 1 ws | wc -l)" 1 || return 1
	# what the guest prints cannot drive the user's terminal
	vmux exec ws -- sh -c 'printf "evil\033]0;pwned\007\033[2J\n" > /dev/console' || return 1
	wait_for 10 bash -c "'$VMUX' logs ws | grep -qF 'evil\x1b]0;pwned\x07\x1b[2J'" ||
		fail "escape not shown escaped: $(vmux logs -n 2 ws | od -c | head)" || return 1
	! vmux logs ws | grep -q $'\033' || fail "raw ESC in logs output"
}

# A guest that prints without end cannot fill the host's disk: past
# console-log-max the older part moves to console.log.1, once.
t_console_log_bounded() {
	local dir out cfg=$TMP/cfg-console
	mkdir -p "$cfg/vmux"
	printf 'console-log-max 1K\n' >"$cfg/vmux/config"
	out=$(XDG_CONFIG_HOME=$cfg vmux new flood 2>&1)
	[[ $? -eq 2 ]] && expect_match "bad size" "$out" "config:1: invalid size '1K' \\(4K to 1G\\)" ||
		return 1
	printf 'console-log-max 64K\n' >"$cfg/vmux/config"
	XDG_CONFIG_HOME=$cfg need_session flood
	dir=$VMUX_HOME/sessions/flood
	# 400 lines of 512 bytes: 200 KiB, three times the limit
	vmux exec flood -- sh -c 'i=0; pad=$(printf %0500d 0); while [ $i -lt 400 ]; do
		echo "flood $i $pad"; i=$((i+1)); done > /dev/console' || return 1
	wait_for 30 bash -c "(( \$(stat -c %s '$dir/console.log') <= 65536 ))" ||
		fail "console.log is $(stat -c %s "$dir/console.log") bytes" || return 1
	(($(stat -c %s "$dir/console.log.1") <= 65536)) ||
		fail "console.log.1 is $(stat -c %s "$dir/console.log.1") bytes" || return 1
	expect_eq mode "$(stat -c %a "$dir/console.log.1")" 600 || return 1
	# logs: the earlier part, then the current one; the oldest lines gone
	out=$(vmux logs flood) || return 1
	expect_match last "$out" 'flood 399 0+$' || return 1
	[[ $out != *"flood 0 "* ]] || fail "the first line is still there" || return 1
	expect_match "-n 1" "$(vmux logs -n 1 flood)" '^flood 399 ' || return 1
	# -n across the two parts: as many lines as asked, in order
	vmux exec flood -- sh -c 'echo after-rotation > /dev/console' || return 1
	wait_for 10 grep -q after-rotation "$dir/console.log" || fail "no line after rotation" || return 1
	out=$(vmux logs -n 100 flood) || return 1
	expect_eq "-n 100" "$(wc -l <<<"$out")" 100 || return 1
	expect_match "last line" "$out" $'\nafter-rotation$' || return 1
	out=$(grep -o '^flood [0-9]*' <<<"$out" | awk '{print $2}')
	expect_eq "in order" "$out" "$(seq 301 399)" || return 1
	# a line the rotation split: its start is in the earlier part
	vmux stop flood >/dev/null || return 1
	printf 'one\ntw' >"$dir/console.log.1"
	printf 'o\n' >"$dir/console.log"
	expect_eq "split line, -n 1" "$(vmux logs -n 1 flood)" two || return 1
	expect_eq "split line, -n 2" "$(vmux logs -n 2 flood | paste -sd,)" one,two || return 1
	vmux start flood >/dev/null || return 1
	vmux exec flood -- true || return 1
	vmux rm flood
}

t_concurrent_commands() {
	local dir holder out
	dir=$(session_field ws dir)
	# Someone holds the session: start and stop wait for it and say so.
	flock -o "$dir/lock" sleep 600 & # -o: only flock itself holds it
	holder=$!
	bg_track $holder
	wait_for 5 bash -c "! flock -n '$dir/lock' true" || fail "lock not taken" || return 1
	vmux stop ws 2>"$TMP/stop.err" &
	local stopper=$!
	wait_for 10 grep -q "waiting for" "$TMP/stop.err" ||
		fail "no waiting notice: $(cat "$TMP/stop.err")" || return 1
	expect_eq "still running" "$(state ws)" running || return 1
	kill "$holder"
	wait "$stopper" || fail "stop failed: $(cat "$TMP/stop.err")" || return 1
	expect_eq state "$(state ws)" stopped || return 1
	# Two restarts and a start at once: one VM, a sound record.
	vmux restart ws >/dev/null 2>"$TMP/r1" &
	local p1=$!
	vmux restart ws >/dev/null 2>"$TMP/r2" &
	local p2=$!
	vmux start ws >/dev/null 2>"$TMP/r3"
	wait "$p1" || fail "restart 1: $(cat "$TMP/r1")" || return 1
	wait "$p2" || fail "restart 2: $(cat "$TMP/r2")" || return 1
	expect_eq state "$(state ws)" running || return 1
	expect_eq qemus "$(pgrep -c -f -- "$dir/console.log")" 1 || return 1
	vmux exec ws -- md5sum -c data.md5
}

t_rm_keep_workspace_and_reuse() {
	local kept out
	vmux exec ws -- sh -c 'echo kept > mark && sync' || return 1
	out=$(vmux rm --keep-workspace ws 2>&1) || fail "rm: $out" || return 1
	kept=$VMUX_HOME/workspaces/ws.img
	expect_match notice "$out" "kept as $kept" || return 1
	[[ -f $kept && ! -e $VMUX_HOME/sessions/ws ]] || fail "kept: $(ls -la "$VMUX_HOME"/workspaces)" || return 1
	need_session ws2 --workspace "$kept"
	expect_eq mark "$(vmux exec ws2 -- cat mark)" kept || return 1
	expect_eq owned "$(session_field ws2 workspace.owned)" false || return 1
	# one workspace, one VM
	out=$(vmux new ws3 --workspace "$kept" 2>&1)
	[[ $? -eq 125 ]] && expect_match "in use" "$out" "in use by session 'ws2'" || return 1
	[[ ! -e $VMUX_HOME/sessions/ws3 ]] || fail "ws3 left behind" || return 1
	# not an ext4 image: refused before anything starts
	head -c 1M /dev/zero >"$TMP/zero.img"
	out=$(vmux new ws4 --workspace "$TMP/zero.img" 2>&1)
	[[ $? -eq 125 ]] && expect_match "not ext4" "$out" "no ext4 file system" || return 1
	# the user's image survives rm
	vmux rm ws2 || return 1
	[[ -f $kept ]] || fail "rm deleted the user's image"
}

t_disk_flag_and_rm() {
	local img out
	need_session small --disk 64M
	out=$(vmux exec small -- df -k /workspace | tail -1) || return 1
	(($(awk '{print $2}' <<<"$out") < 70000)) || fail "size: $out" || return 1
	img=$(session_field small workspace.path)
	vmux rm small || return 1
	[[ ! -e $img ]] || fail "rm left the workspace $img" || return 1
	out=$(vmux new bad --disk 5X 2>&1)
	[[ $? -eq 2 ]] && expect_match "bad size" "$out" "invalid --disk '5X'" || return 1
	expect_status 2 vmux new bad --disk 1M 2>/dev/null || return 1
	expect_status 2 vmux new bad --disk 1G --workspace "$TMP/zero.img" 2>/dev/null || return 1
	[[ ! -e $VMUX_HOME/sessions/bad ]]
}

check "workspace: ext4 at /workspace, home and cwd, sparse 0600 image" t_workspace_is_home
check "stop and start keep data, cid; states and errors said" t_stop_start_keeps_data
check "kill -9 of QEMU mid-write: crashed, start, fsync'ed data all there" t_kill9_qemu_mid_write
check "kill -9 of the bridge mid-write on Debian's QEMU: crashed with the cause, start, data there" t_kill9_bridge_mid_write
check "kill -9 of the bridge mid-write on vmux's QEMU: replaced, running, data there" t_kill9_bridge_replaced_mid_write
check "kill -9 of every process (a host reboot): crashed, start, data there" t_kill9_everything_mid_write
check "logs: every boot, -n, guest escapes shown escaped" t_logs
check "a console flood stays within console-log-max (logs spans both parts)" t_console_log_bounded
check "concurrent commands wait for the lock; one VM, sound record" t_concurrent_commands
check "rm --keep-workspace, new --workspace, in use, not ext4" t_rm_keep_workspace_and_reuse
check "--disk size, bad sizes, rm deletes the workspace" t_disk_flag_and_rm
