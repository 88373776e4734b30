"""Checking a spec: one exploration per parameter combination, every property judged
(explorer/judging.py), each run a `RunResult` (explorer/results.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from haltproof.machine import usercode
from haltproof.machine.compiled import CompiledSpec, Machine
from haltproof.machine.errors import Problem, SpecError
from haltproof.machine.binding import bind_machine, bound_code, spec_adapter
from haltproof.machine.live import is_live
from haltproof.machine.pymodel import python_model
from haltproof.machine.vectorize import NotVectorizable, vectorize
from haltproof.machine.spec import CODE_BUILTINS, DECLARED_BUILTIN, PropertyDecl, Spec, present
from haltproof.machine.trust import NO_CODE, python_model_refused, without_code
from haltproof.machine.usercode import OutOfTime, Stuck
from haltproof.properties import budget
from haltproof.properties import vacuity
from haltproof.properties.kinds import BUILTIN_TEXT, UNKNOWN, PropertyResult

from . import acknowledged
from .analyses import Analyses
from .chances import Chances
from .engine import Exploration, Finding, ProgressFn, action_subject, action_text, explore
from .memory import current_rss, size_text
from .vengine import VExploration, explore_vector
from .options import Options, sweep
from .results import RunResult, unsettled
from .judging import (Graph, came_as_expected, declaration_warnings, edge_weights, expect_not_applying, find_maxima,
                      from_finding, judge_maximum, judge_property, note_count_errors, run_scenarios, unbounded_by_fairness,
                      why_undecided, worst_cases)


KEEP_GRAPH_STATES = 200      # runs up to this size keep their explored graph for the reports


def _check_property_names(spec: Spec, options: Options) -> None:
    known = {p.name for p in spec.properties} | set(spec.builtins)
    for name in options.properties or []:
        if name in CODE_BUILTINS and spec.bind and options.stages_only:
            why = "--model explores the spec's own stages and runs none of the bound code" \
                if options.run_code else without_code(NO_CODE)
            raise SpecError([Problem(spec.path, None, f"--property {name}: {why}, so it cannot check {name}")])
        if name not in known:
            raise SpecError([Problem(spec.path, None, f"--property {name}: the spec has no such "
                                                       f"property (it has: {', '.join(sorted(known))})")])


def prepare(spec: Spec, options: Options, compiled: CompiledSpec | None = None) -> list[Machine]:
    """Validate pins and property names and instantiate every combination (from `compiled`,
    the spec compiled before, when given: a worker process checks many runs of one spec).

    Every spec error that depends on param values surfaces here, before any run. Loading
    a bound adapter runs the user's code: within the timeout, or OutOfTime."""
    _check_property_names(spec, options)
    unbound = without_code(options.stages_mode) if spec.bind else "the spec is not bound to code (no bind:)"
    if options.paths > 1 and (not spec.bind or options.stages_only):
        raise SpecError([Problem(spec.path, None, f"--paths {options.paths} compares the paths of live-bound "
                                 f"code into a state: {unbound}")])
    if options.determinism != "auto" and (not spec.bind or options.stages_only):
        raise SpecError([Problem(spec.path, None, f"--determinism {options.determinism} says how often bound code "
                                 f"runs twice: {unbound}")])
    if spec.bind and options.stages_only:
        stages_for_every_action(spec, without_code(options.stages_mode))
    combos = sweep(spec, options.pins)
    compiled = CompiledSpec(spec) if compiled is None else compiled
    machines = [compiled.instantiate(params) for params in combos]
    if spec.bind and not options.stages_only:
        with usercode.deadline(options.timeout, options.call_timeout):     # binding imports the declared exceptions' modules
            adapter = spec_adapter(spec)
            if options.paths > 1 and not is_live(adapter):
                raise SpecError([Problem(spec.path, spec.bind_line, f"--paths {options.paths} compares paths into a "
                                         "state, which needs a live adapter (start); this one rebuilds states "
                                         "(concretize)", spec.bind)])
            machines = [bind_machine(m, adapter, spec.bind, options.paths, options.determinism) for m in machines]
    return machines


def stages_for_every_action(spec: Spec, why: str) -> None:
    """A bound spec taken on its own stages (--model, --no-code, conform: `why` says which)
    must say what each action does: one without stages would be taken to change nothing (a
    false cycle, or a proof about one state), so it is refused at its line, exit 2."""
    problems = [Problem(spec.path, a.line, f"action {a.name} has no stages of its own (no do:): only the bound "
                                           f"code {spec.bind} says what it does, and {why}")
                for a in spec.actions if not a.own_stages]
    if problems:
        raise SpecError(problems)


