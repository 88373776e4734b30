"""Differential tests: both engines against an independent reference explorer.

tests/reference_explorer.py explores a spec from its YAML with Python's `eval` and exact
ints, written from docs/reference/spec-language.md and sharing no code with haltproof.
tests/random_specs.py draws random valid specs over the whole language (params, range
choices, records, decide tables of several rules, step invariants over before/after,
products near the int32/int64 limits, terminals reading vars an `independent_of`
ignores, measures, ...). For each spec and each param combination, the scalar and the
vector engine must report what the reference finds: the states (in BFS order), the
transitions, terminal states and depth; each property's verdict and the length of its
counterexample (or witness), every trace being a real run of the reference machine that
ends where the property fails; the longest runs and every measure's worst case; the
built-in `domains` and `well_defined`; the decide rule and terminal label counts.

Properties about runs (patterns in every scope, past-time operators, `fairness:`) are drawn
by `specs(runs=True)` in a test of their own (HALTPROOF_DIFF_RUN_EXAMPLES, default 75:
compiling monitors is costly). The reference judges them over runs, never with haltproof's
monitors: a safety pattern's or a past-time property's shortest counterexample, and for a
liveness check (`existence`, `response`, and `terminates` under fairness) whether a bad maximal
run exists; the engines' trace must then be one (a real run ending with the obligation open,
as long as the shortest such, or a lasso going round with it open that is fair). Their
monitors are part of the engines' states, so for such specs only the machine's own states are
compared, not the counts.

Seeded (`derandomize=True`): a failure reproduces on every run. The number of random
specs is HALTPROOF_DIFF_EXAMPLES (default 600); raise it for a long local run.

Known defects being fixed elsewhere (KNOWN_DEFECTS): the reference says what is right
and names the defect a run meets; the main test sets those runs aside, and one test per
defect draws specs that meet it, expected to fail (`xfail(strict=False)`) while the
defect is listed. Once its fix is merged, delete its name from KNOWN_DEFECTS: the main
test then keeps those specs, and the defect's own test must pass.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_machine, prepare
from haltproof.machine.errors import SpecError
from haltproof.machine.spec import load_spec, parse_spec
from haltproof.machine.vectorize import NotVectorizable, vectorize

from conftest import ROOT, repo_specs
from random_specs import RandomSpec, specs
from reference_explorer import (LIVENESS, SAFETY, Past, Pattern, RefRun, RefSpecError, cycle_is_fair, has_past,
                                is_run, pattern_of, reference_runs)

EXAMPLES = int(os.environ.get("HALTPROOF_DIFF_EXAMPLES", "600"))

# Each name: a defect of haltproof being fixed by another change (reference_explorer.py
# says what is right). Delete a name once its fix is merged.
KNOWN_DEFECTS: frozenset[str] = frozenset()

ENGINES = ("scalar", "vector")


# ---------------------------------------------------------------- comparing one run

def _engine_runs(text: str, engine: str, picked: list[int]) -> list:
    """The engine's run per picked param combination, or None where the vector engine cannot run."""
    spec = parse_spec(text, "random.yaml")
    machines = prepare(spec, Options(engine=engine, model_only=True))
    out = []
    for m in [machines[k] for k in picked]:
        if engine == "vector":
            try:
                vectorize(m)
            except NotVectorizable:
                out.append(None)
                continue
        out.append(check_machine(m, Options(engine=engine, model_only=True)))
    return out


def _trace_steps(trace) -> list[dict]:
    return trace.to_json()["steps"]


def _steps_weight(ref: RefRun, steps: list[dict], expr, taken: list[dict]) -> int:
    """A measure (or `count:`) added up along a trace, by the reference's evaluation."""
    m = ref.machine
    names = m.names
    total = 0
    for k, tr in enumerate(taken, start=1):
        s = tuple(steps[k - 1]["state"][n] for n in names)
        t = tuple(steps[k]["state"][n] for n in names)
        total += int(m.eval(expr, m.step_env(s, t, tr["action"], tr["rule"], tr["combo"])))
    return total


