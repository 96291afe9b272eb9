/*
 * prompt.c: a line of text typed on the status bar: the command prompt
 * (prefix :) and the questions of upload and download. Emacs-style editing
 * (C-a C-e C-u C-k C-w, arrows), history with Up/Down, Tab completes
 * command names, session names, shell ids and host paths, and guest
 * paths by asking the guest (on the thread pool).
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "common/common.h"
#include "tui.h"

/* Open a prompt; done gets the answer (NULL if cancelled) and arg. */
void
prompt_open(struct tui *t, const char *label, const char *initial, int complete,
    prompt_done_cb done, void *arg)
{
	struct prompt *p = &t->prompt;

	free(p->label);
	free(p->text);
	p->on = 1;
	p->label = xstrdup(label);
	p->len = strlen(initial);
	p->cap = p->len + 64;
	p->text = xmalloc(p->cap);
	memcpy(p->text, initial, p->len + 1);
	p->pos = p->len;
	p->complete = complete;
	p->done = done;
	p->arg = arg;
	p->hist_pos = p->nhist;
	draw_schedule(t);
}

/* Close the prompt without an answer. */
static void
prompt_close(struct tui *t)
{
	t->prompt.on = 0;
	t->full_redraw = 1;
	draw_schedule(t);
}

/* Replace the text. */
static void
prompt_set(struct prompt *p, const char *s)
{
	p->len = strlen(s);
	if (p->len + 1 > p->cap) {
		p->cap = p->len + 64;
		p->text = xrealloc(p->text, p->cap);
	}
	memcpy(p->text, s, p->len + 1);
	p->pos = p->len;
}

/* Insert bytes at the cursor. */
static void
prompt_insert(struct prompt *p, const char *s, size_t n)
{
	if (p->len + n + 1 > p->cap) {
		p->cap = (p->len + n + 1) * 2;
		p->text = xrealloc(p->text, p->cap);
	}
	memmove(p->text + p->pos + n, p->text + p->pos, p->len - p->pos + 1);
	memcpy(p->text + p->pos, s, n);
	p->pos += n;
	p->len += n;
}

/* Delete bytes [from, to). */
static void
prompt_delete(struct prompt *p, size_t from, size_t to)
{
	memmove(p->text + from, p->text + to, p->len - to + 1);
	p->len -= to - from;
	p->pos = from;
}

/* The start of the UTF-8 character before byte i. */
static size_t
char_before(const char *s, size_t i)
{
	if (i == 0)
		return 0;
	i--;
	while (i > 0 && (s[i] & 0xc0) == 0x80)
		i--;
	return i;
}

/* Add word to a list if it starts with prefix. */
static void
add_match(char ***v, size_t *n, const char *word, const char *prefix)
{
	if (strncmp(word, prefix, strlen(prefix)) != 0)
		return;
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*v)[i], word) == 0)
			return;
	*v = xreallocarray(*v, *n + 1, sizeof **v);
	(*v)[(*n)++] = xstrdup(word);
}

/* Host paths starting with prefix ("dir/" for directories). */
static void
complete_path(char ***v, size_t *n, const char *prefix)
{
	const char *slash = strrchr(prefix, '/');
	char *dir = slash ? xstrndup(prefix, (size_t)(slash - prefix + 1))
	                  : xstrdup("");
	const char *base = slash ? slash + 1 : prefix;
	DIR *d = opendir(*dir ? dir : ".");
	struct dirent *e;

	while (d != NULL && (e = readdir(d)) != NULL) {
		char *w;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (e->d_name[0] == '.' && base[0] != '.')
			continue;
		xasprintf(&w, "%s%s%s", dir, e->d_name,
		    e->d_type == DT_DIR ? "/" : "");
		add_match(v, n, w, prefix);
		free(w);
	}
	if (d != NULL)
		closedir(d);
	free(dir);
}

/*
 * Candidates for the word being typed at the end of line: command names
 * for the first word, then session names, "SESSION:" prefixes, shell ids
 * and host paths. *word_start is where that word begins.
 */
