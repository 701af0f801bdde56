#!/usr/bin/env bash
# Flame graph of the gateway under load (not a test; issue 17): the `profiling` build (the
# release profile with symbols) serves `tools/call describe_tool` under wrk while `perf`
# samples it; inferno (crates.io, installed into .venv/inferno) folds the stacks. Writes
# target/profile/gateway.svg and target/profile/gateway.folded, and prints the share of
# samples under a few frames of interest.
#
#   infra/scripts/with-local-aws.sh infra/scripts/profile-gateway.sh [seconds]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
. infra/scripts/localnet.sh
. infra/scripts/wrk-mcp.sh
secs=${1:-10}
[[ "${AWS_ENDPOINT_URL:-}" == http://127.0.0.1:* ]] || { echo "run inside infra/scripts/with-local-aws.sh" >&2; exit 1; }
for tool in perf wrk; do
  command -v $tool >/dev/null || apt-get install -y -q "$([ $tool = perf ] && echo linux-perf || echo wrk)" >/dev/null
done
inferno="$root/.venv/inferno/bin"
[ -x "$inferno/inferno-flamegraph" ] || cargo install inferno --version 0.12.3 --locked --root "$root/.venv/inferno"
cargo build -q --profile profiling --locked -p countersign-gateway-fn -p countersign-cli
bin=target/profiling
suffix=$(python3 -c 'import uuid; print(uuid.uuid4().hex[:8])')
export COUNTERSIGN_TABLE="prof-$suffix" COUNTERSIGN_SIGNING_KEY="alias/prof-$suffix" COUNTERSIGN_SECRET_PREFIX="prof-$suffix/" RUST_LOG=error
$bin/countersign bootstrap >/dev/null
token=$($bin/countersign gateway-token --tenant ten_01JDZ6Y5X1QW9T3V7N2K4M8P0R --user driver-42 --case case_01JDZ6Y5X1QW9T3V7N2K4M8P0R --ttl 900)
port=$(free_port)
out="$root/target/profile"
mkdir -p "$out"
COUNTERSIGN_GATEWAY_ADDR="127.0.0.1:$port" $bin/countersign-gateway >/dev/null 2>&1 &
gw=$!
trap 'kill $gw 2>/dev/null || true' EXIT
sleep 1
lua=$(mktemp)
mcp_wrk_lua "$lua" "$token"
# Warm up (the token key is read on the first request), then sample.
wrk -t1 -c16 -d2s -s "$lua" "http://127.0.0.1:$port/mcp" >/dev/null
perf record -F 1999 -g --call-graph dwarf,16384 -p $gw -o "$out/perf.data" -- sleep "$secs" 2>/dev/null &
rec=$!
wrk -t1 -c16 -d"${secs}s" -s "$lua" "http://127.0.0.1:$port/mcp" | grep -E 'Requests/sec|Latency'
wait $rec
perf script -i "$out/perf.data" 2>/dev/null | "$inferno/inferno-collapse-perf" > "$out/gateway.folded"
"$inferno/inferno-flamegraph" --title "gateway: tools/call describe_tool" < "$out/gateway.folded" > "$out/gateway.svg"
python3 - "$out/gateway.folded" <<'PY'
import sys
total, hits = 0, {}
frames = {
    "rmcp serve / service machinery": "rmcp::service",
    "rmcp streamable HTTP tower layer": "streamable_http_server::tower",
    "tool registry call (parse, handler, seal)": "countersign_tools::registry",
    "access token verification": "countersign_tools::access",
    "JSON schema validation": "jsonschema",
    "serde_json": "serde_json",
    "tokio spawn / scheduler": "tokio::runtime",
    "hyper (HTTP/1)": "hyper::",
    "memory allocation": "malloc",
    "kernel / syscalls": "[unknown]",
}
for line in open(sys.argv[1]):
    stack, n = line.rsplit(" ", 1)
    n = int(n); total += n
    for label, needle in frames.items():
        if needle in stack:
            hits[label] = hits.get(label, 0) + n
print(f"{total} samples; share of samples whose stack includes:")
for label, n in sorted(hits.items(), key=lambda kv: -kv[1]):
    print(f"  {n / total:6.1%}  {label}")
PY
echo "flame graph: $out/gateway.svg"
