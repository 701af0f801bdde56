#!/usr/bin/env bash
# E-1, E-2: AgentDojo's suites through Countersign with a compromised model
# (tests/acceptance/tests/acceptance/agentdojo.rs, infra/agentdojo/).
#
#   infra/scripts/agentdojo.sh        the 23 banking pairs the test command runs
#   infra/scripts/agentdojo.sh all    every exercised pair of the four suites (docs/evaluation.md)
#
# The run's plan, log and scores are left in target/agentdojo/<run>/; the report's table:
#   .venv/agentdojo/bin/python infra/agentdojo/bench.py table --scores target/agentdojo/<run>/scores.json
set -euo pipefail
cd "$(dirname "$0")/../.."
infra/scripts/install.sh moto agentdojo
export AGENTDOJO_PAIRS=${1:-}
exec infra/scripts/with-local-aws.sh cargo test -q -p countersign-acceptance --test acceptance \
  agentdojo -- --nocapture
