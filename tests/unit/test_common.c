/* test_common.c: unit tests for common/ helpers. */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/common.h"
#include "unit.h"

TEST(xasprintf_formats)
{
	char *s;

	CHECK_INT(xasprintf(&s, "%s-%d", "a", 7), 3);
	CHECK_STR(s, "a-7");
	free(s);
}

TEST(time_rfc3339_is_utc_with_z)
{
	char *s = time_rfc3339(0);

	CHECK_STR(s, "1970-01-01T00:00:00Z");
	free(s);
	s = time_rfc3339(1763740800);
	CHECK_STR(s, "2025-11-21T16:00:00Z");
	free(s);
	s = time_rfc3339(1795474260.987); /* fractions are dropped */
	CHECK_STR(s, "2026-11-23T22:51:00Z");
	free(s);
	CHECK(time_rfc3339(-1) == NULL);
	CHECK(time_rfc3339(1e300) == NULL);
	CHECK(time_rfc3339(NAN) == NULL);
}

TEST(write_all_and_read_full_round_trip)
{
	int p[2];
	char buf[6] = {0};

	CHECK(pipe(p) == 0);
	CHECK_INT(write_all(p[1], "hello", 5), 5);
	close(p[1]);
	CHECK_INT(read_full(p[0], buf, sizeof buf), 5);
	CHECK_STR(buf, "hello");
	close(p[0]);
}

/* Count the directory's entries whose names start with prefix. */
static int
dir_count(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d != NULL && (e = readdir(d)) != NULL)
		n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
	if (d != NULL)
		closedir(d);
	return n;
}

TEST(file_replace_is_whole_or_nothing)
{
	char dir[] = "/tmp/vmux-unit-replace.XXXXXX", *path, *tmp,
	     buf[16] = {0};
	struct stat st;
	int fd;

	CHECK(mkdtemp(dir) != NULL);
	xasprintf(&path, "%s/rec.json", dir);
	CHECK_INT(file_replace(path, "first", 5, 0600), 0);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600);
	/* a dead process of our pid left its temporary file: no matter */
	xasprintf(&tmp, "%s.tmp.%ld", path, (long)getpid());
	CHECK((fd = open(tmp, O_WRONLY | O_CREAT, 0600)) >= 0);
	close(fd);
	CHECK_INT(file_replace(path, "second", 6, 0600), 0);
	CHECK((fd = open(path, O_RDONLY)) >= 0);
	CHECK_INT(read_full(fd, buf, sizeof buf), 6);
	close(fd);
	CHECK_STR(buf, "second");
	CHECK_INT(dir_count(dir, "rec.json"), 1); /* no temporary left */
	/* a failure says why and leaves nothing behind */
	free(path);
	xasprintf(&path, "%s/gone/rec.json", dir);
	CHECK_INT(file_replace(path, "x", 1, 0600), -ENOENT);
	free(path);
	xasprintf(&path, "%s/adir", dir); /* written, then the rename fails */
	CHECK(mkdir(path, 0700) == 0);
	CHECK_INT(file_replace(path, "x", 1, 0600), -EISDIR);
	CHECK_INT(dir_count(dir, "adir"), 1);
	rmdir(path);
	free(path);
	xasprintf(&path, "%s/rec.json", dir);
	unlink(path);
	rmdir(dir);
	free(path);
	free(tmp);
}

/* A folder of one's own: made or taken as ours alone, never one others
 * can write or swap (a symlink, a loose mode, a parent others write). */
TEST(private_dir_make_takes_only_a_folder_of_ones_own)
{
	char dir[] = "/tmp/vmux-unit-private.XXXXXX", *a, *b, *l, *cause = NULL;

	CHECK(mkdtemp(dir) != NULL);
	xasprintf(&a, "%s/a", dir);
	xasprintf(&b, "%s/a/b", dir);
	xasprintf(&l, "%s/l", dir);
	CHECK_INT(private_dir_make(a, &cause), 0); /* made */
	CHECK_INT(private_dir_make(a, &cause), 0); /* taken as found */
	CHECK_INT(private_dir_make("relative", &cause), -1);
	free(cause);
	cause = NULL;
	CHECK(chmod(a, 0777) == 0);
	CHECK_INT(private_dir_make(a, &cause), -1);
	CHECK(strstr(cause, "not yours alone") != NULL);
	free(cause);
	cause = NULL;
	/* b is fine itself, but sits in a folder others may write */
	CHECK(mkdir(b, 0700) == 0);
	CHECK_INT(private_dir_make(b, &cause), -1);
	CHECK(strstr(cause, "not sticky") != NULL);
	free(cause);
	cause = NULL;
	CHECK(chmod(a, 01777) == 0); /* sticky: others cannot rename b */
	CHECK_INT(private_dir_make(b, &cause), 0);
	CHECK(symlink(a, l) == 0);
	CHECK_INT(private_dir_make(l, &cause), -1);
	free(cause);
	rmdir(b);
	rmdir(a);
	unlink(l);
	rmdir(dir);
	free(a);
	free(b);
	free(l);
}

