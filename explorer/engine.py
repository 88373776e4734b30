"""The exhaustive engine: breadth-first search over every reachable state.

BFS visits states in order of depth, so the first violation of a state or step
property that it meets is a shortest one. Every state keeps its parent; every
transition is stored (compressed: the edges of state i are contiguous because states
are expanded in index order), so termination, lassos and longest runs can be computed
on the explored graph afterwards.

A compiled spec runs its generated loop (machine/sweep.py, `generate_sweep`): the
spec's expressions inline, and per edge only its successor stored. What an edge or a
first visit was (action, choices, rule) is recomputed from its source state when a
trace or an analysis asks (`Exploration.attach_lazy`). Bound code, Python models and
independence properties go through the plain loop (`_plain_loop`), which stores those
per edge: recomputing them would run the user's code again. Both loops leave every
finding to the same slow paths (`_Sweep`), so they make the same findings.
"""

from __future__ import annotations

import gc
import sys
import time
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np

from haltproof.machine.binding import Relayed, WorkersLost, bound_code
from haltproof.machine.compiled import EVAL_ERRORS, CompiledAction, Machine, MissingChoice, spec_where
from haltproof.machine.spec import shown_path
from haltproof.machine.fold import can_fail
from haltproof.machine.sweep import SWEEP_KINDS
from haltproof.machine.usercode import OutOfTime, Stuck
from haltproof.machine.spec import present
from haltproof.properties import liveness, termination, vacuity
from haltproof.properties.budget import ticking
from haltproof.properties.exploration import RuleFacts
from haltproof.properties.kinds import Subject

from . import messages
from .memory import current_rss

State: TypeAlias = tuple[Any, ...]       # one value per var, in the spec's order
# A transition as a finding names it: (action index, combo index, rule, successor state);
# the successor is None where the transition failed to evaluate.
StepTaken: TypeAlias = tuple[int, int, str | None, State | None]
Outcomes: TypeAlias = dict[tuple[Any, ...], tuple[Any, int, StepTaken | None]]   # independence: first outcome per key

ProgressFn = Callable[[int, int, int, int, float], None]   # states, transitions, depth, frontier, seconds

_ERRORS = EVAL_ERRORS      # what a spec expression may raise on a reachable state
# What ends an exploration in the middle of a state: the deadline passing inside the user's
# code, or the process running out of memory. Both are bounds, not bugs: the exploration
# stops as at --max-states, with the state it was expanding left unexpanded.
# Running a level's bound code in worker processes adds a third: no worker could expand a state.
_INTERRUPTS = (OutOfTime, MemoryError, WorkersLost)
MEMORY_EVERY = 4096       # states between two looks at the process's memory (--max-memory)


@dataclass
class Finding:
    """The first (shallowest) place a safety-style property failed."""

    state: int                      # index of the state the trace ends in (or starts the failing step from)
    message: str
    step: StepTaken | None = None   # the failing transition, when a transition failed
    other: Finding | None = None  # independence: the transition it disagrees with
    subject: Subject | None = None  # what failed to evaluate (well_defined, bound_code) or differs (independent)


def failure(m: Machine, what: str, exc: BaseException) -> str:
    """The message of a finding whose evaluation raised `exc`: what failed, the spec file:line
    of the expression (when it is a spec expression), and the error. Both engines make every
    such message here, so they say exactly the same; an error a worker process met carries
    its spec line with it (binding.Relayed)."""
    if isinstance(exc, Relayed):
        where = f" ({shown_path(m.spec.path)}:{exc.line})" if exc.line is not None else ""
        return f"{what}{where}: {exc}"
    return f"{what}{spec_where(m, exc)}: {exc}"


def action_subject(m: Machine, action: int, ci: int) -> Subject:
    """An action with one combination of its choices, as a finding's subject."""
    act = m.actions[action]
    return Subject("action", act.name, dict(act.labels[ci]))


def action_text(m: Machine, action: int, ci: int) -> str:
    """`action NAME with CHOICES`, as messages name one transition of an action."""
    act = m.actions[action]
    return f"action {act.name} with {_fmt_choices(act.labels[ci])}"


class _Recomputed:
    """A per-state or per-edge attribute recomputed on demand (see Exploration.attach_lazy)."""

    def __init__(self, fn: Callable[[int], tuple[int, int, str | None]], n: int, part: int):
        self.fn, self.n, self.part = fn, n, part

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> Any:
        return self.fn(int(i))[self.part]

    def __iter__(self) -> Iterator[Any]:
        for i in range(self.n):
            yield self[i]


