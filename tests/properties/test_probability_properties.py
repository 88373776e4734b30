"""`probability` and `expected` properties and the outcome table, through the real CLI on
both engines, with values checked by hand (explorer/chances.py, properties/probability.py)."""

from __future__ import annotations

import json
import textwrap
from fractions import Fraction

import pytest

from haltproof.explorer.chances import value_json
from haltproof.explorer.check import check_spec
from haltproof.explorer.options import Options
from haltproof.explorer.results import RunResult
from haltproof.machine.spec import parse_spec
from haltproof.properties import probability as P
from haltproof.properties.kinds import Subject

from engine_ways import prop as run_prop

pytestmark = pytest.mark.verdict      # judges verdicts: in the per-mutant selection (docs/explanation/mutation-testing.md)

# An agent step: the policy picks the tool, the environment the observation (weighted).
# With `search` every step: success 1/2 + 3/10 * 1/2 + 9/100 * 1/2 = 139/200, limit (3/10)^3,
# 1 + 3/10 + 9/100 = 139/100 transitions on average. With `guess` (never succeeds): limit
# (4/5)^3 = 64/125, 1 + 4/5 + 16/25 = 61/25 transitions.
AGENT = """\
machine: agent
vars:
  steps: {type: int, min: 0, max: 3, init: 0}
  decision: {type: enum, values: [going, success, limit, error], init: going}
actions:
  step:
    when: decision == going
    choose:
      tool: [search, guess]
      obs: [ok, empty, error]
    do:
      - set: {steps: steps + 1}
      - decide: decision
        rules:
          - {name: won, when: obs == ok and tool == search, then: success}
          - {name: broke, when: obs == error, then: error}
          - {name: out, when: steps >= 3, then: limit}
          - {name: again, then: going}
terminal:
  label: decision
  values: [success, limit, error]
measures:
  searches: {count: tool == search}
probabilities:
  step:
    obs: {ok: 0.5, empty: 0.3, error: 0.2}
properties:
"""

# A retry loop with no limit: it ends with probability 1, after 2 calls on average; with the
# `wait` action a policy can put the end off forever.
RETRY = """\
machine: retry
vars:
  status: {type: enum, values: [trying, done], init: trying}
actions:
  call:
    when: status == trying
    choose:
      outcome: [ok, error]
    do:
      - decide: status
        rules:
          - {name: finished, when: outcome == ok, then: done}
          - {name: retry, then: trying}
terminal: status == done
probabilities:
  call:
    outcome: {ok: 1/2, error: 1/2}
properties:
  ends: {probability: {reach: status == done, at_least: 1}}
  cost: {expected: {measure: transitions, at_most: 2}}
"""
WAIT = """\
  wait:
    when: status == trying
    do:
      - set: {status: trying}
"""


def report(check, text, *extra):
    r = check(text, "--format", "json", *extra)
    assert "Traceback" not in r.err, r.err
    return r.code, json.loads(r.out, parse_constant=no_infinity)


def no_infinity(name):
    raise AssertionError(f"the JSON report holds {name}, which strict JSON parsers refuse")


def prop(data, name):
    return next(p for p in data["runs"][0]["properties"] if p["name"] == name)


ENGINES = pytest.mark.parametrize("engine", ["scalar", "vector"])


@ENGINES
def test_probability_holds_and_fails_with_exact_values(check, engine):
    code, data = report(check, AGENT + """\
  likely_success: {probability: {reach: decision == success, at_least: 0.6}}
  success_capped: {probability: {reach: decision == success, at_most: 0.7}}
  rare_limit: {probability: {reach: decision == limit, at_most: 0.1}}
""", "--engine", engine)
    assert code == 1
    assert data["runs"][0]["engine"] == engine
    low = prop(data, "likely_success")
    assert low["status"] == "violated"
    assert low["exact"] == {"min": "0", "max": "139/200"}
    assert low["value"] == {"min": 0.0, "max": 0.695}
    assert "a policy makes it 0, less than 3/5 (0.6)" in low["message"]
    assert low["policy"] == [{"state": {"steps": 0, "decision": "going"}, "action": "step",
                              "choices": {"tool": "guess"}}]
    assert len(low["trace"]["steps"]) == 2                # one step to a run that ends without success
    capped = prop(data, "success_capped")
    assert capped["status"] == "holds"
    assert capped["message"] == ("the probability of reaching it is between 0 and 139/200 (0.695) over "
                                 "the policies: at most 7/10 (0.7)")
    limit = prop(data, "rare_limit")
    assert limit["status"] == "violated"
    assert limit["exact"] == {"min": "27/1000", "max": "64/125"}
    assert [s["choices"]["tool"] for s in limit["trace"]["steps"][1:]] == ["guess"] * 3
    assert limit["trace"]["steps"][-1]["state"]["decision"] == "limit"
    assert [d["choices"] for d in limit["policy"]] == [{"tool": "guess"}] * 3


