#!/usr/bin/env bash
# Every command of the README's "Other useful commands" table, run once as a new user
# would (issue 48: a documented command that rots is found here, not by the next user).
# Part of the test command, inside infra/scripts/with-local-aws.sh, on the binaries the
# test command already built (target/debug): nothing is compiled here.
#
# Each row of the table must be named below, either run here or said where else the test
# command runs it (or why only its compilation is checked): a row added to the README
# without either fails this script.
set -euo pipefail
# A refusal prints its one line, not a backtrace (the logs are read by people).
export RUST_BACKTRACE=0
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
target=${CARGO_TARGET_DIR:-$root/target}
bin="$target/debug"
logs="$target/readme-commands"
rm -rf "$logs" && mkdir -p "$logs"
[[ "${AWS_ENDPOINT_URL:-}" == http://127.0.0.1:* ]] || { echo "run inside infra/scripts/with-local-aws.sh" >&2; exit 1; }

# --- 1. every row is accounted for ---------------------------------------------------
# `pattern|how`: a row whose command cell contains `pattern` is held as `how` says.
covered=(
  "with-local-aws.sh <command>|this script runs inside it"
  "--bench store_calls|benchmark: type-checked by clippy --all-targets; a measurement, not run"
  "countersign-cli -- bootstrap|run below"
  "tenant create|run below (create, rotate-admin-key, list)"
  "keys list|run below (list, announce --create, activate refused before the cache time, cache-time, retire refused for the active key)"
  "audit verify|run below"
  "audit export|run below, and the export checked with docs/recipes/verify_audit_export.py"
  "verify-deployment|infra/scripts/verify-deployment.sh (the test command's verify-deployment suite)"
  "infra/cost/cost.py|run below (two conversations)"
  "countersign-cli -- purge|run below"
  "countersign-cli -- erase|run below, against the admin API binary"
  "gateway-token|run below"
  "countersign-gateway-fn|run below: starts and answers"
  "countersign-admin-fn|run below: starts and answers"
  "countersign-messages-fn|run below: starts and answers"
  "countersign-demo-provider|run below: starts and answers"
  "cargo test -p countersign-acceptance|the test command's cargo nextest run --workspace"
  "tools-catalog|run below: regenerates nothing (the checked-in snapshot and docs/tools.md are current)"
  "--bench dispatch|benchmark: type-checked by clippy --all-targets; a measurement, not run"
  "--bench message|benchmark: type-checked by clippy --all-targets; a measurement, not run"
  "fn-lengths.py|the test command's 'no function over 80 lines' step"
  "--bench round|benchmark: type-checked by clippy --all-targets; a measurement, not run"
  "npm ci && npm run build|infra/scripts/browser-tests.sh (node build.mjs --check: dist is what src builds)"
  "npm test|infra/scripts/browser-tests.sh (the widget's unit and browser tests)"
  "load-gateway.sh|run below on the debug build (1 s, one round)"
  "profile-gateway.sh|not run: needs perf and a profiling build (a measurement tool)"
  "load-messages.sh|run below on the debug build (2 s)"
  "countersign-bridge -- check|run below"
  "bridge-retail.sh|the test command's nextest runs the same test (b5_…) on the same ten tasks"
  "--bench overhead|benchmark: type-checked by clippy --all-targets; a measurement, not run"
  "agentdojo.sh|the test command's nextest runs the same test (e1_…) on the same 23 pairs"
  "conformance.sh|the test command's conformance suite"
)
python3 - "${covered[@]}" <<'PY'
import re, sys
rules = [c.split("|", 1) for c in sys.argv[1:]]
readme = open("README.md", encoding="utf-8").read()
table = readme.split("Other useful commands:", 1)[1].split("\n## ", 1)[0]
rows = [l for l in table.splitlines() if l.startswith("| ") and not l.startswith("| what")]
missing = []
for row in rows:
    cell = row.rsplit("|", 2)[-2]
    if not any(p in cell for p, _ in rules):
        missing.append(cell.strip())
if missing:
    sys.exit("README commands this script neither runs nor accounts for:\n  " + "\n  ".join(missing))
print(f"readme-commands: {len(rows)} rows of the README's table, each accounted for")
PY

# --- 2. the CLI on a fresh table, keys and secrets ------------------------------------
suffix=$(python3 -c 'import uuid; print(uuid.uuid4().hex[:8])')
export COUNTERSIGN_TABLE="readme-$suffix" COUNTERSIGN_SIGNING_KEY="alias/readme-$suffix" \
  COUNTERSIGN_SECRET_PREFIX="readme-$suffix/" COUNTERSIGN_CHECKPOINT_KEY="alias/readme-ckpt-$suffix" \
  COUNTERSIGN_SUBJECT_KEY="alias/readme-subj-$suffix" RUST_LOG=warn
cli="$bin/countersign"
run() { # run NAME COMMAND…: runs it, its output in $logs/NAME.txt; fails naming it
  local name=$1
  shift
  "$@" >"$logs/$name.txt" 2>&1 || { echo "README command failed: $name: $*" >&2; cat "$logs/$name.txt" >&2; exit 1; }
}
refused() { # refused NAME TEXT COMMAND…: the command must fail, saying TEXT
  local name=$1 text=$2
  shift 2
  if "$@" >"$logs/$name.txt" 2>&1; then echo "README command did not refuse: $name: $*" >&2; exit 1; fi
  grep -qi -- "$text" "$logs/$name.txt" || { echo "$name: refused without saying '$text'" >&2; cat "$logs/$name.txt" >&2; exit 1; }
}
run bootstrap "$cli" bootstrap
run bootstrap-again "$cli" bootstrap
run tenant-create "$cli" tenant create --name "Readme Shop" --language pt
tenant=$(grep -o 'ten_[0-9A-Z]\{26\}' "$logs/tenant-create.txt" | head -1)
grep -q 'tsk_' "$logs/tenant-create.txt"
run tenant-rotate "$cli" tenant rotate-admin-key --tenant "$tenant"
admin_key=$(grep -o 'tsk_[A-Za-z0-9_-]*' "$logs/tenant-rotate.txt" | head -1)
run tenant-list "$cli" tenant list
grep -q "$tenant" "$logs/tenant-list.txt"
run keys-list "$cli" keys list
run keys-announce "$cli" keys announce --create
next=$(sed -n 's/^announced //p' "$logs/keys-announce.txt")
[ -n "$next" ] || { echo "keys announce printed no kid" >&2; cat "$logs/keys-announce.txt" >&2; exit 1; }
refused keys-activate-early "too early" "$cli" keys activate --kid "$next"
run keys-cache-time "$cli" keys cache-time --seconds 300
active=$(awk '$1 == "active" {print $2}' "$logs/keys-list.txt")
[ -n "$active" ] || { echo "keys list showed no active key" >&2; cat "$logs/keys-list.txt" >&2; exit 1; }
refused keys-retire-active "activate another key first" "$cli" keys retire --kid "$active"
run audit-verify "$cli" audit verify --tenant "$tenant"
run purge "$cli" purge --tenant "$tenant"
run gateway-token "$cli" gateway-token --tenant "$tenant" --user u_readme --case case_01JDZ6Y5X1QW9T3V7N2K4M8P0R
grep -q '^ey' "$logs/gateway-token.txt"

# --- 3. the local servers start and answer --------------------------------------------
. "$root/infra/scripts/localnet.sh"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
answers() { # answers NAME URL EXPECTED-STATUS…: waits up to 30 s for one of the statuses
  local name=$1 url=$2 status
  shift 2
  for _ in $(seq 150); do
    status=$(curl -s -o /dev/null -w '%{http_code}' "$url" || true)
    for want in "$@"; do [ "$status" = "$want" ] && return 0; done
    sleep 0.2
  done
  echo "$name did not answer $url with $* (last: $status)" >&2
  cat "$logs/$name.txt" >&2
  exit 1
}
gw=$(free_port) admin=$(free_port) messages=$(free_port) demo=$(free_port)
COUNTERSIGN_GATEWAY_ADDR="127.0.0.1:$gw" "$bin/countersign-gateway" >"$logs/gateway.txt" 2>&1 &
pids+=($!)
COUNTERSIGN_ADMIN_ADDR="127.0.0.1:$admin" "$bin/countersign-admin" >"$logs/admin.txt" 2>&1 &
pids+=($!)
COUNTERSIGN_MESSAGES_ADDR="127.0.0.1:$messages" "$bin/countersign-messages" >"$logs/messages.txt" 2>&1 &
pids+=($!)
DEMO_PROVIDER_TOKEN=svc_readme DEMO_PROVIDER_ADDR="127.0.0.1:$demo" "$bin/demo-provider" >"$logs/demo-provider.txt" 2>&1 &
pids+=($!)
answers gateway "http://127.0.0.1:$gw/mcp" 401 405
answers admin "http://127.0.0.1:$admin/admin" 200 303
answers messages "http://127.0.0.1:$messages/.well-known/jwks.json" 200
answers demo-provider "http://127.0.0.1:$demo/mcp" 401 405
# Erasing a person through the admin API binary: the request is queued (N-3). No worker
# runs beside these binaries (the purge function's job); the job carried out to its
# signed receipt is held by infra/scripts/audit-since.sh on the dev server.
COUNTERSIGN_ADMIN_KEY="$admin_key" run erase "$cli" erase --api "http://127.0.0.1:$admin" --tenant "$tenant" --person u_readme --wait 0
grep -q '"status": "queued"' "$logs/erase.txt"

# The export verifies offline against a checkpoint the messages function signed (L-3).
curl -sf -X POST "http://127.0.0.1:$messages/api/admin/tenants/$tenant/audit/checkpoints" \
  -H "Authorization: Bearer $admin_key" >"$logs/checkpoint.json"
curl -sf "http://127.0.0.1:$messages/.well-known/countersign-audit-keys.json" >"$logs/audit-keys.json"
"$cli" audit export --tenant "$tenant" >"$logs/trail.json"
"$root/.venv/moto/bin/python" docs/recipes/verify_audit_export.py "$logs/trail.json" "$logs/checkpoint.json" "$logs/audit-keys.json" \
  >"$logs/audit-export-verified.txt" 2>&1 ||
  { echo "the exported trail did not verify offline" >&2; cat "$logs/audit-export-verified.txt" >&2; exit 1; }

# --- 4. the tools that write files write nothing new ----------------------------------
run tools-catalog "$bin/tools-catalog"
git diff --exit-code --stat -- docs/tools.md shared/tools/ >"$logs/tools-catalog-diff.txt" ||
  { echo "tools-catalog changed checked-in files: regenerate and commit them" >&2; cat "$logs/tools-catalog-diff.txt" >&2; exit 1; }
run bridge-check "$bin/countersign-bridge" check bridge/examples/retail.toml

# --- 5. the measurement scripts run (on the debug build: their numbers mean nothing) --
run cost "$root/.venv/moto/bin/python" infra/cost/cost.py --conversations 2 --bin "$bin"
LOAD_BIN_DIR="$bin" run load-messages infra/scripts/load-messages.sh 2 4 3 1
grep -q 'all completed' "$logs/load-messages.txt"
LOAD_BIN_DIR="$bin" run load-gateway infra/scripts/load-gateway.sh 1 4 1
echo "readme-commands: every command of the README's table ran or is held elsewhere (logs: $logs)"
