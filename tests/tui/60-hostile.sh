#!/usr/bin/env bash
# 60-hostile: one hostile or hung guest never stalls the TUI for the others
# (tests/tools/hostile-agent.c, picked by session name): while hhang's agent
# never answers list_shells, its row says so and the other session's shell
# still types and echoes; hbig's 64 MiB reply is refused at the cap and
# hwide's 200000-argument command is cut; hsize's RESIZE of 65535x65535 is
# clamped, the TUI stays alive and small, also when a shorter RESIZE leaves
# a scroll region and a saved cursor past the bottom, and output that hung
# or crashed libvterm 0.1.4 (a REP of nothing, a CSI of 20 parameters); a
# mouse click selects the row drawn under it.
source "$(dirname "$0")/../e2e/lib.sh"
source "$(dirname "$0")/tmux.sh"

tui_trap

IMG=$BUILD/tests/hostile-initrd.img
[[ -f $IMG ]] || { echo "FAIL $IMG missing (make test builds it)"; exit 1; }
need_session ok
need_session hhang --initrd "$IMG"
need_session hsize --initrd "$IMG"
need_session hbig --initrd "$IMG"
need_session hwide --initrd "$IMG"

wait_screen() { wait_on main "$1" "${2:-20}"; }

# click X Y: a left click (press, release) at 0-based column X, line Y, as
# the X10 mouse protocol tmux-256color's kmous names.
click() {
	local b=' ' r='#' x y
	x=$(printf "\\x$(printf %x $(($1 + 33)))")
	y=$(printf "\\x$(printf %x $(($2 + 33)))")
	tm send-keys -t main -l -- $'\e[M'"$b$x$y" && tm send-keys -t main -l -- $'\e[M'"$r$x$y"
}

tui_host_shell || exit 1
type_line "$VMUX tui ok; echo TUI-EXIT=\$?"

t_hung_guest_stalls_nobody() {
	wait_screen 'ok:shell-1 live' 30 || return 1
	# hhang's row says its agent does not answer ...
	wait_screen '^ +hhang' 30 && wait_screen 'timed out waiting' 30 || return 1
	wait_screen 'agent reply too large' 30 || return 1
	wait_screen ' w running 0v a x x x' 30 || return 1
	# ... and ok's shell answers keys meanwhile, again and again
	for i in 1 2 3; do
		type_line "echo alive-\$((6*7))-$i" || return 1
		wait_screen "alive-42-$i" 10 || return 1
	done
}

t_huge_resize_clamped() {
	local pid hwm
	prefix : && tm send-keys -t main -l 'select hsize' && tm send-keys -t main Enter || return 1
	prefix c || return 1
	# the scroll region and the saved cursor left past a shorter
	# screen's bottom crashed libvterm 0.1.4; the TUI goes on
	wait_screen 'hostile-after-shrink' 30 || return 1
	# a REP after a zero-width glyph hung libvterm, 20 parameters
	# crashed it
	wait_screen 'hostile-after-rep' 30 || return 1
	wait_screen 'hsize:s live' 10 || return 1
	prefix '?' || return 1
	wait_screen 'help: q or Esc closes' 10 || return 1
	tm send-keys -t main q || return 1
	pid=$(pgrep -f "$VMUX tui ok" | head -n 1)
	hwm=$(awk '/^VmHWM/ { print $2 }' /proc/"$pid"/status)
	echo "figure: TUI peak RSS facing hhang, hbig (64 MiB reply), hwide (200000 arguments), hsize (65535x65535): ${hwm} KiB"
	((hwm > 0 && hwm < 262144)) || fail "TUI peak RSS ${hwm} KiB"
}

t_click_selects_the_row_under_it() {
	local y try t
	wait_screen '^ +ok ' 30 || return 1
	wait_screen 'shell-1 running' 30 || return 1
	wait_screen '^ +evil running' 30 || return 1
	# The hostile sessions' rows above ok's come and go as their answers
	# do (a timed-out poll, a shell list), so a row read off the screen
	# can move before the click is read: click again, on the row read
	# afresh, when it did. Three misses fail.
	for try in 1 2 3; do
		# the line where ok's shell-1 is drawn, below the " ok" header
		y=$(screen main | awk '/^ .? ok /{ s = 1 } s && /shell-1 running/ { print NR - 1; exit }')
		[[ $y =~ ^[0-9]+$ ]] || fail "no ok:shell-1 row: $(screen main); vmux shells ok: $(vmux shells ok 2>&1)" || return 1
		click 4 "$y" || return 1
		for t in $(seq 50); do
			screen main | grep -q 'ok:shell-1 live' && return 0
			sleep 0.1
		done
	done
	wait_screen 'ok:shell-1 live' 1
}

check "a hung guest is marked; the other shell still answers" t_hung_guest_stalls_nobody
check "a 65535x65535 RESIZE is clamped; a shrink past a scroll region, a REP of nothing, a CSI of 20 parameters are safe; the TUI stays alive and small" t_huge_resize_clamped
check "a click selects the sidebar row drawn under it" t_click_selects_the_row_under_it
