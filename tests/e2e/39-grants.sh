#!/usr/bin/env bash
# 39-grants: students reach their own VM over SSH, and only it. A real sshd
# (Debian's openssh-server) on a loopback port, with a throwaway host key
# and the test's own authorized_keys, all in the test's folder. A granted
# key lands in its session's shell whatever command the client asks for,
# gets no port forwarding; a read-only grant watches the student's shell
# and types nothing into it; grants lists both; a revoked key gets nothing;
# a key file that is not a plain public key is refused, the file untouched.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../tui/tmux.sh"
tui_trap

AK=$TMP/authorized_keys
source "$(dirname "$0")/sshd.sh"
for k in student teacher; do
	ssh-keygen -q -t ed25519 -N '' -C "$k" -f "$TMP/$k" || { echo "FAIL key $k"; exit 1; }
done
sshd_start "$AK"

# ssh_as KEY [ARGS...]: ssh to this host's sshd with KEY, nothing of the
# invoking user's ssh configuration.
ssh_as() {
	local key=$1
	shift
	ssh -F /dev/null -i "$TMP/$key" -p "$PORT" -o BatchMode=yes \
		-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
		-o LogLevel=ERROR "$(id -un)@127.0.0.1" "$@"
}

need_session gr1 --memory 128

t_granted_key_reaches_its_shell() {
	local out
	out=$(vmux grant gr1 --key "$TMP/student.pub" --as alice --authorized-keys "$AK")
	expect_eq "grant said" "$out" "granted gr1 shell main to alice" || return 1
	out=$(printf 'hostname\nexit\n' | ssh_as student)
	expect_match "in gr1's shell" "$out" '(^|'$'\n'')gr1('$'\r''?'$'\n''|$)' || return 1
}

t_asking_for_more_gets_only_its_shell() {
	local out
	# a command of the client's own, or a vmux command: still gr1's shell
	out=$(printf 'hostname\nexit\n' | ssh_as student "$VMUX ls; cat /etc/hostname; bash -i")
	expect_match "still gr1" "$out" '(^|'$'\n'')gr1('$'\r''?'$'\n''|$)' || return 1
	[[ $out == *"STATE"* ]] && fail "vmux ls ran on the host: $out"
	# forwarding through sshd to the host's own ports: refused
	out=$(ssh_as student -W "127.0.0.1:$PORT" </dev/null 2>&1)
	[[ $? -ne 0 ]] || fail "a forward was allowed: $out" || return 1
	expect_match "refused" "$out" 'forwarding failed|administratively prohibited' || return 1
}

t_read_only_watcher() {
	local out
	vmux grant gr1 --key "$TMP/teacher.pub" --read-only --as teacher --authorized-keys "$AK" >/dev/null || return 1
	tm new-session -d -s st -x 100 -y 30 "$(declare -f ssh_as); TMP=$TMP PORT=$PORT; ssh_as student -tt; sleep 60"
	wait_on st '~ #$' 30 || return 1
	tm new-session -d -s tw -x 120 -y 40 "$(declare -f ssh_as); TMP=$TMP PORT=$PORT; ssh_as teacher -tt; sleep 60"
	wait_on tw '~ #$' 30 || return 1 # the replay (the banner is cleared)
	type_line 'touch /workspace/from-watcher' tw
	type_line 'echo student-$((2+3))' st
	wait_on st '^student-5' 30 || return 1
	wait_on tw '^student-5' 30 || return 1
	out=$(vmux exec gr1 -- ls /workspace)
	[[ $out == *from-watcher* ]] && fail "the watcher's keys reached the shell"
	# the shell keeps the student's 100x30, never the watcher's 120x40
	expect_eq "size" "$(vmux shells gr1 --json | jq -r '.[] | select(.shell_id == "main") | "\(.cols)x\(.rows)"')" 100x30 || return 1
	# each is attached under their grant's label; the student sees the
	# teacher watching in their terminal's title
	expect_eq "who is attached" "$(vmux shells gr1 --json | jq -c '[.[] | select(.shell_id == "main") | .roster[] | [.as, .watching]] | sort')" '[["alice",false],["teacher",true]]' || return 1
	local deadline=$((SECONDS + 20))
	until [[ $(tm display-message -p -t st '#{pane_title}') == *'gr1:main · with teacher (watching)'* ]]; do
		((SECONDS < deadline)) || fail "student's title: $(tm display-message -p -t st '#{pane_title}')" || return 1
		sleep 0.1
	done
}

