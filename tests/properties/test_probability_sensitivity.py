"""The sensitivity of a probability to each declared weight (issue 33, properties/answers.py):
d/d eps of the probability, the witness policy fixed, when value v of a weighted choice gets
weight w_v + eps and the choice's other values are scaled down to keep the sum 1. Known by
hand on small chains, and against the exact solver's own answer at w +- eps on random
chains (a central difference): a wrong derivative fails them."""

from __future__ import annotations

import json
import random
from fractions import Fraction

import pytest

from haltproof.explorer import chances as C
from haltproof.properties import answers as A
from haltproof.properties import probability as P
from haltproof.properties.probability import MDP, Choice

pytestmark = pytest.mark.verdict

# P(reach hit) = w: one draw.
ONE_STEP = """\
machine: one_step
vars:
  at: {type: enum, values: [start, hit, miss], init: start}
actions:
  go:
    when: at == start
    choose:
      r: [hit, miss]
    do:
      - set: {at: r}
terminal: at != start
probabilities:
  go:
    r: {hit: 1/3, miss: 2/3}
properties:
  often: {probability: {reach: at == hit, at_least: 1/4}}
  seldom: {probability: {reach: at == hit, at_most: 1/4}}
"""

# P(reach done) = w1 * w2: two draws of different choices, a third of three values.
TWO_STEPS = """\
machine: two_steps
vars:
  at: {type: enum, values: [start, mid, done, lost], init: start}
actions:
  first:
    when: at == start
    choose:
      r: [ok, bad]
    do:
      - set: {at: "mid if r == 'ok' else 'lost'"}
  second:
    when: at == mid
    choose:
      q: [ok, bad, worse]
    do:
      - set: {at: "done if q == 'ok' else 'lost'"}
terminal: at == done or at == lost
probabilities:
  first:
    r: {ok: 1/2, bad: 1/2}
  second:
    q: {ok: 1/5, bad: 3/5, worse: 1/5}
properties:
  both: {probability: {reach: at == done, at_most: 1/20}}
"""


# A cycle: heads (1/2) wins, tails (1/4) flips again, edge (1/4) loses. P = h / (1 - t) = 2/3.
FLIPS = """\
machine: flips
vars:
  at: {type: enum, values: [flip, won, lost], init: flip}
actions:
  toss:
    when: at == flip
    choose:
      coin: [heads, tails, edge]
    do:
      - set: {at: "won if coin == 'heads' else ('flip' if coin == 'tails' else 'lost')"}
terminal: at != flip
probabilities:
  toss:
    coin: {heads: 1/2, tails: 1/4, edge: 1/4}
properties:
  wins: {probability: {reach: at == won, at_least: 1/2}}
"""


def prop(check, text, name, *extra):
    r = check(text, "--format", "json", *extra)
    assert r.code in (0, 1), r.err
    return next(p for p in json.loads(r.out)["runs"][0]["properties"] if p["name"] == name)


def row(action, choice, toward, weight, derivative):
    return {"action": action, "choice": choice, "toward": toward, "weight": weight,
            "derivative": derivative, "rate": float(Fraction(derivative))}


def test_one_draw_moves_one_for_one(check):
    """P = w: moving eps to `hit` adds eps (1), to `miss` takes eps from hit (-1); on a
    proved property and on a violated one alike."""
    want = [row("go", "r", "hit", "1/3", "1"), row("go", "r", "miss", "2/3", "-1")]
    often, seldom = prop(check, ONE_STEP, "often"), prop(check, ONE_STEP, "seldom")
    assert often["status"] == "holds" and seldom["status"] == "violated"
    assert often["sensitivity"] == {"side": "min", "probability": "1/3", "weights": want}
    assert seldom["sensitivity"] == {"side": "max", "probability": "1/3", "weights": want}


