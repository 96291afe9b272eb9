/*
 * input.c: what a client sends a shell, checked the same for every surface
 * (the CLI, the TUI, MCP, the web server): a shell's id, a signal by name
 * or number, and key names, as tmux's send-keys takes them, turned into
 * the bytes a terminal (xterm, in its normal cursor mode) sends for them.
 *
 * `Enter`, `C-c`, `Up`, `M-x`, `F5`, `^D` name keys; any other word is
 * text, sent as it is (tmux does the same). Used by vmux send-keys and the
 * MCP server's shell_write. Pure: no I/O.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agent/agent.h" /* signame_parse, SHELL_ID_MAX */
#include "common/common.h"
#include "session.h"

/* Named keys and their bytes. */
static const struct key_name {
	const char *name;
	const char *bytes;
} key_names[] = {
    {"Enter", "\r"},
    {"Tab", "\t"},
    {"BTab", "\033[Z"},
    {"Space", " "},
    {"Escape", "\033"},
    {"BSpace", "\177"},
    {"Up", "\033[A"},
    {"Down", "\033[B"},
    {"Right", "\033[C"},
    {"Left", "\033[D"},
    {"Home", "\033[H"},
    {"End", "\033[F"},
    {"IC", "\033[2~"},
    {"Insert", "\033[2~"},
    {"DC", "\033[3~"},
    {"Delete", "\033[3~"},
    {"PPage", "\033[5~"},
    {"PageUp", "\033[5~"},
    {"PgUp", "\033[5~"},
    {"NPage", "\033[6~"},
    {"PageDown", "\033[6~"},
    {"PgDn", "\033[6~"},
    {"F1", "\033OP"},
    {"F2", "\033OQ"},
    {"F3", "\033OR"},
    {"F4", "\033OS"},
    {"F5", "\033[15~"},
    {"F6", "\033[17~"},
    {"F7", "\033[18~"},
    {"F8", "\033[19~"},
    {"F9", "\033[20~"},
    {"F10", "\033[21~"},
    {"F11", "\033[23~"},
    {"F12", "\033[24~"},
};

/* The control character of c (C-c, ^C), or -1 when c has none. */
static int
key_ctrl(int c)
{
	if (c == '?')
		return 0x7f;
	if (c == ' ' || c == '@' || c == '2')
		return 0;
	c = toupper(c);
	if (c >= 'A' && c <= '_')
		return c - 'A' + 1;
	return -1;
}

/*
 * The bytes of one key name into out (at most KEY_BYTES_MAX, not
 * terminated); their count, or -1 when word is not a key name (it is then
 * text). A NUL (C-Space) cannot travel in a shell's input and is -1 too.
 */
int
key_bytes(const char *word, char *out)
{
	size_t i, n;
	int c, meta = 0;

	if (strncmp(word, "M-", 2) == 0 && word[2] != '\0') {
		meta = 1;
		word += 2;
	}
	for (i = 0; i < nitems(key_names); i++) {
		if (strcasecmp(word, key_names[i].name) == 0) {
			n = strlen(key_names[i].bytes);
			out[0] = '\033';
			memcpy(out + meta, key_names[i].bytes, n);
			return (int)(n + (size_t)meta);
		}
	}
	if ((strncmp(word, "C-", 2) == 0 && strlen(word) == 3) ||
	    (word[0] == '^' && strlen(word) == 2)) {
		c = key_ctrl((unsigned char)word[word[0] == '^' ? 1 : 2]);
		if (c <= 0)
			return -1;
		out[0] = '\033';
		out[meta] = (char)c;
		return 1 + meta;
	}
	if (meta && strlen(word) == 1) { /* M-x: ESC x */
		out[0] = '\033';
		out[1] = word[0];
		return 2;
	}
	return -1;
}

/*
 * The input for send-keys' words: each a key name or, when it is none (or
 * literal is set), its text. Returns the bytes (caller frees; *len long).
 */
char *
keys_input(char *const *words, size_t n, int literal, size_t *len)
{
	char *out = NULL, key[KEY_BYTES_MAX];
	size_t used = 0, add;
	const char *src;
	int k;

	for (size_t i = 0; i < n; i++) {
		k = literal ? -1 : key_bytes(words[i], key);
		src = k >= 0 ? key : words[i];
		add = k >= 0 ? (size_t)k : strlen(words[i]);
		out = xrealloc(out, used + add + 1);
		memcpy(out + used, src, add);
		used += add;
	}
	if (out == NULL)
		out = xstrdup("");
	out[used] = '\0';
	*len = used;
	return out;
}

/*
 * Is id a shell id the agent takes (1-64 letters, digits, '.', '_', '-')?
 * 0, or -1 with cause: a usage error found here, not in the guest.
 */
int
shell_id_valid(const char *id, char **cause)
{
	size_t n = 0;

	for (const char *p = id; *p != '\0'; p++, n++) {
		if (!isalnum((unsigned char)*p) && strchr("._-", *p) == NULL)
			break;
	}
	if (n == 0 || id[n] != '\0' || n > SHELL_ID_MAX) {
		char *safe = str_printable(id, 0);
		xasprintf(cause,
		    "invalid shell id '%s': 1-%d letters, digits, '.', '_' "
		    "or '-'",
		    safe, SHELL_ID_MAX);
		free(safe);
		return -1;
	}
	return 0;
}

/*
 * A signal as kill(1) takes it: a name (INT, SIGINT, int) or a number
 * (2). Its short name ("INT") for the agent, or NULL with cause when it is
 * not one a shell may be sent.
 */
const char *
shell_signal_name(const char *s, char **cause)
{
	char *end;
	long n;
	int sig;

	if (*s >= '0' && *s <= '9') {
		n = strtol(s, &end, 10);
		sig = *end == '\0' && n > 0 && n < 65 ? (int)n : -1;
	} else
		sig = signame_parse(s);
	if (sig > 0 && signame_parse(signame_name(sig)) == sig)
		return signame_name(sig);
	xasprintf(cause,
	    "invalid signal '%s': one of HUP INT QUIT TERM KILL USR1 USR2 "
	    "TSTP CONT WINCH, by name or number",
	    s);
	return NULL;
}
