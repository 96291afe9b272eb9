/*
 * tui.h: the vmux full-screen terminal app (`vmux`, `vmux tui`).
 *
 * Model apart from view. The model is what the sessions are (model.c,
 * refreshed on libuv's thread pool so a hung VM never blocks the screen)
 * and one pane per attached shell (pane.c: a libvterm screen fed by the
 * shell's attach stream, or by a local PTY for tests and benchmarks,
 * local.c). The view draws them with ncurses: cells and colours (cell.c,
 * colour.c), the sidebar, panes, status bar and dialogs (draw.c, grid.c),
 * within a layout computed by pure code (layout.c). Keys arrive on the one
 * libuv loop (loop.c, input.c) and go to the pane as libvterm encodes them,
 * or to the prefix table (keys.c, cmds.c), the prompt (prompt.c), copy mode
 * (copy.c) or a menu (menu.c). Commands that change sessions run the vmux
 * CLI itself as a child (jobs.c), so the TUI offers every CLI operation
 * with the CLI's flags, without blocking.
 *
 * Pure modules with unit tests: scrollback storage (sb.c), search in text
 * (search.c), colour mapping (colour.c), key names (keyname.c), layout
 * (layout.c), configuration (config.c) and themes (theme.c, themes/).
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

/* ---- search.c: finding text in lines of cells ---- */

/* One line of cells as text: UTF-8 bytes and the column of each byte. */
struct line_text {
	char *s;      /* NUL-terminated UTF-8 */
	size_t len;   /* bytes in s */
	int *col;     /* col[i]: the cell column byte i belongs to */
	size_t cap;   /* allocated bytes of s and entries of col */
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
void key_name(int key, char *buf, size_t len);

/* ---- layout.c: where things go on the screen ---- */

struct rect {
	int x, y, w, h;
};

struct layout_in {
	int cols, rows;      /* the terminal */
	int sidebar_on;      /* the user wants the sidebar */
	int sidebar_width;   /* wanted width */
	int zoomed;          /* the pane takes all but the status line */
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
	int prefix;             /* default C-b */
	char *theme;            /* default "default" */
	size_t scrollback;      /* bytes per pane */
	int sidebar_width;
	int sidebar;            /* shown at start */
	int mouse;              /* mouse on */
	struct binding *binds;  /* prefix table, later entries win */
	size_t nbinds;
	char **errors;          /* "vmux.conf:3: ..." for each bad line */
	size_t nerrors;
};

void config_defaults(struct config *);
void config_parse(struct config *, const char *text, const char *file);
int config_load(struct config *, const char *path);
char *config_path(void);
void config_free(struct config *);
void config_bind(struct config *, int key, const char *command);
const char *config_binding(const struct config *, int key);
int config_size(const char *s, size_t *out);

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
	TH_COPY_SEL,      /* copy mode selection and search match */
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

const char *theme_item_name(int item);
int theme_parse(struct theme *, const char *name, const char *text,
    char **cause);
int theme_load(struct theme *, const char *name, char **cause);
void theme_free(struct theme *);
const char *const *theme_builtin_names(void);

#endif
