/*
 * tui.h: the vmux full-screen terminal app (`vmux`, `vmux tui`).
 *
 * Model apart from view. The model is what the sessions are (model.c,
 * refreshed on libuv's thread pool, work.c, so a hung VM never blocks the
 * screen; other hosts' through ssh, hosts.c) and one pane per thing shown
 * (pane.c: a libvterm screen, cells in screen.c, fed by its source, a table
 * of operations with its own state behind p->data: a guest shell's attach
 * stream, shell.c; the serial console, console.c; a recording, replay.c; a
 * local PTY for tests and benchmarks, local.c; a wall tile with no shell
 * yet, grid.c). The view draws them with ncurses: cells and colours
 * (cell.c, colour.c, strike.c), the sidebar, panes, status bar and dialogs
 * (draw.c, grid.c), within a layout computed by pure code (layout.c). Keys
 * arrive on the one libuv loop (tui.c, input.c) and go to the pane as
 * libvterm encodes them (its bytes made safe first, faint.c), or to the
 * prefix table (cmds.c), the prompt (prompt.c), copy mode (copy.c) or a
 * menu (menu.c). Commands that change sessions run the vmux CLI itself as
 * a child (jobs.c), so the TUI offers every CLI operation with the CLI's
 * flags, without blocking.
 *
 * Pure modules with unit tests: scrollback storage (sb.c), search in text
 * (search.c), colour mapping (colour.c), key names (keyname.c), layout
 * (layout.c), configuration (config.c), themes (theme.c, themes/) and the
 * lines of a command's output view (textview.c).
 *
 * Ownership: struct tui owns everything; a pane owns its VTerm, scrollback
 * and stream; handles are freed only in their close callbacks (libuv).
 */
#ifndef VMUX_TUI_H
#define VMUX_TUI_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <vterm.h>

/* ---- sb.c: compact scrollback, bounded by bytes ---- */

/*
 * Lines pushed off the top of a screen, stored as UTF-8 text plus attribute
 * runs (a few bytes a cell instead of libvterm's 40), in a ring of lines
 * evicted oldest first once their bytes pass the limit.
 */
struct sb;

struct sb *sb_new(size_t max_bytes);
void sb_free(struct sb *);
void sb_set_max(struct sb *, size_t max_bytes);
void sb_clear(struct sb *);
void sb_push(struct sb *, const VTermScreenCell *cells, int ncells);
int sb_pop(struct sb *, VTermScreenCell *cells, int ncells);
size_t sb_count(const struct sb *);
size_t sb_bytes(const struct sb *);
size_t sb_max(const struct sb *);
int sb_line(const struct sb *, size_t age, VTermScreenCell *cells, int ncells);

/* ---- screen.c: a pane's cells under libvterm's parser and state ---- */

/*
 * What libvterm's VTermScreen shows, cell for cell, with rows behind
 * pointers so scrolling costs no cell copies. Callbacks as VTermScreen's:
 * damage (rows, at screen_flush), movecursor, settermprop, bell, resize,
 * sb_pushline, sb_popline.
 */
struct screen;

struct screen *screen_new(VTerm *, const VTermScreenCallbacks *, void *user);
void screen_free(struct screen *);
void screen_reset(struct screen *, int hard);
void screen_flush(struct screen *);
int screen_get_cell(const struct screen *, VTermPos, VTermScreenCell *);

/* ---- search.c: finding text in lines of cells ---- */

/* One line of cells as text: UTF-8 bytes and the column of each byte. */
struct line_text {
	char *s;    /* NUL-terminated UTF-8 */
	size_t len; /* bytes in s */
	int *col;   /* col[i]: the cell column byte i belongs to */
	size_t cap; /* allocated bytes of s and entries of col */
};

void line_text_from_cells(
    struct line_text *, const VTermScreenCell *cells, int ncells);
void line_text_free(struct line_text *);
int line_text_find(
    const struct line_text *, const char *needle, int from_col, int forward);

