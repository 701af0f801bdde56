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
infra/scripts/install.sh chromium widget
(cd widget && node build.mjs --check)
(cd widget && node --test test/state.test.mjs)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
port=$(free_port)
provider_port=$(free_port)
site_port=$(free_port)
target="${CARGO_TARGET_DIR:-$root/target}"
artifacts="$target/widget-artifacts"
mkdir -p "$artifacts"
log="$artifacts/dev-server.log"
COUNTERSIGN_DEV_ADDR="127.0.0.1:$port" DEMO_PROVIDER_ADDR="127.0.0.1:$provider_port" COUNTERSIGN_DEMO_SITE_ADDR="127.0.0.1:$site_port" \
  COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER=1 COUNTERSIGN_PERSON_MESSAGES_PER_MINUTE=1000 COUNTERSIGN_PERSON_CASES_PER_MINUTE=1000 RUST_LOG=warn "$target/debug/countersign-dev" >"$log" 2>&1 &
dev=$!
trap 'kill "$dev" 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
  grep -q "Countersign is running" "$log" && break
  kill -0 "$dev" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.5
done
grep -q "Countersign is running" "$log" || { echo "the dev server did not start" >&2; cat "$log" >&2; exit 1; }
(cd widget && DEMO_URL="http://127.0.0.1:$site_port/" ARTIFACTS="$artifacts" node --test --test-concurrency=1 test/browser.mjs)
test -s "$artifacts/proposal-and-result.png"
echo "widget: browser tests passed; screenshot $artifacts/proposal-and-result.png"
# The /admin panel (U-1 … U-3, H-1, H-4), after the widget's: it changes the demo
# tenant's settings.
admin_key=$(sed -n 's/^ADMIN_KEY=//p' "$log")
demo_token=$(sed -n 's/^DEMO_SERVICE_TOKEN=//p' "$log")
(cd widget && BASE_URL="http://127.0.0.1:$port" SITE_URL="http://127.0.0.1:$site_port/" ADMIN_KEY="$admin_key" \
  PROVIDER_URL="http://127.0.0.1:$provider_port" PROVIDER_TOKEN="$demo_token" node --test --test-concurrency=1 test/panel.mjs)
echo "panel: browser tests passed"
