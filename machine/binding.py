"""Binding a spec to real Python code, so the proof is about the code, not a copy of it.

A spec names an adapter with `bind: module:Name`. A live adapter (machine/live.py:
`start`, `step`, `abstract`) starts and advances real runs, and haltproof reaches each
abstract state by snapshot, copy or replay. A state adapter (`Adapter`, below)
translates between the spec's abstract states and choices and the concrete values the
user's code takes:

- `concretize(state, params)`: a concrete state for an abstract one;
- `representative(action, choice, label)`: one concrete value of an abstract choice
  (the observation the exhaustive exploration feeds the code); or, optionally,
  `representatives(action, choice, label)`: a finite list of them, all run (`Classes`);
- `step(action, concrete, choices)`: run the user's code for one transition and return
  the new concrete state and the name of the decide rule that fired (or None);
- `abstract(concrete, params)`: the abstract state (a dict over the spec's vars);
- `strategy(action, choice, label)`: a Hypothesis strategy of concrete values in that
  abstract class, used by `haltproof conform` (defaults to the representative alone).

When a spec is bound, `haltproof check` calls the adapter (and so the user's code) for
every reachable state and every choice. An exception, a result that is not a valid
state, an unknown rule name, or two calls that disagree are findings of the built-in
property `bound_code`, reported with the trace and the user's traceback, unless the
spec declares the exception an outcome of the action (`raises:`, machine/outcomes.py).
Any adapter method may be `async def`: it runs on one event loop per run (live.Driver).
"""

from __future__ import annotations

import copy
import functools
import importlib
import itertools
import math
import os
import pickle
import sys
import time
import traceback
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

from . import usercode
from .compiled import EVAL_ERRORS, AbsentChoice, CompiledAction, EvalError, Machine, spec_line
from .errors import Located, Problem, SpecError
from .live import STATE, Driver, LiveAdapter, LiveRuns, Origin, close_run, is_live
from .outcomes import outcome_of, resolve
from .usercode import running
from .spec import Spec, present
from .text import exception_text

T = TypeVar("T")
# code_matches_spec: (state, action index, combo index, the code's rule, the code's result, how they differ)
Drift = tuple[tuple[Any, ...], int, int, str | None, tuple[Any, ...], str]
__all__ = ["Adapter", "LiveAdapter", "CodeError", "load_adapter", "spec_adapter", "bind_machine", "DETERMINISM",
           "bound_code", "BoundCode", "Outcome", "Relayed", "WorkersLost"]

DETERMINISM = ("auto", "full", "sample", "off")
# auto: full when the spec's declared state space (the product of its vars' domain sizes for
# these params) is at most this many states, else sample
FULL_UP_TO = 100_000


@dataclass
class Determinism:
    """How a bound run checked that the code is deterministic, and what that cost: every
    checked transition runs the code a second time and compares the two results.

    full: every transition; sample: the first transition explored out of each state (so
    every reachable state's code is re-run once); off: none, nondeterminism not checked."""

    mode: str
    why: str                       # why this mode: asked for, or auto's size rule
    extra_calls: int = 0           # transitions run a second time
    seconds: float = 0.0           # spent in those second runs

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "why": self.why, "extra_calls": self.extra_calls,
                "seconds": round(self.seconds, 4)}


def declared_states(m: Machine) -> int:
    """The size of the spec's declared state space for these params: the product of every
    var's domain size (ints by their bounds, bools 2, enums their values)."""
    sizes = [(present(b)[1] - present(b)[0] + 1) if v.kind == "int" else 2 if v.kind == "bool" else len(v.values)
             for v, b in zip(m.spec.vars, m.bounds)]
    return math.prod(sizes)


def determinism_for(m: Machine, asked: str) -> Determinism:
    """The mode a run uses: the one asked for, or auto's choice by the declared size."""
    if asked not in DETERMINISM:
        raise ValueError(f"determinism must be one of {', '.join(DETERMINISM)}, got {asked!r}")
    if asked != "auto":
        return Determinism(asked, f"--determinism {asked}")
    size = declared_states(m)
    if size <= FULL_UP_TO:
        return Determinism("full", f"auto: {size:,} declared states, at most {FULL_UP_TO:,}")
    return Determinism("sample", f"auto: {size:,} declared states, more than {FULL_UP_TO:,}")


class Adapter:
    """Base class for adapters; subclasses implement the translation for their code."""

    def concretize(self, state: dict[str, Any], params: dict[str, int]) -> Any:
        raise NotImplementedError

    def representative(self, action: str, choice: str, label: Any) -> Any:
        return label

    def step(self, action: str, concrete: Any, choices: dict[str, Any]) -> tuple[Any, str | None]:
        raise NotImplementedError

    def abstract(self, concrete: Any, params: dict[str, int]) -> dict[str, Any]:
        raise NotImplementedError

    def strategy(self, action: str, choice: str, label: Any) -> Any:
        from hypothesis import strategies as st
        return st.just(self.representative(action, choice, label))


class CodeError(EvalError):
    """The bound code failed on a reachable state: a finding, not a crash of the checker."""

    builtin = "bound_code"


def spec_adapter(spec: Spec) -> Adapter | LiveAdapter:
    """The adapter a bound spec runs: a declaration's own (machine/declarations.py), built
    within the deadline in force, else the one its `bind:` names."""
    assert spec.bind, "only a bound spec has an adapter"
    if spec.adapter is None:
        return load_adapter(spec.bind, spec.path, spec.bind_line)
    factory = spec.adapter
    built: Adapter | LiveAdapter = usercode.load_as(lambda: f"building the {spec.framework} adapter for {spec.bind}",
                                                   factory)
    return built


