# guest.mk: the default guest image (kernel + initramfs), the guest's static
# helpers (vmux-init, vmux-nc), the QEMU command-line builder's unit tests.
#
# The kernel comes from Debian's package only: guest/kernel resolves what
# linux-image-cloud-amd64 currently depends on, downloads and unpacks it once into
# $(BUILD)/cache, and extracts the uncompressed PVH vmlinux. guest/mkinitrd
# packs busybox, the modules of guest/modules.list and vmux's guest bundle.
# guest/boot-check (boot reliability and timing) and tests/e2e/15-vsock-nc.sh (vmux-nc
# end to end) boot the result with session/qemu.c's command line.

GUEST_OUT   := $(BUILD)/guest
GUEST_CACHE := $(BUILD)/cache/kernel

PROGRAMS += $(BIN)/vmux-init $(BIN)/vmux-nc
GUEST    += $(GUEST_OUT)/vmlinux $(GUEST_OUT)/initrd.img

# Guest binaries are fully static: they run before (or without) any libc.
# (Object paths spelled out: objs is defined after the fragments are read.)
$(BIN)/vmux-init: $(BUILD)/obj/guest/init.o $(BUILD)/obj/guest/console_shell.o \
    $(BUILD)/obj/proto/vsock.o
	@mkdir -p $(@D)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) -static -o $@ $^

$(BIN)/vmux-nc: $(BUILD)/obj/guest/nc.o
	@mkdir -p $(@D)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) -static -o $@ $^

# Which kernel package: rewritten only when Debian's default changes, so the
# image rebuilds exactly then.
$(GUEST_OUT)/kernel.pkg: guest-kernel-lookup
	@mkdir -p $(@D)
	$(Q)guest/kernel resolve $@

# The package, downloaded and unpacked once per version (cached).
$(GUEST_OUT)/kernel.root: $(GUEST_OUT)/kernel.pkg guest/kernel
	$(Q)guest/kernel extract $(GUEST_CACHE) $< $@

$(GUEST_OUT)/vmlinux: $(GUEST_OUT)/kernel.root
	$(if $(V),,@echo "  VMLINUX $@")
	$(Q)guest/kernel vmlinux $< $@

$(GUEST_OUT)/initrd.img: $(GUEST_OUT)/kernel.root guest/mkinitrd \
    guest/modules.list $(BIN)/vmux-init $(BIN)/vmux-nc $(BIN)/vmux-agent \
    $(wildcard /bin/busybox)
	$(if $(V),,@echo "  INITRD  $@")
	$(Q)guest/mkinitrd --kernel-root "$$(cat $<)" \
	    --modules guest/modules.list --init $(BIN)/vmux-init \
	    --nc $(BIN)/vmux-nc --agent $(BIN)/vmux-agent --out $@

# qemu-argv prints session/qemu.c's command line for guest/boot-check.
GUEST_TOOLS := $(GUEST_OUT)/qemu-argv
$(GUEST_OUT)/qemu-argv: $(patsubst %.c,$(BUILD)/obj/%.o,guest/qemu-argv.c \
    session/qemu.c session/accel.c $(COMMON_SRCS))
	@mkdir -p $(@D)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) -o $@ $^

all: $(GUEST_TOOLS)
guest: $(GUEST) $(GUEST_TOOLS)

install-guest: $(GUEST)
	install -d $(DESTDIR)$(PREFIX)/share/vmux/guest
	install -m 644 $(GUEST) $(DESTDIR)$(PREFIX)/share/vmux/guest/

.PHONY: guest install-guest guest-kernel-lookup

# QEMU command lines and acceleration detection (session/qemu.c, accel.c).
UNIT_TESTS += qemu
UNIT_qemu_SRCS := tests/unit/test_qemu.c session/qemu.c session/accel.c

# vmux's own guest kernel (guest/lean.config over tinyconfig, from
# linux-source-6.1), built on demand and kept under $(BUILD)/cache/lean-*;
# not the default yet: `vmux new --kernel $(BUILD)/guest/vmlinux-lean`.
.PHONY: guest-lean
guest-lean: $(GUEST_OUT)/vmlinux-lean
$(GUEST_OUT)/vmlinux-lean: guest/lean.config guest/kernel-lean
	@scripts/install-deps --kernel
	@mkdir -p $(@D)
	$(if $(V),,@echo "  KERNEL  $@")
	$(Q)guest/kernel-lean $(BUILD)/cache $@
