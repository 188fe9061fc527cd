"""A seed-style agent: what a pod behind the auth proxy sees.

It reads the X-NovaOS-* headers the proxy injects, as the Python SDK's
ExecutionContext.from_headers does, and answers them as JSON. Standard
library only. It binds 127.0.0.1 on a free port and prints
"listening <port>" once it accepts connections.

GET /__count (asked directly, not through the proxy) answers how many
requests reached the agent, so a test can tell that a refused request
never did.
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SEED_HEADERS = (
    "X-NovaOS-User-Id",
    "X-NovaOS-Tenant-Id",
    "X-NovaOS-Run-Id",
    "X-NovaOS-Agent-Id",
    "X-NovaOS-Instance-Id",
    "X-NovaOS-Execution-Token",
)

lock = threading.Lock()
count = 0


class Agent(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        pass  # a request line may carry nothing secret, but stay quiet

    def answer(self, status, body):
        data = json.dumps(body, sort_keys=True).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_any(self):
        global count
        if self.path == "/__count":
            with lock:
                n = count
            self.answer(200, {"count": n})
            return
        with lock:
            count += 1
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        context = {name: self.headers.get(name) for name in SEED_HEADERS}
        platform = sorted(
            name for name in self.headers.keys() if name.lower().startswith("x-novaos-")
        )
        self.answer(
            200,
            {
                "method": self.command,
                "path": self.path,
                "context": context,
                "platform_headers": platform,
                "authorization": self.headers.get("Authorization"),
                "body_bytes": len(body),
            },
        )

    do_GET = handle_any
    do_POST = handle_any
    do_PUT = handle_any


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Agent)
    print("listening %d" % server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
