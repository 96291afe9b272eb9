#!/usr/bin/env bash
# 10-shell: `vmux shell` on a real terminal, driven through a private tmux
# server against a real guest: typing, Ctrl-C, window resize, the detach
# key, reattach with repaint, kill -9 of the client, SIGTERM, the shell's
# exit status, the terminal restored after each, and `make run`'s script.
# Every wait polls the screen with a deadline.
source "$(dirname "$0")/../e2e/lib.sh"

TMUX_SOCK=vmux-tui-$$
tm() { TMUX_TMPDIR=$TMP tmux -L "$TMUX_SOCK" -f /dev/null "$@"; }

# Kill the private tmux server too, whatever happens.
tui_cleanup() {
	local rc=$?
	tm kill-server 2>/dev/null
	(exit $rc)
	e2e_cleanup
}
trap tui_cleanup EXIT

need_session tui

# screen: the pane's visible text (wrapped lines joined).
screen() { tm capture-pane -p -J -t tui; }

# wait_screen REGEX [DEADLINE_S]: poll the screen until a line matches.
wait_screen() {
	local re=$1 deadline=$((SECONDS + ${2:-20}))
	until screen | grep -Eq -- "$re"; do
		if ((SECONDS >= deadline)); then
			echo "no /$re/ on the screen:"
			screen | sed 's/^/  | /'
			return 1
		fi
		sleep 0.1
	done
}

# type TEXT: type a line into the pane.
type_line() {
	tm send-keys -t tui -l -- "$1" && tm send-keys -t tui Enter
}

# host_cmd TEXT: run a command in the pane's host shell and wait for it.
host_cmd() {
	local mark="done-$RANDOM$RANDOM"
	type_line "$1; echo $mark" && wait_screen "^$mark\$"
}

# vmux_pid: the pid of the `vmux shell` running in the pane.
vmux_pid() { pgrep -f -- "^$VMUX shell tui" | head -n 1; }

tm new-session -d -s tui -x 100 -y 30 \
	"env -i PATH=$PATH HOME=$HOME TERM=xterm VMUX_HOME=$VMUX_HOME PS1='host\$ ' bash --norc --noprofile"
wait_screen '^host\$' 10 || exit 1
host_cmd "V=$VMUX; stty -g > $TMP/stty.before; clear" >/dev/null || exit 1

# attach VMUX_ARGS: start `vmux shell` in the pane, echoing its status after.
attach() {
	type_line "\$V shell tui $1; echo VMUX-EXIT=\$?"
}

# same_stty: the pane's terminal settings are what they were at the start.
same_stty() {
	host_cmd "stty -g > $TMP/stty.now" || return 1
	cmp -s "$TMP/stty.before" "$TMP/stty.now" ||
		fail "terminal not restored: $(cat "$TMP/stty.before") vs $(cat "$TMP/stty.now")"
}

t_type_and_see() {
	attach "--id t1"
	wait_screen '^\[shell t1 in tui; detach with Ctrl-\]\]' || return 1
	wait_screen '~ # $' || return 1
	type_line 'echo $((6*7))x' || return 1
	wait_screen '^42x$'
}

t_ctrl_c() {
	type_line 'sleep 100' || return 1
	wait_screen '~ # sleep 100$' || return 1
	wait_guest_cmd tui 'sleep 100' || fail "sleep never ran" || return 1
	tm send-keys -t tui C-c || return 1
	type_line 'echo back-$((1+1))' || return 1
	wait_screen '^back-2$' 10
}

t_resize() {
	tm resize-window -t tui -x 80 -y 24 || return 1
	wait_for 10 eval '[[ $(vmux shells tui --json | jq -r ".[] | select(.shell_id == \"t1\") | .cols") == 80 ]]' ||
		fail "agent never saw 80 columns" || return 1
	type_line 'stty size' || return 1
	wait_screen '^24 80$'
}

t_detach() {
	tm send-keys -t tui C-] || return 1
	wait_screen '^\[detached from shell t1 in tui\]$' || return 1
	wait_screen '^VMUX-EXIT=0$' || return 1
	[[ $(vmux shells tui | awk '$1 == "t1" { print $2 }') == running ]] || fail "shell not running" || return 1
	same_stty
}

t_reattach_repaints() {
	host_cmd clear >/dev/null || return 1
	attach "--id t1"
	# earlier output comes back on the cleared screen
	wait_screen '^back-2$' || return 1
	wait_screen '^24 80$' || return 1
	type_line 'echo carry-on-$((2*3))' || return 1
	wait_screen '^carry-on-6$'
}

