#!/usr/bin/env bash
# 25-reattach: a shell whose connection drops is shown as disconnected and
# reattached by itself from where its output stopped. The drop is real:
# gdb makes the running TUI shut down its own stream sockets (as a network
# or bridge hiccup would), while a counter in the guest keeps printing;
# afterwards every number is on the screen, none lost and none twice.
# Then the session is paused under the pane: the pane's reattach resumes
# it and the same shell goes on.
source "$(dirname "$0")/../e2e/lib.sh"
source "$(dirname "$0")/tmux.sh"

reattach_cleanup() {
	local rc=$?
	tui_tmux_kill
	(exit $rc)
	e2e_cleanup
}
trap reattach_cleanup EXIT

if ! command -v gdb >/dev/null; then
	echo "FAIL gdb is needed to cut the TUI's connections (scripts/install-deps installs it)"
	exit 1
fi
need_session ra

wait_screen() { wait_on main "$1" "${2:-30}"; }

# numbers_once PREFIX N: PREFIX1 .. PREFIXN each on the screen's history
# once, in order (a stream resumed at its cursor lost and repeated none)
numbers_once() {
	tm capture-pane -p -t main -S -200 | grep -E "^$1[0-9]+ *\$" | sed 's/ *$//' >"$TMP/seen"
	seq 1 "$2" | sed "s/^/$1/" >"$TMP/want"
	diff "$TMP/want" "$TMP/seen" >/dev/null ||
		fail "numbers lost or repeated: $(diff "$TMP/want" "$TMP/seen" | head -5 | tr '\n' ' ')"
}

tm new-session -d -s main -x 100 -y 40 \
	"env -i PATH=/usr/bin:/bin HOME=$TMP/home TERM=tmux-256color LANG=C.UTF-8 VMUX_HOME=$VMUX_HOME $VMUX tui ra --no-sidebar"

# tui_pid: the TUI's process (env execs it).
tui_pid() { tm display-message -p -t main '#{pane_pid}'; }

t_drop_and_reattach() {
	local pid fds fd
	wait_screen 'ra:shell-1 live' 60 || return 1
	wait_screen '~ # ?$' || return 1
	tm send-keys -t main -l 'i=0; while [ $i -lt 25 ]; do i=$((i+1)); echo n-$i; sleep 0.4; done; echo count-done' || return 1
	tm send-keys -t main Enter || return 1
	wait_screen '^n-5 *$' || return 1
	pid=$(tui_pid)
	fds=$(for fd in /proc/"$pid"/fd/*; do
		[[ $(readlink "$fd") == socket:* ]] && basename "$fd"
	done)
	[[ -n $fds ]] || fail "the TUI has no sockets" || return 1
	for fd in $fds; do
		gdb -p "$pid" -batch -ex "call (int)shutdown($fd, 2)" >/dev/null 2>&1 ||
			fail "gdb could not reach the TUI" || return 1
	done
	wait_screen 'ra:shell-1 (disconnected|connecting)' 10 || return 1
	wait_screen 'ra:shell-1 live' 30 || return 1
	wait_screen '^count-done *$' 60 || return 1
	# every number once, in order: the stream resumed at its cursor
	numbers_once n- 25
}

check "a dropped stream is shown and reattached from its cursor" t_drop_and_reattach

# a pause under the pane: its reattach wakes the session, and the same
# shell goes on where it was, a variable and a running loop kept
t_pause_reattach() {
	wait_screen 'ra:shell-1 live' 30 || return 1
	tm send-keys -t main -l 'clear; V=kept-$((3*4)); i=0; while [ $i -lt 30 ]; do i=$((i+1)); echo p-$i; sleep 0.3; done; echo "V=$V"' || return 1
	tm send-keys -t main Enter || return 1
	wait_screen '^p-4 *$' || return 1
	vmux pause ra >/dev/null || fail "pause" || return 1
	wait_screen 'ra:shell-1 (disconnected|connecting)' 10 || return 1
	wait_screen 'ra:shell-1 live' 60 || return 1
	wait_screen '^V=kept-12 *$' 60 || return 1
	numbers_once p- 30
	expect_eq "the session after" "$(vmux ls --json | jq -r '.[] | select(.name == "ra") | .state')" running
}
check "a pause under the pane: reattached by itself, resumed, the loop went on" t_pause_reattach
tm send-keys -t main C-b d
