#!/usr/bin/env bash
# 20-tui: the full-screen TUI (`vmux tui`) driven through a private tmux
# server against real guests: start with a shell opened, type and see
# output, Ctrl-C a job, the signal menu, a second shell and switching,
# zoom, resize (the guest's `stty size` follows), copy mode search and
# paste, upload and download checked on both sides, a session created from
# the prompt, two viewers on one shell, detach and reattach with output
# repainted, and a VM killed under the TUI shown without freezing it.
# Every wait polls the screen with a deadline.
source "$(dirname "$0")/../e2e/lib.sh"

source "$(dirname "$0")/tmux.sh"

tui_cleanup() {
	local rc=$?
	tui_tmux_kill
	(exit $rc)
	e2e_cleanup
}
trap tui_cleanup EXIT

need_session tv

# wait_screen REGEX [DEADLINE_S] [TARGET]: poll until a line matches.
wait_screen() { wait_on "${3:-main}" "$1" "${2:-20}"; }

# A line of the pane (after the sidebar's border, or the whole line).
L='(^|│)'

# no_screen REGEX [TARGET]: the screen does not show REGEX now.
no_screen() {
	! screen "${2:-main}" | grep -Eq -- "$1" || fail "/$1/ still on the screen"
}

# gone_screen REGEX: poll until no line matches (10 s).
gone_screen() {
	local deadline=$((SECONDS + 10))
	while screen main | grep -Eq -- "$1"; do
		((SECONDS < deadline)) || fail "/$1/ stays on the screen" || return 1
		sleep 0.1
	done
}

# type_line TEXT [TARGET]: type a line into the TUI.
type_line() {
	tm send-keys -t "${2:-main}" -l -- "$1" && tm send-keys -t "${2:-main}" Enter
}

# prefix KEY...: the prefix, then keys.
prefix() { tm send-keys -t main C-b && tm send-keys -t main "$@"; }

# guest_cat NAME PATH: a file's content in the guest.
guest_cat() { vmux exec "$1" -- cat "$2"; }

HOSTENV="env -i PATH=/usr/bin:/bin HOME=$TMP/home TERM=tmux-256color LANG=C.UTF-8 VMUX_HOME=$VMUX_HOME"
mkdir -p "$TMP/home" "$TMP/dl"

tm new-session -d -s main -x 100 -y 30 \
	"cd $TMP; $HOSTENV PS1='host\$ ' bash --norc --noprofile"
wait_screen '^host\$' 10 || exit 1

t_start_opens_a_shell() {
	type_line "$VMUX tui tv; echo TUI-EXIT=\$?" || return 1
	wait_screen 'SESSIONS' || return 1
	wait_screen 'tv:shell-[0-9]+ live' 30 || return 1
	wait_screen "$L"'~ # ?$' 30
}

t_type_and_see() {
	type_line 'echo $((6*7))x' || return 1
	wait_screen "$L"'42x *$'
}

t_ctrl_c_a_job() {
	type_line 'sleep 100' || return 1
	wait_guest_cmd tv 'sleep 100' || fail "sleep never ran" || return 1
	tm send-keys -t main C-c || return 1
	type_line 'echo back-$((1+1))' || return 1
	wait_screen "$L"'back-2 *$' 10
}

t_signal_menu() {
	type_line 'sleep 200' || return 1
	wait_guest_cmd tv 'sleep 200' || fail "sleep never ran" || return 1
	prefix k || return 1
	wait_screen 'signal to the foreground job' || return 1
	wait_screen 'TERM  terminate' || return 1
	tm send-keys -t main j Enter || return 1
	wait_screen 'sent SIGTERM' || return 1
	wait_screen 'Terminated' 10 || return 1
	type_line 'echo after-term' || return 1
	wait_screen "$L"'after-term *$'
}

t_second_shell_and_switch() {
	prefix c || return 1
	wait_screen 'tv:shell-2 live' 30 || return 1
	wait_screen "$L"'~ # ?$' || return 1
	type_line 'echo in-second' || return 1
	wait_screen "$L"'in-second *$' || return 1
	prefix p || return 1
	wait_screen 'tv:shell-1 live' || return 1
	wait_screen "$L"'after-term *$' || return 1
	no_screen "$L"'in-second *$' || return 1
	prefix n || return 1
	wait_screen 'tv:shell-2 live' || return 1
	wait_screen "$L"'in-second *$'
}