@ENGINES
def test_expected_holds_and_fails(check, engine):
    code, data = report(check, AGENT + """\
  cheap: {expected: {measure: transitions, at_most: 1.8}}
  affordable: {expected: {measure: transitions, at_most: 2.44}}
  busy: {expected: {measure: searches, at_least: 0.5}}
""", "--engine", engine)
    assert code == 1
    cheap = prop(data, "cheap")
    assert (cheap["status"], cheap["exact"]) == ("violated", {"min": "139/100", "max": "61/25"})
    assert "a policy makes it 61/25 (2.44), more than 9/5 (1.8)" in cheap["message"]
    assert prop(data, "affordable")["status"] == "holds"
    busy = prop(data, "busy")
    assert (busy["status"], busy["exact"]) == ("violated", {"min": "0", "max": "139/100"})


def test_outcome_table(check):
    code, data = report(check, AGENT + "  ok: {always: steps <= 3}\n")
    assert code == 0
    out = data["runs"][0]["outcomes"]
    assert {k: v["exact"] for k, v in out["ends"].items()} == {
        "success": {"min": "0", "max": "139/200"},
        "limit": {"min": "27/1000", "max": "64/125"},
        "error": {"min": "139/500", "max": "61/125"},
        "deadlock": {"min": "0", "max": "0"},
        "never_terminating": {"min": "0", "max": "0"}}
    assert {k: v["exact"] for k, v in out["expected"].items()} == {
        "transitions": {"min": "139/100", "max": "61/25"}, "searches": {"min": "0", "max": "139/100"}}
    text = check(AGENT + "  ok: {always: steps <= 3}\n", "--verbose").out
    assert "    limit                27/1000 (0.027) .. 64/125 (0.512)\n" in text
    assert "    transitions          139/100 (1.39) .. 61/25 (2.44)\n" in text


def test_no_outcome_table_without_weights(check):
    text = AGENT.replace("probabilities:\n  step:\n    obs: {ok: 0.5, empty: 0.3, error: 0.2}\n", "")
    code, data = report(check, text + "  ok: {always: steps <= 3}\n")
    assert code == 0 and "outcomes" not in data["runs"][0]


@ENGINES
def test_a_cycle_left_with_probability_one(check, engine):
    code, data = report(check, RETRY, "--engine", engine)
    assert code == 0
    assert prop(data, "ends")["exact"] == {"min": "1", "max": "1"}
    assert prop(data, "cost")["exact"] == {"min": "2", "max": "2"}


def test_expected_cost_is_infinite_when_a_policy_never_ends(check):
    text = RETRY.replace("terminal:", WAIT + "terminal:")
    code, data = report(check, text)
    assert code == 1
    cost = prop(data, "cost")
    assert cost["status"] == "violated"
    assert cost["exact"] == {"min": "2", "max": "inf"}
    assert cost["value"]["max"] is None        # JSON has no infinity: "exact" says "inf"
    assert cost["message"].endswith("a policy makes it infinite, more than 2 (a policy does not reach a "
                                    "terminal state with probability 1)")
    assert cost["policy"] == [{"state": {"status": "trying"}, "action": "wait", "choices": {}}]
    ends = prop(data, "ends")
    assert (ends["status"], ends["exact"]) == ("violated", {"min": "0", "max": "1"})
    table = data["runs"][0]["outcomes"]["ends"]["never_terminating"]["exact"]
    assert table == {"min": "0", "max": "1"}


# No policy ever ends: every expected total is infinite (issue 26, finding 2).
SPIN = """\
machine: spin
vars:
  status: {type: enum, values: [running, done], init: running}
actions:
  spin:
    when: status == running
    choose:
      o: [a, b]
    do:
      - decide: status
        rules:
          - {name: keep, then: running}
terminal: status == done
probabilities:
  spin:
    o: {a: 1/2, b: 1/2}
properties:
"""
INFINITE = "the expected transitions until a terminal state is infinite under every policy: "


