"""The answers a person acts on, for a violated probability (issue 33): the most probable run
to the bad outcome under the witness policy, with its exact probability, and the witness
policy as a decide table over the user's vars (properties/answers.py, explorer/chances.py).
Each spec's answer is known by hand; a solver that picks the wrong run or policy fails them,
on the exact path and on the array path (explorer/chances.py's LARGE lowered to 0) alike."""

from __future__ import annotations

import json

import pytest

from haltproof.explorer import chances as C
from haltproof.properties.answers import cubes

pytestmark = pytest.mark.verdict

# Two runs fail: left then fail (1/3 * 1/3 = 1/9) and right then fail (2/3 * 1/4 = 1/6).
PATHS = """\
machine: paths
vars:
  at: {type: enum, values: [start, left, right, fail, ok], init: start}
actions:
  first:
    when: at == start
    choose:
      way: [left, right]
    do:
      - set: {at: way}
  from_left:
    when: at == left
    choose:
      r: [fail, ok]
    do:
      - set: {at: r}
  from_right:
    when: at == right
    choose:
      r: [fail, ok]
    do:
      - set: {at: r}
terminal: at == fail or at == ok
probabilities:
  first:
    way: {left: 1/3, right: 2/3}
  from_left:
    r: {fail: 1/3, ok: 2/3}
  from_right:
    r: {fail: 1/4, ok: 3/4}
properties:
  rarely_fails: {probability: {reach: at == fail, at_most: 1/10}}
"""

# Failing at once (bad, 1/10) is less probable than failing at the limit after two fine
# steps (9/10 * 9/10 = 81/100). `hand` is a choice of the policy that changes nothing.
LONGER = """\
machine: longer
vars:
  n: {type: int, min: 0, max: 2, init: 0}
  status: {type: enum, values: [going, failed], init: going}
actions:
  step:
    when: status == going
    choose:
      hand: [left, right]
      obs: [bad, fine]
    do:
      - set: {n: n + 1}
      - decide: status
        rules:
          - {name: broke, when: obs == bad, then: failed}
          - {name: limit, when: n >= 2, then: failed}
          - {name: again, then: going}
terminal: status == failed
probabilities:
  step:
    obs: {bad: 1/10, fine: 9/10}
properties:
  quick_failure: {probability: {reach: status == failed, at_most: 1/2}}
  passes_one: {probability: {reach: n >= 1 and status == going, at_least: 19/20}}
"""

# Careful (hit 1/2, else try again, three tries) or bold (hit 3/4, else lost). The most
# likely success: careful while a try is left after this one (n=0: 15/16, n=1: 7/8), bold
# on the last try (3/4 > 1/2). The least: bold at once (3/4 < careful's 7/8).
CAREFUL_OR_BOLD = """\
machine: careful_or_bold
vars:
  n: {type: int, min: 0, max: 3, init: 0}
  status: {type: enum, values: [going, success, fail], init: going}
actions:
  careful:
    when: status == going
    choose:
      obs: [hit, miss]
    do:
      - set: {n: n + 1}
      - decide: status
        rules:
          - {name: got_it, when: obs == hit, then: success}
          - {name: out_of_tries, when: n >= 3, then: fail}
          - {name: again, then: going}
  bold:
    when: status == going
    choose:
      obs: [hit, miss]
    do:
      - decide: status
        rules:
          - {name: lucky, when: obs == hit, then: success}
          - {name: lost, then: fail}
terminal: status != going
probabilities:
  careful:
    obs: {hit: 1/2, miss: 1/2}
  bold:
    obs: {hit: 3/4, miss: 1/4}
properties:
  not_too_sure: {probability: {reach: status == success, at_most: 9/10}}
  likely: {probability: {reach: status == success, at_least: 4/5}}
"""

# The policy picks how to fail: `risky` fails half the time in one run; `spread` fails 3/4
# of the time over three runs, the likeliest 3/10. The witness (max) policy spreads.
SPREAD = """\
machine: spread
vars:
  status: {type: enum, values: [going, done, fail_a, fail_b, fail_c, fail_r], init: going}
actions:
  risky:
    when: status == going
    choose:
      r: [fail, ok]
    do:
      - decide: status
        rules:
          - {name: r_failed, when: r == fail, then: fail_r}
          - {name: r_ok, then: done}
  spread:
    when: status == going
    choose:
      r: [a, b, c, d]
    do:
      - decide: status
        rules:
          - {name: failed_a, when: r == a, then: fail_a}
          - {name: failed_b, when: r == b, then: fail_b}
          - {name: failed_c, when: r == c, then: fail_c}
          - {name: fine, then: done}
terminal: status != going
probabilities:
  risky:
    r: {fail: 1/2, ok: 1/2}
  spread:
    r: {a: 3/10, b: 1/4, c: 1/5, d: 1/4}
properties:
  safe: {probability: {reach: status != going and status != done, at_most: 1/2}}
"""


