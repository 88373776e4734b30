"""--emit-tests: each violated property becomes a pytest file that fails while the
counterexample still breaks it and passes once the spec or code is fixed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from haltproof.api import check
from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.explorer.regress import assert_fixed, machine_for, still_violated
from haltproof.machine.spec import load_spec, shown_path

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
    failing.stdout.fnmatch_lines(["*continue_only_below_max_steps is not fixed: the recorded counterexample "
                                  "still breaks it: false for step 2"])
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
    assert (broken, why) == (True, "the recorded counterexample still breaks it: the run takes 5 transitions "
                                   "(bound 3)")


# ---------------------------------------------------------------- every finding kind, run as pytest

COUNT_UP = """\
machine: up
vars:
  x: {type: int, min: 0, max: 3, init: 0}
actions:
  up:
    when: x < 3
    do:
      - set: {x: x + 1}
terminal: x == 3
"""

PAIR = """\
machine: pair
vars:
  x: {type: int, min: 0, max: 2, init: 0}
  tag: {type: bool, init: false}
actions:
  mark:
    do:
      - set: {tag: true}
  up:
    when: x < 2
    do:
      - set: {x: x + 1}
terminal: x == 2
properties:
  blind: {independent_of: tag}
"""

DIVIDES = "integer division or modulo by zero"

RETRY = (Path(__file__).parent.parent / "fixtures" / "fairness" / "retry.yaml").read_text()
FINISHES = "  finishes: {existence: status == done}\n"
STRONG_OK = "fairness:\n  - strong: call_tool\n    when: outcome == ok\n"
WEAK_OK = "fairness:\n  - weak: call_tool\n    when: outcome == ok\n"

# what the emitted test must say while the finding stands: (spec, property, the fix as (old,
# new) text, the AssertionError's first line after "NAME is not fixed: "); {at} is the spec's
# file as messages show it
CASES = {
    "invariant": (COUNT_UP + "properties:\n  small: {always: 'x <= 2'}\n", "small", ("x <= 2", "x <= 3"),
                  "the recorded counterexample still breaks it: false in the state after step 3"),
    "step_invariant": (COUNT_UP.replace("x + 1", "x + 2").replace("max: 3", "max: 5")
                       + "properties:\n  slow: {step: 'after.x - before.x <= 1'}\n", "slow", ("x + 2", "x + 1"),
                       "the recorded counterexample still breaks it: false for step 1"),
    "variant": (COUNT_UP.replace("x + 1", "'min(x + 1, 2)'") + "properties:\n  rises: {variant: x, bound: 3}\n",
                "rises",
                ("'min(x + 1, 2)'", "x + 1"),
                "the recorded counterexample still breaks it: step 3 takes the variant from 2 to 2 (bound 3)"),
    "deadlock": (COUNT_UP.replace("when: x < 3", "when: x < 2") + "properties:\n  ends: {terminates: true}\n", "ends",
                 ("when: x < 2", "when: x < 3"), "the recorded counterexample still breaks it: the run still "
                                                 "ends in a deadlock"),
    "lasso": (COUNT_UP.replace("terminal:", "  back:\n    when: x == 2\n    do:\n      - set: {x: 0}\nterminal:")
              + "properties:\n  ends: {terminates: true}\n", "ends", ("- set: {x: 0}", "- set: {x: 3}"),
              "the recorded counterexample still breaks it: the run still returns to the state of step 0: it "
              "can go on forever"),
    # a lasso the right fairness assumption excuses: adding it is the fix (tests/fixtures/fairness/retry.yaml)
    "fair_terminates": (RETRY, "ends", (FINISHES, FINISHES + STRONG_OK),
                        "the recorded counterexample still breaks it: the run still returns to the state of step 1: "
                        "it can go on forever"),
    "fair_existence": (RETRY, "finishes", (FINISHES, FINISHES + STRONG_OK),
                       "the recorded counterexample still breaks it: the run still returns to the state of step 1 "
                       "with the obligation open"),
    "terminates_within": (COUNT_UP + "properties:\n  quick: {terminates_within: 2}\n", "quick",
                          ("terminates_within: 2", "terminates_within: 3"),
                          "the recorded counterexample still breaks it: the run takes 3 transitions (bound 2)"),
    "counted_within": (COUNT_UP + "properties:\n  quick: {terminates_within: 1, count: 'after.x >= 2'}\n", "quick",
                       ("after.x >= 2", "after.x >= 3"),
                       "the recorded counterexample still breaks it: the run takes 2 counted transitions (bound 1)"),
    "counted_within_one": (COUNT_UP + "properties:\n  quick: {terminates_within: 0, count: 'after.x == 3'}\n",
                           "quick", ("after.x == 3", "after.x == 4"),
                           "the recorded counterexample still breaks it: the run takes 1 counted transition (bound 0)"),
    "independent_outcome": (PAIR.replace("{x: x + 1}", "{x: '2 if tag else x + 1'}"), "blind",
                            ("'2 if tag else x + 1'", "x + 1"),
                            "the recorded counterexample still breaks it: the same transition up to the ignored "
                            "vars still has different outcomes"),
    "independent_guard": (PAIR.replace("when: x < 2", "when: x < 2 and not tag"), "blind",
                          ("x < 2 and not tag", "x < 2"),
                          "the recorded counterexample still breaks it: action up is still enabled in one state "
                          "and not in the other"),
    "independent_terminal": (PAIR.replace("terminal: x == 2", "terminal: x == 2 or tag"), "blind",
                             ("x == 2 or tag", "x == 2"),
                             "the recorded counterexample still breaks it: the two states still differ in being "
                             "terminal"),
    "domains": (COUNT_UP.replace("x + 1", "x + 2"), "domains", ("x + 2", "'min(x + 2, 3)'"),
                "the recorded counterexample still breaks it: step 2: x = 4 is outside its domain 0..3"),
    # well_defined: the failing expression is evaluated where the engines found it failing,
    # also beyond the trace's last step (a guard, an action's step)
    "terminal": ("machine: term\nvars:\n  x: {type: int, min: 0, max: 1, init: 1}\nactions:\n  flip:\n"
                 "    do:\n      - set: {x: 1 - x}\nterminal: '1 // x == 7'\nproperties:\n"
                 "  ends:\n    terminates: true\n", "well_defined", ("1 // x == 7", "x == 7"),
                 "the recorded counterexample still breaks it: step 1: well_defined: the terminal predicate "
                 f"({{at}}:8) fails: {DIVIDES}"),
    "guard": (COUNT_UP.replace("when: x < 3", "when: '1 // (2 - x) >= 0'"), "well_defined",
              ("1 // (2 - x) >= 0", "x < 3"),
              f"the recorded counterexample still breaks it: step 3: well_defined: the guard of action up ({{at}}:6) "
              f"fails: {DIVIDES}"),
    "step": (COUNT_UP.replace("{x: x + 1}", "{x: 'x + 1 + 0 * (1 // (2 - x))'}"), "well_defined",
             (" + 0 * (1 // (2 - x))", ""),
             "the recorded counterexample still breaks it: step 3: well_defined: action up with no choices "
             f"({{at}}:8) fails: {DIVIDES}"),
    "no_rule": (COUNT_UP.replace("      - set: {x: x + 1}\n", "      - decide: x\n        rules:\n"
                                 "          - {name: go, when: x < 2, then: x + 1}\n"), "well_defined",
                ("when: x < 2", "when: x < 3"),
                "the recorded counterexample still breaks it: step 3: well_defined: action up with no choices "
                "({at}:8) fails: no rule of the decide table of action up (deciding x) matched"),
    "state_property": (COUNT_UP + "properties:\n  odd: {always: '1 // (2 - x) >= -6'}\n", "well_defined",
                       ("1 // (2 - x)", "1 // (4 - x)"),
                       f"the recorded counterexample still breaks it: step 2: well_defined: property odd ({{at}}:11) "
                       f"fails: {DIVIDES}"),
    "step_property": (COUNT_UP + "properties:\n  odd: {step: '1 // (2 - after.x) >= -6'}\n", "well_defined",
                      ("1 // (2 - after.x)", "1 // (4 - after.x)"),
                      f"the recorded counterexample still breaks it: step 2: well_defined: property odd ({{at}}:11) "
                      f"fails: {DIVIDES}"),
    "variant_property": (COUNT_UP + "properties:\n  odd: {variant: 'x + 1 // (2 - x)', bound: 9}\n", "well_defined",
                         ("1 // (2 - x)", "1 // (4 - x)"),
                         "the recorded counterexample still breaks it: step 2: well_defined: property odd "
                         f"({{at}}:11) fails: {DIVIDES}"),
    "count": (COUNT_UP + "properties:\n  quick: {terminates_within: 5, count: '1 // (2 - after.x) > 0'}\n",
              "well_defined",
              ("1 // (2 - after.x)", "1 // (4 - after.x)"),
              f"the recorded counterexample still breaks it: step 2: well_defined: count of quick ({{at}}:11) fails: "
              f"{DIVIDES}"),
    "measure": (COUNT_UP + "measures:\n  tokens: {sum: '1 // (2 - after.x)'}\n", "well_defined",
                ("1 // (2 - after.x)", "1 // (4 - after.x)"),
                f"the recorded counterexample still breaks it: step 2: well_defined: measure tokens ({{at}}:11) "
                f"fails: {DIVIDES}"),
}


def _emitted(cli, pytester, text: str, name: str) -> Path:
    """The one regression test `check --emit-tests` writes for property `name` of spec.yaml."""
    (pytester.path / "spec.yaml").write_text(text)
    ran = cli("check", pytester.path / "spec.yaml", "--emit-tests", pytester.path / "regress")
    assert ran.code == 1, ran.out + ran.err
    machine = text.split("\n", 1)[0].removeprefix("machine: ")
    (path,) = (pytester.path / "regress").glob(f"test_{machine}_{name}.py")
    return path


def _outcome(pytester, path: Path):
    return pytester.runpytest(str(path), "-q", "-p", "no:cacheprovider")


@pytest.mark.parametrize("case", CASES)
def test_an_emitted_test_fails_while_its_finding_stands_and_passes_once_fixed(cli, pytester, case):
    text, name, (old, new), message = CASES[case]
    path = _emitted(cli, pytester, text, name)
    failing = _outcome(pytester, path)
    failing.assert_outcomes(failed=1)
    at = shown_path(str((pytester.path / "spec.yaml").resolve()))
    failing.stdout.fnmatch_lines([f"E   *AssertionError: {name} is not fixed: {message.format(at=at)}"])
    assert text.count(old) == 1
    (pytester.path / "spec.yaml").write_text(text.replace(old, new))
    _outcome(pytester, path).assert_outcomes(passed=1)


CODE = '''\
from haltproof.machine.binding import Adapter


class Code(Adapter):
    def concretize(self, state, params):
        return dict(state)

    def step(self, action, concrete, choices):
        return {"x": concrete["x"] + 1 + 0 * (1 // (2 - concrete["x"]))}, None

    def abstract(self, concrete, params):
        return concrete
'''


def test_an_emitted_bound_code_test_fails_while_the_code_raises_and_passes_once_fixed(cli, pytester,
                                                                                       monkeypatch):
    """The code raises on the step from x = 2, which is not part of the trace (it ends
    where the failing step starts): the test runs that step."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)     # the code is rewritten within a second
    monkeypatch.syspath_prepend(str(pytester.path))
    (pytester.path / "up_code.py").write_text(CODE)
    path = _emitted(cli, pytester, COUNT_UP.replace("vars:", "bind: up_code:Code\nvars:"), "bound_code")
    sys.modules.pop("up_code", None)
    failing = _outcome(pytester, path)
    failing.assert_outcomes(failed=1)
    failing.stdout.fnmatch_lines(["E   *AssertionError: bound_code is not fixed: the recorded counterexample "
                                  "still breaks it: step 3: bound_code: action up with no choices fails: the bound "
                                  f"code raised ZeroDivisionError: {DIVIDES}"])
    assert CODE.count(' + 0 * (1 // (2 - concrete["x"]))') == 1
    (pytester.path / "up_code.py").write_text(CODE.replace(' + 0 * (1 // (2 - concrete["x"]))', ""))
    _outcome(pytester, path).assert_outcomes(passed=1)


