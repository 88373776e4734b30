"""Bad maximal runs of a liveness check, under fairness: where `terminates`, `existence`
and `response` are decided.

A liveness check marks the states where its obligation is *open* (`terminates`: every
non-terminal state; a liveness pattern: where its monitor says so, machine/liveness.py). A
run is bad when it is maximal and keeps the obligation: it ends (a terminal state or a
deadlock) in an open state, or it is infinite and from some point on visits open states
only. An infinite run counts only if it is fair under every assumption of the spec's
`fairness:` (TLA+'s WF/SF of an action, `when` restricting it to the transitions where it
holds):

- weak: if the action is enabled in every state from some point on, it is taken infinitely often;
- strong: if the action is enabled in infinitely many states, it is taken infinitely often.

On a finite graph a bad infinite run exists iff some strongly connected set of open states
is fair: for each weak assumption the action is taken inside it or disabled in one of its
states; for each strong one it is taken inside it or enabled in none of its states. The
search is the Emerson-Lei refinement: an SCC failing a strong assumption loses the states
where it is enabled and is split again; one failing a weak assumption has no fair part.

Everything here reads the explored graph only; every run it returns exists, even in a
partial exploration (the cycle's states are expanded, so their enabled actions are known).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from haltproof.machine.compiled import Machine

from .budget import EVERY, tick, ticking
from .exploration import Column, ExploredGraph, RuleFacts


@dataclass(frozen=True)
class Assumption:
    """One fairness assumption as the search reads it: the action's index, and `when` as a
    predicate of an edge (None: every transition of the action)."""

    strong: bool
    action: int
    when: Callable[[int, int], bool] | None     # (source state, edge) -> whether the edge counts
    text: str


@dataclass(frozen=True)
class BadRun:
    """A bad maximal run: a finite one ending in `end`, or a lasso (`start` + `cycle` edges)."""

    end: int | None = None
    start: int | None = None
    cycle: tuple[int, ...] = ()


def assumptions(ex: ExploredGraph) -> list[Assumption]:
    """The spec's fairness assumptions over `ex`'s edges; evaluating a `when` may raise the
    errors a step expression raises (the caller reports the check undecided)."""
    m = ex.machine
    index = {a.name: k for k, a in enumerate(m.actions)}
    out = []
    for f, fn in zip(m.spec.fairness, m.fair_when, strict=True):
        out.append(Assumption(f.strength == "strong", index[f.action],
                              None if fn is None else _edge_predicate(ex, m, fn), f.text))
    return out


def _edge_predicate(ex: ExploredGraph, m: Machine, fn: Callable[..., bool]) -> Callable[[int, int], bool]:
    """`when` over an edge, with the step function's arguments (before, after, action, rule, choices)."""
    def holds(src: int, e: int) -> bool:
        act = m.actions[ex.e_action[e]]
        return bool(fn(ex.states[src], ex.states[ex.e_dst[e]], act.name, ex.e_rule[e], *act.step_args[ex.e_combo[e]]))
    return holds


