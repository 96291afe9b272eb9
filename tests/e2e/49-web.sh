#!/usr/bin/env bash
# 49-web: `vmux web` in a real browser. Two real guests; links from `vmux
# grant --web`; the server on a free loopback port. Debian's chromium,
# driven by puppeteer-core (pinned in tests/web), reads each screen from
# xterm.js's buffer: a student types and sees the answer; a read-only
# page watches and cannot type or resize; the page follows the window's
# size (stty size); a reload and a network drop replay what was missed; a
# revoked link is closed at once; the teacher's wall shows both tiles,
# filters, zooms, takes the keyboard (the student's keys do not arrive)
# and hands it back, broadcasts a line, runs check; a hostile guest's
# escapes, invalid UTF-8 and a flood go through a page that stays usable;
# a session paused under a page is resumed by its reattach, same shell.
# A raw socket client (tests/web/ws.mjs) checks what a browser cannot
# send: forged Origins, wrong, expired and malformed tokens, a link asking
# for another session, oversized, unknown and invalid frames, an input
# flood; the server stays up, bounded, and says why it closed each.
source "$(dirname "$0")/lib.sh"

WEBT=$ROOT/tests/web
[[ -d $WEBT/node_modules/puppeteer-core ]] || {
	echo "FAIL the browser tests' driver is not installed (make test runs npm ci in tests/web)"
	exit 1
}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[[ -x $CHROMIUM ]] || { echo "FAIL no $CHROMIUM (make deps installs chromium)"; exit 1; }
export CHROMIUM VMUX
# chromium and node keep their caches and crash reports here, not in ours
export HOME=$TMP/home
# ... and Chromium's profile (puppeteer's is in TMPDIR), so the leftover
# check (processes naming $VMUX_HOME) finds an orphaned browser too
export TMPDIR=$TMP
mkdir -p "$HOME"

# The server runs under ASan+UBSan when make test built that vmux (any
# report fails the last check), so every page and frame below is also a
# memory-safety test of it.
WEBVMUX=$VMUX
if [[ -z ${E2E_VMUX:-} && -x $BUILD/bin/vmux-asan ]]; then
	WEBVMUX=$BUILD/bin/vmux-asan
fi
export ASAN_OPTIONS=detect_leaks=0:log_path=$TMP/asan
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$TMP/asan

need_session s1 --label room=a
need_session s2 --label room=a
need_session s3 # not the wall's (-l room=a)
# a tile waits for a shell; a read-write link opens one (s1's, below)
vmux open s2 --id main >/dev/null || { echo "FAIL open s2's shell"; exit 1; }

link() { vmux grant "$@" --url "$WEB" 2>/dev/null; }

# serve: start vmux web on a free port; sets PORT, WEB, WALL, WEB_PID.
serve() {
	local tries
	printf '%s\n' '#!/bin/sh' 'echo checked; exit 0' >"$TMP/check.sh"
	for tries in 1 2 3 4 5; do
		PORT=$(shuf -i 20000-60000 -n 1)
		"$WEBVMUX" web --listen "127.0.0.1:$PORT" -l room=a \
			--check "$TMP/check.sh" >"$TMP/web.out" 2>"$TMP/web.err" &
		WEB_PID=$!
		bg_track "$WEB_PID"
		if wait_for 10 grep -qs 'the wall:' "$TMP/web.out"; then
			WEB=http://127.0.0.1:$PORT
			wait_for 10 grep -qs "link, token and all, is in" "$TMP/web.out" &&
				WALL=$(cat "$VMUX_HOME/web/wall-link-$PORT") || return 1
			return 0
		fi
		kill "$WEB_PID" 2>/dev/null
	done
	echo "vmux web never listened: $(cat "$TMP/web.err")"
	return 1
}
serve || { echo "FAIL start vmux web"; exit 1; }
export WEB WALL
LINK_S1=$(link s1 --web)
LINK_S1_RO=$(link s1 --web --read-only --as watcher)
LINK_S1_REVOKE=$(link s1 --web --as leaver)
LINK_S2=$(link s2 --web)
LINK_EXPIRED=$(link s2 --web --expires 1)
LINK_S3=$(link s3 --web)
LINK_S2_FLOOD=$(link s2 --web --shell flood)
export LINK_S1 LINK_S1_RO LINK_S1_REVOKE LINK_S2 LINK_EXPIRED LINK_S3 LINK_S2_FLOOD

browser() { (cd "$WEBT" && timeout 360 node browser.mjs "$1"); }
protocol() { (cd "$WEBT" && timeout 120 node protocol.mjs "$1"); }

