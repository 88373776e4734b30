"""Checking the runs of a sweep on a Dask distributed cluster (`--dask tcp://host:port`).

The same jobs as the local workers (explorer/parallel.py): each run is rebuilt on a Dask
worker from its spec path (or model ref), params and options, so every worker must have
haltproof and the user's code installed and see the spec files at the paths given here
(a shared file system, the same working directory). The report is the serial one.

Faults:
- A scheduler that cannot be reached within CONNECT_SECONDS is `Unreachable`, naming the
  address (the command line makes it exit 2 before anything is checked). So is an address
  where something else answers (`probe`): an HTTP server (the scheduler's dashboard), a
  Dask worker, a server that says nothing or speaks another protocol.
- A worker that dies mid-run: Dask's scheduler runs its tasks again on another worker. A
  task that was on `distributed.scheduler.allowed-failures` + 1 dying workers (Dask's
  KilledWorker) is reported incomplete, as the local pool reports a run that kills its
  workers.
- A cluster left with no worker for NO_WORKERS_SECONDS, or a scheduler that goes away:
  every run not finished by then is reported incomplete (stopped_by "workers_lost"), the
  finished ones as they came; the check ends `incomplete` (exit 3), never hangs.

A single run of bound code is checked here, its BFS levels shared among the cluster's
workers (explorer/parallel.py, `check_shared`): each slice of a level is one task, with the
same faults: a slice whose worker dies runs again elsewhere; one Dask gives up on, or one
the lost cluster leaves, stops the exploration at its states (`workers_lost`, exit 3), with
everything explored before them reported.
"""

from __future__ import annotations

import asyncio
import pickle
import socket
import struct
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from .results import RunResult
from .parallel import (Batch, DoneFn, Slice, SliceResult, Slices, check_shared, expand_slice, jobs_of, lost_run,
                       restore, run_job, shareable)

CONNECT_SECONDS = 5.0       # how long to try reaching the scheduler
GREETING_SECONDS = 2.0      # how long a server may stay silent before it is asked as an HTTP server
DASK_PORT = 8786            # the scheduler's usual port (8787: its dashboard)
NO_WORKERS_SECONDS = 10.0   # how long a cluster may have no worker before its unfinished runs are lost
POLL_SECONDS = 0.5          # how often the waiting loop looks at the cluster's workers
WAIT_SECONDS = 0.02         # how often it looks for finished runs
FETCH_SECONDS = 30.0        # how long fetching one finished run's result may take before it is looked at again


class Unreachable(Exception):
    """The Dask scheduler could not be reached (or distributed is not installed); says which and why.
    `timed_out`: nothing answered in the time given (not a refusal, not another server)."""

    def __init__(self, message: str, timed_out: bool = False):
        super().__init__(message)
        self.timed_out = timed_out


def connect(address: str, seconds: float = CONNECT_SECONDS) -> Any:
    """A `distributed.Client` on the scheduler at `address`, or Unreachable: the address is
    probed first (`probe`, within `seconds`), then distributed's client connects."""
    try:
        import distributed
    except ImportError:
        raise Unreachable(f"--dask {address}: the Dask client is not installed: "
                          "pip install 'haltproof[dask]'") from None
    probe(address, seconds)
    client_class: Any = distributed.Client      # distributed's Client.__init__ has no annotations
    try:
        return client_class(address, timeout=seconds, set_as_default=False)
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        why = str(exc).strip() or type(exc).__name__
        raise Unreachable(f"--dask {address}: cannot reach the Dask scheduler within {seconds:g} s: "
                          f"{why}") from None


# ---------------------------------------------------------------- what answers at the address

HTTP_REQUEST = b"GET / HTTP/1.0\r\n\r\n"
GREETING_MAX = 1 << 16      # bytes: a Dask handshake is about 60


def probe(address: str, seconds: float) -> None:
    """Raise Unreachable unless a Dask scheduler answers at `address` within `seconds`.

    distributed's client cannot be handed just any address: it waits forever on a server
    that accepts and says nothing, takes the first 8 bytes of any other server's answer
    for a message length (an HTTP reply: 3 EiB, a MemoryError), and fails on a Dask worker
    only after leaving a traceback. A Dask server (scheduler or worker) greets every
    connection at once with its handshake; one that has not greeted within
    GREETING_SECONDS is sent `GET /`, which an HTTP server (the scheduler's dashboard)
    answers. A Dask server is then asked who it is (its `identity`). Only tcp:// addresses
    are probed: tls:// and the others go to distributed as they are."""
    where = _endpoint(address)
    if where is None:
        return
    until = time.monotonic() + seconds
    try:
        sock = socket.create_connection(where, timeout=seconds)
    except socket.gaierror as exc:
        raise Unreachable(f"--dask {address}: cannot reach the Dask scheduler within {seconds:g} s: "
                          f"unknown host {where[0]!r} ({exc.strerror})") from None
    except TimeoutError:
        raise Unreachable(f"--dask {address}: cannot reach the Dask scheduler within {seconds:g} s: "
                          "no answer to connecting", timed_out=True) from None
    except OSError as exc:
        why = "nothing listens there (connection refused)" if isinstance(exc, ConnectionRefusedError) \
            else exc.strerror or type(exc).__name__
        raise Unreachable(f"--dask {address}: cannot reach the Dask scheduler within {seconds:g} s: "
                          f"{why}") from None
    with sock:
        got, closed = _answer(sock, min(until, time.monotonic() + GREETING_SECONDS))
        if not got and not closed:
            try:
                sock.sendall(HTTP_REQUEST)
            except OSError:
                closed = True
            else:
                got, closed = _answer(sock, until)
        if _greeting(got):
            try:
                sock.sendall(got)       # complete the handshake: the scheduler logs nothing for it
            except OSError:
                pass                    # it has gone meanwhile: asking for its identity says so
    _judge(address, seconds, got, closed, until)


