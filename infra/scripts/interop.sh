#!/usr/bin/env bash
# The interop suite (issue 17): five official MCP clients against the local gateway.
# Installs what it needs when missing or stale: the pinned npm clients (TypeScript SDK v1
# and v2, the Inspector) into infra/interop/node_modules, and the Python SDK (mcp, pinned in
# infra/interop/requirements.txt) into .venv/interop. Needs the binaries built
# (`cargo build --workspace --bins`) and a local AWS emulator (run it through
# with-local-aws.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
"$root/infra/scripts/install.sh" interop chromium widget
cd "$root/infra/interop"
python3 "$root/infra/interop/interop_test.py"
