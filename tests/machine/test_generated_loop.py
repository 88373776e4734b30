"""The scalar engine's generated loop (machine/sweep.py, `generate_sweep`) against its
plain loop (explorer/engine.py, `_plain_loop`): the same exploration, field for field —
states, parents, depths, edges, what each edge and first visit was, terminal and error
flags, findings with their messages, coverage counts, forwardness — on every repo spec,
on specs whose expressions fail in every place they can, and on random specs with
decide tables, choices, step invariants, variants and reachable properties, whole and
cut short. Also the planted bugs of machine/astgen.py (which builds the generated loop) and of
machine/sweep.py that mutation testing found (issue 18)."""

from __future__ import annotations

import copy
import random
from pathlib import Path
import textwrap

import pytest
import yaml

from haltproof.explorer import engine as E
from haltproof.explorer.options import Options
from haltproof.explorer.check import check_machine, check_spec, prepare
from haltproof.explorer.engine import Exploration, _runs_generated, explore
from haltproof.machine.compiled import CompiledSpec, Machine
from haltproof.machine.spec import load_spec, parse_spec
from haltproof.machine.usercode import OutOfTime

from conftest import ROOT, repo_specs
from engine_ways import each_way, machine_of, prop

SPECS = sorted((ROOT / "specs").rglob("*.yaml")) + [ROOT / "docs" / "examples" / "retry_loop.yaml"]


def _plain(m: Machine) -> Machine:
    out = copy.copy(m)
    out.sweep = None
    return out


def _fields(ex: Exploration) -> dict:
    n, ne = len(ex.states), ex.transitions
    return {
        "states": list(ex.states), "index": dict(ex.index), "parent": list(ex.parent), "depth": list(ex.depth),
        "edge_start": list(ex.edge_start), "e_dst": list(ex.e_dst),
        "edges": [(ex.e_action[e], ex.e_combo[e], ex.e_rule[e]) for e in range(ne)],
        "via": [(ex.via_action[j], ex.via_combo[j], ex.via_rule[j]) for j in range(n)],
        "terminal": bytes(ex.terminal), "errored": bytes(ex.errored), "expanded": ex.expanded,
        "terminal_unknown": ex.terminal_unknown,
        "transitions": ne, "complete": ex.complete, "stopped_by": ex.stopped_by,
        "findings": [(k, f.state, f.message, f.step, f.subject) for k, f in ex.findings.items()],
        "reached": ex.reached, "rule_counts": list(ex.rule_counts.items()),
        "label_counts": list(ex.label_counts.items()), "forward": ex.forward, "fired": ex.fired_by_action,
        "max_depth": ex.max_depth, "terminal_states": ex.terminal_states}


def _same_both_ways(m: Machine, **bounds) -> None:
    assert _runs_generated(m)
    generated, plain = _fields(explore(m, **bounds)), _fields(explore(_plain(m), **bounds))
    for key in generated:
        assert generated[key] == plain[key], key
    opts = Options(max_states=bounds.get("max_states"),
                   properties=sorted(bounds["properties"]) if bounds.get("properties") else None)
    a, b = check_machine(m, opts), check_machine(_plain(m), opts)
    assert [(p.name, p.status, p.message, p.trace and p.trace.to_json(), p.subject) for p in a.properties] == \
           [(p.name, p.status, p.message, p.trace and p.trace.to_json(), p.subject) for p in b.properties]
    assert (a.coverage, a.notices, a.stats["states"], a.stats["max_depth"]) == \
           (b.coverage, b.notices, b.stats["states"], b.stats["max_depth"])
    assert {k: (v["value"], v["message"]) for k, v in a.bounds.items()} == \
           {k: (v["value"], v["message"]) for k, v in b.bounds.items()}


@pytest.mark.parametrize("path", repo_specs(SPECS), ids=lambda p: str(p.relative_to(ROOT)))
def test_generated_and_plain_loops_agree_on_every_repo_spec(path: Path):
    spec = load_spec(path)
    names = [p.name for p in spec.properties]
    machines = prepare(spec, Options(model_only=True))
    for m in machines:
        _same_both_ways(m)
    _same_both_ways(machines[-1], max_states=37)
    _same_both_ways(machines[-1], properties=set(names[::2]))


@pytest.mark.verdict
def test_bound_code_never_runs_the_generated_loop():
    (m,) = prepare(load_spec(ROOT / "specs" / "budget_runner.yaml"), Options(pins={"K": 1, "R": 0}))
    assert m.bound_to and not _runs_generated(m)


