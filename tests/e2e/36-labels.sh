#!/usr/bin/env bash
# 36-labels: labels on real sessions and the patterns that pick them:
# a class made by `new --count` (progress, --roster, --json),
# `new --label`, `ls -l` / --show-labels / --json, globs and -l on one-
# session commands (one picked: it runs there; several: a usage error that
# lists them; none: an error), exec over every session picked (a table,
# --json), check grading a class, stop and start by selector, rm by a pattern
# (asks on a terminal, refuses without one unless --yes), bad labels
# refused before anything is made, and the TUI's -l filter and
# --group-by headings.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../tui/tmux.sh"
labels_cleanup() {
	local rc=$?
	tui_tmux_kill
	(exit $rc)
	e2e_cleanup
}
trap labels_cleanup EXIT

# a class of two made at once (lb-1, lb-2 in class a), and lb-3 in class b
"$VMUX" new lb-3 --memory 128 --label class=b --label seat=3 >"$TMP/new3.out" 2>&1 &
p3=$!
"$VMUX" new --count 2 --prefix lb- --memory 128 --label class=a >"$TMP/class.out" 2>&1 ||
	{ echo "FAIL new --count: $(cat "$TMP/class.out")"; exit 1; }
wait "$p3" || { echo "FAIL boot lb-3: $(cat "$TMP/new3.out")"; exit 1; }

t_new_count_progress() {
	local out
	# a line as each is ready, then the count
	expect_match "progress" "$(sort "$TMP/class.out")" $'^2 of 2 sessions created\nlb-1  ready \([0-9.]+ s\)\nlb-2  ready \([0-9.]+ s\)$' || return 1
	expect_eq "labelled" "$(session_field lb-2 labels.class)" a || return 1
	# one that exists fails alone; --json says each
	printf 'lb-1\n# a comment\n\nlb-9\n' >"$TMP/roster"
	out=$(vmux new --roster "$TMP/roster" --memory 128 --json)
	expect_eq "roster status" $? 125 || return 1
	expect_eq "roster results" "$(jq -c '[.[] | [.name, .created]]' <<<"$out")" '[["lb-1",false],["lb-9",true]]' || return 1
	expect_match "why" "$(jq -r '.[0].error' <<<"$out")" "'lb-1' already exists" || return 1
	vmux rm -f lb-9 >/dev/null || return 1
	out=$(vmux new --count 2 2>&1)
	expect_eq "--count without --prefix: status" $? 2 || return 1
	expect_match "--count without --prefix: said" "$out" "--count needs --prefix"
}

t_tui_filter_and_groups() {
	tm new-session -d -s lab -x 100 -y 30 \
		"env -i PATH=/usr/bin:/bin HOME=$TMP/home TERM=tmux-256color LANG=C.UTF-8 VMUX_HOME=$VMUX_HOME $VMUX tui --group-by seat" || return 1
	wait_on lab '^ no seat' 30 || return 1
	# headings in order, each over its sessions, those without it last
	screen lab | grep -E '^ (seat=|no seat)|^[ >] lb-' | sed 's/ *x *$//; s/ *│.*//' >"$TMP/side"
	expect_eq "grouped sidebar" "$(cat "$TMP/side")" \
		"$(printf ' seat=3\n> lb-3\n no seat\n  lb-1\n  lb-2')" || return 1
	tm kill-session -t lab
	tm new-session -d -s lab2 -x 100 -y 30 \
		"env -i PATH=/usr/bin:/bin HOME=$TMP/home TERM=tmux-256color LANG=C.UTF-8 VMUX_HOME=$VMUX_HOME $VMUX tui -l class=b" || return 1
	wait_on lab2 'lb-3' 30 || return 1
	! screen lab2 | grep -q 'lb-[12]' || fail "-l class=b shows others: $(screen lab2 | head -12)"
}

