#!/usr/bin/env bash
# Property-based API fuzzing with schemathesis (pinned, installed into .venv/fuzz when
# missing) against the admin and widget APIs' OpenAPI documents. Needs the binaries built
# (`cargo build`) and a local AWS emulator (run it through with-local-aws.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv="$root/.venv/fuzz"
"$root/infra/scripts/install.sh" fuzz
cd "$root"
"$venv/bin/python" infra/fuzz/api_fuzz.py "$venv/bin/st"
