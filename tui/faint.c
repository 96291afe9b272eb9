/*
 * faint.c: what libvterm 0.1.4 gets wrong, put right in the byte stream
 * before it: SGR 2 (faint, which it drops) and the character sets DECSC
 * (ESC 7) saves and DECRC (ESC 8) restores (it restores the position and
 * pen but not the G0-G3 designations nor which is shifted in, so vttest's
 * save/restore screen drew half its line-drawing row as 'q').
 *
 * Also DECCOLM's clearing (see DECCOLM_EFFECTS), and REP (CSI n b): it
 * repeats the preceding character only if a graphic character precedes it
 * (ECMA-48; xterm, tmux); libvterm 0.1.4 repeats the last one printed
 * whatever came between, so a REP after a control is dropped here.
 *
 * Character sets: designations (ESC ( ) * + F) and shifts (SO, SI) are
 * noted as they pass; at ESC 7 they are saved, and after ESC 8 they are
 * sent again, so libvterm ends up where a VT100 would (and the cursor is
 * bounded to the screen: charsets_restore).
 *
 * Faint: before a pane's bytes reach libvterm, SGR sequences are rewritten: 2
 * becomes 11 (alternate font 1, which libvterm keeps per cell and nothing
 * else here uses) and 22 (normal intensity) becomes 22;10, so the cell
 * converter (cell.c) can draw font 1 as A_DIM, as tmux draws faint. A
 * colour's own parameters (38;5;N, 38;2;R;G;B, and 48, 58) are left alone.
 * Sequences split across reads are held until whole; anything that is not
 * a plain CSI ... m passes through byte for byte. The caller owns the
 * struct faint (one per pane) and the output buffer.
 */
#include <string.h>

#include "tui.h"

/* Are all of p[0..n) in set? (p is not a C string.) */
static int
all_of(const char *p, size_t n, const char *set)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] == '\0' || strchr(set, p[i]) == NULL)
			return 0;
	return 1;
}

/* Is p[0..n) one SGR parameter list (digits, ';', ':') and nothing else? */
static int
sgr_params(const char *p, size_t n)
{
	return all_of(p, n, "0123456789;:");
}

/* Append the rewritten parameters of p[0..n) to out; the bytes written. */
static size_t
sgr_rewrite(const char *p, size_t n, uint8_t *out)
{
	size_t o = 0, i = 0, skip = 0;

	while (i <= n) {
		size_t end = i;
		while (end < n && p[end] != ';')
			end++;
		/* token p[i..end) */
		if (skip > 0) {
			skip--;
		} else if (end - i == 1 && p[i] == '2') {
			memcpy(out + o, "11", 2);
			o += 2;
			goto next;
		} else if (end - i == 2 && p[i] == '2' && p[i + 1] == '2') {
			memcpy(out + o, "22;10", 5);
			o += 5;
			goto next;
		} else if (end - i == 2 &&
		    (p[i] == '3' || p[i] == '4' || p[i] == '5') &&
		    p[i + 1] == '8') {
			/* 38;5;N or 38;2;R;G;B: the next ones are a colour */
			if (end + 2 <= n && p[end + 1] == '5' &&
			    (end + 2 == n || p[end + 2] == ';'))
				skip = 2; /* 5, N */
			else if (end + 2 <= n && p[end + 1] == '2' &&
			    (end + 2 == n || p[end + 2] == ';'))
				skip = 4; /* 2, R, G, B */
		}
		memcpy(out + o, p + i, end - i);
		o += end - i;
	next:
		if (end < n)
			out[o++] = ';';
		i = end + 1;
	}
	return o;
}

/*
 * DECCOLM (mode 3) clears the screen, resets the margins and homes the
 * cursor on a VT100 (and in xterm and tmux) even when the width stays;
 * libvterm 0.1.4 ignores it, and vttest relies on the clearing.
 */
#define DECCOLM_EFFECTS "\033[r\033[H\033[2J"

/* Is p[0..n) "?" and a mode list holding 3 (CSI ? ... 3 ... h or l)? */
static int
deccolm(const char *p, size_t n)
{
	size_t i = 1;

	if (n < 2 || p[0] != '?' || !all_of(p + 1, n - 1, "0123456789;"))
		return 0;
	while (i < n) {
		size_t end = i;
		while (end < n && p[end] != ';')
			end++;
		if (end - i == 1 && p[i] == '3')
			return 1;
		i = end + 1;
	}
	return 0;
}

