#!/usr/bin/env bash
# 10-exec: `vmux exec` against a real guest: output, exit codes, timeout,
# env, cwd, and the agent's error paths through the real bridge.
source "$(dirname "$0")/lib.sh"
need_session ex

t_stdout() {
	expect_eq stdout "$(vmux exec ex -- echo hello vmux)" "hello vmux"
}
# Prompts tell VMs apart: the guest's host name is the session's name.
t_hostname_is_the_session_name() {
	expect_eq hostname "$(vmux exec ex -- hostname)" ex || return 1
	expect_eq /etc/hostname "$(vmux exec ex -- cat /etc/hostname)" ex
}
# each file system once: no second proc, devpts or tmpfs stacked on the first
t_each_mount_once() {
	local out
	out=$(vmux exec ex -- sh -c 'cut -d" " -f2 /proc/mounts | sort | uniq -d') || return 1
	expect_eq "mounted twice" "$out" "" || return 1
	out=$(vmux exec ex -- sh -c 'cut -d" " -f2,3 /proc/mounts | grep -E "^/(proc|tmp|run|dev/pts|dev/shm|sys/fs/cgroup) " | sort | tr "\n" ,')
	expect_eq "the pseudo file systems" "$out" "/dev/pts devpts,/dev/shm tmpfs,/proc proc,/run tmpfs,/sys/fs/cgroup cgroup2,/tmp tmpfs,"
}
# The default kernel (vmux's own) has every driver built in: no module
# support, none loaded, and vmux-init says so. (Debian's: 16-debian-kernel.)
t_no_modules() {
	vmux exec ex -- test ! -e /proc/modules || fail "/proc/modules exists"
	vmux logs ex | grep -aq 'vmux-init: no modules to load' ||
	    fail "no 'no modules to load' on the console: $(vmux logs ex | grep -a modules)"
	expect_match "kernel" "$(vmux exec ex -- uname -r)" '^6\.1\.[0-9]+$'
}
t_stderr_separate() {
	local out err
	out=$(vmux exec ex -- sh -c 'echo to-out; echo to-err >&2' 2>"$TMP/err")
	err=$(cat "$TMP/err")
	expect_eq stdout "$out" "to-out" && expect_eq stderr "$err" "to-err"
}
t_exit_code() {
	expect_status 42 vmux exec ex -- sh -c 'exit 42'
}
t_argv_kept() {
	# Arguments travel as argv, not re-split by a shell.
	expect_eq argv "$(vmux exec ex -- printf '%s|' 'a b' 'c;d' '$HOME')" 'a b|c;d|$HOME|'
}
t_kernel() {
	expect_match uname "$(vmux exec ex -- uname -sm)" '^Linux x86_64$'
}
t_timeout() {
	local start=$SECONDS
	expect_status 124 vmux exec ex --timeout 2 -- sleep 30 || return 1
	((SECONDS - start < 20)) || fail "timeout took $((SECONDS - start)) s"
}
t_timeout_kills_group() {
	# The background grandchild must die with its process group.
	vmux exec ex --timeout 2 -- sh -c 'sleep 300 & sleep 300' >/dev/null 2>&1
	local n
	n=$(vmux exec ex -- sh -c 'ps | grep -c "[s]leep 300"')
	expect_eq "sleeps left" "$n" 0
}
t_env() {
	expect_eq env "$(vmux exec ex --env FOO=bar --env 'X=a b' -- sh -c 'echo "$FOO/$X"')" "bar/a b"
}
t_cwd() {
	vmux exec ex -- mkdir -p /tmp/wd &&
		expect_eq cwd "$(vmux exec ex --cwd /tmp/wd -- pwd)" /tmp/wd
}
t_bad_cwd_is_error() {
	local err rc
	err=$(vmux exec ex --cwd /no/such/dir -- pwd 2>&1)
	rc=$?
	# "cannot run" (126), as Docker says for a missing workdir; never
	# 127, which says the command does not exist
	expect_eq status "$rc" 126 || return 1
	expect_match error "$err" 'no/such/dir'
}
t_empty_command_is_a_usage_error() {
	local err
	err=$(vmux exec ex -- '' 2>&1)
	expect_eq status $? 2 || return 1
	expect_match error "$err" 'empty command name'
}
t_missing_command_is_error() {
	local err
	err=$(vmux exec ex -- /no/such/binary 2>&1)
	[[ $? -ne 0 ]] && expect_match error "$err" 'no/such/binary'
}
t_large_output() {
	# 4 MiB of output arrives whole.
	local n
	n=$(vmux exec ex -- sh -c 'head -c 4194304 /dev/zero | tr "\0" x' | wc -c)
	expect_eq bytes "$n" 4194304
}
t_agent_rejects_bad_json() {
	# Raw requests through the bridge: the agent answers with an error object.
	local uds out
	uds=$(session_field ex vsock_uds)
	out=$(printf 'CONNECT 5005\n[]\n' | socat -t 20 - UNIX-CONNECT:"$uds" | tail -n 1)
	expect_match "non-object" "$out" '"error"' || return 1
	out=$(printf 'CONNECT 5005\n{not json\n' | socat -t 20 - UNIX-CONNECT:"$uds" | tail -n 1)
	expect_match "invalid" "$out" '"error"' || return 1
	out=$(printf 'CONNECT 5005\n{"action":"frobnicate"}\n' | socat -t 20 - UNIX-CONNECT:"$uds" | tail -n 1)
	expect_match "unknown action" "$out" '"error".*frobnicate'
}
t_agent_survives_bad_input() {
	expect_eq "after bad input" "$(vmux exec ex -- echo still-here)" still-here
}
t_ping() {
	expect_match ping "$(vmux ping ex)" 'Linux|6\.1'
}
# --listen-fd on the host: a listening socket handed over is served; what
# is not one, or a second place to listen, is a clear error.
t_agent_listen_fd_checked() {
	local agent=$BUILD/bin/vmux-agent sock=$TMP/agent.sock out rc
	python3 - "$agent" "$sock" >"$TMP/agent.pid" <<'PY' || return 1
import os, socket, subprocess, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[2]); s.listen()
fd = s.fileno(); os.set_inheritable(fd, True)
p = subprocess.Popen([sys.argv[1], "--listen-fd", str(fd), "--poweroff-pid", "0"],
                     pass_fds=[fd], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(p.pid)
PY
	bg_track "$(cat "$TMP/agent.pid")"
	out=$(printf '{"action":"ping"}\n' | socat -t 20 - UNIX-CONNECT:"$sock")
	# a Unix socket is a test on the host: no OOM exemption taken
	local adj
	adj=$(cat "/proc/$(cat "$TMP/agent.pid")/oom_score_adj")
	kill "$(cat "$TMP/agent.pid")"
	expect_match "ping over the handed socket" "$out" '"ok":true' || return 1
	expect_eq "oom_score_adj on the host (as its parent's)" "$adj" "$(cat /proc/$$/oom_score_adj)" || return 1
	out=$("$agent" --listen-fd 5 5</dev/null 2>&1); rc=$?
	expect_eq "not a socket: status" "$rc" 1 || return 1
	expect_match "not a socket: said" "$out" 'listen on --listen-fd 5: Socket operation on non-socket' || return 1
	out=$("$agent" --listen-fd 3 --unix "$TMP/x.sock" 2>&1); rc=$?
	expect_eq "two places: status" "$rc" 2 || return 1
	expect_match "two places: said" "$out" 'give one'
}
# vmux-init opens the agent's port and keeps it (socket activation): the
# agent serves that socket, a command the agent starts does not hold it, and
# when the agent is killed the one vmux-init starts next takes it over.
t_agent_socket_from_init() {
	local log=$VMUX_HOME/sessions/ex/console.log line='vmux-agent: listening on vsock port 5005 (from fd ' fds n
	n=$(grep -ac "$line" "$log")
	[[ $n -ge 1 ]] || fail "the agent did not take vmux-init's socket: $(grep -a 'vmux-agent' "$log")" || return 1
	fds=$(vmux exec ex -- sh -c 'ls -l /proc/$$/fd') || return 1
	! grep -q 'socket:' <<<"$fds" || fail "a command holds a socket: $fds" || return 1
	# the exec's parent is the agent; its connection ends with it
	vmux exec ex -- sh -c 'kill -9 $PPID' >/dev/null 2>&1
	expect_eq "exec after the agent was killed" "$(vmux exec ex -- echo back)" back || return 1
	# the console line may still be on its way
	wait_for 10 eval '[[ $(grep -ac "$line" "$log") -gt $n ]]' ||
		fail "no new agent took the socket: $(grep -a 'vmux-agent' "$log")"
}

