/*
 * test_session_proc.c: detached processes: spawning (fds, log, exec
 * failure), identity by command line, termination until really gone (no
 * zombie left with the pid), the reaper's record and watcher, log tails,
 * the bounded console log and rmtree.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"
#include "session/session.h"
#include "unit.h"

/* A fresh temporary directory. */
static char *
tmpdir(void)
{
	char *d = xstrdup("/tmp/vmux-unit-XXXXXX");

	if (mkdtemp(d) == NULL)
		fatal("mkdtemp");
	return d;
}

/* The whole content of a file (NUL-terminated), or NULL. */
static char *
slurp(const char *path)
{
	char *buf = xcalloc(1, 65536);
	int fd = open(path, O_RDONLY);

	if (fd < 0) {
		free(buf);
		return NULL;
	}
	if (read_full(fd, buf, 65535) < 0) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	return buf;
}

/* Does /proc/pid exist at all (zombies included)? */
static int
pid_exists(pid_t pid)
{
	return kill(pid, 0) == 0;
}

TEST(spawn_detached_with_log_and_fd3)
{
	char *d = tmpdir(), *log, *text, *marker, buf[16];
	int p[2], n;
	pid_t pid;

	xasprintf(&log, "%s/out.log", d);
	/* a sleep whose command line is unique: a link named marker */
	xasprintf(&marker, "%s/marker", d);
	CHECK(symlink("/bin/sleep", marker) == 0);
	/*
	 * sid != ours, fd 3 is the pipe, nothing else but 0-2 is open (listed
	 * without pipes or redirections, which would add the shell's own fds)
	 */
	char *script;
	xasprintf(&script,
	    "echo sid=$(cut -d' ' -f6 /proc/$$/stat) ppid-is-ours=$([ "
	    "$PPID = %ld ] && echo yes || echo no); "
	    "echo fds:; ls /proc/$$/fd; echo :fds; echo ready >&3; "
	    "exec %s/mark''er 30",
	    (long)getpid(), d);
	char *argv[] = {"/bin/sh", "-c", script, NULL};
	CHECK(pipe(p) == 0);
	pid = proc_spawn(argv, p[1], log, NULL, NULL);
	close(p[1]);
	CHECK(pid > 0);
	n = (int)read_full(p[0], buf, 6);
	CHECK_INT(n, 6);
	CHECK_MEM(buf, "ready\n", 6);
	close(p[0]);
	/*
	 * The shell is about to exec the marker. Its own command line spells
	 * the path with quotes inside, so only the exec'd sleep matches, not
	 * the shell before it, nor the process halfway through the exec (empty
	 * command line), which is what failed in CI when the shell matched.
	 */
	for (int i = 0; i < 1000 && !proc_matches(pid, marker); i++)
		usleep(10000);
	CHECK(proc_matches(pid, marker));
	CHECK(!proc_matches(pid, "/no/such/needle"));
	CHECK_INT(proc_terminate(pid, marker, 2000), 0);
	CHECK(!proc_matches(pid, marker));
	/* reaped, not a zombie; the reaper may lag under ASan and load */
	for (int i = 0; i < 1000 && pid_exists(pid); i++)
		usleep(10000);
	CHECK(!pid_exists(pid));
	text = slurp(log);
	CHECK(text != NULL);
	CHECK(strstr(text, "ppid-is-ours=no") != NULL);
	CHECK(strstr(text, "fds:\n0\n1\n2\n3\n:fds\n") != NULL);
	{
		char *sid;
		xasprintf(&sid, "sid=%ld\n", (long)getsid(0));
		CHECK(strstr(text, sid) == NULL);
		free(sid);
	}
	free(text);
	free(script);
	free(marker);
	free(log);
	rmtree(d);
	free(d);
	while (waitpid(-1, NULL, WNOHANG) > 0) /* the reaper */
		;
}

