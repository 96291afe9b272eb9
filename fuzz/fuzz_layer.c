/*
 * fuzz_layer.c: libFuzzer target for OCI image layers (archive/layer.c and
 * tar_extract's TAR_X_LAYER): fuzz_archive.c's harness with FUZZ_LAYER set
 * (see there): an input applied twice as stacked layers beside an empty
 * "outside", which must stay empty, with every hard link inside.
 */
#define FUZZ_LAYER 1
#include "fuzz_archive.c"