def prepare_python(cls: type, options: Options) -> list[Machine]:
    """`prepare` for a machine declared in Python (haltproof.machine.pymodel.Model). Its params,
    domains, initial states and properties' bounds are the user's code: within the
    timeout, or OutOfTime."""
    if not options.run_code:
        raise SpecError([python_model_refused(f"{cls.__module__}:{cls.__qualname__}")])
    with usercode.deadline(options.timeout, options.call_timeout):
        spec, instantiate = load_python_model(cls)
        _check_property_names(spec, options)
        if options.paths > 1:
            raise SpecError([Problem(spec.path, None, f"--paths {options.paths} compares the paths of live-bound "
                                     "code into a state: a Python model has no bound code")])
        if options.determinism != "auto":
            raise SpecError([Problem(spec.path, None, f"--determinism {options.determinism} says how often bound "
                                     "code runs twice: a Python model's actions always run twice")])
        return [_instantiated(cls.__name__, instantiate, params) for params in sweep(spec, options.pins)]


def _instantiated(name: str, instantiate: Callable[[dict[str, Any]], Machine], params: dict[str, Any]) -> Machine:
    """A Python model's machine for `params`: the user's code (its domains, initial states)."""
    return usercode.load_as(lambda: f"instantiating the model {name} with "
                            + " ".join(f"{k}={v}" for k, v in params.items()), lambda: instantiate(params))


def load_python_model(cls: type) -> tuple[Spec, Callable[[dict[str, int]], Machine]]:
    """`python_model(cls)`, the user's code, within the deadline in force."""
    loaded: tuple[Spec, Callable[[dict[str, int]], Machine]] = usercode.load_as(
        lambda: f"loading the model {cls.__name__} (creating it, its params and domains)", lambda: python_model(cls))
    return loaded


def check_spec(spec: Spec, options: Options) -> list[RunResult]:
    """Check every param combination of a spec."""
    return [check_machine(m, options) for m in prepare(spec, options)]


def check_machine(m: Machine, options: Options) -> RunResult:
    """Explore one machine and judge its properties. The timeout bounds the whole check:
    inside a deadline the caller set (the CLI's, over every run), whatever is left of it."""
    with usercode.deadline(options.timeout, options.call_timeout):
        try:
            return _check_machine(m, options)
        finally:
            code = bound_code(m)
            if code is not None:        # the live runs still held: closed, or a thread of theirs hangs the exit
                code.finish()


def judged_builtins(m: Machine) -> tuple[str, ...]:
    """The built-ins a run judges: a bound spec explored with `--model` runs none of its code,
    so the code's built-ins (bound_code, code_matches_spec) are left out, never "holds"; and
    `declared_unreachable` only where some `unreachable_when` holds for the run's params."""
    skip = set(CODE_BUILTINS) if m.spec.bind and not m.bound_to else set()
    if not m.acknowledged:
        skip.add(DECLARED_BUILTIN)
    return tuple(n for n in m.spec.builtins if n not in skip)


def _check_machine(m: Machine, options: Options) -> RunResult:
    spec = m.spec
    selected = set(options.properties) if options.properties else {p.name for p in spec.properties}
    selected -= m.inactive
    progress = options.progress(spec, m.params) if options.progress else None
    ex = _explore(m, options, selected, progress)
    # the bounds hold for the analyses too, with what is left of them (explorer/analyses.py)
    with budget.bounded(usercode.remaining(), options.memory_bytes, current_rss):
        return _judge_run(m, options, ex, selected, Analyses(options.timeout, options.memory_bytes))


CHECKED_ON_EVERY_STATE = ("well_defined", "bound_code")    # what the counts, measures and maxima feed
COUNTING = "evaluating the counts and measures on the explored transitions"
# the property kinds judged by an analysis of their own after the exploration (the others are
# decided by it: their finding, or its absence)
ANALYSED = ("liveness", "terminates", "terminates_within", "probability", "expected")


