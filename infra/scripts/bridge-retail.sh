#!/usr/bin/env bash
# B-5: τ²-bench's retail tasks replayed through the chat against countersign-bridge in
# front of the retail server (tests/acceptance/tests/acceptance/bridge_retail.rs).
#
#   infra/scripts/bridge-retail.sh        the ten tasks the test command runs
#   infra/scripts/bridge-retail.sh all    all 104 tasks with a write (docs/bridge.md)
set -euo pipefail
cd "$(dirname "$0")/../.."
infra/scripts/install.sh moto retail
export BRIDGE_RETAIL_TASKS=${1:-}
exec infra/scripts/with-local-aws.sh cargo test -q -p countersign-acceptance --test acceptance \
  bridge_retail -- --nocapture
