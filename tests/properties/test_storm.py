"""`haltproof export --format prism`, and haltproof's exact probabilities and expected totals
cross-checked against Storm (stormpy) on the exported models: equal as exact rationals.

The cross-check needs the optional `stormpy` wheel (in the `test` extra where a wheel exists:
Linux x86-64); without it those tests are skipped, saying so."""

from __future__ import annotations

import json
import random
import tempfile
from fractions import Fraction
from pathlib import Path

import pytest

from haltproof.properties import probability as P
from haltproof.properties.probability import MDP, Choice
from haltproof.reports.prism import write_prism

from conftest import ROOT
from test_probability_properties import AGENT, RETRY, SPIN, WAIT

try:
    import stormpy
except ImportError:       # the optional wheel: only the cross-checks need it
    stormpy = None

needs_storm = pytest.mark.skipif(stormpy is None, reason="stormpy is not installed (pip install stormpy: "
                                                        "a wheel exists for Linux x86-64 only)")

RETRY_PRISM = """\
// haltproof export of bad.yaml [retry], no params: 2 explored states
mdp

module retry
  s : [0..1];
  [c0] s=0 -> 1/2 : (s'=1) + 1/2 : (s'=0);
  [] s=1 -> (s'=1);
endmodule

init s=0 endinit

label "terminal" = s=1;
label "deadlock" = false;
label "reach_ends" = s=1;

rewards "transitions"
  [c0] s=0 : 1;
endrewards
"""


def test_export_writes_the_explored_mdp(check, tmp_path):
    r = check(RETRY, command="export")
    assert (r.code, r.err) == (0, "")
    assert r.out.replace(r.path, "bad.yaml") == RETRY_PRISM


def test_a_measure_that_is_always_0_still_makes_a_reward_structure(check):
    """An empty `rewards ... endrewards` is a parse error in PRISM and Storm."""
    text = RETRY.replace("probabilities:", "measures:\n  waits: {count: action == wait}\nprobabilities:")
    text = text.replace("terminal:", WAIT.replace("when: status == trying", "when: status == done") + "terminal:")
    r = check(text, command="export")
    assert r.code == 0, r.err
    assert 'rewards "waits"\n  true : 0;\nendrewards\n' in r.out
    if stormpy is not None:
        assert storm(r.out, 'R{"waits"}max=? [F "terminal"]') == [Fraction(0)]


def test_export_writes_probabilities_of_any_length(check):
    """Two weights of 2,500 digits on one action: each edge's probability, their product, has
    about 5,000, past the 4,300 digits Python turns into text (issue 26, finding 7: exit 4)."""
    from haltproof.machine.text import fraction_from_json
    w, rest = "0." + "3" * 2498 + "1", "0." + "6" * 2498 + "9"
    text = f"""\
machine: odds
vars:
  x: {{type: int, min: 0, max: 4, init: 0}}
actions:
  go:
    when: x == 0
    choose:
      a: [lo, hi]
      b: [lo, hi]
    do:
      - set: {{x: "(1 if a == hi else 0) + (2 if b == hi else 0) + 1"}}
terminal: x > 0
probabilities:
  go:
    a: {{lo: {w}, hi: {rest}}}
    b: {{lo: {w}, hi: {rest}}}
properties:
  both: {{probability: {{reach: x == 4, at_most: 0.5}}}}
"""
    r = check(text, command="export")
    assert (r.code, r.err) == (0, "haltproof export: note: 4 of the model's probabilities and rewards have a "
                                  "numerator or denominator past 64 bits (weights of more than 18 digits): written "
                                  "exactly, but Storm's PRISM parser reads integers of 64 bits at most\n")
    (line,) = [ln for ln in r.out.splitlines() if ln.startswith("  [c0] s=0 -> ")]
    odds = [fraction_from_json(part.split(" : ")[0]) for part in line.removeprefix("  [c0] s=0 -> ").split(" + ")]
    low, high = Fraction(w), Fraction(rest)
    assert odds == [low * low, high * low, low * high, high * high]
    assert len(line) > 4 * 4300


def test_export_needs_one_param_combination(check):
    r = check((ROOT / "docs" / "examples" / "retry_loop.yaml").read_text(), command="export")
    assert r.code == 2 and r.out == ""
    assert "an export is of one param combination, and 12 are declared; pin K, R (e.g. -p K=1 -p R=0)" in r.err


