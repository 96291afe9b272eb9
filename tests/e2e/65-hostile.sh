#!/usr/bin/env bash
# 65-hostile: a guest whose agent lies gets nothing on the host. The guest
# boots an initramfs whose agent is tests/tools/hostile-agent.c (built by
# tests/tests.mk, booted with `vmux new --initrd`): it answers ping like the
# real agent, so the session comes up, and everything else with escape
# sequences and archives holding more than was asked for.
#   - `vmux cp h:/x-TRICK DIR`: nonzero exit, an error naming the offending
#     entry, DIR exactly as it was (names, modes, sizes, mtimes), nothing
#     written outside it; a stalled download ended by SIGTERM too
#   - no ESC, BEL, DEL or C1 byte from the guest reaches vmux's stdout or
#     stderr: agent errors, vmux ping (and --json), vmux shells (and
#     --json), attach ERROR frames in vmux shell, names in cp errors
source "$(dirname "$0")/lib.sh"
IMG=$BUILD/tests/hostile-initrd.img
[[ -f $IMG ]] || { echo "FAIL $IMG missing (make test builds it)"; exit 1; }
need_session h --initrd "$IMG"
W=$TMP/work
mkdir -p "$W/dst/y"
echo mine >"$W/dst/keep.txt"
echo "my rc" >"$W/dst/.bashrc"

# listing DIR: every entry under DIR with type, mode, size and mtime.
listing() { (cd "$1" && find . -printf '%p %y %m %s %T@\n' | LC_ALL=C sort); }

# no_controls FILE: fail if FILE holds a control character (C0 other than
# newline and tab, DEL, C1) or bytes that are not UTF-8 (a raw 0x9b is CSI).
no_controls() {
	if LC_ALL=C.UTF-8 grep -aqP '[\x{00}-\x{08}\x{0b}-\x{1f}\x{7f}-\x{9f}]' "$1" ||
		LC_ALL=C.UTF-8 grep -aqxv '.*' "$1"; then
		echo "control bytes reached the terminal:"
		od -c "$1" | head -n 20
		return 1
	fi
}

# cp_refused TRICK NAMED: vmux cp h:/x-TRICK fails naming NAMED, DIR unchanged.
cp_refused() {
	local before after rc
	before=$(listing "$W/dst")
	vmux cp "h:/x-$1" "$W/dst" >"$TMP/cp.out" 2>&1
	rc=$?
	cat "$TMP/cp.out"
	[[ $rc -ne 0 ]] || fail "vmux cp h:/x-$1 succeeded" || return 1
	grep -qF -- "$2" "$TMP/cp.out" || fail "the error does not name '$2'" || return 1
	no_controls "$TMP/cp.out" || return 1
	after=$(listing "$W/dst")
	[[ $before == "$after" ]] || fail "DIR changed: $(diff <(echo "$before") <(echo "$after"))" || return 1
	[[ ! -e $W/evil && ! -e /tmp/vmux-hostile-pwned && ! -e $W/y ]] ||
		fail "something was written outside DIR"
}
t_cp_bashrc() { cp_refused bashrc "'.bashrc'"; }
t_cp_other() { cp_refused other "'y/evil'"; }
t_cp_dotdot() { cp_refused dotdot ".."; }
t_cp_abs() { cp_refused abs "'etc/evil'"; }
t_cp_link() { cp_refused link "'z'"; }
t_cp_hard() { cp_refused hard "'.bashrc'"; }
t_cp_symlink() {
	# the link out is skipped (with a warning); what follows it lands in
	# a plain directory inside DIR, never in /tmp
	vmux cp h:/x-symlink "$W/dst" >"$TMP/cp.out" 2>&1 || { cat "$TMP/cp.out"; return 1; }
	grep -q "skipped 1 entries" "$TMP/cp.out" || fail "no warning: $(cat "$TMP/cp.out")" || return 1
	[[ ! -e /tmp/vmux-hostile-pwned ]] || fail "written through the link" || return 1
	[[ -d $W/dst/x-symlink/esc && ! -L $W/dst/x-symlink/esc ]] ||
		fail "x-symlink/esc is not a plain directory" || return 1
	rm -rf "$W/dst/x-symlink"
}
t_cp_esc() { cp_refused esc "\\x1b[2J"; }
t_cp_interrupted() {
	# a stalled download, interrupted: the staging directory goes too
	local before pid
	before=$(listing "$W/dst")
	"$VMUX" cp h:/x-slow "$W/dst" >"$TMP/cp.out" 2>&1 &
	pid=$!
	bg_track $pid
	wait_for 20 compgen -G "$W/dst/.vmux-cp-*" >/dev/null || fail "no staging directory" || return 1
	kill -TERM $pid
	wait $pid
	expect_eq "exit status" $? 143 || return 1
	[[ $before == "$(listing "$W/dst")" ]] || fail "DIR changed: $(listing "$W/dst")"
}
t_cp_honest() {
	vmux cp h:/x-fine "$W/dst" || return 1
	expect_eq content "$(cat "$W/dst/x-fine/ok.txt")" "fine" || return 1
	expect_eq late "$(cat "$W/dst/x-fine/late.txt")" "late" || return 1
	expect_eq "my .bashrc" "$(cat "$W/dst/.bashrc")" "my rc"
}

