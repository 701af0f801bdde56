"""I-1: the evaluator's rules, and the permanent mutation test, without an emulator.

Run: .venv/moto/bin/python -m unittest discover -s infra/local-aws -p 'test_evaluator.py'
"""

from __future__ import annotations

import copy
import json
import time
import unittest
from dataclasses import replace
from pathlib import Path

from iam import enforce
from iam import template as tpl
from iam.policy import Policy, conditions_hold, decide
from iam.requests import checks_of

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def policy(*statements) -> Policy:
    return Policy.parse("test", {"Statement": list(statements)})


class Conditions(unittest.TestCase):
    def test_for_all_values_over_an_empty_set_is_true_and_for_any_value_false(self):
        # The IAM reference, "Multivalued context keys": ForAllValues holds vacuously.
        cond_all = {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["CONV#*"]}}
        cond_any = {"ForAnyValue:StringLike": {"dynamodb:LeadingKeys": ["CONV#*"]}}
        self.assertTrue(conditions_hold(cond_all, {}))
        self.assertTrue(conditions_hold(cond_all, {"dynamodb:LeadingKeys": []}))
        self.assertFalse(conditions_hold(cond_any, {}))
        self.assertFalse(conditions_hold(cond_any, {"dynamodb:LeadingKeys": []}))

    def test_for_all_values_needs_every_value_to_match_one_pattern(self):
        cond = {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["CONV#*", "RATE#*"]}}
        self.assertTrue(conditions_hold(cond, {"dynamodb:LeadingKeys": ["CONV#a", "RATE#b"]}))
        self.assertFalse(conditions_hold(cond, {"dynamodb:LeadingKeys": ["CONV#a", "ADMINKEY#b"]}))

    def test_a_negated_operator_with_a_missing_key_holds_a_positive_one_does_not(self):
        self.assertTrue(conditions_hold({"StringNotEquals": {"kms:SigningAlgorithm": "X"}}, {}))
        self.assertFalse(conditions_hold({"StringEquals": {"kms:SigningAlgorithm": "X"}}, {}))
        self.assertTrue(conditions_hold({"StringEqualsIfExists": {"kms:SigningAlgorithm": "X"}}, {}))

    def test_null_tells_present_from_absent(self):
        cond = {"Null": {"kms:EncryptionContext:tenant": "false"}}
        self.assertTrue(conditions_hold(cond, {"kms:EncryptionContext:tenant": "ten_1"}))
        self.assertFalse(conditions_hold(cond, {}))

    def test_for_all_values_string_not_like(self):
        cond = {"ForAllValues:StringNotLike": {"dynamodb:LeadingKeys": ["TENANT#*#*"]}}
        self.assertTrue(conditions_hold(cond, {"dynamodb:LeadingKeys": ["TENANT#t"]}))
        self.assertFalse(conditions_hold(cond, {"dynamodb:LeadingKeys": ["TENANT#t#07"]}))

    def test_an_unknown_operator_is_refused_loudly(self):
        from iam.policy import UnsupportedCondition

        with self.assertRaises(UnsupportedCondition):
            conditions_hold({"DateLessThanX": {"aws:CurrentTime": "1"}}, {"aws:CurrentTime": "0"})


