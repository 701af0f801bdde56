"""Runs verify_proof.py over docs/proof-test-vectors.json: exactly `valid` is accepted,
and only once. Part of the test command (infra/scripts/recipes.sh)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from verify_proof import Refused, proof_keys_from_jwks, verify_proof  # noqa: E402

doc = json.load(open(os.path.join(os.path.dirname(__file__), "..", "proof-test-vectors.json")))
keys = {k["kid"]: k["publicKeyPem"] for k in doc["trustedKeys"]}
seen = set()


def consume(jti, exp):
    if jti in seen:
        return False
    seen.add(jti)
    return True


def run(token, guard=None, claim=None):
    try:
        verify_proof(token, keys=keys, issuer=doc["issuer"], audience=doc["audience"],
                     expected=doc["action"], now=doc["now"], leeway=doc["leewaySeconds"], consume=guard,
                     claim_action=claim)
        return "accept"
    except Refused as e:
        return f"reject ({e})"


failures = []
for case in doc["cases"]:
    got = run(case["token"])
    want_accept = case["expect"] == "accept"
    if (got == "accept") != want_accept:
        failures.append(f"{case['name']}: expected {case['expect']}, got {got}")
    print(f"  {case['name']:34} {got}")
valid = next(c["token"] for c in doc["cases"] if c["name"] == "valid")
first, second = run(valid, consume), run(valid, consume)
if first != "accept" or second == "accept":
    failures.append(f"replay: first {first}, second {second}")
print(f"  {'replay':34} first {first}, second {second}")
# N-1: an action already executed (claimed) is refused whatever the proof.
executed = run(valid, claim=lambda tenant, action: False)
if executed != "reject (already executed)":
    failures.append(f"already executed: got {executed}")
claimed = []
fresh = run(valid, claim=lambda tenant, action: claimed.append((tenant, action)) or True)
if fresh != "accept" or claimed != [(doc["action"]["tenantId"], doc["action"]["actionId"])]:
    failures.append(f"claim: got {fresh}, claimed {claimed}")
print(f"  {'already executed':34} {executed}")
# V-6: the audit checkpoint key set is never a source of proof keys.
try:
    proof_keys_from_jwks(doc["checkpointKeys"])
    failures.append("checkpointKeys: the marked document was accepted as a JWKS")
except Refused:
    pass
if proof_keys_from_jwks({"keys": doc["checkpointKeys"]["keys"]}):
    failures.append("checkpointKeys: a marked key was taken as a proof key")
print(f"  {'checkpoint key set':34} refused")
if failures:
    sys.exit("python recipe disagrees with the vectors:\n" + "\n".join(failures))
print(f"python recipe: {len(doc['cases'])} vectors and the replay as expected")