def import_user_module(name: str, folder: str) -> Any:
    """Import the user's module `name` as `python -m` would from the working directory, or
    else from `folder` (the spec's): a spec found anywhere imports the code beside it. A
    module of that name already imported from another folder (a second example's `agent.py`)
    is not taken for this folder's own file: the file beside the spec is imported instead."""
    cwd = os.getcwd()
    if cwd not in sys.path:    # like `python -m`: the project you run in is importable
        sys.path.insert(0, cwd)
    if folder not in sys.path:
        sys.path.append(folder)
    top = name.partition(".")[0]
    # the file meant: the working directory's, else the one beside the spec; a same-named module
    # further on the path (a folder an earlier import put there, PYTHONPATH) is never taken for it
    for where in (cwd, folder):
        mine = next((f for f in (os.path.join(where, top + ".py"), os.path.join(where, top, "__init__.py"))
                     if os.path.isfile(f)), None)
        if mine is None:
            continue
        loaded = sys.modules.get(top)
        if loaded is not None and os.path.abspath(getattr(loaded, "__file__", None) or "") != mine:
            for key in [k for k in sys.modules if k == top or k.startswith(top + ".")]:
                del sys.modules[key]
        sys.path.remove(where)
        sys.path.insert(0, where)
        break
    return importlib.import_module(name)


def import_user_object(ref: str, folder: str, here: Located, key: str) -> Any:
    """The object `module:attr` names (attr may be dotted; the caller checked the shape), its
    module imported by `import_user_module` within the check's deadline; a problem is a
    SpecError at `here`. The one importer of a user's object: `bind:` (key "bind"), and a
    declaration's `target:` with `haltproof init`/`lint` (frameworks/declaration.py)."""
    module_name, _, attr = ref.partition(":")
    role = "the bound module" if key == "bind" else f"the {key}'s module"
    try:
        module = usercode.load_as(lambda: f"importing {role} {module_name} ({key}: {ref})",
                                  lambda: import_user_module(module_name, folder))
    except usercode.FAILURES as exc:   # the user's module may fail in any way while importing
        raise here.error(f"cannot import {role}: {exception_text(exc)}", ref) from None
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise here.error(f"module {module_name} has no {attr!r}", ref)
        target = getattr(target, part)
    return target


def load_adapter(ref: str, file: str, line: int | None) -> Adapter | LiveAdapter:
    """Import `module:Name` and return an adapter instance (a class is instantiated)."""
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise SpecError([Problem(file, line, "bind must be written module:Name", ref)])
    target = import_user_object(ref, os.path.dirname(os.path.abspath(file)), Located(file, line), "bind")
    try:
        adapter = usercode.load_as(lambda: f"creating the adapter {ref}", target) if isinstance(target, type) \
            else target
    except usercode.FAILURES as exc:
        raise SpecError([Problem(file, line, f"cannot create the adapter: {exception_text(exc)}",
                                 ref)]) from None
    needed = ("start", "step", "abstract") if is_live(adapter) else ("concretize", "step", "abstract")
    missing = [m for m in needed if not callable(getattr(adapter, m, None))]
    if missing:
        raise SpecError([Problem(file, line, f"the adapter has no {', '.join(missing)} method", ref)])
    checked: Adapter | LiveAdapter = adapter      # the user's object: its methods are checked above
    return checked


# haltproof's own layers sit side by side (installed under haltproof/, or as the checkout's
# folders); the seed harness is not among them: its frames are user code in a traceback
_LAYERS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_OWN_DIRS = tuple(os.path.join(_LAYERS, layer) + os.sep for layer in ("machine", "properties", "explorer"))


def user_traceback(exc: BaseException, library: tuple[str, ...] = ()) -> str:
    """The traceback without haltproof's own frames (nor those under the `library` folders, a
    library that called the user's code): the part the user can act on."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not os.path.abspath(f.filename).startswith(_OWN_DIRS + library)]
    lines = traceback.format_list(frames) + traceback.format_exception_only(type(exc), exc)
    return "".join(lines).rstrip()


class Runner:
    """The bound code's transitions on one concrete run, as `check` and `conform` make them:
    the live or the state API, sync or async (one event loop), declared exceptions taken
    for the outcomes they stand for. Its methods are the user's code: callers run them
    under the deadline. Creating it imports the declared exceptions' modules."""

    def __init__(self, m: Machine, adapter: Any) -> None:
        self.adapter, self.params, self.live = adapter, dict(m.params), is_live(adapter)
        self.driver = Driver()
        weakref.finalize(self, self.driver.close)       # its event loop lives as long as the runner
        self.outcomes = {a.name: resolve(a.raises, m.spec.path) for a in m.spec.actions}
        self.starts = "start()" if self.live else "concretize()"     # what begin() calls, for messages

    def begin(self, state: dict[str, Any]) -> Any:
        """A concrete run in the abstract state `state` (live: an initial state)."""
        if self.live:
            return self.driver.call(self.adapter.start, dict(self.params), dict(state))
        return self.driver.call(self.adapter.concretize, dict(state), self.params)

    def advance(self, concrete: Any, action: str, choices: dict[str, Any]) -> tuple[Any, Any, Any]:
        """One transition: (the concrete run after it, its abstract state, the rule). A declared
        exception fires its rule, and its values go on top of what abstract() reads from
        the run as the exception left it."""
        return self.advance_raised(concrete, action, choices)[:3]

    def advance_raised(self, concrete: Any, action: str,
                       choices: dict[str, Any]) -> tuple[Any, Any, Any, dict[str, Any]]:
        """`advance`, and the `set:` values of the declared exception the step raised ({} if
        none): a live run that raised stands for its abstract state with them on top, which
        abstract() alone cannot read back from it later (LiveRuns.fresh)."""
        holder = [concrete]
        rule, sets = self._outcome(action, lambda: self._step(holder, action, choices))
        got = (self.driver.call(self.adapter.abstract, holder[0]) if self.live
               else self.driver.call(self.adapter.abstract, holder[0], self.params))
        return holder[0], _with(got, sets), rule, sets

    def close(self, concrete: Any) -> None:
        """The run is done with: a live one goes to the adapter's close(), if it has one (a
        concretized state is the adapter's plain value: nothing to release)."""
        if self.live:
            close_run(self.adapter, self.driver, concrete)

    def _step(self, holder: list[Any], action: str, choices: dict[str, Any]) -> Any:
        if self.live:            # the live run advances in place
            return self.driver.call(self.adapter.step, holder[0], action, choices)
        holder[0], rule = self.driver.call(self.adapter.step, action, holder[0], choices)
        return rule

    def _outcome(self, action: str, run: Callable[[], Any]) -> tuple[Any, dict[str, Any]]:
        try:
            return run(), {}
        except Exception as exc:
            said = outcome_of(exc, self.outcomes[action])
            if said is None:
                raise
            return said.rule, said.sets


