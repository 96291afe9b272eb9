#!/usr/bin/env bash
# 94-mounts: host folders shared with --mount (virtiofs), seed 002's rules:
# only under allowed-mount-root; outside, "..", symlinks that leave, missing
# paths and a profile's mount mode refused with one clear error; ro is
# read-only even to the guest's root; the quota refuses an exec when the
# writable mounts are over it and reports an exec that went over.
source "$(dirname "$0")/lib.sh"

ROOTDIR=$TMP/roots/allowed
mkdir -p "$ROOTDIR/share" "$ROOTDIR/ro" "$ROOTDIR/quota" "$TMP/roots/outside"
echo from-host >"$ROOTDIR/share/h"
echo read-only >"$ROOTDIR/ro/r"
ln -s "$TMP/roots/outside" "$ROOTDIR/escape"
# A guest writes to a host folder as the folder's owner, never as root.
OWNER=4242
mkdir -p "$ROOTDIR/share/sub" "$ROOTDIR/rootowned" "$ROOTDIR/x,source=$TMP/roots/outside"
echo secret >"$TMP/roots/outside/secret"
echo plain >"$ROOTDIR/x,source=$TMP/roots/outside/plain"
chown -R $OWNER:$OWNER "$ROOTDIR/share" "$ROOTDIR/quota" "$ROOTDIR/x,source=$TMP/roots/outside"
mkdir -p "$XDG_CONFIG_HOME/vmux"
printf '# test\nallowed-mount-root %s\n' "$ROOTDIR" >"$XDG_CONFIG_HOME/vmux/config"

t_refusals() {
	local out
	out=$(vmux new x --mount "$TMP/roots/outside:/mnt/x" 2>&1)
	[[ $? -eq 2 ]] && expect_match outside "$out" "is outside the allowed mount roots" || return 1
	out=$(vmux new x --mount "$ROOTDIR/../outside:/mnt/x" 2>&1)
	[[ $? -eq 2 ]] && expect_match dotdot "$out" "without '..'" || return 1
	out=$(vmux new x --mount "$ROOTDIR/escape:/mnt/x" 2>&1)
	[[ $? -eq 2 ]] && expect_match symlink "$out" "resolves to $TMP/roots/outside, outside" || return 1
	out=$(vmux new x --mount "$ROOTDIR/missing:/mnt/x" 2>&1)
	[[ $? -eq 2 ]] && expect_match missing "$out" "No such file or directory" || return 1
	out=$(vmux new x --mount "$ROOTDIR/rootowned:/mnt/x" 2>&1)
	[[ $? -eq 2 ]] && expect_match "root-owned" "$out" "rootowned is owned by root \\(uid 0\\): a guest writes to a host folder as the folder's owner, never as root" || return 1
	out=$(vmux new x --mount "$ROOTDIR/share:/proc" 2>&1)
	[[ $? -eq 2 ]] && expect_match reserved "$out" "will not mount over /proc" || return 1
	out=$(vmux new x --profile offline_readonly --mount "$ROOTDIR/share:/mnt/x" 2>&1)
	[[ $? -eq 2 ]] && expect_match "profile ro" "$out" "'mounts' is locked by profile 'offline_readonly' to read-only" || return 1
	out=$(XDG_CONFIG_HOME=$TMP/nocfg vmux new x --mount "$ROOTDIR/share:/mnt/x" 2>&1)
	[[ $? -eq 2 ]] && expect_match "no roots" "$out" "no host folder may be shared" || return 1
	mkdir -p "$TMP/badcfg/vmux"
	printf 'allowed-mount-rot /x\n' >"$TMP/badcfg/vmux/config"
	out=$(XDG_CONFIG_HOME=$TMP/badcfg vmux new x 2>&1)
	[[ $? -eq 2 ]] && expect_match "bad setting" "$out" "config:1: unknown setting 'allowed-mount-rot'" || return 1
	[[ ! -e $VMUX_HOME/sessions/x ]]
}

