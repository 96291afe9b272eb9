/*
 * keyname.c: key names as tmux spells them ("C-b", "M-x", "C-Up", "F5",
 * "Space"), for the config file, the help screen and messages. Control
 * keys are the bytes a terminal sends (C-b is 0x02); special keys are
 * KEYC_* values with modifier bits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/common.h"
#include "tui.h"

static const struct {
	const char *name;
	int key;
} key_names[] = {
    {"Up", KEYC_UP},
    {"Down", KEYC_DOWN},
    {"Left", KEYC_LEFT},
    {"Right", KEYC_RIGHT},
    {"Home", KEYC_HOME},
    {"End", KEYC_END},
    {"PPage", KEYC_PPAGE},
    {"PageUp", KEYC_PPAGE},
    {"PgUp", KEYC_PPAGE},
    {"NPage", KEYC_NPAGE},
    {"PageDown", KEYC_NPAGE},
    {"PgDn", KEYC_NPAGE},
    {"IC", KEYC_IC},
    {"Insert", KEYC_IC},
    {"DC", KEYC_DC},
    {"Delete", KEYC_DC},
    {"BTab", KEYC_BTAB},
    {"BSpace", KEYC_BSPACE},
    {"Enter", 0x0d},
    {"Escape", 0x1b},
    {"Tab", 0x09},
    {"Space", 0x20},
};

/* Decode one UTF-8 character that is the whole of s; -1 if it is not. */
static int
utf8_one(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	int n, c;

	if (u[0] == 0)
		return -1;
	if (u[0] < 0x80)
		n = 1, c = u[0];
	else if ((u[0] & 0xe0) == 0xc0)
		n = 2, c = u[0] & 0x1f;
	else if ((u[0] & 0xf0) == 0xe0)
		n = 3, c = u[0] & 0x0f;
	else if ((u[0] & 0xf8) == 0xf0)
		n = 4, c = u[0] & 0x07;
	else
		return -1;
	for (int i = 1; i < n; i++) {
		if ((u[i] & 0xc0) != 0x80)
			return -1;
		c = (c << 6) | (u[i] & 0x3f);
	}
	return u[n] == '\0' && c < 0x110000 ? c : -1;
}

/*
 * Parse a key name into *key: 0, or -1 with cause. "C-x" is the control
 * byte for letters and @[\]^_ (and C-Space), else a CTRL modifier bit.
 */
int
key_parse(const char *name, int *key, char **cause)
{
	const char *s = name;
	int mods = 0, k = -1;

	if (s[0] == '^' && s[1] != '\0' && s[2] == '\0') {
		mods = KEYC_CTRL;
		s++;
	}
	for (;;) {
		if (strncmp(s, "C-", 2) == 0 && s[2] != '\0')
			mods |= KEYC_CTRL;
		else if (strncmp(s, "M-", 2) == 0 && s[2] != '\0')
			mods |= KEYC_META;
		else if (strncmp(s, "S-", 2) == 0 && s[2] != '\0')
			mods |= KEYC_SHIFT;
		else
			break;
		s += 2;
	}
	for (size_t i = 0; i < nitems(key_names); i++)
		if (strcasecmp(s, key_names[i].name) == 0)
			k = key_names[i].key;
	if (k < 0 && (s[0] == 'F' || s[0] == 'f') && s[1] >= '1' &&
	    s[1] <= '9') {
		char *end;
		long f = strtol(s + 1, &end, 10);
		if (*end == '\0' && f >= 1 && f <= 12)
			k = KEYC_F1 + (int)f - 1;
	}
	if (k < 0)
		k = utf8_one(s);
	if (k < 0 || *s == '\0') {
		xasprintf(cause, "unknown key \"%s\"", name);
		return -1;
	}
	if (mods & KEYC_CTRL) {
		int c = k >= 'a' && k <= 'z' ? k - 0x20 : k;
		if (k == ' ' || k == '@')
			k = 0, mods &= ~KEYC_CTRL;
		else if ((c >= 'A' && c <= 'Z') || (c >= '[' && c <= '_'))
			k = c - 0x40, mods &= ~KEYC_CTRL;
		else if (k == '?')
			k = 0x7f, mods &= ~KEYC_CTRL;
	}
	*key = k | mods;
	return 0;
}

