#!/usr/bin/env bash
# 97-images: vmux new --image with a root made here from the host's static
# busybox, as a directory, a tar.gz and an ext4 image: vmux-init switches
# into it and runs the agent there, with the workspace and limits as ever;
# images are shared read-only; bad images are refused clearly.
source "$(dirname "$0")/lib.sh"

ROOTFS=$TMP/rootfs
mkdir -p "$ROOTFS/bin" "$ROOTFS/etc"
cp "$(command -v busybox)" "$ROOTFS/bin/busybox"
for c in sh ls cat echo mount ps sync dd rm; do ln -s busybox "$ROOTFS/bin/$c"; done
echo "image-marker" >"$ROOTFS/etc/vmux-test"
echo 'root:x:0:0:root:/root:/bin/sh' >"$ROOTFS/etc/passwd"
tar -czf "$TMP/rootfs.tar.gz" -C "$ROOTFS" .
mkdir -p "$VMUX_HOME/images"
truncate -s 64M "$VMUX_HOME/images/mini.img"
PATH=$PATH:/sbin:/usr/sbin mkfs.ext4 -q -F -d "$ROOTFS" "$VMUX_HOME/images/mini.img"

# in_image NAME: the session runs the image's root, vmux's agent, a workspace.
in_image() {
	local out
	out=$(vmux exec "$1" -- sh -c 'cat /etc/vmux-test; pwd; test -x /vmux/bin/vmux-agent && echo agent; grep -c " /workspace ext4" /proc/mounts; cut -d" " -f2 /proc/mounts | sort | uniq -d') ||
		return 1
	# (the last: no mount point twice, though /dev, /proc and /sys moved)
	expect_eq "$1" "$out" $'image-marker\n/workspace\nagent\n1'
}

t_directory() {
	need_session idir --image "$ROOTFS"
	in_image idir || return 1
	expect_match "ls --json" "$(session_field idir root_image)" "$VMUX_HOME/images/cache/.*\\.img"
}

t_tar_gz() {
	need_session itar --image "$TMP/rootfs.tar.gz"
	in_image itar
}

t_named_ext4_and_images_list() {
	expect_match list "$(vmux images)" "mini +64M +$VMUX_HOME/images/mini.img" || return 1
	need_session iname --image mini
	in_image iname
}

t_image_is_shared_read_only() {
	# a change outside /workspace is the session's until it stops
	vmux exec iname -- sh -c 'echo changed > /etc/vmux-test && echo w > /workspace/w && sync' || return 1
	expect_eq "live change" "$(vmux exec iname -- cat /etc/vmux-test)" changed || return 1
	expect_eq "other session" "$(vmux exec itar -- cat /etc/vmux-test)" image-marker || return 1
	vmux restart iname >/dev/null || return 1
	expect_eq "image untouched" "$(vmux exec iname -- cat /etc/vmux-test)" image-marker || return 1
	expect_eq "workspace kept" "$(vmux exec iname -- cat /workspace/w)" w || return 1
	PATH=$PATH:/sbin:/usr/sbin debugfs -R 'cat /etc/vmux-test' "$VMUX_HOME/images/mini.img" 2>/dev/null | grep -q image-marker ||
		fail "the image file changed"
}

# A directory changed since its image was made is made again (the key is
# its content, not its path and time in seconds).
t_changed_directory_made_again() {
	local first
	first=$(session_field idir root_image)
	echo "image-marker-2" >"$ROOTFS/etc/vmux-test"
	need_session idir2 --image "$ROOTFS"
	expect_eq "new content" "$(vmux exec idir2 -- cat /etc/vmux-test)" image-marker-2 || return 1
	[[ $(session_field idir2 root_image) != "$first" ]] || fail "the old image was used" || return 1
	echo "image-marker" >"$ROOTFS/etc/vmux-test"
	vmux rm -f idir2
}

# A tar keeps owners, modes, setuid bits and device nodes in the image.
t_tar_keeps_owners_modes_devices() {
	local r=$TMP/ownroot out
	cp -a "$ROOTFS" "$r"
	cp "$r/bin/busybox" "$r/bin/suid" && chmod 4755 "$r/bin/suid"
	echo secret >"$r/etc/shadow" && chown 0:42 "$r/etc/shadow" && chmod 0640 "$r/etc/shadow"
	echo mine >"$r/etc/owned" && chown 1234:1235 "$r/etc/owned"
	mkdir -p "$r/srv" && mknod "$r/srv/mynull" c 1 3 # /dev is devtmpfs
	tar --numeric-owner -czf "$TMP/own.tar.gz" -C "$r" .
	need_session iown --image "$TMP/own.tar.gz"
	out=$(vmux exec iown -- sh -c 'busybox stat -c "%a %u %g %F" /bin/suid /etc/shadow /etc/owned /srv/mynull')
	expect_eq "kept" "$out" $'4755 0 0 regular file
640 0 42 regular file
644 1234 1235 regular file
644 0 0 character special file' || return 1
	vmux rm -f iown
}

