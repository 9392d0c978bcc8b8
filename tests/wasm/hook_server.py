"""A policy hook for tests: a real HTTP server on 127.0.0.1 that checks mcpward's signature.

It verifies X-Mcpward-Signature as a hook author would, then answers whatever the test queued.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mcpward.guards.http_hook import SIGNATURE_HEADER, TIMESTAMP_HEADER

SECRET = "s" * 40


@dataclass
class HookServer:
    url: str
    answers: list[tuple[int, bytes, float]] = field(default_factory=list)  # status, body, delay
    seen: list[dict[str, Any]] = field(default_factory=list)
    bad_signatures: int = 0

    def answer(self, body: Any, status: int = 200, delay: float = 0.0) -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.answers.append((status, raw, delay))


@contextmanager
def running_hook_server(secret: str = SECRET) -> Iterator[HookServer]:
    state = HookServer(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            timestamp = self.headers[TIMESTAMP_HEADER]
            expected = (
                "v1="
                + hmac.new(
                    secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256
                ).hexdigest()
            )
            fresh = abs(time.time() - int(timestamp)) < 300
            if not (fresh and hmac.compare_digest(expected, self.headers[SIGNATURE_HEADER])):
                state.bad_signatures += 1
                self.send_response(401)
                self.end_headers()
                return
            state.seen.append(json.loads(body))
            status, raw, delay = (
                state.answers.pop(0) if state.answers else (200, b'{"decision":"allow"}', 0)
            )
            time.sleep(delay)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the gateway gave up waiting (the slow-hook test)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/guard/evaluate"
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