t_kill9_then_reattach() {
	local pid
	pid=$(vmux_pid)
	[[ -n $pid ]] || fail "no vmux shell process" || return 1
	kill -9 "$pid"
	wait_screen 'VMUX-EXIT=137' || return 1
	# SIGKILL cannot restore the terminal; put it back by hand:
	host_cmd "stty \$(cat $TMP/stty.before); clear" >/dev/null || return 1
	[[ $(vmux shells tui | awk '$1 == "t1" { print $2 }') == running ]] || fail "shell died with its client" || return 1
	attach "--id t1"
	wait_screen '^carry-on-6$' || return 1
	type_line 'echo reattached-$((3*3))' || return 1
	wait_screen '^reattached-9$'
}

t_sigterm_restores() {
	local pid
	pid=$(vmux_pid)
	[[ -n $pid ]] || fail "no vmux shell process" || return 1
	kill -TERM "$pid"
	wait_screen '^\[detached from shell t1 in tui: Terminated\]$' || return 1
	wait_screen '^VMUX-EXIT=143$' || return 1
	same_stty || return 1
	[[ $(vmux shells tui | awk '$1 == "t1" { print $2 }') == running ]] || fail "shell stopped"
}

t_exit_status() {
	host_cmd clear >/dev/null || return 1
	attach "--id t1"
	wait_screen '^reattached-9$' || return 1
	type_line 'exit 3' || return 1
	wait_screen '^VMUX-EXIT=3$' || return 1
	same_stty || return 1
	[[ $(vmux shells tui | awk '$1 == "t1" { print $2 " " $5 }') == "stopped 3" ]] ||
		fail "shells: $(vmux shells tui)"
}

t_new_shell_and_custom_key() {
	host_cmd clear >/dev/null || return 1
	attach "--detach-key ^a --env GREETING=hi --cwd /tmp"
	wait_screen '^\[shell shell-[0-9]+ in tui; detach with Ctrl-A\]' || return 1
	wait_screen '(~|/tmp) # $' || return 1
	type_line 'echo $GREETING-$(pwd)' || return 1
	wait_screen '^hi-/tmp$' || return 1
	tm send-keys -t tui C-] || return 1 # not the detach key now: a byte
	tm send-keys -t tui C-a || return 1
	wait_screen '^\[detached from shell shell-[0-9]+ in tui\]$' || return 1
	wait_screen '^VMUX-EXIT=0$'
}

t_stop_and_continue() {
	local pid
	host_cmd clear >/dev/null || return 1
	type_line "\$V shell tui --id stopme" || return 1
	wait_screen '~ # $' || return 1
	pid=$(vmux_pid)
	kill -TSTP "$pid" || return 1
	wait_screen 'Stopped' || return 1
	same_stty || return 1
	type_line 'fg' || return 1
	type_line 'echo after-fg-$((4*4))' || return 1
	wait_screen '^after-fg-16$' || return 1
	tm send-keys -t tui C-] || return 1
	wait_screen '^\[detached from shell stopme in tui\]$' || return 1
	same_stty
}

t_make_run_script() {
	host_cmd clear >/dev/null || return 1
	# the TUI opens on the default session with a shell
	type_line "BUILD=$BUILD VMUX=\$V $ROOT/scripts/run-default; echo RUN-EXIT=\$?" || return 1
	wait_screen 'default:shell-1 live' 90 || return 1
	wait_screen '[│x]~ # ?$' 30 || return 1
	type_line 'uname -s' || return 1
	wait_screen '[│x]Linux *$' || return 1
	tm send-keys -t tui C-b d || return 1
	wait_screen '^RUN-EXIT=0$' || return 1
	# a second run comes back to the same shell, output repainted
	host_cmd clear >/dev/null || return 1
	type_line "BUILD=$BUILD VMUX=\$V $ROOT/scripts/run-default; echo RUN-EXIT=\$?" || return 1
	wait_screen 'default:shell-1 live' 30 || return 1
	wait_screen '[│x]Linux *$' 30 || return 1
	tm send-keys -t tui C-b d || return 1
	wait_screen '^RUN-EXIT=0$' || return 1
	# no terminal: one command, no hang
	BUILD=$BUILD VMUX=$VMUX "$ROOT/scripts/run-default" </dev/null >"$TMP/run.out" 2>&1 ||
		fail "run-default without a terminal: $(cat "$TMP/run.out")" || return 1
	grep -q '^Linux ' "$TMP/run.out" || fail "no uname: $(cat "$TMP/run.out")"
}

check "type a command, see its output" t_type_and_see
check "Ctrl-C stops sleep 100, the prompt comes back" t_ctrl_c
check "resizing the window shows in stty size" t_resize
check "Ctrl-] detaches, terminal restored" t_detach
check "--id reattaches and repaints earlier output" t_reattach_repaints
check "kill -9 of the client, then reattach" t_kill9_then_reattach
check "SIGTERM detaches and restores the terminal" t_sigterm_restores
check "exit 3 in the shell makes vmux exit 3" t_exit_status
check "new shell with --detach-key, --env, --cwd" t_new_shell_and_custom_key
check "kill -TSTP stops with the terminal restored, fg resumes" t_stop_and_continue
check "make run's script opens the TUI, and runs one command without a tty" t_make_run_script