# A per-state or per-edge column: array("q"/"i") or bytearray on this engine, a numpy array on the
# vector engine (explorer/vengine.py). Both are read alike (len, indexing, slices), so it is Any.
Column: TypeAlias = Any
# The vector engine's per-edge column (in `weights`) of a spec with probabilities: each edge's action
# and choice combination as one index (combinations numbered action after action), which its
# e_action/e_combo would recompute edge by edge (explorer/chances.py builds the MDP from it)
CHOICE_KEY = "\0choice"


@dataclass
class Exploration:
    machine: Machine
    states: list[State] = field(default_factory=list)
    index: dict[State, int] = field(default_factory=dict)
    parent: Column = field(default_factory=lambda: array("q"))
    via_action: Column = field(default_factory=lambda: array("i"))
    via_combo: Column = field(default_factory=lambda: array("q"))
    via_rule: Column = field(default_factory=list)
    depth: Column = field(default_factory=lambda: array("i"))         # never decreases along the states
    edge_start: Column = field(default_factory=lambda: array("q"))    # len = expanded + 1
    e_dst: Column = field(default_factory=lambda: array("q"))
    e_action: Column = field(default_factory=lambda: array("i"))
    e_combo: Column = field(default_factory=lambda: array("q"))
    e_rule: Column = field(default_factory=list)
    terminal: Column = field(default_factory=bytearray)
    errored: Column = field(default_factory=bytearray)             # some transition of it failed to evaluate
    terminal_unknown: int | None = None   # the first state whose terminal predicate failed (not expanded)
    expanded: int = 0
    transitions: int = 0
    complete: bool = False
    stopped_by: str | None = None   # "max_states" | "timeout" | "call_timeout" | "max_memory" | "workers_lost"
    stopped_in: str | None = None   # what the user's code was running when the deadline passed in it
    out_of_memory: bool = False     # stopped by a MemoryError (not by the --max-memory limit)
    seconds: float = 0.0
    findings: dict[str, Finding] = field(default_factory=dict)
    reached: dict[str, int] = field(default_factory=dict)           # reachable property -> first state
    rule_counts: dict[str, int] = field(default_factory=dict)
    label_counts: dict[Any, int] = field(default_factory=dict)
    forward: bool = False            # every edge leads exactly one BFS level deeper
    fired_by_action: dict[int, dict[str, int]] = field(default_factory=dict)   # action -> rule -> count

    @property
    def max_depth(self) -> int:
        return int(self.depth[-1]) if len(self.depth) else 0      # states are numbered level by level

    def edges_of(self, i: int) -> range:
        return range(self.edge_start[i], self.edge_start[i + 1])

    @property
    def terminal_states(self) -> int:
        return int(self.terminal.count(1))

    # What the property analyses ask of an explored graph (properties/exploration.py,
    # ExploredGraph): this engine keeps every edge in Python arrays, so it answers by walking them.

    def first_deadlock(self) -> int | None:
        """The first expanded non-terminal state with no successor and no failed transition."""
        n = self.expanded
        starts = np.asarray(self.edge_start)[:n + 1]
        stuck = ((np.asarray(self.terminal)[:n] == 0) & (np.asarray(self.errored)[:n] == 0)
                 & (np.diff(starts) == 0))
        found = np.flatnonzero(stuck)
        return int(found[0]) if len(found) else None

    def run_ends(self) -> np.ndarray:
        """From the stored edges and the terminal and errored flags."""
        return liveness.end_states(self.expanded, self.terminal, self.errored, self.edge_start)

    def open_states(self, name: str) -> np.ndarray:
        """The property's compiled expression on every state."""
        f = self.machine.obligations[name]
        return np.fromiter((bool(f(s)) for s in ticking(self.states)), dtype=bool, count=len(self.states))

    def first_deepest(self) -> int:
        """The first state of the deepest level (depths never decrease along the states)."""
        return bisect_left(self.depth, self.depth[-1]) if len(self.depth) else 0

    def topological_order(self) -> Sequence[int] | None:
        """Kahn's algorithm over the stored edges (the BFS order itself when forward)."""
        return termination.kahn_order(self)

    def cyclic_candidates(self) -> list[int]:
        """Every expanded state: peeling the acyclic part first would cost more than it saves here."""
        return list(range(self.expanded))

    def rule_facts(self, action: int, dead: Sequence[int]) -> RuleFacts:
        """The rule conditions evaluated on the stored transitions of the action."""
        return vacuity.rule_facts_from_edges(self, action, dead)

    def choice_groups(self, actions: Sequence[int]) -> dict[int, list[list[int]]]:
        """The choice combinations grouped by their stored transitions, in one pass over the edges."""
        return vacuity.choice_groups_from_edges(self, actions)

    def transitions_from(self, i: int) -> list[tuple[int, int, str | None, State]]:
        """The transitions stored for state i, in the engine's order: (action, combo, rule, successor)."""
        return transitions_from(self.machine, self.states[i])

    def attach_lazy(self, steps_class: type[StepFinder] | None = None) -> None:
        """Make via_* and e_action/e_combo/e_rule recompute their items when read."""
        steps = (steps_class or StepFinder)(self.machine, self.states, self.parent, self.edge_start)
        n, ne = len(self.parent), self.transitions
        self.via_action = _Recomputed(steps.via, n, 0)
        self.via_combo = _Recomputed(steps.via, n, 1)
        self.via_rule = _Recomputed(steps.via, n, 2)
        self.e_action = _Recomputed(steps.edge, ne, 0)
        self.e_combo = _Recomputed(steps.edge, ne, 1)
        self.e_rule = _Recomputed(steps.edge, ne, 2)


