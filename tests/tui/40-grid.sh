#!/usr/bin/env bash
# 40-grid: the teacher's wall with 12 real sessions on a 200x60 terminal:
# every session gets a tile (ten with a shell, live; one running with no
# shell yet; one stopped), output typed into each shell shows in its own
# tile, the last check's result is on each title and sorts the tiles, the
# filter narrows them, Enter opens one full size (and opens a shell for the
# session that had none), and the grid never resizes a guest's PTY.
source "$(dirname "$0")/../e2e/lib.sh"

N=12
source "$(dirname "$0")/tmux.sh"
grid_cleanup() {
	local rc=$?
	tui_tmux_kill
	(exit $rc)
	e2e_cleanup
}
trap grid_cleanup EXIT

# wait_screen REGEX [DEADLINE_S]: poll the grid window until a line matches.
wait_screen() { wait_on grid "$1" "${2:-30}"; }

# agent NAME JSON: one request to the session's agent.
agent() { printf '%s\n' "$2" | vmux connect "$1" 5005; }

# g01-g10 with a shell each; g11 stopped; g12 running, no shell yet. All
# booted at once (vmux new --roster: as many together as there are CPUs).
S=10
seq -f 'g%02g' 1 $N >"$TMP/roster"
vmux new --roster "$TMP/roster" --memory 192 >"$TMP/class.out" 2>&1 ||
	{ echo "FAIL boot the class: $(cat "$TMP/class.out")"; exit 1; }
for i in $(seq -w 1 $S); do
	agent "g$i" '{"action":"open_shell","shell_id":"class","cols":80,"rows":24}' >/dev/null ||
		{ echo "FAIL open_shell in g$i"; exit 1; }
done
vmux stop g11 >/dev/null || { echo "FAIL stop g11"; exit 1; }

t_every_session_has_a_tile() {
	tm new-session -d -s grid -x 200 -y 60 \
		"env -i PATH=/usr/bin:/bin HOME=$TMP/home TERM=tmux-256color LANG=C.UTF-8 VMUX_HOME=$VMUX_HOME $VMUX tui --grid" || return 1
	for i in $(seq -w 1 $S); do
		wait_screen "g$i:class live" 60 || return 1
	done
	wait_screen '[ >]g11 stopped' 10 || return 1
	wait_screen '[ >]g12 running' 10 || return 1
	wait_screen 'no shell yet' 10 || return 1
	wait_screen 'Enter opens one' 10 || return 1
}

t_output_shows_in_its_tile() {
	local i
	for i in $(seq -w 1 $S); do
		agent "g$i" "{\"action\":\"write_shell\",\"shell_id\":\"class\",\"input\":\"echo tile-g$i-\$((6*7))\",\"append_newline\":true}" >/dev/null ||
			fail "write_shell g$i" || return 1
	done
	for i in $(seq -w 1 $S); do
		wait_screen "tile-g$i-42" 60 || return 1
	done
	# each marker sits in the tile of its own session: same tile column
	# as the title, below it
	for i in $(seq -w 1 $S); do
		screen grid | awk -v t="g$i:class" -v m="tile-g$i-42" '
			{ if ((c = index($0, t)) > 0) { col = c; row = NR } }
			{ if ((k = index($0, m)) > 0) { mc = k; mr = NR } }
			END { exit !(row && mr > row && mc >= col - 2 && mc < col + 40) }' ||
			fail "tile-g$i-42 is not under the title of g$i" || return 1
	done
}

t_grid_never_resizes_the_pty() {
	local cols
	for i in 01 07 10; do
		cols=$(vmux shells "g$i" --json | jq -r '.[] | select(.shell_id == "class") | "\(.cols)x\(.rows)"')
		[[ $cols == 80x24 ]] || fail "g$i's PTY is $cols, want 80x24" || return 1
	done
}

t_filter_and_open() {
	tm send-keys -t grid / || return 1
	wait_screen '^filter:' 10 || return 1
	tm send-keys -t grid -l 'g07' && tm send-keys -t grid Enter || return 1
	wait_screen 'g07:class live' 10 || return 1
	! screen grid | grep -q 'g01:class' || fail "the filter left g01" || return 1
	tm send-keys -t grid Enter || return 1
	wait_screen 'g07:class live [0-9]+x[0-9]+' 20 || return 1
	wait_screen 'tile-g07-42' 10
}

t_checks_on_tiles_and_sorted() {
	local first
	printf '#!/bin/sh\n[ "$(hostname)" != g03 ] && echo ok || { echo broken; exit 1; }\n' >"$TMP/grade.sh"
	vmux check "$TMP/grade.sh" g01 g02 g03 >/dev/null
	wait_screen 'g03:class live (active|idle [0-9]+[smh])  check FAIL' 30 || return 1
	wait_screen 'g01:class live (active|idle [0-9]+[smh])  check pass' 30 || return 1
	# o: by name, then by activity, then by check result (failed first)
	tm send-keys -t grid o o || return 1
	wait_screen 'tiles sorted by check' 10 || return 1
	first=$(screen grid | head -n 1)
	[[ $first == '>g03:class'* || $first == ' g03:class'* ]] ||
		fail "the failed check is not the first tile: $first" || return 1
	tm send-keys -t grid o || return 1
	wait_screen 'tiles sorted by name' 10 || return 1
}

t_enter_opens_a_shell() {
	tm send-keys -t grid / || return 1
	wait_screen '^filter:' 10 || return 1
	tm send-keys -t grid -l 'g12' && tm send-keys -t grid Enter || return 1
	wait_screen 'no shell yet' 10 || return 1
	tm send-keys -t grid Enter || return 1
	wait_screen 'g12:shell-[0-9]+ live [0-9]+x[0-9]+' 30 || return 1
	expect_eq "g12's shells" "$(vmux shells g12 --json | jq length)" 1 || return 1
	# back to the grid, everything shown again
	tm send-keys -t grid C-b w || return 1
	wait_screen 'g12:shell-[0-9]+ live' 20 || return 1
	tm send-keys -t grid / || return 1
	wait_screen '^filter:' 10 || return 1
	tm send-keys -t grid C-u Enter || return 1
	wait_screen 'g01:class live' 20
}

check "12 sessions, a tile each (one stopped, one with no shell yet)" t_every_session_has_a_tile
check "output in each shell shows in its tile" t_output_shows_in_its_tile
check "the grid never resizes a guest's PTY" t_grid_never_resizes_the_pty
check "each title has the last check; o sorts by it" t_checks_on_tiles_and_sorted
check "Enter on a session with no shell opens one" t_enter_opens_a_shell
check "the filter narrows tiles, Enter opens one" t_filter_and_open
tm send-keys -t grid C-b d
