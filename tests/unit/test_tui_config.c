/*
 * test_tui_config.c: key names (keyname.c), the configuration file
 * (config.c) and themes (theme.c with the built-ins from themes/).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "tui/tui.h"
#include "session/session.h"
#include "unit.h"

/* key_parse(name) or -2 on error. */
static int
parse(const char *name)
{
	char *cause = NULL;
	int k;

	if (key_parse(name, &k, &cause) != 0) {
		free(cause);
		return -2;
	}
	return k;
}

TEST(key_names_parse_as_tmux_spells_them)
{
	CHECK_INT(parse("C-b"), 0x02);
	CHECK_INT(parse("^B"), 0x02);
	CHECK_INT(parse("C-a"), 0x01);
	CHECK_INT(parse("C-Space"), 0);
	CHECK_INT(parse("C-["), 0x1b);
	CHECK_INT(parse("Escape"), 0x1b);
	CHECK_INT(parse("Enter"), 0x0d);
	CHECK_INT(parse("Tab"), 0x09);
	CHECK_INT(parse("Space"), ' ');
	CHECK_INT(parse("BSpace"), KEYC_BSPACE);
	CHECK_INT(parse("x"), 'x');
	CHECK_INT(parse("M-x"), 'x' | KEYC_META);
	CHECK_INT(parse("C-M-x"), 0x18 | KEYC_META);
	CHECK_INT(parse("Up"), KEYC_UP);
	CHECK_INT(parse("C-Up"), KEYC_UP | KEYC_CTRL);
	CHECK_INT(parse("S-Left"), KEYC_LEFT | KEYC_SHIFT);
	CHECK_INT(parse("PageUp"), KEYC_PPAGE);
	CHECK_INT(parse("PPage"), KEYC_PPAGE);
	CHECK_INT(parse("F1"), KEYC_F1);
	CHECK_INT(parse("F12"), KEYC_F1 + 11);
	CHECK_INT(parse("\xc3\xa9"), 0xe9);
	CHECK_INT(parse("F13"), -2);
	CHECK_INT(parse("Foo"), -2);
	CHECK_INT(parse(""), -2);
	CHECK_INT(parse("C-"), -2);
}

TEST(key_string_reads_back)
{
	static const char *names[] = {"C-b", "C-a", "M-x", "C-M-x", "Up",
	    "C-Up", "S-Left", "F5", "F12", "Space", "Enter", "Escape", "Tab",
	    "BSpace", "x", "[", "?", "PPage", "DC", "\xc3\xa9", "\xe4\xb8\xad",
	    "C-Space"};
	char buf[32];

	for (size_t i = 0; i < nitems(names); i++) {
		int k = parse(names[i]);
		CHECK(k != -2);
		key_string(k, buf, sizeof buf);
		CHECK_STR(buf, names[i]);
		CHECK_INT(parse(buf), k);
	}
}

TEST(defaults_are_tmux_like)
{
	struct config c;

	config_defaults(&c);
	CHECK_INT(c.prefix, 0x02);
	CHECK_STR(c.theme, "default");
	CHECK_INT(c.scrollback, CONFIG_SCROLLBACK_DEFAULT);
	CHECK(c.sidebar && c.mouse);
	CHECK_STR(config_binding(&c, 'c'), "new-shell");
	CHECK_STR(config_binding(&c, 'z'), "zoom");
	CHECK_STR(config_binding(&c, '['), "copy-mode");
	CHECK_STR(config_binding(&c, 'd'), "detach");
	CHECK_STR(config_binding(&c, 0x02), "send-prefix");
	CHECK_STR(config_binding(&c, '3'), "select-shell 3");
	CHECK_STR(config_binding(&c, 'k'), "signal-menu");
	CHECK(config_binding(&c, 'Q') == NULL);
	CHECK_INT(c.nerrors, 0);
	config_free(&c);
}

