"""Running one concrete run step by step: a spec's scenarios and saved traces.

Replay never searches: each step names its action and choices, and the run either
follows the machine exactly (every action enabled, every value in its domain, every
recorded state matching) or stops at the first step that does not.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haltproof.machine.compiled import EVAL_ERRORS, CompiledAction, Machine, spec_where
from haltproof.machine.errors import Problem, SpecError
from haltproof.machine import strict_json
from haltproof.machine.inputs import TooLarge
from haltproof.machine.spec import Scenario, Spec, symlink_problem
from haltproof.machine.text import value_text

from haltproof.properties.kinds import Step, Subject

from . import messages
from .itf import ITFError, is_itf, itf_to_trace


class Failed(Exception):
    """An evaluation that failed on a replay (a spec expression, or the bound code): the step
    it belongs to, what failed, and the built-in property it breaks (`well_defined`, or
    `bound_code` for the bound code). Its text is the replay's message (see `evaluate`)."""

    def __init__(self, message: str, step: int, subject: Subject, builtin: str):
        super().__init__(message)
        self.step, self.subject, self.builtin = step, subject, builtin


@dataclass
class Replayed:
    """What happened on a replay: the steps that ran, and the first problem if any."""

    steps: list[Step]
    lines: list[list[tuple[str, str]]] = field(default_factory=list)   # per step, the replay lines
    problem: str | None = None
    terminal: bool = False
    # the run as the machine sees it: its states (the last one may lie outside a domain) and
    # per transition the action, the index of its choice combination and the rule that fired
    states: list[tuple[Any, ...]] = field(default_factory=list)
    moves: list[tuple[CompiledAction, int, str | None]] = field(default_factory=list)
    failure: Failed | None = None       # the evaluation that stopped the run, if one did
    outside: bool = False               # the run stopped because its last step left a domain

    @property
    def ok(self) -> bool:
        return self.problem is None


def evaluate(m: Machine, n: int, subject: Subject, fn: Callable[..., Any], *args: Any) -> Any:
    """fn(*args); an evaluation error raises `Failed`, named as the engines name it: step n,
    the built-in property it breaks (`well_defined`, or `bound_code` for the bound code),
    what failed, and for a spec expression its file and line."""
    try:
        return fn(*args)
    except EVAL_ERRORS as exc:
        builtin = getattr(exc, "builtin", "well_defined")
        raise Failed(f"step {n}: {builtin}: {_what(subject)}{spec_where(m, exc)} fails: {exc}",
                     n, subject, builtin) from None


def _what(subject: Subject) -> str:
    """What failed, as a replay's message names it."""
    return {"terminal": "the terminal predicate", "guard": f"the guard of action {subject.name}",
            "action": f"action {subject.name} with {_choices_text(subject.choices or {})}",
            "replay": f"replay line {subject.name}", "property": f"property {subject.name}",
            "count": f"count of {subject.name}", "measure": f"measure {subject.name}",
            "fairness": f"the fairness assumption {subject.name}"}[subject.check]


_TERMINAL = Subject("terminal")


def run_steps(m: Machine, init: dict[str, Any], steps: list[tuple[str, dict[str, Any]]],
              expected_states: list[dict[str, Any] | None] | None = None,
              expected_rules: dict[int, str | None] | None = None) -> Replayed:
    """Run `steps` (action name, choice labels) from `init`; compare with expected states if
    given, and with the rule each step recorded (`expected_rules`: step number -> the rule,
    None for none; a step that records no rule is left out).

    The run stops at the first step that does not follow the machine, or whose evaluation
    fails (see `evaluate`): `problem` names it, and `steps` holds the steps that ran."""
    state = m.full_state(init)          # the property monitors start in their initial values
    if state not in m.inits:
        return Replayed([Step(dict(init))], problem=_not_initial(m, init))
    out = Replayed([Step(m.state_dict(state))], states=[state])
    try:
        out.terminal = _follow(m, state, steps, expected_states, expected_rules or {}, out)
    except Failed as exc:
        out.problem = str(exc)
        out.failure = exc
    return out