check "exec prints stdout" t_stdout
check "exec -- '': a usage error found on the host (2)" t_empty_command_is_a_usage_error
check "the guest's host name is the session's name" t_hostname_is_the_session_name
check "each file system is mounted once" t_each_mount_once
check "exec keeps stderr apart" t_stderr_separate
if [[ $(cat "$BUILD/guest/kernel.choice") == lean ]]; then
	check "vmux's own kernel loads no modules" t_no_modules
else
	skip "vmux's own kernel loads no modules" "built with GUEST_KERNEL=debian"
fi
check "exec exits with the command's status" t_exit_code
check "exec passes argv unchanged" t_argv_kept
check "guest runs Linux x86_64" t_kernel
check "exec --timeout exits 124" t_timeout
check "timeout kills the whole process group" t_timeout_kills_group
check "exec --env" t_env
check "exec --cwd" t_cwd
check "missing cwd is a clear error" t_bad_cwd_is_error
check "missing command is a clear error" t_missing_command_is_error
check "4 MiB of output" t_large_output
check "agent answers bad requests with errors" t_agent_rejects_bad_json
check "agent keeps serving after bad input" t_agent_survives_bad_input
check "ping answers" t_ping
check "agent --listen-fd: a handed socket is served, a bad one refused" t_agent_listen_fd_checked
check "the agent serves vmux-init's socket; a killed agent's successor takes it" t_agent_socket_from_init
