"""Probabilities and expected totals of one checked run (issue 17): the `probability` and
`expected` properties, and the outcome table of a spec with weights.

The explored graph becomes a Markov decision process (properties/probability.py): in each
non-terminal state one `Choice` per enabled action and values of its unweighted choices,
whose edges carry the product of the weights of the action's weighted choices. Nothing is
claimed on a partial or erroneous exploration (the caller's `why`): the missing states could
change every number.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from haltproof.machine.compiled import EVAL_ERRORS, Machine
from haltproof.machine.spec import PropertyDecl, present
from haltproof.machine.text import fraction_json, fraction_text
from haltproof.properties import answers as A
from haltproof.properties import probability as P
from haltproof.properties.budget import EVERY, Stopped, tick, ticking
from haltproof.properties.kinds import HOLDS, UNKNOWN, VIOLATED, LikeliestRun, PropertyResult, Status, Subject, Trace
from haltproof.properties.probability import MDP, Choice, Extremes, Flags
from haltproof.properties import sparse as S
from haltproof.properties.sparse import Sparse

from .engine import CHOICE_KEY, Exploration, Finding, failure
from .traces import run_trace

LARGE = 20_000       # explored states past which the probabilities are solved over arrays (properties/sparse.py)

EdgeWeight = Any     # as check._weight gives it: None (1 per edge), a callable (src, edge) or a per-edge array
POLICY_SHOWN = 20    # decisions of a witness policy listed when no trace shows where it goes
TABLE_LIMIT = 2_000  # states where a policy's choice matters, past which no decide table is drawn


class NotAnalysable(Exception):
    """The explored graph cannot be read as an MDP (its edges or weights are missing)."""


@dataclass
class Decision:
    """What a policy decides in a state: an action and the values of its unweighted choices."""

    action: str
    choices: tuple[tuple[str, Any], ...]

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "choices": dict(self.choices)}


def build_mdp(ex: Exploration, m: Machine) -> MDP:
    """The explored graph with the spec's weights, as an MDP over the explored states."""
    if ex.edge_start is None or ex.e_dst is None:
        raise NotAnalysable("the engine did not keep the transitions (a forward graph past "
                            "a million transitions): run with --engine scalar")
    weights: dict[str, dict[str, dict[Any, Fraction]]] = {}
    for w in m.spec.probabilities:
        weights.setdefault(w.action, {})[w.choice] = w.weights
    n = len(ex.states)
    choices: list[list[Choice]] = []
    for s in range(n):
        if not s % EVERY:
            tick()
        if ex.terminal[s] or s >= ex.expanded:
            choices.append([])
            continue
        groups: dict[tuple[str, tuple[tuple[str, Any], ...]], list[tuple[int, Fraction, int]]] = {}
        for e in ex.edges_of(s):
            act = m.actions[int(ex.e_action[e])]
            labels = act.labels[int(ex.e_combo[e])]
            mine = weights.get(act.name, {})
            p = Fraction(1)
            for c, table in mine.items():
                p *= table[labels[c]]
            key = (act.name, tuple((c, v) for c, v in labels.items() if c not in mine))
            groups.setdefault(key, []).append((int(ex.e_dst[e]), p, e))
        row = []
        for (action, free), outcomes in groups.items():
            whole = outcomes[0][1] == 1 if len(outcomes) == 1 else sum((p for _, p, _ in outcomes), Fraction(0)) == 1
            if not whole:
                raise NotAnalysable(f"the transitions of action {action} from a state do not cover "
                                    "every weighted value")
            row.append(Choice(Decision(action, free), [o for o in outcomes if o[1] > 0]))
        choices.append(row)
    initial = [s for s in range(n) if int(ex.parent[s]) < 0]
    return MDP(choices, [bool(ex.terminal[s]) for s in range(n)], initial)


def _combos(m: Machine) -> tuple[list[int], list[tuple[str, tuple[tuple[str, Any], ...]]], list[int], list[Fraction]]:
    """Per action its first global combination index; per global combination its decision
    group (the action and the values of its unweighted choices) and its probability."""
    weights: dict[str, dict[str, dict[Any, Fraction]]] = {}
    for w in m.spec.probabilities:
        weights.setdefault(w.action, {})[w.choice] = w.weights
    offsets: list[int] = []
    keys: list[tuple[str, tuple[tuple[str, Any], ...]]] = []
    group: list[int] = []
    prob: list[Fraction] = []
    index: dict[tuple[str, tuple[tuple[str, Any], ...]], int] = {}
    for act in m.actions:
        offsets.append(len(group))
        mine = weights.get(act.name, {})
        for labels in act.labels:
            p = Fraction(1)
            for c, table in mine.items():
                if c not in labels:
                    raise NotAnalysable(f"action {act.name} makes its weighted choice {c} only on some "
                                        "transitions (a choice conditional on another)")
                p *= table[labels[c]]
            key = (act.name, tuple((c, v) for c, v in labels.items() if c not in mine))
            if key not in index:
                index[key] = len(keys)
                keys.append(key)
            group.append(index[key])
            prob.append(p)
    return offsets, keys, group, prob


