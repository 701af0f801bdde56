"""Verifies a Countersign proof (the `X-MCP-Confirmation` header) with every check of
docs/provider-guide.md §6, in that order.

PyJWT (>= 2.8, with `cryptography`) checks only the RS256 signature here; every other
rule is checked explicitly, because a plain `jwt.decode` accepts an audience list,
ignores `typ` and extra header fields, and does not know the fourteen claims.

    claims = verify_proof(token, keys={kid: pem}, issuer=..., audience=...,
                          expected={...the stored action and the call's headers...},
                          now=int(time.time()), consume=my_replay_guard,
                          claim_action=my_action_claim)
"""
import base64
import json

import jwt

CLAIMS = {
    "iss", "aud", "sub", "tenantId", "conversationId", "actionId", "operation",
    "argumentsHash", "summaryHash", "messageId", "presentedMessageId", "jti", "iat", "exp",
}
HEADER = {"alg", "typ", "kid"}
BINDINGS = (
    ("tenantId", "tenantId"), ("sub", "userId"), ("conversationId", "conversationId"),
    ("actionId", "actionId"), ("operation", "operation"),
    ("argumentsHash", "argumentsHash"), ("summaryHash", "summaryHash"),
)


class Refused(Exception):
    """The proof is refused: answer a tool error and write nothing."""


def proof_keys_from_jwks(document):
    """The proof keys of a JWK Set (the platform's `/.well-known/jwks.json`), as
    {kid: public key PEM}. A document or key marked with a `purpose` (the platform's audit
    checkpoint keys, `/.well-known/countersign-audit-keys.json`) is never a source of proof
    keys: such a document raises Refused and such a key is left out."""
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    from jwt.algorithms import RSAAlgorithm

    if not isinstance(document, dict) or "purpose" in document:
        raise Refused("not the proofs' JWKS")
    keys = {}
    for k in document.get("keys", []):
        if not isinstance(k, dict) or "purpose" in k or k.get("kty") != "RSA":
            continue
        if k.get("alg", "RS256") != "RS256" or k.get("use", "sig") != "sig" or "kid" not in k:
            continue
        public = RSAAlgorithm.from_jwk(json.dumps(k))
        keys[k["kid"]] = public.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo).decode()
    return keys


def _segment(seg):
    try:
        value = json.loads(base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4)))
    except Exception:
        raise Refused("malformed")
    if not isinstance(value, dict):
        raise Refused("malformed")
    return value


def verify_proof(token, *, keys, issuer, audience, expected, now, leeway=5, consume=None,
                 claim_action=None, step_up=None):
    """Returns the claims of a valid proof, or raises Refused. `keys` maps each installed
    `kid` to its public key PEM; `expected` holds tenantId, userId, conversationId,
    actionId, operation, argumentsHash, summaryHash; `consume(jti, exp)` records a
    `jti` atomically and returns False when it was already recorded; `claim_action(tenantId,
    actionId)` (N-1) records the action's one execution atomically, for good, and returns
    False when it was already claimed: a second genuine proof for an executed action
    ("already executed": answer the action's recorded status, execute nothing).
    `step_up` (verify_stepup.StepUp, F-5): accept `support-action-stepup+jwt` proofs and
    check the person's passkey assertion in them; without it they are refused."""
    parts = token.split(".") if isinstance(token, str) else []
    if len(parts) != 3:
        raise Refused("malformed")
    header = _segment(parts[0])
    for field in ("jku", "x5u", "jwk", "x5c"):  # never take a key from the token
        if field in header:
            raise Refused(f"embedded key ({field})")
    if header.get("alg") != "RS256":  # before any key is used
        raise Refused("algorithm")
    stepped = header.get("typ") == "support-action-stepup+jwt"
    if header.get("typ") != "support-action+jwt" and not (stepped and step_up is not None):
        raise Refused("type")
    if set(header) - HEADER:
        raise Refused("unexpected header field")
    key = keys.get(header.get("kid"))
    if key is None:
        raise Refused("unknown key")
    try:
        claims = jwt.decode(
            token, key, algorithms=["RS256"],
            options={"verify_aud": False, "verify_iss": False, "verify_exp": False,
                     "verify_iat": False, "verify_nbf": False, "require": []},
        )
    except jwt.InvalidTokenError:
        raise Refused("signature")
    if claims.get("iss") != issuer:
        raise Refused("issuer")
    if not isinstance(claims.get("aud"), str) or claims["aud"] != audience:
        raise Refused("audience")
    evidence = None
    if stepped:
        from verify_stepup import StepUpRefused, split
        try:
            claims, evidence = split(claims)
        except StepUpRefused as e:
            raise Refused(f"step-up: {e}")
    if set(claims) != CLAIMS:
        raise Refused("claims")
    iat, exp = claims["iat"], claims["exp"]
    if not all(type(t) is int for t in (iat, exp)):
        raise Refused("times")
    if exp <= iat or exp - iat > 60:
        raise Refused("lifetime")
    if iat > now + leeway:
        raise Refused("not yet valid")
    if now > exp + leeway:
        raise Refused("expired")
    for claim, field in BINDINGS:
        if claims[claim] != expected[field]:
            raise Refused(f"{claim} does not match")
    if not isinstance(claims["jti"], str) or not claims["jti"]:
        raise Refused("jti")
    if step_up is not None and evidence is None and claims["operation"] in step_up.require:
        raise Refused("step-up required")
    if evidence is not None:
        from verify_stepup import StepUpRefused, check
        try:
            check(claims, evidence, step_up)
        except StepUpRefused as e:
            raise Refused(f"step-up: {e}")
    if consume is not None and not consume(claims["jti"], exp):
        raise Refused("replayed")
    if claim_action is not None and not claim_action(claims["tenantId"], claims["actionId"]):
        raise Refused("already executed")
    return claims