def _follow(m: Machine, state: tuple[Any, ...], steps: list[tuple[str, dict[str, Any]]],
            expected_states: list[dict[str, Any] | None] | None, expected_rules: dict[int, str | None],
            out: Replayed) -> bool:
    """The steps of run_steps from `state`, appended to `out`; whether the run ends terminal.
    A step that does not follow the machine sets `out.problem`; one that fails raises Failed."""
    terminal: bool = evaluate(m, 0, _TERMINAL, m.is_terminal, state)
    for n, (aname, choices) in enumerate(steps, start=1):
        act = next((a for a in m.actions if a.name == aname), None)
        if act is None:
            out.problem = f"step {n}: no action named {aname!r}"
            return False
        if terminal:
            out.problem = f"step {n}: the run is already in a terminal state; {aname} cannot happen"
            return False
        if act.guard is not None and not evaluate(m, n, Subject("guard", aname), act.guard, state):
            out.problem = f"step {n}: action {aname} is not enabled in this state"
            return False
        ci = combo_index(act, choices)
        if ci is None:
            out.problem = f"step {n}: {_choices_text(choices)} is not a choice of action {aname} ({_offers(act)})"
            return False
        doing = Subject("action", aname, dict(choices))
        why = evaluate(m, n, doing, act.admit, state, *act.combos[ci]) if act.admit is not None else None
        if why is not None:
            out.problem = f"step {n}: {_choices_text(choices)} is not a choice of action {aname} here: {why}"
            return False
        nxt, rule = evaluate(m, n, doing, act.step, state, *act.combos[ci])
        bad = m.domain_error(nxt)
        out.steps.append(Step(m.state_dict(nxt), aname, dict(choices), rule))
        out.states.append(nxt)
        out.moves.append((act, ci, rule))
        if bad >= 0:
            out.problem = f"step {n}: {messages.outside_domain(m, bad, nxt[bad])}"
            out.outside = True
            return False
        out.lines.append([(label, _display(evaluate(m, n, Subject("replay", label), fn, state, nxt, aname, rule,
                                                    *act.step_args[ci]), bare, act, ci))
                          for label, fn, bare in m.replay_lines])
        expected = expected_states[n] if expected_states and n < len(expected_states) else None
        if expected is not None and expected != m.state_dict(nxt):
            out.problem = f"step {n}: the state differs from the recorded one: " + _diff(m, expected, nxt)
            return False
        if n in expected_rules and expected_rules[n] != rule:
            out.problem = (f"step {n}: the rule differs from the recorded one: recorded "
                           f"{_rule_text(expected_rules[n])}, replay gives {_rule_text(rule)}")
            return False
        state = nxt
        terminal = evaluate(m, n, _TERMINAL, m.is_terminal, state)
    return terminal


def _rule_text(rule: str | None) -> str:
    return "no rule" if rule is None else rule


def recorded_rules(steps: list[dict[str, Any]]) -> dict[int, str | None]:
    """The rule each step of a loaded trace recorded (step number -> rule, None for none);
    a step without a `rule` key (a trace written by hand, an ITF trace from another tool)
    records none to compare."""
    return {n: st["rule"] for n, st in enumerate(steps) if n > 0 and "rule" in st}


def same_for(m: Machine, prop: str | None, s: tuple[Any, ...], t: tuple[Any, ...]) -> bool:
    """Whether states s and t are one state for property `prop` (None: for no property's
    monitors): the same user vars and the same own monitors. A lasso closes there, as
    properties/liveness.py's OwnView searches it: another property's monitors do not count."""
    keep = [k for k, v in enumerate(m.spec.vars) if v.monitor is None or v.monitor == prop]
    return all(s[k] == t[k] for k in keep)


def _not_initial(m: Machine, init: dict[str, Any]) -> str:
    shown = " ".join(f"{k}={value_text(v)}" for k, v in init.items())
    why = "; ".join(f"{v} = {value_text(init[v])} is {o}" for i, v in enumerate(m.var_names)
                    if (o := _outside(m, i, init[v])))
    return (f"step 0: the run starts in {shown}, which is not an initial state of the machine"
            + (f" ({why})" if why else ""))


def _diff(m: Machine, recorded: dict[str, Any], state: tuple[Any, ...]) -> str:
    """Each var the recorded state gives another value, saying so when that value is outside its domain."""
    parts = []
    for i, (k, v) in enumerate(m.state_dict(state).items()):
        if recorded.get(k) != v:
            outside = _outside(m, i, recorded.get(k))
            parts.append(f"{k} recorded {value_text(recorded.get(k))}{f' ({outside})' if outside else ''}, "
                         f"replay gives {value_text(v)}")
    return ", ".join(parts)


def _outside(m: Machine, i: int, value: Any) -> str | None:
    """'outside its domain ...' when `value` (of the var's type) is not in var i's domain."""
    var = m.spec.vars[i]
    bounds = m.bounds[i]
    if var.kind == "int" and bounds is not None:
        inside = type(value) is int and bounds[0] <= value <= bounds[1]
    elif var.kind == "enum":
        inside = value in var.values
    else:
        return None
    if inside:      # within the bounds; a Python model's domain may still have gaps ({0, 2, 4})
        probe = list(m.inits[0])
        probe[i] = value
        inside = m.domain_error(tuple(probe)) != i
    return None if inside else f"outside its domain {m.domain_text(i)}"


