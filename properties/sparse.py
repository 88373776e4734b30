"""Probabilities and expected totals of a large explored MDP, over arrays (issue 33).

The exact solver (properties/probability.py) keeps a Python object per state and choice and
computes with fractions: right for a small model, hundreds of seconds and gigabytes for a
million states. Here the same MDP is a handful of numpy arrays (per state its rows, per row
its edges, per edge its successor and probability), with no Python object per state or edge:
1. graph precomputation with searches in C (scipy.sparse.csgraph): the states whose value is
   exactly 0 or exactly 1 (for the minimum and the maximum over policies), stated as such;
2. the other states by sound interval iteration: a lower and an upper bound per state that
   converge (Haddad & Monmege, TCS 2018; for the maximum, the maximal end components are
   collapsed so the upper bound converges), their width reported;
3. an expected total by a lower bound iterated from 0 and an upper bound that is verified,
   not guessed: a vector u with Bellman(u) <= u is above the least fixed point, the value
   (Hartmanns & Kaminski, "Optimistic value iteration", CAV 2020); u is the lower bound plus
   a multiple of a verified bound on the expected number of steps, which makes the check
   strict. For the minimum, u is a value of a policy shown to terminate with probability 1.
Each float step is widened by a bound on its rounding. Every loop ticks (properties/budget.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt
from .budget import tick

EPSILON = 1e-12              # interval iteration stops once every state's bounds are this close
MAX_ITERATIONS = 1_000_000   # iterations of one bound before giving up (TooLarge)
ROUND = 2.0 ** -52           # a float operation's relative rounding, doubled

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


def _scipy() -> Any:
    """scipy.sparse, imported when a large model is solved (a second of start-up otherwise paid
    by every check)."""
    import scipy.sparse
    import scipy.sparse.csgraph
    return scipy.sparse


class NotConverged(Exception):
    """The iteration did not get within its tolerance in MAX_ITERATIONS."""


@dataclass
class Sparse:
    """An MDP as arrays. State s has rows row_start[s]:row_start[s+1] (none: terminal or a
    deadlock), row r has edges edge_start[r]:edge_start[r+1], each with its successor `dst`,
    its probability `prob` (the float nearest the exact weight) and the explored transition
    `edge` it stands for; `row_label[r]` indexes `labels` (the decision a row is). The exact
    probability of edge e is kind_prob[edge_kind[e]] (a few distinct weights: the exports)."""

    row_start: IntArray
    edge_start: IntArray
    dst: IntArray
    prob: FloatArray
    edge: IntArray
    terminal: BoolArray
    initial: IntArray
    row_label: IntArray
    labels: list[object] = field(default_factory=list)
    edge_kind: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    kind_prob: list[Fraction] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.row_start) - 1

    @property
    def rows(self) -> int:
        return len(self.edge_start) - 1

    @cached_property
    def row_state(self) -> IntArray:
        return np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self.row_start))

    @cached_property
    def edge_row(self) -> IntArray:
        return np.repeat(np.arange(self.rows, dtype=np.int64), np.diff(self.edge_start))

    @cached_property
    def edge_src(self) -> IntArray:
        return self.row_state[self.edge_row]

    @cached_property
    def matrix(self) -> Any:
        """rows x states: row r's probability of each successor."""
        return _scipy().csr_matrix((self.prob, self.dst, self.edge_start), shape=(self.rows, self.n))

    @cached_property
    def width(self) -> int:
        """The most edges of one row (bounds the rounding of one row's sum)."""
        return int(np.diff(self.edge_start).max(initial=0))

    @cached_property
    def has_rows(self) -> BoolArray:
        out: BoolArray = np.diff(self.row_start) > 0
        return out


# ---------------------------------------------------------------- graph searches

def back_reach(m: Sparse, sources: BoolArray, through: BoolArray, edges: BoolArray | None = None) -> BoolArray:
    """The states from which some path (over `edges`, default every edge) reaches a source,
    every state before it in `through`: a breadth-first search in C from a virtual state."""
    keep = through[m.edge_src] if edges is None else edges & through[m.edge_src]
    src, dst = m.edge_src[keep], m.dst[keep]
    n = m.n
    starts = np.flatnonzero(sources)
    rows = np.concatenate([dst, np.full(len(starts), n, dtype=np.int64)])
    cols = np.concatenate([src, starts])
    sp = _scipy()
    graph = sp.csr_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(n + 1, n + 1))
    tick()
    order = sp.csgraph.breadth_first_order(graph, n, directed=True, return_predecessors=False)
    seen = np.zeros(n + 1, dtype=bool)
    seen[order] = True
    return seen[:n]