def _judge(tmp_path, text: str, name: str, now: str | None = None, subject: bool = True):
    """still_violated for the finding about `name` in spec `text`, replayed on spec `now`."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    run, prop = _finding(spec, {}, name)
    assert prop.status == "violated"
    if now is not None:
        spec.write_text(now)
    m = machine_for(load_spec(spec), run.params)
    other = prop.other_trace.to_json(run.params) if prop.other_trace else None
    return still_violated(m, name, prop.trace.to_json(run.params), other,
                          prop.subject.to_json() if subject and prop.subject else None)


@pytest.mark.parametrize("case", ["terminal", "guard", "step", "no_rule", "state_property", "count",
                                  "independent_guard", "independent_terminal"])
def test_a_test_written_before_findings_had_a_subject_still_fails_and_passes_once_fixed(tmp_path, case):
    """Without a subject every check the engines make at the trace's end is tried."""
    text, name, (old, new), message = CASES[case]
    broken, why = _judge(tmp_path, text, name, subject=False)
    at = shown_path(str(tmp_path / "spec.yaml"))
    assert (broken, why) == (True, message.format(at=at))
    assert _judge(tmp_path, text, name, text.replace(old, new), subject=False)[0] is False


def test_a_run_that_now_fails_another_way_first_is_no_fix(tmp_path):
    """The invariant's counterexample now meets a terminal predicate that cannot be
    evaluated: `small` cannot be judged there, and `well_defined` is broken on the run."""
    text = CASES["invariant"][0]
    now = text.replace("terminal: x == 3", "terminal: '1 // (2 - x) == 9'")
    at = shown_path(str(tmp_path / "spec.yaml"))
    assert _judge(tmp_path, text, "small", now) == (
        True, "the replayed run now stops on another error, so the finding cannot be judged: step 2: well_defined: "
              f"the terminal predicate ({at}:9) fails: integer division or modulo by zero")


