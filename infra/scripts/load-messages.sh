#!/usr/bin/env bash
# Load run (not a test) of the messages API on the local stack (the dev server, moto, the
# demo provider), driving many people and conversations at once — what a tenant's traffic
# looks like — not one conversation, which would measure only the emulator serialising one
# conversation's writes:
#  1. consultation turns: wrk spreads `POST /api/cases/{id}/messages` "my cars" over
#     PEOPLE × CONVERSATIONS conversations (each request the next conversation, with its
#     person's token): load, history, configuration, provider tools/list (cached) and
#     tools/call, scripted model, stores. Turns a second and latency.
#  2. the countersign path: each of the three demo people who may move their sessions
#     prepares and confirms in their own conversation, all three at once, CONFIRMS in all: the confirm
#     request's latency (1 GetItem, 1 Query, 1 TransactWriteItems, 1 Sign, the provider,
#     1 TransactWriteItems) and the confirmations a second.
# Every limit a tenant or a person has (turns, requests, new cases, messages a minute) is
# lifted for the run, so what is measured is the platform, not its rate limits.
#
#   infra/scripts/with-local-aws.sh infra/scripts/load-messages.sh [seconds] [connections] [confirms] [conversations-per-person]
#
# It uses the run's release build (infra/scripts/build-release.sh, the dev server added).
# LOAD_BIN_DIR=<a folder of built binaries> uses its countersign-dev instead and builds
# nothing: the test command's smoke run of the README's commands does so with the debug
# build (its numbers then mean nothing; that it runs and answers is what is checked).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
secs=${1:-15}
conns=${2:-8}
confirms=${3:-40}
per_person=${4:-4}
if ! command -v wrk >/dev/null; then
  if [ "$(id -u)" = 0 ]; then apt-get install -y -q wrk >/dev/null; else sudo apt-get install -y -q wrk >/dev/null; fi
fi
if [ -n "${LOAD_BIN_DIR:-}" ]; then
  dev_bin=$LOAD_BIN_DIR/countersign-dev
else
  # The run's one release build (issue 26), with the dev server added.
  infra/scripts/build-release.sh --bin countersign-dev >&2
  dev_bin=target/lambda-build/x86_64-unknown-linux-gnu/release/countersign-dev
fi
. "$root/infra/scripts/localnet.sh"
suffix=$(python3 -c 'import uuid; print(uuid.uuid4().hex[:8])')
port=$(free_port) demo=$(free_port) site=$(free_port)
# The demo site's people (each owns a session and two cars, and may move it).
people=(u_alice u_bruno u_mallory)
export COUNTERSIGN_TABLE="load-$suffix" COUNTERSIGN_SIGNING_KEY="alias/load-$suffix" \
  COUNTERSIGN_SECRET_PREFIX="load-$suffix/" COUNTERSIGN_CHECKPOINT_KEY="alias/load-ckpt-$suffix" \
  COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER=1 RUST_LOG=error \
  COUNTERSIGN_DEV_ADDR="127.0.0.1:$port" DEMO_PROVIDER_ADDR="127.0.0.1:$demo" \
  COUNTERSIGN_DEMO_SITE_ADDR="127.0.0.1:$site" \
  COUNTERSIGN_TENANT_TURNS_PER_MINUTE=1000000 COUNTERSIGN_TENANT_REQUESTS_PER_MINUTE=1000000 \
  COUNTERSIGN_PERSON_MESSAGES_PER_MINUTE=1000000 COUNTERSIGN_PERSON_CASES_PER_MINUTE=1000000
work=$(mktemp -d)
"$dev_bin" >"$work/dev.log" 2>&1 &
dev=$!
trap 'kill $dev 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 240); do
  grep -q '^WIDGET_JWT=' "$work/dev.log" && break
  kill -0 $dev 2>/dev/null || { cat "$work/dev.log" >&2; exit 1; }
  sleep 0.5
done
grep -q '^WIDGET_JWT=' "$work/dev.log" || { echo "the dev server did not start" >&2; cat "$work/dev.log" >&2; exit 1; }
base="http://127.0.0.1:$port"