def compare(ref: RefRun, run, text: str) -> None:
    """Everything the run reports against the reference, with the spec in every message."""
    where = f"params {ref.params}\n{text}"
    m = ref.machine
    assert run.params == ref.params, where
    if monitored(m):
        # the engines explore the machine with their monitors: compare the machine's own states
        if run._exploration is not None:
            got = {tuple(run._exploration.states[i])[:len(m.names)] for i in range(len(run._exploration.states))}
            assert got == set(ref.states), f"states differ (the machine's vars)\n{where}"
    else:
        stats = run.stats
        got = (stats["states"], stats["transitions"], stats["terminal_states"], stats["max_depth"])
        want = (len(ref.states), ref.transitions, ref.terminal_states, ref.max_depth)
        assert got == want, f"(states, transitions, terminal states, depth) {got}, reference {want}\n{where}"
        if run._exploration is not None:
            got = [tuple(run._exploration.states[i]) for i in range(len(run._exploration.states))]
            assert got == ref.states, f"states differ (in BFS order)\n{where}"
        assert run.coverage["rules"] == ref.rules, where
        if ref.labels:
            assert run.coverage["terminals"] == ref.labels, where

    # bound_code and code_matches_spec (a bound spec's code) are not about the stages that --model explores
    results = {p.name: p for p in run.properties if p.name not in ("bound_code", "code_matches_spec")}
    assert set(results) == set(ref.properties), where
    spec_props = dict(m.spec.properties)
    for name, want in ref.properties.items():
        got = results[name]
        if want.kind in LIVENESS and want.status == "unknown" and got.status == "violated":
            pass        # an exploration cut short by an error: any bad run it shows is checked below
        else:
            assert got.status == want.status, f"{name}: {got.status} ({got.message}), reference {want.status}\n{where}"
        if got.status == "violated":
            _check_counterexample(ref, name, want, got, spec_props.get(name, {}), where)
        elif want.kind == "reachable" and got.status == "holds":
            assert len(got.witness) == want.length, f"{name}: witness not shortest\n{where}"
            steps = _trace_steps(got.witness)
            is_run(m, steps)
            assert _past_values(m, spec_props[name]["reachable"], _states(m, steps))[-1], where

    why = any(ref.properties[b].status == "violated" for b in ("domains", "well_defined"))
    for name, value in ref.bounds.items():
        b = run.bounds[name]
        assert b["value"] == value, f"bound {name}: {b['value']}, reference {value}\n{where}"
        if value is not None:
            assert b["exact"] is (not why), where
            steps = _trace_steps(b["witness"])
            taken = is_run(m, steps)
            if name == "transitions":
                assert len(taken) == value, where
            else:
                expr = dict(m.spec.measures)[name]
                total = _steps_weight(ref, steps, expr.get("count", expr.get("sum")), taken)
                assert total == value, f"bound {name}: the witness adds up to {total}, not {value}\n{where}"
    violated = any(p.status == "violated" for p in ref.properties.values())
    assert run.result == ("violated" if violated else "incomplete" if why else "proved"), where


def _check_counterexample(ref: RefRun, name: str, want, got, decl: dict, where: str) -> None:
    """A violation's trace: as long as the reference's shortest, a real run, ending in a failure."""
    m = ref.machine
    trace = got.trace
    if want.kind == "reachable":
        assert trace is None, where         # "unreachable": nothing to show
        return
    assert trace is not None, f"{name}: violated without a trace\n{where}"
    steps = _trace_steps(trace)
    if want.lengths is not None:
        # well_defined shows the first error BFS meets: which of those met while expanding one
        # level comes first depends on the action order, and some show their step, some not
        assert len(trace) in want.lengths, f"{name}: trace of {len(trace)} transitions, the first " \
                                           f"errors BFS meets take {sorted(want.lengths)}\n{where}"
    elif want.length is not None and not (want.trace_kind == "lasso" and monitored(m)):
        assert len(trace) == want.length, f"{name}: trace of {len(trace)} transitions, the shortest " \
                                          f"takes {want.length}\n{where}"
    taken = is_run(m, steps, may_leave_domain=(name == "domains"))
    last = tuple(steps[-1]["state"][n] for n in m.names)
    if name == "domains":
        assert not m.in_domain(last), where
    elif want.kind == "invariant":
        assert not _past_values(m, decl["always"], _states(m, steps))[-1], where
    elif want.kind in SAFETY:
        assert Pattern(m, name, decl).broken(_history(m, name, decl, _states(m, steps))[-1]), \
            f"{name}: the trace does not break the pattern\n{where}"
    elif want.kind in LIVENESS or (want.kind == "terminates" and fairness(m)) \
            or (want.kind in ("terminates", "terminates_within") and want.trace_kind == "lasso" and monitored(m)):
        # monitors in the state: a lasso may go round the machine's cycle more than once
        _check_bad_run(m, name, want, decl, trace, steps, taken, where)
    elif want.kind == "step_invariant":
        prev = tuple(steps[-2]["state"][n] for n in m.names)
        tr = taken[-1]
        assert not m.eval(decl["step"], m.step_env(prev, last, tr["action"], tr["rule"], tr["combo"])), where
    elif want.kind in ("terminates", "terminates_within"):
        assert trace.kind == (want.trace_kind or "path"), f"{name}: a {trace.kind}\n{where}"
        if trace.kind == "lasso":
            assert trace.loop_start == want.loop_start, where
            assert steps[-1]["state"] == steps[trace.loop_start]["state"], where
        elif want.longest is not None and "count" in decl:
            assert _steps_weight(ref, steps, decl["count"], taken) == want.longest, where
    elif want.kind == "independent":     # the two places that disagree: both really happen
        assert got.other_trace is not None, where
        is_run(m, _trace_steps(got.other_trace))