def test_a_well_defined_finding_fixed_while_another_expression_fails_elsewhere_is_fixed(tmp_path):
    """The test re-judges its own finding: the guard of `up` evaluates now; a property that
    fails on no state of this run is not its business."""
    text, name, _, _ = CASES["guard"]
    now = text.replace("1 // (2 - x) >= 0", "x < 3") + "properties:\n  odd: {always: '1 // (5 - x) >= 0'}\n"
    assert _judge(tmp_path, text, name, now) == (
        False, "the guard of action up now evaluates at the end of the run")


def test_a_counterexample_that_can_no_longer_happen_is_fixed(tmp_path):
    text = CASES["invariant"][0]
    now = text.replace("when: x < 3", "when: x < 2")
    assert _judge(tmp_path, text, "small", now) == (
        False, "the counterexample no longer happens: step 3: action up is not enabled in this state")


def test_a_trace_over_other_vars_cannot_be_judged(tmp_path):
    """A var renamed since the test was written: no replay can say the finding is gone."""
    text = CASES["invariant"][0]
    now = text.replace("x", "n").replace("man:", "max:")
    assert _judge(tmp_path, text, "small", now) == (
        True, "the trace's vars ['x'] are not the spec's ['n']: write the regression tests again with --emit-tests")


@pytest.mark.parametrize("case,subject", [
    ("terminal", {"check": "terminal"}),
    ("guard", {"check": "guard", "name": "up"}),
    ("step", {"check": "action", "name": "up", "choices": {}}),
    ("state_property", {"check": "property", "name": "odd"}),
    ("count", {"check": "count", "name": "quick"}),
    ("measure", {"check": "measure", "name": "tokens"}),
    ("independent_outcome", {"check": "action", "name": "up", "choices": {}}),
    ("independent_guard", {"check": "guard", "name": "up"}),
    ("independent_terminal", {"check": "terminal"}),
])
def test_the_emitted_test_names_what_failed_or_differs(cli, pytester, case, subject):
    text, name, _, _ = CASES[case]
    source = _emitted(cli, pytester, text, name).read_text()
    assert f"SUBJECT = {subject!r}   # what failed or differs where the trace ends\n" in source
    assert f"    assert_fixed(SPEC, {name!r}, TRACE, OTHER, subject=SUBJECT)\n" in source