# Two new --image of one new tar at once: built once, both boot, nothing
# half-made left in the cache.
t_concurrent_builds_once() {
	local r=$TMP/concroot p1 p2
	cp -a "$ROOTFS" "$r"
	echo concurrent >"$r/etc/vmux-test"
	tar -czf "$TMP/conc.tar.gz" -C "$r" .
	"$VMUX" new ic1 --image "$TMP/conc.tar.gz" >"$TMP/ic1" 2>&1 &
	p1=$!
	"$VMUX" new ic2 --image "$TMP/conc.tar.gz" >"$TMP/ic2" 2>&1 &
	p2=$!
	wait $p1 || fail "ic1: $(cat "$TMP/ic1")" || return 1
	wait $p2 || fail "ic2: $(cat "$TMP/ic2")" || return 1
	expect_eq "same image" "$(session_field ic1 root_image)" "$(session_field ic2 root_image)" || return 1
	expect_eq ic1 "$(vmux exec ic1 -- cat /etc/vmux-test)" concurrent || return 1
	expect_eq ic2 "$(vmux exec ic2 -- cat /etc/vmux-test)" concurrent || return 1
	[[ -z $(ls "$VMUX_HOME/images/cache" | grep -E 'tmp|unpack') ]] ||
		fail "left in the cache: $(ls "$VMUX_HOME/images/cache")" || return 1
	vmux rm -f ic1 ic2 >/dev/null
}

# What a tar unpacks to is bounded; prune removes unused cached images.
t_bounded_and_pruned() {
	local out keep
	mkdir -p "$XDG_CONFIG_HOME/vmux"
	printf 'image-max 1M\n' >"$XDG_CONFIG_HOME/vmux/config"
	echo big >"$ROOTFS/etc/big-marker"
	tar -czf "$TMP/big.tar.gz" -C "$ROOTFS" .
	out=$(vmux new ibig --image "$TMP/big.tar.gz" 2>&1)
	expect_eq status $? 125 || return 1
	expect_match bound "$out" "unpacks to [0-9]+ MiB, over image-max \\(1 MiB" || return 1
	rm -f "$XDG_CONFIG_HOME/vmux/config" "$ROOTFS/etc/big-marker"
	[[ ! -e $VMUX_HOME/sessions/ibig ]] || fail "ibig left" || return 1
	keep=$(session_field itar root_image)
	out=$(vmux images --prune --json) || return 1
	[[ -e $keep ]] || fail "an image in use was pruned" || return 1
	(($(jq '.pruned | length' <<<"$out") >= 1)) || fail "nothing pruned: $out" || return 1
	[[ $(ls "$VMUX_HOME"/images/cache/*.img | wc -l) -ge 1 ]]
}

t_bad_images() {
	local out
	head -c 1M /dev/urandom >"$TMP/junk.bin"
	out=$(vmux new bad --image "$TMP/junk.bin" 2>&1)
	[[ $? -eq 125 ]] && expect_match junk "$out" "not an ext4 image, a root directory or a tar" || return 1
	out=$(vmux new bad --image nope 2>&1)
	[[ $? -eq 125 ]] && expect_match name "$out" "no image 'nope'" || return 1
	out=$(vmux new bad --image /no/such/dir 2>&1)
	[[ $? -eq 125 ]] && expect_match missing "$out" "No such file" || return 1
	[[ ! -e $VMUX_HOME/sessions/bad ]]
}

check "--image DIR: the root switches, agent and workspace there" t_directory
check "--image TAR.GZ" t_tar_gz
check "--image NAME (an ext4 image) and vmux images" t_named_ext4_and_images_list
check "images are shared read-only; changes last until stop" t_image_is_shared_read_only
check "a changed directory is made into an image again" t_changed_directory_made_again
check "a tar keeps owners, modes, setuid bits, device nodes" t_tar_keeps_owners_modes_devices
check "two new --image at once: built once, both boot" t_concurrent_builds_once
check "image-max bounds a tar; images --prune keeps what is used" t_bounded_and_pruned
check "bad images: junk, unknown name, missing path" t_bad_images