def _judge_run(m: Machine, options: Options, ex: Exploration, selected: set[str], after: Analyses) -> RunResult:
    """Every analysis of an exploration and the run's result (see `_check_machine`)."""
    spec = m.spec
    spec_errors = [n for n in spec.builtins if n in ex.findings]
    unsure: dict[str, str] = {}           # a built-in whose check a bound stopped -> why it is undecided

    def feeds(*names: str) -> Callable[[str], None]:
        """What notes a stopped check as the reason those built-ins are undecided (the first one stays)."""
        return lambda why: unsure.update({n: unsure.get(n, why) for n in names})
    _note_drift(m, ex)                    # after: it cut nothing short (machine/binding.py)
    if m.acknowledged:                    # after too: reaching a declared-unreachable part cuts nothing short
        after.run("checking the parts declared unreachable", lambda: acknowledged.note_reached(ex, m),
                  feeds(DECLARED_BUILTIN))
    try:                                  # an error there cuts no exploration short
        after.run(COUNTING, lambda: note_count_errors(ex, selected), feeds(*CHECKED_ON_EVERY_STATE))
    except OutOfTime as stop:             # a Python model's counts and measures are its code
        after.out_of_time(COUNTING, stop)
        feeds(*CHECKED_ON_EVERY_STATE)(f"{stop.text()}, {COUNTING}" if isinstance(stop, Stuck)
                                       else f"the --timeout{_seconds(options)} was reached while {COUNTING}")
    maxima = find_maxima(m, ex, selected, after)    # an expression failing here is a well_defined finding too
    if any(isinstance(found, str) for found in maxima.values()):
        feeds(*CHECKED_ON_EVERY_STATE)(next(f for f in maxima.values() if isinstance(f, str)))
    why, why_end = why_undecided(ex, spec_errors)

    results: list[PropertyResult] = []
    for name in judged_builtins(m):
        results.append(from_finding(ex, name, "builtin", None, why or unsure.get(name), BUILTIN_TEXT[name]))
    graph = Graph(ex, after)
    chances = Chances(ex, m, why_end, edge_weights(ex, m))

    def judged(p: PropertyDecl) -> PropertyResult:
        if p.kind == "maximum":
            return judge_maximum(p, ex, maxima[p.name], why)
        if p.kind not in ANALYSED:        # decided by the exploration
            return judge_property(p, m, ex, graph, chances, (why, why_end), after)
        # on a partial exploration, what left it undecided in the first place says more
        return after.run(_doing(p), lambda: judge_property(p, m, ex, graph, chances, (why, why_end), after),
                         lambda reason: _undecided(p, why_end or reason))
    results += [judged(p) for p in spec.properties if p.name in selected]

    scenarios = run_scenarios(m, options, after)
    bounds = worst_cases(ex, graph, m, why_end, after)
    odds = (after.run("computing the outcome table", chances.table, lambda reason: {"message": f"not computed: {reason}"})
            if spec.probabilities else None)
    coverage = vacuity.coverage(ex)
    notices = (after.run("looking for the parts of the spec that never matter (vacuity)",
                         lambda: vacuity.notices(ex, coverage), lambda reason: []) if why is None else [])
    notices += unbounded_by_fairness(m, selected)
    notices += expect_not_applying(spec, m.inactive)
    notices += declaration_warnings(spec)

    stopped_by, reason = ex.stopped_by, stop_reason(ex, options)
    late = after.stopped()
    if late is not None and stopped_by is None:     # explored in full, but a bound stopped an analysis
        stopped_by, reason = late
    left_open = unsettled([(r.kind, r.status) for r in results], stopped_by)
    undecided = [r.name for r in results if r.status == UNKNOWN]
    if stopped_by is None and left_open:     # explored in full, and nothing explains an unknown
        reason = f"explored in full, but {', '.join(undecided)} could not be decided"
    as_expected = came_as_expected(spec, options, results, scenarios, ex.complete and not left_open, m.inactive)
    stats = {"states": len(ex.states), "transitions": ex.transitions,
             "terminal_states": ex.terminal_states, "max_depth": ex.max_depth,
             "seconds": round(ex.seconds, 4)}
    return RunResult(
        _spec=spec, params=m.params, stats=stats, properties=results, coverage=coverage, notices=notices,
        scenarios=scenarios, stopped_by=stopped_by, as_expected=as_expected,
        explored=f"code: {m.bound_to}" if m.bound_to else "model", bounds=bounds,
        engine="vector" if isinstance(ex, VExploration) else "scalar",
        _exploration=ex if ex.complete and late is None and len(ex.states) <= KEEP_GRAPH_STATES else None,
        stop_reason=reason, binding=m.binding() if m.binding is not None else None,
        determinism=m.determinism() if m.determinism is not None else None,
        representatives=m.representatives() if m.representatives is not None else None, odds=odds,
        stages_by=options.stages_mode, stopped_after_exploration=ex.complete and late is not None)


def _doing(p: PropertyDecl) -> str:
    """The analysis that judges property p, as a phrase after "while"."""
    chance = p.chance
    return {"probability": f"solving the probability of {p.name}",
            "expected": f"solving the expected {chance.measure if chance else 'total'} of {p.name}",
            "terminates": f"searching for a deadlock or a cycle for {p.name}",
            "terminates_within": f"searching for the longest run for {p.name}",
            }.get(p.kind, f"searching for a run that breaks {p.name}")