def edge_kinds(ex: Exploration, offsets: Sequence[int]) -> np.ndarray:
    """Per explored edge, its global combination index (the vector engine noted it while sweeping)."""
    weights = getattr(ex, "weights", None)
    if isinstance(weights, dict) and CHOICE_KEY in weights:
        return np.asarray(weights[CHOICE_KEY], dtype=np.int64)
    return (np.asarray(offsets, dtype=np.int64)[np.asarray(ex.e_action, dtype=np.int64)]
            + np.asarray(ex.e_combo, dtype=np.int64))


def build_sparse(ex: Exploration, m: Machine) -> Sparse:
    """The explored graph with the spec's weights as arrays: no Python object per state or edge."""
    if ex.edge_start is None or ex.e_dst is None:
        raise NotAnalysable("the engine did not keep the transitions (a forward graph past "
                            "a million transitions): run with --engine scalar")
    offsets, keys, group_of, prob_of = _combos(m)
    n = len(ex.states)
    tick()
    starts = np.asarray(ex.edge_start, dtype=np.int64)
    kind = edge_kinds(ex, offsets)
    dst_all = np.asarray(ex.e_dst, dtype=np.int64)
    src = np.repeat(np.arange(len(starts) - 1, dtype=np.int64), np.diff(starts))
    live = ~np.asarray(ex.terminal[:len(starts) - 1], dtype=bool)[src] if len(src) else np.zeros(0, dtype=bool)
    group = np.asarray(group_of, dtype=np.int64)[kind]
    p_exact = np.asarray([float(p) for p in prob_of], dtype=np.float64)
    positive = np.asarray([p > 0 for p in prob_of], dtype=bool)
    keep = np.flatnonzero(live & positive[kind])
    tick()
    ngroups = max(len(keys), 1)
    order = keep[np.argsort(src[keep] * ngroups + group[keep], kind="stable")]
    rowkey = src[order] * ngroups + group[order]
    first = np.flatnonzero(np.r_[True, rowkey[1:] != rowkey[:-1]]) if len(order) else np.zeros(0, np.int64)
    edge_start = np.append(first, len(order)).astype(np.int64)
    row_state = src[order[first]]
    row_group = group[order[first]]
    wanted = np.bincount(np.asarray(group_of, dtype=np.int64)[positive[np.arange(len(prob_of))]], minlength=ngroups)
    got = np.diff(edge_start)
    short = np.flatnonzero(got != wanted[row_group])
    if len(short):
        action = keys[int(row_group[short[0]])][0]
        raise NotAnalysable(f"the transitions of action {action} from a state do not cover every weighted value")
    row_start = np.searchsorted(row_state, np.arange(n + 1)).astype(np.int64)
    initial = np.flatnonzero(np.asarray(ex.parent, dtype=np.int64) < 0)
    labels: list[object] = [Decision(a, free) for a, free in keys]
    return Sparse(row_start, edge_start, dst_all[order], p_exact[kind[order]], order,
                  np.asarray(ex.terminal[:n], dtype=bool), initial, row_group, labels, kind[order], prob_of)


def first_chance_error(ex: Exploration, selected: set[str]) -> tuple[str, Finding] | None:
    """The first explored state, in BFS order (a shortest trace), where the `reach` predicate
    of a selected `probability` property cannot be evaluated: a `well_defined` violation (or
    `bound_code`, for a Python model's), as for an invariant. The engines never evaluate these
    predicates; only those that can fail (Machine.fallible) are tried here."""
    m = ex.machine
    fns = [(name, fn) for name, fn in m.chances.items()
           if name in selected and (m.fallible is None or name in m.fallible)]
    if not fns:
        return None
    for i in range(len(ex.states)):
        if not i % EVERY:
            tick()
        state = ex.states[i]
        for name, fn in fns:
            try:
                fn(state)
            except EVAL_ERRORS as exc:
                return (getattr(exc, "builtin", "well_defined"),
                        Finding(i, failure(m, f"property {name}", exc), subject=Subject("property", name)))
    return None


