"""Benchmark: the hashed state index (explorer/codeset.py, what the vectorized engine uses
above 2^25 declared states) against the dense int32 array it uses below, and against a
Python dict, on one synthetic BFS.

Run from the repository root:  python bench/codeset_bench.py [--repeat 3] [--no-dict]
(about 80 seconds with the dict, 30 without; --states and --batches shrink the run).

The synthetic BFS has as many states as the shared benchmark at Q = 100 (7,212,107 =
101^3 * 7): distinct codes drawn at random from a 2^25 space (the largest a dense index
takes), split into 300 levels. Each code is a candidate 1 to 3 times (2 on average):
its first occurrence in its own level's batch, every repeat in the same batch or the next
one (a state seen again one level later), and each batch is shuffled, so a batch is
~48,000 candidates in random order, about half of them new. Every index does the same
work per batch, the engine's discovery step: find the new codes, number them in order of
first occurrence, and give every candidate its index; then a separate pass looks every
candidate up again (`get`). The hash index runs three ways: growing from empty (what the
engine will do), presized for the final count (no rehash), and on the same codes times
2^37, i.e. spread over a 2^62 space that no dense array could cover. Each figure is the
best of --repeat runs. All results are checked to agree; nothing is timed-asserted.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from haltproof.explorer.codeset import CodeIndex  # noqa: E402

SPACE = 1 << 25
STATES = 7_212_107
BATCHES = 300


def synthetic_bfs(states: int, batches: int, seed: int) -> list[np.ndarray]:
    """The candidate batches (int64 codes) of a BFS that finds `states` distinct codes."""
    rng = np.random.default_rng(seed)
    codes = rng.permutation(SPACE)[:states]                     # discovery order
    level = (np.arange(states) * batches) // states
    repeats = rng.binomial(2, 0.5, size=states)                 # 0, 1 or 2 more candidates
    extra_codes = np.repeat(codes, repeats)
    extra_level = np.minimum(np.repeat(level, repeats) + rng.integers(0, 2, len(extra_codes)), batches - 1)
    all_codes = np.concatenate([codes, extra_codes])
    all_level = np.concatenate([level, extra_level])
    order = np.lexsort((rng.random(len(all_codes)), all_level))  # by level, shuffled within
    all_codes, all_level = all_codes[order], all_level[order]
    cuts = np.searchsorted(all_level, np.arange(1, batches))
    return np.split(all_codes, cuts)


class Run:
    """One index's timings and a checksum of everything it returned."""

    def __init__(self, name: str):
        self.name, self.add_s, self.get_s, self.bytes, self.stored = name, 0.0, 0.0, 0, 0
        self.sums: list[tuple[int, int, int]] = []

    def record(self, first: np.ndarray, index: np.ndarray) -> None:
        self.sums.append((len(first), int(np.sum(first, dtype=np.int64)),
                          int(np.dot(index.astype(np.int64), np.arange(len(index), dtype=np.int64)))))


def run_hash(name: str, batches: list[np.ndarray], expected: int = 0, scale: int = 1) -> Run:
    run = Run(name)
    if scale != 1:
        batches = [b * scale for b in batches]
    t = time.perf_counter()
    ix = CodeIndex(expected)
    run.add_s += time.perf_counter() - t
    total = 0
    for b in batches:
        t = time.perf_counter()
        added = ix.add_new(b, total)
        run.add_s += time.perf_counter() - t
        total += len(added.first)
        run.record(added.first, added.index)
    for b in batches:
        t = time.perf_counter()
        ix.get(b)
        run.get_s += time.perf_counter() - t
    run.bytes, run.stored = ix.nbytes, len(ix)
    return run


