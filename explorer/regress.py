"""Findings as regression tests: replay a counterexample and ask whether it still breaks.

`haltproof check --emit-tests DIR` writes, per violated property, a pytest file that
calls `assert_fixed`. It replays the counterexample's actions and choices against the
spec's current code (the bound code, for a bound spec) with the one replay there is
(`replay.run_steps`), without requiring the recorded states to match, and re-judges the
finding on the run that actually happens, as the engines judge it:

- an invariant false on a state of the run, a step invariant or a variant broken by one
  of its transitions;
- `terminates`: the run still ends in a deadlock (not terminal, every guard false), or
  its lasso still returns to the state where the cycle starts and is a fair run under the
  spec's `fairness:` as it is now (so adding the assumption that excuses the cycle fixes
  it); `terminates_within` also while the run takes more counted transitions than the bound;
- `existence` / `response`: the run still ends with the obligation open, or its lasso
  still comes back with it open on the whole cycle, and is fair as for `terminates`;
- `domains`: a step of the run leaves its domain;
- `well_defined` / `bound_code`: what failed (the finding's `Subject`: the terminal
  predicate, a guard, an action's step, a property, a count or a measure) fails again on
  the run, with the same built-in property;
- `independent`: the two runs' last states (or transitions) still agree on the vars the
  property does not ignore and still differ in what the finding says differs.

The test fails while the finding stands. It passes once the run no longer breaks the
property, or can no longer happen at all (an action no longer enabled, a choice gone).
A run that now stops on another evaluation error or domain violation first fails it too:
the finding cannot be judged there, and the run breaks a built-in property anyway.
"""

from __future__ import annotations

import json
import os
import pprint
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from haltproof.machine.binding import bind_machine, spec_adapter
from haltproof.machine.compiled import CompiledAction, CompiledSpec, Machine, State
from haltproof.machine.spec import PropertyDecl, Spec, load_spec, shown_path
from haltproof.machine.text import counted, trace_table
from haltproof.properties.kinds import Subject, Trace

from .results import RunResult
from .replay import Failed, Replayed, combo_index, evaluate, run_steps, same_for

BUILTINS = ("domains", "well_defined", "bound_code", "code_matches_spec")
Verdict = tuple[bool, str]      # (the test must fail, why)


def _replay(m: Machine, trace: dict[str, Any]) -> Replayed | str:
    """The recorded run replayed on m; a text saying why it cannot be replayed at all."""
    steps = trace["steps"]
    init = steps[0]["state"]
    if sorted(init) != sorted(m.var_names):
        return (f"the trace's vars {sorted(init)} are not the spec's {sorted(m.var_names)}: write the "
                "regression tests again with --emit-tests")
    return run_steps(m, init, [(st["action"], st.get("choices") or {}) for st in steps[1:]])


def still_violated(m: Machine, name: str, trace: dict[str, Any], other: dict[str, Any] | None = None,
                   subject: Subject | dict[str, Any] | None = None) -> Verdict:
    """Whether replaying `trace` on `m` still breaks property `name` (the finding about
    `subject`, see the module's docstring), and why."""
    if isinstance(subject, dict):
        subject = Subject.from_json(subject)
    run = _replay(m, trace)
    if isinstance(run, str):
        return True, run
    stopped = _stopped(name, subject, run)
    if stopped is not None:
        return stopped
    if name in BUILTINS:
        judge: Callable[..., Verdict] = _builtin
    else:
        prop = m.spec.property(name)
        if prop is None or name in m.inactive:      # removing the property is no fix by itself
            return True, (f"the spec no longer checks a property {name} with these params: delete this test "
                          "if that is what you meant")
        judge = _JUDGES.get(prop.kind, _undefined)
    try:
        return judge(m, name, run, trace, other, subject)
    except Failed as exc:
        return True, _other_error(str(exc))


