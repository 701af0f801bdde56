"""Property-based API fuzzing (issue 13): schemathesis against the admin and widget APIs'
OpenAPI documents (docs/*.openapi.json), on the real binaries over the local AWS emulator.

Run by the test command inside infra/scripts/with-local-aws.sh, after `cargo build`:
bootstraps resources on the emulator, registers a tenant with the operator CLI, starts the
admin and messages binaries on free loopback ports, creates a widget credential and signs a
widget JWT, then runs `st run` on each document with every check (answers match the
document, no 5xx, invalid data rejected, valid data accepted, auth enforced, …). A hook
records every request and its status; afterwards the table is read to show that nothing a
rejected request carried was stored: every stored user message and every stored server URL
came from a request that was answered 2xx.

Prints the number of requests made per API. Exits non-zero on any failure.
"""

import base64
import hashlib
import hmac
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
BIN = os.path.join(TARGET, "debug")
ST = sys.argv[1] if len(sys.argv) > 1 else "st"
# Examples per operation and phase (decision 0056: 40 in the test command; the Coverage
# phase, every boundary value of every schema, does not depend on it).
MAX_EXAMPLES = os.environ.get("FUZZ_MAX_EXAMPLES", "40")


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from localnet import free_port  # noqa: E402


def wait_up(url):
    for _ in range(200):
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"not up: {url}")


