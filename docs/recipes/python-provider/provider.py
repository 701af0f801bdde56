"""A minimal Countersign provider in Python: the official MCP SDK (`mcp` 2.3, `MCPServer`)
and the proof recipe (`../verify_proof.py`, PyJWT for the signature only).

It serves one consultation (`get_user_cars`), the three action tools and one operation,
`reassign_session_car {sessionId, carId}`, over stateless streamable HTTP:

    PLATFORM_JWKS_URL=https://support.example.com/.well-known/jwks.json \
    PLATFORM_ISSUER=https://support.example.com/mcp-actions \
    PROVIDER_AUDIENCE=https://mcp.example.com/mcp \
    PROVIDER_SERVICE_TOKEN=... PROVIDER_PUBLIC_HOST=mcp.example.com \
    python provider.py --port 8000

Every duty of docs/provider-guide.md is here, each marked where it happens: the service
token on every call, the identity headers, preparation without writing, the proof checked
in full before any work, one execution per proof (`jti` consumed once), a re-check at
execution, and a truthful status. Data lives in memory: replace `DATA` and `ACTIONS` with
your tables (the `jti` set needs a unique constraint there).

The SDK's DNS-rebinding protection answers 421 to a Host header it does not know. Behind a
real domain, list that host in `PROVIDER_PUBLIC_HOST` (it becomes `allowed_hosts`); never
turn the protection off.
"""
import argparse
import base64
import hashlib
import json
import os
import sys
import threading
import time
import urllib.request
import uuid
from typing import Any

from typing_extensions import NotRequired, TypedDict

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import ToolAnnotations
from starlette.responses import JSONResponse

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from verify_proof import Refused, proof_keys_from_jwks, verify_proof  # noqa: E402

ISSUER = os.environ["PLATFORM_ISSUER"]
AUDIENCE = os.environ["PROVIDER_AUDIENCE"]
JWKS_URL = os.environ["PLATFORM_JWKS_URL"]
SERVICE_TOKEN = os.environ["PROVIDER_SERVICE_TOKEN"]
OPERATION = "reassign_session_car"
LIFETIME = 240  # seconds a prepared action waits for its confirmation (at most 300)

# Your system: people, their cars and sessions. `countersign-test:u_test` is the synthetic person the
# certification runs as: its writes are answered but not applied, so runs repeat.
DATA = {
    "u_alice": {"cars": {"car_a1": "Civic Type R", "car_a2": "GR86"}, "sessions": {"ses_a1": "car_a1"}},
    "countersign-test:u_test": {"cars": {"car_t1": "Test car one", "car_t2": "Test car two"}, "sessions": {"ses_t1": "car_t1"}},
}
SYNTHETIC = {"countersign-test:u_test"}
ACTIONS: dict[str, dict[str, Any]] = {}
USED_JTI: set[str] = set()
CLAIMED_ACTIONS: set[tuple[str, str]] = set()
LOCK = threading.Lock()


class Prepared(TypedDict):
    contractVersion: int
    actionId: str
    status: str
    operation: str
    summary: str
    argumentsHash: str
    summaryHash: str
    expiresAt: str


class Status(TypedDict):
    contractVersion: int
    actionId: str
    status: str
    message: NotRequired[str]


class Car(TypedDict):
    carId: str
    name: str


class Cars(TypedDict):
    cars: list[Car]


def jwks_url_allowed(url):
    """JWKS over https only (loopback http for development), as the guide asks."""
    return url.startswith("https://") or url.startswith("http://127.0.0.1:") or url.startswith("http://localhost:")


class Keys:
    """The platform's proof keys from its JWKS, refetched for an unknown kid at most once
    every 30 s (so a flood of made-up kids cannot make you hammer the JWKS)."""

    def __init__(self):
        self.keys, self.fetched = {}, 0.0

    def get(self, kid):
        if kid not in self.keys and time.time() - self.fetched > 30:
            self.fetched = time.time()
            if not jwks_url_allowed(JWKS_URL):
                raise Refused("the JWKS URL must be https")
            with urllib.request.urlopen(JWKS_URL, timeout=5) as r:  # no redirects to follow here
                self.keys = proof_keys_from_jwks(json.load(r))
        return self.keys


