/*
 * replay.c: the pane source of a recording (asciicast v2: `vmux record`'s,
 * or asciinema's), played into the pane with its own timing and resizes.
 * Keys drive the playback instead of a shell: Space pauses and goes on,
 * Right and Left seek 5 s (back is the recording parsed again from its
 * start, at once, to that point), + and - double or halve the speed, 0
 * starts again. Where it is shows in the pane's title, on the status bar.
 * The pane owns the file and the timer (p->replay, p->retry).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "tui.h"

#define REPLAY_SEEK_S   5.0
#define REPLAY_WAIT_MAX 60000        /* ms: a recording's long pause, capped */
#define REPLAY_BUDGET   (256 * 1024) /* bytes parsed per tick */
#define REPLAY_LINE_MAX (8 * 1024 * 1024) /* one event, as JSON text */
#define REPLAY_TIME_MAX 1e7               /* s: a later event is not one */

struct replay {
	FILE *f;
	double total;   /* the last event's time: the length */
	double base_at; /* the recording's time at base_ms ... */
	uint64_t base_ms;
	double speed;
	int paused, ended;
	double seek; /* parse at once up to this time; < 0: none */
	/* the next event, read ahead */
	int have_next;
	double next_t;
	char next_code;
	char *next_text;
};

static void replay_tick(uv_timer_t *);

/* Where the playback is now, in the recording's seconds. */
static double
replay_clock(const struct replay *r)
{
	if (r->paused || r->ended)
		return r->base_at;
	return r->base_at +
	    (double)(mono_ms() - r->base_ms) / 1000.0 * r->speed;
}

/* Read the next event line into r->next_*; 0 at the end of the file. */
static int
replay_next(struct replay *r)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	cJSON *ev, *t, *code, *text;

	free(r->next_text);
	r->next_text = NULL;
	r->have_next = 0;
	if (r->f == NULL)
		return 0; /* the file could not be opened again */
	while ((n = getline(&line, &cap, r->f)) > 0) {
		if (n > REPLAY_LINE_MAX)
			continue;
		ev = cJSON_ParseWithLength(line, (size_t)n);
		t = cJSON_GetArrayItem(ev, 0);
		code = cJSON_GetArrayItem(ev, 1);
		text = cJSON_GetArrayItem(ev, 2);
		if (cJSON_IsArray(ev) && cJSON_IsNumber(t) &&
		    isfinite(t->valuedouble) && t->valuedouble >= 0 &&
		    t->valuedouble <= REPLAY_TIME_MAX && cJSON_IsString(code) &&
		    cJSON_IsString(text) && strlen(code->valuestring) == 1) {
			r->next_t = t->valuedouble;
			r->next_code = code->valuestring[0];
			r->next_text = xstrdup(text->valuestring);
			r->have_next = 1;
		}
		cJSON_Delete(ev);
		if (r->have_next)
			break;
	}
	free(line);
	return r->have_next;
}

/*
 * (Re)open the file at its start: the header's size for the pane, the
 * length (the last event's time), a clean screen. -1 with *cause.
 */
static int
replay_rewind(struct pane *p, char **cause)
{
	struct replay *r = p->replay;
	char *line = NULL;
	size_t cap = 0;
	cJSON *h;
	int w = 0, ht = 0;

	if (r->f != NULL)
		fclose(r->f);
	r->have_next = 0;
	r->ended = 1; /* until it opens again */
	if ((r->f = fopen(p->command, "re")) == NULL) {
		xasprintf(cause, "%s: %s", p->command, strerror(errno));
		return -1;
	}
	if (getline(&line, &cap, r->f) <= 0 ||
	    (h = cJSON_Parse(line)) == NULL) {
		free(line);
		xasprintf(
		    cause, "%s: not an asciicast v2 recording", p->command);
		return -1;
	}
	free(line);
	if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(h, "width")))
		w = cJSON_GetObjectItemCaseSensitive(h, "width")->valueint;
	if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(h, "height")))
		ht = cJSON_GetObjectItemCaseSensitive(h, "height")->valueint;
	if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(h, "version")) ||
	    cJSON_GetObjectItemCaseSensitive(h, "version")->valueint != 2) {
		cJSON_Delete(h);
		xasprintf(
		    cause, "%s: not an asciicast v2 recording", p->command);
		return -1;
	}
	cJSON_Delete(h);
	/* a clean terminal of the recorded size, nothing left to parse */
	p->backlog_off = p->backlog_len = 0;
	screen_reset(p->scr, 1);
	sb_clear(p->sb);
	feed_reset(&p->feed);
	pane_set_size(p, w > 0 ? w : 80, ht > 0 ? ht : 24);
	pane_mark_all(p);
	r->ended = 0;
	r->base_at = 0;
	r->base_ms = mono_ms();
	return 0;
}

/* Find the length: the time of the last event (a pass over the file). */
static void
replay_measure(struct replay *r)
{
	r->total = 0;
	while (replay_next(r))
		if (r->next_t > r->total)
			r->total = r->next_t;
}

/* Title: where it is, how fast, what the keys do. */
static void
replay_title(struct pane *p)
{
	struct replay *r = p->replay;
	double at = r->ended ? r->total : replay_clock(r);

	if (at > r->total)
		at = r->total;
	free(p->title);
	xasprintf(&p->title,
	    "replay %d:%02d/%d:%02d x%g%s; Space pauses, arrows seek, +/- "
	    "speed",
	    (int)at / 60, (int)at % 60, (int)r->total / 60, (int)r->total % 60,
	    r->speed,
	    r->ended        ? " (end)"
	        : r->paused ? " (paused)"
	                    : "");
}

