#!/usr/bin/env bash
# I-1, the last suite on the test command's emulator (run it through with-local-aws.sh,
# after every other suite): what the run itself says of the IAM evaluation.
# 1. the over-privilege report over the whole run's calls (iam/report.py, iam/unused.toml);
# 2. the differential oracle: the run's own requests, each decided for every function's
#    role, decided again by an independent simulator (iam/oracle_table.py, oracle/oracle.mjs);
# 3. the evaluator's rules and the permanent mutation test (iam/test_evaluator.py);
# 4. the negative table per function (iam/test_roles.py). Last: its calls would count as
#    use in the report.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
"$root/infra/scripts/install.sh" moto iam-oracle
py="$root/.venv/moto/bin/python"
cd "$root/infra/local-aws"
mkdir -p "$root/target/iam"
"$py" iam/report.py "$AWS_ENDPOINT_URL" --write "$root/target/iam/usage.json"
"$py" iam/oracle_table.py "$AWS_ENDPOINT_URL" "$root/target/iam/oracle-table.json"
node oracle/oracle.mjs "$root/target/iam/oracle-table.json"
"$py" -m unittest -v iam.test_evaluator 2>&1 | grep -v "unpublished metrics"
"$py" -m unittest iam.test_roles
