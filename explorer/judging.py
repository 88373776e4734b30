"""Judging an exploration: each property's verdict, trace and worst cases, from what the
engine explored.

This is where "holds" is decided. A property is only said to hold when the whole
reachable space was explored and no spec error (a value leaving its domain, an
expression that cannot be evaluated) cut the exploration short; otherwise it is
`unknown`. Violations always carry the trace that shows them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from haltproof.machine.compiled import EVAL_ERRORS, EvalError, Machine, spec_where
from haltproof.machine.compose import running_call
from haltproof.machine.spec import PropertyDecl, Spec, present
from haltproof.machine.text import counted
from haltproof.machine.usercode import OutOfTime
from haltproof.properties import budget
from haltproof.properties import liveness as L
from haltproof.properties import termination as T
from haltproof.properties.exploration import ExploredGraph
from haltproof.properties.vacuity import Notice
from haltproof.properties.kinds import HOLDS, KIND_TEXT, UNKNOWN, VIOLATED, Kind, PropertyResult, Subject, Trace

from .analyses import Analyses
from .chances import Chances, first_chance_error
from .engine import Exploration, Finding, failure, first_count_error, trace_length
from .vengine import VExploration
from .replay import run_scenario
from .traces import lasso_trace, path_trace, run_trace
from .options import BOUND_OPTION, Options
from .results import ScenarioResult


def note_count_errors(ex: Exploration, selected: set[str]) -> None:
    """A count, measure or `probability` target that cannot be evaluated on an explored
    transition or state violates `well_defined` (or `bound_code`), kept if its trace is
    shorter than the engine's finding."""
    for found in (first_count_error(ex), first_chance_error(ex, selected)):
        if found is None:
            continue
        name, finding = found
        old = ex.findings.get(name)
        if old is None or _length(ex, finding) < _length(ex, old):
            ex.findings[name] = finding


def why_undecided(ex: Exploration, spec_errors: list[str]) -> tuple[str | None, str | None]:
    """Why a property the exploration did not settle is unknown (None: explored in full), and
    the same for what depends on where runs end (termination, variants, bounds), which a
    terminal predicate that cannot be evaluated also leaves open."""
    if not ex.complete:
        assert ex.stopped_by is not None, "an incomplete exploration says what stopped it"
        why: str | None = ("the exploration ran out of memory" if ex.out_of_memory
                           else f"the exploration stopped at {BOUND_OPTION[ex.stopped_by]}")
    elif spec_errors:
        why = f"the exploration was cut short by the spec's own errors ({', '.join(spec_errors)})"
    else:
        why = None
    if ex.terminal_unknown is not None:
        return why, ("the terminal predicate cannot be evaluated in a reachable state (see well_defined), "
                     "so whether runs end there is unknown and nothing beyond it was explored")
    return why, why


def judge_property(p: PropertyDecl, m: Machine, ex: Exploration, graph: Graph, chances: Chances,
           whys: tuple[str | None, str | None], after: Analyses) -> PropertyResult:
    """One declared property's result on the exploration (`whys`: see `why_undecided`)."""
    why, why_end = whys
    if p.kind == "liveness":
        r = _liveness(p, ex, graph, why_end)
    elif p.pattern is not None:
        r = _pattern(p, ex, graph, why)
    elif p.kind in ("invariant", "step_invariant", "variant", "independent"):
        r = from_finding(ex, p.name, p.kind, p.line, why_end if p.kind == "variant" else why,
                          KIND_TEXT[p.kind])
        _past_note(p, ex, r, after)
    elif p.kind == "reachable":
        r = _possible(ex, p.name, why) if p.possible else _reachable(ex, p.name, why)
        _past_note(p, ex, r, after)
    elif p.kind == "terminates":
        r = _terminates(ex, graph, p.name, why_end)
    elif p.kind in ("probability", "expected"):
        r = chances.result(p)
    else:
        try:
            r = _within(ex, graph, p.name, why_end, m)
        except OutOfTime as stop:       # its count is the user's code
            after.out_of_time(f"counting the transitions of {p.name}", stop)
            r = PropertyResult(p.name, "terminates_within", UNKNOWN,
                               "not decided: the --timeout passed while counting its transitions")
    r.description = p.description
    r.line, r.file = p.line, p.file
    return r


