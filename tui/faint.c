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
 * whatever came between, and loops for ever when that one has no width
 * (see note_char), so a REP after a control or a zero-width character is
 * dropped here.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "common/common.h"
#include "tui.h"

/*
 * A byte printed from the ground state: is the character it ends one
 * libvterm 0.1.4 can repeat (REP)? Its REP loop advances by the last
 * glyph's width, so a REP after a zero-width glyph (a combining mark or a
 * zero-width space printed alone), or before any glyph, never ends: a
 * guest could hang the TUI with four bytes. Only a character the C
 * library says takes columns (ASCII from space to ~, or wcwidth >= 1)
 * counts; an incomplete or invalid UTF-8 sequence does not.
 */
static void
note_char(struct faint *f, uint8_t c)
{
	if (c < 0x80) {
		f->need = 0;
		f->graphic = c >= 0x20 && c != 0x7f;
	} else if (c >= 0xc2 && c <= 0xf4) { /* a lead byte */
		f->need = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : 1;
		f->cp = c & (0x3f >> f->need);
		f->graphic = 0;
	} else if (c < 0xc0 && f->need > 0) { /* a continuation byte */
		f->cp = f->cp << 6 | (c & 0x3f);
		if (--f->need == 0)
			f->graphic = f->cp >= 0xa0 && f->cp <= 0x10ffff &&
			    wcwidth((wchar_t)f->cp) > 0;
	} else {
		f->need = 0;
		f->graphic = 0;
	}
}

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

/* After ESC 8: the saved designations and shift, sent again. */
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
	return o;
}

/* The first parameter of p[0..n) (digits up to ';'), 0 if none. */
static int
first_param(const char *p, size_t n)
{
	int v = 0;

	for (size_t i = 0; i < n && p[i] >= '0' && p[i] <= '9'; i++)
		v = v < 100000 ? v * 10 + (p[i] - '0') : v;
	return v;
}

/*
 * libvterm 0.1.4 stores a CSI's parameters in an array of 16 without
 * checking: the 16th ';' or ':' writes past it, over the parser's callback
 * pointer (a guest printing "ESC [1;1;...;1m" crashed the TUI, or worse).
 * A CSI with more separators than this is dropped before it gets there.
 */
#define CSI_SEPS_MAX 15

/* A held CSI ends with c: write it out (rewritten where it is ours). */
static size_t
csi_end(struct faint *f, uint8_t c, uint8_t *out)
{
	size_t o = 0;

	out[o++] = 0x1b;
	out[o++] = '[';
	if (c == 'm' && sgr_params(f->buf, f->n)) {
		size_t n = sgr_rewrite(f->buf, f->n, out + o), seps = 0;
		for (size_t k = 0; k < n; k++)
			seps += out[o + k] == ';' || out[o + k] == ':';
		if (seps <= CSI_SEPS_MAX)
			o += n;
		else { /* the rewrite added too many: as it came */
			memcpy(out + o, f->buf, f->n);
			o += f->n;
		}
	} else {
		memcpy(out + o, f->buf, f->n);
		o += f->n;
	}
	out[o++] = c;
	if (c == 'r' && all_of(f->buf, f->n, "0123456789;"))
		f->top = first_param(f->buf, f->n); /* DECSTBM */
	else if (c == 'p' && f->n == 1 && f->buf[0] == '!')
		f->top = 0; /* DECSTR */
	if ((c == 'h' || c == 'l') && deccolm(f->buf, f->n)) {
		memcpy(out + o, DECCOLM_EFFECTS, sizeof DECCOLM_EFFECTS - 1);
		o += sizeof DECCOLM_EFFECTS - 1;
		f->top = 0;
	}
	return o;
}

/*
 * Rewrite bytes of a pane's output into out (room for FAINT_OUT_MAX(len)
 * bytes); the number of bytes to feed libvterm. It takes all len bytes
 * (f->used says how many) unless it stops early: right after an ESC 8
 * (f->restored), or, when f->stop is set, where no sequence is open.
 *
 * libvterm's parser is followed as it goes: NUL and DEL are ignored
 * everywhere, CAN and SUB cancel a sequence, ESC starts another, and any
 * other C0 control inside a sequence is run there and the sequence goes
 * on; OSC and DCS strings print nothing. Held sequences stay in step.
 */
