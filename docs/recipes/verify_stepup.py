"""F-5: checking the person's passkey step-up in a `support-action-stepup+jwt` proof, on
your own: the challenge recomputed from the proof's claims, the WebAuthn assertion checked,
and — if you keep your people's credentials — the key one of theirs. Needs `cryptography`
(PyJWT's RS256 already does). Used by verify_proof.py's `step_up=` argument.

    step_up = StepUp(rp_id="confirm.example.com", origins=["https://confirm.example.com"],
                     require={"close_account"}, pinned=lambda tenant, user: None)
"""
import base64
import hashlib
import json
import struct
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

TAG = "countersign-stepup-v1"
AMR = {"pop", "user", "mfa"}
EVIDENCE = {"credentialId", "credentialKey", "authenticatorData", "clientDataJSON", "signature", "nonce"}


class StepUpRefused(Exception):
    """Why a step-up is refused (the check's name)."""


@dataclass
class StepUp:
    rp_id: str  # the platform's stepUpRpId
    origins: list  # the platform's stepUpOrigins
    require: set = field(default_factory=set)  # operations that must carry a step-up
    pinned: object = None  # pinned(tenantId, userId) -> list of JWKs, or None


def _b64(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def challenge(claims, nonce):
    """SHA-256 over the tag and eight fields, each prefixed by its 4-byte big-endian length."""
    h = hashlib.sha256()
    for f in (TAG, claims["tenantId"], claims["conversationId"], claims["actionId"], claims["operation"],
              claims["argumentsHash"], claims["summaryHash"], claims["presentedMessageId"], nonce):
        b = f.encode()
        h.update(struct.pack(">I", len(b)) + b)
    return h.digest()


def _key(jwk):
    if jwk.get("kty") == "EC" and jwk.get("crv") == "P-256":
        x, y = _b64(jwk["x"]), _b64(jwk["y"])
        return ec.EllipticCurvePublicNumbers(int.from_bytes(x, "big"), int.from_bytes(y, "big"),
                                             ec.SECP256R1()).public_key()
    if jwk.get("kty") == "OKP" and jwk.get("crv") == "Ed25519":
        return ed25519.Ed25519PublicKey.from_public_bytes(_b64(jwk["x"]))
    raise StepUpRefused("credential key")


def check(claims, evidence, step_up):
    """Raises StepUpRefused unless `evidence` (the proof's `stepUp`) is the person's
    assertion over this very action. The signature counter is the platform's to keep."""
    if not isinstance(evidence, dict) or set(evidence) != EVIDENCE:
        raise StepUpRefused("malformed")
    jwk = evidence["credentialKey"]
    if step_up.pinned is not None:
        pinned = step_up.pinned(claims["tenantId"], claims["sub"])
        if pinned is not None and jwk not in pinned:
            raise StepUpRefused("not pinned")
    client_raw = _b64(evidence["clientDataJSON"])
    client = json.loads(client_raw)
    if client.get("type") != "webauthn.get":
        raise StepUpRefused("type")
    want = base64.urlsafe_b64encode(challenge(claims, evidence["nonce"])).rstrip(b"=").decode()
    if client.get("challenge") != want:
        raise StepUpRefused("challenge")
    if client.get("origin") not in step_up.origins or client.get("crossOrigin") is True:
        raise StepUpRefused("origin")
    data = _b64(evidence["authenticatorData"])
    if len(data) < 37:
        raise StepUpRefused("malformed")
    if data[:32] != hashlib.sha256(step_up.rp_id.encode()).digest():
        raise StepUpRefused("rp id")
    if not data[32] & 0x01:
        raise StepUpRefused("user presence")
    if not data[32] & 0x04:
        raise StepUpRefused("user verification")
    signed = data + hashlib.sha256(client_raw).digest()
    signature = _b64(evidence["signature"])
    key = _key(jwk)
    try:
        if isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(signature, signed, ec.ECDSA(hashes.SHA256()))  # DER; high-S accepted
        else:
            key.verify(signature, signed)
    except InvalidSignature:
        raise StepUpRefused("signature")


def split(claims):
    """The step-up claim set split into the fourteen claims, the evidence and `amr`."""
    claims = dict(claims)
    evidence, amr = claims.pop("stepUp", None), claims.pop("amr", None)
    if evidence is None or not isinstance(amr, list) or set(amr) - AMR:
        raise StepUpRefused("malformed")
    return claims, evidence
