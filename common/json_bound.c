/*
 * json_bound.c: how many values a JSON text holds, counted before a parser
 * builds them.
 *
 * A byte cap alone does not bound what parsing costs: 16 MiB of "[0,0,..."
 * is 8 million values, and cJSON spends about 64 bytes on each. Text from
 * another host or a guest is counted first and refused past a limit. The
 * count is an upper bound (separators and openings outside strings), which
 * is all a limit needs; it does not validate.
 */
#include <stddef.h>

#include "common.h"

/*
 * Values in the JSON text s (NUL-terminated): one, plus one per ',' and
 * per '[' or '{' outside strings. Stops counting past max (returns
 * max + 1).
 */
size_t
json_values(const char *s, size_t max)
{
	size_t n = 1;
	int in_str = 0;

	for (; *s != '\0' && n <= max; s++) {
		if (in_str) {
			if (*s == '\\' && s[1] != '\0')
				s++;
			else if (*s == '"')
				in_str = 0;
			continue;
		}
		if (*s == '"')
			in_str = 1;
		else if (*s == ',' || *s == '[' || *s == '{')
			n++;
	}
	return n;
}
