#!/usr/bin/env bash
# Runs a command against a local AWS emulator (moto) started here and stopped on exit.
#
#   infra/scripts/with-local-aws.sh cargo test --workspace
#
# Installs moto[server] (pinned) into .venv/moto when missing, starts it on 127.0.0.1 on
# a free port through infra/local-aws/moto_serialized.py (one request at a time, as
# DynamoDB serialises conditional writes; see that file), exports AWS_ENDPOINT_URL, dummy
# credentials (the operator's, I-1) and a region, runs the command, then stops the server it started.
#
# Known moto limit: KMS `Sign` with `MessageType: DIGEST` hashes the digest again (wrong
# signatures). Countersign signs proofs with `MessageType: RAW`, which is correct on real
# KMS too, so nothing here depends on that bug.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv="$root/.venv/moto"
"$root/infra/scripts/install.sh" moto

. "$root/infra/scripts/localnet.sh"

mkdir -p "$root/target/moto"
pid=""
for attempt in 1 2 3; do
  port=$(free_port)
  # One log per emulator: stacks started side by side never write into one file.
  log="$root/target/moto/moto-server-$port.log"
  COUNTERSIGN_IAM_DENIALS="$root/target/moto/iam-denials-$port.jsonl" \
    "$venv/bin/python" "$root/infra/local-aws/moto_serialized.py" 127.0.0.1 "$port" >"$log" 2>&1 &
  pid=$!
  if python3 - "$port" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
# The evaluator expands both SAM templates before the port opens (a few seconds).
for _ in range(600):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)
PY
  then break; fi
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=""
  echo "moto_server did not start on port $port (attempt $attempt)" >&2
done
if [ -z "$pid" ]; then
  cat "$log" >&2
  exit 1
fi
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true' EXIT

export AWS_ENDPOINT_URL="http://127.0.0.1:$port"
# I-1: the emulator enforces each principal's role from template.yaml; what runs here
# calls as the operator (the CLI, bootstrap, fixtures), and each function as its own
# role (countersign_aws::sdk::as_principal). An unknown key id is refused.
export AWS_ACCESS_KEY_ID=CSLOCALOPERATOR AWS_SECRET_ACCESS_KEY=countersign-local
unset AWS_SESSION_TOKEN
export AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
export AWS_EC2_METADATA_DISABLED=true
unset AWS_PROFILE
export COUNTERSIGN_LOCAL_AWS=1
echo "local AWS (moto) at $AWS_ENDPOINT_URL" >&2
"$@"
