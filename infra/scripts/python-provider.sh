#!/usr/bin/env bash
# The Python provider recipe (docs/recipes/python-provider: the official MCP SDK and
# PyJWT) against the local stack, as a provider engineer would meet it: connected with
# actions off, certified with consent (every check passes), enabled, then a person's
# countersigned write in the chat. Runs inside infra/scripts/with-local-aws.sh, on the
# debug binaries (part of the test command).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
. infra/scripts/dev-server-wait.sh
infra/scripts/install.sh recipes
debug_bins countersign-dev-server
port=$(free_port) demo_port=$(free_port) site_port=$(free_port) py_port=$(free_port)
issuer="https://support.example.com/mcp-actions"
token="svc_py_$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
logs="$target/python-provider"
mkdir -p "$logs"
suffix=$(python3 -c 'import uuid; print(uuid.uuid4().hex[:8])')
COUNTERSIGN_TABLE="pyprov-$suffix" COUNTERSIGN_SIGNING_KEY="alias/pyprov-$suffix" COUNTERSIGN_SECRET_PREFIX="pyprov-$suffix/" \
  COUNTERSIGN_CHECKPOINT_KEY="alias/pyprov-ckpt-$suffix" \
  COUNTERSIGN_DEV_ADDR="127.0.0.1:$port" DEMO_PROVIDER_ADDR="127.0.0.1:$demo_port" COUNTERSIGN_DEMO_SITE_ADDR="127.0.0.1:$site_port" \
  COUNTERSIGN_ISSUER="$issuer" COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER=1 RUST_LOG=warn \
  "$target/debug/countersign-dev" >"$logs/dev-server.log" 2>&1 &
dev=$!
PLATFORM_JWKS_URL="http://127.0.0.1:$port/.well-known/jwks.json" PLATFORM_ISSUER="$issuer" \
  PROVIDER_AUDIENCE="http://127.0.0.1:$py_port/mcp" PROVIDER_SERVICE_TOKEN="$token" \
  .venv/recipes/bin/python docs/recipes/python-provider/provider.py --port "$py_port" >"$logs/provider.log" 2>&1 &
py=$!
trap 'kill $dev $py 2>/dev/null || true' EXIT
wait_for_dev_server "$logs/dev-server.log" "$dev"
kill -0 "$py" 2>/dev/null || { cat "$logs/provider.log" >&2; exit 1; }
value() { sed -n "s/^$1=//p" "$logs/dev-server.log"; }
.venv/recipes/bin/python docs/recipes/python-provider/try_it.py "http://127.0.0.1:$port" "$(value TENANT)" \
  "$(value ADMIN_KEY)" "$(value WIDGET_JWT)" "http://127.0.0.1:$py_port/mcp" "$token" \
  || { echo "--- provider log" >&2; cat "$logs/provider.log" >&2; exit 1; }
