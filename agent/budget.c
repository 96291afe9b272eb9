/*
 * budget.c: one memory budget for everything clients make the agent hold.
 *
 * Shell scrollback rings and their pending-input buffers (reserved whole
 * when a shell opens), attached clients' input buffers (reserved whole on
 * attach) and exec output buffers (reserved as output is kept) draw on a
 * single budget, by default a quarter of the guest's MemTotal
 * (`--memory-budget` overrides it). Past it a request is refused with a
 * clear error instead of the guest running out of memory and the OOM
 * killer choosing a victim. The counter is atomic: exec threads and the
 * event loop share it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

static size_t budget_max;   /* 0: not set yet */
static size_t budget_inuse; /* atomic */

/* A quarter of MemTotal from /proc/meminfo (64 MiB if unreadable). */
static size_t
budget_default(void)
{
	unsigned long long kb = 0;
	char line[256];
	FILE *f = fopen("/proc/meminfo", "re");

	while (f != NULL && fgets(line, sizeof line, f) != NULL) {
		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
			break;
	}
	if (f != NULL)
		fclose(f);
	if (kb == 0)
		return (size_t)64 << 20;
	return (size_t)(kb * 1024 / 4);
}

/* Set the budget in bytes (0: a quarter of the guest's memory). */
void
budget_set(size_t bytes)
{
	__atomic_store_n(
	    &budget_max, bytes ? bytes : budget_default(), __ATOMIC_SEQ_CST);
}

/* The budget in bytes. */
size_t
budget_limit(void)
{
	size_t max = __atomic_load_n(&budget_max, __ATOMIC_SEQ_CST);

	if (max == 0) {
		budget_set(0);
		max = __atomic_load_n(&budget_max, __ATOMIC_SEQ_CST);
	}
	return max;
}

/* Bytes reserved now. */
size_t
budget_used(void)
{
	return __atomic_load_n(&budget_inuse, __ATOMIC_SEQ_CST);
}

/* Reserve n bytes: 0, or -1 with cause when the budget has no room. */
int
budget_reserve(size_t n, char **cause)
{
	size_t max = budget_limit();
	size_t cur = __atomic_load_n(&budget_inuse, __ATOMIC_SEQ_CST);

	do {
		if (n > max || cur > max - n) {
			if (cause != NULL)
				xasprintf(cause,
				    "agent memory budget exhausted: %zu MiB "
				    "in use of %zu MiB, %zu MiB more asked",
				    cur >> 20, max >> 20,
				    (n + (1 << 20) - 1) >> 20);
			return -1;
		}
	} while (!__atomic_compare_exchange_n(&budget_inuse, &cur, cur + n, 0,
	    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
	return 0;
}

/*
 * Reserve as much of n bytes as the budget has room for; returns how many
 * (0 when it is full). Output kept this way is cut at the same byte
 * whatever sizes the reads came in.
 */
size_t
budget_reserve_upto(size_t n)
{
	size_t max = budget_limit();
	size_t cur = __atomic_load_n(&budget_inuse, __ATOMIC_SEQ_CST), take;

	do {
		take = cur >= max ? 0 : (max - cur < n ? max - cur : n);
		if (take == 0)
			return 0;
	} while (!__atomic_compare_exchange_n(&budget_inuse, &cur, cur + take,
	    0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
	return take;
}

/* Give back n reserved bytes. */
void
budget_release(size_t n)
{
	__atomic_sub_fetch(&budget_inuse, n, __ATOMIC_SEQ_CST);
}
