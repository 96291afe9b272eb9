# tests.mk: unit tests of common/ and the test runners.
UNIT_TESTS += common
UNIT_common_SRCS := tests/unit/test_common.c
UNIT_common_LIBS := -lcjson
