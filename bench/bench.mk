# bench.mk: `make bench` prints vmux's performance figures (bench/run).
BENCH_TOOLS := $(BUILD)/bench/exec-rtt $(BUILD)/bench/shell-rtt

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(BUILD)/obj/bench/stats.o \
    $(patsubst %.c,$(BUILD)/obj/%.o,$(SESSION_SRCS) $(SESSION_QEMU_SRCS) $(COMMON_SRCS))
	@mkdir -p $(@D)
	$(Q)$(CC) -o $@ $^ $(SESSION_LIBS)

.SECONDARY: $(patsubst $(BUILD)/bench/%,$(BUILD)/obj/bench/%.o,$(BENCH_TOOLS)) \
    $(BUILD)/obj/bench/stats.o

# pty-rtt needs no session code: a PTY and a clock.
BENCH_TOOLS += $(BUILD)/bench/pty-rtt
$(BUILD)/bench/pty-rtt: $(BUILD)/obj/bench/pty-rtt.o $(BUILD)/obj/bench/stats.o
	@mkdir -p $(@D)
	$(Q)$(CC) -o $@ $^ -lutil

# $(GUEST_DEBIAN): the boot figures' baseline, Debian's cloud kernel
bench: all $(BENCH_TOOLS) $(WEB_TEST_STAMP) $(GUEST_DEBIAN)
	@BUILD=$(BUILD) bench/run
	@BUILD=$(BUILD) bench/tui
	@BUILD=$(BUILD) bench/workspace
	@BUILD=$(BUILD) bench/images
	@BUILD=$(BUILD) bench/class
	@BUILD=$(BUILD) bench/qemu
	@BUILD=$(BUILD) bench/pause
	@BUILD=$(BUILD) bench/room
	@BUILD=$(BUILD) bench/remote
	@BUILD=$(BUILD) bench/mcp
	@BUILD=$(BUILD) bench/web
	@BUILD=$(BUILD) bench/slurm

.PHONY: bench-mcp
# The MCP server's figures alone.
bench-mcp: all $(BENCH_TOOLS)
	@BUILD=$(BUILD) bench/mcp

# The TUI's figures alone.
bench-tui: all $(BENCH_TOOLS)
	@BUILD=$(BUILD) bench/tui

# The workspace disk alone: fsync'ed writes vs a raw disk, stop + start.
bench-workspace: all
	@BUILD=$(BUILD) bench/workspace
.PHONY: bench-workspace

# Images by reference alone: a pull and a first new vs by hand.
bench-images: all
	@BUILD=$(BUILD) bench/images
.PHONY: bench-images

# vmux's QEMU against Debian's, and tb-size: memory, exec, keys, new.
bench-qemu: all $(BENCH_TOOLS)
	@BUILD=$(BUILD) bench/qemu
.PHONY: bench-qemu

# A session is a file alone: pause, resume (warm and cold), fork.
bench-pause: all
	@BUILD=$(BUILD) bench/pause
.PHONY: bench-pause

# A room of 200, most asleep, alone: active sessions' keys vs 30 alone.
bench-room: all $(BENCH_TOOLS)
	@BUILD=$(BUILD) bench/room
.PHONY: bench-room

# The teaching room alone: 30 sessions booted, fanned out to, left idle.
bench-class: all
	@BUILD=$(BUILD) bench/class
.PHONY: bench-class

# Sessions over ssh alone: keystroke, exec, cp and ls vs local.
bench-remote: all $(BENCH_TOOLS)
	@BUILD=$(BUILD) bench/remote
.PHONY: bench-remote

.PHONY: bench-web
# vmux web alone: key-to-echo through a page, a flood with the wall open.
bench-web: all $(BENCH_TOOLS) $(WEB_TEST_STAMP)
	@BUILD=$(BUILD) bench/web

.PHONY: bench-slurm
# Sessions as Slurm jobs alone: new and a keystroke, cluster vs here.
bench-slurm: all $(BENCH_TOOLS)
	@BUILD=$(BUILD) bench/slurm