def came_as_expected(spec: Spec, options: Options, results: list[PropertyResult], scenarios: list[ScenarioResult],
                 settled: bool, inactive: set[str]) -> bool | None:
    """Whether a spec that declares `expect: violated` came out exactly as it says (None when it
    declares nothing); marks each result's `expected`. `settled`: explored in full, nothing left open.
    An expected property whose `when` excludes these params (`inactive`) is not expected here: a run
    where none of them applies is judged as a run without `expect` (proved passes)."""
    if spec.expect_violated is None:
        return None
    expect = set(spec.expect_violated) - inactive
    if not expect:
        return None
    for r in results:
        r.expected = (r.status == VIOLATED) if r.name in expect else (r.status != VIOLATED)
    asked = set(options.properties) if options.properties else None
    judged = {r.name for r in results}
    missing = [n for n in expect if n not in judged and (asked is None or n in asked)]
    return (settled and not missing and all(r.expected for r in results)
            and all(s.ok for s in scenarios) and any(r.status == VIOLATED for r in results))


def run_scenarios(m: Machine, options: Options, after: Analyses) -> list[ScenarioResult]:
    """The spec's scenarios for these params (a bound spec replays them on the code); the
    deadline passing in one ends them: the rest are not run, and the run is incomplete."""
    out: list[ScenarioResult] = []
    if options.properties:
        return out
    for sc in m.spec.scenarios:
        if sc.params == m.params:
            try:
                rep = run_scenario(m, sc)
            except OutOfTime as stop:
                after.out_of_time(f"replaying scenario {sc.name}", stop)
                break
            out.append(ScenarioResult(sc.name, rep.ok, rep.problem or "as expected", len(rep.steps) - 1))
    return out


def _length(ex: Exploration, f: Finding) -> int:
    return trace_length(f, int(ex.depth[f.state]))


def from_finding(ex: Exploration, name: str, kind: Kind, line: int | None, why: str | None,
                  holds: str) -> PropertyResult:
    f: Finding | None = ex.findings.get(name)
    if f is not None:
        r = PropertyResult(name, kind, VIOLATED, f.message, path_trace(ex, f.state, f.step), line=line,
                           subject=f.subject)
        if f.other is not None:
            r.other_trace = path_trace(ex, f.other.state, f.other.step)
        return r
    if why:
        return PropertyResult(name, kind, UNKNOWN, f"not decided: {why}", line=line)
    return PropertyResult(name, kind, HOLDS, holds, line=line)


def _pattern(p: PropertyDecl, ex: Exploration, g: Graph, why: str | None) -> PropertyResult:
    """A pattern property: an invariant over its monitor (machine/patterns.py), reported under
    its pattern's name with the states the monitors added to the search."""
    kind: Kind = present(p.pattern)
    scope = "" if p.scope == "global" else f" (scope {p.scope.replace('_', ' ')})"
    r = from_finding(ex, p.name, kind, p.line, why, KIND_TEXT[kind] + scope)
    if r.status == VIOLATED:
        r.message = f"{kind}{scope} violated: the run so far already breaks it"
    elif r.status == HOLDS:
        r.message += f"; {g.monitor_states()}"
    return r


