#!/usr/bin/env bash
# 40-grid: the teacher's wall with 12 real sessions on a 200x60 terminal:
# every session gets a tile (ten with a shell, live; one running with no
# shell yet; one stopped), output typed into each shell shows in its own
# tile, the last check's result is on each title and sorts the tiles, the
# filter narrows them, Enter opens one full size (and opens a shell for the
# session that had none), and the grid never resizes a guest's PTY. A
# student attached with `vmux shell --as alice` shows on their tile, and
# sees the teacher watching in their terminal's title; the teacher zooms in
# and takes the keyboard (the student is told, and their keys are dropped),
# then hands it back.
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
		"env -i PATH=/usr/bin:/bin HOME=$TMP/home TERM=tmux-256color LANG=C.UTF-8 VMUX_HOME=$VMUX_HOME $VMUX tui --grid --as teacher" || return 1
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
			{ if (!row && (c = index($0, t)) > 0) { col = c; row = NR } }
			{ if (!mr && (k = index($0, m)) > 0) { mc = k; mr = NR } }
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

# title_has REGEX: poll the student's terminal title until it matches.
title_has() {
	local deadline=$((SECONDS + 60)) title
	until title=$(tm display-message -p -t student '#{pane_title}') &&
		[[ $title =~ $1 ]]; do
		((SECONDS < deadline)) || { echo "the student's title is '$title', want /$1/"; return 1; }
		sleep 0.1
	done
}

t_watchers_by_label() {
	tm new-session -d -s student -x 100 -y 30 \
		"env -i PATH=/usr/bin:/bin HOME=$TMP/home TERM=tmux-256color LANG=C.UTF-8 VMUX_HOME=$VMUX_HOME $VMUX shell g05 --id class --as alice" || return 1
	tm set-option -t student remain-on-exit on >/dev/null || return 1
	wait_on student '~ #$' 60 || return 1
	# the wall names the student on their tile ...
	wait_screen 'g05:class live .*with alice' 60 || return 1
	# ... and the student's title names the teacher, watching
	title_has 'vmux g05:class · with teacher \(watching\)' || return 1
	expect_eq "g05's roster" \
		"$(vmux shells g05 --json | jq -c '[.[] | select(.shell_id == "class") | .roster[] | [.as, .watching]] | sort')" \
		'[["alice",false],["teacher",true]]'
}

t_takeover_and_hand_back() {
	tm send-keys -t grid / || return 1
	wait_screen '^filter:' 10 || return 1
	tm send-keys -t grid -l 'g05' && tm send-keys -t grid Enter z || return 1
	wait_screen 't takes the keyboard, z back' 20 || return 1
	tm send-keys -t grid t || return 1
	wait_screen 'g05:class live .*YOU TYPE' 30 || return 1
	wait_on student 'teacher has taken the keyboard' 30 || return 1
	title_has 'teacher has the keyboard' || return 1
	type_line 'echo student-$((1+1))' student || return 1
	type_line 'echo teacher-$((2+2))' grid || return 1
	wait_on student '^teacher-4' 40 || return 1
	wait_screen '^teacher-4' 20 || return 1
	! screen student | grep -q '^student-2' ||
		fail "keys went through while the teacher held the keyboard" || return 1
	# prefix T hands it back: the student types again
	tm send-keys -t grid C-b T || return 1
	wait_on student 'teacher handed the keyboard back' 30 || return 1
	type_line 'echo back-$((3+3))' student || return 1
	wait_on student '^back-6' 40 || return 1
	! screen student | grep -q '^student-2' ||
		fail "the student's keys from the takeover arrived later" || return 1
	tm send-keys -t grid q || return 1 # out of the zoom
	wait_screen '\[wall\] Enter opens' 10 || return 1
	tm send-keys -t grid / || return 1
	wait_screen '^filter:' 10 || return 1
	tm send-keys -t grid C-u Enter || return 1
	wait_screen 'g01:class live' 20 || return 1
	tm send-keys -t student C-] || return 1
	wait_on student 'detached from shell class in g05' 10
}

check "12 sessions, a tile each (one stopped, one with no shell yet)" t_every_session_has_a_tile
check "output in each shell shows in its tile" t_output_shows_in_its_tile
check "the grid never resizes a guest's PTY" t_grid_never_resizes_the_pty
check "each title has the last check; o sorts by it" t_checks_on_tiles_and_sorted
check "Enter on a session with no shell opens one" t_enter_opens_a_shell
check "who is attached shows on the wall and in the student's title" t_watchers_by_label
check "the teacher takes a student's keyboard and hands it back" t_takeover_and_hand_back
check "the filter narrows tiles, Enter opens one" t_filter_and_open
tm send-keys -t grid C-b d
