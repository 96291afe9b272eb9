# qemu.mk: vmux's own QEMU, $(BIN)/vmux-qemu (qemu/build: Debian's qemu
# source, the devices of qemu/devices.mak, the patches of qemu/patches/).
# Kept in $(KERNEL_CACHE) beside the lean kernel, keyed by everything it is
# built from, so a machine builds each version once.
#
# vmux runs it when it sits beside vmux (session/paths.c: session_qemu_find);
# `make QEMU=debian` builds none and removes it, and vmux runs Debian's
# qemu-system-x86_64 (as VMUX_QEMU=qemu-system-x86_64 does for one command).

QEMU ?= vmux
ifeq ($(filter vmux debian,$(QEMU)),)
$(error QEMU=$(QEMU): vmux or debian)
endif
QEMU_OWN := $(BIN)/vmux-qemu

ifeq ($(QEMU),vmux)
GUEST += $(QEMU_OWN)
$(QEMU_OWN): qemu/build qemu/devices.mak $(wildcard qemu/patches/*.patch)
	@mkdir -p $(@D)
	$(if $(V),,@echo "  QEMU    $@ (qemu/devices.mak; a first build takes minutes)")
	$(Q)qemu/build $(KERNEL_CACHE) $@
else
all: qemu-debian
qemu-debian:
	$(Q)rm -f $(QEMU_OWN)
.PHONY: qemu-debian
endif

# `make qemu`: vmux's QEMU only.
qemu: $(QEMU_OWN)
.PHONY: qemu
