/*
 * sb.c: a pane's scrollback: the lines libvterm pushes off the top of the
 * screen, kept compactly and bounded by bytes.
 *
 * A line is stored as attribute runs of UTF-8 text instead of libvterm's
 * 40-byte cells: a header (width, the colours of the trimmed tail), then
 * per run its colours and attributes (10 bytes) and its text, where a
 * blank cell is a 0 byte, a wide cell is prefixed by 2 (its right half is
 * not stored) and each combining character by 1. Trailing blanks with
 * default colours are trimmed. An 80-column line of plain text costs about
 * 100 bytes with the ring's own overhead.
 *
 * Lines live in a ring of pointers; pushing is O(1) (amortised), and the
 * oldest lines go once the accounted bytes pass the limit. A single line
 * larger than the limit is still kept (the newest line always is).
 */
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "tui.h"

#define LINE_HDR     10 /* u16 width, tail fg, tail bg */
#define RUN_HDR      12 /* fg, bg, u16 attrs, u16 text bytes */
#define LINE_EXTRA   (sizeof(struct sbline) + 16 + sizeof(void *))
#define MARK_BLANK   0x00
#define MARK_COMBINE 0x01
#define MARK_WIDE    0x02

struct sbline {
	uint32_t len;
	uint8_t data[];
};

struct sb {
	struct sbline **ring;
	size_t cap, head, count; /* oldest at head */
	size_t bytes, max;
	uint8_t *tmp; /* encoding buffer */
	size_t tmp_cap;
};

/* A scrollback holding at most max_bytes (accounted) of lines. */
struct sb *
sb_new(size_t max_bytes)
{
	struct sb *sb = xcalloc(1, sizeof *sb);

	sb->max = max_bytes;
	return sb;
}

/* The bytes a stored line accounts for. */
static size_t
line_cost(const struct sbline *l)
{
	return l->len + LINE_EXTRA;
}

/* Drop the oldest line. */
static void
sb_drop_oldest(struct sb *sb)
{
	struct sbline *l = sb->ring[sb->head];

	sb->bytes -= line_cost(l);
	free(l);
	sb->ring[sb->head] = NULL;
	sb->head = (sb->head + 1) % sb->cap;
	sb->count--;
}

/* Evict until within the limit (the newest line stays). */
static void
sb_evict(struct sb *sb)
{
	while (sb->count > 1 && sb->bytes > sb->max)
		sb_drop_oldest(sb);
}

/* Free everything. */
void
sb_free(struct sb *sb)
{
	if (sb == NULL)
		return;
	sb_clear(sb);
	free(sb->ring);
	free(sb->tmp);
	free(sb);
}

/* Forget every line. */
void
sb_clear(struct sb *sb)
{
	while (sb->count > 0)
		sb_drop_oldest(sb);
	sb->head = 0;
}

/* A new limit; lines over it go at once. */
void
sb_set_max(struct sb *sb, size_t max_bytes)
{
	sb->max = max_bytes;
	sb_evict(sb);
}

/* Lines kept. */
size_t
sb_count(const struct sb *sb)
{
	return sb->count;
}

/* Bytes accounted for them. */
size_t
sb_bytes(const struct sb *sb)
{
	return sb->bytes;
}

/* The limit. */
size_t
sb_max(const struct sb *sb)
{
	return sb->max;
}

/* Room for n more bytes in the encoding buffer. */
static void
tmp_need(struct sb *sb, size_t used, size_t n)
{
	if (used + n > sb->tmp_cap) {
		sb->tmp_cap = (used + n) * 2 + 256;
		sb->tmp = xrealloc(sb->tmp, sb->tmp_cap);
	}
}

/* Pack attributes into 16 bits (and back). */
static uint16_t
attrs_pack(const VTermScreenCellAttrs *a)
{
	return (uint16_t)(a->bold | a->underline << 1 | a->italic << 3 |
	    a->blink << 4 | a->reverse << 5 | a->strike << 6 | a->font << 7 |
	    a->dwl << 11 | a->dhl << 12);
}

/* The attributes attrs_pack packed. */
static void
attrs_unpack(uint16_t v, VTermScreenCellAttrs *a)
{
	memset(a, 0, sizeof *a);
	a->bold = v & 1;
	a->underline = (v >> 1) & 3;
	a->italic = (v >> 3) & 1;
	a->blink = (v >> 4) & 1;
	a->reverse = (v >> 5) & 1;
	a->strike = (v >> 6) & 1;
	a->font = (v >> 7) & 15;
	a->dwl = (v >> 11) & 1;
	a->dhl = (v >> 12) & 3;
}

