"""I-1: the oracle's table: the requests a real run made (the emulator's samples:
`/_countersign/iam/samples`, one per principal, action, resource and partition shape,
allowed and refused), each decided by this evaluator for **every** function's role, so
that the table holds refusals as well as grants (a role's request asked by another).

    python oracle_table.py http://127.0.0.1:PORT OUT.json

`infra/local-aws/oracle/oracle.mjs OUT.json` then decides every row again with an
independent simulator and fails on any disagreement.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from iam import enforce  # noqa: E402
from iam import template as tpl  # noqa: E402
from iam.policy import Policy, decide  # noqa: E402

FUNCTIONS = [p for p in enforce.PRINCIPALS if p.template == "main"]


def main() -> int:
    base, out = sys.argv[1].rstrip("/"), Path(sys.argv[2])
    with urllib.request.urlopen(f"{base}/_countersign/iam/samples", timeout=30) as r:
        samples = json.load(r)
    ev = enforce.Evaluator.from_templates(Path(__file__).resolve().parents[3])
    rows, seen = [], set()
    for sample in samples:
        key_policy = (
            Policy.parse("key", sample["key_policy"]) if sample.get("key_policy") else None
        )
        for who in FUNCTIONS:
            ident = json.dumps([who.name, sample["action"], sample["resource"], sample["context"]], sort_keys=True)
            if ident in seen:
                continue
            seen.add(ident)
            identity = ev.policies_of(who)
            d = decide(
                principal_arn=who.arn,
                account=tpl.ACCOUNT,
                identity=identity,
                resource_policy=key_policy,
                requires_resource_policy=sample["kms"],
                action=sample["action"],
                resource=sample["resource"],
                context=sample["context"],
            )
            rows.append(
                {
                    "id": len(rows),
                    "principal": who.caller,
                    "action": sample["action"],
                    "resource": sample["resource"],
                    "context": sample["context"],
                    "identity": [enforce._policy_json(p) for p in identity],
                    "key_policy": sample.get("key_policy"),
                    "allowed": d.allowed,
                }
            )
    out.write_text(json.dumps(rows))
    refused = sum(1 for r in rows if not r["allowed"])
    print(f"I-1 oracle table: {len(rows)} rows from {len(samples)} sampled requests, {refused} refused")
    return 0


if __name__ == "__main__":
    sys.exit(main())