def _liveness(p: PropertyDecl, ex: Exploration, g: Graph, why: str | None) -> PropertyResult:
    """A liveness pattern: violated by a bad maximal run (properties/liveness.py), a finite one
    first, else a fair lasso; it holds when there is none in a complete exploration."""
    kind: Kind = present(p.pattern)
    scope = "" if p.scope == "global" else f" (scope {p.scope.replace('_', ' ')})"
    g.compute()                     # an acyclic graph (its order found) has no lasso to search for
    acyclic = g.order is not None
    try:
        open_ = ex.open_states(p.name)
        fairness = L.assumptions(ex)
        own = L.own_view(ex, p.name)       # its own monitors only: the lasso it alone would give
        bad = L.bad_run(own, open_, fairness, acyclic)
        if bad is None:
            relied = [] if acyclic else _relied_on(own, open_, fairness)
        else:                       # a lasso is fair under them; an end needs none of them
            relied = fairness if bad.end is None else []
    except EVAL_ERRORS as exc:
        return PropertyResult(p.name, kind, UNKNOWN, f"not decided: its expression cannot be evaluated on a reachable "
                              f"state or transition: {exc}", line=p.line)
    owed = "the trigger is not answered" if kind == "response" else "it never holds"
    if bad is not None and bad.end is not None:
        trace = path_trace(ex, bad.end)
        r = PropertyResult(p.name, kind, VIOLATED, f"{kind}{scope} violated: a run ends after "
                           f"{counted(len(trace), 'transition')} and {owed}", trace, line=p.line)
    elif bad is not None:
        cycle = list(bad.cycle)
        r = PropertyResult(p.name, kind, VIOLATED, f"{kind}{scope} violated: a run can cycle forever through "
                           f"{counted(len(cycle), 'transition')} and {owed}" + _fair_text(relied, "fair under"),
                           lasso_trace(ex, present(bad.start), cycle), line=p.line)
    elif why:
        r = PropertyResult(p.name, kind, UNKNOWN, f"not decided: {why}", line=p.line)
    else:
        r = PropertyResult(p.name, kind, HOLDS, f"{KIND_TEXT[kind]}{scope}; {g.monitor_states()}"
                           + _fair_text(relied, "under fairness"), line=p.line)
    r.fairness = [f.text for f in relied] or None
    return r


def _relied_on(ex: ExploredGraph, open_: Any, fairness: list[L.Assumption]) -> list[L.Assumption]:
    """The assumptions a verdict without a fair bad run relies on: all of them when some
    unfair one exists, none otherwise (the proof then needs no fairness)."""
    if fairness and L.fair_lasso(ex, open_, []) is not None:
        return fairness
    return []


def _fair_text(relied: list[L.Assumption], lead: str) -> str:
    """`; under fairness: weak a, strong b when c`, or nothing when no assumption was needed."""
    return f"; {lead}: {', '.join(f.text for f in relied)}" if relied else ""


def expect_not_applying(spec: Spec, inactive: set[str]) -> list[Notice]:
    """A notice when no property `expect:` names applies to these params (each one's `when`
    excludes them): the run is then judged as one without `expect`, and says so."""
    if not spec.expect_violated or set(spec.expect_violated) - inactive:
        return []
    names = ", ".join(spec.expect_violated)
    return [Notice("expect", "expect", f"no expected violation applies to these params (the when of {names} "
                   "excludes them): the run is judged as one without expect", spec.expect_line,
                   summary="no expected violation applies")]


def declaration_warnings(spec: Spec) -> list[Notice]:
    """A framework declaration's own warnings (machine/declarations.py: a scripted part that
    changes what the user's code means), at the declaration's lines, in every run."""
    return [Notice("declaration", "declaration", message, line, summary=message) for line, message in spec.load_warnings]


def unbounded_by_fairness(m: Machine, selected: set[str]) -> list[Notice]:
    """A notice per `terminates_within` and variant checked on a spec with fairness: a bound
    on the runs' length does not follow from fairness, so they are judged over every run."""
    if not m.spec.fairness:
        return []
    return [Notice("fairness", p.name, f"property {p.name} ({p.kind}) is judged over every run, fair or not: "
                   "fairness does not bound how long a run takes", p.line, summary=f"{p.name} ignores fairness",
                   file=p.file)
            for p in m.spec.properties if p.kind in ("terminates_within", "variant") and p.name in selected]