static char **
complete_words(struct tui *t, const char *line, size_t *n, size_t *word_start)
{
	const char *w = strrchr(line, ' ');
	char **v = NULL;

	*n = 0;
	*word_start = w == NULL ? 0 : (size_t)(w - line + 1);
	w = line + *word_start;
	if (t->prompt.complete == 2) {
		*word_start = 0;
		complete_path(&v, n, line);
		return v;
	}
	if (*word_start == 0) {
		for (const char *const *c = tui_command_names(); *c; c++)
			add_match(&v, n, *c, w);
		return v;
	}
	if (*w == '-')
		return NULL;
	for (size_t i = 0; i < t->model.n; i++) {
		struct msession *s = &t->model.sessions[i];
		char *sw;
		add_match(&v, n, s->name, w);
		xasprintf(&sw, "%s:", s->name);
		if (strchr(w, ':') == NULL && strchr(w, '/') == NULL &&
		    strncmp(line, "cp ", 3) == 0)
			add_match(&v, n, sw, w);
		free(sw);
		for (size_t j = 0; j < s->nshells && t->cur_session &&
		     strcmp(s->name, t->cur_session) == 0;
		     j++)
			add_match(&v, n, s->shells[j].id, w);
	}
	if (strchr(w, ':') == NULL)
		complete_path(&v, n, w);
	return v;
}

/*
 * Apply candidates v[0..n) for the word starting at byte start: extend to
 * their longest common prefix, list them when there are several.
 */
static void
prompt_apply(struct tui *t, char **v, size_t n, size_t start)
{
	struct prompt *p = &t->prompt;
	size_t common;

	if (n == 0)
		return;
	common = strlen(v[0]);
	for (size_t i = 1; i < n; i++) {
		size_t k = 0;
		while (k < common && v[i][k] == v[0][k])
			k++;
		common = k;
	}
	if (common > p->pos - start) {
		prompt_delete(p, start, p->pos);
		prompt_insert(p, v[0], common);
	}
	if (n == 1 && common > 0 && v[0][common - 1] != '/' &&
	    v[0][common - 1] != ':' && p->complete != 3)
		prompt_insert(p, " ", 1);
	else if (n > 1) {
		char buf[512];
		size_t off = 0;
		for (size_t i = 0; i < n && off < sizeof buf - 1; i++)
			off += (size_t)snprintf(
			    buf + off, sizeof buf - off, "%s ", v[i]);
		tui_message(t, 0, "%s", buf);
	}
	draw_schedule(t);
}

