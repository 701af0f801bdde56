"""The interop suite (issue 17): official MCP clients of each era against the gateway.

Run by infra/scripts/interop.sh inside with-local-aws.sh, after `cargo build`. It starts
the local stack (`countersign-dev`: bootstrap, the demo tenant with the TrackShare demo
provider, the gateway) on free loopback ports, opens a conversation through the widget API
as the demo person, mints a gateway token for it as that person (X-5,
`POST /api/cases/{id}/mcp-token`), and drives the gateway with five clients, pinned by
interop.sh:

- the TypeScript SDK v1 client (`@modelcontextprotocol/sdk`, the `initialize` handshake);
- the TypeScript SDK v2 client (`@modelcontextprotocol/client`, `server/discover` probe);
- the Python SDK 2.x client in its default mode (probe, then 2026-07-28) and in its
  legacy mode (`initialize`);
- the Inspector CLI.

Each lists the tools, describes a built-in and a proxied consultation, calls each
built-in, a proxied consultation, a failing call whose error envelope the client
validates against the tool's outputSchema, `prepare_action` of an operation the tenant
did not enable (a typed refusal), and an unknown tool; each SDK client also prepares a real
write through the gateway (X-1), sees it waiting with `action_status`, and the person
cancels it in their chat (the widget API). Then the Inspector prepares one more and the
person confirms it: the demo provider executes it only with the proof.

Then the confirmation page (X-2, X-3; issue 29): the TypeScript v2 and Python clients, in
each current era, prepare a write and are sent to the page in that era's form (2026-07-28:
`input_required` with a URL elicitation, whose handler has the person complete the page
in headless Chromium, widget/test/complete-page.mjs, before the SDK retries with the
`requestState`; 2025-11-25: the -32042 error, then `action_status`), and the TypeScript v1
client, declaring no URL elicitation, gets the link and polls. One stateless flow is
cancelled on the page: its retry is NOT_CONFIRMED.
"""

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
import uuid

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HERE = os.path.join(ROOT, "infra", "interop")
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
DEV = os.path.join(TARGET, "debug", "countersign-dev")
INSPECTOR = os.path.join(HERE, "node_modules", ".bin", "mcp-inspector")
PYTHON = os.path.join(ROOT, ".venv", "interop", "bin", "python")
PROXIED = "get_user_cars"
BUILTINS = ["action_status", "describe_tool", "list_operations", "prepare_action"]
CONSULTATIONS = [
    "get_download_status", "get_error_diagnosis", "get_session_laps", "get_upload_file_details",
    "get_user_cars", "get_user_sessions", "get_user_uploads",
]

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from localnet import free_port  # noqa: E402


