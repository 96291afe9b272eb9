/*
 * wall.c: the teacher's wall socket: the sessions it shows, and check.
 *
 * The wall page opens one socket for the list and one per tile (a
 * teacher's terminal, term.c). Every second the list of the sessions the
 * -l selector picks (name, state, labels, the last check's result) is
 * made once and sent to each wall whose last copy differs. 'c' asks for
 * `vmux check SCRIPT NAME...` (the script vmux web was given): it runs as
 * a child of its own, one at a time, and its results reach the wall
 * through check.json, as they reach `vmux ls`.
 */
#include <sys/wait.h>

#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "web-int.h"

#define WALL_CHECK_MAX 64 /* sessions a check names */

extern char **environ;

/* The list of sessions shown, as the wall's JSON message (free it). */
static char *
wall_list(void)
{
	struct session_entry *e;
	size_t n;
	char *cause = NULL, *s;
	cJSON *o = cJSON_CreateObject(), *arr;

	cJSON_AddStringToObject(o, "type", "sessions");
	arr = cJSON_AddArrayToObject(o, "sessions");
	if (session_list(web.o->home, &e, &n, &cause) != 0) {
		free(cause);
		n = 0;
		e = NULL;
	}
	for (size_t i = 0; i < n; i++) {
		struct session_record *r = &e[i].rec;
		cJSON *s1, *labels, *check;

		if (!e[i].ok || !web_session_shown(r))
			continue;
		s1 = cJSON_CreateObject();
		cJSON_AddStringToObject(s1, "name", r->name);
		cJSON_AddStringToObject(s1, "state", session_state(r));
		labels = cJSON_AddObjectToObject(s1, "labels");
		for (size_t k = 0; k < r->nlabels; k++) {
			char *kv = xstrdup(r->labels[k]), *eq = strchr(kv, '=');

			if (eq != NULL) {
				*eq = '\0';
				cJSON_AddStringToObject(labels, kv, eq + 1);
			}
			free(kv);
		}
		if ((check = session_check_read(r->dir)) != NULL)
			cJSON_AddItemToObject(s1, "check", check);
		cJSON_AddItemToArray(arr, s1);
	}
	session_list_free(e, n);
	s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

/* Send the list to c unless it has it already (force: send anyway). */
static void
wall_send(struct web_conn *c, const char *list, int force)
{
	if (!force && c->wall_sent != NULL && strcmp(c->wall_sent, list) == 0)
		return;
	free(c->wall_sent);
	c->wall_sent = xstrdup(list);
	web_send(c, 'j', list, strlen(list));
}

/* The teacher's wall said hello. */
void
web_wall_hello(struct web_conn *c)
{
	cJSON *o = cJSON_CreateObject();
	char *list = wall_list();

	c->kind = WEB_WALL;
	cJSON_AddStringToObject(o, "type", "hello");
	cJSON_AddBoolToObject(o, "wall", 1);
	cJSON_AddBoolToObject(o, "check", web.o->check_script != NULL);
	if (web.o->selector != NULL)
		cJSON_AddStringToObject(o, "selector", web.o->selector);
	web_send_json(c, o);
	wall_send(c, list, 1);
	free(list);
}

/* Every second: the list to the walls, and finished checks reaped. */
void
web_wall_tick(void)
{
	char *list = NULL;

	if (web.check_pid != 0 && waitpid(web.check_pid, NULL, WNOHANG) != 0)
		web.check_pid = 0;
	for (struct web_conn *c = web.conns; c != NULL; c = c->next) {
		if (c->kind != WEB_WALL || c->ws == NULL)
			continue;
		if (list == NULL)
			list = wall_list();
		wall_send(c, list, 0);
	}
	free(list);
}

/* A notice for the wall's page. */
static void
wall_notice(struct web_conn *c, const char *text)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "type", "notice");
	cJSON_AddStringToObject(o, "text", text);
	web_send_json(c, o);
}

/* Run vmux check SCRIPT on the sessions the message names. */
static void
wall_check(struct web_conn *c, const unsigned char *p, size_t n)
{
	cJSON *o = cJSON_ParseWithLength((const char *)p, n), *v;
	const cJSON *names = cJSON_GetObjectItemCaseSensitive(o, "sessions");
	char *argv[WALL_CHECK_MAX + 4], *text;
	posix_spawn_file_actions_t fa;
	int argc = 0, bad = 0;
	pid_t pid;

	if (web.o->check_script == NULL) {
		wall_notice(c, "vmux web was started without --check SCRIPT");
		cJSON_Delete(o);
		return;
	}
	if (web.check_pid !=
	    0) { /* one at a time: a click is not a fork bomb */
		wall_notice(
		    c, "a check is running: its results come on the tiles");
		cJSON_Delete(o);
		return;
	}
	argv[argc++] = (char *)web.o->vmux_exe;
	argv[argc++] = "check";
	argv[argc++] = (char *)web.o->check_script;
	cJSON_ArrayForEach(v, names)
	{
		struct session_record r;
		char *cause = NULL;

		if (!cJSON_IsString(v) || argc == WALL_CHECK_MAX + 3 ||
		    session_name_valid(v->valuestring, &cause) != 0 ||
		    record_load(web.o->home, v->valuestring, &r, &cause) != 0) {
			free(cause);
			bad = 1;
			break;
		}
		if (web_session_shown(&r))
			argv[argc++] = v->valuestring;
		record_free(&r);
	}
	argv[argc] = NULL;
	if (bad || !cJSON_IsArray(names) || argc == 3) {
		wall_notice(c, "check: name the wall's sessions to check");
		cJSON_Delete(o);
		return;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	if (posix_spawn(&pid, web.o->vmux_exe, &fa, NULL, argv, environ) != 0)
		wall_notice(c, "check: cannot run vmux check");
	else {
		web.check_pid = pid;
		xasprintf(&text, "checking %d session%s", argc - 3,
		    argc == 4 ? "" : "s");
		wall_notice(c, text);
		free(text);
	}
	posix_spawn_file_actions_destroy(&fa);
	cJSON_Delete(o);
}

/* A binary message from the wall's page; 0, or -1 to close now. */
int
web_wall_message(struct web_conn *c, const unsigned char *m, size_t len)
{
	if (m[0] == 'c') {
		wall_check(c, m + 1, len - 1);
		return 0;
	}
	web_close(c, WEB_CLOSE_BAD, 1, "unknown message type 0x%02x", m[0]);
	return 0;
}
