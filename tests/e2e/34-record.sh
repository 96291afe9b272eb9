#!/usr/bin/env bash
# 34-record: vmux new --record records every shell on the host as asciicast
# v2: a shell that came and went between two looks, a live one with its
# resize; what `vmux replay` and Debian's `asciinema cat` give back is the
# very bytes the shell produced (colours, UTF-8, CRLF), the files are the
# host user's alone, vmux recordings lists them, and the recorder ends with
# the VM. replay refuses what is not a recording. The TUI plays a recording
# in place of the shell (C-b R, or `replay FILE` at the prompt) with its
# timing, seeks both ways and goes back to the shell.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../tui/tmux.sh"
tui_trap

need_session rc --memory 128 --record
RDIR=$(session_field rc dir)/recordings

# rec_of SHELL: the recording of shell SHELL (the first part).
rec_of() { ls "$RDIR"/"$1"-*.cast 2>/dev/null | head -n 1; }

t_short_shell_recorded_exactly() {
	local f
	# the shell's own bytes, as a client attached from the start got them
	printf 'printf "\\033[31mred\\033[0m caf\\303\\251 %%s\\\\n" $((6*7))\nexit\n' |
		vmux shell rc --id quick >"$TMP/live.out" 2>/dev/null || return 1
	grep -q 'red.*café 42' "$TMP/live.out" || fail "the shell printed: $(cat "$TMP/live.out")" || return 1
	wait_for 20 sh -c "'$VMUX' replay --speed 0 \"\$(ls $RDIR/quick-*.cast | head -n 1)\" 2>/dev/null | cmp -s - '$TMP/live.out'" ||
		fail "vmux replay differs from the shell's bytes" || return 1
	f=$(rec_of quick)
	script -qec "asciinema cat '$f' >'$TMP/asciinema.out'" /dev/null </dev/null
	cmp "$TMP/live.out" "$TMP/asciinema.out" || fail "asciinema cat differs from the shell's bytes" || return 1
	expect_eq "header" "$(head -n 1 "$f" | jq -c '[.version, .title]')" '[2,"rc:quick"]' || return 1
	expect_eq "the host user's alone" "$(stat -c %a "$f")" 600
}

