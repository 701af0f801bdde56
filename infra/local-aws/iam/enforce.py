"""I-1: the emulator's front enforces each principal's policies on every AWS call.

A WSGI middleware in front of moto's app (`moto_serialized.py`). It reads the caller's
access key id from the SigV4 `Authorization` header (signatures are not verified: the
local stack's keys are public names, decision 0081), finds its principal, builds the
request's checks (`requests.py`) and decides each one (`policy.py`) with the principal's
policies from the templates (`template.py`) and, for KMS, the key's policy. One refused
check refuses the whole call, before moto sees it, with the error AWS answers:
HTTP 400 `AccessDeniedException` naming the principal, the action and the resource.

Principals: one access key id per function role, and `operator` (the CLI, `bootstrap`
and test fixtures: the account's administrator, whom the key policies do not let sign).
An unknown key id is refused as AWS refuses one (`UnrecognizedClientException`).

It keeps, for the over-privilege report, how often each Allow statement and each
`dynamodb:LeadingKeys` pattern granted a call (`GET /_countersign/iam/usage`), the
refusals (`/_countersign/iam/denials`), and a sample of decided requests with their
outcomes (`/_countersign/iam/samples`), the differential oracle's table.
"""

from __future__ import annotations

import io
import json
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from . import template as tpl
from .policy import Decision, Policy, Statement, decide
from .registry import Registry
from .requests import Unreadable, checks_of


@dataclass(frozen=True)
class Principal:
    name: str  # the role's name in its template, or "operator"
    access_key_id: str
    session: str  # the Lambda function name, as the assumed-role ARN shows it
    template: str  # which template's role ("main", "bridge"), "" for the operator

    @property
    def arn(self) -> str:
        return tpl.role_arn(self.name)

    @property
    def caller(self) -> str:
        return f"arn:aws:sts::{tpl.ACCOUNT}:assumed-role/{self.name}/{self.session}"


OPERATOR_ROLE = "countersign-operator"

#: The principals and their access key ids: the same table as
#: `countersign_aws::sdk::Principal` (shared/aws/src/sdk.rs), checked by the tests.
PRINCIPALS = [
    Principal(OPERATOR_ROLE, "CSLOCALOPERATOR", "countersign-cli", ""),
    Principal("MessagesFunctionRole", "CSLOCALMESSAGES", "countersign-messages", "main"),
    Principal("MessagesStreamFunctionRole", "CSLOCALSTREAM", "countersign-stream", "main"),
    Principal("AdminFunctionRole", "CSLOCALADMIN", "countersign-admin", "main"),
    Principal("GatewayFunctionRole", "CSLOCALGATEWAY", "countersign-gateway", "main"),
    Principal("PurgeFunctionRole", "CSLOCALPURGE", "countersign-purge", "main"),
    Principal("BridgeFunctionRole", "CSLOCALBRIDGE", "countersign-bridge", "bridge"),
]

#: The operator administers the account: every action, as an administrator's policy.
OPERATOR_POLICY = Policy(
    "operator/AdministratorAccess",
    (Statement(source="operator/AdministratorAccess[0]", effect="Allow", actions=("*",), resources=("*",)),),
)

#: The local stack's template parameters: what a careful operator deploys with.
MAIN_PARAMETERS = {
    "Model": "openai",
    "ModelId": "local-model",
    "ModelBaseUrl": "http://127.0.0.1/v1",
    "ModelApiKeySecretArn": tpl.secret_arn(tpl.SECRET_PREFIX + "platform/model-api-key"),
    "SecretPrefix": tpl.SECRET_PREFIX,
    "KeyAdministratorArn": tpl.role_arn(OPERATOR_ROLE),
    "StepUpOrigin": "https://confirm.countersign.test",
}
BRIDGE_PARAMETERS = {
    "Issuer": "https://support.example.com/mcp-actions",
    "JwksUrl": "https://platform.example/.well-known/jwks.json",
    "Audience": "https://bridge.example/",
    "ServiceTokenSecretArn": tpl.secret_arn("@BridgeServiceToken"),
}

_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/[^/]+/([^/]+)/([^/]+)/")

# Calls after which the registry reads the bindings again.
_REBINDING = {
    "DynamoDB_20120810.TagResource",
    "DynamoDB_20120810.CreateTable",
    "DynamoDB_20120810.DeleteTable",
    "TrentService.CreateAlias",
    "TrentService.UpdateAlias",
    "TrentService.DeleteAlias",
    "TrentService.CreateKey",
}


