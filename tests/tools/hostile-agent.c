/*
 * hostile-agent.c: a guest agent that lies, for tests/e2e/65-hostile.sh.
 *
 * Built static and put in an initramfs of its own (tests/tests.mk) in place
 * of vmux-agent. It answers ping like the real agent, so `vmux new` finds
 * the guest ready, and answers everything else with what a compromised
 * guest could send: text full of terminal escape sequences (agent errors,
 * the shells list, attach ERROR frames, the ping strings) and, for
 * export_archive, tar archives holding more than the source asked for.
 * The path asked for picks the trick: /x-bashrc adds .bashrc beside the
 * source, /x-other y/evil, /x-dotdot ../evil, /x-abs /etc/evil, /x-link a
 * top-level symlink z, /x-hard a hard link to .bashrc, /x-symlink writes
 * through a symlink to /tmp, /x-esc a name with an escape sequence, /x-slow
 * sends part of the archive and then nothing; any other path gets its
 * honest top-level entry only. Each connection is served by its own child.
 *
 * The session's name (vmux.hostname= on the kernel command line) picks
 * what list_shells and attach_shell do, for replies meant to cost the host:
 *   hbig   list_shells answers 64 MiB of one JSON string
 *   hwide  list_shells answers a shell whose command has ~200000 arguments
 *          (under the host's 1 MiB cap: it must be handled in linear time)
 *   hhang  list_shells never answers (the connection stays open)
 *   hsize  open_shell answers shell "s"; attach_shell sends a RESIZE frame
 *          of 65535x65535, then text
 *   hframe open_shell answers shell "s"; attach_shell sends a frame header
 *          of 4 GiB, then junk as fast as the host takes it, for 20 s
 *   hquit  the agent ends at once, every time vmux-init starts it
 *   hmany  list_shells answers 64 shells, each a new one every time (new
 *          started_at), which end as soon as they are attached: a
 *          recorder that made a file for each would fill the host
 */
#include <sys/reboot.h>
#include <sys/socket.h>

#include <linux/vm_sockets.h>

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PORT 5005

static const char ping_reply[] =
    "{\"ok\":true,\"version\":\"hostile\\u001b[2J\",\"protocol\":1,"
    "\"os\":\"Linux\\u001b]0;pwned\\u0007\",\"kernel\":\"6.1\\u001b[31m\","
    "\"machine\":\"x86_64\\u009b31m\",\"uptime_seconds\":1.5,"
    "\"hostname\":\"h\\u001bc\",\"pid\":2,\"shells\":0,\"execs\":0}\n";

static const char shells_reply[] =
    "{\"shells\":[{\"shell_id\":\"ev\\u001b[31mil\","
    "\"state\":\"running\\u001b[2J\",\"cols\":80,\"rows\":24,"
    "\"started_at\":1,\"ended_at\":null,\"exit_code\":null,\"pid\":7,"
    "\"command\":\"rm\\u001b]0;x\\u0007 -rf \\u009b2J\",\"clients\":0,"
    "\"output_bytes\":0,\"oldest_cursor\":0,\"cwd\":\"/\\u001b[H\"},"
    "{\"shell_id\":\"evil\",\"state\":\"running\",\"cols\":80,\"rows\":24,"
    "\"started_at\":1,\"ended_at\":null,\"exit_code\":null,\"pid\":8,"
    "\"command\":\"sh\",\"clients\":0,\"output_bytes\":0,"
    "\"oldest_cursor\":0,\"cwd\":\"/\"}]}\n";

struct tarbuf {
	unsigned char p[65536];
	size_t len;
};

/* Append one ustar member (name, type, link target, file data). */
static void
tar_add(struct tarbuf *t, const char *name, char type, const char *link,
    const char *data)
{
	size_t size = data != NULL ? strlen(data) : 0;
	size_t padded = (size + 511) / 512 * 512;
	unsigned char *h = t->p + t->len;
	unsigned sum = 0;

	if (t->len + 512 + padded + 1024 > sizeof t->p)
		return;
	memset(h, 0, 512 + padded);
	snprintf((char *)h, 100, "%s", name);
	snprintf((char *)h + 100, 8, "%07o", type == '5' ? 0755 : 0644);
	snprintf((char *)h + 108, 8, "%07o", 0);
	snprintf((char *)h + 116, 8, "%07o", 0);
	snprintf((char *)h + 124, 12, "%011o", (unsigned)size);
	snprintf((char *)h + 136, 12, "%011o", 1700000000u);
	h[156] = (unsigned char)type;
	if (link != NULL)
		snprintf((char *)h + 157, 100, "%s", link);
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	h[155] = ' ';
	if (size > 0)
		memcpy(h + 512, data, size);
	t->len += 512 + padded;
}

