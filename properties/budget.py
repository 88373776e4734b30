"""The check's bounds (`--timeout`, `--max-memory`) over the analyses that follow an exploration.

An exploration stops itself at its bounds (explorer/engine.py). What follows it reads the
explored graph in loops of its own, some long: probabilities and expected totals (policy
iteration, Gaussian elimination, interval iteration), cycles and fair cycles, longest runs,
vacuity, the expressions of counts and measures on every transition. Each such loop calls
`tick()` every so often (per component, pivot or 16 rounds of iteration, every 4,096 states or
edges): a look at the clock costs about 0.1 us, one at resident memory about 20 us, so memory
is read at most every MEMORY_EVERY seconds, and whenever an analysis starts.

Once a bound is reached `tick` raises `Stopped`, and raises it again at every later tick of
the run: the analyses not yet done stop at their first. The caller (explorer/check.py) sets
the bounds for a run with `bounded`, names each analysis with `analysis` (a MemoryError inside
one is a bound too: memory ran out) and turns each Stopped into `unknown`, saying why.
Without `bounded` (an export, a graph) `tick` only finds nothing to look at.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

TIMEOUT, MEMORY = "timeout", "max_memory"      # a run's `stopped_by`, as the engines say it
MEMORY_EVERY = 0.05      # seconds between two looks at resident memory inside an analysis
EVERY = 4096             # items between two ticks of a loop over states or edges (`ticking`)
clock = time.monotonic   # the bounds' clock (tests replace it, to pass a deadline at a chosen place)

T = TypeVar("T")


class Stopped(BaseException):
    """A bound of the check was reached during an analysis. A BaseException, so that an
    analysis' own `except Exception` does not take it for a failure of its own."""

    def __init__(self, bound: str, doing: str, first: str, out_of_memory: bool = False):
        super().__init__(f"{bound} while {first}")
        self.bound = bound                  # TIMEOUT or MEMORY
        self.doing = doing                  # the analysis it stopped
        self.first = first                  # the analysis running when the bound was reached
        self.out_of_memory = out_of_memory  # a MemoryError, not the --max-memory limit


@dataclass
class Limits:
    """One run's bounds: the deadline (on `clock`), the memory limit and how to read memory;
    the analysis running, and once reached, which bound and where."""

    end: float | None
    max_memory: int | None
    rss: Callable[[], int]
    doing: str = "the analyses after the exploration"
    hit: Stopped | None = None
    next_look: float = -math.inf

    def check(self, memory: bool = False) -> None:
        """Raise Stopped when a bound is reached (`memory`: read the memory now, whenever last)."""
        if self.hit is None:
            now = clock() if self.end is not None or self.max_memory is not None else 0.0
            if self.end is not None and now >= self.end:
                self.hit = Stopped(TIMEOUT, self.doing, self.doing)
            elif self.max_memory is not None and (memory or now >= self.next_look):
                self.next_look = now + MEMORY_EVERY
                if self.rss() > self.max_memory:
                    self.hit = Stopped(MEMORY, self.doing, self.doing)
        if self.hit is not None:
            raise self.stop()

    def stop(self, out_of_memory: bool = False) -> Stopped:
        """The Stopped for the analysis running (after `hit`, or memory running out in it)."""
        if self.hit is None:
            self.hit = Stopped(MEMORY, self.doing, self.doing, out_of_memory)
        return Stopped(self.hit.bound, self.doing, self.hit.first, self.hit.out_of_memory)


class _Local(threading.local):
    limits: Limits | None = None


_local = _Local()


def tick() -> None:
    """Raise Stopped when a bound of the run is reached: call it every so often in a long loop."""
    limits = _local.limits
    if limits is not None:
        limits.check()


def ticking(items: Iterable[T], every: int = EVERY) -> Iterator[T]:
    """`items`, with a `tick()` before the first and then every `every` of them (for loops
    written as comprehensions)."""
    for k, item in enumerate(items):
        if not k % every:
            tick()
        yield item


def expire(doing: str) -> None:
    """The deadline passed outside `tick` (in the user's own code, while `doing`): every
    analysis after stops at once, saying where it was reached."""
    limits = _local.limits
    if limits is not None and limits.hit is None:
        limits.hit = Stopped(TIMEOUT, doing, doing)


def current() -> str:
    """The analysis running in this thread ("" outside `bounded`)."""
    limits = _local.limits
    return "" if limits is None else limits.doing


@contextmanager
def bounded(seconds: float | None, max_memory: int | None, rss: Callable[[], int]) -> Iterator[Limits]:
    """Bound every analysis run inside (in this thread): `seconds` from now (None: no deadline)
    and `max_memory` bytes of resident memory as `rss()` reads it (None: no limit). The Limits
    say afterwards whether a bound was reached, and where."""
    saved = _local.limits
    limits = Limits(None if seconds is None else clock() + seconds, max_memory, rss)
    _local.limits = limits
    try:
        yield limits
    finally:
        _local.limits = saved


@contextmanager
def analysis(doing: str) -> Iterator[None]:
    """Name the analysis run inside (`doing`, a phrase after "while": "solving the probability
    of p"), for the message of its Stopped. The bounds, memory included, are looked at first:
    no analysis starts past one. A MemoryError inside is a bound as well."""
    limits = _local.limits
    if limits is None:
        yield
        return
    saved = limits.doing
    limits.doing = doing
    try:
        limits.check(memory=True)
        yield
    except Stopped:
        raise limits.stop() from None
    except MemoryError:
        raise limits.stop(out_of_memory=True) from None
    finally:
        limits.doing = saved
