"""I-1: the negative table, per function, against the running emulator: each partition,
key and secret outside a function's job is refused with AWS's `AccessDeniedException`,
and each one inside it is allowed (so the table can fail both ways).

The jobs below are written from what each function does (its use cases), not read from
the template: the template is what is under test. The partitions are the adapter's own
list (`shared/aws/src/dynamo/partitions.rs`).

Run inside infra/scripts/with-local-aws.sh:
    .venv/moto/bin/python -m unittest iam.test_roles     (from infra/local-aws)
"""

from __future__ import annotations

import os
import re
import unittest
import uuid
from pathlib import Path

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

ROOT = Path(__file__).resolve().parents[3]

#: Principals' access key ids (countersign_aws::sdk::Principal).
KEYS = {
    "operator": "CSLOCALOPERATOR",
    "messages": "CSLOCALMESSAGES",
    "stream": "CSLOCALSTREAM",
    "admin": "CSLOCALADMIN",
    "gateway": "CSLOCALGATEWAY",
    "purge": "CSLOCALPURGE",
}
FUNCTIONS = [k for k in KEYS if k != "operator"]

SHARD = "TENANT#*#*"


def partitions() -> list[str]:
    text = (ROOT / "shared/aws/src/dynamo/partitions.rs").read_text()
    listed = re.findall(r'^\s*\(\s*"([A-Z#]+)",', text, re.M)
    assert len(listed) >= 20, listed
    return listed + [SHARD]


#: Each function's writes (PutItem/UpdateItem/DeleteItem), by partition.
WRITES = {
    # The widget API, the confirmation page (its sessions, passkeys), the certification
    # and the checkpoints it serves (decision 0026: a tenant's own partition, leases).
    "messages": {
        "CONV#", "TENANT#", SHARD, "ACTION#", "CONFIRMLINK#", "REQUESTSTATE#",
        "PAGESESSION#", "RATE#", "SUBJECT#", "SUBJECTKEY#", "PERSON#", "PASSKEYHOLDERS#",
        "LEASE#",
    },
    # The streamed post alone: never a tenant's own partition, a lease or an index.
    "stream": {
        "CONV#", SHARD, "ACTION#", "CONFIRMLINK#", "RATE#", "SUBJECT#", "SUBJECTKEY#",
    },
    # The gateway prepares actions for MCP clients (Put/Update only).
    "gateway": {
        "CONV#", SHARD, "ACTION#", "CONFIRMLINK#", "REQUESTSTATE#", "MCPCLIENT#", "RATE#",
        "SUBJECT#", "SUBJECTKEY#",
    },
    # The admin API and panel: settings, MCP, widget keys, holds and the tenant's audit
    # (its partition), settling and the cancellation sweep (a conversation, its shard
    # entries), people's keys while sealing, a passkey's revocation, panel sessions, the
    # verification's leases, erasure jobs and their queue. Never an admin key or the
    # registry: the operator CLI's.
    "admin": {
        "TENANT#", SHARD, "CONV#", "SUBJECT#", "SUBJECTKEY#", "PERSON#", "PASSKEYHOLDERS#",
        "PANELSESSION#", "LEASE#", "ERASUREJOB#", "JOBQUEUE#",
    },
    # The purge and the erasure worker: a conversation and what it points at, the
    # tenant's cursor and erasure records, a person's keys, index and passkeys, the
    # jobs, the backfill's state.
    "purge": {
        "CONV#", "TENANT#", SHARD, "AUDITHEAD#", "ACTION#", "CONFIRMLINK#", "SUBJECT#",
        "SUBJECTKEY#", "PERSON#", "PASSKEYHOLDERS#", "ERASUREJOB#", "JOBQUEUE#", "BACKFILL#",
    },
}


def client(service: str, who: str):
    return boto3.client(
        service,
        endpoint_url=os.environ["AWS_ENDPOINT_URL"],
        region_name="us-east-1",
        aws_access_key_id=KEYS[who],
        aws_secret_access_key="countersign-local",
        config=Config(retries={"max_attempts": 1}),
    )


def code(call) -> str:
    try:
        call()
    except ClientError as e:
        return e.response["Error"]["Code"]
    return "OK"