def _endpoint(address: str) -> tuple[str, int] | None:
    """(host, port) of a tcp:// address (or one without a scheme, which distributed takes as
    tcp), None for another scheme; Unreachable when it names no port."""
    from distributed.comm.addressing import parse_address, parse_host_port
    try:
        scheme, where = parse_address(address)
        if scheme != "tcp":
            return None
        host, port = parse_host_port(where)
    except ValueError as exc:
        raise Unreachable(f"--dask {address}: not a scheduler address ({exc}); it is written "
                          f"tcp://HOST:PORT, the port usually {DASK_PORT}") from None
    return host, port


def _answer(sock: socket.socket, until: float) -> tuple[bytes, bool]:
    """What the server sends before `until` (time.monotonic), read until it is enough to judge
    (`_greeting` decides), and whether the server closed the connection."""
    got = b""
    while _greeting(got) is None:
        left = until - time.monotonic()
        if left <= 0:
            return got, False
        sock.settimeout(left)
        try:
            chunk = sock.recv(4096)
        except TimeoutError:
            return got, False
        except OSError:             # reset by the peer
            return got, True
        if not chunk:
            return got, True
        got += chunk
    return got, False


def _greeting(data: bytes) -> bool | None:
    """Whether `data` is a whole Dask handshake as distributed's TCP comm frames a message (the
    length of what follows; the number of frames; each frame's length; the frames), None
    while it is too short to tell."""
    if len(data) < 16:
        return None
    total: int
    frames: int
    total, frames = struct.unpack_from("=QQ", data)
    if not (16 <= total <= GREETING_MAX and 1 <= frames <= 64):
        return False
    if len(data) < 8 + total:
        return None
    sizes: tuple[int, ...] = struct.unpack_from(f"={frames}Q", data, 16)
    return len(data) == 8 + total and 8 * (1 + frames) + sum(sizes) == total


def _judge(address: str, seconds: float, got: bytes, closed: bool, until: float) -> None:
    """Unreachable saying what answered at `address` instead of a Dask scheduler, if so."""
    lead = f"--dask {address}: "
    if _greeting(got):
        _dask_role(address, max(until - time.monotonic(), 0.5))
        return
    if got.startswith(b"HTTP/"):
        raise Unreachable(lead + "an HTTP server answered (Dask's dashboard?), not a Dask scheduler; "
                                 f"the scheduler's address is usually port {DASK_PORT}")
    if got:
        more = f" (and {len(got) - 24:,} more bytes)" if len(got) > 24 else ""
        raise Unreachable(lead + f"something that is not a Dask scheduler answered: {got[:24]!r}{more}; "
                                 "a Dask scheduler answers with its handshake")
    if closed:
        raise Unreachable(lead + "the server closed the connection without answering: it is not a Dask "
                                 "scheduler, which answers with its handshake")
    raise Unreachable(lead + f"nothing answered within {seconds:g} s: a Dask scheduler answers every "
                             "connection at once (is this its address, and is it running?)", timed_out=True)


def _dask_role(address: str, seconds: float) -> None:
    """Unreachable when the Dask server at `address` is a worker or a nanny, not the scheduler."""
    from distributed import comm as dask_comm
    comm_connect: Any = dask_comm.connect     # distributed's connect has no annotations

    async def identity() -> Any:
        comm = await comm_connect(address, timeout=seconds)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()
    try:
        who = asyncio.run(asyncio.wait_for(identity(), seconds))
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        raise Unreachable(f"--dask {address}: a Dask server answered but did not say what it is within "
                          f"{seconds:g} s ({type(exc).__name__})", timed_out=isinstance(exc, TimeoutError)) from None
    kind = who.get("type") if isinstance(who, dict) else None
    if kind not in ("Worker", "Nanny"):
        return
    scheduler = who.get("scheduler")
    hint = f"; its scheduler is at {scheduler}" if isinstance(scheduler, str) else ""
    raise Unreachable(f"--dask {address}: a Dask {kind.lower()} answered, not the scheduler{hint}")


