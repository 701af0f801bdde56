"""The provider engineer's first run, against a running platform: connect the Python
provider (actions off), certify it with consent, enable actions, then a person asks for
their cars and countersigns a write in the chat. Exits non-zero on the first thing that
does not go as docs/provider-guide.md §10 says. Run by the test command
(infra/scripts/python-provider.sh) against the local stack.

    python try_it.py BASE_URL TENANT ADMIN_KEY WIDGET_JWT PROVIDER_URL SERVICE_TOKEN
"""
import json
import sys
import time
import urllib.error
import urllib.request

base, tenant, admin_key, widget_jwt, provider_url, service_token = sys.argv[1:7]
started = time.time()


def call(method, path, body=None, token=admin_key):
    req = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def expect(what, status, body, want):
    if status != want:
        sys.exit(f"{what}: HTTP {status} (wanted {want}): {json.dumps(body, indent=2)}")
    print(f"  ok  {what}")


admin = f"/api/admin/tenants/{tenant}"
config = {"serverUrl": provider_url, "serviceToken": service_token, "allowedTools": ["get_user_cars"],
          "actionPolicy": {"contractVersion": 1, "enabled": False, "operations": ["reassign_session_car"]}}
expect("1. save with actions off", *call("PUT", f"{admin}/mcp", config), 200)
status, view = call("GET", f"{admin}/mcp")
expect("2. read the key, issuer and audience to install", status, view, 200)
assert view["actionVerification"]["issuer"], view
run = {"testUser": "countersign-test:u_test", "consultations": {"get_user_cars": {}},
       "actions": {"reassign_session_car": {"sessionId": "ses_t1", "carId": "car_t2"}}, "consent": True}
status, result = call("POST", f"{admin}/mcp/certifications", run)
if status != 201 or not result.get("passed"):
    failed = [c for c in result.get("checks", []) if c["status"] != "passed"]
    sys.exit(f"3. certification did not pass (HTTP {status}): {json.dumps(failed or result, indent=2)}")
print(f"  ok  3. certify: {len(result['checks'])} checks passed")
config["actionPolicy"]["enabled"] = True
expect("4. enable actions", *call("PUT", f"{admin}/mcp", config), 200)

status, case = call("POST", "/api/cases", {}, widget_jwt)
expect("a person opens a conversation", status, case, 201)
messages = f"/api/cases/{case['caseId']}/messages"


def say(text, reply_to=None):
    body = {"content": text} if reply_to is None else {"content": text, "replyToMessageId": reply_to}
    status, body = call("POST", messages, body, widget_jwt)
    expect(f"the person says {text!r}", status, body, 200)
    return body["messages"]


cars = " ".join(m["content"] for m in say("my cars"))
assert "GR86" in cars, (cars, call("GET", f"{admin}/mcp")[1].get("toolChanges"))
proposal = say("move ses_a1 to car_a2")[-1]
assert proposal["kind"] == "proposal", proposal
done = " ".join(m["content"] for m in say("confirm", proposal["id"]))
assert "moved" in done, done
print(f"python provider: a countersigned write {time.time() - started:.1f} s after connecting")