def start_stack(env):
    """countersign-dev on free ports; returns (process, banner values)."""
    ports = {k: free_port() for k in ("COUNTERSIGN_DEV_ADDR", "DEMO_PROVIDER_ADDR", "COUNTERSIGN_DEMO_SITE_ADDR")}
    env.update({k: f"127.0.0.1:{p}" for k, p in ports.items()})
    dev = subprocess.Popen([DEV], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    banner = {}
    deadline = time.time() + 60
    while time.time() < deadline and "WIDGET_JWT" not in banner:
        line = dev.stdout.readline()
        if not line:
            break
        m = re.match(r"^([A-Z_]+)=(\S+)$", line.strip())
        if m:
            banner[m.group(1)] = m.group(2)
    if "WIDGET_JWT" not in banner:
        dev.kill()
        raise SystemExit("countersign-dev did not start: " + dev.stderr.read()[-2000:])
    banner["BASE"] = f"http://{env['COUNTERSIGN_DEV_ADDR']}"
    return dev, banner


def open_case(base, jwt):
    req = urllib.request.Request(
        f"{base}/api/cases", data=b"{}", method="POST",
        headers={"Authorization": f"Bearer {jwt}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as res:
        return json.load(res)["caseId"]


def run_client(cmd, env):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env, cwd=HERE)
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        return None, p.stdout[-2000:] + p.stderr[-2000:]
    return json.loads(lines[-1]), ""


def check_sdk_client(label, out, version, listed):
    """The common scenario, as an SDK client observed it."""
    def step(name):
        return out.get(name) or {"ok": False, "error": "missing"}

    def value(name):
        s = step(name)
        check(s["ok"], f"{label}: {name} succeeds ({s.get('error', '')[:200]})")
        return s.get("value") or {}

    check(value("connect").get("protocolVersion") == version, f"{label}: speaks {version} ({step('connect')})")
    names = step("list").get("value") or []
    check(sorted(names) == sorted(BUILTINS + CONSULTATIONS), f"{label}: lists the built-ins and the allowed consultations ({names})")
    d = value("describe_builtin")
    check(d.get("structured", {}).get("data", {}).get("name") == "action_status", f"{label}: describes a built-in")
    d = value("describe_proxied")
    data = d.get("structured", {}).get("data")
    check(d.get("isError") is False and data == listed.get(PROXIED), f"{label}: describes {PROXIED} as tools/list shows it")
    ops = value("list_operations").get("structured", {}).get("data", {})
    check(ops.get("actionsEnabled") is True and [i["operation"] for i in ops.get("items", [])] == ["reassign_session_car"],
          f"{label}: list_operations ({ops})")
    status = value("action_status").get("structured", {})
    check(status.get("ok") is True and status.get("data") == {"proposal": None}, f"{label}: action_status ({status})")
    cars = value("proxied").get("structured") or {}
    check(len(cars.get("cars", [])) == 3, f"{label}: the proxied consultation answers ({cars})")
    err = value("error_envelope")
    check(err.get("isError") is True and err.get("structured", {}).get("error", {}).get("code") == "NOT_FOUND",
          f"{label}: an error envelope, validated by the client against the outputSchema")
    s = step("unknown_tool")
    check(not s["ok"] and s.get("code") == -32602, f"{label}: unknown_tool is an unknown tool, -32602 ({s})")
    # served through the gateway; an operation the tenant did not enable is a typed
    # error envelope (validated by the client), and nothing is prepared.
    prepared = (value("prepare_write").get("structured") or {}).get("data") or {}
    check(prepared.get("status") == "pending_confirmation",
          f"{label}: prepare_action prepares a real write through the gateway ({prepared})")
    after = (value("status_after").get("structured") or {}).get("data", {}).get("proposal") or {}
    check(after.get("actionId") == prepared.get("actionId") and after.get("state") == "pending_confirmation",
          f"{label}: action_status shows it waiting for the person ({after})")
    refused = value("prepare_action")
    check(refused.get("isError") is True
          and (refused.get("structured") or {}).get("error", {}).get("code") == "OPERATION_NOT_ENABLED",
          f"{label}: prepare_action of an operation not enabled is refused ({refused})")


def inspector(url, token, *args):
    cmd = [INSPECTOR, "--cli", url, "--transport", "http", "--header", f"Authorization: Bearer {token}"]
    p = subprocess.run(cmd + list(args) + ["--format", "json"], capture_output=True, text=True, timeout=120)
    try:
        out = json.loads(p.stdout)
    except ValueError:
        out = None
    # The CLI prints {"result": <MCP result>}; an outputSchema validation failure prints an
    # error instead, so reading result.structuredContent below also proves validation passed.
    if isinstance(out, dict) and "result" in out:
        out = out["result"]
    return p.returncode, out or {}, p.stdout + p.stderr


def widget_api(base, jwt, path, body=None):
    req = urllib.request.Request(
        f"{base}{path}", data=None if body is None else json.dumps(body).encode(),
        method="GET" if body is None else "POST",
        headers={"Authorization": f"Bearer {jwt}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=60) as res:
        return json.load(res)


def cancel_pending(base, jwt, case, label):
    history = widget_api(base, jwt, f"/api/cases/{case}/messages").get("messages", [])
    proposal = history[-1] if history else {}
    if proposal.get("kind") != "proposal":
        check(False, f"{label}: its proposal is the conversation's newest message ({proposal})")
        return
    answer = widget_api(base, jwt, f"/api/cases/{case}/messages", {"content": "cancel", "replyToMessageId": proposal["id"]})
    check(any("cancelled" in (m.get("content") or "") for m in answer.get("messages", [])),
          f"{label}: the person cancels it in the chat ({answer})")


def check_countersigned_write(url, token, base, jwt, case):
    """X-1 end to end: an official client prepares a write through the gateway; the proposal
    is in the person's conversation (what their widget shows); only the person's confirm,
    replying to it, executes it, with the proof the demo provider verifies."""
    args = {"operation": "reassign_session_car", "arguments": {"sessionId": "ses_a1", "carId": "car_a2"}}
    code, out, raw = inspector(url, token, "--method", "tools/call", "--tool-name", "prepare_action",
                               "--tool-args-json", json.dumps(args))
    sc = out.get("structuredContent") or {}
    check(code == 0 and sc.get("ok") is True and sc.get("data", {}).get("status") == "pending_confirmation",
          f"inspector: prepare_action prepares through the gateway (exit {code}) {raw[:300]}")
    action = sc.get("data", {}).get("actionId")
    history = widget_api(base, jwt, f"/api/cases/{case}/messages").get("messages", [])
    proposal = history[-1] if history else {}
    check(proposal.get("kind") == "proposal", f"the proposal is the conversation's newest message ({proposal})")
    code, out, raw = inspector(url, token, "--method", "tools/call", "--tool-name", "action_status", "--tool-args-json", "{}")
    status = (out.get("structuredContent") or {}).get("data", {}).get("proposal") or {}
    check(status.get("actionId") == action and status.get("state") == "pending_confirmation",
          f"inspector: action_status shows it pending ({status})")
    answer = widget_api(base, jwt, f"/api/cases/{case}/messages",
                        {"content": "confirm", "replyToMessageId": proposal.get("id")})
    kinds = [m.get("kind") for m in answer.get("messages", [])]
    check("result" in kinds and any("completed" in (m.get("content") or "").lower() for m in answer.get("messages", [])),
          f"the person's confirm executes it with a proof the provider verified ({answer})")


def flow_checks(label, out, base, decision, era):
    """What one client observed of the whole X-2 flow: sent to the page in its era's form,
    the person completing the page in Chromium, then the outcome."""
    check(out is not None and "failure" not in out, f"{label}: ran ({(out or {}).get('failure', '')[:600]})")
    if out is None:
        return
    page = out.get("page") or {}
    csp = page.get("csp", "")
    # F-3: the page's one script is its own (the passkey ceremonies): no inline script, no
    # other source.
    check(csp.startswith("default-src 'none'") and "script-src 'self';" in csp and "unsafe" not in csp,
          f"{label}: the page's CSP allows only its own script ({csp})")
    # The page is served where the passkey ceremonies run (decision 0077): the local
    # stack's links are on localhost, the same server as `base`.
    base = base.replace("//127.0.0.1:", "//localhost:")
    check(page.get("signedInStatus") == 200 and page.get("consoleErrors") == [],
          f"{label}: the person signed in through the tenant, no console error ({page})")
    want = "completed" if decision == "confirm" else "cancelled"
    check(page.get("status") == want, f"{label}: the page shows the proposal {want} ({page.get('status')}, {page.get('notice')})")
    if era == "input_required":
        elicited = out.get("elicited") or {}
        check(elicited.get("mode") == "url" and str(elicited.get("url", "")).startswith(f"{base}/confirm/"),
              f"{label}: input_required carried a URL-mode elicitation of the page ({elicited})")
        check(elicited.get("message") == page.get("summary") and page.get("summary"),
              f"{label}: the elicitation's message is the summary the page shows, byte for byte")
        sc = (out.get("result") or {}).get("structured") or {}
        if decision == "confirm":
            data = sc.get("data") or {}
            check(data.get("status") == "completed" and data.get("result"),
                  f"{label}: the SDK's retry with the requestState returned the execution's result ({sc})")
        else:
            check((sc.get("error") or {}).get("code") == "NOT_CONFIRMED",
                  f"{label}: after cancel the retry is NOT_CONFIRMED ({sc})")
        return
    if era == "url_elicitation_error":
        error = out.get("error") or {}
        elicitation = ((error.get("data") or {}).get("elicitations") or [{}])[0]
        check(error.get("code") == -32042 and elicitation.get("mode") == "url"
              and str(elicitation.get("url", "")).startswith(f"{base}/confirm/"),
              f"{label}: the URL-elicitation-required error (-32042) with the page ({error})")
    else:
        data = ((out.get("result") or {}).get("structured") or {}).get("data") or {}
        check(str(data.get("confirmationUrl", "")).startswith(f"{base}/confirm/") and "action_status" in str(data.get("next")),
              f"{label}: an ordinary result with the link and how to follow it ({data})")
        check(data.get("summary") == page.get("summary"), f"{label}: the result's summary is the page's, byte for byte")
    status = ((out.get("status") or {}).get("structured") or {}).get("data") or {}
    proposal = status.get("proposal") or {}
    check(proposal.get("state") == want and (decision != "confirm" or proposal.get("result")),
          f"{label}: action_status with the actionId follows it to {want} ({status})")


def check_page_flows(url, token, base, env):
    """X-2, X-3 with the official clients: each prepares a write of ses_a2 through the
    gateway (to a car other than its current one, so each is a real change) and is sent
    to the confirmation page in its era's form; the person completes the page in headless
    Chromium (signed in through the demo tenant's hand-off); the demo provider executes a
    confirm only with the proof."""
    flows = [
        ("typescript-v2 2026-07-28", ["node", "ts_flow.mjs", "stateless"], "confirm", "car_a3", "input_required"),
        ("python 2026-07-28", [PYTHON, "py_flow.py", "stateless"], "confirm", "car_a2", "input_required"),
        ("typescript-v2 2026-07-28 cancel", ["node", "ts_flow.mjs", "stateless"], "cancel", "car_a3", "input_required"),
        ("typescript-v2 2025-11-25", ["node", "ts_flow.mjs", "legacy-url"], "confirm", "car_a1", "url_elicitation_error"),
        ("python 2025-11-25", [PYTHON, "py_flow.py", "legacy-url"], "confirm", "car_a3", "url_elicitation_error"),
        ("typescript-v1 without URL elicitation", ["node", "ts_flow.mjs", "link"], "confirm", "car_a2", "link"),
    ]
    for label, cmd, decision, car, era in flows:
        out, err = run_client(cmd + [url, token, decision, car], env)
        if out is None:
            check(False, f"{label}: ran ({err})")
            continue
        flow_checks(label, out, base, decision, era)
    # Someone else of the same tenant signs in on the page: refused, shown nothing, and
    # the proposal still waits; then the person cancels it on the page.
    out, err = run_client(["node", "ts_flow.mjs", "link", url, token, "confirm", "car_a3", "u_bruno"], env)
    page = (out or {}).get("page") or {}
    check(page.get("signedInStatus") == 403 and page.get("summary") is None and page.get("status") is None,
          f"the page refuses another person of the tenant and shows them nothing ({page or err})")
    proposal = (((out or {}).get("status") or {}).get("structured") or {}).get("data", {}).get("proposal") or {}
    check(proposal.get("state") == "pending_confirmation", f"nothing was done for them ({proposal})")
    page_url = (((out or {}).get("result") or {}).get("structured") or {}).get("data", {}).get("confirmationUrl")
    if page_url:
        p = subprocess.run(["node", os.path.join(ROOT, "widget", "test", "complete-page.mjs"), page_url, "cancel"],
                           capture_output=True, text=True, timeout=90)
        lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
        cancelled = json.loads(lines[-1]) if lines else {}
        check(cancelled.get("status") == "cancelled" and cancelled.get("consoleErrors") == [],
              f"the person cancels it on the page ({cancelled or p.stderr[-500:]})")


def check_inspector(url, token, listed):
    call = lambda name, args: inspector(url, token, "--method", "tools/call", "--tool-name", name, "--tool-args-json", json.dumps(args))
    code, out, raw = inspector(url, token, "--method", "tools/list")
    check(code == 0 and sorted(t["name"] for t in out.get("tools", [])) == sorted(BUILTINS + CONSULTATIONS),
          f"inspector: tools/list (exit {code}) {raw[:200]}")
    versions = {"list_operations": "1.1.0", "describe_tool": "2.0.0", "action_status": "1.1.0", "prepare_action": "1.2.0"}
    for t in out.get("tools", []):
        if t["name"] in versions:
            check(t.get("_meta", {}).get("version") == versions[t["name"]], f"inspector: {t['name']} publishes _meta.version")
    for name, args, want in [
        ("describe_tool", {"name": "list_operations"}, lambda sc: sc["data"]["name"] == "list_operations"),
        ("describe_tool", {"name": PROXIED}, lambda sc: sc["data"] == listed.get(PROXIED)),
        ("list_operations", {}, lambda sc: sc["data"]["actionsEnabled"] is True),
        ("action_status", {}, lambda sc: sc["data"] == {"proposal": None}),
        (PROXIED, {}, lambda sc: len(sc["cars"]) == 3),
    ]:
        code, out, raw = call(name, args)
        sc = out.get("structuredContent") or {}
        try:
            good = want(sc)
        except (KeyError, TypeError):
            good = False
        check(code == 0 and good, f"inspector: {name} {args} (exit {code}) {raw[:200] if not good else ''}")
    for name, args, want in [
        ("describe_tool", {"name": "no_such_tool"}, "NOT_FOUND"),
        ("describe_tool", {"name": "x", "confirmed": True}, "VALIDATION_ERROR"),
    ]:
        code, out, raw = call(name, args)
        sc = out.get("structuredContent") or {}
        check(code == 5 and out.get("isError") is True and sc.get("error", {}).get("code") == want,
              f"inspector: {name} {args} answers {want}, validated against the outputSchema (exit {code})")
    # The Inspector checks a name against tools/list itself before calling.
    for name in ("no_such_tool",):
        code, out, raw = call(name, {})
        check(code == 5 and ("-32602" in raw or "tool_not_found" in raw),
              f"inspector: {name} is an unknown tool (exit {code}) {raw[:200]}")
    code, _, _ = inspector(url, "not-a-token", "--method", "tools/list")
    check(code == 3, f"inspector: a bad token exits 3 (auth) (got {code})")


def stack_env(name):
    """The environment of a local stack of its own on the emulator: its table, signing key
    and secrets under `name` and a fresh suffix."""
    assert os.environ.get("AWS_ENDPOINT_URL", "").startswith("http://127.0.0.1:"), "run inside with-local-aws.sh"
    suffix = uuid.uuid4().hex[:10]
    env = dict(os.environ)
    env.update({
        "COUNTERSIGN_TABLE": f"{name}-{suffix}",
        "COUNTERSIGN_SIGNING_KEY": f"alias/{name}-{suffix}",
        "COUNTERSIGN_SECRET_PREFIX": f"{name}-{suffix}/",
        "COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER": "1",
        "RUST_LOG": "warn",
    })
    return env


def main():
    env = stack_env("interop")
    dev, banner = start_stack(env)
    try:
        case = open_case(banner["BASE"], banner["WIDGET_JWT"])
        # the person mints the gateway token for their conversation.
        minted = widget_api(banner["BASE"], banner["WIDGET_JWT"], f"/api/cases/{case}/mcp-token", {"ttlSeconds": 900})
        token = minted["token"]
        check(minted.get("mcpPath") == "/mcp", f"the person's token names the MCP path ({minted.get('mcpPath')})")
        url = f"{banner['BASE']}/mcp"
        code, out, raw = inspector(url, token, "--method", "tools/list")
        listed = {t["name"]: t for t in out.get("tools", [])}
        check(PROXIED in listed, f"the demo tenant's consultations are listed ({raw[:200]})")
        clients = [
            ("typescript-v1", ["node", "ts_client.mjs", "v1"], "2025-11-25"),
            ("typescript-v2", ["node", "ts_client.mjs", "v2"], "2026-07-28"),
            ("python-default", [PYTHON, "py_client.py", "auto"], "2026-07-28"),
            ("python-legacy", [PYTHON, "py_client.py", "legacy"], "2025-11-25"),
        ]
        for label, cmd, version in clients:
            out, err = run_client(cmd + [url, token, PROXIED], env)
            check(out is not None, f"{label}: ran ({err})")
            if out is not None:
                check_sdk_client(label, out, version, listed)
            # The person cancels what the client prepared, in their chat: nothing runs, and
            # the next client starts from an empty slot.
            cancel_pending(banner["BASE"], banner["WIDGET_JWT"], case, label)
        check_inspector(url, token, listed)
        check_countersigned_write(url, token, banner["BASE"], banner["WIDGET_JWT"], case)
        check_page_flows(url, token, banner["BASE"], env)
    finally:
        dev.terminate()
        dev.wait(timeout=10)
    if failures:
        print(f"{len(failures)} interop check(s) failed", file=sys.stderr)
        sys.exit(1)
    print("interop: all checks passed with 5 official clients")


if __name__ == "__main__":
    main()
