"""Conformance: does the finite abstraction describe what the bound code really does?

The exhaustive check feeds the code one representative per abstract class. Conformance
tests the claim behind that: for every concrete value in a class, the code decides as
the spec does. Hypothesis draws concrete runs (params, an initial state, then at each
step an enabled action, an abstract class per choice and a concrete value from the
adapter's strategy for that class), threads one concrete state through the user's code
and the abstract state through the spec's own stages, and compares the abstracted code
state and the rule after every step (a rule of None from the code: the spec's table names
it, as in `check`). A mismatch is shrunk to a minimal run.

The comparison counts the type, as the exhaustive check does (machine/binding.py,
`value_checkers`): True == 1 == 1.0 in Python, but a bool or float where the spec has an
int (or an int where it has a bool) is a disagreement, shown with the domain it leaves.
"""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any

import hypothesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import HypothesisException, InvalidArgument
from hypothesis import seed as fix_seed
from hypothesis import strategies as st

from haltproof.machine import usercode
from haltproof.machine.binding import Adapter, Runner, user_traceback, value_checkers
from haltproof.machine.compiled import CompiledAction, EvalError, Machine
from haltproof.machine.live import LiveAdapter
from haltproof.machine.text import assignments_text, exception_text, value_text
from haltproof.machine.usercode import OutOfTime, Stuck, running


_HYPOTHESIS = (os.path.dirname(os.path.abspath(hypothesis.__file__)) + os.sep,)   # its frames between the user's


@dataclass
class ConformStep:
    action: str
    labels: dict[str, Any]
    concrete: dict[str, Any]
    spec_state: dict[str, Any] | None
    spec_rule: str | None
    code_state: dict[str, Any] | None
    code_rule: str | None
    error: str | None = None
    outside: dict[str, str] = field(default_factory=dict)   # var -> its domain, where the code left it


@dataclass
class ConformResult:
    ok: bool
    examples: int
    seed: int
    steps_compared: int = 0
    params: dict[str, int] = field(default_factory=dict)
    initial: dict[str, Any] = field(default_factory=dict)
    steps: list[ConformStep] = field(default_factory=list)
    stopped: str | None = None      # the --timeout passed while this ran: incomplete, no verdict
    stuck: str | None = None        # a call into the code did not return within --call-timeout: a failure

    @property
    def first_difference(self) -> ConformStep | None:
        return self.steps[-1] if not self.ok and self.steps else None


class _Mismatch(AssertionError):
    pass