def _undecided(p: PropertyDecl, why: str) -> PropertyResult:
    """Property p left undecided by a bound that stopped its analysis."""
    r = PropertyResult(p.name, p.kind if p.pattern is None else present(p.pattern), UNKNOWN, f"not decided: {why}")
    r.description, r.line, r.file = p.description, p.line, p.file
    return r


def _seconds(options: Options) -> str:
    return f" {options.timeout:g} s" if options.timeout is not None else ""


def stop_reason(ex: Exploration, options: Options) -> str | None:
    """Why the exploration stopped early, in words, with how far it got."""
    if ex.stopped_by is None:
        return None
    head = f"stopped at {len(ex.states):,} states: "
    if ex.stopped_by == "max_states":
        return head + f"--max-states {options.max_states} reached"
    if ex.stopped_by == "max_memory":
        detail = f": {ex.stopped_in}" if ex.stopped_in else ""     # judged before a level: what it needs
        if ex.out_of_memory:
            return head + f"out of memory{detail} (a bound, not a bug: try --max-memory, more memory, or smaller params)"
        limit = options.memory_bytes
        assert limit is not None, "stopped by the memory limit, so there is one"
        return head + f"memory limit {size_text(limit)} reached{detail}"
    if ex.stopped_by == "workers_lost":        # a shared level's worker processes (explorer/parallel.py)
        return head + f"lost workers: {ex.stopped_in}"
    if ex.stopped_by == "call_timeout":         # a finding of bound_code says which call
        seconds = f" {options.call_timeout:g} s" if options.call_timeout is not None else ""
        return head + (f"a call into the user's code did not return within --call-timeout{seconds}"
                       + (f", while {ex.stopped_in}" if ex.stopped_in else ""))
    text = head + f"--timeout{_seconds(options)} reached"
    return text + (f" while {ex.stopped_in}" if ex.stopped_in else "")


def _explore(m: Machine, options: Options, selected: set[str], progress: ProgressFn | None) -> Exploration:
    """Run the engine the options ask for; `auto` takes the vector engine when it applies."""
    timeout, memory = usercode.remaining(), options.memory_bytes
    if options.engine in ("auto", "vector"):
        try:
            vm = vectorize(m)
        except NotVectorizable as why:
            if options.engine == "vector":
                raise SpecError([Problem(m.spec.path, None, f"--engine vector cannot run this spec: {why}")]) \
                    from None
        else:
            # the probability analyses read every edge: the vector engine must keep them
            # and so do the liveness patterns: a run may end in any deadlock, not only the first
            keep = bool(m.spec.probabilities) or any((p.chance is not None or p.kind == "liveness")
                                                     and p.name in selected for p in m.spec.properties)
            if options.engine == "vector":
                return explore_vector(vm, max_states=options.max_states, timeout=timeout, max_memory=memory,
                                      properties=selected, progress=progress, keep_edges=keep,
                                      workers=options.workers)
            # numpy pays per BFS level and per action, so small spaces go faster on the scalar
            # engine: try it first, and switch only when the space turns out to be large
            limit = AUTO_SCALAR_STATES if options.max_states is None else min(options.max_states,
                                                                               AUTO_SCALAR_STATES)
            started = time.monotonic()
            ex = explore(m, max_states=limit, timeout=timeout, max_memory=memory, properties=selected,
                         progress=progress)
            if ex.complete or ex.stopped_by != "max_states" or limit == options.max_states:
                return ex
            if timeout is not None:
                timeout = max(0.0, timeout - (time.monotonic() - started))
            return explore_vector(vm, max_states=options.max_states, timeout=timeout, max_memory=memory,
                                  properties=selected, progress=progress, keep_edges=keep, workers=options.workers)
    return explore(m, max_states=options.max_states, timeout=timeout, max_memory=memory, properties=selected,
                   progress=progress)


AUTO_SCALAR_STATES = 10_000     # `auto` moves to the vector engine past this many states


def _note_drift(m: Machine, ex: Exploration) -> None:
    """`code_matches_spec`: the first explored transition (in BFS order: a shortest trace) on
    which the bound code and the spec's own stages disagreed, both results in the message."""
    found = m.drift() if m.drift is not None else None
    if found is None:
        return
    s, action, ci, rule, t, differs = found
    i = ex.index.get(s)
    if i is None:                          # the index is dropped when memory ran out
        i = next(j for j, state in enumerate(ex.states) if state == s)
    ex.findings["code_matches_spec"] = Finding(i, f"{action_text(m, action, ci)}: {differs}", (action, ci, rule, t),
                                               subject=action_subject(m, action, ci))
