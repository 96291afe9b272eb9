#!/usr/bin/env bash
# 35-config: the TUI's configuration, themes, keys and terminal sizes,
# with a local pane (no guest): a bad config line is reported by file and
# line while the rest applies (a new prefix, bindings, sidebar width), every
# built-in theme starts, an unknown theme falls back with a message, the
# layout holds from 40x10 up and follows resizes, TERM=linux, screen and
# xterm-256color all work, and a paste in the outer terminal reaches a
# program that asked for bracketed paste with its markers.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
VMUX=$BUILD/bin/vmux
TMP=$(mktemp -d)
pass=0 failed=0
source "$(dirname "$0")/tmux.sh"

cleanup() {
	tui_tmux_kill
	rm -rf "$TMP"
}
trap cleanup EXIT
mkdir -p "$TMP/home/.config/vmux"

# wait_screen TARGET REGEX: poll until a line matches (15 s).
wait_screen() { wait_on "$1" "$2" 15; }
result() {
	if "$2"; then
		echo "ok   $1"
		pass=$((pass + 1))
	else
		echo "FAIL $1"
		failed=$((failed + 1))
	fi
}

# start NAME COLS ROWS TERM [ARGS...]: a TUI with a local shell-like pane.
start() {
	local name=$1 cols=$2 rows=$3 term=$4
	shift 4
	tm new-window -d -t cfg -n "$name" -- env -i PATH=/usr/bin:/bin \
		HOME="$TMP/home" TERM="$term" LANG=C.UTF-8 "$VMUX" tui "$@" \
		--local-command 'PS1="L$ " exec sh'
	tm resize-window -t "cfg:$name" -x "$cols" -y "$rows"
}

tm new-session -d -s cfg -x 100 -y 30 -- sleep 3600

t_bad_lines_named_rest_applies() {
	cat >"$TMP/home/.config/vmux/vmux.conf" <<'EOF'
set prefix C-a
set bogus 1
bind v zoom
set sidebar-width 20
bind Nope zoom
EOF
	start bad 100 30 tmux-256color || return 1
	wait_screen cfg:bad 'vmux.conf:2: unknown option "bogus"' || return 1
	wait_screen cfg:bad 'vmux.conf:5: unknown key "Nope"' || return 1
	# the sidebar is 20 wide: the border is in column 21
	screen cfg:bad | head -n 1 | grep -q '^.\{20\}│' || { echo "  sidebar not 20 wide"; return 1; }
	# C-a is the prefix now, and v zooms
	tm send-keys -t cfg:bad C-a v || return 1
	wait_screen cfg:bad 'local:cmd-1 live 100x29 Z' || return 1
	tm kill-window -t cfg:bad
}

t_every_theme_starts() {
	local th
	: >"$TMP/home/.config/vmux/vmux.conf"
	for th in default light high-contrast monochrome; do
		start "th-$th" 80 24 tmux-256color --theme "$th" || return 1
		wait_screen "cfg:th-$th" 'local:cmd-1 live' || return 1
		tm send-keys -t "cfg:th-$th" C-b : || return 1
		tm send-keys -t "cfg:th-$th" -l 'theme' && tm send-keys -t "cfg:th-$th" Enter || return 1
		wait_screen "cfg:th-$th" "theme $th" || return 1
		tm kill-window -t "cfg:th-$th"
	done
	start th-bad 80 24 tmux-256color --theme nosuch || return 1
	wait_screen cfg:th-bad 'unknown theme "nosuch"' || return 1
	tm kill-window -t cfg:th-bad
}

t_small_terminal_and_resize() {
	start small 40 10 xterm-256color || return 1
	wait_screen cfg:small 'live' || return 1
	wait_screen cfg:small 'L\$' || return 1
	tm send-keys -t cfg:small -l 'stty size' && tm send-keys -t cfg:small Enter || return 1
	# 40 columns: the sidebar gives way to a usable pane
	wait_screen cfg:small '9 26 *$' || return 1
	tm resize-window -t cfg:small -x 120 -y 40 || return 1
	wait_screen cfg:small 'live 89x39' || return 1
	tm send-keys -t cfg:small -l 'stty size' && tm send-keys -t cfg:small Enter || return 1
	wait_screen cfg:small '39 89 *$' || return 1
	tm kill-window -t cfg:small
}

t_terminal_types() {
	local term
	for term in linux screen xterm-256color; do
		start "term-$term" 80 24 "$term" || return 1
		wait_screen "cfg:term-$term" 'local:cmd-1 live 49x23' || return 1
		tm send-keys -t "cfg:term-$term" -l 'echo ok-$((2+3))' && tm send-keys -t "cfg:term-$term" Enter || return 1
		wait_screen "cfg:term-$term" 'ok-5 *$' || return 1
		tm kill-window -t "cfg:term-$term"
	done
}

t_bracketed_paste_reaches_the_program() {
	# the program asks for bracketed paste; a paste in the outer terminal
	# arrives marked, as the program asked
	tm new-window -d -t cfg -n paste -- env -i PATH=/usr/bin:/bin \
		HOME="$TMP/home" TERM=tmux-256color LANG=C.UTF-8 "$VMUX" tui \
		--local-command "printf '\\033[?2004h'; stty raw -echo; exec cat -v" || return 1
	wait_screen cfg:paste 'local:cmd-1 live' || return 1
	tm set-buffer -b p1 'pasted-text' || return 1
	tm paste-buffer -p -b p1 -t cfg:paste || return 1
	wait_screen cfg:paste '\^\[\[200~pasted-text\^\[\[201~' || return 1
	tm kill-window -t cfg:paste
}

result "bad config lines named by file and line, the rest applies" t_bad_lines_named_rest_applies
result "bracketed paste reaches a program that asked for it" t_bracketed_paste_reaches_the_program
result "every built-in theme starts; an unknown one falls back" t_every_theme_starts
result "40x10 works and resizes follow" t_small_terminal_and_resize
result "TERM linux, screen and xterm-256color" t_terminal_types
echo "35-config: $pass passed, $failed failed"
((failed == 0))
