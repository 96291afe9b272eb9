#!/usr/bin/env bash
# 48-mcp-http: `vmux mcp --http`, MCP's Streamable HTTP transport. The MCP
# conformance suite (@modelcontextprotocol/conformance 0.1.13, pinned in
# tests/mcp) runs every server scenario that applies to a server of tools
# alone; the official SDK client drives a real guest through it (exec cut
# head and tail, a shell across clients, files, cancellation, progress over
# an SSE stream, bad arguments); and the HTTP edges are checked with curl:
# sessions (400 without, 404 after DELETE), 405 for GET, DNS rebinding and
# Origin refused, a bearer token (401 without it; a token file others can
# read refused; no token off loopback refused), oversized and bad bodies.
source "$(dirname "$0")/lib.sh"

MCPDIR=$ROOT/tests/mcp
CLIENT=$MCPDIR/client.mjs
CONFORMANCE=$MCPDIR/node_modules/@modelcontextprotocol/conformance/dist/index.js
[[ -f $CONFORMANCE && -d $MCPDIR/node_modules/@modelcontextprotocol/sdk ]] || {
	echo "FAIL the MCP test clients are not installed (make test runs npm ci in tests/mcp)"
	exit 1
}
export VMUX
# a host secret in the server's environment: no guest may see it
export MCP_CANARY=host-secret-$RANDOM$RANDOM
SHARE=$TMP/share
mkdir -p "$SHARE"

# serve LOG ARGS...: start vmux mcp --http on a free loopback port with
# ARGS; sets PORT and URL once it listens.
serve() {
	local log=$1 pid tries
	shift
	for tries in 1 2 3 4 5; do
		PORT=$(shuf -i 20000-60000 -n 1)
		"${SERVE_VMUX:-$VMUX}" mcp --http "127.0.0.1:$PORT" "$@" 2>"$log" &
		pid=$!
		bg_track "$pid"
		echo "$pid" >"$TMP/serve.pid"
		if wait_for 10 grep -qs 'listening on' "$log"; then
			URL=http://127.0.0.1:$PORT/mcp
			return 0
		fi
		kill "$pid" 2>/dev/null
	done
	echo "vmux mcp --http never listened: $(cat "$log")"
	return 1
}
serve "$TMP/http.err" --allow-root "$SHARE" || { echo "FAIL start the server"; exit 1; }

