/*
 * test_session_agent.c: the agent client: reply parsing and error mapping,
 * request framing, reading to EOF, deadlines, and a call through a fake
 * bridge.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"
#include "proto/attach.h"
#include "proto/proto.h"
#include "session/session.h"
#include "unit.h"

/* Parse s as a reply; the cause (or "OK") for comparisons. */
static char *
parse(const char *s, cJSON **out)
{
	char *cause = NULL;
	cJSON *o = agent_parse_reply(s, strlen(s), &cause);

	if (out != NULL)
		*out = o;
	else
		cJSON_Delete(o);
	if (o != NULL)
		return xstrdup("OK");
	return cause;
}

TEST(reply_error_object)
{
	char *c = parse("{\"error\":\"no such file: /x\"}", NULL);

	CHECK_STR(c, "agent: no such file: /x");
	free(c);
	c = parse("{\"error\":{\"code\":3}}", NULL);
	CHECK_STR(c, "agent: {\"code\":3}");
	free(c);
}

/* An error the agent answered is told apart from no answer (a resume's
 * first request is up when refused: launch.c). */
TEST(reply_refused_told_apart)
{
	char *c = parse("{\"error\":\"unknown action: resumed\"}", NULL);

	CHECK(agent_refused(c));
	free(c);
	c = parse("[]", NULL);
	CHECK(!agent_refused(c));
	free(c);
	c = parse("{", NULL);
	CHECK(!agent_refused(c));
	free(c);
	CHECK(!agent_refused("cannot connect to the bridge socket"));
	CHECK(!agent_refused(NULL));
}

TEST(reply_non_object)
{
	static const char *v[] = {
	    "[]", "42", "\"str\"", "null", "true", "[{\"stdout\":\"x\"}]"};
	size_t i;

	for (i = 0; i < nitems(v); i++) {
		char *c = parse(v[i], NULL);
		CHECK_STR(
		    c, "agent returned a non-object (expected a JSON object)");
		free(c);
	}
}

TEST(reply_invalid_json)
{
	static const char *v[] = {"{not json", "{\"a\":", "}", "{\"a\":1} x",
	    "{\"a\":1}{\"b\":2}", "\x01\x02"};
	size_t i;

	for (i = 0; i < nitems(v); i++) {
		char *c = parse(v[i], NULL);
		CHECK(strncmp(c, "agent returned invalid JSON", 27) == 0);
		free(c);
	}
}

TEST(reply_empty)
{
	char *c = parse("", NULL);

	CHECK_STR(c, "agent closed the connection without a reply");
	free(c);
	c = parse(" \n", NULL);
	CHECK_STR(c, "agent closed the connection without a reply");
	free(c);
}

TEST(reply_ok_object)
{
	cJSON *o;
	char *c = parse("{\"stdout\":\"hi\\n\",\"exit_code\":0,"
	                "\"error\":null}\n",
	    &o);

	CHECK_STR(c, "OK");
	CHECK_STR(cJSON_GetObjectItem(o, "stdout")->valuestring, "hi\n");
	cJSON_Delete(o);
	free(c);
}

/*
 * A fake agent in a child on fd: read one line (must end with '\n' and be
 * the JSON object want), then send reply in chunks of `chunk` bytes.
 */
static pid_t
fake_agent(int fd, const char *want, const char *reply, size_t chunk)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	char line[4096];
	size_t n = 0;
	while (n + 1 < sizeof line) {
		if (read(fd, line + n, 1) != 1)
			_exit(3);
		if (line[n++] == '\n')
			break;
	}
	line[n] = '\0';
	if (want != NULL && strcmp(line, want) != 0)
		_exit(4);
	for (size_t off = 0; reply != NULL && off < strlen(reply);
	     off += chunk) {
		size_t len = strlen(reply) - off;
		if (len > chunk)
			len = chunk;
		if (write_all(fd, reply + off, len) < 0)
			_exit(5);
	}
	close(fd);
	_exit(0);
}