/* Write all of buf, or give up. */
static void
send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len > 0 && (n = write(fd, p, len)) > 0) {
		p += n;
		len -= (size_t)n;
	}
}

/* The value of "path" in the request line, or "". */
static void
request_path(const char *req, char *out, size_t size)
{
	const char *p = strstr(req, "\"path\":\"");
	size_t n = 0;

	if (p != NULL) {
		p += 8;
		while (p[n] != '\0' && p[n] != '"' && n + 1 < size)
			n++;
		memcpy(out, p, n);
	}
	out[n] = '\0';
}

/* Answer export_archive for path with the archive its name asks for. */
static void export(int fd, const char *path)
{
	static struct tarbuf t;
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	char head[512], name[320];

	t.len = 0;
	snprintf(head, sizeof head,
	    "{\"path\":\"%s\",\"type\":\"directory\"}\n", path);
	snprintf(name, sizeof name, "%s/", base);
	tar_add(&t, name, '5', NULL, NULL);
	snprintf(name, sizeof name, "%s/ok.txt", base);
	tar_add(&t, name, '0', NULL, "fine\n");
	if (strcmp(base, "x-bashrc") == 0)
		tar_add(&t, ".bashrc", '0', NULL, "echo pwned\n");
	else if (strcmp(base, "x-other") == 0)
		tar_add(&t, "y/evil", '0', NULL, "evil\n");
	else if (strcmp(base, "x-dotdot") == 0)
		tar_add(&t, "../evil", '0', NULL, "evil\n");
	else if (strcmp(base, "x-abs") == 0)
		tar_add(&t, "/etc/evil", '0', NULL, "evil\n");
	else if (strcmp(base, "x-link") == 0)
		tar_add(&t, "z", '2', base, NULL);
	else if (strcmp(base, "x-hard") == 0) {
		snprintf(name, sizeof name, "%s/h", base);
		tar_add(&t, name, '1', ".bashrc", NULL);
	} else if (strcmp(base, "x-symlink") == 0) {
		snprintf(name, sizeof name, "%s/esc", base);
		tar_add(&t, name, '2', "/tmp", NULL);
		snprintf(name, sizeof name, "%s/esc/vmux-hostile-pwned", base);
		tar_add(&t, name, '0', NULL, "evil\n");
	} else if (strcmp(base, "x-esc") == 0)
		tar_add(&t, "\033[2J\033]0;pwned\007", '0', NULL, "evil\n");
	if (strcmp(base, "x-slow") == 0) { /* and then nothing: a stall */
		send_all(fd, head, strlen(head));
		send_all(fd, t.p, t.len);
		sleep(600);
		return;
	}
	snprintf(name, sizeof name, "%s/late.txt", base);
	tar_add(&t, name, '0', NULL, "late\n");
	memset(t.p + t.len, 0, 1024);
	t.len += 1024;
	send_all(fd, head, strlen(head));
	send_all(fd, t.p, t.len);
}

static char mode[64]; /* the session's name, from /proc/cmdline */

/* Read vmux.hostname= from the kernel command line into mode. */
static void
read_mode(void)
{
	char line[4096];
	FILE *f = fopen("/proc/cmdline", "r");
	const char *p;
	size_t n = 0;

	if (f == NULL)
		return;
	if (fgets(line, sizeof line, f) != NULL &&
	    (p = strstr(line, "vmux.hostname=")) != NULL) {
		p += 14;
		while (p[n] != '\0' && p[n] != ' ' && p[n] != '\n' &&
		    n + 1 < sizeof mode)
			n++;
		memcpy(mode, p, n);
	}
	fclose(f);
}

