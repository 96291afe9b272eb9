# mcp.mk: vmux mcp, the MCP server (mcp/), linked into vmux (cli/cli.mk).
MCP_SRCS := mcp/jsonrpc.c mcp/server.c mcp/tools.c mcp/tools-args.c \
            mcp/tools-session.c mcp/tools-exec.c mcp/tools-shell.c \
            mcp/tools-file.c mcp/jobs.c \
            mcp/policy.c mcp/stdio.c mcp/http.c

# The JSON-RPC layer is pure: its unit tests need only cJSON.
UNIT_TESTS += mcp
UNIT_mcp_SRCS := tests/unit/test_mcp_jsonrpc.c mcp/jsonrpc.c
UNIT_mcp_LIBS := -lcjson

# fuzz/fuzz_jsonrpc.c: the JSON-RPC layer and the head-and-tail keeper.
FUZZ_fuzz_jsonrpc_SRCS := mcp/jsonrpc.c
FUZZ_fuzz_jsonrpc_LIBS := -lcjson

# libwebsockets serves the HTTP transport (the browser issue shares it).
MCP_LIBS := $(shell pkg-config --libs libwebsockets 2>/dev/null || echo -lwebsockets) -lpthread

# The policy against real folders and session records.
UNIT_TESTS += mcp_policy
UNIT_mcp_policy_SRCS := tests/unit/test_mcp_policy.c mcp/policy.c \
                        $(SESSION_UNIT_SRCS)
UNIT_mcp_policy_LIBS := $(SESSION_LIBS)