/* The canonical name of key, which key_parse reads back. */
void
key_string(int key, char *buf, size_t len)
{
	int k = key & KEYC_MASK, ctrl = (key & KEYC_CTRL) != 0;
	char base[16];

	base[0] = '\0';
	for (size_t i = 0; i < nitems(key_names); i++)
		if (key_names[i].key == k) {
			snprintf(base, sizeof base, "%s", key_names[i].name);
			break;
		}
	if (base[0] != '\0')
		;
	else if (k >= KEYC_F1 && k < KEYC_F1 + 12)
		snprintf(base, sizeof base, "F%d", k - KEYC_F1 + 1);
	else if (k == 0)
		ctrl = 1, snprintf(base, sizeof base, "Space");
	else if (k < 0x20)
		ctrl = 1,
		snprintf(base, sizeof base, "%c",
		    k + 0x40 >= 'A' && k + 0x40 <= 'Z' ? k + 0x60 : k + 0x40);
	else if (k == 0x7f)
		ctrl = 1, snprintf(base, sizeof base, "?");
	else if (k < 0x80)
		snprintf(base, sizeof base, "%c", k);
	else {
		/* UTF-8 of the code point */
		char *b = base;
		if (k < 0x800) {
			*b++ = (char)(0xc0 | (k >> 6));
		} else if (k < 0x10000) {
			*b++ = (char)(0xe0 | (k >> 12));
			*b++ = (char)(0x80 | ((k >> 6) & 0x3f));
		} else {
			*b++ = (char)(0xf0 | (k >> 18));
			*b++ = (char)(0x80 | ((k >> 12) & 0x3f));
			*b++ = (char)(0x80 | ((k >> 6) & 0x3f));
		}
		*b++ = (char)(0x80 | (k & 0x3f));
		*b = '\0';
	}
	snprintf(buf, len, "%s%s%s%s", ctrl ? "C-" : "",
	    key & KEYC_META ? "M-" : "", key & KEYC_SHIFT ? "S-" : "", base);
}

/* Modifier bits of a key as libvterm wants them. */
static VTermModifier
key_mod(int key)
{
	VTermModifier m = VTERM_MOD_NONE;

	if (key & KEYC_CTRL)
		m |= VTERM_MOD_CTRL;
	if (key & KEYC_META)
		m |= VTERM_MOD_ALT;
	if (key & KEYC_SHIFT)
		m |= VTERM_MOD_SHIFT;
	return m;
}

/*
 * Have libvterm encode key for the modes the program on vt set
 * (application cursor keys, keypad); the bytes come out of its output
 * callback. Control bytes are sent as they are.
 */
void
key_encode(VTerm *vt, int key)
{
	int k = key & KEYC_MASK;
	VTermModifier m = key_mod(key);
	VTermKey vk = VTERM_KEY_NONE;

	switch (k) {
	case KEYC_UP:
		vk = VTERM_KEY_UP;
		break;
	case KEYC_DOWN:
		vk = VTERM_KEY_DOWN;
		break;
	case KEYC_LEFT:
		vk = VTERM_KEY_LEFT;
		break;
	case KEYC_RIGHT:
		vk = VTERM_KEY_RIGHT;
		break;
	case KEYC_HOME:
		vk = VTERM_KEY_HOME;
		break;
	case KEYC_END:
		vk = VTERM_KEY_END;
		break;
	case KEYC_PPAGE:
		vk = VTERM_KEY_PAGEUP;
		break;
	case KEYC_NPAGE:
		vk = VTERM_KEY_PAGEDOWN;
		break;
	case KEYC_IC:
		vk = VTERM_KEY_INS;
		break;
	case KEYC_DC:
		vk = VTERM_KEY_DEL;
		break;
	case KEYC_BTAB:
		vk = VTERM_KEY_TAB;
		m |= VTERM_MOD_SHIFT;
		break;
	case KEYC_BSPACE:
		vk = VTERM_KEY_BACKSPACE;
		break;
	case 0x0d:
		vk = VTERM_KEY_ENTER;
		break;
	case 0x09:
		vk = VTERM_KEY_TAB;
		break;
	case 0x1b:
		vk = VTERM_KEY_ESCAPE;
		break;
	case 0x7f:
		vk = VTERM_KEY_BACKSPACE;
		break;
	default:
		if (k >= KEYC_F1 && k < KEYC_F1 + 12)
			vk = VTERM_KEY_FUNCTION((int)(k - KEYC_F1 + 1));
		break;
	}
	if (vk != VTERM_KEY_NONE) {
		vterm_keyboard_key(vt, vk, m);
		return;
	}
	if (k >= KEYC_BASE)
		return;
	if (k < 0x20 && !(key & KEYC_META)) {
		/* a control letter: libvterm wants it lower case with CTRL */
		vterm_keyboard_unichar(
		    vt, k == 0 ? ' ' : (uint32_t)k + 0x60, VTERM_MOD_CTRL);
		return;
	}
	if (k < 0x20) {
		/* M-C-x: libvterm wants the letter, lower case, with CTRL */
		k = k == 0 ? ' ' : k + 0x60;
		m |= VTERM_MOD_CTRL;
	}
	vterm_keyboard_unichar(vt, (uint32_t)k, m);
}
