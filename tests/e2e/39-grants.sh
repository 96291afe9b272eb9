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
# as root, a grant must be told it is wanted (the key logs in as root)
ROOT_OK=
[[ $(id -u) -eq 0 ]] && ROOT_OK=--allow-root
# the unprivileged account: nobody, whatever its uid is here
NOBODY=$(id -u nobody 2>/dev/null || echo 65534)
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
	out=$(vmux grant gr1 $ROOT_OK --key "$TMP/student.pub" --as alice --authorized-keys "$AK")
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
	vmux grant gr1 $ROOT_OK --key "$TMP/teacher.pub" --read-only --as teacher --authorized-keys "$AK" >/dev/null || return 1
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
	local out deadline
	# the student is still logged in (st): revoking ends that login too
	tm has-session -t st || fail "the student's login is gone already" || return 1
	# and holds an ssh master: sshd let it in, and it can open more
	ssh -F /dev/null -i "$TMP/student" -p "$PORT" -o BatchMode=yes \
		-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
		-o LogLevel=ERROR -M -S "$TMP/mux" -o ControlPersist=120 -fN \
		"$(id -un)@127.0.0.1" || return 1
	bg_track "$(pgrep -f -- "-S $TMP/mux" | head -n 1)"
	# a second login through it (its input held open: at its end a piped
	# shell client would end the student's shell)
	sleep 600 | ssh -F /dev/null -S "$TMP/mux" x >"$TMP/mux.out" 2>&1 &
	bg_track $!
	wait_for 30 grep -q 'attached to shell main in gr1' "$TMP/mux.out" ||
		fail "the master opened no session: $(cat "$TMP/mux.out")" || return 1
	out=$(vmux revoke gr1 --key "$TMP/student.pub" --authorized-keys "$AK") || return 1
	expect_eq "said" "$out" "revoked gr1's grant; its logins ended" || return 1
	wait_on st '\[detached from shell main in gr1: Terminated\]' 20 || return 1
	wait_for 20 eval '[[ $(tm display-message -p -t st "#{pane_current_command}") == sleep ]]' ||
		fail "ssh did not end" || return 1
	# and the title vmux shell set is gone with it
	deadline=$((SECONDS + 20))
	until [[ $(tm display-message -p -t st '#{pane_title}') != *'gr1:main'* ]]; do
		((SECONDS < deadline)) || fail "the title stayed: $(tm display-message -p -t st '#{pane_title}')" || return 1
		sleep 0.1
	done
	# the master's next session runs the same forced command: refused
	out=$(ssh -F /dev/null -S "$TMP/mux" x </dev/null 2>&1)
	[[ $out != *'shell main in gr1'* ]] || fail "the revoked grant's ssh master still got in" || return 1
	expect_match "said" "$out" "this grant to 'gr1' was revoked" || return 1
	ssh -F /dev/null -S "$TMP/mux" -O exit x >/dev/null 2>&1
	# the teacher's login, another grant, is still in
	pgrep -f -- "-i $TMP/teacher " >/dev/null || fail "the teacher's login ended too" || return 1
	! screen tw | grep -q 'detached from' || fail "the teacher was detached" || return 1
	out=$(printf 'hostname\nexit\n' | ssh_as student 2>&1)
	expect_eq "ssh status" $? 255 || return 1
	expect_match "refused" "$out" 'Permission denied' || return 1
	out=$(vmux revoke gr1 --key "$TMP/student.pub" --authorized-keys "$AK" 2>&1)
	expect_eq "again" $? 125 || return 1
}

