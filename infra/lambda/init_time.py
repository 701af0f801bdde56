"""Measures each Lambda function's init time: from exec to its first Runtime API
`GET /2018-06-01/runtime/invocation/next`, the moment Lambda ends the init phase.

    python3 init_time.py DIR [RUNS]

DIR holds one directory per package with its extracted `bootstrap`: countersign-messages,
countersign-admin, countersign-gateway and hello-lambda (the yardstick: a hello-world
`lambda_http` function built with the same release profile). Each configuration runs RUNS
times (default 7), alternating between configurations so that drift of the machine falls
on all alike; the median and range of each are printed, with its ratio to the hello-world's
median (issue 17's target: at most 1.5).

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


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def one_run(bootstrap, name, extra):
    first_next = threading.Event()
    stamp, strays = {}, []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def answer_stray(self):
            strays.append(f"{self.command} {self.path}")
            self.send_response(500)
            self.end_headers()

        def do_GET(self):
            if not self.path.startswith("/2018-06-01/runtime/"):
                return self.answer_stray()
            if self.path.endswith("/runtime/invocation/next") and not first_next.is_set():
                stamp["t"] = time.monotonic()
                first_next.set()
            # Never answer: the run is over once init ended.
            time.sleep(5)

        def do_POST(self):
            self.answer_stray()

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
    ok = first_next.wait(10)
    proc.kill()
    _, err = proc.communicate()
    server.shutdown()
    if not ok:
        raise SystemExit(f"{name}: no `next` within 10 s with {extra}: {err.decode()[-800:]}")
    if strays:
        raise SystemExit(f"{name} {extra}: a network call at init: {strays}")
    return (stamp["t"] - start) * 1000


def main():
    root = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    times = {label: [] for label, _, _ in CONFIGS}
    for _ in range(runs):
        for label, package, extra in CONFIGS:
            times[label].append(one_run(os.path.join(root, package, "bootstrap"), package, extra))
    base = statistics.median(times["hello-world"])
    print(f"init time (exec -> first Runtime API `next`, no network call), median of {runs} runs, alternating:")
    for label, _, _ in CONFIGS:
        t = sorted(times[label])
        median = statistics.median(t)
        print(f"  {label:27} {median:6.1f} ms  (min {t[0]:.1f}, max {t[-1]:.1f})  {median / base:4.2f}x hello-world")


if __name__ == "__main__":
    main()
