"""What "terminates" means on an explored graph: no deadlock, no cycle, bounded runs.

All functions read the explored graph only (states expanded so far). Every deadlock,
cycle or long run they return really exists, even when the exploration stopped early;
only their absence needs a complete exploration to mean anything.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import numpy as np

from .budget import EVERY, tick, ticking
from .exploration import ExploredGraph

# How much an edge counts in `longest_run`: None (1 each), a function of (source, edge), or,
# with a `Peeled` order, one integer per edge.
Weight: TypeAlias = Callable[[int, int], int] | np.ndarray | None


def find_deadlock(ex: ExploredGraph) -> int | None:
    """The shallowest expanded non-terminal state with no successor (None if there is none).

    A state some of whose transitions failed to evaluate is not called a deadlock: that
    failure is already reported by `well_defined`/`domains`. States are numbered in BFS
    order on both engines, so the first such state is a shallowest one.
    """
    return ex.first_deadlock()


class Peeled(list[Any]):
    """A topological order found level by level (the vector form): `levels[k]` holds the
    states whose longest path from a source of the graph has k edges. It keeps the numpy
    arrays of the graph it orders, which `longest_run` reads whole."""

    def __init__(self, levels: Sequence[np.ndarray | slice], edge_start: np.ndarray, e_dst: np.ndarray,
                 parent: np.ndarray):
        super().__init__()
        self.levels = levels
        self.edge_start, self.e_dst, self.parent = edge_start, e_dst, parent


def _out_edges(edge_start: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The edge indices leaving `nodes`, and for each the position of its node in `nodes`."""
    starts = edge_start[nodes]
    lengths = edge_start[nodes + 1] - starts
    owner = np.repeat(np.arange(len(nodes)), lengths)
    first = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return first + np.arange(len(owner)), owner


def peeled_order(n: int, levels: Sequence[tuple[int, int]], forward: bool, edge_start: np.ndarray,
                 e_dst: np.ndarray, parent: np.ndarray) -> Peeled | None:
    """`topological_order` on numpy arrays: the first n states (expanded) peeled level by
    level from the sources, or None when some lie on a cycle. A forward graph's BFS levels
    (`levels`: first and one-past-last state of each) are already such an order."""
    if forward:
        # every edge goes from one BFS level to the next: the levels are a topological order
        return Peeled([slice(a, b) for a, b in levels if b > a and a < n], edge_start, e_dst, parent)
    dst = e_dst[:edge_start[n]]
    indeg = np.bincount(dst[dst < n], minlength=n).astype(np.int32)
    level = np.nonzero(indeg == 0)[0]
    peeled: list[np.ndarray | slice] = []
    done = 0
    while len(level):
        tick()
        peeled.append(level)
        done += len(level)
        edges, _ = _out_edges(edge_start, level)
        d = e_dst[edges]
        d = d[d < n]
        if len(d) == 0:
            break
        hit, times = np.unique(d, return_counts=True)
        indeg[hit] -= times.astype(np.int32)
        level = hit[indeg[hit] == 0]
    return Peeled(peeled, edge_start, e_dst, parent) if done == n else None


def topological_order(ex: ExploredGraph) -> Sequence[int] | None:
    """Expanded states in an order where every edge goes forward, or None if there is a cycle."""
    return ex.topological_order()


def kahn_order(ex: ExploredGraph) -> list[int] | range | None:
    """`topological_order` state by state (Kahn's algorithm), for graphs in Python arrays."""
    if ex.forward:                         # states are numbered level by level
        return range(ex.expanded)
    n = ex.expanded
    indeg = array("q", bytes(8 * n))
    for e in ticking(range(ex.edge_start[n])):
        d = ex.e_dst[e]
        if d < n:
            indeg[d] += 1
    queue = deque(i for i in range(n) if indeg[i] == 0)
    order: list[int] = []
    while queue:
        i = queue.popleft()
        if not len(order) % EVERY:
            tick()
        order.append(i)
        for e in ex.edges_of(i):
            d = ex.e_dst[e]
            if d < n:
                indeg[d] -= 1
                if indeg[d] == 0:
                    queue.append(d)
    return order if len(order) == n else None


