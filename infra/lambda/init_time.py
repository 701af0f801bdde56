"""Measures each Lambda function's init time: from exec to its first Runtime API
`GET /2018-06-01/runtime/invocation/next`, the moment Lambda ends the init phase.

    python3 init_time.py DIR [RUNS]

DIR holds one directory per package with its extracted `bootstrap`: countersign-messages,
countersign-admin, countersign-gateway and hello-lambda (the yardstick: a hello-world
`lambda_http` function built with the same release profile). Each configuration runs RUNS
times (default 7), alternating between configurations so that drift of the machine falls
on all alike; the median and range of each are printed, with its ratio to the hello-world's
median (issue 26's target: at most 2). Each run then serves REQUESTS API Gateway events that
need no network call, and the first one's latency is printed against the median of the
others (issue 26's target: at most 1.5), so that nothing merely moved from init to the
first request.

No network call may happen at init: the local Runtime API server is also every AWS
endpoint (`AWS_ENDPOINT_URL`), and any request it gets that is not the Runtime API's fails
the run, naming the configuration and the path.
"""
import http.server
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

CONFIGS = [
    ("hello-world", "hello-lambda", {}),
    ("messages (scripted model)", "countersign-messages", {"COUNTERSIGN_MODEL": "scripted"}),
    ("messages (bedrock)", "countersign-messages",
     {"COUNTERSIGN_MODEL": "bedrock:anthropic.claude-3-5-haiku-20241022-v1:0"}),
    ("messages (openai)", "countersign-messages", {
        "COUNTERSIGN_MODEL": "openai:gpt-4.1-mini",
        "COUNTERSIGN_MODEL_BASE_URL": "https://api.openai.com/v1",
        "COUNTERSIGN_MODEL_API_KEY_SECRET": "countersign/platform/model-api-key",
    }),
    ("admin", "countersign-admin", {}),
    ("gateway", "countersign-gateway", {"COUNTERSIGN_GATEWAY_HOSTS": "*"}),
]


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from localnet import free_port  # noqa: E402


# Requests served after init: the first one's latency against the median of the others
# (issue 26 B: nothing may merely move from init to the first request). The event needs
# no network call in any function (no token: a typed refusal, or 404 where the route is
# not served).
REQUESTS = 6
EVENT = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "apigw-v2-create-case.json"), "rb").read()


def one_run(bootstrap, name, extra):
    """(init ms, [latency ms of each request]) for one start of `bootstrap`."""
    done = threading.Event()
    stamp, strays, sent, answered = {}, [], {}, {}
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self):
            super().setup()
            # Headers and body leave in two writes: without this, Nagle's algorithm and
            # the client's delayed ACK add 40 ms to every answer after the first.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, *args):
            pass

        def answer_stray(self):
            strays.append(f"{self.command} {self.path}")
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self):
            if not self.path.endswith("/2018-06-01/runtime/invocation/next"):
                return self.answer_stray()
            with lock:
                if "t" not in stamp:
                    stamp["t"] = time.monotonic()
                n = len(sent)
                if n >= REQUESTS:
                    done.set()
                else:
                    sent[n] = None
            if n >= REQUESTS:
                # Never answer: the run is over.
                time.sleep(5)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(EVENT)))
            self.send_header("Lambda-Runtime-Aws-Request-Id", f"req-{n}")
            self.send_header("Lambda-Runtime-Deadline-Ms", str(int(time.time() * 1000) + 30000))
            self.send_header("Lambda-Runtime-Invoked-Function-Arn", f"arn:aws:lambda:us-east-1:123456789012:function:{name}")
            self.send_header("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000")
            self.end_headers()
            sent[n] = time.monotonic()
            self.wfile.write(EVENT)
            self.wfile.flush()

        def do_POST(self):
            parts = self.path.split("/")
            if not (self.path.startswith("/2018-06-01/runtime/invocation/req-") and parts[-1] == "response"):
                return self.answer_stray()
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            answered[int(parts[-2].removeprefix("req-"))] = time.monotonic()
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()

    port = free_port()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{port}",
        "AWS_LAMBDA_FUNCTION_NAME": name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "none",
        "AWS_SECRET_ACCESS_KEY": "none",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "COUNTERSIGN_TABLE": "countersign",
        **extra,
    }
    start = time.monotonic()
    proc = subprocess.Popen([bootstrap], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ok = done.wait(10)
    proc.kill()
    _, err = proc.communicate()
    server.shutdown()
    if not ok or len(answered) < REQUESTS:
        raise SystemExit(f"{name}: {len(answered)} of {REQUESTS} requests answered within 10 s with {extra}: {err.decode()[-800:]}")
    if strays:
        raise SystemExit(f"{name} {extra}: a network call at init or in a request: {strays}")
    latencies = [(answered[i] - sent[i]) * 1000 for i in range(REQUESTS)]
    return (stamp["t"] - start) * 1000, latencies


def main():
    root = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    times = {label: [] for label, _, _ in CONFIGS}
    firsts = {label: [] for label, _, _ in CONFIGS}
    warms = {label: [] for label, _, _ in CONFIGS}
    for _ in range(runs):
        for label, package, extra in CONFIGS:
            init, latencies = one_run(os.path.join(root, package, "bootstrap"), package, extra)
            times[label].append(init)
            firsts[label].append(latencies[0])
            warms[label].append(statistics.median(latencies[1:]))
    base = statistics.median(times["hello-world"])
    print(f"init time (exec -> first Runtime API `next`, no network call), median of {runs} runs, alternating;")
    print(f"then the first of {REQUESTS} requests (`next` answered -> response posted) against the median of the others:")
    for label, _, _ in CONFIGS:
        t = sorted(times[label])
        median = statistics.median(t)
        first, warm = statistics.median(firsts[label]), statistics.median(warms[label])
        print(f"  {label:27} {median:6.1f} ms  (min {t[0]:.1f}, max {t[-1]:.1f})  {median / base:4.2f}x hello-world"
              f"   first request {first:5.2f} ms, warm {warm:5.2f} ms: {first / warm:4.2f}x")


if __name__ == "__main__":
    main()