def test_two_draws_move_with_each_others_weight(check):
    """P = w1 * w2 = 1/10. Toward first r=ok: w2 = 1/5; toward r=bad: w1 falls by eps: -1/5.
    Toward second q=ok: w1 = 1/2; toward q=bad (3/5), ok falls by eps * (1/5)/(2/5): -1/4 of
    w1... -1/2 * 1/2 = -1/4; toward q=worse (1/5): ok falls by eps * (1/5)/(4/5): -1/8."""
    p = prop(check, TWO_STEPS, "both")
    assert p["status"] == "violated"
    assert p["sensitivity"] == {"side": "max", "probability": "1/10", "weights": [
        row("second", "q", "ok", "1/5", "1/2"), row("second", "q", "bad", "3/5", "-1/4"),
        row("first", "r", "ok", "1/2", "1/5"), row("first", "r", "bad", "1/2", "-1/5"),
        row("second", "q", "worse", "1/5", "-1/8")]}


def test_a_cycle_moves_through_its_solution(check):
    """P = h / (1 - t). Toward heads: dt = -t/(1-h) = -1/2, so dP = ((1 - t) + h dt) / (1 - t)^2
    = 8/9; toward tails the ratio h : e stays, 0; toward edge: dh = -2/3, dt = -1/3, -32/27."""
    p = prop(check, FLIPS, "wins")
    assert p["status"] == "holds"
    assert p["sensitivity"] == {"side": "min", "probability": "2/3", "weights": [
        row("toss", "coin", "edge", "1/4", "-32/27"), row("toss", "coin", "heads", "1/2", "8/9"),
        row("toss", "coin", "tails", "1/4", "0")]}


def test_text_counts_what_it_leaves_out():
    """Past five, the rest are in the JSON report; a derivative of 0 is counted, not listed."""
    from haltproof.reports.findings import sensitivity_lines
    rows = [row("a", "c", f"v{i}", "1/9", f"-{Fraction(i, 8)}") for i in range(7, 0, -1)] + [row("a", "c", "z", "1/9", "0")]
    assert sensitivity_lines({"side": "max", "probability": "1/2", "weights": rows})[1:] == [
        *[f"  a c=v{i} (weight 1/9 (0.111111)): -{Fraction(i, 8)} ({i / 8:g})" for i in range(7, 2, -1)],
        "  (2 more in the JSON report; 1 of derivative 0 not listed)"]
    assert sensitivity_lines({"side": "max", "probability": "1/2", "weights": rows[-1:]}) == [
        "sensitivity to the weights: no weight moves it (under the witness policy, every derivative is 0)"]


def test_text_lists_the_largest_five(check):
    """The text report: the five largest moves, signed, and how many more the JSON has."""
    r = check(TWO_STEPS)
    assert r.code == 1
    lines = r.out.splitlines()
    at = lines.index("      the answer moves most with (dP/d eps as eps of a choice's weight moves to one value, "
                     "witness policy fixed):")
    assert lines[at + 1:at + 6] == [
        "        second q=ok (weight 1/5 (0.2)): +1/2 (0.5)",
        "        second q=bad (weight 3/5 (0.6)): -1/4 (0.25)",
        "        first r=ok (weight 1/2 (0.5)): +1/5 (0.2)",
        "        first r=bad (weight 1/2 (0.5)): -1/5 (0.2)",
        "        second q=worse (weight 1/5 (0.2)): -1/8 (0.125)"]
    assert not lines[at + 6].startswith("        (")


def test_html_shows_every_weight(check):
    r = check(TWO_STEPS, "--format", "html")
    assert r.code == 1
    assert 'id="run-0-both-sensitivity"' in r.out
    assert ('<tr><td class="mono">second</td><td class="mono">q=bad</td><td>3/5 (0.6)</td>'
            '<td class="rate">-1/4 (0.25)</td></tr>') in r.out


def test_past_the_exact_solver_it_says_so(check, monkeypatch):
    """On the array path the sensitivity is not computed, and the report says so."""
    monkeypatch.setattr(C, "LARGE", 0)
    p = prop(check, ONE_STEP, "seldom")
    assert p["sensitivity"] == {"side": "max", "weights": [], "message": (
        "not computed: the sensitivity to the weights is computed only for models the exact solver "
        "takes (up to 20,000 explored states, components of up to 400 states)")}
    r = check(ONE_STEP)
    assert ("      sensitivity to the weights: not computed: the sensitivity to the weights is computed only "
            "for models the exact solver takes (up to 20,000 explored states, components of up to 400 states)"
            ) in r.out.splitlines()


