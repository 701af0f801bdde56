#!/usr/bin/env bash
# L-3 end to end on the local stack (part of the test command, inside
# infra/scripts/with-local-aws.sh, on the debug binaries): a checkpoint taken through the
# admin API and kept as a file; the trail grows; `countersign audit export` feeds the
# offline Python recipe, which verifies it against the kept checkpoint (signature
# included); `countersign audit verify --since` agrees, after a person named in the trail
# was erased with `countersign erase` (R-2: no plaintext of theirs left in the table, the
# export shows their fields erased, a replay finds nothing). Then a record the checkpoint
# covered is rewritten in the table (its chain rebuilt so the chains verify again): both
# the CLI and the recipe find it.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
. infra/scripts/dev-server-wait.sh
debug_bins countersign-dev-server countersign-cli
logs="$target/audit-since"
rm -rf "$logs"; mkdir -p "$logs"
start_dev_server since "$logs"
tenant=$(sed -n 's/^TENANT=//p' "$logs/dev-server.log")
key=$(sed -n 's/^ADMIN_KEY=//p' "$logs/dev-server.log")
base="http://127.0.0.1:$port"
api="$base/api/admin/tenants/$tenant"
cli="$target/debug/countersign"
py="$root/.venv/moto/bin/python"
recipe="$root/docs/recipes/verify_audit_export.py"
curl -sf -X POST "$api/audit/checkpoints" -H "Authorization: Bearer $key" >"$logs/kept.json"
curl -sf "$base/.well-known/countersign-audit-keys.json" >"$logs/keys.json"
# The trail grows after the checkpoint: a widget credential is created (an audited change).
curl -sf -X POST "$api/widget-credentials" -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
  --data '{"allowedOrigins": ["http://localhost:8080"]}' >/dev/null
# R-2: a person named in the trail (a hold placed and lifted: their id sealed under their
# key), then erased with the CLI: the trail must still extend the checkpoint.
person="u_erase_$RANDOM$RANDOM"
for held in true false; do
  curl -sf -X PUT "$api/holds" -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
    --data "{\"kind\": \"person\", \"id\": \"$person\", \"held\": $held}" >/dev/null
done
COUNTERSIGN_ADMIN_KEY="$key" "$cli" erase --api "$base" --tenant "$tenant" --person "$person" >"$logs/erasure.json"
grep -q '"auditPersonalData": "unreadable"' "$logs/erasure.json"
grep -q '"receipt": "ey' "$logs/erasure.json"
# N-3: a replay is a job that finds nothing stored of them, and writes nothing.
COUNTERSIGN_ADMIN_KEY="$key" "$cli" erase --api "$base" --tenant "$tenant" --person "$person" >"$logs/erasure-again.json"
grep -q '"nothingStored": true' "$logs/erasure-again.json" || { echo "a replayed erasure found something" >&2; exit 1; }
"$py" - "$COUNTERSIGN_TABLE" "$person" <<'PY'
import boto3, sys
table, person = sys.argv[1], sys.argv[2]
t = boto3.resource("dynamodb").Table(table)
items, start = [], {}
while True:
    page = t.scan(ConsistentRead=True, **start)
    items += page["Items"]
    if "LastEvaluatedKey" not in page: break
    start = {"ExclusiveStartKey": page["LastEvaluatedKey"]}
left = [(i["pk"], i["sk"]) for i in items if person in repr(i)]
assert not left, f"the erased person is still in {left}"
PY
"$cli" audit export --tenant "$tenant" >"$logs/export.json"
grep -q '"erased": true' "$logs/export.json"
"$py" "$recipe" "$logs/export.json" "$logs/kept.json" "$logs/keys.json" | tee "$logs/recipe-ok.txt"
grep -q "^verified: .*signature checked" "$logs/recipe-ok.txt"
"$cli" audit verify --tenant "$tenant" --since "$logs/kept.json" | tee "$logs/cli-ok.txt"
grep -q "^extends the checkpoint" "$logs/cli-ok.txt"
# Rewrite the first record of the tenant chain and re-chain everything after it, as
# someone with write access to the table could: the chains verify, the checkpoint does not.
"$py" - "$COUNTERSIGN_TABLE" "$tenant" <<'PY'
import boto3, hashlib, sys
table, tenant = sys.argv[1], sys.argv[2]
t = boto3.resource("dynamodb").Table(table)
items = t.query(KeyConditionExpression="pk = :p AND begins_with(sk, :a)",
                ExpressionAttributeValues={":p": f"TENANT#{tenant}", ":a": "AUDIT#"})["Items"]
chain = sorted((i for i in items if i.get("chain") == "tenant"), key=lambda i: int(i["chain_seq"]))
def h(i, prev):
    d = hashlib.sha256()
    for f in (tenant, i["chain"], str(int(i["chain_seq"])), prev, i["audit_id"], i["at"], i["actor"], i["action"], i["changes"]):
        b = f.encode(); d.update(len(b).to_bytes(8, "big")); d.update(b)
    return d.hexdigest()
chain[0]["actor"] = "operator-rewritten"
prev = ""
for i in chain:
    i["chain_prev"] = prev
    t.put_item(Item=i)
    prev = h(i, prev)
t.update_item(Key={"pk": f"TENANT#{tenant}", "sk": "AUDITHEAD"}, UpdateExpression="SET chain_hash = :h",
              ExpressionAttributeValues={":h": prev})
PY
"$cli" audit verify --tenant "$tenant" >"$logs/cli-chains.txt"
grep -q "^verified: every chain is intact" "$logs/cli-chains.txt"
if "$cli" audit verify --tenant "$tenant" --since "$logs/kept.json" >"$logs/cli-rewritten.txt"; then
  echo "audit verify --since passed over a rewritten record" >&2; cat "$logs/cli-rewritten.txt" >&2; exit 1
fi
grep -q "^NOT EXTENDED: chain tenant at seq [0-9]*: a record the checkpoint covered was rewritten" "$logs/cli-rewritten.txt"
"$cli" audit export --tenant "$tenant" >"$logs/export-rewritten.json"
if "$py" "$recipe" "$logs/export-rewritten.json" "$logs/kept.json" "$logs/keys.json" >"$logs/recipe-rewritten.txt"; then
  echo "the recipe passed over a rewritten record" >&2; exit 1
fi
grep -q "covered by the checkpoint, was rewritten" "$logs/recipe-rewritten.txt"
echo "audit-since: the trail extends its kept checkpoint (CLI and Python recipe), across a person's erasure; a rewritten, re-chained record is found by both"
