"""The array solver of a large explored graph (properties/sparse.py, issue 33): cross-checked
with the exact solver on small models forced down the large path (explorer/chances.py's LARGE
lowered to 0), on random MDPs, and with Storm (exact) on models it reads as DRN.

Each check is an interval that must contain the exact value, and a verdict that must be the
exact one whenever the interval decides it: a solver that is wrong fails them."""

from __future__ import annotations

import json
import random
from fractions import Fraction

import numpy as np
import pytest

from haltproof.explorer import chances as C
from haltproof.properties import probability as P
from haltproof.properties import sparse as S

from conftest import ROOT
from test_probability_properties import AGENT, RETRY, SPIN, WAIT, WALK
from test_storm import random_mdp, stormpy

needs_storm = pytest.mark.skipif(stormpy is None, reason="stormpy is not installed")

SPECS = [
    (AGENT + "  p: {probability: {reach: decision == success, at_least: 0.5}}\n", []),
    (RETRY, []),
    (RETRY.replace("terminal:", WAIT + "terminal:"), []),
    (SPIN + "  cheap: {expected: {measure: transitions, at_most: 3}}\n", []),
    ((ROOT / "docs" / "examples" / "agent_odds.yaml").read_text(), []),
    ((ROOT / "specs" / "loop_demo.yaml").read_text(), ["-p", "max_steps=4", "-p", "max_retries=1"]),
    ((ROOT / "specs" / "budget_runner.yaml").read_text(), ["-p", "K=3", "-p", "R=1"]),
    ((ROOT / "specs" / "gate_chain.yaml").read_text(), ["-p", "B=3", "-p", "N=2", "-p", "A=2", "-p", "T=4", "-p", "P=3"]),
]
IDS = ["agent", "retry", "retry_wait", "spin", "agent_odds", "loop_demo", "budget_runner", "gate_chain"]


def contains(exact: dict, bounded: dict) -> None:
    """`bounded` (a value of the array solver) holds the `exact` value of the exact solver on both sides."""
    for side in ("min", "max"):
        want = exact["exact"][side]
        if "exact" in bounded:
            assert bounded["exact"][side] == want, (side, exact, bounded)
            continue
        lo, hi = bounded["interval"][side]
        if want == "inf":
            assert (lo, hi) == (None, None), (side, bounded)
            continue
        assert Fraction(lo) <= Fraction(want) <= Fraction(hi), (side, exact, bounded)
        assert hi - lo <= 1e-9 * max(1.0, abs(hi)), (side, bounded)       # converged
        if lo == hi:
            assert Fraction(lo) == Fraction(want)


@pytest.mark.verdict
@pytest.mark.parametrize("engine", ["scalar", "vector"])
@pytest.mark.parametrize("text, pins", SPECS, ids=IDS)
def test_the_array_solver_brackets_every_exact_answer(check, monkeypatch, text, pins, engine):
    """Every outcome row and every property of the seed specs: the large path (all of it: the
    MDP from the explored arrays, the graph precomputation, the iterations) contains the exact
    value the small path computes, and judges every bound the interval decides as it does."""
    first = check(text, *pins, "--engine", engine, "--format", "json")
    if first.code == 2 and "the vector engine runs YAML stages" in first.err:
        pytest.skip("a spec with bound code runs on the scalar engine only")
    exact = json.loads(first.out)["runs"][0]
    monkeypatch.setattr(C, "LARGE", 0)
    large = json.loads(check(text, *pins, "--engine", engine, "--format", "json").out)["runs"][0]
    rows = 0
    for group in ("ends", "expected"):
        for name, value in exact["outcomes"][group].items():
            contains(value, large["outcomes"][group][name])
            rows += 1
    chances = {p["name"]: p for p in exact["properties"] if p["kind"] in ("probability", "expected")}
    for p in large["properties"]:
        if p["name"] in chances:
            contains(chances[p["name"]], p)
            if p["status"] != "unknown":
                assert p["status"] == chances[p["name"]]["status"], p["message"]
            rows += 1
    assert rows >= 5


def test_random_mdps_are_bracketed():
    """200 random MDPs with cycles, deadlocks, two initial states: every reach probability and
    expected total of the array solver contains the exact solver's value, and a side fixed
    by the graph (0, 1, infinity) is said exactly."""
    rng = random.Random(33)
    compared = 0
    for _ in range(200):
        mdp, targets, rewards = random_mdp(rng)
        m = P.from_mdp(mdp)
        for target in (targets["goal"], mdp.terminal):
            exact = P.reach(mdp, target)
            t = np.array(target, dtype=bool)
            got = P.bounded(m, S.reach_intervals(m, t, "min"), S.reach_intervals(m, t, "max"))
            compared += _bracket(exact, got)
        exact = P.expected_total(mdp, rewards["cost"])
        reward = P.row_rewards(m, rewards["cost"])
        got = P.bounded(m, S.expected_intervals(m, reward, "min"), S.expected_intervals(m, reward, "max"))
        compared += _bracket(exact, got)
    assert compared == 200 * 3 * 2