t_input_recorded_when_asked() {
	local f typed
	vmux new ri --memory 128 --record-input >/dev/null || fail "boot ri" || return 1
	tm new-session -d -s ri -x 100 -y 30 "$VMUX shell ri --id typed; sleep 60"
	wait_on ri '~ #$' 30 || return 1
	# typing is recorded live: wait for the recorder to attach
	wait_for 20 sh -c "'$VMUX' shells ri --json | jq -e '.[].roster[] | select(.as == \"recorder\")' >/dev/null" ||
		fail "the recorder never attached" || return 1
	type_line 'echo in-$((3*3))' ri
	wait_on ri '^in-9' 20 || return 1
	f=$(ls "$(session_field ri dir)"/recordings/typed-*.cast | head -n 1)
	wait_for 20 sh -c "tail -n +2 '$f' | jq -j 'select(.[1] == \"i\") | .[2]' | grep -qF 'echo in-\$((3*3))'" ||
		fail "no input events in $f: $(tail -n +2 "$f" | jq -c 'select(.[1] == "i")' | head -n 5)" || return 1
	# --record alone: output only
	! cat "$RDIR"/*.cast | jq -e 'select(.[1]? == "i")' >/dev/null 2>&1 ||
		fail "a --record session recorded input" || return 1
	tm send-keys -t ri C-]
	vmux rm -f ri >/dev/null
}

# tui_replay WIN FILE: a TUI on rc in WIN, told to replay FILE.
tui_replay() {
	tm new-session -d -s "$1" -x 120 -y 30 \
		"env -i PATH=/usr/bin:/bin HOME=$TMP/home TERM=tmux-256color LANG=C.UTF-8 VMUX_HOME=$VMUX_HOME $VMUX tui rc" || return 1
	wait_on "$1" 'rc:' 30 || return 1
	tm send-keys -t "$1" C-b : || return 1
	tm send-keys -t "$1" -l "replay $2" && tm send-keys -t "$1" Enter
}

t_tui_replay() {
	# a recording of our own: one line at once, one 40 s later
	{
		echo '{"version": 2, "width": 60, "height": 10}'
		echo '[0.2, "o", "first-line\r\n"]'
		echo '[40.0, "o", "late-line\r\n"]'
		echo '[40.1, "m", "a marker is not shown"]'
	} >"$TMP/crafted.cast"
	tui_replay tv "$TMP/crafted.cast" || return 1
	wait_on tv 'first-line' 10 || return 1
	wait_on tv '"replay 0:0[0-9]/0:40 x1' 10 || return 1
	! screen tv | grep -q 'late-line' || fail "played ahead of its time" || return 1
	# Right seeks 5 s a press: eight reach the end
	tm send-keys -t tv Right Right Right Right Right Right Right Right || return 1
	wait_on tv 'late-line' 10 || return 1
	wait_on tv '0:40/0:40 x1 \(end\)' 10 || return 1
	! screen tv | grep -q 'marker' || fail "a marker was shown" || return 1
	# Left: back 5 s, parsed again from the start: the late line is gone
	tm send-keys -t tv Left || return 1
	wait_for 10 sh -c "! TMUX_TMPDIR=$TMP tmux -L $TUI_SOCK capture-pane -p -t tv | grep -q late-line" ||
		fail "seeking back left the late line" || return 1
	screen tv | grep -q 'first-line' || fail "seeking back lost the first line" || return 1
	# the file gone under it: seeking says so, the TUI lives on
	cp "$TMP/crafted.cast" "$TMP/kept.cast"
	rm "$TMP/crafted.cast"
	tm send-keys -t tv 0 || return 1
	wait_on tv 'crafted.cast: No such file' 10 || return 1
	mv "$TMP/kept.cast" "$TMP/crafted.cast"
	# C-b R: back to the shell; again: the session's recordings to pick
	tm send-keys -t tv C-b R || return 1
	wait_for 10 sh -c "! TMUX_TMPDIR=$TMP tmux -L $TUI_SOCK capture-pane -p -t tv | grep -q first-line" ||
		fail "still replaying" || return 1
	tm send-keys -t tv C-b R || return 1
	wait_on tv 'recordings: Enter plays' 10 || return 1
	wait_on tv 'live-[0-9]+\.cast' 10 || return 1
	tm send-keys -t tv Enter || return 1 # the first: the live shell's
	wait_on tv 'typed-2' 20 || return 1
	tm send-keys -t tv C-b d
}

t_live_shell_and_resize() {
	local f
	tm new-session -d -s live -x 100 -y 30 "$VMUX shell rc --id live; sleep 60"
	wait_on live '~ #$' 30 || return 1
	type_line 'echo typed-$((1+1))' live
	wait_on live '^typed-2' 20 || return 1
	wait_for 20 sh -c "grep -qs 'typed-2' $RDIR/live-*.cast" || fail "not recorded live" || return 1
	f=$(rec_of live)
	# made at the terminal's 100x30; a resize is an event
	expect_eq "header size" "$(head -n 1 "$f" | jq -c '[.width, .height]')" '[100,30]' || return 1
	tm resize-window -t live -x 90 -y 25 || return 1
	wait_for 10 grep -q '"r","90x25"' "$f" || fail "no resize event in $f" || return 1
	tm send-keys -t live C-]
}

t_recordings_listed() {
	local out
	out=$(vmux recordings rc)
	expect_match "table" "$out" 'quick +[0-9T:-]+Z +[0-9]+ +/.*/quick-[0-9]+\.cast' || return 1
	expect_eq "json" "$(vmux recordings rc --json | jq -r '[.[].shell] | unique | join(" ")')" "live quick" || return 1
}