@ENGINES
def test_an_infinite_minimum_is_at_least_every_bound(check, engine):
    """Infinite >= 3 holds (Storm agrees, tests/properties/test_storm.py); it was VIOLATED with "a policy
    makes it infinite, less than 3". At most 3 stays violated, with the policy that never ends."""
    code, data = report(check, SPIN + "  many: {expected: {measure: transitions, at_least: 3}}\n",
                        "--engine", engine)
    assert code == 0
    many = prop(data, "many")
    assert many["status"] == "holds"
    assert many["message"] == INFINITE + "at least 3 (no policy reaches a terminal state with probability 1)"
    assert (many["value"], many["exact"]) == ({"min": None, "max": None}, {"min": "inf", "max": "inf"})
    assert "policy" not in many and many["trace"] is None
    code, data = report(check, SPIN + "  few: {expected: {measure: transitions, at_most: 3}}\n",
                        "--engine", engine)
    assert code == 1
    few = prop(data, "few")
    assert few["status"] == "violated"
    assert few["message"] == INFINITE + ("a policy makes it infinite, more than 3 (a policy does not reach a "
                                         "terminal state with probability 1)")
    assert (few["value"], few["exact"]) == ({"min": None, "max": None}, {"min": "inf", "max": "inf"})
    assert few["policy"] == [{"state": {"status": "running"}, "action": "spin", "choices": {}}]


def test_an_infinite_minimum_reads_the_same_in_the_text_report(check):
    r = check(SPIN + "  many: {expected: {measure: transitions, at_least: 3}}\n"
                     "  few: {expected: {measure: transitions, at_most: 3}}\n", "--verbose")
    assert r.code == 1
    assert ("  holds     many          " + INFINITE + "at least 3 (no policy reaches a terminal state with "
            "probability 1)\n") in r.out
    assert ("  VIOLATED  few           " + INFINITE + "a policy makes it infinite, more than 3 (a policy does "
            "not reach a terminal state with probability 1)\n      witness policy: spin\n") in r.out
    assert "    transitions          infinite\n" in r.out


def test_a_finite_minimum_and_an_infinite_maximum(check):
    """The retry loop with `wait`: 2 calls on average at best, never ending at worst. at_least
    reads the minimum (finite), at_most the maximum (infinite)."""
    text = RETRY.replace("terminal:", WAIT + "terminal:").replace(
        "  cost: {expected: {measure: transitions, at_most: 2}}\n",
        "  some: {expected: {measure: transitions, at_least: 1}}\n"
        "  many: {expected: {measure: transitions, at_least: 3}}\n"
        "  capped: {expected: {measure: transitions, at_most: 100}}\n")
    code, data = report(check, text, "--property", "some", "--property", "many", "--property", "capped")
    assert code == 1
    span = "the expected transitions until a terminal state is between 2 and infinite over the policies: "
    some, many, capped = (prop(data, n) for n in ("some", "many", "capped"))
    assert (some["status"], some["message"]) == ("holds", span + "at least 1")
    assert (many["status"], many["message"]) == ("violated", span + "a policy makes it 2, less than 3")
    assert (capped["status"], capped["message"]) == ("violated", span + (
        "a policy makes it infinite, more than 100 (a policy does not reach a terminal state with probability 1)"))
    for p in (some, many, capped):
        assert (p["value"], p["exact"]) == ({"min": 2.0, "max": None}, {"min": "2", "max": "inf"})
    assert many["policy"] == [{"state": {"status": "trying"}, "action": "call", "choices": {}}]
    assert capped["policy"] == [{"state": {"status": "trying"}, "action": "wait", "choices": {}}]


# A long chain of weighted steps: its exact values have thousands of digits, past the 4,300
# Python turns into text (issue 26, finding 7: exit 4 on `ValueError: Exceeds the limit`).
CHAIN = """\
machine: chain
vars:
  n: {type: int, min: 0, max: 1500, init: 0}
  hit: {type: bool, init: false}
actions:
  step:
    when: n < 1500 and not hit
    choose:
      o: [a, b]
    do:
      - set: {n: n + 1, hit: o == a}
terminal: n == 1500 or hit
probabilities:
  step:
    o: {a: '1/997', b: '996/997'}
properties:
  full: {probability: {reach: n == 1500, at_most: 0.5}}
  cost: {expected: {measure: transitions, at_most: 800}}
"""
# reaching n = 1500 takes 1499 draws of b; the k-th step happens after k - 1 of them
CHAIN_FULL = Fraction(996, 997) ** 1499
CHAIN_COST = 997 * (1 - Fraction(996, 997) ** 1500)         # the sum of (996/997)^k for k < 1500