# A virtiofsd that dies as it starts: said at once, with what it said.
t_virtiofsd_dies() {
	local out
	printf '#!/bin/sh\necho "broken virtiofsd: $*" >&2\nexit 3\n' >"$TMP/fake-virtiofsd"
	chmod +x "$TMP/fake-virtiofsd"
	out=$(VMUX_VIRTIOFSD=$TMP/fake-virtiofsd vmux new dies --mount "$ROOTDIR/share:/mnt/s" 2>&1)
	[[ $? -eq 125 ]] || fail "exit status: $out" || return 1
	expect_match said "$out" "virtiofsd for --mount $ROOTDIR/share exited:"$'\n'"broken virtiofsd: --fd=[0-9]+ -o source=/[a-z]+/src -o cache=auto" ||
		return 1
	[[ ! -e $VMUX_HOME/sessions/dies ]] || fail "a record was left"
}

if [[ $(id -u) -ne 0 ]]; then
	# Debian 12's virtiofsd needs root: a user gets a clear error, and
	# nothing is left behind.
	t_needs_root() {
		local out
		out=$(vmux new nr --mount "$ROOTDIR/share:/mnt/s" 2>&1)
		[[ $? -eq 125 ]] && expect_match error "$out" "virtiofsd" || return 1
		[[ ! -e $VMUX_HOME/sessions/nr ]]
	}
	check "--mount refusals: outside, .., symlink out, missing, reserved, profile" t_refusals
	check "--mount without root: virtiofsd's error said, nothing left" t_needs_root
	check "a virtiofsd that dies at start is said with its log" t_virtiofsd_dies
	for c in "a shared folder" ":ro on the host" "guest root and the folder's owner" \
		"a comma in a host path" "a folder swapped for a symlink" "stop and start keep the mounts" \
		"quota" "rm ends the virtiofsd processes"; do
		skip "$c" "vmux-fsd needs root to clone the folder's mount"
	done
	exit
fi

need_session mnt --mount "$ROOTDIR/share:/workspace/share" --mount "$ROOTDIR/ro:/mnt/ro:ro"

t_shared_both_ways() {
	expect_eq read "$(vmux exec mnt -- cat /workspace/share/h)" from-host || return 1
	vmux exec mnt -- sh -c 'echo from-guest > /workspace/share/g' || return 1
	expect_eq "on the host" "$(cat "$ROOTDIR/share/g")" from-guest || return 1
	expect_eq mounts "$(session_field mnt 'mounts | length')" 2
}

t_read_only_even_for_guest_root() {
	local out
	expect_eq read "$(vmux exec mnt -- cat /mnt/ro/r)" read-only || return 1
	out=$(vmux exec mnt -- sh -c 'echo x > /mnt/ro/x' 2>&1)
	[[ $? -ne 0 ]] && expect_match ro "$out" "Read-only file system" || return 1
	# root in the guest remounts it read-write (that works in the
	# guest): the host still refuses
	vmux exec mnt -- mount -o remount,rw /mnt/ro || fail "the guest's remount failed" || return 1
	expect_match "rw in the guest" "$(vmux exec mnt -- grep ' /mnt/ro ' /proc/mounts)" ' rw[, ]' || return 1
	out=$(vmux exec mnt -- sh -c 'echo y > /mnt/ro/y' 2>&1)
	[[ $? -ne 0 ]] && expect_match "still ro" "$out" "Read-only file system" || return 1
	[[ ! -e $ROOTDIR/ro/x && ! -e $ROOTDIR/ro/y ]] || fail "the guest wrote to a read-only mount"
}