class Evaluator:
    """The policies of every principal, and the decision for one call."""

    def __init__(self, roles: dict[str, list[Policy]], key_policies: dict[str, Policy]):
        self.roles = roles
        self.key_policies = key_policies
        self.registry = Registry(key_policies)
        self.by_key = {p.access_key_id: p for p in PRINCIPALS}
        self.lock = threading.Lock()
        self.usage: dict[str, int] = {}
        self.pattern_usage: dict[str, int] = {}
        self.denials: list[dict] = []
        self.samples: dict[str, dict] = {}
        self.partitions: dict[str, int] = {}  # "principal action partition shape" → calls
        self.seconds = 0.0
        self.calls = 0
        self._naming: dict[tuple[str, str], list[Policy]] = {}
        self.by_principal: dict[str, int] = {}  # calls per principal

    @staticmethod
    def from_templates(root: Path) -> "Evaluator":
        main = tpl.expand(root / "template.yaml", MAIN_PARAMETERS)
        bridge = tpl.expand(root / "bridge" / "template.yaml", BRIDGE_PARAMETERS)
        roles = dict(main.roles)
        roles.update(bridge.roles)
        keys = dict(main.key_policies)
        keys.update(bridge.key_policies)
        return Evaluator(roles, keys)

    def policies_of(self, principal: Principal) -> list[Policy]:
        if principal.name == OPERATOR_ROLE:
            return [OPERATOR_POLICY]
        return self.roles.get(principal.name, [])

    def naming(self, principal: Principal, action: str) -> list[Policy]:
        """`principal`'s identity statements that name `action` (the rest cannot apply):
        the same decision, without matching every statement on every call."""
        key = (principal.name, action)
        found = self._naming.get(key)
        if found is None:
            found = [
                Policy(p.name, tuple(s for s in p.statements if s.names_action(action)))
                for p in self.policies_of(principal)
            ]
            self._naming[key] = found
        return found

    def decide_checks(self, principal: Principal, checks) -> tuple[Decision | None, object]:
        """The first refused check's decision (None when every check is allowed)."""
        decisions = []
        for c in checks:
            d = decide(
                principal_arn=principal.arn,
                account=tpl.ACCOUNT,
                identity=self.naming(principal, c.action),
                resource_policy=c.key_policy if c.kms else None,
                requires_resource_policy=c.kms,
                action=c.action,
                resource=c.logical,
                context=c.context,
            )
            self._sample(principal, c, d)
            if not d.allowed:
                return d, c
            decisions.append(d)
        with self.lock:
            for c in checks:
                for k in c.context.get("dynamodb:LeadingKeys") or []:
                    w = f"{principal.name} {c.action} {partition_shape(k)}"
                    self.partitions[w] = self.partitions.get(w, 0) + 1
            for d in decisions:
                for source, used in d.used:
                    self.usage[source] = self.usage.get(source, 0) + 1
                    for key, value in used:
                        k = f"{source} {key} {value}"
                        self.pattern_usage[k] = self.pattern_usage.get(k, 0) + 1
        return None, None

    def _sample(self, principal: Principal, c, d: Decision) -> None:
        if principal.name == OPERATOR_ROLE:
            return
        # One sample per (principal, action, resource, leading key's prefix, outcome).
        keys = c.context.get("dynamodb:LeadingKeys") or []
        shape = ",".join(partition_shape(k) for k in keys)
        ident = f"{principal.name}|{c.action}|{c.logical}|{shape}|{d.allowed}"
        with self.lock:
            if ident in self.samples or len(self.samples) >= 2000:
                return
            self.samples[ident] = {
                "principal": principal.arn,
                "action": c.action,
                "resource": c.logical,
                "context": c.context,
                "kms": c.kms,
                "key_policy": _policy_json(c.key_policy) if c.kms else None,
                "identity": [_policy_json(p) for p in self.policies_of(principal)],
                "allowed": d.allowed,
            }


def partition_shape(key: str) -> str:
    """A partition key as the templates' patterns tell them apart: its prefix, and a
    tenant's index shard (`TENANT#<t>#<nn>`) apart from its own partition."""
    parts = key.split("#")
    if len(parts) == 1:
        return key
    return parts[0] + "#" + "#".join("*" for _ in parts[1:])


def _policy_json(policy: Policy | None) -> dict | None:
    if policy is None:
        return None
    out = []
    for s in policy.statements:
        raw = {"Effect": s.effect}
        if s.actions:
            raw["Action"] = list(s.actions)
        if s.not_actions:
            raw["NotAction"] = list(s.not_actions)
        if s.resources:
            raw["Resource"] = list(s.resources)
        if s.not_resources:
            raw["NotResource"] = list(s.not_resources)
        if s.principals is not None:
            raw["Principal"] = "*" if s.principals == ("*",) else {"AWS": list(s.principals)}
        if s.condition:
            raw["Condition"] = s.condition
        raw["Sid"] = re.sub(r"[^A-Za-z0-9]", "", s.source)
        out.append(raw)
    return {"Version": "2012-10-17", "Statement": out}


