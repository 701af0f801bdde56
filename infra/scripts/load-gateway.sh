#!/usr/bin/env bash
# Load comparison (not a test; issue 17): `tools/call describe_tool` with a conversation
# token, in one run and alternating between three servers on loopback:
#   gateway  the release gateway (this repository), against the local AWS emulator;
#   bare     a bare axum server answering the same request with the gateway's bytes
#            (infra/load-baseline: the limit of this HTTP stack on this machine);
#   ts-sdk   the TypeScript SDK's own server doing the same job (infra/interop/ts_server.mjs:
#            HS256 token check, stateless JSON, the same envelope): the seed's stack.
# wrk (Debian package, installed with apt-get when missing) drives each for SECONDS with
# CONNECTIONS connections, ROUNDS times in turn; the script prints each run, then the
# median requests/s and p99 of each server and the ratios to the bare server.
#
#   infra/scripts/with-local-aws.sh infra/scripts/load-gateway.sh [seconds] [connections] [rounds]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
secs=${1:-10}
conns=${2:-16}
rounds=${3:-3}
[[ "${AWS_ENDPOINT_URL:-}" == http://127.0.0.1:* ]] || { echo "run inside infra/scripts/with-local-aws.sh" >&2; exit 1; }
if ! command -v wrk >/dev/null; then
  if [ "$(id -u)" = 0 ]; then apt-get install -y -q wrk >/dev/null; else sudo apt-get install -y -q wrk >/dev/null; fi
fi
infra/scripts/install.sh interop
# The run's one release build (issue 26), with the CLI and the bare server added;
# LOAD_BIN_DIR=<a folder of built binaries> uses those and builds nothing (the test
# command's smoke run of the README's commands, on the debug build: its numbers mean
# nothing there).
if [ -n "${LOAD_BIN_DIR:-}" ]; then
  rel=$LOAD_BIN_DIR
else
  infra/scripts/build-release.sh --bin countersign --bin bare-mcp >&2
  rel=target/lambda-build/x86_64-unknown-linux-gnu/release
fi
suffix=$(python3 -c 'import uuid; print(uuid.uuid4().hex[:8])')
export COUNTERSIGN_TABLE="load-$suffix" COUNTERSIGN_SIGNING_KEY="alias/load-$suffix" COUNTERSIGN_SECRET_PREFIX="load-$suffix/" RUST_LOG=error
$rel/countersign bootstrap >/dev/null
token=$($rel/countersign gateway-token --tenant ten_01JDZ6Y5X1QW9T3V7N2K4M8P0R --user driver-42 --case case_01JDZ6Y5X1QW9T3V7N2K4M8P0R --ttl 900)
key=$("$root/.venv/moto/bin/python" -c 'import boto3, sys; print(boto3.client("secretsmanager").get_secret_value(SecretId=sys.argv[1])["SecretString"])' "${COUNTERSIGN_SECRET_PREFIX}platform/gateway-token-key")
. "$root/infra/scripts/localnet.sh"
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT
wait_port() { python3 - "$1" <<'PY'
import socket, sys, time
for _ in range(100):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=0.2).close(); sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)
PY
}
. "$root/infra/scripts/wrk-mcp.sh"
body=$mcp_body
gw_port=$(free_port)
COUNTERSIGN_GATEWAY_ADDR="127.0.0.1:$gw_port" $rel/countersign-gateway >/dev/null 2>&1 &
pids+=($!)
wait_port "$gw_port"
# The gateway's answer is the bare server's fixed body and the TypeScript server's envelope.
curl -sf "http://127.0.0.1:$gw_port/mcp" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-06-18' -d "$body" > "$work/answer.json"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["result"]; assert r["structuredContent"]["ok"]; json.dump(r["structuredContent"], open(sys.argv[2],"w"))' "$work/answer.json" "$work/envelope.json"
bare_port=$(free_port)
$rel/bare-mcp "127.0.0.1:$bare_port" "$work/answer.json" &
pids+=($!)
ts_port=$(free_port)
(cd infra/interop && exec node ts_server.mjs "$ts_port" "$key" "$work/envelope.json") &
pids+=($!)
wait_port "$bare_port"; wait_port "$ts_port"
mcp_wrk_lua "$work/req.lua" "$token"
cat >>"$work/req.lua" <<'LUA'
done = function(summary, latency, requests)
  io.write(string.format("RESULT %.1f %.3f %.3f %d %d\n", summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.errors.status, summary.requests))
end
LUA
# Each server must answer the measured request with the same envelope before it is measured.
for port in "$gw_port" "$bare_port" "$ts_port"; do
  curl -sf "http://127.0.0.1:$port/mcp" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-06-18' -d "$body" \
    | python3 -c 'import json,sys; r=json.load(sys.stdin)["result"]; e=json.load(open(sys.argv[1])); assert r["structuredContent"]==e, r' "$work/envelope.json"
done
echo "tools/call describe_tool, ${secs}s x ${rounds} rounds per server, $conns connections, wrk -t1 (2 cores shared with the server)"
printf '%-8s %5s %10s %9s %9s %7s\n' server round 'req/s' 'p50 ms' 'p99 ms' non2xx
for r in $(seq 1 "$rounds"); do
  for name in gateway bare ts-sdk; do
    case $name in gateway) port=$gw_port;; bare) port=$bare_port;; ts-sdk) port=$ts_port;; esac
    line=$(wrk -t1 -c"$conns" -d"${secs}s" --latency -s "$work/req.lua" "http://127.0.0.1:$port/mcp" | grep '^RESULT')
    read -r _ rps p50 p99 non2xx _ <<<"$line"
    printf '%-8s %5s %10s %9s %9s %7s\n' "$name" "$r" "$rps" "$p50" "$p99" "$non2xx"
    echo "$name $rps $p99" >> "$work/results"
  done
done
python3 - "$work/results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, rps, p99 = line.split()
    rows.setdefault(name, []).append((float(rps), float(p99)))
med = {n: (statistics.median(r for r, _ in v), statistics.median(p for _, p in v)) for n, v in rows.items()}
print("\nmedian of the rounds:")
for n in ("gateway", "bare", "ts-sdk"):
    rps, p99 = med[n]
    print(f"  {n:8} {rps:10.0f} req/s  p99 {p99:6.2f} ms  throughput {rps / med['bare'][0]:5.1%} of bare")
print(f"  gateway / ts-sdk throughput: {med['gateway'][0] / med['ts-sdk'][0]:.2f}x")
PY