def _failing(where: str) -> str:
    """A small spec whose expression at `where` fails on some reachable state (x reaches 2)."""
    zero = "0 * (4 // (2 - x))"              # 0, but a division by zero where x == 2
    parts = {"guard": "true", "terminal": "st != go", "step": "min(x + d, 3)", "goes": "true", "then": "0",
             "inv": "x <= 3", "reach": "x == 9", "stepinv": "after.x >= before.x", "variant": "x + y"}
    parts[where] = {"guard": f"{zero} == 0", "terminal": f"{zero} == 0 and st != go",
                    "step": f"min(x + d + {zero}, 3)", "goes": "x < 2", "then": zero, "inv": f"{zero} == 0",
                    "reach": f"{zero} == 1", "stepinv": "4 // (2 - after.x) >= 0", "variant": f"{zero} + x + y",
                    "domain": "x + d",
                    # each fails (or is reached) before it fails to evaluate: it is still evaluated
                    "inv_late": "x == 0 or 4 // (2 - x) > 100", "reach_late": "x == 1 or 4 // (2 - x) > 100",
                    "stepinv_late": "before.x == after.x or 4 // (2 - after.x) > 100",
                    "variant_late": f"y - x + {zero}"}[where]
    for late in ("inv", "reach", "stepinv", "variant"):
        if where == late + "_late":
            parts[late] = parts.pop(where)
    if where == "domain":
        parts["step"] = parts.pop("domain")
    return f"""
machine: failing_{where}
vars:
  x: {{type: int, min: 0, max: 3, init: 0}}
  y: {{type: int, min: 0, max: 4, init: 0}}
  st: {{type: enum, values: [go, done], init: go}}
actions:
  bump:
    when: "{parts['guard']}"
    choose: {{d: [1, 2]}}
    do:
      - set: {{x: "{parts['step']}"}}
      - decide: st
        rules:
          - {{name: ends, when: x == 3, then: done}}
          - {{name: goes, when: "{parts['goes']}", then: go}}
  tick:
    when: y < 4
    do:
      - set: {{y: "{parts['then']} + y + 1"}}
terminal: "{parts['terminal']}"
properties:
  small: {{always: "{parts['inv']}"}}
  seen: {{reachable: "{parts['reach']}"}}
  picks: {{step: "{parts['stepinv']}"}}
  rises: {{variant: "{parts['variant']}", bound: 40}}
  ends: {{terminates: true}}
"""


FAILURES = {"guard": ("well_defined", "guard of bump (failing.yaml:9): integer division or modulo by zero"),
            "terminal": ("well_defined", "terminal (failing.yaml:21): integer division or modulo by zero"),
            "step": ("well_defined", "action bump with d=1 (failing.yaml:12): integer division or modulo by zero"),
            "then": ("well_defined", "action tick with no choices (failing.yaml:20): integer division or modulo "
                                     "by zero"),
            "goes": ("well_defined", "action bump with d=2 (failing.yaml:13): no rule of the decide table"),
            "domain": ("domains", "x = 4 is outside its domain 0..3"),
            "inv": ("well_defined", "property small (failing.yaml:23): integer division or modulo by zero"),
            "reach": ("well_defined", "property seen (failing.yaml:24): integer division or modulo by zero"),
            "stepinv": ("well_defined", "property picks (failing.yaml:25): integer division or modulo by zero"),
            "variant": ("well_defined", "property rises (failing.yaml:26): integer division or modulo by zero"),
            "inv_late": ("well_defined", "property small (failing.yaml:23): integer division or modulo by zero"),
            "reach_late": ("well_defined", "property seen (failing.yaml:24): integer division or modulo by zero"),
            "stepinv_late": ("well_defined", "property picks (failing.yaml:25): integer division or modulo by zero"),
            "variant_late": ("well_defined", "property rises (failing.yaml:26): integer division or modulo by zero")}
LATE = {"inv_late": "small", "reach_late": "seen", "stepinv_late": "picks", "variant_late": "rises"}


@pytest.mark.verdict
@pytest.mark.parametrize("where", FAILURES)
def test_generated_and_plain_loops_agree_where_an_expression_fails(where: str):
    m = CompiledSpec(parse_spec(_failing(where), "failing.yaml")).instantiate({})
    name, message = FAILURES[where]
    ex = explore(m)
    assert ex.findings[name].message.startswith(message)
    if where in LATE:                      # it failed, or was reached, first
        assert LATE[where] in (ex.reached if where == "reach_late" else ex.findings)
    for bounds in ({}, {"max_states": 3}, {"properties": {"picks", "rises"}}, {"properties": {"small"}}):
        _same_both_ways(m, **bounds)


