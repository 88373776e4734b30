"""Verdicts and figures that must be exact on every engine (issue 11): bounds summed
without wrapping, an evaluation error reported whatever else failed, a terminal
predicate or guard that cannot be evaluated, and a decide constant outside its var's
domain. Each case runs through the CLI on `--engine scalar`, `vector` and `auto`; a
spec the vector engine does not take (`//`) must be refused there with exit 2."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from haltproof.machine.compiled import CompiledSpec
from haltproof.machine.spec import parse_spec, shown_path
from haltproof.machine.vectorize import vectorize

from test_engines import READS as ENGINE_READS

ENGINES = ("scalar", "vector", "auto")


def _run(cli, tmp_path: Path, text: str, engine: str, *args: str):
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return cli("check", path, "--engine", engine, "--format", "json", *args)


def _report(cli, tmp_path: Path, text: str, engine: str, code: int, *args: str) -> dict:
    """The single run of the JSON report, after checking the exit code."""
    ran = _run(cli, tmp_path, text, engine, *args)
    assert ran.code == code, (ran.code, ran.err, ran.out)
    (run,) = ran.json()["runs"]
    return run


def _props(run: dict) -> dict[str, dict]:
    return {p["name"]: p for p in run["properties"]}


def _states(trace: dict) -> list[dict]:
    return [s["state"] for s in trace["steps"]]


def _at(tmp_path: Path, line: int) -> str:
    """`(file:line)` of the spec `_run` writes, as a well_defined message names an expression."""
    return f"({shown_path(str(tmp_path / 'spec.yaml'))}:{line})"


def _refused(cli, tmp_path: Path, text: str) -> None:
    ran = _run(cli, tmp_path, text, "vector")
    assert ran.code == 2 and ran.out == ""
    assert "--engine vector cannot run this spec: // and % need a per-transition division-by-zero check" in ran.err


# -- 1. bounds are summed exactly ------------------------------------------------------------

SUM = """\
machine: sums
vars:
  n: {{type: int, min: 0, max: 4, init: 0}}
actions:
  go:
    when: n < 4
    choose: {{c: [1, 2]}}
    do:
      - set: {{n: n + 1}}
terminal: n == 4
properties:
  short:
    terminates_within: 3
    count: c == 2
measures:
  tokens: {{sum: '{term}'}}
  twos: {{count: c == 2}}
"""


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("term,value", [
    ("3000000000000000000", 12_000_000_000_000_000_000),                 # each term fits int64, the sum does not
    ("4611686018427387903", 18_446_744_073_709_551_612),                 # 2^62 - 1, the widest the vector engine takes
    ("3000000000 * c", 24_000_000_000),                                  # past 2^31: not an int32 weight
    ("4611686018427387903 if before.n != 1 else -4611686018427387903",   # negative terms: the highest
     3 * 4_611_686_018_427_387_903 - 4_611_686_018_427_387_903),        # running total is the whole run
    ("10 if before.n != 1 else -30", 10),                                # ... or a prefix (10, -20, -10, 0)
    ("-7", 0),                                                           # never above the start
], ids=["3e18", "2^62-1", "past-int32", "negative-big", "negative-prefix", "all-negative"])
def test_sum_measures_are_exact(cli, tmp_path, engine, term, value):
    run = _report(cli, tmp_path, SUM.format(term=term), engine, 1)
    assert run["engine"] == ("scalar" if engine == "auto" else engine)
    tokens = run["bounds"]["tokens"]
    assert tokens["value"] == value and tokens["exact"] is True and tokens["message"] == f"at most {value}"
    assert run["bounds"]["transitions"]["value"] == 4
    assert run["bounds"]["twos"]["value"] == 4
    short = _props(run)["short"]
    assert short["status"] == "violated" and short["message"] == "a run takes 4 counted transitions, more than 3"
    assert [s["choices"] for s in short["trace"]["steps"][1:]] == [{"c": 2}] * 4
    witness = tokens["witness"]["steps"]
    if term == "10 if before.n != 1 else -30":
        assert len(witness) == 2                     # the witness stops where the total is highest
    elif value:
        assert len(witness) == 5


def test_vector_totals_leave_int64_exactly_when_a_run_could_overflow_it():
    """A run has at most one edge per level of the order, plus one into an unexplored state."""
    from haltproof.properties.termination import Peeled, _total_type
    none = np.zeros(0, dtype=np.int64)        # the graph's arrays: not read by _total_type
    three = Peeled([np.arange(1), np.arange(1, 2), np.arange(2, 3)], none, none, none)
    assert _total_type(three, np.array([0, 2 ** 61 - 1, -5], dtype=np.int64)) is np.int64   # 4 (2^61 - 1) fits
    assert _total_type(three, np.array([0, -2 ** 61, 5], dtype=np.int64)) is object         # 4 * 2^61 = 2^63 does not
    assert _total_type(three, None) is np.int64


# -- 2. an evaluation error is reported whatever else failed ---------------------------------

MASKED = """\
machine: masked
vars:
  x: {{type: int, min: 0, max: 2, init: 2}}
  tag: {{type: bool, init: false}}
