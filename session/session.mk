# session.mk: the host side of sessions (records, launch, stop, transport,
# agent client), linked into vmux and into the session unit tests.
# session/qemu.c and accel.c: QEMU command lines, accelerator detection.
SESSION_SRCS := session/paths.c session/record.c session/proc.c \
                session/launch.c session/stop.c session/qmp.c session/pause.c session/fork.c session/template.c session/state.c session/transport.c \
                session/lock.c session/workspace.c session/profile.c \
                session/net.c session/errors.c session/settings.c \
                session/mounts.c session/fs.c session/image.c \
                session/agent_client.c session/attach.c \
                session/logcap.c session/beneath.c session/labels.c \
                session/check.c session/console.c session/host.c \
                session/options.c session/input.c agent/signame.c \
                session/image-oci.c $(OCI_SRCS)
SESSION_QEMU_SRCS := session/qemu.c session/accel.c
SESSION_LIBS := $(shell pkg-config --libs libcjson 2>/dev/null || echo -lcjson)

# Everything but launch.c (which needs qemu_argv) is testable without QEMU.
SESSION_UNIT_SRCS := $(filter-out session/launch.c session/pause.c session/fork.c session/template.c,$(SESSION_SRCS))

UNIT_TESTS += session
UNIT_session_SRCS := tests/unit/test_session_record.c \
                     tests/unit/test_session_paths.c \
                     tests/unit/test_session_transport.c \
                     tests/unit/test_session_agent.c \
                     tests/unit/test_session_proc.c \
                     tests/unit/test_session_net.c \
                     tests/unit/test_session_beneath.c \
                     tests/unit/test_session_labels.c \
                     tests/unit/test_session_host.c \
                     $(SESSION_UNIT_SRCS)
UNIT_session_LIBS := $(SESSION_LIBS)

# vmux-fsd: the jail each --mount's virtiofsd runs in (session/fsd/).
FSD_SRCS := session/fsd/main.c session/beneath.c
PROGRAMS += $(BIN)/vmux-fsd

$(BIN)/vmux-fsd: $(patsubst %.c,$(BUILD)/obj/%.o,$(FSD_SRCS) $(COMMON_SRCS))
	@mkdir -p $(@D)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) -o $@ $^

# vmux-console: the keeper of a session's serial console (session/console/).
CONSOLE_SRCS := session/console/main.c
PROGRAMS += $(BIN)/vmux-console

$(BIN)/vmux-console: $(patsubst %.c,$(BUILD)/obj/%.o,$(CONSOLE_SRCS) $(COMMON_SRCS))
	@mkdir -p $(@D)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) -o $@ $^

# vmux-netguard.so: preloaded into passt so a --net guest never reaches the
# host's loopback (session/netguard/).
PROGRAMS += $(BIN)/vmux-netguard.so

$(BIN)/vmux-netguard.so: session/netguard/netguard.c
	@mkdir -p $(@D)
	$(if $(V),,@echo "  SO      $@")
	$(Q)$(CC) -std=gnu11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -fPIC -shared \
	    -o $@ $< -ldl

# fuzz/fuzz_reply.c: the host's reading of a hostile guest's replies and
# attach streams.
FUZZ_fuzz_reply_SRCS := $(SESSION_UNIT_SRCS)
FUZZ_fuzz_reply_LIBS := $(SESSION_LIBS)