/* Guest paths listed: complete if the prompt still shows what was asked. */
static void
guest_paths_after(struct tui *t, struct work *w)
{
	struct prompt *p = &t->prompt;
	const cJSON *out = cJSON_GetObjectItemCaseSensitive(w->reply, "stdout");
	char **v = NULL, *copy, *line, *save = NULL;
	size_t n = 0;

	if (w->rc != 0 || !p->on || p->complete != 3 || !cJSON_IsString(out) ||
	    p->pos != p->len || strcmp(p->text, w->shell) != 0)
		return;
	copy = xstrdup(out->valuestring);
	for (line = strtok_r(copy, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		v = xreallocarray(v, n + 1, sizeof *v);
		v[n++] = str_printable(line, 0);
	}
	prompt_apply(t, v, n, 0);
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	free(copy);
}

/* Tab on a guest path: ask the guest (ls -dp) on the thread pool. */
static void
complete_guest_path(struct tui *t)
{
	struct prompt *p = &t->prompt;
	struct work *w;

	if (t->cur_session == NULL || p->text[0] != '/')
		return;
	w = work_new(t, work_agent_call, guest_paths_after);
	w->session = xstrdup(t->cur_session);
	w->shell = xstrdup(p->text); /* what the answer is for */
	{
		const char *argv[] = {"sh", "-c",
		    "ls -dp -- \"$1\"* 2>/dev/null | head -n 64", "sh", p->text,
		    NULL};
		w->request = agent_req_exec(argv, 5);
	}
	work_queue(w);
}

/* Tab: complete to the longest common prefix, list when ambiguous. */
static void
prompt_complete(struct tui *t)
{
	struct prompt *p = &t->prompt;
	size_t n, start;
	char **v, *line;

	if (p->complete == 3) {
		complete_guest_path(t);
		return;
	}
	line = xstrndup(p->text, p->pos);
	v = complete_words(t, line, &n, &start);
	prompt_apply(t, v, n, start);
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	free(line);
}

/* Enter: remember the line and hand it over. */
static void
prompt_finish(struct tui *t, int cancel)
{
	struct prompt *p = &t->prompt;
	char *answer = cancel ? NULL : xstrdup(p->text);

	if (answer != NULL && *answer != '\0' && p->complete == 1) {
		p->hist = xreallocarray(p->hist, p->nhist + 1, sizeof *p->hist);
		p->hist[p->nhist++] = xstrdup(answer);
	}
	prompt_close(t);
	if (p->done != NULL)
		p->done(t, answer, p->arg);
	else
		free(p->arg);
	free(answer);
}

/* A key for the prompt; always 1 (the prompt takes every key). */
int
prompt_key(struct tui *t, int key)
{
	struct prompt *p = &t->prompt;
	char buf[8];
	size_t i;

	switch (key) {
	case 0x0d:
		prompt_finish(t, 0);
		return 1;
	case 0x1b:
	case 0x03:
	case 0x07:
		prompt_finish(t, 1);
		return 1;
	case 0x09:
		prompt_complete(t);
		break;
	case KEYC_BSPACE:
	case 0x08:
		if (p->pos > 0)
			prompt_delete(p, char_before(p->text, p->pos), p->pos);
		break;
	case KEYC_DC:
	case 0x04:
		if (p->pos < p->len) {
			i = p->pos + 1;
			while (i < p->len && (p->text[i] & 0xc0) == 0x80)
				i++;
			prompt_delete(p, p->pos, i);
			p->pos = p->pos;
		}
		break;
	case KEYC_LEFT:
	case 0x02:
		p->pos = char_before(p->text, p->pos);
		break;
	case KEYC_RIGHT:
	case 0x06:
		if (p->pos < p->len) {
			p->pos++;
			while (
			    p->pos < p->len && (p->text[p->pos] & 0xc0) == 0x80)
				p->pos++;
		}
		break;
	case KEYC_HOME:
	case 0x01:
		p->pos = 0;
		break;
	case KEYC_END:
	case 0x05:
		p->pos = p->len;
		break;
	case 0x15: /* C-u */
		prompt_delete(p, 0, p->pos);
		break;
	case 0x0b: /* C-k */
		p->text[p->pos] = '\0';
		p->len = p->pos;
		break;
	case 0x17: /* C-w */
		i = p->pos;
		while (i > 0 && p->text[i - 1] == ' ')
			i--;
		while (i > 0 && p->text[i - 1] != ' ')
			i--;
		prompt_delete(p, i, p->pos);
		break;
	case KEYC_UP:
		if (p->hist_pos > 0)
			prompt_set(p, p->hist[--p->hist_pos]);
		break;
	case KEYC_DOWN:
		if (p->hist_pos + 1 < p->nhist)
			prompt_set(p, p->hist[++p->hist_pos]);
		else {
			p->hist_pos = p->nhist;
			prompt_set(p, "");
		}
		break;
	default:
		if (key >= 0x20 && key < KEYC_BASE && key != 0x7f) {
			mbstate_t st;
			size_t n;
			memset(&st, 0, sizeof st);
			n = wcrtomb(buf, (wchar_t)key, &st);
			if (n != (size_t)-1)
				prompt_insert(p, buf, n);
		}
		break;
	}
	draw_schedule(t);
	return 1;
}