t_zoom_and_resize() {
	prefix z || return 1
	wait_screen 'tv:shell-2 live [0-9]+x[0-9]+ Z' || return 1
	no_screen 'SESSIONS' || return 1
	tm resize-window -t main -x 90 -y 26 || return 1
	wait_screen 'tv:shell-2 live 90x25 Z' || return 1
	type_line 'stty size' || return 1
	wait_screen "$L"'25 90 *$' || return 1
	prefix z || return 1
	wait_screen 'SESSIONS' || return 1
	type_line 'clear; stty size' || return 1
	wait_screen "$L"'?25 59 *$'
}

t_copy_mode_search_and_paste() {
	type_line 'echo needle-one; echo hay; echo needle-two; echo hay' || return 1
	wait_screen 'needle-two *$' || return 1
	prefix '[' || return 1
	wait_screen '\[copy\]' || return 1
	tm send-keys -t main '?' || return 1
	wait_screen 'search up:' || return 1
	tm send-keys -t main -l 'needle-one' || return 1
	tm send-keys -t main Enter || return 1
	# the cursor is on the match; select to the line's end and copy
	tm send-keys -t main Space '$' Enter || return 1
	wait_screen 'copied [0-9]+ bytes' || return 1
	type_line '' || return 1
	tm send-keys -t main -l 'echo pasted:' || return 1
	prefix ']' || return 1
	tm send-keys -t main Enter || return 1
	wait_screen "$L"'pasted:needle-one *$'
}

t_upload_and_download() {
	head -c 300000 /dev/urandom >"$TMP/up.bin"
	prefix u || return 1
	wait_screen 'upload \(host path\):' || return 1
	tm send-keys -t main -l "$TMP/up.bin" && tm send-keys -t main Enter || return 1
	wait_screen 'upload to \(guest path\): /root/' || return 1
	tm send-keys -t main Enter || return 1
	wait_screen 'cp .*up.bin tv:/root/: done' 60 || return 1
	[[ $(vmux exec tv -- md5sum /root/up.bin | cut -d' ' -f1) == $(md5sum <"$TMP/up.bin" | cut -d' ' -f1) ]] ||
		fail "uploaded file differs in the guest" || return 1
	vmux exec tv -- sh -c 'seq 1 5000 > /root/down.txt' || return 1
	prefix g || return 1
	wait_screen 'download \(guest path\): /root/' || return 1
	# Tab completes guest paths (the guest is asked)
	tm send-keys -t main -l "dow" && tm send-keys -t main Tab || return 1
	wait_screen 'download \(guest path\): /root/down.txt' || return 1
	tm send-keys -t main Enter || return 1
	wait_screen 'download to \(host dir\):' || return 1
	tm send-keys -t main BSpace && tm send-keys -t main -l "$TMP/dl" && tm send-keys -t main Enter || return 1
	wait_screen 'cp tv:/root/down.txt .*: done' 60 || return 1
	cmp -s "$TMP/dl/down.txt" <(seq 1 5000) || fail "downloaded file differs"
}

t_transfer_error_is_a_message() {
	prefix u || return 1
	wait_screen 'upload \(host path\):' || return 1
	tm send-keys -t main -l "$TMP/no-such-file" && tm send-keys -t main Enter || return 1
	wait_screen 'upload to' || return 1
	tm send-keys -t main Enter || return 1
	wait_screen 'no-such-file.*(No such file|not found|cannot)' 30 || return 1
	type_line 'echo still-alive' || return 1
	wait_screen "$L"'still-alive *$'
}

t_new_session_from_prompt() {
	prefix : || return 1
	wait_screen '^:' || return 1
	tm send-keys -t main -l 'new tv2' && tm send-keys -t main Enter || return 1
	wait_screen 'new tv2: done' 180 || return 1
	[[ $(session_field tv2 state) == running ]] || fail "tv2 is not running" || return 1
	wait_screen '^. tv2' 10
}

t_prompt_commands_show_their_output() {
	# one line: the message
	prefix : && tm send-keys -t main -l 'exec tv -- echo one-line-out' &&
		tm send-keys -t main Enter || return 1
	wait_screen 'exec tv -- echo one-line-out: one-line-out' 30 || return 1
	# more: a view over the screen, scrolled by keys, guest escapes as '?'
	prefix : && tm send-keys -t main -l \
		"exec tv -- sh -c 'printf \"\\033[31mred\\033[0m\\n\"; seq 101 160'" &&
		tm send-keys -t main Enter || return 1
	wait_screen '^ .─ q closes, .* scroll: exec tv -- sh -c ' 30 || return 1
	wait_screen '^ │\?\[31mred\?\[0m +│' || return 1
	no_screen '^ │160 ' || return 1
	tm send-keys -t main G || return 1
	wait_screen '^ │160 +│' || return 1
	no_screen '^ │101 ' || return 1
	tm send-keys -t main g || return 1
	wait_screen '^ │101 +│' || return 1
	tm send-keys -t main q || return 1
	gone_screen 'q closes' || return 1
	# the last output again, and the shell still takes keys
	prefix : && tm send-keys -t main -l 'show-output' && tm send-keys -t main Enter || return 1
	wait_screen '^ │101 +│' || return 1
	tm send-keys -t main Escape || return 1
	gone_screen 'q closes' || return 1
	type_line 'echo after-view' || return 1
	wait_screen "$L"'after-view *$'
}