# post [CURL ARGS...] BODY: POST a message; prints "STATUS BODY".
post() {
	local body=${!#}
	curl -s -o "$TMP/resp" -w '%{http_code}' -X POST "$URL" \
		-H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' "${@:1:$#-1}" \
		--data-binary "$body"
	echo " $(cat "$TMP/resp")"
}
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
PING='{"jsonrpc":"2.0","id":2,"method":"ping"}'

# session: initialize and print the Mcp-Session-Id.
session() {
	curl -s -D - -o /dev/null -X POST "$URL" -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' --data-binary "$INIT" |
		tr -d '\r' | sed -n 's/^mcp-session-id: //Ip'
}

t_conformance() {
	local sc out
	for sc in server-initialize ping tools-list logging-set-level \
		dns-rebinding-protection server-sse-multiple-streams; do
		out=$(cd "$MCPDIR" && timeout 120 node "$CONFORMANCE" server --url "$URL" --scenario "$sc" 2>&1)
		[[ $out =~ Passed:\ ([0-9]+)/([0-9]+),\ 0\ failed ]] &&
			((BASH_REMATCH[1] == BASH_REMATCH[2] && BASH_REMATCH[1] > 0)) ||
			fail "scenario $sc: $(tail -n 12 <<<"$out")" || return 1
		echo "figure: conformance $sc: ${BASH_REMATCH[0]}"
	done
}

t_sessions() {
	local sid r
	sid=$(session)
	[[ $sid =~ ^[0-9a-f]{32}$ ]] || fail "session id '$sid'" || return 1
	r=$(post "$PING")
	expect_match "no session" "$r" '^400 .*Mcp-Session-Id' || return 1
	r=$(post -H "Mcp-Session-Id: $sid" "$PING")
	expect_match "ping" "$r" '^200 \{"jsonrpc":"2.0","id":2,"result":\{\}\}$' || return 1
	r=$(post -H "Mcp-Session-Id: nosuchsession" "$PING")
	expect_match "unknown session" "$r" '^404 ' || return 1
	r=$(post -H "Mcp-Session-Id: $sid" '{"jsonrpc":"2.0","method":"notifications/initialized"}')
	expect_match "notification" "$r" '^202 ' || return 1
	r=$(post -H "Mcp-Session-Id: $sid" -H 'MCP-Protocol-Version: 1999-01-01' "$PING")
	expect_match "protocol version" "$r" '^400 ' || return 1
	expect_eq "GET, not SSE" "$(curl -s -o /dev/null -w '%{http_code}' -H "Mcp-Session-Id: $sid" "$URL")" 406 || return 1
	expect_eq "PUT" "$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H "Mcp-Session-Id: $sid" "$URL")" 405 || return 1
	# GET opens the session's stream; DELETE ends the session and it
	curl -s -N -H "Mcp-Session-Id: $sid" -H 'Accept: text/event-stream' \
		--max-time 60 -o "$TMP/get.out" -w '%{http_code}' "$URL" >"$TMP/get.code" &
	local get=$!
	wait_for 10 test -s "$TMP/get.out" || fail "the GET stream sent nothing" || return 1
	expect_eq "GET stream" "$(od -An -c "$TMP/get.out" | tr -d ' ')" ':\n\n' || return 1
	kill -0 "$get" 2>/dev/null || fail "the GET stream closed early" || return 1
	expect_eq "DELETE" "$(curl -s -o /dev/null -w '%{http_code}' -X DELETE -H "Mcp-Session-Id: $sid" "$URL")" 200 || return 1
	wait_for 10 bash -c "! kill -0 $get 2>/dev/null" || fail "DELETE left the GET stream open" || return 1
	wait "$get"
	expect_eq "GET status" "$(cat "$TMP/get.code")" 200 || return 1
	expect_eq "GET of an ended session" "$(curl -s -o /dev/null -w '%{http_code}' \
		-H "Mcp-Session-Id: $sid" -H 'Accept: text/event-stream' "$URL")" 404 || return 1
	r=$(post -H "Mcp-Session-Id: $sid" "$PING")
	expect_match "after DELETE" "$r" '^404 ' || return 1
	expect_eq "other path" "$(curl -s -o /dev/null -w '%{http_code}' -X POST --data-binary "$INIT" "http://127.0.0.1:$PORT/other")" 404
}

t_refusals() {
	local sid r
	sid=$(session)
	r=$(post -H "Mcp-Session-Id: $sid" -H 'Origin: http://evil.example' "$PING")
	expect_match "foreign Origin" "$r" '^403 ' || return 1
	r=$(post -H "Mcp-Session-Id: $sid" -H 'Host: evil.example' "$PING")
	expect_match "foreign Host" "$r" '^403 ' || return 1
	r=$(post -H "Mcp-Session-Id: $sid" -H "Origin: http://localhost:$PORT" "$PING")
	expect_match "local Origin" "$r" '^200 ' || return 1
	# another local port is another local web app's page
	r=$(post -H "Mcp-Session-Id: $sid" -H "Origin: http://localhost:$((PORT + 1))" "$PING")
	expect_match "another local port's Origin" "$r" '^403 ' || return 1
	r=$(post -H "Mcp-Session-Id: $sid" -H "Origin: http://127.0.0.1" "$PING")
	expect_match "a local Origin of port 80" "$r" '^403 ' || return 1
	grep -q 'refused (403): Origin not allowed' "$TMP/http.err" ||
		fail "no log line for the refusal" || return 1
	r=$(post -H "Mcp-Session-Id: $sid" 'not json')
	expect_match "bad JSON" "$r" '^400 .*-32700' || return 1
	head -c $((25 << 20)) /dev/zero | tr '\0' ' ' >"$TMP/big"
	expect_eq "oversized" "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Mcp-Session-Id: $sid" \
		-H 'Content-Type: application/json' --data-binary @"$TMP/big" "$URL")" 413 || return 1
	r=$(post -H "Mcp-Session-Id: $sid" "$PING")
	expect_match "served after" "$r" '^200 '
}

t_token() {
	local log=$TMP/token.err out
	printf 'a-secret-of-enough-length\n' >"$TMP/token"
	chmod 644 "$TMP/token"
	# on the running server's port, bounded: were a refusal to regress,
	# this fails instead of hanging or serving
	out=$(timeout 10 "$VMUX" mcp --http "127.0.0.1:$PORT" --token-file "$TMP/token" 2>&1)
	expect_match "readable token file" "$out" 'chmod 600' || return 1
	out=$(timeout 10 "$VMUX" mcp --http "0.0.0.0:$PORT" 2>&1)
	expect_match "no token off loopback" "$out" 'give --token-file' || return 1
	chmod 600 "$TMP/token"
	local url0=$URL port0=$PORT
	serve "$log" --token-file "$TMP/token" || return 1
	expect_match "no token" "$(post "$INIT")" '^401 ' || return 1
	expect_match "wrong token" "$(post -H 'Authorization: Bearer a-secret-of-enough-lengtX' "$INIT")" '^401 ' || return 1
	expect_match "token" "$(post -H 'Authorization: Bearer a-secret-of-enough-length' "$INIT")" '^200 .*"protocolVersion"' || return 1
	VMUX_MCP_URL=$URL VMUX_MCP_TOKEN=a-secret-of-enough-length node "$CLIENT" tools || return 1
	URL=$url0 PORT=$port0
}