def distinct(ex: Exploration, keep: list[int]) -> int:
    """How many explored states remain told apart by the vars `keep` alone."""
    if isinstance(ex, VExploration):        # from the codes, not one decoded tuple per state
        vm, arrays = ex.vm, ex.vm.decode(ex.codes.astype(np.int64))
        code = np.zeros(len(ex.codes), dtype=np.int64)
        for i in keep:
            code += vm.local_index(i, arrays[i]) * vm.strides[i]
        code.sort()                     # distinct values by sorting: numpy's hashed unique is slower here
        return int(np.count_nonzero(np.diff(code))) + 1 if len(code) else 0
    return len({tuple(s[i] for i in keep) for s in budget.ticking(ex.states)})


def monitor_states(ex: Exploration) -> str:
    """How many of the explored states only the pattern monitors' vars tell apart."""
    user = [i for i, v in enumerate(ex.machine.spec.vars) if v.monitor is None]
    plain = distinct(ex, user)
    return f"the pattern monitors added {len(ex.states) - plain} of the {len(ex.states)} states explored"


def _past_note(p: PropertyDecl, ex: Exploration, r: PropertyResult, after: Analyses) -> None:
    """A decided property with past-time operators (machine/pasttime.py) says how many of the
    explored states only its own monitors tell apart: what the operators cost (unless a bound
    stops the count: the verdict stands, the note says so)."""
    if not p.past or r.status == UNKNOWN:
        return
    spec = ex.machine.spec
    others = [i for i, v in enumerate(spec.vars) if v.monitor != p.name]
    monitors = f"its past-time monitors ({p.past} var{'s' if p.past > 1 else ''})"
    r.message += after.run(f"counting the states the past-time monitors of {p.name} added",
                           lambda: f"; {monitors} added {len(ex.states) - distinct(ex, others)} of the "
                                   f"{len(ex.states)} states explored",
                           lambda why: f"; how many states {monitors} added is not counted: {why}")


def _reachable(ex: Exploration, name: str, why: str | None) -> PropertyResult:
    if name in ex.reached:
        witness = path_trace(ex, ex.reached[name])
        return PropertyResult(name, "reachable", HOLDS,
                              f"reached after {counted(len(witness), 'transition')}", witness=witness)
    if why:
        return PropertyResult(name, "reachable", UNKNOWN, f"not reached in the explored part; {why}")
    return PropertyResult(name, "reachable", VIOLATED, "unreachable: no reachable state satisfies it")


def _possible(ex: Exploration, name: str, why: str | None) -> PropertyResult:
    """A `possible` property: whether some reachable state satisfies it, as an answer that
    holds either way (with a shortest witness when it does); unknown only while unreached
    in an exploration that stopped early."""
    if name in ex.reached:
        witness = path_trace(ex, ex.reached[name])
        return PropertyResult(name, "possible", HOLDS, f"possible: reached after {counted(len(witness), 'transition')}",
                              witness=witness, value={"possible": True})
    if why:
        return PropertyResult(name, "possible", UNKNOWN, f"not decided: not reached in the explored part; {why}")
    return PropertyResult(name, "possible", HOLDS, "impossible: no reachable state satisfies it",
                          value={"possible": False})


@dataclass(frozen=True)
class Highest:
    """A `maximum` property's answer over the explored states: its highest value, the first
    state (in BFS order, so a shallowest one) that has it, and the first state whose value
    exceeds the property's `at_most` (None when none does or it declares none)."""

    value: int
    at: int
    over: int | None


MAXIMUM_CHUNK = 1 << 16      # states decoded at once when the vector engine's states are evaluated


def find_maxima(m: Machine, ex: Exploration, selected: set[str], after: Analyses) -> dict[str, Highest | str | None]:
    """Per `maximum` property judged: its `Highest`, or None where its expression cannot be
    evaluated on an explored state, which is a `well_defined` finding like any other (kept
    when its trace is shorter than the engine's own finding), or why it is undecided (a bound
    stopped its evaluation)."""
    out: dict[str, Highest | str | None] = {}
    for name, (fn, at_most) in m.maxima.items():
        if name not in selected:
            continue
        found = after.run(f"evaluating {name} on every explored state",
                          partial(_highest, ex, name, fn, at_most), lambda why: why)
        if isinstance(found, Finding):
            old = ex.findings.get("well_defined")
            if old is None or _length(ex, found) < _length(ex, old):
                ex.findings["well_defined"] = found
            out[name] = None
        else:
            out[name] = found
    return out


