"""A real HTTP policy service on loopback: the other end of HTTPJSONPolicy.

    with PolicyServer() as server:                 # 127.0.0.1, an ephemeral port, a thread
        policy = HTTPJSONPolicy(server.url)
        ...
        server.round_trips                          # requests answered

It accepts POST {"protocol": "hero-policy-v1", "view": {...}} with a JSON content type
and answers with one action object, produced by the default rules (DeterministicPolicy)
unless another policy or a raw `responder(view) -> (status, headers, body)` is given
(the adversarial tests use one to send oversized, mistyped or broken answers). It only
ever binds a loopback address.
"""

from __future__ import annotations

import ipaddress
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from haltproof.machine import strict_json

from .policies import PROTOCOL, DeterministicPolicy

Responder = Callable[[dict[str, Any]], tuple[int, dict[str, str], bytes]]
MAX_REQUEST_BYTES = 1 << 20


class PolicyServer:
    def __init__(self, policy: Any = None, *, host: str = "127.0.0.1", port: int = 0,
                 responder: Responder | None = None):
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ValueError(f"the policy server binds only a literal loopback address, not {host!r}")
        self.policy = policy or DeterministicPolicy()
        self.responder = responder or self._answer
        self.requests: list[dict[str, Any]] = []        # every accepted request body, in order
        self.headers: list[dict[str, str]] = []
        self.round_trips = 0
        self._lock = threading.Lock()
        self._httpd = HTTPServer((host, port), self._handler_class())     # one request at a time
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        assert isinstance(host, str), "an HTTPServer listens on an IP address"
        return f"http://{host}:{port}/" if ":" not in host else f"http://[{host}]:{port}/"

    def _answer(self, view: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        action = self.policy.next_action(view)
        return 200, {"Content-Type": "application/json"}, json.dumps(action).encode("utf-8")

    def start(self) -> PolicyServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="policy-server", daemon=True)
        self._thread.start()
        return self

    def serve(self, max_requests: int | None = None) -> None:
        """Serve in this thread, until `max_requests` were answered (or forever)."""
        while max_requests is None or self.round_trips < max_requests:
            self._httpd.handle_request()

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
        self._httpd.server_close()

    def __enter__(self) -> PolicyServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _handler_class(self) -> type:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:       # quiet
                pass

            def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
                with server._lock:                  # counted before the client can read the answer
                    server.round_trips += 1
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)

            def _error(self, status: int, message: str) -> None:
                self._send(status, {"Content-Type": "application/json"},
                           json.dumps({"error": message}).encode("utf-8"))

            def do_GET(self) -> None:
                self._error(405, "POST a hero-policy-v1 request")

            def do_POST(self) -> None:
                if self.headers.get_content_type() != "application/json":
                    return self._error(415, "the request must be application/json")
                try:
                    length = int(self.headers.get("Content-Length", ""))
                except ValueError:
                    return self._error(411, "Content-Length is required")
                if not 0 <= length <= MAX_REQUEST_BYTES:
                    return self._error(413, "the request is too large")
                try:
                    body = strict_json.loads(self.rfile.read(length).decode("utf-8"))   # no key twice
                except (UnicodeDecodeError, ValueError):
                    return self._error(400, "the request is not valid JSON")
                if not isinstance(body, dict) or body.get("protocol") != PROTOCOL \
                        or not isinstance(body.get("view"), dict):
                    return self._error(400, f"expected {{\"protocol\": \"{PROTOCOL}\", \"view\": {{...}}}}")
                with server._lock:
                    server.requests.append(body)
                    server.headers.append(dict(self.headers))
                try:
                    status, headers, payload = server.responder(body["view"])
                except Exception as exc:          # the rules failed: a 500, never a dropped connection
                    return self._error(500, f"the policy failed: {type(exc).__name__}: {exc}")
                self._send(status, headers, payload)

        return Handler
