"""I-1: IAM's policy evaluation, as AWS documents it, for one account.

`decide` takes what AWS takes: the principal's identity policies, the resource's policy
(a KMS key policy; none for DynamoDB and Secrets Manager here), the action, the resource
ARN and the request's condition keys. The order is AWS's: an explicit `Deny` in any
policy refuses; else an `Allow` grants; else the request is implicitly denied. A KMS key
policy is required: IAM policies count only where the key policy allows the account
(`arn:aws:iam::<account>:root`) to decide through IAM.

Conditions: the operators the templates use and their relatives (`String*`, `Arn*`,
`Bool`, `Null`, `Numeric*`), the `ForAllValues:` / `ForAnyValue:` set qualifiers and the
`IfExists` suffix. Semantics from the IAM reference ("Condition operators", "Multivalued
context keys"): values of one key are ORed (NORed for a negated operator), keys and
operators are ANDed; a missing key fails a positive operator and passes a negated one;
`ForAllValues` over an empty set is true, `ForAnyValue` over one is false.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field


@functools.lru_cache(maxsize=4096)
def _wildcard(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    out = []
    for ch in pattern:
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        else:
            out.append(re.escape(ch))
    return re.compile("".join(out), re.DOTALL | (re.IGNORECASE if ignore_case else 0))


def like(pattern: str, value: str, ignore_case: bool = False) -> bool:
    """IAM's wildcard match: `*` any run of characters, `?` one."""
    if "*" not in pattern and "?" not in pattern:
        return pattern.lower() == value.lower() if ignore_case else pattern == value
    return _wildcard(pattern, ignore_case).fullmatch(value) is not None


def as_list(value) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


@dataclass(frozen=True)
class Statement:
    """One statement, with where it came from (`source`: policy name and index), so that
    a run can tell which statements it used (the over-privilege report)."""

    source: str
    effect: str
    actions: tuple[str, ...] = ()
    not_actions: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    not_resources: tuple[str, ...] = ()
    principals: tuple[str, ...] | None = None  # resource policies only; "*" for anyone
    condition: dict = field(default_factory=dict, hash=False, compare=False)

    @staticmethod
    def parse(source: str, raw: dict) -> "Statement":
        principal = raw.get("Principal")
        principals = None
        if principal is not None:
            if principal == "*":
                principals = ("*",)
            else:
                principals = tuple(str(p) for p in as_list(principal.get("AWS")))
        return Statement(
            source=source,
            effect=raw["Effect"],
            actions=tuple(as_list(raw.get("Action"))),
            not_actions=tuple(as_list(raw.get("NotAction"))),
            resources=tuple(as_list(raw.get("Resource"))),
            not_resources=tuple(as_list(raw.get("NotResource"))),
            principals=principals,
            condition=raw.get("Condition") or {},
        )

    def names_action(self, action: str) -> bool:
        if self.not_actions:
            return not any(like(a, action, True) for a in self.not_actions)
        return any(like(a, action, True) for a in self.actions)

    def names_resource(self, resource: str) -> bool:
        if self.not_resources:
            return not any(like(r, resource) for r in self.not_resources)
        return any(like(r, resource) for r in self.resources)

    def names_principal(self, principal_arn: str, account: str) -> bool:
        if self.principals is None:
            return True
        for p in self.principals:
            if p == "*" or p == principal_arn:
                return True
        return False

    def grants_account(self, account: str) -> bool:
        """A key policy statement naming the account itself (AWS: "allows IAM policies")."""
        return self.principals is not None and any(
            p in (f"arn:aws:iam::{account}:root", account) for p in self.principals
        )


@dataclass(frozen=True)
class Policy:
    name: str
    statements: tuple[Statement, ...]

    @staticmethod
    def parse(name: str, document: dict) -> "Policy":
        return Policy(
            name,
            tuple(
                Statement.parse(f"{name}[{i}]", s)
                for i, s in enumerate(as_list(document.get("Statement")))
            ),
        )


# ---- conditions -------------------------------------------------------------------------


def _string_eq(p: str, v: str) -> bool:
    return p == v


def _string_eq_ic(p: str, v: str) -> bool:
    return p.lower() == v.lower()


def _string_like(p: str, v: str) -> bool:
    return like(p, v)


def _numeric(op):
    def compare(p: str, v: str) -> bool:
        try:
            return op(float(v), float(p))
        except ValueError:
            return False

    return compare


def _bool(p: str, v: str) -> bool:
    return str(p).lower() == str(v).lower()


# operator → (matches one policy value against one request value, negated)
_OPERATORS = {
    "StringEquals": (_string_eq, False),
    "StringNotEquals": (_string_eq, True),
    "StringEqualsIgnoreCase": (_string_eq_ic, False),
    "StringNotEqualsIgnoreCase": (_string_eq_ic, True),
    "StringLike": (_string_like, False),
    "StringNotLike": (_string_like, True),
    "ArnEquals": (_string_like, False),
    "ArnLike": (_string_like, False),
    "ArnNotEquals": (_string_like, True),
    "ArnNotLike": (_string_like, True),
    "NumericEquals": (_numeric(lambda a, b: a == b), False),
    "NumericNotEquals": (_numeric(lambda a, b: a == b), True),
    "NumericLessThan": (_numeric(lambda a, b: a < b), False),
    "NumericLessThanEquals": (_numeric(lambda a, b: a <= b), False),
    "NumericGreaterThan": (_numeric(lambda a, b: a > b), False),
    "NumericGreaterThanEquals": (_numeric(lambda a, b: a >= b), False),
    "Bool": (_bool, False),
}