def transitions_from(m: Machine, s: State) -> list[tuple[int, int, str | None, State]]:
    """The transitions the engines store for state s, in their order: (action, combo, rule,
    successor). An expression that fails counts as it did while exploring: a state whose
    terminal predicate fails is not expanded, a failing guard or step gives no edge."""
    out: list[tuple[int, int, str | None, State]] = []
    try:
        if m.is_terminal(s):
            return out
    except _ERRORS:
        return out
    for act in m.actions:
        try:
            if act.guard is not None and not act.guard(s):
                continue
        except _ERRORS:
            continue
        for ci, combo in enumerate(act.combos):
            try:
                if act.admit is not None and act.admit(s, *combo) is not None:
                    continue
                t, r = act.step(s, *combo)
            except _ERRORS:
                continue
            if m.domain_error(t) < 0:
                out.append((act.index, ci, r, t))
    return out


def first_count_error(ex: Exploration) -> tuple[str, Finding] | None:
    """The first explored transition, in BFS order (so with a shortest trace), on which a
    `count` of terminates_within or a measure cannot be evaluated: (built-in property,
    finding). The engines do not evaluate those while exploring (the analyses do, and
    only on an acyclic graph), yet such an error is a `well_defined` violation like any
    other. Only expressions that can fail are tried (see fold.can_fail): none of a
    vectorized spec's can, so a vector exploration, whose edges may be dropped, is never
    walked here."""
    m = ex.machine
    spec = m.spec
    made = [(a.name, a.always_made) for a in spec.actions]
    fns = [(f"count of {p.name}", Subject("count", p.name), m.counts[p.name]) for p in spec.properties
           if p.name in m.counts and (spec.python or can_fail(present(p.count), made))]
    fns += [(f"measure {ms.name}", Subject("measure", ms.name), m.measures[ms.name]) for ms in spec.measures
            if ms.name in m.measures and (spec.python or can_fail(ms.expr, made))]
    if not fns:
        return None
    for i in ticking(range(ex.expanded)):
        s = ex.states[i]
        for e in ex.edges_of(i):
            a, c, r = ex.e_action[e], ex.e_combo[e], ex.e_rule[e]
            act = m.actions[a]
            t = ex.states[ex.e_dst[e]]
            for what, subject, fn in fns:
                try:
                    fn(s, t, act.name, r, *act.step_args[c])
                except _ERRORS as exc:
                    return (getattr(exc, "builtin", "well_defined"),
                            Finding(i, failure(m, what, exc), (a, c, r, t), subject=subject))
    return None


def trace_length(f: Finding, depth: int) -> int:
    """How many transitions the trace of finding f has, its state at BFS depth `depth`: a
    failing transition's trace ends in the state it leaves, a transition that breaks a
    property shows its successor too."""
    return depth + (1 if f.step is not None and f.step[3] is not None else 0)


class StepFinder:
    """What an edge or a first visit was (action, combo, rule), recomputed from its source
    state. It holds the exploration's arrays, not the exploration, so no reference cycle
    keeps a large exploration alive once it is dropped."""

    def __init__(self, m: Machine, states: Any, parent: Any, edge_start: Any):
        self.m, self.states, self.parent, self.edge_start = m, states, parent, edge_start
        self.vias: dict[int, tuple[int, int, str | None]] = {}
        self.last: tuple[int, list[tuple[int, int, str | None, State]]] | None = None    # the last source asked about, and its transitions

    def via(self, j: int) -> tuple[int, int, str | None]:
        if j not in self.vias:
            self.vias[j] = self._find_via(j)
        return self.vias[j]

    def _find_via(self, j: int) -> tuple[int, int, str | None]:
        p = int(self.parent[j])
        if p < 0:
            return (-1, -1, None)
        child = self.states[j]
        for a, c, r, t in transitions_from(self.m, self.states[p]):
            if t == child:        # the first transition of the parent to reach it found it
                return (a, c, r)
        raise AssertionError(f"state {j} is not a successor of its parent {p}")

    def source(self, e: int) -> int:
        """The state edge e leaves from (edges are stored grouped by source)."""
        return bisect_right(self.edge_start, e) - 1

    def edge(self, e: int) -> tuple[int, int, str | None]:
        # the analyses read edges source by source: one recomputation per source
        src = self.source(e)
        if self.last is None or self.last[0] != src:
            self.last = (src, transitions_from(self.m, self.states[src]))
        a, c, r, _ = self.last[1][e - int(self.edge_start[src])]
        return a, c, r


