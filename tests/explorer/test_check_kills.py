"""Single-line bugs in the check runner (explorer/check.py) that the rest of the verdict
selection let through (issue 18, the mutation campaign's explorer/check.py run).

Each test was seen failing with its mutation applied and passes on the real code;
docs/explanation/mutation-testing.md lists the mutations each one kills. Checks run on both engines where
the verdict could differ between them.
"""

from __future__ import annotations

import textwrap
import time

import pytest

from haltproof.explorer import check
from haltproof.explorer.options import Options, check_pins, sweep
from haltproof.explorer.results import RunResult, judge, unsettled
from haltproof.explorer.check import check_machine, check_spec, prepare, prepare_python
from haltproof.machine.compiled import Machine
from haltproof.machine.pymodel import Model, action
from haltproof.machine.errors import SpecError
from haltproof.machine.spec import parse_spec
from haltproof.machine.usercode import OutOfTime
from haltproof.properties.kinds import Subject

pytestmark = pytest.mark.verdict

ENGINES = ("scalar", "vector")


def _machine(text: str) -> Machine:
    [m] = prepare(parse_spec(textwrap.dedent(text), "kills.yaml"), Options(model_only=True))
    return m


def _run(text: str, engine: str, **options) -> RunResult:
    [r] = check_spec(parse_spec(textwrap.dedent(text), "t.yaml"), Options(engine=engine, **options))
    return r


def prop(r: RunResult, name: str):
    [p] = [p for p in r.properties if p.name == name]
    return p


# ---------------------------------------------------------------- patterns
# `_pattern`: a pattern's result names its scope, keeps its line, is unknown on a partial
# exploration, and a holding one says how many states only the monitors tell apart.

