#!/usr/bin/env bash
# 40-grid: the teacher's grid with 12 real sessions on a 200x60 terminal:
# every session's shell gets a tile, output typed into each shell shows in
# its own tile, the filter narrows the tiles, Enter opens one full size,
# and the grid never resizes a guest's PTY.
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

for i in $(seq -w 1 $N); do
	need_session "g$i" --memory 192
	agent "g$i" '{"action":"open_shell","shell_id":"class","cols":80,"rows":24}' >/dev/null ||
		{ echo "FAIL open_shell in g$i"; exit 1; }
done

t_every_session_has_a_tile() {
	tm new-session -d -s grid -x 200 -y 60 \
		"env -i PATH=/usr/bin:/bin HOME=$TMP/home TERM=tmux-256color LANG=C.UTF-8 VMUX_HOME=$VMUX_HOME $VMUX tui --grid" || return 1
	for i in $(seq -w 1 $N); do
		wait_screen "g$i:class live" 60 || return 1
	done
}

t_output_shows_in_its_tile() {
	local i
	for i in $(seq -w 1 $N); do
		agent "g$i" "{\"action\":\"write_shell\",\"shell_id\":\"class\",\"input\":\"echo tile-g$i-\$((6*7))\",\"append_newline\":true}" >/dev/null ||
			fail "write_shell g$i" || return 1
	done
	for i in $(seq -w 1 $N); do
		wait_screen "tile-g$i-42" 60 || return 1
	done
	# each marker sits in the tile of its own session: same tile column
	# as the title, below it
	for i in $(seq -w 1 $N); do
		screen grid | awk -v t="g$i:class" -v m="tile-g$i-42" '
			{ if ((c = index($0, t)) > 0) { col = c; row = NR } }
			{ if ((k = index($0, m)) > 0) { mc = k; mr = NR } }
			END { exit !(row && mr > row && mc >= col - 2 && mc < col + 40) }' ||
			fail "tile-g$i-42 is not under the title of g$i" || return 1
	done
}

t_grid_never_resizes_the_pty() {
	local cols
	for i in 01 07 12; do
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

check "12 sessions, a tile each" t_every_session_has_a_tile
check "output in each shell shows in its tile" t_output_shows_in_its_tile
check "the grid never resizes a guest's PTY" t_grid_never_resizes_the_pty
check "the filter narrows tiles, Enter opens one" t_filter_and_open
tm send-keys -t grid C-b d
