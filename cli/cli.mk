# cli.mk: the vmux command (cli/) on top of the session subsystem.
CLI_SRCS := cli/vmux.c cli/cmd.c cli/cmd-table.c cli/args.c cli/cmd-new.c \
            cli/select.c cli/exec-many.c cli/cmd-check.c cli/new-class.c \
            cli/cmd-exec.c cli/cmd-ls.c cli/cmd-rm.c cli/cmd-connect.c \
            cli/cmd-ping.c cli/cmd-help.c cli/cmd-shell.c cli/cmd-shells.c \
            cli/cmd-kill.c cli/cmd-close.c cli/cmd-cp.c cli/shell-loop.c \
            cli/term.c cli/detach.c cli/cp.c cli/cp-args.c cli/cp-place.c \
            cli/progress.c cli/output.c cli/exec-stream.c cli/cmd-tui.c \
            cli/cmd-stop.c cli/cmd-start.c cli/cmd-pause.c cli/cmd-fork.c cli/cmd-logs.c cli/cmd-console.c cli/cmd-gdb.c cli/cmd-rescue.c cli/cmd-grant.c cli/grant-logins.c cli/cmd-record.c cli/cmd-run.c \
            cli/cmd-status.c cli/cmd-images.c cli/cmd-host.c cli/remote.c \
            cli/pool.c cli/cmd-pool.c cli/cmd-keys.c \
            cli/cmd-capture.c cli/cmd-open.c cli/cmd-resize.c \
            cli/cmd-mcp.c $(MCP_SRCS) \
            cli/cmd-web.c cli/grant-web.c cli/foreground.c cli/slurm.c \
            cli/slurm-job.c cli/slurm-ls.c $(WEB_SRCS)

PROGRAMS += $(BIN)/vmux

# (Object paths spelled out: objs is defined after the fragments are read.)
# vmux cp packs and unpacks tar archives with the archive module.
$(BIN)/vmux: $(patsubst %.c,$(BUILD)/obj/%.o,$(CLI_SRCS) $(SESSION_SRCS) \
             $(SESSION_QEMU_SRCS) $(ARCHIVE_SRCS) $(COMMON_SRCS) \
             $(TUI_SRCS))
	@mkdir -p $(@D)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) -o $@ $^ $(SESSION_LIBS) $(ARCHIVE_LIBS) $(TUI_LIBS) $(MCP_LIBS) $(WEB_LIBS)

# The same vmux under ASan+UBSan and under TSan, beside it (so it finds the
# bridge and the guest), for make test's sanitize layer (tests/run-all).
VMUX_ALL_SRCS = $(CLI_SRCS) $(SESSION_SRCS) $(SESSION_QEMU_SRCS) \
                $(ARCHIVE_SRCS) $(COMMON_SRCS) $(TUI_SRCS)
TEST_EXTRA += $(BIN)/vmux-asan $(BIN)/vmux-tsan
$(BIN)/vmux-asan: $(patsubst %.c,$(BUILD)/asan/%.o,$(VMUX_ALL_SRCS))
	@mkdir -p $(@D)
	$(if $(V),,@echo "  LD-SAN  $@")
	$(Q)$(CC) $(SAN_FLAGS) -o $@ $^ $(SESSION_LIBS) $(ARCHIVE_LIBS) \
	    $(TUI_LIBS) $(MCP_LIBS) $(WEB_LIBS)
$(BIN)/vmux-tsan: $(patsubst %.c,$(BUILD)/tsan/%.o,$(VMUX_ALL_SRCS))
	@mkdir -p $(@D)
	$(if $(V),,@echo "  LD-TSAN $@")
	$(Q)$(CC) $(TSAN_FLAGS) -o $@ $^ $(SESSION_LIBS) $(ARCHIVE_LIBS) \
	    $(TUI_LIBS) $(MCP_LIBS) $(WEB_LIBS)

# Argument parsing, request building and escaped printing, with the session
# code they use (cmd.c wakes paused sessions: pause.c and its launch).
UNIT_TESTS += cli
UNIT_cli_SRCS := tests/unit/test_cli_args.c tests/unit/test_cli_print.c \
                 cli/args.c cli/cmd.c cli/output.c \
                 cli/cmd-exec.c cli/exec-many.c cli/exec-stream.c \
                 $(SESSION_SRCS) $(SESSION_QEMU_SRCS)
UNIT_cli_LIBS := $(SESSION_LIBS)

# vmux shell's and vmux cp's pure parts: detach key, attach client (frames,
# first line), the attached loop against a fake agent, cp's operands.
UNIT_TESTS += cli_shell
UNIT_cli_shell_SRCS := tests/unit/test_cli_shell.c tests/unit/test_cli_cp.c \
                       cli/detach.c cli/shell-loop.c cli/term.c \
                       cli/cp-args.c cli/progress.c $(SESSION_UNIT_SRCS)
UNIT_cli_shell_LIBS := $(SESSION_LIBS)

# vmux cp's download against a fake, hostile guest: nothing lands outside
# the destination.
UNIT_TESTS += cli_download
UNIT_cli_download_SRCS := tests/unit/test_cli_download.c cli/cp.c \
                          cli/cp-place.c \
                          cli/progress.c $(SESSION_UNIT_SRCS) $(ARCHIVE_SRCS)
UNIT_cli_download_LIBS := $(SESSION_LIBS) $(ARCHIVE_LIBS)

# The manual documents every command and option of the tables above (needs
# the whole command set, so the QEMU command-line code too).
UNIT_TESTS += cli_man
UNIT_cli_man_SRCS := tests/unit/test_cli_man.c \
                     $(filter-out cli/vmux.c,$(CLI_SRCS)) $(SESSION_SRCS) \
                     $(SESSION_QEMU_SRCS) $(ARCHIVE_SRCS) $(TUI_SRCS)
UNIT_cli_man_LIBS := $(SESSION_LIBS) $(ARCHIVE_LIBS) $(TUI_LIBS) $(MCP_LIBS) $(WEB_LIBS)