/* ---- colour.c: mapping guest colours to what the terminal has ---- */

#define COLOUR_DEFAULT (-1)

struct colour_caps {
	int colours; /* 8, 16, 256, or 0x1000000 for direct (true) colour */
	int strike;  /* the terminal draws strikethrough (strike.c) */
};

int colour_rgb_to_256(uint8_t r, uint8_t g, uint8_t b);
int colour_256_to_16(int index);
int colour_map(const struct colour_caps *, const VTermColor *, int fg);
void colour_index_rgb(int index, uint8_t *r, uint8_t *g, uint8_t *b);

/* ---- keyname.c: key names as tmux spells them ("C-b", "M-x", "F5") ---- */

/* Keys as the TUI sees them: a Unicode code point or one of these. */
#define KEYC_BASE      0x110000
#define KEYC_UP        (KEYC_BASE + 1)
#define KEYC_DOWN      (KEYC_BASE + 2)
#define KEYC_LEFT      (KEYC_BASE + 3)
#define KEYC_RIGHT     (KEYC_BASE + 4)
#define KEYC_HOME      (KEYC_BASE + 5)
#define KEYC_END       (KEYC_BASE + 6)
#define KEYC_PPAGE     (KEYC_BASE + 7)
#define KEYC_NPAGE     (KEYC_BASE + 8)
#define KEYC_IC        (KEYC_BASE + 9)
#define KEYC_DC        (KEYC_BASE + 10)
#define KEYC_BTAB      (KEYC_BASE + 11)
#define KEYC_BSPACE    (KEYC_BASE + 12)
#define KEYC_F1        (KEYC_BASE + 20) /* F1..F12: KEYC_F1 + n - 1 */
#define KEYC_MOUSE     (KEYC_BASE + 40)
#define KEYC_PASTE_ON  (KEYC_BASE + 41)
#define KEYC_PASTE_OFF (KEYC_BASE + 42)
#define KEYC_RESIZE    (KEYC_BASE + 43)
#define KEYC_MASK      0x0fffffff
#define KEYC_CTRL      0x10000000 /* with a special key or a letter */
#define KEYC_META      0x20000000
#define KEYC_SHIFT     0x40000000

int key_parse(const char *name, int *key, char **cause);
void key_string(int key, char *buf, size_t len);
void key_encode(VTerm *, int key);

/* ---- layout.c: where things go on the screen ---- */

struct rect {
	int x, y, w, h;
};

struct layout_in {
	int cols, rows;    /* the terminal */
	int sidebar_on;    /* the user wants the sidebar */
	int sidebar_width; /* wanted width */
	int zoomed;        /* the pane takes all but the status line */
};

struct layout {
	struct rect sidebar; /* w == 0: hidden */
	struct rect border;  /* the column between sidebar and pane */
	struct rect pane;    /* the terminal pane (at least 1x1) */
	struct rect status;  /* the last line */
};

void layout_compute(const struct layout_in *, struct layout *);

struct grid_geom {
	int ncols, nrows; /* tiles across and down */
	int tile_w, tile_h;
};

void layout_grid(int ntiles, const struct rect *area, struct grid_geom *);
void layout_grid_tile(
    const struct grid_geom *, const struct rect *area, int i, struct rect *);

/* ---- config.c: $XDG_CONFIG_HOME/vmux/vmux.conf ---- */

#define CONFIG_SCROLLBACK_DEFAULT (10u * 1024 * 1024)
#define CONFIG_SIDEBAR_DEFAULT    30

struct binding {
	int key;
	char *command; /* a TUI command line (cmds.c) */
};

struct config {
	int prefix;        /* default C-b */
	char *theme;       /* default "default" */
	size_t scrollback; /* bytes per pane */
	int sidebar_width;
	int sidebar;           /* shown at start */
	int mouse;             /* mouse on */
	char *group_by;        /* a label key the sidebar groups by; or NULL */
	struct binding *binds; /* prefix table, later entries win */
	size_t nbinds;
	char **errors; /* "vmux.conf:3: ..." for each bad line */
	size_t nerrors;
};

