#!/usr/bin/env bash
# 05-first-run: every command as the first one a newcomer runs. Each gets
# its own empty HOME (no state folder, no config, no VMUX_HOME) and must do
# its job or refuse with its own words: never fail on a folder it did not
# make ("No such file or directory", "cannot make"), never crash or hang.
# The ones that need a session name one that does not exist; new and run
# boot a real guest; web and mcp --http serve and answer.
source "$(dirname "$0")/lib.sh"

n=0

# first STATUSES CMD...: run vmux CMD in a new empty HOME, stdin empty;
# its status must be one of STATUSES (a |-list), and nothing it said may
# be about a missing folder of its own.
first() {
	local want=$1 out rc home
	shift
	n=$((n + 1))
	home=$TMP/home$n
	LAST_HOME=$home
	mkdir -p "$home"
	out=$(HOME=$home VMUX_HOME= XDG_CONFIG_HOME= timeout 120 "$VMUX" "$@" </dev/null 2>&1)
	rc=$?
	[[ "|$want|" == *"|$rc|"* ]] || fail "vmux $*: status $rc, want $want: $(tail -n 3 <<<"$out")" || return 1
	! grep -qiE 'no such file or directory|cannot (make|create)' <<<"$out" ||
		fail "vmux $* on an empty HOME: $(grep -iE 'no such file|cannot (make|create)' <<<"$out" | head -n 3)"
}

t_reads() {
	first 0 ls || return 1
	first 0 ls --json || return 1
	first 0 status || return 1
	first 0 images || return 1
	first 0 grants || return 1
	first 0 grants --web || return 1
	first 0 host ls || return 1
	first 0 pool ls || return 1
	first 0 help || return 1
	first 0 tui --model-json
}

t_no_session() {
	local c
	for c in exec shells logs stop start restart rm ping recordings console gdb; do
		case $c in
		exec) first 125 exec nosuch -- true ;;
		*) first 125 "$c" nosuch ;;
		esac || return 1
	done
	first 125 grant nosuch --web || return 1
	first 125 revoke nosuch --web --id 0123456789ab || return 1
	first 125 cp nosuch:/etc/hostname "$TMP/x" || return 1
	first 125 open nosuch || return 1
	first 125 capture nosuch main || return 1
	first 125 send-keys nosuch main Enter || return 1
	printf '#!/bin/sh\nexit 0\n' >"$TMP/ok.sh"
	first 1 check "$TMP/ok.sh" nosuch # a table: nosuch, error
}

t_serves() {
	local home=$TMP/home-web port tries out
	mkdir -p "$home"
	for tries in 1 2 3 4 5; do
		port=$(shuf -i 20000-60000 -n 1)
		HOME=$home VMUX_HOME= timeout 60 "$VMUX" web --listen "127.0.0.1:$port" \
			>"$TMP/web.out" 2>"$TMP/web.err" &
		bg_track $!
		wait_for 10 grep -qs 'the wall:' "$TMP/web.out" && break
	done
	grep -qs 'the wall:' "$TMP/web.out" || fail "vmux web, first run: $(cat "$TMP/web.err")" || return 1
	expect_eq "the page" "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/shell.html")" 200 || return 1
	home=$TMP/home-mcp
	mkdir -p "$home"
	out=$(printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' |
		HOME=$home VMUX_HOME= timeout 30 "$VMUX" mcp 2>&1)
	expect_match "vmux mcp, first run" "$out" '"protocolVersion"'
}

t_boots() {
	first 0 run --rm -- true || return 1
	first 0 new f1 || return 1
	HOME=$LAST_HOME VMUX_HOME= "$VMUX" rm f1 || fail "rm f1"
}

check "reading commands on an empty HOME" t_reads
check "commands naming a session that is not there: their own error" t_no_session
check "vmux web and vmux mcp serve on an empty HOME" t_serves
check "run and new boot as a first command" t_boots