/* Play what is due, then wait for the next event's time. */
static void
replay_tick(uv_timer_t *h)
{
	struct pane *p = h->data;
	struct replay *r = p->replay;
	size_t fed = 0;
	double clock, wait;
	int cols, rows;

	for (;;) {
		clock = r->seek >= 0 ? r->seek : replay_clock(r);
		if (!r->have_next || r->next_t > clock ||
		    fed >= REPLAY_BUDGET || pane_backlogged(p))
			break;
		if (r->next_code == 'o') {
			size_t n = strlen(r->next_text);
			pane_feed(p, (const uint8_t *)r->next_text, n);
			fed += n;
		} else if (r->next_code == 'r' &&
		    sscanf(r->next_text, "%dx%d", &cols, &rows) == 2)
			pane_set_size(p, cols, rows);
		replay_next(
		    r); /* input ("i") and markers ("m") are not shown */
	}
	if (r->seek >= 0 && (!r->have_next || r->next_t > r->seek)) {
		r->base_at = r->seek; /* arrived: play on from there */
		r->base_ms = mono_ms();
		r->seek = -1;
	}
	if (!r->have_next && !r->ended) {
		r->ended = 1;
		r->base_at = r->total;
	}
	replay_title(p);
	draw_schedule(p->tui);
	if (pane_backlogged(p))
		return; /* replay_resume goes on */
	if (r->ended || (r->paused && r->seek < 0))
		wait = 1000; /* only the title's clock */
	else if (fed >= REPLAY_BUDGET || r->seek >= 0)
		wait = 0;
	else
		wait = (r->next_t - replay_clock(r)) / r->speed * 1000;
	if (!r->ended && !r->paused && wait > 1000)
		wait = 1000; /* the title's clock ticks on */
	if (wait < 0)
		wait = 0;
	if (wait > REPLAY_WAIT_MAX)
		wait = REPLAY_WAIT_MAX;
	uv_timer_start(h, replay_tick, (uint64_t)wait, 0);
}

/* Start: open the recording (p->command) and play it from the start. */
static int
replay_start(struct pane *p, char **cause)
{
	struct replay *r = xcalloc(1, sizeof *r);

	p->replay = r;
	r->speed = 1;
	r->seek = -1;
	if (replay_rewind(p, cause) != 0)
		return -1;
	replay_measure(r);
	if (replay_rewind(p, cause) != 0)
		return -1;
	replay_next(r);
	p->state = PANE_LIVE;
	p->retry = xmalloc(sizeof *p->retry);
	uv_timer_init(p->tui->loop, p->retry);
	p->retry->data = p;
	replay_tick(p->retry);
	return 0;
}

/* Go to time `to` (seconds): ahead by parsing, back from the start. */
static void
replay_seek(struct pane *p, double to)
{
	struct replay *r = p->replay;
	char *cause = NULL;

	if (to < 0)
		to = 0;
	if (to > r->total)
		to = r->total;
	if (to < replay_clock(r) || r->ended) {
		if (replay_rewind(p, &cause) != 0) {
			tui_message(p->tui, 1, "%s", cause);
			free(cause);
			return; /* ended, at nothing: replay_next reads no more
			         */
		}
		replay_next(r);
	}
	r->base_at = to;
	r->seek = to;
}

/* Keys: playback controls (as libvterm encodes them). */
static void
replay_write(struct pane *p, const void *bytes, size_t len)
{
	struct replay *r = p->replay;
	const char *b = bytes;
	double at;

	if (r == NULL || p->retry == NULL)
		return;
	at = replay_clock(r);
	if (len == 1 && b[0] == ' ') {
		r->base_at = at;
		r->base_ms = mono_ms();
		r->paused = !r->paused;
	} else if (len == 1 && (b[0] == '+' || b[0] == '=')) {
		r->base_at = at;
		r->base_ms = mono_ms();
		r->speed = r->speed * 2 > 16 ? 16 : r->speed * 2;
	} else if (len == 1 && b[0] == '-') {
		r->base_at = at;
		r->base_ms = mono_ms();
		r->speed = r->speed / 2 < 0.25 ? 0.25 : r->speed / 2;
	} else if (len == 1 && b[0] == '0')
		replay_seek(p, 0);
	else if (len == 3 && b[0] == 0x1b && (b[1] == '[' || b[1] == 'O') &&
	    (b[2] == 'C' || b[2] == 'D'))
		replay_seek(
		    p, at + (b[2] == 'C' ? REPLAY_SEEK_S : -REPLAY_SEEK_S));
	else
		return;
	replay_tick(p->retry);
}

/* Close the file and the timer. */
static void
replay_stop(struct pane *p)
{
	struct replay *r = p->replay;

	if (p->retry != NULL) {
		uv_close((uv_handle_t *)p->retry, pane_handle_free);
		p->retry = NULL;
	}
	if (r != NULL) {
		if (r->f != NULL)
			fclose(r->f);
		free(r->next_text);
		free(r);
		p->replay = NULL;
	}
}

/* The backlog is parsed: play on. */
static void
replay_resume(struct pane *p)
{
	if (p->retry != NULL && p->replay != NULL)
		replay_tick(p->retry);
}

const struct pane_source replay_source = {
    .name = "replay",
    .start = replay_start,
    .write = replay_write,
    .resize = NULL, /* a recording keeps the size it was made at */
    .stop = replay_stop,
    .resume = replay_resume,
};