def step(state, action=None, choices=None, rule=None):
    return {"state": state, "action": action, "choices": choices or {}, "rule": rule}


def run_of(check, text, name, *extra):
    r = check(text, "--format", "json", *extra)
    assert r.code == 1, r.err
    return next(p for p in json.loads(r.out)["runs"][0]["properties"] if p["name"] == name)


PATHS_RUN = {"goal": "a run that reaches it", "probability": "1/6", "value": 1 / 6, "odds": ["2/3", "1/4"],
             "trace": {"kind": "path", "loop_start": None, "params": {},
                       "steps": [step({"at": "start"}), step({"at": "right"}, "first", {"way": "right"}),
                                 step({"at": "fail"}, "from_right", {"r": "fail"})]}}
NOTHING = {"side": "max", "states": 0, "rows": [],
           "message": "no state the policy reaches has enabled choices of different values: nothing to decide"}


@pytest.fixture(params=["exact", "arrays"])
def path(request, monkeypatch):
    """Each answer on both solvers: the exact one, and the array one (every model large)."""
    if request.param == "arrays":
        monkeypatch.setattr(C, "LARGE", 0)
    return request.param


@pytest.mark.parametrize("engine", ["scalar", "vector"])
def test_the_most_probable_of_two_failing_runs(check, path, engine):
    """1/6 beats 1/9: the run through `right`, with each step's exact probability; the
    shortest counterexample (the trace) goes left. A chain: the policy decides nothing."""
    p = run_of(check, PATHS, "rarely_fails", "--engine", engine)
    assert p["most_probable_run"] == PATHS_RUN
    assert p["trace"]["steps"][1]["choices"] == {"way": "left"}
    assert p["decide_table"] == NOTHING


def test_a_longer_run_more_probable_than_a_shorter_one(check, path):
    """Failing at once (1/10) is a run of one step; two fine steps then the limit (81/100)
    is the answer. `hand` is a choice whose values are worth the same: no decide table."""
    p = run_of(check, LONGER, "quick_failure")
    assert p["most_probable_run"] == {
        "goal": "a run that reaches it", "probability": "81/100", "value": 0.81, "odds": ["9/10", "9/10"],
        "trace": {"kind": "path", "loop_start": None, "params": {}, "steps": [
            step({"n": 0, "status": "going"}),
            step({"n": 1, "status": "going"}, "step", {"hand": "left", "obs": "fine"}, "again"),
            step({"n": 2, "status": "failed"}, "step", {"hand": "left", "obs": "fine"}, "limit")]}}
    assert p["decide_table"] == NOTHING


def test_a_run_that_misses_the_target_never_passes_through_it(check, path):
    """`at_least`: the bad outcome is a run that ends without reaching the target. Two fine
    steps (81/100) end in a failure but pass n=1 going, the target: the answer is the bad
    step at once (1/10)."""
    p = run_of(check, LONGER, "passes_one")
    assert p["most_probable_run"]["goal"] == "a run that ends without reaching it"
    assert (p["most_probable_run"]["probability"], p["most_probable_run"]["odds"]) == ("1/10", ["1/10"])
    assert p["most_probable_run"]["trace"]["steps"][1:] == [
        step({"n": 1, "status": "failed"}, "step", {"hand": "left", "obs": "bad"}, "broke")]


def test_the_run_follows_the_witness_policy(check, path):
    """The likeliest failing run of all is risky's (1/2), but the policy that makes failure
    most likely spreads (3/4): the answer is spread's likeliest run, 3/10."""
    p = run_of(check, SPREAD, "safe")
    assert p["value"]["max"] == pytest.approx(3 / 4, abs=1e-9)
    assert (p["most_probable_run"]["probability"], p["most_probable_run"]["odds"]) == ("3/10", ["3/10"])
    assert p["most_probable_run"]["trace"]["steps"][1] == step({"status": "fail_a"}, "spread", {"r": "a"}, "failed_a")
    assert p["decide_table"] == {"side": "max", "states": 1, "rows": [
        {"when": {"status": ["going"]}, "action": "spread", "choices": {}}]}


