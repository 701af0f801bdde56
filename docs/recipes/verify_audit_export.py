#!/usr/bin/env python3
"""Verify a Countersign audit export against a kept checkpoint, offline (L-3).

    python3 verify_audit_export.py EXPORT.json CHECKPOINT.json [AUDIT-KEYS.json]

EXPORT.json      `countersign audit export --tenant ten_…` (records with chain fields, heads)
CHECKPOINT.json  the answer of `POST /api/admin/tenants/{id}/audit/checkpoints`, kept as is
AUDIT-KEYS.json  `GET /.well-known/countersign-audit-keys.json`: checks the checkpoint's
                 RS256 signature (needs the `cryptography` package)

Checks every chain of the export (seq 1, 2, … with no gap; each `prev` is the hash of the
record before; the last record is the chain's head), that the checkpoint's signed digest is
the digest of the heads kept with it, and that the export still holds each of those heads:
nothing the checkpoint covered was removed or rewritten. Exit status 0 when all hold, 1
with the first failure otherwise. Standard library only, except the optional signature.
"""
import base64
import hashlib
import json
import sys


def record_hash(tenant, r):
    """SHA-256 over the tenant and every field, each prefixed by its length (8 bytes, big
    endian), in this order: tenant, chain, seq, prev, id, at, actor, action, changes."""
    h = hashlib.sha256()
    for field in (tenant, r["chain"], str(r["seq"]), r["prev"], r["id"], r["at"],
                  r["actor"], r["action"], r["changes"]):
        data = field.encode("utf-8")
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


def digest(heads):
    """What a checkpoint signs: SHA-256 over `chain seq hash\\n` per head, in chain order."""
    h = hashlib.sha256()
    for head in sorted(heads, key=lambda x: x["chain"].encode("utf-8")):
        h.update(f'{head["chain"]} {head["seq"]} {head["hash"]}\n'.encode("utf-8"))
    return h.hexdigest()


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def check_signature(jws, keys_doc):
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    header_b64, payload_b64, signature_b64 = jws.split(".")
    kid = json.loads(b64url(header_b64))["kid"]
    jwk = next((k for k in keys_doc["keys"] if k.get("kid") == kid), None)
    if jwk is None or jwk.get("purpose") != "audit-checkpoint":
        return f"no audit-checkpoint key {kid}"
    key = rsa.RSAPublicNumbers(
        int.from_bytes(b64url(jwk["e"]), "big"), int.from_bytes(b64url(jwk["n"]), "big")
    ).public_key()
    try:
        key.verify(b64url(signature_b64), f"{header_b64}.{payload_b64}".encode("ascii"),
                   padding.PKCS1v15(), hashes.SHA256())
    except Exception:  # cryptography raises InvalidSignature
        return "the checkpoint's signature does not verify"
    return None


def verify(export, kept, keys_doc=None):
    tenant = export["tenantId"]
    if export.get("unchained", 0):
        return "a record has no chain fields"
    heads = {h["chain"]: h for h in export["heads"]}
    chains = {}
    for r in export["records"]:
        chains.setdefault(r["chain"], []).append(r)
    for chain in set(chains) | set(heads):
        # Records past the head were written after it was read (decision 0041).
        head = heads.get(chain)
        records = sorted((r for r in chains.get(chain, []) if head is None or r["seq"] <= head["seq"]),
                         key=lambda r: r["seq"])
        prev = ""
        for i, r in enumerate(records, start=1):
            if r["seq"] != i:
                return f"chain {chain}: record {i} is missing or repeated"
            if r["prev"] != prev:
                return f"chain {chain}: record {i - 1} was altered"
            prev = record_hash(tenant, r)
        if head is None:
            return f"chain {chain} has no head"
        if head["seq"] != len(records) or head["hash"] != prev:
            return f"chain {chain}: its head does not match its last record"
    jws = kept["checkpoint"]
    claims = json.loads(b64url(jws.split(".")[1]))
    if claims["tenantId"] != tenant:
        return "the checkpoint is another tenant's"
    if keys_doc is not None:
        bad = check_signature(jws, keys_doc)
        if bad:
            return bad
    if digest(kept["heads"]) != claims["digest"]:
        return "the heads kept with the checkpoint are not the ones it signed"
    by_seq = {(r["chain"], r["seq"]): r for r in export["records"]}
    for h in kept["heads"]:
        if h["seq"] == 0:
            continue
        r = by_seq.get((h["chain"], h["seq"]))
        if r is None:
            return f'chain {h["chain"]}: record {h["seq"]}, covered by the checkpoint, is gone'
        if record_hash(tenant, r) != h["hash"]:
            return f'chain {h["chain"]}: record {h["seq"]}, covered by the checkpoint, was rewritten'
    return None


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        export = json.load(f)
    with open(argv[2], encoding="utf-8") as f:
        kept = json.load(f)
    keys_doc = None
    if len(argv) == 4:
        with open(argv[3], encoding="utf-8") as f:
            keys_doc = json.load(f)
    failure = verify(export, kept, keys_doc)
    if failure:
        print(f"BROKEN: {failure}")
        return 1
    signed = "signature checked, " if keys_doc is not None else ""
    print(f'verified: {len(export["records"])} records in {len(export["heads"])} chains; '
          f"{signed}the trail extends the checkpoint")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
