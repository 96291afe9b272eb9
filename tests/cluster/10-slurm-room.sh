#!/usr/bin/env bash
# 10-slurm-room: a class on a two-node Slurm cluster (tests/e2e/slurm.sh),
# what takes too long for make test (make test-cluster, which CI runs):
# new --count 4 as one job array spread over both nodes; the TUI over the
# cluster lists them and types into one through srun; Slurm's own time
# limit pauses a session, and start resumes it in a new job with its
# memory and workspace; a node's slurmd killed shows its sessions lost,
# with why, while the other node's answer; no account, and no munge,
# are one clear error each.
source "$(dirname "$0")/../e2e/lib.sh"
source "$(dirname "$0")/../e2e/slurm.sh"
source "$(dirname "$0")/../tui/tmux.sh"
command -v slurmctld >/dev/null || [[ -x /usr/sbin/slurmctld ]] || { echo "FAIL slurm-wlm is not installed (make deps installs it)"; exit 1; }

e2e_before_cleanup() { tui_tmux_kill; slurm_stop "${SHARED:-}"; }
# a node not answering for 10 s is down (Slurm's default: 300 s)
SLURM_CONF_EXTRA="SlurmdTimeout=10"
slurm_start
SHARED=$TMP/shared
mkdir -p "$SHARED"
vmux host add c "slurm://vm?dir=$SHARED" >/dev/null || exit 1

c() { vmux -H c "$@"; }
field() { c ls --json | jq -r --arg n "$1" ".[] | select(.name == \$n) | .$2"; }

t_array() {
	local out nodes
	out=$(c new --count 4 --prefix st- --memory 256M --label room=a 2>&1) || { fail "new --count: $out"; return 1; }
	expect_match "said" "$out" '4 of 4 sessions created' || return 1
	expect_match "a line a session" "$(grep -c '^st-[1-4]  ready (' <<<"$out")" '^4$'
	# one job array, a task a session
	expect_eq "array tasks" "$(squeue -h -r --me -n vmux-st- -o %i | sed 's/_.*//' | sort -u | wc -l)" 1
	# its comment names the labels and the cluster's folder
	expect_eq "comment" "$(squeue -h -r --me -n vmux-st- -o %k | sort -u)" "vmux [room=a] $SHARED"
	expect_eq "running" "$(c ls --json | jq '[.[] | select(.state == "running")] | length')" 4
	nodes=$(c ls --json | jq -r '[.[].node] | unique | join(",")')
	expect_eq "spread over both nodes" "$nodes" n1,n2
	for s in st-1 st-2 st-3 st-4; do
		expect_eq "$s answers" "$(c exec "$s" -- sh -c 'echo $((40+2))')" 42
	done
	# names that exist fail alone; the others are made
	out=$(c new --count 1 --prefix st- 2>&1)
	expect_eq "exit" "$?" 125
	expect_match "exists" "$out" 'st-1  failed: session st-1 exists'
	expect_status 2 c new --count 2 2>/dev/null
}
check "new --count 4: one job array, spread over both nodes" t_array

t_tui() {
	tm new-session -d -s tui -x 150 -y 40 \
		"env -i PATH=$PATH HOME=$TMP/home TERM=tmux-256color LANG=C.UTF-8 VMUX_HOME=$VMUX_HOME XDG_CONFIG_HOME=$XDG_CONFIG_HOME SLURM_CONF=$SLURM_CONF $VMUX -H c tui c:st-2"
	wait_on tui '^ c ' 60 || return 1
	wait_on tui '^  c:st-1 ' 60 || return 1
	wait_on tui '^  c:st-4 ' 60 || return 1
	wait_on tui '^ *c:st-2:shell-1 live ' 60 || return 1
	# the pane is st-2's shell, through srun on its node
	wait_on tui '~ #' 60 || return 1
	type_line 'echo tui-$((6*7)) on $(cat /etc/hostname)' tui
	wait_on tui 'tui-42 on ' 30 || return 1
	# the wall tiles it, live, through the same stream
	tm send-keys -t tui C-b w
	wait_on tui 'c:st-2:shell-1 live (active|idle)' 30 || return 1
	wait_on tui 'no shell yet' 30 || return 1 # st-1, st-3, st-4
	tm send-keys -t tui Escape
	wait_for 10 eval '! screen tui | grep -q "no shell yet"' || fail "the wall did not close"
	tm send-keys -t tui C-b d
	# what the TUI asked Slurm for ends with it
	wait_for 30 eval '! pgrep -f -- "$SHARED/st-2 .*connect --announce" >/dev/null &&
		! pgrep -f -- "$VMUX -H c tui --model-json" >/dev/null' ||
		fail "left running: $(pgrep -af -- "--model-json|--announce")"
}
check "the TUI over the cluster: every node's sessions, typing into one" t_tui

# secs M:SS or H:MM:SS or D-H:MM:SS (squeue's times): seconds
secs() { awk -F'[-:]' '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }' <<<"$1"; }

t_shell() {
	tm new-session -d -s sh -x 100 -y 30 \
		"env -i PATH=$PATH HOME=$TMP/home TERM=tmux-256color LANG=C.UTF-8 VMUX_HOME=$VMUX_HOME XDG_CONFIG_HOME=$XDG_CONFIG_HOME SLURM_CONF=$SLURM_CONF $VMUX -H c shell st-3"
	wait_on sh '~ #' 60 || return 1
	type_line 'stty size; echo shell-$((7*6))' sh
	wait_on sh '^30 100' 30 || return 1
	wait_on sh 'shell-42' 30 || return 1
	type_line 'exit' sh
	wait_for 30 eval '! tm has-session -t sh 2>/dev/null' || fail "vmux shell did not end with its shell"
}
check "vmux -H c shell in tmux: a terminal inside the job (srun --pty)" t_shell

