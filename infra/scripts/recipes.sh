#!/usr/bin/env bash
# The provider guide's proof verification recipes (docs/recipes: Python with PyJWT,
# TypeScript with jose) run over docs/proof-test-vectors.json: exactly the valid vector is
# accepted, and only once. Part of the test command; installs its pinned dependencies
# (.venv/recipes from PyPI, docs/recipes/node_modules from npm) on first use.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
venv="$root/.venv/recipes"
infra/scripts/install.sh recipes
"$venv/bin/python" docs/recipes/test_vectors.py
(cd docs/recipes && node test-vectors.mjs)
# F-5: the step-up in a proof, checked on the tenant's side, over docs/stepup-test-vectors.json.
"$venv/bin/python" docs/recipes/test_stepup.py
(cd docs/recipes && node test-stepup.mjs)
# The summary rules (A-20) as a pre-check, over docs/summary-test-vectors.json.
"$venv/bin/python" docs/recipes/test_summaries.py
(cd docs/recipes && node test-summaries.mjs)