def _highest(ex: Exploration, name: str, fn: Callable[[Any], int], at_most: int | None) -> Highest | Finding:
    """The `Highest` of one expression, on either engine's states."""
    if isinstance(ex, VExploration):
        return _vector_highest(ex, name, at_most)
    return _scalar_highest(ex, name, fn, at_most)


def _scalar_highest(ex: Exploration, name: str, fn: Callable[[Any], int],
                    at_most: int | None) -> Highest | Finding:
    """The `Highest` of one expression over the states in BFS order, or the first state where it fails."""
    best, at, over = 0, -1, None
    for i in budget.ticking(range(len(ex.states))):
        try:
            value = fn(ex.states[i])
        except EVAL_ERRORS as exc:
            return Finding(i, failure(ex.machine, f"property {name}", exc), subject=Subject("property", name))
        if at < 0 or value > best:
            best, at = value, i
        if over is None and at_most is not None and value > at_most:
            over = i
    return Highest(best, at, over)


def _vector_highest(ex: VExploration, name: str, at_most: int | None) -> Highest:
    """The same from the states' codes, a chunk at a time (a vectorized expression cannot fail)."""
    fn = ex.vm.maxima[name]
    best, at, over = 0, -1, None
    for lo in range(0, len(ex.codes), MAXIMUM_CHUNK):
        budget.tick()
        codes = ex.codes[lo:lo + MAXIMUM_CHUNK]
        values = np.broadcast_to(np.asarray(fn(ex.vm.decode(codes.astype(np.int64)))), (len(codes),))
        k = int(np.argmax(values))          # the first index of the highest value
        if at < 0 or int(values[k]) > best:
            best, at = int(values[k]), lo + k
        if over is None and at_most is not None:
            above = np.nonzero(values > at_most)[0]
            if len(above):
                over = lo + int(above[0])
    return Highest(best, at, over)


def judge_maximum(p: PropertyDecl, ex: Exploration, found: Highest | str | None, why: str | None) -> PropertyResult:
    """A `maximum` property: the exact highest value with a shortest witness; violated, with a
    shortest counterexample, when a reachable state exceeds its `at_most`. An exploration that
    stopped early knows only a lower bound: unknown, unless it already exceeds `at_most`; so
    does an evaluation a bound stopped (`found` says why)."""
    fn, at_most = ex.machine.maxima[p.name]
    if isinstance(found, str):
        r = PropertyResult(p.name, "maximum", UNKNOWN, f"not decided: {found}")
    elif found is None:
        r = PropertyResult(p.name, "maximum", UNKNOWN, "not decided: its expression cannot be evaluated in a "
                                                       "reachable state (see well_defined)")
    else:
        witness = path_trace(ex, found.at)
        value: dict[str, Any] = {"value": found.value, "exact": why is None, "at_most": at_most,
                                 "witness_transitions": len(witness)}
        reached = f"first reached after {counted(len(witness), 'transition')}"
        if found.over is not None:
            trace = path_trace(ex, found.over)
            highest = f"the highest is {found.value}" if why is None else f"the highest found is {found.value}"
            r = PropertyResult(p.name, "maximum", VIOLATED,
                               f"reaches {fn(ex.states[found.over])}, more than at_most {at_most}, after "
                               f"{counted(len(trace), 'transition')} ({highest}, {reached})", trace)
        elif why:
            r = PropertyResult(p.name, "maximum", UNKNOWN, f"not decided: at least {found.value} ({reached}); {why}")
        else:
            within = f", within at_most {at_most}" if at_most is not None else ""
            r = PropertyResult(p.name, "maximum", HOLDS, f"maximum {found.value}{within}, {reached}")
        r.witness, r.value = witness, {"maximum": value}
    r.description, r.line, r.file = p.description, p.line, p.file
    return r