def test_values_of_thousands_of_digits_read_as_their_value(check, tmp_path):
    """Text shows the value and the size; JSON keeps the exact fraction, written out whole."""
    from haltproof.machine.text import fraction_from_json
    r = check(CHAIN, "--verbose", "--json", str(tmp_path / "r.json"))
    assert r.code == 0, r.err
    data = json.loads((tmp_path / "r.json").read_text(), parse_constant=no_infinity)
    full, cost = prop(data, "full"), prop(data, "cost")
    assert full["message"] == ("the probability of reaching it is about 0.222181 (an exact fraction of 8,991 "
                               "digits in the JSON report) under every policy: at most 1/2 (0.5)")
    assert cost["message"] == ("the expected transitions until a terminal state is about 775.708 (an exact "
                               "fraction of 8,994 digits in the JSON report) under every policy: at most 800")
    assert fraction_from_json(full["exact"]["min"]) == fraction_from_json(full["exact"]["max"]) == CHAIN_FULL
    assert fraction_from_json(cost["exact"]["max"]) == CHAIN_COST
    assert len(full["exact"]["min"]) == 8991 + 1            # every digit, and the slash
    assert full["value"] == {"min": float(CHAIN_FULL), "max": float(CHAIN_FULL)}
    assert f"  holds     full          {full['message']}\n" in r.out
    assert "    transitions          about 775.708 (an exact fraction of 8,994 digits in the JSON report)\n" in r.out


def test_a_violation_of_thousands_of_digits_in_every_format(check, tmp_path):
    text = CHAIN.replace("at_most: 800", "at_most: 700")
    shown = "about 775.708 (an exact fraction of 8,994 digits in the JSON report)"
    r = check(text, "--format", "markdown", "--html", str(tmp_path / "r.html"), "--sarif", str(tmp_path / "r.sarif"))
    assert r.code == 1, r.err
    message = (f"the expected transitions until a terminal state is {shown} under every policy: a policy makes "
               f"it {shown}, more than 700")
    assert f"| expected transitions | {shown} |" in r.out
    assert message in r.out
    assert json.loads((tmp_path / "r.sarif").read_text())["runs"][0]["results"][0]["message"]["text"].count(shown) == 2
    assert "about 775.708" in (tmp_path / "r.html").read_text()


def test_decimal_weights_of_800_digits(check):
    """40 draws of odds written with 800 digits each: the values have 62 thousand digits."""
    odds = "0." + "3" * 799 + "1", "0." + "6" * 799 + "9"
    text = CHAIN.replace("1500", "40").replace("'1/997', b: '996/997'", "{}, b: {}".format(*odds))
    code, data = report(check, text)
    assert code == 0
    assert prop(data, "full")["message"] == (
        "the probability of reaching it is about 1.35657e-07 (an exact fraction of 62,395 digits in the JSON "
        "report) under every policy: at most 1/2 (0.5)")
    assert fraction_from_json_of(prop(data, "full")) == (1 - Fraction(odds[0])) ** 39


def fraction_from_json_of(p):
    from haltproof.machine.text import fraction_from_json
    assert p["exact"]["min"] == p["exact"]["max"]
    return fraction_from_json(p["exact"]["min"])


def test_not_decided_on_a_partial_exploration(check):
    code, data = report(check, AGENT + "  cheap: {expected: {measure: transitions, at_most: 5}}\n",
                        "--max-states", "3", "--engine", "scalar")
    assert code == 3
    cheap = prop(data, "cheap")
    assert cheap["status"] == "unknown"
    assert cheap["message"].startswith("not decided: the exploration stopped at --max-states")
    assert "value" not in cheap
    assert data["runs"][0]["outcomes"]["message"].startswith("not computed: the exploration stopped")


def test_text_report_prints_the_value_beside_the_verdict(check):
    r = check(RETRY, "--verbose")
    assert r.code == 0
    assert ("  holds     cost          the expected transitions until a terminal state is 2 under every "
            "policy: at most 2\n") in r.out


def test_the_documented_example_prints_what_the_docs_show(cli, monkeypatch):
    """docs/reference/spec-language.md shows docs/examples/agent_odds.yaml and what checking it prints."""
    import re

    from conftest import ROOT
    doc = (ROOT / "docs" / "reference" / "spec-language.md").read_text()
    section = doc[doc.index("## probabilities: how likely"):]
    example = (ROOT / "docs" / "examples" / "agent_odds.yaml").read_text()
    assert "```yaml\n" + example + "```" in section
    shown = section[section.index("```text\n") + 8:]
    shown = shown[:shown.index("```\n")].splitlines()
    assert shown[0] == "$ haltproof check docs/examples/agent_odds.yaml --verbose"
    monkeypatch.chdir(ROOT)
    ran = cli("check", "docs/examples/agent_odds.yaml", "--verbose")
    assert ran.code == 1
    assert re.sub(r", [0-9.]+ s$", ", 0.01 s", ran.out, flags=re.M).splitlines() == shown[1:]


