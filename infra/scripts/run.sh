#!/usr/bin/env bash
# README "Run it": the whole product on this machine, on embedded defaults.
#
#   infra/scripts/run.sh
#
# Builds the dev server, starts the local AWS emulator (moto, installed into .venv/moto on
# first use), then runs `countersign-dev` (infra/dev-server): bootstrap, a demo tenant,
# the TrackShare demo provider, and the messages, admin and gateway routers on
# http://127.0.0.1:8700, and the demo tenant's site with the chat widget on
# http://127.0.0.1:8701. It prints the URLs, a widget JWT and the demo admin key.
# Ctrl-C stops everything it started. Nothing persists between runs.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
cargo build --locked -q -p countersign-dev-server --bin countersign-dev
# The local stack's one explicit allowance (D-5): tenants may point at http://127.0.0.1.
# Never set it in a deployment; template.yaml does not.
export COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER=1
export RUST_LOG="${RUST_LOG:-warn}"
target="${CARGO_TARGET_DIR:-$root/target}"
infra/scripts/with-local-aws.sh "$target/debug/countersign-dev"