def row_all(m: Sparse, inside: BoolArray) -> BoolArray:
    """Per row: every successor lies `inside`."""
    out_edges = ~inside[m.dst]
    out: BoolArray = np.bincount(m.edge_row[out_edges], minlength=m.rows) == 0
    return out


def unreachable(m: Sparse, target: BoolArray) -> BoolArray:
    """Max probability 0: no path to the target."""
    return ~back_reach(m, target, ~target)


def avoidable(m: Sparse, target: BoolArray) -> BoolArray:
    """Min probability 0: the greatest set of non-target states each of which has no row
    (a run ends there) or a row that stays in the set. Removed wave by wave."""
    inside = ~target
    while True:
        tick()
        stays = row_all(m, inside)
        good = np.bincount(m.row_state[stays], minlength=m.n) > 0
        keep = inside & (good | ~m.has_rows)
        if np.array_equal(keep, inside):
            return inside
        inside = keep


def certain_min(m: Sparse, target: BoolArray, zero_min: BoolArray) -> BoolArray:
    """Min probability 1: no policy can get to a state of min probability 0 first."""
    return ~back_reach(m, zero_min, ~target)


def certain_max(m: Sparse, target: BoolArray) -> BoolArray:
    """Max probability 1 (Baier & Katoen, alg. 45): the greatest set U from which the target
    is reached along rows whose successors all stay in U."""
    inside = ~unreachable(m, target)
    while True:
        tick()
        closed = row_all(m, inside)
        reached = back_reach(m, target, inside & ~target, closed[m.edge_row])
        reached &= inside
        if np.array_equal(reached, inside):
            return inside
        inside = reached


def end_components(m: Sparse, states: BoolArray, among: BoolArray | None = None) -> tuple[IntArray, BoolArray]:
    """The maximal end components among `states` (with rows `among`, default all): per state
    its group (its end component, or a group of its own) and per row whether it stays inside
    its state's component."""
    rows = row_all(m, states) & states[m.row_state]
    if among is not None:
        rows &= among
    n = m.n
    sp = _scipy()
    while True:
        tick()
        e = rows[m.edge_row]
        graph = sp.csr_matrix((np.ones(int(e.sum()), dtype=np.int8), (m.edge_src[e], m.dst[e])), shape=(n, n))
        _, comp = sp.csgraph.connected_components(graph, directed=True, connection="strong")
        leaves = np.bincount(m.edge_row[e & (comp[m.edge_src] != comp[m.dst])], minlength=m.rows) > 0
        live = np.bincount(m.row_state[rows & ~leaves], minlength=n) > 0
        kept = rows & ~leaves & row_all(m, live)
        if np.array_equal(kept, rows):
            break
        rows = kept
    live = np.bincount(m.row_state[rows], minlength=n) > 0
    key = np.where(live, comp, n + np.arange(n))
    _, group = np.unique(key, return_inverse=True)
    return group.astype(np.int64), rows


# ---------------------------------------------------------------- reachability

@dataclass
class Bounds:
    """Per state a lower and an upper bound on the value (inf: infinite), the states whose
    value is exact (fixed by the graph), and a policy: per state its row (-1: none)."""

    lo: FloatArray
    hi: FloatArray
    exact: BoolArray
    policy: IntArray


def _slack(iterations: int, width: int) -> float:
    """The relative rounding that `iterations` Bellman steps may have accumulated."""
    return iterations * (width + 3) * ROUND