def test_the_policy_as_a_decide_table(check, path):
    """The most likely success: careful at n=0 and n=1, bold at n=2, known by hand; the least:
    bold at once, so the run never gets to the other states."""
    high = run_of(check, CAREFUL_OR_BOLD, "not_too_sure")
    assert high["value"]["max"] == pytest.approx(15 / 16, abs=1e-9)
    assert high["decide_table"] == {"side": "max", "states": 3, "rows": [
        {"when": {"n": [0, 1], "status": ["going"]}, "action": "careful", "choices": {}},
        {"when": {"n": [2], "status": ["going"]}, "action": "bold", "choices": {}}]}
    low = run_of(check, CAREFUL_OR_BOLD, "likely")
    assert low["value"]["min"] == pytest.approx(3 / 4, abs=1e-9)
    assert low["decide_table"] == {"side": "min", "states": 1, "rows": [
        {"when": {"n": [0], "status": ["going"]}, "action": "bold", "choices": {}}]}
    assert low["most_probable_run"]["odds"] == ["1/4"]


def test_text_shows_the_run_with_its_odds_and_the_table(check):
    r = check(CAREFUL_OR_BOLD, "--property", "not_too_sure")
    assert r.code == 1
    block = r.out[r.out.index("      most probable"):r.out.index("\n\n1 run")]
    assert block == """\
      most probable run that reaches it under the witness policy: probability 1/2 (0.5)
        step  action     choices  rule    probability  state (changes)
        0     (initial)                                n=0 status=going
        1     careful    obs=hit  got_it  1/2 (0.5)    n=1 status=success
      witness policy as a decide table (3 states where the choice matters):
        n in {0, 1}, status=going -> careful
        n=2, status=going -> bold
      the answer moves most with (dP/d eps as eps of a choice's weight moves to one value, witness policy fixed):
        careful obs=hit (weight 1/2 (0.5)): +1/4 (0.25)
        careful obs=miss (weight 1/2 (0.5)): -1/4 (0.25)
        bold obs=hit (weight 3/4 (0.75)): +1/4 (0.25)
        bold obs=miss (weight 1/4 (0.25)): -1/4 (0.25)"""
    r = check(PATHS)
    assert "      witness policy as a decide table: no state the policy reaches has enabled choices of " \
           "different values: nothing to decide\n" in r.out
    assert "        1     first       way=right        2/3 (0.666667)  at=right\n" in r.out
    assert "        2     from_right  r=fail           1/4 (0.25)      at=fail\n" in r.out


def test_html_shows_the_run_and_the_table(check):
    r = check(CAREFUL_OR_BOLD, "--property", "not_too_sure", "--format", "html")
    assert r.code == 1
    assert ('<h4 id="run-0-not_too_sure-likeliest">most probable run that reaches it: not_too_sure '
            '<span class="muted">— under the witness policy, probability 1/2 (0.5)</span></h4>') in r.out
    assert ('<td class="rule">got_it</td><td class="odds">1/2 (0.5)</td>') in r.out
    assert ('<tr><td class="mono">n in {0, 1}, status=going</td><td class="mono">careful</td></tr>\n'
            '<tr><td class="mono">n=2, status=going</td><td class="mono">bold</td></tr>\n</table>') in r.out


def test_cubes_merge_only_what_they_stand_for():
    """Four points of one decision and one of another: rows merge one var at a time, and no
    row covers the other decision's point (x=1, y=1)."""
    points = [((0, 0), "a"), ((0, 1), "a"), ((1, 0), "a"), ((1, 1), "b"), ((2, 0), "a")]
    got = [(tuple(sorted(s) for s in cube), d) for cube, d in cubes(points)]
    assert sorted(got) == sorted([(([0], [0, 1]), "a"), (([1, 2], [0]), "a"), (([1], [1]), "b")]) or \
        sorted(got) == sorted([(([0, 1, 2], [0]), "a"), (([0], [1]), "a"), (([1], [1]), "b")])
    covered = {(x, y) for cube, d in cubes(points) if d == "a" for x in cube[0] for y in cube[1]}
    assert covered == {(0, 0), (0, 1), (1, 0), (2, 0)}


