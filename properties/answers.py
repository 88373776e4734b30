"""Answers a person acts on, from a probability answer and its witness policy (issue 33).

- The most probable run: under a fixed policy the MDP is a Markov chain, and the run of
  highest probability from a start to a goal state is a shortest path for the weights
  -log p (Dijkstra: p <= 1, so a run's probability never grows as it goes on). On the
  exact MDP (a small model) the search compares exact products (fractions); on arrays it
  runs in C over -log p as floats (scipy.sparse.csgraph), which picks the run; either way
  the run's probability is the exact product of its steps' exact weights.
- Where the policy's choice matters: the states the policy reaches from its start in which
  two enabled choices have different values; and those states grouped into the rows of a
  decide table over the user's vars (`cubes`).
- Which weights the answer moves most with (`sensitivity`): under the witness policy held
  fixed, the exact derivative of the probability when a weighted choice's mass moves toward
  one of its values (`Toward`), from the policy's Markov chain: P = A P + b on the states
  that can still go either way, so dP = (I - A)^-1 (dA P + db), one elimination per
  strongly connected component shared by every direction.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from . import sparse as S
from .budget import EVERY, tick
from . import probability as P
from .probability import MDP, ONE, ZERO, Choice, Flags, Policy, Values

BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]


@dataclass
class Run:
    """A run from `start` along explored `edges`, each step with its exact probability."""

    start: int
    edges: list[int]
    odds: list[Fraction]

    @property
    def probability(self) -> Fraction:
        out = ONE
        for p in self.odds:
            out *= p
        return out


# ---------------------------------------------------------------- the most probable run

def likeliest(mdp: MDP, policy: Policy, start: int, goal: Callable[[int], bool],
              avoid: Callable[[int], bool]) -> Run | None:
    """The most probable run under `policy` from `start` to a goal state that enters no
    `avoid` state (None: there is none); among equally probable runs, a shortest. Exact."""
    best: dict[int, tuple[Fraction, int]] = {start: (ONE, 0)}
    came: dict[int, tuple[int, int, Fraction]] = {}
    heap: list[tuple[Fraction, int, int]] = [(-ONE, 0, start)]
    done: set[int] = set()
    popped = 0
    while heap:
        _, steps, s = heapq.heappop(heap)
        if s in done:
            continue
        done.add(s)
        popped += 1
        if not popped % EVERY:
            tick()
        if goal(s):
            return _unwind(came, start, s)
        if s not in policy or not mdp.choices[s]:
            continue
        p_s = best[s][0]
        for t, p, e in mdp.choices[s][policy[s]].outcomes:
            if not p or t in done or avoid(t):
                continue
            key = (p_s * p, steps + 1)
            old = best.get(t)
            if old is None or key[0] > old[0] or (key[0] == old[0] and key[1] < old[1]):
                best[t] = key
                came[t] = (s, e, p)
                heapq.heappush(heap, (-key[0], key[1], t))
    return None


def _unwind(came: dict[int, tuple[int, int, Fraction]], start: int, end: int) -> Run:
    edges: list[int] = []
    odds: list[Fraction] = []
    at = end
    while at != start:
        s, e, p = came[at]
        edges.append(e)
        odds.append(p)
        at = s
    return Run(start, edges[::-1], odds[::-1])


def likeliest_arrays(m: S.Sparse, rows: npt.NDArray[np.int64], start: int, goal: BoolArray,
                     avoid: BoolArray) -> Run | None:
    """`likeliest` over arrays: Dijkstra in C on -log p over the policy's chain (its row per
    state); the steps' exact weights from the model's `kind_prob`."""
    sp = S._scipy()
    expand = (rows >= 0) & ~goal
    on = (rows[m.edge_src] == m.edge_row) & expand[m.edge_src] & ~avoid[m.dst] & (m.prob > 0)
    src, dst, cost = m.edge_src[on], m.dst[on], -np.log(m.prob[on])
    order = np.lexsort((cost, dst, src))            # per (src, dst) its most probable edge first
    src, dst, cost = src[order], dst[order], cost[order]
    first = np.r_[True, (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])] if len(src) else np.zeros(0, dtype=bool)
    graph = sp.csr_matrix((np.maximum(cost[first], 0.0), (src[first], dst[first])), shape=(m.n, m.n))
    tick()
    dist, pred = sp.csgraph.dijkstra(graph, indices=start, return_predecessors=True)
    if goal[start]:
        return Run(start, [], [])
    ends = np.flatnonzero(goal & np.isfinite(dist))
    if not len(ends):
        return None
    at = int(ends[np.argmin(dist[ends])])
    path = [at]
    while at != start:
        at = int(pred[at])
        path.append(at)
    path.reverse()
    edges: list[int] = []
    odds: list[Fraction] = []
    for s, t in zip(path, path[1:]):
        r = int(rows[s])
        lo, hi = int(m.edge_start[r]), int(m.edge_start[r + 1])
        here = [i for i in range(lo, hi) if int(m.dst[i]) == t]
        i = max(here, key=lambda i: (m.prob[i], -i))
        edges.append(int(m.edge[i]))
        odds.append(m.kind_prob[int(m.edge_kind[i])])
    return Run(start, edges, odds)


# ---------------------------------------------------------------- where the choice matters

_NOWHERE = Choice(None, [])          # a choice with no successor: its value is its own

def reached(mdp: MDP, policy: Policy, start: int, stop: Callable[[int], bool]) -> list[int]:
    """The states a run under `policy` can visit from `start`, not going on from a `stop` state."""
    seen = {start}
    order = [start]
    for i, s in enumerate(order):
        if not i % EVERY:
            tick()
        if stop(s) or s not in policy or not mdp.choices[s]:
            continue
        for t in mdp.choices[s][policy[s]].targets:
            if t not in seen:
                seen.add(t)
                order.append(t)
    return order


def matters(mdp: MDP, s: int, values: dict[int, Fraction], reward: Callable[[int, int], Fraction] | None) -> bool:
    """Whether two enabled choices of state s have different values (a missing value is
    infinite: an expected total that some run never finishes). A choice that leaves s as it
    is counts for what taking it every time gives: no target (0), or no end (infinite); its
    one-step value would be s's own, equal to the policy's however bad staying is."""
    seen: set[Fraction | None] = set()
    for ci, c in enumerate(mdp.choices[s]):
        total: Fraction | None = reward(s, ci) if reward is not None else ZERO
        if c.targets == [s]:
            total = ZERO if reward is None else None
            c = _NOWHERE
        for t, p in c.dist:
            if t not in values:
                total = None
                break
            assert total is not None
            total += p * values[t]
        seen.add(total)
        if len(seen) > 1:
            return True
    return False


def reached_arrays(m: S.Sparse, rows: npt.NDArray[np.int64], start: int, stop: BoolArray) -> BoolArray:
    """`reached` over arrays: a breadth-first search in C over the policy's chain."""
    sp = S._scipy()
    on = (rows[m.edge_src] == m.edge_row) & ~stop[m.edge_src]
    graph = sp.csr_matrix((np.ones(int(on.sum()), dtype=np.int8), (m.edge_src[on], m.dst[on])), shape=(m.n, m.n))
    tick()
    order = sp.csgraph.breadth_first_order(graph, start, directed=True, return_predecessors=False)
    out = np.zeros(m.n, dtype=bool)
    out[order] = True
    return out


