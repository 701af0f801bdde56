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
