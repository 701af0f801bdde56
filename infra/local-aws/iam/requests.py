"""I-1: a request as IAM sees it: which actions on which resources with which condition
keys, built from the AWS JSON protocol body the SDK sent.

A `TransactWriteItems` is authorised item by item (each Put/Update/Delete/ConditionCheck
as `PutItem`/`UpdateItem`/`DeleteItem`/`ConditionCheckItem`, with its own
`dynamodb:LeadingKeys`), a `BatchWriteItem` every item, a `Query` with its key
condition's partition; KMS calls carry `kms:SigningAlgorithm` and the encryption context;
Secrets Manager calls name the secret's ARN.

Each check carries two resources: the real ARN (named in the refusal, as AWS names it)
and the logical one the template's policies are written in (`registry.Registry`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import template as tpl


@dataclass
class Check:
    action: str
    resource: str  # the real ARN
    logical: str  # the same resource in the template's terms
    context: dict = field(default_factory=dict)
    key_policy: object = None  # a KMS key's policy (policy.Policy), when the service is KMS
    kms: bool = False


class Unreadable(ValueError):
    """A body the evaluator cannot read: the call goes on to the emulator, which answers
    its own validation error (nothing is written)."""


_KEY_EQ = re.compile(r"(#?[A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)")


def _scalar(attr) -> str | None:
    if not isinstance(attr, dict) or len(attr) != 1:
        return None
    (kind, value), = attr.items()
    if kind in ("S", "N", "B"):
        return str(value)
    return None


def _query_partition(body: dict, hash_attr: str) -> list[str]:
    names = body.get("ExpressionAttributeNames") or {}
    values = body.get("ExpressionAttributeValues") or {}
    expression = body.get("KeyConditionExpression")
    if expression:
        for name, placeholder in _KEY_EQ.findall(expression):
            if names.get(name, name) == hash_attr:
                v = _scalar(values.get(placeholder))
                return [v] if v is not None else []
        return []
    legacy = (body.get("KeyConditions") or {}).get(hash_attr) or {}
    return [v for v in (_scalar(a) for a in legacy.get("AttributeValueList") or []) if v]


def dynamodb(op: str, body: dict, registry) -> list[Check]:
    def table_check(action: str, table: str, keys: list[str] | None, index: str | None = None):
        arn = tpl.table_arn(table)
        logical = tpl.table_arn(registry.table(table))
        if index:
            arn += f"/index/{index}"
            logical += f"/index/{index}"
        context = {}
        if keys is not None:
            context["dynamodb:LeadingKeys"] = keys
        return Check(f"dynamodb:{action}", arn, logical, context)

    def pk_of(table: str, attrs) -> list[str]:
        v = _scalar((attrs or {}).get(registry.hash_key(table)))
        return [v] if v is not None else []

    if op in ("GetItem", "PutItem", "UpdateItem", "DeleteItem"):
        table = body.get("TableName") or ""
        attrs = body.get("Item") if op == "PutItem" else body.get("Key")
        return [table_check(op, table, pk_of(table, attrs))]
    if op == "Query":
        table = body.get("TableName") or ""
        keys = _query_partition(body, registry.hash_key(table, body.get("IndexName")))
        return [table_check("Query", table, keys, body.get("IndexName"))]
    if op == "Scan":
        table = body.get("TableName") or ""
        return [table_check("Scan", table, None, body.get("IndexName"))]
    if op in ("TransactWriteItems", "TransactGetItems"):
        kinds = {
            "Put": "PutItem",
            "Update": "UpdateItem",
            "Delete": "DeleteItem",
            "ConditionCheck": "ConditionCheckItem",
            "Get": "GetItem",
        }
        checks = []
        for entry in body.get("TransactItems") or []:
            if not isinstance(entry, dict) or len(entry) != 1:
                raise Unreadable("a transaction item names one operation")
            (kind, item), = entry.items()
            if kind not in kinds or not isinstance(item, dict):
                raise Unreadable(f"unknown transaction operation {kind}")
            table = item.get("TableName") or ""
            attrs = item.get("Item") if kind == "Put" else item.get("Key")
            checks.append(table_check(kinds[kind], table, pk_of(table, attrs)))
        return checks
    if op == "BatchWriteItem":
        checks = []
        for table, writes in (body.get("RequestItems") or {}).items():
            for w in writes or []:
                attrs = (w.get("PutRequest") or {}).get("Item") or (
                    w.get("DeleteRequest") or {}
                ).get("Key")
                checks.append(table_check("BatchWriteItem", table, pk_of(table, attrs)))
        return checks
    if op == "BatchGetItem":
        checks = []
        for table, spec in (body.get("RequestItems") or {}).items():
            for k in (spec or {}).get("Keys") or []:
                checks.append(table_check("BatchGetItem", table, pk_of(table, k)))
        return checks
    if op in ("ListTables",):
        return [Check(f"dynamodb:{op}", "*", "*")]
    if op in ("TagResource", "UntagResource", "ListTagsOfResource"):
        arn = body.get("ResourceArn") or ""
        table = arn.split(":table/", 1)[-1]
        return [table_check(op, table, None)]
    # Table operations (CreateTable, DescribeTable, UpdateTimeToLive, …).
    return [table_check(op, body.get("TableName") or "", None)]


def kms(op: str, body: dict, registry) -> list[Check]:
    context: dict = {}
    if "SigningAlgorithm" in body:
        context["kms:SigningAlgorithm"] = body["SigningAlgorithm"]
    if "EncryptionAlgorithm" in body:
        context["kms:EncryptionAlgorithm"] = body["EncryptionAlgorithm"]
    ec = body.get("EncryptionContext")
    if isinstance(ec, dict):
        for k, v in ec.items():
            context[f"kms:EncryptionContext:{k}"] = str(v)
        context["kms:EncryptionContextKeys"] = list(ec.keys())
    context["kms:CallerAccount"] = tpl.ACCOUNT
    # Calls on no key (a `ListAliases` of one key is on that key).
    keyless = op in ("CreateKey", "ListKeys", "ListAliases", "GenerateRandom")
    if keyless and not (op == "ListAliases" and body.get("KeyId")):
        return [Check(f"kms:{op}", "*", "*", context)]
    key = body.get("TargetKeyId") if op in ("CreateAlias", "UpdateAlias") else None
    key = key or body.get("KeyId") or body.get("AliasName") or ""
    real_id, logical_id, key_policy = registry.key(key)
    if key_policy is None:
        return []
    return [
        Check(
            f"kms:{op}",
            tpl.key_arn(real_id),
            tpl.key_arn(logical_id),
            context,
            key_policy=key_policy,
            kms=True,
        )
    ]


def secretsmanager(op: str, body: dict, registry) -> list[Check]:
    if op in ("ListSecrets", "GetRandomPassword", "BatchGetSecretValue"):
        return [Check(f"secretsmanager:{op}", "*", "*")]
    ident = body.get("SecretId") or body.get("Name") or ""
    real_arn, logical_arn = registry.secret(ident)
    return [Check(f"secretsmanager:{op}", real_arn, logical_arn)]


SERVICES = {
    "DynamoDB_20120810": ("dynamodb", dynamodb),
    "TrentService": ("kms", kms),
    "secretsmanager": ("secretsmanager", secretsmanager),
}


def checks_of(target: str, body: dict, registry) -> list[Check] | None:
    """The checks for one call (`X-Amz-Target` and its JSON body); None for a service
    the evaluator does not know (decided on the action alone)."""
    prefix, _, op = target.partition(".")
    service = SERVICES.get(prefix)
    if service is None:
        return None
    return service[1](op, body, registry)
