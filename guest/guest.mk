# guest.mk: the default guest image (kernel + initramfs), the guest's static
# helpers (vmux-init, vmux-nc), the QEMU command-line builder's unit tests.
#
# Two kernels, both from Debian's packages only:
#  - lean (the default): vmux's own, guest/lean.config over tinyconfig, built
#    from linux-source-6.1 by guest/kernel-lean once per machine (kept in
#    $(KERNEL_CACHE), keyed by the config and the source's version). Every
#    driver is built in: its initramfs carries no modules.
#  - debian: the cloud kernel linux-image-cloud-amd64 depends on, downloaded
#    and unpacked once into $(BUILD)/cache by guest/kernel; its initramfs
#    carries the modules of guest/modules.list. Always built into
#    $(GUEST_OUT)/debian/ for its smoke test (tests/e2e/16-debian-kernel.sh);
#    `make GUEST_KERNEL=debian` makes it the default image.
# guest/mkinitrd packs busybox, those modules and vmux's guest bundle.
# guest/boot-check (boot reliability and timing) and tests/e2e/15-vsock-nc.sh
# (vmux-nc end to end) boot the result with session/qemu.c's command line.

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

GUEST_KERNEL ?= lean
ifeq ($(filter lean debian,$(GUEST_KERNEL)),)
$(error GUEST_KERNEL=$(GUEST_KERNEL): lean or debian)
endif
# One build of the lean kernel serves every clone on the machine (root's
# /var/cache/vmux); elsewhere it stays in the build tree.
KERNEL_CACHE ?= $(shell [ -w /var/cache ] && echo /var/cache/vmux || echo $(BUILD)/cache)

GUEST_DEBIAN := $(GUEST_OUT)/debian/vmlinux $(GUEST_OUT)/debian/initrd.img
GUEST_LEAN   := $(GUEST_OUT)/lean/vmlinux $(GUEST_OUT)/lean/initrd.img
TEST_EXTRA   += $(GUEST_DEBIAN)
# What an initramfs for the default kernel takes beside vmux's bundle
# (tests/tests.mk's hostile guest too): Debian's needs its modules.
ifeq ($(GUEST_KERNEL),debian)
GUEST_MODULE_DEPS := $(GUEST_OUT)/kernel.root guest/modules.list
GUEST_MODULE_ARGS = --kernel-root "$$(cat $(GUEST_OUT)/kernel.root)" \
    --modules guest/modules.list
endif
GUEST_BUNDLE := guest/mkinitrd $(BIN)/vmux-init $(BIN)/vmux-nc \
    $(BIN)/vmux-agent $(wildcard /bin/busybox)

# Which kernel package: rewritten only when Debian's default changes, so the
# image rebuilds exactly then.
$(GUEST_OUT)/kernel.pkg: guest-kernel-lookup
	@mkdir -p $(@D)
	$(Q)guest/kernel resolve $@

# The package, downloaded and unpacked once per version (cached).
$(GUEST_OUT)/kernel.root: $(GUEST_OUT)/kernel.pkg guest/kernel
	$(Q)guest/kernel extract $(GUEST_CACHE) $< $@

$(GUEST_OUT)/debian/vmlinux: $(GUEST_OUT)/kernel.root
	@mkdir -p $(@D)
	$(if $(V),,@echo "  VMLINUX $@")
	$(Q)guest/kernel vmlinux $< $@

$(GUEST_OUT)/debian/initrd.img: $(GUEST_OUT)/kernel.root guest/modules.list \
    $(GUEST_BUNDLE)
	@mkdir -p $(@D)
	$(if $(V),,@echo "  INITRD  $@")
	$(Q)guest/mkinitrd --kernel-root "$$(cat $<)" \
	    --modules guest/modules.list --init $(BIN)/vmux-init \
	    --nc $(BIN)/vmux-nc --agent $(BIN)/vmux-agent --out $@

$(GUEST_OUT)/lean/vmlinux: guest/lean.config guest/kernel-lean
	@mkdir -p $(@D)
	$(if $(V),,@echo "  KERNEL  $@ (guest/lean.config; a first build takes minutes)")
	$(Q)guest/kernel-lean $(KERNEL_CACHE) $@

$(GUEST_OUT)/lean/initrd.img: $(GUEST_BUNDLE)
	@mkdir -p $(@D)
	$(if $(V),,@echo "  INITRD  $@")
	$(Q)guest/mkinitrd --init $(BIN)/vmux-init --nc $(BIN)/vmux-nc \
	    --agent $(BIN)/vmux-agent --compress lz4 --out $@

# The default image is a copy of the chosen kernel's; kernel.choice changes
# only when GUEST_KERNEL does, so switching rebuilds exactly then.
$(GUEST_OUT)/kernel.choice: guest-kernel-lookup
	@mkdir -p $(@D)
	@[ "$$(cat $@ 2>/dev/null)" = $(GUEST_KERNEL) ] || echo $(GUEST_KERNEL) >$@

$(GUEST_OUT)/vmlinux $(GUEST_OUT)/initrd.img: $(GUEST_OUT)/%: \
    $(GUEST_OUT)/$(GUEST_KERNEL)/% $(GUEST_OUT)/kernel.choice
	$(Q)cp $< $@.tmp && mv $@.tmp $@

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

# `make guest-lean` / `make guest-debian`: one kernel's image only.
.PHONY: guest-lean guest-debian
guest-lean: $(GUEST_LEAN)
guest-debian: $(GUEST_DEBIAN)