# Every person's token (the demo site mints them as a tenant's site would) and their
# conversations, one line each: "<token> <case id>".
for who in "${people[@]}"; do
  jwt=$(curl -sf "http://127.0.0.1:$site/token?user=$who")
  echo "$who $jwt" >>"$work/people"
  for _ in $(seq "$per_person"); do
    case=$(curl -sf -X POST "$base/api/cases" -H "Authorization: Bearer $jwt" |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["caseId"])')
    echo "$jwt $case" >>"$work/conversations"
  done
done
n=$(wc -l <"$work/conversations")
{
  echo 'local conversations = {'
  while read -r jwt case; do echo "  {\"$jwt\", \"/api/cases/$case/messages\"},"; done <"$work/conversations"
  echo '}'
  cat <<'LUA'
local i = 0
local statuses = {}
request = function()
  i = i + 1
  local c = conversations[(i % #conversations) + 1]
  return wrk.format("POST", c[2], {
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer " .. c[1],
  }, '{"content":"my cars"}')
end
response = function(status)
  statuses[status] = (statuses[status] or 0) + 1
end
done = function()
  -- Every answer is a 200: a refused turn would measure a limit, not the platform.
end
LUA
} >"$work/turns.lua"
threads=$((conns < 2 ? 1 : 2))
echo "== consultation turns: ${#people[@]} people × $per_person conversations ($n), wrk -t$threads -c$conns -d${secs}s"
wrk -t"$threads" -c"$conns" -d"${secs}s" --latency -s "$work/turns.lua" "$base" | tee "$work/wrk.txt"
if grep -q 'Non-2xx or 3xx responses' "$work/wrk.txt"; then
  echo "some turns were refused (see above): the run measured a limit, not the platform" >&2
  exit 1
fi
echo
echo "== countersign path: ${#people[@]} people at once, $confirms confirmations in all (propose, then time the confirm)"
python3 - "$base" "$confirms" "$work/people" <<'PY'
import json, sys, threading, time, urllib.request
base, n, people_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
people = [line.split() for line in open(people_file)]
# Each person's session and two cars of theirs (the demo provider's data).
owned = {"u_alice": ("ses_a1", "car_a1", "car_a2"), "u_bruno": ("ses_b1", "car_b1", "car_b2"),
         "u_mallory": ("ses_m1", "car_m1", "car_m2")}
def post(jwt, path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Authorization": "Bearer " + jwt, "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.load(r)
times, failures, lock = [], [], threading.Lock()
def person(who, jwt, count):
    session, one, two = owned[who]
    case = post(jwt, "/api/cases", {})["caseId"]
    for i in range(count):
        car = two if i % 2 == 0 else one
        p = post(jwt, f"/api/cases/{case}/messages", {"content": f"move {session} to {car}"})["messages"][-1]
        if p["kind"] != "proposal":
            with lock: failures.append(f"{who}: no proposal: {p}")
            return
        t = time.perf_counter()
        m = post(jwt, f"/api/cases/{case}/messages", {"content": "confirm", "replyToMessageId": p["id"]})["messages"]
        elapsed = (time.perf_counter() - t) * 1000
        with lock:
            times.append(elapsed)
            if not m[-1]["content"].startswith("Action completed."):
                failures.append(f"{who}: {m[-1]['content']}")
start = time.perf_counter()
share = [n // len(people) + (1 if k < n % len(people) else 0) for k in range(len(people))]
threads = [threading.Thread(target=person, args=(who, jwt, c)) for (who, jwt), c in zip(people, share)]
for t in threads: t.start()
for t in threads: t.join()
wall = time.perf_counter() - start
if failures or not times:
    sys.exit("countersign path failed: " + "; ".join(failures[:5]))
times.sort()
q = lambda f: times[min(len(times) - 1, int(f * len(times)))]
print(f"confirm requests: {len(times)} by {len(people)} people at once; p50 {q(0.5):.1f} ms, "
      f"p90 {q(0.9):.1f} ms, max {times[-1]:.1f} ms; {len(times) / wall:.1f} proposals confirmed a second "
      f"(each preceded by its preparation turn); all completed")
PY