class Classes:
    """The concrete values `check` feeds the code for each abstract choice: all of the
    adapter's `representatives(action, choice, label)` (a finite, non-empty list) when it
    has that method, else its one `representative()`. Counts what each class had, for the
    report. Its methods are the user's code: callers run them under the deadline."""

    def __init__(self, adapter: Any) -> None:
        self.adapter = adapter
        self.many = callable(getattr(adapter, "representatives", None))
        self.counts: dict[str, dict[str, dict[str, int]]] = {}    # action -> choice -> label -> how many

    def of(self, action: str, choice: str, label: Any) -> list[Any]:
        if not self.many:
            return [self.adapter.representative(action, choice, label)]
        got = self.adapter.representatives(action, choice, label)
        if type(got) not in (list, tuple) or not got:
            shown = f"an empty {type(got).__name__}" if type(got) in (list, tuple) else type(got).__name__
            raise CodeError(f"representatives() for {choice}={_value_text(label)} of action {action} must give "
                            f"a non-empty list of concrete values, got {shown}")
        self.counts.setdefault(action, {}).setdefault(choice, {})[_value_text(label)] = len(got)
        return list(got)

    def choices(self, act: CompiledAction, combo: tuple[Any, ...]) -> list[dict[str, Any]]:
        """Every combination of concrete values for one abstract combination of choices."""
        made = made_choices(act, combo)
        lists = [self.of(act.name, name, item[0]) for name, item in made]
        return [dict(zip([name for name, _ in made], values)) for values in itertools.product(*lists)]


def bind_machine(m: Machine, adapter: Any, ref: str, paths: int = 1, determinism: str = "auto") -> Machine:
    """A copy of `m` whose actions run the bound code instead of the spec's stages.

    The declared exceptions (`raises:`) are imported here, the user's modules: call it
    under the check's deadline. `paths` > 1 (a live adapter only) compares up to that
    many paths into each abstract state (`same_after`). `determinism` (DETERMINISM) says
    which transitions run the code twice to compare (`Determinism`)."""
    code = BoundCode(m, adapter, paths, determinism)
    bound = copy.copy(m)
    _BOUND[id(bound)] = code
    weakref.finalize(bound, _BOUND.pop, id(bound), None)
    bound.actions = [CompiledAction(a.name, a.index, a.guard, code.step_of(a), a.combos, a.labels, a.step_args,
                                    a.choice_names, a.record_fields, a.admit) for a in m.actions]
    bound.domain_error = code.domain_error
    bound.sweep = None                # the generated loop runs the spec's stages, not the code
    bound.bound_to = ref
    runs = code.runs
    bound.binding = (lambda: runs.mode) if runs is not None else (lambda: STATE)
    bound.drift = lambda: code.drift[0] if code.drift else None
    bound.determinism = code.checking.to_json
    bound.representatives = (lambda: code.classes.counts) if code.classes.many else None
    return bound


@dataclass
class Held:
    """A live run a transition left, and the `set:` values of the declared exception it raised
    there ({} if none): the abstract state it stands for is what abstract() reads, with them on top."""

    live: Any
    sets: dict[str, Any]


CodeStep: TypeAlias = tuple[Any, Any, Held | None]     # the code's result, its rule, the live run (None: state API)