void config_defaults(struct config *);
void config_parse(struct config *, const char *text, const char *file);
int config_load(struct config *, const char *path);
char *config_path(void);
char *config_file(const char *rel);
int config_read_file(const char *path, char **text);
void config_free(struct config *);
const char *config_binding(const struct config *, int key);

/* ---- theme.c: the colours of vmux's own chrome, never the guest's ---- */

enum theme_item {
	TH_SIDEBAR,       /* sidebar text */
	TH_SIDEBAR_SEL,   /* the selected row */
	TH_SIDEBAR_HEAD,  /* a session's line */
	TH_BORDER,        /* the line between sidebar and pane, tile frames */
	TH_STATUS,        /* the status bar */
	TH_STATUS_ACCENT, /* session and shell in the status bar */
	TH_MESSAGE,       /* an informational message */
	TH_ERROR,         /* an error message */
	TH_DIALOG,        /* prompts, menus, help, confirmations */
	TH_DIALOG_SEL,    /* the selected entry of a menu */
	TH_RUNNING,       /* state colours */
	TH_STARTING,
	TH_STOPPED,
	TH_COPY_SEL, /* copy mode selection and search match */
	TH_TILE_TITLE,
	TH_TILE_FOCUS,
	TH_NITEMS
};

#define THEME_ATTR_BOLD      0x1
#define THEME_ATTR_REVERSE   0x2
#define THEME_ATTR_UNDERLINE 0x4
#define THEME_ATTR_DIM       0x8

struct theme_style {
	int fg, bg; /* COLOUR_DEFAULT or 0..255 */
	int attrs;  /* THEME_ATTR_* */
};

struct theme {
	char *name;
	struct theme_style st[TH_NITEMS];
};

int theme_parse(
    struct theme *, const char *name, const char *text, char **cause);
int theme_load(struct theme *, const char *name, char **cause);
void theme_free(struct theme *);
const char *const *theme_builtin_names(void);

/* ==== The running TUI ==== */

#include <uv.h>

#include "proto/proto.h"
#include "session/session.h"

struct tui;
struct pane;

/* ---- model.c: what the sessions and their shells are ---- */

struct mshell {
	char *id;
	char *state;   /* "running", "stopped", "closing" */
	char *command; /* printable */
	int clients, cols, rows;
	int64_t output_bytes, oldest_cursor;
	double started_at;
};

struct msession {
	char *name;   /* with other hosts (hosts.c): "HOST:NAME" */
	char *host;   /* NULL: this machine (or the TUI shows no hosts) */
	char *state;  /* starting running stopping stopped crashed broken */
	char *detail; /* policy when up; who stopped it, or how QEMU died */
	char *accel;
	char *error; /* record unreadable, or the shells could not be listed */
	int cpus, memory_mb;
	char *group;      /* its value of the group-by label ("" if unset) */
	char *check;      /* the last `vmux check`: "check pass: LINE" */
	int check_failed; /* ... and it did not pass */
	int shells_known; /* the agent answered list_shells */
	struct mshell *shells;
	size_t nshells;
};

struct model {
	struct msession *sessions;
	size_t n;
};

struct selector;
void model_free(struct model *);
int model_fetch(const char *home, const struct selector *, const char *group_by,
    struct model *, char **cause);
void model_swap(struct tui *, struct model *);
struct msession *model_session(struct model *, const char *name);
struct mshell *model_shell(struct msession *, const char *id);
void model_refresh(struct tui *);

/* ---- pane.c: one terminal, fed by its source (shell.c, local.c) ---- */

enum pane_state {
	PANE_CONNECTING,   /* attaching */
	PANE_LIVE,         /* streaming */
	PANE_DISCONNECTED, /* the stream broke; reattaching from its cursor */
	PANE_EXITED,       /* the shell ended (or was closed) */
	PANE_FAILED,       /* cannot attach (no such shell, session gone) */
};