def explore(m: Machine, *, max_states: int | None = None, timeout: float | None = None,
            max_memory: int | None = None, properties: set[str] | None = None,
            progress: ProgressFn | None = None) -> Exploration:
    """Explore every state reachable in `m`, checking the online properties on the way."""
    x = _Sweep(m, max_states, timeout, max_memory, properties, progress)
    ex = x.ex
    generated = _runs_generated(m) and not x.independents
    try:
        _add_inits(x, generated)
    except _INTERRUPTS as exc:
        x.interrupted(exc, len(ex.states) - 1 if ex.states else None)
    if not x.cut_short:
        expanded, forward, fired = _generated_loop(x) if generated else _plain_loop(x)
    else:                       # stopped among the initial states: nothing expanded
        _undo_partial(x, 0, generated, {})
        expanded, forward, fired = 0, True, {}
        if generated:
            ex.depth.extend(array("i", [0]) * len(ex.states))
    if x.stopped_by == "max_memory":
        ex.index.clear()        # the largest structure, and no report reads it: room to report
    ex.transitions = len(ex.e_dst)
    ex.expanded = expanded
    ex.forward = forward
    ex.stopped_by = x.stopped_by
    ex.stopped_in = x.stopped_in
    ex.out_of_memory = x.out_of_memory
    ex.errored = bytearray(expanded)
    for i in x.failed:
        ex.errored[i] = 1
    ex.fired_by_action = {a: {r: c for r, c in fired[a].items() if r is not None} for a in sorted(fired)}
    for counts_of in ex.fired_by_action.values():
        for r, c in counts_of.items():
            ex.rule_counts[r] += c
    ex.edge_start.append(len(ex.e_dst))
    if generated:
        ex.attach_lazy()
    ex.complete = ex.stopped_by is None
    ex.seconds = time.monotonic() - x.started
    if progress is not None:
        progress(len(ex.states), ex.transitions, ex.max_depth, len(ex.states) - ex.expanded, ex.seconds)
    return ex


def _add_inits(x: _Sweep, generated: bool) -> None:
    ex = x.ex
    states, index, parent = ex.states, ex.index, ex.parent
    for s in x.m.inits:
        if s in index:
            continue
        index[s] = len(states)
        states.append(s)
        parent.append(-1)
        if not generated:
            ex.via_action.append(-1)
            ex.via_combo.append(-1)
            ex.via_rule.append(None)
            ex.depth.append(0)
        x.check_state(len(states) - 1, s)


def _undo_partial(x: _Sweep, i: int, generated: bool, fired: dict[int, dict[str | None, int]]) -> None:
    """After an interruption (`_INTERRUPTS`) while state i was being expanded: leave the
    exploration as if it had stopped just before i, with i and everything found from it
    so far unexpanded, as at --max-states. Whatever it found from i stays found (those
    states and findings have real shortest paths); i's edges so far go, so no analysis
    reads a partial successor list as i's whole one (a false deadlock, say). A
    MemoryError may strike between two appends, so each list is cut to what is whole."""
    ex = x.ex
    per_state = [ex.states, ex.parent]
    if not generated:
        per_state += [ex.via_action, ex.via_combo, ex.via_rule, ex.depth]
    n = min(len(a) for a in per_state)
    for a in per_state:
        del a[n:]
    if len(ex.index) > n:       # a state entered in the index but not in the lists
        for key in [key for key, j in ex.index.items() if j >= n]:
            del ex.index[key]
    cut = ex.edge_start[i] if len(ex.edge_start) > i else len(ex.e_dst)
    if generated and len(ex.e_dst) > cut:      # the generated loop counted i's edges so far
        for a, _, r, _ in transitions_from(x.m, ex.states[i])[:len(ex.e_dst) - cut]:
            fired[a][r] -= 1
    del ex.edge_start[i:]
    del ex.terminal[i:]
    for edges in (ex.e_dst, ex.e_action, ex.e_combo, ex.e_rule):
        del edges[cut:]
    if not generated:           # the plain loop's counts, recounted from the edges that stay
        for per_rule in fired.values():
            per_rule.clear()
        for a, r in zip(ex.e_action, ex.e_rule):
            fired[a][r] = fired[a].get(r, 0) + 1
    x.failed.discard(i)


