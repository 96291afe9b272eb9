#!/usr/bin/env bash
# 28-pause: a session is a file. vmux pause saves a running guest whole
# (memory, processes, shells) into its folder and ends its processes;
# anything that touches it resumes it: a counter loop goes on, a /tmp
# marker and a shell's unexported variable are there, `vmux shell` in tmux
# re-attaches by itself, the guest's clock is set from the host. Also:
# resume after every process is gone and the page cache dropped; pause and
# resume with both cores busy; 100 cycles with a growing file's checksum
# intact; a damaged state and one from another build refused by name (start
# --cold boots the workspace); a pause that cannot write its files leaves
# the session running; a session with a host folder refuses, naming it;
# vmux fork: copies that go on from the parent's memory and workspace, each
# with its own host name, machine-id and CID, and then go apart.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../tui/tmux.sh"
tui_trap

need_session ps --memory 192
DIR=$VMUX_HOME/sessions/ps

# count: the guest's counter (a background loop adding one every 0.1 s)
count() { vmux exec "$1" -- cat /tmp/count 2>/dev/null; }
# procs_of NAME: processes of the session (QEMU, bridge, passt, keeper)
procs_of() { pgrep -f -- "$VMUX_HOME/sessions/$1/" || true; }
state_of() { session_field "$1" state; }
counter_grows() { local a; a=$(count "$1") && [[ -n $a ]] && wait_for 10 bash -c "(( \$('$VMUX' exec '$1' -- cat /tmp/count) > $a ))"; }

# guest_setup NAME: the marker and the counter loop
guest_setup() {
	vmux exec "$1" -- sh -c 'echo kept >/tmp/mark; (i=0; while :; do i=$((i+1)); echo $i >/tmp/count.n; mv /tmp/count.n /tmp/count; sleep 0.1; done) </dev/null >/dev/null 2>&1 &'
}

t_setup() {
	guest_setup ps || return 1
	tm new-session -d -s sh -x 100 -y 30 "$VMUX shell ps; sleep 60"
	wait_on sh 'shell shell-1 in ps' 20 || return 1
	type_line 'SECRET=in-$((40+2))-memory' sh
	type_line 'echo set-$((1+1))' sh
	wait_on sh '^set-2' 20 && counter_grows ps
}

t_pause() {
	local out before
	before=$(count ps)
	out=$(vmux pause ps --json) || fail "pause failed: $out" || return 1
	echo "figure: pause took $(jq .ms <<<"$out") ms"
	expect_eq state "$(state_of ps)" paused || return 1
	expect_match "ls" "$(vmux ls)" 'ps +paused .* - .*since ' || return 1
	[[ -z $(procs_of ps) ]] || fail "processes left: $(ps -o pid,args -p "$(procs_of ps | tr '\n' ',' | sed 's/,$//')")" || return 1
	expect_eq "state file mode" "$(stat -c %a "$DIR/state.vmstate")" 600 || return 1
	expect_eq "RAM file mode" "$(stat -c %a "$DIR/memory.ram")" 600 || return 1
	expect_eq "folder mode" "$(stat -c %a "$DIR")" 700 || return 1
	# a paused session holds no memory: its RAM file is not in the page cache
	[[ -n $before ]] || fail "no counter before the pause"
}

t_touch_resumes() {
	local c1 out
	out=$(vmux exec ps -- cat /tmp/mark 2>&1)
	expect_match "exec resumes" "$out" 'kept' || return 1
	expect_match "it says so" "$out" "resuming 'ps'" || return 1
	expect_eq state "$(state_of ps)" running || return 1
	c1=$(count ps)
	[[ $c1 -gt 0 ]] || fail "the counter is gone: '$c1'" || return 1
	counter_grows ps || fail "the counter does not go on" || return 1
	# the shell attached in tmux came back by itself, its variable with it
	wait_on sh 'attached to shell shell-1 again' 20 || return 1
	type_line 'echo "$SECRET"' sh
	wait_on sh '^in-42-memory' 20
}

