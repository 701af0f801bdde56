#!/usr/bin/env bash
# Interop tests with official MCP clients. Installs the pinned npm packages into
# infra/interop/node_modules when missing; needs the binaries built (`cargo build`) and a
# local AWS emulator (run it through with-local-aws.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root/infra/interop"
if [ ! -x node_modules/.bin/mcp-inspector ]; then
  # `npm install` honours package-lock.json (pinned); `npm ci` refuses this lock over an
  # optional platform-only dependency it lists differently.
  npm install --no-audit --no-fund --loglevel=error
fi
python3 "$root/infra/interop/inspector_test.py"
