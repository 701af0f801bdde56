#!/usr/bin/env bash
# Load run (not a test) for N-3 / security review N1 on the local stack (debug dev server,
# moto): one tenant's admin sends erasure requests for made-up people in a loop (4 at a
# time) while another tenant's person chats; prints the chat's latency percentiles with
# and without the flood, and what the flood got.
#
#   infra/scripts/with-local-aws.sh infra/scripts/erasure-flood.sh [erasures] [chat requests]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
. infra/scripts/dev-server-wait.sh
erasures=${1:-50}
chats=${2:-60}
debug_bins countersign-dev-server countersign-cli
logs="$target/erasure-flood"
# The chat's own limits out of the way: what is measured is the other tenant's flood.
export COUNTERSIGN_PERSON_MESSAGES_PER_MINUTE=100000 COUNTERSIGN_TENANT_TURNS_PER_MINUTE=100000
rm -rf "$logs"; mkdir -p "$logs"
start_dev_server flood "$logs"
for _ in $(seq 100); do grep -q '^WIDGET_JWT=' "$logs/dev-server.log" && break; sleep 0.2; done
jwt=$(sed -n 's/^WIDGET_JWT=//p' "$logs/dev-server.log")
created=$("$target/debug/countersign" tenant create --name Flood)
flood_tenant=$(echo "$created" | sed -n 's/^tenant *//p')
flood_key=$(echo "$created" | sed -n 's/^admin key *//p')
"$root/.venv/moto/bin/python" - "http://127.0.0.1:$port" "$jwt" "$flood_tenant" "$flood_key" "$erasures" "$chats" <<'PY'
import json, sys, threading, time, urllib.request, urllib.error
base, jwt, tenant, key, erasures, chats = sys.argv[1:5] + [int(sys.argv[5]), int(sys.argv[6])]
def call(method, path, token, body=None):
    req = urllib.request.Request(base + path, method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    t = time.perf_counter()
    try:
        with urllib.request.urlopen(req) as r:
            status, out = r.status, json.load(r)
    except urllib.error.HTTPError as e:
        status, out = e.code, None
    return status, (time.perf_counter() - t) * 1000, out
case = call("POST", "/api/cases", jwt, {})[2]["caseId"]
def chat(n):
    times, statuses = [], {}
    for i in range(n):
        s, ms, _ = call("POST", f"/api/cases/{case}/messages", jwt, {"content": "my cars"}) if i % 2 == 0 \
            else call("GET", f"/api/cases/{case}/messages", jwt)
        times.append(ms); statuses[s] = statuses.get(s, 0) + 1
    times.sort()
    q = lambda f: times[min(len(times) - 1, int(f * len(times)))]
    return f"p50 {q(0.5):.0f} ms, p99 {q(0.99):.0f} ms, max {times[-1]:.0f} ms, statuses {statuses}"
print("another tenant's chat, quiet:      ", chat(chats))
got, lock, done = {}, threading.Lock(), threading.Event()
sent = [0]
def flood(worker):
    # At least `erasures` requests, and on until the chat's run ends.
    while True:
        with lock:
            if done.is_set() and sent[0] >= erasures: return
            i = sent[0]; sent[0] += 1
        s, ms, _ = call("POST", f"/api/admin/tenants/{tenant}/erasures", key, {"person": f"nobody-{i}"})
        with lock: got[s] = got.get(s, 0) + 1
threads = [threading.Thread(target=flood, args=(w,)) for w in range(4)]
for t in threads: t.start()
during = chat(chats)
done.set()
for t in threads: t.join()
print("another tenant's chat, under flood:", during)
print(f"the flood's {sent[0]} erasure requests (4 at a time), by status:", got)
PY
