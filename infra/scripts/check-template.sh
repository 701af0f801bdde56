#!/usr/bin/env bash
# Lints template.yaml offline with cfn-lint and `sam validate --lint` (both pinned in
# infra/scripts/install.sh, installed into .venv/sam on first use). Part of the test command.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv="$root/.venv/sam"
"$root/infra/scripts/install.sh" sam
cd "$root"
# Offline: no credentials or network needed; a region is.
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}" SAM_CLI_TELEMETRY=0
"$venv/bin/cfn-lint" template.yaml bridge/template.yaml
"$venv/bin/sam" validate --lint -t template.yaml
# B-4: the bridge's Lambda form.
"$venv/bin/sam" validate --lint -t bridge/template.yaml
echo "template: cfn-lint and sam validate --lint passed"