t_clock_and_rng() {
	local g h
	vmux exec ps -- date -s @1000000000 >/dev/null || fail "cannot set the guest clock" || return 1
	vmux pause ps >/dev/null || return 1
	vmux resume ps >/dev/null || fail "resume failed" || return 1
	g=$(vmux exec ps -- date +%s) h=$(date +%s)
	((g > h - 5 && g < h + 5)) || fail "guest clock $g, host $h: not set on resume"
}

t_cold_from_disk() {
	local pids
	vmux pause ps >/dev/null || return 1
	# nothing of the session is left running, and nothing is cached
	pids=$(pgrep -f -- "$VMUX_HOME" || true)
	[[ -z $pids ]] || kill -9 $pids
	sync
	echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || echo "figure: page cache not dropped (not root)"
	vmux resume ps >/dev/null || fail "resume from disk failed" || return 1
	expect_eq mark "$(vmux exec ps -- cat /tmp/mark)" kept || return 1
	counter_grows ps
}

t_busy() {
	local b1 b2 i
	(while :; do :; done) &
	b1=$!
	(while :; do :; done) &
	b2=$!
	bg_track $b1
	bg_track $b2
	for i in 1 2 3; do
		vmux pause ps >/dev/null || { fail "pause $i under load failed"; break; }
		vmux resume ps >/dev/null || { fail "resume $i under load failed"; break; }
	done
	kill $b1 $b2
	expect_eq mark "$(vmux exec ps -- cat /tmp/mark)" kept || return 1
	counter_grows ps
}

# 100 cycles; the guest appends to a file before each and its checksum,
# taken in the guest and by the test, must agree every time
t_hundred_cycles() {
	local i want got
	vmux exec ps -- sh -c ': >/workspace/grow' || return 1
	want=$(printf '' | sha256sum | cut -d' ' -f1)
	for i in $(seq 1 100); do
		vmux pause ps >/dev/null || { fail "pause $i failed"; return 1; }
		# the touch that resumes it appends the next line
		got=$(vmux exec ps -- sh -c "echo line-$i >>/workspace/grow; sha256sum /workspace/grow" 2>/dev/null | cut -d' ' -f1)
		want=$(for j in $(seq 1 "$i"); do echo "line-$j"; done | sha256sum | cut -d' ' -f1)
		[[ $got == "$want" ]] || { fail "cycle $i: checksum $got, want $want"; return 1; }
	done
	counter_grows ps
}

t_damaged_state() {
	local out
	vmux exec ps -- sh -c 'echo safe >/workspace/keep; sync' || return 1
	vmux pause ps >/dev/null || return 1
	truncate -s 1000 "$DIR/state.vmstate"
	out=$(vmux resume ps 2>&1)
	[[ $? -ne 0 ]] || fail "a truncated state was resumed" || return 1
	expect_match "says why" "$out" "not what was saved .truncated or changed." || return 1
	expect_match "says what to do" "$out" 'vmux start --cold ps' || return 1
	expect_eq "still paused" "$(state_of ps)" paused || return 1
	out=$(vmux exec ps -- true 2>&1)
	[[ $? -ne 0 ]] && expect_match "a touch is refused too" "$out" 'truncated or changed' || return 1
	vmux start --cold ps >/dev/null || fail "start --cold failed" || return 1
	expect_eq "workspace intact" "$(vmux exec ps -- cat /workspace/keep)" safe || return 1
	[[ ! -e $DIR/state.vmstate ]] || fail "the state file outlived start --cold"
}

t_other_build() {
	local out rec=$DIR/session.json
	vmux pause ps >/dev/null || return 1
	# as if vmux-qemu had been rebuilt since: the record's key no longer
	# matches the files
	jq '.state_key |= sub("qemu=[0-9]+"; "qemu=1")' "$rec" >"$TMP/rec" && cat "$TMP/rec" >"$rec"
	out=$(vmux resume ps 2>&1)
	[[ $? -ne 0 ]] || fail "a state of another build was resumed" || return 1
	expect_match "says why" "$out" 'saved by another QEMU build or guest' || return 1
	expect_eq "still paused" "$(state_of ps)" paused || return 1
	vmux start --cold ps >/dev/null || fail "start --cold failed"
}