check_grants() {
	local out
	expect_match "link" "$LINK_S1" "^$WEB/shell.html#[A-Za-z0-9_-]{32}\$"
	out=$(vmux grants --web --json)
	# six lasting links; the 1 s one only while it lives (a loaded
	# machine may be past it by now)
	expect_eq "grants listed" "$(jq '[.[] | select(.expires == 0)] | length' <<<"$out")" 6
	expect_match "the 1 s grant" "$(jq -r '[.[] | select(.expires != 0) | .expires - .created] | map(tostring) | join(",")' <<<"$out")" '^(1)?$'
	expect_eq "read-only one" "$(jq -r '[.[] | select(.mode == "read-only")][0].as' <<<"$out")" watcher
	# the tokens are nowhere in the state directory, only their hashes
	! grep -rqF -e "${LINK_S1#*#}" "$VMUX_HOME" --exclude-dir=tmp ||
		fail "a token is stored in the clear"
	expect_status 2 vmux grant s1 --web --key /dev/null
	expect_status 2 vmux grant s1 --web --expires soon
	expect_status 2 vmux grant s1 --expires 1h --key /dev/null
	expect_status 125 vmux grant nosuch --web
	expect_status 125 vmux revoke s2 --web --id 0123456789ab
}
check "grant --web: links, listed, hashed, bad options refused" check_grants

