#!/usr/bin/env bash
# Load run (not a test): `tools/call describe_tool` through the local gateway (release
# build) with wrk (Debian package `wrk`), against the local AWS emulator. Prints wrk's
# requests/s and latency distribution.
#
#   infra/scripts/with-local-aws.sh infra/scripts/load-gateway.sh [seconds] [connections]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
secs=${1:-15}
conns=${2:-16}
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }
cargo build -q --release -p countersign-gateway -p countersign-cli
suffix=$(python3 -c 'import uuid; print(uuid.uuid4().hex[:8])')
export COUNTERSIGN_TABLE="load-$suffix" COUNTERSIGN_SIGNING_KEY="alias/load-$suffix" COUNTERSIGN_SECRET_PREFIX="load-$suffix/" RUST_LOG=error
target/release/countersign bootstrap >/dev/null
token=$(target/release/countersign gateway-token --tenant ten_01JDZ6Y5X1QW9T3V7N2K4M8P0R --user driver-42 --case case_01JDZ6Y5X1QW9T3V7N2K4M8P0R --ttl 900)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
COUNTERSIGN_GATEWAY_ADDR="127.0.0.1:$port" target/release/countersign-gateway >/dev/null &
gw=$!
trap 'kill $gw 2>/dev/null || true' EXIT
sleep 1
lua=$(mktemp)
cat >"$lua" <<LUA
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"describe_tool","arguments":{"name":"action_status"}}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-06-18"
wrk.headers["Authorization"] = "Bearer $token"
LUA
wrk -t2 -c"$conns" -d"${secs}s" --latency -s "$lua" "http://127.0.0.1:$port/mcp"