TEST(options_good_and_bad)
{
	struct config c;

	config_defaults(&c);
	config_parse(&c,
	    "# a comment\n"
	    "\n"
	    "set prefix C-a\n"
	    "set theme light   # trailing comment\n"
	    "set scrollback 20M\n"
	    "set sidebar-width 28\n"
	    "set sidebar off\n"
	    "set mouse off\n"
	    "set sidebar-width 200\n"
	    "set scrollback lots\n"
	    "set mouse maybe\n"
	    "set colour red\n"
	    "set prefix Hyper-x\n"
	    "set theme\n"
	    "frobnicate\n",
	    "vmux.conf");
	CHECK_INT(c.prefix, 0x01);
	CHECK_STR(c.theme, "light");
	CHECK_INT(c.scrollback, 20u << 20);
	CHECK_INT(c.sidebar_width, 28);
	CHECK(!c.sidebar && !c.mouse);
	CHECK_INT(c.nerrors, 7);
	CHECK_STR(c.errors[0],
	    "vmux.conf:9: bad value \"200\" for sidebar-width: want 12-80");
	CHECK_STR(c.errors[1],
	    "vmux.conf:10: bad value \"lots\" for scrollback: want 4K-1G");
	CHECK_STR(c.errors[2],
	    "vmux.conf:11: bad value \"maybe\" for mouse: want on or off");
	CHECK_STR(c.errors[3], "vmux.conf:12: unknown option \"colour\"");
	CHECK_STR(c.errors[4], "vmux.conf:13: unknown key \"Hyper-x\"");
	CHECK_STR(c.errors[5], "vmux.conf:14: set needs an option and a value");
	CHECK_STR(c.errors[6], "vmux.conf:15: unknown command \"frobnicate\"");
	config_free(&c);
}

TEST(bind_unbind_and_quotes)
{
	struct config c;

	config_defaults(&c);
	config_parse(&c,
	    "bind v new-shell\n"
	    "bind c command-prompt \"new x\"\n"
	    "bind M-s 'send-signal INT'\n"
	    "unbind z\n"
	    "bind q\n"
	    "bind Nope zoom\n"
	    "bind e \"unterminated\n",
	    "f");
	CHECK_STR(config_binding(&c, 'v'), "new-shell");
	CHECK_STR(config_binding(&c, 'c'), "command-prompt new x");
	CHECK_STR(config_binding(&c, 's' | KEYC_META), "send-signal INT");
	CHECK(config_binding(&c, 'z') == NULL);
	CHECK_INT(c.nerrors, 3);
	CHECK_STR(c.errors[0], "f:5: bind needs a key and a command");
	CHECK_STR(c.errors[1], "f:6: unknown key \"Nope\"");
	CHECK_STR(c.errors[2], "f:7: unterminated quote");
	config_free(&c);
}

/* The TUI's sizes go through the one size parser (option_size_bytes). */
static int
size_of(const char *s, long long *v)
{
	char *cause = NULL;
	int rc = option_size_bytes("size", s, 0, 1LL << 40, v, &cause);

	free(cause);
	return rc;
}

TEST(config_size_units)
{
	long long v;

	CHECK(size_of("4096", &v) == 0 && v == 4096);
	CHECK(size_of("10M", &v) == 0 && v == 10LL << 20);
	CHECK(size_of("512K", &v) == 0 && v == 512LL << 10);
	CHECK(size_of("1G", &v) == 0 && v == 1LL << 30);
	CHECK(size_of("2MiB", &v) == 0 && v == 2LL << 20);
	CHECK(size_of("2KB", &v) == 0 && v == 2LL << 10);
	CHECK(size_of("x", &v) != 0);
	CHECK(size_of("10Q", &v) != 0);
	CHECK(size_of("", &v) != 0);
	CHECK(size_of("-1", &v) != 0);
	CHECK(size_of("iB", &v) != 0);
}

/* A private directory for files (removed by the caller). */
static char *
tmpdir(void)
{
	char *d = xstrdup("/tmp/vmux-unit-conf.XXXXXX");

	if (mkdtemp(d) == NULL)
		abort();
	return d;
}

/* Write text to path. */
static void
put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		abort();
	fputs(text, f);
	fclose(f);
}