def _random_spec(r: random.Random) -> str:
    """A small spec using every feature the generated loop inlines; some expressions may
    divide by zero, leave a domain or match no rule."""
    ints = [(n, r.randint(1, 3)) for n in ["x", "y", "z"][:r.randint(1, 3)]]
    names = [n for n, _ in ints]
    values = ["red", "green", "blue"]

    def atom() -> str:
        a, b = r.choice(names), r.choice(names)
        return r.choice([f"{a} {r.choice(['<', '>=', '==', '!='])} {r.randint(0, 3)}", f"{a} <= {b}",
                         f"e {r.choice(['==', '!='])} {r.choice(values)}", f"2 // {a} == {r.randint(0, 2)}",
                         f"{a} % ({b} + 1) == 0", "flag"])

    def pred() -> str:
        out = atom()
        for _ in range(r.randint(0, 2)):
            out = f"{out} {r.choice(['and', 'or'])} {atom()}"
        return out

    def value(t: str, hi: int, choice: bool) -> str:
        o = r.choice(names)
        forms = [f"min({t} + 1, {hi})", f"max({t} - 1, 0)", f"{t} + 1", f"{t} - 1", f"{o}", f"{hi} // {o}",
                 f"{r.randint(0, hi)}"]
        return r.choice(forms + ([f"min({t} + d, {hi})", f"{t} + d"] if choice else []))

    vars_ = {n: {"type": "int", "min": 0, "max": hi, "init": r.choice([0, {"one_of": [0, hi]}])} for n, hi in ints}
    vars_["e"] = {"type": "enum", "values": values, "init": "red"}
    vars_["flag"] = {"type": "bool", "init": False}
    actions, rules = {}, []
    for k in range(r.randint(1, 3)):
        body: dict = {"when": pred()} if r.random() < 0.7 else {}
        choice = r.random() < 0.5
        if choice:
            body["choose"] = {"d": r.choice([[0, 1], [0, 1, 2]])}
        targets = r.sample(names + ["e", "flag"], r.randint(1, 2))
        stage = {t: (r.choice(values + ["e"]) if t == "e" else r.choice(["not flag", atom()]) if t == "flag"
                     else value(t, dict(ints)[t], choice)) for t in targets}
        stages: list = [{"set": stage}]
        if r.random() < 0.6:
            var = r.choice(names + ["e"])
            table = []
            for q in range(r.randint(1, 3)):
                rules.append(f"r{k}{q}")
                then = r.choice(values) if var == "e" else value(var, dict(ints)[var], choice)
                table.append({"name": f"r{k}{q}", "when": pred(), "then": then})
            if r.random() < 0.7:
                del table[-1]["when"]
            stages.insert(r.randint(0, 1), {"decide": var, "rules": table})
        body["do"] = stages
        actions[f"a{k}"] = body
    doc: dict = {"machine": "random", "vars": vars_, "actions": actions}
    doc["terminal"] = r.choice([pred(), {"label": "e", "values": values[1:]}])
    props: dict = {f"inv{q}": {"always": pred()} for q in range(r.randint(0, 2))}
    props.update({f"reach{q}": {"reachable": pred()} for q in range(r.randint(0, 2))})
    n = r.choice(names)
    steps = [f"after.{n} >= before.{n}", f"action != a0 or after.{n} != before.{n}", f"d != 1 or after.{n} > 0",
             f"after.{n} // before.{n} >= 0"] + ([f"rule != {rules[0]} or after.{n} < 2"] if rules else [])
    props.update({f"step{q}": {"step": r.choice(steps)} for q in range(r.randint(0, 2))})
    props.update({f"var{q}": {"variant": r.choice([n, f"4 // {n}"]), "bound": r.randint(2, 6)}
                  for q in range(r.randint(0, 1))})
    props["term"] = {"terminates": True}
    doc["properties"] = props
    return yaml.safe_dump(doc, sort_keys=False)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.slow