# Guest root through a writable mount: no device node, no setuid or
# setgid file at all on the host (nobody gains the owner's ids through
# one); what it makes belongs to the folder's owner.
t_guest_root_gets_nothing_beyond_the_folder() {
	local out bad
	out=$(vmux exec mnt -- sh -c 'cd /workspace/share && mknod blk b 8 0; mknod chr c 1 3;
		cp /bin/busybox bb; chmod 4755 bb; chmod 2755 bb; cp /bin/busybox bb2 && chown 0:0 bb2; chmod 6755 bb2;
		mkdir sgid; chmod g+s sgid; echo made > made; echo done' 2>&1)
	expect_match "ran" "$out" "done" || return 1
	expect_match "mknod refused" "$out" "mknod: blk: Operation not permitted" || return 1
	expect_match "setuid refused" "$out" "chmod: bb: Operation not permitted" || return 1
	[[ ! -e $ROOTDIR/share/blk && ! -e $ROOTDIR/share/chr ]] || fail "a device node on the host" || return 1
	bad=$(find "$ROOTDIR/share" \( -type b -o -type c \) -o -perm /6000 -o -uid 0 -newer "$ROOTDIR/share/h")
	[[ -z $bad ]] || fail "setid, root-owned or device files on the host: $(ls -ldn $bad)" || return 1
	expect_eq "owner of what the guest made" "$(stat -c %u:%g "$ROOTDIR/share/made")" $OWNER:$OWNER || return 1
	expect_eq "a chown'ed file's owner" "$(stat -c %u:%g "$ROOTDIR/share/bb2")" $OWNER:$OWNER
}

# A comma in a host path under an allowed root is a name, not an option:
# the guest sees that folder and nothing from the path after the comma.
t_comma_is_just_a_name() {
	local out
	need_session comma --mount "$ROOTDIR/x,source=$TMP/roots/outside:/mnt/c"
	out=$(vmux exec comma -- ls /mnt/c)
	expect_eq "the folder itself" "$out" plain || return 1
	vmux rm -f comma
}

# While stopped, a folder a nested mount serves became a symlink (the
# guest made it through the writable parent): start refuses, naming it;
# the session stays stopped with its workspace; fixed, it starts again.
t_symlink_swap_refuses_start() {
	local out
	need_session swap --mount "$ROOTDIR/share:/mnt/p" --mount "$ROOTDIR/share/sub:/mnt/sub:ro"
	vmux exec swap -- sh -c 'echo kept > /workspace/w && sync && umount /mnt/sub;
		rm -rf /mnt/p/sub && ln -s /etc /mnt/p/sub' || return 1
	[[ -L $ROOTDIR/share/sub ]] || fail "the guest made no symlink" || return 1
	vmux stop swap >/dev/null || return 1
	out=$(vmux start swap 2>&1)
	expect_eq "start status" $? 125 || return 1
	expect_match refused "$out" "$ROOTDIR/share/sub is a symlink or has one on its path" || return 1
	expect_eq "still stopped" "$(session_field swap state)" stopped || return 1
	rm "$ROOTDIR/share/sub" && mkdir "$ROOTDIR/share/sub" || return 1
	vmux start swap >/dev/null || return 1
	expect_eq "workspace kept" "$(vmux exec swap -- cat /workspace/w)" kept || return 1
	vmux rm -f swap
}

t_stop_start_keeps_mounts() {
	vmux stop mnt && vmux start mnt >/dev/null || return 1
	expect_eq "after restart" "$(vmux exec mnt -- cat /workspace/share/g)" from-guest
}

t_quota_before_and_after() {
	local out
	need_session q --mount "$ROOTDIR/quota:/workspace/q" --quota 1M
	out=$(vmux exec q -- dd if=/dev/zero of=/workspace/q/big bs=1k count=2048 2>&1)
	[[ $? -eq 125 ]] && expect_match after "$out" "workspace quota exceeded after execution" || return 1
	out=$(vmux exec q -- echo should-not-run 2>&1)
	[[ $? -eq 125 ]] && expect_match before "$out" "workspace quota exceeded before execution" || return 1
	[[ $out != *should-not-run* ]] || fail "ran over quota" || return 1
	rm -f "$ROOTDIR/quota/big"
	expect_eq "under again" "$(vmux exec q -- echo ok)" ok
}

t_rm_ends_virtiofsd() {
	vmux rm mnt q || return 1
	[[ -z $(e2e_leftovers) ]] || fail "left: $(ps -o pid,args -p "$(e2e_leftovers | paste -sd,)")"
}

check "--mount refusals: outside, .., symlink out, missing, reserved, profile" t_refusals
check "a shared folder: the guest reads and writes it" t_shared_both_ways
check ":ro is read-only on the host, even after the guest remounts it" t_read_only_even_for_guest_root
check "guest root: no device node, no root setuid file; files are the owner's" t_guest_root_gets_nothing_beyond_the_folder
check "a comma in a host path is part of the name, not an option" t_comma_is_just_a_name
check "a folder swapped for a symlink refuses the start, naming it" t_symlink_swap_refuses_start
check "stop and start keep the mounts" t_stop_start_keeps_mounts
check "a virtiofsd that dies at start is said with its log" t_virtiofsd_dies
check "quota: exec refused before when over, reported after going over" t_quota_before_and_after
check "rm ends the virtiofsd processes" t_rm_ends_virtiofsd