/*
 * After ESC 8: the saved designations and shift, sent again; then a
 * sequence that does nothing (an unknown DEC mode) but makes libvterm
 * bound the cursor, as it does after every CSI and not after ESC 8. A
 * cursor saved before the screen shrank would otherwise come back past
 * the bottom, where libvterm 0.1.4 reads and writes outside its arrays.
 */
static size_t
charsets_restore(const struct faint *f, uint8_t *out)
{
	static const char intro[4] = {'(', ')', '*', '+'};
	size_t o = 0;

	for (int i = 0; i < 4; i++) {
		out[o++] = 0x1b;
		out[o++] = (uint8_t)intro[i];
		out[o++] = (uint8_t)(f->saved_g[i] != 0 ? f->saved_g[i] : 'B');
	}
	out[o++] = f->saved_gl ? 0x0e : 0x0f;
	memcpy(out + o, "\033[?0h", 5);
	return o + 5;
}

/*
 * Rewrite len bytes of a pane's output into out (room for
 * FAINT_OUT_MAX(len) bytes); the number of bytes to feed libvterm.
 */
size_t
faint_filter(struct faint *f, const uint8_t *in, size_t len, uint8_t *out)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		uint8_t c = in[i];

		switch (f->state) {
		case FAINT_GROUND:
			if (c == 0x1b) {
				f->state = FAINT_ESC; /* held until we know */
				break;
			}
			if (c == 0x0e || c == 0x0f) /* SO, SI */
				f->gl = c == 0x0e;
			f->graphic = c >= 0x20 && c != 0x7f;
			out[o++] = c;
			break;
		case FAINT_ESC:
			if (c != '[') /* a CSI decides at its end (REP) */
				f->graphic = 0;
			if (c == '[') {
				f->state = FAINT_CSI;
				f->n = 0;
				break;
			}
			if (c == '(' || c == ')' || c == '*' || c == '+') {
				f->state = FAINT_SCS;
				f->which = c == '(' ? 0
				    : c == ')'      ? 1
				    : c == '*'      ? 2
				                    : 3;
				break;
			}
			out[o++] = 0x1b;
			if (c == 0x1b)
				break; /* another ESC: hold that one */
			out[o++] = c;
			f->state = FAINT_GROUND;
			if (c == '7') { /* DECSC */
				memcpy(f->saved_g, f->g, sizeof f->g);
				f->saved_gl = f->gl;
			} else if (c == '8') /* DECRC */
				o += charsets_restore(f, out + o);
			break;
		case FAINT_SCS:
			out[o++] = 0x1b;
			out[o++] = (uint8_t)("()*+"[f->which]);
			if (c <
			    0x20) { /* not a designation: again, from ground */
				f->state = FAINT_GROUND;
				i--;
				break;
			}
			out[o++] = c;
			f->g[f->which] = (char)c;
			f->state = FAINT_GROUND;
			break;
		case FAINT_CSI:
			if (c == 'b' && !f->graphic &&
			    all_of(f->buf, f->n, "0123456789")) {
				f->state = FAINT_GROUND; /* REP of nothing */
				break;
			}
			if (c >= 0x40 || c < 0x20)
				f->graphic = 0; /* a control sequence ends */
			if (c >= 0x40 && c <= 0x7e) { /* the final byte */
				out[o++] = 0x1b;
				out[o++] = '[';
				if (c == 'm' && sgr_params(f->buf, f->n))
					o += sgr_rewrite(f->buf, f->n, out + o);
				else {
					memcpy(out + o, f->buf, f->n);
					o += f->n;
				}
				out[o++] = c;
				f->state = FAINT_GROUND;
				if ((c == 'h' || c == 'l') &&
				    deccolm(f->buf, f->n)) {
					memcpy(out + o, DECCOLM_EFFECTS,
					    sizeof DECCOLM_EFFECTS - 1);
					o += sizeof DECCOLM_EFFECTS - 1;
				}
			} else if (c < 0x20 || f->n == sizeof f->buf) {
				/* not one of ours: as it came, byte for byte */
				out[o++] = 0x1b;
				out[o++] = '[';
				memcpy(out + o, f->buf, f->n);
				o += f->n;
				f->state = FAINT_GROUND;
				i--; /* this byte again, from the ground */
			} else
				f->buf[f->n++] = (char)c;
			break;
		}
	}
	return o;
}
