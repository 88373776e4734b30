"""The pytest plugin (`pytest --haltproof`) and the `check()` helper, run through pytester."""

from __future__ import annotations

import pytest

from haltproof.api import check
from conftest import LOOP_DEMO, MUTANTS


def _copy(pytester: pytest.Pytester, src, name: str, cut_expect: bool = False) -> None:
    text = src.read_text()
    if cut_expect:
        text = text[:text.index("\nexpect:")] + "\n"
    (pytester.path / name).write_text(text)


def test_specs_become_items_that_pass(pytester):
    _copy(pytester, LOOP_DEMO, "loop_demo.yaml")
    result = pytester.runpytest("--haltproof", "-q", "-p", "no:cacheprovider")
    # 10 combinations x (4 built-ins, code_matches_spec among them, + 17 declared properties),
    # error_reachable inactive at max_steps=1 max_retries=1, plus the 8 scenarios
    result.assert_outcomes(passed=10 * 4 + 10 * 17 - 1 + 8)


def test_plugin_is_inert_without_the_flag(pytester):
    _copy(pytester, LOOP_DEMO, "loop_demo.yaml")
    result = pytester.runpytest("-q", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_ini_option_enables_it(pytester):
    _copy(pytester, LOOP_DEMO, "loop_demo.yaml")
    pytester.makeini("[pytest]\nhaltproof = true\n")
    result = pytester.runpytest("-q", "-p", "no:cacheprovider",
                                "loop_demo.yaml::terminates[max_steps=1,max_retries=0]")
    result.assert_outcomes(passed=1)


def test_violations_fail_with_the_counterexample(pytester):
    _copy(pytester, MUTANTS / "failure_not_a_step.yaml", "broken.yaml", cut_expect=True)
    result = pytester.runpytest("--haltproof", "-q", "-p", "no:cacheprovider",
                                "broken.yaml::terminates[max_steps=2,max_retries=0]")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*broken.yaml:*: terminates is violated: a cycle of 1 transition among non-terminal states*",
        "*1     read_task_cards  obs=failed  continue*<- loop starts",
        "*2     read_task_cards  obs=failed  continue  (no change)  -> back to step 1",
    ])
    assert "Traceback" not in result.stdout.str()


def test_an_independence_violation_shows_both_runs_as_the_text_report_does(pytester):
    _copy(pytester, MUTANTS / "decide_reads_scenario.yaml", "reads.yaml", cut_expect=True)
    result = pytester.runpytest("--haltproof", "-q", "-p", "no:cacheprovider",
                                "reads.yaml::decide_ignores_scenario[max_steps=3,max_retries=0]")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*reads.yaml:*: decide_ignores_scenario is violated: *",
        "  step  action*",
        "  ... while this run, equal up to the ignored vars, does differently:",
        "  step  action*",
    ])


def test_expected_violations_pass(pytester):
    _copy(pytester, MUTANTS / "failure_not_a_step.yaml", "mutant.yaml")
    result = pytester.runpytest("--haltproof", "-q", "-p", "no:cacheprovider")
    assert result.ret == 0
    assert "failed" not in result.stdout.str().splitlines()[-1]


def test_incomplete_exploration_fails_never_passes(pytester):
    _copy(pytester, LOOP_DEMO, "loop_demo.yaml")
    result = pytester.runpytest("--haltproof", "--haltproof-max-states", "3", "-q", "-p", "no:cacheprovider",
                                "loop_demo.yaml::at_most_max_steps[max_steps=5,max_retries=1]")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*at_most_max_steps is not proved: not decided: the exploration stopped at --max-states*"])


@pytest.mark.parametrize("value", ["0", "-1", "nan"])
def test_max_states_must_be_a_positive_integer(pytester, value):
    """0 or -1 stopped every exploration at once (every item failed as incomplete)."""
    _copy(pytester, LOOP_DEMO, "loop_demo.yaml")
    result = pytester.runpytest("--haltproof", f"--haltproof-max-states={value}", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    message = "must be a number" if value == "nan" else "must be positive"
    result.stderr.fnmatch_lines([f"*error: argument --haltproof-max-states: --haltproof-max-states "
                                 f"{message}, got '{value}'"])


def test_invalid_spec_is_a_collection_error_with_file_and_line(pytester):
    (pytester.path / "bad.yaml").write_text(
        "machine: x\nvars: {a: {type: int, min: 0, max: 1, init: 0}}\nactions:\n  go: {when: a == b}\n")
    result = pytester.runpytest("--haltproof", "-q", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*bad.yaml:4: undefined name: 'b'*"])


def test_check_helper_in_an_ordinary_test(tmp_path):
    report = check(LOOP_DEMO, params={"max_steps": 2})
    assert report.result == "proved" and report.exit_code == 0
    report.assert_proved()
    assert len(report.runs) == 2
    broken = tmp_path / "broken.yaml"
    text = (MUTANTS / "retry_past_last_step.yaml").read_text()
    broken.write_text(text[:text.index("\nexpect:")] + "\n")
    failing = check(broken, params={"max_steps": 1})
    with pytest.raises(AssertionError) as info:
        failing.assert_proved()
    message = str(info.value)
    assert "haltproof: violated" in message
    assert "VIOLATED  continue_only_below_max_steps" in message
    assert "read_task_cards  obs=failed  retry" in message


def test_check_helper_model_flag_explores_the_stages():
    code = check(LOOP_DEMO, params={"max_steps": 3, "max_retries": 1})
    model = check(LOOP_DEMO, params={"max_steps": 3, "max_retries": 1}, model=True)
    assert code.runs[0].explored == "code: haltproof.harness.loop_binding:LoopDemoAdapter"
    assert model.runs[0].explored == "model"
    assert code.runs[0].stats["states"] == model.runs[0].stats["states"]
