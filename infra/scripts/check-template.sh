#!/usr/bin/env bash
# Lints template.yaml offline with cfn-lint and `sam validate --lint` (both pinned,
# installed into .venv/sam on first use). Part of the test command.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
CFN_LINT_VERSION=1.58.0
SAM_VERSION=1.170.0
venv="$root/.venv/sam"
if ! "$venv/bin/python" - <<PY 2>/dev/null
import importlib.metadata as m, sys
sys.exit(not (m.version("cfn-lint") == "$CFN_LINT_VERSION" and m.version("aws-sam-cli") == "$SAM_VERSION"))
PY
then
  echo "installing cfn-lint==$CFN_LINT_VERSION and aws-sam-cli==$SAM_VERSION into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "cfn-lint==$CFN_LINT_VERSION" "aws-sam-cli==$SAM_VERSION"
fi
cd "$root"
# Offline: no credentials or network needed; a region is.
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}" SAM_CLI_TELEMETRY=0
"$venv/bin/cfn-lint" template.yaml
"$venv/bin/sam" validate --lint -t template.yaml
echo "template: cfn-lint and sam validate --lint passed"
