"""Every mutant of loop_demo is caught: the right properties, the shortest trace."""

from __future__ import annotations

from pathlib import Path

import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.machine.spec import load_spec

from conftest import MUTANTS, SPECS

ALL_MUTANTS = sorted(MUTANTS.glob("*.yaml"))


def test_there_are_mutants_for_each_warned_mistake():
    names = {p.stem for p in ALL_MUTANTS}
    assert {"limit_before_observation", "decide_counts_as_step", "retry_past_last_step",
            "empty_search_continues"} <= names


@pytest.mark.parametrize("path", ALL_MUTANTS, ids=lambda p: p.stem)
def test_mutant_is_caught_in_every_run(path: Path):
    first = path.read_text().splitlines()[0]
    assert first.startswith("# MUTANT: ") and len(first) > 20, "each mutant says what is broken"
    spec = load_spec(path)
    assert spec.expect_violated
    runs = check_spec(spec, Options())
    assert runs
    for r in runs:
        violated = {p.name for p in r.properties if p.status == "violated"}
        assert violated == set(spec.expect_violated), r.params
        assert r.as_expected is True
        for p in r.properties:
            if p.status == "violated" and p.kind != "reachable":
                assert p.trace is not None and p.expected is True


def _prop(path: str, params: dict, name: str):
    runs = check_spec(load_spec(MUTANTS / path), Options(pins=params))
    (run,) = runs
    return next(p for p in run.properties if p.name == name)


@pytest.mark.verdict
def test_limit_before_observation_shortest_trace():
    p = _prop("limit_before_observation.yaml", {"max_steps": 5, "max_retries": 1},
              "final_answer_on_last_step_kept")
    assert len(p.trace) == 5                      # four incomplete pages, then a success on step 5
    last = p.trace.steps[-1]
    assert last.choices["obs"] in ("one_match", "zero_matches", "many_matches")
    assert last.rule == "limit" and last.state["decision"] == "limit" and last.state["steps"] == 5


@pytest.mark.verdict
def test_decide_counts_as_step_overflows_the_counter():
    p = _prop("decide_counts_as_step.yaml", {"max_steps": 1, "max_retries": 0}, "domains")
    assert len(p.trace) == 1
    assert p.trace.steps[-1].state["steps"] == 2
    assert "outside its domain 0..1" in p.message


@pytest.mark.verdict
def test_retry_past_last_step_is_a_sixth_action():
    p = _prop("retry_past_last_step.yaml", {"max_steps": 5, "max_retries": 1},
              "continue_only_below_max_steps")
    assert len(p.trace) == 5
    last = p.trace.steps[-1]
    assert last.choices == {"obs": "failed"} and last.rule == "retry"
    assert last.state["steps"] == 5 and last.state["failures"] == 1
    d = _prop("retry_past_last_step.yaml", {"max_steps": 5, "max_retries": 1}, "domains")
    assert len(d.trace) == 6 and d.trace.steps[-1].state["steps"] == 6


@pytest.mark.verdict
def test_empty_search_continues_shortest_trace():
    p = _prop("empty_search_continues.yaml", {"max_steps": 3, "max_retries": 0},
              "complete_search_always_decides")
    assert len(p.trace) == 1
    assert p.trace.steps[-1].choices == {"obs": "zero_matches"}
    assert p.trace.steps[-1].rule == "continue"


@pytest.mark.verdict
def test_decide_reads_scenario_is_an_independence_violation():
    p = _prop("decide_reads_scenario.yaml", {"max_steps": 4, "max_retries": 0}, "decide_ignores_scenario")
    assert p.trace is not None and p.other_trace is not None
    a, b = p.trace.steps[-1], p.other_trace.steps[-1]
    assert a.action == b.action and a.choices == b.choices
    assert {a.rule, b.rule} == {"scripted_limit", "continue"}
    assert a.state["steps"] == b.state["steps"] == 2
    assert "limit" in {p.trace.steps[0].state["scenario"], p.other_trace.steps[0].state["scenario"]}


@pytest.mark.verdict
def test_failure_not_a_step_loops_forever():
    p = _prop("failure_not_a_step.yaml", {"max_steps": 3, "max_retries": 0}, "terminates")
    assert p.trace.kind == "lasso"
    assert p.trace.loop_start == 1 and len(p.trace) == 2
    assert p.trace.steps[-1].state == p.trace.steps[p.trace.loop_start].state
    assert p.trace.steps[-1].choices == {"obs": "failed"}


@pytest.mark.slow
def test_check_specs_dir_is_a_gate_that_passes(cli):
    ran = cli("check", SPECS)
    assert ran.code == 0, ran.out[-2000:]
    assert "violated as expected" in ran.out


def test_a_mutant_without_its_expect_fails_the_check(cli, tmp_path):
    text = (MUTANTS / "limit_before_observation.yaml").read_text()
    cut = text[:text.index("\nexpect:")] + "\n"
    copy = tmp_path / "uncaught.yaml"
    copy.write_text(cut)
    ran = cli("check", copy)
    assert ran.code == 1
    assert "VIOLATED" in ran.out


def test_a_mutant_whose_bug_is_fixed_fails_the_check(cli, tmp_path):
    """A spec that expects a violation which does not happen is a failed gate (exit 1)."""
    text = (SPECS / "loop_demo.yaml").read_text() + "\nexpect:\n  violated: [terminates]\n"
    spec = tmp_path / "not_broken.yaml"
    spec.write_text(text)
    ran = cli("check", spec, "-p", "max_steps=2", "-p", "max_retries=0", "--format", "json")
    assert ran.code == 1
    report = ran.json()
    assert report["result"] == "violated"
    (run,) = report["runs"]
    assert run["as_expected"] is False and run["result"] == "proved"
    term = next(p for p in run["properties"] if p["name"] == "terminates")
    assert term["status"] == "holds" and term["expected"] is False