check_pages() {
	local code
	code=$(curl -s -o /dev/null -w '%{http_code}' "$WEB/shell.html")
	expect_eq "shell.html" "$code" 200
	code=$(curl -s -o /dev/null -w '%{http_code}' "$WEB/xterm/xterm.js")
	expect_eq "xterm.js served locally" "$code" 200
	code=$(curl -s -o /dev/null -w '%{http_code}' "$WEB/../../etc/passwd" --path-as-is)
	[[ $code != 200 ]] || fail "a path outside the pages was served"
	curl -s -D - -o /dev/null "$WEB/shell.html" | grep -qi '^content-security-policy:.*default-src .self.' ||
		fail "no Content-Security-Policy"
	# the pages load nothing from anywhere else
	! grep -qE '(src|href)="(https?:)?//' "$BUILD"/web/*.html || fail "a page loads from elsewhere"
}
check "the pages and xterm.js are served from vmux's own files" check_pages

check "a student types and sees the answer" browser type
check "a read-only link watches, cannot type or resize" browser readonly
check "the page's size reaches the guest (stty size)" browser resize
check "a reload and a network drop replay what was missed" browser reload
check "a revoked link is closed at once" browser revoke
check "the teacher's wall: tiles, filter, zoom, takeover, broadcast, check" browser wall
# VMUX_WEB_SHOTS=DIR: the README's screenshots, from this run
if [[ -n ${VMUX_WEB_SHOTS:-} ]]; then
	check "screenshots" env SHOTS="$VMUX_WEB_SHOTS" bash -c "cd '$WEBT' && timeout 120 node browser.mjs shots"
fi
check "a hostile guest's escapes, invalid UTF-8 and flood through a page" \
	env FLOOD=4194304 bash -c "cd '$WEBT' && timeout 400 node browser.mjs hostile"

check "a forged Origin is refused before the upgrade" protocol origin
check "an upgrade to another protocol, or none, is refused from any Origin" protocol upgrades
check "a CONNECT and an h2c upgrade are hung up on" protocol connect
check "an address holds at most 64 sockets owing a hello" protocol peer
check "wrong, expired and malformed tokens: refused after a second" protocol tokens
check "a link reaches only its own session" protocol other
check "the teacher reaches the wall's sessions and open shells only" protocol teacher
check "one link holds at most 8 pages open" protocol many
check "a cursor past the shell's end starts over" protocol reset
check "bad input closes with a reason; the server stays up" protocol bad
check "an input flood is taken at the shell's pace" protocol flood
check "a page that stops reading: bounded, told what it missed" env WEB_PID="$WEB_PID" bash -c "cd '$WEBT' && timeout 300 node protocol.mjs slow"

# HTTPS behind a path prefix, as a room off this machine is served: a
# throwaway certificate, --prefix /vmux, the link's start from --url
check_tls_prefix() {
	local port pid code link tries
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
		-keyout "$TMP/key.pem" -out "$TMP/cert.pem" 2>/dev/null || { fail "openssl"; return 1; }
	for tries in 1 2 3 4 5; do # a free port, as serve() finds one
		port=$(shuf -i 20000-60000 -n 1)
		"$WEBVMUX" web --listen "127.0.0.1:$port" --cert "$TMP/cert.pem" --key "$TMP/key.pem" \
			--prefix /vmux --url "https://127.0.0.1:$port/vmux" >"$TMP/tls.out" 2>"$TMP/tls.err" &
		pid=$!
		bg_track "$pid"
		wait_for 10 grep -qs 'the wall:' "$TMP/tls.out" && break
		kill "$pid" 2>/dev/null
		pid=
	done
	[[ -n $pid ]] || { fail "no TLS server: $(cat "$TMP/tls.err")"; return 1; }
	code=$(curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$port/vmux/shell.html")
	expect_eq "under the prefix" "$code" 200
	# TLS 1.2 or later, forward-secret ciphers only
	</dev/null openssl s_client -connect "127.0.0.1:$port" -tls1_1 -cipher "DEFAULT:@SECLEVEL=0" >/dev/null 2>&1 &&
		fail "TLS 1.1 was accepted"
	</dev/null openssl s_client -connect "127.0.0.1:$port" -tls1_2 -cipher AES128-SHA >/dev/null 2>&1 &&
		fail "AES128-SHA (no forward secrecy) was accepted"
	</dev/null openssl s_client -connect "127.0.0.1:$port" -tls1_2 >"$TMP/s_client" 2>&1 ||
		fail "TLS 1.2: $(tail -3 "$TMP/s_client")"
	grep -q 'Cipher is ECDHE' "$TMP/s_client" || fail "TLS 1.2's cipher: $(grep Cipher "$TMP/s_client")"
	code=$(curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$port/shell.html")
	[[ $code != 200 ]] || fail "a page outside the prefix was served"
	link=$(vmux grant s1 --web 2>/dev/null)
	expect_match "link from --url" "$link" "^https://127.0.0.1:$port/vmux/shell.html#"
	(cd "$WEBT" && LINK_S1=$link timeout 120 node browser.mjs type) || fail "typing over wss"
	kill "$pid"
}
check "HTTPS and WSS under a path prefix" check_tls_prefix
check "a pause under a page: its reattach resumes the VM, the same shell goes on" browser pause
check "the VM stops under a page, then starts: the page says so and comes back" browser vmstop

# the teacher's token is kept in a 0600 file, never printed (logs keep
# stdout); off loopback, tokens are not sent in clear
check_teacher_token() {
	local out
	[[ -n $WALL && $WALL == "$WEB/wall.html#"* ]] || fail "wall link '$WALL'" || return 1
	expect_eq "the link's file mode" "$(stat -c %a "$VMUX_HOME/web/wall-link-$PORT")" 600
	expect_eq "the token's file mode" "$(stat -c %a "$VMUX_HOME/web/teacher-token-$PORT")" 600
	expect_eq "the token's file" "$(cat "$VMUX_HOME/web/teacher-token-$PORT")" "${WALL#*#}"
	! grep -qF -e "${WALL#*#}" "$TMP/web.out" "$TMP/web.err" || fail "the teacher's token was printed"
	out=$("$VMUX" web --listen 0.0.0.0:1 2>&1)
	expect_status 2 "$VMUX" web --listen 0.0.0.0:1 2>/dev/null || return 1
	expect_match "off loopback in clear" "$out" 'off loopback: give --cert'
}
check "the teacher's token is in a 0600 file, not on stdout; no clear text off loopback" check_teacher_token

check_refusals_logged() {
	local n
	n=$(grep -c 'refused: the token is not a live' "$TMP/web.err")
	((n >= 4)) || fail "refused tokens logged $n times, want 4 or more"
	grep -q 'refused: a WebSocket from another site' "$TMP/web.err" ||
		fail "the forged Origin was not logged"
	! grep -qF -e "${LINK_S1#*#}" "$TMP/web.err" "$TMP/web.out" || fail "a token is in the log"
}
check "refusals are one log line each, without the token" check_refusals_logged

check_bounded() {
	local rss
	kill -0 "$WEB_PID" || fail "vmux web is gone"
	rss=$(awk '/^VmHWM/ { print $2 }' /proc/"$WEB_PID"/status)
	echo "figure: vmux web's peak RSS after the floods: $((rss / 1024)) MiB"
	((rss < 96 * 1024)) || fail "vmux web peaked at $((rss / 1024)) MiB"
}
check "the server stayed up and bounded" check_bounded


check_stop() {
	kill -TERM "$WEB_PID"
	wait_for 10 bash -c "! kill -0 $WEB_PID 2>/dev/null" || fail "vmux web did not stop on SIGTERM"
	if compgen -G "$TMP/asan*" >/dev/null; then
		fail "sanitizer reports from $WEBVMUX: $(head -n 40 "$TMP"/asan*)"
	fi
	! grep -E -A20 'runtime error|AddressSanitizer' "$TMP/web.err" ||
		fail "sanitizer reports from $WEBVMUX (above)"
	echo "server: $WEBVMUX"
}
check "vmux web stops on SIGTERM, no sanitizer report" check_stop
