#!/usr/bin/env bash
# The suites the test command runs on one local AWS emulator (run it through
# infra/scripts/with-local-aws.sh, after the build): every Rust test under nextest, the MCP
# interop suite, the official MCP conformance suite, API fuzzing, the widget and panel in headless Chromium, the Python
# provider recipe, verify-deployment, the audit trail's checkpoint across an erasure, and
# every command of the README's table (readme-commands.sh), then what the run says of
# IAM (iam-checks.sh: it reads the emulator's counts of every call before it).
# Stops at the first failing suite; always prints each suite's time (where CI's minutes go).
set -euo pipefail
cd "$(dirname "$0")/../.."

times=()
report() {
  local s
  printf '\n%-40s %6s\n' "suite" "secs"
  for s in "${times[@]}"; do printf '%-40s %6s\n' "${s%|*}" "${s##*|}"; done
}
trap report EXIT

suite() {
  local name=$1 t0
  shift
  t0=$(date +%s)
  "$@"
  times+=("$name|$(($(date +%s) - t0))")
}

suite "cargo nextest run --workspace" cargo nextest run --workspace --locked
suite "MCP interop (five official clients)" infra/scripts/interop.sh
suite "official MCP conformance suite (gateway, provider client)" infra/scripts/conformance.sh
suite "API fuzzing (schemathesis)" infra/scripts/fuzz-api.sh
suite "widget and panel in headless Chromium" infra/scripts/browser-tests.sh
suite "Python provider recipe" infra/scripts/python-provider.sh
suite "verify-deployment" infra/scripts/verify-deployment.sh
suite "audit checkpoint across an erasure" infra/scripts/audit-since.sh
suite "every command of the README's table" infra/scripts/readme-commands.sh
suite "IAM: over-privilege report, oracle, mutation test, negative table (I-1)" infra/scripts/iam-checks.sh
