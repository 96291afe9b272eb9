/*
 * test_cli_man.c: man/vmux.1 documents every command and every option of
 * the command table (cmd_table, so a new command is covered at once), so
 * `vmux CMD --help` and the manual cannot drift apart. Run from the top
 * of the tree (tests/run-all does).
 */
#include <stdlib.h>

#include "common/common.h"
#include "session/session.h"
#include "cli/cli.h"
#include "unit.h"

/* The manual's text. */
static char *
man_text(void)
{
	FILE *f = fopen("man/vmux.1", "r");
	char *buf = xcalloc(1, 1 << 20);

	if (f == NULL)
		fatal("man/vmux.1");
	if (fread(buf, 1, (1 << 20) - 1, f) == 0)
		fatalx("man/vmux.1 is empty");
	fclose(f);
	return buf;
}

TEST(man_documents_every_command_and_option)
{
	char *man = man_text(), *want;
	size_t i;

	for (i = 0; cmd_table[i] != NULL; i++) {
		const struct cmd_entry *e = cmd_table[i];
		const struct cmd_opt *o;

		xasprintf(&want, ".It Cm %s", e->name);
		if (strstr(man, want) == NULL) {
			unit_fail(__FILE__, __LINE__, "no '%s'", want);
			return;
		}
		free(want);
		for (o = e->opts; o->name != NULL; o++) {
			xasprintf(&want, "Fl -%s", o->name);
			if (strstr(man, want) == NULL) {
				unit_fail(__FILE__, __LINE__, "%s: no '%s'",
				    e->name, want);
				return;
			}
			free(want);
			if (o->short_name == 0)
				continue;
			xasprintf(&want, "Fl %c", o->short_name);
			if (strstr(man, want) == NULL) {
				unit_fail(__FILE__, __LINE__, "%s: no '%s'",
				    e->name, want);
				return;
			}
			free(want);
		}
	}
	free(man);
}

TEST(man_lists_environment)
{
	static const char *vars[] = {"VMUX_HOME", "XDG_STATE_HOME",
	    "XDG_RUNTIME_DIR", "VMUX_GUEST_DIR", "VMUX_QEMU", "VMUX_BRIDGE",
	    "VMUX_LOG"};
	char *man = man_text(), *want;
	size_t i;

	for (i = 0; i < nitems(vars); i++) {
		xasprintf(&want, ".It Ev %s", vars[i]);
		CHECK(strstr(man, want) != NULL);
		free(want);
	}
	free(man);
}

TEST(man_names_every_session_option)
{
	char *man = man_text(), *want;

	/* the table's rows: a profile's field is listed with the others, and
	 * every key a record or ls --json shows is named */
	for (int i = 0; i < SOPT_N; i++) {
		const struct session_option *so = &session_options[i];
		if (so->flags & SOPT_PROFILE) {
			xasprintf(&want, "%s", so->flag);
			CHECK(
			    strstr(strstr(man, ".Sh PROFILES"), want) != NULL);
			free(want);
		}
		if (so->flags & (SOPT_LS | SOPT_PROFILE)) {
			xasprintf(&want, ".Ql %s", so->key);
			if (strstr(man, want) == NULL)
				unit_fail(__FILE__, __LINE__, "no '%s'", want);
			free(want);
		}
	}
	free(man);
}