def combo_index(act: Any, choices: dict[str, Any]) -> int | None:
    """The combination `choices` names, compared with their kinds: true is not 1."""
    for ci, labels in enumerate(act.labels):
        if labels.keys() == choices.keys() and all(_kind(labels[k]) is _kind(choices[k]) and labels[k] == choices[k]
                                                   for k in labels):
            return ci
    return None


def _kind(value: Any) -> type:
    """bool, int or str (True == 1, and a label may be a str subclass from the YAML reader)."""
    for kind in (bool, int, str):
        if isinstance(value, kind):
            return kind
    return type(value)


def _offers(act: Any) -> str:
    """What an action chooses, for a message: each choice with its labels."""
    if not act.choice_names:
        return "it chooses nothing"
    parts = []
    for name in act.choice_names:
        values = list(dict.fromkeys(value_text(lab[name]) for lab in act.labels if name in lab))
        more = f", ... ({len(values)} values)" if len(values) > 8 else ""
        parts.append(f"{name} in {{{', '.join(values[:8])}{more}}}")
    return "it chooses " + ", ".join(parts)


def _display(value: Any, bare_choice: bool, act: Any, ci: int) -> str:
    """A replay line's value; a bare record choice shows the whole record as JSON."""
    if bare_choice:
        for cname, item in zip(act.choice_names, act.combos[ci]):
            if cname in act.labels[ci] and item[0] == value and cname in act.record_fields:
                return json.dumps({"name": value, **dict(zip(act.record_fields[cname], item[1:]))})
    return value_text(value)


def _choices_text(choices: dict[str, Any]) -> str:
    return ", ".join(f"{k}={value_text(v)}" for k, v in choices.items()) or "no choices"


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
            f"{k} = {value_text(final.get(k))} (expected {value_text(v)})" for k, v in wrong.items())
    return out


def _init_options(m: Machine) -> list[list[Any]]:
    return [sorted({s[i] for s in m.inits}, key=str) for i in range(len(m.var_names))]


# A whole JSON report of the bundled specs (107 runs, a trace for every violation) is 3 MB;
# parsing JSON takes about ten times its size in memory, so 64 MiB refuses only abuse.
MAX_TRACE_BYTES = 64 * 1024 * 1024     # docs/reference/cli.md, "haltproof replay"


def load_trace(path: str, property_name: str | None = None) -> dict[str, Any]:
    """Read a trace as the JSON report prints it: a trace object, a property, or a whole report;
    any of these traces may be in the Informal Trace Format (ITF, see explorer/itf.py)."""
    try:
        data = strict_json.read(path, MAX_TRACE_BYTES, "a trace or a report")
    except TooLarge as exc:
        raise SpecError([Problem(path, None, str(exc))]) from None
    except OSError as exc:
        why = symlink_problem(Path(path), exc) or ("no such file" if isinstance(exc, FileNotFoundError)
                                                   else f"not a JSON trace: {exc}")
        raise SpecError([Problem(path, None, why)]) from None
    except (UnicodeDecodeError, ValueError) as exc:     # ValueError: JSON, or a key given twice
        line = getattr(exc, "lineno", None)
        raise SpecError([Problem(path, line, f"not a JSON trace: {exc}")]) from None
    # The trace has a non-empty `steps` list of objects, each with a `state` object, an `action`
    # string from the second on, and `choices` an object (or absent); anything else is a
    # SpecError naming the file and the step (exit 2). `trace_states` checks the values.
    if isinstance(data, dict) and "runs" in data:
        data = _report_trace(path, data, property_name)
    elif isinstance(data, dict) and "trace" in data and isinstance(data["trace"], dict):
        data = data["trace"]
    data = _from_itf(path, data)
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list) or not data["steps"]:
        raise _bad(path, "not a trace: expected an object with a non-empty 'steps' list")
    for n, st in enumerate(data["steps"]):
        if not isinstance(st, dict) or not isinstance(st.get("state"), dict):
            raise _bad(path, f"step {n} of the trace has no 'state' object")
        if n > 0 and not isinstance(st.get("action"), str):
            raise _bad(path, f"step {n} of the trace names no action")
        if n > 0 and st.get("rule") is not None and not isinstance(st["rule"], str):
            raise _bad(path, f"step {n} of the trace: 'rule' must be the name of a decide rule (a string) or "
                             f"null, not {_json_type(st['rule'])}")
        if st.get("choices") is not None and not isinstance(st["choices"], dict):
            raise _bad(path, f"step {n} of the trace: 'choices' must be an object (choice name -> value), "
                             f"not {_json_type(st['choices'])}")
    if data.get("params") is not None and not isinstance(data["params"], dict):
        raise _bad(path, f"the trace's 'params' must be an object (param name -> value), not "
                         f"{_json_type(data['params'])}")
    return data