def _bracket(exact: P.Extremes, got: P.Extremes) -> int:
    for side in ("min", "max"):
        want = exact.min if side == "min" else exact.max
        iv = got.interval(side)
        value = got.min if side == "min" else got.max
        if iv is None:
            assert value == want, (side, want, value)
        else:
            assert want is not None and Fraction(iv[0]) <= want <= Fraction(iv[1]), (side, want, iv)
            assert iv[1] - iv[0] <= 1e-9 * max(1.0, iv[1])
    return 2


def test_graph_fixed_values_are_exact_and_said_so(check, monkeypatch):
    """On the large path, a probability that the graph fixes (1: every run ends) is an exact
    1, never "between 0.99999 and 1"; an iterated value names its interval, and a bound
    inside it (the retry loop costs exactly 2) is not decided."""
    monkeypatch.setattr(C, "LARGE", 0)
    r = check(RETRY, "--format", "json")
    data = json.loads(r.out)["runs"][0]
    assert r.code == 3
    assert data["outcomes"]["ends"]["terminal"] == {"value": {"min": 1.0, "max": 1.0},
                                                    "exact": {"min": "1", "max": "1"}}
    ends, cost = (next(p for p in data["properties"] if p["name"] == n) for n in ("ends", "cost"))
    assert ends["message"] == "the probability of reaching it is 1 under every policy: at least 1"
    lo, hi = cost["interval"]["max"]
    assert lo < 2 < hi and cost["status"] == "unknown"
    assert cost["message"].endswith(f"not decided, the bound 2 lies inside the interval [{lo:.15g}, {hi:.15g}] "
                                    "of the iterative solver")
    text = check(RETRY, "--verbose").out
    assert f"    transitions          about 2 (within {hi - lo:.2g})" in text


def test_expected_totals_past_the_exact_limit_get_a_value(check):
    """The walk of 1,001 states (one component of 999, past EXACT_LIMIT): its expected
    duration was `not computed`; it is now an interval around gambler's ruin's exact value,
    and an `expected` bound outside it is judged."""
    r, i, n = Fraction(3, 2), 995, 1000
    exact = i / Fraction(1, 5) - n / Fraction(1, 5) * (1 - r ** i) / (1 - r ** n)     # 4316.56...
    text = WALK + "  long: {expected: {measure: transitions, at_least: 4000}}\n" \
                  "  short: {expected: {measure: transitions, at_most: 4000}}\n"
    data = json.loads(check(text, "--format", "json").out)["runs"][0]
    long, short = (next(p for p in data["properties"] if p["name"] == n) for n in ("long", "short"))
    lo, hi = long["interval"]["max"]
    assert Fraction(lo) <= exact <= Fraction(hi)
    assert (long["status"], short["status"]) == ("holds", "violated")


# ---------------------------------------------------------------- DRN export and Storm

RETRY_DRN = """\
// haltproof export of bad.yaml [retry], no params: 2 explored states
@type: MDP
@parameters

@reward_models
transitions
@nr_states
2
@nr_choices
2
@model
state 0 init
\taction c0 [1]
\t\t1 : 1/2
\t\t0 : 1/2
state 1 terminal reach_ends
\taction 0 [0]
\t\t1 : 1
"""


def test_drn_export_writes_the_explored_mdp(check):
    r = check(RETRY, "--format", "drn", command="export")
    assert (r.code, r.err) == (0, "")
    assert r.out.replace(r.path, "bad.yaml") == RETRY_DRN


def storm_drn(text: str, formula: str, tmp_path) -> Fraction | None:
    """Storm's exact value of `formula` in the initial state of the DRN model (None: infinity)."""
    path = tmp_path / "model.drn"
    path.write_text(text)
    model = stormpy.build_model_from_drn[stormpy.Rational](str(path))
    result = stormpy.model_checking(model, stormpy.parse_properties(formula)[0])
    value = str(result.get_value(model.initial_states[0]))
    return None if value == "inf" else Fraction(value)


