"""HTTPJSONPolicy against real servers on 127.0.0.1: the contract, and every boundary.

All servers bind 127.0.0.1 on an ephemeral port, in a thread; every request is bounded
(a few per test, short timeouts). Refused URLs are refused before any connection.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from haltproof.harness.budget.policies import (MAX_RESPONSE_BYTES, PROTOCOL, DeterministicPolicy, HTTPJSONPolicy,
                                     PolicyConfigError, PolicyResponseError, check_policy_url)
from haltproof.harness.budget.policy_server import PolicyServer
from haltproof.harness.budget.runner import Runner
from haltproof.harness.budget.tasks import TASKS
from haltproof.harness.budget.tools import Shop, connect

from conftest import ROOT

CAMERA = TASKS["camera"]
JSON = {"Content-Type": "application/json"}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "shop.sqlite"
    conn = connect(str(path))
    Shop(conn).seed()
    conn.close()
    return path


def run_with(db: Path, policy: Any, K: int = 4, R: int = 2) -> tuple[dict, dict, list]:
    conn = connect(str(db))
    try:
        shop = Shop(conn)
        before = shop.inventory()
        run = Runner(conn, policy).start(CAMERA, K=K, R=R)
        assert shop.inventory() is not None
        return run, {"before": before, "after": shop.inventory()}, shop.ledger()
    finally:
        conn.close()


# ------------------------------------------------------------------ the contract: 5 round trips

def test_contract_four_tools_and_a_finish_in_five_round_trips(db, monkeypatch):
    # a proxy in the environment must not be used: the view goes to 127.0.0.1 and nowhere else
    monkeypatch.setenv("http_proxy", "http://10.255.255.1:9")
    monkeypatch.setenv("HTTP_PROXY", "http://10.255.255.1:9")
    monkeypatch.setenv("no_proxy", "")
    with PolicyServer() as server:
        assert server.url.startswith("http://127.0.0.1:")
        policy = HTTPJSONPolicy(server.url, timeout=5, headers={"Authorization": "Bearer s3cret-token"})
        run, inventory, ledger = run_with(db, policy)
        assert server.round_trips == 5 and policy.round_trips == 5
        requests, headers = list(server.requests), list(server.headers)
    assert run["terminal"]["status"] == "finished" and run["terminal"]["final"] == "reserved"
    assert [o["tool"] for o in run["observations"]] == ["search", "document", "stock", "reserve"]
    assert run["calls"] == 4
    assert len(ledger) == 1 and inventory["after"]["cam-100"][0] == inventory["before"]["cam-100"][0] - 1
    # what crossed the wire: the protocol, the view, growing by one observation per round trip
    for n, body in enumerate(requests):
        assert set(body) == {"protocol", "view"} and body["protocol"] == PROTOCOL
        view = body["view"]
        assert view["task"] == CAMERA and view["calls"] == n and len(view["observations"]) == n
        assert view["pending"] is None and view["K"] == 4 and view["R"] == 2
    # the answers were the default rules': four tools, then the finish
    answers = [DeterministicPolicy().next_action(body["view"]) for body in requests]
    assert [a.get("tool", a["type"]) for a in answers] == ["search", "document", "stock", "reserve", "finish"]
    # the secret header reached the server and nothing else: not the view, not the database
    assert all(h.get("Authorization") == "Bearer s3cret-token" for h in headers)
    assert all(h.get("Content-Type") == "application/json" for h in headers)
    assert "s3cret" not in json.dumps(requests)
    assert "s3cret" not in repr(policy)
    for f in db.parent.glob("shop.sqlite*"):
        assert b"s3cret" not in f.read_bytes()


def test_the_server_binds_only_loopback():
    with pytest.raises(ValueError, match="loopback"):
        PolicyServer(host="0.0.0.0")


# ------------------------------------------------------------------ answers that break a boundary

def _assert_policy_error_nothing_written(run: dict, inventory: dict, ledger: list, words: str) -> None:
    t = run["terminal"]
    assert t["status"] == "policy_error" and t["rule"] == "policy_raised", t
    assert words in t["reason"], t["reason"]
    assert run["calls"] == 0 and run["observations"] == []
    assert inventory["after"] == inventory["before"] and ledger == []


def _serve(responder):
    return PolicyServer(responder=responder)


ABSTAIN = json.dumps({"type": "abstain", "reason": "padded"}).encode()


def test_an_answer_of_exactly_65536_bytes_is_read(db):
    body = ABSTAIN + b" " * (MAX_RESPONSE_BYTES - len(ABSTAIN))
    assert len(body) == MAX_RESPONSE_BYTES
    with _serve(lambda view: (200, JSON, body)) as server:
        run, _, ledger = run_with(db, HTTPJSONPolicy(server.url, timeout=5))
    assert run["terminal"]["status"] == "abstained" and ledger == []


def test_an_answer_over_65536_bytes_is_refused(db):
    body = ABSTAIN + b" " * (MAX_RESPONSE_BYTES + 1 - len(ABSTAIN))
    with _serve(lambda view: (200, JSON, body)) as server:
        run, inventory, ledger = run_with(db, HTTPJSONPolicy(server.url, timeout=5))
    _assert_policy_error_nothing_written(run, inventory, ledger, "65,537 bytes, more than 65,536")


class RawServer:
    """A bare TCP server on 127.0.0.1 that answers each connection with `reply` (or never)."""

    def __init__(self, reply: bytes | None):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.reply = reply
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/"
        self.conns: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        if reply is not None:
            self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        self.conns.append(conn)
        conn.settimeout(5)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return
            data += chunk
        conn.sendall(self.reply)
        conn.close()

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            c.close()
        if self.thread.is_alive():
            self.thread.join(timeout=5)


def test_an_answer_without_length_is_cut_at_65536_bytes(db):
    big = ABSTAIN + b" " * (3 * MAX_RESPONSE_BYTES)
    server = RawServer(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + big)
    try:
        run, inventory, ledger = run_with(db, HTTPJSONPolicy(server.url, timeout=5))
    finally:
        server.close()
    _assert_policy_error_nothing_written(run, inventory, ledger, "larger than 65,536 bytes")


@pytest.mark.parametrize("ctype", ["text/plain", "text/html; charset=utf-8", "application/octet-stream"])
def test_a_wrong_content_type_is_refused(db, ctype):
    answer = json.dumps({"type": "tool", "tool": "search", "args": {"query": "camera"}}).encode()
    with _serve(lambda view: (200, {"Content-Type": ctype}, answer)) as server:
        run, inventory, ledger = run_with(db, HTTPJSONPolicy(server.url, timeout=5))
    _assert_policy_error_nothing_written(run, inventory, ledger, "not JSON")


def test_a_json_content_type_with_parameters_or_suffix_is_accepted(db):
    answer = json.dumps({"type": "abstain"}).encode()
    for ctype in ("application/json; charset=utf-8", "application/vnd.hero+json"):
        with _serve(lambda view: (200, {"Content-Type": ctype}, answer)) as server:  # noqa: B023 (this pass only)
            run, _, _ = run_with(db, HTTPJSONPolicy(server.url, timeout=5))
        assert run["terminal"]["status"] == "abstained", ctype


@pytest.mark.parametrize("body", [b"{not json", b"", b"\xff\xfe", b'{"type": "abstain", "reason": NaN}'],
                         ids=["broken", "empty", "not-utf8", "nan"])
def test_invalid_json_is_refused(db, body):
    with _serve(lambda view: (200, JSON, body)) as server:
        run, inventory, ledger = run_with(db, HTTPJSONPolicy(server.url, timeout=5))
    _assert_policy_error_nothing_written(run, inventory, ledger, "not valid JSON")


def test_an_answer_naming_a_key_twice_is_a_policy_error(db):
    """json.loads keeps the last value: this answer was read as a finish."""
    body = b'{"type": "abstain", "type": "finish", "status": "reserved"}'
    with _serve(lambda view: (200, JSON, body)) as server:
        run, inventory, ledger = run_with(db, HTTPJSONPolicy(server.url, timeout=5))
    _assert_policy_error_nothing_written(run, inventory, ledger, "the policy server's answer is not valid "
                                         "JSON: duplicate key 'type' in a JSON object (which value is "
                                         "meant is ambiguous)")


def test_a_server_that_never_answers_times_out(db):
    server = RawServer(None)                 # listens, never accepts, never answers
    try:
        run, inventory, ledger = run_with(db, HTTPJSONPolicy(server.url, timeout=0.2))
    finally:
        server.close()
    _assert_policy_error_nothing_written(run, inventory, ledger, "no answer within the timeout of 0.2 s")


class DripServer:
    """A TCP server on 127.0.0.1 that answers with `instant`, then sends `dripped` one byte
    every `interval` seconds: each wait is short, the whole answer takes long. The drip is
    finite (so a client without a total deadline ends, late, with the whole answer) and
    stops when the client goes away."""

    def __init__(self, instant: bytes, dripped: bytes, interval: float = 0.25):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.instant, self.dripped, self.interval = instant, dripped, interval
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/"
        self.stop = threading.Event()
        self.client_gone = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            try:
                conn.sendall(self.instant)
                for byte in self.dripped:
                    if self.stop.wait(self.interval):
                        return
                    conn.sendall(bytes([byte]))
            except OSError:
                self.client_gone.set()

    def close(self) -> None:
        self.stop.set()
        self.sock.close()
        self.thread.join(timeout=10)


OK_JSON = b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n"


@pytest.mark.parametrize("instant,dripped", [
    (OK_JSON + b"Content-Length: %d\r\n\r\n" % len(ABSTAIN), ABSTAIN),
    (OK_JSON + b"\r\n", ABSTAIN),
    (b"", OK_JSON + b"\r\n" + ABSTAIN),
], ids=["body-with-length", "body-without-length", "status-and-headers"])
@pytest.mark.slow
def test_a_slow_drip_answer_ends_at_the_total_deadline(db, instant, dripped):
    """Every wait is shorter than the timeout, yet the total deadline (3 x 1 s) ends the
    exchange. Without it the run would wait for the whole drip and then abstain."""
    server = DripServer(instant, dripped)
    try:
        run, inventory, ledger = run_with(db, HTTPJSONPolicy(server.url, timeout=1))
        assert server.client_gone.wait(10)   # the connection was shut down, not left dripping
    finally:
        server.close()
    _assert_policy_error_nothing_written(run, inventory, ledger,
                                         "the policy server's answer took longer than 3.0 s in total")


@pytest.mark.slow
def test_a_slow_drip_answer_ends_the_cli_run_in_policy_error():
    """A drip of 1,000 bytes takes 250 s: without the total deadline the run outlives the
    subprocess timeout, with it the run ends in policy_error."""
    server = DripServer(OK_JSON + b"\r\n", b" " * 1000 + ABSTAIN)
    try:
        ran = subprocess.run([sys.executable, "-m", "haltproof.harness.budget", "run", "--policy", "http",
                              "--url", server.url, "--timeout", "1"],
                             cwd=ROOT, capture_output=True, text=True, timeout=60)
    finally:
        server.close()
    assert ran.returncode == 1, ran.stderr
    assert ("outcome: policy_error: the policy failed: PolicyResponseError: the policy server's answer "
            "took longer than 3.0 s in total") in ran.stdout.splitlines()


def test_an_http_error_status_is_refused(db):
    with _serve(lambda view: (503, JSON, b'{"error": "busy"}')) as server:
        run, inventory, ledger = run_with(db, HTTPJSONPolicy(server.url, timeout=5))
    _assert_policy_error_nothing_written(run, inventory, ledger, "HTTP 503")


def test_a_redirect_is_not_followed(db):
    with _serve(lambda view: (302, {"Location": "http://10.255.255.1/steal", **JSON}, b"{}")) as server:
        run, inventory, ledger = run_with(db, HTTPJSONPolicy(server.url, timeout=5))
        assert server.round_trips == 1
    _assert_policy_error_nothing_written(run, inventory, ledger, "redirect")


def test_a_valid_answer_still_goes_through_the_gate(db):
    """An HTTP answer is re-validated like any other: an unknown tool never runs."""
    answer = json.dumps({"type": "tool", "tool": "drop_table", "args": {}}).encode()
    with _serve(lambda view: (200, JSON, answer)) as server:
        run, inventory, ledger = run_with(db, HTTPJSONPolicy(server.url, timeout=5))
    assert run["terminal"]["rule"] == "unknown_tool" and run["calls"] == 0
    assert inventory["after"] == inventory["before"] and ledger == []


def test_an_early_finish_over_http_is_policy_error(db):
    """Worked example 2, from an external service."""
    answer = json.dumps({"type": "finish", "status": "reserved"}).encode()
    with _serve(lambda view: (200, JSON, answer)) as server:
        run, inventory, ledger = run_with(db, HTTPJSONPolicy(server.url, timeout=5))
        assert server.round_trips == 1
    assert run["terminal"]["rule"] == "unsupported_finish" and ledger == []


def test_the_server_refuses_a_request_without_the_protocol():
    with PolicyServer() as server:
        import urllib.request
        req = urllib.request.Request(server.url, data=b'{"view": {}}', method="POST", headers=JSON)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with pytest.raises(urllib.error.HTTPError) as info:
            opener.open(req, timeout=5)
        assert info.value.code == 400
        assert server.requests == []


def test_the_server_refuses_a_request_naming_a_key_twice():
    body = b'{"protocol": "hero-policy-v1", "view": {}, "view": {"task": {}}}'
    with PolicyServer() as server:
        req = urllib.request.Request(server.url, data=body, method="POST", headers=JSON)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with pytest.raises(urllib.error.HTTPError) as info:
            opener.open(req, timeout=5)
        assert info.value.code == 400
        assert json.loads(info.value.read()) == {"error": "the request is not valid JSON"}
        assert server.requests == []


# ------------------------------------------------------------------ URLs refused before any connection

@pytest.fixture
def no_connections(monkeypatch):
    """A tripwire: any attempt to open a socket connection fails the test."""
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise AssertionError(f"a connection was attempted: {args}")
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    return attempts


@pytest.mark.parametrize("url,words", [
    ("http://10.1.2.3:8080/policy", "loopback"),
    ("http://192.168.0.10/", "loopback"),
    ("http://example.com/policy", "loopback"),
    ("http://localhost:8765/", "loopback"),
    ("http://[::ffff:10.0.0.1]:80/", "loopback"),
    ("http://user:secret@127.0.0.1:8765/", "user:password"),
    ("http://user@127.0.0.1:8765/", "user:password"),
    ("https://token@policy.example.com/", "user:password"),
    ("http://127.0.0.1:8765@10.0.0.1/", "user:password"),
    ("http://127.0.0.1:8765/#frag", "fragment"),
    ("http://127.0.0.1:8765/#", "fragment"),
    ("https://policy.example.com/next#x", "fragment"),
    ("ftp://127.0.0.1/", "scheme"),
    ("file:///etc/passwd", "scheme"),
    ("127.0.0.1:8765", "scheme"),
    ("http://127.0.0.1:99999/", "port"),
    ("http://127.0.0.1\\@10.0.0.1/", "backslash"),
    ("http:///path", "no host"),
], ids=lambda v: v if len(v) < 40 else v[:40])
def test_refused_urls(no_connections, url, words):
    with pytest.raises(PolicyConfigError, match=words):
        HTTPJSONPolicy(url, timeout=1)
    assert no_connections == []


@pytest.mark.parametrize("url", ["http://127.0.0.1:8765/", "http://127.5.6.7/x", "http://[::1]:8765/",
                                 "https://policy.example.com/next", "https://10.0.0.1:8443/"])
def test_accepted_urls_make_no_connection_until_asked(no_connections, url):
    HTTPJSONPolicy(url, timeout=1)
    assert check_policy_url(url) == url
    assert no_connections == []


@pytest.mark.parametrize("timeout", [0, -1, float("inf"), float("nan"), 61, True, "5"])
def test_the_timeout_must_be_finite(timeout):
    with pytest.raises(PolicyConfigError, match="timeout"):
        HTTPJSONPolicy("http://127.0.0.1:8765/", timeout=timeout)


def test_headers_cannot_smuggle_lines():
    with pytest.raises(PolicyConfigError):
        HTTPJSONPolicy("http://127.0.0.1:8765/", headers={"X-A": "b\r\nHost: evil"})


def test_response_errors_are_exceptions_the_runner_turns_into_policy_error():
    assert issubclass(PolicyResponseError, Exception) and not issubclass(PolicyResponseError, PolicyConfigError)
