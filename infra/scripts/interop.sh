#!/usr/bin/env bash
# The interop suite (issue 17): five official MCP clients against the local gateway.
# Installs what it needs when missing or stale: the pinned npm clients (TypeScript SDK v1
# and v2, the Inspector) into infra/interop/node_modules, and the Python SDK (mcp, pinned in
# infra/interop/requirements.txt) into .venv/interop. Needs the binaries built
# (`cargo build --workspace --bins`) and a local AWS emulator (run it through
# with-local-aws.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root/infra/interop"
stamp=node_modules/.countersign-lock
if ! cmp -s package-lock.json "$stamp" 2>/dev/null; then
  # `npm install` honours package-lock.json (pinned); `npm ci` refuses this lock over an
  # optional platform-only dependency it lists differently.
  npm install --no-audit --no-fund --loglevel=error
  cp package-lock.json "$stamp"
fi
venv="$root/.venv/interop"
if ! cmp -s requirements.txt "$venv/.countersign-requirements" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r requirements.txt
  cp requirements.txt "$venv/.countersign-requirements"
fi
python3 "$root/infra/interop/interop_test.py"
