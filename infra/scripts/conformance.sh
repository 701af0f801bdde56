#!/usr/bin/env bash
# E-3: the official MCP conformance suite (@modelcontextprotocol/conformance 0.1.16 on its
# own Node 22, pinned in infra/conformance/package-lock.json): the server scenarios
# against the local stack's gateway, the client scenarios against the platform's provider
# client; infra/conformance/scenarios.toml names every scenario, run or excluded with its
# reason. Needs the build (`cargo build --workspace --all-targets`) and a local AWS
# emulator (run it through with-local-aws.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
"$root/infra/scripts/install.sh" conformance
exec python3 "$root/infra/conformance/conformance.py"
