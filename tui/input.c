/*
 * input.c: keys from the terminal. ncurses decodes the escape sequences
 * (terminfo, including modified keys such as C-Up), this file turns them
 * into the TUI's key numbers (keyname.c) and routes each key: the prompt,
 * a menu, copy mode, the grid, the prefix table, or the pane.
 *
 * stdin is a uv_poll_t; each wake-up drains wget_wch in nodelay mode.
 * Bracketed paste from the outer terminal arrives between two defined keys
 * and goes to the pane as one paste.
 */
#include <ncurses.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "tui.h"

#include <term.h> /* after vterm.h: its macros (lines, columns) */

#define KEY_PASTE_START (KEY_MAX + 1)
#define KEY_PASTE_END   (KEY_MAX + 2)

/* Modified special keys as terminfo names them: kUP5 is C-Up. */
struct modkey {
	int code;
	int key;
};
static struct modkey *modkeys;
static size_t nmodkeys;

/* Learn the codes ncurses gives modified arrows, Home, End, ... */
static void
modkeys_init(void)
{
	static const struct {
		const char *cap;
		int key;
	} base[] = {{"kUP", KEYC_UP}, {"kDN", KEYC_DOWN}, {"kLFT", KEYC_LEFT},
	    {"kRIT", KEYC_RIGHT}, {"kHOM", KEYC_HOME}, {"kEND", KEYC_END},
	    {"kPRV", KEYC_PPAGE}, {"kNXT", KEYC_NPAGE}, {"kIC", KEYC_IC},
	    {"kDC", KEYC_DC}};
	/* xterm's modifier parameter: 2 S, 3 M, 4 S-M, 5 C, 6 C-S, 7 C-M */
	static const int mods[] = {0, 0, KEYC_SHIFT, KEYC_META,
	    KEYC_SHIFT | KEYC_META, KEYC_CTRL, KEYC_CTRL | KEYC_SHIFT,
	    KEYC_CTRL | KEYC_META, KEYC_CTRL | KEYC_META | KEYC_SHIFT};

	for (size_t i = 0; i < nitems(base); i++) {
		for (int m = 2; m <= 8; m++) {
			char cap[16];
			char *s;
			int code;
			snprintf(cap, sizeof cap, "%s%d", base[i].cap, m);
			s = tigetstr(cap);
			if (s == NULL || s == (char *)-1)
				continue;
			code = key_defined(s);
			if (code <= 0)
				continue;
			modkeys = xreallocarray(
			    modkeys, nmodkeys + 1, sizeof *modkeys);
			modkeys[nmodkeys].code = code;
			modkeys[nmodkeys++].key = base[i].key | mods[m];
		}
	}
}

/* Watch stdin and enable what the TUI uses: paste markers, mouse. */
void
input_init(struct tui *t)
{
	modkeys_init();
	define_key("\033[200~", KEY_PASTE_START);
	define_key("\033[201~", KEY_PASTE_END);
	if (t->cfg.mouse)
		mousemask(BUTTON1_PRESSED | BUTTON1_RELEASED | BUTTON4_PRESSED |
		        BUTTON5_PRESSED,
		    NULL);
	mouseinterval(0);
	putp("\033[?2004h"); /* bracketed paste on */
	fflush(stdout);
}

/* An ncurses function-key code as a TUI key; 0 if not one we know. */
static int
curses_key(int c)
{
	switch (c) {
	case KEY_UP:
		return KEYC_UP;
	case KEY_DOWN:
		return KEYC_DOWN;
	case KEY_LEFT:
		return KEYC_LEFT;
	case KEY_RIGHT:
		return KEYC_RIGHT;
	case KEY_HOME:
		return KEYC_HOME;
	case KEY_END:
		return KEYC_END;
	case KEY_PPAGE:
		return KEYC_PPAGE;
	case KEY_NPAGE:
		return KEYC_NPAGE;
	case KEY_IC:
		return KEYC_IC;
	case KEY_DC:
		return KEYC_DC;
	case KEY_BTAB:
		return KEYC_BTAB;
	case KEY_BACKSPACE:
		return KEYC_BSPACE;
	case KEY_ENTER:
		return 0x0d;
	case KEY_SR:
		return KEYC_UP | KEYC_SHIFT;
	case KEY_SF:
		return KEYC_DOWN | KEYC_SHIFT;
	case KEY_SLEFT:
		return KEYC_LEFT | KEYC_SHIFT;
	case KEY_SRIGHT:
		return KEYC_RIGHT | KEYC_SHIFT;
	case KEY_RESIZE:
		return KEYC_RESIZE;
	case KEY_MOUSE:
		return KEYC_MOUSE;
	case KEY_PASTE_START:
		return KEYC_PASTE_ON;
	case KEY_PASTE_END:
		return KEYC_PASTE_OFF;
	default:
		break;
	}
	if (c >= KEY_F(1) && c <= KEY_F(12))
		return KEYC_F1 + (c - KEY_F(1));
	for (size_t i = 0; i < nmodkeys; i++)
		if (modkeys[i].code == c)
			return modkeys[i].key;
	return 0;
}

