"""Runs verify_proof.py with verify_stepup.py over docs/stepup-test-vectors.json (F-5):
exactly the cases marked accept are accepted. Part of the test command
(infra/scripts/recipes.sh)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from verify_proof import Refused, verify_proof  # noqa: E402
from verify_stepup import StepUp  # noqa: E402

doc = json.load(open(os.path.join(os.path.dirname(__file__), "..", "stepup-test-vectors.json")))
keys = {k["kid"]: k["publicKeyPem"] for k in doc["trustedKeys"]}
pins = doc["pinnedKeys"]


def pinned(tenant, user):
    return pins["keys"] if (tenant, user) == (pins["tenantId"], pins["userId"]) else None


step_up = StepUp(rp_id=doc["stepUpRpId"], origins=doc["stepUpOrigins"], require=set(doc["requireStepUp"]),
                 pinned=pinned)
failures = []
for case in doc["cases"]:
    try:
        verify_proof(case["token"], keys=keys, issuer=doc["issuer"], audience=doc["audience"],
                     expected=doc["action"], now=doc["now"], leeway=doc["leewaySeconds"], step_up=step_up)
        got = "accept"
    except Refused as e:
        got = f"refuse ({e})"
    if (got == "accept") != (case["expect"] == "accept"):
        failures.append(f"{case['name']}: expected {case['expect']}, got {got}")
    print(f"  {case['name']:28} {got}")
# Without the step-up settings, a step-up proof is refused (a verifier built before it).
valid = next(c["token"] for c in doc["cases"] if c["name"] == "valid-es256")
try:
    verify_proof(valid, keys=keys, issuer=doc["issuer"], audience=doc["audience"], expected=doc["action"],
                 now=doc["now"], leeway=doc["leewaySeconds"])
    failures.append("a verifier without step-up settings accepted a step-up proof")
except Refused:
    pass
if failures:
    sys.exit("step-up vectors failed:\n  " + "\n  ".join(failures))
print(f"python recipe: all {len(doc['cases'])} step-up vectors as expected")
