#!/usr/bin/env bash
# Lambda packaging check (CI runs it after the test command):
# 1. `cargo lambda build --release` (x86_64 here: no aarch64 target on this machine kind)
#    of the three functions, reporting each zip's size;
# 2. one release `bootstrap` (the messages function) run against a local Lambda Runtime
#    API emulator with a real API Gateway v2 event, asserting its response (401 with the
#    typed error: no token);
# 3. each function's init time next to a hello-world `lambda_http` function's (issue 17),
#    failing if any makes a network call at init.
# The binaries come from infra/scripts/build-release.sh (cargo-lambda, pinned, prebuilt).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
# The run's one release build (a no-op when the test command already made it).
infra/scripts/build-release.sh
CARGO_TARGET_DIR="$root/target/lambda-build"
bins=(countersign-messages countersign-admin countersign-gateway countersign-purge)
echo
echo "Lambda packages (x86_64):"
for b in "${bins[@]}"; do
  zip="$CARGO_TARGET_DIR/lambda/$b/bootstrap.zip"
  test -s "$zip" || { echo "missing $zip" >&2; exit 1; }
  printf '  %-22s %s bytes (%s)\n' "$b" "$(stat -c %s "$zip")" "$(du -h "$zip" | cut -f1)"
done

work=$(mktemp -d)
trap 'kill "${emu:-}" "${fn:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
python3 -c "import zipfile,sys; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" \
  "$CARGO_TARGET_DIR/lambda/countersign-messages/bootstrap.zip" "$work"
chmod +x "$work/bootstrap"
. "$root/infra/scripts/localnet.sh"
port=$(free_port)
python3 infra/lambda/runtime_emulator.py "$port" infra/lambda/apigw-v2-create-case.json "$work/result.json" &
emu=$!
sleep 0.5
AWS_LAMBDA_RUNTIME_API="127.0.0.1:$port" AWS_LAMBDA_FUNCTION_NAME=countersign-messages \
  AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256 AWS_LAMBDA_FUNCTION_VERSION='$LATEST' AWS_REGION=us-east-1 \
  AWS_ACCESS_KEY_ID=none AWS_SECRET_ACCESS_KEY=none COUNTERSIGN_TABLE=countersign \
  "$work/bootstrap" >"$work/fn.log" 2>&1 &
fn=$!
wait "$emu" || true
python3 - "$work/result.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["kind"] == "response", r
resp = json.loads(r["body"])
assert resp["statusCode"] == 401, resp
body = json.loads(resp["body"])
assert body["error"]["code"] == "UNAUTHORIZED", body
print("release bootstrap under the Runtime API emulator: POST /api/cases without a token -> 401 UNAUTHORIZED")
PY
# Issues 14 and 17: each function's init time next to the hello-world's (no network call
# at init; each model adapter configured in turn).
for b in "${bins[@]}" hello-lambda; do
  mkdir -p "$work/init/$b"
  python3 -c "import zipfile,sys; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" \
    "$CARGO_TARGET_DIR/lambda/$b/bootstrap.zip" "$work/init/$b"
  chmod +x "$work/init/$b/bootstrap"
done
python3 infra/lambda/init_time.py "$work/init" 7
