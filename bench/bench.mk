# bench.mk: `make bench` prints vmux's performance figures (bench/run).
BENCH_TOOLS := $(BUILD)/bench/exec-rtt

$(BUILD)/bench/exec-rtt: $(BUILD)/obj/bench/exec-rtt.o \
    $(patsubst %.c,$(BUILD)/obj/%.o,$(SESSION_SRCS) $(SESSION_QEMU_SRCS) $(COMMON_SRCS))
	@mkdir -p $(@D)
	$(Q)$(CC) -o $@ $^ $(SESSION_LIBS)

bench: all $(BENCH_TOOLS)
	@BUILD=$(BUILD) bench/run