@pytest.mark.parametrize("engine", ["scalar", "vector"])
def test_past_the_exact_limit_the_answers_come_from_the_arrays(monkeypatch, engine):
    """The ring of test_probability_solver.py past an exact limit lowered to 2 (the model from
    the exact one's objects, solved on arrays). Minimum: waiting at 0 (0) beats stepping, so
    the choice matters there, and no run ends; maximum: one step of waiting is worth what
    stepping is (the value of 0, where it stays), but waiting every time never gets there:
    the table says to step in each state of the ring, and the likeliest run steps out (3/8)."""
    import textwrap

    from haltproof.explorer.check import check_spec
    from haltproof.explorer.options import Options
    from haltproof.machine.spec import parse_spec
    from haltproof.properties import probability as P

    from test_probability_solver import WAITING_RING
    monkeypatch.setattr(P, "EXACT_LIMIT", 2)
    (r,) = check_spec(parse_spec(textwrap.dedent(WAITING_RING), "t.yaml"), Options(engine=engine))
    surely, maybe = ([p for p in r.properties if p.name == n][0] for n in ("surely", "maybe"))
    assert surely.likeliest is None
    assert surely.decide_table == {"side": "min", "states": 1, "rows": [
        {"when": {"x": [0]}, "action": "wait", "choices": {}}]}
    assert maybe.decide_table == {"side": "max", "states": 3, "rows": [
        {"when": {"x": [0, 1, 2]}, "action": "step", "choices": {}}]}
    assert maybe.likeliest is not None
    assert (maybe.likeliest.probability, maybe.likeliest.odds) == ("3/8", ["3/8"])
    assert [(s.action, s.choices, s.state) for s in maybe.likeliest.trace.steps] == [
        (None, {}, {"x": 0}), ("step", {"way": "out"}, {"x": 3})]


def test_the_how_to_shows_what_checking_the_example_prints(cli, monkeypatch):
    """docs/how-to/probabilities.md shows what checking docs/examples/careful_or_bold.yaml prints."""
    import re

    from conftest import ROOT
    page = (ROOT / "docs" / "how-to" / "probabilities.md").read_text()
    (shown,) = re.findall(r"```text\n\$ haltproof check docs/examples/careful_or_bold.yaml\n(.*?)```", page, re.S)
    monkeypatch.chdir(ROOT)
    ran = cli("check", "docs/examples/careful_or_bold.yaml")
    assert ran.code == 1
    assert re.sub(r"\d+\.\d\d s", "0.01 s", ran.out) == shown


def test_a_violated_expected_total_gets_the_decide_table(check, path):
    """The most transitions: careful at n=0 (1 + 1/2 * 3/2 = 7/4) and n=1 (1 + 1/2 * 1 = 3/2)
    against bold's 1; at n=2 either takes one transition: the choice does not matter there.
    No most probable run: an expected total has no bad outcome to reach."""
    text = CAREFUL_OR_BOLD + "  short: {expected: {measure: transitions, at_most: 3/2}}\n"
    p = run_of(check, text, "short")
    assert p["value"]["max"] == pytest.approx(7 / 4, abs=1e-9)
    assert "most_probable_run" not in p
    assert p["decide_table"] == {"side": "max", "states": 2, "rows": [
        {"when": {"n": [0, 1], "status": ["going"]}, "action": "careful", "choices": {}}]}


def test_where_the_largest_total_is_infinite_the_table_says_how(check, path):
    """The retry loop with `wait`: the most transitions is infinite, as is every choice's
    one-step value there; calling ends with probability 1, waiting every time never does:
    the table says to wait (the choices differ in how likely they end)."""
    from test_probability_properties import RETRY, WAIT
    p = run_of(check, RETRY.replace("terminal:", WAIT + "terminal:"), "cost")
    assert p["value"]["max"] is None
    assert p["decide_table"] == {"side": "max", "states": 1, "rows": [
        {"when": {"status": ["trying"]}, "action": "wait", "choices": {}}]}
    assert p["policy"] == [{"state": {"status": "trying"}, "action": "wait", "choices": {}}]


def test_a_bound_reached_while_finding_the_answers_keeps_the_violation(check, monkeypatch):
    """The deadline passes while the most probable run is searched for: the violation (decided
    already) stands with its counterexample, the answers are left out, and the run says where
    the bound was reached (the outcome table, next, is not computed)."""
    from haltproof.properties import answers as A
    from haltproof.properties import budget

    def late(*args, **kwargs):
        budget.expire("finding the most probable run")
        budget.tick()                       # the search's next look at the clock
        raise AssertionError("tick raises past the deadline")
    monkeypatch.setattr(A, "likeliest", late)
    r = check(PATHS, "--format", "json", "--timeout", "600")
    assert r.code == 1
    run = json.loads(r.out)["runs"][0]
    p = next(p for p in run["properties"] if p["name"] == "rarely_fails")
    assert (p["status"], p["exact"]["max"]) == ("violated", "5/18")
    assert p["trace"] is not None and "most_probable_run" not in p and "decide_table" not in p
    assert run["stopped_by"] == "timeout"
    assert run["outcomes"]["message"].startswith("not computed: the --timeout 600 s was reached while "
                                                 "finding the most probable run")