TEST(spawn_exec_failure_is_reported)
{
	char *d = tmpdir(), *log, *cause = NULL;
	char *argv[] = {"/no/such/program", NULL};

	xasprintf(&log, "%s/out.log", d);
	CHECK_INT(proc_spawn(argv, -1, log, NULL, &cause), -1);
	CHECK(cause != NULL && strstr(cause, "/no/such/program") != NULL);
	free(cause);
	cause = NULL;
	char *argv2[] = {"/bin/true", NULL};
	CHECK_INT(proc_spawn(argv2, -1, "/no/such/dir/log", NULL, &cause), -1);
	CHECK(strstr(cause, "/no/such/dir/log") != NULL);
	free(cause);
	free(log);
	rmtree(d);
	free(d);
}

TEST(terminate_escalates_to_sigkill)
{
	char *d = tmpdir(), *log, *needle;
	pid_t pid;

	xasprintf(&log, "%s/out.log", d);
	xasprintf(&needle, "%s/needle", d);
	char *script;
	xasprintf(
	    &script, "trap '' TERM; while :; do sleep 1; done # %s", needle);
	char *argv[] = {"/bin/sh", "-c", script, NULL};
	pid = proc_spawn(argv, -1, log, NULL, NULL);
	CHECK(pid > 0);
	usleep(200000); /* let the shell set its trap */
	CHECK_INT(proc_terminate(pid, needle, 300), 0);
	CHECK(!pid_exists(pid));
	/* not ours any more: nothing to do */
	CHECK_INT(proc_terminate(pid, needle, 300), 0);
	CHECK_INT(proc_wait_gone(pid, needle, mono_ms() + 10), 0);
	free(script);
	free(needle);
	free(log);
	rmtree(d);
	free(d);
}

/* Wait (bounded) until path exists. */
static int
wait_file(const char *path)
{
	uint64_t deadline = mono_ms() + 10000;

	while (access(path, F_OK) != 0) {
		if (mono_ms() >= deadline)
			return 0;
		usleep(10000);
	}
	return 1;
}

TEST(reaper_records_how_the_program_ended)
{
	char *d = tmpdir(), *log, *ex, *ex2;
	struct session_exit e;
	char *argv[] = {"/bin/sh", "-c", "exit 7", NULL};
	char *argv2[] = {"/bin/sh", "-c", "kill -KILL $$", NULL};

	xasprintf(&log, "%s/out.log", d);
	xasprintf(&ex, "%s/exit", d);
	xasprintf(&ex2, "%s/exit2", d);
	CHECK_INT(proc_exit_read(ex, &e), -1);
	CHECK(!e.known);
	CHECK(proc_spawn(argv, -1, log, ex, NULL) > 0);
	CHECK(wait_file(ex));
	CHECK_INT(proc_exit_read(ex, &e), 0);
	CHECK(e.known);
	CHECK_INT(e.code, 7);
	CHECK_INT(e.signal, 0);
	CHECK(e.when > 0);
	CHECK(proc_spawn(argv2, -1, log, ex2, NULL) > 0);
	CHECK(wait_file(ex2));
	CHECK_INT(proc_exit_read(ex2, &e), 0);
	CHECK_INT(e.signal, 9);
	free(log);
	free(ex);
	free(ex2);
	rmtree(d);
	free(d);
}

/*
 * A watcher that ends its program with SIGTERM on its third tick, once the
 * program is sleep (a shell that sets a trap first may be slow to get
 * there on a loaded machine: SIGTERM before the trap ended it).
 */
static const char *
term_on_third_tick(void *arg, pid_t pid)
{
	static int ticks; /* the reaper's own copy */
	char path[64], *comm;
	int is_sleep;

	(void)arg;
	snprintf(path, sizeof path, "/proc/%ld/comm", (long)pid);
	comm = slurp(path);
	is_sleep = comm != NULL && strncmp(comm, "sleep", 5) == 0;
	free(comm);
	if (++ticks < 3 || !is_sleep)
		return NULL;
	kill(pid, SIGTERM);
	return "the \"bridge\"\nwent";
}

