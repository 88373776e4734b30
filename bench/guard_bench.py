"""Median overhead of the runtime guard per event (before + after of one step) on the seed specs.

    python -m bench.guard_bench

Each seed spec at one param combination: a guard is exported, then random walks through its
graph are timed event by event (time.perf_counter_ns around each guard call). No timed
assertion anywhere: the numbers go to stdout."""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from haltproof.cli.guard import write_guard
from haltproof.guard import Guard

ROOT = Path(__file__).resolve().parent.parent
SEEDS = {"loop_demo": {"max_steps": 5, "max_retries": 1}, "budget_runner": {"K": 4, "R": 2},
         "gate_chain": {"B": 2, "N": 1, "A": 1, "T": 3, "P": 2}}


def measure(name: str, pins: dict[str, int], walks: int = 300) -> tuple[float, int]:
    """The median ns per event and the number of events timed."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "g.json"
        write_guard(str(ROOT / "specs" / f"{name}.yaml"), pins, str(path))
        guard = Guard.load(path)
    rng = random.Random(0)
    times: list[int] = []
    for _ in range(walks):
        guard.reset()
        guard.current = rng.choice(guard.table["initial"])
        while True:
            edges = [e for es in guard._edges[guard.current].values() for e in es]
            if not edges:
                break
            e = rng.choice(edges)
            state = guard._user(e.dst)
            t0 = time.perf_counter_ns()
            guard.before(e.action, dict(e.labels))
            t1 = time.perf_counter_ns()
            guard.after(state)
            t2 = time.perf_counter_ns()
            times += [t1 - t0, t2 - t1]
    return statistics.median(times), len(times)


def main() -> int:
    for name, pins in SEEDS.items():
        median, n = measure(name, pins)
        print(f"{name:14} median {median / 1000:7.1f} µs per event ({n} events)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
