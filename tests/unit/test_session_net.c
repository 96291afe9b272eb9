/*
 * test_session_net.c: a session's network as QEMU and vmux-init get it:
 * no NIC by default, NAT, the restricted allowlist with one private
 * address per host, published ports on loopback, and bad values refused.
 */
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "session/session.h"
#include "unit.h"

TEST(net_no_flags_no_nic)
{
	struct session_record r;
	char *s;

	memset(&r, 0, sizeof r);
	CHECK(!net_has_nic(&r));
	CHECK(net_netdev(&r, "/usr/lib/vmux/vmux-bridge") == NULL);
	s = net_cmdline(&r);
	CHECK_STR(s, "");
	free(s);
}

TEST(net_nat)
{
	struct session_record r;
	char *s;

	memset(&r, 0, sizeof r);
	r.net = 1;
	/* passt's, never libslirp's (which maps 10.0.2.2 to the host) */
	CHECK(net_uses_passt(&r));
	s = net_netdev(&r, "/usr/lib/vmux/vmux-bridge");
	CHECK_STR(s, "stream,id=net0,server=off,addr.type=fd,addr.str=3");
	free(s);
	s = net_cmdline(&r);
	CHECK_STR(s, " vmux.net=nat");
	free(s);
}

TEST(net_allowlist_is_restricted_one_address_per_host)
{
	char *hosts[] = {"db.local:5432", "cache:6379", "db.local:5433"};
	char *pub[] = {"8080:80"};
	struct session_record r;
	char *s;

	memset(&r, 0, sizeof r);
	r.net = 1; /* --net with an allowlist: still only the allowlist */
	r.allow_hosts = hosts;
	r.nallow_hosts = 3;
	r.publish = pub;
	r.npublish = 1;
	r.cid = 7;
	r.dir = "/s/al";
	s = net_netdev(&r, "/usr/lib/vmux/vmux-bridge");
	CHECK_STR(s,
	    "user,id=net0,ipv6=off,restrict=on,"
	    "hostfwd=tcp:127.0.0.1:8080-:80,"
	    "guestfwd=tcp:10.0.2.100:5432-cmd:/usr/lib/vmux/vmux-bridge "
	    "--fwd-limit /s/al 64 socat STDIO TCP:db.local:5432,"
	    "guestfwd=tcp:10.0.2.101:6379-cmd:/usr/lib/vmux/vmux-bridge "
	    "--fwd-limit /s/al 64 socat STDIO TCP:cache:6379,"
	    "guestfwd=tcp:10.0.2.100:5433-cmd:/usr/lib/vmux/vmux-bridge "
	    "--fwd-limit /s/al 64 socat STDIO TCP:db.local:5433");
	free(s);
	s = net_cmdline(&r);
	CHECK_STR(s,
	    " vmux.net=restricted vmux.hosts=10.0.2.100=db.local,"
	    "10.0.2.101=cache");
	free(s);
}

TEST(net_cmd_path_ok_only_for_plain_paths)
{
	CHECK(net_cmd_path_ok("/usr/lib/vmux/vmux-bridge"));
	CHECK(net_cmd_path_ok("/tmp/fresh-clone.a_B+1/build/bin/vmux-bridge"));
	CHECK(!net_cmd_path_ok(NULL));
	CHECK(!net_cmd_path_ok("vmux-bridge"));
	CHECK(!net_cmd_path_ok("/a b/vmux-bridge"));
	CHECK(!net_cmd_path_ok("/a,b/vmux-bridge"));
	CHECK(!net_cmd_path_ok("/a'b/vmux-bridge"));
	CHECK(!net_cmd_path_ok("/a\"b/vmux-bridge"));
	CHECK(!net_cmd_path_ok("/a\\b/vmux-bridge"));
}

TEST(net_bad_values_refused)
{
	static const char *const bad_allow[] = {"host", "host:", "host:0",
	    "host:65536", ":80", "a b:80", "a;rm:80", "-x:80", "a,b:80",
	    "x:80x"};
	static const char *const bad_pub[] = {
	    "80", "80:", ":80", "0:80", "80:70000", "a:b", "80:80:80"};
	char *cause = NULL;
	size_t i;

	for (i = 0; i < sizeof bad_allow / sizeof *bad_allow; i++) {
		CHECK_INT(net_allow_check(bad_allow[i], &cause), -1);
		CHECK(cause != NULL);
		free(cause);
		cause = NULL;
	}
	for (i = 0; i < sizeof bad_pub / sizeof *bad_pub; i++) {
		CHECK_INT(net_publish_check(bad_pub[i], &cause), -1);
		CHECK(cause != NULL);
		free(cause);
		cause = NULL;
	}
	CHECK_INT(net_allow_check("10.1.2.3:443", &cause), 0);
	CHECK_INT(net_publish_check("8080:80", &cause), 0);
}