def test_weights_on_a_spec_bound_to_code(check):
    """The seed loop (its weights: failed 1/20, one_match 3/5, zero and many matches 1/4 together,
    incomplete 1/10), checked on its bound code: the transitions the code makes are what is
    weighed. max_steps=2, max_retries=0: success 3/5 + 1/10 * 3/5 = 33/50, needs_input
    1/4 + 1/10 * 1/4 = 11/40, error 1/20 + 1/10 * 1/20 = 11/200, limit 1/10 * 1/10 (incomplete
    twice), 1 + 1/10 transitions on average (only `incomplete` goes on)."""
    from conftest import ROOT
    code, data = report(check, (ROOT / "specs" / "loop_demo.yaml").read_text(),
                        "-p", "max_steps=2", "-p", "max_retries=0")
    assert code == 0
    run = data["runs"][0]
    assert run["explored"] == "code: haltproof.harness.loop_binding:LoopDemoAdapter"
    ends = {k: v["exact"]["min"] + " " + v["exact"]["max"] for k, v in run["outcomes"]["ends"].items()}
    assert ends == {"success": "33/50 33/50", "needs_input": "11/40 11/40", "error": "11/200 11/200",
                    "limit": "1/100 1/100", "deadlock": "0 0", "never_terminating": "0 0"}
    assert run["outcomes"]["expected"]["transitions"]["exact"] == {"min": "11/10", "max": "11/10"}


def test_markdown_lists_the_outcome_table(check):
    r = check(AGENT + "  ok: {always: steps <= 3}\n", "--format", "markdown")
    assert r.code == 0
    section = r.out[r.out.index("### Outcomes"):]
    rows = [ln for ln in section.splitlines() if ln.startswith("| `")]
    assert [ln.split(" | ")[2:] for ln in rows] == [
        ["success", "0 .. 139/200 (0.695) |"],
        ["limit", "27/1000 (0.027) .. 64/125 (0.512) |"],
        ["error", "139/500 (0.278) .. 61/125 (0.488) |"],
        ["deadlock", "0 |"],
        ["never\\_terminating", "0 |"],
        ["expected transitions", "139/100 (1.39) .. 61/25 (2.44) |"],
        ["expected searches", "0 .. 139/100 (1.39) |"]]


def test_the_vector_engine_keeps_the_edges_the_analysis_reads(check, monkeypatch):
    """Past KEEP_EDGES_BELOW transitions of a forward graph the vector engine drops its edges;
    with a probability property or weights it must keep them (here the limit is made tiny)."""
    from haltproof.explorer import vengine
    monkeypatch.setattr(vengine, "KEEP_EDGES_BELOW", 4)
    text = AGENT.replace("measures:\n  searches: {count: tool == search}\n", "")    # a measure keeps them anyway
    code, data = report(check, text + "  cheap: {expected: {measure: transitions, at_most: 2.44}}\n",
                        "--engine", "vector")
    assert code == 0, prop(data, "cheap")["message"]
    assert prop(data, "cheap")["exact"] == {"min": "139/100", "max": "61/25"}


def test_a_target_that_cannot_be_evaluated_violates_well_defined(check):
    """As for an invariant: the shortest run to the state where `reach` fails, its file:line."""
    code, data = report(check, """\
machine: z
vars:
  x: {type: int, min: 0, max: 2, init: 2}
actions:
  down:
    when: x > 0
    do:
      - set: {x: x - 1}
terminal: x == 0
properties:
  p: {probability: {reach: 6 // x == 3, at_least: 0.5}}
""")
    assert code == 1
    wd = prop(data, "well_defined")
    assert wd["status"] == "violated"
    assert wd["message"].endswith("bad.yaml:11): integer division or modulo by zero")
    assert wd["message"].startswith("property p (")
    assert [s["state"]["x"] for s in wd["trace"]["steps"]] == [2, 1, 0]
    p = prop(data, "p")
    assert p["status"] == "unknown" and "value" not in p


