"""Checking a spec: one exploration per parameter combination, every property judged.

This is where "holds" is decided. A property is only said to hold when the whole
reachable space was explored and no spec error (a value leaving its domain, an
expression that cannot be evaluated) cut the exploration short; otherwise it is
`unknown`. Violations always carry the trace that shows them.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from haltproof.machine import usercode
from haltproof.machine.compiled import EVAL_ERRORS, CompiledSpec, EvalError, Machine, spec_where
from haltproof.machine.errors import Problem, SpecError
from haltproof.machine.inputs import check_number
from haltproof.machine.binding import DETERMINISM, bind_machine, spec_adapter
from haltproof.machine.live import is_live
from haltproof.machine.pymodel import python_model
from haltproof.machine.vectorize import NotVectorizable, vectorize
from haltproof.machine.inputs import value_count
from haltproof.machine.spec import CODE_BUILTINS, DECLARED_BUILTIN, PropertyDecl, Spec, declared_at, present
from haltproof.machine.text import counted, values_text
from haltproof.machine.trust import MODEL, NO_CODE, python_model_refused, without_code
from haltproof.machine.usercode import CALL_TIMEOUT, OutOfTime, Stuck
from haltproof.properties import liveness as L
from haltproof.properties import termination as T
from haltproof.properties import vacuity
from haltproof.properties.exploration import ExploredGraph
from haltproof.properties.vacuity import Notice
from haltproof.properties.kinds import (BUILTIN_TEXT, HOLDS, KIND_TEXT, UNKNOWN, VIOLATED, PropertyResult, Subject,
                                        Trace)

from . import acknowledged
from .chances import Chances, first_chance_error
from .engine import (Exploration, Finding, ProgressFn, action_subject, action_text, explore, failure,
                     first_count_error, trace_length)
from .memory import parse_size, size_text
from .vengine import VExploration, explore_vector
from .replay import run_scenario
from .traces import lasso_trace, path_trace, run_trace


Pins = Mapping[str, Any]     # NAME -> a value (int, bool, str), or values swept in this order


ENGINES = ("auto", "scalar", "vector")
MAX_WORKERS = 1024      # -j: more local processes than this is a typo, not a machine


@dataclass
class Options:
    """How to check; refused on construction when no run could honour it (the Python API
    hands its arguments straight here, without the command line's checks). The pins are
    checked against each spec, by check_pins."""

    pins: Pins = field(default_factory=dict)        # see sweep
    properties: list[str] | None = None
    max_states: int | None = None
    timeout: float | None = None    # seconds for the whole check, the user's own code included
    call_timeout: float | None = CALL_TIMEOUT   # seconds one call into the user's code may take (usercode.py)
    max_memory: int | str | None = None   # bytes of resident memory, or "512M" (explorer/memory.py)
    model_only: bool = False      # explore the spec's own stages even when it is bound to code
    run_code: bool = True         # False (--no-code): import none of the user's code (machine/trust.py)
    engine: str = "auto"          # auto | scalar | vector (see explorer/vengine.py)
    paths: int = 1                # live binding: paths compared into each abstract state (machine/binding.py)
    determinism: str = "auto"     # bound code: which transitions run twice (binding.DETERMINISM)
    workers: int = 1              # processes (-j) the runs of a sweep are checked in (explorer/parallel.py);
                                  # a run checked in this process: the vector engine's threads
    progress: Callable[[Spec, dict[str, int]], ProgressFn] | None = None

    @property
    def stages_only(self) -> bool:
        """Whether a bound spec is explored on its own stages: --model, or --no-code."""
        return self.model_only or not self.run_code

    @property
    def stages_mode(self) -> str:
        """The option that keeps the bound code from running, as messages name it."""
        return MODEL if self.run_code else NO_CODE

    @property
    def memory_bytes(self) -> int | None:
        """`max_memory` in bytes: construction parsed a size such as "512M"."""
        assert not isinstance(self.max_memory, str), "parsed by __post_init__"
        return self.max_memory

    def __post_init__(self) -> None:
        if self.max_states is not None:
            self.max_states = check_number(self.max_states, "max_states", int, above=0)
        if self.timeout is not None:
            self.timeout = check_number(self.timeout, "timeout", float, above=0)
        if self.call_timeout is not None:
            self.call_timeout = check_number(self.call_timeout, "call_timeout", float, above=0)
        if isinstance(self.max_memory, str):        # a size as --max-memory takes it: "512M"
            self.max_memory = parse_size(self.max_memory, "max_memory")
        elif self.max_memory is not None:
            self.max_memory = check_number(self.max_memory, "max_memory", int, above=0)
        if self.properties is not None and (isinstance(self.properties, str) or not all(
                isinstance(n, str) for n in self.properties)):
            raise ValueError(f"properties must be a list of property names, got {self.properties!r}")
        if not isinstance(self.model_only, bool):
            raise ValueError(f"model must be True or False, got {self.model_only!r}")
        if not isinstance(self.run_code, bool):
            raise ValueError(f"run_code must be True or False, got {self.run_code!r}")
        self.paths = check_number(self.paths, "paths", int, above=0)
        self.workers = check_number(self.workers, "workers", int, above=0, most=MAX_WORKERS)
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        if self.determinism not in DETERMINISM:
            raise ValueError(f"determinism must be one of {', '.join(DETERMINISM)}, got {self.determinism!r}")


@dataclass
class ScenarioResult:
    name: str
    ok: bool
    message: str
    steps: int


KEEP_GRAPH_STATES = 200      # runs up to this size keep their explored graph for the reports


@dataclass
class RunResult:
    spec: Spec
    params: dict[str, int]
    stats: dict[str, Any]
    properties: list[PropertyResult]
    coverage: dict[str, dict[str, int]]
    notices: list[Notice]                # vacuity warnings (empty when the exploration was partial)
    scenarios: list[ScenarioResult]
    stopped_by: str | None
    as_expected: bool | None             # None when the spec declares no expectation
    explored: str = "model"              # "model", or "code: module:Name" for a bound spec
    bounds: dict[str, dict[str, Any]] = field(default_factory=dict)   # worst cases, see _bounds
    engine: str = "scalar"               # which engine explored it
    exploration: Exploration | None = None   # kept for small complete runs, to draw their graph
    stop_reason: str | None = None       # why it is incomplete, in words: "stopped at N states: ..."
    binding: str | None = None           # bound code: how it reached each state (state | snapshot | replay)
    determinism: dict[str, Any] | None = None   # bound code: how determinism was checked, and its cost
    representatives: dict[str, dict[str, dict[str, int]]] | None = None   # bound: concrete values per class
    odds: dict[str, Any] | None = None   # a spec with weights: how runs end, how likely (explorer/chances.py)
    stages_by: str = MODEL               # a bound spec on its own stages: the option that asked (--model, --no-code)

    @property
    def warnings(self) -> list[str]:
        return [n.message for n in self.notices]

    @property
    def result(self) -> str:
        """proved | violated | incomplete, decided by `judge` from the run's own findings."""
        return self._judged()[0]

    @property
    def verdict(self) -> str:
        """What this run means for the gate: pass, fail, or incomplete (see `judge`)."""
        return self._judged()[1]

    def _judged(self) -> tuple[str, str]:
        return judge([(p.kind, p.status, p.expected) for p in self.properties],
                     [s.ok for s in self.scenarios], self.stopped_by, self.as_expected)


def unsettled(properties: Sequence[tuple[str, str]], stopped_by: str | None) -> bool:
    """Whether a run leaves something undecided that no finding explains, from its bound and
    each property's (kind, status): a bound stopped it, or the exploration was complete but
    a property is still unknown (a count that failed only when judged, say) while no
    built-in property (domains, well_defined, bound_code) is violated. A violated built-in
    is the spec's or the code's own error, and it explains every property it left unknown."""
    if stopped_by is not None:
        return True
    return (any(status == UNKNOWN for _, status in properties)
            and not any(kind == "builtin" and status == VIOLATED for kind, status in properties))


def judge(properties: Sequence[tuple[str, str, bool | None]], scenarios_ok: Sequence[bool],
          stopped_by: str | None, as_expected: bool | None) -> tuple[str, str]:
    """A run's result (proved | violated | incomplete) and what it means for the gate (pass |
    fail | incomplete), from each property's (kind, status, expected), whether each scenario
    passed, the bound that stopped it and its `expect` outcome. The one place both are
    decided: RunResult asks it, and so do the readers of the JSON report (findings.py).

    A violated property or a failed scenario is violated; otherwise anything `unsettled`
    is incomplete: a run with a property left unknown is never proved. Without `expect`,
    proved passes and violated fails. With it, the run passes only when its findings are
    exactly the expected ones and nothing is unsettled; an unexpected violation or a failed
    scenario fails even if the exploration stopped early; otherwise an unsettled run is
    incomplete, and a settled one whose expected violation did not happen fails."""
    left_open = unsettled([(kind, status) for kind, status, _ in properties], stopped_by)
    if any(status == VIOLATED for _, status, _ in properties) or not all(scenarios_ok):
        result = "violated"
    else:
        result = "incomplete" if left_open else "proved"
    if as_expected is None:
        return result, {"proved": "pass", "violated": "fail", "incomplete": "incomplete"}[result]
    if as_expected and not left_open:
        return result, "pass"
    unexpected = any(expected is False and status == VIOLATED for _, status, expected in properties)
    if unexpected or not all(scenarios_ok) or not left_open:
        return result, "fail"
    return result, "incomplete"


MAX_COMBINATIONS = 10_000   # param combinations one check sweeps (README, "Commands")


def sweep(spec: Spec, pins: Pins) -> list[dict[str, Any]]:
    """Every combination of declared param values, a pinned param taking only its pinned
    values; refused past MAX_COMBINATIONS before any is built (a `{min, max}` param may
    declare 10^12 values)."""
    typed = check_pins(spec, pins)
    lists = [typed[p.name] if p.name in typed else p.values for p in spec.params]
    total = math.prod(value_count(values) for values in lists)
    if total > MAX_COMBINATIONS:
        wide = sorted((p for p, values in zip(spec.params, lists) if value_count(values) > 1),
                      key=lambda p: (p.name in typed, -p.count))
        have = ", ".join(f"{p.name} has {values_text(p.values)}" for p in wide if p.name not in typed)
        given = ", ".join(f"-p gives {p.name} {len(typed[p.name])} values" for p in wide
                          if p.name in typed)
        raise SpecError([Problem(spec.path, wide[0].line,
                                 f"the params make {total:,} combinations, more than the "
                                 f"{MAX_COMBINATIONS:,} a check sweeps: pin params with -p NAME=VALUE, "
                                 f"e.g. -p {wide[0].name}={wide[0].values[0]} ({have or given})")])
    return [dict(zip([p.name for p in spec.params], combo)) for combo in itertools.product(*lists)]


def _pin_values(name: str, value: Any) -> list[Any]:
    """The values a pin gives, each given once: ValueError for anything else. An empty
    list would sweep no combination, and a check of nothing proves nothing. Their type is
    the param's to check (Param.pinned): `True` must not pass for 1."""
    if isinstance(value, range) and value_count(value) > MAX_COMBINATIONS:     # never listed out
        raise ValueError(f"-p {name}={value!r} gives {value_count(value):,} values, more than the "
                         f"{MAX_COMBINATIONS:,} combinations a check sweeps")
    given = list(value) if isinstance(value, (list, tuple, range)) else [value]
    if not given:
        raise ValueError(f"-p {name}: no value given (an empty list pins no combination)")
    out: list[Any] = []
    for v in given:
        if any(type(v) is type(w) and v == w for w in out):
            raise ValueError(f"-p {name}={v} is given twice")
        out.append(v)
    return out


def check_pins(spec: Spec, pins: Pins) -> dict[str, list[Any]]:
    """Every pinned param is declared and given values of its type and range, each once
    (an int param declared `{min, max, values}` takes any int between min and max);
    returns the pins as the params' values (`-p flag=true` is True)."""
    if not isinstance(pins, Mapping):
        raise SpecError([Problem(spec.path, None, "the params to pin must be a mapping of param names "
                                                  f"to values, got {type(pins).__name__}")])
    declared = {p.name: p for p in spec.params}
    out: dict[str, list[Any]] = {}
    for name, values in pins.items():
        try:
            given = _pin_values(name, values)
        except ValueError as exc:
            raise SpecError([Problem(spec.path, None, str(exc))]) from None
        if name not in declared:
            raise SpecError([Problem(spec.path, None, f"-p {name}={given[0]}: the spec has no param "
                                                       f"{name} (it has: {', '.join(declared) or 'none'})")])
        try:
            out[name] = [declared[name].pinned(v) for v in given]
        except TypeError as exc:        # not even of the param's type
            raise SpecError([Problem(spec.path, None, str(exc))]) from None
        except ValueError as exc:       # of its type, but not a value it declares
            raise SpecError([Problem(*declared_at(spec, declared[name]), str(exc))]) from None
    return out


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


BOUND_OPTION = {"max_states": "--max-states", "timeout": "--timeout", "max_memory": "--max-memory",
                "call_timeout": "--call-timeout",   # a call into the user's code did not return (usercode.Stuck)
                "workers_lost": "lost workers"}     # every worker checking the run died (explorer/parallel.py)


def check_machine(m: Machine, options: Options) -> RunResult:
    """Explore one machine and judge its properties. The timeout bounds the whole check:
    inside a deadline the caller set (the CLI's, over every run), whatever is left of it."""
    with usercode.deadline(options.timeout, options.call_timeout):
        return _check_machine(m, options)


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
    late: list[tuple[str, OutOfTime]] = []   # the deadline passed in user code after the exploration
    spec_errors = [n for n in spec.builtins if n in ex.findings]
    _note_drift(m, ex)                    # after: it cut nothing short (machine/binding.py)
    if m.acknowledged:
        acknowledged.note_reached(ex, m)  # after too: reaching a declared-unreachable part cuts nothing short
    try:
        _note_count_errors(ex, selected)  # an error there cuts no exploration short
    except OutOfTime as stop:             # a Python model's counts and measures are its code
        late.append(("evaluating the counts and measures on the explored transitions", stop))
    maxima = _maxima(m, ex, selected)    # an expression failing here is a well_defined finding too
    why, why_end = _why_undecided(ex, spec_errors)

    results: list[PropertyResult] = []
    for name in judged_builtins(m):
        results.append(_from_finding(ex, name, "builtin", None, why, BUILTIN_TEXT[name]))
    graph = _Graph(ex)
    chances = Chances(ex, m, why_end, edge_weights(ex, m))
    results += [_maximum(p, ex, maxima[p.name], why) if p.kind == "maximum"
                else _judge(p, m, ex, graph, chances, (why, why_end), late)
                for p in spec.properties if p.name in selected]

    scenarios = _scenarios(m, options, late)
    bounds = _bounds(ex, graph, m, why_end, late)
    odds = chances.table() if spec.probabilities else None
    stopped_by, reason = ex.stopped_by, stop_reason(ex, options)
    if late and stopped_by is None:     # explored in full, but something was left undecided
        what, first = late[0]
        doing = f": {first.doing}" if first.doing else ""
        if isinstance(first, Stuck):
            stopped_by = "call_timeout"
            reason = (f"a call into the user's code did not return within --call-timeout {first.limit:g} s "
                      f"after the exploration, while {what}{doing}")
        else:
            stopped_by = "timeout"
            reason = f"--timeout{_seconds(options)} reached after the exploration, while {what}{doing}"

    coverage = vacuity.coverage(ex)
    notices = vacuity.notices(ex, coverage) if why is None else []
    notices += _unbounded_by_fairness(m, selected)
    notices += _expect_not_applying(spec, m.inactive)
    left_open = unsettled([(r.kind, r.status) for r in results], stopped_by)
    undecided = [r.name for r in results if r.status == UNKNOWN]
    if stopped_by is None and left_open:     # explored in full, and nothing explains an unknown
        reason = f"explored in full, but {', '.join(undecided)} could not be decided"
    as_expected = _as_expected(spec, options, results, scenarios, ex.complete and not left_open, m.inactive)
    stats = {"states": len(ex.states), "transitions": ex.transitions,
             "terminal_states": ex.terminal_states, "max_depth": ex.max_depth,
             "seconds": round(ex.seconds, 4)}
    return RunResult(spec, m.params, stats, results, coverage, notices, scenarios,
                     stopped_by, as_expected, f"code: {m.bound_to}" if m.bound_to else "model",
                     bounds, "vector" if isinstance(ex, VExploration) else "scalar",
                     ex if ex.complete and not late and len(ex.states) <= KEEP_GRAPH_STATES else None,
                     reason, m.binding() if m.binding is not None else None,
                     m.determinism() if m.determinism is not None else None,
                     m.representatives() if m.representatives is not None else None, odds,
                     options.stages_mode)


def _why_undecided(ex: Exploration, spec_errors: list[str]) -> tuple[str | None, str | None]:
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


def _judge(p: PropertyDecl, m: Machine, ex: Exploration, graph: _Graph, chances: Chances,
           whys: tuple[str | None, str | None], late: list[tuple[str, OutOfTime]]) -> PropertyResult:
    """One declared property's result on the exploration (`whys`: see `_why_undecided`)."""
    why, why_end = whys
    if p.kind == "liveness":
        r = _liveness(p, ex, graph, why_end)
    elif p.pattern is not None:
        r = _pattern(p, ex, graph, why)
    elif p.kind in ("invariant", "step_invariant", "variant", "independent"):
        r = _from_finding(ex, p.name, p.kind, p.line, why_end if p.kind == "variant" else why,
                          KIND_TEXT[p.kind])
        _past_note(p, ex, r)
    elif p.kind == "reachable":
        r = _possible(ex, p.name, why) if p.possible else _reachable(ex, p.name, why)
        _past_note(p, ex, r)
    elif p.kind == "terminates":
        r = _terminates(ex, graph, p.name, why_end)
    elif p.kind in ("probability", "expected"):
        r = chances.result(p)
    else:
        try:
            r = _within(ex, graph, p.name, why_end, m)
        except OutOfTime as stop:       # its count is the user's code
            late.append((f"counting the transitions of {p.name}", stop))
            r = PropertyResult(p.name, "terminates_within", UNKNOWN,
                               "not decided: the --timeout passed while counting its transitions")
    r.description = p.description
    r.line, r.file = p.line, p.file
    return r


def _as_expected(spec: Spec, options: Options, results: list[PropertyResult], scenarios: list[ScenarioResult],
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


def _scenarios(m: Machine, options: Options, late: list[tuple[str, OutOfTime]]) -> list[ScenarioResult]:
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
                late.append((f"replaying scenario {sc.name}", stop))
                break
            out.append(ScenarioResult(sc.name, rep.ok, rep.problem or "as expected", len(rep.steps) - 1))
    return out


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


def _note_count_errors(ex: Exploration, selected: set[str]) -> None:
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


def _length(ex: Exploration, f: Finding) -> int:
    return trace_length(f, int(ex.depth[f.state]))


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


def _from_finding(ex: Exploration, name: str, kind: str, line: int | None, why: str | None,
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


def _pattern(p: PropertyDecl, ex: Exploration, g: _Graph, why: str | None) -> PropertyResult:
    """A pattern property: an invariant over its monitor (machine/patterns.py), reported under
    its pattern's name with the states the monitors added to the search."""
    kind = present(p.pattern)
    scope = "" if p.scope == "global" else f" (scope {p.scope.replace('_', ' ')})"
    r = _from_finding(ex, p.name, kind, p.line, why, KIND_TEXT[kind] + scope)
    if r.status == VIOLATED:
        r.message = f"{kind}{scope} violated: the run so far already breaks it"
    elif r.status == HOLDS:
        r.message += f"; {g.monitor_states()}"
    return r


def _liveness(p: PropertyDecl, ex: Exploration, g: _Graph, why: str | None) -> PropertyResult:
    """A liveness pattern: violated by a bad maximal run (properties/liveness.py), a finite one
    first, else a fair lasso; it holds when there is none in a complete exploration."""
    kind = present(p.pattern)
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


def _expect_not_applying(spec: Spec, inactive: set[str]) -> list[Notice]:
    """A notice when no property `expect:` names applies to these params (each one's `when`
    excludes them): the run is then judged as one without `expect`, and says so."""
    if not spec.expect_violated or set(spec.expect_violated) - inactive:
        return []
    names = ", ".join(spec.expect_violated)
    return [Notice("expect", "expect", f"no expected violation applies to these params (the when of {names} "
                   "excludes them): the run is judged as one without expect", spec.expect_line,
                   summary="no expected violation applies")]


def _unbounded_by_fairness(m: Machine, selected: set[str]) -> list[Notice]:
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
    return len({tuple(s[i] for i in keep) for s in ex.states})


def monitor_states(ex: Exploration) -> str:
    """How many of the explored states only the pattern monitors' vars tell apart."""
    user = [i for i, v in enumerate(ex.machine.spec.vars) if v.monitor is None]
    plain = distinct(ex, user)
    return f"the pattern monitors added {len(ex.states) - plain} of the {len(ex.states)} states explored"


def _past_note(p: PropertyDecl, ex: Exploration, r: PropertyResult) -> None:
    """A decided property with past-time operators (machine/pasttime.py) says how many of the
    explored states only its own monitors tell apart: what the operators cost."""
    if not p.past or r.status == UNKNOWN:
        return
    spec = ex.machine.spec
    others = [i for i, v in enumerate(spec.vars) if v.monitor != p.name]
    plain = distinct(ex, others)
    r.message += (f"; its past-time monitors ({p.past} var{'s' if p.past > 1 else ''}) added "
                  f"{len(ex.states) - plain} of the {len(ex.states)} states explored")


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


def _maxima(m: Machine, ex: Exploration, selected: set[str]) -> dict[str, Highest | None]:
    """Per `maximum` property judged: its `Highest`, or None where its expression cannot be
    evaluated on an explored state, which is a `well_defined` finding like any other (kept
    when its trace is shorter than the engine's own finding)."""
    out: dict[str, Highest | None] = {}
    for name, (fn, at_most) in m.maxima.items():
        if name not in selected:
            continue
        found = (_vector_highest(ex, name, at_most) if isinstance(ex, VExploration)
                 else _scalar_highest(ex, name, fn, at_most))
        if isinstance(found, Finding):
            old = ex.findings.get("well_defined")
            if old is None or _length(ex, found) < _length(ex, old):
                ex.findings["well_defined"] = found
            out[name] = None
        else:
            out[name] = found
    return out


def _scalar_highest(ex: Exploration, name: str, fn: Callable[[Any], int],
                    at_most: int | None) -> Highest | Finding:
    """The `Highest` of one expression over the states in BFS order, or the first state where it fails."""
    best, at, over = 0, -1, None
    for i in range(len(ex.states)):
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


def _maximum(p: PropertyDecl, ex: Exploration, found: Highest | None, why: str | None) -> PropertyResult:
    """A `maximum` property: the exact highest value with a shortest witness; violated, with a
    shortest counterexample, when a reachable state exceeds its `at_most`. An exploration that
    stopped early knows only a lower bound: unknown, unless it already exceeds `at_most`."""
    fn, at_most = ex.machine.maxima[p.name]
    if found is None:
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


class _Graph:
    """Graph facts shared by the termination properties, computed once per run on demand."""

    def __init__(self, ex: Exploration):
        self.ex = ex
        self._done = False
        self._monitors: str | None = None

    def monitor_states(self) -> str:
        """`monitor_states` of the exploration, counted once for all its patterns."""
        if self._monitors is None:
            self._monitors = monitor_states(self.ex)
        return self._monitors

    def compute(self) -> None:
        if self._done:
            return
        self._done = True
        self.deadlock = T.find_deadlock(self.ex)
        self.order = T.topological_order(self.ex)
        # a cycle of the machine, not one of the property monitors unrolling it (liveness.OwnView)
        self.plain = L.own_view(self.ex, None)
        self.lasso = T.find_lasso(self.plain) if self.order is None else None   # only a cyclic graph has one


def _termination_violation(ex: Exploration, g: _Graph, name: str, kind: str,
                           fairness: list[L.Assumption] | None = None) -> PropertyResult | None:
    """A deadlock, else a cycle among non-terminal states (with `fairness`: a fair one only)."""
    g.compute()
    if g.deadlock is not None:
        return PropertyResult(name, kind, VIOLATED, "deadlock: a non-terminal state with no "
                                                    "enabled action", path_trace(ex, g.deadlock))
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


def _terminates(ex: Exploration, g: _Graph, name: str, why: str | None) -> PropertyResult:
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


def _within(ex: Exploration, g: _Graph, name: str, why: str | None, m: Machine) -> PropertyResult:
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


def _bounds(ex: Exploration, g: _Graph, m: Machine, why: str | None,
            late: list[tuple[str, OutOfTime]]) -> dict[str, dict[str, Any]]:
    """The exact worst case over all runs of every measure (transitions always), with a witness.
    A measure of a Python model is the user's code: the deadline passing in it leaves the
    measure not computed (and goes to `late`)."""
    g.compute()
    kinds = {ms.name: ms.kind for ms in m.spec.measures}
    out: dict[str, dict[str, Any]] = {}
    for name, fn in [("transitions", None), *m.measures.items()]:
        if g.order is None:
            message = ("unbounded: a run can cycle forever" if name == "transitions"
                       else "not computed: the state graph has a cycle")
            out[name] = {"value": None, "exact": False, "witness": None, "message": message}
            continue
        try:
            value, start, edges, end = T.longest_run(ex, g.order, _weight(ex, name, fn, kinds.get(name) == "sum"))
        except (EvalError, ZeroDivisionError) as exc:
            out[name] = {"value": None, "exact": False, "witness": None, "message": f"not computed: {exc}"}
            continue
        except OutOfTime as stop:
            late.append((f"computing the bound of {name}", stop))
            out[name] = {"value": None, "exact": False, "witness": None,
                         "message": "not computed: the --timeout passed while computing it"}
            continue
        exact = why is None
        out[name] = {"value": value, "exact": exact, "witness": _longest_trace(ex, start, edges, end),
                     "message": f"at most {value}" if exact else f"at least {value} ({why})"}
    return out
