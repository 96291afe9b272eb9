/*
 * faint.c: what libvterm 0.1.4 gets wrong, put right in the byte stream
 * before it, and what in it a guest could use to hang or crash the TUI,
 * kept from it.
 *
 * Put right: SGR 2 (faint, which it drops) becomes 11 (alternate font 1,
 * which libvterm keeps per cell and nothing else here uses) and 22 becomes
 * 22;10, so cell.c can draw font 1 as A_DIM, as tmux draws faint (a
 * colour's own parameters, 38;5;N and 38;2;R;G;B, are left alone). The
 * character sets DECSC (ESC 7) saves are sent again after DECRC (ESC 8):
 * libvterm restores the position and pen but not the G0-G3 designations
 * nor which is shifted in. DECCOLM's clearing (see DECCOLM_EFFECTS). REP
 * (CSI n b) repeats only a graphic character printed just before it
 * (ECMA-48; xterm, tmux).
 *
 * Kept out: a CSI with 16 or more separators (libvterm writes its
 * parameters into an array of 16 unchecked, then over its parser's
 * callback pointer); REP itself (its loop advances by the last glyph's
 * width and never ends after a glyph of none): the feed writes the
 * character out again instead; an unbounded cursor after ESC 8 (the feed
 * bounds it).
 *
 * To know what libvterm does with each byte, faint_filter follows its
 * parser state for state: NUL and DEL are ignored everywhere, CAN and SUB
 * cancel whatever is open, ESC starts a sequence (also inside a string),
 * other C0 controls run where they are and the sequence goes on, an ESC
 * sequence takes intermediates until a final byte (and "[", "]" or "P"
 * after them still open a CSI or a string), a CSI ends at its final byte
 * or at a byte that makes it invalid (dropped). Sequences are held until
 * whole (a CSI of more than 64 bytes is passed as it comes); strings and
 * text pass at once. The caller owns the struct faint (one per pane) and
 * the output buffer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "common/common.h"
#include "tui.h"

/*
 * libvterm 0.1.4 stores a CSI's parameters in an array of 16 without
 * checking: the 16th ';' or ':' writes past it, over the parser's callback
 * pointer (a guest printing "ESC [1;1;...;1m" crashed the TUI, or worse).
 * A CSI with more separators than this is dropped before it gets there.
 */
#define CSI_SEPS_MAX 15

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

/* A text byte libvterm prints: remember the last whole character (REP). */
static void
note_text(struct faint *f, uint8_t c)
{
	if (c < 0x80) {
		f->need = 0;
		f->last[0] = c;
		f->nlast = 1;
		f->last_ok = 1;
	} else if (c >= 0xc2 && c <= 0xf4) { /* a lead byte */
		f->need = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : 1;
		f->cur[0] = c;
		f->ncur = 1;
		f->last_ok = 0;
	} else if (c < 0xc0 && f->need > 0) { /* a continuation byte */
		f->cur[f->ncur++] = c;
		if (--f->need == 0) {
			memcpy(f->last, f->cur, (size_t)f->ncur);
			f->nlast = f->ncur;
			/* U+0080-U+009F are C1 controls, not characters */
			f->last_ok = !(f->cur[0] == 0xc2 && f->cur[1] < 0xa0);
		}
	} else {
		f->need = 0;
		f->last_ok = 0;
	}
}

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
	if ((c == 'h' || c == 'l') && deccolm(f->buf, f->n)) {
		memcpy(out + o, DECCOLM_EFFECTS, sizeof DECCOLM_EFFECTS - 1);
		o += sizeof DECCOLM_EFFECTS - 1;
	}
	return o;
}

/* An ESC sequence (intermediates in f->esc) ends with c, held until now:
 * write it out; 1 if it was DECRC (ESC 8). */
static int
esc_end(struct faint *f, uint8_t c, uint8_t *out, size_t *o)
{
	const char *scs = f->nesc == 1 ? strchr("()*+", f->esc[0]) : NULL;

	out[(*o)++] = 0x1b;
	memcpy(out + *o, f->esc, (size_t)f->nesc);
	*o += (size_t)f->nesc;
	out[(*o)++] = c;
	if (scs != NULL && c >= 0x30)
		f->g[scs - "()*+"] = (char)c; /* SCS: G0-G3 designated */
	if (f->nesc != 0)
		return 0;
	if (c == '7') { /* DECSC */
		memcpy(f->saved_g, f->g, sizeof f->g);
		f->saved_gl = f->gl;
	} else if (c == '8') { /* DECRC */
		*o += charsets_restore(f, out + *o);
		return 1;
	}
	return 0;
}

