#!/usr/bin/env bash
# 65-keys: the TUI's destructive keys and what must never happen behind
# the user's back, driven through a private tmux server against real
# guests: C-b x asks before closing a shell (n and a bare Enter keep it),
# C-b X names the workspace before removing a session (n keeps it), C-b t
# cancels a running command (the guest's process ends), a read-only viewer
# never resizes the guest's terminal, and a hung VM (SIGSTOP) never
# freezes the screen.
source "$(dirname "$0")/../e2e/lib.sh"
source "$(dirname "$0")/tmux.sh"

# a VM this test stopped is let go again, whatever happened
tui_before_exit() { [[ -n ${HUNG:-} ]] && kill -CONT "$HUNG" 2>/dev/null; }
tui_trap

need_session kx
need_session other

wait_screen() { wait_on "${3:-main}" "$1" "${2:-20}"; }
# shell_state NAME ID: the shell's state as vmux shells says, or "gone".
shell_state() { vmux shells "$1" --json | jq -r --arg id "$2" '(.[] | select(.shell_id == $id) | .state) // "gone"'; }

tui_host_shell || exit 1
type_line "$VMUX tui kx; echo TUI-EXIT=\$?"

t_close_asks_first() {
	wait_screen 'kx:shell-1 live' 30 || return 1
	prefix x || return 1
	wait_screen 'close shell kx:shell-1\?' 10 || return 1
	tm send-keys -t main n || return 1
	expect_eq "kept after n" "$(shell_state kx shell-1)" running || return 1
	prefix x || return 1
	wait_screen 'close shell kx:shell-1\?' 10 || return 1
	tm send-keys -t main Enter || return 1 # no is the default
	expect_eq "kept after Enter" "$(shell_state kx shell-1)" running || return 1
	prefix x || return 1
	wait_screen 'close shell kx:shell-1\?' 10 || return 1
	tm send-keys -t main y || return 1
	wait_for 20 bash -c "[[ \$('$VMUX' shells kx --json | jq -r '.[] | select(.shell_id==\"shell-1\") | .state') != running ]]" ||
		fail "shell-1 still running after yes" || return 1
}

t_cancel_a_running_command() {
	prefix : && tm send-keys -t main -l 'exec kx -- sleep 600' && tm send-keys -t main Enter || return 1
	wait_guest_cmd kx "sleep 600" 30 || fail "sleep never started" || return 1
	prefix t || return 1
	wait_screen 'Enter cancels' 10 || return 1
	wait_screen 'exec kx -- sleep 600' 10 || return 1
	tm send-keys -t main Enter || return 1
	wait_for 30 bash -c "! '$VMUX' exec kx -- sh -c 'ps | grep -q \"[s]leep 600\"'" ||
		fail "the guest's sleep outlived the cancel" || return 1
}

t_read_only_never_resizes() {
	local size
	prefix c || return 1 # a shell of the main window's size
	wait_screen 'kx:shell-[0-9] live' 30 || return 1
	size=$(vmux shells kx --json | jq -r '[.[] | select(.state == "running")][0] | "\(.cols)x\(.rows)"')
	[[ $size =~ ^[0-9]+x[0-9]+$ ]] || fail "no running shell: $size" || return 1
	tm new-window -d -t main -n viewer "$HOSTENV $VMUX tui kx --read-only" || return 1
	tm resize-window -t main:viewer -x 61 -y 17 || fail "cannot resize the viewer" || return 1
	wait_screen 'kx:shell-[0-9] live.*RO' 30 main:viewer || return 1
	tm resize-window -t main:viewer -x 140 -y 40 || fail "cannot resize the viewer" || return 1
	expect_eq "viewer size" "$(tm display -p -t main:viewer "#{window_width}x#{window_height}")" 140x40 || return 1
	wait_screen 'kx:shell-[0-9] live.*RO' 10 main:viewer || return 1
	expect_eq "size kept" "$(vmux shells kx --json | jq -r '[.[] | select(.state == "running")][0] | "\(.cols)x\(.rows)"')" "$size" || return 1
	tm kill-window -t main:viewer
}

t_hung_vm_never_freezes_the_screen() {
	HUNG=$(session_field other pids.qemu)
	kill -STOP "$HUNG"
	prefix : && tm send-keys -t main -l 'select other' && tm send-keys -t main Enter || return 1
	# the UI still answers: help opens and closes, the other shell types
	prefix '?' || return 1
	wait_screen 'help: q or Esc closes' 10 || return 1
	tm send-keys -t main q || return 1
	prefix : && tm send-keys -t main -l 'select kx' && tm send-keys -t main Enter || return 1
	wait_screen 'kx:shell-[0-9] live' 20 || return 1
	type_line 'echo still-$((7*6))' || return 1
	wait_screen 'still-42' 20 || return 1
	kill -CONT "$HUNG"
	HUNG=
}

t_remove_names_the_workspace() {
	prefix X || return 1
	wait_screen 'remove session kx: its VM, shells AND workspace' 10 || return 1
	tm send-keys -t main n || return 1
	expect_eq "kept after n" "$(session_field kx state)" running || return 1
	prefix X || return 1
	wait_screen 'remove session kx' 10 || return 1
	tm send-keys -t main y || return 1
	wait_for 60 bash -c "[[ ! -e '$VMUX_HOME/sessions/kx' ]]" || fail "kx not removed after yes"
}

check "C-b x asks; n and a bare Enter keep the shell, y closes it" t_close_asks_first
check "C-b t cancels a running command; the guest's process ends" t_cancel_a_running_command
check "a read-only viewer never resizes the guest's terminal" t_read_only_never_resizes
check "a hung VM (SIGSTOP) never freezes the screen" t_hung_vm_never_freezes_the_screen
check "C-b X names the workspace; n keeps the session, y removes it" t_remove_names_the_workspace