t_ls_by_label() {
	local out
	out=$(vmux ls -l class=a --json | jq -r '[.[].name] | join(" ")')
	expect_eq "ls -l class=a" "$out" "lb-1 lb-2" || return 1
	out=$(vmux ls -l 'class!=a,seat' --json | jq -r '[.[].name] | join(" ")')
	expect_eq "ls -l class!=a,seat" "$out" "lb-3" || return 1
	out=$(vmux ls -l '!seat' --json | jq -r '[.[].name] | join(" ")')
	expect_eq "ls -l !seat" "$out" "lb-1 lb-2" || return 1
	out=$(vmux ls --json | jq -r '.[] | select(.name == "lb-3") | .labels.class')
	expect_eq "labels in --json" "$out" b || return 1
	out=$(vmux ls --show-labels)
	expect_match "LABELS column" "$out" "LABELS" || return 1
	expect_match "lb-3's labels" "$out" "lb-3 .*class=b,seat=3" || return 1
	# a bad selector is a usage error naming it
	out=$(vmux ls -l 'class=a b' 2>&1)
	expect_eq "bad selector status" $? 2 || return 1
	expect_match "bad selector said" "$out" "selector 'class=a b'"
}

t_one_session_commands() {
	local out
	# -l and a glob that pick one: the command runs in that session
	expect_eq "exec -l seat=3" "$(vmux exec -l seat=3 -- hostname)" lb-3 || return 1
	expect_eq "exec 'lb-2*'" "$(vmux exec 'lb-2*' -- hostname)" lb-2 || return 1
	expect_eq "ping -l" "$(vmux ping -l class=b --json | jq -r .hostname)" lb-3 || return 1
	# a NAME and -l: one of them is a mistake, nothing runs
	out=$(vmux exec lb-1 -l class=a -- touch /workspace/ran 2>&1)
	expect_eq "NAME and -l: status" $? 2 || return 1
	expect_match "NAME and -l: said" "$out" "'lb-1' and -l: a NAME or -l, not both" || return 1
	vmux exec lb-1 -- test ! -e /workspace/ran || fail "it ran" || return 1
	# several, for a command that works on one: a usage error listing them
	out=$(vmux shell 'lb-*' 2>&1 </dev/null)
	expect_eq "shell glob of three: status" $? 2 || return 1
	expect_match "shell glob of three: said" "$out" "lb-\* picks 3 sessions" || return 1
	# none: an error naming the pattern
	out=$(vmux exec -l class=z -- true 2>&1)
	expect_eq "none picked: status" $? 125 || return 1
	expect_match "none picked: said" "$out" "no session has labels matching -l class=z" || return 1
	out=$(vmux logs 'nope-*' 2>&1)
	expect_eq "glob of none: status" $? 125 || return 1
	expect_match "glob of none: said" "$out" "no session matches 'nope-\*'"
}

t_exec_fans_out() {
	local out
	# every session picked runs it, with the flags given; a table after
	out=$(vmux exec -l class=a --env X=7 -- sh -c 'echo "$X $(hostname)"; [ "$(hostname)" = lb-1 ]')
	expect_eq "fan-out status: one failed" $? 1 || return 1
	expect_match "table" "$out" $'SESSION +STATUS +EXIT +OUTPUT\nlb-1 +ok +0 +7 lb-1\nlb-2 +failed +1 +7 lb-2' || return 1
	out=$(vmux exec 'lb-*' --json -- sh -c 'hostname; echo e >&2')
	expect_eq "fan-out --json: all ok" $? 0 || return 1
	expect_eq "json list" "$(jq -c '[.[] | [.session, .exit_code, .stdout, .stderr]]' <<<"$out")" \
		'[["lb-1",0,"lb-1\n","e\n"],["lb-2",0,"lb-2\n","e\n"],["lb-3",0,"lb-3\n","e\n"]]' || return 1
	# a timeout per session, as for one
	out=$(vmux exec -l class=a -t 2 -- sleep 30)
	expect_match "timed out" "$out" "lb-1 +timed out +124" || return 1
	# the output kept is bounded: 1 MiB each comes back cut, counted
	out=$(vmux exec 'lb-[12]' --json -- head -c 1048576 /dev/zero)
	expect_eq "cut and counted" "$(jq -c '[.[] | [.stdout_truncated, .stdout_bytes]]' <<<"$out")" \
		'[[true,1048576],[true,1048576]]'
}

