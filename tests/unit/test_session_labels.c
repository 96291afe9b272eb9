/*
 * test_session_labels.c: labels (KEY=VALUE) and selectors (kubectl's -l
 * syntax) that pick sessions by them, and name globs.
 */
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "session/session.h"
#include "unit.h"

/* Does sel parse and match labels[0..n)? -1 if it does not parse. */
static int
sel(const char *s, char *const *labels, size_t n)
{
	struct selector x;
	char *cause = NULL;
	int m;

	if (selector_parse(s, &x, &cause) != 0) {
		free(cause);
		return -1;
	}
	m = selector_match(&x, labels, n);
	selector_free(&x);
	return m;
}

/* The cause a bad label or selector gets (freed by the caller). */
static char *
why(int selector, const char *s)
{
	struct selector x;
	char *cause = NULL;

	if (selector ? selector_parse(s, &x, &cause) == 0
	             : label_valid(s, &cause) == 0) {
		if (selector)
			selector_free(&x);
		return xstrdup("(accepted)");
	}
	return cause;
}

TEST(labels_key_value_checked)
{
	char *c;

	CHECK_INT(label_valid("class=cs101", NULL), 0);
	CHECK(label_key_valid("class") && label_key_valid("team/a.b_c-d"));
	CHECK(!label_key_valid("") && !label_key_valid("-k") &&
	    !label_key_valid("a b") && !label_key_valid("a=b"));
	CHECK_INT(label_valid("team/a.b_c-d=", NULL), 0); /* empty value */
	c = why(0, "class");
	CHECK(strstr(c, "KEY=VALUE expected") != NULL);
	free(c);
	c = why(0, "=x");
	CHECK(strstr(c, "1 to 63") != NULL);
	free(c);
	c = why(0, "-k=v");
	CHECK(strstr(c, "starts with a letter or digit") != NULL);
	free(c);
	c = why(0, "k=a b");
	CHECK(strstr(c, "label value holds only") != NULL &&
	    strstr(c, "'k=a b'") != NULL);
	free(c);
	c = why(0, "k=v,w");
	CHECK(strstr(c, "label value") != NULL);
	free(c);
}

TEST(labels_no_key_twice)
{
	char *ok[] = {"a=1", "ab=2", "b=1"}, *twice[] = {"a=1", "b=2", "a=3"};
	char *cause = NULL;

	CHECK_INT(labels_valid(ok, 3, NULL), 0);
	CHECK_INT(labels_valid(twice, 3, &cause), -1);
	CHECK_STR(cause, "label key 'a' given twice");
	free(cause);
	CHECK_STR(label_get(ok, 3, "ab"), "2");
	CHECK(label_get(ok, 3, "c") == NULL);
}

TEST(selector_terms_all_hold)
{
	char *l[] = {"class=cs101", "seat=12", "role=student"};

	CHECK_INT(sel("class=cs101", l, 3), 1);
	CHECK_INT(sel("class==cs101", l, 3), 1);
	CHECK_INT(sel("class=cs102", l, 3), 0);
	CHECK_INT(sel("class=cs101,role=student", l, 3), 1);
	CHECK_INT(sel("class=cs101,role=teacher", l, 3), 0);
	CHECK_INT(sel("role!=teacher", l, 3), 1);
	CHECK_INT(sel("team!=a", l, 3), 1); /* unset counts as not equal */
	CHECK_INT(sel("role!=student", l, 3), 0);
	CHECK_INT(sel("seat", l, 3), 1);
	CHECK_INT(sel("team", l, 3), 0);
	CHECK_INT(sel("!team", l, 3), 1);
	CHECK_INT(sel("!seat", l, 3), 0);
	CHECK_INT(sel("class=", l, 3), 0);
	CHECK_INT(sel("class=", NULL, 0), 0);
}

TEST(selector_bad_syntax_named)
{
	char *c;

	CHECK_INT(sel("", NULL, 0), -1);
	CHECK_INT(sel("a=1,", NULL, 0), -1);
	CHECK_INT(sel(",a=1", NULL, 0), -1);
	CHECK_INT(sel("a!1", NULL, 0), -1);
	CHECK_INT(sel("a=b c", NULL, 0), -1);
	CHECK_INT(sel("!", NULL, 0), -1);
	c = why(1, "class=cs101,,x");
	CHECK_STR(c, "selector 'class=cs101,,x': an empty term");
	free(c);
	c = why(1, "a<b");
	CHECK(strstr(c, "selector 'a<b'") != NULL);
	free(c);
}

TEST(name_globs)
{
	CHECK(name_is_glob("student-*"));
	CHECK(name_is_glob("s?"));
	CHECK(name_is_glob("s[12]"));
	CHECK(!name_is_glob("student-1"));
	CHECK(name_glob_match("student-*", "student-12"));
	CHECK(!name_glob_match("student-*", "teacher"));
	CHECK(name_glob_match("s[12]", "s2"));
}