def _runs_generated(m: Machine) -> bool:
    """Whether m has a generated loop and still runs the functions it was generated with
    (bound code replaces the step functions of a copy of the machine)."""
    if m.sweep is None:
        return False
    own = m.sweep.namespace               # the namespace of m's generated module
    return (m.is_terminal is own["is_terminal"] and m.domain_error is own["domain_error"]
            and len(m.actions) == len(m.spec.actions)
            and all(a.step is own[f"step_{a.index}"] and a.guard is own.get(f"guard_{a.index}")
                    for a in m.actions))


class _Sweep:
    """One exploration in progress: what it checks, its counters, and the slow paths of
    both loops, where every finding is made (so both loops make the same findings)."""

    def __init__(self, m: Machine, max_states: int | None, timeout: float | None, max_memory: int | None,
                 properties: set[str] | None, progress: ProgressFn | None):
        def wanted(name: str) -> bool:
            return properties is None or name in properties
        spec = m.spec
        self.m = m
        self.ex = ex = Exploration(m)
        self.findings = ex.findings
        self.started = time.monotonic()
        self.deadline = self.started + timeout if timeout is not None else None
        self.progress = progress
        self.max_memory = max_memory
        self.ticking = self.deadline is not None or progress is not None or max_memory is not None
        self.max_states = max_states if max_states is not None else sys.maxsize
        self.stopped_by: str | None = None
        self.stopped_in: str | None = None
        self.out_of_memory = False
        self.cut_short = False             # interrupted in the middle of a state (see _INTERRUPTS)
        self.invariants = [(n, f) for n, f in m.invariants.items() if wanted(n)]
        self.reachables = {n: f for n, f in m.reachables.items() if wanted(n)}
        self.step_invs = [(n, f) for n, f in m.step_invariants.items() if wanted(n)]
        self.variants = [(n, f, b) for n, (f, b) in m.variants.items() if wanted(n)]
        self.step_checks = bool(self.step_invs or self.variants)   # check_step has work on every edge
        # A spec's expressions are typed, so a successor equal to a known state is that state.
        # Code is not: True == 1 == 1.0 hash alike, and a bool or float from the code would be
        # taken for the known int state without its domain being checked. Check every one.
        self.from_code = m.bound_to is not None
        self.independents = [(p.name, tuple(i for i in range(len(m.var_names)) if i not in p.vars))
                             for p in spec.properties if p.kind == "independent" and wanted(p.name)]
        # All invariants in one generated call per state, when exactly those are checked here;
        # a state where one fails (or one cannot be evaluated) takes the slow path.
        combined = m.all_invariants
        self.all_invariants = (combined[1] if combined is not None
                               and combined[0] == [n for n, _ in self.invariants] else None)
        self.failed: set[int] = set()      # states with a transition that failed to evaluate
        self.tried: set[int] = set()       # actions enabled somewhere, with a transition that failed
        for a in spec.actions:
            if a.decide is not None:
                for r in a.decide.rules:
                    ex.rule_counts.setdefault(r.name, 0)
        if spec.terminal is not None and spec.terminal.label is not None:
            for v in spec.terminal.values:
                ex.label_counts.setdefault(v, 0)
        # what the generated loop reads: this class is its SweepTarget (machine/sweep.py)
        self.states, self.index, self.parent = ex.states, ex.index, ex.parent
        self.e_dst, self.edge_start, self.terminal = ex.e_dst, ex.edge_start, ex.terminal
        self.label_counts = ex.label_counts
        self.starts = [0]                  # the first state of each BFS level
        self.combos = [a.combos for a in m.actions]
        self._checked = [p for p in spec.properties if p.kind in SWEEP_KINDS]
        self._names = {"invariant": {n for n, _ in self.invariants}, "reachable": set(self.reachables),
                       "step_invariant": {n for n, _ in self.step_invs},
                       "variant": {n for n, _, _ in self.variants}}

    def live(self) -> tuple[bool, ...]:
        """Per property the generated loop checks (spec order), whether it still judges it;
        then per property whether it still evaluates it only to find evaluation errors: a
        property that has failed (or a reachable one that was reached) is still evaluated
        until `well_defined` has a finding, since an error on a reachable state is one
        whatever else failed."""
        judged, watched = [], []
        watching = "well_defined" not in self.findings
        for p in self._checked:
            done = self.ex.reached if p.kind == "reachable" else self.findings
            mine = p.name in self._names[p.kind]
            judged.append(mine and p.name not in done)
            watched.append(mine and p.name in done and watching and self._fallible(p.name))
        return (*judged, *watched)

    def _fallible(self, name: str) -> bool:
        """Whether property `name` may fail to evaluate (then a failed one is still evaluated)."""
        return self.m.fallible is None or name in self.m.fallible

    def missing(self, action: int, choice: str) -> MissingChoice:
        """What a step invariant reads for a choice this action does not make."""
        return MissingChoice(choice, self.m.actions[action].name)

    def bound(self, k: int) -> int:
        """The bound of variant property k (spec order), 0 where it is not checked."""
        entry = self.m.variants.get(self.m.spec.properties[k].name)
        return entry[1] if entry is not None else 0

    def fail(self, name: str, finding: Finding) -> None:
        """Keep the first finding of each property. For `well_defined` keep a shortest one:
        within a BFS level an error found on a successor (one step further) can come before
        an error found on a later state of the level itself."""
        old = self.findings.get(name)
        if old is None or (name == "well_defined" and self._length(finding) < self._length(old)):
            self.findings[name] = finding

    def _length(self, f: Finding) -> int:
        i = f.state
        if i < len(self.ex.depth):        # the plain loop keeps a depth per state
            return trace_length(f, self.ex.depth[i])
        p = self.parent[i]                # the generated loop: the level of i's parent has started
        return trace_length(f, 0 if p < 0 else bisect_right(self.starts, p))

    def tick(self, i: int, depth: int) -> bool:
        """Every 256 states: stop at the deadline (True), and every 4096 at the memory
        limit; report progress every 4096."""
        now = time.monotonic()
        if self.deadline is not None and now > self.deadline:
            self.stopped_by = "timeout"
            return True
        if self.max_memory is not None and (i & (MEMORY_EVERY - 1)) == 0 and current_rss() > self.max_memory:
            self.stopped_by = "max_memory"
            return True
        if self.progress is not None and (i & 4095) == 0:
            n = len(self.states)
            self.progress(n, len(self.e_dst), depth, n - i, now - self.started)
        return False

    def interrupted(self, exc: BaseException, i: int | None = None) -> None:
        """The deadline passed in the user's code, or memory ran out: stop (see _INTERRUPTS).
        A call into the user's code that did not return within its own deadline (Stuck) while
        state i was at hand is also a finding of `bound_code` there: the code may be stuck for
        good, so nothing more of it runs in this exploration."""
        self.cut_short = True
        if isinstance(exc, Stuck):
            self.stopped_by, self.stopped_in = "call_timeout", exc.doing
            if i is not None and "bound_code" in self.m.spec.builtins:
                self.fail("bound_code", Finding(i, exc.text()))
        elif isinstance(exc, OutOfTime):
            self.stopped_by, self.stopped_in = "timeout", exc.doing
        elif isinstance(exc, WorkersLost):
            self.stopped_by, self.stopped_in = "workers_lost", exc.why
        else:
            self.stopped_by, self.out_of_memory = "max_memory", True

    def terminal_error(self, i: int, exc: Exception) -> None:
        """State i is not expanded: whether a run may end there is unknown, and exploring on
        from it would add states that are reachable only if it is not terminal."""
        self.fail("well_defined", Finding(i, failure(self.m, "terminal", exc), subject=Subject("terminal")))
        self.failed.add(i)
        if self.ex.terminal_unknown is None:
            self.ex.terminal_unknown = i

    def guard_error(self, i: int, action: int, exc: Exception) -> bool:
        name = self.m.actions[action].name
        self.fail("well_defined", Finding(i, failure(self.m, f"guard of {name}", exc),
                                          subject=Subject("guard", name)))
        self.failed.add(i)
        return False

    def step_error(self, i: int, action: int, ci: int, exc: Exception) -> None:
        self.fail(getattr(exc, "builtin", "well_defined"),
                  Finding(i, failure(self.m, action_text(self.m, action, ci), exc), (action, ci, None, None),
                          subject=action_subject(self.m, action, ci)))
        self.failed.add(i)
        self.tried.add(action)

    def domain_fail(self, i: int, action: int, ci: int, rule: str | None, t: State) -> None:
        m = self.m
        bad = m.domain_error(t)
        self.fail("domains", Finding(i, messages.outside_domain(m, bad, t[bad]), (action, ci, rule, t)))
        self.failed.add(i)
        self.tried.add(action)

    def check_state(self, j: int, t: State) -> None:
        """The invariants and reachable properties on new state j."""
        if self.all_invariants is not None:
            try:
                clean = self.all_invariants(t) < 0
            except _ERRORS:
                clean = False
            if clean:
                if self.reachables:
                    self._check_reachables(j, t)
                return
        findings = self.findings
        watching = "well_defined" not in findings      # a failed property is still evaluated (see live)
        for name, f in self.invariants:
            judged = name not in findings
            if not (judged or watching and self._fallible(name)):
                continue
            try:
                ok = f(t)
            except _ERRORS as exc:
                self.fail("well_defined", self._property_error(j, name, exc))
                continue
            if not ok and judged:
                self.fail(name, Finding(j, messages.FALSE_IN_STATE))
        self._check_reachables(j, t)

    def _property_error(self, i: int, name: str, exc: Exception, step: StepTaken | None = None) -> Finding:
        return Finding(i, failure(self.m, f"property {name}", exc), step, subject=Subject("property", name))

    def _check_reachables(self, j: int, t: State) -> None:
        watching = "well_defined" not in self.findings
        reached = self.ex.reached
        for name, f in self.reachables.items():
            fresh = name not in reached
            if fresh or watching and self._fallible(name):
                try:
                    if f(t) and fresh:
                        reached[name] = j
                except _ERRORS as exc:
                    self.fail("well_defined", self._property_error(j, name, exc))

    def check_step(self, i: int, action: int, ci: int, r: str | None, t: State) -> None:
        """The step invariants and variants on one transition from state i to t."""
        act = self.m.actions[action]
        s = self.states[i]
        step = (action, ci, r, t)
        findings = self.findings
        watching = "well_defined" not in findings      # a failed property is still evaluated (see live)
        if self.step_invs:
            args = act.step_args[ci]
            for name, f in self.step_invs:
                judged = name not in findings
                if not (judged or watching and self._fallible(name)):
                    continue
                try:
                    ok = f(s, t, act.name, r, *args)
                except _ERRORS as exc:
                    self.fail("well_defined", self._property_error(i, name, exc, step))
                    continue
                if not ok and judged:
                    self.fail(name, Finding(i, messages.FALSE_FOR_TRANSITION, step))
        for name, variant, bound in self.variants:
            judged = name not in findings
            if not (judged or watching and self._fallible(name)):
                continue
            try:
                before, after = variant(s), variant(t)
            except _ERRORS as exc:
                self.fail("well_defined", self._property_error(i, name, exc, step))
                continue
            if not judged:
                continue
            if after <= before:
                self.fail(name, Finding(i, f"the variant goes from {before} to {after}: it must "
                                           "strictly increase", step))
            elif after > bound or before > bound:
                self.fail(name, Finding(i, f"the variant reaches {max(before, after)}, above its "
                                           f"bound {bound}", step))