def call(method, url, token=None, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("content-type", "application/json")
    if token:
        req.add_header("authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read() or b"null")


def b64(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def widget_jwt(kid, secret, tenant, user):
    now = int(time.time())
    header = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
    claims = b64(json.dumps({"sub": user, "tid": tenant, "iat": now, "exp": now + 3600}).encode())
    signing = f"{header}.{claims}".encode()
    sig = b64(hmac.new(secret.encode(), signing, hashlib.sha256).digest())
    return f"{header}.{claims}.{sig}"


HOOKS = '''
import json, os
import schemathesis

LOG = os.environ["FUZZ_LOG"]

@schemathesis.check
def record(ctx, response, case):
    with open(LOG, "a") as f:
        f.write(json.dumps({"method": case.method, "path": case.formatted_path,
                            "status": response.status_code, "body": case.body
                            if isinstance(case.body, (dict, list, str, int, float, bool)) or case.body is None
                            else repr(case.body)}) + "\\n")
    return None
'''


def fuzz(name, spec, base, token, env, log, config, select):
    cfg = os.path.join(tempfile.mkdtemp(), "schemathesis.toml")
    with open(cfg, "w") as f:
        f.write("[generation]\nmax-examples = %s\n" % MAX_EXAMPLES)
        f.write(config)
    # schemathesis 4 runs every check by default (not_a_server_error, the three
    # conformance checks, negative_data_rejection, positive_data_acceptance, ignored_auth,
    # use_after_free, ensure_resource_availability, …); the config file narrows one.
    cmd = [ST, "--config-file", cfg, "run", spec, "--url", base,
           "-H", f"Authorization: Bearer {token}", "--workers", "1",
           "--request-timeout", "30", "--seed", "1"] + select
    p = subprocess.run(cmd, env=env, text=True, capture_output=True)
    print(p.stdout[-6000:])
    print(p.stderr[-2000:], file=sys.stderr)
    with open(log) as f:
        n = sum(1 for _ in f)
    return p.returncode, n


def stored(env, table):
    """Every item of the table (through the emulator's boto3)."""
    moto_python = os.path.join(ROOT, ".venv", "moto", "bin", "python")
    out = subprocess.run(
        [moto_python, "-c", (
            "import boto3, json, sys\n"
            "t = boto3.resource('dynamodb').Table(sys.argv[1])\n"
            "items, kw = [], {}\n"
            "while True:\n"
            "    r = t.scan(**kw)\n"
            "    items += r['Items']\n"
            "    if 'LastEvaluatedKey' not in r: break\n"
            "    kw['ExclusiveStartKey'] = r['LastEvaluatedKey']\n"
            "print(json.dumps(items, default=repr))\n"), table],
        env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"reading the table failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout)


def main():
    assert os.environ.get("AWS_ENDPOINT_URL", "").startswith("http://127.0.0.1:"), "run inside with-local-aws.sh"
    suffix = uuid.uuid4().hex[:10]
    table = f"fuzz-{suffix}"
    env = dict(os.environ)
    env.update({
        "COUNTERSIGN_TABLE": table,
        "COUNTERSIGN_SIGNING_KEY": f"alias/fuzz-{suffix}",
        "COUNTERSIGN_SECRET_PREFIX": f"fuzz-{suffix}/",
        "COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER": "1",
        "RUST_LOG": "warn",
        # The widget API is fuzzed on one person's real conversation (below): the
        # per-person message budget would answer most valid posts 429.
        "COUNTERSIGN_PERSON_MESSAGES_PER_MINUTE": "100000",
        "COUNTERSIGN_PERSON_CASES_PER_MINUTE": "100000",
    })
    cli = os.path.join(BIN, "countersign")
    subprocess.run([cli, "bootstrap"], env=env, check=True, capture_output=True)
    out = subprocess.run([cli, "tenant", "create", "--name", "Fuzz"], env=env, check=True,
                         capture_output=True, text=True).stdout
    tenant = re.search(r"tenant\s+(ten_\S+)", out).group(1)
    admin_key = re.search(r"admin key\s+(tsk_\S+)", out).group(1)
    admin_port, messages_port = free_port(), free_port()
    env["COUNTERSIGN_ADMIN_ADDR"] = f"127.0.0.1:{admin_port}"
    env["COUNTERSIGN_MESSAGES_ADDR"] = f"127.0.0.1:{messages_port}"
    procs = [subprocess.Popen([os.path.join(BIN, b)], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
             for b in ("countersign-admin", "countersign-messages")]
    failures = []
    try:
        admin = f"http://127.0.0.1:{admin_port}"
        messages = f"http://127.0.0.1:{messages_port}"
        wait_up(admin + "/")
        wait_up(messages + "/")
        def widget_session():
            # Made just before the widget API's run: the admin API's run (on the same
            # tenant) rotates and retires widget credentials, and a token signed with a
            # retired one is a 401 for every request (a clean CI run met exactly that).
            cred = call("POST", f"{admin}/api/admin/tenants/{tenant}/widget-credentials",
                        admin_key)
            jwt = widget_jwt(cred["keyId"], cred["secret"], tenant, "u_fuzz")
            case = call("POST", f"{messages}/api/cases", jwt)["caseId"]
            # Half the conversation ids of the message operations are the person's real
            # one (not of `close`, which would end it), so that valid messages are
            # accepted and stored: the check below then has something to compare (with
            # random ids nearly every post is a 404).
            config = ('[dictionaries.cases]\nvalues = ["%s"]\n'
                      '[[operations]]\ninclude-path-regex = "/messages"\n'
                      '[operations.parameters]\n'
                      '"path.id" = { dictionary = "cases", probability = 0.5 }\n' % case)
            return jwt, config

        total = 0
        # The admin API is fuzzed on the real tenant (else nearly every request is a 404
        # before its body is read), and half the server URLs are the local stack's one
        # reachable provider address, so that valid configurations are saved too.
        # Whether a `PUT mcp` body is valid also depends on what its host resolves to
        # (D-5), which no schema can say: that one operation is exempt from "every
        # schema-valid request is accepted" (every other check still applies to it).
        admin_config = (
            '[parameters]\n"path.id" = "%s"\n'
            '"body.serverUrl" = { dictionary = "urls", probability = 0.5 }\n'
            '[dictionaries.urls]\nvalues = ["http://127.0.0.1:9/mcp", "http://127.0.0.1:9/other"]\n'
            '[[operations]]\ninclude-path = "/api/admin/tenants/{id}/mcp"\ninclude-method = "PUT"\n'
            'checks.positive_data_acceptance.enabled = false\n'
            # N-3: a tenant queues at most 20 erasures; the fuzzer asks for more (a
            # documented 429).
            '[[operations]]\ninclude-path = "/api/admin/tenants/{id}/erasures"\n'
            'include-method = "POST"\nchecks.positive_data_acceptance.enabled = false\n'
        ) % tenant
        # The certification routes of the admin API and the audit checkpoints (they sign
        # with the platform's keys) are served by the messages function (decision 0026),
        # so they are fuzzed there. The public key sets too (V-7: kept off the admin
        # function's few slots). Erasures are queued by the admin function (N-3).
        signing_paths = "certifications|audit/checkpoints|well-known"
        certification = ["--include-path-regex", signing_paths]
        # Whether a run's body is accepted depends on the saved configuration (its tools
        # and operations), which no schema can say.
        certification_config = (
            '[[operations]]\ninclude-path = "/api/admin/tenants/{id}/mcp/certifications"\n'
            'include-method = "POST"\nchecks.positive_data_acceptance.enabled = false\n'
        )
        for name, spec, base, token, config, select in [
            ("admin", "docs/admin-api.openapi.json", admin, admin_key, admin_config,
             ["--exclude-path-regex", signing_paths]),
            ("certification", "docs/admin-api.openapi.json", messages, admin_key,
             admin_config + certification_config, certification),
            ("widget", "docs/widget-api.openapi.json", messages, None, None, []),
        ]:
            if name == "widget":
                token, config = widget_session()
            log = os.path.join(tempfile.mkdtemp(), f"{name}.ndjson")
            open(log, "w").close()
            run_env = dict(env, FUZZ_LOG=log, SCHEMATHESIS_HOOKS="fuzz_hooks",
                           PYTHONPATH=os.path.dirname(HOOKS_FILE))
            rc, n = fuzz(name, os.path.join(ROOT, spec), base, token, run_env, log, config,
                         select)
            total += n
            print(f"{name} API: {n} requests, schemathesis exit {rc}")
            if rc != 0:
                failures.append(f"{name}: schemathesis reported failures")
            with open(log) as f:
                calls = [json.loads(line) for line in f]
            check_nothing_rejected_stored(name, calls, env, table, failures)
        print(f"fuzzing: {total} requests in all")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
            err = p.stderr.read().decode(errors="replace")
            if "panicked" in err:
                failures.append("a binary panicked:\n" + err[-2000:])
    if failures:
        print("\n".join("FAIL " + f for f in failures))
        sys.exit(1)
    print("fuzzing: every answer matched its document; nothing a rejected request carried was stored")


def check_nothing_rejected_stored(name, calls, env, table, failures):
    accepted_messages = {json.dumps(c["body"].get("content"))
                         for c in calls
                         if c["status"] < 300 and c["method"] == "POST"
                         # The buffered post and its streamed twin (S-1) both store it.
                         and c["path"].endswith(("/messages", "/messages/stream"))
                         and isinstance(c["body"], dict)}
    accepted_urls = {c["body"].get("serverUrl")
                     for c in calls
                     if c["status"] < 300 and c["method"] == "PUT" and isinstance(c["body"], dict)}
    items = stored(env, table)
    if name == "widget":
        users = sum(1 for i in items if i.get("role") == "user")
        print(f"widget API: {len(accepted_messages)} messages accepted, {users} stored")
        if not accepted_messages:
            failures.append("widget: no message was accepted, so the check below compared nothing")
    else:
        print(f"{name} API: {len(accepted_urls)} configurations accepted")
    for item in items:
        if name == "widget" and item.get("role") == "user":
            if json.dumps(item.get("content")) not in accepted_messages:
                failures.append(f"stored a message no 2xx request carried: {item.get('content')!r:.80}")
        if name == "admin" and item.get("sk") == "MCP":
            url = item.get("server_url")
            if url not in accepted_urls and url.rstrip("/") not in {str(u).rstrip("/") for u in accepted_urls}:
                failures.append(f"stored a server URL no 2xx request carried: {url!r:.80}")


HOOKS_FILE = os.path.join(tempfile.mkdtemp(), "fuzz_hooks.py")
with open(HOOKS_FILE, "w") as _f:
    _f.write(HOOKS)

if __name__ == "__main__":
    main()