/* Wait for a child; its exit status. */
static int
reap(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

TEST(exchange_sends_one_line_reads_to_eof)
{
	int sv[2];
	char *cause = NULL;
	cJSON *req = cJSON_CreateObject(), *o;
	pid_t pid;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	cJSON_AddStringToObject(req, "action", "ping");
	pid = fake_agent(sv[1], "{\"action\":\"ping\"}\n",
	    "{\"version\":\"0.1.0\",\"uptime\":1.5}", 3);
	close(sv[1]);
	o = agent_exchange(sv[0], req, mono_ms() + 5000, NULL, NULL, &cause);
	CHECK(o != NULL);
	CHECK_STR(cJSON_GetObjectItem(o, "version")->valuestring, "0.1.0");
	CHECK_INT(reap(pid), 0);
	cJSON_Delete(o);
	cJSON_Delete(req);
	close(sv[0]);
}

/* A reply of size bytes ({"stdout":"xxx..."}), or NULL with cause. */
static cJSON *
exchange_sized(size_t big, char **cause)
{
	char *reply = xmalloc(big + 64);
	cJSON *req = cJSON_CreateObject(), *o;
	size_t i;
	int sv[2];
	pid_t pid;

	strcpy(reply, "{\"stdout\":\"");
	for (i = strlen(reply); i < big; i++)
		reply[i] = 'x';
	strcpy(reply + big, "\",\"exit_code\":0}");
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		fatal("socketpair");
	pid = fake_agent(sv[1], NULL, reply, 65536);
	close(sv[1]);
	o = agent_exchange(sv[0], req, mono_ms() + 10000, NULL, NULL, cause);
	close(sv[0]);
	kill(pid, SIGKILL);
	reap(pid);
	cJSON_Delete(req);
	free(reply);
	return o;
}

/* Up to AGENT_MAX_REPLY is parsed; past it, refused without parsing. */
TEST(exchange_reply_capped)
{
	size_t ok = AGENT_MAX_REPLY - 1024;
	char *cause = NULL;
	cJSON *o;

	o = exchange_sized(ok, &cause);
	CHECK(o != NULL);
	CHECK_INT(strlen(cJSON_GetObjectItem(o, "stdout")->valuestring),
	    ok - strlen("{\"stdout\":\""));
	cJSON_Delete(o);
	o = exchange_sized(64 * 1024 * 1024, &cause);
	CHECK(o == NULL);
	CHECK(cause != NULL && strstr(cause, "agent reply too large") != NULL);
	free(cause);
}

TEST(exchange_error_reply_maps_cause)
{
	int sv[2];
	char *cause = NULL;
	cJSON *req = cJSON_CreateObject();
	pid_t pid;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid = fake_agent(sv[1], NULL, "{\"error\":\"unknown action\"}\n", 100);
	close(sv[1]);
	CHECK(agent_exchange(
	          sv[0], req, mono_ms() + 5000, NULL, NULL, &cause) == NULL);
	CHECK_STR(cause, "agent: unknown action");
	CHECK_INT(reap(pid), 0);
	free(cause);
	cJSON_Delete(req);
	close(sv[0]);
}

TEST(exchange_deadline)
{
	int sv[2];
	char *cause = NULL;
	cJSON *req = cJSON_CreateObject();
	uint64_t start = mono_ms();

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	/* the peer reads nothing and never answers */
	CHECK(agent_exchange(sv[0], req, start + 200, NULL, NULL, &cause) ==
	    NULL);
	CHECK(mono_ms() >= start + 200);
	CHECK(strstr(cause, "timed out") != NULL);
	free(cause);
	cJSON_Delete(req);
	close(sv[0]);
	close(sv[1]);
}

TEST(call_through_fake_bridge)
{
	char d[] = "/tmp/vmux-unit-XXXXXX", *path, *cause = NULL;
	struct sockaddr_un sun;
	struct vsock_target t = {0};
	cJSON *req = cJSON_CreateObject(), *o;
	int lfd;
	pid_t pid;

	CHECK(mkdtemp(d) != NULL);
	xasprintf(&path, "%s/vsock.sock", d);
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	strcpy(sun.sun_path, path);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(bind(lfd, (struct sockaddr *)&sun, sizeof sun) == 0);
	CHECK(listen(lfd, 4) == 0);
	pid = fork();
	if (pid == 0) {
		/* CONNECT line, OK line, then the agent's exchange. */
		int c = accept(lfd, NULL, NULL);
		char line[64];
		size_t n = 0;
		while (n + 1 < sizeof line && read(c, line + n, 1) == 1 &&
		    line[n++] != '\n')
			;
		line[n] = '\0';
		if (strcmp(line, "CONNECT 5005\n") != 0)
			_exit(2);
		write_all(c, "OK 1073741824\n", 14);
		pid_t g = fake_agent(
		    c, "{\"action\":\"ping\"}\n", "{\"kernel\":\"6.1.0\"}", 5);
		close(c);
		_exit(reap(g));
	}
	cJSON_AddStringToObject(req, "action", "ping");
	t.cid = 3;
	t.uds = path;
	o = agent_call(
	    &t, req, mono_ms() + 5000, mono_ms() + 5000, NULL, NULL, &cause);
	CHECK(o != NULL);
	CHECK_STR(cJSON_GetObjectItem(o, "kernel")->valuestring, "6.1.0");
	CHECK_INT(reap(pid), 0);
	cJSON_Delete(o);
	cJSON_Delete(req);
	close(lfd);
	unlink(path);
	rmdir(d);
	free(path);
}

TEST(exchange_hands_back_raw_reply)
{
	static const char reply[] =
	    "{\"stdout\":\"a\\u0000b\",\"exit_code\":0}";
	int sv[2];
	char *cause = NULL, *raw = NULL;
	size_t raw_len = 0;
	cJSON *req = cJSON_CreateObject(), *o;
	pid_t pid;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid = fake_agent(sv[1], NULL, reply, 7);
	close(sv[1]);
	o = agent_exchange(
	    sv[0], req, mono_ms() + 5000, &raw, &raw_len, &cause);
	CHECK(o != NULL);
	CHECK_INT(raw_len, strlen(reply));
	CHECK_MEM(raw, reply, raw_len);
	CHECK_INT(reap(pid), 0);
	free(raw);
	cJSON_Delete(o);
	cJSON_Delete(req);
	close(sv[0]);
}

TEST(shell_command_joined_capped_escaped)
{
	cJSON *s = cJSON_CreateObject(), *argv;
	char *c;
	int i;

	c = agent_shell_command(s, "-");
	CHECK_STR(c, "-");
	free(c);
	cJSON_AddStringToObject(s, "command", "top\033[2J");
	c = agent_shell_command(s, "-");
	CHECK(strchr(c, '\033') == NULL && strncmp(c, "top", 3) == 0);
	free(c);
	cJSON_DeleteItemFromObject(s, "command");
	argv = cJSON_AddArrayToObject(s, "command");
	cJSON_AddItemToArray(argv, cJSON_CreateString("ls"));
	cJSON_AddItemToArray(argv, cJSON_CreateNumber(3));
	cJSON_AddItemToArray(argv, cJSON_CreateString("-l"));
	c = agent_shell_command(s, "-");
	CHECK_STR(c, "ls -l");
	free(c);
	/* a million arguments: one pass, AGENT_COMMAND_MAX bytes and "..." */
	for (i = 0; i < 1000000; i++)
		cJSON_AddItemToArray(argv, cJSON_CreateString("x"));
	c = agent_shell_command(s, "-");
	CHECK_INT(strlen(c), AGENT_COMMAND_MAX + 3);
	CHECK(strcmp(c + AGENT_COMMAND_MAX, "...") == 0);
	free(c);
	cJSON_Delete(s);
}

/* An error reply's code is kept for callers to switch on; junk is not. */
TEST(error_code_kept_from_the_reply)
{
	static const char ok[] = "{\"error\":\"no shell \\\"x\\\"\","
	                         "\"code\":\"no_shell\"}";
	static const char junk[] =
	    "{\"error\":\"x\",\"code\":\"NO\\u001b[2J\"}";
	static const char none[] = "{\"error\":\"x\"}";
	char *cause = NULL;

	CHECK(agent_parse_reply(ok, strlen(ok), &cause) == NULL);
	CHECK_STR(agent_error_code(), VMUX_E_NO_SHELL);
	free(cause);
	CHECK(agent_parse_reply(junk, strlen(junk), &cause) == NULL);
	CHECK_STR(agent_error_code(), "");
	free(cause);
	CHECK(agent_parse_reply(none, strlen(none), &cause) == NULL);
	CHECK_STR(agent_error_code(), "");
	free(cause);
}

/* A CLIENTS frame of text. */
static struct attach_frame
clients_frame(const char *json)
{
	return (struct attach_frame){
	    VMUX_ATTACH_CLIENTS, (uint32_t)strlen(json), (const uint8_t *)json};
}

TEST(clients_frame_decoded_for_printing)
{
	struct attach_roster r;
	struct attach_frame f;
	char *big, *tmp;

	f = clients_frame("{\"clients\":[{\"as\":\"alice\",\"you\":true,"
	                  "\"keyboard\":true},{\"as\":\"teacher\","
	                  "\"watching\":true},{\"as\":\"a\\u001b]0;x\"},{}],"
	                  "\"keyboard\":\"alice\",\"more\":2}");
	CHECK_INT(attach_decode_clients(&f, &r), 0);
	CHECK_STR(r.others, "teacher (watching), ?, ?, +2 more");
	CHECK_INT(r.n, 5);
	CHECK(r.mine);
	CHECK_STR(r.keyboard, "alice");
	attach_roster_free(&r);

	/* a hostile agent's 2000 entries: more than an honest roster */
	big = xstrdup("{\"clients\":[");
	for (int i = 0; i < 2000; i++) {
		xasprintf(&tmp, "%s%s{\"as\":\"s%d\"}", big, i ? "," : "", i);
		free(big);
		big = tmp;
	}
	xasprintf(&tmp, "%s]}", big);
	free(big);
	big = tmp;
	f = clients_frame(big);
	CHECK(attach_decode_clients(&f, &r) < 0);
	CHECK(r.others == NULL);
	free(big);

	xasprintf(&big, "{\"clients\":[%s]}",
	    "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},"
	    "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}");
	f = clients_frame(big);
	CHECK_INT(attach_decode_clients(&f, &r), 0);
	CHECK_INT(r.n, 40); /* 32 named, the rest counted */
	CHECK(strstr(r.others, "+8 more") != NULL);
	attach_roster_free(&r);
	free(big);

	f = clients_frame("not json");
	CHECK(attach_decode_clients(&f, &r) < 0);
}
