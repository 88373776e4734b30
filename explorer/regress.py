"""Findings as regression tests: replay a counterexample and ask whether it still breaks.

`haltproof check --emit-tests DIR` writes, per violated property, a pytest file that
calls `assert_fixed`. It replays the counterexample's actions and choices against the
spec's current code (the bound code, for a bound spec) without requiring the recorded
states to match, and checks the property on the run that actually happens. The test
fails while the run still breaks the property, and passes once the code no longer
allows it (or the run can no longer happen at all).
"""

from __future__ import annotations

import json
import os
import pprint
import re
from pathlib import Path
from typing import Any

from machine.binding import bind_machine, load_adapter
from machine.compiled import CompiledSpec, EvalError, Machine
from machine.spec import Spec, load_spec
from properties.kinds import Step, Trace

from . import report
from .check import RunResult


class _Replay:
    """A run replayed on a machine: states, and per transition (action, combo index, rule)."""

    def __init__(self, m: Machine, trace: dict[str, Any]):
        self.m = m
        self.states: list[tuple] = []
        self.steps: list[tuple[Any, int, str | None]] = []
        self.problem: str | None = None     # why the replay stopped early, if it did
        self.failed: str | None = None      # the code or an expression failed / left its domain
        init = trace["steps"][0]["state"]
        s = tuple(init.get(v) for v in m.var_names)
        if s not in m.inits:
            self.problem = "its initial state is no longer an initial state"
            return
        self.states.append(s)
        for n, st in enumerate(trace["steps"][1:], start=1):
            act = next((a for a in m.actions if a.name == st["action"]), None)
            choices = st.get("choices") or {}
            if act is None or choices not in act.labels:
                self.problem = f"step {n}: action {st['action']} with these choices no longer exists"
                return
            if m.is_terminal(s) or (act.guard is not None and not act.guard(s)):
                self.problem = f"step {n}: action {act.name} can no longer happen here"
                return
            ci = act.labels.index(choices)
            try:
                t, rule = act.step(s, *act.combos[ci])
            except (EvalError, ZeroDivisionError) as exc:
                self.failed = f"step {n}: {exc}"
                return
            bad = m.domain_error(t)
            self.steps.append((act, ci, rule))
            self.states.append(t)
            if bad >= 0:
                self.failed = f"step {n}: {m.var_names[bad]} = {t[bad]!r} is outside its domain"
                return
            s = t

    def trace(self) -> Trace:
        steps = [Step(self.m.state_dict(self.states[0]))]
        for (act, ci, rule), t in zip(self.steps, self.states[1:]):
            steps.append(Step(self.m.state_dict(t), act.name, dict(act.labels[ci]), rule))
        return Trace(steps)


