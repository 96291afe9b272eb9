/*
 * replay.c: the pane source of a recording (asciicast v2: `vmux record`'s,
 * or asciinema's), played into the pane with its own timing and resizes.
 * Keys drive the playback instead of a shell: Space pauses and goes on,
 * Right and Left seek 5 s (back is the recording parsed again from its
 * start, at once, to that point), + and - double or halve the speed, 0
 * starts again. Where it is shows in the pane's title, on the status bar.
 * The pane owns the file and the timer (p->data, p->retry).
 *
 * A recording can be large and is anybody's file: no line is held past
 * REPLAY_LINE_MAX while it is read (getline_max), and its length (a pass
 * over the whole file) is measured on the thread pool, so opening one
 * never stalls the screen; until then the title says "?:??".
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
	double total;   /* the last event's time: the length; < 0 unknown */
	double latest;  /* the latest event played, for an unknown total */
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

/*
 * Parse one event line, [time, "c", "text"]: 1 with *t, *code and (if
 * text is not NULL) *text (free it), or 0 if it is not one. Lines cut at
 * REPLAY_LINE_MAX are not events. Runs on pool threads too.
 */
static int
replay_event(const char *line, size_t n, double *t, char *code, char **text)
{
	cJSON *ev = cJSON_ParseWithLength(line, n);
	const cJSON *ti = cJSON_GetArrayItem(ev, 0),
	            *c = cJSON_GetArrayItem(ev, 1),
	            *tx = cJSON_GetArrayItem(ev, 2);
	int ok = cJSON_IsArray(ev) && cJSON_IsNumber(ti) &&
	    isfinite(ti->valuedouble) && ti->valuedouble >= 0 &&
	    ti->valuedouble <= REPLAY_TIME_MAX && cJSON_IsString(c) &&
	    cJSON_IsString(tx) && strlen(c->valuestring) == 1;

	if (ok) {
		*t = ti->valuedouble;
		*code = c->valuestring[0];
		if (text != NULL)
			*text = xstrdup(tx->valuestring);
	}
	cJSON_Delete(ev);
	return ok;
}

/* Read the next event line into r->next_*; 0 at the end of the file. */
static int
replay_next(struct replay *r)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int cut;

	free(r->next_text);
	r->next_text = NULL;
	r->have_next = 0;
	if (r->f == NULL)
		return 0; /* the file could not be opened again */
	while (
	    (n = getline_max(&line, &cap, r->f, REPLAY_LINE_MAX, &cut)) >= 0) {
		if (cut)
			continue;
		if (replay_event(line, (size_t)n, &r->next_t, &r->next_code,
		        &r->next_text)) {
			r->have_next = 1;
			if (r->next_t > r->latest)
				r->latest = r->next_t;
			break;
		}
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
	struct replay *r = p->data;
	char *line = NULL;
	size_t cap = 0;
	cJSON *h;
	int w = 0, ht = 0, cut;

	if (r->f != NULL)
		fclose(r->f);
	r->have_next = 0;
	r->ended = 1; /* until it opens again */
	if ((r->f = fopen(p->command, "re")) == NULL) {
		xasprintf(cause, "%s: %s", p->command, strerror(errno));
		return -1;
	}
	if (getline_max(&line, &cap, r->f, REPLAY_LINE_MAX, &cut) <= 0 || cut ||
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

/*
 * Pool thread: the length of recording w->file, the latest of its events'
 * times (a pass over the file), into w->seconds; w->rc -1 if unreadable.
 */
static void
replay_measure_run(struct work *w)
{
	char *line = NULL, code;
	size_t cap = 0;
	ssize_t n;
	double t;
	int cut;
	FILE *f = fopen(w->file, "re");

	w->seconds = 0;
	w->rc = f != NULL ? 0 : -1;
	if (f == NULL)
		return;
	if (getline_max(&line, &cap, f, REPLAY_LINE_MAX, &cut) >= 0) {
		/* the header, read by replay_rewind */
		while ((n = getline_max(
		            &line, &cap, f, REPLAY_LINE_MAX, &cut)) >= 0) {
			if (!cut &&
			    replay_event(line, (size_t)n, &t, &code, NULL) &&
			    t > w->seconds)
				w->seconds = t;
		}
	}
	free(line);
	fclose(f);
}

/* Loop: the length is known (if the pane still plays that file). */
static void
replay_measured(struct tui *t, struct work *w)
{
	struct pane *p = tui_pane_by_id(t, w->pane_id);

	if (p == NULL || p->data == NULL || p->command == NULL ||
	    strcmp(p->command, w->file) != 0 || w->rc != 0)
		return;
	((struct replay *)p->data)->total = w->seconds;
	if (p->retry != NULL)
		replay_tick(p->retry); /* the title */
}

/* Measure p's recording on the thread pool (replay_measured). */
static void
replay_measure(struct pane *p)
{
	struct work *w = work_new(p->tui, replay_measure_run, replay_measured);

	w->pane_id = p->id;
	w->file = xstrdup(p->command);
	work_queue(w);
}

/* Title: where it is, how fast, what the keys do. */
static void
replay_title(struct pane *p)
{
	struct replay *r = p->data;
	double at = r->ended ? r->latest : replay_clock(r);
	char len[32];

	if (r->total >= 0 && at > r->total)
		at = r->total;
	if (r->total >= 0)
		snprintf(len, sizeof len, "%d:%02d", (int)r->total / 60,
		    (int)r->total % 60);
	else
		snprintf(len, sizeof len, "?:??"); /* being measured */
	free(p->title);
	xasprintf(&p->title,
	    "replay %d:%02d/%s x%g%s; Space pauses, arrows seek, +/- "
	    "speed",
	    (int)at / 60, (int)at % 60, len, r->speed,
	    r->ended        ? " (end)"
	        : r->paused ? " (paused)"
	                    : "");
}

/* Play what is due, then wait for the next event's time. */
static void
replay_tick(uv_timer_t *h)
{
	struct pane *p = h->data;
	struct replay *r = p->data;
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
		r->base_at = r->latest;
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

	p->data = r;
	r->speed = 1;
	r->seek = -1;
	r->total = -1;
	if (replay_rewind(p, cause) != 0)
		return -1;
	replay_measure(p);
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
	struct replay *r = p->data;
	char *cause = NULL;

	if (to < 0)
		to = 0;
	if (r->total >= 0 && to > r->total)
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
	struct replay *r = p->data;
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
	struct replay *r = p->data;

	if (p->retry != NULL) {
		uv_close((uv_handle_t *)p->retry, pane_handle_free);
		p->retry = NULL;
	}
	if (r != NULL) {
		if (r->f != NULL)
			fclose(r->f);
		free(r->next_text);
		free(r);
		p->data = NULL;
	}
}

/* The backlog is parsed: play on. */
static void
replay_resume(struct pane *p)
{
	if (p->retry != NULL && p->data != NULL)
		replay_tick(p->retry);
}

const struct pane_source replay_source = {
    .name = "replay",
    .label = "[replay]",
    .start = replay_start,
    .write = replay_write,
    .resize = NULL, /* a recording keeps the size it was made at */
    .stop = replay_stop,
    .resume = replay_resume,
};