def _stopped(name: str, subject: Subject | None, run: Replayed) -> Verdict | None:
    """The verdict when the replay did not get through: None when it did."""
    failure = run.failure
    if failure is not None:
        same = failure.builtin == name and (subject is None or failure.subject == subject)
        return True, _still(str(failure)) if same else _other_error(str(failure))
    if run.outside:
        return True, _still(run.problem or "") if name == "domains" else _other_error(run.problem or "")
    if run.problem:
        return False, f"the counterexample no longer happens: {run.problem}"
    return None


def _declared(m: Machine, name: str) -> PropertyDecl:
    """The declaration of a property the machine judges (every judged property has one)."""
    decl = m.spec.property(name)
    if decl is None:
        raise KeyError(f"property {name} is not declared in {m.spec.name}")
    return decl


def _still(why: str) -> str:
    return f"the recorded counterexample still breaks it: {why}"


def _other_error(why: str) -> str:
    return f"the replayed run now stops on another error, so the finding cannot be judged: {why}"


def _undefined(m: Machine, name: str, run: Replayed, *_: Any) -> Verdict:
    return True, f"replaying is not defined for property {name} ({_declared(m, name).kind})"


# ------------------------------------------------------------------ per kind

def _transitions(run: Replayed) -> list[tuple[int, State, State, Any, int, str | None]]:
    """(step, state before, state after, action, combo index, rule) per transition of the run."""
    return [(k, run.states[k - 1], run.states[k], act, ci, rule)
            for k, (act, ci, rule) in enumerate(run.moves, start=1)]


def _invariant(m: Machine, name: str, run: Replayed, *_: Any) -> Verdict:
    f, subject = m.invariants[name], Subject("property", name)
    for k, s in enumerate(run.states):
        if not evaluate(m, k, subject, f, s):
            return True, _still(f"false in the state after step {k}")
    return False, "true on every state of the run"


def _step_invariant(m: Machine, name: str, run: Replayed, *_: Any) -> Verdict:
    f, subject = m.step_invariants[name], Subject("property", name)
    for k, s, t, act, ci, rule in _transitions(run):
        if not evaluate(m, k, subject, f, s, t, act.name, rule, *act.step_args[ci]):
            return True, _still(f"false for step {k}")
    return False, "true for every step of the run"


def _variant(m: Machine, name: str, run: Replayed, *_: Any) -> Verdict:
    (f, bound), subject = m.variants[name], Subject("property", name)
    for k, s, t, *_rest in _transitions(run):
        before, after = evaluate(m, k, subject, f, s), evaluate(m, k, subject, f, t)
        if after <= before or max(before, after) > bound:
            return True, _still(f"step {k} takes the variant from {before} to {after} (bound {bound})")
    return False, "the variant increases within its bound on every step of the run"


def _maximum(m: Machine, name: str, run: Replayed, *_: Any) -> Verdict:
    """A `maximum` with `at_most` is broken by any state of the run whose value exceeds it."""
    (f, at_most), subject = m.maxima[name], Subject("property", name)
    if at_most is None:         # never violated: nothing to replay (no test is written for it)
        return False, "a maximum without at_most is never violated"
    for k, s in enumerate(run.states):
        value = evaluate(m, k, subject, f, s)
        if value > at_most:
            return True, _still(f"the state after step {k} has {value}, more than at_most {at_most}")
    return False, f"every state of the run stays within at_most {at_most}"


def _terminates(m: Machine, name: str, run: Replayed, trace: dict[str, Any], *_: Any) -> Verdict:
    loop = trace.get("loop_start")
    if trace.get("kind") == "lasso" and loop is not None:
        if not same_for(m, None, run.states[-1], run.states[loop]):     # the machine's cycle, no monitor's
            return False, "the cycle is gone: the run no longer returns to the state where it started"
        unfair = _unfair(m, run, loop)
        if unfair is not None:
            return False, unfair
        return True, _still(f"the run still returns to the state of step {loop}: it can go on forever{_fair(m)}")
    if _deadlock(m, run):
        return True, _still("the run still ends in a deadlock")
    if _declared(m, name).kind == "terminates":
        return False, "the run no longer ends in a deadlock"
    count, bound = m.counts.get(name), m.within[name]
    n = sum(1 for k, s, t, act, ci, rule in _transitions(run)
            if count is None or evaluate(m, k, Subject("count", name), count, s, t, act.name, rule,
                                         *act.step_args[ci]))
    taken = f"the run takes {counted(n, 'counted transition' if count is not None else 'transition')} (bound {bound})"
    if n > bound:
        return True, _still(taken)
    return False, taken