def test_the_docs_outcome_table_of_the_seed_loop(cli):
    """The probabilities page's table of specs/loop_demo.yaml's endings per max_steps is what check reports."""
    from conftest import ROOT
    page = (ROOT / "docs" / "how-to" / "probabilities.md").read_text()
    head = "| `max_steps` | success | needs_input | error | limit | expected steps |\n|---|---|---|---|---|---|\n"
    table = page[page.index(head) + len(head):]
    rows = [ln.strip("| ").split(" | ") for ln in table[:table.index("\n\n")].splitlines()]
    for row in rows:
        ran = cli("check", ROOT / "specs" / "loop_demo.yaml", "-p", f"max_steps={row[0]}", "-p", "max_retries=1",
                  "--format", "json")
        assert ran.code == 0, ran.err
        out = json.loads(ran.out)["runs"][0]["outcomes"]
        got = [out["ends"][k]["exact"] for k in ("success", "needs_input", "error", "limit")]
        got.append(out["expected"]["transitions"]["exact"])
        assert all(g["min"] == g["max"] for g in got)        # nothing is left to a policy here
        assert [cell.split(" ")[0] for cell in row[1:]] == [g["min"] for g in got]


# A random walk on 0..1000 from 995, up with probability 2/5: one strongly connected component
# of 999 states, past the exact solver's limit. Reaching 1000 has probability
# (1 - 1.5^995) / (1 - 1.5^1000) = 0.131687242798... (gambler's ruin).
WALK = """\
machine: walk
vars:
  x: {type: int, min: 0, max: 1000, init: 995}
actions:
  step:
    when: x > 0 and x < 1000
    choose:
      dir: [up, down]
    do:
      - set: {x: x + 1 if dir == up else x - 1}
terminal: x == 0 or x == 1000
probabilities:
  step:
    dir: {up: 0.4, down: 0.6}
properties:
"""


def test_past_the_exact_limit_a_verdict_is_decided_only_outside_the_interval(check):
    from fractions import Fraction
    exact = (1 - Fraction(3, 2) ** 995) / (1 - Fraction(3, 2) ** 1000)
    code, data = report(check, WALK + f"""\
  wins_often: {{probability: {{reach: x == 1000, at_least: 0.2}}}}
  wins_rarely: {{probability: {{reach: x == 1000, at_most: 0.2}}}}
  on_the_edge: {{probability: {{reach: x == 1000, at_least: "{exact.numerator}/{exact.denominator}"}}}}
""")
    assert code == 1
    often, rarely, edge = (prop(data, n) for n in ("wins_often", "wins_rarely", "on_the_edge"))
    assert (often["status"], rarely["status"], edge["status"]) == ("violated", "holds", "unknown")
    for p in (often, rarely, edge):
        assert "exact" not in p                          # not exact: the interval and its error instead
        lo, hi = p["interval"]["min"]
        assert Fraction(lo) <= exact <= Fraction(hi) and hi - lo < 1e-10
        assert p["error"]["min"] == (hi - lo) / 2
        assert "(within " in p["message"] and "not exact)" in p["message"]
    assert "not decided, the bound" in edge["message"] and "lies inside the interval [0.13168724" in edge["message"]
    assert "a policy makes it at most 0.13168724" in often["message"]
    assert often["trace"]["steps"][-1]["state"]["x"] == 0        # a run that ends without winning


def test_past_the_exact_limit_the_outcome_table_bounds_the_endings(check):
    """Every run of the walk ends: 1 by the graph alone, exact; the expected duration is
    bounded by the array solver (issue 33; `not computed` before), around the exact value of
    gambler's ruin."""
    from fractions import Fraction
    code, data = report(check, WALK + "  ok: {always: x <= 1000}\n")
    assert code == 0
    out = data["runs"][0]["outcomes"]
    assert out["ends"]["terminal"]["exact"] == {"min": "1", "max": "1"}
    assert out["ends"]["never_terminating"]["exact"] == {"min": "0", "max": "0"}
    r, i, n = Fraction(3, 2), 995, 1000                          # q / p, start, end
    exact = i / Fraction(1, 5) - n / Fraction(1, 5) * (1 - r ** i) / (1 - r ** n)
    for side in ("min", "max"):
        lo, hi = out["expected"]["transitions"]["interval"][side]
        assert Fraction(lo) <= exact <= Fraction(hi) and hi - lo < 1e-6 * float(exact)
    text = check(WALK + "  ok: {always: x <= 1000}\n", "--verbose").out
    assert "    terminal             1\n" in text and "    transitions          [4316.5637" in text