# shows CMD...: run a vmux command, keep both streams, check for controls.
shows() {
	"$VMUX" "$@" >"$TMP/show.out" 2>&1 </dev/null
	cat "$TMP/show.out"
	no_controls "$TMP/show.out"
}
# peak_kib FILE CMD...: run CMD (output to $TMP/peak.out), its peak RSS
# in KiB into FILE; CMD's status.
peak_kib() {
	local f=$1
	shift
	/usr/bin/time -o "$f" -f %M "$@" >"$TMP/peak.out" 2>&1 </dev/null
}

# A 64 MiB list_shells reply is refused at the cap, costing the host
# little: vmux shells stays within 64 MiB of its normal peak.
t_huge_reply_refused_cheaply() {
	local base big
	need_session hbig --initrd "$IMG"
	peak_kib "$TMP/base" "$VMUX" shells h || return 1
	base=$(tail -n 1 "$TMP/base")
	peak_kib "$TMP/big" "$VMUX" shells hbig
	expect_eq status $? 125 || return 1
	grep -q "agent reply too large" "$TMP/peak.out" || fail "said: $(cat "$TMP/peak.out")" || return 1
	big=$(tail -n 1 "$TMP/big")
	echo "figure: vmux shells peak RSS: ${base} KiB normal, ${big} KiB facing a 64 MiB reply"
	((big - base < 65536)) || fail "peak ${big} KiB vs ${base} KiB" || return 1
	vmux rm -f hbig
}

# 200000 arguments in a shell's command (under the cap) take linear time:
# the table shows the first AGENT_COMMAND_MAX bytes and "...".
t_wide_reply_linear() {
	local peak
	need_session hwide --initrd "$IMG"
	peak_kib "$TMP/wide" timeout 30 "$VMUX" shells hwide || fail "vmux shells: $(cat "$TMP/peak.out")" || return 1
	grep -Eq '^w .* a x x x.*\.\.\.$' "$TMP/peak.out" || fail "table: $(head -c 600 "$TMP/peak.out")" || return 1
	peak=$(tail -n 1 "$TMP/wide")
	echo "figure: vmux shells peak RSS facing 200000 arguments: ${peak} KiB"
	peak_kib "$TMP/wide" timeout 30 "$VMUX" shells hwide --json || return 1
	expect_eq "json keeps them" "$(jq '.[0].command | length' "$TMP/peak.out")" 229377 || return 1
	vmux rm -f hwide
}

t_exec_error() {
	shows exec h -- true || return 1
	grep -qF 'cwd /no\x1b[2Jdir' "$TMP/show.out" || fail "error not shown escaped"
}
t_ping() {
	shows ping h || return 1
	grep -qF '6.1\x1b[31m' "$TMP/show.out" || fail "kernel not shown escaped"
}
t_ping_json() {
	shows ping h --json || return 1
	expect_eq kernel "$(jq -r .kernel "$TMP/show.out" | od -An -c | tr -s ' ' | head -n 1)" \
		" 6 . 1 033 [ 3 1 m \\n"
}
t_shells() {
	shows shells h || return 1
	grep -qF 'ev\x1b[31mil' "$TMP/show.out" || fail "id not shown escaped"
}
t_shells_json() {
	shows shells h --json || return 1
	expect_eq "C1 kept as data" "$(jq -r '.[0].command' "$TMP/show.out" | od -An -tx1 | tr -d ' \n')" \
		"726d1b5d303b7807202d726620c29b324a0a"
}
t_attach_error() {
	shows shell h --id evil
	grep -qF 'bad\x1b[2J' "$TMP/show.out" || fail "ERROR frame not shown escaped" || return 1
	no_controls "$TMP/show.out"
}
# An agent that ends at once (hquit): vmux-init gives up the port it held
# for it, so the host is refused and says nothing listens, instead of
# waiting for a reply on a queue nobody serves.
t_agent_that_quits() {
	local log=$VMUX_HOME/sessions/hquit/console.log out
	vmux new hquit --initrd "$IMG" --no-agent >/dev/null || return 1
	wait_for 60 grep -aq 'the next agent listens by itself' "$log" ||
		fail "vmux-init kept the port: $(grep -a 'agent' "$log")" || return 1
	# straight to the bridge: the guest refuses (the bridge closes without
	# a word) rather than accepting into a queue ("OK ...")
	out=$(printf 'CONNECT 5005\n' | timeout 20 socat -t 10 - UNIX-CONNECT:"$VMUX_HOME/sessions/hquit/vsock.sock" 2>&1)
	expect_eq "refused, not queued" "$out" "" || return 1
	vmux rm -f hquit >/dev/null
}