t_two_viewers() {
	tm new-window -d -t main -n viewer \
		"$HOSTENV $VMUX tui tv --read-only" || return 1
	wait_screen 'tv:shell-[0-9] live.*RO' 30 main:viewer || return 1
	type_line 'echo seen-by-both' || return 1
	wait_screen "$L"'seen-by-both *$' 10 main:viewer || return 1
	# keys in the read-only viewer never reach the shell
	tm send-keys -t main:viewer -l 'echo typed-in-viewer' && tm send-keys -t main:viewer Enter
	type_line 'echo check-after' || return 1
	wait_screen "$L"'check-after *$' || return 1
	no_screen 'typed-in-viewer' || return 1
	tm send-keys -t main:viewer C-b d || return 1
}

t_detach_and_reattach_repaints() {
	type_line 'echo before-detach-$((5*5))' || return 1
	wait_screen "$L"'before-detach-25 *$' || return 1
	prefix d || return 1
	wait_screen '^TUI-EXIT=0' || return 1
	[[ $(vmux shells tv | awk '$1 == "shell-2" { print $2 }') == running ]] || fail "shell stopped on detach" || return 1
	type_line 'clear' || return 1
	type_line "$VMUX tui tv; echo TUI-EXIT=\$?" || return 1
	wait_screen 'before-detach-25' 30
}

t_vm_killed_under_the_tui() {
	local pid
	pid=$(vmux ls --json | jq -r '.[] | select(.name == "tv2") | .pids.qemu')
	[[ $pid =~ ^[0-9]+$ ]] || fail "no qemu pid for tv2" || return 1
	prefix : && tm send-keys -t main -l 'select tv2' && tm send-keys -t main Enter || return 1
	wait_screen 'No shell selected' 10 || return 1
	prefix c || return 1
	wait_screen 'tv2:shell-1 live' 30 || return 1
	wait_screen ' default net:off 4G' 10 || return 1
	kill -9 "$pid"
	wait_screen 'tv2:shell-1 (disconnected|failed)' 30 || return 1
	wait_screen ' crashed tcg' 30 || return 1
	wait_screen ' QEMU SIGKILL' 10 || return 1
	# the TUI still answers
	prefix '?' || return 1
	wait_screen 'help: q or Esc closes' || return 1
	tm send-keys -t main q || return 1
	prefix : && tm send-keys -t main -l 'select tv' && tm send-keys -t main Enter || return 1
	wait_screen 'tv:shell-[0-9] live' 10 || return 1
	vmux rm -f tv2 >/dev/null
}

t_grid_shows_every_session() {
	prefix w || return 1
	# a tile's title (focus mark first, idle or active last): the status
	# bar's "tv:shell-1 live" is on the screen before the grid opens
	wait_screen '^>tv:shell-[0-9] live (idle|active)' 30 || return 1
	tm send-keys -t main Enter || return 1
	wait_screen 'SESSIONS'
}

check "tui opens a shell in the named session" t_start_opens_a_shell
check "typing shows output" t_type_and_see
check "Ctrl-C stops a job" t_ctrl_c_a_job
check "signal menu sends TERM" t_signal_menu
check "a second shell, switching with n and p" t_second_shell_and_switch
check "zoom, and resizes reach the guest's PTY" t_zoom_and_resize
check "copy mode: search, copy, paste" t_copy_mode_search_and_paste
check "upload and download, checked on both sides" t_upload_and_download
check "a failed transfer is a message; the UI keeps working" t_transfer_error_is_a_message
check "a session created from the command prompt" t_new_session_from_prompt
check "prompt commands show their output (message or a view)" t_prompt_commands_show_their_output
check "two viewers on one shell, one read-only" t_two_viewers
check "detach and reattach repaints the output" t_detach_and_reattach_repaints
check "a VM killed under the TUI is shown, the UI keeps working" t_vm_killed_under_the_tui
check "the grid shows sessions and opens one" t_grid_shows_every_session
tm send-keys -t main C-b d