size_t
faint_filter(struct faint *f, const uint8_t *in, size_t len, uint8_t *out)
{
	size_t o = 0, i;

	f->restored = 0;
	for (i = 0; i < len; i++) {
		uint8_t c = in[i];
		int in_seq =
		    f->state != FAINT_GROUND && f->state != FAINT_STRING;

		if (in_seq && (c == 0x00 || c == 0x7f))
			continue; /* ignored by libvterm, even here */
		if (in_seq && (c == 0x18 || c == 0x1a)) {
			if (f->state == FAINT_CSI_PASS)
				out[o++] = c;    /* libvterm has the start */
			f->state = FAINT_GROUND; /* CAN, SUB: cancelled */
			goto next;
		}
		if (in_seq && c < 0x20 && c != 0x1b) {
			out[o++] =
			    c; /* run inside the sequence, which goes on */
			note_char(f, c);
			continue;
		}
		switch (f->state) {
		case FAINT_GROUND:
			if (c == 0x1b) {
				f->need = 0; /* a UTF-8 sequence cut short */
				f->state = FAINT_ESC; /* held until we know */
				break;
			}
			if (c == 0x0e || c == 0x0f) /* SO, SI */
				f->gl = c == 0x0e;
			note_char(f, c);
			out[o++] = c;
			break;
		case FAINT_STRING:
			if (c == 0x1b) {
				f->state =
				    FAINT_ESC; /* ESC \ ends it, or not */
				break;
			}
			out[o++] = c;
			if (c == 0x07 || c == 0x18 || c == 0x1a)
				f->state = FAINT_GROUND;
			break;
		case FAINT_ESC:
			if (c != '[') /* a CSI decides at its end (REP) */
				f->graphic = 0;
			if (c == '[') {
				f->state = FAINT_CSI;
				f->n = 0;
				f->seps = 0;
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
			f->state =
			    c == ']' || c == 'P' ? FAINT_STRING : FAINT_GROUND;
			if (c == '7') { /* DECSC */
				memcpy(f->saved_g, f->g, sizeof f->g);
				f->saved_gl = f->gl;
			} else if (c == '8') { /* DECRC */
				o += charsets_restore(f, out + o);
				f->restored = 1;
				i++;
				goto done;
			} else if (c == 'c') /* RIS */
				f->top = 0;
			break;
		case FAINT_SCS:
			out[o++] = 0x1b;
			out[o++] = (uint8_t)("()*+"[f->which]);
			if (c == 0x1b) { /* not a designation: again */
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
			    all_of(f->buf, f->n, "0123456789;:")) {
				f->state = FAINT_GROUND; /* REP: not safe */
				break;
			}
			if (c >= 0x40)
				f->graphic = 0; /* a control sequence ends */
			if (c >= 0x40 && c <= 0x7e) { /* the final byte */
				o += csi_end(f, c, out + o);
				f->state = FAINT_GROUND;
			} else if (c == 0x1b || c > 0x7e) {
				/* cut short: libvterm drops it; this again */
				f->state = FAINT_GROUND;
				i--;
			} else if ((c == ';' || c == ':') &&
			    ++f->seps > CSI_SEPS_MAX) {
				f->state = FAINT_CSI_SKIP; /* dropped whole */
			} else if (f->n == sizeof f->buf) {
				/* too long to hold: libvterm gets it as it is
				 */
				out[o++] = 0x1b;
				out[o++] = '[';
				memcpy(out + o, f->buf, f->n);
				o += f->n;
				f->state = FAINT_CSI_PASS;
				i--;
			} else
				f->buf[f->n++] = (char)c;
			break;
		case FAINT_CSI_PASS:
			if (c == 0x1b) {
				f->state = FAINT_GROUND;
				i--;
				break;
			}
			if ((c == ';' || c == ':') &&
			    ++f->seps > CSI_SEPS_MAX) {
				out[o++] = 0x18; /* CAN: libvterm drops it */
				f->state = FAINT_CSI_SKIP;
				break;
			}
			if (c >= 0x40 && c <= 0x7e) {
				/* a REP we could not look at is cancelled */
				out[o++] = c == 'b' && !f->graphic ? 0x18 : c;
				if (c == 'r')
					f->top = 1
					    << 20; /* a region, we know not
					              where: reset it */
				f->graphic = 0;
				f->state = FAINT_GROUND;
			} else
				out[o++] = c;
			break;
		case FAINT_CSI_SKIP:
			if (c == 0x1b) {
				f->state = FAINT_GROUND;
				i--;
			} else if (c >= 0x40 && c <= 0x7e) {
				f->graphic = 0;
				f->state = FAINT_GROUND;
			}
			break;
		}
	next:
		if (f->stop && f->state == FAINT_GROUND && f->need == 0) {
			i++;
			goto done;
		}
	}
done:
	f->used = i;
	return o;
}

/* A feed into vt; feed_free frees it (not vt). */
void
feed_init(struct feed *fd, VTerm *vt)
{
	memset(fd, 0, sizeof *fd);
	fd->vt = vt;
}

/* Free a feed's buffer. */
void
feed_free(struct feed *fd)
{
	free(fd->out);
	fd->out = NULL;
	fd->cap = 0;
}

/* The terminal was reset: nothing is held any more. */
void
feed_reset(struct feed *fd)
{
	memset(&fd->f, 0, sizeof fd->f);
	fd->fix_region = 0;
}

/* Inject seq (whole, at a ground point) into libvterm. */
static void
inject(struct feed *fd, const char *seq)
{
	vterm_input_write(fd->vt, seq, strlen(seq));
}

/*
 * Reset the scroll region, the cursor staying where it is: DECSTBM homes
 * it (to the origin, with DECOM), so it is put back relative to where
 * home turned out to be. A pending wrap is lost; xterm and tmux reset the
 * region on every resize anyway.
 */
static void
fix_region(struct feed *fd)
{
	VTermState *st = vterm_obtain_state(fd->vt);
	VTermPos pos, home;
	int rows, cols;
	char seq[40];

	vterm_get_size(fd->vt, &rows, &cols);
	vterm_state_get_cursorpos(st, &pos);
	inject(fd, "\033[r");
	vterm_state_get_cursorpos(st, &home);
	pos.row = pos.row < 0 ? 0 : pos.row >= rows ? rows - 1 : pos.row;
	pos.col = pos.col < 0 ? 0 : pos.col >= cols ? cols - 1 : pos.col;
	snprintf(seq, sizeof seq, "\033[%d;%dH",
	    pos.row - home.row < 0 ? 1 : pos.row - home.row + 1,
	    pos.col - home.col < 0 ? 1 : pos.col - home.col + 1);
	inject(fd, seq);
	fd->f.top = 0;
	fd->fix_region = 0;
	fd->f.stop = 0;
}

/* Is faint where libvterm's parser has no sequence open? */
static int
at_ground(const struct feed *fd)
{
	return fd->f.state == FAINT_GROUND && fd->f.need == 0;
}

/* Bytes of output into libvterm. */
void
feed_write(struct feed *fd, const uint8_t *b, size_t len)
{
	while (len > 0) {
		size_t n, want = FAINT_OUT_MAX(len < 4096 ? len : 4096);
		if (fd->cap < want) {
			fd->cap = want;
			fd->out = xrealloc(fd->out, fd->cap);
		}
		n = faint_filter(&fd->f, b, len < 4096 ? len : 4096, fd->out);
		vterm_input_write(fd->vt, (const char *)fd->out, n);
		b += fd->f.used;
		len -= fd->f.used;
		if (fd->f.restored) {
			/* libvterm 0.1.4 does not bound what ESC 8 brings
			 * back; every CSI ends by bounding the cursor, and an
			 * unknown DEC mode does nothing else */
			VTermPos pos;
			int rows, cols;
			vterm_get_size(fd->vt, &rows, &cols);
			vterm_state_get_cursorpos(
			    vterm_obtain_state(fd->vt), &pos);
			if (pos.row < 0 || pos.row >= rows || pos.col < 0 ||
			    pos.col >= cols)
				inject(fd, "\033[?0h");
		}
		if (fd->fix_region && at_ground(fd))
			fix_region(fd);
	}
}

/*
 * The terminal is now rows x cols. libvterm 0.1.4 keeps a scroll region's
 * top past a shorter screen's bottom, and its next line feed there
 * crashes (a negative memmove): such a region is reset, now or where the
 * stream next has no sequence open.
 */
void
feed_resize(struct feed *fd, int rows, int cols)
{
	vterm_set_size(fd->vt, rows, cols);
	if (fd->f.top == 0 || fd->f.top < rows)
		return;
	fd->fix_region = 1;
	if (at_ground(fd))
		fix_region(fd);
	else
		fd->f.stop = 1;
}