class OwnView:
    """The explored graph as one property alone would have explored it: the states told apart by
    the user's vars and that property's own monitors only (another property's monitors unroll
    the machine's cycles, so a lasso there could go round once more than the machine needs).

    Monitors are a function of the run, so this quotient *is* the product of the machine with
    the property's monitors: each class is represented by its first state in BFS order (whose
    BFS path is a path of representatives), and an edge leads to its target's representative.
    Every other member is the explored graph's own."""

    def __init__(self, ex: ExploredGraph, keep: Sequence[int]):
        self.ex, self.keep = ex, list(keep)
        self._rep: np.ndarray | None = None
        self._dst: np.ndarray | None = None

    @property
    def rep(self) -> np.ndarray:
        """Per state, its representative; computed on first use (an acyclic graph needs none)."""
        if self._rep is None:
            first: dict[tuple[Any, ...], int] = {}
            states, keep = self.ex.states, self.keep
            self._rep = np.fromiter((first.setdefault(tuple(states[i][k] for k in keep), i)
                                     for i in ticking(range(len(states)))), dtype=np.int64, count=len(states))
        return self._rep

    @property
    def e_dst(self) -> Column[int]:
        """Per edge: the representative of the state it leads to."""
        if self._dst is None:
            self._dst = self.rep[np.asarray(self.ex.e_dst, dtype=np.int64)]
        return self._dst

    def cyclic_candidates(self) -> list[int]:
        """The expanded representatives: the quotient's states."""
        rep = self.rep
        return [i for i in ticking(range(self.ex.expanded)) if rep[i] == i]

    # -- the rest is the explored graph's
    machine = property(lambda self: self.ex.machine)
    states = property(lambda self: self.ex.states)
    parent = property(lambda self: self.ex.parent)
    depth = property(lambda self: self.ex.depth)
    edge_start = property(lambda self: self.ex.edge_start)
    e_action = property(lambda self: self.ex.e_action)
    e_combo = property(lambda self: self.ex.e_combo)
    e_rule = property(lambda self: self.ex.e_rule)
    expanded = property(lambda self: self.ex.expanded)
    forward = property(lambda self: self.ex.forward)
    fired_by_action = property(lambda self: self.ex.fired_by_action)
    rule_counts = property(lambda self: self.ex.rule_counts)
    label_counts = property(lambda self: self.ex.label_counts)
    terminal_states = property(lambda self: self.ex.terminal_states)

    def edges_of(self, i: int) -> range:
        return self.ex.edges_of(i)

    def first_deadlock(self) -> int | None:
        return self.ex.first_deadlock()

    def first_deepest(self) -> int:
        return self.ex.first_deepest()

    def topological_order(self) -> Sequence[int] | None:
        return self.ex.topological_order()

    def run_ends(self) -> np.ndarray:
        return self.ex.run_ends()

    def open_states(self, name: str) -> np.ndarray:
        return self.ex.open_states(name)

    def rule_facts(self, action: int, dead: Sequence[int]) -> RuleFacts:
        return self.ex.rule_facts(action, dead)

    def choice_groups(self, actions: Sequence[int]) -> dict[int, list[list[int]]]:
        return self.ex.choice_groups(actions)


def own_view(ex: ExploredGraph, prop: str | None) -> ExploredGraph:
    """`ex` as property `prop` alone sees it (`OwnView`): the user's vars and `prop`'s own
    monitors (None: no monitor, as `terminates` needs); `ex` itself when that is every var."""
    spec_vars = ex.machine.spec.vars
    keep = [k for k, v in enumerate(spec_vars) if v.monitor is None or v.monitor == prop]
    return ex if len(keep) == len(spec_vars) else OwnView(ex, keep)


def end_states(n: int, terminal: Column[int], errored: Column[int], edge_start: Column[int]) -> np.ndarray:
    """Per expanded state (the first n), whether a run ends there: it is terminal, or a deadlock
    (no successor, and no transition that failed to evaluate: that is well_defined's finding)."""
    term = np.asarray(terminal)[:n] != 0
    stuck = ~term & (np.asarray(errored)[:n] == 0) & (np.diff(np.asarray(edge_start)[:n + 1]) == 0)
    return np.asarray(term | stuck)


def bad_run(ex: ExploredGraph, open_: np.ndarray, fairness: Sequence[Assumption],
            acyclic: bool = False) -> BadRun | None:
    """The shortest finite bad run (the first open end state in BFS order), else a fair lasso
    of open states reached by a shortest prefix; None when there is neither. `acyclic`: the
    caller knows the explored graph has no cycle (the termination analysis found its
    topological order), so no lasso is searched for."""
    n = ex.expanded
    ends = np.flatnonzero(ex.run_ends() & open_[:n])
    if len(ends):
        return BadRun(end=int(ends[0]))
    return None if acyclic else fair_lasso(ex, open_, fairness)


def fair_lasso(ex: ExploredGraph, open_: np.ndarray, fairness: Sequence[Assumption]) -> BadRun | None:
    """A fair cycle among expanded open states, from the one of least BFS depth."""
    n = ex.expanded
    ends = ex.run_ends()
    nodes = {i for i in ex.cyclic_candidates() if open_[i] and not ends[i]}
    graph = _Graph(ex, nodes, fairness)
    fair = graph.fair_components()
    if not fair:
        return None
    comp = min(fair, key=lambda c: min((ex.depth[v], v) for v in c))
    start = min(comp, key=lambda v: (ex.depth[v], v))
    assert n > start, "a cycle lies among expanded states"
    return BadRun(start=start, cycle=tuple(graph.cycle(comp, start)))


