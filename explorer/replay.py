"""Running one concrete run step by step: a spec's scenarios and saved traces.

Replay never searches: each step names its action and choices, and the run either
follows the machine exactly (every action enabled, every value in its domain, every
recorded state matching) or stops at the first step that does not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from machine.compiled import EvalError, Machine
from machine.errors import Problem, SpecError
from machine import strict_json
from machine.inputs import TooLarge, check_number, read_bounded
from machine.spec import Scenario, symlink_problem

from properties.kinds import Step

from .itf import ITFError, is_itf, itf_to_trace


@dataclass
class Replayed:
    """What happened on a replay: the steps that ran, and the first problem if any."""

    steps: list[Step]
    lines: list[list[tuple[str, str]]] = field(default_factory=list)   # per step, the replay lines
    problem: str | None = None
    terminal: bool = False

    @property
    def ok(self) -> bool:
        return self.problem is None


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def run_steps(m: Machine, init: dict[str, Any], steps: list[tuple[str, dict[str, Any]]],
              expected_states: list[dict[str, Any] | None] | None = None) -> Replayed:
    """Run `steps` (action name, choice labels) from `init`; compare with expected states if given."""
    state = tuple(init[v] for v in m.var_names)
    if state not in m.inits:
        return Replayed([Step(dict(init))], problem="the starting state is not an initial state "
                                                     "of the machine")
    out = Replayed([Step(m.state_dict(state))])
    if expected_states and expected_states[0] is not None and expected_states[0] != m.state_dict(state):
        out.problem = "step 0: the initial state differs from the recorded one"
        return out
    for n, (aname, choices) in enumerate(steps, start=1):
        act = next((a for a in m.actions if a.name == aname), None)
        if act is None:
            out.problem = f"step {n}: no action named {aname!r}"
            return out
        if m.is_terminal(state):
            out.problem = f"step {n}: the run is already in a terminal state; {aname} cannot happen"
            return out
        if act.guard is not None and not act.guard(state):
            out.problem = f"step {n}: action {aname} is not enabled in this state"
            return out
        try:
            ci = act.labels.index(choices)
        except ValueError:
            out.problem = (f"step {n}: {_choices_text(choices)} is not a choice of action {aname} "
                           f"(it chooses {', '.join(act.choice_names) or 'nothing'})")
            return out
        try:
            nxt, rule = act.step(state, *act.combos[ci])
        except (EvalError, ZeroDivisionError) as exc:
            out.problem = f"step {n}: action {aname} failed: {exc}"
            return out
        bad = m.domain_error(nxt)
        if bad >= 0:
            out.steps.append(Step(m.state_dict(nxt), aname, dict(choices), rule))
            out.problem = (f"step {n}: {m.var_names[bad]} = {nxt[bad]!r} is outside its domain "
                           f"{m.domain_text(bad)}")
            return out
        out.steps.append(Step(m.state_dict(nxt), aname, dict(choices), rule))
        out.lines.append([(label, _display(fn(state, nxt, aname, rule, *act.step_args[ci]), bare, act, ci))
                          for label, fn, bare in m.replay_lines])
        if expected_states and n < len(expected_states) and expected_states[n] is not None:
            if expected_states[n] != m.state_dict(nxt):
                diff = {k: (expected_states[n].get(k), v) for k, v in m.state_dict(nxt).items()
                        if expected_states[n].get(k) != v}
                out.problem = f"step {n}: the state differs from the recorded one: " + ", ".join(
                    f"{k} recorded {_show(a)}, replay gives {_show(b)}" for k, (a, b) in diff.items())
                return out
        state = nxt
    out.terminal = m.is_terminal(state)
    return out


def _display(value: Any, bare_choice: bool, act: Any, ci: int) -> str:
    """A replay line's value; a bare record choice shows the whole record as JSON."""
    if bare_choice:
        for cname, item in zip(act.choice_names, act.combos[ci]):
            if item[0] == value and cname in act.record_fields:
                return json.dumps({"name": value, **dict(zip(act.record_fields[cname], item[1:]))})
    return _show(value)


def _choices_text(choices: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_show(v)}" for k, v in choices.items()) or "no choices"


