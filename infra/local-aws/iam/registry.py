"""I-1: which real table, key and secret of the emulator is which resource of a template.

`bootstrap` (shared/aws/src/bootstrap.rs) tags each table it creates with the logical id
it stands for and the stack's other names: `countersign:logical-id` (`Table`),
`countersign:signing-key`, `countersign:checkpoint-key`, `countersign:subject-key` (the
aliases) and `countersign:secret-prefix`. The registry reads those tags from moto's own
backends, in process, so every test's stack is bound to the template's resources without
a file any process must agree on.

A key once behind a registered alias stays bound to its logical key (a rotated-out key
still verifies and, for the rings, still signs what it signed). Anything not registered
keeps its real name, which no function's statement names: a function's call to it is
refused, as it would be on AWS.
"""

from __future__ import annotations

import json
import threading

from . import template as tpl
from .policy import Policy

TAG_LOGICAL = "countersign:logical-id"
TAG_KEYS = {
    "countersign:signing-key": "SigningKey",
    "countersign:checkpoint-key": "CheckpointKey",
    "countersign:subject-key": "SubjectKey",
}
TAG_PREFIX = "countersign:secret-prefix"
TAG_SECRET = "countersign:secret"


class Registry:
    def __init__(self, key_policies: dict[str, Policy], account=tpl.ACCOUNT, region=tpl.REGION):
        self.key_policies = key_policies
        self.account = account
        self.region = region
        self._lock = threading.Lock()
        self._generation = -1
        self.generation = 0
        self._tables: dict[str, str] = {}
        self._aliases: dict[str, str] = {}
        self._key_ids: dict[str, str] = {}  # sticky: key id → logical key
        self._prefixes: list[str] = []
        self._secrets: dict[str, str] = {}  # secret name → logical secret name

    # moto's backends, read in process.
    def _dynamodb(self):
        from moto.dynamodb.models import dynamodb_backends

        return dynamodb_backends[self.account][self.region]

    def _kms(self):
        from moto.kms.models import kms_backends

        return kms_backends[self.account][self.region]

    def _secrets_backend(self):
        from moto.secretsmanager.models import secretsmanager_backends

        return secretsmanager_backends[self.account][self.region]

    def changed(self) -> None:
        """A call that can change bindings (tags, aliases) went through."""
        self.generation += 1

    def _refresh(self) -> None:
        if self._generation == self.generation:
            return
        self._generation = self.generation
        tables, aliases, prefixes, secrets = {}, {}, [], {}
        for name, table in list(self._dynamodb().tables.items()):
            tags = {t.get("Key"): t.get("Value") for t in (table.tags or [])}
            logical = tags.get(TAG_LOGICAL)
            if not logical:
                continue
            tables[name] = logical
            for tag, key in TAG_KEYS.items():
                if tags.get(tag):
                    aliases[tags[tag]] = key
            if tags.get(TAG_PREFIX):
                prefixes.append(tags[TAG_PREFIX])
            if tags.get(TAG_SECRET):
                # `logical=name`: a named secret (the bridge's service token).
                logical_secret, _, real = tags[TAG_SECRET].partition("=")
                secrets[real] = logical_secret
        self._tables, self._aliases, self._secrets = tables, aliases, secrets
        # Longest first: a prefix that extends another binds its own secrets.
        self._prefixes = sorted(set(prefixes), key=len, reverse=True)
        kms = self._kms()
        for key in list(kms.keys.values()):
            for alias in list(getattr(key, "aliases", {}) or {}):
                if alias in aliases:
                    self._key_ids[key.id] = aliases[alias]

    # -- DynamoDB
    def table(self, name: str) -> str:
        with self._lock:
            self._refresh()
            logical = self._tables.get(name)
        return f"@{logical}" if logical else name

    def hash_key(self, name: str, index: str | None = None) -> str:
        table = self._dynamodb().tables.get(name)
        if table is None:
            return "pk"
        if index:
            for idx in list(getattr(table, "global_indexes", [])) + list(
                getattr(table, "indexes", [])
            ):
                if getattr(idx, "name", None) == index:
                    for k in idx.schema:
                        if k.get("KeyType") == "HASH":
                            return k["AttributeName"]
        return table.hash_key_attr

    # -- KMS
    def key(self, ident: str) -> tuple[str, str, Policy | None]:
        """(real key id, logical key id, the key's policy; None when no such key)."""
        kms = self._kms()
        try:
            real = kms.any_id_to_key_id(ident)
        except Exception:  # noqa: BLE001 - an alias that names nothing
            real = None
        if not real or real not in kms.keys:
            # A key that does not exist: KMS answers NotFoundException before any
            # authorisation (the emulator answers it the same).
            return (ident or "unknown", ident or "unknown", None)
        with self._lock:
            self._refresh()
            logical = self._key_ids.get(real)
        if logical and logical in self.key_policies:
            return real, f"@{logical}", self.key_policies[logical]
        stored = getattr(kms.keys[real], "policy", None)
        try:
            policy = Policy.parse(f"key {real}", json.loads(stored)) if stored else None
        except (ValueError, KeyError):
            policy = None
        return real, real, policy or Policy("none", ())

    # -- Secrets Manager
    def secret(self, ident: str) -> tuple[str, str]:
        """(real ARN, logical ARN)."""
        backend = self._secrets_backend()
        found = backend.secrets.get(ident) if ident else None
        if found is not None:
            name, real = found.name, found.arn
        else:
            name = ident.split(":secret:", 1)[-1] if ident.startswith("arn:") else ident
            real = tpl.secret_arn(name).replace(tpl.SECRET_SUFFIX, "-??????")
        with self._lock:
            self._refresh()
            named = self._secrets.get(name)
            prefixes = self._prefixes
        if named:
            return real, named
        for p in prefixes:
            if name.startswith(p):
                return real, tpl.secret_arn(tpl.SECRET_PREFIX + name[len(p) :])
        return real, tpl.secret_arn(name)
