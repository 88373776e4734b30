"""Mutants of explorer/chances.py that the verdict selection let through (issue 18, the sampled
run of round 7): the words of a bound judged on the iterative solver's interval, and where
the witness of an infinite expected total goes. Each case was worked out by hand and runs on
both engines; each test was seen failing with its mutation applied (docs/explanation/mutation-testing.md)."""

from __future__ import annotations

import textwrap
from fractions import Fraction

import pytest

from haltproof.explorer.chances import value_json
from haltproof.explorer.options import Options
from haltproof.explorer.results import RunResult
from haltproof.explorer.check import check_spec
from haltproof.machine.spec import parse_spec
from haltproof.properties import probability as P
from haltproof.properties.kinds import Subject

pytestmark = pytest.mark.verdict

ENGINES = ("scalar", "vector")


def _run(text: str, engine: str) -> RunResult:
    (r,) = check_spec(parse_spec(textwrap.dedent(text), "t.yaml"), Options(engine=engine))
    return r


def prop(r: RunResult, name: str):
    [p] = [p for p in r.properties if p.name == name]
    return p


# A ring 0 -> 1 -> 2 -> 0 that leaves to the terminal 3 with 1/2 at each step: one strongly
# connected component of 3 states, past an exact limit lowered to 2, so the probability of
# reaching 3 (1) is an interval of the iterative solver.
RING = """\
machine: ring
vars:
  x: {type: int, min: 0, max: 3, init: 0}
actions:
  step:
    when: x < 3
    choose:
      way: [loop, out]
    do:
      - set: {x: 3 if way == out else (x + 1 if x < 2 else 0)}
terminal: x == 3
probabilities:
  step:
    way: {loop: 1/2, out: 1/2}
properties:
  surely: {probability: {reach: x == 3, at_least: 1/2}}
  rarely: {probability: {reach: x == 3, at_most: 1/2}}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_a_bound_judged_on_an_interval_says_which_side_it_is_on(engine, monkeypatch):
    monkeypatch.setattr(P, "EXACT_LIMIT", 2)
    r = _run(RING, engine)
    surely, rarely = prop(r, "surely"), prop(r, "rarely")
    lo, hi = surely.value["interval"]["min"]
    assert surely.value["interval"]["max"] == rarely.value["interval"]["max"] == [lo, hi]
    assert lo < 1 and hi == 1.0
    head = (f"the probability of reaching it is between {lo:.15g} and {hi:.15g} "
            f"(within {hi - lo:.2g}, not exact) under every policy")
    assert (surely.kind, surely.status, surely.message) == ("probability", "holds", f"{head}: at least 1/2 (0.5)")
    assert (rarely.status, rarely.message) == (
        "violated", f"{head}: a policy makes it at least {lo:.15g}, more than 1/2 (0.5)")
    assert [(s.action, s.state["x"]) for s in rarely.trace.steps] == [(None, 0), ("step", 3)]


# From 0 a policy may `hang` (a deadlock at 1: never terminal) or `finish`: the expected
# number of transitions is 1 at least and infinite at most. The witness goes to the deadlock.
STUCK = """\
machine: stuck
vars:
  x: {type: int, min: 0, max: 2, init: 0}
actions:
  hang:
    when: x == 0
    do:
      - set: {x: 1}
  finish:
    when: x == 0
    do:
      - set: {x: 2}
terminal: x == 2
properties:
  cheap: {expected: {measure: transitions, at_most: 5}}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_an_infinite_expected_total_is_witnessed_by_a_run_into_a_deadlock(engine):
    p = prop(_run(STUCK, engine), "cheap")
    assert (p.status, p.message) == (
        "violated", "the expected transitions until a terminal state is between 1 and infinite over the policies: "
                    "a policy makes it infinite, more than 5 (a policy does not reach a terminal state with "
                    "probability 1)")
    assert [(s.action, s.state["x"]) for s in p.trace.steps] == [(None, 0), ("hang", 1)]
    assert p.policy == [{"state": {"x": 0}, "action": "hang", "choices": {}}]


def test_the_exact_side_of_a_half_iterated_value_is_a_point_with_no_error_and_infinity_none():
    """A side solved exactly beside one solved by interval iteration is written as the point
    [x, x] with error 0.0; an infinite exact side as [null, null] with error null (fresh sample,
    seed 19: `x is not None` and `1.0` survived)."""
    half = P.Extremes(Fraction(1, 4), Fraction(1, 2), max_interval=(0.25, 0.75))
    assert value_json(half) == {"value": {"min": 0.25, "max": 0.5},
                                "interval": {"min": [0.25, 0.25], "max": [0.25, 0.75]},
                                "error": {"min": 0.0, "max": 0.25}}
    endless = P.Extremes(Fraction(1, 2), None, min_interval=(0.25, 0.75))
    assert value_json(endless) == {"value": {"min": 0.5, "max": None},
                                   "interval": {"min": [0.25, 0.75], "max": [None, None]},
                                   "error": {"min": 0.25, "max": None}}


# A fair coin from 0: heads ends at 1, tails at 2. `half` holds exactly; `odd` divides by
# x - 1, which fails at state 1: a `well_defined` finding about the property `odd`.
COIN = """\
machine: coin
vars:
  x: {type: int, min: 0, max: 2, init: 0}
actions:
  toss:
    when: x == 0
    choose:
      side: [heads, tails]
    do:
      - set: {x: 1 if side == heads else 2}
terminal: x > 0
probabilities:
  toss:
    side: {heads: 1/2, tails: 1/2}
properties:
  half: {probability: {reach: x == 1, at_least: 1/4}}
  odd: {probability: {reach: 2 // (x - 1) == 1, at_most: 1/2}}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_an_exact_bound_that_holds_says_its_side_and_a_failing_target_names_its_property(engine):
    r = _run(COIN, engine)
    half = prop(r, "half")
    assert (half.kind, half.status, half.message) == (
        "probability", "holds", "the probability of reaching it is 1/2 (0.5) under every policy: at least 1/4 (0.25)")
    wd = prop(r, "well_defined")
    assert (wd.status, wd.message) == ("violated", "property odd (t.yaml:17): integer division or modulo by zero")
    assert [(s.action, s.state["x"]) for s in wd.trace.steps] == [(None, 0), ("toss", 1)]
    assert wd.subject == Subject("property", "odd")