t_time_limit() {
	local job used
	c exec st-4 -- sh -c 'echo before-limit > /workspace/kept; sync; echo in-memory >/tmp/m' || return 1
	# a task of the array by Slurm's own name for it (12_4: 12 alone is
	# every task)
	job=$(squeue -h -r --me -o '%i %j %K' | awk '$2 == "vmux-st-" && $3 == 4 { print $1 }')
	[[ $job == *_4 ]] || { fail "no job for st-4: $(squeue -r)"; return 1; }
	# an admin cuts its time limit to 70 s from now: Slurm's notice
	# (60 s ahead) reaches vmux, which pauses the guest in time
	used=$(secs "$(squeue -h -j "$job" -o %M)")
	scontrol update JobId="$job" TimeLimit="$(((used + 70) / 60)):$(((used + 70) % 60))" || return 1
	wait_for 150 eval '[[ $(field st-4 state) == paused ]]' || { fail "st-4: $(c ls)"; return 1; }
	expect_match "the job's log" "$(cat "$SHARED/st-4/job.log")" 'time limit: pausing st-4'
	[[ $(cat "$SHARED/st-4/job.log") != *"QEMU was ended"* ]] ||
		fail "the guest was ended: $(cat "$SHARED/st-4/job.log")"
	wait_for 60 eval '[[ -z $(squeue -h -r --me -j "$job" 2>/dev/null) ]]' || fail "the job did not end: $(squeue -r)"
	[[ $(field st-3 state) == running ]] || fail "st-3 was paused too: $(c ls)"
	# start resumes it in a new job, memory and workspace whole
	c start st-4 >/dev/null || { fail "start"; return 1; }
	expect_eq "state after start" "$(field st-4 state)" running
	expect_eq "memory after" "$(c exec st-4 -- cat /tmp/m)" in-memory
	expect_eq "the workspace after" "$(c exec st-4 -- cat /workspace/kept)" before-limit
}
check "Slurm's time limit: paused with its memory, start resumes it in a new job" t_time_limit

t_node_lost() {
	local victim other gone kept pidvar
	victim=$(field st-1 node)
	[[ $victim == n1 || $victim == n2 ]] || { fail "st-1 on '$victim'"; return 1; }
	other=$([[ $victim == n1 ]] && echo n2 || echo n1)
	kept=$(c ls --json | jq -r --arg n "$other" '[.[] | select(.node == $n and .state == "running") | .name][0]')
	[[ -n $kept && $kept != null ]] || { fail "no session on $other: $(c ls)"; return 1; }
	pidvar=SLURMD_PID_$victim
	kill -9 "${!pidvar}"
	wait_for 120 eval '[[ $(field st-1 state) == lost ]]' || { fail "st-1 never lost: $(c ls; sinfo)"; return 1; }
	expect_match "why" "$(field st-1 reason)" "its node $victim is down.*(Not responding|not responding)"
	expect_eq "node kept" "$(field st-1 node)" "$victim"
	expect_match "ls shows why" "$(c ls)" "st-1 +lost +$victim .*down"
	expect_eq "$kept on $other" "$(c exec "$kept" -- sh -c 'echo $((2+3))')" 5
	expect_status 125 c exec st-1 -- true 2>/dev/null
}
check "a node's slurmd killed: its sessions lost with why, the other node's answer" t_node_lost

t_several() {
	local names
	names=$(c ls --json | jq -r '[.[] | select(.state == "running") | .name] | join(" ")')
	[[ $names == *" "* ]] || { fail "fewer than two running: $(c ls)"; return 1; }
	c stop $names || return 1
	for n in $names; do
		expect_eq "$n stopped" "$(field "$n" state)" stopped
	done
	expect_status 2 c new a b 2>/dev/null
}
check "stop takes several names" t_several

t_no_account() {
	local out
	vmux host add cls "slurm://class?dir=$SHARED" >/dev/null || return 1
	out=$(vmux -H cls new nobody 2>&1)
	expect_eq "exit" "$?" 125
	expect_match "said" "$out" "vmux: nobody cannot run on cls: .*account" || return 1
	[[ -z $(squeue -h --me -n vmux-nobody) ]] || fail "a job for nobody: $(squeue)"
	[[ ! -e $SHARED/nobody ]] || fail "a folder for nobody: $(ls "$SHARED/nobody")"
}
check "a user without the partition's account: one clear error" t_no_account

t_no_munge() {
	local out
	# this user's Slurm tools find no munged (the cluster's is untouched)
	sed "s|^AuthInfo=.*|AuthInfo=socket=$TMP/no-munged.sock|" "$SLURM_CONF" >"$TMP/no-munge.conf"
	out=$(SLURM_CONF=$TMP/no-munge.conf "$VMUX" -H c ls 2>&1)
	expect_eq "exit" "$?" 125
	expect_match "said" "$out" '^vmux: .*munge' || return 1
	expect_eq "one line" "$(wc -l <<<"$out")" 1
	out=$(SLURM_CONF=$TMP/no-munge.conf "$VMUX" -H c new nomunge 2>&1)
	expect_eq "new exit" "$?" 125
	expect_match "new said" "$out" '^vmux: .*munge'
	expect_eq "new: one line" "$(wc -l <<<"$out")" 1
	[[ ! -e $SHARED/nomunge ]] || fail "a folder for nomunge: $(ls -R "$SHARED/nomunge")"
}
check "no munge: one clear error" t_no_munge
