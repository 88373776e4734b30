"""Three real policies. Each turns the observable view (a deep copy) into ONE action proposal.

A policy only proposes: it never sees the database, the tools or the run state itself,
and whatever it returns goes through the same gate (haltproof.harness.budget.gate) - a file or an
HTTP answer is re-validated exactly like the built-in rules.

- DeterministicPolicy: the fixed camera chain, from the structured task and the
  observations so far: search -> document -> stock -> reserve -> finish reserved
  (an info task: search -> document -> finish info); an ambiguous or empty search, or
  too little stock, makes it abstain.
- LocalJSONPolicy: a JSON file holding a list of actions, read at the persisted decision
  index (`decisions`, +1 per prepared tool action, so a resumed run reads on where it
  stopped); past the end of the list it abstains.
- HTTPJSONPolicy: urllib POST of {"protocol": "hero-policy-v1", "view": ...} to an
  explicitly configured URL; the answer is one action object. Boundaries: plain http
  only to a literal loopback address (127.0.0.0/8 or [::1]), https otherwise; no
  user:password@ and no #fragment in the URL; no proxies and no redirects; a finite
  timeout per network wait plus a total deadline on the whole exchange (name lookup,
  connect, send, every read; see `_Exchange`); at most 65,536 bytes;
  a JSON content type; valid JSON. Any breach raises, and the runner ends the run
  in policy_error. Headers (e.g. a token) stay in the policy object: never in the view,
  the database or a printed step.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import math
import socket
import ssl
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from email.message import Message as HTTPMessage
from pathlib import Path
from typing import IO, Any

from haltproof.machine import strict_json
from haltproof.machine.inputs import TooLarge

from .gate import facts_of
from .transitions import json_copy

PROTOCOL = "hero-policy-v1"
MAX_RESPONSE_BYTES = 65_536
DEFAULT_TIMEOUT = 5.0
MAX_TIMEOUT = 60.0
MAX_ACTIONS_BYTES = 1024 * 1024     # an action list for --policy local (docs/tutorials/budget-runner.md)


class PolicyConfigError(ValueError):
    """A policy that cannot be built from its configuration (refused before any request)."""


class PolicyResponseError(RuntimeError):
    """An HTTP policy's answer broke a boundary (size, type, JSON, time) or never came."""


# ------------------------------------------------------------------ action constructors