/* The watcher's ended hook: leave a file (arg) behind, as proof. */
static void
touch_when_ended(void *arg, pid_t pid)
{
	(void)pid;
	int fd = open(arg, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

	if (fd >= 0)
		close(fd);
}

TEST(reaper_runs_the_ended_hook_before_the_exit_record)
{
	char *d = tmpdir(), *log, *ex, *mark;
	struct proc_watch w = {term_on_third_tick, NULL, 20, touch_when_ended};
	char *argv[] = {"/bin/sleep", "60", NULL};
	struct stat sb;

	xasprintf(&log, "%s/out.log", d);
	xasprintf(&ex, "%s/exit", d);
	xasprintf(&mark, "%s/ended", d);
	w.arg = mark;
	CHECK(proc_spawn_watched(argv, -1, log, ex, &w, NULL) > 0);
	CHECK(stat(mark, &sb) != 0); /* not while it runs */
	CHECK(wait_file(ex));
	CHECK_INT(stat(mark, &sb), 0); /* before the record said it ended */
	free(log);
	free(ex);
	free(mark);
	rmtree(d);
	free(d);
}

TEST(reaper_records_the_watchers_cause_and_escalates)
{
	char *d = tmpdir(), *log, *ex, *ex2;
	struct proc_watch w = {term_on_third_tick, NULL, 20, NULL};
	struct session_exit e;
	char *argv[] = {"/bin/sleep", "60", NULL};
	/* ignored signals survive exec: this sleep shrugs SIGTERM off */
	char *argv2[] = {"/bin/sh", "-c", "trap '' TERM; exec sleep 60", NULL};

	xasprintf(&log, "%s/out.log", d);
	xasprintf(&ex, "%s/exit", d);
	xasprintf(&ex2, "%s/exit2", d);
	CHECK(proc_spawn_watched(argv, -1, log, ex, &w, NULL) > 0);
	CHECK(wait_file(ex));
	CHECK_INT(proc_exit_read(ex, &e), 0);
	CHECK_INT(e.signal, SIGTERM);
	/* whatever the watcher says, the record stays JSON */
	CHECK_STR(e.cause, "the ?bridge??went");
	/* a program that ignores the watcher's signal is killed after a while
	 */
	CHECK(proc_spawn_watched(argv2, -1, log, ex2, &w, NULL) > 0);
	CHECK(wait_file(ex2));
	CHECK_INT(proc_exit_read(ex2, &e), 0);
	CHECK_INT(e.signal, SIGKILL);
	CHECK_STR(e.cause, "the ?bridge??went");
	free(log);
	free(ex);
	free(ex2);
	rmtree(d);
	free(d);
}

TEST(logcap_keeps_a_log_bounded)
{
	char *d = tmpdir(), *log, *prev, *got;
	int fd;

	xasprintf(&log, "%s/console.log", d);
	prev = logcap_prev_path(log);
	CHECK_STR(prev + strlen(d), "/console.log.1");
	CHECK_INT(logcap_rotate(log, 16), 0); /* no log yet */
	/* QEMU's way: O_APPEND, never reopened */
	fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
	CHECK(fd >= 0);
	CHECK(write_all(fd, "one\ntwo\nthree\n", 14) == 14);
	CHECK_INT(logcap_rotate(log, 14), 0); /* at the limit: left alone */
	CHECK(write_all(fd, "four\n", 5) == 5);
	/* past it: what starts a line in the last 14 bytes goes to .1 */
	CHECK_INT(logcap_rotate(log, 14), 1);
	got = slurp(prev);
	CHECK_STR(got, "three\nfour\n");
	free(got);
	got = slurp(log);
	CHECK_STR(got, "");
	free(got);
	/* the writer goes on at the start of the emptied file */
	CHECK(write_all(fd, "five\n", 5) == 5);
	got = slurp(log);
	CHECK_STR(got, "five\n");
	free(got);
	/* one line longer than the limit is cut, not kept whole */
	CHECK(write_all(fd, "0123456789abcdefghij", 20) == 20);
	CHECK_INT(logcap_rotate(log, 8), 1);
	got = slurp(prev);
	CHECK_STR(got, "cdefghij");
	free(got);
	/* a newline 200 KiB past the cut (blocks of 64 KiB): found */
	{
		static char big[300000];

		memset(big, 'x', sizeof big);
		big[250000] = '\n';
		CHECK(write_all(fd, big, sizeof big) == sizeof big);
		CHECK_INT(logcap_rotate(log, 260000), 1);
		got = slurp(prev);
		CHECK_INT(strlen(got), sizeof big - 250001);
		free(got);
	}
	close(fd);
	free(log);
	free(prev);
	rmtree(d);
	free(d);
}

TEST(proc_matches_rejects_bad_input)
{
	CHECK(!proc_matches(0, "x"));
	CHECK(!proc_matches(-5, "x"));
	CHECK(!proc_matches(getpid(), NULL));
	CHECK(!proc_matches(getpid(), ""));
	CHECK(proc_matches(getpid(), "unit-session"));
}

/*
 * A program is ours through its exec too: bash, whose command line names
 * the marker, execs sleep under the marker's name; the moment in between,
 * when the command line reads empty, is not "gone" (vmux new once said
 * "QEMU exited while booting" there). Twenty execs, each watched closely.
 */
TEST(proc_matches_through_an_exec)
{
	int misses = 0;

	for (int round = 0; round < 20; round++) {
		char exe[64], link[256];
		pid_t pid = fork();
		ssize_t n;

		CHECK(pid >= 0);
		if (pid == 0) {
			execl("/bin/bash", "bash", "-c",
			    "exec -a vmux-exec-marker /bin/sleep 5",
			    "vmux-exec-marker", (char *)NULL);
			_exit(127);
		}
		snprintf(exe, sizeof exe, "/proc/%ld/exe", (long)pid);
		/* watched from when bash runs (the fork before is the test's
		 * copy) until sleep does; bash may be past its exec already */
		int watching = 0;
		uint64_t until = mono_ms() + 10000;
		for (int i = 0; i < 1000000 && mono_ms() < until; i++) {
			if (watching && !proc_matches(pid, "vmux-exec-marker"))
				misses++;
			n = readlink(exe, link, sizeof link - 1);
			link[n > 0 ? n : 0] = '\0';
			if (strstr(link, "sleep") != NULL)
				break;
			watching = watching || strstr(link, "bash") != NULL;
		}
		if (!proc_matches(pid, "vmux-exec-marker"))
			misses++;
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	CHECK_INT(misses, 0);
}

/* A kernel thread's command line is empty for good: not ours, and said at
 * once, without the grace an exec gets (kthreadd is PID 2 on a host). */
TEST(proc_matches_a_kernel_thread_at_once)
{
	char *comm = slurp("/proc/2/comm");
	uint64_t t0;

	CHECK(comm != NULL && strncmp(comm, "kthreadd", 8) == 0);
	free(comm);
	t0 = mono_ms();
	CHECK(!proc_matches(2, "kthreadd"));
	CHECK(mono_ms() - t0 < 40);
}

TEST(file_tail_last_lines_sanitized)
{
	char *d = tmpdir(), *path, *t;
	int fd;

	xasprintf(&path, "%s/log", d);
	CHECK(file_tail(path, 3) == NULL); /* missing */
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	CHECK(file_tail(path, 3) == NULL); /* empty */
	const char text[] = "one\ntwo\nthree\x1b[0m\r\nfour\nfive\n\n";
	CHECK(write_all(fd, text, sizeof text - 1) > 0);
	close(fd);
	t = file_tail(path, 3);
	CHECK_STR(t, "three?[0m \nfour\nfive");
	free(t);
	t = file_tail(path, 100);
	CHECK(strncmp(t, "one\n", 4) == 0);
	free(t);
	free(path);
	rmtree(d);
	free(d);
}

TEST(rmtree_removes_without_following_links)
{
	char *d = tmpdir(), *keep = tmpdir(), *p;
	struct stat st;

	xasprintf(&p, "%s/a/b", d);
	CHECK(mkdir_p(p, 0700) == 0);
	free(p);
	xasprintf(&p, "%s/a/b/file", d);
	close(open(p, O_WRONLY | O_CREAT, 0600));
	free(p);
	xasprintf(&p, "%s/kept", keep);
	close(open(p, O_WRONLY | O_CREAT, 0600));
	free(p);
	xasprintf(&p, "%s/a/link", d);
	CHECK(symlink(keep, p) == 0);
	free(p);
	CHECK_INT(rmtree(d), 0);
	CHECK(lstat(d, &st) != 0);
	xasprintf(&p, "%s/kept", keep);
	CHECK(stat(p, &st) == 0); /* the link's target survived */
	free(p);
	CHECK_INT(rmtree(d), 0); /* already gone: fine */
	rmtree(keep);
	free(keep);
	free(d);
}
