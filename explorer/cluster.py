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
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any

from haltproof.machine.compiled import Machine

from .check import RunResult
from .parallel import Batch, DoneFn, Job, jobs_of, lost_run, restore, run_job

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
    """Every run of every batch on the cluster, in serial order (see the module's faults)."""
    jobs, machines = jobs_of(batches)
    return _Sweep(client, jobs, machines, done).run()


class _Sweep:
    def __init__(self, client: Any, jobs: list[Job], machines: list[Machine], done: DoneFn | None):
        self.client, self.jobs, self.machines, self.done = client, jobs, machines, done
        self.address = str(client.scheduler.address)
        self.results: dict[int, RunResult] = {}
        self.errors: dict[int, BaseException] = {}

    def run(self) -> list[RunResult]:
        tag = uuid.uuid4().hex[:12]         # keys of this check only: Dask would reuse a finished key
        futures = {self.client.submit(run_job, j, key=f"haltproof-{tag}-{j.index}", pure=False): j.index
                   for j in self.jobs}
        self._collect(futures)
        if self.errors:
            raise self.errors[min(self.errors)]
        return [self.results[i] for i in range(len(self.jobs))]

    def _collect(self, futures: dict[Any, int]) -> None:
        """Take each run as it finishes; give up on the rest once the cluster has had no worker
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
                    self._lose(i, why)
                    fut.cancel()
                return

    def _settle(self, i: int, fut: Any, killed: type[BaseException]) -> bool:
        """Take run i's outcome; False when it is not there after all: its result was on a
        worker that died before it was fetched (Dask computes it again, or the cluster is lost)."""
        if fut.status == "finished":
            try:
                blob = fut.result(timeout=FETCH_SECONDS)
            except TimeoutError:
                return False
            self.results[i] = restore(blob, self.machines[i], self.jobs[i].options)
            if self.done is not None:
                self.done(len(self.results), len(self.jobs))
            return True
        if fut.status == "cancelled":    # the scheduler dropped it (restarted, or the client lost it)
            self._lose(i, f"the Dask scheduler at {self.address} dropped it")
            return True
        if fut.status != "error":       # "lost": its result died with a worker; Dask computes it again
            return False
        exc = fut.exception()
        if isinstance(exc, killed):
            self._lose(i, "every Dask worker that ran it died (Dask gave up on it: KilledWorker)")
        else:
            self.errors[i] = exc
        return True

    def _lose(self, i: int, why: str) -> None:
        self.results[i] = lost_run(self.machines[i], self.jobs[i].options, why)

    def _cluster_lost(self) -> str | None:
        """Why no run can finish now (no worker left, the scheduler gone), or None."""
        try:
            workers = self.client.scheduler_info().get("workers") or {}
        except Exception as exc:      # the connection to the scheduler is gone, in whatever way
            return f"the Dask scheduler at {self.address} was lost ({type(exc).__name__})"
        if not workers:
            return f"every worker of the Dask cluster at {self.address} was lost"
        return None
