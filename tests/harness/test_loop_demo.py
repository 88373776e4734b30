"""The chapter-2 loop (seed S1): every property proved for all 10 param combinations,
and the 8 golden scenarios replayed in the seed's five-line format."""

from __future__ import annotations

import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.machine.spec import load_spec

from conftest import LOOP_DEMO


@pytest.fixture(scope="module")
def runs():
    return check_spec(load_spec(LOOP_DEMO), Options())


def test_all_ten_combinations_are_proved(runs):
    assert len(runs) == 10
    combos = {(r.params["max_steps"], r.params["max_retries"]) for r in runs}
    assert combos == {(s, r) for s in range(1, 6) for r in (0, 1)}
    for r in runs:
        assert r.result == "proved", (r.params, [(p.name, p.status, p.message) for p in r.properties])
        assert all(p.status == "holds" for p in r.properties)


def test_the_seed_properties_are_all_declared(runs):
    names = {p.name for p in runs[-1].properties}
    for wanted in ["at_most_max_steps", "terminates_within_max_steps", "success_only_on_unique_complete",
                   "needs_input_only_on_complete_zero_or_many", "error_only_past_retries",
                   "limit_only_when_observation_allows_going_on", "final_answer_on_last_step_kept",
                   "decide_ignores_scenario", "success_reachable", "needs_input_reachable",
                   "error_reachable", "limit_reachable", "domains", "well_defined"]:
        assert wanted in names


def test_error_is_unreachable_exactly_when_retries_outlast_steps(runs):
    """max_steps=1, max_retries=1: a first failure meets the step limit (limit, never error)."""
    r = next(r for r in runs if r.params == {"max_steps": 1, "max_retries": 1})
    assert "error_reachable" not in {p.name for p in r.properties}
    assert r.coverage["terminals"]["error"] == 0
    assert any("'error'" in w for w in r.warnings)


def test_state_counts_are_stable(runs):
    """BFS order is deterministic: counts are the same every run (recorded in the notes)."""
    by = {(r.params["max_steps"], r.params["max_retries"]): r.stats for r in runs}
    assert by[(5, 1)]["states"] == 322 and by[(5, 1)]["transitions"] == 420
    assert by[(1, 0)]["states"] == 42
    assert by[(5, 1)]["max_depth"] == 5


def test_golden_scenarios_all_pass(runs):
    seen = {s.name: s for r in runs for s in r.scenarios}
    assert set(seen) == {"one_match", "two_matches", "temporary_error", "permanent_error", "limit",
                         "missing_file", "no_matches", "permanent_error_no_retry"}
    assert all(s.ok for s in seen.values())
    ends = {name: s.steps for name, s in seen.items()}
    assert ends == {"one_match": 1, "two_matches": 1, "temporary_error": 2, "permanent_error": 2,
                    "limit": 5, "missing_file": 2, "no_matches": 1, "permanent_error_no_retry": 1}


def test_replay_prints_the_five_line_format(cli):
    ran = cli("replay", LOOP_DEMO, "--scenario", "permanent_error")
    assert ran.code == 0
    lines = [ln for ln in ran.out.splitlines() if not ln.startswith("#")]
    assert lines == [
        "step: 1", "state: observed", "action: read_task_cards",
        'observation: {"name": "failed", "complete": false, "matches": 0, "ok": false}',
        "decision: continue",
        "step: 2", "state: observed", "action: read_task_cards",
        'observation: {"name": "failed", "complete": false, "matches": 0, "ok": false}',
        "decision: error",
    ]


@pytest.mark.parametrize("name,decision,steps", [
    ("one_match", "success", 1), ("two_matches", "needs_input", 1),
    ("temporary_error", "success", 2), ("permanent_error", "error", 2), ("limit", "limit", 5),
    ("missing_file", "error", 2), ("no_matches", "needs_input", 1),
    ("permanent_error_no_retry", "error", 1),
])
def test_each_golden_scenario_ends_where_the_seed_says(cli, name, decision, steps):
    ran = cli("replay", LOOP_DEMO, "--scenario", name)
    assert ran.code == 0, ran.out
    decisions = [ln.split(": ", 1)[1] for ln in ran.out.splitlines() if ln.startswith("decision: ")]
    assert len(decisions) == steps
    assert decisions[-1] == decision
    assert all(d == "continue" for d in decisions[:-1])


def test_replay_of_unknown_scenario_is_a_usage_error(cli):
    ran = cli("replay", LOOP_DEMO, "--scenario", "nope")
    assert ran.code == 2
    assert "no scenario named 'nope'" in ran.err and "one_match" in ran.err
    assert ran.out == ""
