"""What "terminates" means on an explored graph: no deadlock, no cycle, bounded runs.

All functions read the explored graph only (states expanded so far). Every deadlock,
cycle or long run they return really exists, even when the exploration stopped early;
only their absence needs a complete exploration to mean anything.
"""

from __future__ import annotations

from array import array
from collections import deque
from typing import Callable

import networkx as nx

from explorer.engine import Exploration


def find_deadlock(ex: Exploration) -> int | None:
    """The shallowest expanded non-terminal state with no successor (None if there is none).

    A state some of whose transitions failed to evaluate is not called a deadlock: that
    failure is already reported by `well_defined`/`domains`.
    """
    best = None
    for i in range(ex.expanded):
        if not ex.terminal[i] and not ex.errored[i] and ex.edge_start[i] == ex.edge_start[i + 1]:
            if best is None or ex.depth[i] < ex.depth[best]:
                best = i
    return best


def topological_order(ex: Exploration) -> list[int] | None:
    """Expanded states in an order where every edge goes forward, or None if there is a cycle."""
    n = ex.expanded
    indeg = array("q", bytes(8 * n))
    for e in range(ex.edge_start[n]):
        d = ex.e_dst[e]
        if d < n:
            indeg[d] += 1
    queue = deque(i for i in range(n) if indeg[i] == 0)
    order = []
    while queue:
        i = queue.popleft()
        order.append(i)
        for e in ex.edges_of(i):
            d = ex.e_dst[e]
            if d < n:
                indeg[d] -= 1
                if indeg[d] == 0:
                    queue.append(d)
    return order if len(order) == n else None


def find_lasso(ex: Exploration, order: list[int] | None = None) -> tuple[int, list[int]] | None:
    """A cycle among expanded states, reached by a shortest prefix.

    Returns (state where the cycle starts, the edge indices around the cycle), choosing
    the cycle state of least BFS depth and the shortest cycle through it.
    """
    if order is not None:
        return None
    n = ex.expanded
    g = nx.DiGraph()
    for i in range(n):
        for e in ex.edges_of(i):
            d = ex.e_dst[e]
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


def _src(ex: Exploration, edge: int) -> int:
    """The state an edge leaves from (edges are stored grouped by source)."""
    lo, hi = 0, ex.expanded
    while lo < hi:
        mid = (lo + hi) // 2
        if ex.edge_start[mid + 1] <= edge:
            lo = mid + 1
        else:
            hi = mid
    return lo


def longest_run(ex: Exploration, order: list[int],
                weight: Callable[[int, int], int]) -> tuple[int, int, list[int]]:
    """The run from an initial state with the most counted transitions in an acyclic graph.

    `weight(src, edge)` says how much an edge counts (1 for every transition, or 0/1 by a
    step expression). Returns (count, initial state, the edge indices of that run).
    """
    n = ex.expanded
    best = array("q", bytes(8 * len(ex.states)))
    choice = array("q", [-1]) * len(ex.states)
    for i in reversed(order):
        top, pick = 0, -1
        for e in ex.edges_of(i):
            d = ex.e_dst[e]
            value = weight(i, e) + (best[d] if d < n else 0)
            if value > top:
                top, pick = value, e
        best[i], choice[i] = top, pick
    inits = [i for i in range(len(ex.states)) if ex.parent[i] == -1]
    start = max(inits, key=lambda i: (best[i], -i))
    edges, v = [], start
    while v < n and choice[v] != -1:
        edges.append(choice[v])
        v = ex.e_dst[choice[v]]
    return best[start], start, edges