class BoundCode:
    """The bound code behind a machine's actions: one transition is the code's result, checked
    (determinism, other representatives, the rule, the spec's own stages) and, for a live
    adapter, its live run kept for the states it reaches."""

    def __init__(self, m: Machine, adapter: Any, paths: int, determinism: str) -> None:
        self.m, self.adapter, self.paths = m, adapter, paths
        self.checking = determinism_for(m, determinism)
        self.classes = Classes(adapter)
        self.rechecked: set[tuple[Any, ...]] = set()    # sample: the states whose first transition ran twice
        self.var_names = m.all_names      # a state tuple's: the user's vars, then the property monitors'
        self.shown = m.var_names          # what the adapter sees of a state: never a monitor
        self.code_vars = [v.name for v in m.spec.vars if not v.ghost]   # what abstract() gives; ghosts: the stages
        self.values_ok = value_checkers(m)
        self.runner = Runner(m, adapter)
        self.runs = (LiveRuns(adapter, self.runner.driver, dict(m.params), self.shown, m.inits,
                              self.advance, _read_back, self.code_vars) if self.runner.live else None)
        self.drift: list[Drift] = []    # the first transition on which the code and the spec's stages disagree
        # Sharing a run's BFS levels among worker processes (explorer/parallel.py): `ahead`, when
        # set, is called by the engine with each level's states before it expands them; while
        # `relayed` is not None, a transition is the outcome a worker computed for it (`take`).
        self.ahead: Callable[[list[tuple[Any, ...]]], None] | None = None
        self.relayed: dict[tuple[Any, ...], Outcome] | None = None     # (state, action index, combo) -> outcome
        self.gaps: dict[tuple[Any, ...], Callable[[], BaseException]] = {}   # states no worker expanded: why
        self.saved: dict[tuple[Any, ...], bytes | None] = {}    # live: a new state's pickled run, from a worker
        self.chosen: dict[str, Any] = {}        # the concrete choices of the last transition begun

    def advance(self, live: Any, action: str, choices: dict[str, Any]) -> dict[str, Any]:
        """One transition of a live run while replaying a path: the `set:` values of the
        declared exception it raised, if any."""
        return self.runner.advance_raised(live, action, choices)[3]

    def domain_error(self, t: tuple[Any, ...]) -> int:
        for i, ok in enumerate(self.values_ok):
            if not ok(t[i]):
                return i
        return -1

    def on_live(self, act: CompiledAction, live: Any, choices: dict[str, Any]) -> CodeStep:
        _, got, rule, sets = self.runner.advance_raised(live, act.name, choices)
        return got, rule, Held(live, sets)

    def run_code(self, act: CompiledAction, s: tuple[Any, ...], state: dict[str, Any],
                 choices: dict[str, Any]) -> CodeStep:
        """The code's transition from abstract state s: on a live run that stands for s, or on
        a concrete state the adapter builds from it (the state API)."""
        if self.runs is None:
            concrete = self.runner.begin(state)
            return self.runner.advance(concrete, act.name, choices)[1:] + (None,)
        if not self.runs.known(s):
            raise CodeError("a live run reaches a state only along a path from an initial state, "
                            "and none has led to this one")
        return self.on_live(act, self.runs.fresh(s), choices)

    def call(self, act: CompiledAction, s: tuple[Any, ...], state: dict[str, Any], choices: dict[str, Any],
             combo: tuple[Any, ...]) -> CodeStep:
        return _user(lambda: self.run_code(act, s, state, copy.deepcopy(choices)), "the bound code",
                     f"the bound code for action {act.name}", act, combo, state)

    def step_of(self, act: CompiledAction) -> Callable[..., tuple[tuple[Any, ...], str | None]]:
        """Action `act`'s step function over abstract states, running the code."""
        decl = self.m.spec.actions[act.index]
        rules = {r.name for r in decl.decide.rules} if decl.decide else set()
        # the spec's stages, compiled: its ghost vars and the property monitors come from them, and
        # the code is compared with them where the action has stages of the user's
        stages = act.step if decl.stages else None
        own = decl.own_stages

        def step(s: tuple[Any, ...], *combo: tuple[Any, ...]) -> tuple[tuple[Any, ...], str | None]:
            return self.transition(act, rules, stages, own, s, combo)
        return step

    def transition(self, act: CompiledAction, rules: set[str], stages: Callable[..., Any] | None, own: bool,
                   s: tuple[Any, ...], combo: tuple[Any, ...]) -> tuple[tuple[Any, ...], str | None]:
        """One transition of the code; every live run it made is closed by its end, whether it
        succeeded or raised (a finding, a declared exception, the deadline)."""
        if self.relayed is not None:
            return self.take(act, s, combo)
        doing = f"closing a live run after action {act.name}"
        try:
            out = self.code_transition(act, rules, stages, own, s, combo)
        except BaseException:
            self.close_left(lambda: running(doing, _choice_labels(act, combo), dict(zip(self.shown, s))), False)
            raise
        self.close_left(lambda: running(doing, _choice_labels(act, combo), dict(zip(self.shown, s))), True)
        return out

    def close_left(self, doing: Callable[[], str], report: bool) -> None:
        """Close every live run made and not released (what a raising transition left): each
        under the call deadline, one that raises or hangs not keeping the others open. The
        first failure is a `bound_code` finding if `report` (else the failure already on its
        way is the one reported)."""
        runs = self.runs
        if runs is not None:
            close_each(runs, runs.unreleased(), doing, report)

    def finish(self) -> None:
        """The check is over: close the runs still held (the saved copies of states, expanded
        or not: a bound or a finding may have stopped the exploration). A close() that fails
        here is no transition's: it is said on stderr."""
        runs = self.runs
        if runs is not None:
            try:
                close_each(runs, runs.unreleased() + runs.saved_runs(),
                           lambda: "closing the live runs kept for the explored states", True)
            except (CodeError, usercode.OutOfTime) as exc:
                text = exc.text() if isinstance(exc, usercode.Stuck) else str(exc)
                print(f"haltproof: warning: {text}", file=sys.stderr)

    def code_transition(self, act: CompiledAction, rules: set[str], stages: Callable[..., Any] | None, own: bool,
                        s: tuple[Any, ...], combo: tuple[Any, ...]) -> tuple[tuple[Any, ...], str | None]:
        state = dict(zip(self.shown, s))
        who = "the adapter's representatives()" if self.classes.many else "the adapter's representative()"
        concrete = _user(lambda: self.classes.choices(act, combo), who, f"{who} for action {act.name}",
                         act, combo, state)
        choices = self.chosen = concrete[0]
        *first_out, live = self.call(act, s, state, choices, combo)
        first = _plain_result(tuple(first_out), self.code_vars)
        self.recheck(act, s, state, choices, combo, first)
        self.other_values(act, s, state, concrete, combo, first)
        result, rule = first
        if rule is not None and rule not in rules:
            raise CodeError(f"the bound code reports rule {rule!r}, which action {act.name}'s "
                            f"decide table does not have ({', '.join(sorted(rules)) or 'none'})")
        spec_out = stages(s, *combo) if stages is not None else None
        ghosts = dict(zip(self.var_names, spec_out[0] if spec_out is not None else s))
        t = checked_hashable(tuple(result[v] if v in result else ghosts[v] for v in self.var_names),
                             self.var_names, "abstract()")
        if spec_out is not None and own:
            rule, differs = _matching(spec_out, t, rule, self.var_names)
            if differs and not self.drift:
                self.drift.append((s, act.index, act.combos.index(combo), rule, t, differs))
        self.keep_live(act, s, state, choices, combo, t, live)
        self.release(live, act, combo, state)
        return t, rule

    def release(self, held: Held | None, act: CompiledAction, combo: tuple[Any, ...], state: dict[str, Any]) -> None:
        """A live run this transition is done with goes to the adapter's close() now."""
        runs = self.runs
        if runs is not None and held is not None:
            _user(lambda: runs.release(held.live), "the adapter's close()",
                  f"closing a live run after action {act.name}", act, combo, state)

    def recheck(self, act: CompiledAction, s: tuple[Any, ...], state: dict[str, Any], choices: dict[str, Any],
                combo: tuple[Any, ...], first: tuple[dict[str, Any], Any]) -> None:
        """The determinism check: the same transition run again must give the same result."""
        mode = self.checking.mode
        if not (mode == "full" or (mode == "sample" and s not in self.rechecked)):
            return
        self.rechecked.add(s)
        began = time.perf_counter()
        try:
            *second_out, live = self.call(act, s, state, choices, combo)
            self.release(live, act, combo, state)
            second = _plain_result(tuple(second_out), self.code_vars)
        finally:
            self.checking.extra_calls += 1
            self.checking.seconds += time.perf_counter() - began
        if not _agree(first, second):
            raise CodeError("the bound code is nondeterministic: two calls with the same state "
                            f"and choices gave {_show(first)} and {_show(second)}")

    def other_values(self, act: CompiledAction, s: tuple[Any, ...], state: dict[str, Any],
                     concrete: list[dict[str, Any]], combo: tuple[Any, ...],
                     first: tuple[dict[str, Any], Any]) -> None:
        """Every other concrete value of the abstract choices must do what the first one did."""
        for k, other in enumerate(concrete[1:], start=2):
            *got_out, live = self.call(act, s, state, other, combo)
            self.release(live, act, combo, state)
            got = _plain_result(tuple(got_out), self.code_vars)
            if not _agree(got, first):
                labels = ", ".join(f"{n}={_value_text(item[0])}" for n, item in made_choices(act, combo))
                raise CodeError(f"two concrete values of the abstract choice {labels} behave differently: "
                                f"representative 1 gives {_show(first)}, representative {k} (of "
                                f"{len(concrete)}) gives {_show(got)}: the code tells apart values the "
                                "abstraction puts in one class")

    def keep_live(self, act: CompiledAction, s: tuple[Any, ...], state: dict[str, Any], choices: dict[str, Any],
                  combo: tuple[Any, ...], t: tuple[Any, ...], held: Held | None) -> None:
        """A live run that reached a new abstract state is kept for it (with the values of the
        declared exception that got it there); one that reached a known state by another path
        is compared with the first (`--paths`)."""
        runs = self.runs
        if runs is None or held is None:
            return
        way = (s, act.index, combo)
        if not runs.known(t):
            _user(lambda: runs.keep(s, act.name, choices, t, held.live, way, held.sets), "the adapter's snapshot()",
                  f"keeping the live run after action {act.name}", act, combo, state)
        elif runs.another_path(t, way, self.paths):
            _user(lambda: self.same_after(s, act.name, choices, t), "the bound code",
                  f"comparing two paths into a state after action {act.name}", act, combo, state)

    def same_after(self, s: tuple[Any, ...], action: str, choices: dict[str, Any], t: tuple[Any, ...]) -> None:
        """`--paths`: the run that reached `t` from `s` by `action` must go on as the run that
        reached `t` first does, for every transition enabled in `t`; if not, the abstract
        state leaves out something the code acts on."""
        runs, m = self.runs, self.m
        assert runs is not None, "only live runs have paths"
        if m.is_terminal(t):
            return
        for act in m.actions:
            if act.guard is not None and not act.guard(t):
                continue
            for ci, combo in enumerate(act.combos):
                if not act.possible(t, ci):
                    continue
                choices_t = {name: self.adapter.representative(act.name, name, item[0])
                             for name, item in made_choices(act, combo)}
                one = runs.fresh(t)
                first = _plain_result(self.on_live(act, one, copy.deepcopy(choices_t))[:2], self.code_vars)
                runs.release(one)
                other = runs.fresh(s)
                self.advance(other, action, copy.deepcopy(choices))
                then = _plain_result(self.on_live(act, other, copy.deepcopy(choices_t))[:2], self.code_vars)
                runs.release(other)
                if not _agree(first, then):
                    labels = ", ".join(f"{k}={_value_text(v[0])}" for k, v in made_choices(act, combo))
                    raise CodeError(
                        f"this path reaches a state another path reached first, but the two runs then "
                        f"differ: action {act.name}{f' ({labels})' if labels else ''} gives {_show(then)} "
                        f"after this path and {_show(first)} after the first: the abstract state leaves "
                        "out something the code acts on (--paths)")

    # A worker process's side of a shared level (explorer/parallel.py): the transitions of
    # the states it is given, each as an Outcome the main process takes as its own.

    def expanding(self, states: list[tuple[tuple[Any, ...], Recipe]]) -> None:
        """Start on a slice of a level: forget the states of an earlier slice, and learn how to
        reach each of these (live: its path from an initial state, and its saved run)."""
        self.rechecked.clear()
        runs = self.runs
        if runs is None:
            return
        runs.origin = {s: (None, "", {}) for s in self.m.inits}
        runs.open.extend(runs.saved_runs())     # the earlier slice's copies: the next transition closes them
        runs.first_way.clear()
        runs.raised.clear()
        for s, recipe in states:
            assert recipe is not None, "a live run's state comes with its path"
            path, blob, raised = recipe
            runs.origin.update(path)
            if raised:
                runs.raised[s] = raised
            if blob is not None and runs.how != "replay":
                try:
                    runs.saved[s] = usercode.run(pickle.loads, blob)
                except Exception:         # not loadable here: the run is replayed instead
                    pass

    def outcome(self, act: CompiledAction, s: tuple[Any, ...], combo: tuple[Any, ...]) -> Outcome:
        """Run one transition (`act` is the bound machine's action) and say what it did: its
        result or error, and every figure it moved (`Effects`). The deadline passing in it
        propagates (OutOfTime), noted with what was running."""
        counts, self.classes.counts = self.classes.counts, {}
        checking, runs = self.checking, self.runs
        calls, seconds, drifted = checking.extra_calls, checking.seconds, len(self.drift)
        known = len(runs.origin) if runs is not None else 0
        copying = runs is not None and runs.how == "copy"
        fresh_check = s not in self.rechecked
        out = Outcome(Effects([]))
        try:
            out.result = act.step(s, *combo)
        except EVAL_ERRORS as exc:
            out.error = Relayed(str(exc), spec_line(self.m, exc), getattr(exc, "builtin", "well_defined"))
        finally:
            got, self.classes.counts = self.classes.counts, counts
        fx = out.effects
        fx.counts = [(a, c, label, n) for a, per in got.items() for c, labels in per.items()
                     for label, n in labels.items()]
        fx.extra_calls, fx.seconds = checking.extra_calls - calls, checking.seconds - seconds
        fx.rechecked = fresh_check and s in self.rechecked
        fx.drift = self.drift[drifted] if len(self.drift) > drifted else None
        del self.drift[drifted:]           # each worker slice reports its own: the main keeps the first
        fx.replaying = copying and runs is not None and runs.how == "replay"
        if runs is not None:            # a live run's path: how a worker reaches the successor
            out.choices = copy.deepcopy(self.chosen)
            if out.result is not None and len(runs.origin) > known:
                out.saved = _pickled(runs.saved.get(out.result[0]))
                out.raised = runs.raised.get(out.result[0], {})
        return out

    # The main process's side: the outcomes the workers computed, taken in the serial order.

    def recipe(self, s: tuple[Any, ...]) -> Recipe:
        """What a worker needs to reach state s: nothing (the state API), or its path from an
        initial state, its saved run (pickled) when there is one that pickles, and the `set:`
        values of the declared exception that reached it."""
        runs = self.runs
        if runs is None:
            return None
        path: list[tuple[tuple[Any, ...], Origin]] = []
        at: tuple[Any, ...] | None = s
        while at is not None:
            path.append((at, runs.origin[at]))
            at = runs.origin[at][0]
        blob = self.saved.pop(s, None)
        if blob is None and s in runs.saved:            # reached while this process ran the code itself
            blob = _pickled(runs.saved[s])
        return path, blob, runs.raised.get(s, {})

    def take(self, act: CompiledAction, s: tuple[Any, ...], combo: tuple[Any, ...]) -> tuple[tuple[Any, ...], str | None]:
        """Transition (s, act, combo) as a worker computed it: its figures added to this run's
        in the serial order, then its result returned or its error raised, as if run here."""
        assert self.relayed is not None, "called only while relaying"
        out = self.relayed.pop((s, act.index, combo), None)
        if out is None:
            gap = self.gaps.get(s)
            assert gap is not None, f"no worker expanded state {s}"
            raise gap()
        self._absorb(s, out.effects)
        if out.error is not None:
            raise out.error
        assert out.result is not None, "an outcome is a result or an error"
        t, rule = out.result
        runs = self.runs
        if runs is not None and not runs.known(t):
            runs.origin[t] = (s, act.name, out.choices or {})
            runs.first_way[t] = (s, act.index, combo)
            if out.raised:
                runs.raised[t] = dict(out.raised)
            self.saved[t] = out.saved
        return t, rule

    def _absorb(self, s: tuple[Any, ...], fx: Effects) -> None:
        for a, c, label, n in fx.counts:
            self.classes.counts.setdefault(a, {}).setdefault(c, {})[label] = n
        self.checking.extra_calls += fx.extra_calls
        self.checking.seconds += fx.seconds
        if fx.rechecked:
            self.rechecked.add(s)
        if fx.drift is not None and not self.drift:
            self.drift.append(fx.drift)
        if fx.replaying and self.runs is not None:
            self.runs.how = "replay"
            self.runs.saved.clear()

    def relay_done(self) -> None:
        """The exploration is over: transitions run the code here again (scenarios, say)."""
        self.relayed = None
        self.gaps.clear()
        self.saved.clear()