/* list_shells as the mode says: huge, wide, hung, or escapes. */
static void
list_shells(int fd)
{
	static char chunk[65536];

	if (strcmp(mode, "hbig") == 0) {
		send_all(fd, "{\"shells\":[],\"x\":\"", 20);
		memset(chunk, 'x', sizeof chunk);
		for (int i = 0; i < 1024; i++)
			send_all(fd, chunk, sizeof chunk);
		send_all(fd, "\"}\n", 3);
	} else if (strcmp(mode, "hwide") == 0) {
		static const char head[] =
		    "{\"shells\":[{\"shell_id\":\"w\",\"state\":\"running\","
		    "\"cols\":80,\"rows\":24,\"clients\":0,\"command\":[\"a\"";
		send_all(fd, head, sizeof head - 1);
		for (size_t i = 0; i < sizeof chunk / 4; i++)
			memcpy(chunk + 4 * i, ",\"x\"", 4);
		for (int i = 0; i < 14; i++) /* 14 * 16384 arguments */
			send_all(fd, chunk, sizeof chunk);
		send_all(fd, "]}]}\n", 5);
	} else if (strcmp(mode, "hhang") == 0)
		sleep(3600);
	else if (strcmp(mode, "hmany") == 0) {
		struct timespec ts;
		char one[256];
		int n;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		send_all(fd, "{\"shells\":[", 11);
		for (int i = 0; i < 64; i++) {
			n = snprintf(one, sizeof one,
			    "%s{\"shell_id\":\"m%d\",\"state\":\"running\","
			    "\"cols\":80,\"rows\":24,\"started_at\":%lld.%03ld,"
			    "\"clients\":0}",
			    i ? "," : "", i, (long long)ts.tv_sec,
			    ts.tv_nsec / 1000000);
			send_all(fd, one, (size_t)n);
		}
		send_all(fd, "]}\n", 3);
	} else
		send_all(fd, shells_reply, sizeof shells_reply - 1);
}

/* A DATA frame: output bytes at stream cursor *cursor (advanced). */
static void
send_data(int fd, uint64_t *cursor, const char *text)
{
	unsigned char frame[5 + 8 + 256];
	size_t len = strlen(text), n = 8 + len;

	frame[0] = 1; /* VMUX_ATTACH_DATA: u64 cursor, then bytes */
	for (int i = 0; i < 4; i++)
		frame[1 + i] = (unsigned char)(n >> (8 * i));
	for (int i = 0; i < 8; i++)
		frame[5 + i] = (unsigned char)(*cursor >> (8 * i));
	memcpy(frame + 13, text, len);
	send_all(fd, frame, 5 + n);
	*cursor += len;
}

/* A RESIZE frame: u16 cols, u16 rows. */
static void
send_resize(int fd, unsigned cols, unsigned rows)
{
	unsigned char frame[9] = {3, 4, 0, 0, 0, (unsigned char)cols,
	    (unsigned char)(cols >> 8), (unsigned char)rows,
	    (unsigned char)(rows >> 8)};

	send_all(fd, frame, sizeof frame);
}

/*
 * hsize's attach: a RESIZE of 65535x65535, then text; then a scroll region
 * and a saved cursor near the bottom, a RESIZE much shorter, and what
 * crashed libvterm 0.1.4 after it (a line feed and a scroll in the region
 * now past the bottom, the saved cursor restored there and written to),
 * then a REP with nothing to repeat and a CSI of 20 parameters; then the
 * stream stays open.
 */
static void
attach_resize(int fd)
{
	static const char line[] =
	    "{\"shell_id\":\"s\",\"cursor\":0,\"attached\":true,"
	    "\"state\":\"running\",\"cols\":80,\"rows\":24,"
	    "\"output_bytes\":0,\"oldest_cursor\":0}\n";
	uint64_t cursor = 0;

	send_all(fd, line, sizeof line - 1);
	send_resize(fd, 65535, 65535);
	send_data(fd, &cursor, "hostile-still-alive\r\n");
	send_resize(fd, 80, 24);
	send_data(fd, &cursor, "\033[20;24r\033[24;1H\0337");
	send_resize(fd, 80, 8);
	send_data(fd, &cursor,
	    "\033[8;1H\n\n\033[2S\0338\033#6\033[2@\033[3Pxy\033[K"
	    "\033[H\033[2Jhostile-after-shrink\r\n");
	/* a REP after a zero-width glyph looped for ever in libvterm 0.1.4;
	 * a CSI of 20 parameters wrote over its parser's callbacks */
	send_data(fd, &cursor,
	    "\xe2\x80\x8b\033[5b\033[1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1m"
	    "hostile-after-rep\r\n");
	sleep(3600);
}

/* hframe's attach: a frame no host may wait for, then a flood of junk. */
static void
attach_broken(int fd)
{
	static const char line[] =
	    "{\"shell_id\":\"s\",\"cursor\":0,\"attached\":true,"
	    "\"state\":\"running\",\"cols\":80,\"rows\":24,"
	    "\"output_bytes\":0,\"oldest_cursor\":0}\n";
	static unsigned char junk[65536];
	unsigned char hdr[5] = {1, 0xff, 0xff, 0xff, 0xff};
	time_t end = time(NULL) + 20;

	memset(junk, 'j', sizeof junk);
	send_all(fd, line, sizeof line - 1);
	send_all(fd, hdr, sizeof hdr);
	while (time(NULL) < end && write(fd, junk, sizeof junk) > 0)
		;
}