class _Op:
    """The Bellman operator over the rows of some states: value(row) = const + P x, then per
    state the min or max over its rows (the rows of one state are contiguous)."""

    def __init__(self, m: Sparse, states: IntArray, rows: BoolArray, const: FloatArray, sense: str):
        self.m, self.states, self.sense = m, states, sense
        chosen = rows & np.isin(m.row_state, states)
        self.rows = np.flatnonzero(chosen)
        self.matrix = m.matrix[self.rows]
        self.const = const[self.rows]
        owner = m.row_state[self.rows]
        self.starts = np.searchsorted(owner, states)
        assert np.array_equal(owner[self.starts], states), "every state has a row"
        self.reduce = np.minimum.reduceat if sense == "min" else np.maximum.reduceat

    def q(self, x: FloatArray) -> FloatArray:
        out: FloatArray = self.const + self.matrix @ x
        return out

    def __call__(self, x: FloatArray) -> FloatArray:
        out: FloatArray = self.reduce(self.q(x), self.starts)
        return out

    def best(self, x: FloatArray) -> IntArray:
        """Per state, its row best for the sense given x (the first among equals)."""
        q = self.q(x)
        value = self.reduce(q, self.starts)
        owner_index = np.repeat(np.arange(len(self.states)), np.diff(np.append(self.starts, len(q))))
        hit = np.flatnonzero(q == value[owner_index])
        first = np.full(len(self.states), -1, dtype=np.int64)
        first[owner_index[hit[::-1]]] = self.rows[hit[::-1]]
        return first


def reach_intervals(m: Sparse, target: BoolArray, sense: str, epsilon: float = EPSILON) -> Bounds:
    """Per state, bounds on the min or max probability of reaching the target."""
    zero = avoidable(m, target) if sense == "min" else unreachable(m, target)
    one = certain_min(m, target, zero) if sense == "min" else certain_max(m, target)
    lo = one.astype(np.float64)
    hi = lo.copy()
    undecided = ~(zero | one)
    states = np.flatnonzero(undecided)
    policy = np.full(m.n, -1, dtype=np.int64)
    exact = ~undecided
    if len(states):
        op = _Op(m, states, np.ones(m.rows, dtype=bool), np.zeros(m.rows), sense)
        hi[states] = 1.0
        upper, spread = op, None
        if sense == "max":
            group, internal = end_components(m, undecided)
            if internal.any():          # collapsed: a component's states share its best exit
                exits = np.bincount(m.row_state[~internal], minlength=m.n) > 0
                upper = _Op(m, states[exits[states]], ~internal, np.zeros(m.rows), sense)
                spread = (group[upper.states], group[states], int(group.max()) + 1)
        iterations = 0
        while float(np.max(hi[states] - lo[states])) >= epsilon:
            for _ in range(16):
                lo[states] = np.maximum(lo[states], op(lo))
                if spread is None:
                    hi[states] = np.minimum(hi[states], upper(hi))
                else:
                    best = np.zeros(spread[2])
                    np.maximum.at(best, spread[0], upper(hi))
                    hi[states] = np.minimum(hi[states], best[spread[1]])
            iterations += 16
            tick()
            if iterations >= MAX_ITERATIONS:
                raise NotConverged(f"interval iteration did not get within {epsilon:g} in {iterations:,} iterations")
        slack = _slack(iterations, m.width)
        lo[states] = np.clip(lo[states] - slack, 0.0, 1.0)
        hi[states] = np.clip(hi[states] + slack, 0.0, 1.0)
        policy[states] = op.best(hi if sense == "min" else lo)
    _stay_witness(m, zero, policy)
    _towards(m, one & ~target, one, policy)
    return Bounds(lo, hi, exact, policy)


def _stay_witness(m: Sparse, zero: BoolArray, policy: IntArray) -> None:
    """Where the value is 0: a row that stays among the 0 states, when there is one."""
    stays = np.flatnonzero(row_all(m, zero) & zero[m.row_state])
    policy[m.row_state[stays[::-1]]] = stays[::-1]


def _towards(m: Sparse, states: BoolArray, inside: BoolArray, policy: IntArray) -> None:
    """A row for each of `states` that keeps inside (first such)."""
    ok = np.flatnonzero(row_all(m, inside) & states[m.row_state])
    policy[m.row_state[ok[::-1]]] = ok[::-1]


# ---------------------------------------------------------------- expected totals