t_grants_listed() {
	local out
	out=$(vmux grants --authorized-keys "$AK")
	expect_match "student" "$out" 'gr1 +main +read-write +alice +\.\.\.' || return 1
	expect_match "teacher" "$out" 'gr1 +main +read-only +teacher +\.\.\.' || return 1
	expect_eq "json" "$(vmux grants gr1 --authorized-keys "$AK" --json | jq -c '[.[] | [.label, .read_only]]')" '[["alice",false],["teacher",true]]' || return 1
}

t_revoked_key_gets_nothing() {
	local out
	vmux revoke gr1 --key "$TMP/student.pub" --authorized-keys "$AK" >/dev/null || return 1
	out=$(printf 'hostname\nexit\n' | ssh_as student 2>&1)
	expect_eq "ssh status" $? 255 || return 1
	expect_match "refused" "$out" 'Permission denied' || return 1
	out=$(vmux revoke gr1 --key "$TMP/student.pub" --authorized-keys "$AK" 2>&1)
	expect_eq "again" $? 125 || return 1
}

t_bad_keys_refused() {
	local before out
	before=$(cat "$AK")
	out=$(vmux grant gr1 --key "$TMP/student" --authorized-keys "$AK" 2>&1)
	expect_eq "private key" $? 2 || return 1
	expect_match "said" "$out" 'not an OpenSSH public key' || return 1
	printf 'command="/bin/sh" %s\n' "$(cat "$TMP/student.pub")" >"$TMP/opts.pub"
	expect_status 2 vmux grant gr1 --key "$TMP/opts.pub" --authorized-keys "$AK" 2>/dev/null || return 1
	expect_status 2 vmux grant gr1 --key "$TMP/student.pub" --as 'a b' --authorized-keys "$AK" 2>/dev/null || return 1
	expect_status 125 vmux grant nosuch --key "$TMP/student.pub" --authorized-keys "$AK" 2>/dev/null || return 1
	expect_eq "file untouched" "$(cat "$AK")" "$before" || return 1
	# a key that already has a line of the user's own: it would win
	cat "$TMP/teacher.pub" >>"$AK.other" && cp "$AK.other" "$TMP/ak2"
	out=$(vmux grant gr1 --key "$TMP/teacher.pub" --authorized-keys "$TMP/ak2" 2>&1)
	expect_eq "own line status" $? 125 || return 1
	expect_match "own line" "$out" 'already has a line .* that is not a vmux grant' || return 1
}

t_grant_pins_its_session() {
	local out
	# next term's gr1 is another session: last term's key does not reach it
	vmux grant gr1 --key "$TMP/student.pub" --authorized-keys "$AK" >/dev/null || return 1
	vmux rm -f gr1 >/dev/null || return 1
	vmux new gr1 --memory 128 >/dev/null || return 1
	out=$(printf 'hostname\nexit\n' | ssh_as student 2>&1)
	[[ $out == *"was made again since"* ]] || fail "the old grant reached the new gr1: $out"
}

check "a granted key lands in its session's shell" t_granted_key_reaches_its_shell
check "whatever the client asks, only that shell; no forwarding" t_asking_for_more_gets_only_its_shell
check "a read-only grant watches the student's shell and types nothing" t_read_only_watcher
check "grants lists each grant" t_grants_listed
check "a revoked key gets nothing" t_revoked_key_gets_nothing
check "key files that are not a plain public key are refused" t_bad_keys_refused
check "a grant reaches only the session it was made for, not a namesake" t_grant_pins_its_session