class Decisions(unittest.TestCase):
    arn = tpl.role_arn("R")

    def run_one(self, identity, action="dynamodb:PutItem", resource="arn:t", context=None, **kw):
        return decide(
            principal_arn=self.arn,
            account=tpl.ACCOUNT,
            identity=[identity],
            resource_policy=kw.get("resource_policy"),
            requires_resource_policy=kw.get("kms", False),
            action=action,
            resource=resource,
            context=context or {},
        )

    def test_an_explicit_deny_beats_any_allow(self):
        p = policy(
            {"Effect": "Allow", "Action": "dynamodb:*", "Resource": "*"},
            {"Effect": "Deny", "Action": "dynamodb:PutItem", "Resource": "arn:t"},
        )
        self.assertFalse(self.run_one(p).allowed)
        self.assertTrue(self.run_one(p, action="dynamodb:GetItem").allowed)

    def test_nothing_allows_is_an_implicit_deny(self):
        p = policy({"Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": "arn:t"})
        d = self.run_one(p)
        self.assertFalse(d.allowed)
        self.assertIn("no identity-based policy allows", d.reason)

    def test_actions_match_case_insensitively_with_wildcards_resources_exactly(self):
        p = policy({"Effect": "Allow", "Action": "DynamoDB:Put*", "Resource": "arn:t*"})
        self.assertTrue(self.run_one(p, resource="arn:table").allowed)
        self.assertFalse(self.run_one(p, resource="ARN:table").allowed)

    def test_kms_needs_the_key_policy(self):
        iam_allows = policy({"Effect": "Allow", "Action": "kms:*", "Resource": "*"})
        no_account = policy(
            {"Effect": "Allow", "Principal": {"AWS": tpl.role_arn("Other")}, "Action": "kms:Sign", "Resource": "*"}
        )
        delegates = policy(
            {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{tpl.ACCOUNT}:root"}, "Action": "kms:*", "Resource": "*"}
        )
        names_me = policy(
            {"Effect": "Allow", "Principal": {"AWS": self.arn}, "Action": "kms:Sign", "Resource": "*"}
        )
        nothing = policy({"Effect": "Allow", "Action": "s3:*", "Resource": "*"})
        kms = dict(action="kms:Sign", resource="arn:k", kms=True)
        # IAM alone is not enough where the key policy does not delegate to the account.
        self.assertFalse(self.run_one(iam_allows, resource_policy=no_account, **kms).allowed)
        # Delegated: IAM decides.
        self.assertTrue(self.run_one(iam_allows, resource_policy=delegates, **kms).allowed)
        self.assertFalse(self.run_one(nothing, resource_policy=delegates, **kms).allowed)
        # Named in the key policy: no IAM statement needed.
        self.assertTrue(self.run_one(nothing, resource_policy=names_me, **kms).allowed)


class StubRegistry:
    """The registry of one stack whose table is `cs-table` and prefix `cs/`."""

    def table(self, name):
        return "@Table" if name == "cs-table" else name

    def hash_key(self, name, index=None):
        return "pk"

    def key(self, ident):
        return ident, "@" + ident, self.key_policies[ident]

    def secret(self, ident):
        if ident.startswith("cs/"):
            return ident, tpl.secret_arn(tpl.SECRET_PREFIX + ident[3:])
        return ident, tpl.secret_arn(ident)


def evaluator() -> enforce.Evaluator:
    if not hasattr(evaluator, "cached"):
        evaluator.cached = enforce.Evaluator.from_templates(ROOT)
    return evaluator.cached


def principal(name: str) -> enforce.Principal:
    return next(p for p in enforce.PRINCIPALS if p.name == name)


def replay(ev: enforce.Evaluator, who: str, target: str, body: dict):
    registry = StubRegistry()
    registry.key_policies = ev.key_policies
    checks = checks_of(target, body, registry)
    decision, _ = ev.decide_checks(principal(who), checks)
    return decision


def without_pattern(ev: enforce.Evaluator, role: str, pattern: str) -> enforce.Evaluator:
    """`ev` with `pattern` taken out of every `dynamodb:LeadingKeys` list of `role`."""
    roles = dict(ev.roles)
    changed = []
    for p in roles[role]:
        statements = []
        for s in p.statements:
            condition = copy.deepcopy(s.condition)
            for block in condition.values():
                keys = block.get("dynamodb:LeadingKeys")
                if isinstance(keys, list) and pattern in keys:
                    block["dynamodb:LeadingKeys"] = [k for k in keys if k != pattern]
            statements.append(replace(s, condition=condition))
        changed.append(Policy(p.name, tuple(statements)))
    roles[role] = changed
    return enforce.Evaluator(roles, ev.key_policies)


class Mutation(unittest.TestCase):
    """I-1's permanent mutation test: the messages role without `PASSKEYHOLDERS#*`, as
    template.yaml had it until this evaluator found it, refuses a passkey enrolment
    recorded from a real run (the browser test's, through the dev server); with the
    template as it is, the same transaction is allowed."""

    def test_the_recorded_enrolment_needs_passkeyholders_in_the_messages_role(self):
        recorded = json.loads((FIXTURES / "passkey-enrolment.json").read_text())
        self.assertEqual(recorded["target"], "DynamoDB_20120810.TransactWriteItems")
        body = recorded["body"]
        for item in body["TransactItems"]:
            for op in item.values():
                op["TableName"] = "cs-table"
        keys = [
            list(op.get("Item", op.get("Key", {})).get("pk", {}).values())[0]
            for item in body["TransactItems"]
            for op in item.values()
        ]
        self.assertTrue(any(k.startswith("PASSKEYHOLDERS#") for k in keys), keys)
        ev = evaluator()
        self.assertIsNone(replay(ev, "MessagesFunctionRole", recorded["target"], body))
        mutated = without_pattern(ev, "MessagesFunctionRole", "PASSKEYHOLDERS#*")
        refused = replay(mutated, "MessagesFunctionRole", recorded["target"], body)
        self.assertIsNotNone(refused)
        self.assertIn("no identity-based policy allows the dynamodb:PutItem", refused.reason)


class Cost(unittest.TestCase):
    def test_the_evaluators_cost_per_request_is_reported(self):
        # Measured, not asserted (the handbook: no timed assertions); printed for the note.
        ev = evaluator()
        body = {
            "TransactItems": [
                {"Put": {"TableName": "cs-table", "Item": {"pk": {"S": f"CONV#t#{i}"}, "sk": {"S": "x"}}}}
                for i in range(4)
            ]
        }
        n = 2000
        started = time.perf_counter()
        for _ in range(n):
            replay(ev, "MessagesFunctionRole", "DynamoDB_20120810.TransactWriteItems", body)
        per = (time.perf_counter() - started) / n * 1000
        print(f"\nI-1 evaluator: {per:.3f} ms per 4-item TransactWriteItems")
        self.assertGreater(per, 0)


if __name__ == "__main__":
    unittest.main()