def _generated_loop(x: _Sweep) -> tuple[int, bool, dict[int, dict[str | None, int]]]:
    """Run the machine's generated loop; returns what `_plain_loop` returns, and sets the
    depths from the levels' first states."""
    ex = x.ex
    # The loop allocates a tuple per state and makes no reference cycle, so the cyclic
    # collector has nothing to find there; left on, it would walk the growing state set
    # again and again.
    collecting = gc.isenabled()
    gc.disable()
    sweep = x.m.sweep
    assert sweep is not None, "called only where _runs_generated said the machine has a generated loop"
    try:
        expanded, forward, deeper, counts = sweep(x)
    finally:
        if collecting:
            gc.enable()
    fired: dict[int, dict[str | None, int]] = {k: {} for k in x.tried}
    for k, rule, c in counts:
        if c:
            per_rule = fired.setdefault(k, {})
            per_rule[rule] = per_rule.get(rule, 0) + c
    if x.cut_short:
        _undo_partial(x, expanded, True, fired)
    if deeper < len(ex.states):       # stopped early: found, not expanded, one level deeper
        x.starts.append(deeper)
    bounds = x.starts + [len(ex.states)]
    for d in range(len(x.starts)):
        ex.depth.extend(array("i", [d]) * (bounds[d + 1] - bounds[d]))
    return expanded, forward, fired