# upgrade [CURL ARGS...]: a WebSocket upgrade to /mcp; prints its status
# (000: closed without an answer), bounded in time.
upgrade() {
	curl -s -o /dev/null -w '%{http_code}' --max-time 5 -H 'Connection: Upgrade' \
		-H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13' \
		-H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' "$@" "$URL"
}

# MCP speaks HTTP alone: a WebSocket upgrade is refused, whoever asks
t_websocket() {
	local code
	for h in 'Origin: http://evil.example' "Origin: http://127.0.0.1:$PORT" 'Host: evil.example'; do
		code=$(upgrade -H "$h")
		[[ $code != 101 ]] || fail "an upgrade with $h was opened" || return 1
	done
	code=$(upgrade -H 'Sec-WebSocket-Protocol: mcp')
	[[ $code != 101 ]] || fail "an upgrade asking for mcp was opened" || return 1
	# a CONNECT (libwebsockets' raw socket, past every check) and h2c
	python3 - "$PORT" 2>"$TMP/connect.out" <<-'PY' || { fail "CONNECT or h2c: $(cat "$TMP/connect.out")"; return 1; }
		import socket, sys
		for req in (b"CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n",
		        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade, HTTP2-Settings\r\n"
		        b"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\nContent-Length: 0\r\n\r\n"):
		    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
		    s.sendall(req)
		    data = b""
		    try:
		        while True:
		            d = s.recv(4096)
		            if not d:
		                break
		            data += d
		    except socket.timeout:
		        sys.exit(f"{req[:8]!r}: the socket stayed open ({data[:40]!r})")
		    if data.startswith(b"HTTP/1.1 101"):
		        sys.exit(f"{req[:8]!r}: switched protocols")
	PY
	grep -q 'refused: a WebSocket upgrade' "$TMP/http.err" || fail "the refusal was not logged"
}

# the session table: a live session is never evicted by initialize (503
# when every slot is live); a session's GET streams are bounded (429)
t_table() {
	local log=$TMP/table.err url0=$URL port0=$PORT first r
	serve "$log" || return 1
	first=$(session)
	python3 - "$PORT" "$INIT" >"$TMP/table.out" <<-'PY' || { fail "initialize loop: $(tail -3 "$TMP/table.out")"; return 1; }
		import http.client, sys
		c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
		codes = {}
		for _ in range(1024):
		    c.request("POST", "/mcp", sys.argv[2], {"Content-Type": "application/json",
		        "Accept": "application/json, text/event-stream"})
		    r = c.getresponse(); r.read()
		    codes[r.status] = codes.get(r.status, 0) + 1
		print(" ".join(f"{k}:{v}" for k, v in sorted(codes.items())))
	PY
	expect_eq "1024 initializes" "$(cat "$TMP/table.out")" "200:1023 503:1" || return 1
	r=$(post -H "Mcp-Session-Id: $first" "$PING")
	expect_match "the first session lives" "$r" '^200 ' || return 1
	expect_eq "DELETE frees a slot" "$(curl -s -o /dev/null -w '%{http_code}' -X DELETE -H "Mcp-Session-Id: $first" "$URL")" 200 || return 1
	first=$(session)
	[[ $first =~ ^[0-9a-f]{32}$ ]] || fail "no session after a DELETE" || return 1
	for i in 1 2 3 4 5 6 7 8; do
		curl -s -N -H "Mcp-Session-Id: $first" -H 'Accept: text/event-stream' \
			--max-time 30 -o "$TMP/get$i.out" "$URL" &
		bg_track $!
	done
	wait_for 10 bash -c "for i in 1 2 3 4 5 6 7 8; do [[ -s $TMP/get\$i.out ]] || exit 1; done" ||
		fail "eight GET streams did not all open" || return 1
	expect_eq "a ninth GET stream" "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
		-H "Mcp-Session-Id: $first" -H 'Accept: text/event-stream' "$URL")" 429 || return 1
	kill "$(cat "$TMP/serve.pid")" 2>/dev/null
	URL=$url0 PORT=$port0
}