t_pause_fails_half_way() {
	local out
	command -v chattr >/dev/null || fail "no chattr (e2fsprogs)" || return 1
	chattr +i "$DIR" || fail "chattr +i failed" || return 1
	out=$(vmux pause ps 2>&1)
	local rc=$?
	chattr -i "$DIR"
	[[ $rc -ne 0 ]] || fail "pause into a folder that takes no file succeeded" || return 1
	expect_match "says it keeps running" "$out" 'cannot pause .ps.: .*it keeps running' || return 1
	expect_eq state "$(state_of ps)" running || return 1
	expect_eq "answers" "$(vmux exec ps -- echo up)" up || return 1
	[[ ! -e $DIR/state.vmstate && ! -e $DIR/state.vmstate.tmp ]] || fail "a state file was left"
}

t_mount_refused() {
	local out root=$TMP/roots
	mkdir -p "$root/share" "$XDG_CONFIG_HOME/vmux"
	chown 4242:4242 "$root/share"
	printf 'allowed-mount-root %s\n' "$root" >"$XDG_CONFIG_HOME/vmux/config"
	vmux new mt --memory 128 --mount "$root/share:/mnt/share" >/dev/null || fail "new with a mount failed" || return 1
	out=$(vmux pause mt 2>&1)
	[[ $? -ne 0 ]] || fail "a session with a host folder was paused" || return 1
	expect_match "names the folder" "$out" "host folder $root/share at /mnt/share.*keeps running" || return 1
	expect_eq state "$(state_of mt)" running || return 1
	out=$(vmux fork mt mt2 2>&1)
	[[ $? -ne 0 ]] && expect_match "fork refused" "$out" "cannot fork 'mt': it has the host folder" || return 1
	vmux rm -f mt >/dev/null
}