PATTERNS = """\
machine: approvals
vars:
  n: {type: int, min: 0, max: 2, init: 0}
  last: {type: enum, values: [none, approve, write, refuse], init: none}
actions:
  act:
    when: n < 2
    choose: {e: [approve, refuse]}
    do:
      - set: {n: n + 1, last: e}
terminal: n == 2
properties:
  fine: {absence: last == write}
  scoped:
    absence: last == write
    scope: {after: last == refuse, until: last == approve}
  broken:
    absence: last == approve
    scope: {after: last == refuse, until: last == write}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pattern_says_its_scope_and_what_the_monitors_added(engine):
    r = _run(PATTERNS, engine)
    added = "the pattern monitors added 2 of the 7 states explored"
    assert (prop(r, "fine").status, prop(r, "fine").message) == (
        "holds", f"no state in its scope satisfies it; {added}")
    assert (prop(r, "scoped").status, prop(r, "scoped").message) == (
        "holds", f"no state in its scope satisfies it (scope after until); {added}")
    assert [prop(r, n).line for n in ("fine", "scoped", "broken")] == [13, 14, 17]
    bad = prop(r, "broken")
    assert bad.status == "violated"
    assert bad.message == "absence (scope after until) violated: the run so far already breaks it"
    assert [s.state["last"] for s in bad.trace.steps] == ["none", "refuse", "approve"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pattern_on_a_partial_exploration_is_unknown(engine):
    r = _run(PATTERNS.replace("last == approve\n", "last == write\n"), engine, max_states=3)
    assert r.result == "incomplete"
    for name in ("fine", "scoped", "broken"):
        p = prop(r, name)
        assert (p.status, p.message) == ("unknown", "not decided: the exploration stopped at --max-states"), name


# ---------------------------------------------------------------- the deadline

class SlowDomains(Model):
    def domains(self, p):
        time.sleep(0.5)
        return {"x": [0, 1]}

    def init(self, p):
        return [{"x": 0}]

    @action(when=lambda s, p: s["x"] == 0)
    def inc(self, s, p):
        return {"x": 1}


def test_loading_a_python_model_runs_under_the_timeout():
    """prepare_python loads the model (the user's code) within --timeout."""
    with pytest.raises(OutOfTime) as stop:
        prepare_python(SlowDomains, Options(timeout=0.05))
    assert stop.value.doing == "loading the model SlowDomains (creating it, its params and domains)"


BIG = """\
machine: big
vars: {x: {type: int, min: 0, max: 5000, init: 0}}
actions:
  inc: {when: x < 5000, do: [{set: {x: x + 1}}]}
terminal: x == 5000
properties:
  small: {always: x < 5000}
"""


def test_a_timeout_says_how_long_it_was():
    r = check_machine(_machine(BIG), Options(engine="scalar", timeout=1e-9))
    assert r.stop_reason is not None and r.stop_reason.startswith("stopped at ")
    assert r.stop_reason.endswith(" states: --timeout 1e-09 s reached")


# ---------------------------------------------------------------- options a run cannot honour
# `prepare`, `prepare_python`, `_check_property_names`: each refusal names the file (and
# the line where there is one) and says why; the options it allows go through.

class Tiny(Model):
    params = {"K": [1, 2]}

    def domains(self, p):
        return {"x": [0, 1]}

    def init(self, p):
        return [{"x": 0}]

    @action(when=lambda s, p: s["x"] == 0)
    def inc(self, s, p):
        return {"x": 1}


PLAIN = """\
machine: plain
params: {K: [1, 2]}
vars: {x: {type: int, min: 0, max: 3, init: 0}}
actions:
  inc: {when: x < K, do: [{set: {x: x + 1}}]}
terminal: x == K
properties:
  small: {always: x < 9}
"""

LOOP = "specs/loop_demo.yaml"          # bound to a state adapter (concretize)
ONE = {"max_steps": 1, "max_retries": 0}
HERE = __file__


def _prepared(what: str, options: Options) -> list[Machine]:
    from conftest import ROOT
    from haltproof.machine.spec import load_spec
    if what == "python":
        return prepare_python(Tiny, options)
    spec = parse_spec(PLAIN, "plain.yaml") if what == "plain" else load_spec(ROOT / LOOP)
    return prepare(spec, options)


@pytest.mark.parametrize("what,options,line,message", [
    ("python", dict(paths=2), None, "--paths 2 compares the paths of live-bound code into a state: "
                                    "a Python model has no bound code"),
    ("python", dict(determinism="full"), None, "--determinism full says how often bound code runs twice: "
                                               "a Python model's actions always run twice"),
    ("python", dict(properties=["nope"]), None, "--property nope: the spec has no such property "
                                                "(it has: bound_code, domains, well_defined)"),
    ("plain", dict(paths=2), None, "--paths 2 compares the paths of live-bound code into a state: "
                                   "the spec is not bound to code (no bind:)"),
    ("loop", dict(paths=2, model_only=True), None, "--paths 2 compares the paths of live-bound code into a "
                                                   "state: --model explores the spec's own stages"),
    ("plain", dict(determinism="off"), None, "--determinism off says how often bound code runs twice: "
                                             "the spec is not bound to code (no bind:)"),
    ("loop", dict(determinism="sample", model_only=True), None,
     "--determinism sample says how often bound code runs twice: --model explores the spec's own stages"),
    ("loop", dict(properties=["bound_code"], model_only=True), None,
     "--property bound_code: --model explores the spec's own stages and runs none of the bound code, "
     "so it cannot check bound_code"),
    ("plain", dict(properties=["small", "nope"]), None, "--property nope: the spec has no such property "
                                                        "(it has: domains, small, well_defined)"),
    ("loop", dict(paths=2, pins=ONE), 22, "--paths 2 compares paths into a state, which needs a live "
                                          "adapter (start); this one rebuilds states (concretize)"),
])
def test_an_option_the_run_cannot_honour_is_refused_with_its_reason(what, options, line, message):
    from conftest import ROOT
    with pytest.raises(SpecError) as refused:
        _prepared(what, Options(**options))
    [problem] = refused.value.problems
    assert problem.message == message
    assert (problem.file, problem.line) == ({"python": HERE, "plain": "plain.yaml", "loop": str(ROOT / LOOP)}[what],
                                            line)
    assert problem.text == ("haltproof.harness.loop_binding:LoopDemoAdapter" if line else None)


@pytest.mark.parametrize("what,options,count", [
    ("python", dict(paths=1, determinism="auto", properties=["domains"]), 2),
    ("plain", dict(paths=1, determinism="auto", properties=["small"]), 2),
    ("loop", dict(determinism="off", pins=ONE), 1),
    ("loop", dict(properties=["bound_code"], pins=ONE), 1),
    ("loop", dict(model_only=True, pins=ONE), 1),
])
def test_the_options_a_run_can_honour_go_through(what, options, count):
    machines = _prepared(what, Options(**options))
    assert len(machines) == count
    assert [m.bound_to for m in machines] == [
        {"python": "test_check_kills:Tiny", "plain": None,
         "loop": None if options.get("model_only") else "haltproof.harness.loop_binding:LoopDemoAdapter"}[what]] * count


# ---------------------------------------------------------------- params swept, pins given

SWEPT = """\
machine: swept
params: {K: [1, 2], W: {min: 0, max: 9999}, F: [true, false]}
vars: {x: {type: int, min: 0, max: 5, init: 0}}
actions:
  inc: {when: x < K, do: [{set: {x: x + 1}}]}
terminal: x == K
"""


def _spec(text: str = SWEPT):
    return parse_spec(text, "t.yaml")


@pytest.mark.parametrize("pins,message", [
    ({}, "t.yaml:2: the params make 40,000 combinations, more than the 10,000 a check sweeps: pin params with "
         "-p NAME=VALUE, e.g. -p W=0 (W has 0..9999, K has 1, 2, F has true, false)"),
    ({"W": range(0, 6000)}, "t.yaml:2: the params make 24,000 combinations, more than the 10,000 a check sweeps: "
                            "pin params with -p NAME=VALUE, e.g. -p K=1 (K has 1, 2, F has true, false)"),
    ({"W": range(0, 20000)}, "t.yaml: -p W=range(0, 20000) gives 20,000 values, more than the 10,000 "
                             "combinations a check sweeps"),
    ({"K": []}, "t.yaml: -p K: no value given (an empty list pins no combination)"),
    ({"K": [1, 1]}, "t.yaml: -p K=1 is given twice"),
    ({"Z": 1}, "t.yaml: -p Z=1: the spec has no param Z (it has: K, W, F)"),
    ({"K": [1, True]}, "t.yaml: -p K must be an integer, got True"),
    ({"F": [1, True]}, "t.yaml: -p F must be true or false, got 1"),
    ({"K": 3}, "t.yaml:2: -p K=3: not a declared value of K (1, 2)"),
    ([1], "t.yaml: the params to pin must be a mapping of param names to values, got list"),
])
def test_params_a_check_cannot_sweep_are_refused(pins, message):
    with pytest.raises(SpecError) as refused:
        sweep(_spec(), pins)
    assert str(refused.value) == message


def test_the_params_sweep_every_combination_up_to_the_limit():
    assert len(sweep(_spec(), {"W": range(0, 2500)})) == 10_000          # exactly the limit
    assert len(sweep(_spec(), {"W": range(0, 2500), "F": True})) == 5_000
    assert sweep(_spec(), {"W": (7, 3), "F": True, "K": 2}) == [{"K": 2, "W": 7, "F": True},
                                                                 {"K": 2, "W": 3, "F": True}]
    assert check_pins(_spec(), {"F": [True, False], "K": (1,)}) == {"F": [True, False], "K": [1]}


@pytest.mark.parametrize("options,message", [
    (dict(max_states=0), "max_states must be positive, got 0"),
    (dict(max_states=True), "max_states must be a positive integer, got True"),
    (dict(timeout=0), "timeout must be positive, got 0"),
    (dict(max_memory="12Q"), "max_memory must be a size: bytes or a number with K, M, G or T, e.g. 512M or 4G, "
                             "got '12Q'"),
    (dict(max_memory=0), "max_memory must be positive, got 0"),
    (dict(properties="small"), "properties must be a list of property names, got 'small'"),
    (dict(properties=["small", 1]), "properties must be a list of property names, got ['small', 1]"),
    (dict(model_only=1), "model must be True or False, got 1"),
    (dict(paths=0), "paths must be positive, got 0"),
    (dict(engine="fast"), "engine must be one of auto, scalar, vector, got 'fast'"),
    (dict(determinism="some"), "determinism must be one of auto, full, sample, off, got 'some'"),
])
def test_options_no_run_could_honour_are_refused(options, message):
    with pytest.raises(ValueError) as refused:
        Options(**options)
    assert str(refused.value) == message


def test_options_are_kept_as_given():
    o = Options(max_states=5, timeout=2, max_memory="1M", properties=["a"], model_only=True, paths=3,
                engine="vector", determinism="off")
    assert (o.max_states, o.timeout, o.memory_bytes, o.properties, o.model_only, o.paths, o.engine,
            o.determinism) == (5, 2.0, 1048576, ["a"], True, 3, "vector", "off")
    assert Options(max_memory=4096).memory_bytes == 4096


# ---------------------------------------------------------------- what each property says

ENDS = """\
machine: ends
vars: {x: {type: int, min: 0, max: 4, init: 0}}
measures:
  cost: {sum: "after.x * 2"}
actions:
  inc: {when: x < 3, choose: {k: [1, 2]}, do: [{set: {x: "min(x + k, 3)"}}]}
terminal: x == 3
properties:
  ends: {terminates: true}
  fast: {terminates_within: 3}
  slow: {terminates_within: 2}
  counted: {terminates_within: 1, count: "after.x == 3"}
  three: {reachable: x == 3}
  four: {reachable: x == 4}
"""


def _said(r: RunResult) -> dict:
    return {p.name: (p.status, p.message, p.trace and len(p.trace), p.witness and len(p.witness))
            for p in r.properties if p.kind != "builtin"}


@pytest.mark.parametrize("engine", ENGINES)
def test_every_property_kind_says_what_it_found(engine):
    r = _run(ENDS, engine)
    assert (r.result, r.verdict, r.stopped_by, r.stop_reason) == ("violated", "fail", None, None)
    assert _said(r) == {
        "ends": ("holds", "every run reaches a terminal state", None, None),
        "fast": ("holds", "every run ends within 3 transitions (the longest takes 3)", None, None),
        "slow": ("violated", "a run takes 3 transitions, more than 2", 3, None),
        "counted": ("holds", "every run ends within 1 counted transition (the longest takes 1)", None, None),
        "three": ("holds", "reached after 2 transitions", None, 2),
        "four": ("violated", "unreachable: no reachable state satisfies it", None, None)}
    assert {k: (b["value"], b["exact"], b["message"], len(b["witness"])) for k, b in r.bounds.items()} == {
        "transitions": (3, True, "at most 3", 3), "cost": (12, True, "at most 12", 3)}
    assert r._exploration is not None and len(r._exploration.states) == 4     # small and complete: kept


def test_a_partial_exploration_leaves_every_property_unknown_and_every_bound_a_lower_one():
    r = _run(ENDS, "scalar", max_states=2)
    assert (r.result, r.verdict, r.stopped_by) == ("incomplete", "incomplete", "max_states")
    assert r.stop_reason == "stopped at 3 states: --max-states 2 reached"
    stopped = "the exploration stopped at --max-states"
    assert _said(r) == {
        "ends": ("unknown", f"not decided: {stopped}", None, None),
        "fast": ("unknown", f"not decided (longest so far: 1 transition): {stopped}", None, None),
        "slow": ("unknown", f"not decided (longest so far: 1 transition): {stopped}", None, None),
        "counted": ("unknown", f"not decided (longest so far: 0 counted transitions): {stopped}", None, None),
        "three": ("unknown", f"not reached in the explored part; {stopped}", None, None),
        "four": ("unknown", f"not reached in the explored part; {stopped}", None, None)}
    assert {k: (b["value"], b["exact"], b["message"]) for k, b in r.bounds.items()} == {
        "transitions": (1, False, f"at least 1 ({stopped})"), "cost": (4, False, f"at least 4 ({stopped})")}
    assert r._exploration is None


@pytest.mark.parametrize("engine", ENGINES)
def test_a_deadlock_and_a_cycle_break_every_termination_property(engine):
    dead = _run(ENDS.replace("when: x < 3", "when: x < 2"), engine)
    for name in ("ends", "fast", "slow", "counted"):
        p = prop(dead, name)
        assert (p.status, p.message, len(p.trace)) == (
            "violated", "deadlock: a non-terminal state with no enabled action", 1), name
        assert p.trace.steps[-1].state == {"x": 2}
    cyclic = _run(ENDS.replace('x: "min(x + k, 3)"', 'x: "0 if x + k >= 3 else x + k"').replace(
        "terminal: x == 3", "terminal: x == 4"), engine)
    for name in ("ends", "fast", "slow", "counted"):
        p = prop(cyclic, name)
        assert p.status == "violated" and p.trace.kind == "lasso", name
        assert p.message == f"a cycle of {len(p.trace) - p.trace.loop_start} transitions among non-terminal " \
                            "states: the run can go on forever", name
    assert {k: (b["value"], b["message"]) for k, b in cyclic.bounds.items()} == {
        "transitions": (None, "unbounded: a run can cycle forever"),
        "cost": (None, "not computed: the state graph has a cycle")}


# ---------------------------------------------------------------- expect: violated, scenarios

EXPECTING = """\
machine: expecting
vars: {x: {type: int, min: 0, max: 3, init: 0}}
actions:
  inc: {when: x < 3, do: [{set: {x: x + 1}}]}
terminal: x == 3
properties:
  small: {always: x < 2}
  fine: {always: x < 9}
expect: {violated: [small]}
scenarios:
  up:
    steps:
      - {action: inc}
      - {action: inc}
    expect: {x: 2}
"""


def _outcome(r: RunResult) -> tuple:
    return (r.result, r.verdict, r.as_expected, {p.name: (p.status, p.expected) for p in r.properties},
            [(s.name, s.ok, s.message, s.steps) for s in r.scenarios])


HOLDS, UNKNOWN, VIOLATED = "holds", "unknown", "violated"
BUILTINS = {"domains": (HOLDS, True), "well_defined": (HOLDS, True)}
SCENARIO = [("up", True, "as expected", 2)]


@pytest.mark.parametrize("change,options,outcome", [
    ({}, {}, ("violated", "pass", True, {**BUILTINS, "small": (VIOLATED, True), "fine": (HOLDS, True)}, SCENARIO)),
    ({}, dict(properties=["small"]), ("violated", "pass", True, {**BUILTINS, "small": (VIOLATED, True)}, [])),
    ({}, dict(properties=["fine"]), ("proved", "fail", False, {**BUILTINS, "fine": (HOLDS, True)}, [])),
    ({"violated: [small]": "violated: [fine]"}, {},
     ("violated", "fail", False, {**BUILTINS, "small": (VIOLATED, False), "fine": (HOLDS, False)}, SCENARIO)),
    ({"violated: [small]": "violated: [small, fine]"}, {},
     ("violated", "fail", False, {**BUILTINS, "small": (VIOLATED, True), "fine": (HOLDS, False)}, SCENARIO)),
    ({"expect: {x: 2}": "expect: {x: 1}"}, {},
     ("violated", "fail", False, {**BUILTINS, "small": (VIOLATED, True), "fine": (HOLDS, True)},
      [("up", False, "the run ends with x = 2 (expected 1)", 2)])),
    ({}, dict(max_states=2),
     ("violated", "incomplete", False, {"domains": (UNKNOWN, True), "well_defined": (UNKNOWN, True),
                                        "small": (VIOLATED, True), "fine": (UNKNOWN, True)}, SCENARIO)),
    ({"x < 2}": "x < 9}"}, dict(max_states=2),
     ("incomplete", "incomplete", False, {"domains": (UNKNOWN, True), "well_defined": (UNKNOWN, True),
                                          "small": (UNKNOWN, False), "fine": (UNKNOWN, True)}, SCENARIO)),
])
def test_a_spec_that_expects_a_violation_passes_only_with_exactly_that_one(change, options, outcome):
    text = EXPECTING
    for old, new in change.items():
        text = text.replace(old, new)
    assert _outcome(_run(text, "scalar", **options)) == outcome


WHEN_EXPECTING = """\
machine: w
params: {n: [1, 2]}
vars: {x: {type: int, min: 0, max: 3, init: 0}}
actions:
  inc: {when: x < n, do: [{set: {x: x + 1}}]}
terminal: x == n
properties:
  small: {when: n == 2, always: x < 2}
  ends: {always: x <= n}
expect: {violated: [small]}
"""


@pytest.mark.parametrize("change, n1", [
    ({}, ("proved", "pass", None)),
    ({"x <= n}": "x < n}"}, ("violated", "fail", None)),
])
def test_an_expected_violation_whose_when_excludes_the_params_is_not_expected_there(change, n1):
    """n=1: `small` does not apply, so nothing is expected there; the run is judged as one
    without `expect` (it was "proved, NOT as expected" when the name counted as missing)."""
    text = WHEN_EXPECTING
    for old, new in change.items():
        text = text.replace(old, new)
    runs = check_spec(parse_spec(text, "t.yaml"), Options(engine="scalar"))
    assert [(r.params["n"], r.result, r.verdict, r.as_expected) for r in runs][0] == (1, *n1)
    assert [(w.kind, w.line, w.message, w.summary) for w in runs[0].notices if w.kind == "expect"] == [
        ("expect", 10, "no expected violation applies to these params (the when of small excludes them): "
                       "the run is judged as one without expect", "no expected violation applies")]
    assert not [w for w in runs[1].notices if w.kind == "expect"]
    two = runs[1]
    assert (two.params["n"], two.result, two.verdict) == (2, "violated", "pass" if not change else "fail")


# ---------------------------------------------------------------- why a property is undecided

CUT_SHORT = "not decided: the exploration was cut short by the spec's own errors (well_defined)"


def test_a_terminal_that_cannot_be_evaluated_leaves_what_depends_on_where_runs_end_unknown():
    r = _run("""\
machine: u
vars: {x: {type: int, min: 0, max: 3, init: 0}}
actions:
  inc: {when: x < 3, do: [{set: {x: x + 1}}]}
terminal: x == 3 or 1 // (x - 2) == 5
properties:
  ends: {terminates: true}
  small: {always: x < 9}
  v: {variant: x, bound: 5}
""", "scalar")
    ends_unknown = ("not decided: the terminal predicate cannot be evaluated in a reachable state (see "
                    "well_defined), so whether runs end there is unknown and nothing beyond it was explored")
    assert {p.name: (p.status, p.message) for p in r.properties} == {
        "domains": (UNKNOWN, CUT_SHORT),
        "well_defined": (VIOLATED, "terminal (t.yaml:5): integer division or modulo by zero"),
        "ends": (UNKNOWN, ends_unknown), "small": (UNKNOWN, CUT_SHORT), "v": (UNKNOWN, ends_unknown)}
    assert (r.result, r.verdict, r.stopped_by, r.stop_reason) == ("violated", "fail", None, None)
    assert r._exploration is not None and len(r._exploration.states) == 3
    assert r.bounds["transitions"]["message"] == f"at least 2 ({ends_unknown.removeprefix('not decided: ')})"


def test_an_action_that_cannot_be_evaluated_leaves_every_property_unknown():
    r = _run("""\
machine: w
vars: {x: {type: int, min: 0, max: 3, init: 0}}
actions:
  inc: {when: x < 3, do: [{set: {x: "x + 1 + 0 // (x - 2)"}}]}
terminal: x == 3
properties:
  ends: {terminates: true}
  small: {always: x < 9}
  three: {reachable: x == 3}
""", "scalar")
    assert {p.name: (p.status, p.message) for p in r.properties} == {
        "domains": (UNKNOWN, CUT_SHORT),
        "well_defined": (VIOLATED, "action inc with no choices (t.yaml:4): integer division or modulo by zero"),
        "ends": (UNKNOWN, CUT_SHORT), "small": (UNKNOWN, CUT_SHORT),
        "three": (UNKNOWN, "not reached in the explored part; the exploration was cut short by the spec's own "
                           "errors (well_defined)")}
    assert (r.result, r.verdict) == ("violated", "fail")


# ---------------------------------------------------------------- which engine, what is kept

def _counter(top: int) -> str:
    return f"""\
machine: counter
vars: {{x: {{type: int, min: 0, max: {top}, init: 0}}}}
actions:
  inc: {{when: x < {top}, do: [{{set: {{x: x + 1}}}}]}}
terminal: x == {top}
properties:
  small: {{always: x <= {top}}}
"""


@pytest.mark.parametrize("states,options,engine,stopped", [
    (10_000, {}, "scalar", None),                 # auto: the scalar engine up to 10,000 states
    (10_001, {}, "vector", None),                 # past them, the vector engine explores it all again
    (10_001, dict(max_states=50), "scalar", "max_states"),      # a smaller bound: the scalar engine stops
    (10_001, dict(max_states=10_000), "scalar", "max_states"),  # the bound is the switch point itself
    (10_001, dict(max_states=10_001), "vector", None),
])
def test_auto_runs_small_spaces_on_the_scalar_engine_and_large_ones_on_the_vector_engine(states, options, engine,
                                                                                         stopped):
    r = check_machine(_machine(_counter(states - 1)), Options(engine="auto", **options))
    assert (r.engine, r.stopped_by) == (engine, stopped)
    if stopped is None:
        assert (r.result, r.stats["states"], r.bounds["transitions"]["value"]) == ("proved", states, states - 1)


@pytest.mark.parametrize("states,kept", [(200, True), (201, False)])
def test_a_run_keeps_its_explored_graph_up_to_200_states(states, kept):
    r = check_machine(_machine(_counter(states - 1)), Options(engine="scalar"))
    assert (r._exploration is not None) == kept


# ---------------------------------------------------------------- the shorter of two errors
# `_note_count_errors`: a measure that cannot be evaluated is a well_defined finding too,
# kept over the engine's own finding only when its trace is shorter (`_length`).

MEASURE_FAILS = """\
machine: w
vars: {x: {type: int, min: 0, max: 3, init: 0}}
measures:
  cost: {sum: "1 // (after.x - %d)"}
actions:
  inc: {when: x < 3, do: [{set: {x: "x + 1 + 0 // (x - 2)"}}]}
terminal: x == 3
"""


@pytest.mark.parametrize("at,message,path", [
    (1, "measure cost (t.yaml:4): integer division or modulo by zero", [0, 1]),           # shorter: it wins
    (2, "action inc with no choices (t.yaml:6): integer division or modulo by zero", [0, 1, 2]),   # as long
    (3, "action inc with no choices (t.yaml:6): integer division or modulo by zero", [0, 1, 2]),   # never
])
def test_of_two_expressions_that_cannot_be_evaluated_the_shorter_trace_is_reported(at, message, path):
    wd = prop(_run(MEASURE_FAILS % at, "scalar"), "well_defined")
    assert (wd.status, wd.message, [s.state["x"] for s in wd.trace.steps]) == ("violated", message, path)


CHANCE_FAILS = """\
machine: p
vars: {x: {type: int, min: 0, max: 3, init: 0}}
actions:
  inc: {when: x < 3, choose: {k: [1, 2]}, do: [{set: {x: "min(x + k, 3)"}}]}
terminal: x == 3
probabilities:
  inc:
    k: {"1": 0.5, "2": 0.5}
properties:
  odd: {probability: {reach: 1 // (x - 2) == 1, at_least: 0.1}}
  fine: {always: x < 9}
"""


@pytest.mark.parametrize("selected", [None, ["odd"], ["fine"]])
def test_a_probability_target_that_cannot_be_evaluated_violates_well_defined_when_it_is_selected(selected):
    r = _run(CHANCE_FAILS, "scalar", properties=selected)
    wd = prop(r, "well_defined")
    if selected == ["fine"]:                  # not asked for: never evaluated
        assert (r.result, wd.status) == ("proved", "holds")
        return
    assert (r.result, wd.status, wd.message) == ("violated", "violated",
                                                 "property odd (t.yaml:10): integer division or modulo by zero")
    assert [s.state["x"] for s in wd.trace.steps] == [0, 2]
    assert wd.subject == Subject("property", "odd")        # what --emit-tests re-judges
    assert (prop(r, "odd").kind, prop(r, "odd").status, prop(r, "odd").message) == (
        "probability", "unknown", "not computed: its expression failed: integer division or modulo by zero")


def test_a_pin_may_give_exactly_as_many_values_as_a_check_sweeps():
    assert len(check_pins(_spec(), {"W": range(0, 10_000)})["W"]) == 10_000


class SlowInit(Model):
    params = {"K": [1], "W": [2, 3]}

    def domains(self, p):
        return {"x": [0, 1]}

    def init(self, p):
        time.sleep(3)
        return [{"x": 0}]

    @action(when=lambda s, p: s["x"] == 0)
    def inc(self, s, p):
        return {"x": 1}


def test_instantiating_a_python_model_says_which_params_ran_out_of_time():
    with pytest.raises(OutOfTime) as stop:
        prepare_python(SlowInit, Options(timeout=0.5))     # loading it takes far less
    assert stop.value.doing == "instantiating the model SlowInit with K=1 W=2"


def test_one_transition_is_said_in_the_singular():
    r = _run(ENDS.replace("x == 3}", "x == 2}").replace("four: {reachable: x == 4}", "one: {reachable: x == 1}"),
             "scalar")
    assert prop(r, "one").message == "reached after 1 transition"
    loop = _run(ENDS.replace('x: "min(x + k, 3)"', 'x: "x"').replace("when: x < 3", "when: x < 1"), "scalar")
    assert prop(loop, "ends").message == ("a cycle of 1 transition among non-terminal states: "
                                          "the run can go on forever")


def test_a_count_or_measure_that_cannot_be_evaluated_leaves_its_property_and_bound_undecided():
    text = MEASURE_FAILS.replace('do: [{set: {x: "x + 1 + 0 // (x - 2)"}}]', 'do: [{set: {x: "x + 1"}}]') + \
        'properties:\n  within: {terminates_within: 5, count: "1 // (after.x - 2) == 0"}\n'
    r = _run(text % 2, "scalar")
    assert [(p.name, p.status, p.message) for p in r.properties] == [
        ("domains", HOLDS, "every variable stays inside its declared domain (never clamped or wrapped)"),
        ("well_defined", VIOLATED, "count of within (t.yaml:9): integer division or modulo by zero"),
        ("within", UNKNOWN, "not decided: its count expression failed: integer division or modulo by zero")]
    assert prop(r, "within").kind == "terminates_within"
    assert (r.bounds["cost"]["value"], r.bounds["cost"]["message"]) == (
        None, "not computed: integer division or modulo by zero")
    assert (r.bounds["transitions"]["value"], r.bounds["transitions"]["message"]) == (3, "at most 3")


def test_a_memory_limit_says_it_stopped_the_run():
    r = _run(ENDS, "scalar", max_memory="1K")
    assert (r.result, r.stopped_by, r.stop_reason) == ("incomplete", "max_memory",
                                                       "stopped at 1 states: memory limit 1K reached")
    assert prop(r, "ends").message == "not decided: the exploration stopped at --max-memory"


def test_a_bound_spec_explored_as_a_model_judges_none_of_the_codes_builtins():
    from conftest import ROOT
    from haltproof.machine.spec import load_spec
    [m] = prepare(load_spec(ROOT / LOOP), Options(model_only=True, pins=ONE))
    r = check_machine(m, Options(model_only=True))
    assert [p.name for p in r.properties if p.kind == "builtin"] == ["domains", "well_defined"]
    assert r.explored == "model" and r.binding is None


@pytest.mark.parametrize("change,options", [({}, {}), ({}, dict(max_states=2)),
                                            ({"when: x < 3": "when: x < 2"}, {}),       # a deadlock
                                            ({'x: "min(x + k, 3)"': 'x: "0 if x + k >= 3 else x + k"',
                                              "terminal: x == 3": "terminal: x == 4"}, {})])     # a cycle
def test_every_result_keeps_its_propertys_kind_and_line(change, options):
    text = ENDS
    for old, new in change.items():
        text = text.replace(old, new)
    r = _run(text, "scalar", **options)
    assert [(p.name, p.kind, p.line) for p in r.properties] == [
        ("domains", "builtin", None), ("well_defined", "builtin", None), ("ends", "terminates", 9),
        ("fast", "terminates_within", 10), ("slow", "terminates_within", 11), ("counted", "terminates_within", 12),
        ("three", "reachable", 13), ("four", "reachable", 14)]


# ---------------------------------------------------------------- the one place a run is judged
# `judge` and `unsettled`, and RunResult asking them: a bound that stopped the run keeps it
# from "proved" even when every property it judged holds (the deadline passing after the
# exploration, while the bounds or the scenarios were computed, leaves exactly that).

B_, I_ = "builtin", "invariant"


@pytest.mark.parametrize("properties,scenarios,stopped_by,as_expected,judged", [
    ([(B_, HOLDS, None), (I_, HOLDS, None)], [], None, None, ("proved", "pass")),
    ([(B_, HOLDS, None), ("reachable", HOLDS, None)], [], "timeout", None, ("incomplete", "incomplete")),
    ([(I_, VIOLATED, None)], [], "max_states", None, ("violated", "fail")),
    ([(B_, VIOLATED, None), (I_, UNKNOWN, None)], [], None, None, ("violated", "fail")),
    ([(I_, UNKNOWN, None)], [], None, None, ("incomplete", "incomplete")),
    ([(I_, HOLDS, None)], [False], None, None, ("violated", "fail")),
    ([(I_, HOLDS, None)], [True], None, None, ("proved", "pass")),
    ([(I_, VIOLATED, True), (B_, HOLDS, True)], [True], None, True, ("violated", "pass")),
    ([(I_, VIOLATED, True), (B_, HOLDS, True)], [True], "timeout", True, ("violated", "incomplete")),
    ([(I_, VIOLATED, False)], [True], "timeout", False, ("violated", "fail")),
    ([(I_, UNKNOWN, True)], [True], "timeout", False, ("incomplete", "incomplete")),
    ([(I_, HOLDS, False)], [True], None, False, ("proved", "fail")),
    ([(I_, UNKNOWN, True)], [False], "timeout", False, ("violated", "fail")),
])
def test_a_run_is_judged_from_its_findings_its_scenarios_and_what_stopped_it(properties, scenarios, stopped_by,
                                                                             as_expected, judged):
    assert judge(properties, scenarios, stopped_by, as_expected) == judged


def test_a_builtin_violation_explains_the_unknowns_it_left_and_nothing_else_does():
    assert unsettled([(B_, VIOLATED), (I_, UNKNOWN)], None) is False
    assert unsettled([(I_, VIOLATED), (I_, UNKNOWN)], None) is True
    assert unsettled([(B_, HOLDS), (I_, HOLDS)], None) is False
    assert unsettled([(B_, HOLDS), (I_, HOLDS)], "timeout") is True


def test_a_run_stopped_after_its_properties_were_all_decided_is_not_proved():
    import dataclasses
    r = _run(ENDS.replace("  four: {reachable: x == 4}\n", "").replace("  slow: {terminates_within: 2}\n", ""),
             "scalar")
    assert (r.result, r.verdict) == ("proved", "pass")
    late = dataclasses.replace(r, stopped_by="timeout")
    assert (late.result, late.verdict) == ("incomplete", "incomplete")


# ---------------------------------------------------------------- maximum below zero
# `_scalar_highest`, `_vector_highest`: the first value read is the highest so far whatever its
# sign; a maximum that stays below 0 is that negative value, not the 0 the search starts from.

BELOW_ZERO = """\
machine: below
vars:
  x: {type: int, min: 0, max: 3, init: 0}
actions:
  inc: {when: x < 3, do: [{set: {x: x + 1}}]}
terminal: x == 3
properties:
  debt: {maximum: x - 5}
  flat: {maximum: 0 - x}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_a_maximum_below_zero_is_that_negative_value_with_its_witness(engine):
    r = _run(BELOW_ZERO, engine)
    debt, flat = prop(r, "debt"), prop(r, "flat")
    assert (debt.status, debt.message, debt.value) == (
        "holds", "maximum -2, first reached after 3 transitions",
        {"maximum": {"value": -2, "exact": True, "at_most": None, "witness_transitions": 3}})
    assert [s.state["x"] for s in debt.witness.steps] == [0, 1, 2, 3]
    assert (flat.status, flat.message) == ("holds", "maximum 0, first reached after 0 transitions")
    assert [s.state["x"] for s in flat.witness.steps] == [0]


# ---------------------------------------------------------------- a fairness when that fails
# `_terminates`: a fairness `when` that cannot be evaluated on a transition the cycle search
# reads leaves `terminates` undecided, under its own name.

FAIR_WHEN_FAILS = """\
machine: spin
vars:
  s: {type: int, min: 0, max: 2, init: 0}
actions:
  spin:
    when: s < 2
    do:
      - set: {s: 1 - s}
  finish:
    when: s == 1
    do:
      - set: {s: 2}
terminal: s == 2
properties:
  ends: {terminates: true}
fairness:
  - weak: spin
    when: 1 // (s - 1) > 0
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_a_fairness_when_that_cannot_be_evaluated_leaves_terminates_undecided(engine):
    r = _run(FAIR_WHEN_FAILS, engine)
    assert r.result == "incomplete"
    [p] = [p for p in r.properties if p.kind == "terminates"]
    assert (p.name, p.status, p.message, p.line, p.trace) == (
        "ends", "unknown", "not decided: a fairness when (t.yaml:18) cannot be evaluated on a reachable transition: "
                           "integer division or modulo by zero", 15, None)


# ---------------------------------------------------------------- auto: scalar, then vector
# `_explore`: `--engine auto` explores the first AUTO_SCALAR_STATES states on the scalar engine
# and goes on with the vector engine; --max-states past that bounds the vector engine's part.

GRID = """\
machine: grid
vars:
  x: {type: int, min: 0, max: 149, init: 0}
  y: {type: int, min: 0, max: 149, init: 0}
actions:
  right: {when: x < 149, do: [{set: {x: x + 1}}]}
  up: {when: y < 149, do: [{set: {y: y + 1}}]}
terminal: x == 149 and y == 149
properties:
  fine: {always: x <= 149}
"""


def test_auto_keeps_the_max_states_bound_when_it_moves_to_the_vector_engine():
    whole = _run(GRID, "auto")
    assert (whole.engine, whole.result, whole.stats["states"]) == ("vector", "proved", 22_500)
    r = _run(GRID, "auto", max_states=15_000)
    assert (r.engine, r.result, r.stopped_by) == ("vector", "incomplete", "max_states")
    assert (r.stats["states"], r.stats["max_depth"]) == (15_119, 177)     # whole BFS levels, past the bound
    assert (prop(r, "fine").status, prop(r, "fine").message) == (
        "unknown", "not decided: the exploration stopped at --max-states")


# `_explore`: `--engine vector` on a spec the vector engine cannot run is refused with the
# reason, never run on the scalar engine instead (`auto` does that, and says which it ran).

HALVES = """\
machine: halves
vars: {x: {type: int, min: 0, max: 4, init: 4}}
actions:
  halve: {when: x > 0, do: [{set: {x: x // 2}}]}
terminal: x == 0
"""


def test_the_vector_engine_asked_for_a_spec_it_cannot_run_is_refused():
    with pytest.raises(SpecError) as refused:
        _run(HALVES, "vector")
    [problem] = refused.value.problems
    assert (problem.file, problem.line, problem.message) == (
        "t.yaml", None, "--engine vector cannot run this spec: // and % need a per-transition division-by-zero check")
    r = _run(HALVES, "auto")
    assert (r.engine, r.result) == ("scalar", "proved")


# ---------------------------------------------------------------- fresh sample (seed 19)
# `_terminates`: a `terminates` proved only because the spin cycle is unfair names the
# fairness it relied on, in its message and its `fairness` field.

SPIN_UNDER_FAIRNESS = FAIR_WHEN_FAILS.replace("  - weak: spin\n    when: 1 // (s - 1) > 0\n", "  - strong: finish\n")
assert SPIN_UNDER_FAIRNESS.endswith("fairness:\n  - strong: finish\n")


@pytest.mark.parametrize("engine", ENGINES)
def test_terminates_proved_under_fairness_names_the_fairness_it_relied_on(engine):
    p = prop(_run(SPIN_UNDER_FAIRNESS, engine), "ends")
    assert (p.status, p.message, p.fairness, p.line) == (
        "holds", "every run reaches a terminal state; under fairness: strong finish", ["strong finish"], 15)


# `_liveness`: a response whose trigger holds in a state a run ends in says the trigger is
# not answered (an existence says "it never holds").

UNANSWERED_AT_THE_END = """\
machine: unanswered
vars:
  x: {type: int, min: 0, max: 1, init: 0}
actions:
  go:
    when: x == 0
    do:
      - set: {x: 1}
terminal: x == 1
properties:
  answered: {response: {trigger: x == 1, response: x == 0}}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_a_response_left_open_by_a_run_that_ends_says_the_trigger_is_not_answered(engine):
    p = prop(_run(UNANSWERED_AT_THE_END, engine), "answered")
    assert (p.status, p.message, p.line) == (
        "violated", "response violated: a run ends after 1 transition and the trigger is not answered", 11)
    assert [(st.state, st.action) for st in p.trace.steps] == [({"x": 0}, None), ({"x": 1}, "go")]


@pytest.mark.parametrize("engine,top,calls", [
    ("scalar", 3, [(1, 0, 0, 1), (4, 3, 3, 0)]),                 # the first state, then the end
    ("vector", 3, [(2, 1, 1, 1), (3, 2, 2, 1), (4, 3, 3, 1)]),   # each level
    ("auto", 3, [(1, 0, 0, 1), (4, 3, 3, 0)]),                   # small: the scalar engine's
    # large: the scalar engine's up to its 4 states (as it stops at max_states), then the
    # vector engine's, from the start
    ("auto", 4, [(1, 0, 0, 1), (5, 4, 4, 1), (2, 1, 1, 1), (3, 2, 2, 1), (4, 3, 3, 1), (5, 4, 4, 1)]),
])
def test_every_engine_tells_progress_how_the_exploration_goes(engine, top, calls, monkeypatch):
    """(states, transitions, depth, frontier) as each engine the run takes reports them."""
    monkeypatch.setattr(check, "AUTO_SCALAR_STATES", 4)
    seen: list[tuple] = []
    r = check_machine(_machine(_counter(top)),
                      Options(engine=engine, progress=lambda spec, params: lambda *a: seen.append(a[:4])))
    assert (r.result, r.engine) == ("proved", "scalar" if len(calls) == 2 else "vector")
    assert seen == calls


# ---------------------------------------------------------------- possible
# `_possible`: every answer of a `possible` property, whole: reached (with its witness),
# impossible, and undecided on an exploration cut short before reaching it.

POSSIBLE = """\
machine: counter
vars:
  n: {type: int, min: 0, max: 3, init: 0}
actions:
  up:
    when: n < 3
    do:
      - set: {n: n + 1}
terminal: n == 3
properties:
  two: {possible: n == 2}
  five: {possible: n == 5}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_every_answer_of_a_possible_property_is_said_whole(engine):
    r = _run(POSSIBLE, engine)
    two, five = prop(r, "two"), prop(r, "five")
    assert (two.kind, two.status, two.message, two.value) == (
        "possible", "holds", "possible: reached after 2 transitions", {"possible": True})
    assert [s.state["n"] for s in two.witness.steps] == [0, 1, 2]
    assert (five.kind, five.status, five.message, five.value, five.witness) == (
        "possible", "holds", "impossible: no reachable state satisfies it", {"possible": False}, None)
    cut = prop(_run(POSSIBLE, engine, max_states=2), "five")
    assert (cut.kind, cut.status, cut.message) == (
        "possible", "unknown",
        "not decided: not reached in the explored part; the exploration stopped at --max-states")


@pytest.mark.parametrize("engine", ENGINES)
def test_a_decided_past_time_property_says_what_its_monitors_cost_and_an_undecided_one_does_not(engine):
    text = POSSIBLE.replace("  five: {possible: n == 5}\n", "  began: {always: once(n == 0)}\n")
    began = prop(_run(text, engine), "began")
    assert (began.status, began.message) == (
        "holds", "true in every reachable state; its past-time monitors (1 var) added 0 of the 4 states explored")
    cut = prop(_run(text, engine, max_states=2), "began")
    assert (cut.status, cut.message) == ("unknown", "not decided: the exploration stopped at --max-states")