actions:
  dec:
    when: x > 0
    do:
      - set: {{x: x - 1}}
terminal: x == 0
properties:
  {prop}
{extra}"""

MASKED_CASES = {
    # fails at x = 2 (1 // 2 = 0), then cannot be evaluated at x = 0
    "invariant": ("inv: {always: '1 // x > 5'}", "property inv", 3, [{"x": 2, "tag": False}]),
    # reached at x = 2, then cannot be evaluated at x = 0
    "reachable": ("inv: {reachable: '1 // x == 0'}", "property inv", 3, None),
    # fails on 2 -> 1 (1 // 1 = 1), then cannot be evaluated on 1 -> 0
    "step": ("inv: {step: '1 // after.x > 5'}", "property inv", 3,
             [{"x": 2, "tag": False}, {"x": 1, "tag": False}]),
    # fails on 2 -> 1 (it decreases), then cannot be evaluated at x = 0
    "variant": ("inv: {variant: '1 // x + x', bound: 9}", "property inv", 3,
                [{"x": 2, "tag": False}, {"x": 1, "tag": False}]),
}


@pytest.mark.parametrize("loop", ["generated", "plain"])
@pytest.mark.parametrize("engine", ["scalar", "auto"])
@pytest.mark.parametrize("kind", MASKED_CASES)
def test_an_evaluation_error_is_reported_after_its_property_failed(cli, tmp_path, kind, engine, loop):
    """The scalar engine's generated loop and its plain loop (an independence property
    sends a spec there) both keep evaluating a property that failed or was reached."""
    prop, message, length, bad = MASKED_CASES[kind]
    extra = "  plain: {independent_of: tag}\n" if loop == "plain" else ""
    run = _report(cli, tmp_path, MASKED.format(prop=prop, extra=extra), engine, 1)
    props = _props(run)
    wd = props["well_defined"]
    assert wd["status"] == "violated"
    assert wd["message"] == f"{message} {_at(tmp_path, 12)}: integer division or modulo by zero"
    states = _states(wd["trace"])
    assert len(states) == length and states[-1]["x"] == 0
    if bad is None:
        assert props["inv"]["status"] == "holds" and props["inv"]["message"] == "reached after 0 transitions"
    else:
        assert props["inv"]["status"] == "violated" and _states(props["inv"]["trace"]) == bad


def test_a_division_spec_is_refused_by_the_vector_engine(cli, tmp_path):
    _refused(cli, tmp_path, MASKED.format(prop=MASKED_CASES["invariant"][0], extra=""))


# the engines test's spec whose step property reads a choice `stop` does not make
READS = ENGINE_READS.format(step="n < 2 if action == add else n > 0")


@pytest.mark.parametrize("engine", ENGINES)
def test_a_missing_choice_is_reported_after_its_property_failed(cli, tmp_path, engine):
    """`small_steps` fails on add(n=2) from x = 0; `stop` from x = 1 then reads n."""
    run = _report(cli, tmp_path, READS, engine, 1)
    props = _props(run)
    assert props["small_steps"]["status"] == "violated"
    assert [s["choices"] for s in props["small_steps"]["trace"]["steps"][1:]] == [{"n": 2}]
    wd = props["well_defined"]
    assert wd["status"] == "violated"
    assert wd["message"] == (f"property small_steps {_at(tmp_path, 20)}: the expression reads choice n, which "
                             "action stop does not make (guard it with action == ...)")
    assert [(s["action"], s["state"]["x"]) for s in wd["trace"]["steps"]] == [(None, 0), ("add", 1), ("stop", 4)]


SHORTEST_SCALAR = """\
machine: shortest
vars:
  x: {type: int, min: 0, max: 3, init: {one_of: [1, 0]}}