def bound_code(m: Machine) -> BoundCode | None:
    """The bound code behind machine m's actions (None: m runs no code, or is a copy)."""
    return _BOUND.get(id(m))


_BOUND: dict[int, BoundCode] = {}     # bound machine's id -> its code, for as long as the machine lives
Recipe: TypeAlias = "tuple[list[tuple[tuple[Any, ...], Origin]], bytes | None, dict[str, Any]] | None"


@dataclass
class Effects:
    """What one transition did to a run's figures besides its result: the representatives each
    class had, the determinism check's extra calls and time, whether it re-ran its state's first
    transition (sample), the first code_matches_spec drift, a live run given up copying."""

    counts: list[tuple[str, str, str, int]]
    extra_calls: int = 0
    seconds: float = 0.0
    rechecked: bool = False
    drift: Drift | None = None
    replaying: bool = False


@dataclass
class Outcome:
    """One transition as a worker process ran it: a result (successor, rule) or an error, its
    effects, the concrete choices it fed the code, and (live, a state new to the worker) the run
    that reached the successor, pickled where it can be (None: replayed instead), with the
    `set:` values of the declared exception it raised."""

    effects: Effects
    result: tuple[tuple[Any, ...], str | None] | None = None
    error: Relayed | None = None
    choices: dict[str, Any] | None = None
    saved: bytes | None = None
    raised: dict[str, Any] | None = None     # the set: values of the declared exception that reached it