def test_generated_and_plain_loops_agree_on_random_specs(seed: int):
    r = random.Random(seed)
    checked = 0
    while checked < 40:
        try:
            spec = parse_spec(_random_spec(r), "random.yaml")
        except Exception:        # a draw the spec checker rejects (a type error): draw again
            continue
        m = CompiledSpec(spec).instantiate({})
        names = [p.name for p in spec.properties]
        _same_both_ways(m)
        _same_both_ways(m, max_states=r.randint(1, 20))
        _same_both_ways(m, properties=set(r.sample(names, max(1, len(names) // 2))))
        checked += 1


def test_the_engine_gives_the_generated_loop_every_member_of_its_sweep_target():
    """The loop reads only what machine/sweep.py's SweepTarget declares, and the engine's
    _Sweep has each of those members, of the declared kind (method or value)."""
    import ast as pyast
    import inspect

    from haltproof.explorer.engine import _Sweep
    from haltproof.machine import sweep as S

    declared = {n for n in vars(S.SweepTarget) if not n.startswith("_")} | set(S.SweepTarget.__annotations__)
    m = CompiledSpec(parse_spec(_failing("inv"), "failing.yaml")).instantiate({})
    target = _Sweep(m, None, None, None, None, None)
    methods = {n for n, v in vars(S.SweepTarget).items() if inspect.isfunction(v) and not n.startswith("_")}
    assert methods == {"live", "tick", "missing", "bound", "interrupted", "terminal_error", "guard_error",
                       "step_error", "domain_fail", "check_state", "check_step"}
    for name in declared:
        assert hasattr(target, name), name
        assert callable(getattr(target, name)) == (name in methods), name
    module, _ = S.generate_sweep(m.spec)
    read = {n.attr for n in pyast.walk(module)
            if isinstance(n, pyast.Attribute) and isinstance(n.value, pyast.Name) and n.value.id == "_x"}
    assert read <= declared and {"states", "check_state", "check_step", "live"} <= read


def test_the_loop_is_built_as_an_ast_and_names_the_failing_spec_line():
    """Every statement of the generated code has a line of its own; a set stage's right
    sides each map to their own spec line (so a failing one is named by its line), in the
    BFS loop and in the step functions the plain loop calls."""
    spec = parse_spec("""
machine: lines
vars:
  x: {type: int, min: 0, max: 3, init: 0}
  y: {type: int, min: 0, max: 3, init: 0}
actions:
  go:
    when: x < 3
    do:
      - set:
          x: "x + 1"
          y: "3 // (2 - x)"
terminal: x == 3
""", "lines.yaml")
    from haltproof.machine.sweep import generate_sweep
    module, origin = generate_sweep(spec)
    assert sorted(set(origin.values())) == [8, 10, 11, 12, 13]   # guard, the set, its two right sides, terminal
    m = CompiledSpec(spec).instantiate({})
    for machine in (m, _plain(m)):           # the loop's AST, and the step functions' module
        assert explore(machine).findings["well_defined"].message == (
            "action go with no choices (lines.yaml:12): integer division or modulo by zero")


def test_the_compilers_import_no_engine_and_not_each_other():
    """machine/ is the lowest layer: the loop's generator names no explorer module, and
    compiled.py and vectorize.py share `folded` through machine/fold.py, not a cycle."""
    import ast as pyast

    def imports(path: Path) -> set[str]:
        tree = pyast.parse(path.read_text())
        return {n.module or "" for n in pyast.walk(tree) if isinstance(n, pyast.ImportFrom)} | \
               {a.name for n in pyast.walk(tree) if isinstance(n, pyast.Import) for a in n.names}
    import haltproof.machine as machine_layer       # by the package, not the checkout's path: the
    folder = Path(machine_layer.__file__).parent      # mutation stage lays it out as src/haltproof/machine
    for name in ("compiled", "sweep", "fold"):
        found = imports(folder / f"{name}.py")
        assert not {i for i in found if "explorer" in i or i.endswith("vectorize")}, name


# ---------------------------------------------------------------- mutants that survived (issue 18)
# Mutants of machine/astgen.py (the AST builders of every generated function and of the
# scalar engine's generated loop) that the rest of the verdict selection let through (issue 18).
# Each test was seen failing with its mutation applied (docs/explanation/mutation-testing.md).
# (These tests were test_astgen_kills.)

COUNTER = """\
machine: counter
vars:
  x: {type: int, min: 0, max: 3, init: 0}
actions:
  inc: {when: x < 3, do: [{set: {x: x + 1}}]}
terminal: x == 3
properties:
  small: {always: x < 3}
"""


@pytest.mark.verdict
@pytest.mark.parametrize("stop, stopped_by, reason", [
    (MemoryError, "max_memory", "stopped at 4 states: out of memory (a bound, not a bug: try --max-memory, "
                                "more memory, or smaller params)"),
    (OutOfTime, "timeout", "stopped at 4 states: --timeout reached"),
])
def test_an_interruption_inside_an_actions_stages_stops_the_run(monkeypatch, stop, stopped_by, reason):
    """The generated loop catches only evaluation errors (`except _ERR`) around an action's
    stages; MemoryError or the deadline passing in what they call (here the slow path of the
    invariant, which fails on the new state x=3) stops the run, never a well_defined finding."""
    checked = E._Sweep.check_state

    def check_state(self: E._Sweep, j: int, t: tuple) -> None:
        if t == (3,):
            raise stop()
        checked(self, j, t)
    monkeypatch.setattr(E._Sweep, "check_state", check_state)
    r = check_machine(machine_of(COUNTER), Options(engine="scalar"))
    assert (r.result, r.stopped_by, r.stop_reason) == ("incomplete", stopped_by, reason)
    statuses = {p.name: p.status for p in r.properties}
    assert (statuses["well_defined"], statuses["small"]) == ("unknown", "unknown")


@pytest.mark.verdict
def test_an_error_in_the_second_value_of_a_set_names_that_value_s_line_not_the_set_s():
    """Fresh sample (seed 19): a marked expression gets a generated line of its own, so the
    division by zero in `y: 1 // x` is told at line 11, not at the `set:` of line 9."""
    text = textwrap.dedent("""\
        machine: m
        vars:
          x: {type: int, min: 0, max: 2, init: 0}
          y: {type: int, min: 0, max: 2, init: 0}
        actions:
          go:
            when: x < 1
            do:
              - set:
                  x: x + 1
                  y: 1 // x
        terminal: x == 1
        """)
    [r] = check_spec(parse_spec(text, "t.yaml"), Options(engine="scalar"))
    [p] = [p for p in r.properties if p.name == "well_defined"]
    assert (p.status, p.message) == (
        "violated", "action go with no choices (t.yaml:11): integer division or modulo by zero")


# ---------------------------------------------------------------- mutants that survived (issue 18)
# Mutants of machine/sweep.py (the scalar engine's generated BFS loop) that the rest of the
# verdict selection let through (issue 18): the spec line an error in the loop is reported at,
# and a choice a step property reads that its action does not make. Each test was seen failing
# with its mutation applied (docs/explanation/mutation-testing.md).
# (These tests were test_sweep_kills.)

RULE_WHEN = """\
machine: m
vars:
  x: {type: int, min: 0, max: 3, init: 0}
  d: {type: enum, values: [a, b], init: a}
actions:
  inc:
    when: x < 3
    do:
      - set: {x: x + 1}
      - decide: d
        rules:
          - name: first
            when: 4 // (x - 2) > 0
            then: b
          - name: second
            then: a
terminal: x == 3
"""


@pytest.mark.verdict
def test_an_error_in_a_rules_when_names_the_when_line():
    """The generated loop's `if` of a rule's `when` is mapped to the when's own spec line
    (the plain loop's is too; each_way has them agree)."""
    for way, r in each_way(RULE_WHEN, vector=False).items():
        wd = prop(r, "well_defined")
        assert wd.status == "violated", way
        assert wd.message == "action inc with no choices (kills.yaml:13): integer division or modulo by zero", way
        assert [s.state["x"] for s in wd.trace.steps] == [0, 1], way


CHOICE = """\
machine: m
vars:
  x: {type: int, min: 0, max: 3, init: 0}
  done: {type: bool, init: false}
actions:
  inc:
    when: x < 2 and not done
    choose: {by: [1, 2]}
    do: [{set: {x: x + by}}]
  stop: {when: x >= 2 and not done, do: [{set: {done: true}}]}
terminal: done
properties:
  guarded:
    step: action != inc or after.x == before.x + by
"""

UNGUARDED = """\
  unguarded:
    step: by > 0 or after.done
"""


@pytest.mark.verdict
def test_a_step_property_reading_a_choice_its_action_does_not_make_is_a_finding():
    """In stop's transitions the loop reads `by` as the sentinel of a choice stop does not make:
    the guarded property never reaches it, the unguarded one does (well_defined)."""
    for way, r in each_way(CHOICE, vector=False).items():
        assert (r.result, prop(r, "guarded").status, r.stats["transitions"]) == ("proved", "holds", 6), way
    for way, r in each_way(CHOICE + UNGUARDED, vector=False).items():
        wd = prop(r, "well_defined")
        assert wd.status == "violated", way
        assert wd.message == ("property unguarded (kills.yaml:16): the expression reads choice by, which "
                              "action stop does not make (guard it with action == ...)"), way
        assert [(s.action, s.state["x"]) for s in wd.trace.steps] == [(None, 0), ("inc", 2), ("stop", 2)], way
