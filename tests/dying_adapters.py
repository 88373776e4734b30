"""Bound code that kills its own process, for tests/explorer/test_parallel.py: a worker checking a run
of a sweep dies, and the check must lose nothing. Nothing here ships.

`DiesOnce` kills the process the first time it concretizes a state of the combination
max_steps=3 (the file named by HALTPROOF_TEST_MARKER records that it did, so the rerun lives);
`DiesAlways` kills it every time at max_steps=3; `DiesThrice` (`DiesFourTimes`) kills a worker
process the first three (four) times it concretizes a state of max_steps=3 whose scenario is
`limit`, each death one word in the marker file; `FailsInWorkers` cannot be created in a
worker process (a user error that only a worker meets); `DiesOnDask` kills every Dask worker
that reaches max_steps=3.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from pathlib import Path
from typing import Any

from haltproof.harness.loop_binding import LoopDemoAdapter

DOOMED = 3      # the max_steps of the combination whose worker dies


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class DiesOnce(LoopDemoAdapter):
    def concretize(self, state: dict[str, Any], params: dict[str, int]) -> dict[str, Any]:
        marker = Path(os.environ["HALTPROOF_TEST_MARKER"])
        if params["max_steps"] == DOOMED and not marker.exists():
            marker.write_text(str(os.getpid()))
            _die()
        return super().concretize(state, params)


class DiesAlways(LoopDemoAdapter):
    def concretize(self, state: dict[str, Any], params: dict[str, int]) -> dict[str, Any]:
        if params["max_steps"] == DOOMED and multiprocessing.parent_process() is not None:
            _die()
        return super().concretize(state, params)


class DiesThrice(LoopDemoAdapter):
    DEATHS = 3

    def concretize(self, state: dict[str, Any], params: dict[str, int]) -> dict[str, Any]:
        marker = Path(os.environ["HALTPROOF_TEST_MARKER"])
        dead = marker.read_text().split() if marker.exists() else []
        if (params["max_steps"] == DOOMED and state["scenario"] == "limit" and len(dead) < self.DEATHS
                and multiprocessing.parent_process() is not None):
            marker.write_text(" ".join([*dead, str(os.getpid())]))
            _die()
        return super().concretize(state, params)


class DiesFourTimes(DiesThrice):
    DEATHS = 4


class FailsInWorkers(LoopDemoAdapter):
    def __init__(self) -> None:
        if multiprocessing.parent_process() is not None:
            raise RuntimeError("no adapter in a worker process")


def _on_dask_worker() -> bool:
    try:
        from distributed import get_worker
        get_worker()
    except (ImportError, ValueError):
        return False
    return True


class DiesOnDask(LoopDemoAdapter):
    """Kills every Dask worker that concretizes a state of max_steps=3: the cluster loses them all."""

    def concretize(self, state: dict[str, Any], params: dict[str, int]) -> dict[str, Any]:
        if params["max_steps"] == DOOMED and _on_dask_worker():
            _die()
        return super().concretize(state, params)


class SlowToCreate(LoopDemoAdapter):
    """Takes far longer to create than the deadlines its test gives (the worker's own import)."""

    def __init__(self) -> None:
        import time
        time.sleep(30)


class DiesWhenCreatedInWorkers(LoopDemoAdapter):
    """Kills any worker process that creates it (so a worker dies while importing the run)."""

    def __init__(self) -> None:
        if multiprocessing.parent_process() is not None:
            _die()