actions:
  go:
    when: "1 // x >= 0"
    do:
      - set: {x: x + 1}
terminal: x == 3
properties:
  inv: {always: "1 // (x - 2) >= -5"}
"""

SHORTEST_VECTOR = """\
machine: shortest
vars:
  x: {type: int, min: 0, max: 3, init: {one_of: [1, 0]}}
actions:
  add:
    when: x == 2
    choose: {n: [1]}
    do:
      - set: {x: x + n}
  stop:
    when: x <= 1
    do:
      - decide: x
        rules:
          - {name: fin, when: x == 1, then: 3}
terminal: x == 3
properties:
  reads: {step: "before.x > 5 or n > 0"}
"""


@pytest.mark.parametrize("engine", ["scalar", "auto"])
def test_the_well_defined_trace_is_a_shortest_one(cli, tmp_path, engine):
    """Expanding x = 1 first finds an error on its successor (x = 2, one step); the guard
    of the next initial state, x = 0, fails with no step at all: that one is shown."""
    wd = _props(_report(cli, tmp_path, SHORTEST_SCALAR, engine, 1))["well_defined"]
    assert wd["message"] == f"guard of go {_at(tmp_path, 6)}: integer division or modulo by zero"
    assert _states(wd["trace"]) == [{"x": 0}]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_well_defined_trace_is_a_shortest_one_on_both_engines(cli, tmp_path, engine):
    """Within one level: `stop` from x = 1 reads a missing choice (one step further), and
    no rule matches for `stop` at x = 0 (no step): the second is shorter."""
    wd = _props(_report(cli, tmp_path, SHORTEST_VECTOR, engine, 1))["well_defined"]
    assert wd["message"] == (f"action stop with no choices {_at(tmp_path, 13)}: no rule of the decide table of "
                             "action stop (deciding x) matched")
    assert _states(wd["trace"]) == [{"x": 0}]


COUNTED = """\
machine: counted
vars:
  x: {{type: int, min: 0, max: 2, init: 2}}
actions:
  dec:
    when: x > 0
    choose: {{n: [1]}}
    do:
      - set: {{x: x - n}}
  back:
    when: x == 0
    do:
      - set: {{x: 2}}
terminal: x == 9
properties:
  quick: {{terminates_within: 5, count: '{count}'}}
measures:
  tokens: {{sum: '{measure}'}}