def test_a_spec_without_weights_has_no_sensitivity(check):
    plain = ONE_STEP.replace("probabilities:\n  go:\n    r: {hit: 1/3, miss: 2/3}\n", "")
    assert "sensitivity" not in prop(check, plain, "seldom")


# ---------------------------------------------------------------- random chains, against the exact solver

ACTIONS = 3


def random_chain(rng: random.Random) -> tuple[int, list[list[tuple[int, dict[str, object]]]], dict]:
    """A random spec-like chain: per action one or two weighted choices (positive weights,
    denominators up to 9), per state an action (or none: it ends), per drawn combination a
    successor (cycles allowed). Returns the size, per state its edges as (successor, the
    action and its choices' values), and the declared weights."""
    weights: dict[str, dict[str, dict[str, Fraction]]] = {}
    for a in range(ACTIONS):
        weights[f"a{a}"] = {}
        for c in range(rng.randint(1, 2)):
            k = rng.randint(2, 3)
            cuts = sorted(rng.sample(range(1, 9), k - 1))
            parts = [Fraction(b - a_, 9) for a_, b in zip([0, *cuts], [*cuts, 9])]
            weights[f"a{a}"][f"c{c}"] = {f"v{i}": w for i, w in enumerate(parts)}
    n = rng.randint(3, 8)
    states: list[list[tuple[int, dict[str, object]]]] = []
    for s in range(n):
        if s >= n - 2 or rng.random() < 0.15:         # the last two end: target and miss
            states.append([])
            continue
        action = f"a{rng.randrange(ACTIONS)}"
        combos: list[dict[str, object]] = [{}]
        for c, table in weights[action].items():
            combos = [{**x, c: v} for x in combos for v in table]
        states.append([(rng.randrange(n), {"action": action, **x}) for x in combos])
    return n, states, weights


def chain_mdp(n: int, states: list, weights: dict) -> tuple[MDP, list[tuple[str, dict]]]:
    """The chain as an MDP (one choice per state), with each edge's action and values."""
    drawn: list[tuple[str, dict]] = []
    choices = []
    for s in range(n):
        outcomes = []
        for t, x in states[s]:
            p = Fraction(1)
            labels = {c: v for c, v in x.items() if c != "action"}
            for c, v in labels.items():
                p *= weights[x["action"]][c][v]
            outcomes.append((t, p, len(drawn)))
            drawn.append((x["action"], labels))
        choices.append([Choice(None, outcomes)] if outcomes else [])
    return MDP(choices, [not c for c in choices], [0]), drawn


def moved(weights: dict, d: A.Toward, eps: Fraction) -> dict:
    """The weights with eps moved toward d's value, the others scaled to keep the sum 1."""
    out = {a: {c: dict(t) for c, t in cs.items()} for a, cs in weights.items()}
    table = out[d.action][d.choice]
    for v in table:
        table[v] = table[v] + eps if v == d.value else table[v] * (1 - d.weight - eps) / (1 - d.weight)
    return out


def test_random_chains_agree_with_the_exact_solver_at_nearby_weights():
    """200 random chains with cycles: (P(w + eps) - P(w - eps)) / 2 eps from the exact solver
    (P.reach_values on the chain rebuilt with moved weights) is each derivative within eps
    (its error is of order eps^2); a derivative off by more fails."""
    rng = random.Random(7)
    eps = Fraction(1, 10 ** 6)
    checked = 0
    for _ in range(200):
        n, states, weights = random_chain(rng)
        mdp, drawn = chain_mdp(n, states, weights)
        target = [s == n - 2 for s in range(n)]
        directions = A.towards((a, c, t) for a, cs in weights.items() for c, t in cs.items())
        policy = {s: 0 for s in range(n) if mdp.choices[s]}
        value, slopes = A.sensitivity(mdp, policy, 0, target, directions, drawn.__getitem__)
        assert value == P.reach_values(mdp, target, "max")[0][0]
        for d, slope in zip(directions, slopes):
            up = P.reach_values(chain_mdp(n, states, moved(weights, d, eps))[0], target, "max")[0][0]
            down = P.reach_values(chain_mdp(n, states, moved(weights, d, -eps))[0], target, "max")[0][0]
            assert abs((up - down) / (2 * eps) - slope) < eps, (d, slope)
            checked += slope != 0
    assert checked > 100