/*
 * faint.c: SGR 2 (faint) and DECSC's character sets for libvterm, and what
 * keeps a hostile stream from its bugs. faint_filter follows libvterm
 * 0.1.4's parser state for state (its parser.c) so it knows what libvterm
 * will do with every byte.
 */
enum faint_state {
	FAINT_GROUND,
	FAINT_ESC,    /* ESC and intermediates seen, held */
	FAINT_CSI,    /* in a CSI (held in buf, or passed: pass) */
	FAINT_STRING, /* OSC or DCS: nothing printed until it ends */
};
enum faint_csi { CSI_LEADER, CSI_ARGS, CSI_INTERMED };
/* The most a held sequence gives when it ends: an SGR of 64 bytes
 * rewritten ("22;" becomes "22;10;") and its "ESC [", with room. */
#define FAINT_HOLD 208
/* The most faint_filter writes for len bytes (ESC 8, 2 bytes, gives 15). */
#define FAINT_OUT_MAX(len) (8 * (len) + FAINT_HOLD)
struct faint {
	enum faint_state state;
	enum faint_csi phase; /* FAINT_CSI: where libvterm's parser is */
	char buf[64];         /* a CSI's bytes after "ESC [" */
	size_t n;
	int seps;              /* its parameter separators so far */
	int pass;              /* too long to hold: passed as it comes */
	int skip;              /* dropped to its end (libvterm got CAN) */
	char esc[16];          /* FAINT_ESC: the intermediates */
	int nesc;              /* how many (more are dropped, as libvterm) */
	char g[4], saved_g[4]; /* designations now, and at ESC 7 (0: B) */
	int gl, saved_gl;      /* G1 shifted in (SO), now and at ESC 7 */
	uint8_t last[4];       /* the last character printed (UTF-8), */
	int nlast, last_ok;    /* its bytes, and may REP repeat it */
	uint8_t cur[4];        /* the UTF-8 character being read */
	int ncur, need;
	int restored; /* out: returned right after ESC 8 */
	int rep;      /* out: returned at a REP of this many */
	size_t used;  /* out: input bytes the last call took */
};
size_t faint_filter(struct faint *, const uint8_t *, size_t, uint8_t *);

/*
 * Bytes into libvterm, through faint_filter, and what keeps a hostile
 * stream from breaking libvterm 0.1.4's state: REP is written out as the
 * character repeated (it looped for ever after a glyph of no width), a
 * cursor ESC 8 brings back past the screen is bounded, and a shorter
 * screen's scroll region is reset (its top could be past the bottom).
 */
struct feed {
	VTerm *vt;
	struct faint f;
	uint8_t *out; /* faint_filter's output */
	size_t cap;
};
void feed_init(struct feed *, VTerm *);
void feed_free(struct feed *);
void feed_reset(struct feed *);
void feed_write(struct feed *, const uint8_t *, size_t);
void feed_resize(struct feed *, int rows, int cols);

/* strike.c: struck cells of a frame, drawn again through smxx after it */
struct strike {
	struct strike_cell {
		int y, x, pair;
		unsigned attrs;
		wchar_t wch[VTERM_MAX_CHARS_PER_CELL + 1];
	} * cells;
	size_t n, cap;
};
int strike_init(void);
void strike_note(struct strike *, int y, int x, const wchar_t *wch,
    unsigned attrs, int pair);
void strike_flush(struct strike *);

#define PANE_REPLAY_BYTES (256 * 1024) /* repainted on (re)attach */
#define PANE_FEED_US      8000 /* parsing per wake-up before keys' turn */
#define PANE_MAX_COLS     SCREEN_MAX_COLS /* a guest's PTY size is clamped */
#define PANE_MAX_ROWS     SCREEN_MAX_ROWS