def conform(machines: list[Machine], adapter: Adapter | LiveAdapter, *, examples: int = 200, seed: int = 0,
            max_depth: int = 50) -> ConformResult:
    """Compare the code and the spec on `examples` random concrete runs (reproducible by seed)."""
    last: dict[str, Any] = {}
    compared = [0]
    checkers = {id(m): value_checkers(m) for m in machines}
    runners = {id(m): Runner(m, adapter) for m in machines}     # the same calls `check` makes

    # one failure, the smallest: a run can fail in several ways (the code raises on one example and
    # disagrees on another), which Hypothesis would otherwise raise together as an ExceptionGroup
    @settings(max_examples=examples, database=None, deadline=None, print_blob=False,
              suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
    @fix_seed(seed)
    @given(st.data())
    def run(data: st.DataObject) -> None:
        m = data.draw(st.sampled_from(machines), label="params")
        s = data.draw(st.sampled_from(m.inits), label="initial state")
        steps: list[ConformStep] = []
        last.update(params=m.params, initial=m.state_dict(s), steps=steps)
        runner = runners[id(m)]
        try:
            concrete = _user(f"running the adapter's {runner.starts} on state {m.state_dict(s)}",
                             runner.begin, m.state_dict(s))
        except usercode.FAILURES as exc:
            steps.append(ConformStep("(start)", {}, {}, None, None, None, None,
                                     _raised(f"the adapter's {runner.starts}", exc)))
            raise _Mismatch(f"{runner.starts} failed") from None
        try:
            for _ in range(max_depth):
                if m.is_terminal(s):
                    break
                enabled = [a for a in m.actions if a.guard is None or a.guard(s)]
                if not enabled:
                    break
                act = data.draw(st.sampled_from(enabled), label="action")
                ci = data.draw(st.sampled_from(_choice_order(m, act, s, data)), label="choices")
                labels = act.labels[ci]
                step = ConformStep(act.name, dict(labels), {}, None, None, None, None)
                steps.append(step)
                values = _draw_values(adapter, act.name, labels, m.state_dict(s), data, step)
                step.concrete = copy.deepcopy(values)
                try:
                    t, rule = act.step(s, *act.combos[ci])
                    step.spec_state, step.spec_rule = m.state_dict(t), rule
                except (EvalError, ZeroDivisionError) as exc:
                    step.error = f"the spec's own stages failed: {exc}"
                    raise _Mismatch(step.error) from None
                try:
                    concrete, step.code_state, step.code_rule = _user(
                        running(f"the bound code for action {act.name}", labels, m.state_dict(s)),
                        runner.advance, concrete, act.name, copy.deepcopy(values))
                except usercode.FAILURES as exc:
                    step.error = _raised("the code", exc)
                    raise _Mismatch(step.error) from None
                if not isinstance(step.code_state, dict):
                    step.error = (f"the adapter's abstract() must return a dict over the spec's vars "
                                  f"{m.var_names}, got {type(step.code_state).__name__}")
                    raise _Mismatch(step.error)
                for v in m.spec.vars:          # a ghost var is the spec's alone (machine/binding.py)
                    if v.ghost and v.monitor is None and step.spec_state is not None:   # a monitor: never shown
                        step.code_state.setdefault(v.name, step.spec_state[v.name])
                if step.code_rule is None:     # the code names no rule: the spec's table does, as in `check`
                    step.code_rule = step.spec_rule
                compared[0] += 1
                step.outside = _outside(m, checkers[id(m)], step.code_state)
                if _typed(step.code_state) != _typed(step.spec_state) or step.code_rule != step.spec_rule:
                    raise _Mismatch("the code and the spec disagree")
                if step.outside:
                    # the code agrees with a spec whose own stages left the domain: the exhaustive
                    # check reports that (`domains`) and explores nothing beyond, nor do we
                    break
                s = t
        except BaseException:
            _close(runner, concrete, steps, failing=True)
            raise
        _close(runner, concrete, steps, failing=False)

    _warm_hypothesis()
    try:
        usercode.drive(run)     # each call into the code (strategies' draws too) has the call deadline
    except _Mismatch:
        return ConformResult(False, examples, seed, compared[0], last["params"], last["initial"],
                             last["steps"])
    except Stuck as stop:       # a finding, but not one to shrink: every try would wait the call deadline again
        stop.note("drawing the examples")
        return ConformResult(False, examples, seed, compared[0], last["params"], last["initial"], last["steps"],
                             stuck=stop.text())
    except OutOfTime as stop:
        return ConformResult(True, examples, seed, compared[0], stopped=stop.doing or "drawing the examples")
    return ConformResult(True, examples, seed, compared[0])


def _warm_hypothesis() -> None:
    """Hypothesis's own one-off work, done here outside the call deadline: it would otherwise land
    in the first draw of the adapter's strategy, a call into the user's code, and with a short
    --call-timeout make that draw "stuck". On a cold cache (.hypothesis/ in the working folder)
    the Unicode tables of the first `st.text()` take seconds (3.5 s here), and so does reading
    the literals of every local module's source (Hypothesis 6.131 on; a private function, so it
    is called only if it is there)."""
    st.text().validate()
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:
        return
    scan = getattr(providers, "_get_local_constants", None)
    if callable(scan):
        scan()


def _close(runner: Runner, concrete: Any, steps: list[ConformStep], failing: bool) -> None:
    """The example's live run goes to the adapter's close(), under the call deadline, as `check`
    closes each run it makes. A close() that raises or does not return fails the example, unless
    the example failed already: its own failure is the one shown (as in `check`)."""
    if not runner.live:
        return
    try:
        _user("running the adapter's close()", runner.close, concrete)
    except usercode.FAILURES as exc:
        if not failing:
            steps.append(ConformStep("(close)", {}, {}, None, None, None, None, _raised("the adapter's close()", exc)))
            raise _Mismatch("close() failed") from None
    except OutOfTime:
        if not failing:
            raise


def _strategies(adapter: Adapter | LiveAdapter, action: str, labels: dict[str, Any]) -> dict[str, Any]:
    """The adapter's strategy for each choice `action` made, by choice name."""
    return {name: adapter.strategy(action, name, label) for name, label in labels.items()}


def _draw_values(adapter: Adapter | LiveAdapter, action: str, labels: dict[str, Any], state: dict[str, Any],
                 data: st.DataObject, step: ConformStep) -> dict[str, Any]:
    """A concrete value of each choice, drawn from the adapter's strategy for its class. strategy()
    and each draw are calls into the user's code, under the call deadline; a failure of either
    fails the example (`step.error`), never the command."""
    def failed(error: str) -> _Mismatch:
        step.error = error
        return _Mismatch(error)
    try:
        strategies = _user(running(f"the adapter's strategy() for action {action}", labels, state),
                           _strategies, adapter, action, labels)
    except usercode.FAILURES as exc:
        raise failed(_raised("the adapter's strategy()", exc)) from None
    values = {}
    for name, strategy in strategies.items():
        said = f"the adapter's strategy for {name} of action {action}"
        if not isinstance(strategy, st.SearchStrategy):
            raise failed(f"{said} must be a Hypothesis strategy, got {type(strategy).__name__}")
        try:
            values[name] = _user(running(f"a draw of {said}", labels, state),
                                 data.draw, strategy, f"{name}={labels[name]}")
        except usercode.FAILURES as exc:
            if isinstance(exc, HypothesisException) and not isinstance(exc, InvalidArgument):
                raise           # Hypothesis's own flow: an assumption not met, a filter that gave up
            raise failed(_raised(said, exc)) from None
    return values


def _user(doing: str, fn: Any, *args: Any) -> Any:
    """`fn(*args)`, the adapter's code, within the command's deadlines."""
    return usercode.run_as(lambda: doing, lambda: fn(*args))


def _possible(act: CompiledAction, s: tuple[Any, ...], ci: int) -> bool:
    """Whether combination ci is a transition from s: a conditional choice (`when:`) is drawn
    only where it is made, and never passed to the code where it is not. A `when:` that fails
    to evaluate leaves the combination to the spec's own stages, which report it."""
    try:
        return act.possible(s, ci)
    except (EvalError, ZeroDivisionError):
        return True


def _choice_order(m: Machine, act: CompiledAction, s: tuple[Any, ...], data: st.DataObject) -> list[int]:
    """The choice combinations to draw from. Most draws prefer those after which the run
    goes on, so runs reach deep states (a uniform draw mostly ends a run at its first
    decision); a draw of 0 — where Hypothesis shrinks to — allows all, so a failure still
    shrinks to the shortest run."""
    every = [ci for ci in range(len(act.combos)) if _possible(act, s, ci)]
    if data.draw(st.integers(0, 3), label="keep going") == 0:
        return every
    going = []
    for ci in every:
        try:
            t, _ = act.step(s, *act.combos[ci])
        except (EvalError, ZeroDivisionError):
            continue
        if m.domain_error(t) < 0 and not m.is_terminal(t):
            going.append(ci)
    return going or every


def _typed(state: dict[str, Any]) -> dict[str, tuple[type, Any]]:
    """A state compared as the checkers compare values: True, 1 and 1.0 are three values."""
    return {k: (type(v), v) for k, v in state.items()}


def _outside(m: Machine, checkers: list[Callable[[Any], bool]], state: dict[str, Any]) -> dict[str, str]:
    """The vars of an abstracted code state whose value is not in the declared domain (the
    type included), each with that domain as messages show it."""
    return {name: m.domain_text(i) for i, (name, ok) in enumerate(zip(m.var_names, checkers))
            if name in state and not ok(state[name])}


def _raised(who: str, exc: BaseException) -> str:
    return f"{who} raised {exception_text(exc)}\n{user_traceback(exc, _HYPOTHESIS)}"


def _show_code(step: ConformStep, var: str) -> str:
    """The code's value of `var`, with its type and domain when it lies outside the domain."""
    if step.code_state is None or var not in step.code_state:
        return "(missing)"
    value = step.code_state[var]
    if var in step.outside:
        return f"{value!r} ({type(value).__name__}), outside its domain {step.outside[var]}"
    return value_text(value)


def to_text(result: ConformResult, spec_name: str, bound_to: str) -> str:
    if result.stopped:
        return (f"conformance of {spec_name} and {bound_to}: incomplete, --timeout reached after "
                f"{result.steps_compared} steps compared, while {result.stopped}; no difference found "
                "so far, which proves nothing\n")
    if result.stuck:
        return (f"conformance of {spec_name} and {bound_to} FAILED after {result.steps_compared} steps "
                f"compared: {result.stuck}\n")
    if result.ok:
        return (f"conformance of {spec_name} and {bound_to}: {result.examples} random runs "
                f"(seed {result.seed}), {result.steps_compared} steps compared, code and spec agree "
                "on every step\n")
    lines = [f"conformance of {spec_name} and {bound_to} FAILED (seed {result.seed}): the minimal run "
             "on which the code and the spec disagree:",
             "  params: " + " ".join(f"{k}={v}" for k, v in result.params.items()),
             "  initial state: " + assignments_text(result.initial)]
    for n, st_ in enumerate(result.steps, start=1):
        classes = assignments_text(st_.labels, ", ") or "no choices"
        concrete = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}"
                             for k, v in st_.concrete.items())
        lines.append(f"  step {n}: {st_.action} with {classes}" + (f"  concrete: {concrete}" if concrete else ""))
        if st_ is result.steps[-1]:
            if st_.error:
                lines.extend("    " + ln for ln in st_.error.splitlines())
                continue
            code_state, spec_state = st_.code_state, st_.spec_state
            assert code_state is not None and spec_state is not None, "a step that did not fail has both states"
            code, spec = _typed(code_state), _typed(spec_state)
            diff = [k for k in spec if code.get(k) != spec[k]]
            if st_.code_rule != st_.spec_rule:
                lines.append(f"    rule: spec {st_.spec_rule!r}, code {st_.code_rule!r}")
            for k in diff:
                lines.append(f"    {k}: spec {value_text(spec_state[k])}, code {_show_code(st_, k)}")
            extra = sorted(set(code_state) - set(spec_state))
            if extra:
                lines.append(f"    the code's abstract state has vars the spec lacks: {', '.join(extra)}")
    return "\n".join(lines) + "\n"