t_check_grades_a_class() {
	local out
	printf '#!/bin/sh\n[ -e /workspace/done ] && { echo "found it"; exit 0; }\necho "no /workspace/done yet"; exit 3\n' >"$TMP/grade.sh"
	vmux exec lb-2 -- touch /workspace/done || return 1
	out=$(vmux check "$TMP/grade.sh" -l class=a)
	expect_eq "check status: one failed" $? 1 || return 1
	expect_match "check table" "$out" $'SESSION +RESULT +EXIT +LAST LINE\nlb-1 +fail +3 +no /workspace/done yet\nlb-2 +pass +0 +found it' || return 1
	# each session keeps its last result: ls --json and the TUI show it
	expect_eq "kept" "$(session_field lb-1 last_check.status) $(session_field lb-2 last_check.line)" "fail found it" || return 1
	expect_eq "not checked" "$(session_field lb-3 last_check)" null || return 1
	tm new-session -d -s chk -x 100 -y 30 \
		"env -i PATH=/usr/bin:/bin HOME=$TMP/home TERM=tmux-256color LANG=C.UTF-8 VMUX_HOME=$VMUX_HOME $VMUX tui" || return 1
	wait_on chk 'check fail: no /workspace' 30 || return 1
	wait_on chk 'check pass: found it' 5 || return 1
	tm kill-session -t chk
	# the script left out: -l does not make a session's name the script
	out=$(vmux check -l class=a 2>&1)
	expect_eq "no script named: status" $? 2 || return 1
	expect_match "no script named: said" "$out" "missing arguments" || return 1
	# a script that is not there: a usage error, nothing run
	out=$(vmux check "$TMP/none.sh" lb-3 2>&1)
	expect_eq "no script: status" $? 2 || return 1
	expect_match "no script: said" "$out" "script .*none.sh: No such file"
}

t_stop_and_start_by_selector() {
	local out
	out=$(vmux stop -l class=a -t 20)
	expect_eq "stop -l: status" $? 0 || return 1
	expect_eq "stop -l: each said" "$out" $'stopped lb-1\nstopped lb-2' || return 1
	expect_eq "lb-1" "$(session_field lb-1 state)" stopped || return 1
	expect_eq "lb-3 untouched" "$(session_field lb-3 state)" running || return 1
	# start -l: both at once, a line each in the table
	out=$(vmux start -l class=a)
	expect_eq "start -l: status" $? 0 || return 1
	expect_match "start -l: each" "$out" $'lb-1 +ok +0 *\nlb-2 +ok +0' || return 1
	expect_eq "started again" "$(vmux exec 'lb-1' -- hostname)" lb-1 || return 1
	expect_eq "lb-2 too" "$(session_field lb-2 state)" running
}

# broadcast_while_attaching: broadcast on, a line typed; lb-1 runs it (its
# screen shows the result) while lb-2 (its bridge stopped) is still
# attaching. Kept short: the attach gives up after 15 s.
broadcast_while_attaching() {
	tm send-keys -t bc C-b B || return 1
	wait_on bc 'broadcast on: keys go to 2 shells' 10 || return 1
	type_line 'echo bc-$((3*3)) > /workspace/bc; echo ran-$((2*4))' bc
	wait_on bc 'ran-8' 10 || fail "lb-1 did not run the broadcast line"
}