class UnsupportedCondition(ValueError):
    """A condition operator this evaluator does not know: refused loudly, never guessed."""


def _lookup(context: dict, key: str):
    # Condition keys are case-insensitive; their values are not.
    for k, v in context.items():
        if k.lower() == key.lower():
            return v
    return None


def _one_operator(operator: str, block: dict, context: dict, used: list | None) -> bool:
    qualifier = None
    name = operator
    if ":" in name:
        qualifier, name = name.split(":", 1)
        if qualifier not in ("ForAllValues", "ForAnyValue"):
            raise UnsupportedCondition(operator)
    if_exists = name.endswith("IfExists")
    if if_exists:
        name = name[: -len("IfExists")]
    for key, policy_values in block.items():
        policy_values = [str(v) for v in as_list(policy_values)]
        present = _lookup(context, key)
        if name == "Null":
            want_absent = policy_values[0].lower() == "true"
            absent = present is None or present == []
            if absent != want_absent:
                return False
            continue
        if name not in _OPERATORS:
            raise UnsupportedCondition(operator)
        match, negated = _OPERATORS[name]
        if qualifier is None:
            if present is None:
                if if_exists or negated:
                    continue
                return False
            values = as_list(present)
            value = str(values[0]) if len(values) == 1 else None
            if value is None:
                # A multivalued key under a single-valued operator: AWS compares nothing.
                return negated
            hit = next((p for p in policy_values if match(p, value)), None)
            if negated:
                if hit is not None:
                    return False
            elif hit is None:
                return False
            elif used is not None:
                used.append((key, hit))
            continue
        values = [str(v) for v in as_list(present)]

        def one_ok(v: str) -> tuple[bool, str | None]:
            hit = next((p for p in policy_values if match(p, v)), None)
            return (hit is None, None) if negated else (hit is not None, hit)

        results = [one_ok(v) for v in values]
        if qualifier == "ForAllValues":
            ok = all(r for r, _ in results)
        else:
            ok = any(r for r, _ in results)
        if not ok:
            return False
        if used is not None:
            used.extend((key, h) for r, h in results if r and h is not None)
    return True


def conditions_hold(condition: dict, context: dict, used: list | None = None) -> bool:
    """Every operator of `condition` holds in `context`; the (key, policy value) pairs
    that matched are appended to `used`."""
    mine: list = []
    for operator, block in condition.items():
        if not _one_operator(operator, block, context, mine):
            return False
    if used is not None:
        used.extend(mine)
    return True


# ---- decisions --------------------------------------------------------------------------


@dataclass
class Decision:
    allowed: bool
    reason: str  # "explicit deny in …", "no identity-based policy allows …", …
    used: list = field(default_factory=list)  # (statement source, [(key, value)…])


def _applies(s: Statement, action, resource, context, principal_arn, account, used) -> bool:
    return (
        s.names_action(action)
        and s.names_resource(resource)
        and s.names_principal(principal_arn, account)
        and conditions_hold(s.condition, context, used)
    )


def decide(
    *,
    principal_arn: str,
    account: str,
    identity: list[Policy],
    resource_policy: Policy | None,
    requires_resource_policy: bool,
    action: str,
    resource: str,
    context: dict,
) -> Decision:
    """One request, decided as AWS decides it within one account."""
    everything = [s for p in identity for s in p.statements]
    resource_statements = list(resource_policy.statements) if resource_policy else []
    for s in everything + resource_statements:
        if s.effect == "Deny" and _applies(
            s, action, resource, context, principal_arn, account, None
        ):
            kind = "identity-based" if s in everything else "resource-based"
            return Decision(False, f"with an explicit deny in a {kind} policy ({s.source})")
    identity_allows = []
    for s in everything:
        used: list = []
        if s.effect == "Allow" and _applies(
            s, action, resource, context, principal_arn, account, used
        ):
            identity_allows.append((s.source, used))
    resource_direct = []
    resource_delegates = False
    for s in resource_statements:
        if s.effect != "Allow":
            continue
        used = []
        if not (
            s.names_action(action)
            and s.names_resource(resource)
            and conditions_hold(s.condition, context, used)
        ):
            continue
        if s.grants_account(account):
            resource_delegates = True
            resource_direct_source = (s.source, used)
        if s.principals and any(p == principal_arn or p == "*" for p in s.principals):
            resource_direct.append((s.source, used))
    if requires_resource_policy:
        # KMS: the key policy must allow the principal itself, or allow the account and
        # an IAM policy allow the principal.
        if resource_direct:
            return Decision(True, "allowed by the key policy", resource_direct)
        if resource_delegates and identity_allows:
            return Decision(
                True, "allowed by IAM under the key policy", identity_allows + [resource_direct_source]
            )
        if not resource_delegates:
            return Decision(False, "because no resource-based policy allows the " + action + " action")
        return Decision(False, "because no identity-based policy allows the " + action + " action")
    if identity_allows or resource_direct:
        return Decision(True, "allowed", identity_allows + resource_direct)
    return Decision(False, "because no identity-based policy allows the " + action + " action")
