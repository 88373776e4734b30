"""Analyses on top of the verdicts: exact worst-case bounds, why a rule never fires,
choice values that never matter, the sweep summary, and the quiet/progress output."""

from __future__ import annotations

import re

import pytest

from haltproof.api import check

from conftest import LOOP_DEMO, MUTANTS


@pytest.fixture(scope="module")
def loop_runs():
    return check(LOOP_DEMO).runs


@pytest.mark.verdict
def test_loop_demo_bounds_equal_max_steps_for_every_combination(loop_runs):
    for r in loop_runs:
        b = r.bounds["transitions"]
        assert b["value"] == r.params["max_steps"] and b["exact"] is True
        assert len(b["witness"]) == r.params["max_steps"]
        failed = r.bounds["failed_reads"]
        assert failed["value"] == min(r.params["max_steps"], r.params["max_retries"] + 1)
        assert sum(1 for s in failed["witness"].steps[1:] if s.choices["obs"] == "failed") == failed["value"]


def test_bounds_in_json_and_text(cli):
    ran = cli("check", LOOP_DEMO, "-p", "max_steps=3", "-p", "max_retries=1", "--format", "json")
    (run,) = ran.json()["runs"]
    assert run["bounds"]["transitions"]["value"] == 3 and run["bounds"]["transitions"]["exact"] is True
    assert run["bounds"]["transitions"]["witness"]["steps"][0]["action"] is None
    text = cli("check", LOOP_DEMO, "-p", "max_steps=3", "-p", "max_retries=1", "--verbose").out
    assert "  bounds: transitions at most 3, failed_reads at most 2" in text


@pytest.mark.verdict
def test_bounds_of_a_cycle_and_of_a_partial_exploration():
    (run,) = check(MUTANTS / "failure_not_a_step.yaml", params={"max_steps": 2, "max_retries": 0}).runs
    assert run.bounds["transitions"]["value"] is None
    assert run.bounds["transitions"]["message"] == "unbounded: a run can cycle forever"
    (run,) = check(LOOP_DEMO, params={"max_steps": 5, "max_retries": 1}, max_states=40).runs
    b = run.bounds["transitions"]
    assert b["exact"] is False and b["message"].startswith(f"at least {b['value']} (")


@pytest.mark.verdict
def test_a_sum_measure_tracks_the_worst_cumulative_value(tmp_path):
    spec = tmp_path / "tokens.yaml"
    spec.write_text(
        "machine: tokens\nparams: {B: [6]}\n"
        "vars:\n  used: {type: int, min: 0, max: 9, init: 0}\n  turns: {type: int, min: 0, max: 3, init: 0}\n"
        "actions:\n  call:\n    when: turns < 3\n    choose: {cost: [1, 3]}\n"
        "    do: [{set: {used: 'min(used + cost, 9)', turns: turns + 1}}]\n"
        "terminal: turns == 3\n"
        "measures:\n  tokens: {sum: after.used - before.used}\n  big_calls: {count: cost == 3}\n")
    (run,) = check(spec).runs
    assert run.bounds["tokens"]["value"] == 9 and run.bounds["big_calls"]["value"] == 3
    assert [s.choices["cost"] for s in run.bounds["tokens"]["witness"].steps[1:]] == [3, 3, 3]


def test_measure_errors_are_spec_errors(cli, tmp_path):
    spec = tmp_path / "bad.yaml"
    spec.write_text(LOOP_DEMO.read_text().replace("    count: not obs.ok", "    count: obs.matches"))
    ran = cli("check", spec)
    assert ran.code == 2 and "count of measure failed_reads must be true/false" in ran.err
    spec.write_text(LOOP_DEMO.read_text().replace("  failed_reads:", "  transitions:"))
    ran = cli("check", spec)
    assert ran.code == 2 and "'transitions' is always measured" in ran.err


@pytest.mark.verdict
def test_rule_analysis_tells_never_true_from_shadowed(loop_runs):
    r = next(r for r in loop_runs if r.params == {"max_steps": 1, "max_retries": 1})
    by_name = {n.name: n for n in r.notices if n.kind == "rule"}
    assert "its condition is never true" in by_name["error"].message
    assert "shadowed" in by_name["continue"].message
    assert "(limit, needs_input, success)" in by_name["continue"].message
    assert by_name["continue"].summary.endswith("never fires") and by_name["continue"].line


@pytest.mark.verdict
def test_choice_values_that_never_matter_are_reported(tmp_path):
    spec = tmp_path / "same.yaml"
    spec.write_text(
        "machine: same\nvars: {n: {type: int, min: 0, max: 3, init: 0}}\n"
        "actions:\n  go:\n    when: n < 2\n    choose: {how: [slow, fast, other]}\n"
        "    do: [{set: {n: n + (2 if how == other else 1)}}]\n"
        "terminal: n >= 2\n")
    (run,) = check(spec).runs
    (notice,) = [n for n in run.notices if n.kind == "choice"]
    assert "the values slow, fast always lead to the same step" in notice.message
    assert notice.line == 6