class Stack:
    """One stack as bootstrap makes it: a table tagged with its keys and prefix."""

    def __init__(self):
        self.suffix = uuid.uuid4().hex[:12]
        self.table = f"cs-neg-{self.suffix}"
        self.prefix = f"cs-neg-{self.suffix}/"
        ddb = client("dynamodb", "operator")
        kms = client("kms", "operator")
        sm = client("secretsmanager", "operator")
        arn = ddb.create_table(
            TableName=self.table,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in ("pk", "sk")],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        )["TableDescription"]["TableArn"]
        self.aliases = {}
        for logical, spec, usage in [
            ("signing", "RSA_2048", "SIGN_VERIFY"),
            ("checkpoint", "RSA_2048", "SIGN_VERIFY"),
            ("subject", "SYMMETRIC_DEFAULT", "ENCRYPT_DECRYPT"),
        ]:
            key = kms.create_key(KeySpec=spec, KeyUsage=usage)["KeyMetadata"]["KeyId"]
            alias = f"alias/cs-neg-{logical}-{self.suffix}"
            kms.create_alias(AliasName=alias, TargetKeyId=key)
            self.aliases[logical] = alias
        # An unregistered key (the account's default policy), and an unregistered table.
        self.stray_key = kms.create_key(KeySpec="RSA_2048", KeyUsage="SIGN_VERIFY")["KeyMetadata"]["KeyId"]
        self.stray_table = f"cs-neg-stray-{self.suffix}"
        ddb.create_table(
            TableName=self.stray_table,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        )
        ddb.tag_resource(
            ResourceArn=arn,
            Tags=[
                {"Key": "countersign:logical-id", "Value": "Table"},
                {"Key": "countersign:secret-prefix", "Value": self.prefix},
                {"Key": "countersign:signing-key", "Value": self.aliases["signing"]},
                {"Key": "countersign:checkpoint-key", "Value": self.aliases["checkpoint"]},
                {"Key": "countersign:subject-key", "Value": self.aliases["subject"]},
            ],
        )
        self.secrets = {
            "widget": f"{self.prefix}tenants/ten_1/widget/wk_1",
            "service-token": f"{self.prefix}tenants/ten_1/mcp-service-token",
            "gateway-token-key": f"{self.prefix}platform/gateway-token-key",
            "model-api-key": f"{self.prefix}platform/model-api-key",
            "another prefix's widget": f"cs-other-{self.suffix}/tenants/ten_1/widget/wk_1",
        }
        for name in self.secrets.values():
            sm.create_secret(Name=name, SecretString="s3cret")