ARRAYS_ONLY = ("the sensitivity to the weights is computed only for models the exact solver takes "
               f"(up to {LARGE:,} explored states, components of up to {P.EXACT_LIMIT} states)")
IN_JSON = " in the JSON report"      # where a value too long to print is written out (`exact`)


def number(x: Fraction | None, where: str = IN_JSON) -> str:
    """`171/200 (0.855)`, `2`, or `infinite`: exact first, the decimal for reading; a fraction
    too long to read is shown by its value and size, saying `where` it is written out."""
    if x is None:
        return "infinite"
    return fraction_text(x, where)


def side(e: Extremes, which: str) -> str:
    """One side's value: exact, or `between LO and HI (within ERR)` when iterated (a side
    iterated next to an exact one: the report's `exact` is left out, so is the note)."""
    iv = e.interval(which)
    if iv is None:
        return number(e.min if which == "min" else e.max, "" if e.min_interval or e.max_interval else IN_JSON)
    return f"between {iv[0]:.15g} and {iv[1]:.15g} (within {iv[1] - iv[0]:.2g}, not exact)"


def span(e: Extremes) -> str:
    """`171/200 (0.855) under every policy`, or `between A and B over the policies`."""
    if e.min == e.max and e.min_interval == e.max_interval:
        return f"{side(e, 'min')} under every policy"
    return f"from {side(e, 'min')} (min) to {side(e, 'max')} (max) over the policies" \
        if e.min_interval or e.max_interval else f"between {number(e.min)} and {number(e.max)} over the policies"


def value_json(e: Extremes) -> dict[str, Any]:
    """`{"value": {"min", "max"}}` as floats (an infinite value as null: JSON has no infinity,
    and a report must parse everywhere; a finite one past a float's range as the largest float)
    and, when both sides are exact, `"exact"` as fraction strings of any length ("inf" for
    infinity); a side solved by interval iteration is the midpoint of `"interval"` [lo, hi],
    `"error"` its half-width."""
    def f(x: Fraction | None) -> float | None:
        if x is None:
            return None
        try:
            return float(x)
        except OverflowError:
            return sys.float_info.max if x > 0 else -sys.float_info.max

    def s(x: Fraction | None) -> str:
        return "inf" if x is None else fraction_json(x)
    out: dict[str, Any] = {"value": {"min": f(e.min), "max": f(e.max)}}
    if e.min_interval is None and e.max_interval is None:
        out["exact"] = {"min": s(e.min), "max": s(e.max)}
        return out
    out["interval"], out["error"] = {}, {}
    for which in ("min", "max"):
        iv = e.interval(which)
        if iv is None:         # this side is exact (possibly infinite): a point, no error
            x = f(e.min if which == "min" else e.max)
            out["interval"][which], out["error"][which] = [x, x], None if x is None else 0.0
            continue
        lo, hi = iv
        out["interval"][which] = [lo, hi]
        out["error"][which] = (hi - lo) / 2
        out["value"][which] = (lo + hi) / 2
    return out


def complement(e: Extremes) -> Extremes:
    """1 - e: the probability of the other outcome (min and max swap)."""
    def flip(iv: tuple[float, float] | None) -> tuple[float, float] | None:
        return None if iv is None else (1.0 - iv[1], 1.0 - iv[0])
    return Extremes(None if e.max is None else 1 - e.max, None if e.min is None else 1 - e.min,
                    min_interval=flip(e.max_interval), max_interval=flip(e.min_interval))


def _converged(solve: Callable[[], Extremes]) -> Extremes:
    try:
        return solve()
    except S.NotConverged as exc:
        raise P.TooLarge(str(exc)) from None