"""


@pytest.mark.parametrize("engine", ["scalar", "auto"])
@pytest.mark.parametrize("count,measure,message,length", [
    ("1 // after.x > 0", "1", "count of quick {at16}: integer division or modulo by zero", 3),
    ("true", "1 // after.x", "measure tokens {at18}: integer division or modulo by zero", 3),
    ("action == dec and n > 0", "n", "measure tokens {at18}: the expression reads choice n, which action back "
                                      "does not make (guard it with action == ...)", 4),
], ids=["count", "measure", "missing-choice"])
def test_a_count_or_measure_that_fails_violates_well_defined(cli, tmp_path, engine, count, measure, message, length):
    """Counts and measures are evaluated after exploring, and not at all on a graph with a
    cycle (this one has): their errors are found on the explored transitions all the same."""
    run = _report(cli, tmp_path, COUNTED.format(count=count, measure=measure), engine, 1)
    props = _props(run)
    wd = props["well_defined"]
    assert wd["status"] == "violated"
    assert wd["message"] == message.format(at16=_at(tmp_path, 16), at18=_at(tmp_path, 18))
    assert [s["state"]["x"] for s in wd["trace"]["steps"]] == [2, 1, 0, 2][:length]
    assert props["domains"]["status"] == "holds"            # nothing was cut short
    assert props["quick"]["status"] == "violated"          # the cycle 2 -> 1 -> 0 -> 2


def test_a_measure_guarded_by_the_action_cannot_fail(cli, tmp_path):
    run = _report(cli, tmp_path, COUNTED.format(count="true", measure="n if action == dec else 0"), "vector", 1)
    assert _props(run)["well_defined"]["status"] == "holds"


# -- 3. a terminal predicate or a guard that cannot be evaluated -----------------------------

TERMINAL = """\
machine: ends
vars:
  x: {{type: int, min: 0, max: 2, init: 1}}
  tag: {{type: bool, init: false}}
actions:
  flip:
    when: x <= 1
    do:
      - set: {{x: 1 - x}}
{more}terminal: '1 // x == 7'
properties:
  ends: {{terminates: true}}
  quick: {{terminates_within: 5}}
  rises: {{variant: '0 - x', bound: 9}}
  small: {{always: 'x <= 2'}}
{extra}"""

UNKNOWN_END = ("not decided: the terminal predicate cannot be evaluated in a reachable state (see "
               "well_defined), so whether runs end there is unknown and nothing beyond it was explored")


@pytest.mark.parametrize("loop", ["generated", "plain"])
@pytest.mark.parametrize("engine", ["scalar", "auto"])
def test_a_terminal_predicate_that_fails_leaves_termination_unknown(cli, tmp_path, engine, loop):
    """x = 0 may or may not end the run: the lasso 1 -> 0 -> 1 through it is no
    counterexample, and nothing is explored beyond it."""
    extra = "  plain: {independent_of: tag}\n" if loop == "plain" else ""
    run = _report(cli, tmp_path, TERMINAL.format(more="", extra=extra), engine, 1)
    assert run["stats"]["states"] == 2 and run["stats"]["transitions"] == 1
    assert run["stats"]["terminal_states"] == 0
    props = _props(run)
    wd = props["well_defined"]
    assert wd["status"] == "violated"
    assert wd["message"] == f"terminal {_at(tmp_path, 10)}: integer division or modulo by zero"
    assert _states(wd["trace"]) == [{"x": 1, "tag": False}, {"x": 0, "tag": False}]
    for name in ("ends", "rises"):
        assert (props[name]["status"], props[name]["message"]) == ("unknown", UNKNOWN_END), name
    assert props["quick"]["status"] == "unknown"
    assert props["quick"]["message"] == UNKNOWN_END.replace("not decided:", "not decided (longest so far: 1 "
                                                            "transition):")
    assert props["small"]["status"] == "unknown"
    assert props["small"]["message"] == ("not decided: the exploration was cut short by the spec's own "
                                         "errors (well_defined)")
    assert run["bounds"]["transitions"]["exact"] is False
    assert run["bounds"]["transitions"]["message"] == "at least 1 (" + UNKNOWN_END.removeprefix("not decided: ") + ")"


@pytest.mark.parametrize("engine", ["scalar", "auto"])
def test_a_cycle_that_avoids_the_failing_terminal_is_still_a_counterexample(cli, tmp_path, engine):
    """1 -> 2 -> 1 never meets x = 0: a real run that goes on forever."""
    more = "  back:\n    when: x >= 1\n    do:\n      - set: {x: 3 - x}\n"
    run = _report(cli, tmp_path, TERMINAL.format(more=more, extra=""), engine, 1)
    ends = _props(run)["ends"]
    assert ends["status"] == "violated"
    assert ends["message"] == "a cycle of 2 transitions among non-terminal states: the run can go on forever"
    assert [s["state"]["x"] for s in ends["trace"]["steps"]] == [1, 2, 1]


GUARD = """\
machine: guarded
vars:
  x: {type: int, min: 0, max: 2, init: 2}
