#!/usr/bin/env bash
# O-2: `countersign verify-deployment` against the local stack (the dev server on the
# emulator): every check passes; pointed at a server that is not Countersign it fails
# naming the routes; against another deployment's keys it fails naming the key check. Runs inside infra/scripts/with-local-aws.sh, on the debug
# binaries (part of the test command).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
. infra/scripts/dev-server-wait.sh
target=${CARGO_TARGET_DIR:-$root/target}
[ -n "${COUNTERSIGN_BINS_BUILT:-}" ] || cargo build --quiet -p countersign-dev-server -p countersign-cli
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
echo "verify-deployment: passes on the local stack; fails on a wrong URL and on keys KMS does not vouch for"