class Graph:
    """Graph facts shared by the termination properties, computed once per run on demand."""

    def __init__(self, ex: Exploration, after: Analyses):
        self.ex, self.after = ex, after
        self._done = False
        self._monitors: str | None = None

    def monitor_states(self) -> str:
        """`monitor_states` of the exploration, counted once for all its patterns (unless a
        bound stops the count: the verdicts stand, the note says so)."""
        if self._monitors is None:
            self._monitors = self.after.run("counting the states the pattern monitors added",
                                            lambda: monitor_states(self.ex),
                                            lambda why: f"how many states the pattern monitors added is not "
                                                        f"counted: {why}")
        return self._monitors

    def compute(self) -> None:
        """Its deadlock, topological order (None: cyclic) and shortest lasso; done once, when
        whole (a bound may stop it, and every analysis after)."""
        if self._done:
            return
        self.deadlock = T.find_deadlock(self.ex)
        self.order = T.topological_order(self.ex)
        # a cycle of the machine, not one of the property monitors unrolling it (liveness.OwnView)
        self.plain = L.own_view(self.ex, None)
        self.lasso = T.find_lasso(self.plain) if self.order is None else None   # only a cyclic graph has one
        self._done = True


def _termination_violation(ex: Exploration, g: Graph, name: str, kind: Kind,
                           fairness: list[L.Assumption] | None = None) -> PropertyResult | None:
    """A deadlock, else a cycle among non-terminal states (with `fairness`: a fair one only)."""
    g.compute()
    if g.deadlock is not None:
        call = running_call(ex.machine.spec, ex.machine.state_dict(ex.states[g.deadlock]))
        inside = f", inside {call}: that call never returns" if call else ""
        return PropertyResult(name, kind, VIOLATED, "deadlock: a non-terminal state with no "
                                                    f"enabled action{inside}", path_trace(ex, g.deadlock))
    lasso = g.lasso
    if lasso is not None and fairness:
        fair = L.fair_lasso(g.plain, np.ones(len(ex.states), dtype=bool), fairness)
        lasso = None if fair is None else (present(fair.start), list(fair.cycle))
    if lasso is not None:
        start, cycle = lasso
        trace = lasso_trace(ex, start, cycle)
        return PropertyResult(name, kind, VIOLATED,
                              f"a {'fair ' if fairness else ''}cycle of {counted(len(cycle), 'transition')} among "
                              "non-terminal states: the run can go on forever"
                              + _fair_text(fairness or [], "fair under"), trace)
    return None


def _terminates(ex: Exploration, g: Graph, name: str, why: str | None) -> PropertyResult:
    """No deadlock and no cycle among non-terminal states that is fair under the spec's fairness."""
    try:
        fairness = L.assumptions(ex)
        bad = _termination_violation(ex, g, name, "terminates", fairness)
    except EVAL_ERRORS as exc:          # named with the line of the `when` that failed
        return PropertyResult(name, "terminates", UNKNOWN, f"not decided: a fairness when{spec_where(ex.machine, exc)} "
                              f"cannot be evaluated on a reachable transition: {exc}")
    # a cycle needs fairness to be excused, and a fair lasso is fair under them; a deadlock needs none
    lasso = bad is not None and bad.trace is not None and bad.trace.kind == "lasso"
    relied = fairness if g.lasso is not None and (bad is None or lasso) else []
    if bad is not None:
        r = bad
    elif why:
        r = PropertyResult(name, "terminates", UNKNOWN, f"not decided: {why}")
    else:
        r = PropertyResult(name, "terminates", HOLDS, "every run reaches a terminal state"
                           + _fair_text(relied, "under fairness"))
    r.fairness = [f.text for f in relied] or None
    return r