def matters_arrays(m: S.Sparse, lo: FloatArray, hi: FloatArray, const: FloatArray, expected: bool) -> BoolArray:
    """Per state: two of its rows have values that certainly differ (their intervals, from
    the per-state bounds lo..hi and widened by the rounding of the product, are apart); a row
    that stays put counts as in `matters`."""
    q_lo = const + m.matrix @ lo
    q_hi = const + m.matrix @ hi
    for q, sign in ((q_lo, -1.0), (q_hi, 1.0)):
        size = np.where(np.isfinite(q), np.abs(q), 0.0)
        q += sign * S._slack(1, m.width) * np.maximum(size, 1.0)
    stays = np.bincount(m.edge_row[m.dst != m.edge_src], minlength=m.rows) == 0
    q_lo[stays] = q_hi[stays] = np.inf if expected else 0.0
    out = np.zeros(m.n, dtype=bool)
    has = np.flatnonzero(m.has_rows)
    if not len(has):
        return out
    starts = m.row_start[has]
    with np.errstate(invalid="ignore"):
        out[has] = np.maximum.reduceat(q_lo, starts) > np.minimum.reduceat(q_hi, starts)
    return out


# ---------------------------------------------------------------- sensitivity to the weights

@dataclass(frozen=True)
class Toward:
    """A direction to move a declared weighted choice's mass in: value `value` of choice
    `choice` of `action` gets weight `weight + eps`, and each other value v of that choice
    `w_v * (1 - weight - eps) / (1 - weight)`, so the weights still sum to 1 and keep their
    ratios. Only for 0 < weight < 1: a value of weight 1 leaves no mass to take, and moving
    mass to a value of weight 0 would add transitions the chain does not have (a jump, not
    a slope); every value of positive weight keeps it, so the chain's shape stays."""

    action: str
    choice: str
    value: Any
    weight: Fraction

    def rate(self, drawn: Any) -> Fraction:
        """d/deps of the weight of value `drawn`, divided by that weight (an edge's
        probability is a product of weights: its derivative is itself times this)."""
        return 1 / self.weight if drawn == self.value else -1 / (1 - self.weight)