def monitored(m) -> bool:
    """Whether the spec has properties the engines judge with monitors in the state."""
    return any(pattern_of(p) or has_past(p.get("always")) or has_past(p.get("reachable"))
               for _, p in m.spec.properties)


def fairness(m) -> list:
    return m.spec.doc.get("fairness") or []


def _states(m, steps: list[dict]) -> list[tuple]:
    return [tuple(st["state"][n] for n in m.names) for st in steps]


def _past_values(m, expr, states: list[tuple]) -> list[bool]:
    """A state expression (maybe with past-time operators) along a run, by the reference.
    Without them, the last state's value only: the expression may fail to evaluate on an
    earlier state of the run (a `well_defined` violation of its own, masked_error)."""
    if not has_past(expr):
        return [bool(m.eval(expr, m.state_env(states[-1])))]
    past, h, out = Past(m, expr), None, []
    for s in states:
        h = past.read(h, s)
        out.append(past.holds(h, s))
    return out


def _history(m, name: str, decl: dict, states: list[tuple]) -> list:
    pat, h, out = Pattern(m, name, decl), None, []
    for s in states:
        h = pat.read(h, s)
        out.append(h)
    return out


def _check_bad_run(m, name: str, want, decl: dict, trace, steps: list[dict], taken: list[dict], where: str) -> None:
    """A liveness counterexample (or, under fairness, a `terminates` one) is a bad maximal run:
    a finite one ends (terminal or deadlock) with the obligation open, as long as the shortest;
    a lasso comes back to its loop state and goes round forever with the obligation open, fairly."""
    states = _states(m, steps)
    is_pattern = want.kind in LIVENESS
    if want.trace_kind is not None:
        assert trace.kind == want.trace_kind, f"{name}: a {trace.kind}, the reference finds a {want.trace_kind}\n{where}"
    if trace.kind == "path":
        assert want.length is None or len(trace) == want.length, f"{name}: not the shortest bad run that ends\n{where}"
        last = states[-1]
        assert m.is_terminal(last) or not any("succ" in tr and m.in_domain(tr["succ"]) for tr in m.transitions(last)), \
            f"{name}: the run does not end where the trace ends\n{where}"
        if is_pattern:
            assert Pattern(m, name, decl).open(_history(m, name, decl, states)[-1]), where
        return
    loop = trace.loop_start
    assert loop is not None and steps[-1]["state"] == steps[loop]["state"], f"{name}: no lasso\n{where}"
    cyc_states, cyc_trs = states[loop:-1], taken[loop:]
    if want.kind != "terminates_within":        # judged over every run, fair or not
        assert cycle_is_fair(m, cyc_states, cyc_trs), f"{name}: the lasso's cycle is not fair\n{where}"
    assert not any(m.is_terminal(s) for s in cyc_states), where
    if is_pattern:                      # round the cycle until the reference's history repeats
        pat, hist = Pattern(m, name, decl), _history(m, name, decl, states[:loop + 1])
        h, seen = hist[-1], []
        while h not in seen:
            seen.append(h)
            for s in cyc_states[1:] + cyc_states[:1]:
                h = pat.read(h, s)
                assert pat.open(h), f"{name}: the obligation is not open all round the cycle\n{where}"


