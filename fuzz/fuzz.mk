# fuzz.mk: libFuzzer targets, one per fuzz/fuzz_NAME.c (clang, ASan+UBSan).
#
# A target links fuzz/fuzz_NAME.c, $(FUZZ_fuzz_NAME_SRCS) and common/, with
# $(FUZZ_fuzz_NAME_LIBS); set those two in the subsystem's own .mk (included
# before this file). Optional companions:
#   fuzz/seed_fuzz_NAME.sh DIR   writes seed inputs into DIR (run at build)
#   fuzz/fuzz_NAME.dict          a libFuzzer dictionary
#   FUZZ_fuzz_NAME_ARGS          extra libFuzzer flags
#
#   make fuzz         run every target FUZZ_TIME seconds (default 600)
#   make fuzz-smoke   run every target FUZZ_SMOKE_TIME seconds (default 6),
#                     ending with "fuzz-smoke: N passed, N failed"
#   make fuzz-build   just build them
#
# Each target's corpus grows in $(BUILD)/fuzz/corpus-NAME (kept between
# runs); crashes land in $(BUILD)/fuzz/artifacts-NAME/; FUZZ_SCRATCH names
# a folder the target may use for temporary files. Targets may confine their
# writes to these folders (fuzz_archive does, with Landlock).

FUZZ_CC         ?= clang
FUZZ_TIME       ?= 600
FUZZ_SMOKE_TIME ?= 6
FUZZ_SAN         = -fsanitize=fuzzer,address,undefined -fno-omit-frame-pointer \
                   -fno-sanitize-recover=undefined
FUZZ_CFLAGS      = $(filter-out -MMD -MP,$(ALL_CFLAGS)) -O1 -g $(FUZZ_SAN)
FUZZ_DIR         = $(BUILD)/fuzz
FUZZ_TARGETS    := $(patsubst fuzz/%.c,%,$(wildcard fuzz/fuzz_*.c))
FUZZ_BINS        = $(addprefix $(FUZZ_DIR)/,$(FUZZ_TARGETS))
FUZZ_HEADERS    := $(wildcard */*.h */*/*.h)

.PHONY: fuzz fuzz-smoke fuzz-build

# fuzz_rule NAME: the binary and its generated seed folder.
define fuzz_rule
$(FUZZ_DIR)/$(1): fuzz/$(1).c $(FUZZ_$(1)_SRCS) $(COMMON_SRCS) $(FUZZ_HEADERS)
	@mkdir -p $$(@D)
	$(if $(V),,@echo "  FUZZ-CC $$@")
	$$(Q)$(FUZZ_CC) $$(FUZZ_CFLAGS) -o $$@ fuzz/$(1).c \
	    $(FUZZ_$(1)_SRCS) $(COMMON_SRCS) $(FUZZ_$(1)_LIBS)
$(FUZZ_DIR)/seed-$(1)/.done: $(wildcard fuzz/seed_$(1).sh)
	@rm -rf $$(@D) && mkdir -p $$(@D)
	$(if $(wildcard fuzz/seed_$(1).sh),@sh fuzz/seed_$(1).sh $$(@D))
	@touch $$@
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call fuzz_rule,$(t))))

# fuzz_cmd NAME SECONDS: the command line of one run.
fuzz_cmd = mkdir -p $(FUZZ_DIR)/corpus-$(1) $(FUZZ_DIR)/artifacts-$(1) && \
	FUZZ_SCRATCH=$(FUZZ_DIR)/scratch-$(1) $(FUZZ_DIR)/$(1) -max_total_time=$(2) -timeout=30 -rss_limit_mb=2048 \
	    -print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/artifacts-$(1)/ \
	    $(if $(wildcard fuzz/$(1).dict),-dict=fuzz/$(1).dict) \
	    $(FUZZ_$(1)_ARGS) \
	    $(FUZZ_DIR)/corpus-$(1) $(FUZZ_DIR)/seed-$(1)

FUZZ_SEEDS = $(foreach t,$(FUZZ_TARGETS),$(FUZZ_DIR)/seed-$(t)/.done)

fuzz-build: $(FUZZ_BINS) $(FUZZ_SEEDS)

fuzz: fuzz-build
	@set -e; $(foreach t,$(FUZZ_TARGETS),\
	    echo "== $(t) ($(FUZZ_TIME) s)"; $(call fuzz_cmd,$(t),$(FUZZ_TIME));)

# Logs go to $(FUZZ_DIR)/smoke-NAME.log; a failing target prints its tail.
fuzz-smoke: fuzz-build
	@pass=0; fail=0; \
	$(foreach t,$(FUZZ_TARGETS),\
	    if ( $(call fuzz_cmd,$(t),$(FUZZ_SMOKE_TIME)) ) \
	        > $(FUZZ_DIR)/smoke-$(t).log 2>&1; then \
	        pass=$$((pass + 1)); echo "ok   $(t)"; \
	    else \
	        fail=$$((fail + 1)); echo "FAIL $(t)"; \
	        tail -n 40 $(FUZZ_DIR)/smoke-$(t).log; \
	    fi;) \
	echo "fuzz-smoke: $$pass passed, $$fail failed"; \
	[ $$fail -eq 0 ]
