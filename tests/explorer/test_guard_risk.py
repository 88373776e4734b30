"""The guard's risk shield (explorer/guard_export.py `_risk`, haltproof.guard's `risk=`): for a spec
with `probabilities:`, the worst probability over policies that a run breaks a safety property,
per state and per proposed step, checked against numbers worked out by hand and against the
`probability` property's own maximum."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from haltproof.cli.guard import write_guard
from haltproof.explorer import guard_export
from haltproof.guard import Guard, GuardError
from haltproof.properties import probability as P

from conftest import ROOT

pytestmark = pytest.mark.verdict

# The policy picks the tool, the environment the observation: error 1/5 on every step, success only
# with `search` and `ok` (1/2), three steps at most. Worst policy: always `guess` (never succeeds),
# so a violation with 1 - (4/5)^3 = 61/125. From steps=1: max(guess 1/5 + 4/5 * 1/5 = 9/25,
# search 1/5 + 3/10 * 1/5 = 13/50) = 9/25; from steps=2: 1/5. Taking `search` first: 1/5 + 3/10 * 9/25
# = 77/250.
AGENT_SPEC = ROOT / "examples" / "risk" / "agent.yaml"
AGENT = AGENT_SPEC.read_text()
STATES = [[0, "going"], [1, "success"], [1, "going"], [1, "error"], [2, "success"], [2, "going"], [2, "error"],
          [3, "success"], [3, "limit"], [3, "error"]]
WORST = ["61/125", "0", "9/25", "1", "0", "1/5", "1", "0", "0", "1"]
STEP_P = ["1/2", "3/10", "1/5", "1/2", "3/10", "1/5"]


def test_the_docs_write_the_examples_guard_as_tested() -> None:
    doc = (ROOT / "docs" / "how-to" / "guard.md").read_text()
    assert "haltproof guard examples/risk/agent.yaml --allow-violated -o agent_guard.json\n" in doc


def test_the_example_declares_its_violation_so_a_check_of_it_passes_and_its_guard_still_needs_allow_violated(
        cli, tmp_path) -> None:
    """`expect: {violated: [no_error]}`: a check passes on exactly that violation (exit 0), and the
    guard is still refused from it without --allow-violated: a known violation is not a proof."""
    ran = cli("check", AGENT_SPEC, "--format", "json")
    assert ran.code == 0
    (run,) = ran.json()["runs"]
    assert [p["name"] for p in run["properties"] if p["status"] == "violated"] == ["no_error"]
    refused = cli("guard", AGENT_SPEC, "-o", tmp_path / "guard.json")
    assert refused.code == 1 and "no_error is violated" in refused.err
    assert not (tmp_path / "guard.json").exists()


@pytest.fixture
def guard_file(tmp_path):
    spec = tmp_path / "agent.yaml"
    spec.write_text(AGENT)
    out = tmp_path / "guard.json"
    write_guard(str(spec), {}, str(out), allow_violated=True)
    return out


def test_the_table_holds_the_worst_probability_per_state_and_each_transitions_chance(guard_file) -> None:
    table = json.loads(guard_file.read_text())
    assert table["states"] == STATES
    assert table["risk"] == {"weighted": {"step": ["obs"]}, "worst": WORST,
                             "p": [STEP_P, [], STEP_P, [], [], STEP_P, [], [], [], []]}


def test_the_worst_at_the_start_is_the_probability_propertys_maximum(guard_file) -> None:
    from haltproof.explorer.check import check_spec
    from haltproof.explorer.options import Options
    from haltproof.machine.spec import load_spec
    (run,) = check_spec(load_spec(str(guard_file.parent / "agent.yaml")), Options())
    (chance,) = [p for p in run.properties if p.name == "error_chance"]
    assert json.loads(guard_file.read_text())["risk"]["worst"][0] == "61/125" == chance.value["exact"]["max"]


def test_a_step_within_the_risk_bound_is_allowed_and_one_past_it_denied(guard_file) -> None:
    guard = Guard.load(guard_file, risk="2/5")
    search = guard.before("step", {"tool": "search"})
    assert (search.verdict, search.risk, search.reason) == (
        "allow", "77/250", "some continuation of it breaks no_error, with a worst probability of 77/250 (0.308): "
                           "at most the risk bound 2/5")
    assert search.to_dict()["risk"] == "77/250"
    guess = guard.before("step", {"tool": "guess"})
    assert (guess.verdict, guess.risk, guess.reason) == (
        "deny", "61/125", "some continuation of it breaks no_error, with a worst probability of 61/125 (0.488): "
                          "more than the risk bound 2/5")
    assert guess.continuation == ({"action": "step", "choices": {"tool": "guess", "obs": "error"}, "rule": "broke",
                                   "state": {"steps": 1, "decision": "error"}},)


def test_the_bound_is_inclusive_and_exact(guard_file) -> None:
    assert Guard.load(guard_file, risk="77/250").before("step", {"tool": "search"}).verdict == "allow"
    assert Guard.load(guard_file, risk=Fraction(77, 250) - Fraction(1, 10**9)).before(
        "step", {"tool": "search"}).verdict == "deny"
    assert Guard.load(guard_file, risk=0.308).before("step", {"tool": "search"}).verdict == "allow"


def test_later_steps_and_a_given_weighted_choice(guard_file) -> None:
    guard = Guard.load(guard_file, risk="1/3")
    assert guard.before("step", {"tool": "search", "obs": "empty"}).risk == "9/25"    # the successor's worst
    guard.after({"steps": 1, "decision": "going"})
    assert [(d.verdict, d.risk) for d in (guard.before("step", {"tool": "search"}),
                                          guard.before("step", {"tool": "guess"}),
                                          guard.before("step", {}))] == [
        ("allow", "13/50"), ("deny", "9/25"), ("deny", "9/25")]
    assert guard.before("step", {"tool": "search", "obs": "error"}).to_dict().get("risk") is None   # denied: it breaks it


def test_without_a_risk_bound_the_packet_has_no_risk(guard_file) -> None:
    d = Guard.load(guard_file).before("step", {"tool": "search"})
    assert d.verdict == "approval_required" and d.risk is None and "risk" not in d.to_dict()


def test_a_bad_risk_bound_is_refused(guard_file, tmp_path) -> None:
    for bad, message in (("x", "risk must be a probability, got 'x'"),
                         (2, "risk must be a probability between 0 and 1, got 2"),
                         ("-1/2", "risk must be a probability between 0 and 1, got '-1/2'")):
        with pytest.raises(GuardError) as err:
            Guard.load(guard_file, risk=bad)
        assert str(err.value) == f"{guard_file}: {message}"
    plain = tmp_path / "plain.yaml"
    plain.write_text(AGENT.split("probabilities:")[0] + "properties:\n  no_error: {always: decision != error}\n")
    write_guard(str(plain), {}, str(tmp_path / "plain.json"), allow_violated=True)
    assert "risk" not in json.loads((tmp_path / "plain.json").read_text())
    with pytest.raises(GuardError) as err:
        Guard.load(tmp_path / "plain.json", risk="1/2")
    assert str(err.value) == (f"{tmp_path / 'plain.json'}: this guard has no risk shield: its spec has no "
                              "`probabilities:` block")


def test_where_the_exact_solver_gives_up_the_upper_end_is_kept(guard_file, tmp_path, monkeypatch) -> None:
    def too_large(*args, **kwargs):
        raise P.TooLarge("too large")
    monkeypatch.setattr(guard_export.P, "reach_values", too_large)
    out = tmp_path / "interval.json"
    write_guard(str(guard_file.parent / "agent.yaml"), {}, str(out), allow_violated=True)
    worst = json.loads(out.read_text())["risk"]["worst"]
    for got, exact in zip(worst, WORST):
        assert Fraction(exact) <= Fraction(got) <= Fraction(exact) + Fraction(1, 10**5)


def test_a_graph_that_is_no_mdp_keeps_the_guard_and_refuses_only_a_risk_bound(guard_file, tmp_path,
                                                                               monkeypatch) -> None:
    def no_mdp(ex, m):
        raise guard_export.NotAnalysable("the transitions of action step from a state do not cover every weighted value")
    monkeypatch.setattr(guard_export, "build_mdp", no_mdp)
    out = tmp_path / "no_mdp.json"
    write_guard(str(guard_file.parent / "agent.yaml"), {}, str(out), allow_violated=True)
    assert json.loads(out.read_text())["risk"] == {
        "unavailable": "the transitions of action step from a state do not cover every weighted value"}
    assert Guard.load(out).before("step", {"tool": "search"}).verdict == "approval_required"
    with pytest.raises(GuardError) as err:
        Guard.load(out, risk="1/2")
    assert str(err.value) == (f"{out}: this guard has no risk shield: the transitions of action step from a state "
                              "do not cover every weighted value")


def test_given_values_the_weights_call_impossible_count_at_their_worst(tmp_path) -> None:
    """`empty` has weight 0 here: a step that names it is not the model's run, so its risk is the
    worst of where it leads (9/25 from steps=1), never 0 for want of a weight."""
    spec = tmp_path / "agent.yaml"
    spec.write_text(AGENT.replace("obs: {ok: 0.5, empty: 0.3, error: 0.2}", "obs: {ok: 0.8, empty: 0, error: 0.2}"))
    out = tmp_path / "guard.json"
    write_guard(str(spec), {}, str(out), allow_violated=True)
    guard = Guard.load(out, risk="1/10")
    d = guard.before("step", {"tool": "guess", "obs": "empty"})
    assert (d.verdict, d.risk) == ("deny", "9/25")
    assert guard.before("step", {"tool": "search"}).risk == "1/5"     # error 1/5 now, else it ends: success