def expected_intervals(m: Sparse, reward: FloatArray, sense: str) -> Bounds:
    """Per state, bounds on the min or max expected total of the per-row `reward` (0 or
    more) until a terminal state; inf where it is infinite (PRISM's convention: a policy
    that may not end costs infinity, so the max is finite where every policy ends with
    probability 1, the min where some policy does)."""
    terminal = m.terminal
    if sense == "max":
        finite = certain_min(m, terminal, avoidable(m, terminal))
    else:
        finite = certain_max(m, terminal)
    rows = row_all(m, finite)
    states = np.flatnonzero(finite & ~terminal)
    lo = np.where(finite, 0.0, np.inf)
    hi = lo.copy()
    exact = ~finite | terminal
    policy = np.full(m.n, -1, dtype=np.int64)
    if not finite.all():        # the witness where it is infinite: least (max: most) likely to end
        ends = reach_intervals(m, terminal, "min" if sense == "max" else "max")
        policy[~finite] = ends.policy[~finite]
        _not_ending(m, finite, policy)
    if len(states):
        op = _Op(m, states, rows, reward, sense)
        steps = _Op(m, states, rows, np.ones(m.rows), sense)
        x = np.zeros(m.n)
        if sense == "min":
            # a run may circle for free in an end component of 0-reward rows; the minimum over
            # the policies that end leaves it by its best exit: collapsed, the iteration from 0
            # converges to that value, not to the 0 of circling forever
            group, internal = end_components(m, finite & ~terminal, rows & (reward == 0))
            collapsed = _Collapsed(m, states, rows & ~internal, reward, group) if internal.any() else op
            x, iterations = _iterate(collapsed, x, states)
            chosen = collapsed.best(x) if isinstance(collapsed, _Collapsed) else op.best(x)
            if isinstance(collapsed, _Collapsed):
                chosen = _inward(m, chosen, states, rows & internal)
            chosen = _proper(m, chosen, states, rows, finite)
            op = _Op(m, states, _only(m, chosen), reward, "min")
            steps = _Op(m, states, _only(m, chosen), np.ones(m.rows), "min")
        else:
            x, iterations = _iterate(op, x, states)
            chosen = op.best(x)
        upper = _verified_upper(op, steps, x, states)
        lo[states] = x[states] * (1 - _slack(iterations, m.width))
        hi[states] = upper[states]
        policy[states] = chosen
    return Bounds(lo, hi, exact, policy)


class _Collapsed:
    """The min operator with each end component of `group` one state: every member gets the
    best value of any member's row in `rows` (the rows that leave their component)."""

    def __init__(self, m: Sparse, states: IntArray, rows: BoolArray, const: FloatArray, group: IntArray):
        has = np.zeros(m.n, dtype=bool)
        has[m.row_state[rows]] = True
        self.op = _Op(m, states[has[states]], rows, const, "min")
        self.states = states
        self.of, self.mine, self.size = group[self.op.states], group[states], int(group.max()) + 1

    def __call__(self, x: FloatArray) -> FloatArray:
        best = np.full(self.size, np.inf)
        np.minimum.at(best, self.of, self.op(x))
        out: FloatArray = best[self.mine]
        return out

    def best(self, x: FloatArray) -> IntArray:
        """Per state (of `states`), its best leaving row where that row attains its component's
        value, else -1 (it moves inside its component first: _inward)."""
        own = self.op(x)
        best = np.full(self.size, np.inf)
        np.minimum.at(best, self.of, own)
        rows = self.op.best(x)
        out = np.full(len(self.mine), -1, dtype=np.int64)
        index = np.searchsorted(self.states, self.op.states)
        keep = own <= best[self.of]
        out[index[keep]] = rows[keep]
        return out


def _inward(m: Sparse, chosen: IntArray, states: IntArray, inside: BoolArray) -> IntArray:
    """The states without a row (-1) take, layer by layer, an `inside` row (of their end
    component) with a successor nearer a state that has one: a way to its best exit."""
    done = np.zeros(m.n, dtype=bool)
    done[states[chosen >= 0]] = True
    out = chosen.copy()
    where = np.full(m.n, -1, dtype=np.int64)
    where[states] = np.arange(len(states))
    while True:
        tick()
        hits = np.bincount(m.edge_row[done[m.dst]], minlength=m.rows) > 0
        new = np.flatnonzero(hits & inside & ~done[m.row_state])
        if not len(new):
            return out
        at = where[m.row_state[new[::-1]]]
        out[at] = new[::-1]
        done[m.row_state[new]] = True