class Relayed(EvalError):
    """An error a worker process met on a transition, raised here as it was there: the same
    text, the same spec line and the same built-in property."""

    def __init__(self, text: str, line: int | None, builtin: str):
        super().__init__(text, line, builtin)
        self.text, self.line, self.builtin = text, line, builtin

    def __str__(self) -> str:
        return self.text


class WorkersLost(BaseException):
    """A state of a shared level that no worker process could expand (every worker that took
    it died, or the cluster was lost): the exploration stops before it, `incomplete`."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


def _pickled(obj: Any) -> bytes | None:
    """A saved live run as bytes for another process, or None when it does not pickle (the
    user's object may refuse in any way): then that process replays the run's path."""
    if obj is None:
        return None
    try:
        blob: bytes = usercode.run(pickle.dumps, obj)
    except Exception:
        return None
    return blob


def _matching(spec_out: tuple[tuple[Any, ...], str | None], t: tuple[Any, ...], rule: str | None,
              var_names: list[str]) -> tuple[str | None, str | None]:
    """The transition's rule, and how the code's result `t` and `rule` differ from the spec's
    own stages' (`spec_out`), None when they agree: then the spec names the rule if the
    code gives none. A difference cuts nothing short: the code's result is explored."""
    spec_t, spec_rule = spec_out
    said = rule if rule is not None else spec_rule
    if _typed(spec_t) == _typed(t) and said == spec_rule:
        return said, None
    parts = [f"rule: code {rule!r}, spec {spec_rule!r}"] if said != spec_rule else []
    parts += [f"{name}: code {_value_text(a)}, spec {_value_text(b)}"
              for name, a, b in zip(var_names, t, spec_t) if (type(a), a) != (type(b), b)]
    return rule, "the code and the spec's own stages disagree: " + "; ".join(parts)


def _typed(state: tuple[Any, ...]) -> tuple[tuple[type, Any], ...]:
    """True, 1 and 1.0 are three values here, as in the domain checks."""
    return tuple((type(v), v) for v in state)


def _typed_vars(state: dict[str, Any]) -> dict[str, tuple[type, Any]]:
    return {k: (type(v), v) for k, v in state.items()}


def _agree(one: tuple[dict[str, Any], Any], other: tuple[dict[str, Any], Any]) -> bool:
    """Two results of the code (abstract state, rule) are one: the same rule, and every var
    the same value of the same type (True, 1 and 1.0 are three values, as in the domain
    checks: a plain == takes a bool 1 for true and proves code that gives either)."""
    return one[1] == other[1] and _typed_vars(one[0]) == _typed_vars(other[0])


def _with(result: Any, sets: dict[str, Any]) -> Any:
    """The abstract state the code reports, with a declared exception's values on top."""
    return {**result, **sets} if sets and type(result) is dict else result


def _read_back(runs: LiveRuns, live: Any, s: tuple[Any, ...], how: str, sets: dict[str, Any]) -> None:
    """A live run handed to a transition must be in the state it stands for (machine/live.py):
    what abstract() reads, with `sets` on top (the values of the declared exception that
    reached the state, which the run cannot show itself)."""
    got = _plain_result((_with(runs.driver.call(runs.adapter.abstract, live), sets), None), runs.code_vars)[0]
    if _typed_vars(got) == _typed_vars({k: v for k, v in zip(runs.var_names, s) if k in got}):
        return
    shown = " ".join(f"{k}={_value_text(v)}" for k, v in got.items())
    if how == "start":
        raise CodeError(f"start() for this initial state gives a run in state {shown}")
    if how == "snapshot":
        why = "restore(snapshot(...)) does not give back the run the snapshot was taken of"
    elif how == "copy":
        why = ("copy.deepcopy does not copy this live run (it shares state with the original): "
               "give the adapter snapshot()/restore(), or leave copyable = False (replay)")
    else:
        why = (f"replaying its path of {runs.path_length(s)} transitions from start() leads elsewhere: "
               "the bound code is nondeterministic (time, randomness, iteration order, or state kept "
               "between runs)")
    raise CodeError(f"the live run for this state is in state {shown}: {why}")


def _user(fn: Callable[[], T], who: str, doing: str, act: CompiledAction, combo: tuple[Any, ...],
          state: dict[str, Any]) -> T:
    """`fn()`, the user's code, under the deadline: its exception is a `bound_code` finding
    with the user's traceback, the deadline passing in it says what was running."""
    try:
        return usercode.run_as(lambda: running(doing, _choice_labels(act, combo), state), fn)
    except CodeError:
        raise
    except usercode.FAILURES as exc:
        raise CodeError(f"{who} raised {exception_text(exc)}\n{user_traceback(exc)}") from None


def close_each(runs: LiveRuns, lives: list[Any], doing: Callable[[], str], report: bool) -> None:
    """The adapter's close() on every run of `lives`, each a call under the deadline (user code):
    one that raises or is stuck does not keep the others open. The first failure is raised
    after all were tried, if `report`."""
    failed: BaseException | None = None
    for live in lives:
        try:
            usercode.run_as(doing, functools.partial(runs.release, live))
        except usercode.FAILURES as exc:
            failed = failed or CodeError(f"the adapter's close() raised {exception_text(exc)}\n{user_traceback(exc)}")
        except usercode.OutOfTime as exc:
            failed = failed or exc
    if failed is not None and report:
        raise failed


def _value_text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def made_choices(act: CompiledAction, combo: tuple[Any, ...]) -> list[tuple[str, Any]]:
    """The choices a combination makes, (name, item): a conditional choice absent from it (its
    `when:` false) is not one, so the bound code is never passed it."""
    return [(name, item) for name, item in zip(act.choice_names, combo) if not isinstance(item, AbsentChoice)]


def _choice_labels(act: CompiledAction, combo: tuple[Any, ...]) -> dict[str, Any]:
    return {name: item[0] for name, item in made_choices(act, combo)}


# Builtin scalars: hashing, comparing and printing them runs none of the user's code.
_PLAIN = (int, bool, str, float, type(None))


def _plain_result(out: Any, var_names: list[str]) -> tuple[dict[str, Any], Any]:
    """The code's (abstract state, rule), checked to hold only builtin values before haltproof
    hashes, compares or prints any of it: a value of the user's own class would run its
    __eq__/__hash__/__repr__ outside the deadline, where a loop in them would hang the check."""
    result, rule = out
    if type(result) is not dict or any(type(k) is not str for k in result):
        got = type(result).__name__ if type(result) is not dict else "keys that are not all strings"
        raise CodeError(f"abstract() must return a dict with exactly the vars {sorted(var_names)}, got {got}")
    if set(result) != set(var_names):
        raise CodeError(f"abstract() must return a dict with exactly the vars {sorted(var_names)}, "
                        f"got {sorted(result)}")
    for name in var_names:
        if type(result[name]) not in _PLAIN:
            raise CodeError(f"abstract() gave var {name} a value of type {type(result[name]).__name__}; "
                            "abstract states hold ints, bools and strings")
        _finite(result[name], name, "abstract()")
    if rule is not None and type(rule) is not str:
        raise CodeError(f"the bound code reports a rule of type {type(rule).__name__}; a rule is "
                        "the name of a decide rule (a string) or None")
    return result, rule


def checked_hashable(state: tuple[Any, ...], var_names: list[str], what: str) -> tuple[Any, ...]:
    """States are set members: a dict or list slipping into one is the code's mistake."""
    for name, value in zip(var_names, state):
        try:
            hash(value)
        except TypeError:
            raise CodeError(f"{what} gave var {name} the unhashable value {value!r} "
                            f"({type(value).__name__}); abstract states hold ints, bools and "
                            "strings") from None
        _finite(value, name, what)
    return state


def _finite(value: Any, name: str, what: str) -> None:
    """A NaN is not equal to itself (a state holding it is never found again, and running the
    same transition twice looks nondeterministic), and no report can write it or an infinity:
    the code's mistake, said as such, rather than a domain error whose trace shows the value."""
    if isinstance(value, float) and not math.isfinite(value):
        raise CodeError(f"{what} gave var {name} the value {value!r}, which no state can hold: it is not a "
                        "finite number (a NaN is not even equal to itself)")


def value_checkers(m: Machine) -> list[Callable[[Any], bool]]:
    """Per var, whether a value the code produced lies in the declared domain (type included:
    `type(x) is int`, not isinstance, since True is an int to isinstance, and True == 1 == 1.0
    would pass a plain range or membership test). The engine runs these on every state the
    code returns, also one equal to a state already reached (explorer/engine.py)."""
    out: list[Callable[[Any], bool]] = []
    for v, b in zip(m.spec.vars, m.bounds):
        if v.kind == "int":
            lo, hi = present(b)
            out.append(_int_within(lo, hi))
        elif v.kind == "bool":
            out.append(lambda x: type(x) is bool)
        else:
            out.append(_str_among(frozenset(v.values)))
    return out


def _int_within(lo: int, hi: int) -> Callable[[Any], bool]:
    return lambda x: type(x) is int and lo <= x <= hi


def _str_among(values: frozenset[str]) -> Callable[[Any], bool]:
    return lambda x: type(x) is str and x in values


def _show(result: tuple[dict[str, Any], Any]) -> str:
    state, rule = result
    return f"{state} (rule {rule!r})"