def run_scenario(m: Machine, sc: Scenario) -> Replayed:
    """Replay a spec scenario and check its expected final state and that it ended."""
    init = {}
    for v, options in zip(m.spec.vars, _init_options(m)):
        init[v.name] = sc.init.get(v.name, options[0])
    out = run_steps(m, init, [(s.action, s.choices) for s in sc.steps])
    if not out.ok:
        return out
    final = out.steps[-1].state
    wrong = {k: v for k, v in sc.expect.items() if final.get(k) != v}
    if wrong:
        out.problem = "the run ends with " + ", ".join(
            f"{k} = {_show(final.get(k))} (expected {_show(v)})" for k, v in wrong.items())
    return out


def _init_options(m: Machine) -> list[list[Any]]:
    return [sorted({s[i] for s in m.inits}, key=str) for i in range(len(m.var_names))]


# A whole JSON report of the bundled specs (107 runs, a trace for every violation) is 3 MB;
# parsing JSON takes about ten times its size in memory, so 64 MiB refuses only abuse.
MAX_TRACE_BYTES = 64 * 1024 * 1024     # README.md, "replay"


def load_trace(path: str, property_name: str | None = None) -> dict[str, Any]:
    """Read a trace as the JSON report prints it: a trace object, a property, or a whole report;
    any of these traces may be in the Informal Trace Format (ITF, see explorer/itf.py)."""
    try:
        data = strict_json.loads(read_bounded(path, MAX_TRACE_BYTES, "a trace or a report"))
    except TooLarge as exc:
        raise SpecError([Problem(path, None, str(exc))]) from None
    except OSError as exc:
        why = symlink_problem(Path(path), exc) or ("no such file" if isinstance(exc, FileNotFoundError)
                                                   else f"not a JSON trace: {exc}")
        raise SpecError([Problem(path, None, why)]) from None
    except (UnicodeDecodeError, ValueError) as exc:     # ValueError: JSON, or a key given twice
        line = getattr(exc, "lineno", None)
        raise SpecError([Problem(path, line, f"not a JSON trace: {exc}")]) from None
    if isinstance(data, dict) and "runs" in data:
        found = []
        for run in data.get("runs", []):
            for p in run.get("properties", []):
                if p.get("trace") and (property_name is None or p.get("name") == property_name):
                    t = _from_itf(path, p["trace"])
                    found.append(dict(t, params=t.get("params", run.get("params"))))
        if len(found) != 1:
            what = f"property {property_name!r}" if property_name else "any property"
            raise SpecError([Problem(path, None, f"the report holds {len(found)} traces for {what}; "
                                                  "name one with --property")])
        data = found[0]
    elif isinstance(data, dict) and "trace" in data and isinstance(data["trace"], dict):
        data = data["trace"]
    data = _from_itf(path, data)
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list) or not data["steps"]:
        raise SpecError([Problem(path, None, "not a trace: expected an object with a non-empty "
                                              "'steps' list")])
    _check_params(path, data.get("params"))
    for n, st in enumerate(data["steps"]):
        if not isinstance(st, dict) or not isinstance(st.get("state"), dict):
            raise SpecError([Problem(path, None, f"step {n} of the trace has no 'state' object")])
        if n > 0 and not isinstance(st.get("action"), str):
            raise SpecError([Problem(path, None, f"step {n} of the trace names no action")])
    return data


def _check_params(path: str, params: Any) -> None:
    """A trace's params are ints, blamed on the trace file (`true` would pass for 1)."""
    if params is None:
        return
    if not isinstance(params, dict):
        raise SpecError([Problem(path, None, f"the trace's params must be an object, got {params!r}")])
    for name, value in params.items():
        try:
            check_number(value, f"param {name} of the trace", int)
        except ValueError as exc:
            raise SpecError([Problem(path, None, str(exc))]) from None


def _from_itf(path: str, data: Any) -> Any:
    """An ITF trace (recognised by `states` with `vars`/`#meta`) as a JSON trace; anything else as is."""
    if not is_itf(data):
        return data
    try:
        return itf_to_trace(data)
    except ITFError as exc:
        raise SpecError([Problem(path, None, f"not a valid ITF trace: {exc}")]) from None