t_bad_keys_refused() {
	local before out
	before=$(cat "$AK")
	out=$(vmux grant gr1 $ROOT_OK --key "$TMP/student" --authorized-keys "$AK" 2>&1)
	expect_eq "private key" $? 2 || return 1
	expect_match "said" "$out" 'not an OpenSSH public key' || return 1
	printf 'command="/bin/sh" %s\n' "$(cat "$TMP/student.pub")" >"$TMP/opts.pub"
	expect_status 2 vmux grant gr1 $ROOT_OK --key "$TMP/opts.pub" --authorized-keys "$AK" 2>/dev/null || return 1
	expect_status 2 vmux grant gr1 $ROOT_OK --key "$TMP/student.pub" --as 'a b' --authorized-keys "$AK" 2>/dev/null || return 1
	expect_status 125 vmux grant nosuch $ROOT_OK --key "$TMP/student.pub" --authorized-keys "$AK" 2>/dev/null || return 1
	expect_eq "file untouched" "$(cat "$AK")" "$before" || return 1
	# a key that already has a line of the user's own: it would win
	cat "$TMP/teacher.pub" >>"$AK.other" && cp "$AK.other" "$TMP/ak2"
	out=$(vmux grant gr1 $ROOT_OK --key "$TMP/teacher.pub" --authorized-keys "$TMP/ak2" 2>&1)
	expect_eq "own line status" $? 125 || return 1
	expect_match "own line" "$out" 'already has a line .* that is not a vmux grant' || return 1
}

t_root_refused_unless_told() {
	local out before
	before=$(cat "$AK")
	out=$(vmux grant gr1 --key "$TMP/teacher.pub" --authorized-keys "$AK" 2>&1)
	expect_eq "status" $? 125 || return 1
	expect_match "why" "$out" 'would log in to this host as root: run the room under an unprivileged account.*--allow-root' || return 1
	expect_eq "file untouched" "$(cat "$AK")" "$before" || return 1
}

t_unprivileged_room() {
	local h=$TMP/room out
	# a room under an account of its own (nobody here): new, exec, shell,
	# grant all work, and the grant runs vmux with that account's home
	local f bin=$(dirname "$VMUX") vmux
	mkdir -p "$h/inst/bin" "$h/inst/guest" && cp "$TMP/student.pub" "$h/"
	# vmux as that account installs it: a copy it can reach, beside its
	# guest (the checkout may be in a folder only root enters)
	for f in vmux vmux-bridge vmux-console vmux-fsd vmux-netguard.so; do
		[[ -e $bin/$f ]] && cp "$bin/$f" "$h/inst/bin/"
	done
	cp "$BUILD/guest/vmlinux" "$BUILD/guest/initrd.img" "$h/inst/guest/" || return 1
	vmux=$h/inst/bin/vmux
	# (the test's folders let it through, no more; leftovers still match
	# the cleanup's $VMUX_HOME)
	chown -R "$NOBODY:$NOBODY" "$h" && chmod o+x "$VMUX_HOME" "$TMP"
	as_nobody() {
		setpriv --reuid="$NOBODY" --regid="$NOBODY" --clear-groups \
			env -i PATH=/usr/bin:/bin HOME="$h" VMUX_HOME="$h/state" "$vmux" "$@"
	}
	as_nobody new room1 --memory 128 >/dev/null || return 1
	expect_eq "exec" "$(as_nobody exec room1 -- echo in-room)" in-room || return 1
	out=$(printf 'echo sh-$((3*4))\nexit\n' | as_nobody shell room1 2>&1)
	expect_match "shell" "$out" 'sh-12' || return 1
	out=$(as_nobody grant room1 --key "$h/student.pub" --authorized-keys "$h/ak")
	expect_eq "grant" "$out" "granted room1 shell main to ssh-ed25519 key" || return 1
	expect_match "the line" "$(cat "$h/ak")" "VMUX_HOME=$h/state .* shell room1 --id main --if-instance [0-9a-f]{32} " || return 1
	as_nobody rm -f room1 >/dev/null || return 1
}

