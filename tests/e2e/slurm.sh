# slurm.sh: a real Slurm cluster for a test (sourced after lib.sh): munge
# with a throwaway key, slurmctld and two slurmd (nodes n1 and n2, both on
# this machine through Slurm's -N, each with its own port and spool), with
# the test's own slurm.conf, all in $TMP. slurm_start exports SLURM_CONF
# or fails the file; slurm_stop cancels every job and waits for them.
# Partition vm is open to all; class only to account teach. Lines in
# $SLURM_CONF_EXTRA are added to the config; SLURMD_PID_n1/_n2 are the
# daemons' pids (a test may kill one).

# slurm_start: start munge and the daemons; wait for both nodes idle.
slurm_start() {
	local d=$TMP/slurm h port
	h=$(hostname)
	mkdir -p "$d/munge" "$d/state" "$d/spool/n1" "$d/spool/n2" "$d/log"
	chmod 700 "$d/munge"
	head -c 1024 /dev/urandom >"$d/munge/key"
	chmod 400 "$d/munge/key"
	/usr/sbin/munged -f -F --key-file="$d/munge/key" --socket="$d/munge/sock" \
		--pid-file="$d/munge/pid" --log-file="$d/munge/log" \
		--seed-file="$d/munge/seed" >>"$d/log/daemons.out" 2>&1 &
	SLURM_PIDS=$!
	bg_track $!
	wait_for 10 test -S "$d/munge/sock" || { echo "FAIL munged: $(cat "$d/munge/log" 2>/dev/null)"; exit 1; }
	# four consecutive ports none of which is taken (ctld, slurmd, n1, n2)
	for _ in $(seq 20); do
		port=$((20000 + RANDOM % 30000))
		[[ -z $(ss -Htln "sport >= :$port and sport <= :$((port + 3))") ]] && break
	done
	cat >"$d/slurm.conf" <<EOC
ClusterName=vmuxtest
SlurmctldHost=$h(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$d/munge/sock
CredType=cred/munge
SlurmUser=$(id -un)
SlurmdUser=root
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/ctld.pid
SlurmdPidFile=$d/slurmd-%n.pid
SlurmctldLogFile=$d/log/ctld.log
SlurmdLogFile=$d/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
KillWait=30
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=n1 NodeHostname=$h NodeAddr=127.0.0.1 Port=$((port + 2)) CPUs=2 RealMemory=4000 State=UNKNOWN
NodeName=n2 NodeHostname=$h NodeAddr=127.0.0.1 Port=$((port + 3)) CPUs=2 RealMemory=4000 State=UNKNOWN
PartitionName=vm Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
PartitionName=class Nodes=n1,n2 AllowAccounts=teach MaxTime=INFINITE State=UP
${SLURM_CONF_EXTRA:-}
EOC
	export SLURM_CONF=$d/slurm.conf
	/usr/sbin/slurmctld -D -i -f "$SLURM_CONF" >>"$d/log/daemons.out" 2>&1 &
	SLURM_PIDS+=" $!"
	bg_track $!
	for n in n1 n2; do
		# started from a subshell: not this shell's job, so a test that
		# kills one gets no "Killed" notice from bash
		(/usr/sbin/slurmd -D -f "$SLURM_CONF" -N $n >>"$d/log/daemons.out" 2>&1 &
			echo $! >"$d/slurmd-$n.bgpid")
		printf -v "SLURMD_PID_$n" %s "$(cat "$d/slurmd-$n.bgpid")"
		SLURM_PIDS+=" $(cat "$d/slurmd-$n.bgpid")"
		bg_track "$(cat "$d/slurmd-$n.bgpid")"
	done
	wait_for 60 bash -c '[[ $(sinfo -h -o "%t" -p vm | sort -u) == idle ]]' || {
		echo "FAIL the cluster never came up: $(sinfo 2>&1; tail -5 "$d"/log/*.log)"
		exit 1
	}
}

# slurm_stop [SHARED]: cancel our jobs, wait for them to end (their VMs
# stop), remove what is left of the sessions in SHARED (a lost node's go
# on running here), then stop the daemons, and a lost node's job steps.
slurm_stop() {
	local d p
	[[ -n ${SLURM_CONF:-} ]] || return 0
	scancel --me 2>/dev/null
	wait_for 90 bash -c '[[ -z $(squeue -h --me 2>/dev/null) ]]'
	for d in ${1:+"$1"/*/}; do
		[[ -f $d/sessions/$(basename "$d")/session.json ]] &&
			VMUX_HOME=$d "$VMUX" -H local rm -f "$(basename "$d")" >/dev/null 2>&1
	done
	kill $SLURM_PIDS 2>/dev/null
	wait_for 30 slurm_gone
	for p in $(pgrep -x slurmstepd); do
		grep -qaz "^SLURM_CONF=$SLURM_CONF\$" /proc/"$p"/environ 2>/dev/null && kill -9 "$p"
	done
}

# slurm_gone: have the daemons all exited?
slurm_gone() {
	local p
	for p in $SLURM_PIDS; do
		kill -0 "$p" 2>/dev/null && return 1
	done
	return 0
}