def _plain_loop(x: _Sweep) -> tuple[int, bool, dict[int, dict[str | None, int]]]:
    """The loop for machines without a generated one: calls the step functions and
    stores per edge and per state what it was. Returns (states expanded, forward, the
    transitions fired per action and rule). Bound code whose levels are shared among worker
    processes (explorer/parallel.py) is handed each BFS level before it is expanded (the
    code's `ahead`); its step functions then give the workers' outcomes, in this order."""
    m, ex = x.m, x.ex
    states, depth, e_dst = ex.states, ex.depth, ex.e_dst
    is_terminal, label = m.is_terminal, m.label
    independents = x.independents
    seen_outcomes: list[Outcomes] = [dict() for _ in independents]
    fired: dict[int, dict[str | None, int]] = {}     # every action that was enabled, with its rules
    forward = True
    i = 0
    code = bound_code(m)
    ahead, level_end = (code.ahead, 0) if code is not None else (None, 0)
    if code is not None:
        code.ahead = None               # one exploration's: a later one runs the code here
    try:
        while i < len(states):
            if len(states) > x.max_states:
                x.stopped_by = "max_states"
                break
            if x.ticking and (i & 255) == 0 and x.tick(i, depth[i]):
                break
            if ahead is not None and i == level_end:    # a new BFS level: states[i:] is all of it
                level_end = len(states)
                ahead(states[i:level_end])
            s = states[i]
            ex.edge_start.append(len(e_dst))
            try:
                term = is_terminal(s)
            except _ERRORS as exc:
                x.terminal_error(i, exc)            # not expanded, and no independence outcome
                ex.terminal.append(0)
                i += 1
                continue
            ex.terminal.append(1 if term else 0)
            # this state up to each independence property's ignored vars, projected once
            kept = [tuple(s[v] for v in keep) for _, keep in independents]
            for k, (name, _) in enumerate(independents):
                _same(seen_outcomes[k], (kept[k], "terminal"), term, i, None, name, x.fail, m)
            if term:
                if label is not None:
                    lab = label(s)
                    ex.label_counts[lab] = ex.label_counts.get(lab, 0) + 1
                i += 1
                continue
            for act in m.actions:
                try:
                    enabled = act.guard is None or act.guard(s)
                except _ERRORS as exc:
                    x.guard_error(i, act.index, exc)
                    continue
                for k, (name, _) in enumerate(independents):
                    _same(seen_outcomes[k], (kept[k], act.index), enabled, i, None, name, x.fail, m)
                if not enabled:
                    continue
                forward = _plain_transitions(x, i, act, kept, seen_outcomes, fired.setdefault(act.index, {}),
                                             forward)
            i += 1
    except _INTERRUPTS as exc:
        x.interrupted(exc, i if i < len(states) else None)
        _undo_partial(x, i, False, fired)
    finally:
        if code is not None:
            code.relay_done()
    return i, forward, fired


