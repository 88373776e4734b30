"""Exact probabilities and expected totals over an explored machine, as a Markov decision process.

The explored graph with weights on some choices is an MDP: in each non-terminal state a
*policy* picks an enabled action and the values of its unweighted choices (a `Choice` here),
then the weighted choices are drawn by their weights. Every answer is a `[min, max]` over
all policies, each with a witness policy (the choice it makes in each state).

How (the standard method, e.g. Baier & Katoen, "Principles of Model Checking", ch. 10):
1. graph precomputation: the states whose maximal probability is 0 (they cannot reach the
   target) and whose minimal probability is 0 (some policy avoids the target forever);
2. the rest in reverse topological order of strongly connected components (SCCs): a state
   outside any cycle is one exact Bellman step; an SCC is solved by policy iteration, each
   policy evaluated exactly with `fractions.Fraction` (Gaussian elimination per SCC of the
   policy's own chain). Improvement switches a state's choice only when strictly better, which
   keeps the policies proper (a closed class of the new policy would need a strictly better
   average over its stationary distribution than itself).
Every long loop here ticks (properties/budget.py): the check's --timeout and --max-memory
stop it as they stop an exploration. A value is exact unless an SCC of a policy's chain is
larger than EXACT_LIMIT states (`TooLarge`). Such a query (a probability or an expected
total) is then solved over arrays by properties/sparse.py: bounds that converge, an interval
whose width is reported, never a point estimate; so is every query on an explored graph of
more than explorer/chances.py's LARGE states, which never builds the objects here.

Expected totals (of a measure until a terminal state) follow PRISM's convention: a run that
never reaches a terminal state costs infinity, so the maximum is infinite as soon as some
policy fails to terminate with probability 1, and the minimum when every policy does (None
stands for infinity). Edge rewards must be 0 or more.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from . import sparse as S
from .budget import EVERY, tick, ticking

EXACT_LIMIT = 400        # states in one SCC of a policy's chain solved by exact elimination

ONE, ZERO = Fraction(1), Fraction(0)
Flags = Sequence[bool] | npt.NDArray[np.bool_]     # per state, whether it is in a set


class TooLarge(Exception):
    """A strongly connected component is too large for the exact solver."""


@dataclass
class Choice:
    """One decision of a policy in one state, and what follows from it: (successor,
    probability, edge) per explored transition, the probabilities summing to 1."""

    label: object                                   # what the decision is, for the caller
    outcomes: list[tuple[int, Fraction, int]]
    dist: list[tuple[int, Fraction]] = field(init=False)    # per successor, its probability
    targets: list[int] = field(init=False)                  # the successors, each once

    def __post_init__(self) -> None:
        merged: dict[int, Fraction] = {}
        for t, p, _ in self.outcomes:
            if p:                                   # an impossible outcome leads nowhere
                merged[t] = merged[t] + p if t in merged else p
        self.dist = list(merged.items())
        self.targets = list(merged)


@dataclass
class MDP:
    """States 0..n-1 with their choices (none: terminal, or a deadlock), and the initial states."""

    choices: list[list[Choice]]
    terminal: list[bool]
    initial: list[int]

    @property
    def n(self) -> int:
        return len(self.choices)


@dataclass
class Extremes:
    """The minimum and maximum over policies (None: infinity), at the best initial state for
    each, with the policy that attains it (state -> index of its choice) and that state."""

    min: Fraction | None
    max: Fraction | None
    min_policy: dict[int, int] = field(default_factory=dict)
    max_policy: dict[int, int] = field(default_factory=dict)
    min_start: int = 0
    max_start: int = 0
    # set when that side is not exact: the true value lies in [lo, hi] (min/max then hold the midpoint)
    min_interval: tuple[float, float] | None = None
    max_interval: tuple[float, float] | None = None
    # solved over arrays (properties/sparse.py): the model and per state the row each policy takes
    min_rows: npt.NDArray[np.int64] | None = None
    max_rows: npt.NDArray[np.int64] | None = None
    model: S.Sparse | None = None
    # per state, each side's value (exact; a missing state is infinite) or its bounds (arrays):
    # what each choice is worth, to tell where a policy's choice matters (properties/answers.py)
    min_values: dict[int, Fraction] | None = None
    max_values: dict[int, Fraction] | None = None
    min_bounds: S.Bounds | None = None
    max_bounds: S.Bounds | None = None

    def interval(self, side: str) -> tuple[float, float] | None:
        """The interval of the `min` or `max` side, None when that side is exact."""
        return self.min_interval if side == "min" else self.max_interval


Values = dict[int, Fraction]
Policy = dict[int, int]


# ---------------------------------------------------------------- probabilities of reaching a set

def reach(mdp: MDP, target: Flags) -> Extremes:
    """The probability of reaching a `target` state, minimised and maximised over policies:
    exact where the exact solver can, else (that side) within an interval of width EPSILON."""
    try:
        lo, lo_policy = reach_values(mdp, target, "min")
        hi, hi_policy = reach_values(mdp, target, "max")
    except TooLarge:
        t = np.asarray(target, dtype=bool)
        return _arrays(mdp, lambda m: bounded(m, S.reach_intervals(m, t, "min"), S.reach_intervals(m, t, "max"), True))
    return _at_start(mdp, lo, hi, lo_policy, hi_policy)


def reach_values(mdp: MDP, target: Flags, sense: str) -> tuple[Values, Policy]:
    """Per state: the min or max probability of reaching the target, and a policy attaining it."""
    fixed: Values = {s: ONE for s in range(mdp.n) if target[s]}
    zero = avoidable(mdp, target) if sense == "min" else unreachable(mdp, target)
    fixed.update({s: ZERO for s in zero})
    allowed = {s: list(range(len(mdp.choices[s]))) for s in range(mdp.n) if s not in fixed}
    values, policy = optimize(mdp, sense, fixed, allowed, None, {})
    _zero_witness(mdp, zero, policy)
    return values, policy


def _zero_witness(mdp: MDP, zero: set[int], policy: Policy) -> None:
    """The witness where the value is 0: (min) a choice that stays away from the target."""
    for s in zero:
        stays = [ci for ci, c in enumerate(mdp.choices[s]) if all(t in zero for t in _succ(c))]
        if stays:
            policy[s] = stays[0]


def unreachable(mdp: MDP, target: Flags) -> set[int]:
    """States from which no policy reaches the target (max probability 0): by the graph alone."""
    preds = _predecessors(mdp)
    seen = [bool(t) for t in target]
    stack = [s for s in range(mdp.n) if target[s]]
    popped = 0
    while stack:
        t = stack.pop()
        popped += 1
        if not popped % EVERY:
            tick()
        for s, _ in preds[t]:
            if not seen[s]:
                seen[s] = True
                stack.append(s)
    return {s for s in range(mdp.n) if not seen[s]}


def avoidable(mdp: MDP, target: Flags) -> set[int]:
    """States from which some policy avoids the target forever (min probability 0): the
    greatest set of non-target states each of which has no choice (a run ends there) or a
    choice whose every successor stays in the set."""
    inside = [not t for t in target]
    preds = _predecessors(mdp)
    # per (state, choice): how many of its successors lie outside the set
    out_count = [[sum(1 for t in _succ(c) if not inside[t]) for c in mdp.choices[s]] for s in ticking(range(mdp.n))]
    good = [sum(1 for k in row if k == 0) for row in out_count]       # choices staying inside
    stack = [s for s in range(mdp.n) if inside[s] and mdp.choices[s] and good[s] == 0]
    for s in stack:
        inside[s] = False
    popped = 0
    while stack:
        t = stack.pop()
        popped += 1
        if not popped % EVERY:
            tick()
        for s, ci in preds[t]:
            if not inside[s]:
                continue
            out_count[s][ci] += 1
            if out_count[s][ci] == 1:
                good[s] -= 1
                if good[s] == 0:
                    inside[s] = False
                    stack.append(s)
    return {s for s in range(mdp.n) if inside[s]}


# ---------------------------------------------------------------- past the exact limit: over arrays

def from_mdp(mdp: MDP) -> S.Sparse:
    """The MDP as the arrays of properties/sparse.py (rows in choice order, each labelled
    with its choice's label)."""
    row_start, edge_start, dst, prob, edge, kind = [0], [0], [], [], [], []
    kinds: dict[Fraction, int] = {}
    labels: list[object] = []            # per row, its choice's label (the decision it is)
    for s in ticking(range(mdp.n)):
        for c in mdp.choices[s]:
            labels.append(c.label)
            for t, p, e in c.outcomes:
                if p:
                    dst.append(t)
                    prob.append(float(p))
                    edge.append(e)
                    kind.append(kinds.setdefault(p, len(kinds)))
            edge_start.append(len(dst))
        row_start.append(len(edge_start) - 1)
    rows = len(edge_start) - 1
    return S.Sparse(np.array(row_start, dtype=np.int64), np.array(edge_start, dtype=np.int64),
                    np.array(dst, dtype=np.int64), np.array(prob, dtype=np.float64), np.array(edge, dtype=np.int64),
                    np.array(mdp.terminal, dtype=bool), np.array(mdp.initial, dtype=np.int64),
                    np.arange(rows, dtype=np.int64), labels, np.array(kind, dtype=np.int64), list(kinds))


def row_rewards(m: S.Sparse, reward: Callable[[int], Fraction]) -> npt.NDArray[np.float64]:
    """Per row its expected reward for one step, from a reward per explored edge."""
    per_edge = np.fromiter((float(reward(int(e))) for e in ticking(m.edge)), dtype=np.float64, count=len(m.edge))
    out = np.bincount(m.edge_row, weights=m.prob * per_edge, minlength=m.rows).astype(np.float64)
    return out


def bounded(m: S.Sparse, low: S.Bounds, high: S.Bounds, choices: bool = False) -> Extremes:
    """The extremes at the initial states from the solver's bounds (`low` minimised, `high`
    maximised; a policy picks the initial state too). A side is exact where its bounds meet
    (values the graph fixes, and infinity); else it holds the interval, its midpoint as value.
    The policies are the row arrays (`rows`), and with `choices` also state -> choice index."""
    inits = m.initial
    out = Extremes(ZERO, ZERO, min_rows=low.policy, max_rows=high.policy, model=m, min_bounds=low, max_bounds=high)
    for sense, b in (("min", low), ("max", high)):
        if sense == "min":
            start = int(inits[np.argmin(b.lo[inits] + b.hi[inits])])
            lo, hi = float(b.lo[inits].min()), float(b.hi[inits].min())
        else:
            start = int(inits[np.argmax(b.hi[inits])])
            lo, hi = float(b.lo[inits].max()), float(b.hi[inits].max())
        if hi == np.inf and lo == np.inf:
            value, ends = None, None
        elif lo == hi:
            value, ends = Fraction(lo), None
        else:
            value, ends = Fraction((lo + hi) / 2), (lo, hi)
        policy = _choice_index(m, b.policy) if choices else {}
        if sense == "min":
            out.min, out.min_interval, out.min_start, out.min_policy = value, ends, start, policy
        else:
            out.max, out.max_interval, out.max_start, out.max_policy = value, ends, start, policy
    return out


def _choice_index(m: S.Sparse, rows: npt.NDArray[np.int64]) -> Policy:
    at = np.flatnonzero(rows >= 0)
    return {int(s): int(rows[s] - m.row_start[s]) for s in at}


def _arrays(mdp: MDP, solve: Callable[[S.Sparse], Extremes]) -> Extremes:
    """A query past the exact limit, solved over arrays; a solver that does not converge is TooLarge."""
    try:
        return solve(from_mdp(mdp))
    except S.NotConverged as exc:
        raise TooLarge(str(exc)) from None


# ---------------------------------------------------------------- expected totals until a terminal state

def expected_total(mdp: MDP, reward: Callable[[int], Fraction]) -> Extremes:
    """The expected total of `reward` (per edge, 0 or more) until a terminal state, minimised
    and maximised over policies; None is infinity (a run that never ends costs infinity)."""
    try:
        return _expected_exact(mdp, reward)
    except TooLarge:
        def solve(m: S.Sparse) -> Extremes:
            r = row_rewards(m, reward)
            return bounded(m, S.expected_intervals(m, r, "min"), S.expected_intervals(m, r, "max"), True)
        return _arrays(mdp, solve)


def _expected_exact(mdp: MDP, reward: Callable[[int], Fraction]) -> Extremes:
    terminal = mdp.terminal
    p_min, p_min_policy = reach_values(mdp, terminal, "min")
    p_max, p_max_policy = reach_values(mdp, terminal, "max")
    # max: finite exactly where every policy terminates with probability 1
    proper_all = {s for s in range(mdp.n) if p_min[s] == 1}
    hi, hi_policy = _expected(mdp, reward, "max", proper_all)
    # min: over the policies that terminate with probability 1, where there is one
    proper_some = {s for s in range(mdp.n) if p_max[s] == 1}
    lo, lo_policy = _expected(mdp, reward, "min", proper_some)
    for s in range(mdp.n):          # where the value is infinite, the witness is the policy that fails to end
        if s not in proper_all and s in p_min_policy:
            hi_policy[s] = p_min_policy[s]
        if s not in proper_some and s in p_max_policy:
            lo_policy[s] = p_max_policy[s]
    return _at_start(mdp, lo, hi, lo_policy, hi_policy)


def _expected(mdp: MDP, reward: Callable[[int], Fraction], sense: str, finite: set[int]) -> tuple[dict[int, Fraction], Policy]:
    """Expected totals on `finite` (terminal states cost 0); the other states are infinite (absent)."""
    fixed: Values = {s: ZERO for s in finite if mdp.terminal[s]}
    allowed = {s: [ci for ci, c in enumerate(mdp.choices[s]) if all(t in finite for t in _succ(c))]
               for s in finite if s not in fixed}
    rewards = {s: [_mean(c, reward) for c in mdp.choices[s]] for s in allowed}
    start = _attractor(mdp, fixed, allowed) if sense == "min" else {}
    return optimize(mdp, sense, fixed, allowed, rewards, start)


def _mean(c: Choice, reward: Callable[[int], Fraction]) -> Fraction:
    """A choice's expected reward for one step."""
    if len(c.outcomes) == 1:
        return reward(c.outcomes[0][2])
    return sum((p * reward(e) for _, p, e in c.outcomes if p), ZERO)


def _attractor(mdp: MDP, fixed: Values, allowed: dict[int, list[int]]) -> Policy:
    """A policy that terminates with probability 1: each state takes an allowed choice with a
    successor one step closer (in the graph) to a terminal state."""
    preds = _predecessors(mdp)
    policy: Policy = {}
    frontier = list(fixed)
    while frontier:
        tick()
        nxt = []
        for t in frontier:
            for s, ci in preds[t]:
                if s in allowed and s not in policy and ci in allowed[s]:
                    policy[s] = ci
                    nxt.append(s)
        frontier = nxt
    return policy


# ---------------------------------------------------------------- the solver

def optimize(mdp: MDP, sense: str, fixed: Values, allowed: dict[int, list[int]],
             rewards: dict[int, list[Fraction]] | None, start: Policy) -> tuple[Values, Policy]:
    """Values of the states in `allowed` (each with at least one choice, all of whose
    successors are in `allowed` or `fixed`), optimal for `sense`, and a policy attaining them."""
    values: Values = dict(fixed)
    policy: Policy = {}

    def better(a: Fraction, b: Fraction) -> bool:
        return a < b if sense == "min" else a > b

    def q(s: int, ci: int) -> Fraction:
        """The value of choice ci in state s, given the values so far (Fractions are slow:
        a choice with one successor, the common case, adds without multiplying)."""
        dist = mdp.choices[s][ci].dist
        total = rewards[s][ci] if rewards is not None else ZERO
        if len(dist) == 1:
            return total + values[dist[0][0]]
        for t, p in dist:
            v = values[t]
            if v:
                total += p * v
        return total

    inner = {s: [t for ci in allowed[s] for t in mdp.choices[s][ci].targets if t in allowed] for s in allowed}
    edges = inner.__getitem__

    for k, scc in enumerate(_sccs(list(allowed), edges)):
        if not k % 256:
            tick()
        if len(scc) == 1 and scc[0] not in edges(scc[0]):
            s = scc[0]
            best, best_value = allowed[s][0], q(s, allowed[s][0])
            for ci in allowed[s][1:]:
                value = q(s, ci)
                if better(value, best_value):
                    best, best_value = ci, value
            values[s], policy[s] = best_value, best
            continue
        members = set(scc)
        local = {s: start[s] if s in start else allowed[s][0] for s in scc}
        while True:
            values.update(_evaluate(mdp, local, members, values, rewards))
            changed = False
            for i, s in enumerate(scc):
                if not i % 256:
                    tick()
                current = q(s, local[s])
                for ci in allowed[s]:
                    candidate = q(s, ci)
                    if better(candidate, current):
                        local[s], current, changed = ci, candidate, True
            if not changed:
                break
        policy.update(local)
    return values, policy


def _evaluate(mdp: MDP, policy: Policy, members: set[int], outside: Values,
              rewards: dict[int, list[Fraction]] | None) -> Values:
    """The exact values of `members` under a fixed policy (a Markov chain), given the values
    of the states outside. A member that cannot leave the members under the policy never
    reaches anything: 0 (only a probability can be asked there; an expected total is asked
    only under policies that terminate)."""
    def step(s: int) -> list[tuple[int, Fraction]]:
        return mdp.choices[s][policy[s]].dist

    def inner(s: int) -> list[int]:
        return [t for t, _ in step(s) if t in members]

    leaves = _can_leave(members, inner, lambda s: any(t not in members for t, _ in step(s)))
    values: Values = {}
    for scc in _sccs(sorted(members), inner):
        tick()
        if not any(s in leaves for s in scc):
            if rewards is not None:
                raise AssertionError("a policy that never terminates was asked for an expected total")
            values.update({s: ZERO for s in scc})
            continue
        if len(scc) > EXACT_LIMIT:
            raise TooLarge(f"a strongly connected component of {len(scc):,} states under one policy, "
                           f"more than the {EXACT_LIMIT} the exact solver takes")
        known = {**outside, **values}
        values.update(_solve(scc, step, known, {s: rewards[s][policy[s]] for s in scc} if rewards else {}))
    return values


def _can_leave(members: set[int], inner: Callable[[int], list[int]], exits: Callable[[int], bool]) -> set[int]:
    """The members from which the chain can get outside the members."""
    preds: dict[int, list[int]] = {s: [] for s in members}
    for s in members:
        for t in inner(s):
            preds[t].append(s)
    stack = [s for s in members if exits(s)]
    seen = set(stack)
    while stack:
        t = stack.pop()
        for s in preds[t]:
            if s not in seen:
                seen.add(s)
                stack.append(s)
    return seen


def _solve(scc: list[int], step: Callable[[int], list[tuple[int, Fraction]]], known: Values,
           reward: dict[int, Fraction]) -> Values:
    """x_s = r_s + sum p x_t over one SCC of a chain that leaves it with probability 1 (unique
    solution), by Gaussian elimination over the rationals."""
    return solve_columns(scc, step, [(known, reward)])[0]


def solve_columns(scc: list[int], step: Callable[[int], list[tuple[int, Fraction]]],
                  columns: Sequence[tuple[Values, dict[int, Fraction]]]) -> list[Values]:
    """`_solve` for several right-hand sides (each its values outside and its constant per
    state) at the cost of one elimination: the sensitivity to each weight (answers.py) shares
    the chain's matrix."""
    index = {s: i for i, s in enumerate(scc)}
    k, width = len(scc), len(scc) + len(columns)
    rows: list[list[Fraction]] = []
    for s in ticking(scc, 256):
        row = [ZERO] * width
        row[index[s]] += ONE
        for j, (_, reward) in enumerate(columns):
            row[k + j] = reward.get(s, ZERO)
        for t, p in step(s):
            if t in index:
                row[index[t]] -= p
            else:
                for j, (known, _) in enumerate(columns):
                    if known[t]:
                        row[k + j] += p * known[t]
        rows.append(row)
    for col in range(k):
        tick()                       # a pivot is k rows of up to k fractions: a look per pivot
        pivot = next(r for r in range(col, k) if rows[r][col] != 0)
        rows[col], rows[pivot] = rows[pivot], rows[col]
        head = rows[col]
        inv = ONE / head[col]
        for j in range(col, width):
            head[j] *= inv
        for r in range(k):
            if r != col and rows[r][col] != 0:
                f = rows[r][col]
                row = rows[r]
                for j in range(col, width):
                    if head[j]:
                        row[j] -= f * head[j]
    return [{s: rows[index[s]][k + j] for s in scc} for j in range(len(columns))]


# ---------------------------------------------------------------- graph helpers

def _succ(c: Choice) -> list[int]:
    return c.targets


def _predecessors(mdp: MDP) -> list[list[tuple[int, int]]]:
    """Per state: (state, choice index) of each choice that may lead to it (positive probability)."""
    preds: list[list[tuple[int, int]]] = [[] for _ in range(mdp.n)]
    for s, choices in enumerate(mdp.choices):
        if not s % EVERY:
            tick()
        for ci, c in enumerate(choices):
            for t in c.targets:
                preds[t].append((s, ci))
    return preds


def _sccs(nodes: list[int], edges: Callable[[int], list[int]]) -> list[list[int]]:
    """Tarjan's strongly connected components, iteratively, successors' components first."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    out: list[list[int]] = []
    counter = popped = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(edges(root)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(edges(w))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            popped += 1
            if not popped % EVERY:
                tick()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out


def _at_start(mdp: MDP, lo: Values, hi: Values, lo_policy: Policy, hi_policy: Policy) -> Extremes:
    """The extremes over the initial states (a policy also picks where a run starts); a state
    missing from the values is infinite."""
    inits = mdp.initial
    lo_start = min(inits, key=lambda s: (1, ZERO) if s not in lo else (0, lo[s]))
    hi_start = min(inits, key=lambda s: (0, ZERO) if s not in hi else (1, -hi[s]))
    return Extremes(lo.get(lo_start), hi.get(hi_start), lo_policy, hi_policy, lo_start, hi_start,
                    min_values=lo, max_values=hi)