actions:
  dec:
    when: '1 // x >= 0'
    do:
      - set: {x: x - 1}
terminal: x == 9
properties:
  ends: {terminates: true}
"""


@pytest.mark.parametrize("engine", ["scalar", "auto"])
def test_a_guard_that_fails_is_no_deadlock(cli, tmp_path, engine):
    """At x = 0 the guard cannot be evaluated: its transitions there are missing, which is
    no deadlock, so `terminates` is unknown, not violated."""
    run = _report(cli, tmp_path, GUARD, engine, 1)
    props = _props(run)
    assert props["well_defined"]["message"] == f"guard of dec {_at(tmp_path, 6)}: integer division or modulo by zero"
    assert [s["x"] for s in _states(props["well_defined"]["trace"])] == [2, 1, 0]
    assert props["ends"]["status"] == "unknown"
    assert props["ends"]["message"] == ("not decided: the exploration was cut short by the spec's own "
                                        "errors (well_defined)")


@pytest.mark.parametrize("text", [TERMINAL.format(more="", extra=""), GUARD], ids=["terminal", "guard"])
def test_failing_terminal_and_guard_specs_are_refused_by_the_vector_engine(cli, tmp_path, text):
    _refused(cli, tmp_path, text)


# -- 4. a decide constant outside the var's domain -------------------------------------------

DECIDE = """\
machine: decided
params:
  top: [3, 5]
vars:
  x: {{type: int, min: 0, max: 3, init: 0}}
  d: {{type: int, min: 0, max: top, init: 0}}
actions:
  go:
    when: x < 3
    do:
      - set: {{x: x + 1}}
      - decide: d
        rules:
          - {{name: jump, when: '{when}', then: {value}}}
          - {{name: keep, then: d}}
terminal: x == 3
properties:
  ends: {{terminates: true}}