def _liveness(m: Machine, name: str, run: Replayed, trace: dict[str, Any], *_: Any) -> Verdict:
    """A liveness pattern's bad run (properties/liveness.py): a lasso whose cycle still comes
    back with the obligation open in every state of it, or a run that still ends (terminal or
    deadlock) with it open. A lasso counts only while it is fair under the spec's fairness now."""
    f, subject = m.obligations[name], Subject("property", name)
    loop = trace.get("loop_start")
    if trace.get("kind") == "lasso" and loop is not None:
        if not same_for(m, name, run.states[-1], run.states[loop]):     # its own monitors only
            return False, "the cycle is gone: the run no longer returns to the state where it started"
        for k in range(loop, len(run.states)):
            if not evaluate(m, k, subject, f, run.states[k]):
                return False, f"the obligation is no longer open after step {k}, on the cycle"
        unfair = _unfair(m, run, loop)
        if unfair is not None:
            return False, unfair
        return True, _still(f"the run still returns to the state of step {loop} with the obligation open{_fair(m)}")
    if not (run.terminal or _deadlock(m, run)):
        return False, "the run no longer ends where it did"
    if evaluate(m, len(run.states) - 1, subject, f, run.states[-1]):
        return True, _still("the run still ends with the obligation open")
    return False, "the run now ends with the obligation met"


def _fair(m: Machine) -> str:
    """What a lasso that still counts is fair under, as the engines' messages say it."""
    texts = [f.text for f in m.spec.fairness]
    return f", fair under: {', '.join(texts)}" if texts else ""


def _unfair(m: Machine, run: Replayed, loop: int) -> str | None:
    """Why the replayed lasso's cycle (the states from step `loop` on, the transitions after
    it) is not a fair run under the spec's fairness now, or None when it is fair under every
    assumption (docs/reference/spec-language.md, "fairness"): weak, the cycle takes the action (with its
    `when`) or passes a state where it is not enabled; strong, it takes it or it is enabled in
    none of the cycle's states."""
    cycle = run.states[loop:-1]
    for f, when in zip(m.spec.fairness, m.fair_when, strict=True):
        act = next(a for a in m.actions if a.name == f.action)
        n = len(run.moves) + 1                          # steps named in errors: past the run's end
        taken = any(a is act and (when is None or evaluate(m, step, Subject("fairness", f.text), when, s, t,
                                                            a.name, rule, *a.step_args[ci]))
                    for step, s, t, a, ci, rule in _transitions(run)[loop:])
        if taken:
            continue
        enabled = [_enabled(m, act, when, s, n, f.text) for s in cycle]
        if not (all(enabled) if f.strength == "weak" else any(enabled)):
            continue                                    # honoured without taking it
        why = ("it is enabled in every state of the cycle" if f.strength == "weak"
               else "it is enabled in a state of the cycle")
        return (f"the cycle is no fair run now: it never takes {f.text}, and {why}; the spec's fairness "
                "excuses it")
    return None


def _enabled(m: Machine, act: CompiledAction, when: Callable[..., bool] | None, s: State, n: int,
             text: str) -> bool:
    """Whether some transition of `act` from `s` (inside every domain, as the engines' edges
    are) satisfies the assumption's `when`."""
    if act.guard is not None and not evaluate(m, n, Subject("guard", act.name), act.guard, s):
        return False
    for ci in range(len(act.combos)):
        doing = Subject("action", act.name, dict(act.labels[ci]))
        if act.admit is not None and evaluate(m, n, doing, act.admit, s, *act.combos[ci]) is not None:
            continue
        t, rule = evaluate(m, n, doing, act.step, s, *act.combos[ci])
        if m.domain_error(t) >= 0:
            continue
        if when is None or evaluate(m, n, Subject("fairness", text), when, s, t, act.name, rule,
                                    *act.step_args[ci]):
            return True
    return False


