"""O-3: what 1,000 conversations cost to run, from measured calls and durations.

Drives N conversations of a stated shape through the real binaries on the local AWS
emulator (inside infra/scripts/with-local-aws.sh): a person opens a case, asks for their
cars (one consultation through the tenant's MCP server), asks to move a session (one
proposal) and confirms it (one countersigned execution). The messages function runs with
COUNTERSIGN_AWS_CALL_METRICS=1, so every AWS call it makes is counted in its EMF lines
(`aws_calls_total{operation}`, `dynamodb_units_estimate_total{kind}`); each request's
duration is timed by the client. Prices are inputs (defaults: public on-demand list
prices, us-east-1, arm64 — check them before quoting).

    python3 infra/cost/cost.py [--conversations 50] [--bin target/debug] [--lambda-gb 0.25]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
import uuid

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# The fuzzing driver's helpers: free ports, waiting for a binary, the widget JWT.
sys.path.insert(0, os.path.join(ROOT, "infra", "fuzz"))
from api_fuzz import free_port, wait_up, widget_jwt  # noqa: E402

PRICES = {  # USD, public on-demand list prices (us-east-1), given as inputs
    "lambda_gb_second_arm64": 0.0000133334,
    "lambda_request": 0.20 / 1e6,
    "http_api_request": 1.00 / 1e6,
    "dynamodb_write_unit": 0.625 / 1e6,
    "dynamodb_read_unit": 0.125 / 1e6,
    "kms_request": 0.03 / 1e4,
    "kms_rsa_request": 0.15 / 1e4,
    "secretsmanager_call": 0.05 / 1e4,
}


def call(method, url, token=None, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    if token:
        req.add_header("authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read() or b"null")


class Emf:
    """Sums the messages function's EMF metrics, step by step."""

    def __init__(self, stream):
        self.lock, self.totals, self.docs, self.last = threading.Lock(), {}, 0, time.monotonic()
        threading.Thread(target=self.read, args=(stream,), daemon=True).start()

    def read(self, stream):
        for line in stream:
            if '"_aws"' not in line:
                continue
            doc = json.loads(line)
            with self.lock:
                self.docs, self.last = self.docs + 1, time.monotonic()
            for m in doc["_aws"]["CloudWatchMetrics"][0]["Metrics"]:
                name = m["Name"]
                if name not in ("aws_calls_total", "dynamodb_units_estimate_total"):
                    continue
                key = doc.get("operation") or doc.get("kind")
                value = doc[name]
                value = sum(value) if isinstance(value, list) else value
                with self.lock:
                    self.totals[(name, key)] = self.totals.get((name, key), 0) + value

    def take(self):
        """What the last request's documents added. The flush follows the response, so it
        waits for the request's first document and then until none has come for 0.3 s (at
        most 5 s): a late document is never counted in the next step."""
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with self.lock:
                quiet = self.docs > 0 and time.monotonic() - self.last >= 0.3
            if quiet:
                break
            time.sleep(0.05)
        with self.lock:
            out, self.totals, self.docs = self.totals, {}, 0
        return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--conversations", type=int, default=50)
    ap.add_argument("--bin", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "debug"))
    ap.add_argument("--lambda-gb", type=float, default=0.25, help="the template's MemorySize in GB")
    args = ap.parse_args()
    assert os.environ.get("AWS_ENDPOINT_URL", "").startswith("http://127.0.0.1:"), "run inside with-local-aws.sh"
    suffix = uuid.uuid4().hex[:10]
    env = dict(os.environ, COUNTERSIGN_TABLE=f"cost-{suffix}", COUNTERSIGN_SIGNING_KEY=f"alias/cost-{suffix}",
               COUNTERSIGN_CHECKPOINT_KEY=f"alias/cost-ckpt-{suffix}", COUNTERSIGN_SECRET_PREFIX=f"cost-{suffix}/",
               COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER="1", RUST_LOG="warn",
               COUNTERSIGN_PERSON_MESSAGES_PER_MINUTE="100000", COUNTERSIGN_PERSON_CASES_PER_MINUTE="100000",
               COUNTERSIGN_TENANT_TURNS_PER_MINUTE="100000",
               COUNTERSIGN_TENANT_REQUESTS_PER_MINUTE="10000000")
    cli = os.path.join(args.bin, "countersign")
    subprocess.run([cli, "bootstrap"], env=env, check=True, capture_output=True)
    out = subprocess.run([cli, "tenant", "create", "--name", "Cost"], env=env, check=True, capture_output=True, text=True).stdout
    tenant = re.search(r"tenant\s+(ten_\S+)", out).group(1)
    admin_key = re.search(r"admin key\s+(tsk_\S+)", out).group(1)
    admin_port, messages_port, demo_port = free_port(), free_port(), free_port()
    admin, messages = f"http://127.0.0.1:{admin_port}", f"http://127.0.0.1:{messages_port}"
    token = f"svc_cost_{suffix}"
    env.update(COUNTERSIGN_ADMIN_ADDR=f"127.0.0.1:{admin_port}", COUNTERSIGN_MESSAGES_ADDR=f"127.0.0.1:{messages_port}")
    demo_env = dict(env, DEMO_PROVIDER_ADDR=f"127.0.0.1:{demo_port}", DEMO_PROVIDER_TOKEN=token,
                    DEMO_PROVIDER_TENANT=tenant, DEMO_PROVIDER_JWKS_URL=f"{messages}/.well-known/jwks.json")
    procs = [
        subprocess.Popen([os.path.join(args.bin, "countersign-admin")], env=env, stdout=subprocess.DEVNULL),
        subprocess.Popen([os.path.join(args.bin, "countersign-messages")], env=dict(env, COUNTERSIGN_AWS_CALL_METRICS="1"),
                         stdout=subprocess.PIPE, text=True),
        subprocess.Popen([os.path.join(args.bin, "demo-provider")], env=demo_env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL),
    ]
    try:
        emf = Emf(procs[1].stdout)
        for url in (admin + "/", messages + "/", f"http://127.0.0.1:{demo_port}/"):
            wait_up(url)
        api = f"{admin}/api/admin/tenants/{tenant}"
        config = {"serverUrl": f"http://127.0.0.1:{demo_port}/mcp", "serviceToken": token,
                  "allowedTools": ["get_user_cars"],
                  "actionPolicy": {"contractVersion": 1, "enabled": False, "operations": ["reassign_session_car"]}}
        call("PUT", f"{api}/mcp", admin_key, config)
        run = call("POST", f"{messages}/api/admin/tenants/{tenant}/mcp/certifications", admin_key,
                   {"testUser": "countersign-test:u_test", "consultations": {"get_user_cars": {}},
                    "actions": {"reassign_session_car": {"sessionId": "ses_t1", "carId": "car_t2"}}, "consent": True})
        assert run["passed"], [c for c in run["checks"] if c["status"] != "passed"]
        config["actionPolicy"]["enabled"] = True
        call("PUT", f"{api}/mcp", admin_key, config)
        cred = call("POST", f"{api}/widget-credentials", admin_key)
        emf.take()
        steps = {s: {"calls": {}, "units": {}, "ms": []} for s in ("open", "consult", "propose", "confirm")}

        def step(name, f):
            t = time.perf_counter()
            result = f()
            steps[name]["ms"].append((time.perf_counter() - t) * 1000)
            for (metric, key), v in emf.take().items():
                bucket = "calls" if metric == "aws_calls_total" else "units"
                steps[name][bucket][key] = steps[name][bucket].get(key, 0) + v
            return result

        for i in range(args.conversations):
            jwt = widget_jwt(cred["keyId"], cred["secret"], tenant, "u_alice")
            case = step("open", lambda: call("POST", f"{messages}/api/cases", jwt))["caseId"]
            url = f"{messages}/api/cases/{case}/messages"
            step("consult", lambda: call("POST", url, jwt, {"content": "my cars"}))
            car = "car_a2" if i % 2 == 0 else "car_a1"
            proposal = step("propose", lambda: call("POST", url, jwt, {"content": f"move ses_a1 to {car}"}))["messages"][-1]
            assert proposal["kind"] == "proposal", proposal
            step("confirm", lambda: call("POST", url, jwt, {"content": "confirm", "replyToMessageId": proposal["id"]}))
        report(steps, args)
    finally:
        for p in procs:
            p.kill()


