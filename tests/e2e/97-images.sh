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
	out=$(vmux exec "$1" -- sh -c 'cat /etc/vmux-test; pwd; test -x /vmux/bin/vmux-agent && echo agent; grep -c " /workspace ext4" /proc/mounts') ||
		return 1
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
check "bad images: junk, unknown name, missing path" t_bad_images
