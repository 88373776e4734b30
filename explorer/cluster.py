"""Checking the runs of a sweep on a Dask distributed cluster (`--dask tcp://host:port`).

The same jobs as the local workers (explorer/parallel.py): each run is rebuilt on a Dask
worker from its spec path (or model ref), params and options, so every worker must have
haltproof and the user's code installed and see the spec files at the paths given here
(a shared file system, the same working directory). The report is the serial one.

Faults:
- A scheduler that cannot be reached within CONNECT_SECONDS is `Unreachable`, naming the
  address (the command line makes it exit 2 before anything is checked).
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

import pickle
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from .check import RunResult
from .parallel import (Batch, DoneFn, Slice, SliceResult, Slices, check_shared, expand_slice, jobs_of, lost_run,
                       restore, run_job, shareable)

CONNECT_SECONDS = 5.0       # how long to try reaching the scheduler
NO_WORKERS_SECONDS = 10.0   # how long a cluster may have no worker before its unfinished runs are lost
POLL_SECONDS = 0.5          # how often the waiting loop looks at the cluster's workers
WAIT_SECONDS = 0.02         # how often it looks for finished runs
FETCH_SECONDS = 30.0        # how long fetching one finished run's result may take before it is looked at again


class Unreachable(Exception):
    """The Dask scheduler could not be reached (or distributed is not installed); says which and why."""


def connect(address: str) -> Any:
    """A `distributed.Client` on the scheduler at `address`, or Unreachable within CONNECT_SECONDS."""
    try:
        import distributed
    except ImportError:
        raise Unreachable(f"--dask {address}: the Dask client is not installed: "
                          "pip install 'haltproof[dask]'") from None
    client_class: Any = distributed.Client      # distributed's Client.__init__ has no annotations
    try:
        return client_class(address, timeout=CONNECT_SECONDS, set_as_default=False)
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        why = str(exc).strip() or type(exc).__name__
        raise Unreachable(f"--dask {address}: cannot reach the Dask scheduler within {CONNECT_SECONDS:g} s: "
                          f"{why}") from None


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