/*
 * A pane's source: where its output comes from and where its keys go, as a
 * table of operations (as tmux's window_mode), one file each. start may
 * finish later (the pane's state says); signal is NULL where there is no
 * job to signal, take where there is no keyboard to take from other
 * clients; stop closes every handle the source opened; resume is called
 * once the pane has parsed its backlog (a source stops reading while
 * pane_backlogged).
 */
struct pane_source {
	const char *name;
	const char
	    *label; /* how its pane is named where a shell's id would
	               be ("[console]"); NULL: a shell, named by its id */
	int shell;  /* a session's shell: the agent lists and closes it */
	int (*start)(struct pane *, char **cause);
	void (*write)(struct pane *, const void *, size_t);
	void (*resize)(struct pane *, int cols, int rows);
	int (*signal)(struct pane *, const char *sig);
	void (*stop)(struct pane *);
	void (*resume)(struct pane *);
	void (*take)(struct pane *, int on); /* hold the keyboard, or not */
};
extern const struct pane_source shell_source;   /* shell.c: attach stream */
extern const struct pane_source local_source;   /* local.c: a host PTY */
extern const struct pane_source console_source; /* console.c: ttyS0 */
extern const struct pane_source replay_source;  /* replay.c: a recording */
extern const struct pane_source none_source; /* grid.c: a tile, no shell yet */

/* Columns [from, to) of a row to redraw; to 0: none (draw.c clips to). */
struct pane_span {
	uint16_t from, to;
};

struct pane {
	struct tui *tui;
	unsigned id; /* for jobs that finish after the pane is gone */
	const struct pane_source *src;
	char *session, *shell_id; /* shell_id: NULL but for a shell's pane */
	char *command;  /* local_source: the command; replay: the file */
	void *data;     /* the source's own state (replay.c's playback,
	                   console.c's keyboard), its start's and stop's */
	int grid;       /* a grid tile: watches, never resizes the PTY */
	char *others;   /* who else is attached ("alice, teacher (watching)") */
	char *keyboard; /* who holds the shell's keyboard, or NULL */
	int kb_mine;    /* we do (the agent said so) */
	int kb_want;    /* we asked to (taken again after a reattach) */
	VTerm *vt;
	struct screen *scr;      /* the cells (screen.c) under vt's state */
	int rows, cols;          /* the PTY's size as the VTerm has it */
	struct pane_span *dirty; /* per row, the columns to redraw */
	int any_dirty;
	VTermPos cursor;
	int cur_visible, altscreen, mouse, bracketed;
	struct feed feed; /* bytes into vt, made safe (faint.c) */
	char *title;
	struct sb *sb;
	int view; /* lines scrolled back (copy mode), 0: live */

	int state;             /* enum pane_state */
	int exit_status;       /* PANE_EXITED: as a shell's $? */
	char *error;           /* PANE_FAILED / DISCONNECTED: why */
	int64_t stream_cursor; /* the next byte of output expected */
	int retries;
	uint64_t activity_ms;   /* mono_ms of the last output */
	uint64_t bytes_in;      /* output parsed since attach */
	uint64_t feed_deadline; /* pane_clock_us: parse until then */
	uint8_t *backlog;       /* output read but not parsed yet (flood) */
	size_t backlog_off, backlog_len, backlog_cap;

	int fd;    /* stream socket or PTY master; -1 none */
	pid_t pid; /* local: the child */
	uv_poll_t *poll;
	int poll_events;
	uv_timer_t *retry;
	struct attach_client ac;
	int want_cols, want_rows; /* the size to ask for once live */
	uint8_t *pending;         /* keys typed before the first attach */
	size_t pending_len;
	int was_live; /* attached once: keys are no longer held */
};

const char *pane_name(const struct pane *);
struct pane *pane_new(struct tui *, const struct pane_source *,
    const char *session, const char *shell, int cols, int rows, int grid);
