#!/usr/bin/env bash
# 16-debian-kernel: the other kernel. Every other test boots vmux's own
# (guest/lean.config, everything built in); this one boots Debian's cloud
# kernel with its module-carrying initramfs ($BUILD/guest/debian/, which
# make test builds) through `vmux new --kernel --initrd`, so that path and
# the module loading it needs stay honest: boot, exec, drivers loaded for
# the devices a VM has, the workspace disk, a shell typed into and read
# back, a stop and a start.
source "$(dirname "$0")/lib.sh"
DEB=$BUILD/guest/debian
for f in "$DEB/vmlinux" "$DEB/initrd.img"; do
	[[ -f $f ]] || { echo "FAIL $f missing (make BUILD=$BUILD guest-debian)"; exit 1; }
done
need_session dk --kernel "$DEB/vmlinux" --initrd "$DEB/initrd.img"

t_runs_debians_kernel() {
	expect_match "uname -r" "$(vmux exec dk -- uname -r)" '-cloud-amd64$'
}
t_record_names_the_kernel() {
	expect_eq kernel "$(jq -r .kernel "$VMUX_HOME/sessions/dk/session.json")" "$DEB/vmlinux"
}
# virtio_blk and vsock are modules here: the agent answering says vsock
# loaded; the workspace says virtio_blk and ext4 did.
t_modules_loaded() {
	local mods
	mods=$(vmux exec dk -- cat /proc/modules | cut -d' ' -f1 | sort | tr '\n' ' ')
	expect_match modules "$mods" 'virtio_blk' || return 1
	expect_match modules "$mods" 'vmw_vsock_virtio_transport '
}
# vmux-init loads a device's driver only when QEMU gave the VM that device
# (guest/modules.list "when virtio:ID"): dk has no entropy source or
# virtio console, dr is booted with an entropy source (virtio device 4).
t_device_drivers() {
	local mods
	mods=$(vmux exec dk -- cat /proc/modules) || return 1
	[[ $mods != *virtio_rng* && $mods != *virtio_console* ]] ||
		fail "dk loaded a driver for a device it lacks: $(grep -o '^virtio_[a-z]*' <<<"$mods" | paste -sd' ')" || return 1
	VMUX_QEMU_EXTRA="-device virtio-rng-device" need_session dr \
	    --kernel "$DEB/vmlinux" --initrd "$DEB/initrd.img"
	mods=$(vmux exec dr -- cat /proc/modules) || return 1
	grep -q '^virtio_rng ' <<<"$mods" || fail "dr has no virtio_rng: $mods" || return 1
	[[ $mods != *virtio_console* ]] || fail "dr loaded virtio_console" || return 1
	vmux exec dr -- test -c /dev/hwrng || fail "dr has no /dev/hwrng"
	vmux rm -f dr >/dev/null
}
t_workspace_disk() {
	vmux exec dk -- sh -c 'echo kept >/workspace/f && sync' || return 1
	expect_match "/workspace" "$(vmux exec dk -- grep ' /workspace ' /proc/mounts)" ' ext4 '
}
t_shell() {
	local id
	id=$(vmux open dk --id s1) || return 1
	vmux send-keys dk s1 'echo $((6 * 7))-from-debian' Enter >/dev/null || return 1
	wait_for 20 sh -c "'$VMUX' capture dk s1 --plain | grep -q '^42-from-debian'" ||
	    { vmux capture dk s1 --plain; fail "no answer in the shell"; }
}
t_stop_start_keeps_the_workspace() {
	vmux stop dk >/dev/null || return 1
	vmux start dk >/dev/null || return 1
	expect_eq "after a restart" "$(vmux exec dk -- cat /workspace/f)" kept || return 1
	expect_match "still Debian's" "$(vmux exec dk -- uname -r)" '-cloud-amd64$'
}

check "boots Debian's cloud kernel (--kernel)" t_runs_debians_kernel
check "the session record keeps --kernel" t_record_names_the_kernel
check "its drivers load as modules" t_modules_loaded
check "a device's driver loads only when the VM has the device" t_device_drivers
check "the workspace disk is ext4" t_workspace_disk
check "a shell: send-keys, capture" t_shell
check "stop and start keep the kernel and the workspace" t_stop_start_keeps_the_workspace