@pytest.mark.parametrize("case", ["no_rule", "independent_outcome", "independent_guard", "independent_terminal"])
def test_both_engines_give_a_finding_the_same_subject(tmp_path, case):
    text, name, _, _ = CASES[case]
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    found = []
    for engine in ("scalar", "vector"):
        (run,) = check_spec(load_spec(spec), Options(engine=engine))
        prop = next(p for p in run.properties if p.name == name)
        other = prop.other_trace and prop.other_trace.to_json()
        found.append((prop.message, prop.subject, prop.trace.to_json(), other))
    assert found[0] == found[1] and found[0][1] is not None


def test_the_documented_example_fails_as_the_docs_show(cli, pytester):
    doc = (Path(__file__).resolve().parent.parent.parent / "docs" / "how-to" / "binding.md").read_text()
    section = doc[doc.index("## Findings as regression tests"):]
    spec = section[section.index("```yaml\n") + 8:section.index("```", section.index("```yaml\n") + 8)]
    shown = section[section.index("```text\n") + 8:section.index("```", section.index("```text\n") + 8)]
    (pytester.path / "term.yaml").write_text(spec)
    assert cli("check", "term.yaml", "--emit-tests", "regress").code == 1
    failing = _outcome(pytester, pytester.path / "regress" / "test_term_well_defined.py")
    failing.assert_outcomes(failed=1)
    failing.stdout.fnmatch_lines(["E   *" + shown.strip()])


