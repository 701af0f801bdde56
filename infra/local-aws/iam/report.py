"""I-1: the over-privilege report, from data: every Allow statement of a function's role
and every `dynamodb:LeadingKeys` pattern of such a statement that no call of the run
used fails the run, unless `unused.toml` lists it with its reason.

    python report.py http://127.0.0.1:PORT [--write FILE]

Reads the emulator's own counts (`/_countersign/iam/usage`, `/_countersign/iam/policies`),
so it measures exactly the calls the suites made and the policies exactly as evaluated.
`--write FILE` also writes the per-principal partition counts (what each role wrote),
the data the narrowed allow-lists were drawn from.
"""

from __future__ import annotations

import json
import sys
import tomllib
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent


def fetch(base: str, what: str):
    with urllib.request.urlopen(f"{base}/_countersign/iam/{what}", timeout=30) as r:
        return json.load(r)


def allow_statements(policies: dict):
    """(role, statement source, [LeadingKeys patterns]) of every Allow statement."""
    for role, documents in policies["roles"].items():
        for doc in documents:
            for s in doc["Statement"]:
                if s["Effect"] != "Allow":
                    continue
                patterns = []
                for op, block in (s.get("Condition") or {}).items():
                    if "StringLike" in op and "StringNotLike" not in op:
                        patterns += block.get("dynamodb:LeadingKeys", [])
                yield role, s["Sid"], patterns


def sid(source: str) -> str:
    # enforce._policy_json's Sid: the statement's source without punctuation.
    return "".join(c for c in source if c.isalnum())


def main() -> int:
    base = sys.argv[1].rstrip("/")
    usage = fetch(base, "usage")
    policies = fetch(base, "policies")
    if "--write" in sys.argv:
        out = Path(sys.argv[sys.argv.index("--write") + 1])
        out.write_text(json.dumps(usage, indent=1, sort_keys=True))
    allowed = tomllib.loads((HERE / "unused.toml").read_text())
    listed = {(e["role"], e.get("statement", ""), e.get("pattern", "")) for e in allowed["unused"]}
    used_statements = {sid(k) for k in usage["statements"]}
    used_patterns = set()
    for k in usage["patterns"]:
        source, key, value = k.split(" ", 2)
        if key.lower() == "dynamodb:leadingkeys":
            used_patterns.add((sid(source), value))
    problems = []
    seen = set()
    for role, statement, patterns in allow_statements(policies):
        if role not in ("MessagesFunctionRole", "MessagesStreamFunctionRole", "AdminFunctionRole",
                        "GatewayFunctionRole", "PurgeFunctionRole", "BridgeFunctionRole"):
            continue  # the scheduler's roles (SAM's ScheduleV2 invoke roles): not ours
        if statement not in used_statements:
            key = (role, statement, "")
            seen.add(key)
            if key not in listed:
                problems.append(f"{role}: statement {statement} granted no call of this run")
            continue
        for p in patterns:
            if (statement, p) in used_patterns:
                continue
            key = (role, statement, p)
            seen.add(key)
            if key not in listed:
                problems.append(f"{role}: {statement} pattern {p!r} matched no call of this run")
    stale = [e for e in sorted(listed - seen)]
    for role, statement, pattern in stale:
        problems.append(
            f"unused.toml lists {role} {statement} {pattern!r}, which this run did use: remove it"
        )
    calls = usage["calls"] or 1
    print(
        f"I-1 over-privilege report: {usage['calls']} calls decided, "
        f"{usage['seconds'] / calls * 1000:.3f} ms each on average; "
        f"{len(seen)} unused grants, {len(seen) - len(problems) + len(stale)} of them listed with their reason"
    )
    for p in problems:
        print(f"  {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