t_tui_broadcast() {
	local i bridge rc
	for i in 1 2 3; do
		printf '{"action":"open_shell","shell_id":"b","cols":80,"rows":24}\n' |
			vmux connect "lb-$i" 5005 >/dev/null || return 1
	done
	tm new-session -d -s bc -x 100 -y 30 \
		"env -i PATH=/usr/bin:/bin HOME=$TMP/home TERM=tmux-256color LANG=C.UTF-8 VMUX_HOME=$VMUX_HOME $VMUX tui -l class=a lb-1" || return 1
	wait_on bc 'lb-1:b live' 30 || return 1
	# lb-2's bridge held still: its shell cannot attach until it goes on,
	# and the line typed meanwhile must reach it once it does
	bridge=$(session_field lb-2 pids.bridge)
	kill -STOP "$bridge" || return 1
	broadcast_while_attaching
	rc=$?
	kill -CONT "$bridge"
	((rc == 0)) || return 1
	wait_on bc 'BROADCAST' 10 || return 1
	for i in 1 2; do
		wait_for 20 sh -c "[ \"\$('$VMUX' exec lb-$i -- cat /workspace/bc 2>/dev/null)\" = bc-9 ]" ||
			fail "lb-$i did not get the broadcast (typed while lb-2 attached)" || return 1
	done
	[[ $(vmux exec lb-3 -- ls /workspace) == *bc* ]] && fail "lb-3 (not shown) got it"
	tm send-keys -t bc C-b B || return 1
	wait_on bc 'broadcast off' 10 || return 1
	type_line 'echo one > /workspace/after' bc
	wait_for 20 sh -c "'$VMUX' exec lb-1 -- test -e /workspace/after" || fail "lb-1 lost its key" || return 1
	[[ $(vmux exec lb-2 -- ls /workspace) == *after* ]] && fail "broadcast did not stop"
	tm kill-session -t bc
	return 0
}

t_cp_hand_out_and_collect() {
	local out
	echo "exercise 1" >"$TMP/handout.txt"
	out=$(vmux cp -l class=a "$TMP/handout.txt" :/workspace/)
	expect_eq "hand out: status" $? 0 || return 1
	expect_eq "lb-2 has it" "$(vmux exec lb-2 -- cat /workspace/handout.txt)" "exercise 1" || return 1
	[[ $(vmux exec lb-3 -- ls /workspace) == *handout* ]] && fail "lb-3 (class b) got it"
	vmux exec -l class=a -- sh -c 'echo "answer of $(hostname)" > /workspace/answer' >/dev/null || return 1
	mkdir -p "$TMP/collected"
	out=$(vmux cp 'lb-[12]:/workspace/answer' "$TMP/collected")
	expect_eq "collect: status" $? 0 || return 1
	expect_eq "lb-1's" "$(cat "$TMP/collected/lb-1/answer")" "answer of lb-1" || return 1
	expect_eq "lb-2's" "$(cat "$TMP/collected/lb-2/answer")" "answer of lb-2" || return 1
	out=$(vmux cp -l class=a :/workspace/answer "$TMP/handout.txt" 2>&1)
	expect_eq "collect into a file: status" $? 2 || return 1
	expect_match "collect into a file" "$out" 'needs DST to be a directory' || return 1
	out=$(vmux cp -l class=a "$TMP/handout.txt" lb-1:/workspace/ 2>&1)
	expect_eq "-l and a NAME: status" $? 2 || return 1
}

t_kill_and_close_by_selector() {
	local out i
	for i in 1 2; do
		printf '{"action":"open_shell","shell_id":"w","cols":80,"rows":24}\n' |
			vmux connect "lb-$i" 5005 >/dev/null || return 1
		printf '{"action":"write_shell","shell_id":"w","input":"sleep 600","append_newline":true}\n' |
			vmux connect "lb-$i" 5005 >/dev/null || return 1
		wait_guest_cmd "lb-$i" 'sleep 600' || fail "sleep never ran in lb-$i" || return 1
	done
	# the job in every class-a shell "w", interrupted at once
	out=$(vmux kill -l class=a w -s INT)
	expect_eq "kill -l: status" $? 0 || return 1
	expect_match "kill -l: each" "$out" 'lb-1 +ok.*'$'\n''.*lb-2 +ok' || return 1
	for i in 1 2; do
		wait_for 20 sh -c "! '$VMUX' exec lb-$i -- sh -c 'ps | grep -q \"[s]leep 600\"'" ||
			fail "the sleep in lb-$i was not interrupted" || return 1
	done
	# and closed in both; a missing shell fails its own line only
	out=$(vmux close 'lb-[12]' w)
	expect_eq "close glob: status" $? 0 || return 1
	expect_eq "lb-1's shells" "$(vmux shells lb-1 --json | jq length)" 0 || return 1
	expect_eq "lb-2's shells" "$(vmux shells lb-2 --json | jq length)" 0 || return 1
	out=$(vmux close -l class=a w)
	expect_eq "close again: status" $? 1 || return 1
}