def test_a_property_taken_out_of_the_spec_is_no_fix(tmp_path):
    text = CASES["invariant"][0]
    assert _judge(tmp_path, text, "small", text.replace("small:", "other:")) == (
        True, "the spec no longer checks a property small with these params: delete this test if that is what "
              "you meant")


def test_a_param_the_trace_does_not_record_cannot_be_judged(tmp_path):
    text = CASES["invariant"][0]
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    run, prop = _finding(spec, {}, "small")
    spec.write_text(text.replace("vars:", "params: {N: [1]}\nvars:"))
    with pytest.raises(AssertionError) as raised:
        assert_fixed(spec, "small", prop.trace.to_json(run.params), subject=None)
    assert str(raised.value) == ("small cannot be judged: the trace records no value of param N: write the "
                                 "regression tests again with --emit-tests")


@pytest.mark.parametrize("name,still", [
    ("ends", "the run still returns to the state of step 1: it can go on forever"),
    ("finishes", "the run still returns to the state of step 1 with the obligation open")])
def test_a_lasso_is_re_judged_under_the_fairness_the_spec_has_now(tmp_path, name, still):
    """The retry loop's lasso (call_tool with outcome fail, observe, again) is excused by strong
    fairness of success, which is enabled on the cycle and never taken there; weak fairness of
    it is not enough (success is disabled while the result is looked at): the lasso still counts,
    and the message says what it is fair under."""
    assert RETRY.endswith(FINISHES)
    assert _judge(tmp_path, RETRY, name) == (True, f"the recorded counterexample still breaks it: {still}")
    assert _judge(tmp_path, RETRY, name, RETRY + WEAK_OK) == (
        True, f"the recorded counterexample still breaks it: {still}, fair under: weak call_tool when outcome == ok")
    assert _judge(tmp_path, RETRY, name, RETRY + STRONG_OK) == (
        False, "the cycle is no fair run now: it never takes strong call_tool when outcome == ok, and it is enabled "
               "in a state of the cycle; the spec's fairness excuses it")
    # weak fairness of an action enabled on the whole cycle (observe) that the cycle takes: still fair
    assert _judge(tmp_path, RETRY, name, RETRY + "fairness:\n  - weak: observe\n")[0] is True


def test_a_weak_assumption_enabled_on_the_whole_cycle_and_never_taken_excuses_it(tmp_path):
    """The lasso is `rest` looping on s = 0 while `finish` stays enabled: weak fairness of finish
    excuses it; weak fairness of `turn`, disabled on the cycle (it needs s == 1), does not."""
    text = ("machine: spin\nvars:\n  s: {type: int, min: 0, max: 2, init: 0}\nactions:\n"
            "  turn:\n    when: s == 1\n    do:\n      - set: {s: 0}\n"
            "  rest:\n    when: s == 0\n    do:\n      - set: {s: 0}\n"
            "  finish:\n    when: s < 2\n    do:\n      - set: {s: 2}\n"
            "terminal: s == 2\nproperties:\n  ends: {terminates: true}\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    _, prop = _finding(spec, {}, "ends")
    assert ([s.action for s in prop.trace.steps], prop.trace.loop_start) == ([None, "rest"], 0)
    assert _judge(tmp_path, text, "ends", text + "fairness:\n  - weak: finish\n") == (
        False, "the cycle is no fair run now: it never takes weak finish, and it is enabled in every state of the "
               "cycle; the spec's fairness excuses it")
    assert _judge(tmp_path, text, "ends", text + "fairness:\n  - weak: turn\n") == (
        True, "the recorded counterexample still breaks it: the run still returns to the state of step 0: it can go "
              "on forever, fair under: weak turn")
    assert _judge(tmp_path, text, "ends", text + "fairness:\n  - strong: turn\n")[0] is True
    assert _judge(tmp_path, text, "ends", text + "fairness:\n  - weak: finish\n    when: s == 1\n")[0] is True


def test_a_fairness_when_that_fails_on_the_replayed_cycle_is_another_error(tmp_path):
    """call_tool leaves idle states only, where the `when` divides by zero: on the cycle's step 3."""
    now = RETRY + "fairness:\n  - strong: call_tool\n    when: 1 // (1 if status == waiting else 0) == 1\n"
    broken, why = _judge(tmp_path, RETRY, "ends", now)
    assert broken is True
    assert why.startswith("the replayed run now stops on another error, so the finding cannot be judged: "
                          "step 3: well_defined: the fairness assumption strong call_tool when 1 // (1 if "
                          "status == waiting else 0) == 1 (")
    assert why.endswith("fails: integer division or modulo by zero")