"""


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("value", [9, 4294967299, 9223372036854775807],
                         ids=["small", "past-int32", "int64-max"])
def test_a_decide_constant_outside_the_domain_that_never_fires_is_no_error(cli, tmp_path, engine, value):
    text = DECIDE.format(when="x > 10", value=value)
    ran = _run(cli, tmp_path, text, engine, "-p", "top=3")
    if engine == "vector" and value > 2 ** 62:
        assert ran.code == 2 and "beyond exact 64-bit arithmetic" in ran.err
        return
    assert ran.code == 0, ran.err
    (run,) = ran.json()["runs"]
    assert run["result"] == "proved" and run["coverage"]["rules"] == {"jump": 0, "keep": 3}
    assert [w for w in run["warnings"] if "jump" in w]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("value", [4, 4294967299, 9223372036854775807], ids=["small", "past-int32", "int64-max"])
def test_a_decide_constant_outside_the_domain_is_a_domains_violation_when_it_fires(cli, tmp_path, engine, value):
    """`jump` fires on the third step; with top = 5 its value 4 lies inside the domain."""
    text = DECIDE.format(when="x == 3", value=value)
    ran = _run(cli, tmp_path, text, engine)
    if engine == "vector" and value > 2 ** 62:
        assert ran.code == 2 and "beyond exact 64-bit arithmetic" in ran.err
        return
    assert ran.code == 1, ran.err
    runs = {r["params"]["top"]: r for r in ran.json()["runs"]}
    dom = _props(runs[3])["domains"]
    assert dom["status"] == "violated" and dom["message"] == f"d = {value} is outside its domain 0..3"
    assert [(s["action"], s["rule"], s["state"]) for s in dom["trace"]["steps"]] == [
        (None, None, {"x": 0, "d": 0}), ("go", "keep", {"x": 1, "d": 0}), ("go", "keep", {"x": 2, "d": 0}),
        ("go", "jump", {"x": 3, "d": value})]
    assert _props(runs[3])["ends"]["status"] == "unknown"
    if value == 4:
        assert runs[5]["result"] == "proved"
    else:
        assert _props(runs[5])["domains"]["message"] == f"d = {value} is outside its domain 0..5"


def test_the_width_of_the_vector_arrays_counts_a_decide_constant():
    """A constant past 2^31 is computed before the domain check: int32 would wrap it into
    the domain and hide the violation."""
    m = CompiledSpec(parse_spec(DECIDE.format(when="x == 3", value=4294967299), "d.yaml")).instantiate({"top": 3})
    assert vectorize(m).int_t is np.int64
    m = CompiledSpec(parse_spec(DECIDE.format(when="x == 3", value=9), "d.yaml")).instantiate({"top": 3})
    assert vectorize(m).int_t is np.int32


# -- 5. a well_defined message names the file:line of the expression that failed -------------

STAGES = """\
machine: stages
vars:
  x: {{type: int, min: 0, max: 3, init: 1}}
  y: {{type: int, min: 0, max: 3, init: 0}}
  tag: {{type: bool, init: false}}
actions:
  go:
    when: x > 0
    choose: {{d: [0, 1]}}
    do:
      - set:
          y: "{y}"
          x: "{x}"
      - decide: y
        rules:
          - name: low
            when: "{when}"
            then: "{then}"
          - {{name: high, when: y > 1, then: 3}}
terminal: x == 0
properties:
  ends: {{terminates: true}}
{extra}"""

STAGE_PARTS = {"y": "y + 1", "x": "x - 1", "when": "y <= 1", "then": "y"}
DIVIDES = "integer division or modulo by zero"
STAGE_CASES = {   # what fails on go with d = 0 from x = 1, y = 0: the part replaced, the line named
    "first-assignment": ({"y": "y + 1 // d"}, 12, DIVIDES),
    "second-assignment": ({"x": "x // d"}, 13, DIVIDES),
    "rule-condition": ({"when": "1 // d == 1"}, 17, DIVIDES),
    "rule-value": ({"then": "1 // d"}, 18, DIVIDES),
    "no-rule": ({"when": "y == 1 and d == 1"}, 14,
                "no rule of the decide table of action go (deciding y) matched"),
}


@pytest.mark.parametrize("loop", ["generated", "plain"])
@pytest.mark.parametrize("case", STAGE_CASES)
def test_a_failing_step_is_named_by_the_line_of_the_stage_part_that_failed(cli, tmp_path, case, loop):
    """Each assignment of a set stage, each rule's condition and value has its own line; a
    decide table with no matching rule is named at its `decide:` line. The generated loop
    inlines the expressions, the plain loop calls the step functions: both name the line."""
    parts, line, error = STAGE_CASES[case]
    extra = "  plain: {independent_of: tag}\n" if loop == "plain" else ""
    run = _report(cli, tmp_path, STAGES.format(**{**STAGE_PARTS, **parts}, extra=extra), "scalar", 1)
    wd = _props(run)["well_defined"]
    assert wd["message"] == f"action go with d=0 {_at(tmp_path, line)}: {error}"
    assert _states(wd["trace"]) == [{"x": 1, "y": 0, "tag": False}]


def test_a_well_defined_message_names_the_file_as_given_relative_to_the_working_directory(cli, tmp_path,
                                                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "term.yaml").write_text(TERMINAL.format(more="", extra=""))
    ran = cli("check", "term.yaml")
    assert ran.code == 1
    assert "VIOLATED  well_defined  terminal (term.yaml:10): integer division or modulo by zero\n" in ran.out


# -- 6. false proofs that only the slow random-machine test used to catch (issue 26) ---------
# Each case is judged on every engine: the scalar one, the vector one on one thread and on two
# (`-j 2` with a single run: the vector engine's threads), and auto. A planted bug in any of
# them turns a violation here into a proof, so these fast tests are what the mutation sample
# counts (docs/mutation.md).

EVERY_ENGINE = {"scalar": ("scalar",), "vector": ("vector",), "vector-j2": ("vector", "-j", "2"),
                "auto": ("auto",)}


def _judged(cli, tmp_path: Path, text: str, engine: str, code: int) -> dict:
    """The single run's report on `engine` (a key of EVERY_ENGINE), its engine checked."""
    how, *more = EVERY_ENGINE[engine]
    run = _report(cli, tmp_path, text, how, code, *more)
    assert run["engine"] == ("scalar" if how == "auto" else how)
    return run


