# bridge.mk: vmux-bridge, the vhost-user vsock back end (session/bridge/),
# its unit tests and its fuzz target.
# (Object paths spelled out: objs is defined after the fragments are read.)

BRIDGE_LIB_SRCS := session/bridge/mem.c session/bridge/vring.c \
                   session/bridge/vhu.c session/bridge/vsock.c \
                   session/bridge/connect.c session/bridge/pump.c \
                   session/bridge/loop.c
BRIDGE_SRCS := $(BRIDGE_LIB_SRCS) session/bridge/main.c

PROGRAMS += $(BIN)/vmux-bridge

$(BIN)/vmux-bridge: $(patsubst %.c,$(BUILD)/obj/%.o,$(BRIDGE_SRCS) $(COMMON_SRCS))
	@mkdir -p $(@D)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) -o $@ $^

UNIT_TESTS += bridge
UNIT_bridge_SRCS := $(sort $(wildcard tests/unit/test_bridge_*.c)) \
                    $(BRIDGE_LIB_SRCS)

# libFuzzer over the guest-facing parsers (rings, packets, the CONNECT
# line): make fuzz-bridge [FUZZ_TIME=seconds].
FUZZ_CC   ?= clang
FUZZ_TIME ?= 60
FUZZ_BRIDGE_SRCS := fuzz/fuzz_bridge.c $(filter-out session/bridge/loop.c,\
                    $(BRIDGE_LIB_SRCS)) $(COMMON_SRCS)

$(BUILD)/fuzz/fuzz-bridge: $(FUZZ_BRIDGE_SRCS) session/bridge/bridge.h
	@mkdir -p $(@D)
	$(if $(V),,@echo "  FUZZ-CC $@")
	$(Q)$(FUZZ_CC) -std=gnu11 -D_GNU_SOURCE -g -O1 -Icommon -Iproto \
	    -Isession -fsanitize=fuzzer,address,undefined \
	    -fno-sanitize-recover=undefined -o $@ $(FUZZ_BRIDGE_SRCS)

fuzz-bridge: $(BUILD)/fuzz/fuzz-bridge
	@mkdir -p $(BUILD)/fuzz/corpus-bridge
	$< -max_total_time=$(FUZZ_TIME) -print_final_stats=1 \
	    $(BUILD)/fuzz/corpus-bridge

fuzz: fuzz-bridge

.PHONY: fuzz-bridge
