# agent.mk: vmux-agent, the guest agent. It runs in the guest from
# /vmux/bin with its own loader and libraries in /vmux/lib, hence the rpath;
# it needs only libc and cJSON.
AGENT_SRCS := agent/actions.c agent/attach.c agent/buf.c agent/exec.c \
	agent/exec_serve.c agent/loop.c agent/ping.c agent/request.c \
	agent/response.c agent/ring.c agent/shell.c agent/signame.c \
	agent/spawn.c agent/utf8.c agent/files.c agent/peer.c \
	agent/budget.c agent/gate.c agent/image.c agent/resumed.c \
	$(ARCHIVE_SRCS)
AGENT_LIBS := $(shell pkg-config --libs libcjson 2>/dev/null || echo -lcjson) \
	-lpthread -lm $(ARCHIVE_LIBS)

# (Object paths spelled out: objs is defined after the fragments are read.)
PROGRAMS += $(BIN)/vmux-agent
$(BIN)/vmux-agent: $(patsubst %.c,$(BUILD)/obj/%.o,agent/main.c proto/vsock.c \
		$(AGENT_SRCS) $(COMMON_SRCS))
	@mkdir -p $(@D)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) -o $@ $^ -Wl,-rpath,'$$ORIGIN/../lib' $(AGENT_LIBS)

# Pure pieces: request parsing, ring, UTF-8, signal names, attach frames.
UNIT_TESTS += agent
UNIT_agent_SRCS := tests/unit/test_agent_request.c \
	tests/unit/test_agent_ring.c tests/unit/test_agent_utf8.c \
	tests/unit/test_agent_misc.c $(AGENT_SRCS)
UNIT_agent_LIBS := $(AGENT_LIBS)

# Real processes on the host: exec, and the agent over a Unix socket.
UNIT_TESTS += agent_exec
UNIT_agent_exec_SRCS := tests/unit/test_agent_exec.c \
	tests/unit/test_agent_exec_stream.c \
	tests/unit/test_agent_client.c $(AGENT_SRCS)
UNIT_agent_exec_LIBS := $(AGENT_LIBS)

UNIT_TESTS += agent_serve
UNIT_agent_serve_SRCS := tests/unit/test_agent_serve.c \
	tests/unit/test_agent_client.c $(AGENT_SRCS)
UNIT_agent_serve_LIBS := $(AGENT_LIBS)

UNIT_TESTS += agent_shell
UNIT_agent_shell_SRCS := tests/unit/test_agent_shell.c \
	tests/unit/test_agent_client.c $(AGENT_SRCS)
UNIT_agent_shell_LIBS := $(AGENT_LIBS)

# fuzz/fuzz_request.c: the request parser (and the host's reply parser).
FUZZ_fuzz_request_SRCS := $(filter-out agent/main.c,$(AGENT_SRCS)) \
	session/agent_client.c session/transport.c session/host.c \
	session/paths.c
FUZZ_fuzz_request_LIBS := $(AGENT_LIBS)