int pane_start(struct pane *);
void pane_free(struct pane *);
void pane_handle_free(uv_handle_t *);
void pane_poll_close(struct pane *);
void pane_set_size(struct pane *, int cols, int rows);
void pane_resize(struct pane *, int cols, int rows);
void pane_key(struct pane *, int key);
void pane_paste(struct pane *, const char *text, size_t len, int bracket);
int pane_can_signal(const struct pane *);
int pane_signal(struct pane *, const char *sig);
void pane_feed(struct pane *, const uint8_t *bytes, size_t len);
int pane_drain(struct pane *, uint64_t deadline_us);
int pane_backlogged(const struct pane *);
uint64_t pane_clock_us(void);
void pane_resume(struct pane *);
void pane_mark_all(struct pane *);
int pane_cell(struct pane *, int row, int col, VTermScreenCell *);
int pane_history(const struct pane *);
const char *pane_state_name(const struct pane *);

/* ---- cell.c: a libvterm cell as ncurses draws it ---- */

struct tcell {
	wchar_t wch[VTERM_MAX_CHARS_PER_CELL + 1];
	unsigned attrs; /* ncurses A_* */
	int fg, bg;     /* colour_map() results */
	int width;      /* columns it covers: 1 or 2 (0: skip, right half) */
	int strike;     /* SGR 9, drawn by strike.c where the terminal can */
};

void cell_convert(
    const VTermScreenCell *, const struct colour_caps *, struct tcell *);

/* ---- draw.c: the frame ---- */

void draw_init(struct tui *);
void draw_schedule(struct tui *);
void draw_theme_apply(struct tui *);
void draw_pane(struct tui *, struct pane *, const struct rect *, int all);
void draw_style(struct tui *, int item);

/* grid.c: the teacher's grid */
void grid_open(struct tui *);
void grid_close(struct tui *);
void grid_sync(struct tui *);
void grid_draw(struct tui *);
int grid_key(struct tui *, int key);

/* ---- input.c: keys from the terminal ---- */

void input_init(struct tui *);
void input_read(struct tui *);

/* ---- cmds.c: the TUI's commands (key bindings, the prompt) ---- */

int cmd_run(struct tui *, const char *line);
const char *const *tui_command_names(void);

/* ---- prompt.c: the command prompt and text questions ---- */

typedef void (*prompt_done_cb)(struct tui *, const char *answer, void *arg);

struct prompt {
	int on;
	char *label;
	char *text;           /* UTF-8 */
	size_t len, cap, pos; /* bytes; pos: the cursor */
	int complete;         /* 1: commands, 2: host paths */
	prompt_done_cb done;
	void *arg;
	char **hist;
	size_t nhist, hist_pos;
};

void prompt_open(struct tui *, const char *label, const char *initial,
    int complete, prompt_done_cb, void *arg);
int prompt_key(struct tui *, int key);

/* ---- menu.c: lists to choose from and yes/no questions ---- */

typedef void (*menu_done_cb)(struct tui *, int choice, void *arg);

struct menu {
	int on;
	char *title;
	char **items;
	size_t n, sel;
	menu_done_cb done;
	void *arg;
};

void menu_open(struct tui *, const char *title, const char *const *items,
    size_t n, menu_done_cb, void *arg);
int menu_key(struct tui *, int key);
void menu_close(struct tui *);
void confirm_open(struct tui *, const char *question, menu_done_cb, void *arg);

/* ---- copy.c: copy mode ---- */

struct copy {
	int on;
	int64_t line; /* cursor: line in history+screen (0: oldest kept) */
	int col;
	int selecting;
	int64_t sel_line;
	int sel_col;
	char *search;
	int search_forward;
	int64_t match_line;
	int match_col, match_len;
};

void copy_enter(struct tui *, int page_up);
int copy_key(struct tui *, int key);
void copy_exit(struct tui *);
int copy_cell_selected(struct tui *, int64_t line, int col);

/* ---- textview.c: a command's output in a scrollable box ---- */