t_fork() {
	local out c p id1 id2
	# (booted cold by the checks before: a new counter)
	guest_setup ps || return 1
	vmux exec ps -- sh -c 'echo parent >/workspace/who; echo parent-mem >/tmp/who; echo 0123456789abcdef0123456789abcdef >/etc/machine-id' || return 1
	counter_grows ps || fail "the parent's counter does not go" || return 1
	out=$(vmux fork ps f1 f2 --json) || fail "fork failed: $out" || return 1
	echo "figure: fork: parent frozen $(jq .frozen_ms <<<"$out") ms, children ready in $(jq -c '[.children[].ready_ms]' <<<"$out") ms"
	for c in f1 f2; do
		expect_eq "$c state" "$(state_of "$c")" running || return 1
		expect_eq "$c memory" "$(vmux exec $c -- cat /tmp/who /tmp/mark | tr '\n' ' ')" "parent-mem kept " || return 1
		expect_eq "$c workspace" "$(vmux exec $c -- cat /workspace/who)" parent || return 1
		expect_eq "$c host name" "$(vmux exec $c -- hostname)" "$c" || return 1
		expect_eq "$c parent" "$(session_field "$c" parent)" ps || return 1
		counter_grows "$c" || fail "$c's counter does not go on" || return 1
	done
	id1=$(vmux exec f1 -- cat /etc/machine-id) id2=$(vmux exec f2 -- cat /etc/machine-id)
	[[ $id1 != "$id2" && $id1 != 0123456789abcdef0123456789abcdef && ${#id1} -eq 32 ]] ||
		fail "machine-ids not their own: $id1 $id2" || return 1
	[[ $(session_field f1 cid) != "$(session_field ps cid)" && $(session_field f1 cid) != "$(session_field f2 cid)" ]] ||
		fail "CIDs shared" || return 1
	# they go apart, in memory and on disk
	vmux exec f1 -- sh -c 'echo f1 >/workspace/who; echo f1-mem >/tmp/who' || return 1
	vmux exec f2 -- sh -c 'echo f2 >/workspace/who' || return 1
	expect_eq "parent workspace" "$(vmux exec ps -- cat /workspace/who)" parent || return 1
	expect_eq "parent memory" "$(vmux exec ps -- cat /tmp/who)" parent-mem || return 1
	expect_eq "f2 memory" "$(vmux exec f2 -- cat /tmp/who)" parent-mem || return 1
	expect_eq "f2 workspace" "$(vmux exec f2 -- cat /workspace/who)" f2 || return 1
	# a fork of a paused session, then rm takes the state with it
	vmux pause f1 >/dev/null || return 1
	vmux fork f1 f3 >/dev/null || fail "fork of a paused session failed" || return 1
	expect_eq "f3 memory" "$(vmux exec f3 -- cat /tmp/who)" f1-mem || return 1
	expect_eq "f1 still paused" "$(state_of f1)" paused || return 1
	vmux rm f1 >/dev/null || return 1
	[[ ! -e $VMUX_HOME/sessions/f1 ]] || fail "rm left the paused session's folder"
	out=$(vmux fork ps f2 2>&1)
	[[ $? -ne 0 ]] && expect_match "an existing name" "$out" "already exists" || return 1
	# one name taken, one free: the free one is made, the parent runs on,
	# nothing of the other nor of the copy's state is left
	out=$(vmux fork ps f2 f4 2>&1)
	[[ $? -ne 0 ]] && expect_match "the taken name" "$out" "f2.*already exists" || return 1
	expect_eq "f4 made" "$(state_of f4)" running || return 1
	expect_eq "f4 memory" "$(vmux exec f4 -- cat /tmp/who)" parent-mem || return 1
	expect_eq "the parent" "$(state_of ps)" running || return 1
	counter_grows ps || fail "the parent's counter stopped" || return 1
	[[ -z $(ls "$VMUX_HOME/sessions/ps" | grep -E 'fork|vmstate') ]] ||
		fail "a copy's state is left: $(ls "$VMUX_HOME/sessions/ps")"
	vmux rm -f f2 f3 f4 >/dev/null
}

# an --image root: its writes to / live in a layer in the session's folder
# (root.qcow2), which a pause keeps and a fork copies
t_image_root() {
	local rootfs=$TMP/rootfs
	mkdir -p "$rootfs/bin" "$rootfs/etc"
	cp "$(command -v busybox)" "$rootfs/bin/busybox"
	for c in sh cat echo sync hostname; do ln -s busybox "$rootfs/bin/$c"; done
	echo 'root:x:0:0:root:/root:/bin/sh' >"$rootfs/etc/passwd"
	vmux new im --memory 128 --image "$rootfs" >/dev/null || fail "new --image failed" || return 1
	vmux exec im -- sh -c 'echo on-root >/etc/mine; sync' || return 1
	vmux pause im >/dev/null || fail "pause of an --image session failed" || return 1
	expect_eq "root kept" "$(vmux exec im -- cat /etc/mine)" on-root || return 1
	vmux fork im im2 >/dev/null || fail "fork of an --image session failed" || return 1
	vmux exec im2 -- sh -c 'echo im2 >/etc/mine; sync' || return 1
	expect_eq "parent root" "$(vmux exec im -- cat /etc/mine)" on-root || return 1
	expect_eq "copy root" "$(vmux exec im2 -- cat /etc/mine)" im2 || return 1
	vmux rm -f im im2 >/dev/null
}

# templates: the first new of a kind boots and keeps its guest; the next
# boots nothing (no kernel in its log), with its own name, CID, machine-id
# and an empty workspace; new --cold boots
booted() { vmux logs "$1" | grep -q 'vmux-init: start'; }
t_template() {
	local n
	vmux new tp1 --memory 160 >/dev/null || fail "new tp1 failed" || return 1
	booted tp1 || fail "the first new of a kind did not boot a kernel" || return 1
	n=$(find "$VMUX_HOME/templates" -name key 2>/dev/null | wc -l)
	((n >= 1)) || fail "no template kept" || return 1
	vmux exec tp1 -- sh -c 'echo tp1 >/workspace/own; echo 0123456789abcdef0123456789abcdef >/etc/machine-id; sync' || return 1
	vmux new tp2 --memory 160 >/dev/null || fail "new tp2 failed" || return 1
	! booted tp2 || fail "tp2 booted a kernel: no template used" || return 1
	expect_eq "tp2 host name" "$(vmux exec tp2 -- hostname)" tp2 || return 1
	expect_eq "tp2 workspace is its own" "$(vmux exec tp2 -- sh -c 'ls /workspace/own 2>/dev/null; echo .')" . || return 1
	[[ $(session_field tp2 cid) != "$(session_field tp1 cid)" ]] || fail "tp2 has tp1's CID" || return 1
	vmux exec tp2 -- sh -c 'echo two >/workspace/own' || return 1
	expect_eq "tp1 workspace" "$(vmux exec tp1 -- cat /workspace/own)" tp1 || return 1
	vmux pause tp2 >/dev/null && vmux resume tp2 >/dev/null || fail "a templated session does not pause and resume" || return 1
	expect_eq "tp2 after resume" "$(vmux exec tp2 -- cat /workspace/own)" two || return 1
	vmux new tp3 --memory 160 --cold >/dev/null || fail "new --cold failed" || return 1
	booted tp3 || fail "new --cold did not boot a kernel" || return 1
	vmux rm -f tp1 tp2 tp3 >/dev/null
}

# new --foreground is a batch job's body: SIGUSR2 (Slurm's notice before
# the time limit) pauses the session and ends vmux; start --foreground
# resumes it from memory
t_time_limit() {
	local pid
	"$VMUX" new tl --memory 128 --foreground >"$TMP/tl.out" 2>"$TMP/tl.err" &
	pid=$!
	bg_track $pid
	wait_for 60 bash -c "[[ \$('$VMUX' ls --json | jq -r '.[] | select(.name==\"tl\") | .state') == running ]]" ||
		fail "tl never ran: $(cat "$TMP/tl.err")" || return 1
	vmux exec tl -- sh -c 'echo before-limit >/tmp/m' || return 1
	kill -USR2 $pid
	wait $pid || fail "vmux --foreground exited $? at the notice: $(cat "$TMP/tl.err")" || return 1
	expect_eq state "$(state_of tl)" paused || return 1
	"$VMUX" start tl --foreground >"$TMP/tl.out" 2>"$TMP/tl.err" &
	pid=$!
	bg_track $pid
	wait_for 60 bash -c "[[ \$('$VMUX' ls --json | jq -r '.[] | select(.name==\"tl\") | .state') == running ]]" ||
		fail "tl never resumed: $(cat "$TMP/tl.err")" || return 1
	expect_eq "memory kept" "$(vmux exec tl -- cat /tmp/m)" before-limit || return 1
	kill -TERM $pid
	wait $pid
	expect_eq "stopped by SIGTERM" "$(state_of tl)" stopped || return 1
	vmux rm -f tl >/dev/null
}

check "a counter loop, a marker and a shell's variable in the guest" t_setup
check "pause: files 0600, no process left, ls says paused" t_pause
check "a touch resumes it: counter, marker, the shell re-attaches" t_touch_resumes
check "resume sets the guest's clock from the host" t_clock_and_rng
check "resume after every process is killed and the page cache dropped" t_cold_from_disk
check "pause and resume with both cores busy" t_busy
check "100 pause/resume cycles, a growing file's checksum intact" t_hundred_cycles
check "a truncated state is refused; start --cold boots the workspace" t_damaged_state
check "a state of another build is refused" t_other_build
check "a pause that cannot write its files leaves it running" t_pause_fails_half_way
check "a session with a host folder refuses pause and fork, naming it" t_mount_refused
check "fork: copies go on from the parent's memory and workspace, then apart" t_fork
check "an --image root's writes are kept by pause and copied by fork" t_image_root
check "templates: a second new of a kind boots nothing, has its own identity" t_template
check "the time limit's notice (SIGUSR2) pauses a --foreground session" t_time_limit
