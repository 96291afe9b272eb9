#!/usr/bin/env bash
# 90-policy: profiles and limits (seed 002): built-in and user profiles,
# locked fields refused by name, validation, the exec timeout clamp, and
# limits enforced in the guest: a fork bomb contained, a memory hog killed,
# the agent alive; a read-only root.
source "$(dirname "$0")/lib.sh"
need_session pol

t_default_profile_recorded() {
	local j
	j=$(vmux ls --json | jq '.[] | select(.name=="pol")')
	expect_eq profile "$(jq -r .profile <<<"$j")" default || return 1
	expect_eq network "$(jq -r .network <<<"$j")" off || return 1
	expect_eq pids "$(jq -r .pids_limit <<<"$j")" 1024 || return 1
	expect_eq max_timeout "$(jq -r .max_timeout_s <<<"$j")" 120
}

t_timeout_clamped_and_said() {
	local err j
	err=$(vmux exec pol --timeout 999 -- true 2>&1) || return 1
	expect_match notice "$err" "--timeout 999 clamped to 120 s, the most profile 'default' allows" || return 1
	j=$(vmux exec pol --json --timeout 999 -- true) || return 1
	expect_eq json "$(jq -r .timeout_clamped_to <<<"$j")" 120 || return 1
	# under the cap: untouched and silent
	err=$(vmux exec pol --timeout 30 -- true 2>&1) || return 1
	expect_eq quiet "$err" ""
}

t_validation() {
	local out
	out=$(vmux new v1 --cpus 0 2>&1)
	[[ $? -eq 2 ]] && expect_match cpus0 "$out" "invalid --cpus" || return 1
	out=$(vmux new v1 --cpus 100000 2>&1)
	[[ $? -eq 2 ]] && expect_match cpus "$out" "this host has [0-9]+ CPUs|invalid --cpus" || return 1
	out=$(vmux new v1 --memory 10 2>&1)
	[[ $? -eq 2 ]] && expect_match mem "$out" "invalid --memory" || return 1
	out=$(vmux new v1 --pids 0 2>&1)
	[[ $? -eq 2 ]] && expect_match pids "$out" "invalid --pids" || return 1
	out=$(vmux new v1 --profile nope 2>&1)
	[[ $? -eq 2 ]] && expect_match profile "$out" "unknown profile 'nope'" || return 1
	[[ ! -e $VMUX_HOME/sessions/v1 ]]
}

t_user_profile_and_locks() {
	local out
	mkdir -p "$XDG_CONFIG_HOME/vmux/profiles"
	printf '# a teaching room\ninherit default\npids 64\nmax-timeout 30\nlock pids cpus\n' \
		>"$XDG_CONFIG_HOME/vmux/profiles/teach.profile"
	out=$(vmux new t1 --profile teach --cpus 2 2>&1)
	[[ $? -eq 2 ]] && expect_match locked "$out" "--cpus: 'cpus' is locked by profile 'teach'" || return 1
	out=$(vmux new t1 --profile teach --pids 65 2>&1)
	[[ $? -eq 2 ]] && expect_match locked "$out" "'pids' is locked by profile 'teach'" || return 1
	# a workspace image of one's own is held to a locked disk size too
	printf 'inherit default\ndisk 1024\nlock disk\n' >"$XDG_CONFIG_HOME/vmux/profiles/small.profile"
	truncate -s 2G "$TMP/big.img"
	out=$(vmux new t3 --profile small --workspace "$TMP/big.img" 2>&1)
	[[ $? -eq 2 ]] && expect_match "disk lock" "$out" "--workspace $TMP/big.img: 'disk' is locked by profile 'small' to 1024 MiB; this image is 2048 MiB" || return 1
	[[ ! -e $VMUX_HOME/sessions/t3 ]] || fail "t3 left behind" || return 1
	rm -f "$TMP/big.img"
	# the locked value itself is fine
	need_session t1 --profile teach --pids 64
	expect_eq pids "$(vmux exec t1 -- cat /sys/fs/cgroup/vmux-user/pids.max)" 64 || return 1
	expect_eq max_timeout "$(session_field t1 max_timeout_s)" 30 || return 1
	printf 'inherit default\nfrobs 3\n' >"$XDG_CONFIG_HOME/vmux/profiles/broken.profile"
	out=$(vmux new t2 --profile broken 2>&1)
	[[ $? -eq 2 ]] && expect_match "bad file" "$out" "broken.profile:2: unknown field 'frobs'"
}

t_options_table() {
	local out
	# sizes take units everywhere: --memory as --disk, a profile's too
	printf 'inherit default\nmemory 1G\n' >"$XDG_CONFIG_HOME/vmux/profiles/big.profile"
	out=$(vmux new o1 --memory 2T --hostname ok 2>&1)
	[[ $? -eq 2 ]] && expect_match "too much" "$out" "this host has [0-9]+ MiB" || return 1
	out=$(vmux new o1 --hostname 'no_underscores' 2>&1)
	[[ $? -eq 2 ]] && expect_match hostname "$out" "invalid --hostname 'no_underscores': want a host name" || return 1
	need_session o1 --profile big --memory 256M --hostname lab-pc.room4
	expect_eq memory "$(session_field o1 memory_mb)" 256 || return 1
	expect_eq hostname "$(session_field o1 hostname)" lab-pc.room4 || return 1
	expect_eq "the guest's" "$(vmux exec o1 -- hostname)" lab-pc.room4 || return 1
	# kept for every boot
	vmux restart o1 >/dev/null || return 1
	expect_eq "after a restart" "$(vmux exec o1 -- hostname)" lab-pc.room4 || return 1
	# one name a fact in the record too
	expect_eq record "$(jq -c '[.state, .network, .pids_limit, .hostname]' "$(session_field o1 dir)/session.json")" \
		'["running","off",1024,"lab-pc.room4"]' || return 1
	vmux rm -f o1 >/dev/null
}

