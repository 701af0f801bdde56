"""I-1: the policies come from the templates, never copied into code.

A SAM template is expanded with `aws-sam-translator` (the library `sam deploy` itself
uses), which gives each function its generated role (`<Function>Role`, its inline
policies). The intrinsic functions left in the output (`Ref`, `Fn::GetAtt`, `Fn::Sub`,
`Fn::If`, `Fn::Join`, `Fn::Select`) are resolved here for the local parameters.

Every resource the template creates resolves to a *logical* physical id (`@Table`,
`@SigningKey`, `@SecretPrefix/…`): a request's real table, key and secret are mapped into
that space by the registry (`requests.py`), so one expansion serves every test's own
stack.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path

from .policy import Policy

ACCOUNT = "123456789012"
REGION = "us-east-1"
PARTITION = "aws"
STACK = "countersign-local"

#: The placeholder every secret prefix of the local stack is read as.
SECRET_PREFIX = "@SecretPrefix/"
#: The fixed suffix Secrets Manager appends to a secret's name in its ARN, as resolved.
SECRET_SUFFIX = "-@sfx"


def role_arn(role: str) -> str:
    return f"arn:{PARTITION}:iam::{ACCOUNT}:role/{role}"


def table_arn(name: str) -> str:
    return f"arn:{PARTITION}:dynamodb:{REGION}:{ACCOUNT}:table/{name}"


def key_arn(key_id: str) -> str:
    return f"arn:{PARTITION}:kms:{REGION}:{ACCOUNT}:key/{key_id}"


def secret_arn(name: str) -> str:
    return f"arn:{PARTITION}:secretsmanager:{REGION}:{ACCOUNT}:secret:{name}{SECRET_SUFFIX}"


class _NoValue:
    pass


NO_VALUE = _NoValue()


@dataclass
class Expanded:
    """One template's roles (role name → inline policies) and key policies (logical id →
    policy), resolved."""

    roles: dict[str, list[Policy]]
    key_policies: dict[str, Policy]
    raw_roles: dict[str, list[dict]]
    raw_key_policies: dict[str, dict]


def _managed_policy_map() -> dict[str, str]:
    # The SAM translator asks IAM for AWS managed policies' ARNs; offline, the ones
    # SAM's function roles name (they grant logs and X-Ray only: nothing the local
    # stack serves).
    names = ["AWSLambdaBasicExecutionRole", "AWSXrayWriteOnlyAccess", "AWSXRayDaemonWriteAccess"]
    return {n: f"arn:aws:iam::aws:policy/service-role/{n}" for n in names}


def translate(path: Path, parameters: dict[str, str]) -> dict:
    """The CloudFormation template SAM deploys for `path`."""
    from samtranslator.translator.transform import transform
    from samtranslator.yaml_helper import yaml_parse

    class Loader:
        def load(self):
            return _managed_policy_map()

    import os

    # The translator reads the region from a boto3 session before the parameters.
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    sam = yaml_parse(path.read_text())
    # What `sam package` does before the transform: local code and layers become S3 URIs.
    for res in (sam.get("Resources") or {}).values():
        props = res.get("Properties") or {}
        for uri in ("CodeUri", "ContentUri"):
            if isinstance(props.get(uri), str) and not props[uri].startswith("s3://"):
                props[uri] = "s3://countersign-local/package.zip"
    values = dict(parameters)
    values.update({"AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::Partition": PARTITION, "AWS::StackName": STACK})
    return transform(sam, values, Loader())


class Resolver:
    def __init__(self, template: dict, parameters: dict[str, str]):
        self.template = template
        self.parameters = {}
        for name, spec in (template.get("Parameters") or {}).items():
            value = parameters.get(name, spec.get("Default"))
            self.parameters[name] = "" if value is None else str(value)
        self.pseudo = {
            "AWS::AccountId": ACCOUNT,
            "AWS::Region": REGION,
            "AWS::Partition": PARTITION,
            "AWS::StackName": STACK,
            "AWS::URLSuffix": "amazonaws.com",
        }
        self.resources = template.get("Resources") or {}
        self.conditions_raw = template.get("Conditions") or {}
        self.conditions: dict[str, bool] = {}

    # -- values of resources, as the policies see them
    def ref(self, name: str):
        if name == "AWS::NoValue":
            return NO_VALUE
        if name in self.pseudo:
            return self.pseudo[name]
        if name in self.parameters:
            return self.parameters[name]
        res = self.resources.get(name)
        if res is None:
            raise KeyError(f"Ref to unknown {name}")
        kind = res.get("Type")
        props = res.get("Properties") or {}
        if kind == "AWS::DynamoDB::Table":
            return f"@{name}"
        if kind == "AWS::KMS::Key":
            return f"@{name}"
        if kind == "AWS::KMS::Alias":
            return self.value(props.get("AliasName"))
        if kind == "AWS::SecretsManager::Secret":
            return secret_arn(self.value(props.get("Name")))
        if kind == "AWS::IAM::Role":
            return name
        return f"@{name}"

    def get_att(self, name: str, attribute: str):
        res = self.resources.get(name)
        if res is None:
            raise KeyError(f"GetAtt of unknown {name}")
        kind = res.get("Type")
        if attribute == "Arn":
            if kind == "AWS::DynamoDB::Table":
                return table_arn(f"@{name}")
            if kind == "AWS::KMS::Key":
                return key_arn(f"@{name}")
            if kind == "AWS::IAM::Role":
                return role_arn(name)
        return f"@{name}.{attribute}"

    def condition(self, name: str) -> bool:
        if name not in self.conditions:
            self.conditions[name] = bool(self.truth(self.conditions_raw[name]))
        return self.conditions[name]

    def truth(self, node) -> bool:
        if isinstance(node, dict) and len(node) == 1:
            (fn, arg), = node.items()
            if fn == "Fn::Equals":
                a, b = (self.value(x) for x in arg)
                return str(a) == str(b)
            if fn == "Fn::Not":
                return not self.truth(arg[0])
            if fn == "Fn::And":
                return all(self.truth(x) for x in arg)
            if fn == "Fn::Or":
                return any(self.truth(x) for x in arg)
            if fn == "Condition":
                return self.condition(arg)
        raise ValueError(f"not a condition: {node!r}")

    def value(self, node):
        if isinstance(node, list):
            out = [self.value(x) for x in node]
            return [x for x in out if x is not NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (fn, arg), = node.items()
            if fn == "Ref":
                return self.ref(arg)
            if fn == "Fn::GetAtt":
                name, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
                return self.get_att(name, attribute)
            if fn == "Fn::If":
                name, yes, no = arg
                return self.value(yes if self.condition(name) else no)
            if fn == "Fn::Sub":
                return self.sub(arg)
            if fn == "Fn::Join":
                sep, parts = arg
                return sep.join(str(p) for p in self.value(parts))
            if fn == "Fn::Select":
                index, items = arg
                return self.value(items)[int(self.value(index))]
            if fn == "Condition":
                return self.condition(arg)
        out = {}
        for k, v in node.items():
            resolved = self.value(v)
            if resolved is not NO_VALUE:
                out[k] = resolved
        return out

    def sub(self, arg) -> str:
        if isinstance(arg, list):
            text, names = arg
            names = {k: self.value(v) for k, v in names.items()}
        else:
            text, names = arg, {}
        out = []
        i = 0
        while i < len(text):
            start = text.find("${", i)
            if start < 0:
                out.append(text[i:])
                break
            out.append(text[i:start])
            end = text.index("}", start)
            name = text[start + 2 : end]
            if name.startswith("!"):
                out.append("${" + name[1:] + "}")
            elif name in names:
                out.append(str(names[name]))
            elif "." in name:
                res, attribute = name.split(".", 1)
                out.append(str(self.get_att(res, attribute)))
            else:
                out.append(str(self.ref(name)))
            i = end + 1
        return "".join(out)


def expand(path: Path, parameters: dict[str, str]) -> Expanded:
    cfn = translate(path, parameters)
    resolver = Resolver(cfn, parameters)
    roles: dict[str, list[Policy]] = {}
    raw_roles: dict[str, list[dict]] = {}
    key_policies: dict[str, Policy] = {}
    raw_keys: dict[str, dict] = {}
    for name, res in cfn["Resources"].items():
        if "Condition" in res and not resolver.condition(res["Condition"]):
            continue
        props = res.get("Properties") or {}
        if res["Type"] == "AWS::IAM::Role":
            docs = []
            for i, p in enumerate(props.get("Policies") or []):
                doc = resolver.value(copy.deepcopy(p["PolicyDocument"]))
                docs.append(doc)
            raw_roles[name] = docs
            roles[name] = [
                Policy.parse(f"{name}/{p.get('PolicyName', i)}", d)
                for i, (p, d) in enumerate(zip(props.get("Policies") or [], docs))
            ]
        elif res["Type"] == "AWS::KMS::Key":
            doc = resolver.value(copy.deepcopy(props["KeyPolicy"]))
            raw_keys[name] = doc
            key_policies[name] = Policy.parse(f"{name}/KeyPolicy", doc)
    return Expanded(roles, key_policies, raw_roles, raw_keys)


def dump(expanded: Expanded) -> str:
    return json.dumps(
        {"roles": expanded.raw_roles, "key_policies": expanded.raw_key_policies},
        indent=1,
        sort_keys=True,
    )