/* Is this CSI a REP (CSI n b, no leader or intermediate)? */
static int
csi_is_rep(const struct faint *f, uint8_t c)
{
	return c == 'b' && all_of(f->buf, f->n, "0123456789;:");
}

/*
 * Rewrite bytes of a pane's output into out (room for FAINT_OUT_MAX(len)
 * bytes); the number of bytes to feed libvterm. It takes all len bytes
 * (f->used says how many) unless it stops early: right after an ESC 8
 * (f->restored), or at a REP that may repeat (f->rep, its count: the
 * caller writes the character out again).
 */
size_t
faint_filter(struct faint *f, const uint8_t *in, size_t len, uint8_t *out)
{
	size_t o = 0, i;
	int is_rep;

	f->restored = f->rep = 0;
	for (i = 0; i < len; i++) {
		uint8_t c = in[i];

		if (c == 0x00 || c == 0x7f)
			continue; /* ignored by libvterm, everywhere */
		if (c == 0x18 || c == 0x1a) { /* CAN, SUB: all cancelled */
			out[o++] = c;
			f->state = FAINT_GROUND;
			f->last_ok = 0;
			continue;
		}
		if (c == 0x1b) { /* an open CSI is dropped, by libvterm too */
			if (f->state == FAINT_CSI && f->pass && !f->skip)
				out[o++] = 0x18; /* now: the ESC is held, and
				                    may never go */
			f->state = FAINT_ESC;    /* held until we know */
			f->nesc = 0;
			f->need = 0;
			continue;
		}
		if (c < 0x20 && !(c == 0x07 && f->state == FAINT_STRING)) {
			out[o++] = c; /* run where it is; a sequence goes on */
			if (c == 0x0e || c == 0x0f) /* SO, SI */
				f->gl = c == 0x0e;
			f->last_ok = 0;
			continue;
		}
		switch (f->state) {
		case FAINT_GROUND:
			out[o++] = c;
			note_text(f, c);
			break;
		case FAINT_STRING:
			if (!f->skip)
				out[o++] = c;
			if (c == 0x07)
				f->state = FAINT_GROUND;
			break;
		case FAINT_ESC:
			if (c != '[') /* a CSI decides at its end (REP) */
				f->last_ok = 0;
			if (c == '[') {
				f->state = FAINT_CSI;
				f->phase = CSI_LEADER;
				f->n = 0;
				f->seps = f->pass = f->skip = 0;
			} else if (c == ']' || c == 'P') {
				out[o++] = 0x1b;
				out[o++] = c;
				f->state = FAINT_STRING;
				f->skip = 0;
			} else if (c >= 0x20 && c <= 0x2f) {
				if (f->nesc < (int)sizeof f->esc - 1)
					f->esc[f->nesc++] = (char)c;
			} else if (c >= 0x30 && c <= 0x7e) {
				f->state = FAINT_GROUND;
				if (esc_end(f, c, out, &o)) {
					f->restored = 1;
					i++;
					goto done;
				}
			} /* else: libvterm ignores it and stays here */
			break;
		case FAINT_CSI:
			if (f->phase == CSI_LEADER) {
				if (c >= 0x3c && c <= 0x3f)
					goto keep;
				f->phase = CSI_ARGS;
			}
			if (f->phase == CSI_ARGS) {
				if (c >= '0' && c <= '9')
					goto keep;
				if (c == ';' || c == ':') {
					if (++f->seps <= CSI_SEPS_MAX)
						goto keep;
					if (f->pass && !f->skip)
						out[o++] = 0x18; /* CAN */
					f->skip = 1;
					break;
				}
				f->phase = CSI_INTERMED;
			}
			if (c >= 0x20 && c <= 0x2f)
				goto keep;
			f->state = FAINT_GROUND;
			if (c < 0x40 ||
			    c > 0x7e) { /* invalid: libvterm drops it */
				if (f->pass && !f->skip)
					out[o++] = c;
				break;
			}
			if (f->skip)
				break;
			is_rep = csi_is_rep(f, c);
			if (is_rep && !f->pass && f->last_ok) {
				int n = first_param(f->buf, f->n);
				f->rep = n == 0 ? 1 : n;
				f->last_ok = 0; /* not after this one */
				i++;
				goto done;
			}
			if (f->pass)
				out[o++] = is_rep ? 0x18 : c;
			else if (!is_rep)
				o += csi_end(f, c, out + o);
			f->last_ok = 0;
			break;
		keep:
			if (f->skip)
				break;
			if (f->pass) {
				out[o++] = c;
			} else if (f->n == sizeof f->buf) {
				/* too long to hold: libvterm gets it as it is
				 */
				out[o++] = 0x1b;
				out[o++] = '[';
				memcpy(out + o, f->buf, f->n);
				o += f->n;
				out[o++] = c;
				f->pass = 1;
			} else
				f->buf[f->n++] = (char)c;
			break;
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

/* Write bytes into libvterm as they are (whole sequences, or text). */
static void
inject(struct feed *fd, const char *seq, size_t len)
{
	vterm_input_write(fd->vt, seq, len);
}

/* The terminal was reset: whatever libvterm's parser had open is
 * cancelled, and faint starts again. */
void
feed_reset(struct feed *fd)
{
	inject(fd, "\030", 1);
	memset(&fd->f, 0, sizeof fd->f);
}

/* Where the cursor is, and the size. */
static void
cursor_and_size(struct feed *fd, VTermPos *pos, int *rows, int *cols)
{
	vterm_get_size(fd->vt, rows, cols);
	vterm_state_get_cursorpos(vterm_obtain_state(fd->vt), pos);
}

/*
 * REP n: the last character written out again, at most to the end of the
 * line (as libvterm's REP, tmux's and xterm's), so no REP reaches libvterm.
 */
static void
repeat(struct feed *fd, int n)
{
	struct faint *f = &fd->f;
	VTermPos pos;
	int rows, cols, w = 1;
	wchar_t wc;

	cursor_and_size(fd, &pos, &rows, &cols);
	if (mbtowc(&wc, (const char *)f->last, (size_t)f->nlast) > 0 &&
	    wcwidth(wc) > 1)
		w = wcwidth(wc);
	if (n > (cols - pos.col) / w)
		n = (cols - pos.col) / w;
	for (int k = 0; k < n; k++)
		inject(fd, (const char *)f->last, (size_t)f->nlast);
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
	VTermPos pos, home;
	int rows, cols, n;
	char seq[40];

	cursor_and_size(fd, &pos, &rows, &cols);
	inject(fd, "\033[r", 3);
	vterm_state_get_cursorpos(vterm_obtain_state(fd->vt), &home);
	pos.row = pos.row < 0 ? 0 : pos.row >= rows ? rows - 1 : pos.row;
	pos.col = pos.col < 0 ? 0 : pos.col >= cols ? cols - 1 : pos.col;
	n = snprintf(seq, sizeof seq, "\033[%d;%dH",
	    pos.row - home.row < 0 ? 1 : pos.row - home.row + 1,
	    pos.col - home.col < 0 ? 1 : pos.col - home.col + 1);
	inject(fd, seq, (size_t)n);
}

/* Bytes of output into libvterm. */
void
feed_write(struct feed *fd, const uint8_t *b, size_t len)
{
	while (len > 0) {
		size_t n, take = len < 4096 ? len : 4096;
		if (fd->cap < FAINT_OUT_MAX(take)) {
			fd->cap = FAINT_OUT_MAX(take);
			fd->out = xrealloc(fd->out, fd->cap);
		}
		n = faint_filter(&fd->f, b, take, fd->out);
		inject(fd, (const char *)fd->out, n);
		b += fd->f.used;
		len -= fd->f.used;
		if (fd->f.rep > 0)
			repeat(fd, fd->f.rep);
		if (fd->f.restored) {
			/* libvterm 0.1.4 does not bound what ESC 8 brings
			 * back; every CSI ends by bounding the cursor, and an
			 * unknown DEC mode does nothing else */
			VTermPos pos;
			int rows, cols;
			cursor_and_size(fd, &pos, &rows, &cols);
			if (pos.row < 0 || pos.row >= rows || pos.col < 0 ||
			    pos.col >= cols)
				inject(fd, "\033[?0h", 5);
		}
	}
}

/*
 * The terminal is now rows x cols. When it is shorter, its scroll region
 * is reset now: libvterm 0.1.4 keeps a region's top past a shorter
 * screen's bottom, and its next line feed there crashes (a negative
 * memmove). A string or long CSI open at this moment is cancelled (CAN)
 * and the rest of it dropped, so nothing is cut in two.
 */
void
feed_resize(struct feed *fd, int rows, int cols)
{
	int old_rows, old_cols;

	vterm_get_size(fd->vt, &old_rows, &old_cols);
	vterm_set_size(fd->vt, rows, cols);
	if (rows >= old_rows)
		return;
	/* what libvterm has open (a string, a CSI too long to hold) ends;
	 * what faint holds is whole when it goes, after the reset */
	inject(fd, "\030", 1);
	if (fd->f.state == FAINT_STRING ||
	    (fd->f.state == FAINT_CSI && fd->f.pass))
		fd->f.skip = 1; /* the rest of it dropped */
	fix_region(fd);
}
