"""The fair bad-run search (properties/liveness.py) against its definition, on random small
graphs: a fair infinite run that keeps the obligation open exists iff some set of open,
non-terminal states is strongly connected (with at least one edge inside) and honours every
assumption (weak: its action is taken inside or disabled in one of its states; strong:
taken inside or enabled in none of them). The reference enumerates every subset; the search
must agree, and the lasso it returns must really be one: a closed walk through open states,
fair under every assumption.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from haltproof.properties.liveness import Assumption, fair_lasso

ACTIONS = 2
MOSTLY = st.sampled_from([True, True, True, False])


@dataclass
class FakeGraph:
    """Just what the search reads of an explored graph (properties/exploration.py)."""

    succ: list[list[tuple[int, int]]]        # per state: (action, successor), in edge order
    terminal: list[bool]
    edge_start: list[int] = field(default_factory=list)
    e_dst: list[int] = field(default_factory=list)
    e_action: list[int] = field(default_factory=list)
    depth: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        for out in self.succ:
            self.edge_start.append(len(self.e_dst))
            for a, d in out:
                self.e_dst.append(d)
                self.e_action.append(a)
        self.edge_start.append(len(self.e_dst))
        self.depth = _depths(self.succ)

    @property
    def expanded(self) -> int:
        return len(self.succ)

    def edges_of(self, i: int) -> range:
        return range(self.edge_start[i], self.edge_start[i + 1])

    def run_ends(self) -> np.ndarray:
        return np.array([t or not out for t, out in zip(self.terminal, self.succ)], dtype=bool)

    def cyclic_candidates(self) -> list[int]:
        return list(range(len(self.succ)))


def _depths(succ: list[list[tuple[int, int]]]) -> list[int]:
    depth = [-1] * len(succ)
    depth[0] = 0
    queue = deque([0])
    while queue:
        v = queue.popleft()
        for _, d in succ[v]:
            if depth[d] < 0:
                depth[d] = depth[v] + 1
                queue.append(d)
    return depth


@st.composite
def graphs(draw: Any) -> tuple[FakeGraph, np.ndarray, list[Assumption]]:
    """A graph whose every state is reachable from state 0 and numbered in BFS order."""
    n = draw(st.integers(1, 6))
    raw = [draw(st.lists(st.tuples(st.integers(0, ACTIONS - 1), st.integers(0, n - 1)), min_size=1, max_size=3, unique=True))
           for _ in range(n)]
    order, seen = [0], {0}                  # renumber the reachable part in BFS order
    for v in order:
        for _, d in raw[v]:
            if d not in seen:
                seen.add(d)
                order.append(d)
    new = {v: k for k, v in enumerate(order)}
    terminal = [not draw(MOSTLY) and k > 0 for k in range(len(order))]
    succ = [[] if terminal[new[v]] else [(a, new[d]) for a, d in raw[v]] for v in order]
    open_ = np.array([draw(MOSTLY) for _ in order], dtype=bool)
    fairness = [Assumption(draw(st.booleans()), draw(st.integers(0, ACTIONS - 1)), None, "")
                for _ in range(draw(st.integers(1, 2)))]
    return FakeGraph(succ, terminal), open_, fairness


def _fair_set(g: FakeGraph, part: set[int], fairness: list[Assumption]) -> bool:
    inside = [(v, a, d) for v in part for a, d in g.succ[v] if d in part]
    if not inside or not _strongly_connected(g, part):
        return False
    for f in fairness:
        taken = any(a == f.action for _, a, _ in inside)
        enabled = [any(a == f.action for a, _ in g.succ[v]) for v in part]
        if not taken and (all(enabled) if not f.strong else any(enabled)):
            return False
    return True


def _strongly_connected(g: FakeGraph, part: set[int]) -> bool:
    def reach(start: int, forward: bool) -> set[int]:
        out, queue = {start}, [start]
        while queue:
            v = queue.pop()
            nxt = ([d for _, d in g.succ[v] if d in part] if forward
                   else [u for u in part for _, d in g.succ[u] if d == v])
            for d in nxt:
                if d not in out:
                    out.add(d)
                    queue.append(d)
        return out
    first = next(iter(part))
    return reach(first, True) == part == reach(first, False)


def reference(g: FakeGraph, open_: np.ndarray, fairness: list[Assumption]) -> bool:
    """Whether a fair bad infinite run exists, by the definition: every candidate subset."""
    nodes = [v for v in range(len(g.succ)) if open_[v] and not g.terminal[v] and g.succ[v]]
    return any(_fair_set(g, set(c), fairness) for k in range(1, len(nodes) + 1) for c in combinations(nodes, k))


def _check_lasso(g: FakeGraph, open_: np.ndarray, fairness: list[Assumption], start: int, cycle: tuple[int, ...]) -> None:
    at, states = start, [start]
    for e in cycle:
        assert g.edge_start[at] <= e < g.edge_start[at + 1], "each edge leaves the state the walk is in"
        at = g.e_dst[e]
        states.append(at)
    assert at == start and cycle
    assert all(open_[v] and not g.terminal[v] for v in states)
    for f in fairness:
        taken = any(g.e_action[e] == f.action for e in cycle)
        enabled = [any(a == f.action for a, _ in g.succ[v]) for v in states]
        assert taken or (not all(enabled) if not f.strong else not any(enabled))


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, derandomize=True)
@given(graphs())
def test_the_fair_search_agrees_with_the_definition(case: tuple[FakeGraph, np.ndarray, list[Assumption]]) -> None:
    g, open_, fairness = case
    found = fair_lasso(g, open_, fairness)      # type: ignore[arg-type]  # the fake reads as the protocol
    assert (found is not None) == reference(g, open_, fairness)     # (a weak assumption's detour: test_fairness.py)
    if found is not None:
        assert found.start is not None
        _check_lasso(g, open_, fairness, found.start, found.cycle)