def check_on_cluster(batches: Sequence[Batch], client: Any, done: DoneFn | None = None) -> list[RunResult]:
    """Every run of every batch on the cluster, in serial order (see the module's faults). A
    single run of bound code has its BFS levels shared among the cluster's workers instead
    (explorer/parallel.py `check_shared`), each level's slices Dask tasks."""
    if shareable(batches):
        (b,) = batches
        result = check_shared(b, DaskSlices(client), _threads(client))
        if done is not None:
            done(1, 1)
        return [result]
    jobs, machines = jobs_of(batches)
    got = _Tasks(client, run_job, jobs, lambda i: done(i, len(jobs)) if done is not None else None).run()
    results: list[RunResult] = []
    for i, j in enumerate(jobs):
        kind, detail = got[i]
        if kind == "error":             # the first in serial order, as a serial check would raise it
            raise detail
        results.append(restore(detail, machines[i], j.options) if kind == "done"
                       else lost_run(machines[i], j.options, detail))
    return results


def _threads(client: Any) -> int:
    """How many tasks the cluster runs at once now (at least 1): a level is cut for that many."""
    try:
        workers = client.scheduler_info().get("workers") or {}
    except Exception:         # the scheduler is gone: the slices will say so
        return 1
    return max(1, sum(int(w.get("nthreads", 1)) for w in workers.values()))


class DaskSlices(Slices):
    """A shared level's slices as Dask tasks; a slice whose workers all died, or that the
    cluster lost, is lost (its states stop the exploration: `workers_lost`)."""

    def __init__(self, client: Any):
        self.client = client

    def run(self, slices: list[Slice]) -> list[SliceResult]:
        got = _Tasks(self.client, expand_slice, slices).run()
        out: list[SliceResult] = []
        for i in range(len(slices)):
            kind, detail = got[i]
            if kind == "done":
                out.append(pickle.loads(detail))
            else:
                out.append((kind, detail, []))
        return out


Outcome = tuple[str, Any]     # ("done", the task's bytes) | ("lost", why) | ("error", the exception)


class _Tasks:
    """Tasks `fn(arg)` on the cluster, one per arg, each taken as it finishes."""

    def __init__(self, client: Any, fn: Callable[[Any], bytes], args: Sequence[Any],
                 tick: Callable[[int], None] | None = None):
        self.client, self.fn, self.args, self.tick = client, fn, args, tick
        self.address = str(client.scheduler.address)
        self.got: dict[int, Outcome] = {}

    def run(self) -> dict[int, Outcome]:
        tag = uuid.uuid4().hex[:12]         # keys of this call only: Dask would reuse a finished key
        futures = {self.client.submit(self.fn, a, key=f"haltproof-{tag}-{i}", pure=False): i
                   for i, a in enumerate(self.args)}
        self._collect(futures)
        return self.got

    def _collect(self, futures: dict[Any, int]) -> None:
        """Take each task as it finishes; give up on the rest once the cluster has had no worker
        (or no scheduler) for NO_WORKERS_SECONDS."""
        from distributed.scheduler import KilledWorker
        waiting = dict(futures)
        alone_since: float | None = None
        looked = time.monotonic()
        while waiting:
            finished = [f for f in sorted((f for f in waiting if f.done()), key=waiting.__getitem__)
                        if self._settle(waiting[f], f, KilledWorker)]
            for fut in finished:
                del waiting[fut]
            if finished or not waiting:
                alone_since = None
                continue
            time.sleep(WAIT_SECONDS)
            if time.monotonic() - looked < POLL_SECONDS:
                continue
            looked = time.monotonic()
            why = self._cluster_lost()
            if why is None:
                alone_since = None
                continue
            alone_since = alone_since if alone_since is not None else looked
            if looked - alone_since >= NO_WORKERS_SECONDS:
                for fut, i in waiting.items():
                    self.got[i] = ("lost", why)
                    fut.cancel()
                return

    def _settle(self, i: int, fut: Any, killed: type[BaseException]) -> bool:
        """Take task i's outcome; False when it is not there after all: its result was on a
        worker that died before it was fetched (Dask computes it again, or the cluster is lost)."""
        if fut.status == "finished":
            try:
                blob = fut.result(timeout=FETCH_SECONDS)
            except TimeoutError:
                return False
            self.got[i] = ("done", blob)
            if self.tick is not None:
                self.tick(sum(1 for k, _ in self.got.values() if k == "done"))
            return True
        if fut.status == "cancelled":    # the scheduler dropped it (restarted, or the client lost it)
            self.got[i] = ("lost", f"the Dask scheduler at {self.address} dropped it")
            return True
        if fut.status != "error":       # "lost": its result died with a worker; Dask computes it again
            return False
        exc = fut.exception()
        if isinstance(exc, killed):
            self.got[i] = ("lost", "every Dask worker that ran it died (Dask gave up on it: KilledWorker)")
        else:
            self.got[i] = ("error", exc)
        return True

    def _cluster_lost(self) -> str | None:
        """Why no task can finish now (no worker left, the scheduler gone), or None."""
        try:
            workers = self.client.scheduler_info().get("workers") or {}
        except Exception as exc:      # the connection to the scheduler is gone, in whatever way
            return f"the Dask scheduler at {self.address} was lost ({type(exc).__name__})"
        if not workers:
            return f"every worker of the Dask cluster at {self.address} was lost"
        return None
