/*
 * unit.h: a tiny unit-test harness.
 *
 * TEST(name) { ... } registers a test at load time; CHECK* macros record a
 * failure and return from the test. tests/unit/unit.c supplies main(), which
 * runs every test in a child process (a crash fails one test, not the run)
 * and ends with "<binary>: N passed, N failed".
 */
#ifndef VMUX_UNIT_H
#define VMUX_UNIT_H

#include <stdio.h>
#include <string.h>

struct unit_test {
	const char *name;
	void (*fn)(void);
	struct unit_test *next;
};

void unit_register(struct unit_test *);
void unit_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
extern int unit_failed;

#define TEST(name)                                                             \
	static void name(void);                                                \
	static struct unit_test name##_entry = {#name, name, NULL};            \
	__attribute__((constructor)) static void name##_register(void)         \
	{                                                                      \
		unit_register(&name##_entry);                                  \
	}                                                                      \
	static void name(void)

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			unit_fail(__FILE__, __LINE__, "%s", #cond);            \
			return;                                                \
		}                                                              \
	} while (0)

#define CHECK_INT(a, b)                                                        \
	do {                                                                   \
		long long a_ = (long long)(a), b_ = (long long)(b);            \
		if (a_ != b_) {                                                \
			unit_fail(__FILE__, __LINE__,                          \
			    "%s == %s: %lld != %lld", #a, #b, a_, b_);         \
			return;                                                \
		}                                                              \
	} while (0)

#define CHECK_STR(a, b)                                                        \
	do {                                                                   \
		const char *a_ = (a), *b_ = (b);                               \
		if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0) {         \
			unit_fail(__FILE__, __LINE__,                          \
			    "%s == %s: \"%s\" != \"%s\"", #a, #b,              \
			    a_ ? a_ : "(null)", b_ ? b_ : "(null)");           \
			return;                                                \
		}                                                              \
	} while (0)

#define CHECK_MEM(a, b, n)                                                     \
	do {                                                                   \
		if (memcmp((a), (b), (n)) != 0) {                              \
			unit_fail(__FILE__, __LINE__, "memcmp(%s, %s, %s)",    \
			    #a, #b, #n);                                       \
			return;                                                \
		}                                                              \
	} while (0)

#endif