/* A cell that trimming may drop: blank, default colours, no attributes. */
static int
cell_trimmable(const VTermScreenCell *c)
{
	return (c->chars[0] == 0 || (c->chars[0] == ' ' && c->chars[1] == 0)) &&
	    VTERM_COLOR_IS_DEFAULT_FG(&c->fg) &&
	    VTERM_COLOR_IS_DEFAULT_BG(&c->bg) && !c->attrs.bold &&
	    !c->attrs.underline && !c->attrs.reverse && !c->attrs.italic &&
	    !c->attrs.blink && !c->attrs.strike && !c->attrs.font;
}

/* Same colours and attributes? (Equal bytes are the common case, checked
 * first; the packed form decides when the bytes differ.) */
static int
same_style(const VTermScreenCell *a, const VTermScreenCell *b)
{
	return memcmp(&a->fg, &b->fg, sizeof a->fg) == 0 &&
	    memcmp(&a->bg, &b->bg, sizeof a->bg) == 0 &&
	    (memcmp(&a->attrs, &b->attrs, sizeof a->attrs) == 0 ||
	        attrs_pack(&a->attrs) == attrs_pack(&b->attrs));
}

/* UTF-8 of c at p; bytes written (1-4). */
static size_t
utf8_put(uint8_t *p, uint32_t c)
{
	if (c < 0x80) {
		p[0] = (uint8_t)c;
		return 1;
	}
	if (c < 0x800) {
		p[0] = (uint8_t)(0xc0 | c >> 6);
		p[1] = (uint8_t)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		p[0] = (uint8_t)(0xe0 | c >> 12);
		p[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
		p[2] = (uint8_t)(0x80 | (c & 0x3f));
		return 3;
	}
	p[0] = (uint8_t)(0xf0 | (c >> 18 & 7));
	p[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3f));
	p[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
	p[3] = (uint8_t)(0x80 | (c & 0x3f));
	return 4;
}

/* Decode UTF-8 at p (bounded by end); the code point, *n its length. */
static uint32_t
utf8_get(const uint8_t *p, const uint8_t *end, size_t *n)
{
	uint32_t c = p[0];
	size_t len = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;

	if ((size_t)(end - p) < len)
		len = 1;
	if (len == 2)
		c &= 0x1f;
	else if (len == 3)
		c &= 0x0f;
	else if (len == 4)
		c &= 0x07;
	for (size_t i = 1; i < len; i++)
		c = (c << 6) | (p[i] & 0x3f);
	*n = len;
	return c;
}

/* Store a line of ncells cells (libvterm's sb_pushline). */
void
sb_push(struct sb *sb, const VTermScreenCell *cells, int ncells)
{
	int end = ncells, i = 0;
	size_t used = LINE_HDR;
	struct sbline *l;
	uint16_t w = (uint16_t)(ncells > 0xffff ? 0xffff : ncells);
	VTermColor tfg = {.type = VTERM_COLOR_DEFAULT_FG};
	VTermColor tbg = {.type = VTERM_COLOR_DEFAULT_BG};

	while (end > 0 && cell_trimmable(&cells[end - 1]))
		end--;
	if (end < ncells) {
		tfg = cells[end].fg;
		tbg = cells[end].bg;
	}
	tmp_need(sb, 0, LINE_HDR);
	memcpy(sb->tmp, &w, 2);
	memcpy(sb->tmp + 2, &tfg, 4);
	memcpy(sb->tmp + 6, &tbg, 4);
	while (i < end) {
		size_t run = used, text = used + RUN_HDR;
		uint16_t a = attrs_pack(&cells[i].attrs), tl;
		const VTermScreenCell *first = &cells[i];
		tmp_need(sb, used, RUN_HDR);
		memcpy(sb->tmp + run, &first->fg, 4);
		memcpy(sb->tmp + run + 4, &first->bg, 4);
		memcpy(sb->tmp + run + 8, &a, 2);
		used = text;
		for (; i < end && same_style(&cells[i], first) &&
		     used - text < 0xff00;
		     i++) {
			const VTermScreenCell *c = &cells[i];
			tmp_need(sb, used, 6 * 5 + 2);
			if (c->chars[0] == (uint32_t)-1)
				continue; /* the right half of a wide cell */
			if (c->width == 2)
				sb->tmp[used++] = MARK_WIDE;
			if (c->chars[0] == 0) {
				sb->tmp[used++] = MARK_BLANK;
				continue;
			}
			used += utf8_put(sb->tmp + used, c->chars[0]);
			for (int k = 1;
			     k < VTERM_MAX_CHARS_PER_CELL && c->chars[k] != 0;
			     k++) {
				sb->tmp[used++] = MARK_COMBINE;
				used += utf8_put(sb->tmp + used, c->chars[k]);
			}
		}
		tl = (uint16_t)(used - text);
		memcpy(sb->tmp + run + 10, &tl, 2);
	}
	l = xmalloc(sizeof *l + used);
	l->len = (uint32_t)used;
	memcpy(l->data, sb->tmp, used);

	if (sb->count == sb->cap) {
		/* grow and unwrap the ring */
		size_t ncap = sb->cap ? sb->cap * 2 : 256;
		struct sbline **r = xcalloc(ncap, sizeof *r);
		for (size_t k = 0; k < sb->count; k++)
			r[k] = sb->ring[(sb->head + k) % sb->cap];
		free(sb->ring);
		sb->ring = r;
		sb->cap = ncap;
		sb->head = 0;
	}
	sb->ring[(sb->head + sb->count) % sb->cap] = l;
	sb->count++;
	sb->bytes += line_cost(l);
	sb_evict(sb);
}

/* Decode l into cells[0..ncells); the line's stored width. */
static int
line_decode(const struct sbline *l, VTermScreenCell *cells, int ncells)
{
	const uint8_t *p = l->data + LINE_HDR, *end = l->data + l->len;
	VTermScreenCell blank;
	uint16_t w;
	int col = 0;

	memcpy(&w, l->data, 2);
	memset(&blank, 0, sizeof blank);
	blank.width = 1;
	memcpy(&blank.fg, l->data + 2, 4);
	memcpy(&blank.bg, l->data + 6, 4);
	while (p + RUN_HDR <= end) {
		VTermScreenCell style;
		uint16_t a, tl;
		const uint8_t *t, *tend;
		memset(&style, 0, sizeof style);
		memcpy(&style.fg, p, 4);
		memcpy(&style.bg, p + 4, 4);
		memcpy(&a, p + 8, 2);
		memcpy(&tl, p + 10, 2);
		attrs_unpack(a, &style.attrs);
		t = p + RUN_HDR;
		tend = t + tl > end ? end : t + tl;
		while (t < tend) {
			VTermScreenCell c = style;
			size_t n;
			int k = 0;
			c.width = 1;
			if (*t == MARK_WIDE) {
				c.width = 2;
				t++;
			}
			if (t < tend && *t == MARK_BLANK)
				t++;
			else if (t < tend) {
				c.chars[k++] = utf8_get(t, tend, &n);
				t += n;
				while (t < tend && *t == MARK_COMBINE &&
				    k < VTERM_MAX_CHARS_PER_CELL) {
					c.chars[k++] =
					    utf8_get(t + 1, tend, &n);
					t += 1 + n;
				}
			}
			if (col < ncells)
				cells[col] = c;
			col++;
			if (c.width == 2) {
				if (col < ncells) {
					cells[col] = c;
					memset(cells[col].chars, 0,
					    sizeof cells[col].chars);
					cells[col].chars[0] = (uint32_t)-1;
					cells[col].width = 1;
				}
				col++;
			}
		}
		p = tend;
	}
	for (; col < ncells; col++)
		cells[col] = blank;
	if (ncells > 0 && cells[ncells - 1].width == 2) {
		/* a wide glyph cut at the edge */
		cells[ncells - 1] = blank;
	}
	return w;
}

/* Take back the newest line into cells (libvterm's sb_popline); 1 or 0. */
int
sb_pop(struct sb *sb, VTermScreenCell *cells, int ncells)
{
	size_t idx;
	struct sbline *l;

	if (sb->count == 0)
		return 0;
	idx = (sb->head + sb->count - 1) % sb->cap;
	l = sb->ring[idx];
	line_decode(l, cells, ncells);
	sb->ring[idx] = NULL;
	sb->count--;
	sb->bytes -= line_cost(l);
	free(l);
	return 1;
}

/* Line age (0: the newest) into cells; its width, or -1 if not kept. */
int
sb_line(const struct sb *sb, size_t age, VTermScreenCell *cells, int ncells)
{
	if (age >= sb->count)
		return -1;
	return line_decode(sb->ring[(sb->head + sb->count - 1 - age) % sb->cap],
	    cells, ncells);
}
