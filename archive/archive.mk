# archive.mk: the tar extract/export module shared by vmux-agent and the CLI.
# Link $(ARCHIVE_SRCS) with $(ARCHIVE_LIBS) (zlib, static when libz.a exists).
ARCHIVE_SRCS := archive/tar_extract.c archive/tar_export.c archive/gz.c \
                archive/archive_hdr.c archive/archive_fs.c archive/archive_cp.c \
                archive/layer.c
ZLIB_LIBDIR  := $(shell pkg-config --variable=libdir zlib 2>/dev/null)
ARCHIVE_LIBS := $(if $(wildcard $(ZLIB_LIBDIR)/libz.a),-l:libz.a,-lz)

UNIT_TESTS += archive
UNIT_archive_SRCS := $(sort $(wildcard tests/unit/test_archive*.c)) \
                     $(ARCHIVE_SRCS)
UNIT_archive_LIBS := $(ARCHIVE_LIBS)

# fuzz/fuzz.mk builds fuzz/fuzz_archive.c with these.
FUZZ_fuzz_archive_SRCS := $(ARCHIVE_SRCS)
FUZZ_fuzz_archive_LIBS := -lz
FUZZ_fuzz_layer_SRCS := $(ARCHIVE_SRCS)
FUZZ_fuzz_layer_LIBS := -lz
