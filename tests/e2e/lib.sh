# lib.sh: helpers for vmux end-to-end tests (sourced by tests/e2e/*.sh).
#
# Every test file gets a private $VMUX_HOME, runs its checks with `check`,
# and on exit (normal, failure or signal) removes every session it created
# and kills any QEMU or bridge still naming that state directory, then
# prints "<file>: N passed, N failed".
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
# E2E_VMUX: the vmux under test (run-all's sanitize layer gives a
# sanitizer build beside it), else the build's.
VMUX=${E2E_VMUX:-$BUILD/bin/vmux}
export VMUX_HOME
VMUX_HOME=$(mktemp -d /tmp/vmux-e2e.XXXXXX)
TMP=$VMUX_HOME/tmp
# vmux reads profiles from here: never the invoking user's
export XDG_CONFIG_HOME=$VMUX_HOME/config
mkdir -p "$TMP"
E2E_NAME=$(basename "$0" .sh)
e2e_pass=0 e2e_fail=0 e2e_skip=0
BG_PIDS=$TMP/bg.pids

# bg_track PID: kill PID when the file ends (works from subshells too).
bg_track() { echo "$1" >>"$BG_PIDS"; }

# vmux ARGS...: run the CLI under test.
vmux() { "$VMUX" "$@"; }

# e2e_leftovers: pids of processes still mentioning our state directory.
e2e_leftovers() {
	pgrep -f -- "$VMUX_HOME" 2>/dev/null | grep -v "^$$\$" || true
}

# e2e_cleanup: remove sessions, kill stragglers, print the result line.
e2e_cleanup() {
	local rc=$? s pids
	trap - EXIT INT TERM
	# a test's own teardown first (a warm pool drained, say)
	declare -F e2e_before_cleanup >/dev/null && e2e_before_cleanup
	[[ -f $BG_PIDS ]] && xargs -r kill 2>/dev/null <"$BG_PIDS"
	if [[ -d $VMUX_HOME/sessions ]]; then
		for s in "$VMUX_HOME"/sessions/*/; do
			[[ -d $s ]] && "$VMUX" rm -f "$(basename "$s")" >/dev/null 2>&1
		done
	fi
	# a reaper may still be between writing its exit record and exiting:
	# what is gone within a few seconds was not left behind
	wait_for 5 eval '[[ -z $(e2e_leftovers) ]]'
	pids=$(e2e_leftovers)
	if [[ -n $pids ]]; then
		echo "FAIL cleanup: processes left behind: $pids"
		ps -o pid,args -p $pids 2>/dev/null | sed 's/^/    /'
		kill -9 $pids 2>/dev/null
		e2e_fail=$((e2e_fail + 1))
	fi
	[[ -n ${E2E_KEEP:-} ]] || rm -rf "$VMUX_HOME"
	echo "$E2E_NAME: $e2e_pass passed, $e2e_fail failed, $e2e_skip skipped"
	[[ $e2e_fail -eq 0 && $rc -eq 0 ]] || exit 1
	exit 0
}
trap e2e_cleanup EXIT
trap 'exit 130' INT TERM

# check NAME CMD...: run one check. CMD fails it by returning non-zero or
# by calling `fail` anywhere, even where the status of `fail` is ignored
# (the check runs in a subshell, so only a file can carry that out).
CHECK_FAILED=$TMP/check.failed
check() {
	local name=$1; shift
	local out=$TMP/check.out
	rm -f "$CHECK_FAILED"
	if ("$@") >"$out" 2>&1 && [[ ! -e $CHECK_FAILED ]]; then
		e2e_pass=$((e2e_pass + 1))
		echo "ok   $name"
		# measured figures a check prints are kept in the log
		grep '^figure: ' "$out" | sed 's/^/     /'
	else
		e2e_fail=$((e2e_fail + 1))
		echo "FAIL $name"
		sed 's/^/    /' "$out" | tail -n 30
	fi
}

# skip NAME WHY: a check that cannot run here, said and counted as skipped
# (never as passed).
skip() {
	e2e_skip=$((e2e_skip + 1))
	echo "skip $1: $2"
}

# fail MSG: print MSG and fail the current check, whatever follows.
fail() {
	echo "$*"
	echo "$*" >>"$CHECK_FAILED"
	return 1
}

# expect_eq WHAT GOT WANT
expect_eq() {
	[[ $2 == "$3" ]] || fail "$1: got '$2', want '$3'"
}

# expect_match WHAT GOT REGEX
expect_match() {
	[[ $2 =~ $3 ]] || fail "$1: '$2' does not match /$3/"
}

# expect_status WANT CMD...: run CMD and compare its exit status.
expect_status() {
	local want=$1 got
	shift
	"$@"
	got=$?
	[[ $got -eq $want ]] || fail "exit status of '$*': got $got, want $want"
}

# wait_for DEADLINE_S CMD...: poll CMD until it succeeds or the deadline passes.
wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS >= deadline)) && return 1
		sleep 0.2
	done
}

# peak_rss_kib PID: wait for PID to end, sampling its peak RSS (VmHWM);
# print it in KiB (0 if never seen). Reap PID with `wait` after.
peak_rss_kib() {
	local hwm=0 h
	while kill -0 "$1" 2>/dev/null; do
		h=$(awk '/^VmHWM/ { print $2 }' /proc/"$1"/status 2>/dev/null)
		[[ -n $h ]] && hwm=$h
		sleep 0.1
	done
	echo "$hwm"
}

# wait_guest_cmd NAME CMDLINE [SECONDS]: until a process in session NAME
# runs exactly CMDLINE as the guest's ps shows it (say, before signalling
# a job typed into a shell: its echo on screen comes before the fork).
wait_guest_cmd() {
	local re=" [${2:0:1}]${2:1}\$"
	wait_for "${3:-20}" "$VMUX" exec "$1" -- sh -c "ps | grep -q '$re'"
}

# session_field NAME FIELD: a field of `vmux ls --json` for one session.
session_field() {
	vmux ls --json | jq -r --arg n "$1" ".[] | select(.name == \$n) | .$2"
}

# need_session NAME [ARGS...]: boot a session or abort the whole file.
need_session() {
	if ! vmux new "$@" >"$TMP/new.out" 2>&1; then
		echo "FAIL boot $1"
		sed 's/^/    /' "$TMP/new.out" | tail -n 30
		e2e_fail=$((e2e_fail + 1))
		exit 1
	fi
}