def _best_by_brute_force(mdp, policy, start, goal, avoid):
    """The largest product over every simple run (a cycle only multiplies by odds <= 1)."""
    from fractions import Fraction
    best = None
    stack = [(start, Fraction(1), {start})]
    while stack:
        s, p, seen = stack.pop()
        if goal[s]:
            best = p if best is None or p > best else best
            continue
        if s not in policy or not mdp.choices[s]:
            continue
        for t, q, _ in mdp.choices[s][policy[s]].outcomes:
            if q and t not in seen and not avoid[t]:
                stack.append((t, p * q, seen | {t}))
    return best


def test_random_chains_agree_with_brute_force_on_both_solvers():
    """300 random MDPs under a random policy: the exact search and the array search find a
    run of the largest probability over every simple run (brute force), or none when there
    is none; each run follows the policy, from the start to a goal, avoiding what it must."""
    import random

    import numpy as np

    from haltproof.properties import answers as A
    from haltproof.properties import probability as P
    from test_storm import random_mdp
    rng = random.Random(3)
    found = 0
    for _ in range(300):
        mdp, targets, _ = random_mdp(rng)
        policy = {s: rng.randrange(len(c)) for s, c in enumerate(mdp.choices) if c}
        goal = np.array(targets["goal"], dtype=bool)
        avoid = np.array([rng.random() < 0.2 and not g for g in goal], dtype=bool)
        start = mdp.initial[0]
        avoid[start] = False
        want = _best_by_brute_force(mdp, policy, start, goal, avoid)
        m = P.from_mdp(mdp)
        rows = np.full(mdp.n, -1, dtype=np.int64)
        for s, ci in policy.items():
            rows[s] = m.row_start[s] + ci
        for run in (A.likeliest(mdp, policy, start, goal.__getitem__, avoid.__getitem__),
                    A.likeliest_arrays(m, rows, start, goal, avoid)):
            if want is None:
                assert run is None
                continue
            assert run is not None and run.probability == want
            at = start
            for e, p in zip(run.edges, run.odds):
                assert not goal[at]
                (t, q), = [(t, q) for t, q, x in mdp.choices[at][policy[at]].outcomes if x == e]
                assert q == p and not avoid[t]
                at = t
            assert goal[at]
            found += 1
    assert found > 200


def _step_reward(mdp, reward):
    """Per (state, choice index), its expected reward for one step."""
    from haltproof.properties import probability as P
    return lambda s, ci: P._mean(mdp.choices[s][ci], reward)


def test_where_the_choice_matters_agrees_on_both_solvers():
    """200 random MDPs, each side of a reach probability and of an expected total (where it
    is finite): a state's choices differ by the exact values exactly where they do by the
    array solver's intervals."""
    import random

    import numpy as np

    from haltproof.properties import answers as A
    from haltproof.properties import probability as P
    from haltproof.properties import sparse as S
    from test_storm import random_mdp
    rng = random.Random(5)
    differing = 0
    for _ in range(200):
        mdp, targets, rewards = random_mdp(rng)
        goal = np.array(targets["goal"], dtype=bool)
        m = P.from_mdp(mdp)
        for sense in ("min", "max"):
            values, _ = P.reach_values(mdp, goal, sense)
            b = S.reach_intervals(m, goal, sense)
            arrays = A.matters_arrays(m, b.lo, b.hi, np.zeros(m.rows), False)
            exact = [bool(mdp.choices[s]) and A.matters(mdp, s, values, None) for s in range(mdp.n)]
            assert [bool(x) for x in arrays] == exact, (sense, values, b.lo, b.hi)
            differing += sum(exact)
        totals = P.expected_total(mdp, rewards["cost"])
        const = P.row_rewards(m, rewards["cost"])
        for sense, values in (("min", totals.min_values), ("max", totals.max_values)):
            b = S.expected_intervals(m, const, sense)
            arrays = A.matters_arrays(m, b.lo, b.hi, const, True)
            step = _step_reward(mdp, rewards["cost"])
            exact = [bool(mdp.choices[s]) and A.matters(mdp, s, values, step) for s in range(mdp.n)]
            finite = [s for s in range(mdp.n) if s in values]     # an infinite total: chances.py's own case
            assert [bool(arrays[s]) for s in finite] == [exact[s] for s in finite], (sense, values, b.lo, b.hi)
            differing += sum(exact)
    assert differing > 200
