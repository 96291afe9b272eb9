#!/usr/bin/env bash
# 98-slurm: sessions as Slurm jobs on a real cluster (tests/e2e/slurm.sh:
# munge, slurmctld, two slurmd). A host slurm://vm?dir=SHARED: new submits
# a job whose body is `vmux new --foreground`, ls is one squeue with the
# node and job, exec and cp run inside the job (srun --overlap), stop
# cancels it (the guest powered off cleanly), start submits again and,
# with the first node drained, lands on the other with the workspace
# whole; pause inside the job saves the session in the shared folder and
# the job ends, and resume goes on from memory on the other node; a
# bad partition is one clear error; rm leaves no job or folder.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/slurm.sh"
command -v slurmctld >/dev/null || [[ -x /usr/sbin/slurmctld ]] || { echo "FAIL slurm-wlm is not installed (make deps installs it)"; exit 1; }

e2e_before_cleanup() { slurm_stop "${SHARED:-}"; }
slurm_start
SHARED=$TMP/shared
mkdir -p "$SHARED" && chmod 0700 "$SHARED" # its own alone, whatever the umask

c() { vmux -H c "$@"; }
field() { c ls --json | jq -r --arg n "$1" ".[] | select(.name == \$n) | .$2"; }

t_host() {
	vmux host add c "slurm://vm?dir=$SHARED" || return 1
	vmux host ls | grep -q "slurm://vm" || fail "host ls: $(vmux host ls)"
	expect_status 2 vmux host add bad1 'slurm://vm?what=1'
	expect_status 2 vmux host add bad2 'slurm://v;m'
	expect_status 2 vmux host add bad3 'slurm://vm?dir=relative'
}
check "host add slurm://: taken, bad ones refused" t_host

t_new() {
	local out node
	out=$(c new s1 --memory 256M) || { fail "new: $out"; return 1; }
	expect_eq "printed" "$out" s1
	expect_eq state "$(field s1 state)" running
	node=$(field s1 node)
	[[ $node == n1 || $node == n2 ]] || fail "node '$node'"
	[[ $(field s1 job) =~ ^[0-9]+$ ]] || fail "job '$(field s1 job)'"
	squeue -h --me -o '%j %T' | grep -q '^vmux-s1 RUNNING$' || fail "squeue: $(squeue)"
	# listed beside this machine's sessions, as any host is
	expect_match "ls over two hosts" "$(vmux -H c -H local ls)" 'c +s1 +running'
}
check "new on the cluster: a job runs the session on a node" t_new

t_profile() {
	mkdir -p "$XDG_CONFIG_HOME/vmux/profiles"
	printf 'inherit default\nmemory 384\n' >"$XDG_CONFIG_HOME/vmux/profiles/lab.profile"
	c new s2 --profile lab >/dev/null || return 1
	# the job asks for the profile's memory and vmux's overhead
	expect_eq "memory asked" "$(squeue -h --me -n vmux-s2 -o %m)" 640M
	expect_eq "the guest's" "$(c exec s2 -- sh -c "awk '/MemTotal/ { print (\$2 > 300000) }' /proc/meminfo")" 1
	c rm s2 || return 1
	expect_status 2 c new s3 --profile nosuch 2>/dev/null
	[[ ! -e $SHARED/s3 ]] || fail "a folder for s3"
}
check "a profile sizes the job" t_profile

t_inside() {
	local got
	got=$(c exec s1 -- sh -c 'echo hello-$((6*7)) > /workspace/w; cat /workspace/w; sync')
	expect_eq "exec" "$got" hello-42
	echo host-file >"$TMP/up.txt"
	(cd "$TMP" && c cp up.txt s1:/workspace/up.txt) || fail "cp in"
	expect_eq "cp in" "$(c exec s1 -- cat /workspace/up.txt)" host-file
	(cd "$TMP" && c cp s1:/workspace/w back.txt) || fail "cp out"
	expect_eq "cp out" "$(cat "$TMP/back.txt")" hello-42
	expect_status 125 c exec nosuch -- true
}
check "exec and cp run inside the job (srun --overlap)" t_inside

t_move() {
	local first second
	first=$(field s1 node)
	c stop s1 || return 1
	expect_eq "state after stop" "$(field s1 state)" stopped
	expect_eq "stopped by" "$(field s1 stopped_by)" SIGTERM
	# only vmux was signalled: the guest powered off, QEMU was not killed
	[[ $(cat "$SHARED/s1/job.log") != *"QEMU was ended"* ]] ||
		fail "not a clean poweroff: $(cat "$SHARED/s1/job.log")"
	[[ -z $(squeue -h --me -n vmux-s1) ]] || fail "the job is still there"
	scontrol update nodename="$first" state=drain reason=vmux-test || return 1
	c start s1 >/dev/null || { scontrol update nodename="$first" state=resume; fail "start"; return 1; }
	second=$(field s1 node)
	scontrol update nodename="$first" state=resume
	[[ -n $second && $second != "$first" ]] || fail "started on '$second', first was $first (drained)"
	expect_eq "the workspace on the other node" "$(c exec s1 -- cat /workspace/w)" hello-42
}
check "stop, drain its node, start: another node, the workspace whole" t_move