class NegativeTable(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stack = Stack()

    def put(self, who: str, pk: str, table: str | None = None):
        return code(
            lambda: client("dynamodb", who).put_item(
                TableName=table or self.stack.table, Item={"pk": {"S": pk}, "sk": {"S": "x"}}
            )
        )

    def test_each_partition_outside_a_functions_job_is_refused(self):
        for who, job in WRITES.items():
            for prefix in partitions():
                pk = prefix.replace("*", "x") if prefix == SHARD else prefix + ("x" if prefix.endswith("#") else "")
                with self.subTest(function=who, partition=prefix):
                    want = "OK" if prefix in job else "AccessDeniedException"
                    self.assertEqual(self.put(who, pk), want)

    def test_no_function_writes_the_key_ring_or_another_table(self):
        for who in FUNCTIONS:
            with self.subTest(function=who):
                self.assertEqual(self.put(who, "PLATFORM"), "AccessDeniedException")
                self.assertEqual(self.put(who, "CONV#x", self.stack.stray_table), "AccessDeniedException")
                read = code(
                    lambda: client("dynamodb", who).get_item(
                        TableName=self.stack.stray_table, Key={"pk": {"S": "CONV#x"}}
                    )
                )
                self.assertEqual(read, "AccessDeniedException")
        self.assertEqual(self.put("operator", "PLATFORM"), "OK")

    def test_only_the_purge_function_scans(self):
        # N-3: the erasure worker's person-index backfill pages through the table (found
        # refused by I-1: the purge role had no dynamodb:Scan, and no erasure finished).
        for who in FUNCTIONS:
            with self.subTest(function=who):
                got = code(lambda: client("dynamodb", who).scan(TableName=self.stack.table, Limit=1))
                self.assertEqual(got, "OK" if who == "purge" else "AccessDeniedException")

    def test_a_transaction_with_one_refused_item_is_refused_whole(self):
        items = [
            {"Put": {"TableName": self.stack.table, "Item": {"pk": {"S": "CONV#tx"}, "sk": {"S": "1"}}}},
            {"Put": {"TableName": self.stack.table, "Item": {"pk": {"S": "ADMINKEY#tx"}, "sk": {"S": "1"}}}},
        ]
        ddb = client("dynamodb", "messages")
        self.assertEqual(code(lambda: ddb.transact_write_items(TransactItems=items)), "AccessDeniedException")
        got = client("dynamodb", "operator").get_item(
            TableName=self.stack.table, Key={"pk": {"S": "CONV#tx"}, "sk": {"S": "1"}}
        )
        self.assertNotIn("Item", got, "nothing of a refused transaction is written")
        self.assertEqual(code(lambda: ddb.transact_write_items(TransactItems=items[:1])), "OK")

    def sign(self, who: str, key: str, algorithm: str = "RSASSA_PKCS1_V1_5_SHA_256"):
        return code(
            lambda: client("kms", who).sign(
                KeyId=key, Message=b"a.b", MessageType="RAW", SigningAlgorithm=algorithm
            )
        )

    def test_only_the_roles_that_sign_may_sign_and_with_rs256_only(self):
        signing, checkpoint = self.stack.aliases["signing"], self.stack.aliases["checkpoint"]
        may = {
            signing: {"messages", "stream"},
            checkpoint: {"messages", "purge"},
            # The account's default key policy hands the key to IAM: the administrator
            # may sign (why `keys announce` refuses such a key), no function role may.
            self.stack.stray_key: {"operator"},
        }
        for key, signers in may.items():
            for who in list(KEYS):
                with self.subTest(key=key, principal=who):
                    want = "OK" if who in signers else "AccessDeniedException"
                    self.assertEqual(self.sign(who, key), want)
        self.assertEqual(self.sign("messages", signing, "RSASSA_PSS_SHA_256"), "AccessDeniedException")

    def test_who_reads_the_public_keys(self):
        readers = {
            "signing": {"messages", "stream", "admin", "gateway", "operator"},
            "checkpoint": {"messages", "admin", "purge", "gateway", "operator"},
        }
        for logical, who_may in readers.items():
            for who in KEYS:
                with self.subTest(key=logical, principal=who):
                    got = code(lambda: client("kms", who).get_public_key(KeyId=self.stack.aliases[logical]))
                    self.assertEqual(got, "OK" if who in who_may else "AccessDeniedException")

    def test_peoples_keys_are_wrapped_with_a_tenant_context_only_and_never_by_the_operator(self):
        alias = self.stack.aliases["subject"]
        for who in KEYS:
            kms = client("kms", who)
            with self.subTest(principal=who):
                with_tenant = code(
                    lambda: kms.generate_data_key(KeyId=alias, KeySpec="AES_256", EncryptionContext={"tenant": "ten_1"})
                )
                self.assertEqual(with_tenant, "AccessDeniedException" if who == "operator" else "OK")
                without = code(lambda: kms.generate_data_key(KeyId=alias, KeySpec="AES_256"))
                self.assertEqual(without, "AccessDeniedException")

    def test_no_one_grants_a_keys_use_and_only_the_administrator_changes_its_policy(self):
        for who in KEYS:
            kms = client("kms", who)
            with self.subTest(principal=who):
                grant = code(
                    lambda: kms.create_grant(
                        KeyId=self.stack.aliases["signing"], GranteePrincipal="arn:aws:iam::123456789012:role/x",
                        Operations=["Sign"],
                    )
                )
                self.assertEqual(grant, "AccessDeniedException")
                if who != "operator":
                    policy = code(
                        lambda: kms.put_key_policy(KeyId=self.stack.aliases["signing"], PolicyName="default", Policy="{}")
                    )
                    self.assertEqual(policy, "AccessDeniedException")

    def test_each_secret_outside_a_functions_job_is_refused(self):
        readers = {
            "widget": {"messages", "stream", "admin"},
            "service-token": {"messages", "stream", "admin", "gateway"},
            "gateway-token-key": {"messages", "stream", "gateway"},
            "model-api-key": {"messages", "stream"},
            "another prefix's widget": set(),
        }
        for secret, who_may in readers.items():
            for who in FUNCTIONS:
                with self.subTest(secret=secret, function=who):
                    got = code(
                        lambda: client("secretsmanager", who).get_secret_value(SecretId=self.stack.secrets[secret])
                    )
                    self.assertEqual(got, "OK" if who in who_may else "AccessDeniedException")

    def test_only_the_admin_function_creates_tenants_secrets(self):
        for who in FUNCTIONS:
            name = f"{self.stack.prefix}tenants/ten_2/widget/wk_{who}"
            with self.subTest(function=who):
                got = code(lambda: client("secretsmanager", who).create_secret(Name=name, SecretString="x"))
                self.assertEqual(got, "OK" if who == "admin" else "AccessDeniedException")

    def test_an_unknown_access_key_is_not_recognised(self):
        ddb = boto3.client(
            "dynamodb",
            endpoint_url=os.environ["AWS_ENDPOINT_URL"],
            region_name="us-east-1",
            aws_access_key_id="test",
            aws_secret_access_key="test",
        )
        self.assertEqual(code(lambda: ddb.list_tables()), "UnrecognizedClientException")

    def test_the_refusal_names_the_principal_the_action_and_the_resource(self):
        try:
            client("dynamodb", "gateway").put_item(
                TableName=self.stack.table, Item={"pk": {"S": "ADMINKEY#x"}, "sk": {"S": "x"}}
            )
        except ClientError as e:
            message = e.response["Error"]["Message"]
            self.assertEqual(e.response["ResponseMetadata"]["HTTPStatusCode"], 400)
        else:
            self.fail("the gateway wrote an admin key")
        self.assertIn("assumed-role/GatewayFunctionRole/", message)
        self.assertIn("dynamodb:PutItem", message)
        self.assertIn(f"table/{self.stack.table}", message)


if __name__ == "__main__":
    unittest.main()
