"""Verdicts and figures that must be exact on every engine (issue 11): bounds summed
without wrapping, an evaluation error reported whatever else failed, a terminal
predicate or guard that cannot be evaluated, and a decide constant outside its var's
domain. Each case runs through the CLI on `--engine scalar`, `vector` and `auto`; a
spec the vector engine does not take (`//`) must be refused there with exit 2."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from machine.compiled import CompiledSpec
from machine.spec import parse_spec
from machine.vectorize import vectorize

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
    from properties.termination import Peeled, _total_type
    three = Peeled([np.arange(1), np.arange(1, 2), np.arange(2, 3)])
    assert _total_type(three, np.array([0, 2 ** 61 - 1, -5], dtype=np.int64)) is np.int64   # 4 (2^61 - 1) fits
    assert _total_type(three, np.array([0, -2 ** 61, 5], dtype=np.int64)) is object         # 4 * 2^61 = 2^63 does not
    assert _total_type(three, None) is np.int64


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