t_concurrent_edits_through_a_symlink() {
	local i ak=$TMP/ak-c link=$TMP/ak-link
	: >"$ak" && ln -s "$ak" "$link"
	for i in $(seq 30); do
		ssh-keygen -q -t ed25519 -N '' -C "k$i" -f "$TMP/k$i" </dev/null || return 1
	done
	# 30 grants at once, half through the symlink: none lost
	for i in $(seq 30); do
		if ((i % 2)); then f=$ak; else f=$link; fi
		vmux grant gr1 $ROOT_OK --key "$TMP/k$i.pub" --as "k$i" --authorized-keys "$f" >/dev/null &
	done
	wait
	expect_eq "lines after 30 grants" "$(grep -c vmux-grant: "$ak")" 30 || return 1
	[[ -L $link ]] || fail "the symlink was replaced by a file"
	# and 30 revokes: none lost either
	for i in $(seq 30); do
		if ((i % 2)); then f=$link; else f=$ak; fi
		vmux revoke gr1 --key "$TMP/k$i.pub" --authorized-keys "$f" >/dev/null &
	done
	wait
	expect_eq "lines after 30 revokes" "$(grep -c vmux-grant: "$ak")" 0 || return 1
}

t_grant_pins_its_session() {
	local out
	# next term's gr1 is another session: last term's key does not reach it
	vmux grant gr1 $ROOT_OK --key "$TMP/student.pub" --authorized-keys "$AK" >/dev/null || return 1
	vmux rm -f gr1 >/dev/null || return 1
	vmux new gr1 --memory 128 >/dev/null || return 1
	out=$(printf 'hostname\nexit\n' | ssh_as student 2>&1)
	[[ $out == *"was made again since"* ]] || fail "the old grant reached the new gr1: $out"
}

t_same_second_namesake() {
	local out old dir
	# rm then new in the same second: the grant still reaches only the
	# session it was made for (the creation second is forged to match)
	vmux grant gr1 $ROOT_OK --key "$TMP/student.pub" --authorized-keys "$AK" >/dev/null || return 1
	dir=$(session_field gr1 dir)
	old=$(jq .created_unix "$dir/session.json")
	vmux rm -f gr1 >/dev/null || return 1
	vmux new gr1 --memory 128 >/dev/null || return 1
	jq ".created_unix = $old" "$dir/session.json" >"$TMP/rec" && cp "$TMP/rec" "$dir/session.json"
	out=$(printf 'hostname\nexit\n' | ssh_as student 2>&1)
	[[ $out == *"was made again since"* ]] || fail "the old grant reached the new gr1: $out"
	# a grant line from before instance ids (--if-created) does not reach
	# a session that has one, though the second matches
	sed -i "s/--if-instance [0-9a-f]*/--if-created $old/" "$AK"
	out=$(printf 'hostname\nexit\n' | ssh_as student 2>&1)
	[[ $out == *"was made again since"* ]] || fail "an --if-created grant reached the new gr1: $out"
}

check "a granted key lands in its session's shell" t_granted_key_reaches_its_shell
check "whatever the client asks, only that shell; no forwarding" t_asking_for_more_gets_only_its_shell
check "a read-only grant watches the student's shell and types nothing" t_read_only_watcher
check "grants lists each grant" t_grants_listed
check "a revoked key gets nothing" t_revoked_key_gets_nothing
check "key files that are not a plain public key are refused" t_bad_keys_refused
check "a grant reaches only the session it was made for, not a namesake" t_grant_pins_its_session
check "not even one made in the same second; nor an --if-created grant" t_same_second_namesake
# both need root: to be refused as root, and to become another account
if [[ $(id -u) -eq 0 ]]; then
	check "as root, a grant is refused unless --allow-root" t_root_refused_unless_told
	check "a room under an unprivileged account: new, exec, shell, grant" t_unprivileged_room
else
	skip "as root, a grant is refused unless --allow-root" "not root"
	skip "a room under an unprivileged account" "not root: cannot become another account"
fi
check "30 grants and 30 revokes at once, half through a symlink: none lost" t_concurrent_edits_through_a_symlink
