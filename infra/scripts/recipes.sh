#!/usr/bin/env bash
# The provider guide's proof verification recipes (docs/recipes: Python with PyJWT,
# TypeScript with jose) run over docs/proof-test-vectors.json: exactly the valid vector is
# accepted, and only once. Part of the test command; installs its pinned dependencies
# (.venv/recipes from PyPI, docs/recipes/node_modules from npm) on first use.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
venv="$root/.venv/recipes"
if ! "$venv/bin/python" -c "import jwt, cryptography" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r docs/recipes/requirements.txt
fi
"$venv/bin/python" docs/recipes/test_vectors.py
(cd docs/recipes && npm ci --no-audit --no-fund --silent && node test-vectors.mjs)