def _report_trace(path: str, report: dict[str, Any], property_name: str | None) -> Any:
    """The one trace of a whole report (of `property_name` if given), with its run's params."""
    runs = report["runs"]
    if not isinstance(runs, list) or not all(isinstance(run, dict) for run in runs):
        raise _bad(path, "not a haltproof report: 'runs' must be a list of run objects")
    found = []
    for r, run in enumerate(runs):
        props = run.get("properties", [])
        if not isinstance(props, list) or not all(isinstance(p, dict) for p in props):
            raise _bad(path, f"not a haltproof report: 'properties' of run {r} must be a list of objects")
        for p in props:
            if p.get("trace") and (property_name is None or p.get("name") == property_name):
                t = _from_itf(path, p["trace"])
                if not isinstance(t, dict):
                    raise _bad(path, f"run {r}, property {p.get('name')!r}: 'trace' must be an object, "
                                     f"not {_json_type(t)}")
                found.append(dict(t, params=t.get("params", run.get("params"))))
    if len(found) != 1:
        what = f"property {property_name!r}" if property_name else "any property"
        raise _bad(path, f"the report holds {len(found)} traces for {what}; name one with --property")
    return found[0]


def trace_states(m: Machine, data: dict[str, Any], path: str) -> None:
    """Every recorded state (of a trace `load_trace` read) sets exactly the spec's vars, each to
    a value of its type, and every choice value is a number, a string or true/false; anything
    else is a SpecError naming the file and the step (exit 2). A value of the right type
    outside its domain is left to the replay: the trace is then not a run of the spec (exit 1)."""
    want = sorted(m.var_names)
    for n, st in enumerate(data["steps"]):
        state = st["state"]
        if sorted(state) != want:
            raise _bad(path, f"step {n}: the trace's state has vars {sorted(state)}, the spec has {want}")
        for var in m.spec.vars[:len(m.var_names)]:       # the user's vars: a trace shows no monitor
            value = state[var.name]
            if _kind(value) is not _KINDS[var.kind]:
                raise _bad(path, f"step {n}: var {var.name} is {_json_text(value)} ({_json_type(value)}); "
                                 f"{var.name} is {_KIND_TEXT[var.kind]}")
        for name, value in (st.get("choices") or {}).items():
            if _kind(value) not in (bool, int, str):
                raise _bad(path, f"step {n}: choice {name} is {_json_text(value)} ({_json_type(value)}); "
                                 "a choice is a number, a string or true/false")


def trace_params(spec: Spec, data: dict[str, Any], path: str, pins: dict[str, Any]) -> dict[str, Any]:
    """The params to replay a trace with: the ones it records, overridden by `-p` pins. A
    recorded param the spec does not declare, or a value that is not one of a param's
    declared values, is a SpecError naming the file (exit 2)."""
    declared = {p.name: p for p in spec.params}
    recorded = data.get("params") or {}
    for name, value in recorded.items():
        if name not in declared:
            raise _bad(path, f"the trace records param {name}, which {spec.name} does not declare "
                             f"(it has: {', '.join(declared) or 'none'})")
        if name not in pins and not declared[name].accepts(value):
            raise _bad(path, f"the trace records param {name} = {_json_text(value)}, not a declared "
                             f"value of {name} ({declared[name].allowed_text()})")
    return {**recorded, **pins}


_KINDS = {"int": int, "bool": bool, "enum": str}
_KIND_TEXT = {"int": "an int var", "bool": "a bool var (true/false)", "enum": "an enum var (a string)"}


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):      # an ITF #map may decode to keys JSON cannot hold
        return repr(value)


def _json_type(value: Any) -> str:
    """What a JSON value is, in JSON's words."""
    if value is None:
        return "null"
    kind = _kind(value)
    return {bool: "a boolean", int: "a number", str: "a string", float: "a number", list: "a list",
            dict: "an object"}.get(kind, type(value).__name__)


def _bad(path: str, message: str) -> SpecError:
    return SpecError([Problem(path, None, message)])



def _from_itf(path: str, data: Any) -> Any:
    """An ITF trace (recognised by `states` with `vars`/`#meta`) as a JSON trace; anything else as is."""
    if not is_itf(data):
        return data
    try:
        return itf_to_trace(data)
    except ITFError as exc:
        raise SpecError([Problem(path, None, f"not a valid ITF trace: {exc}")]) from None