t_fork_bomb_contained() {
	local ev
	# The bomb's shells fork until pids.max stops them; the agent, outside
	# the user's cgroup, keeps answering.
	vmux exec t1 --timeout 20 -- sh -c 'b() { b | b & }; b' >/dev/null 2>&1
	wait_for 20 bash -c "'$VMUX' exec t1 -- cat /sys/fs/cgroup/vmux-user/pids.events | grep -q '^max [1-9]'" ||
		fail "pids.max never hit" || return 1
	vmux ping t1 >/dev/null || fail "agent down during the bomb" || return 1
	ev=$(vmux exec t1 -- cat /sys/fs/cgroup/vmux-user/pids.current) || return 1
	((ev <= 64)) || fail "pids.current $ev > 64"
}

t_memory_hog_killed_agent_alive() {
	local rc
	vmux exec pol --timeout 100 -- tail /dev/zero
	rc=$?
	expect_eq "hog killed (SIGKILL)" "$rc" 137 || return 1
	expect_match oom "$(vmux exec pol -- cat /sys/fs/cgroup/vmux-user/memory.events)" 'oom_kill [1-9]' || return 1
	vmux ping pol >/dev/null || fail "agent down after the hog"
}

t_read_only_root() {
	local out
	need_session ro --profile offline_readonly
	expect_eq ro "$(session_field ro read_only_root)" true || return 1
	out=$(vmux exec ro -- sh -c 'echo x > /etc/f' 2>&1)
	[[ $? -ne 0 ]] && expect_match "/ read-only" "$out" "Read-only file system" || return 1
	vmux exec ro -- sh -c 'echo y > /tmp/y && echo z > /workspace/z' || return 1
	# offline_readonly locks the root read-only: nothing to turn off, and
	# its own value is accepted
	vmux rm ro || return 1
	need_session ro --profile offline_readonly --read-only-root
}

check "default profile recorded: network off, pids, max timeout" t_default_profile_recorded
check "exec timeout clamped to the profile's max and said" t_timeout_clamped_and_said
check "validation: cpus, memory, pids, profile: one clear error each" t_validation
check "user profile: applied, locked fields refused by name, bad file" t_user_profile_and_locks
check "one row a setting: --memory with a unit, --hostname, a profile's size in G" t_options_table
# --nofile: one row of the session options' table and its guest side. It
# reaches exec and shells (RLIMIT_NOFILE, soft and hard), a profile sets
# it, the record and ls --json show it, run --name treats a change as a
# conflict, MCP takes it with the table's bounds, bad values are refused.
t_nofile() {
	local out sid
	out=$(vmux new n0 --nofile 8 2>&1)
	[[ $? -eq 2 ]] && expect_match bounds "$out" "nofile" || fail "--nofile 8: $out" || return 1
	[[ ! -e $VMUX_HOME/sessions/n0 ]] || fail "n0 left behind" || return 1
	need_session n1 --nofile 77
	expect_eq "exec's" "$(vmux exec n1 -- sh -c 'ulimit -n; ulimit -Hn')" "$(printf '77\n77')" || return 1
	expect_eq "a shell's" "$(vmux shell n1 --id nf -- sh -c 'ulimit -n' | tr -d '\r')" 77 || return 1
	expect_eq "ls --json" "$(vmux ls --json | jq -r '.[] | select(.name == "n1") | .nofile')" 77 || return 1
	expect_eq "the record" "$(jq -r .nofile "$(session_field n1 dir)/session.json")" 77 || return 1
	out=$(vmux run --name n1 --nofile 99 -- true 2>&1)
	[[ $? -eq 125 ]] && expect_match conflict "$out" "exists with nofile 77" || fail "run --name: $out" || return 1
	# a session without it keeps the agent's (4096)
	expect_eq "default" "$(vmux exec t1 -- sh -c 'ulimit -n')" 4096 || return 1
	mkdir -p "$XDG_CONFIG_HOME/vmux/profiles"
	printf 'inherit default\nnofile 300\nlock nofile\n' >"$XDG_CONFIG_HOME/vmux/profiles/files.profile"
	out=$(vmux new n2 --profile files --nofile 301 2>&1)
	[[ $? -eq 2 ]] && expect_match locked "$out" "'nofile' is locked by profile 'files'" || return 1
	# MCP: the schema from the table, the argument mapped to the flag
	out=$(printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
		'{"jsonrpc":"2.0","id":2,"method":"tools/list"}' | timeout 30 "$VMUX" mcp 2>/dev/null |
		jq -c 'select(.id == 2) | .result.tools[] | select(.name == "session_create") | .inputSchema.properties | [.nofile.minimum, .nofile.maximum, .cpus.maximum]')
	expect_eq "MCP's schema" "$out" "[16,1048576,256]"
}
check "--nofile: exec and shells, profile, record, ls, run's conflict, MCP's schema" t_nofile

check "fork bomb contained by pids.max; agent answers" t_fork_bomb_contained
check "memory hog killed by the cgroup; agent alive" t_memory_hog_killed_agent_alive
check "offline_readonly: read-only root, /tmp and /workspace writable" t_read_only_root