TEST(str_printable_escapes_controls)
{
	char *s;

	s = str_printable("a\033[2Jb\x07\x7f\tc\nd", 0);
	CHECK_STR(s, "a\\x1b[2Jb\\x07\\x7f\tc\\x0ad");
	free(s);
	s = str_printable("line1\nline2\r\n", STR_KEEP_NL);
	CHECK_STR(s, "line1\nline2\\x0d\n");
	free(s);
	/* C1 controls in UTF-8 form (CSI is U+009B), other UTF-8 kept */
	s = str_printable("x\xc2\x9b"
	                  "31my \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
	    0);
	CHECK_STR(s, "x\\u009b31my \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	free(s);
	/* raw 8-bit C1 and other ill-formed bytes */
	s = str_printable("\x9b\xc0\xaf\xed\xa0\x80z", 0);
	CHECK_STR(s, "\\x9b\\xc0\\xaf\\xed\\xa0\\x80z");
	free(s);
	s = str_printable("", 0);
	CHECK_STR(s, "");
	free(s);
}

TEST(json_printable_keeps_data_and_hides_controls)
{
	cJSON *o = cJSON_CreateObject(), *back;
	char *text, *safe;

	cJSON_AddStringToObject(o, "k", "a\033b\x7f\xc2\x9b\xc2\xa0\n");
	text = cJSON_Print(o);
	safe = json_printable(text);
	for (const unsigned char *p = (const unsigned char *)safe; *p; p++)
		CHECK(!(*p < 0x20 && *p != '\n' && *p != '\t') && *p != 0x7f &&
		    !(p[0] == 0xc2 && p[1] <= 0x9f));
	back = cJSON_Parse(safe);
	CHECK(back != NULL);
	CHECK_STR(cJSON_GetObjectItem(back, "k")->valuestring,
	    "a\033b\x7f\xc2\x9b\xc2\xa0\n");
	cJSON_Delete(back);
	free(safe);
	safe = json_printable("\"\xff\"");
	CHECK_STR(safe, "\"\\ufffd\"");
	free(safe);
	cJSON_free(text);
	cJSON_Delete(o);
}

TEST(json_values_counts_before_parsing)
{
	/* an upper bound of what cJSON would build: separators and openings
	 * outside strings */
	CHECK(json_values("0", 10) == 1);
	CHECK(json_values("[0,0,0]", 10) == 4);
	CHECK(json_values("{\"a\":[1,{\"b\":2}],\"c\":3}", 100) == 6);
	/* inside strings, escaped quotes included, nothing counts */
	CHECK(json_values("[\"a,b[{\\\",\"]", 10) == 2);
	/* past max it stops: max + 1 */
	CHECK(json_values("[0,0,0,0,0,0,0,0,0,0,0,0]", 5) == 6);
}

TEST(getline_max_keeps_at_most_max)
{
	static const char text[] = "short\n0123456789abcdef\nlast";
	FILE *f = fmemopen((void *)text, sizeof text - 1, "r");
	char *buf = NULL;
	size_t cap = 0;
	int cut;

	CHECK(f != NULL);
	CHECK(getline_max(&buf, &cap, f, 8, &cut) == 6);
	CHECK(!cut);
	CHECK_STR(buf, "short\n");
	/* a line past max: its first max bytes kept, read to its end, cut */
	CHECK(getline_max(&buf, &cap, f, 8, &cut) == 8);
	CHECK(cut);
	CHECK(cap <= 64 + 2 * 8); /* bounded by max, not by the line */
	/* the next line is whole; the last has no newline */
	CHECK(getline_max(&buf, &cap, f, 8, &cut) == 4);
	CHECK(!cut);
	CHECK_STR(buf, "last");
	CHECK(getline_max(&buf, &cap, f, 8, &cut) == -1);
	fclose(f);
	/* a NUL is a byte of the line, not its end */
	f = fmemopen((void *)"a\0b\nsecond\n", 11, "r");
	CHECK(getline_max(&buf, &cap, f, 8, &cut) == 4);
	CHECK(buf[0] == 'a' && buf[1] == '\0' && buf[2] == 'b');
	CHECK(getline_max(&buf, &cap, f, 8, &cut) == 7);
	CHECK_STR(buf, "second\n");
	free(buf);
	fclose(f);
}

/* Feed s to h in pieces of step bytes. */
static void
headtail_feed(struct headtail *h, const char *s, size_t n, size_t step)
{
	for (size_t i = 0; i < n; i += step)
		headtail_add(h, s + i, n - i < step ? n - i : step);
}

TEST(headtail_keeps_output_within_the_limit_exactly)
{
	struct headtail h;
	char *out;
	size_t len;
	uint64_t gone;

	headtail_init(&h, 200);
	for (int i = 0; i < 200; i++)
		headtail_add(&h, "a", 1);
	CHECK(!headtail_cut(&h));
	out = headtail_result(&h, &len, &gone);
	CHECK_INT(len, 200);
	CHECK_INT(gone, 0);
	CHECK(strspn(out, "a") == 200);
	free(out);
	headtail_free(&h);
}

TEST(headtail_keeps_head_and_tail_and_says_what_was_left_out)
{
	static const size_t steps[] = {1, 7, 100, 4096};
	char big[600], *out;
	size_t len;
	uint64_t gone;

	memset(big, 'x', sizeof big);
	memcpy(big, "HEAD_START|", 11);
	memcpy(big + sizeof big - 9, "|TAIL_END", 9);
	for (size_t k = 0; k < nitems(steps); k++) {
		struct headtail h;

		headtail_init(&h, 100);
		headtail_feed(&h, big, sizeof big, steps[k]);
		CHECK(headtail_cut(&h));
		out = headtail_result(&h, &len, &gone);
		CHECK(len <= 100);
		CHECK_INT(strlen(out), len);
		CHECK(strncmp(out, "HEAD_START|", 11) == 0);
		CHECK(strcmp(out + len - 9, "|TAIL_END") == 0);
		CHECK(strstr(out, "bytes truncated") != NULL);
		/* what is kept plus what it says was left out is all */
		{
			char want[64];
			snprintf(want, sizeof want, "[... %llu bytes truncated",
			    (unsigned long long)gone);
			CHECK(strstr(out, want) != NULL);
			CHECK_INT(len - strlen(strstr(out, "\n[...")) +
			        strlen(strstr(out, "...]\n") + 5) + gone,
			    sizeof big);
		}
		free(out);
		headtail_free(&h);
	}
}

TEST(headtail_just_past_the_limit_takes_the_tail_from_the_head)
{
	struct headtail h;
	char in[110], *out;
	size_t len;
	uint64_t gone;

	for (size_t i = 0; i < sizeof in; i++)
		in[i] = (char)('a' + i % 26);
	headtail_init(&h, 100);
	headtail_add(&h, in, sizeof in);
	out = headtail_result(&h, &len, &gone);
	CHECK(len <= 100);
	/* the tail is the input's last bytes, though most were in the head */
	CHECK(memcmp(out + len - 20, in + sizeof in - 20, 20) == 0);
	CHECK(memcmp(out, in, 20) == 0);
	free(out);
	headtail_free(&h);
}

TEST(headtail_cuts_on_character_boundaries)
{
	struct headtail h;
	char *out;
	size_t len;

	headtail_init(&h, 64);
	for (int i = 0; i < 100; i++)
		headtail_add(&h, "\xc3\xa9", 2); /* é */
	out = headtail_result(&h, &len, NULL);
	CHECK(len <= 64);
	CHECK((unsigned char)out[0] == 0xc3);
	CHECK((unsigned char)out[strcspn(out, "\n") - 1] == 0xa9);
	CHECK((unsigned char)out[strlen(out) - 1] == 0xa9);
	CHECK((unsigned char)*(strstr(out, "...]\n") + 5) == 0xc3);
	free(out);
	headtail_free(&h);
}