def _within(ex: Exploration, g: Graph, name: str, why: str | None, m: Machine) -> PropertyResult:
    bad = _termination_violation(ex, g, name, "terminates_within")
    if bad is not None:
        return bad
    bound = m.within[name]
    count = m.counts.get(name)
    what = "counted transition" if count is not None else "transition"
    assert g.order is not None, "an acyclic graph: a cycle would have been a violation"
    try:
        longest, start, edges, end = T.longest_run(ex, g.order, _weight(ex, name, count, as_int=False))
    except (EvalError, ZeroDivisionError) as exc:
        return PropertyResult(name, "terminates_within", UNKNOWN,
                              f"not decided: its count expression failed: {exc}")
    if longest > bound:
        return PropertyResult(name, "terminates_within", VIOLATED,
                              f"a run takes {counted(longest, what)}, more than {bound}",
                              _longest_trace(ex, start, edges, end))
    if why:
        return PropertyResult(name, "terminates_within", UNKNOWN,
                              f"not decided (longest so far: {counted(longest, what)}): {why}")
    return PropertyResult(name, "terminates_within", HOLDS,
                          f"every run ends within {counted(bound, what)} (the longest takes {longest})")


def edge_weights(ex: Exploration, m: Machine) -> Callable[[str], Any]:
    """Per measure name (`transitions` too), how much each edge counts, as `_weight` gives it."""
    kinds = {ms.name: ms.kind for ms in m.spec.measures}
    return lambda name: _weight(ex, name, m.measures.get(name), kinds.get(name) == "sum")


def _weight(ex: Exploration, name: str, fn: Callable[..., Any] | None, as_int: bool) -> Any:
    """How much an edge counts: 1 each (fn None), 1 where a step expression holds, or its
    value. The vector engine computed these per edge while it swept (None there means 1)."""
    if fn is None:
        return None
    if isinstance(ex, VExploration):
        return ex.weights[name]
    actions = ex.machine.actions

    def weight(src: int, e: int) -> int:
        act = actions[ex.e_action[e]]
        value = fn(ex.states[src], ex.states[ex.e_dst[e]], act.name, ex.e_rule[e],
                   *act.step_args[ex.e_combo[e]])
        return value if as_int else (1 if value else 0)
    return weight


def _longest_trace(ex: Exploration, start: int, edges: list[int] | None, end: int) -> Trace:
    """A longest run as a trace: along its edges, or (forward graphs) the BFS path to its end."""
    return path_trace(ex, end) if edges is None else run_trace(ex, start, edges)


def worst_cases(ex: Exploration, g: Graph, m: Machine, why: str | None, after: Analyses) -> dict[str, dict[str, Any]]:
    """The exact worst case over all runs of every measure (transitions always), with a witness.
    A measure of a Python model is the user's code: the deadline passing in it leaves the
    measure not computed (and goes to `after.late`), as does a bound stopping its analysis."""
    kinds = {ms.name: ms.kind for ms in m.spec.measures}

    def worst(name: str, fn: Callable[..., Any] | None) -> dict[str, Any]:
        g.compute()
        if g.order is None:
            return {"value": None, "exact": False, "witness": None,
                    "message": ("unbounded: a run can cycle forever" if name == "transitions"
                                else "not computed: the state graph has a cycle")}
        try:
            value, start, edges, end = T.longest_run(ex, g.order, _weight(ex, name, fn, kinds.get(name) == "sum"))
        except (EvalError, ZeroDivisionError) as exc:
            return {"value": None, "exact": False, "witness": None, "message": f"not computed: {exc}"}
        except OutOfTime as stop:
            after.out_of_time(f"computing the bound of {name}", stop)
            return {"value": None, "exact": False, "witness": None,
                    "message": "not computed: the --timeout passed while computing it"}
        exact = why is None
        return {"value": value, "exact": exact, "witness": _longest_trace(ex, start, edges, end),
                "message": f"at most {value}" if exact else f"at least {value} ({why})"}
    return {name: after.run(f"computing the worst case of {name}", partial(worst, name, fn),
                            lambda reason: {"value": None, "exact": False, "witness": None,
                                            "message": f"not computed: {reason}"})
            for name, fn in [("transitions", None), *m.measures.items()]}
