#!/usr/bin/env bash
# Property-based API fuzzing with schemathesis (pinned, installed into .venv/fuzz when
# missing) against the admin and widget APIs' OpenAPI documents. Needs the binaries built
# (`cargo build`) and a local AWS emulator (run it through with-local-aws.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
SCHEMATHESIS_VERSION=4.32.5
venv="$root/.venv/fuzz"
if ! "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('schemathesis') != '$SCHEMATHESIS_VERSION')" 2>/dev/null; then
  echo "installing schemathesis==$SCHEMATHESIS_VERSION into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi
cd "$root"
"$venv/bin/python" infra/fuzz/api_fuzz.py "$venv/bin/st"