def _deadlock(m: Machine, run: Replayed) -> bool:
    """Whether the run ends in a deadlock as the engines call one: a state that is not
    terminal, where every guard is false (an error in one raises Failed: no deadlock then)."""
    if run.terminal:
        return False
    last, n = run.states[-1], len(run.moves) + 1
    return not any(act.guard is None or evaluate(m, n, Subject("guard", act.name), act.guard, last)
                   for act in m.actions)


def _independent(m: Machine, name: str, run: Replayed, trace: dict[str, Any],
                 other: dict[str, Any] | None, subject: Subject | None) -> Verdict:
    second = _replay(m, other) if other is not None else "the finding has no second run"
    if isinstance(second, str):
        return True, second
    stopped = _stopped(name, None, second)
    if stopped is not None:
        broken, why = stopped
        return broken, why.replace("the counterexample", "the second run of the pair")
    keep = [i for i in range(len(m.var_names)) if i not in _declared(m, name).vars]
    subjects = [subject] if subject is not None else _pair_subjects(m, run, second)
    whys = []
    for sub in subjects:
        differs, why = _differs(m, keep, sub, run, second)
        if differs:
            return True, _still(why)
        whys.append(why)
    return False, "; ".join(whys)


def _pair_subjects(m: Machine, a: Replayed, b: Replayed) -> list[Subject]:
    """What may differ between two runs whose finding does not say (tests written before
    findings had a subject): everything the engines compare at their ends."""
    out = [Subject("terminal")] + [Subject("guard", act.name) for act in m.actions]
    if a.moves and b.moves and a.moves[-1][:2] == b.moves[-1][:2]:
        act, ci, _ = a.moves[-1]
        out.append(Subject("action", act.name, dict(act.labels[ci])))
    return out


def _differs(m: Machine, keep: list[int], subject: Subject, a: Replayed, b: Replayed) -> Verdict:
    """Whether two replayed runs still differ in `subject` at their ends, from states equal
    on the `keep` vars (the source states, for a transition)."""
    def same(s: State, t: State) -> bool:
        return all(s[i] == t[i] for i in keep)
    if subject.check == "action":
        if not (a.moves and b.moves and _is(a.moves[-1], subject) and _is(b.moves[-1], subject)):
            return False, f"the runs no longer both end with {subject.name} with these choices"
        if not same(a.states[-2], b.states[-2]):
            return False, "the two transitions now start from states that differ in the vars it does not ignore"
        outcome = [(tuple(r.states[-1][i] for i in keep), r.moves[-1][2]) for r in (a, b)]
        return (True, "the same transition up to the ignored vars still has different outcomes") \
            if outcome[0] != outcome[1] else (False, "the two transitions now agree")
    if not same(a.states[-1], b.states[-1]):
        return False, "the two runs now end in states that differ in the vars it does not ignore"
    if subject.check == "terminal":
        return (True, "the two states still differ in being terminal") if a.terminal != b.terminal \
            else (False, "the two states now agree in being terminal")
    act = next((x for x in m.actions if x.name == subject.name), None)
    if act is None or a.terminal or b.terminal:
        return False, f"the two states no longer both offer action {subject.name}"
    enabled = [act.guard is None or bool(evaluate(m, len(r.moves) + 1, subject, act.guard, r.states[-1]))
               for r in (a, b)]
    return (True, f"action {act.name} is still enabled in one state and not in the other") \
        if enabled[0] != enabled[1] else (False, f"action {act.name} is now enabled alike in both states")


def _is(move: tuple[Any, int | None, str | None], subject: Subject) -> bool:
    act, ci, _ = move
    return act.name == subject.name and combo_index(act, subject.choices or {}) == ci