def _only(m: Sparse, chosen: IntArray) -> BoolArray:
    rows = np.zeros(m.rows, dtype=bool)
    rows[chosen] = True
    return rows


def _not_ending(m: Sparse, finite: BoolArray, policy: IntArray) -> None:
    """Where the total is infinite and no row is chosen yet: a row that may leave the finite
    states, else the first."""
    unset = (policy < 0) & ~finite
    leaves = np.flatnonzero(~row_all(m, finite) & unset[m.row_state])
    policy[m.row_state[leaves[::-1]]] = leaves[::-1]
    rest = np.flatnonzero(~finite[m.row_state])
    still = rest[policy[m.row_state[rest]] < 0]
    policy[m.row_state[still[::-1]]] = still[::-1]


def _iterate(op: _Op | _Collapsed, x: FloatArray, states: IntArray, rel: float = EPSILON) -> tuple[FloatArray, int]:
    """Value iteration from x up (monotone) until a step changes no state by more than
    `rel` of its value (at least of 1)."""
    iterations = 0
    while True:
        for _ in range(16):
            new = op(x)
            change = float(np.max((new - x[states]) / np.maximum(new, 1.0), initial=0.0))
            x[states] = np.maximum(x[states], new)
        iterations += 16
        tick()
        if change <= rel:
            return x, iterations
        if iterations >= MAX_ITERATIONS:
            raise NotConverged(f"value iteration did not converge in {iterations:,} iterations")


def _proper(m: Sparse, chosen: IntArray, states: IntArray, rows: BoolArray, finite: BoolArray) -> IntArray:
    """`chosen` (a row per state), changed where it might not end: those states take a row
    one step closer (in the graph) to a terminal state, which ends with probability 1."""
    if (chosen < 0).any():                 # no row yet: the attractor's
        chosen = np.where(chosen < 0, _attractor(m, rows, finite)[states], chosen)
    rowsel = _only(m, chosen)
    ends = back_reach(m, m.terminal, finite, rowsel[m.edge_row])
    stuck = back_reach(m, finite & ~ends, finite & ~m.terminal, rowsel[m.edge_row])
    if not stuck[states].any():
        return chosen
    closer = _attractor(m, rows, finite)
    out = chosen.copy()
    bad = stuck[states]
    out[bad] = closer[states[bad]]
    return out


def _attractor(m: Sparse, rows: BoolArray, finite: BoolArray) -> IntArray:
    """Per state, a row among `rows` with a successor nearer a terminal state (layer by layer)."""
    done = m.terminal & finite
    choice = np.full(m.n, -1, dtype=np.int64)
    while True:
        tick()
        hits = np.bincount(m.edge_row[done[m.dst]], minlength=m.rows) > 0
        new = np.flatnonzero(hits & rows & ~done[m.row_state])
        if not len(new):
            return choice
        choice[m.row_state[new[::-1]]] = new[::-1]
        done[m.row_state[new]] = True


def _verified_upper(op: _Op, steps: _Op, x: FloatArray, states: IntArray) -> FloatArray:
    """An upper bound u with op(u) <= u checked (rounding included): first g, a bound on the
    expected steps, then u = x + e g for the smallest e (doubling) that passes."""
    factor = 1 + (op.m.width + 3) * ROUND
    g, _ = _iterate(steps, np.zeros(len(x)), states)
    for attempt in range(60):
        guess = g * (1 + 2.0 ** (attempt - 40)) + 1
        if np.all(steps(guess) * factor <= guess[states]):
            g = guess
            break
        if attempt % 8 == 7:
            g, _ = _iterate(steps, g, states, EPSILON / 2 ** attempt)
    else:
        raise NotConverged("no bound on the expected number of steps could be verified")
    resid = np.maximum(op(x) - x[states], 0.0)
    e = float(np.max(resid / g[states], initial=0.0)) * 2 + float(np.max(x[states] / g[states], initial=0.0)) * 1e-15
    for _ in range(80):
        u = x + e * g
        if np.all(op(u) * factor <= u[states]):
            return u
        e = e * 2 if e else 1e-300
        tick()
    raise NotConverged("no upper bound on the expected total could be verified")
