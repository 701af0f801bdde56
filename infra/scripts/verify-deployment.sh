#!/usr/bin/env bash
# O-2: `countersign verify-deployment` against the local stack (the dev server on the
# emulator): every check passes; pointed at a server that is not Countersign it fails
# naming the routes; against another deployment's keys it fails naming the key check; when
# the tenant's system answers garbage it fails naming the person's message. Runs inside infra/scripts/with-local-aws.sh, on the debug
# binaries (part of the test command).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
. infra/scripts/dev-server-wait.sh
debug_bins countersign-dev-server countersign-cli
logs="$target/verify-deployment"
mkdir -p "$logs"
start_dev_server verify "$logs"
jwt=$(sed -n 's/^WIDGET_JWT=//p' "$logs/dev-server.log")
cli="$target/debug/countersign"
# The local run streams on the same server (the deployed one: the StreamUrl output).
"$cli" verify-deployment --url "http://127.0.0.1:$port" --stream-url "http://127.0.0.1:$port" --widget-jwt "$jwt" | tee "$logs/pass.txt"
grep -q "^ok    jwks equals KMS" "$logs/pass.txt"
grep -q "^ok    the streamed answer" "$logs/pass.txt"
grep -q "^ok    the person's MCP token" "$logs/pass.txt"
# Not Countersign: the routes fail, and the command says so.
if "$cli" verify-deployment --url "http://127.0.0.1:$site_port" --widget-jwt "$jwt" >"$logs/wrong-url.txt"; then
  echo "verify-deployment passed against the demo site" >&2; exit 1
fi
grep -q "^FAIL  route GET /.well-known/jwks.json" "$logs/wrong-url.txt"
# The keys KMS vouches for (another deployment's table and key, as an operator pointing
# at the wrong stack would see) differ from the served JWKS: the key check fails, naming
# both sets.
other="verify-other-$suffix"
COUNTERSIGN_TABLE="$other" COUNTERSIGN_SIGNING_KEY="alias/$other" "$cli" bootstrap >/dev/null
if COUNTERSIGN_TABLE="$other" COUNTERSIGN_SIGNING_KEY="alias/$other" \
  "$cli" verify-deployment --url "http://127.0.0.1:$port" --widget-jwt "$jwt" >"$logs/other-keys.txt"; then
  echo "verify-deployment passed with keys KMS does not vouch for" >&2; cat "$logs/other-keys.txt" >&2; exit 1
fi
grep -q "^FAIL  jwks equals KMS" "$logs/other-keys.txt"
# The tenant's system answers garbage: the person's message is answered with a failed
# consultation, and the command says the conversation check failed.
service_token=$(sed -n 's/^DEMO_SERVICE_TOKEN=//p' "$logs/dev-server.log")
control() {
  curl -sf -X POST "http://127.0.0.1:$demo_port/_demo/control" -H "Authorization: Bearer $service_token" \
    -H "Content-Type: application/json" -d "$1" >/dev/null
}
control '{"fault": "garbage", "on": true}'
if "$cli" verify-deployment --url "http://127.0.0.1:$port" --widget-jwt "$jwt" >"$logs/provider-down.txt"; then
  echo "verify-deployment passed while the tenant's system answered garbage" >&2; cat "$logs/provider-down.txt" >&2; exit 1
fi
control '{"fault": "reset"}'
grep -q "^FAIL  a synthetic person's message" "$logs/provider-down.txt"
echo "verify-deployment: passes on the local stack; fails on a wrong URL, on keys KMS does not vouch for, and on a tenant system that does not answer"