def find_lasso(ex: ExploredGraph) -> tuple[int, list[int]] | None:
    """A cycle among expanded states, reached by a shortest prefix.

    Returns (state where the cycle starts, the edge indices around the cycle), choosing
    the cycle state of least BFS depth and the shortest cycle through it.
    """
    n = ex.expanded
    import networkx as nx    # only a spec with a cycle needs it; it costs startup time
    g = nx.DiGraph()
    for i in ticking(ex.cyclic_candidates()):
        for e in ex.edges_of(i):
            d = int(ex.e_dst[e])
            if d < n:
                g.add_edge(i, d)
    on_cycle: set[int] = set()
    for comp in nx.strongly_connected_components(g):
        if len(comp) > 1:
            on_cycle |= comp
        else:
            (v,) = comp
            if g.has_edge(v, v):
                on_cycle.add(v)
    if not on_cycle:
        return None
    start = min(on_cycle, key=lambda v: (ex.depth[v], v))
    # Shortest cycle through `start`: BFS from it until an edge leads back.
    back: dict[int, int] = {}    # state -> edge that reached it
    queue = deque([start])
    seen = {start}
    while queue:
        v = queue.popleft()
        if not len(seen) % EVERY:
            tick()
        for e in ex.edges_of(v):
            d = ex.e_dst[e]
            if d == start:
                edges = [e]
                while v != start:
                    edges.append(back[v])
                    v = _src(ex, back[v])
                return start, edges[::-1]
            if d < n and d not in seen and d in on_cycle:
                seen.add(d)
                back[d] = e
                queue.append(d)
    raise AssertionError("a state on a cycle has no cycle through it")


def unpeeled_states(n: int, edge_start: np.ndarray, e_dst: np.ndarray) -> list[int]:
    """Of the first n states (expanded), those not removed by peeling sources (and, from the
    other end, sinks), ascending: every cycle lies among them, and they are usually few, so
    only they go into the graph library (`cyclic_candidates` on numpy arrays)."""
    dst = e_dst[:edge_start[n]]
    src = np.repeat(np.arange(n), np.diff(edge_start[:n + 1]))
    keep = dst < n
    src, dst = src[keep], dst[keep]
    alive = np.ones(n, dtype=bool)
    while True:
        tick()
        e = alive[src] & alive[dst]
        has_in = np.bincount(dst[e], minlength=n) > 0
        has_out = np.bincount(src[e], minlength=n) > 0
        now = alive & has_in & has_out
        if now.sum() == alive.sum():
            return [int(i) for i in np.nonzero(alive)[0]]
        alive = now


def _src(ex: ExploredGraph, edge: int) -> int:
    """The state an edge leaves from (edges are stored grouped by source)."""
    lo, hi = 0, ex.expanded
    while lo < hi:
        mid = (lo + hi) // 2
        if ex.edge_start[mid + 1] <= edge:
            lo = mid + 1
        else:
            hi = mid
    return lo


def is_forward(ex: ExploredGraph) -> bool:
    """Whether every edge leads exactly one BFS level deeper (true of loops driven by a
    counter). Then the BFS levels are a topological order and the longest run is a
    shortest path to a deepest state."""
    return ex.forward                      # both engines note it while they sweep


