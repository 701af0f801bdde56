#!/usr/bin/env bash
# The one release build of a run (issue 26): `cargo lambda build --release --x86-64` of the
# three functions and the hello-world yardstick into target/lambda-build, zipped for
# Lambda, plus any extra binaries a load test names (`--bin NAME`, e.g. the CLI). The
# packaging check, the init measurement and the load scripts all use these binaries
# (target/lambda-build/x86_64-unknown-linux-gnu/release/…); a second call with nothing
# changed is a no-op.
#
#   infra/scripts/build-release.sh [--bin EXTRA …]
#
# x86_64 only: an aarch64 target is not a promised download on this machine kind.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
infra/scripts/install.sh rust-tools
export PATH="$root/.venv/tools/bin:$PATH"
# The test command lints the debug build through clippy-driver (decision 0054); the
# release build is not linted, and the wrapper in its fingerprints would rebuild every
# workspace crate when the packaging check calls this script again.
unset RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS
# cargo-lambda mishandles --target-dir; CARGO_TARGET_DIR works (FIELD-NOTES).
export CARGO_TARGET_DIR="$root/target/lambda-build"
args=(--bin hello-lambda --bin countersign-messages --bin countersign-admin --bin countersign-gateway --bin countersign-purge)
cargo lambda build --release --x86-64 --locked --output-format zip "${args[@]}" "$@"
