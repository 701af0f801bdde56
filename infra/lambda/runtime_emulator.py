"""A minimal AWS Lambda Runtime API, enough to run one invocation of a custom runtime.

    python3 runtime_emulator.py PORT EVENT_FILE RESULT_FILE

Serves the event from EVENT_FILE to the first `GET /2018-06-01/runtime/invocation/next`,
writes what the function posts to `/response` (or `/error`, or `/init/error`) into
RESULT_FILE as {"kind": ..., "body": ...}, then exits. Further `next` calls block until
the process is stopped, as the real API does between invocations.
"""

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT, EVENT_FILE, RESULT_FILE = int(sys.argv[1]), sys.argv[2], sys.argv[3]
EVENT = open(EVENT_FILE, "rb").read()
REQUEST_ID = "8476a536-e9f4-11e8-9739-2dfe598c3fcd"
served = threading.Event()
done = threading.Event()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == "/2018-06-01/runtime/invocation/next":
            if served.is_set():
                done.wait()
                time.sleep(3600)
            served.set()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Lambda-Runtime-Aws-Request-Id", REQUEST_ID)
            self.send_header("Lambda-Runtime-Deadline-Ms", str(int(time.time() * 1000) + 30000))
            self.send_header("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:countersign")
            self.send_header("Lambda-Runtime-Trace-Id", "Root=1-5bef4de7-ad49b0e87f6ef6c87fc2e700;Parent=9a9197af755a6419;Sampled=1")
            self.send_header("Content-Length", str(len(EVENT)))
            self.end_headers()
            self.wfile.write(EVENT)
        else:
            self.send_response(404)
            self.end_headers()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
        if self.path.endswith("/response"):
            kind = "response"
        elif self.path.endswith("/error"):
            kind = "error"
        else:
            kind = "other"
        with open(RESULT_FILE, "w") as f:
            json.dump({"kind": kind, "path": self.path, "body": body.decode("utf-8", "replace")}, f)
        self.send_response(202)
        self.send_header("Content-Length", "0")
        self.end_headers()
        done.set()


server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
done.wait(timeout=120)
time.sleep(0.2)
server.shutdown()