def report(steps, args):
    n = args.conversations
    print(f"\n== per conversation (mean of {n}): AWS calls by step")
    ops = sorted({op for s in steps.values() for op in s["calls"]})
    print("step      " + "".join(f"{op[:18]:>19}" for op in ops) + "   ms (median)")
    for name, s in steps.items():
        print(f"{name:10}" + "".join(f"{s['calls'].get(op, 0) / n:19.2f}" for op in ops)
              + f"   {statistics.median(s['ms']):8.1f}")
    total = lambda key: sum(s["calls"].get(key, 0) for s in steps.values()) / n  # noqa: E731
    units = lambda kind: sum(s["units"].get(kind, 0) for s in steps.values()) / n  # noqa: E731
    requests = len(steps)  # one HTTP request per step
    gb_s = sum(statistics.median(s["ms"]) for s in steps.values()) / 1000 * args.lambda_gb
    kms = total("Sign") + total("GetPublicKey") + total("DescribeKey")
    # each person's data key (a symmetric KMS request, priced apart from RSA).
    kms_symmetric = total("GenerateDataKey") + total("Decrypt") + total("Encrypt")
    secrets = total("GetSecretValue") + total("DescribeSecret")
    lines = [
        ("API Gateway HTTP API requests", requests, PRICES["http_api_request"]),
        ("Lambda requests", requests, PRICES["lambda_request"]),
        (f"Lambda GB-s ({args.lambda_gb} GB x measured duration)", gb_s, PRICES["lambda_gb_second_arm64"]),
        ("DynamoDB write units (estimated)", units("write"), PRICES["dynamodb_write_unit"]),
        ("DynamoDB read units (estimated)", units("read"), PRICES["dynamodb_read_unit"]),
        ("KMS RSA requests (Sign, GetPublicKey, DescribeKey)", kms, PRICES["kms_rsa_request"]),
        ("KMS symmetric requests (GenerateDataKey, Decrypt: people's keys)", kms_symmetric, PRICES["kms_request"]),
        ("Secrets Manager calls", secrets, PRICES["secretsmanager_call"]),
    ]
    print("\n== per 1,000 conversations")
    print(f"{'item':66}{'quantity':>12}{'USD':>10}")
    grand = 0.0
    for item, qty, price in lines:
        cost = qty * price * 1000
        grand += cost
        print(f"{item:66}{qty * 1000:12.0f}{cost:10.4f}")
    print(f"{'total':66}{'':12}{grand:10.4f}")
    print("(the model's tokens are not included: they depend on the model and the prompts)")


if __name__ == "__main__":
    main()