# an agent labels only under the keys it was given (mcp.* by default): it
# cannot join a person's selector
t_labels() {
	local sid r
	sid=$(session)
	r=$(post -H "Mcp-Session-Id: $sid" \
		'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"session_create","arguments":{"name":"lab1","labels":{"class":"cs101"}}}}')
	expect_match "a person's label key" "$r" 'label key class is not one.*"isError":true' || return 1
	[[ ! -e $VMUX_HOME/sessions/lab1 ]] || fail "a session was made" || return 1
	r=$(post -H "Mcp-Session-Id: $sid" \
		'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"session_create","arguments":{"name":"lab1","labels":{"vmux.mcp":"other"}}}}')
	expect_match "the server's own key" "$r" 'server.s own.*"isError":true'
}

# hammer: 25 rounds of a session's life over HTTP: initialize, a GET
# stream, a ping, DELETE (which ends the stream), each its own client.
hammer() {
	local sid
	for _ in $(seq 25); do
		sid=$(session) || return 1
		curl -s -N --max-time 5 -H "Mcp-Session-Id: $sid" -H 'Accept: text/event-stream' \
			-o /dev/null "$URL" &
		curl -s -o /dev/null -X POST "$URL" -H 'Content-Type: application/json' \
			-H 'Accept: application/json, text/event-stream' -H "Mcp-Session-Id: $sid" \
			--data-binary "$PING"
		curl -s -o /dev/null -X DELETE -H "Mcp-Session-Id: $sid" "$URL"
		wait
	done
}

# The server's two threads (libwebsockets' and the MCP server's, meeting in
# two queues under one lock) under ThreadSanitizer, four clients at once.
t_tsan() {
	local url0=$URL port0=$PORT pid pids=() i
	SERVE_VMUX=$BUILD/bin/vmux-tsan TSAN_OPTIONS=log_path=$TMP/tsan:second_deadlock_stack=1 \
		serve "$TMP/mcp-tsan.err" || return 1
	pid=$(cat "$TMP/serve.pid")
	for i in 1 2 3 4; do
		hammer &
		pids+=($!)
	done
	wait "${pids[@]}" || fail "a client loop failed"
	kill -TERM "$pid"
	wait_for 10 bash -c "! kill -0 $pid 2>/dev/null" || fail "vmux-tsan mcp did not stop on SIGTERM"
	! compgen -G "$TMP/tsan*" >/dev/null || fail "TSan: $(head -n 40 "$TMP"/tsan*)"
	URL=$url0 PORT=$port0
}

# mcp SCENARIO ARGS...: the SDK client over HTTP.
mcp() { VMUX_MCP_URL=$URL node "$CLIENT" "$@"; }

t_create() { mcp create h1; }
t_exec() { mcp bigexec h1; }

# A call longer than any idle timeout answers on its open POST.
t_long_call() {
	local sid r
	sid=$(session)
	r=$(post -H "Mcp-Session-Id: $sid" --max-time 90 \
		'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"exec","arguments":{"session":"h1","command":"sleep 20; echo slept"}}}')
	expect_match "20 s call" "$r" '^200 .*"stdout":"slept\\n"'
}
t_shell() { mcp shell h1 open && mcp shell h1 use; }
t_files() { mcp files h1 "$SHARE"; }
t_cancel() { mcp cancel h1; }
t_progress() { mcp progress h1; }
t_badargs() { mcp badargs h1; }

check "conformance suite: every server scenario that applies passes" t_conformance
check "sessions: Mcp-Session-Id, 400, 404, 202, 405, GET's stream, DELETE" t_sessions
check "DNS rebinding, Origin, bad and oversized bodies refused" t_refusals
check "a bearer token: 401 without it; a readable file or none off loopback refused" t_token
check "a WebSocket upgrade is refused, whatever its Host, Origin or protocol" t_websocket
check "initialize never evicts a live session (503); GET streams bounded (429)" t_table
check "an agent's labels: its own keys only (mcp.*), never a person's" t_labels
if [[ -x $BUILD/bin/vmux-tsan ]]; then
	check "mcp --http under TSan: four clients at once, no report" t_tsan
else
	skip "mcp --http under TSan" "no $BUILD/bin/vmux-tsan (make test builds it)"
fi
check "SDK client over HTTP: session_create" t_create
check "SDK client over HTTP: exec cut head and tail, stdin, env, timeout" t_exec
check "a 20 s call is answered on its POST" t_long_call
check "SDK client over HTTP: a shell across clients" t_shell
check "SDK client over HTTP: binary files and copies" t_files
check "SDK client over HTTP: cancellation ends the command" t_cancel
check "SDK client over HTTP: progress as an SSE stream" t_progress
check "SDK client over HTTP: bad arguments" t_badargs