def still_violated(m: Machine, name: str, trace: dict[str, Any],
                   other: dict[str, Any] | None = None) -> tuple[bool, str]:
    """Whether replaying `trace` on `m` still breaks property `name`, and why."""
    run = _Replay(m, trace)
    prop = m.spec.property(name)
    kind = prop.kind if prop else "builtin"
    if name in ("domains", "well_defined", "bound_code"):
        return (run.failed is not None, run.failed or "every step now evaluates inside its domains")
    if run.problem:
        return False, f"the counterexample no longer happens: {run.problem}"
    if run.failed:
        return False, f"the replay stopped on another error first: {run.failed}"
    args = [(s, t, act, rule) for (act, _, rule), s, t in zip(run.steps, run.states, run.states[1:])]
    if kind == "invariant":
        f = m.invariants[name]
        bad = next((i for i, s in enumerate(run.states) if not f(s)), None)
        return bad is not None, f"false in the state after step {bad}" if bad is not None else "true on every state"
    if kind == "step_invariant":
        f = m.step_invariants[name]
        bad = next((i for i, (s, t, act, rule) in enumerate(args, 1)
                    if not f(s, t, act.name, rule, *act.step_args[run.steps[i - 1][1]])), None)
        return bad is not None, f"false for step {bad}" if bad is not None else "true for every step"
    if kind == "variant":
        f, bound = m.variants[name]
        for i, (s, t, _, _) in enumerate(args, 1):
            if f(t) <= f(s) or max(f(s), f(t)) > bound:
                return True, f"step {i} takes the variant from {f(s)} to {f(t)} (bound {bound})"
        return False, "the variant increases within its bound on every step"
    if kind in ("terminates", "terminates_within"):
        loop = trace.get("loop_start")
        if trace.get("kind") == "lasso" and loop is not None:
            again = run.states[-1] == run.states[loop]
            return again, ("the run still returns to the state of step "
                           f"{loop}: it can go on forever" if again else "the cycle is gone")
        last = run.states[-1]
        if not m.is_terminal(last) and not any(a.guard is None or a.guard(last) for a in m.actions):
            return True, "the run still ends in a deadlock"
        if kind == "terminates":
            return False, "the run no longer ends in a deadlock"
        count = m.counts.get(name)
        n = sum(1 for (act, ci, rule), s, t in zip(run.steps, run.states, run.states[1:])
                if count is None or count(s, t, act.name, rule, *act.step_args[ci]))
        bound = m.within[name]
        return n > bound, f"the run takes {n} counted transitions (bound {bound})"
    if kind == "independent" and other is not None:
        second = _Replay(m, other)
        if second.problem or second.failed or not second.states:
            return False, "the second run of the pair no longer happens"
        keep = [i for i in range(len(m.var_names)) if i not in prop.vars]
        if run.steps and second.steps:
            a = (tuple(run.states[-1][i] for i in keep), run.steps[-1][2])
            b = (tuple(second.states[-1][i] for i in keep), second.steps[-1][2])
            return a != b, "the two transitions still differ" if a != b else "the two transitions now agree"
        s1, s2 = run.states[-1], second.states[-1]
        differs = m.is_terminal(s1) != m.is_terminal(s2) or any(
            (a.guard is None or a.guard(s1)) != (a.guard is None or a.guard(s2)) for a in m.actions)
        return differs, "the two states still differ" if differs else "the two states now agree"
    return False, f"replaying is not defined for property {name} ({kind})"


def machine_for(spec: Spec, params: dict[str, int], model: bool = False) -> Machine:
    m = CompiledSpec(spec).instantiate({p.name: params[p.name] for p in spec.params})
    if spec.bind and not model:
        m = bind_machine(m, load_adapter(spec.bind, spec.path, spec.bind_line), spec.bind)
    return m


def assert_fixed(spec_path: str | Path, name: str, trace: dict[str, Any],
                 other: dict[str, Any] | None = None, model: bool = False) -> None:
    """Fail (AssertionError with the replayed run) while the counterexample still breaks `name`."""
    spec = load_spec(spec_path)
    m = machine_for(spec, trace["params"], model)
    broken, why = still_violated(m, name, trace, other)
    if broken:
        replay = _Replay(m, trace)
        table = "\n".join("  " + row for row in report.trace_table(replay.trace())) if replay.states else ""
        raise AssertionError(f"{name} is still violated by the recorded counterexample: {why}\n{table}")


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
            name = _slug(f"test_{r.spec.name}_{p.name}_{params}")
            spec_rel = os.path.relpath(Path(r.spec.path).resolve(), out_dir.resolve())
            trace = json.dumps(p.trace.to_json(r.params))
            other = json.dumps(p.other_trace.to_json(r.params)) if p.other_trace is not None else "None"
            params_text = " ".join(f"{k}={v}" for k, v in r.params.items()) or "(no params)"
            text = (f'"""Regression test written by `haltproof check --emit-tests`.\n\n'
                    f"Spec {report.shown_path(r.spec.path)}, property {p.name}, {params_text}:\n"
                    f"{p.message}\n\n"
                    "It replays the counterexample against the current code and fails while the\n"
                    'property is still violated on it; it passes once that run no longer breaks it.\n"""\n\n'
                    "from pathlib import Path\n\n"
                    "from explorer.regress import assert_fixed\n\n"
                    f"SPEC = Path(__file__).parent / {spec_rel!r}\n"
                    f"TRACE = {_pyjson(trace)}\n"
                    f"OTHER = {_pyjson(other)}\n\n\n"
                    f"def {name}():\n"
                    f"    assert_fixed(SPEC, {p.name!r}, TRACE, OTHER)\n")
            path = out_dir / f"{name}.py"
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


def _pyjson(text: str) -> str:
    """JSON text as a readable Python literal (true/false/null spelled the Python way)."""
    if text == "None":
        return text
    return pprint.pformat(json.loads(text), width=100, sort_dicts=False)
