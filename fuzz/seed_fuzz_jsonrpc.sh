#!/bin/sh
# seed_fuzz_jsonrpc.sh DIR: one seed per message shape an MCP client sends.
set -e
d=$1
i=0
seed() { i=$((i + 1)); printf '%s' "$1" >"$d/seed$i"; }
seed '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}'
seed '{"jsonrpc":"2.0","method":"notifications/initialized"}'
seed '{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{"cursor":"x"}}'
seed '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec","arguments":{"session":"s","command":["ls","-l"]},"_meta":{"progressToken":7}}}'
seed '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"x"}}'
seed '{"jsonrpc":"2.0","id":3,"result":{}}'
seed '[{"jsonrpc":"2.0","id":1,"method":"ping"}]'
seed '{"jsonrpc":"2.0","id":1e400,"method":"ping","params":[1]}'
