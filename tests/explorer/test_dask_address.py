"""`--dask ADDRESS` where no Dask scheduler answers (explorer/cluster.py `probe`): exit 2 naming
what answered instead, never a hang, a traceback or distributed's 3 EiB allocation.

Each test serves something else on 127.0.0.1 (port 0) from a thread of this process: a
listener that never answers, an HTTP server, a server speaking another protocol, one that
closes every connection. No Dask process is started (tests/explorer/test_dask.py starts real ones), so
these run in a fraction of a second with the probe's waits shortened.
"""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from haltproof.explorer import cluster

from conftest import LOOP_DEMO

pytest.importorskip("distributed")


@pytest.fixture(autouse=True)
def short_waits(monkeypatch):
    monkeypatch.setattr(cluster, "CONNECT_SECONDS", 0.5)
    monkeypatch.setattr(cluster, "GREETING_SECONDS", 0.1)


@contextmanager
def serving(answer: Callable[[socket.socket], None] | None) -> Iterator[str]:
    """A TCP server on a free port whose connections get `answer` (None: never accepted, so
    connecting succeeds and nothing is ever said); yields its tcp:// address."""
    listener = socket.create_server(("127.0.0.1", 0))
    address = f"tcp://127.0.0.1:{listener.getsockname()[1]}"
    stop = threading.Event()

    def loop() -> None:
        listener.settimeout(0.05)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                answer(conn)                # type: ignore[misc]
    thread = threading.Thread(target=loop, daemon=True) if answer is not None else None
    if thread is not None:
        thread.start()
    try:
        yield address
    finally:
        stop.set()
        if thread is not None:
            thread.join()
        listener.close()


class Quiet(http.server.BaseHTTPRequestHandler):
    """Answers every request 501 (any HTTP answer will do), logging nothing to stderr."""

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def http_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"tcp://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def only_error(ran, message: str, code: int = 2) -> None:
    assert (ran.code, ran.out, ran.err) == (code, "", f"{message}\n")


def test_a_listener_that_never_answers_is_exit_2_not_a_hang(cli):
    """distributed's client waited forever for the handshake of a server that accepts and says nothing."""
    with serving(None) as address:
        ran = cli("check", LOOP_DEMO, "--dask", address)
    only_error(ran, f"error: --dask {address}: nothing answered within 0.5 s: a Dask scheduler answers every "
                    "connection at once (is this its address, and is it running?)")


def test_an_http_server_is_named_with_the_schedulers_usual_port(cli):
    """An HTTP reply (the dashboard's 400 to distributed's handshake) was read as a message
    length: numpy asked for exabytes, exit 4. The probe asks GET / and names an HTTP server."""
    with http_server() as address:
        ran = cli("check", LOOP_DEMO, "--dask", address)
    only_error(ran, f"error: --dask {address}: an HTTP server answered (Dask's dashboard?), not a Dask "
                    "scheduler; the scheduler's address is usually port 8786")


def test_a_server_speaking_another_protocol_is_shown_what_it_said(cli):
    with serving(lambda conn: conn.sendall(b"SSH-2.0-OpenSSH_9.6 Ubuntu-3ubuntu13\r\n")) as address:
        ran = cli("check", LOOP_DEMO, "--dask", address)
    only_error(ran, f"error: --dask {address}: something that is not a Dask scheduler answered: "
                    "b'SSH-2.0-OpenSSH_9.6 Ubun' (and 14 more bytes); a Dask scheduler answers with its "
                    "handshake")


def test_garbage_framed_like_a_huge_dask_message_is_refused_before_distributed_reads_it(cli):
    """The first 8 bytes of a Dask message are its length: these say 2**64 - 1."""
    with serving(lambda conn: conn.sendall(b"\xff" * 40)) as address:
        ran = cli("check", LOOP_DEMO, "--dask", address)
    only_error(ran, f"error: --dask {address}: something that is not a Dask scheduler answered: "
                    + repr(b"\xff" * 24) + " (and 16 more bytes); a Dask scheduler answers with its handshake")


def test_a_server_that_closes_the_connection_is_exit_2(cli):
    with serving(lambda conn: None) as address:
        ran = cli("check", LOOP_DEMO, "--dask", address)
    only_error(ran, f"error: --dask {address}: the server closed the connection without answering: it is "
                    "not a Dask scheduler, which answers with its handshake")


def test_a_closed_port_says_nothing_listens_there(cli):
    with socket.socket() as s:     # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    ran = cli("check", LOOP_DEMO, "--dask", address)
    only_error(ran, f"error: --dask {address}: cannot reach the Dask scheduler within 0.5 s: nothing listens "
                    "there (connection refused)")


def test_an_address_without_a_port_is_exit_2(cli):
    ran = cli("check", LOOP_DEMO, "--dask", "tcp://localhost")
    only_error(ran, "error: --dask tcp://localhost: not a scheduler address (missing port number in address "
                    "'localhost'); it is written tcp://HOST:PORT, the port usually 8786")


def test_a_shorter_timeout_bounds_the_wait_and_is_incomplete(cli, monkeypatch):
    """--timeout bounds the whole check: a silent server met before it passes leaves the check
    incomplete (exit 3, nothing checked), not "bad address" (it might have answered later)."""
    monkeypatch.setattr(cluster, "CONNECT_SECONDS", 30.0)
    with serving(None) as address:
        ran = cli("check", LOOP_DEMO, "--dask", address, "--timeout", "0.3")
    only_error(ran, f"haltproof: incomplete: --timeout reached while waiting for the Dask scheduler at "
                    f"{address} to answer", code=3)
