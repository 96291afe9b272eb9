# bridge.mk: vmux-bridge, the vhost-user vsock back end (session/bridge/),
# its unit tests and its fuzz target.
# (Object paths spelled out: objs is defined after the fragments are read.)

BRIDGE_LIB_SRCS := session/bridge/mem.c session/bridge/vring.c \
                   session/bridge/vhu.c session/bridge/packet.c \
                   session/bridge/vsock.c \
                   session/bridge/connect.c session/bridge/pump.c \
                   session/bridge/loop.c session/bridge/fwdlimit.c
BRIDGE_SRCS := $(BRIDGE_LIB_SRCS) session/bridge/main.c

PROGRAMS += $(BIN)/vmux-bridge

$(BIN)/vmux-bridge: $(patsubst %.c,$(BUILD)/obj/%.o,$(BRIDGE_SRCS) $(COMMON_SRCS))
	@mkdir -p $(@D)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) -o $@ $^

UNIT_TESTS += bridge
UNIT_bridge_SRCS := $(sort $(wildcard tests/unit/test_bridge_*.c)) \
                    $(BRIDGE_LIB_SRCS)

# libFuzzer over the guest-facing parsers (rings, packets, the engine, the
# CONNECT line): fuzz/fuzz_bridge.c, built by fuzz/fuzz.mk's rules.
# make fuzz-bridge [FUZZ_TIME=seconds] runs the bridge's targets alone.
# fuzz/fuzz_bridge_vhu.c does the same for the vhost-user messages.
FUZZ_fuzz_bridge_SRCS := $(filter-out session/bridge/loop.c,$(BRIDGE_LIB_SRCS))
FUZZ_fuzz_bridge_vhu_SRCS := $(FUZZ_fuzz_bridge_SRCS)

fuzz-bridge: $(BUILD)/fuzz/fuzz_bridge $(BUILD)/fuzz/seed-fuzz_bridge/.done \
    $(BUILD)/fuzz/fuzz_bridge_vhu $(BUILD)/fuzz/seed-fuzz_bridge_vhu/.done
	$(call fuzz_cmd,fuzz_bridge,$(FUZZ_TIME))
	$(call fuzz_cmd,fuzz_bridge_vhu,$(FUZZ_TIME))

.PHONY: fuzz-bridge
