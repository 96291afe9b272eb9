/*
 * detach.c: the detach key of `vmux shell`.
 *
 * One control character (default Ctrl-], as telnet and virsh console use)
 * ends the attachment; everything typed before it in the same read still
 * goes to the shell, everything after it is dropped. Keys are written as
 * "^]", "ctrl-]", "C-]" (letters in either case), or "none".
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "cli.h"

/* The control character for c in "^c", or -1 if there is none. */
static int
ctrl_of(char c)
{
	c = (char)toupper((unsigned char)c);
	if (c == '?')
		return 0x7f;
	if (c >= '@' && c <= '_')
		return c - '@';
	return -1;
}

/* Parse a key name into *key (-1: no detach key); 0 or -1 with cause. */
int
detach_key_parse(const char *s, int *key, char **cause)
{
	const char *c = NULL;
	int k;

	if (strcasecmp(s, "none") == 0) {
		*key = -1;
		return 0;
	}
	if (s[0] == '^' && s[1] != '\0' && s[2] == '\0')
		c = s + 1;
	else if (strncasecmp(s, "ctrl-", 5) == 0 && s[5] != '\0' &&
	    s[6] == '\0')
		c = s + 5;
	else if (strncasecmp(s, "c-", 2) == 0 && s[2] != '\0' && s[3] == '\0')
		c = s + 2;
	if (c == NULL || (k = ctrl_of(*c)) < 0 || k == 0 || k == '\n' ||
	    k == '\r') {
		xasprintf(cause,
		    "invalid detach key '%s': want a control key such as ^], "
		    "ctrl-a or C-x, or none",
		    s);
		return -1;
	}
	*key = k;
	return 0;
}

/* A key's name for messages ("Ctrl-]"), or "none". */
void
detach_key_name(int key, char *buf, size_t len)
{
	if (key < 0)
		snprintf(buf, len, "none");
	else if (key == 0x7f)
		snprintf(buf, len, "Ctrl-?");
	else
		snprintf(buf, len, "Ctrl-%c", (char)(key + '@'));
}

/*
 * How many bytes of buf to forward: all of them, or those before the first
 * detach key (then *found is 1). key -1 never matches.
 */
size_t
detach_scan(const uint8_t *buf, size_t len, int key, int *found)
{
	const uint8_t *p;

	*found = 0;
	if (key < 0 || (p = memchr(buf, key, len)) == NULL)
		return len;
	*found = 1;
	return (size_t)(p - buf);
}