TEST(config_load_missing_and_unreadable)
{
	struct config c;
	char *d = tmpdir(), *p;

	config_defaults(&c);
	xasprintf(&p, "%s/none.conf", d);
	CHECK_INT(config_load(&c, p), 0);
	CHECK_INT(c.nerrors, 0);
	free(p);
	xasprintf(&p, "%s/a.conf", d);
	put(p, "set sidebar-width 40\nset bogus 1\n");
	CHECK_INT(config_load(&c, p), 0);
	CHECK_INT(c.sidebar_width, 40);
	CHECK_INT(c.nerrors, 1);
	CHECK_STR(c.errors[0], "a.conf:2: unknown option \"bogus\"");
	/* a directory cannot be read as a file */
	CHECK_INT(config_load(&c, d), -1);
	CHECK_INT(c.nerrors, 2);
	config_free(&c);
	CHECK(unlink(p) == 0);
	CHECK(rmdir(d) == 0); /* nothing left behind in /tmp */
	free(p);
	free(d);
}

TEST(config_path_follows_xdg_then_home)
{
	char *p;

	setenv("XDG_CONFIG_HOME", "/x/cfg", 1);
	setenv("HOME", "/h", 1);
	p = config_path();
	CHECK_STR(p, "/x/cfg/vmux/vmux.conf");
	free(p);
	unsetenv("XDG_CONFIG_HOME");
	p = config_path();
	CHECK_STR(p, "/h/.config/vmux/vmux.conf");
	free(p);
	unsetenv("HOME");
	CHECK(config_path() == NULL);
}

TEST(every_builtin_theme_sets_every_item)
{
	const char *const *names = theme_builtin_names();
	int n = 0;

	unsetenv("XDG_CONFIG_HOME");
	unsetenv("HOME");
	for (; *names != NULL; names++, n++) {
		struct theme th;
		char *cause = NULL;
		CHECK(theme_load(&th, *names, &cause) == 0);
		if (cause != NULL)
			fprintf(stderr, "  %s\n", cause);
		free(cause);
		CHECK_STR(th.name, *names);
		if (strcmp(*names, "monochrome") == 0)
			for (int i = 0; i < TH_NITEMS; i++)
				CHECK(th.st[i].fg == COLOUR_DEFAULT &&
				    th.st[i].bg == COLOUR_DEFAULT);
		theme_free(&th);
	}
	CHECK_INT(n, 4);
}

TEST(bad_themes_name_the_line)
{
	struct theme th;
	char *cause = NULL;

	CHECK(theme_parse(&th, "t", "sidebar red blue\nborder purple black\n",
	          &cause) != 0);
	CHECK_STR(cause, "t:2: bad colour \"purple\"");
	free(cause);
	cause = NULL;
	CHECK(theme_parse(&th, "t", "nosuch red blue\n", &cause) != 0);
	CHECK_STR(cause, "t:1: unknown item \"nosuch\"");
	free(cause);
	cause = NULL;
	CHECK(theme_parse(&th, "t", "sidebar red blue sparkly\n", &cause) != 0);
	CHECK_STR(cause, "t:1: unknown attribute \"sparkly\"");
	free(cause);
	cause = NULL;
	CHECK(theme_parse(&th, "t", "sidebar red blue\n", &cause) != 0);
	CHECK_STR(cause, "t: item \"sidebar-selected\" is not set");
	free(cause);
	cause = NULL;
	CHECK(theme_load(&th, "../etc/passwd", &cause) != 0);
	CHECK(strstr(cause, "invalid theme name") != NULL);
	free(cause);
	cause = NULL;
	CHECK(theme_load(&th, "nosuch", &cause) != 0);
	CHECK_STR(cause,
	    "unknown theme \"nosuch\" (built in: default, "
	    "high-contrast, light, monochrome)");
	free(cause);
}