def _steps(trace: dict) -> list[tuple]:
    return [(s["action"], s["choices"], s["state"]) for s in trace["steps"]]


CHAINED = """\
machine: chained
params:
  K: [1]
vars:
  n: {type: int, min: 0, max: 3, init: 0}
actions:
  up:
    when: 0 <= n <= K
    do:
      - set: {n: n + 1}
terminal: n == 3
properties:
  within: {always: '0 <= n <= K < 5'}
  ends: {terminates: true}
"""


@pytest.mark.verdict
@pytest.mark.parametrize("engine", EVERY_ENGINE)
def test_a_chained_comparison_checks_every_link(cli, tmp_path, engine):
    """`0 <= n <= K` is `0 <= n and n <= K`: read as `0 <= n and 0 <= K` (the link from n to
    K dropped), the guard lets n reach the terminal 3 and the invariant holds: two false proofs."""
    run = _judged(cli, tmp_path, CHAINED, engine, 1)
    props = _props(run)
    bad = [(None, {}, {"n": 0}), ("up", {}, {"n": 1}), ("up", {}, {"n": 2})]
    assert props["within"]["status"] == "violated" and props["within"]["message"] == "false in this state"
    assert _steps(props["within"]["trace"]) == bad
    assert props["ends"]["status"] == "violated"
    assert props["ends"]["message"] == "deadlock: a non-terminal state with no enabled action"
    assert _steps(props["ends"]["trace"]) == bad
    assert run["stats"]["states"] == 3 and run["stats"]["transitions"] == 2


RANGED = """\
machine: ranged
params:
  K: [3]
vars:
  x: {type: int, min: 0, max: 3, init: 0}
  done: {type: bool, init: false}
actions:
  pick:
    when: not done
    choose: {c: {min: 1, max: K}, d: {min: 0, max: 2}}
    do:
      - set: {x: c, done: d == 2}
terminal: done
properties:
  small: {always: 'x < K'}
  never_two: {step: 'd != 2 or c != 1'}
"""


@pytest.mark.verdict
@pytest.mark.parametrize("engine", EVERY_ENGINE)
def test_a_range_choice_takes_its_max(cli, tmp_path, engine):
    """`{min: 1, max: K}` is 1..K, both ends included: without its max, x never reaches K
    (and d never 2) and both properties would be proved."""
    run = _judged(cli, tmp_path, RANGED, engine, 1)
    props = _props(run)
    assert props["small"]["status"] == "violated" and props["small"]["message"] == "false in this state"
    assert _steps(props["small"]["trace"]) == [(None, {}, {"x": 0, "done": False}),
                                               ("pick", {"c": 3, "d": 0}, {"x": 3, "done": False})]
    assert (props["never_two"]["status"], props["never_two"]["message"]) == ("violated", "false for this transition")
    assert _steps(props["never_two"]["trace"]) == [(None, {}, {"x": 0, "done": False}),
                                                   ("pick", {"c": 1, "d": 2}, {"x": 1, "done": True})]
    # x in 0..3 with done false, x in 1..3 with done true; 3 * 3 choices from each of 4 states
    assert run["stats"]["states"] == 7 and run["stats"]["transitions"] == 36