struct textview {
	char *title;
	char *text; /* as given */
	size_t len;
	int width;   /* the lines are laid out for */
	int height;  /* rows shown, as last laid out: what keys scroll by */
	char **line; /* display lines: tabs expanded, wrapped, no '\r' */
	size_t n;
	size_t top; /* the first line shown */
};

void textview_set(
    struct textview *, const char *title, const char *text, size_t len);
void textview_layout(struct textview *, int width, int height);
void textview_clear(struct textview *);
int textview_key(struct textview *, int key);

/* ---- jobs.c: the vmux CLI run as a child, transfers ---- */

struct job {
	struct tui *tui;
	unsigned id;
	char *what;   /* "cp ./x default:/root" */
	int transfer; /* shows progress */
	uint64_t bytes, total, started_ms;
	uv_process_t proc;
	uv_pipe_t out, err;
	char *outbuf, *errbuf;
	size_t outlen, errlen;
	int open_handles;
	int exited;
	int64_t status;
	int term_signal;
	void (*done)(struct tui *, struct job *);
	char *arg; /* for done */
	struct job *next;
};

int job_start(struct tui *, char **argv, int transfer,
    void (*done)(struct tui *, struct job *), const char *arg);
void job_cancel(struct job *);
char *job_error_line(const struct job *);
void jobs_cancel_all(struct tui *);

/* ---- work.c: blocking session calls on libuv's thread pool ---- */

struct work;
typedef void (*work_fn)(struct work *);                  /* on a pool thread */
typedef void (*work_after)(struct tui *, struct work *); /* on the loop */

/* work.code when the session itself is gone (the agent never asked). */
#define WORK_NO_SESSION "no_session"

struct work {
	uv_work_t req;
	struct tui *tui;
	work_fn fn;
	work_after after;
	unsigned pane_id;
	char *home, *session, *shell;
	char *group_by; /* model refresh: the label the sidebar groups by */
	cJSON *request, *reply;
	int64_t cursor;
	struct attach_who who; /* attach as (the string is the TUI's) */
	int fd;
	struct attach_client ac;
	int rc;
	char *cause;
	char code[VMUX_E_CODE_MAX]; /* a failure's VMUX_E_* (or no_session) */
	struct model model;
	struct tui_host *th; /* hosts.c: whose sessions are being fetched */
	cJSON *part;         /* ... and what it answered */
	char *file;          /* replay.c: the recording being measured ... */
	double seconds;      /* ... and its length */
};

struct work *work_new(struct tui *, work_fn, work_after);
const char *tui_group_by(const struct tui *);
void work_queue(struct work *);
void work_agent_call(struct work *);
void work_attach(struct work *);

/* ---- hosts.c: sessions of other hosts, over ssh ---- */

struct tui_host {
	char *name;        /* "local" or a name from vmux host ls */
	struct host h;     /* where (not for local) */
	cJSON *part;       /* its sessions as model_to_json made them */
	char *error;       /* its last refresh failed: why (shown) */
	int busy, dirty;   /* a refresh is on its way; another is wanted */
	uint64_t ok_at;    /* mono_ms of its last answer */
	uint64_t asked_at; /* mono_ms its last refresh was asked for */
};

int hosts_open(struct tui *, char **cause);
void hosts_free(struct tui *);
void hosts_refresh(struct tui *, int tick);
cJSON *model_to_json(const struct model *);
const char *hosts_error(const struct tui *, const char *host);
const struct host *hosts_target(
    struct tui *, const char *session, const char **name);

/* ---- tui.c: the whole ---- */

enum tui_mode {
	MODE_NORMAL,
	MODE_PREFIX,
	MODE_SIDEBAR, /* choose-session: keys move the selection */
	MODE_GRID,
	MODE_HELP,
	MODE_OUTPUT, /* a command's output (textview) */
};