@needs_storm
@pytest.mark.slow
def test_large_intervals_contain_storms_exact_values(check, tmp_path):
    """The walk past the exact limit (a 999-state component) and a 4-way walk with a choice:
    Storm's exact engine on the DRN export; every interval of haltproof contains its value."""
    text = WALK.replace("terminal:", """\
  rest:
    when: x > 0 and x < 1000
    choose:
      go: [back, stay]
    do:
      - set: {x: x - 1 if go == back else x}
terminal:""").replace("probabilities:\n", "probabilities:\n  rest:\n    go: {back: 1/2, stay: 1/2}\n")
    text += "  wins: {probability: {reach: x == 1000, at_most: 0.2}}\n"
    for model in (WALK + "  wins: {probability: {reach: x == 1000, at_most: 0.2}}\n", text):
        ran = check(model, "--format", "drn", command="export")
        assert ran.code == 0, ran.err
        data = json.loads(check(model, "--format", "json").out)["runs"][0]
        wins = next(p for p in data["properties"] if p["name"] == "wins")
        cost = data["outcomes"]["expected"]["transitions"]
        for side, got in (("min", wins), ("max", wins)):
            want = storm_drn(ran.out, f'P{side}=? [F "reach_wins"]', tmp_path)
            lo, hi = got["interval"][side] if "interval" in got else [float(Fraction(got["exact"][side]))] * 2
            assert Fraction(lo) <= want <= Fraction(hi), (side, want, lo, hi)
        for side in ("min", "max"):
            want = storm_drn(ran.out, f'R{{"transitions"}}{side}=? [F "terminal"]', tmp_path)
            if want is None:
                assert cost.get("exact", {}).get(side) == "inf" or cost["interval"][side] == [None, None]
                continue
            lo, hi = cost["interval"][side]
            assert Fraction(lo) <= want <= Fraction(hi), (side, want, lo, hi)


def test_prism_labels_name_runs_of_states_as_ranges():
    """A run of three or more consecutive states is one range term, so a label has one term per
    run (issue 33: a disjunct per state is what Storm's expression evaluator chokes on)."""
    from haltproof.reports.prism import _states
    assert _states([0, 1, 2, 3, 7, 8, 10, 12, 13, 14]) == "(s>=0 & s<=3) | s=7 | s=8 | s=10 | (s>=12 & s<=14)"
    assert (_states([]), _states([5]), _states(np.array([4, 5, 6]))) == ("false", "s=5", "(s>=4 & s<=6)")


@needs_storm
@pytest.mark.slow
def test_past_large_storms_exact_values_lie_in_every_interval(check, tmp_path):
    """The weighted benchmark G(14): 23,625 explored states, past LARGE, so every answer comes
    from the arrays built from the explored graph (no exact solver at all). Storm's exact
    engine on the DRN export: each side of a finishing probability (an interval), of the
    benchmark's abort probability (fixed by the graph: exact) and of the expected transitions
    (an interval) lies in haltproof's answer."""
    text = (ROOT / "bench" / "specs" / "gate_budget_weighted.yaml").read_text()
    text += "  finishes:\n    probability: {reach: status == finished, at_least: 0}\n"
    pins = ("-p", "Q=14", "-p", "B=126", "-p", "A=3")
    ran = check(text, *pins, "--format", "drn", command="export")
    assert ran.code == 0, ran.err
    data = json.loads(check(text, *pins, "--format", "json").out)["runs"][0]
    assert data["stats"]["states"] == 23_625 > C.LARGE
    props = {p["name"]: p for p in data["properties"]}
    answers = [(f'P{side}=? [F "reach_{name}"]', props[name], side)
               for name in ("finishes", "rarely_aborts") for side in ("min", "max")]
    answers += [(f'R{{"transitions"}}{side}=? [F "terminal"]', data["outcomes"]["expected"]["transitions"], side)
                for side in ("min", "max")]
    iterated = 0
    for formula, got, side in answers:
        want = storm_drn(ran.out, formula, tmp_path)
        if "interval" in got and got["interval"][side][0] != got["interval"][side][1]:
            lo, hi = got["interval"][side]
            assert Fraction(lo) <= want <= Fraction(hi) and hi - lo < 1e-9 * max(1, hi), (formula, want, lo, hi)
            iterated += 1
        else:
            exact = got["exact"][side] if "exact" in got else got["interval"][side][0]
            assert Fraction(exact) == want, (formula, want, got)
    assert iterated >= 3           # finishes (both sides) and the expected maximum were iterated


@needs_storm
@pytest.mark.slow
def test_a_large_component_on_the_large_path_contains_storms_value(check, monkeypatch, tmp_path):
    """The walk's 999-state component with every model taken as large (LARGE lowered to 0):
    the arrays built from the explored graph, the interval iteration on a cyclic component,
    the expected total past the exact limit; Storm's exact values lie in each interval."""
    monkeypatch.setattr(C, "LARGE", 0)
    text = WALK + "  wins: {probability: {reach: x == 1000, at_most: 0.2}}\n"
    ran = check(text, "--format", "drn", command="export")
    assert ran.code == 0, ran.err
    data = json.loads(check(text, "--format", "json").out)["runs"][0]
    wins = next(p for p in data["properties"] if p["name"] == "wins")
    cost = data["outcomes"]["expected"]["transitions"]
    for formula, got in (('Pmax=? [F "reach_wins"]', wins), ('R{"transitions"}max=? [F "terminal"]', cost)):
        want = storm_drn(ran.out, formula, tmp_path)
        lo, hi = got["interval"]["max"]
        assert lo < hi and Fraction(lo) <= want <= Fraction(hi), (formula, want, lo, hi)