def run_dense(batches: list[np.ndarray]) -> Run:
    """What explorer/vengine.py does today with `index_of = np.full(space, -1)`."""
    run = Run("dense int32 array")
    t = time.perf_counter()
    index_of = np.full(SPACE, -1, dtype=np.int32)
    run.add_s += time.perf_counter() - t
    total = 0
    for b in batches:
        t = time.perf_counter()
        dst = index_of[b]
        fresh = np.nonzero(dst < 0)[0]
        fc = b[fresh]
        index_of[fc] = np.iinfo(np.int32).max
        np.minimum.at(index_of, fc, fresh.astype(np.int32))
        first = fresh[index_of[fc] == fresh]
        index_of[b[first]] = np.arange(total, total + len(first), dtype=np.int32)
        dst = index_of[b]
        run.add_s += time.perf_counter() - t
        total += len(first)
        run.record(first, dst)
    for b in batches:
        t = time.perf_counter()
        index_of[b]
        run.get_s += time.perf_counter() - t
    run.bytes, run.stored = index_of.nbytes, total
    return run


def run_dict(batches: list[np.ndarray]) -> Run:
    """A Python dict, fed from and back to numpy arrays as the engine would."""
    run = Run("Python dict")
    d: dict[int, int] = {}
    for b in batches:
        t = time.perf_counter()
        first: list[int] = []
        index: list[int] = []
        get = d.get
        for pos, code in enumerate(b.tolist()):
            i = get(code)
            if i is None:
                i = d[code] = len(d)
                first.append(pos)
            index.append(i)
        f, ix = np.array(first, dtype=np.int64), np.array(index, dtype=np.int32)
        run.add_s += time.perf_counter() - t
        run.record(f, ix)
    for b in batches:
        t = time.perf_counter()
        get = d.get
        np.array([get(code, -1) for code in b.tolist()], dtype=np.int32)
        run.get_s += time.perf_counter() - t
    # the table plus one int object per key and per value (what the dict keeps alive)
    run.bytes = sys.getsizeof(d) + sum(map(sys.getsizeof, d)) + sum(map(sys.getsizeof, d.values()))
    run.stored = len(d)
    return run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--states", type=int, default=STATES)
    ap.add_argument("--batches", type=int, default=BATCHES)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each index; the fastest is reported")
    ap.add_argument("--no-dict", action="store_true", help="skip the (slow) Python dict")
    args = ap.parse_args(argv)
    batches = synthetic_bfs(args.states, args.batches, args.seed)
    candidates = sum(len(b) for b in batches)
    print(f"{args.states:,} states in a 2^25 space, {len(batches)} batches, {candidates:,} candidates "
          f"({candidates / len(batches):,.0f} per batch)")
    plans: list[Callable[[], Run]] = [
        lambda: run_dense(batches),
        lambda: run_hash("CodeIndex", batches),
        lambda: run_hash("CodeIndex, presized", batches, expected=args.states),
        lambda: run_hash("CodeIndex, codes * 2^37", batches, scale=1 << 37),
    ]
    if not args.no_dict:
        plans.append(lambda: run_dict(batches))
    runs: list[Run] = []
    for rep in range(args.repeat):
        for k, plan in enumerate(plans):
            r = plan()
            if rep == 0:
                runs.append(r)
            elif r.sums != runs[k].sums:
                runs[k].sums = r.sums                # a disagreement shows below
            else:
                runs[k].add_s = min(runs[k].add_s, r.add_s)
                runs[k].get_s = min(runs[k].get_s, r.get_s)
    dense = runs[0]
    print()
    print(f"| {'index':<26} | add_new ns/cand | vs dense | get ns/cand | vs dense | bytes/code |")
    print(f"|{'-' * 28}|----------------:|---------:|------------:|---------:|-----------:|")
    for r in runs:
        add_ns, get_ns = r.add_s * 1e9 / candidates, r.get_s * 1e9 / candidates
        print(f"| {r.name:<26} | {add_ns:15.1f} | {r.add_s / dense.add_s:7.2f}x | {get_ns:11.1f} | "
              f"{r.get_s / dense.get_s:7.2f}x | {r.bytes / r.stored:10.1f} |")
    agree = all(r.sums == dense.sums and r.stored == dense.stored for r in runs)
    print()
    print(f"stored codes: {dense.stored:,}; every index returned the same new codes and indices: "
          f"{'yes' if agree else 'NO'}")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