_JUDGES: dict[str, Callable[..., Verdict]] = {
    "invariant": _invariant, "step_invariant": _step_invariant, "variant": _variant,
    "terminates": _terminates, "terminates_within": _terminates, "independent": _independent,
    "liveness": _liveness,
    "maximum": _maximum}


# ------------------------------------------------------------------ built-in properties

def _builtin(m: Machine, name: str, run: Replayed, trace: dict[str, Any], other: Any,
             subject: Subject | None) -> Verdict:
    """The run got through every step inside its domains (else `_stopped` judged it): a
    `domains` finding is fixed; an evaluation error is judged where the finding says."""
    if name == "domains":
        return False, "every step of the run now stays inside its domains"
    subjects = [subject] if subject is not None else _every_subject(m)
    whys = []
    for sub in subjects:
        try:
            why = _evaluates(m, run, sub)
        except Failed as exc:
            if exc.builtin != name or exc.subject != sub:
                raise
            return True, _still(str(exc))
        whys.append(why)
    return False, "; ".join(whys)


def _every_subject(m: Machine) -> list[Subject]:
    """Everything that may fail to evaluate at a run's end, for a finding that does not say
    what failed (tests written before findings had a subject)."""
    out = [Subject("terminal")] + [Subject("guard", a.name) for a in m.actions if a.guard is not None]
    out += [Subject("action", a.name, dict(labels)) for a in m.actions for labels in a.labels]
    out += [Subject("property", n) for table in (m.invariants, m.reachables, m.step_invariants, m.variants)
            for n in table]
    out += [Subject("count", n) for n in m.counts] + [Subject("measure", n) for n in m.measures]
    return out


def _evaluates(m: Machine, run: Replayed, subject: Subject) -> str:
    """Evaluate `subject` where the engines do for a finding whose trace is this run: the
    terminal predicate, a guard and an action's step at its last state (an action of the
    finding's trace end there: the failing step is not part of it), a state property on
    every state, a step property, a count or a measure on every transition. Raises Failed
    where it fails; says why it no longer does otherwise."""
    last, after = run.states[-1], len(run.moves) + 1     # the step that would follow the run
    check, name = subject.check, subject.name
    if check == "terminal":
        return "the terminal predicate now evaluates on every state of the run"
    if check in ("guard", "action"):
        act = next((a for a in m.actions if a.name == name), None)
        if act is None:
            return f"the spec has no action {name} now"
        if run.terminal:
            return "the run now ends in a terminal state"
        if act.guard is not None and not evaluate(m, after, Subject("guard", name), act.guard, last):
            return (f"the guard of action {name} now evaluates at the end of the run" if check == "guard"
                    else f"action {name} is no longer enabled at the end of the run")
        if check == "guard":
            return f"the guard of action {name} now evaluates at the end of the run"
        ci = combo_index(act, subject.choices or {})
        if ci is None:
            return f"action {name} no longer has these choices"
        why = evaluate(m, after, subject, act.admit, last, *act.combos[ci]) if act.admit is not None else None
        if why is not None:
            return f"action {name} with these choices is no longer possible at the end of the run: {why}"
        evaluate(m, after, subject, act.step, last, *act.combos[ci])
        return f"action {name} with these choices now evaluates at the end of the run"
    if check == "property" and (name in m.invariants or name in m.reachables):
        fn = m.invariants.get(name) or m.reachables[name]
        for k, s in enumerate(run.states):
            evaluate(m, k, subject, fn, s)
        return f"property {name} now evaluates on every state of the run"
    on_step = _step_function(m, subject)
    if on_step is None:
        return f"the spec no longer evaluates {check} {name}"
    for k, s, t, act, ci, rule in _transitions(run):
        on_step(k, s, t, act, ci, rule)
    return f"{check} {name} now evaluates on every transition of the run"


