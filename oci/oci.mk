# oci.mk: images by reference (oci/): references, short names, the OCI
# layout cache and skopeo; linked into vmux with the session subsystem.
# vmux-unpack applies an image's layers (archive/'s TAR_X_LAYER).
OCI_SRCS := oci/ref.c oci/registries.c oci/layout.c oci/pull.c

UNPACK_SRCS := oci/unpack.c
PROGRAMS += $(BIN)/vmux-unpack

$(BIN)/vmux-unpack: $(patsubst %.c,$(BUILD)/obj/%.o,$(UNPACK_SRCS) \
                    $(ARCHIVE_SRCS) $(COMMON_SRCS))
	@mkdir -p $(@D)
	$(if $(V),,@echo "  LD      $@")
	$(Q)$(CC) -o $@ $^ $(ARCHIVE_LIBS)

UNIT_TESTS += oci
UNIT_oci_SRCS := tests/unit/test_oci.c $(OCI_SRCS)
UNIT_oci_LIBS := $(shell pkg-config --libs libcjson 2>/dev/null || echo -lcjson)