KEYS = Keys()
host = os.environ.get("PROVIDER_PUBLIC_HOST")
security = TransportSecuritySettings(
    enable_dns_rebinding_protection=True,
    allowed_hosts=["127.0.0.1:*", "localhost:*"] + ([host, f"{host}:*"] if host else []),
)
mcp = MCPServer("TrackShare (Python recipe)")


def identity(ctx: Context):
    """The identity headers the platform sends on every call (never trust them without
    the service token, which the middleware below checked)."""
    h = ctx.headers or {}
    who = {k: h.get(f"x-mcp-{k}-id") for k in ("tenant", "user", "conversation")}
    if not all(who.values()):
        raise ToolError("missing identity headers")
    return who


def canonical_hash(value):
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def iso(ts):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


@mcp.tool(annotations=ToolAnnotations(read_only_hint=True), structured_output=True)
def get_user_cars(ctx: Context) -> Cars:
    """The person's cars."""
    user = DATA.get(identity(ctx)["user"])
    if user is None:
        raise ToolError("unknown user")
    return {"cars": [{"carId": c, "name": n} for c, n in user["cars"].items()]}


@mcp.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
def reassign_session_car(sessionId: str, carId: str) -> str:  # noqa: N803
    """Operation schema only: move a session to another of the person's cars. Never
    called directly; the platform prepares it through prepare_action."""
    raise ToolError("prepare this operation through prepare_action")


@mcp.tool(annotations=ToolAnnotations(read_only_hint=False), structured_output=True)
def prepare_action(operation: str, arguments: dict[str, Any], ctx: Context) -> Prepared:
    """Prepares a write for the person to confirm. Operations: reassign_session_car {sessionId, carId}."""
    who = identity(ctx)
    if operation != OPERATION:
        raise ToolError(f"unknown operation: this server prepares only {OPERATION}")
    user = DATA.get(who["user"])
    if user is None:
        raise ToolError(f"unknown user {who['user']}")
    session, car = arguments.get("sessionId"), arguments.get("carId")
    if session not in user["sessions"] or car not in user["cars"]:
        raise ToolError("no such session or car for this person")
    if user["sessions"][session] == car:
        raise ToolError("the session is already recorded under that car")
    before, after = user["cars"][user["sessions"][session]], user["cars"][car]
    # X-MCP-Language (optional, BCP 47): answer the summary in the person's language.
    if (ctx.headers or {}).get("x-mcp-language", "").lower().startswith("pt"):
        summary = f"Mover a sessão {session} de \"{before}\" para \"{after}\"."
    else:
        summary = f"Move session {session} from \"{before}\" to \"{after}\"."
    now = time.time()
    action = {
        "actionId": f"act_{uuid.uuid4().hex}", "operation": operation, "arguments": arguments,
        "argumentsHash": canonical_hash(arguments), "summary": summary,
        "summaryHash": hashlib.sha256(summary.encode()).hexdigest(),
        "expires": now + LIFETIME, "status": "pending_confirmation", "from": user["sessions"][session], **who,
    }
    with LOCK:  # one pending proposal per conversation: a new one replaces the previous
        for a in ACTIONS.values():
            if a["conversation"] == who["conversation"] and a["status"] == "pending_confirmation":
                a["status"] = "cancelled"
        ACTIONS[action["actionId"]] = action
    return {
        "contractVersion": 1, "actionId": action["actionId"], "status": "pending_confirmation",
        "operation": operation, "summary": summary, "argumentsHash": action["argumentsHash"],
        "summaryHash": action["summaryHash"], "expiresAt": iso(action["expires"]),
    }