def _plain_transitions(x: _Sweep, i: int, act: CompiledAction, kept: list[tuple[Any, ...]],
                       seen_outcomes: list[Outcomes], fired_here: dict[str | None, int], forward: bool) -> bool:
    """Every transition of one enabled action from state i, stored as edges (new states
    appended); returns whether the exploration is still forward (every edge one level down)."""
    m, ex = x.m, x.ex
    states, index, depth = ex.states, ex.index, ex.depth
    s, d_next = states[i], depth[i] + 1
    from_code, step_checks, step, admit = x.from_code, x.step_checks, act.step, act.admit
    for ci, combo in enumerate(act.combos):
        try:
            if admit is not None and admit(s, *combo) is not None:
                for k, (name, _) in enumerate(x.independents):     # absent here: an outcome too
                    _same(seen_outcomes[k], (kept[k], act.index, ci), None, i, None, name, x.fail, m)
                continue
            t, r = step(s, *combo)
        except _ERRORS as exc:
            x.step_error(i, act.index, ci, exc)
            continue
        j = index.get(t)
        if (j is None or from_code) and m.domain_error(t) >= 0:
            x.domain_fail(i, act.index, ci, r, t)
            continue
        if j is None:
            j = len(states)
            index[t] = j
            states.append(t)
            ex.parent.append(i)
            ex.via_action.append(act.index)
            ex.via_combo.append(ci)
            ex.via_rule.append(r)
            depth.append(d_next)
            x.check_state(j, t)
        elif forward and depth[j] != d_next:
            forward = False
        ex.e_dst.append(j)
        ex.e_action.append(act.index)
        ex.e_combo.append(ci)
        ex.e_rule.append(r)
        fired_here[r] = fired_here.get(r, 0) + 1
        if step_checks:
            x.check_step(i, act.index, ci, r, t)
        for k, (name, keep) in enumerate(x.independents):
            outcome = (tuple(t[v] for v in keep), r)
            _same(seen_outcomes[k], (kept[k], act.index, ci), outcome, i,
                  (act.index, ci, r, t), name, x.fail, m)
    return forward


def _same(seen: Outcomes, key: tuple[Any, ...], outcome: Any,
          state: int, step: StepTaken | None, name: str,
          fail: Callable[[str, Finding], None], m: Machine) -> None:
    """Independence: the first outcome seen for `key` must be the outcome every time. The
    key is the projected state and what is checked: ("terminal"), (action) for its guard,
    (action, combo) for a transition."""
    first = seen.get(key)
    if first is None:
        seen[key] = (outcome, state, step)
        return
    if first[0] != outcome:
        if key[-1] == "terminal":
            msg = messages.TERMINAL_DIFFERS
        elif isinstance(outcome, bool):
            msg = messages.guard_differs(bool(first[0]))
        else:
            msg = messages.OUTCOMES_DIFFER
        if key[-1] == "terminal":
            subject = Subject("terminal")
        elif len(key) == 2:
            subject = Subject("guard", m.actions[key[1]].name)
        else:
            subject = action_subject(m, key[1], key[2])
        fail(name, Finding(first[1], msg, first[2], Finding(state, msg, step), subject))


def _fmt_choices(labels: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in labels.items()) or "no choices"
