# Sourced by the gateway's load run (load-gateway.sh) and profile (profile-gateway.sh): the
# request both measure, written once. `tools/call describe_tool` is answered from the
# gateway's own registry, so what is measured is the gateway, not a provider.
mcp_body='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_tool","arguments":{"name":"action_status"}}}'

# Writes to `$1` wrk's Lua script for `POST /mcp` with `$mcp_body`, as an MCP client sends
# it with the person's token `$2`. A caller appends its own `done` reporter if it wants one.
mcp_wrk_lua() {
  cat >"$1" <<LUA
wrk.method = "POST"
wrk.body = '$mcp_body'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-06-18"
wrk.headers["Authorization"] = "Bearer $2"
LUA
}
