# tmux.sh: a private tmux server for the TUI tests (sourced after $TMP is
# set). The server reads the test's own config (tmux-256color, no escape
# delay, no status line), never the user's; tui_tmux_kill ends it and is
# called from the test's EXIT trap.
TUI_SOCK=vmux-$(basename "$0" .sh)-$$
printf 'set -g default-terminal tmux-256color\nset -g escape-time 0\nset -g status off\n' >"$TMP/tmux.conf"

# tm ARGS...: tmux on the private server, its socket in $TMP (removed with
# it) rather than in the shared /tmp/tmux-UID.
tm() { TMUX_TMPDIR=$TMP tmux -L "$TUI_SOCK" -f "$TMP/tmux.conf" "$@"; }

# tui_tmux_kill: end the server, whatever state it is in.
tui_tmux_kill() { tm kill-server 2>/dev/null; }

# screen TARGET: the window's visible text.
screen() { tm capture-pane -p -t "$1"; }

# wait_on TARGET REGEX DEADLINE_S: poll until a line matches; on time out,
# say what was on the screen (but blank lines and empty tile edges) and fail.
wait_on() {
	local target=$1 re=$2 deadline=$((SECONDS + $3))
	until screen "$target" | grep -Eq -- "$re"; do
		if ((SECONDS >= deadline)); then
			echo "no /$re/ on the screen of $target (blank lines left out):"
			screen "$target" | grep -v '^[ │]*$' | sed 's/^/  | /'
			return 1
		fi
		sleep 0.1
	done
}

# tui_trap: on exit (however the test ends) end the tmux server, run
# tui_before_exit if the test defines it, then the e2e cleanup.
tui_trap() {
	tui_exit() {
		local rc=$?
		declare -F tui_before_exit >/dev/null && tui_before_exit
		tui_tmux_kill
		(exit $rc)
		e2e_cleanup
	}
	trap tui_exit EXIT
}

# tui_host_shell: window "main" (100x30) running a host shell with a
# private, plain environment ($HOSTENV: nothing of the invoking user's),
# waited for; the TUI under test is started from it.
tui_host_shell() {
	HOSTENV="env -i PATH=/usr/bin:/bin HOME=$TMP/home TERM=tmux-256color LANG=C.UTF-8 VMUX_HOME=$VMUX_HOME"
	mkdir -p "$TMP/home"
	tm new-session -d -s main -x 100 -y 30 \
		"cd $TMP; $HOSTENV PS1='host\$ ' bash --norc --noprofile"
	wait_on main '^host\$' 10
}

# Keys for window "main": the TUI's prefix then KEYS; a typed line.
prefix() { tm send-keys -t main C-b && tm send-keys -t main "$@"; }
type_line() { tm send-keys -t "${2:-main}" -l -- "$1" && tm send-keys -t "${2:-main}" Enter; }