# pause runs inside the job (as exec does): the session is saved into the
# shared folder, the job ends with it; resume on another node goes on from
# memory
t_pause_move() {
	local first second
	c exec s1 -- sh -c 'echo in-memory >/tmp/m' || return 1
	first=$(field s1 node)
	c pause s1 || fail "pause on the cluster failed" || return 1
	wait_for 60 eval '[[ -z $(squeue -h --me -n vmux-s1) ]]' || fail "the job did not end" || return 1
	expect_eq "state after pause" "$(field s1 state)" paused ||
		fail "the job said: $(tail -n 8 "$SHARED/s1/job.log"); record: $(jq -c '{state, pids, state_sum}' "$SHARED/s1/sessions/s1/session.json" 2>&1); qemu: $(cat "$SHARED/s1/sessions/s1/qemu.exit" 2>&1)" || return 1
	scontrol update nodename="$first" state=drain reason=vmux-test || return 1
	c resume s1 >/dev/null || { scontrol update nodename="$first" state=resume; fail "resume"; return 1; }
	second=$(field s1 node)
	scontrol update nodename="$first" state=resume
	[[ -n $second && $second != "$first" ]] || fail "resumed on '$second', first was $first (drained)"
	expect_eq "memory on the other node" "$(c exec s1 -- cat /tmp/m)" in-memory
}
check "pause in the job, drain its node, resume: memory kept" t_pause_move

t_bad_partition() {
	local out
	vmux host add nopart "slurm://nosuch?dir=$SHARED" || return 1
	out=$(vmux -H nopart new s9 2>&1)
	expect_eq "exit" "$?" 125
	expect_match "said" "$out" "sbatch: .*(partition|Partition)"
	[[ -z $(squeue -h --me -n vmux-s9) ]] || fail "a job for s9"
	[[ ! -e $SHARED/s9 ]] || fail "a folder for s9: $(ls "$SHARED/s9")"
}
check "a bad partition: one clear error, no job" t_bad_partition

# A command whose first word is no session's (run's command, check's
# script) is refused on a cluster, not taken for a session's name
t_not_a_session() {
	local out
	out=$(c run -- true 2>&1)
	[[ $? -eq 2 ]] && expect_match "run" "$out" "not on a cluster" || fail "run: $out" || return 1
	printf '#!/bin/sh\nexit 0\n' >"$TMP/ok.sh"
	out=$(c check "$TMP/ok.sh" s1 2>&1)
	[[ $? -eq 2 ]] && expect_match "check" "$out" "not on a cluster" || fail "check: $out"
}
check "run and check on a cluster: refused plainly" t_not_a_session

t_poweroff() {
	c exec s1 -- poweroff >/dev/null 2>&1
	wait_for 60 eval '[[ -z $(squeue -h --me -n vmux-s1) ]]' || { fail "the job did not end: $(squeue)"; return 1; }
	# the VM ended by itself: crashed, as on one machine, not lost
	expect_eq "state" "$(field s1 state)" crashed
	expect_match "why" "$(field s1 reason)" '^QEMU exited 0'
}
check "a poweroff in the guest ends its job: crashed with why, not lost" t_poweroff

t_rm() {
	c rm s1 || return 1
	[[ -z $(squeue -h --me -n vmux-s1) ]] || fail "a job is left"
	[[ ! -e $SHARED/s1 ]] || fail "the folder is left"
	expect_eq "ls" "$(c ls --json | jq length)" 0
}
check "rm: no job, no folder" t_rm

# On a shared /scratch another user may make the folder first: vmux takes
# only a folder of the user's alone (no job's script in one others can
# write), and never writes through a symlink planted in its folders.
t_hostile_folder() {
	local open=$TMP/open out
	mkdir -p "$open" && chmod 0777 "$open"
	vmux host add h1 "slurm://vm?dir=$open" || return 1
	out=$(vmux -H h1 new x1 2>&1) && fail "new in a folder others can write" || true
	expect_match "a world-writable folder" "$out" 'not yours alone.*mode 0777' || return 1
	ln -s "$SHARED" "$TMP/link"
	vmux host add h2 "slurm://vm?dir=$TMP/link" || return 1
	out=$(vmux -H h2 new x2 2>&1) && fail "new through a symlinked folder" || true
	expect_match "a symlinked folder" "$out" 'not a folder' || return 1
	# a folder of one's own in a folder others may write (no sticky bit):
	# it could be renamed away and another put in its place
	mkdir -p -m 0777 "$TMP/grp" && chmod 0777 "$TMP/grp" && mkdir -m 0700 "$TMP/grp/vmux"
	vmux host add h3 "slurm://vm?dir=$TMP/grp/vmux" || return 1
	out=$(vmux -H h3 new x5 2>&1) && fail "new under a folder others can write" || true
	expect_match "a loose parent" "$out" 'writable by others and not sticky' || return 1
	# a session's folder made first by someone else (here: mode 0777)
	mkdir -m 0777 "$SHARED/x3"
	out=$(c new x3 2>&1) && fail "new in a session folder others can write" || true
	expect_match "a session's open folder" "$out" "x3's folder: .*not yours alone" || return 1
	rmdir "$SHARED/x3"
	squeue -h --me -o %j | grep -q 'vmux-x[1235]' && fail "a job was submitted: $(squeue)"
	# job.sh and job.log planted as symlinks: replaced, their targets kept
	mkdir -m 0700 "$SHARED/x4"
	echo victim >"$TMP/victim"
	ln -s "$TMP/victim" "$SHARED/x4/job.sh"
	ln -s "$TMP/victim" "$SHARED/x4/job.log"
	out=$(c new x4 --memory 256M 2>&1) || { fail "new x4: $out"; return 1; }
	expect_eq "the symlinks' target" "$(cat "$TMP/victim")" victim || return 1
	[[ ! -L $SHARED/x4/job.sh && ! -L $SHARED/x4/job.log ]] || fail "a symlink was kept"
	c rm x4
}
check "a cluster folder others can write, or a symlink in it: refused, nothing run" t_hostile_folder