def longest_run(ex: ExploredGraph, order: Sequence[int], weight: Weight) -> tuple[int, int, list[int] | None, int]:
    """The run from an initial state with the most counted transitions in an acyclic graph.

    `weight(src, edge)` says how much an edge counts (None: every transition counts 1; or
    0/1 by a step expression; the vector engine passes an array). Returns (count, initial
    state, the edge indices of that run, the state it ends in). In a forward graph with
    every transition counted, the run is the BFS path to the first deepest state and the
    edges are None: no stored edge is needed, and both engines pick the same run.
    """
    if weight is None and is_forward(ex):
        deepest = ex.first_deepest()
        v = deepest
        while ex.parent[v] != -1:
            v = int(ex.parent[v])
        return int(ex.depth[deepest]), v, None, deepest
    if isinstance(order, Peeled):
        assert not callable(weight), "the engine that peels its order weighs its edges in an array"
        return _longest_vector(ex, order, weight)
    assert not isinstance(weight, np.ndarray), "per-edge weights come with a Peeled order"
    count: Callable[[int, int], int] = weight if weight is not None else (lambda src, e: 1)
    n = ex.expanded
    best = [0] * len(ex.states)         # Python ints: a sum of large terms is exact, never wrapped
    choice = array("q", [-1]) * len(ex.states)
    for i in ticking(reversed(order)):
        top, pick = 0, -1
        for e in ex.edges_of(i):
            d = ex.e_dst[e]
            value = count(i, e) + (best[d] if d < n else 0)
            if value > top:
                top, pick = value, e
        best[i], choice[i] = top, pick
    inits = [i for i in range(len(ex.states)) if ex.parent[i] == -1]
    start = max(inits, key=lambda i: (best[i], -i))
    edges, v = [], start
    while v < n and choice[v] != -1:
        edges.append(choice[v])
        v = ex.e_dst[choice[v]]
    return best[start], start, edges, v


INT64_MAX = 2 ** 63 - 1


def _total_type(order: Peeled, weight: np.ndarray | None) -> Any:
    """int64 where no total along a run can leave it, Python ints (object arrays) otherwise.
    A run visits the levels of the order in increasing order, so it has at most one edge
    per level (the last one may lead to an unexpanded state); each edge weighs at most the
    largest |weight| (every weight fits int64: the vector engine bounded its expression)."""
    heaviest = 1 if weight is None or len(weight) == 0 else int(np.abs(weight).max())
    return np.int64 if heaviest * (len(order.levels) + 1) <= INT64_MAX else object


def _longest_vector(ex: ExploredGraph, order: Peeled, weight: np.ndarray | None) -> tuple[int, int, list[int], int]:
    """`longest_run` on numpy arrays: best value per state, level by level from the sinks.
    `weight` is None (every edge counts 1) or an array of per-edge weights."""
    n = ex.expanded
    edge_start, e_dst, parent = order.edge_start, order.e_dst, order.parent
    total_t = _total_type(order, weight)
    if total_t is object and weight is not None:
        weight = weight.astype(object)          # Python ints
    best = np.zeros(len(parent), dtype=total_t)
    for level in reversed(order.levels):
        tick()
        if isinstance(level, slice):            # a BFS level: its states and edges are contiguous
            lo, hi = int(edge_start[level.start]), int(edge_start[level.stop])
            if hi == lo:
                continue
            d = e_dst[lo:hi]
            w = 1 if weight is None else weight[lo:hi]
            value = w + np.where(d < n, best[np.minimum(d, n - 1)], 0)
            counts = np.diff(edge_start[level.start:level.stop + 1])
            has = counts > 0
            starts = (edge_start[level.start:level.stop] - lo)[has]
            top = np.zeros(level.stop - level.start, dtype=total_t)
            top[has] = np.maximum(np.maximum.reduceat(value, starts), 0)
            best[level] = top
            continue
        edges, owner = _out_edges(edge_start, level)
        if len(edges) == 0:
            continue
        d = e_dst[edges]
        w = 1 if weight is None else weight[edges]
        value = w + np.where(d < n, best[d], 0)
        top = np.zeros(len(level), dtype=total_t)
        np.maximum.at(top, owner, value)
        best[level] = top
    inits = np.nonzero(parent == -1)[0]
    start = int(inits[np.argmax(best[inits])])
    run: list[int] = []
    v = start
    while v < n and best[v] > 0:          # walk down one edge that achieves the best value
        for e in ex.edges_of(v):
            to = int(e_dst[e])
            w = 1 if weight is None else int(weight[e])
            if w + (int(best[to]) if to < n else 0) == best[v]:
                run.append(e)
                v = to
                break
        else:
            raise AssertionError("no edge achieves the longest value")
    return int(best[start]), start, run, v