def _json_error(status: int, kind: str, message: str, start_response):
    body = json.dumps({"__type": kind, "message": message, "Message": message}).encode()
    start_response(
        f"{status} {'Bad Request' if status == 400 else 'Forbidden'}",
        [
            ("Content-Type", "application/x-amz-json-1.1"),
            ("x-amzn-ErrorType", kind),
            ("Content-Length", str(len(body))),
        ],
    )
    return [body]


class Enforcing:
    """The WSGI middleware."""

    def __init__(self, app, evaluator: Evaluator, log_path: Path | None = None):
        self.app = app
        self.evaluator = evaluator
        self.log_path = log_path
        record = os.environ.get("COUNTERSIGN_IAM_RECORD")
        self.record_path = Path(record) if record else None

    def _own(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        ev = self.evaluator
        with ev.lock:
            if path.endswith("/usage"):
                payload = {
                    "statements": ev.usage,
                    "patterns": ev.pattern_usage,
                    "partitions": ev.partitions,
                    "calls": ev.calls,
                    "by_principal": ev.by_principal,
                    "seconds": ev.seconds,
                }
            elif path.endswith("/denials"):
                payload = ev.denials
            elif path.endswith("/samples"):
                payload = list(ev.samples.values())
            elif path.endswith("/policies"):
                payload = {
                    "roles": {r: [_policy_json(p) for p in ps] for r, ps in ev.roles.items()},
                    "keys": {k: _policy_json(p) for k, p in ev.key_policies.items()},
                }
            else:
                payload = {"error": "unknown"}
        body = json.dumps(payload).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO", "").startswith("/_countersign/iam/"):
            return self._own(environ, start_response)
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        auth = environ.get("HTTP_AUTHORIZATION", "")
        m = _CREDENTIAL.search(auth)
        if not m:
            # Not a signed AWS call (moto's own /moto-api/, a health probe).
            return self.app(environ, start_response)
        access_key, region, service = m.group(1), m.group(2), m.group(3)
        principal = self.evaluator.by_key.get(access_key)
        if principal is None:
            return _json_error(
                400,
                "UnrecognizedClientException",
                "The security token included in the request is invalid.",
                start_response,
            )
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(raw)
        environ["CONTENT_LENGTH"] = str(len(raw))
        # The evaluator's own cost: from the body read (which moto does anyway) to the
        # decision.
        started = time.perf_counter()
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = None
        refusal = None
        if isinstance(body, dict) and target:
            try:
                checks = checks_of(target, body, self.evaluator.registry)
            except Unreadable:
                checks = []
            if checks is None:
                checks = [_unknown_service(service, target)]
        elif principal.name == OPERATOR_ROLE:
            checks = []
        else:
            checks = [_unknown_service(service, target or environ.get("PATH_INFO", ""))]
        decision, check = self.evaluator.decide_checks(principal, checks)
        if decision is not None:
            refusal = (
                f"User: {principal.caller} is not authorized to perform: {check.action} "
                f"on resource: {check.resource} {decision.reason}"
            )
        ev = self.evaluator
        elapsed = time.perf_counter() - started
        with ev.lock:
            ev.by_principal[principal.name] = ev.by_principal.get(principal.name, 0) + 1
            ev.calls += 1
            ev.seconds += elapsed
            if refusal:
                ev.denials.append(
                    {"principal": principal.name, "target": target, "message": refusal}
                )
        if self.record_path is not None and principal.name != OPERATOR_ROLE:
            # COUNTERSIGN_IAM_RECORD: every function's call, decided, to draw test tables
            # from real runs (the mutation test's recorded enrolment came from here).
            with self.record_path.open("a") as f:
                f.write(json.dumps({"principal": principal.name, "target": target, "allowed": not refusal, "body": body}) + "\n")
        if refusal:
            if self.log_path is not None:
                # The local emulator's own log: the body is kept so that a refused call
                # can be replayed (tests hold recorded ones, iam/fixtures/).
                with self.log_path.open("a") as f:
                    f.write(
                        json.dumps(
                            {
                                "principal": principal.name,
                                "target": target,
                                "message": refusal,
                                "body": body,
                            }
                        )
                        + "\n"
                    )
            return _json_error(400, "AccessDeniedException", refusal, start_response)
        try:
            return self.app(environ, start_response)
        finally:
            if target in _REBINDING:
                ev.registry.changed()


def _unknown_service(service: str, what: str):
    from .requests import Check

    op = what.rpartition(".")[2] or what
    return Check(f"{service}:{op}", "*", "*")


def install(app, root: Path):
    """`app` behind the evaluator, unless `COUNTERSIGN_IAM=off` (a local debugging aid;
    the test command never sets it)."""
    if os.environ.get("COUNTERSIGN_IAM", "enforce") == "off":
        return app
    evaluator = Evaluator.from_templates(root)
    log = os.environ.get("COUNTERSIGN_IAM_DENIALS")
    return Enforcing(app, evaluator, Path(log) if log else None)