t_rm_by_pattern_asks() {
	local out
	# no terminal: refused, nothing removed
	out=$(vmux rm -l class=a </dev/null 2>&1)
	expect_eq "rm -l without a terminal: status" $? 2 || return 1
	expect_match "rm -l without a terminal: said" "$out" "picked 2 sessions \(lb-1, lb-2\): add --yes" || return 1
	expect_eq "nothing removed" "$(vmux ls --json | jq length)" 3 || return 1
	# a terminal: asked; 'n' keeps them
	out=$(printf 'n\n' | script -qec "$VMUX rm 'lb-[12]'" /dev/null 2>&1)
	expect_match "asked" "$out" "remove 2 sessions and their workspaces: lb-1, lb-2\? \[y/N\]" || return 1
	expect_eq "kept after n" "$(vmux ls --json | jq length)" 3 || return 1
	# -f: a glob of nothing is no complaint
	expect_status 0 vmux rm -f 'nope-*' || return 1
	# --yes: removed, each said
	out=$(vmux rm -l class=a --yes)
	expect_eq "rm --yes: each said" "$out" $'removed lb-1\nremoved lb-2' || return 1
	expect_eq "one left" "$(vmux ls --json | jq -r '.[].name')" lb-3
}

t_bad_labels_refused() {
	local out
	out=$(vmux new bad1 --label 'class' 2>&1)
	expect_eq "no =: status" $? 2 || return 1
	expect_match "no =: said" "$out" "label 'class': KEY=VALUE expected" || return 1
	out=$(vmux new bad1 --label a=1 --label a=2 2>&1)
	expect_eq "key twice: status" $? 2 || return 1
	expect_match "key twice: said" "$out" "label key 'a' given twice" || return 1
	out=$(vmux new bad1 --label 'a=x;y' 2>&1)
	expect_eq "bad value: status" $? 2 || return 1
	[[ ! -e $VMUX_HOME/sessions/bad1 ]] || fail "bad1 was made" || return 1
	# run --name on a session with another label: a conflict, not a change
	out=$(vmux run --name lb-3 --label class=a -- true 2>&1)
	expect_eq "run --name, other label: status" $? 125 || return 1
	expect_match "run --name, other label: said" "$out" "label class=b" || return 1
	expect_eq "label unchanged" "$(session_field lb-3 labels.class)" b
}

check "new --count: a class at once, a progress line each; --roster; one that exists fails alone" t_new_count_progress
check "the TUI: -l shows only what it picks, --group-by heads each group" t_tui_filter_and_groups
check "ls -l, --show-labels and labels in --json" t_ls_by_label
check "one-session commands: -l or a glob picking one runs there; several or none refused" t_one_session_commands
check "exec -l / a glob runs in every session picked: a table, --json, flags, timeouts" t_exec_fans_out
check "check SCRIPT -l: pass or fail each with the last line, kept, shown in the TUI" t_check_grades_a_class
check "stop -l stops what it picks and says each; start -l" t_stop_and_start_by_selector
check "kill -l and close with a glob: every shell picked" t_kill_and_close_by_selector
check "cp to every session picked (a handout), and from each into DST/NAME" t_cp_hand_out_and_collect
check "the TUI's broadcast: typed once, run in every shell -l shows" t_tui_broadcast
check "rm by a pattern asks on a terminal, refuses without one unless --yes" t_rm_by_pattern_asks
check "bad labels refused before anything is made; run --name cannot change a label" t_bad_labels_refused
