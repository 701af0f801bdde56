# Sourced by the scripts that start the dev server in the background: waits until its log
# (`$1`) says it is running, failing with the log if the process (`$2`) died or it never
# came up (two minutes).
wait_for_dev_server() {
  local log=$1 pid=$2
  for _ in $(seq 240); do
    grep -q "Countersign is running" "$log" && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; return 1; }
    sleep 0.5
  done
  echo "the dev server did not start" >&2
  cat "$log" >&2
  return 1
}

# Sets `target` and builds the debug binaries of packages `$@`, unless the test command
# built every binary already (`COUNTERSIGN_BINS_BUILT`: no second compilation); needs `root`.
debug_bins() {
  target=${CARGO_TARGET_DIR:-$root/target}
  [ -n "${COUNTERSIGN_BINS_BUILT:-}" ] && return 0
  local package args=()
  for package in "$@"; do args+=(-p "$package"); done
  cargo build --quiet "${args[@]}"
}

# free_port, for the scripts that source this one.
. "$(dirname "${BASH_SOURCE[0]}")/localnet.sh"

# Starts the debug dev server on the emulator with its own table, keys and secrets (named
# `$1-<random>`), logging to `$2/dev-server.log`, and waits until it runs. Sets `port`,
# `demo_port`, `site_port`, `suffix` and `dev` (its pid, killed on exit); needs `target`.
start_dev_server() {
  local name=$1 logs=$2
  port=$(free_port) demo_port=$(free_port) site_port=$(free_port)
  suffix=$(python3 -c 'import uuid; print(uuid.uuid4().hex[:8])')
  export COUNTERSIGN_TABLE="$name-$suffix" COUNTERSIGN_SIGNING_KEY="alias/$name-$suffix" \
    COUNTERSIGN_SECRET_PREFIX="$name-$suffix/" COUNTERSIGN_CHECKPOINT_KEY="alias/$name-ckpt-$suffix"
  COUNTERSIGN_DEV_ADDR="127.0.0.1:$port" DEMO_PROVIDER_ADDR="127.0.0.1:$demo_port" COUNTERSIGN_DEMO_SITE_ADDR="127.0.0.1:$site_port" \
    COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER=1 RUST_LOG=warn \
    "$target/debug/countersign-dev" >"$logs/dev-server.log" 2>&1 &
  dev=$!
  trap 'kill $dev 2>/dev/null || true' EXIT
  wait_for_dev_server "$logs/dev-server.log" "$dev"
}