def check_text(text: str, *, skip: frozenset = KNOWN_DEFECTS, engines: tuple[str, ...] = ENGINES,
               most: int | None = None) -> set[str]:
    """Compare the engines with the reference on every param combination of a spec (at
    most `most` of them, evenly spread). Returns the defects in `skip` the spec meets, and
    then compares nothing."""
    try:
        refs = reference_runs(text, most)
    except RefSpecError as exc:
        pytest.fail(f"the reference finds the spec invalid ({exc}):\n{text}")
    hit = set().union(*(r.defects for r in refs)) & skip
    if hit:
        return hit
    picked = [r.combo for r in refs]
    for engine in engines:
        try:
            runs = _engine_runs(text, engine, picked)
        except SpecError as exc:
            pytest.fail(f"{engine}: haltproof rejects a valid spec: {exc}\n{text}")
        for ref, run in zip(refs, runs):
            if run is not None:
                compare(ref, run, f"[{engine} engine] {text}")
    return hit


# ---------------------------------------------------------------- the tests

SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])

# A few shapes no repository spec had (issue 18), always among the examples.
ISSUE_18 = [
    """\
machine: range_choice
params: {K: [1, 2]}
vars:
  x: {type: int, min: 0, max: 4, init: 0}
actions:
  add:
    when: x < 3
    choose: {k: {min: 1, max: K}}
    do: [{set: {x: x + k}}]
terminal: x >= 3
properties:
  small: {always: x <= 3}
  within: {terminates_within: 3}
measures:
  added: {sum: after.x - before.x}
""",
    """\
machine: wide
vars:
  x: {type: int, min: 0, max: 3, init: 0}
actions:
  inc: {when: x < 3, do: [{set: {x: x + 1}}]}
terminal: x == 3
properties:
  negative: {always: x * -1073741824 * 4 > -5}
  wider: {always: x * -4611686018427387904 * 2 <= 0}
""",
    """\
machine: wide_mixed_signs
vars:
  x: {type: int, min: 0, max: 3, init: 0}
  y: {type: int, min: 0, max: 3, init: 3}
actions:
  up: {when: x < 3, do: [{set: {x: x + 1}}]}
  down: {when: y > 0, do: [{set: {y: y - 1}}]}
terminal: x == 3 and y == 0
properties:
  # -3 * 2^30 at x = 3, y = 0: past int32, where the bound of (x - 1) * (y - 3) is -1 * -3 or 2 * -3
  not_too_negative: {always: (x - 1) * (y - 3) * 536870912 > -2000000000}
""",
    """\
machine: ghost_terminal
vars:
  x: {type: int, min: 0, max: 2, init: 0}
  g: {type: int, min: 0, max: 1, init: {one_of: [0, 1]}}
actions:
  inc: {when: x < 2, do: [{set: {x: x + 1}}]}
terminal: x == 2 or g == 1
properties:
  indep: {independent_of: g}
""",
    """\
machine: decide_many
params: {N: {min: 1, max: 2}}
vars:
  n: {type: int, min: 0, max: 3, init: 0}
  s: {type: enum, values: [going, done, failed], init: going}
actions:
  work:
    when: s == going
    choose:
      obs: [{name: good, ok: true, cost: 1}, {name: bad, ok: false, cost: 2}]
    do:
      - set: {n: "min(n + obs.cost, 3)"}
      - decide: s
        rules:
          - {name: finish, when: obs.ok and n >= N, then: done}
          - {name: give_up, when: n >= 3, then: failed}
          - {name: again, then: going}
terminal: {label: s, values: [done, failed]}
properties:
  grows: {step: after.n > before.n or rule == give_up}
  cost_paid: {step: "action != work or after.n - before.n <= obs.cost"}
  bounded: {terminates_within: 3, count: "not obs.ok"}
measures:
  costs: {sum: obs.cost}
  bad_reads: {count: obs == bad}
""",
]


@pytest.mark.parametrize("text", ISSUE_18, ids=["range-choice", "wide-negative", "wide-mixed-signs", "ghost-terminal",
                                              "decide-table"])
def test_the_constructs_of_issue_18(text: str):
    assert check_text(text) == set()


@settings(max_examples=EXAMPLES, **SETTINGS)
@given(specs())
@pytest.mark.slow
def test_engines_agree_with_the_reference(s: RandomSpec):
    assume(not check_text(s.text))


RUN_EXAMPLES = int(os.environ.get("HALTPROOF_DIFF_RUN_EXAMPLES", "75"))


@settings(max_examples=RUN_EXAMPLES, **SETTINGS)
@given(specs(runs=True))
@pytest.mark.slow
def test_engines_agree_with_the_reference_on_properties_about_runs(s: RandomSpec):
    """Patterns in every scope, past-time operators, fairness: the reference judges them over
    runs (docs' tables, history flags and its own fair-cycle search), the engines with monitors."""
    assume(not check_text(s.text))


