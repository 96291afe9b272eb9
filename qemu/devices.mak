# qemu/devices.mak: the devices vmux's QEMU carries (qemu/build), and no
# other; Kconfig adds what they select (the microvm machine brings its
# serial port, virtio-mmio, RTC, APIC and PIT).
CONFIG_MICROVM=y
# the workspace, root and rescue disks; --net; rng
CONFIG_VIRTIO_BLK=y
CONFIG_VIRTIO_NET=y
CONFIG_VIRTIO_RNG=y
# the agent's transport: vmux-bridge (vhost-user), or the host kernel's
CONFIG_VHOST_USER_VSOCK=y
CONFIG_VHOST_VSOCK=y
# host folders (virtiofsd)
CONFIG_VHOST_USER_FS=y
# virtconsole; free page reporting
CONFIG_VIRTIO_SERIAL=y
CONFIG_VIRTIO_BALLOON=y
