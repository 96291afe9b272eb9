# vmux: top-level build. Each subsystem has its own fragment (*/*.mk) that
# adds programs, libraries and unit tests; this file holds the shared rules.
#
#   make            build host programs, the agent and the default guest image
#   make run        install missing Debian packages, build, open the default session
#   make test       install missing packages, build, run every test
#   make bench      print benchmark figures (not part of make test)
#   make install    PREFIX=/usr/local DESTDIR=
#
# BUILD selects the output folder, so parallel builds can keep apart.

BUILD     ?= build
PREFIX    ?= /usr/local
DESTDIR   ?=
CC        ?= cc
BIN        = $(BUILD)/bin

PKGS      := libcjson libuv vterm ncursesw zlib libwebsockets
# Asked per package: one missing package must not empty the others' flags.
PKG_CFLAGS := $(strip $(foreach p,$(PKGS),$(shell pkg-config --cflags $(p) 2>/dev/null)))
WARN       = -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -Wformat-security
CFLAGS    ?= -O2 -g
ALL_CFLAGS = -std=gnu11 -D_GNU_SOURCE $(WARN) $(CFLAGS) -I. \
             $(PKG_CFLAGS) -MMD -MP
SAN_FLAGS  = -fsanitize=address,undefined -fno-omit-frame-pointer \
             -fno-sanitize-recover=undefined
TSAN_FLAGS = -fsanitize=thread -fno-omit-frame-pointer
VERSION   := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
ALL_CFLAGS += -DVMUX_VERSION='"$(VERSION)"'

# Building without the build dependencies stops with one line saying what
# to run, not a compiler error. Goals that install them are exempt; a
# recursive make (make test's build step) inherits the answer.
NODEPS_GOALS := deps run test clean format check-format print-%
ifeq ($(filter $(NODEPS_GOALS),$(MAKECMDGOALS)),)
ifndef VMUX_DEPS_OK
DEPS_MISSING := $(shell scripts/install-deps --check-build 2>/dev/null)
ifneq ($(strip $(DEPS_MISSING)),)
$(error missing build dependencies: $(strip $(DEPS_MISSING)); run 'make deps' (or 'make run' / 'make test'), which installs them)
endif
endif
endif
export VMUX_DEPS_OK := 1

# Filled in by the fragments.
PROGRAMS   :=
UNIT_TESTS :=
GUEST      :=

COMMON_SRCS := common/xmalloc.c common/log.c common/util.c \
               common/printable.c common/json_bound.c \
               common/headtail.c common/sha256.c

.PHONY: all run test test-cluster unit unit-asan e2e bench bench-tui fuzz install clean deps image-debian \
        format check-format
all:

-include proto/proto.mk
-include archive/archive.mk
-include oci/oci.mk
-include agent/agent.mk
-include session/session.mk
-include session/bridge/bridge.mk
-include tui/tui.mk
-include mcp/mcp.mk
-include web/web.mk
-include cli/cli.mk
-include guest/guest.mk
-include qemu/qemu.mk
-include tests/tests.mk
-include bench/bench.mk
-include fuzz/fuzz.mk

all: $(PROGRAMS) $(GUEST)

# Objects: normal and sanitised builds keep separate trees.
# `make V=1` shows whole command lines.
Q = $(if $(V),,@)
$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(if $(V),,@echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/asan/%.o: %.c
	@mkdir -p $(@D)
	$(if $(V),,@echo "  CC-SAN  $<")
	$(Q)$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -c -o $@ $<

$(BUILD)/tsan/%.o: %.c
	@mkdir -p $(@D)
	$(if $(V),,@echo "  CC-TSAN $<")
	$(Q)$(CC) $(ALL_CFLAGS) $(TSAN_FLAGS) -c -o $@ $<

objs = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
asan_objs = $(patsubst %.c,$(BUILD)/asan/%.o,$(1))

# Unit test binaries: UNIT_TESTS += name, UNIT_name_SRCS (tests and code
# under test), UNIT_name_LIBS (linker flags). Each links tests/unit/unit.c.
define unit_rule
$(BUILD)/tests/unit-$(1): $(call objs,tests/unit/unit.c $(UNIT_$(1)_SRCS) $(COMMON_SRCS))
	@mkdir -p $$(@D)
	$$(CC) -o $$@ $$^ $$(UNIT_$(1)_LIBS)
$(BUILD)/tests/asan-unit-$(1): $(call asan_objs,tests/unit/unit.c $(UNIT_$(1)_SRCS) $(COMMON_SRCS))
	@mkdir -p $$(@D)
	$$(CC) $(SAN_FLAGS) -o $$@ $$^ $$(UNIT_$(1)_LIBS)
endef
$(foreach t,$(UNIT_TESTS),$(eval $(call unit_rule,$(t))))

UNIT_BINS      = $(foreach t,$(UNIT_TESTS),$(BUILD)/tests/unit-$(t))
UNIT_ASAN_BINS = $(foreach t,$(UNIT_TESTS),$(BUILD)/tests/asan-unit-$(t))

deps:
	@scripts/install-deps

run: deps
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) scripts/run-default

# The Debian 12 guest image (vmux new --image debian-12), with mmdebstrap.
image-debian: deps
	@BUILD=$(BUILD) scripts/image-debian

test: deps
	@$(MAKE) --no-print-directory all $(UNIT_BINS) $(UNIT_ASAN_BINS) $(TEST_EXTRA)
	@BUILD=$(BUILD) tests/run-all

# A Slurm cluster's slower checks (tests/cluster): CI runs them after test.
test-cluster: deps
	@$(MAKE) --no-print-directory all $(TEST_EXTRA)
	@BUILD=$(BUILD) tests/run-all cluster

unit: $(UNIT_BINS)
	@BUILD=$(BUILD) tests/run-all unit

unit-asan: $(UNIT_ASAN_BINS)
	@BUILD=$(BUILD) tests/run-all unit-asan

e2e: all $(TEST_EXTRA)
	@BUILD=$(BUILD) tests/run-all e2e

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

check-format:
	@clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

# Programs go to bin/, the guest image to share/vmux/guest/ (where vmux looks
# for it relative to its own binary), man pages to share/man/.
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/vmux/guest \
	    $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(PROGRAMS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(filter-out $(WEB_ASSETS),$(GUEST)) \
	    $(DESTDIR)$(PREFIX)/share/vmux/guest/
	install -d $(DESTDIR)$(PREFIX)/share/vmux/web/xterm
	install -m 644 $(WEB_PAGES) $(DESTDIR)$(PREFIX)/share/vmux/web/
	install -m 644 $(WEB_XTERM) $(DESTDIR)$(PREFIX)/share/vmux/web/xterm/
	install -m 644 $(wildcard man/*.1) $(DESTDIR)$(PREFIX)/share/man/man1/

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj $(BUILD)/asan $(BUILD)/tsan -name '*.d' 2>/dev/null)

# `make print-VAR` shows a variable's value (the build tests use it).
print-%:
	@echo '$($*)'