def kid_of(token):
    """The proof header's kid, unverified (only to pick the key)."""
    head = token.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4))).get("kid")


def consume(jti, exp):
    """One execution per proof: record jti once (a unique constraint in your database)."""
    if jti in USED_JTI:
        return False
    USED_JTI.add(jti)
    return True


def claim(tenant_id, action_id):
    """N-1: one execution per action, whatever the proof: record (tenant, action) once, for
    good (a unique constraint in your database)."""
    if (tenant_id, action_id) in CLAIMED_ACTIONS:
        return False
    CLAIMED_ACTIONS.add((tenant_id, action_id))
    return True


def owned(action_id, who):
    a = ACTIONS.get(action_id)
    if a is None or any(a[k] != who[k] for k in ("tenant", "user", "conversation")):
        raise ToolError("no such action")
    if a["status"] == "pending_confirmation" and time.time() >= a["expires"]:
        a["status"] = "expired"
    return a


def status_of(a) -> Status:
    out: Status = {"contractVersion": 1, "actionId": a["actionId"], "status": a["status"]}
    if a.get("message"):
        out["message"] = a["message"]
    return out


@mcp.tool(annotations=ToolAnnotations(read_only_hint=False), structured_output=True)
def execute_action(actionId: str, ctx: Context) -> Status:  # noqa: N803
    """Executes a confirmed action; requires the platform's proof (X-MCP-Confirmation)."""
    who = identity(ctx)
    token = (ctx.headers or {}).get("x-mcp-confirmation")
    with LOCK:
        a = owned(actionId, who)
        # The proof first, before any work: a bad proof is a tool error, nothing else.
        expected = {"tenantId": who["tenant"], "userId": who["user"], "conversationId": who["conversation"],
                    "actionId": a["actionId"], "operation": a["operation"],
                    "argumentsHash": a["argumentsHash"], "summaryHash": a["summaryHash"]}
        if not token:
            raise ToolError("proof refused: no X-MCP-Confirmation header")
        try:
            verify_proof(token, keys=KEYS.get(kid_of(token)), issuer=ISSUER, audience=AUDIENCE,
                         expected=expected, now=int(time.time()), consume=consume,
                         claim_action=claim)
        except Refused as e:
            if str(e) == "already executed":
                return status_of(a)  # N-1: its one execution happened: the recorded status
            raise ToolError(f"proof refused: {e}")
        except Exception:
            raise ToolError("proof refused: malformed")
        if a["status"] != "pending_confirmation":
            return status_of(a)  # repeated, replaced or expired: the recorded status, no write
        # Re-check now, then write once.
        user = DATA.get(who["user"])
        session = a["arguments"]["sessionId"]
        if user is None or user["sessions"].get(session) != a["from"]:
            a["status"], a["message"] = "conflict", "The session changed since the proposal."
        else:
            if who["user"] not in SYNTHETIC:
                user["sessions"][session] = a["arguments"]["carId"]
            a["status"], a["message"] = "completed", "The session was moved to the new car."
        return status_of(a)


@mcp.tool(annotations=ToolAnnotations(read_only_hint=True), structured_output=True)
def get_action_status(actionId: str, ctx: Context) -> Status:  # noqa: N803
    """The action's status."""
    with LOCK:
        return status_of(owned(actionId, identity(ctx)))


def app():
    inner = mcp.streamable_http_app(stateless_http=True, json_response=True, transport_security=security)

    async def with_service_token(scope, receive, send):
        """The service token on every call, before MCP sees it."""
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if headers.get(b"authorization", b"").decode() != f"Bearer {SERVICE_TOKEN}":
                await JSONResponse({"error": "unknown service token"}, status_code=401)(scope, receive, send)
                return
        await inner(scope, receive, send)

    return with_service_token, inner


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8000)
    port = parser.parse_args().port
    asgi, inner = app()
    # The wrapper passes the lifespan through: the SDK's session manager starts there.
    uvicorn.run(asgi, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
