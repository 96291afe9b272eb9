# tests.mk: unit tests of common/ and the test runners.
UNIT_TESTS += common
UNIT_common_SRCS := tests/unit/test_common.c
UNIT_common_LIBS := -lcjson

# A hostile guest for tests/e2e/65-hostile.sh: an agent that lies
# (tests/tools/hostile-agent.c, static) in an initramfs of its own, booted
# with `vmux new --initrd`.
TEST_EXTRA += $(BUILD)/tests/hostile-initrd.img
$(BUILD)/tests/hostile-agent: $(BUILD)/obj/tests/tools/hostile-agent.o
	@mkdir -p $(@D)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) -static -o $@ $^

$(BUILD)/tests/hostile-initrd.img: $(GUEST_MODULE_DEPS) guest/mkinitrd \
    $(GUEST_OUT)/kernel.choice $(BIN)/vmux-init $(BIN)/vmux-nc \
    $(BUILD)/tests/hostile-agent
	$(if $(V),,@echo "  INITRD  $@")
	$(Q)guest/mkinitrd $(GUEST_MODULE_ARGS) --init $(BIN)/vmux-init \
	    --nc $(BIN)/vmux-nc --agent $(BUILD)/tests/hostile-agent --out $@

# tests/e2e/25-bridge-device.sh holds 300 connections open from this one
# process (tests/tools/vsock-hold.c) instead of 300 shell loops.
TEST_EXTRA += $(BUILD)/tests/vsock-hold
$(BUILD)/tests/vsock-hold: $(BUILD)/obj/tests/tools/vsock-hold.o
	@mkdir -p $(@D)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) -o $@ $^

# The MCP tests' clients (tests/mcp: the official SDK client), pinned by
# their lockfile and installed with npm ci when it changes.
MCP_NODE_STAMP := tests/mcp/node_modules/.package-lock.json
$(MCP_NODE_STAMP): tests/mcp/package-lock.json tests/mcp/package.json
	$(if $(V),,@echo "  NPM     tests/mcp")
	$(Q)cd tests/mcp && npm ci --no-audit --no-fund --no-update-notifier --loglevel=error >/dev/null
	$(Q)touch $@
TEST_EXTRA += $(MCP_NODE_STAMP)

# The browser tests' driver (tests/web: puppeteer-core, which runs Debian's
# chromium and downloads no browser), likewise.
WEB_TEST_STAMP := tests/web/node_modules/.package-lock.json
$(WEB_TEST_STAMP): tests/web/package-lock.json tests/web/package.json
	$(if $(V),,@echo "  NPM     tests/web")
	$(Q)cd tests/web && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --no-update-notifier --loglevel=error >/dev/null
	$(Q)touch $@
TEST_EXTRA += $(WEB_TEST_STAMP)