TEST(user_theme_takes_precedence)
{
	struct theme th;
	char *d = tmpdir(), *dir, *file, *cause = NULL, *text;
	const char *items =
	    "sidebar-selected default default\nsidebar-session default "
	    "default\nborder default default\nstatus default default\n"
	    "status-accent default default\nmessage default default\nerror "
	    "default default\ndialog default default\ndialog-selected default "
	    "default\nrunning default default\nstarting default default\n"
	    "stopped default default\ncopy-selection default default\n"
	    "tile-title default default\ntile-focus default default\n";

	setenv("XDG_CONFIG_HOME", d, 1);
	xasprintf(&dir, "%s/vmux", d);
	CHECK(mkdir(dir, 0700) == 0);
	free(dir);
	xasprintf(&dir, "%s/vmux/themes", d);
	CHECK(mkdir(dir, 0700) == 0);
	xasprintf(&file, "%s/light.theme", dir);
	xasprintf(&text, "sidebar colour42 #ff0000 bold\n%s", items);
	put(file, text);
	CHECK(theme_load(&th, "light", &cause) == 0);
	CHECK_INT(th.st[TH_SIDEBAR].fg, 42);
	CHECK_INT(th.st[TH_SIDEBAR].bg, 196);
	CHECK_INT(th.st[TH_SIDEBAR].attrs, THEME_ATTR_BOLD);
	theme_free(&th);
	/* a broken user theme is an error naming its file */
	put(file, "sidebar red\n");
	CHECK(theme_load(&th, "light", &cause) != 0);
	CHECK(
	    strstr(cause, "light.theme:1: sidebar needs a foreground") != NULL);
	free(cause);
	unlink(file);
	CHECK(rmdir(dir) == 0);
	*strrchr(dir, '/') = '\0';
	CHECK(rmdir(dir) == 0);
	CHECK(rmdir(d) == 0);
	unsetenv("XDG_CONFIG_HOME");
	free(text);
	free(file);
	free(dir);
	free(d);
}

/* What libvterm sends for key on a terminal in the modes set by setup. */
static char enc_out[64];
static size_t enc_len;

static void
enc_cb(const char *s, size_t len, void *user)
{
	if (enc_len + len < sizeof enc_out) {
		memcpy(enc_out + enc_len, s, len);
		enc_len += len;
	}
}

static const char *
encode(const char *setup, int key)
{
	VTerm *vt = vterm_new(24, 80);
	static char got[64];

	vterm_set_utf8(vt, 1);
	vterm_output_set_callback(vt, enc_cb, NULL);
	vterm_screen_reset(vterm_obtain_screen(vt), 1);
	vterm_input_write(vt, setup, strlen(setup));
	enc_len = 0;
	key_encode(vt, key);
	memcpy(got, enc_out, enc_len);
	got[enc_len] = '\0';
	vterm_free(vt);
	return got;
}

TEST(keys_are_encoded_for_the_guest_programs_modes)
{
	CHECK_STR(encode("", KEYC_UP), "\033[A");
	/* application cursor keys (DECCKM), as vim and less set them */
	CHECK_STR(encode("\033[?1h", KEYC_UP), "\033OA");
	CHECK_STR(encode("\033[?1h", KEYC_LEFT), "\033OD");
	CHECK_STR(encode("", KEYC_UP | KEYC_CTRL), "\033[1;5A");
	CHECK_STR(encode("", KEYC_RIGHT | KEYC_SHIFT), "\033[1;2C");
	CHECK_STR(encode("", KEYC_F1 + 4), "\033[15~");
	CHECK_STR(encode("", KEYC_F1), "\033OP");
	CHECK_STR(encode("", KEYC_PPAGE), "\033[5~");
	CHECK_STR(encode("", KEYC_DC), "\033[3~");
	CHECK_STR(encode("", KEYC_BSPACE), "\177");
	CHECK_STR(encode("", KEYC_BTAB), "\033[Z");
	CHECK_STR(encode("", 0x0d), "\r");
	CHECK_STR(encode("", 'x' | KEYC_META), "\033x");
	CHECK_STR(encode("", 0x18 | KEYC_META), "\033\030");
	CHECK_STR(encode("", 0x03), "\003");
	CHECK_STR(encode("", 0xe9), "\xc3\xa9");
}