@pytest.mark.verdict
@pytest.mark.parametrize("engine", [*EVERY_ENGINE, "scalar-plain"])
@pytest.mark.parametrize("value", [4, 4294967299], ids=["small", "past-int32"])
def test_a_decided_constant_outside_the_domain_is_a_violation_on_every_engine(cli, tmp_path, engine, value):
    """A decide rule's constant is range-checked where its rule fires, like any computed value:
    stored unchecked, the scalar engine crashed (exit 4) on the state outside the domain. The
    scalar engine's generated loop and its plain one (an independence property sends a spec
    there) check it each."""
    text = DECIDE.format(when="x == 3", value=value).replace("top: [3, 5]", "top: [3]")
    if engine == "scalar-plain":
        text, engine = text + "  plain: {independent_of: x}\n", "scalar"
    run = _judged(cli, tmp_path, text, engine, 1)
    dom = _props(run)["domains"]
    assert dom["status"] == "violated" and dom["message"] == f"d = {value} is outside its domain 0..3"
    assert [(s["action"], s["rule"], s["state"]) for s in dom["trace"]["steps"]] == [
        (None, None, {"x": 0, "d": 0}), ("go", "keep", {"x": 1, "d": 0}), ("go", "keep", {"x": 2, "d": 0}),
        ("go", "jump", {"x": 3, "d": value})]
    assert run["stats"]["states"] == 3


WITHIN_ZERO = """\
machine: zero
params:
  K: [0]
vars:
  x: {{type: int, min: 0, max: 1, init: {init}}}
actions:
  step:
    when: x < 1
    do:
      - set: {{x: x + 1}}
terminal: x == 1
properties:
  none: {{terminates_within: 0}}
  none_by_param: {{terminates_within: K}}
  none_counted: {{terminates_within: 0, count: 'after.x > 1'}}
"""


@pytest.mark.verdict
@pytest.mark.parametrize("engine", EVERY_ENGINE)
def test_terminates_within_zero_holds_when_the_initial_state_is_terminal(cli, tmp_path, engine):
    """N = 0 is a bound like any other (docs: "N is 0 or more"): no run takes a transition."""
    run = _judged(cli, tmp_path, WITHIN_ZERO.format(init=1), engine, 0)
    props = _props(run)
    for name in ("none", "none_by_param"):
        assert (props[name]["status"], props[name]["message"]) == (
            "holds", "every run ends within 0 transitions (the longest takes 0)")
    assert (props["none_counted"]["status"], props["none_counted"]["message"]) == (
        "holds", "every run ends within 0 counted transitions (the longest takes 0)")
    assert run["stats"]["states"] == 1


@pytest.mark.verdict
@pytest.mark.parametrize("engine", EVERY_ENGINE)
def test_terminates_within_zero_is_violated_by_one_transition(cli, tmp_path, engine):
    """The one run takes one transition: more than 0, the longest run its trace; counting only
    transitions to x > 1 (none), it holds."""
    run = _judged(cli, tmp_path, WITHIN_ZERO.format(init=0), engine, 1)
    props = _props(run)
    for name in ("none", "none_by_param"):
        assert props[name]["status"] == "violated"
        assert props[name]["message"] == "a run takes 1 transition, more than 0"
        assert _steps(props[name]["trace"]) == [(None, {}, {"x": 0}), ("step", {}, {"x": 1})]
    assert (props["none_counted"]["status"], props["none_counted"]["message"]) == (
        "holds", "every run ends within 0 counted transitions (the longest takes 0)")
