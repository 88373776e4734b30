"""--emit-tests: each violated property becomes a pytest file that fails while the
counterexample still breaks it and passes once the spec or code is fixed."""

from __future__ import annotations

import pytest

from explorer.api import check
from explorer.regress import machine_for, still_violated
from machine.spec import load_spec

from conftest import LOOP_DEMO, MUTANTS


def _without_expect(src, dst):
    text = src.read_text()
    dst.write_text(text[:text.index("\nexpect:")] + "\n")
    return dst


def test_emitted_tests_fail_then_pass_once_fixed(cli, pytester):
    spec = _without_expect(MUTANTS / "retry_past_last_step.yaml", pytester.path / "loop.yaml")
    ran = cli("check", spec, "-p", "max_steps=2", "--emit-tests", pytester.path / "regress")
    assert ran.code == 1
    assert "wrote 2 regression tests" in ran.err
    files = sorted(p.name for p in (pytester.path / "regress").glob("test_*.py"))
    assert files == ["test_loop_retry_past_last_step_continue_only_below_max_steps_max_steps2_max_retries1.py",
                     "test_loop_retry_past_last_step_domains_max_steps2_max_retries1.py"]
    failing = pytester.runpytest("regress", "-q", "-p", "no:cacheprovider")
    failing.assert_outcomes(failed=2)
    failing.stdout.fnmatch_lines(["*continue_only_below_max_steps is still violated by the recorded "
                                  "counterexample: false for step 2*"])
    # fix the spec: the real loop's decide table
    (pytester.path / "loop.yaml").write_text(LOOP_DEMO.read_text())
    pytester.runpytest("regress", "-q", "-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_nothing_is_emitted_for_expected_violations(cli, tmp_path):
    ran = cli("check", MUTANTS / "retry_past_last_step.yaml", "--emit-tests", tmp_path / "out")
    assert ran.code == 0
    assert list((tmp_path / "out").glob("*.py")) == []
    assert "wrote 0 regression tests" in ran.err


def _finding(spec_path, params, name):
    (run,) = check(spec_path, params=params).runs
    return run, next(p for p in run.properties if p.name == name)


@pytest.mark.parametrize("mutant,params,name", [
    ("failure_not_a_step.yaml", {"max_steps": 3, "max_retries": 0}, "terminates"),
    ("failure_not_a_step.yaml", {"max_steps": 3, "max_retries": 0}, "steps_are_progress"),
    ("limit_before_observation.yaml", {"max_steps": 3, "max_retries": 1}, "final_answer_on_last_step_kept"),
    ("decide_counts_as_step.yaml", {"max_steps": 3, "max_retries": 0}, "domains"),
    ("decide_reads_scenario.yaml", {"max_steps": 3, "max_retries": 0}, "decide_ignores_scenario"),
])
def test_replayed_counterexample_breaks_the_mutant_but_not_the_real_loop(tmp_path, mutant, params, name):
    broken = _without_expect(MUTANTS / mutant, tmp_path / "m.yaml")
    run, prop = _finding(broken, params, name)
    assert prop.status == "violated"
    trace = prop.trace.to_json(run.params)
    other = prop.other_trace.to_json(run.params) if prop.other_trace else None
    m = machine_for(load_spec(broken), run.params)
    assert still_violated(m, name, trace, other)[0] is True
    fixed = machine_for(load_spec(LOOP_DEMO), run.params)     # the real harness, bound code
    if name in {p.name for p in load_spec(LOOP_DEMO).properties} | {"domains"}:
        assert still_violated(fixed, name, trace, other)[0] is False


def test_terminates_within_counterexample_replays(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "machine: counter\nparams: {N: [3]}\n"
        "vars: {c: {type: int, min: 0, max: 5, init: 0}}\n"
        "actions:\n  tick: {when: c < 5, do: [{set: {c: c + 1}}]}\n"
        "terminal: c == 5\n"
        "properties:\n  short: {terminates_within: N}\n")
    run, prop = _finding(spec, {}, "short")
    assert prop.status == "violated" and len(prop.trace) == 5
    m = machine_for(load_spec(spec), run.params)
    broken, why = still_violated(m, "short", prop.trace.to_json(run.params))
    assert broken and "takes 5 counted transitions (bound 3)" in why
