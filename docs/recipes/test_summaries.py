"""Runs summary_check.py over docs/summary-test-vectors.json: it must accept exactly the
texts the platform accepts. Part of the test command (infra/scripts/recipes.sh)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from summary_check import summary_problems  # noqa: E402

doc = json.load(open(os.path.join(os.path.dirname(__file__), "..", "summary-test-vectors.json")))
failures = []
for case in doc["cases"]:
    problems = summary_problems(case["text"])
    got = "reject" if problems else "accept"
    if got != case["expect"]:
        failures.append(f"{case['name']}: platform {case['expect']} {case['rules']}, recipe {got} {problems}")
if failures:
    sys.exit("python summary check disagrees with the platform:\n" + "\n".join(failures))
print(f"python summary check: {len(doc['cases'])} vectors as the platform decides")