# An agent that lists 64 new shells every second, each gone once attached:
# the recorder stops at the session's file cap (headers counted in its
# bytes), says so once, and a later boot of the session adds nothing.
t_recorder_bounded() {
	local dir files bytes
	vmux new hmany --initrd "$IMG" --record >/dev/null || return 1
	dir=$(session_field hmany dir)
	wait_for 60 grep -q 'no new shell is recorded' "$dir/recorder.log" ||
		fail "the recorder never stopped: $(ls "$dir/recordings" | wc -l) files" || return 1
	files=$(find "$dir/recordings" -name '*.cast' | wc -l)
	expect_eq "files at the cap" "$files" 512 || return 1
	expect_eq "said once" "$(grep -c 'no new shell is recorded' "$dir/recorder.log")" 1 || return 1
	vmux restart hmany >/dev/null || return 1
	wait_for 60 eval '(( $(grep -c "no new shell is recorded" "$dir/recorder.log") >= 2 ))' ||
		fail "the next boot's recorder did not see the cap: $(cat "$dir/recorder.log" "$dir/recorder.exit" 2>&1)" || return 1
	expect_eq "files after a boot" "$(find "$dir/recordings" -name '*.cast' | wc -l)" 512 || return 1
	bytes=$(du -sb "$dir/recordings" | cut -f1)
	((bytes < 1024 * 1024)) || fail "$bytes bytes for 512 headers"
	vmux rm -f hmany >/dev/null
}

check "cp: .bashrc beside the source is refused, DIR unchanged" t_cp_bashrc
check "cp: y/evil is refused, DIR unchanged" t_cp_other
check "cp: ../evil is refused, DIR unchanged" t_cp_dotdot
check "cp: /etc/evil is refused, DIR unchanged" t_cp_abs
check "cp: a top-level symlink is refused, DIR unchanged" t_cp_link
check "cp: a hard link out of the source is refused, DIR unchanged" t_cp_hard
check "cp: a symlink to /tmp is skipped, nothing written through it" t_cp_symlink
check "cp: a name with escapes is refused and shown escaped" t_cp_esc
check "cp: an interrupted download leaves DIR as it was" t_cp_interrupted
check "cp: the honest part of a download still works" t_cp_honest
check "exec: the agent's error is shown escaped" t_exec_error
check "an agent that ends at once: vmux-init gives its port up" t_agent_that_quits
check "ping: guest strings shown escaped" t_ping
check "ping --json: escaped, data kept" t_ping_json
check "shells: table shown escaped" t_shells
check "shells --json: escaped, data kept" t_shells_json
check "shell: attach ERROR frame shown escaped" t_attach_error
check "a 64 MiB list_shells reply: refused at the cap, little memory" t_huge_reply_refused_cheaply
check "200000 arguments in a command: linear, cut with ..." t_wide_reply_linear
check "a recorder before an agent of endless shells: 512 files a session, then none" t_recorder_bounded

# vmux web facing these agents (run under ASan and TSan by the sanitize
# layer, as the rest of this file): a RESIZE of 65535x65535 reaches the
# page clamped, a 4 GiB frame header and the flood after it close the page
# at once and cost the server nothing, an ERROR frame's escapes are not
# passed on; the server stays up and small.
t_web_hostile() {
	local port web rss tries
	[[ -d $ROOT/tests/web/node_modules ]] || { fail "tests/web is not installed (make test runs npm ci)"; return 1; }
	need_session hsize --initrd "$IMG"
	need_session hframe --initrd "$IMG"
	for tries in 1 2 3 4 5; do
		port=$(shuf -i 20000-60000 -n 1)
		"$VMUX" web --listen "127.0.0.1:$port" >"$TMP/web.out" 2>"$TMP/web.err" &
		WEB_PID=$!
		bg_track "$WEB_PID"
		wait_for 10 grep -qs 'the wall:' "$TMP/web.out" && break
		kill "$WEB_PID" 2>/dev/null
	done
	web=http://127.0.0.1:$port
	export WEB=$web
	LINK_HSIZE=$(vmux grant hsize --web --url "$web" 2>/dev/null) &&
		LINK_HFRAME=$(vmux grant hframe --web --url "$web" 2>/dev/null) &&
		LINK_H=$(vmux grant h --web --shell evil --url "$web" 2>/dev/null) || { fail "grant --web"; return 1; }
	export LINK_HSIZE LINK_HFRAME LINK_H
	for s in hostile-size hostile-frame hostile-error; do
		(cd "$ROOT/tests/web" && timeout 120 node protocol.mjs "$s") || fail "$s" || return 1
	done
	kill -0 "$WEB_PID" || fail "vmux web is gone: $(tail -5 "$TMP/web.err")" || return 1
	rss=$(awk '/^VmHWM/ { print $2 }' /proc/"$WEB_PID"/status)
	echo "figure: vmux web's peak RSS facing the hostile agents: $((rss / 1024)) MiB"
	((rss < 96 * 1024)) || fail "vmux web peaked at $((rss / 1024)) MiB" || return 1
	kill "$WEB_PID"
	vmux rm -f hsize hframe >/dev/null
}
check "vmux web: a huge RESIZE, a 4 GiB frame, escapes in an ERROR" t_web_hostile