def test_sweep_summary_in_text_and_json(cli):
    text = cli("check", MUTANTS / "limit_before_observation.yaml", "--verbose").out
    assert any(ln.startswith("sweep of ") and ln.endswith("mutants/limit_before_observation.yaml:")
               for ln in text.splitlines())
    assert "  max_steps \\ max_retries  0            1" in text
    assert "final_answer_on_last_step_kept first fails at max_steps=3 max_retries=0 (as expected)" in text
    rep = cli("check", MUTANTS / "limit_before_observation.yaml", "--format", "json").json()
    (sweep,) = rep["sweeps"]
    assert sweep["params"] == ["max_steps", "max_retries"] and len(sweep["runs"]) == 6
    assert sweep["first_failures"]["final_answer_on_last_step_kept"] == {
        "params": {"max_steps": 3, "max_retries": 0}, "expected": True}


def test_quiet_prints_only_the_verdict(cli):
    ran = cli("check", LOOP_DEMO, "--quiet", "--progress")
    assert ran.code == 0
    assert ran.out == "10 runs: 10 proved, 0 violated as expected, 0 failed, 0 incomplete -> proved\n"
    assert ran.err == ""


def test_progress_shows_rate_frontier_and_elapsed(cli):
    ran = cli("check", LOOP_DEMO, "-p", "max_steps=2", "-p", "max_retries=0", "--progress")
    last = [seg for seg in ran.err.split("\r") if "states" in seg][-1]
    for part in ("states (", "/s)", "transitions", "depth", "frontier", " s"):
        assert part in last


def test_baseline_records_then_catches_a_moved_figure(cli, tmp_path):
    spec = tmp_path / "loop.yaml"
    spec.write_text(LOOP_DEMO.read_text().replace("bind: haltproof.harness.loop_binding:LoopDemoAdapter\n", ""))
    base = tmp_path / "base.json"
    first = cli("check", spec, "--baseline", base, "--quiet")
    assert first.code == 0 and "baseline written" in first.err and base.exists()
    again = cli("check", spec, "--baseline", base, "--quiet")
    assert again.code == 0 and again.err == ""
    # an edit that keeps every property true but changes what is explored
    spec.write_text(spec.read_text().replace("          observation: obs\n", ""))
    moved = cli("check", spec, "--baseline", base, "--quiet")
    assert moved.out.endswith("-> proved\n")
    assert moved.code == 1
    assert re.search(r"baseline .*base\.json: \d+ figures? moved \(rerun with --update-baseline to accept\):",
                     moved.err)
    assert ": states " in moved.err and " -> " in moved.err
    spec.write_text(spec.read_text().replace("    count: not obs.ok\n", "    count: obs.ok\n"))
    moved = cli("check", spec, "-p", "max_steps=2", "-p", "max_retries=0", "--baseline", base, "--quiet")
    assert moved.code == 1
    assert "max_steps=2,max_retries=0: bound failed_reads 1 -> 2" in moved.err
    accepted = cli("check", spec, "--baseline", base, "--update-baseline", "--quiet")
    assert accepted.code == 0 and "baseline updated" in accepted.err
    assert cli("check", spec, "--baseline", base, "--quiet").code == 0


def test_baseline_usage_errors(cli, tmp_path):
    junk = tmp_path / "junk.json"
    junk.write_text("[]")
    ran = cli("check", LOOP_DEMO, "--baseline", junk)
    assert ran.code == 2 and "not a haltproof baseline" in ran.err and ran.out == ""
    ran = cli("check", LOOP_DEMO, "--update-baseline")
    assert ran.code == 2 and "--update-baseline needs --baseline FILE" in ran.err


def test_a_baseline_naming_a_key_twice_is_a_usage_error(cli, tmp_path):
    """json.loads keeps the last value: a doctored baseline could hide a moved figure."""
    base = tmp_path / "base.json"
    base.write_text('{"schema": "haltproof-baseline/1", "runs": {}, "runs": {}}')
    ran = cli("check", LOOP_DEMO, "-p", "max_steps=1", "-p", "max_retries=0", "--baseline", base)
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == (f"error: --baseline {base}: cannot read it: duplicate key 'runs' in a JSON object "
                       "(which value is meant is ambiguous)\n")


def test_a_baseline_past_its_size_limit_is_refused_before_anything_runs(cli, tmp_path, monkeypatch):
    from haltproof.explorer import baseline
    base = tmp_path / "base.json"
    args = (LOOP_DEMO, "-p", "max_steps=1", "-p", "max_retries=0", "--baseline", base, "--quiet")
    assert cli("check", *args).code == 0                     # written
    size = base.stat().st_size
    monkeypatch.setattr(baseline, "MAX_BASELINE_BYTES", size - 1)
    ran = cli("check", *args)
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == (f"error: --baseline {base}: the file is {size:,} bytes, more than the limit of "
                       f"{size - 1:,} bytes for a baseline\n")
    monkeypatch.setattr(baseline, "MAX_BASELINE_BYTES", size)
    assert cli("check", *args).code == 0