def _step_function(m: Machine, subject: Subject) -> Callable[..., object] | None:
    """A step property, count or measure as a call on one transition (step k, s -> t)."""
    name = subject.name
    if subject.check == "property" and name in m.variants:
        f = m.variants[name][0]
        return lambda k, s, t, *_: (evaluate(m, k, subject, f, s), evaluate(m, k, subject, f, t))
    table = {"property": m.step_invariants, "count": m.counts, "measure": m.measures}.get(subject.check, {})
    if name not in table:
        return None
    g = table[name]
    return lambda k, s, t, act, ci, rule: evaluate(m, k, subject, g, s, t, act.name, rule, *act.step_args[ci])


# ------------------------------------------------------------------ the tests

def machine_for(spec: Spec, params: dict[str, int], model: bool = False) -> Machine:
    m = CompiledSpec(spec).instantiate({p.name: params[p.name] for p in spec.params})
    if spec.bind and not model:
        m = bind_machine(m, spec_adapter(spec), spec.bind)
    return m


def assert_fixed(spec_path: str | Path, name: str, trace: dict[str, Any],
                 other: dict[str, Any] | None = None, model: bool = False,
                 subject: dict[str, Any] | None = None) -> None:
    """Fail (AssertionError with the replayed run) while the counterexample still breaks `name`."""
    spec = load_spec(spec_path)
    missing = [p.name for p in spec.params if p.name not in trace["params"]]
    if missing:
        raise AssertionError(f"{name} cannot be judged: the trace records no value of param {missing[0]}: write "
                             "the regression tests again with --emit-tests")
    m = machine_for(spec, trace["params"], model)
    broken, why = still_violated(m, name, trace, other, subject)
    if broken:
        replay = _replay(m, trace)
        table = ("\n".join("  " + row for row in trace_table(Trace(replay.steps).to_json()))
                 if isinstance(replay, Replayed) else "")
        raise AssertionError(f"{name} is not fixed: {why}\n{table}")


def _slug(text: str) -> str:
    return re.sub(r"[^0-9A-Za-z_]+", "_", text).strip("_") or "x"


def emit_tests(runs: list[RunResult], directory: str | Path) -> list[Path]:
    """Write one pytest file per unexpectedly violated property that has a trace."""
    out_dir = Path(directory)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for r in runs:
        for p in r.properties:
            if p.status != "violated" or p.expected is True or p.trace is None:
                continue
            params = "_".join(f"{k}{v}" for k, v in r.params.items())
            name = _slug(f"test_{r.machine}_{p.name}_{params}")
            spec_rel = os.path.relpath(Path(r.spec_path).resolve(), out_dir.resolve())
            trace = json.dumps(p.trace.to_json(r.params))
            other = json.dumps(p.other_trace.to_json(r.params)) if p.other_trace is not None else "None"
            subject = json.dumps(p.subject.to_json()) if p.subject is not None else "None"
            params_text = " ".join(f"{k}={v}" for k, v in r.params.items()) or "(no params)"
            text = (f'"""Regression test written by `haltproof check --emit-tests`.\n\n'
                    f"Spec {shown_path(r.spec_path)}, property {p.name}, {params_text}:\n"
                    f"{p.message}\n\n"
                    "It replays the counterexample against the current code and fails while the\n"
                    "finding still stands on it; it passes once that run no longer breaks the property.\n"
                    '"""\n\n'
                    "from pathlib import Path\n\n"
                    "from haltproof.explorer.regress import assert_fixed\n\n"
                    f"SPEC = (Path(__file__).parent / {spec_rel!r}).resolve()\n"
                    f"TRACE = {_pyjson(trace)}\n"
                    f"OTHER = {_pyjson(other)}\n"
                    f"SUBJECT = {_pyjson(subject)}   # what failed or differs where the trace ends\n\n\n"
                    f"def {name}():\n"
                    f"    assert_fixed(SPEC, {p.name!r}, TRACE, OTHER, subject=SUBJECT)\n")
            path = out_dir / f"{name}.py"
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


def _pyjson(text: str) -> str:
    """JSON text as a readable Python literal (true/false/null spelled the Python way)."""
    if text == "None":
        return text
    return pprint.pformat(json.loads(text), width=100, sort_dicts=False)