def test_an_iterated_side_fixed_at_0_is_said_exactly(check, monkeypatch):
    """A policy that `wait`s forever never wins: the minimum is 0 by the graph alone, so its
    interval is the point [0, 0], an exact 0, not "between 0 and 0 (within 0, not exact)". The
    maximum is iterated (the exact solver limited to 5 states here, the walk has 19)."""
    from haltproof.properties import probability as P
    monkeypatch.setattr(P, "EXACT_LIMIT", 5)
    text = WALK.replace("1000", "20").replace("init: 995", "init: 10").replace("terminal:", """\
  wait:
    when: x > 0 and x < 20
    do:
      - set: {x: x}
terminal:""") + "  wins: {probability: {reach: x == 20, at_most: 0.2}}\n"
    r = check(text, "--verbose", "--json", "r.json")
    assert r.code == 0, r.err
    wins = prop(json.loads(open("r.json").read()), "wins")
    lo, hi = wins["interval"]["max"]
    assert lo < (1 - 1.5 ** 10) / (1 - 1.5 ** 20) < hi
    assert wins["message"] == (f"the probability of reaching it is from 0 (min) to between {lo:.15g} and {hi:.15g} "
                               f"(within {hi - lo:.2g}, not exact) (max) over the policies: at most 1/5 (0.2)")
    assert (wins["interval"]["min"], wins["error"]["min"], wins["value"]["min"]) == ([0.0, 0.0], 0.0, 0.0)
    ends = [ln.split(None, 1)[1] for ln in r.out.splitlines() if ln.startswith(("    terminal ", "    never_"))]
    assert ends == ["0 .. 1", "0 .. 1"]       # a policy ends surely, another never: both fixed by the graph


def _page_rows(head):
    from conftest import ROOT
    page = (ROOT / "docs" / "how-to" / "probabilities.md").read_text()
    table = page[page.index(head) + len(head):]
    return [ln.strip("| ").split(" | ") for ln in table[:table.index("\n\n")].splitlines()]


@pytest.mark.parametrize("spec, head, params, ends, measures", [
    ("budget_runner.yaml",
     "| `K` | finished_reserved | finished_info | error | budget_exhausted | expected tool_attempts "
     "| expected transitions |\n|---|---|---|---|---|---|---|\n",
     lambda row: {"K": row[0], "R": 1}, ("finished_reserved", "finished_info", "error", "budget_exhausted"),
     ("tool_attempts", "transitions")),
    ("gate_chain.yaml",
     "| `A` | `T` | aborted | turn_limit | expected refused | expected transitions |\n|---|---|---|---|---|---|\n",
     lambda row: {"B": 3, "N": 2, "A": row[0], "T": row[1], "P": 3}, ("aborted", "turn_limit"),
     ("refused", "transitions")),
])
def test_the_docs_outcome_tables_of_the_other_seed_specs(cli, spec, head, params, ends, measures):
    """The probabilities page's tables of the budget runner's and the gate chain's maxima are what check reports."""
    from conftest import ROOT
    for row in _page_rows(head):
        given = params(row)
        args = [a for k, v in given.items() for a in ("-p", f"{k}={v}")]
        ran = cli("check", ROOT / "specs" / spec, *args, "--format", "json")
        assert ran.code == 0, ran.err
        out = json.loads(ran.out)["runs"][0]["outcomes"]
        got = [out["ends"][k]["exact"]["max"] for k in ends] + [out["expected"][k]["exact"]["max"] for k in measures]
        cells = row[len(row) - len(got):]
        assert [cell.split(" ")[0] for cell in cells] == got


def _with_properties(name, extra):
    """A bundled spec's text with `extra` properties inserted first under `properties:`."""
    from conftest import ROOT
    text = (ROOT / "specs" / name).read_text()
    return text.replace("\nproperties:\n", "\nproperties:\n" + extra, 1)


def test_probability_properties_on_the_weighted_budget_runner(check):
    code, data = report(check, _with_properties("budget_runner.yaml", """\
  rarely_gives_up: {probability: {reach: status == error, at_most: 0.02}}
  attempts_on_average: {expected: {measure: tool_attempts, at_most: 4}}
  usually_reserved: {probability: {reach: status == finished_reserved, at_least: 0.5}}
"""), "-p", "K=4", "-p", "R=1")
    assert code == 1
    assert (prop(data, "rarely_gives_up")["status"], prop(data, "rarely_gives_up")["exact"]) == \
        ("holds", {"min": "0", "max": "162/15625"})
    avg = prop(data, "attempts_on_average")
    assert (avg["status"], avg["exact"]) == ("holds", {"min": "0", "max": "498677/125000"})
    usually = prop(data, "usually_reserved")          # the policy may abstain: the minimum is 0
    assert (usually["status"], usually["exact"]) == ("violated", {"min": "0", "max": "15463/31250"})
    assert usually["policy"][0]["action"] == "propose"