t_reused_id_recorded() {
	# vmux shell --id quick again: the ended shell's id, a new shell
	printf 'echo second-$((4+4))\nexit\n' | vmux shell rc --id quick >/dev/null 2>&1 || return 1
	wait_for 20 sh -c "grep -qs 'second-8' $RDIR/quick-*.cast" || fail "the second shell quick was not recorded" || return 1
	expect_eq "two recordings of quick" "$(ls "$RDIR"/quick-*.cast | wc -l)" 2
}

t_replay_refuses_non_recordings() {
	echo '{"hello": 1}' >"$TMP/not.cast"
	expect_status 125 vmux replay "$TMP/not.cast" 2>/dev/null || return 1
	expect_status 2 vmux replay --speed -1 "$(rec_of quick)" 2>/dev/null || return 1
	expect_status 2 vmux replay --speed abc "$(rec_of quick)" 2>/dev/null || return 1
	printf '{"version":2,"width":80,"height":24}\n[1e15,"o","x"]\n' >"$TMP/far.cast"
	expect_status 125 timeout 10 "$VMUX" replay "$TMP/far.cast" 2>/dev/null || return 1
	expect_status 125 vmux replay "$TMP/none.cast" 2>/dev/null
}

t_big_recordings() {
	local kib
	# a 64 MiB line is refused as it is read: nothing of it is held
	{
		echo '{"version": 2, "width": 60, "height": 10}'
		head -c 67108864 /dev/zero | tr '\0' x
		echo
		echo '[0.1, "o", "after"]'
	} >"$TMP/wide.cast"
	/usr/bin/time -f %M -o "$TMP/wide.kib" "$VMUX" replay --speed 0 "$TMP/wide.cast" >/dev/null 2>"$TMP/wide.err"
	expect_eq "status" $? 125 || return 1
	expect_match "said" "$(cat "$TMP/wide.err")" 'wide.cast:2: a line over 8388608 bytes' || return 1
	kib=$(tail -n 1 "$TMP/wide.kib")
	((kib < 32 * 1024)) || fail "peak RSS $kib KiB reading a 64 MiB line" || return 1
	echo "figure: vmux replay of a 64 MiB line: peak RSS $kib KiB"
	# the TUI plays a long recording: a 16 MiB line skipped, the events
	# after it played, its length measured on the thread pool (whether
	# the title's ?:?? is seen depends on how fast that is: not checked)
	{
		echo '{"version": 2, "width": 60, "height": 10}'
		echo '[0.1, "o", "big-first\r\n"]'
		head -c 16777216 /dev/zero | tr '\0' y
		echo
		yes '[0.2, "o", ""]' | head -n 3000000
		echo '[30.0, "o", "big-last\r\n"]'
	} >"$TMP/big.cast"
	tui_replay tb "$TMP/big.cast" || return 1
	wait_on tb 'big-first' 10 || return 1
	wait_on tb '"replay 0:[0-9]+/0:30 x1' 120 || return 1
	tm send-keys -t tb Right Right Right Right Right Right || return 1
	wait_on tb 'big-last' 30 || return 1
	tm send-keys -t tb C-b d
}

t_recorder_ends_with_the_vm() {
	[[ -n $(pgrep -f -- '[v]mux record rc --into') ]] || fail "no recorder ran" || return 1
	vmux stop rc >/dev/null || return 1
	wait_for 10 sh -c "! pgrep -f -- '[v]mux record rc --into' >/dev/null" || fail "the recorder outlived its VM"
}

check "a short shell: replay and asciinema cat give back its bytes" t_short_shell_recorded_exactly
check "a live shell is recorded as it goes, with its resize" t_live_shell_and_resize
check "vmux recordings lists them" t_recordings_listed
check "a shell id used again (a new shell) is recorded again" t_reused_id_recorded
check "replay refuses what is not a recording" t_replay_refuses_non_recordings
check "the TUI replays a recording, seeks, and goes back" t_tui_replay
check "a 64 MiB line is refused as read; a long recording with one plays, measured beside" t_big_recordings
check "--record-input records what is typed; --record alone does not" t_input_recorded_when_asked
check "the recorder ends with the VM" t_recorder_ends_with_the_vm
