"""What one state space split across machines would send between them: a simulation (issue 16).

Run from the repository root:  python -m bench.partition [--q 100] [--workers 2,4,8]

The design in docs/how-to/scaling.md ("One state space across machines") partitions the states by a
hash of their code: worker `owner(code)` keeps the visited set and the parents of the codes it
owns, and the BFS is level-synchronous (every worker expands its part of level L, sends each
successor to its owner, and level L+1 starts when every worker has received everything).
This explores G(Q, 9Q, 3) once, keeping every edge, and counts what that exchange would carry
per level for each worker count: successors that cross to another worker (every edge is
sent, since the sender cannot know whether its target is already visited), the same after
each sender drops its own duplicates per level, and the bytes (a message is the 8-byte code
and the 8-byte global number of its parent, the parent kept for the shortest traces).
Nothing here is timed: the figures are counts, the same on every machine.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from haltproof.explorer.options import Options
from haltproof.explorer.check import prepare
from haltproof.explorer.vengine import explore_vector
from haltproof.machine.errors import SpecError
from haltproof.machine.spec import load_spec
from haltproof.machine.vectorize import vectorize

from .run import REPO, SPEC, expected_counts

MESSAGE_BYTES = 16     # the successor's code and its parent's global state number


def owner(codes: np.ndarray, workers: int) -> np.ndarray:
    """The worker owning each code: a 64-bit mix (splitmix64's finalizer) modulo `workers`, so
    neighbouring codes (which differ in a low digit) spread over the workers."""
    z = codes.astype(np.uint64)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z % np.uint64(workers)).astype(np.int64)


def simulate(q: int, counts: list[int]) -> list[dict[str, object]]:
    """One row per worker count: totals and the largest level's exchange."""
    spec = load_spec(REPO / SPEC)
    (m,) = prepare(spec, Options(pins={"Q": [q], "B": [9 * q], "A": [3]}, engine="vector"))
    ex = explore_vector(vectorize(m), keep_edges=True)
    states, edges = len(ex.codes), len(ex.e_dst)
    want = expected_counts(q)
    assert (states, edges) == want, f"G({q}) explored {states} states, {edges} transitions; expected {want}"
    src = np.repeat(np.arange(states, dtype=np.int64), np.diff(np.asarray(ex.edge_start, dtype=np.int64)))
    dst = np.asarray(ex.e_dst, dtype=np.int64)
    level_of = np.zeros(states, dtype=np.int64)
    for k, (lo, hi) in enumerate(ex.levels):
        level_of[lo:hi] = k
    rows = []
    for n in counts:
        own = owner(ex.codes, n)
        cross = own[src] != own[dst]
        per_level = np.bincount(level_of[src[cross]], minlength=len(ex.levels))
        # a sender drops its own duplicates (the same target twice in one level) before sending
        key = np.unique(np.stack([level_of[src[cross]], own[src[cross]], dst[cross]]), axis=1)
        deduped = np.bincount(key[0], minlength=len(ex.levels))
        share = np.bincount(own, minlength=n)
        rows.append({"workers": n, "states": states, "transitions": edges, "levels": len(ex.levels),
                     "crossing": int(cross.sum()), "crossing_share": float(cross.mean()),
                     "sent_after_dedup": int(deduped.sum()),
                     "bytes": int(deduped.sum()) * MESSAGE_BYTES,
                     "largest_level_bytes": int(deduped.max()) * MESSAGE_BYTES,
                     "largest_level_undeduped": int(per_level.max()),
                     "imbalance": float(share.max() / share.mean())})
    return rows


def table(q: int, rows: list[dict[str, object]]) -> str:
    first = rows[0]
    out = [f"G({q}, {9 * q}, 3): {first['states']:,} states, {first['transitions']:,} transitions, "
           f"{first['levels']} BFS levels (one barrier each)", "",
           "| workers | successors sent to another worker | share of all transitions | after each sender's "
           "own dedup | bytes in all | largest level | busiest worker / mean |",
           "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['workers']} | {r['crossing']:,} | {r['crossing_share']:.1%} | {r['sent_after_dedup']:,} | "
                   f"{r['bytes'] / 1e6:,.1f} MB | {r['largest_level_bytes'] / 1e6:,.2f} MB | {r['imbalance']:.4f} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.partition", description=__doc__.split("\n\n")[0])
    ap.add_argument("--q", type=int, default=100, help="the model's size Q (default 100)")
    ap.add_argument("--workers", default="2,4,8", help="worker counts, comma-separated (default 2,4,8)")
    args = ap.parse_args(argv)
    parts = args.workers.split(",")
    if not all(w.strip().isdigit() and int(w) >= 2 for w in parts):
        ap.error(f"--workers: comma-separated counts of at least 2, not {args.workers!r}")
    try:
        rows = simulate(args.q, [int(w) for w in parts])
    except SpecError as exc:            # a Q the benchmark model does not declare
        ap.error(f"--q {args.q}: {exc}")
    print(table(args.q, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