def test_probability_properties_on_the_weighted_gate_chain(check):
    code, data = report(check, _with_properties("gate_chain.yaml", """\
  abort_capped: {probability: {reach: status == aborted, at_most: 0.2}}
  few_refusals: {expected: {measure: refused, at_most: 1}}
"""), "-p", "B=3", "-p", "N=2", "-p", "A=2", "-p", "T=3", "-p", "P=3")
    assert code == 0
    assert prop(data, "abort_capped")["exact"] == {"min": "0", "max": "47/250"}
    assert prop(data, "few_refusals")["exact"] == {"min": "0", "max": "4863/5000"}
    assert {prop(data, n)["status"] for n in ("abort_capped", "few_refusals")} == {"holds"}


def test_a_value_past_a_float_stays_valid_json():
    """An expected total past 1.8e308 (a measure summing huge ints): `value` is the largest float
    (JSON has no infinity, and null means infinite), `exact` the whole integer."""
    import sys

    from haltproof.explorer.chances import value_json
    from haltproof.machine.text import fraction_from_json
    from haltproof.properties.probability import Extremes
    huge = Fraction(10 ** 400)
    out = value_json(Extremes(Fraction(1, 2), huge))
    assert out["value"] == {"min": 0.5, "max": sys.float_info.max}
    assert out["exact"]["min"] == "1/2" and fraction_from_json(out["exact"]["max"]) == huge
    json.loads(json.dumps(out, allow_nan=False), parse_constant=no_infinity)


# ---------------------------------------------------------------- mutants that survived (issue 18)
# Mutants of explorer/chances.py that the verdict selection let through (issue 18, the sampled
# run of round 7): the words of a bound judged on the iterative solver's interval, and where
# the witness of an infinite expected total goes. Each case was worked out by hand and runs on
# both engines; each test was seen failing with its mutation applied (docs/explanation/mutation-testing.md).
# (These tests were test_chances_kills.)

ENGINE_NAMES = ("scalar", "vector")


def _run(text: str, engine: str) -> RunResult:
    (r,) = check_spec(parse_spec(textwrap.dedent(text), "t.yaml"), Options(engine=engine))
    return r


# A ring 0 -> 1 -> 2 -> 0 that leaves to the terminal 3 with 1/2 at each step: one strongly
# connected component of 3 states, past an exact limit lowered to 2, so the probability of
# reaching 3 (1) is an interval of the iterative solver.
RING = """\
machine: ring
vars:
  x: {type: int, min: 0, max: 4, init: 0}
actions:
  step:
    when: x < 3
    choose:
      way: [loop, out, fail]
    do:
      - set: {x: 3 if way == out else 4 if way == fail else (x + 1 if x < 2 else 0)}
terminal: x >= 3
probabilities:
  step:
    way: {loop: 1/2, out: 3/8, fail: 1/8}
properties:
  surely: {probability: {reach: x == 3, at_least: 1/2}}
  rarely: {probability: {reach: x == 3, at_most: 1/2}}
"""


@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_a_bound_judged_on_an_interval_says_which_side_it_is_on(engine, monkeypatch):
    monkeypatch.setattr(P, "EXACT_LIMIT", 2)
    r = _run(RING, engine)
    surely, rarely = run_prop(r, "surely"), run_prop(r, "rarely")
    lo, hi = surely.value["interval"]["min"]
    assert surely.value["interval"]["max"] == rarely.value["interval"]["max"] == [lo, hi]
    assert lo < 3 / 4 < hi and hi - lo < 1e-10      # out before fail: 3 to 1, whatever the loop
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


@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_an_infinite_expected_total_is_witnessed_by_a_run_into_a_deadlock(engine):
    p = run_prop(_run(STUCK, engine), "cheap")
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


@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_an_exact_bound_that_holds_says_its_side_and_a_failing_target_names_its_property(engine):
    r = _run(COIN, engine)
    half = run_prop(r, "half")
    assert (half.kind, half.status, half.message) == (
        "probability", "holds", "the probability of reaching it is 1/2 (0.5) under every policy: at least 1/4 (0.25)")
    wd = run_prop(r, "well_defined")
    assert (wd.status, wd.message) == ("violated", "property odd (t.yaml:17): integer division or modulo by zero")
    assert [(s.action, s.state["x"]) for s in wd.trace.steps] == [(None, 0), ("toss", 1)]
    assert wd.subject == Subject("property", "odd")