class _Graph:
    """The subgraph of the candidate states, with what each fairness assumption needs: per
    state, whether the action (with `when`) is enabled there, and per inner edge whether it counts."""

    def __init__(self, ex: ExploredGraph, nodes: set[int], fairness: Sequence[Assumption]):
        self.ex, self.nodes, self.fairness = ex, nodes, fairness
        self.succ: dict[int, list[tuple[int, int]]] = {}            # state -> (edge, successor) inside
        self.enabled: list[set[int]] = [set() for _ in fairness]    # per assumption: states where enabled
        self.counts: list[set[int]] = [set() for _ in fairness]     # per assumption: edges that take it
        for v in ticking(sorted(nodes)):
            inner = []
            for e in ex.edges_of(v):
                d = int(ex.e_dst[e])
                if d in nodes:
                    inner.append((e, d))
                if not fairness:            # the vector engine recomputes an edge's action when asked
                    continue
                action = ex.e_action[e]
                for k, f in enumerate(fairness):
                    if action == f.action and (f.when is None or f.when(v, e)):
                        self.enabled[k].add(v)
                        self.counts[k].add(e)
            self.succ[v] = inner

    def fair_components(self) -> list[set[int]]:
        """The fair strongly connected sets (Emerson-Lei: see the module's docstring)."""
        import networkx as nx    # only a spec with a cycle needs it; it costs startup time
        out: list[set[int]] = []
        work = [set(self.nodes)]
        while work:
            tick()
            part = work.pop()
            g = nx.DiGraph()
            g.add_nodes_from(part)
            g.add_edges_from((v, d) for v in part for _, d in self.succ[v] if d in part)
            for comp in ticking(nx.strongly_connected_components(g)):
                (v, *more) = comp
                if not more and not g.has_edge(v, v):
                    continue                    # a single state without a self-loop: no cycle
                verdict = self._judge(comp)
                if verdict is True:
                    out.append(comp)
                elif verdict:                   # drop where the strong assumption is enabled, split again
                    work.append(comp - verdict)
        return out

    def _taken(self, k: int, comp: set[int]) -> bool:
        return any(e in self.counts[k] for v in comp for e, d in self.succ[v] if d in comp)

    def _judge(self, comp: set[int]) -> bool | set[int]:
        """True when `comp` is fair; False when no part of it is; else the states to remove."""
        for k, f in enumerate(self.fairness):
            if not f.strong and not self._taken(k, comp) and comp <= self.enabled[k]:
                return False
        for k, f in enumerate(self.fairness):
            if f.strong and not self._taken(k, comp) and comp & self.enabled[k]:
                return comp & self.enabled[k]
        return True

    def cycle(self, comp: set[int], start: int) -> list[int]:
        """A cycle through `start` inside `comp` that honours every assumption: it takes an edge
        of each assumption taken inside `comp`, else (weak) visits a state where it is disabled."""
        wanted: list[Callable[[int, int | None], bool]] = []
        for k, f in enumerate(self.fairness):
            if self._taken(k, comp):
                wanted.append(partial(_takes, self.counts[k]))
            elif not f.strong:
                wanted.append(partial(_disabled, self.enabled[k]))
        edges: list[int] = []
        visited = [start]
        at = start
        for goal in wanted:
            if any(goal(v, None) for v in visited) or any(goal(-1, e) for e in edges):
                continue
            path = self._path(comp, at, goal)
            edges += path
            visited += [int(self.ex.e_dst[e]) for e in path]
            at = visited[-1]
        edges += self._path(comp, at, lambda v, e: e is not None and int(self.ex.e_dst[e]) == start)
        return edges

    def _path(self, comp: set[int], frm: int, goal: Callable[[int, int | None], bool]) -> list[int]:
        """The edges of a shortest path inside `comp` from `frm` that ends with an edge `goal`
        accepts, or at a state it accepts (an empty path when `frm` is one)."""
        if goal(frm, None):
            return []
        back: dict[int, tuple[int, int]] = {}          # state -> (edge that reached it, its source)
        queue, seen = deque([frm]), {frm}
        while queue:
            v = queue.popleft()
            if not len(seen) % EVERY:
                tick()
            for e, d in self.succ[v]:
                if d not in comp:
                    continue
                if goal(v, e) or goal(d, None):
                    path = [e]
                    while v != frm:
                        e_in, v = back[v]
                        path.append(e_in)
                    return path[::-1]
                if d not in seen:
                    seen.add(d)
                    back[d] = (e, v)
                    queue.append(d)
        raise AssertionError("a strongly connected set has a path between any two of its states")


def _takes(counts: set[int], v: int, e: int | None) -> bool:
    """A cycle goal: an edge that takes the assumption's action."""
    return e is not None and e in counts


def _disabled(enabled: set[int], v: int, e: int | None) -> bool:
    """A cycle goal: a state where the (weak) assumption's action is disabled."""
    return e is None and v not in enabled
