#!/usr/bin/env bash
# Load run (not a test) of the messages API on the local stack (release dev server,
# moto, the demo provider):
#  1. wrk: `POST /api/cases/{id}/messages` "my cars" — a consultation turn (load, history,
#     configuration, provider tools/list (cached) and tools/call, scripted model, stores);
#  2. the countersign path: N proposals, each confirmed, timing the confirm request
#     (1 GetItem, 1 Query, 1 TransactWriteItems, 1 Sign, the provider, 1 TransactWriteItems).
#
#   infra/scripts/with-local-aws.sh infra/scripts/load-messages.sh [seconds] [connections] [confirms]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
secs=${1:-15}
conns=${2:-8}
confirms=${3:-40}
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }
# The run's one release build (issue 26), with the dev server added.
infra/scripts/build-release.sh --bin countersign-dev >&2
rel=target/lambda-build/x86_64-unknown-linux-gnu/release
suffix=$(python3 -c 'import uuid; print(uuid.uuid4().hex[:8])')
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
demo=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export COUNTERSIGN_TABLE="load-$suffix" COUNTERSIGN_SIGNING_KEY="alias/load-$suffix" \
  COUNTERSIGN_SECRET_PREFIX="load-$suffix/" COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER=1 RUST_LOG=error \
  COUNTERSIGN_DEV_ADDR="127.0.0.1:$port" DEMO_PROVIDER_ADDR="127.0.0.1:$demo" \
  COUNTERSIGN_PERSON_MESSAGES_PER_MINUTE=1000000 COUNTERSIGN_PERSON_CASES_PER_MINUTE=1000000 \
  COUNTERSIGN_TENANT_REQUESTS_PER_MINUTE=1000000
out=$(mktemp)
$rel/countersign-dev >"$out" 2>/dev/null &
dev=$!
trap 'kill $dev 2>/dev/null || true; rm -f "$out"' EXIT
for _ in $(seq 100); do grep -q '^WIDGET_JWT=' "$out" && break; sleep 0.2; done
jwt=$(sed -n 's/^WIDGET_JWT=//p' "$out")
base="http://127.0.0.1:$port"
case=$(curl -s -X POST "$base/api/cases" -H "Authorization: Bearer $jwt" | python3 -c 'import json,sys; print(json.load(sys.stdin)["caseId"])')
lua=$(mktemp)
cat >"$lua" <<LUA
wrk.method = "POST"
wrk.body = '{"content":"my cars"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $jwt"
LUA
threads=$(( conns < 2 ? 1 : 2 ))
echo "== consultation turns: wrk -t$threads -c$conns -d${secs}s"
wrk -t"$threads" -c"$conns" -d"${secs}s" --latency -s "$lua" "$base/api/cases/$case/messages"
echo
echo "== countersign path: $confirms × (propose, then time the confirm)"
python3 - "$base" "$jwt" "$confirms" <<'PY'
import json, sys, time, urllib.request
base, jwt, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def post(path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Authorization": "Bearer " + jwt, "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.load(r)
case = post("/api/cases", {})["caseId"]
times = []
for i in range(n):
    car = "car_a2" if i % 2 == 0 else "car_a1"
    p = post(f"/api/cases/{case}/messages", {"content": f"move ses_a1 to {car}"})["messages"][-1]
    assert p["kind"] == "proposal", p
    t = time.perf_counter()
    m = post(f"/api/cases/{case}/messages", {"content": "confirm", "replyToMessageId": p["id"]})["messages"]
    times.append((time.perf_counter() - t) * 1000)
    assert m[-1]["content"].startswith("Action completed."), m
times.sort()
q = lambda f: times[min(len(times) - 1, int(f * len(times)))]
print(f"confirm requests: {n}; p50 {q(0.5):.1f} ms, p90 {q(0.9):.1f} ms, max {times[-1]:.1f} ms (all completed)")
PY