def test_export_refuses_a_spec_whose_exploration_has_errors(check):
    text = RETRY.replace("terminal: status == done", "terminal: 1 // 0 == 1")
    r = check(text, command="export")
    assert r.code == 1 and r.out == ""
    assert "cut the exploration short: run `haltproof check` to see them; no model written" in r.err


# ---------------------------------------------------------------- Storm


def storm(prism: str, formula: str) -> list[Fraction | None]:
    """Storm's exact value of `formula` in each initial state (None: infinity)."""
    program = _parse(prism)
    props = stormpy.parse_properties(formula, program)
    model = stormpy.build_model[stormpy.Rational](program, props)
    result = stormpy.model_checking(model, props[0])
    out = []
    for s in model.initial_states:
        text = str(result.get_value(s))
        out.append(None if text == "inf" else Fraction(text))
    return out


def _parse(prism: str):
    """stormpy parses PRISM from a file."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "model.prism"
        path.write_text(prism)
        return stormpy.parse_prism_program(str(path))


def lowest(values):
    return None if all(v is None for v in values) else min(v for v in values if v is not None)


def highest(values):
    return None if any(v is None for v in values) else max(values)


def cross_check(mdp: MDP, targets: dict[str, list[bool]], rewards: dict) -> int:
    """Compare every reach probability and expected total with Storm's; the number compared."""
    labels = {"terminal": mdp.terminal, **targets}
    text = write_prism(mdp, "m", labels, rewards)
    compared = 0
    for name, target in labels.items():
        ours = P.reach(mdp, target)
        assert ours.min == min(storm(text, f'Pmin=? [F "{name}"]')), (name, text)
        assert ours.max == max(storm(text, f'Pmax=? [F "{name}"]')), (name, text)
        compared += 2
    for name, reward in rewards.items():
        ours = P.expected_total(mdp, reward)
        assert ours.min == lowest(storm(text, f'R{{"{name}"}}min=? [F "terminal"]')), (name, text)
        assert ours.max == highest(storm(text, f'R{{"{name}"}}max=? [F "terminal"]')), (name, text)
        compared += 2
    return compared


@needs_storm
@pytest.mark.parametrize("text, pins", [
    (AGENT + "  p: {probability: {reach: decision == success, at_least: 0.5}}\n", []),
    (RETRY, []),
    (RETRY.replace("terminal:", WAIT + "terminal:"), []),
    ((ROOT / "docs" / "examples" / "agent_odds.yaml").read_text(), []),
    ((ROOT / "specs" / "loop_demo.yaml").read_text(), ["-p", "max_steps=4", "-p", "max_retries=1"]),
    ((ROOT / "specs" / "budget_runner.yaml").read_text(), ["-p", "K=4", "-p", "R=1"]),
    ((ROOT / "specs" / "gate_chain.yaml").read_text(), ["-p", "B=3", "-p", "N=2", "-p", "A=2", "-p", "T=4", "-p", "P=3"]),
], ids=["agent", "retry", "retry_wait", "agent_odds", "loop_demo", "budget_runner", "gate_chain"])
def test_weighted_specs_agree_with_storm(check, text, pins):
    """The exported model, checked by Storm, gives haltproof's numbers exactly: each terminal
    value, each probability target, each measure."""
    ran = check(text, *pins, command="export")
    assert ran.code == 0, ran.err
    program = _parse(ran.out)
    labels = [ln.split('"')[1] for ln in ran.out.splitlines() if ln.startswith("label ")]
    measures = [ln.split('"')[1] for ln in ran.out.splitlines() if ln.startswith("rewards ")]
    report = check(text, *pins, "--format", "json")
    run = json.loads(report.out)["runs"][0]
    props = {p["name"]: p for p in run["properties"] if p["kind"] == "probability"}
    compared = 0
    for label in labels:
        lo = storm(ran.out, f'Pmin=? [F "{label}"]')
        hi = storm(ran.out, f'Pmax=? [F "{label}"]')
        value = label.removeprefix("end_")
        if label.startswith("end_") or label == "deadlock":
            ours = run["outcomes"]["ends"][value]["exact"] if "outcomes" in run else None
        elif label.startswith("reach_"):
            ours = props[label.removeprefix("reach_")]["exact"]
        else:
            continue
        if ours is not None:
            assert (Fraction(ours["min"]), Fraction(ours["max"])) == (min(lo), max(hi)), label
            compared += 1
    for name in measures:
        if "outcomes" not in run:
            continue
        ours = run["outcomes"]["expected"][name]["exact"]
        lo = lowest(storm(ran.out, f'R{{"{name}"}}min=? [F "terminal"]'))
        hi = highest(storm(ran.out, f'R{{"{name}"}}max=? [F "terminal"]'))
        as_fraction = [None if x == "inf" else Fraction(x) for x in (ours["min"], ours["max"])]
        assert as_fraction == [lo, hi], name
        compared += 1
    assert program is not None and compared >= 3