/* An attach_shell answer, then an ERROR frame with escapes, then close. */
static void
attach(int fd)
{
	static const char line[] =
	    "{\"shell_id\":\"evil\",\"cursor\":0,\"attached\":true,"
	    "\"state\":\"running\",\"output_bytes\":0,\"oldest_cursor\":0}\n";
	static const char text[] = "bad\033[2J\033]0;pwned\007thing\302\233m";
	unsigned char frame[5 + sizeof text];
	size_t n = sizeof text - 1;

	frame[0] = 7; /* VMUX_ATTACH_ERROR */
	frame[1] = (unsigned char)n;
	frame[2] = frame[3] = frame[4] = 0;
	memcpy(frame + 5, text, n);
	send_all(fd, line, sizeof line - 1);
	send_all(fd, frame, 5 + n);
}

/* One connection: read the request line, answer, close. */
static void
serve(int fd)
{
	static char req[65536];
	char path[256];
	size_t len = 0;
	ssize_t n;

	while (len + 1 < sizeof req &&
	    (n = read(fd, req + len, sizeof req - 1 - len)) > 0) {
		len += (size_t)n;
		if (memchr(req, '\n', len) != NULL)
			break;
	}
	req[len] = '\0';
	if (strstr(req, "\"ping\"") != NULL)
		send_all(fd, ping_reply, sizeof ping_reply - 1);
	else if (strstr(req, "\"shutdown\"") != NULL) {
		send_all(fd, "{\"ok\":true,\"poweroff\":true}\n", 28);
		kill(1, SIGUSR2);
	} else if (strstr(req, "\"list_shells\"") != NULL)
		list_shells(fd);
	else if (strstr(req, "\"export_archive\"") != NULL) {
		request_path(req, path, sizeof path);
		export(fd, path);
	} else if (strstr(req, "\"open_shell\"") != NULL &&
	    (strcmp(mode, "hsize") == 0 || strcmp(mode, "hframe") == 0)) {
		static const char opened[] =
		    "{\"shell_id\":\"s\",\"state\":\"running\",\"cols\":80,"
		    "\"rows\":24,\"pid\":9}\n";
		send_all(fd, opened, sizeof opened - 1);
	} else if (strstr(req, "\"attach_shell\"") != NULL &&
	    strcmp(mode, "hsize") == 0)
		attach_resize(fd);
	else if (strstr(req, "\"attach_shell\"") != NULL &&
	    strcmp(mode, "hframe") == 0)
		attach_broken(fd);
	else if (strstr(req, "\"attach_shell\"") != NULL)
		attach(fd);
	else {
		static const char err[] =
		    "{\"error\":\"cwd /no\\u001b[2Jdir\\u001b]0;pwned\\u0007: "
		    "\\u009b31mNo such file\"}\n";
		send_all(fd, err, sizeof err - 1);
	}
	shutdown(fd, SHUT_WR);
	close(fd);
}

/*
 * Listen on vsock port 5005 (or serve the socket vmux-init hands over with
 * --listen-fd, as the real agent does) and answer forever. Other arguments
 * vmux-init passes (--gate, --home, --cgroup) are ignored.
 */
int
main(int argc, char **argv)
{
	struct sockaddr_vm sa = {.svm_family = AF_VSOCK,
	    .svm_cid = VMADDR_CID_ANY,
	    .svm_port = PORT};
	int ls = -1, fd;

	signal(SIGPIPE, SIG_IGN);
	signal(SIGCHLD, SIG_IGN); /* children reap themselves */
	read_mode();
	if (strcmp(mode, "hquit") == 0)
		return 3;
	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--listen-fd") == 0)
			ls = atoi(argv[i + 1]);
	}
	for (int i = 0; ls < 0 && i < 100; i++) { /* transport may still load */
		ls = socket(AF_VSOCK, SOCK_STREAM, 0);
		if (ls >= 0 &&
		    bind(ls, (struct sockaddr *)&sa, sizeof sa) == 0 &&
		    listen(ls, 16) == 0)
			break;
		if (ls >= 0)
			close(ls);
		ls = -1;
		usleep(100000);
	}
	if (ls < 0) {
		perror("hostile-agent: listen");
		return 1;
	}
	for (;;) {
		if ((fd = accept(ls, NULL, NULL)) < 0)
			continue;
		if (fork() == 0) {
			close(ls);
			serve(fd);
			_exit(0);
		}
		close(fd);
	}
}