DEFECTS = ["terminal_error", "masked_error", "decide_const_domain", "measure_overflow", "measure_error"]


@pytest.mark.parametrize("defect", [
    pytest.param(d, marks=pytest.mark.xfail(reason=f"known defect {d}, being fixed", strict=False))
    if d in KNOWN_DEFECTS else d for d in DEFECTS])
@pytest.mark.slow
def test_known_defects(defect: str):
    """Specs drawn to meet one known defect, compared with the reference (which says what
    is right). Expected to fail while the defect is in KNOWN_DEFECTS; not shrunk then."""
    phases = [Phase.generate] if defect in KNOWN_DEFECTS else list(Phase)

    @settings(max_examples=40, phases=phases, **SETTINGS)
    @given(specs(allow=frozenset({defect})))
    def run(s: RandomSpec) -> None:
        assume(not check_text(s.text, skip=KNOWN_DEFECTS - {defect}))
    run()


REPO_SPECS = sorted((ROOT / "specs").rglob("*.yaml")) + [ROOT / "docs" / "examples" / "retry_loop.yaml"]


@pytest.mark.parametrize("path", repo_specs(REPO_SPECS), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_scalar_engine_agrees_with_the_reference_on_repo_specs(path: Path):
    """The repository's own specs (bound ones by their stages, as `--model` explores them),
    four param combinations each; tests/explorer/test_engines.py holds the vector engine to the
    scalar one on all of them."""
    load_spec(path)
    assert check_text(path.read_text(encoding="utf-8"), engines=("scalar",), most=4) == set()


# the docs' worked examples of patterns, past-time operators and fairness (and the fairness
# fixtures with their assumptions), on both engines
RUN_SPECS = [ROOT / "docs" / "examples" / n for n in ("agent_liveness.yaml", "agent_history.yaml")]
FAIR = ROOT / "tests" / "fixtures" / "fairness"
STRONG_OK = "fairness:\n  - strong: call_tool\n    when: outcome == ok\n"
WEAK_OK = STRONG_OK.replace("strong", "weak")


@pytest.mark.parametrize("path", RUN_SPECS, ids=lambda p: p.name)
def test_the_engines_agree_with_the_reference_on_the_worked_examples(path: Path):
    assert check_text(path.read_text(encoding="utf-8")) == set()


@pytest.mark.parametrize("fairness", ["", WEAK_OK, STRONG_OK], ids=["none", "weak", "strong"])
@pytest.mark.parametrize("name", ["retry.yaml", "flaky.yaml"])
def test_the_engines_agree_with_the_reference_on_the_fairness_fixtures(name: str, fairness: str):
    text = (FAIR / name).read_text(encoding="utf-8") + fairness
    [ref] = reference_runs(text)
    assert check_text(text) == set()
    if name == "retry.yaml":        # the docs' verdicts: only strong fairness of success ends every run
        want = "holds" if fairness == STRONG_OK else "violated"
        assert (ref.properties["ends"].status, ref.properties["finishes"].status) == (want, want)


def models():
    """Random machines without params, for tests/explorer/test_engines.py (`instantiate({})`)."""
    return specs(params=False)


def render(s: RandomSpec) -> str:
    return s.text


WD_LEVEL = """\
machine: wd_level
vars:
  x: {type: int, min: 0, max: 3, init: {one_of: [0, 1]}}
actions:
  up: {when: "10 // (x - 1) < 100", do: [{set: {x: "min(x + 2, 3)"}}]}
terminal: x == 3
properties:
  p: {always: "10 // (x - 2) < 100"}
"""


def test_well_defined_shows_a_shortest_error_not_the_first_met():
    """The guard of `up` fails on the initial state x=1 (a counterexample of 0 transitions),
    but expanding x=0 first finds x=2, where `p` fails to evaluate (1 transition): the
    0-transition trace is the one shown."""
    [ref] = reference_runs(WD_LEVEL)
    assert ref.properties["well_defined"].length == 0 and ref.properties["well_defined"].lengths == {0, 1}
    [run] = _engine_runs(WD_LEVEL, "scalar", [0])      # `//`: the vector engine leaves it to this one
    wd = next(p for p in run.properties if p.name == "well_defined")
    assert wd.status == "violated" and len(wd.trace) == 0 and wd.message.startswith("guard of up")