def towards(weights: Iterable[tuple[str, str, Mapping[Any, Fraction]]]) -> list[Toward]:
    """Every direction of the declared weights (action, choice, value -> weight)."""
    return [Toward(action, choice, value, w) for action, choice, table in weights
            for value, w in table.items() if 0 < w < 1]


def sensitivity(mdp: MDP, policy: Policy, start: int, target: Flags, directions: Sequence[Toward],
                drawn: Callable[[int], tuple[str, Mapping[str, Any]]]) -> tuple[Fraction, list[Fraction]]:
    """The probability of reaching `target` from `start` under `policy`, and its exact
    derivative along each direction; `drawn(edge)` is the edge's action and its choices'
    values. A component past the exact limit raises probability.TooLarge."""
    order = reached(mdp, policy, start, lambda s: bool(target[s]))
    members = {s for s in order if not target[s] and s in policy and mdp.choices[s]}
    outside: Values = {s: ONE if target[s] else ZERO for s in order if s not in members}
    value = {**outside, **P._evaluate(mdp, policy, members, outside, None)}
    slopes: list[Values] = [dict.fromkeys(outside, ZERO) for _ in directions]
    consts: list[dict[int, Fraction]] = [{} for _ in directions]
    for s in members:                                    # dA P: how each step's odds move
        for t, p, e in mdp.choices[s][policy[s]].outcomes:
            if not p or not value[t]:
                continue
            action, labels = drawn(e)
            for d, toward in enumerate(directions):
                if toward.action == action:
                    consts[d][s] = consts[d].get(s, ZERO) + p * toward.rate(labels[toward.choice]) * value[t]

    def step(s: int) -> list[tuple[int, Fraction]]:
        return mdp.choices[s][policy[s]].dist
    inner = {s: [t for t in mdp.choices[s][policy[s]].targets if t in members] for s in members}
    leaves = P._can_leave(members, inner.__getitem__,
                          lambda s: any(t not in members for t in mdp.choices[s][policy[s]].targets))
    for scc in P._sccs(sorted(members), inner.__getitem__):
        tick()
        if not any(s in leaves for s in scc):          # never reaches the target: 0, and stays 0
            for slope in slopes:
                slope.update(dict.fromkeys(scc, ZERO))
            continue
        if len(scc) > P.EXACT_LIMIT:
            raise P.TooLarge(f"a strongly connected component of {len(scc):,} states under the witness policy, "
                             f"more than the {P.EXACT_LIMIT} the exact solver takes")
        solved = P.solve_columns(scc, step, [(slope, const) for slope, const in zip(slopes, consts)])
        for slope, got in zip(slopes, solved):
            slope.update(got)
    return value[start], [slope[start] for slope in slopes]


# ---------------------------------------------------------------- a decide table

Cube = tuple[frozenset[Any], ...]
K = TypeVar("K", bound=Hashable)


def cubes(points: Sequence[tuple[tuple[Any, ...], K]]) -> list[tuple[Cube, K]]:
    """Points (one value per var, and a decision) grouped into cubes (a set of values per
    var) of one decision each: two cubes of the same decision that differ in one var's
    values only are merged, until none do. Each cube holds exactly the points it stands for
    (a merge of X x A and X x B is X x (A | B)), so no row claims a state it was not given."""
    current: set[tuple[Cube, K]] = {(tuple(frozenset([v]) for v in values), d) for values, d in points}
    width = len(points[0][0]) if points else 0
    changed = True
    while changed:
        changed = False
        for j in range(width):
            tick()
            groups: dict[tuple[Any, ...], list[Cube]] = {}
            for cube, d in current:
                groups.setdefault((d, cube[:j], cube[j + 1:]), []).append(cube)
            merged: set[tuple[Cube, K]] = set()
            for (d, before, after), members in groups.items():
                if len(members) > 1:
                    changed = True
                union = frozenset().union(*(c[j] for c in members))
                merged.add(((*before, union, *after), d))
            current = merged
    return sorted(current, key=lambda cd: ([in_order(s) for s in cd[0]], repr(cd[1])))


def in_order(values: frozenset[Any]) -> list[Any]:
    """A var's values sorted (by type first: a Python model's var may mix them)."""
    return sorted(values, key=lambda v: (type(v).__name__, v))