class Chances:
    """The probability analyses of one run, sharing one MDP (built on first use)."""

    def __init__(self, ex: Exploration, m: Machine, why: str | None, rewards: Callable[[str], EdgeWeight]):
        self.ex, self.m, self.why, self.rewards = ex, m, why, rewards
        self._mdp: MDP | None = None
        self._sparse: Sparse | None = None
        self._solved: dict[tuple[str, bytes | str], Extremes] = {}     # a property and the table ask alike

    @property
    def large(self) -> bool:
        """Past LARGE states, every query is solved over arrays: the exact solver's objects
        (one per state and choice, a fraction per value) would cost too much."""
        return len(self.ex.states) > LARGE

    @property
    def mdp(self) -> MDP:
        if self._mdp is None:
            self._mdp = build_mdp(self.ex, self.m)
        return self._mdp

    @property
    def sparse(self) -> Sparse:
        if self._sparse is None:
            self._sparse = build_sparse(self.ex, self.m)
        return self._sparse

    @property
    def n(self) -> int:
        return len(self.ex.states)

    @property
    def terminal(self) -> Flags:
        return self.sparse.terminal if self.large else self.mdp.terminal

    def stuck(self, s: int) -> bool:
        """State s has no choice: it is terminal, or a deadlock."""
        return not self.sparse.has_rows[s] if self.large else not self.mdp.choices[s]

    def reach(self, target: Flags) -> Extremes:
        """The probability of reaching `target`, minimised and maximised over policies."""
        t = np.asarray(target, dtype=bool)
        key = ("reach", np.packbits(t).tobytes())
        if key not in self._solved:
            if self.large:
                m = self.sparse
                self._solved[key] = _converged(lambda: P.bounded(m, S.reach_intervals(m, t, "min"),
                                                                 S.reach_intervals(m, t, "max")))
            else:
                self._solved[key] = P.reach(self.mdp, target)
        return self._solved[key]

    def expected(self, measure: str) -> Extremes:
        """The expected total of `measure` until a terminal state, over policies."""
        key = ("expected", measure)
        if key not in self._solved:
            if self.large:
                m = self.sparse
                reward = self.row_reward(measure)
                self._solved[key] = _converged(lambda: P.bounded(m, S.expected_intervals(m, reward, "min"),
                                                                 S.expected_intervals(m, reward, "max")))
            else:
                self._solved[key] = P.expected_total(self.mdp, self.edge_reward(measure))
        return self._solved[key]

    def edge_rewards(self, measure: str) -> np.ndarray:
        """Per explored edge, its integer value of `measure` (those outside the model: 0); a
        negative one on an edge of the model is refused."""
        m = self.sparse
        weight = self.rewards(measure)
        out = np.zeros(len(self.ex.e_dst), dtype=np.int64)
        if weight is None:
            out[m.edge] = 1
        elif callable(weight):
            src = m.edge_src
            out[m.edge] = np.fromiter((int(weight(int(src[i]), int(e))) for i, e in enumerate(ticking(m.edge))),
                                      dtype=np.int64, count=len(m.edge))
        else:
            out[m.edge] = np.asarray(weight, dtype=np.int64)[m.edge]
        negative = np.flatnonzero(out[m.edge] < 0)
        if len(negative):
            raise NotAnalysable(f"measure {measure} has a negative term on an explored transition "
                                f"({int(out[m.edge][negative[0]])}): an expected total needs terms of 0 or more")
        return out

    def row_reward(self, measure: str) -> np.ndarray:
        """Per row of the sparse model, its expected value of `measure` for one step."""
        m = self.sparse
        per_edge = self.edge_rewards(measure)[m.edge].astype(np.float64)
        out: np.ndarray = np.bincount(m.edge_row, weights=m.prob * per_edge, minlength=m.rows)
        return out

    # -- properties
    def result(self, p: PropertyDecl) -> PropertyResult:
        """A `probability` or `expected` property, judged on its bound."""
        if self.why:
            return PropertyResult(p.name, p.kind, UNKNOWN, f"not decided: {self.why}")
        try:
            return self._judge(p)
        except (P.TooLarge, NotAnalysable) as exc:
            return PropertyResult(p.name, p.kind, UNKNOWN, f"not computed: {exc}")
        except EVAL_ERRORS as exc:
            return PropertyResult(p.name, p.kind, UNKNOWN, f"not computed: its expression failed: {exc}")

    def _judge(self, p: PropertyDecl) -> PropertyResult:
        chance = present(p.chance)
        if p.kind == "probability":
            target = self.target(p.name)
            e = self.reach(target)
            what = "the probability of reaching it"
        else:
            measure = present(chance.measure)
            e = self.expected(measure)
            what = f"the expected {measure} until a terminal state"
            target = self.terminal
        at_least = chance.sense == "at_least"
        worst = e.min if at_least else e.max
        interval = e.interval("min" if at_least else "max")
        if interval is not None:
            return self._judge_interval(p, e, what, interval, at_least, target)
        if worst is None:       # infinite (expected totals only): at least every bound, at most none
            holds = at_least
        else:
            holds = worst >= chance.bound if at_least else worst <= chance.bound
        r = PropertyResult(p.name, p.kind, HOLDS if holds else VIOLATED, f"{what} is {span(e)}")
        r.value = value_json(e)
        if p.kind == "probability":
            r.sensitivity = self.sensitivity(e, "min" if at_least else "max", target)
        if holds:
            r.message += f": {'at least' if at_least else 'at most'} {number(chance.bound, '')}"
            if worst is None:
                r.message += " (no policy reaches a terminal state with probability 1)"
            return r
        r.message += (f": a policy makes it {number(worst)}, "
                      f"{'less than' if at_least else 'more than'} {number(chance.bound, '')}")
        if worst is None:
            r.message += " (a policy does not reach a terminal state with probability 1)"
        goal = self._trace_goal(p.kind, at_least, target, worst is None)
        r.trace, r.policy = self.witness(e, "min" if at_least else "max", goal)
        self._answers(r, p, e, at_least, target)
        return r

    def _answers(self, r: PropertyResult, p: PropertyDecl, e: Extremes, at_least: bool, target: Flags) -> None:
        """What a violated verdict adds for a person to act on: the most probable run to the
        bad outcome (a probability) and the witness policy as a decide table. A bound reached
        meanwhile leaves out what is not done: the verdict stands, and the next analysis
        stops at once, so the run still says where the bound was reached."""
        which = "min" if at_least else "max"
        try:
            if p.kind == "probability":
                r.likeliest = self.likeliest(e, which, target, at_least)
                r.decide_table = self.decide_table(e, which, np.asarray(target, dtype=bool), None)
            else:
                r.decide_table = self.decide_table(e, which, np.zeros(self.n, dtype=bool),
                                                   present(present(p.chance).measure))
        except Stopped:
            return

    def sensitivity(self, e: Extremes, which: str, target: Flags) -> dict[str, Any] | None:
        """How the probability of side `which` moves with each declared weight (answers.Toward),
        its witness policy held fixed, exactly; on the array path, or past the exact limit, a
        message saying it is not computed. None for a spec without weights (nothing to move),
        and when a bound stops it (the verdict stands)."""
        weights = self.m.spec.probabilities
        if not weights:
            return None
        out: dict[str, Any] = {"side": which}
        if e.model is not None or e.interval(which) is not None:
            return {**out, "weights": [], "message": f"not computed: {ARRAYS_ONLY}"}
        directions = A.towards((w.action, w.choice, w.weights) for w in weights)
        if not directions:
            return {**out, "weights": [], "message": "no weighted value has a weight strictly between 0 and 1: "
                                                      "no mass to move"}
        policy = e.min_policy if which == "min" else e.max_policy
        start = e.min_start if which == "min" else e.max_start
        actions, ex = self.m.actions, self.ex

        def drawn(edge: int) -> tuple[str, dict[str, Any]]:
            act = actions[int(ex.e_action[edge])]
            return act.name, act.labels[int(ex.e_combo[edge])]
        try:
            value, slopes = A.sensitivity(self.mdp, policy, start, target, directions, drawn)
        except P.TooLarge as exc:
            return {**out, "weights": [], "message": f"not computed: {exc}; {ARRAYS_ONLY}"}
        except Stopped:
            return None
        ranked = sorted(zip(directions, slopes), key=lambda ds: -abs(ds[1]))
        out["probability"] = fraction_json(value)
        out["weights"] = [{"action": d.action, "choice": d.choice, "toward": d.value, "weight": fraction_json(d.weight),
                           "derivative": fraction_json(slope), "rate": float(slope)} for d, slope in ranked]
        return out

    def _judge_interval(self, p: PropertyDecl, e: Extremes, what: str, interval: tuple[float, float],
                        at_least: bool, target: Flags) -> PropertyResult:
        """A bound judged on an iterated interval: decided only when the whole interval lies
        on one side of it (compared exactly: a float is a fraction), else `unknown`."""
        bound = present(p.chance).bound
        lo, hi = Fraction(interval[0]), Fraction(interval[1])
        meets = lo >= bound if at_least else hi <= bound
        fails = hi < bound if at_least else lo > bound
        status: Status = HOLDS if meets else VIOLATED if fails else UNKNOWN
        r = PropertyResult(p.name, p.kind, status, f"{what} is {span(e)}")
        r.value = value_json(e)
        if p.kind == "probability":
            r.sensitivity = self.sensitivity(e, "min" if at_least else "max", target)
        word = "at least" if at_least else "at most"
        if meets:
            r.message += f": {word} {number(bound, '')}"
        elif not fails:
            r.message += (f": not decided, the bound {number(bound, '')} lies inside the interval "
                          f"[{interval[0]:.15g}, {interval[1]:.15g}] of the iterative solver")
        else:
            r.message += (f": a policy makes it {'at most' if at_least else 'at least'} "
                          f"{interval[1] if at_least else interval[0]:.15g}, "
                          f"{'less than' if at_least else 'more than'} {number(bound, '')}")
            r.trace, r.policy = self.witness(e, "min" if at_least else "max",
                                             self._trace_goal(p.kind, at_least, target, False))
            self._answers(r, p, e, at_least, target)
        return r

    def _trace_goal(self, kind: str, at_least: bool, target: Flags, infinite: bool) -> Callable[[int], bool]:
        """Where the witness trace goes: to a state that shows the bound failing."""
        terminal, stuck = self.terminal, self.stuck
        if kind == "probability" and at_least:       # a run that ends without reaching the target
            return lambda s: not target[s] and stuck(s)
        if kind == "probability":
            return lambda s: bool(target[s])
        if infinite:                                   # a run that ends in a deadlock, if any
            return lambda s: not terminal[s] and stuck(s)
        return lambda s: bool(terminal[s])

    def edge_reward(self, measure: str) -> Callable[[int], Fraction]:
        """Each edge's value of a measure, as a Fraction; a negative one is refused."""
        weight = self.rewards(measure)
        sources = {e: s for s in ticking(range(self.mdp.n)) for c in self.mdp.choices[s] for _, _, e in c.outcomes}

        def reward(e: int) -> Fraction:
            if weight is None:
                return Fraction(1)
            value = int(weight(sources[e], e)) if callable(weight) else int(weight[e])
            if value < 0:
                raise NotAnalysable(f"measure {measure} has a negative term on an explored transition "
                                    f"({value}): an expected total needs terms of 0 or more")
            return Fraction(value)
        return reward

    def _policy(self, e: Extremes, which: str) -> tuple[Callable[[int], list[tuple[int, int]] | None],
                                                        Callable[[int], Decision], int]:
        """A side's policy as `step(s)` (its outcomes: (successor, explored edge), None where
        it decides nothing) and `decision(s)`, and the state it starts from."""
        rows = e.min_rows if which == "min" else e.max_rows
        start = e.min_start if which == "min" else e.max_start
        m = e.model
        if rows is not None and m is not None and not e.min_policy and not e.max_policy:
            def step_rows(s: int) -> list[tuple[int, int]] | None:
                r = int(rows[s])
                if r < 0:
                    return None
                lo, hi = int(m.edge_start[r]), int(m.edge_start[r + 1])
                return [(int(t), int(x)) for t, x in zip(m.dst[lo:hi], m.edge[lo:hi])]

            def label_rows(s: int) -> Decision:
                d = m.labels[int(m.row_label[int(rows[s])])]
                assert isinstance(d, Decision)
                return d
            return step_rows, label_rows, start
        policy = e.min_policy if which == "min" else e.max_policy
        mdp = self.mdp

        def step(s: int) -> list[tuple[int, int]] | None:
            if s not in policy or not mdp.choices[s]:
                return None
            return [(t, x) for t, _, x in mdp.choices[s][policy[s]].outcomes]

        def label(s: int) -> Decision:
            d = mdp.choices[s][policy[s]].label
            assert isinstance(d, Decision)
            return d
        return step, label, start

    def witness(self, e: Extremes, which: str, goal: Callable[[int], bool]) -> tuple[Trace | None, list[dict[str, Any]]]:
        """A shortest run under the policy of side `which` from its start to a `goal` state
        (None if it never gets there), and the policy's decision in each state that run visits
        (or in the first POLICY_SHOWN states the policy reaches, when there is no such run)."""
        step, label, start = self._policy(e, which)
        came: dict[int, tuple[int, int] | None] = {start: None}
        order = [start]
        found = start if goal(start) else None
        i = 0
        while found is None and i < len(order):
            s = order[i]
            i += 1
            if not i % EVERY:
                tick()
            for t, x in step(s) or []:
                if t not in came:
                    came[t] = (s, x)
                    order.append(t)
                    if goal(t):
                        found = t
                        break

        def decision(s: int) -> dict[str, Any]:
            return {"state": self.m.state_dict(self.ex.states[s]), **label(s).to_json()}
        if found is None:
            return None, [decision(s) for s in order[:POLICY_SHOWN] if step(s) is not None]
        edges: list[int] = []
        visited = [found]
        at = came[found]
        while at is not None:
            edges.append(at[1])
            visited.append(at[0])
            at = came[at[0]]
        edges.reverse()
        visited.reverse()
        return run_trace(self.ex, start, edges), [decision(s) for s in visited if step(s) is not None]

    def likeliest(self, e: Extremes, which: str, target: Flags, at_least: bool) -> LikeliestRun | None:
        """The most probable run under side `which`'s policy to the bad outcome: (at_least)
        a run that ends without reaching the target, else one that reaches it; None when no
        finite run does (the policy avoids the target by never ending)."""
        t = np.asarray(target, dtype=bool)
        start = e.min_start if which == "min" else e.max_start
        m = e.model
        stuck = ~m.has_rows if m is not None else np.fromiter((not c for c in self.mdp.choices), dtype=bool,
                                                               count=self.mdp.n)
        goal, avoid = (~t & stuck, t) if at_least else (t, np.zeros(len(t), dtype=bool))
        rows = e.min_rows if which == "min" else e.max_rows
        if m is not None and rows is not None:
            run = A.likeliest_arrays(m, rows, start, goal, avoid)
        else:
            policy = e.min_policy if which == "min" else e.max_policy
            run = A.likeliest(self.mdp, policy, start, goal.__getitem__, avoid.__getitem__)
        if run is None:
            return None
        words = "a run that ends without reaching it" if at_least else "a run that reaches it"
        chance = run.probability
        return LikeliestRun(words, run_trace(self.ex, run.start, run.edges), [fraction_json(x) for x in run.odds],
                            fraction_json(chance), float(chance))

    def decide_table(self, e: Extremes, which: str, stop: np.ndarray, measure: str | None) -> dict[str, Any]:
        """Side `which`'s policy as a decide table over the user's vars: the states it reaches
        from its start (up to a `stop` state: the target) where two enabled choices have
        different values, grouped into rows of var values -> its decision. Where the largest
        expected total is infinite every choice's is too: there they differ in how likely
        they end (the witness makes that least likely)."""
        arrays = e.model is not None and e.min_rows is not None and e.min_bounds is not None
        found = (self._choosing_arrays if arrays else self._choosing)(e, which, stop, measure)
        if isinstance(found, int):               # too many to draw (or none)
            return self._no_table(which, found)
        return self._table_rows(which, *found)

    def _choosing_arrays(self, e: Extremes, which: str, stop: np.ndarray,
                         measure: str | None) -> tuple[list[int], list[object]] | int:
        """The states where the choice matters and the policy's decision in each, over arrays;
        their count alone when there are more than TABLE_LIMIT (no object per state)."""
        m, rows = present(e.model), present(e.min_rows if which == "min" else e.max_rows)
        bounds = present(e.min_bounds if which == "min" else e.max_bounds)
        const = (np.zeros(m.rows) if measure is None else
                 self.row_reward(measure) if m is self._sparse else P.row_rewards(m, self.edge_reward(measure)))
        differ = A.matters_arrays(m, bounds.lo, bounds.hi, const, measure is not None)
        endless = bounds.lo == np.inf
        if measure is not None and which == "max" and endless.any():
            ends = S.reach_intervals(m, m.terminal, "min")
            differ = np.where(endless, A.matters_arrays(m, ends.lo, ends.hi, np.zeros(m.rows), False), differ)
        start = e.min_start if which == "min" else e.max_start
        found = np.flatnonzero(A.reached_arrays(m, rows, start, stop) & differ & ~stop & (rows >= 0))
        if len(found) > TABLE_LIMIT:
            return len(found)
        states = [int(s) for s in found]
        return states, [m.labels[int(m.row_label[int(rows[s])])] for s in states]

    def _choosing(self, e: Extremes, which: str, stop: np.ndarray,
                  measure: str | None) -> tuple[list[int], list[object]] | int:
        """`_choosing_arrays` on the exact MDP, with its exact values."""
        policy = e.min_policy if which == "min" else e.max_policy
        values = e.min_values if which == "min" else e.max_values
        if values is None:
            return 0
        mdp = self.mdp
        reward = None if measure is None else self._choice_reward(measure)
        endless = measure is not None and which == "max" and len(values) < mdp.n
        ends = P.reach_values(mdp, mdp.terminal, "min")[0] if endless else {}

        def differ(s: int) -> bool:
            if s not in values:          # an infinite total: its choices differ in how likely they end
                return bool(ends) and A.matters(mdp, s, ends, None)
            return A.matters(mdp, s, values, reward)
        start = e.min_start if which == "min" else e.max_start
        order = A.reached(mdp, policy, start, stop.__getitem__)
        states = [s for s in order if not stop[s] and s in policy and differ(s)]
        if len(states) > TABLE_LIMIT:
            return len(states)
        return states, [mdp.choices[s][policy[s]].label for s in states]

    def _choice_reward(self, measure: str) -> Callable[[int, int], Fraction]:
        """Per (state, choice index) of the exact MDP, its expected `measure` for one step."""
        per_edge, mdp = self.edge_reward(measure), self.mdp

        def reward(s: int, ci: int) -> Fraction:
            return P._mean(mdp.choices[s][ci], per_edge)
        return reward

    def _no_table(self, which: str, count: int) -> dict[str, Any]:
        if count:
            message = (f"the policy's choice matters in {count:,} states it reaches, more than the "
                       f"{TABLE_LIMIT:,} a decide table is drawn for")
        else:
            message = "no state the policy reaches has enabled choices of different values: nothing to decide"
        return {"side": which, "states": count, "rows": [], "message": message}

    def _table_rows(self, which: str, states: list[int], chosen: list[object]) -> dict[str, Any]:
        """The decide table's rows: the states grouped into cubes of var values, a var left
        out where a row allows every value of it."""
        if not states:
            return self._no_table(which, 0)
        names = self.m.var_names
        points: list[tuple[tuple[Any, ...], tuple[str, tuple[tuple[str, Any], ...]]]] = []
        for s, d in zip(states, chosen):
            assert isinstance(d, Decision)
            values = self.m.state_dict(self.ex.states[s])
            points.append((tuple(values[v] for v in names), (d.action, d.choices)))
        sizes = [self._domain_size(v) for v in names]
        out = []
        for cube, (action, choices) in A.cubes(points):
            when = {v: A.in_order(vals) for i, (v, vals) in enumerate(zip(names, cube)) if len(vals) != sizes[i]}
            out.append({"when": when, "action": action, "choices": dict(choices)})
        return {"side": which, "states": len(states), "rows": out}

    def _domain_size(self, name: str) -> int:
        """How many values var `name` may take (-1: unknown), so a row can leave out a var it
        allows every value of."""
        found = [(i, v) for i, v in enumerate(self.m.spec.vars) if v.name == name]
        if not found:
            return -1
        i, var = found[0]
        if var.kind == "int":
            b = self.m.bounds[i] if i < len(self.m.bounds) else None
            return -1 if b is None else b[1] - b[0] + 1
        return 2 if var.kind == "bool" else len(var.values or [])

    # -- the outcome table
    def table(self) -> dict[str, Any]:
        """How a run ends, with which probability, and what it costs on average."""
        if self.why:
            return {"message": f"not computed: {self.why}"}
        try:
            return self._table()
        except (P.TooLarge, NotAnalysable) as exc:
            return {"message": f"not computed: {exc}"}
        except EVAL_ERRORS as exc:
            return {"message": f"not computed: {exc}"}

    def ends(self) -> dict[str, Flags]:
        """The states each terminal label value ends in (or `terminal`, for a predicate)."""
        terminal, states = self.terminal, self.ex.states
        if self.m.label is None:
            return {"terminal": terminal}
        label = self.m.label
        if self.large and hasattr(self.ex, "end_labels"):       # the vector engine: over arrays
            ends: dict[str, Flags] = self.ex.end_labels(present(self.m.spec.terminal).values)
            return ends
        if self.large:
            return {str(value): np.fromiter((bool(terminal[s]) and label(states[s]) == value
                                             for s in ticking(range(self.n))), dtype=bool, count=self.n)
                    for value in present(self.m.spec.terminal).values}
        return {str(value): [terminal[s] and label(states[s]) == value for s in ticking(range(self.n))]
                for value in present(self.m.spec.terminal).values}

    def deadlocks(self) -> Flags:
        if self.large:
            return ~self.sparse.terminal & ~self.sparse.has_rows
        return [not self.mdp.terminal[s] and not self.mdp.choices[s] for s in range(self.mdp.n)]

    def target(self, name: str) -> Flags:
        """The states where a `probability` property's `reach` predicate holds."""
        vm = getattr(self.ex, "vm", None)
        if hasattr(self.ex, "chance_states") and vm is not None and name in vm.chances:   # the vector engine
            found: np.ndarray = self.ex.chance_states(name)
            return found
        fn = self.m.chances[name]
        return np.fromiter((bool(fn(self.ex.states[s])) for s in ticking(range(self.n))), dtype=bool, count=self.n)

    def measures(self) -> list[str]:
        return ["transitions", *self.m.measures]

    def _table(self) -> dict[str, Any]:
        deadlock = np.asarray(self.deadlocks(), dtype=bool)
        out: dict[str, Any] = {"ends": {k: value_json(self.reach(t)) for k, t in self.ends().items()}}
        out["ends"]["deadlock"] = value_json(self.reach(deadlock))
        ended = self.reach(np.asarray(self.terminal, dtype=bool) | deadlock)
        out["ends"]["never_terminating"] = value_json(complement(ended))
        out["expected"] = {}
        for name in self.measures():
            try:
                out["expected"][name] = value_json(self.expected(name))
            except (P.TooLarge, NotAnalysable) as exc:     # one row: the probabilities above stand
                out["expected"][name] = {"message": f"not computed: {exc}"}
        return out
