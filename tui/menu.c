/*
 * menu.c: a list to choose from in a box (the signal menu, transfers) and
 * yes/no questions before anything is destroyed. Up/Down or j/k move,
 * Enter chooses, a digit chooses that entry, Esc or q cancels; in a
 * question y and n answer. The callback gets the index, or -1.
 */
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "tui.h"

/* Open a menu of n items (copied). */
void
menu_open(struct tui *t, const char *title, const char *const *items, size_t n,
    menu_done_cb done, void *arg)
{
	struct menu *m = &t->menu;

	menu_close(t);
	m->on = 1;
	m->title = xstrdup(title);
	m->items = xcalloc(n, sizeof *m->items);
	for (size_t i = 0; i < n; i++)
		m->items[i] = xstrdup(items[i]);
	m->n = n;
	m->sel = 0;
	m->done = done;
	m->arg = arg;
	draw_schedule(t);
}

/* Close the menu without calling back. */
void
menu_close(struct tui *t)
{
	struct menu *m = &t->menu;

	for (size_t i = 0; i < m->n; i++)
		free(m->items[i]);
	free(m->items);
	free(m->title);
	memset(m, 0, sizeof *m);
	t->full_redraw = 1;
	draw_schedule(t);
}

/* Close and report choice. */
static void
menu_finish(struct tui *t, int choice)
{
	menu_done_cb done = t->menu.done;
	void *arg = t->menu.arg;

	menu_close(t);
	if (done != NULL)
		done(t, choice, arg);
}

/* A key for the menu; always 1 (a menu takes every key). */
int
menu_key(struct tui *t, int key)
{
	struct menu *m = &t->menu;
	int question = m->n == 2 && strcmp(m->items[0], "yes (y)") == 0;

	if (question && (key == 'y' || key == 'Y')) {
		menu_finish(t, 0);
		return 1;
	}
	if (question && (key == 'n' || key == 'N')) {
		menu_finish(t, 1);
		return 1;
	}
	switch (key) {
	case KEYC_UP:
	case 'k':
		if (m->sel > 0)
			m->sel--;
		break;
	case KEYC_DOWN:
	case 'j':
		if (m->sel + 1 < m->n)
			m->sel++;
		break;
	case 0x0d:
		menu_finish(t, (int)m->sel);
		return 1;
	case 0x1b:
	case 'q':
	case 0x03:
		menu_finish(t, -1);
		return 1;
	default:
		if (key >= '0' && key <= '9' && (size_t)(key - '0') < m->n &&
		    !question) {
			menu_finish(t, key - '0');
			return 1;
		}
		break;
	}
	draw_schedule(t);
	return 1;
}

/* Ask question; done gets 0 for yes, 1 or -1 for no. */
void
confirm_open(struct tui *t, const char *question, menu_done_cb done, void *arg)
{
	static const char *const yn[] = {"yes (y)", "no (n)"};

	menu_open(t, question, yn, 2, done, arg);
	t->menu.sel = 1; /* Enter alone does not destroy */
}