/* A mouse event: wheel scrolls back, a click selects in the sidebar. */
static void
input_mouse(struct tui *t)
{
	MEVENT ev;
	struct pane *p = tui_pane(t);

	if (getmouse(&ev) != OK)
		return;
	if (t->mode == MODE_GRID)
		return;
	if (ev.x < t->lay.sidebar.x + t->lay.sidebar.w &&
	    (ev.bstate & BUTTON1_PRESSED)) {
		int line = ev.y - t->lay.sidebar.y;

		/* the row drawn on that line, as draw_sidebar recorded it */
		if (line >= 0 && line < t->sidebar_lines &&
		    t->sidebar_line_row[line] >= 0)
			tui_sidebar_pick(t, t->sidebar_line_row[line]);
		return;
	}
	if (p == NULL)
		return;
	if (p->mouse != 0 && !t->copy.on && p->view == 0 &&
	    !t->opts.read_only) {
		/* the guest program asked for the mouse: pass it on */
		int row = ev.y - t->lay.pane.y, col = ev.x - t->lay.pane.x;
		int button = ev.bstate & BUTTON4_PRESSED ? 4
		    : ev.bstate & BUTTON5_PRESSED        ? 5
		                                         : 1;
		int press = !(ev.bstate & BUTTON1_RELEASED);
		vterm_mouse_move(p->vt, row, col, VTERM_MOD_NONE);
		vterm_mouse_button(p->vt, button, press, VTERM_MOD_NONE);
		return;
	}
	if (ev.bstate & BUTTON4_PRESSED) {
		if (!t->copy.on)
			copy_enter(t, 0);
		copy_key(t, KEYC_UP | KEYC_CTRL);
	} else if ((ev.bstate & BUTTON5_PRESSED) && t->copy.on)
		copy_key(t, KEYC_DOWN | KEYC_CTRL);
}

/* One key, routed by what is on the screen. */
static void
input_key(struct tui *t, int key)
{
	struct pane *p = tui_pane(t);
	const char *cmd;

	if (key == KEYC_RESIZE) {
		tui_relayout(t);
		return;
	}
	if (key == KEYC_MOUSE) {
		input_mouse(t);
		return;
	}
	if (key == KEYC_PASTE_ON || key == KEYC_PASTE_OFF) {
		t->in_paste = key == KEYC_PASTE_ON;
		if (p != NULL && t->mode == MODE_NORMAL && !t->prompt.on &&
		    !t->menu.on && !t->copy.on) {
			if (t->in_paste)
				vterm_keyboard_start_paste(p->vt);
			else
				vterm_keyboard_end_paste(p->vt);
		}
		return;
	}
	if (t->prompt.on) {
		prompt_key(t, key);
		return;
	}
	if (t->menu.on) {
		menu_key(t, key);
		return;
	}
	if (t->mode == MODE_HELP) {
		if (key == 'q' || key == 0x1b || key == 0x0d)
			t->mode = MODE_NORMAL, t->help_scroll = 0;
		else if (key == KEYC_DOWN || key == 'j')
			t->help_scroll++;
		else if ((key == KEYC_UP || key == 'k') && t->help_scroll > 0)
			t->help_scroll--;
		t->full_redraw = 1;
		draw_schedule(t);
		return;
	}
	if (t->mode == MODE_OUTPUT) {
		if (textview_key(&t->output, key)) {
			t->mode = MODE_NORMAL; /* kept for show-output */
			t->output.top = 0;
		}
		t->full_redraw = 1;
		draw_schedule(t);
		return;
	}
	if (t->mode == MODE_PREFIX) {
		char name[32];
		t->mode = t->prev_mode;
		if ((cmd = config_binding(&t->cfg, key)) != NULL)
			cmd_run(t, cmd);
		else if (key != 0x1b) {
			key_string(key, name, sizeof name);
			tui_message(t, 1,
			    "prefix %s is not bound (prefix ? "
			    "lists the keys)",
			    name);
		}
		draw_schedule(t);
		return;
	}
	if (key == t->cfg.prefix && !t->in_paste) {
		t->prev_mode = t->mode; /* the grid stays after a binding */
		t->mode = MODE_PREFIX;
		draw_schedule(t);
		return;
	}
	if (t->copy.on) {
		copy_key(t, key);
		return;
	}
	if (t->mode == MODE_GRID) {
		grid_key(t, key);
		return;
	}
	if (t->mode == MODE_SIDEBAR) {
		int n;
		tui_sidebar_rows(t, &n);
		if (key == KEYC_UP || key == 'k') {
			if (t->sel > 0)
				t->sel--;
		} else if (key == KEYC_DOWN || key == 'j') {
			if (t->sel + 1 < n)
				t->sel++;
		} else if (key == 0x0d) {
			tui_sidebar_pick(t, t->sel);
			t->mode = MODE_NORMAL;
		} else if (key == 0x1b || key == 'q')
			t->mode = MODE_NORMAL;
		else if (key == 'd' || key == 'x')
			cmd_run(t, "confirm-remove-session");
		t->full_redraw = 1;
		draw_schedule(t);
		return;
	}
	if (p == NULL)
		return;
	if (p->view > 0) { /* typing returns to the live screen */
		p->view = 0;
		pane_mark_all(p);
	}
	pane_key(p, key);
	if (t->broadcast && p->src->shell)
		tui_broadcast_key(t, p, key);
}

/* Drain what the terminal sent. */
void
input_read(struct tui *t)
{
	wint_t wc;
	int r, key;

	while ((r = get_wch(&wc)) != ERR) {
		if (r == KEY_CODE_YES) {
			key = curses_key((int)wc);
			if (key == 0)
				continue;
		} else if (wc == 0x1b) {
			/* ESC then a character: Alt (Meta) with it */
			wint_t next;
			int r2 = get_wch(&next);
			if (r2 == OK && next != 0x1b)
				key = (int)next | KEYC_META;
			else if (r2 == KEY_CODE_YES) {
				key = 0x1b;
				input_key(t, key);
				key = curses_key((int)next);
				if (key == 0)
					continue;
				key |= KEYC_META;
			} else {
				key = 0x1b;
				if (r2 == OK)
					input_key(t, 0x1b);
			}
		} else if (wc == 0x7f || wc == 0x08)
			key = wc == 0x7f ? KEYC_BSPACE : 0x08;
		else
			key = (int)wc;
		input_key(t, key);
		if (t->quit)
			return;
	}
}