def random_mdp(rng: random.Random) -> tuple[MDP, dict[str, list[bool]], dict]:
    """A small random MDP: cycles, several choices, weights with small denominators,
    terminal states and deadlocks, two initial states, and edge rewards of 0 to 3."""
    n = rng.randint(3, 9)
    terminal = [rng.random() < 0.25 for _ in range(n)]
    choices: list[list[Choice]] = []
    edge = 0
    rewards: dict[int, Fraction] = {}
    for s in range(n):
        row = []
        if not terminal[s] and rng.random() > 0.1:          # else a deadlock
            for k in range(rng.randint(1, 3)):
                succ = rng.sample(range(n), rng.randint(1, min(3, n)))
                cuts = sorted(rng.randint(0, 6) for _ in range(len(succ) - 1))
                parts = [b - a for a, b in zip([0, *cuts], [*cuts, 6])]
                outcomes = []
                for t, part in zip(succ, parts):
                    outcomes.append((t, Fraction(part, 6), edge))
                    rewards[edge] = Fraction(rng.randint(0, 3))
                    edge += 1
                row.append(Choice(k, outcomes))
        choices.append(row)
    target = [rng.random() < 0.3 for _ in range(n)]
    initial = sorted(set(rng.sample(range(n), min(2, n))))
    return MDP(choices, terminal, initial), {"goal": target}, {"cost": rewards.__getitem__}


@needs_storm
def test_random_weighted_machines_agree_with_storm():
    rng = random.Random(17)
    compared = 0
    for _ in range(40):
        mdp, targets, rewards = random_mdp(rng)
        compared += cross_check(mdp, targets, rewards)
    assert compared == 40 * 6


@needs_storm
def test_the_interval_past_the_exact_limit_contains_storms_exact_value(check):
    """A 999-state component: haltproof bounds the probability by interval iteration, Storm's
    exact engine computes it; the exact value lies inside the reported interval."""
    from test_probability_properties import WALK
    text = WALK + "  wins: {probability: {reach: x == 1000, at_most: 0.2}}\n"
    ran = check(text, command="export")
    assert ran.code == 0, ran.err
    exact = max(storm(ran.out, 'Pmax=? [F "reach_wins"]'))
    assert exact == (1 - Fraction(3, 2) ** 995) / (1 - Fraction(3, 2) ** 1000)
    prop = json.loads(check(text, "--format", "json").out)["runs"][0]["properties"][-1]
    lo, hi = prop["interval"]["max"]
    assert Fraction(lo) <= exact <= Fraction(hi) and hi - lo < 1e-10


BOUNDS = "".join(f"  {sense}_{n}: {{expected: {{measure: transitions, {sense}: {n}}}}}\n"
                 for sense in ("at_least", "at_most") for n in (1, 3))


@needs_storm
@pytest.mark.verdict
@pytest.mark.parametrize("text", [SPIN + BOUNDS, RETRY.replace("terminal:", WAIT + "terminal:").replace(
    "  cost: {expected: {measure: transitions, at_most: 2}}\n", BOUNDS)], ids=["spin", "retry_wait"])
def test_expected_verdicts_with_infinite_totals_agree_with_storm(check, text):
    """Each `expected` bound judged as Storm's values say it must be: at_least on Rmin, at_most on
    Rmax, infinity above every bound. Spin: both infinite; retry with wait: 2 and infinite."""
    ran = check(text, command="export")
    assert ran.code == 0, ran.err
    low = lowest(storm(ran.out, 'R{"transitions"}min=? [F "terminal"]'))
    high = highest(storm(ran.out, 'R{"transitions"}max=? [F "terminal"]'))
    report = json.loads(check(text, "--format", "json").out)
    judged = {p["name"]: p["status"] for p in report["runs"][0]["properties"] if p["kind"] == "expected"}
    wanted = {}
    for sense in ("at_least", "at_most"):
        for n in (1, 3):
            value = low if sense == "at_least" else high
            if value is None:           # infinity: at least every bound, at most none
                meets = sense == "at_least"
            else:
                meets = value >= n if sense == "at_least" else value <= n
            wanted[f"{sense}_{n}"] = "holds" if meets else "violated"
    assert judged == wanted
    assert high is None and (low is None) == text.startswith(SPIN)