def tool(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool", "tool": name, "args": args}


def finish(status: str) -> dict[str, Any]:
    return {"type": "finish", "status": status}


def abstain(reason: str) -> dict[str, Any]:
    return {"type": "abstain", "reason": reason}


# ------------------------------------------------------------------ DeterministicPolicy

class DeterministicPolicy:
    """The fixed chain: a repeatable baseline, not planning."""

    name = "deterministic"

    def next_action(self, view: dict[str, Any]) -> dict[str, Any]:
        task = view["task"]
        facts = facts_of(view)
        if facts.hits is None:
            return tool("search", query=task["query"])
        if facts.hit is None:
            n = len(facts.hits)
            return abstain(f"the search for {task['query']!r} found {'nothing' if n == 0 else f'{n} items'}; "
                           "a unique item is needed")
        if not facts.document:
            return tool("document", item=facts.hit)
        if task["goal"] == "info":
            return finish("info")
        if facts.receipt is not None:
            return finish("reserved")
        if facts.stock is None:
            return tool("stock", item=facts.hit)
        if facts.stock.available < task["quantity"]:
            return abstain(f"only {facts.stock.available} of {facts.hit} available, "
                           f"{task['quantity']} needed")
        return tool("reserve", item=facts.hit, quantity=task["quantity"], version=facts.stock.version)

    __call__ = next_action


# ------------------------------------------------------------------ LocalJSONPolicy

class LocalJSONPolicy:
    """Actions from a file, one per decision; the executor re-validates every one."""

    name = "local"

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            actions = strict_json.read(self.path, MAX_ACTIONS_BYTES, "an action list")
        except TooLarge as exc:
            raise PolicyConfigError(f"{path}: {exc}") from None
        except OSError as exc:
            raise PolicyConfigError(f"{path}: cannot read the action list: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise PolicyConfigError(f"{path}: the action list is not UTF-8 text (byte {exc.start})") from None
        except json.JSONDecodeError as exc:
            raise PolicyConfigError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
        except strict_json.DuplicateKeyError as exc:
            raise PolicyConfigError(f"{path}: {exc}") from None
        if not isinstance(actions, list):
            raise PolicyConfigError(f"{path}: the action list must be a JSON list of action objects")
        self.actions = actions

    def next_action(self, view: dict[str, Any]) -> Any:
        i = view["decisions"]
        if 0 <= i < len(self.actions):
            return json_copy(self.actions[i])
        return abstain(f"the action list {self.path.name} is exhausted after {len(self.actions)} actions")

    __call__ = next_action


# ------------------------------------------------------------------ HTTPJSONPolicy

def check_policy_url(url: Any) -> str:
    """Refuse, before any connection, a URL the HTTP policy must not talk to."""
    if not isinstance(url, str) or not url:
        raise PolicyConfigError("the policy URL must be a non-empty string")
    if any(c.isspace() or ord(c) < 32 or c == "\\" for c in url):
        raise PolicyConfigError(f"refused policy URL {url!r}: it contains whitespace, control "
                                "characters or a backslash")
    if "#" in url:
        raise PolicyConfigError(f"refused policy URL {url!r}: a #fragment is not allowed")
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise PolicyConfigError(f"refused policy URL {url!r}: the scheme must be http (loopback only) "
                                "or https")
    if "@" in parts.netloc:
        raise PolicyConfigError(f"refused policy URL {url!r}: user:password@ in a URL is not allowed "
                                "(pass credentials as headers)")
    host = parts.hostname
    if not host:
        raise PolicyConfigError(f"refused policy URL {url!r}: no host")
    try:
        _ = parts.port              # raises ValueError on a malformed port
    except ValueError:
        raise PolicyConfigError(f"refused policy URL {url!r}: the port is not a number in 0..65535") from None
    if scheme == "http":
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            address = None
        if address is None or not address.is_loopback:
            raise PolicyConfigError(
                f"refused policy URL {url!r}: plain http only to a loopback address (write 127.0.0.1 "
                "or [::1], not a name); any other host needs https")
    return url


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect could lead the view to another address: refuse it."""

    def redirect_request(self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str,
                         headers: HTTPMessage, newurl: str) -> urllib.request.Request | None:
        raise PolicyResponseError(f"the policy server answered with a redirect ({code}) to "
                                  f"{newurl!r}; redirects are refused")


class HTTPJSONPolicy:
    """POST the view to a policy service and read one action back."""

    name = "http"

    def __init__(self, url: str, *, timeout: float = DEFAULT_TIMEOUT, headers: dict[str, str] | None = None,
                 max_bytes: int = MAX_RESPONSE_BYTES, total_timeout: float | None = None):
        self.url = check_policy_url(url)
        self.timeout = checked_seconds(timeout, "timeout")
        self.total_timeout = checked_seconds(total_timeout if total_timeout is not None else 3 * self.timeout,
                                      "total_timeout")
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or not 1 <= max_bytes <= MAX_RESPONSE_BYTES:
            raise PolicyConfigError(f"max_bytes must be an integer in 1..{MAX_RESPONSE_BYTES}")
        self.max_bytes = max_bytes
        self._headers = {}
        for k, v in (headers or {}).items():
            if not isinstance(k, str) or not isinstance(v, str) or any(c in k + v for c in "\r\n\0"):
                raise PolicyConfigError("headers must be strings without line breaks")
            self._headers[k] = v
        self.round_trips = 0

    def __repr__(self) -> str:               # never shows the headers
        return f"HTTPJSONPolicy({self.url!r}, timeout={self.timeout})"

    def next_action(self, view: dict[str, Any]) -> Any:
        check_policy_url(self.url)           # the URL is configuration; re-checked before each request
        body = json.dumps({"protocol": PROTOCOL, "view": view}).encode("utf-8")
        request = urllib.request.Request(self.url, data=body, method="POST",
                                         headers={**self._headers, "Content-Type": "application/json",
                                                  "Accept": "application/json"})
        exchange = _Exchange()
        data = exchange.run(lambda: self._exchange(request, exchange), self.total_timeout)
        if data is None:
            raise PolicyResponseError(f"the policy server's answer took longer than "
                                      f"{self.total_timeout} s in total")
        try:
            text = data.decode("utf-8")
            return strict_json.loads(text, parse_constant=_no_constant)     # a key twice: ambiguous
        except (UnicodeDecodeError, ValueError) as exc:
            raise PolicyResponseError(f"the policy server's answer is not valid JSON: {exc}") from None

    __call__ = next_action

    def _exchange(self, request: urllib.request.Request, exchange: _Exchange) -> bytes:
        """One request and its answer, every failure as a PolicyResponseError (runs in the
        exchange's worker thread)."""
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect(),
                                             _HTTPHandler(exchange), _HTTPSHandler(exchange))
        wait = min(self.timeout, self.total_timeout)
        try:
            with opener.open(request, timeout=wait) as response:
                self.round_trips += 1
                return self._read(response)
        except PolicyResponseError:
            raise
        except urllib.error.HTTPError as exc:
            self.round_trips += 1
            raise PolicyResponseError(f"the policy server answered HTTP {exc.code} {exc.reason}") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise PolicyResponseError(f"no answer within the timeout of {self.timeout} s") from None
            raise PolicyResponseError(f"cannot reach the policy server: {exc.reason}") from None
        except TimeoutError:
            raise PolicyResponseError(f"no answer within the timeout of {self.timeout} s") from None
        except (OSError, http.client.HTTPException) as exc:
            raise PolicyResponseError(f"the connection to the policy server failed: {exc}") from None

    def _read(self, response: Any) -> bytes:
        ctype = response.headers.get_content_type()
        if ctype != "application/json" and not (ctype.startswith("application/") and ctype.endswith("+json")):
            raise PolicyResponseError(f"the policy server's answer has content type "
                                      f"{response.headers.get('Content-Type')!r}, not JSON")
        length = response.headers.get("Content-Length")
        if length is not None and length.strip().isdigit() and int(length) > self.max_bytes:
            raise PolicyResponseError(f"the policy server's answer is {int(length):,} bytes, more than "
                                      f"{self.max_bytes:,}")
        chunks, size = [], 0
        while True:
            chunk = response.read(min(8192, self.max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > self.max_bytes:
                raise PolicyResponseError(f"the policy server's answer is larger than {self.max_bytes:,} bytes")
        return b"".join(chunks)


class _Exchange:
    """One request and its answer, bounded as a whole by the total deadline.

    urllib bounds each network wait by the socket timeout, but not their sum: a server
    that sends one byte per wait keeps a single `read` (which waits for all the bytes
    it asked for) going for hours, and the name lookup has no timeout at all. So the
    exchange runs in a daemon worker thread and the caller waits for it until the
    deadline, whatever the worker is blocked in. At the deadline every socket the
    exchange opened is shut down, which ends a wait blocked on it at once, so the
    abandoned worker exits instead of lingering (a socket opened later is shut down as
    it is registered). The one wait this cannot end early is a TLS handshake in
    progress (the socket being wrapped is no longer ours to shut down); that worker
    then ends at its handshake's own per-wait timeouts, while the caller has long
    moved on.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._expired = False
        self._result: bytes | None = None
        self._error: BaseException | None = None

    def run(self, work: Any, seconds: float) -> bytes | None:
        """`work()`'s result, its exception raised here, or None when the deadline passed."""
        worker = threading.Thread(target=self._work, args=(work,), name="http-policy-exchange", daemon=True)
        worker.start()
        worker.join(seconds)
        if worker.is_alive():
            self.expire()
            return None
        if self._error is not None:
            raise self._error
        return self._result

    def _work(self, work: Any) -> None:
        try:
            self._result = work()
        except BaseException as exc:       # handed to the caller's thread, which raises it
            self._error = exc
        finally:
            with self._lock:
                self._sockets.clear()

    def track(self, sock: socket.socket) -> socket.socket:
        """Register a socket the exchange opened (shut down at once when already expired)."""
        with self._lock:
            if not self._expired:
                self._sockets.append(sock)
                return sock
        _shut(sock)
        return sock

    def expire(self) -> None:
        with self._lock:
            self._expired = True
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    """End every wait on `sock`; a socket already closed (fd -1) or detached is left alone."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _tracked(base: type[http.client.HTTPConnection], exchange: _Exchange) -> Callable[..., http.client.HTTPConnection]:
    """`base` (an http.client connection class) registering its sockets with `exchange`."""
    class Tracked(base):  # type: ignore[misc, valid-type]  # a base chosen at run time is not a static type
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._create_connection = lambda *a, **k: exchange.track(socket.create_connection(*a, **k))

        def connect(self) -> None:
            super().connect()
            exchange.track(self.sock)       # for https: the TLS socket that replaced the TCP one
    return Tracked


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, exchange: _Exchange):
        super().__init__()
        self._connection = _tracked(http.client.HTTPConnection, exchange)

    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(self._connection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, exchange: _Exchange):
        super().__init__()
        self._connection = _tracked(http.client.HTTPSConnection, exchange)

    def https_open(self, req: urllib.request.Request) -> Any:
        # HTTPSHandler.__init__ keeps its SSL context in _context, which typeshed does not declare
        context: ssl.SSLContext | None = getattr(self, "_context", None)
        return self.do_open(self._connection, req, context=context)


def checked_seconds(value: Any, what: str) -> float:
    """`value` as seconds if it is a finite number in (0, MAX_TIMEOUT]; a PolicyConfigError otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 < value <= MAX_TIMEOUT:
        raise PolicyConfigError(f"{what} must be a finite number of seconds in (0, {MAX_TIMEOUT:g}], "
                                f"got {value!r}")
    return float(value)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
