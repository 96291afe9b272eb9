#!/bin/sh
# seed_fuzz_reply.sh DIR: seeds for fuzz_reply: list_shells replies (mode
# byte 0) and attach streams (mode byte 1), honest and hostile.
set -eu
d=$1
printf '\000{"shells":[{"shell_id":"a","command":["sh","-c","ls"]}]}' >"$d/shells"
printf '\000{"error":"no shell \\"x\\"","code":"no_shell"}' >"$d/error"
printf '\000{"shells":[{"command":"rm\\u001b]0;x\\u0007 -rf"}]}' >"$d/escapes"
# DATA (cursor 0, "hi"), RESIZE 65535x65535, EXIT 0
printf '\001\001\012\000\000\000\000\000\000\000\000\000\000\000hi' >"$d/data"
printf '\001\003\004\000\000\000\377\377\377\377' >"$d/resize"
printf '\001\004\020\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000' >"$d/exit"
# CLIENTS: who is attached, one label an escape sequence
printf '\001\014\264\000\000\000' >"$d/clients"
printf '%s' '{"clients":[{"as":"teacher","watching":true,"keyboard":false,"you":false},{"as":"a\u001b]0;x","you":false},{"as":"alice","you":true,"keyboard":true}],"keyboard":"teacher","more":3}' >>"$d/clients"