struct tui_opts {
	const char *session; /* select it */
	const char *theme;   /* overrides the config */
	const char *config;  /* a config file instead of the default */
	char **local;        /* host commands on PTYs instead of guests */
	int nlocal;
	const struct selector *sel; /* -l: only the sessions it matches */
	const char *group_by;       /* --group-by: over the config's */
	const char *as;             /* --as: who others see attached */
	const char *sel_text;       /* -l as given, for other hosts */
	char **hosts;               /* -H: these hosts' sessions (hosts.c) */
	size_t nhosts;
	int grid, read_only, no_sidebar;
};

struct tui {
	uv_loop_t *loop;
	struct tui_opts opts;
	char *home;
	struct config cfg;
	struct theme theme;
	struct colour_caps caps;
	struct strike strike; /* struck cells painted in this frame */
	int theme_pairs[TH_NITEMS];
	int cols, rows;
	struct layout lay;
	int zoomed, sidebar_on;
	const struct pane_source *aside; /* the main area shows cur_session's
	                                    pane of this kind (console, replay)
	                                    instead of its shell; NULL: none */
	int broadcast; /* keys go to every session's shell (prefix B) */
	int mode;
	int prev_mode; /* before the prefix key */
	int quit, quit_status;

	struct model model;
	struct tui_host *hosts; /* -H: whose sessions the model shows */
	size_t nhosts;
	int model_busy;
	int model_dirty; /* refresh again when the current one returns */
	uint64_t model_at;
	uint64_t typed_at; /* the last key read (the tick waits while typing) */
	char *status_drawn; /* the status line on screen (draw_status) */
	uint64_t model_sig; /* of the model last shown */
	char *cur_session;  /* selected session */
	char *cur_shell;    /* selected shell (of cur_session) */
	int sel;            /* sidebar selection: row index */
	/* What each drawn sidebar line selects: a row index or -1. Filled by
	 * draw_sidebar, read by the mouse, so a click picks what it hit. */
	int *sidebar_line_row;
	int sidebar_lines;
	int want_shell; /* open a shell in cur_session when none exists */

	struct pane **panes;
	size_t npanes;
	unsigned next_pane_id;
	struct pane **tiles; /* grid */
	size_t ntiles;
	int tile_sel;
	char *grid_filter;
	int grid_sort; /* 0 name, 1 activity, 2 check result (o cycles) */
	int grid_filtering;
	int grid_zoom;    /* the selected tile fills the wall (z) */
	unsigned kb_pane; /* the pane that took a shell's keyboard, 0: none */

	struct prompt prompt;
	struct menu menu;
	struct copy copy;
	struct job *jobs;
	unsigned next_job_id;
	char *paste_buf;
	size_t paste_len;
	int in_paste; /* between bracketed paste markers from the terminal */

	char *message;
	int message_error;
	uint64_t message_until;
	int help_scroll;
	struct textview output; /* shown in MODE_OUTPUT */

	int full_redraw;
	int frame_pending;
	uint64_t last_frame_ms;
	uv_poll_t stdin_poll;
	uv_signal_t sigwinch, sigterm, sighup, sigint;
	uv_timer_t frame_timer, tick_timer;
	uv_idle_t drain; /* parses panes' backlogs a slice at a time */
	int draining;
};

int tui_main(const struct tui_opts *);
void tui_message(struct tui *, int error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
struct pane *tui_pane(struct tui *);
struct pane *tui_key_pane(struct tui *);
void tui_takeover(struct tui *);
struct pane *tui_pane_by_id(struct tui *, unsigned id);
void tui_select(struct tui *, const char *session, const char *shell);
void tui_relayout(struct tui *);
void tui_open_shell(struct tui *, const char *session);
void tui_console_toggle(struct tui *);
void tui_replay_open(struct tui *, const char *file);
void tui_broadcast_toggle(struct tui *);
void tui_broadcast_key(struct tui *, struct pane *typed, int key);
void tui_sidebar_rows(struct tui *, int *n);
void tui_sidebar_pick(struct tui *, int row);
void tui_drain_start(struct tui *);

#endif
