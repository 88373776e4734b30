"""`--format junit` / `--junit FILE` on real checks: structure, counts, what each finding
becomes, the schema Jenkins and pytest use (junit-10.xsd), and a real consumer (junitparser)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import junitparser
import pytest

from ci_reports import (AS_EXPECTED, BAD_SCENARIO, DOMAINS, PIN_PROVED, PIN_VIOLATED, PROVED, TINY, TINY_ONLY,
                        VIOLATED, line_of)
from haltproof.reports.junit import render_junit

VIOLATED_PROPS = {"complete_search_always_decides", "final_answer_on_last_step_kept",
                  "limit_only_when_observation_allows_going_on"}

# junit-10.xsd (Jenkins xUnit plugin; the schema pytest's xunit2 output is tested against)
SUITES_ATTRS = {"name", "time", "tests", "failures", "errors"}
SUITE_ATTRS = {"name", "tests", "failures", "errors", "group", "time", "skipped", "timestamp",
               "hostname", "id", "package", "file", "log", "url", "version"}
SUITE_REQUIRED = {"name", "tests", "failures", "errors"}
CASE_ATTRS = {"name", "time", "classname", "group"}
CASE_CHILDREN = {"skipped", "error", "failure", "system-out", "system-err"}
SUREFIRE_TIME = re.compile(r"(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]{0,3})?")


def junit(cli, *args):
    ran = cli("check", *args, "--format", "junit")
    return ran, ET.fromstring(ran.out)


def junit_and_json(cli, *args):
    """One check, two renderings of its one report: JSON on stdout, JUnit in a file."""
    ran = cli("check", *args, "--format", "json", "--junit", "report.xml")
    return ran, ET.fromstring(Path("report.xml").read_text(encoding="utf-8")), ran.json()


def cases(root: ET.Element) -> dict[str, ET.Element]:
    return {tc.get("name"): tc for tc in root.iter("testcase")}


def outcome(tc: ET.Element) -> str:
    for kind in ("failure", "error", "skipped"):
        if tc.find(kind) is not None:
            return kind
    return "pass"


def assert_schema(root: ET.Element) -> None:
    """The constraints of junit-10.xsd, checked element by element."""
    assert root.tag == "testsuites"
    assert set(root.attrib) <= SUITES_ATTRS
    for suite in root:
        assert suite.tag == "testsuite"
        assert SUITE_REQUIRED <= set(suite.attrib) <= SUITE_ATTRS
        assert SUREFIRE_TIME.fullmatch(suite.get("time"))
        for child in suite:
            assert child.tag in {"testsuite", "properties", "testcase", "system-out", "system-err"}
            if child.tag == "properties":
                assert all(p.tag == "property" and set(p.attrib) == {"name", "value"} for p in child)
            if child.tag == "testcase":
                assert "name" in child.attrib and set(child.attrib) <= CASE_ATTRS
                assert SUREFIRE_TIME.fullmatch(child.get("time"))
                for el in child:
                    assert el.tag in CASE_CHILDREN
                    assert set(el.attrib) <= {"type", "message"}


def assert_counts(root: ET.Element) -> None:
    """Every count attribute equals what the test cases say."""
    total = {"tests": 0, "failures": 0, "errors": 0}
    for suite in root.iter("testsuite"):
        tcs = list(suite.iter("testcase"))
        got = {k: int(suite.get(k)) for k in ("tests", "failures", "errors", "skipped")}
        assert got == {"tests": len(tcs),
                       "failures": sum(outcome(t) == "failure" for t in tcs),
                       "errors": sum(outcome(t) == "error" for t in tcs),
                       "skipped": sum(outcome(t) == "skipped" for t in tcs)}
        for k in total:
            total[k] += got[k]
        assert abs(float(suite.get("time")) - sum(float(t.get("time")) for t in tcs)) < 0.001 * len(tcs) + 0.002
    assert {k: int(root.get(k)) for k in total} == total


def test_violated_spec_gives_failures_with_the_counterexample(cli, workdir):
    ran, root, rep = junit_and_json(cli, VIOLATED, *PIN_VIOLATED)
    assert ran.code == 1
    assert_schema(root)
    assert_counts(root)
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == VIOLATED and suite.get("file") == VIOLATED
    (run,) = rep["runs"]
    assert int(suite.get("tests")) == len(run["properties"])       # every property judged, no scenarios
    assert suite.get("failures") == "3" and suite.get("errors") == "0" and suite.get("skipped") == "0"
    by_name = cases(root)
    failed = {n for n, tc in by_name.items() if outcome(tc) == "failure"}
    assert failed == {f"{n}[max_steps=3,max_retries=0]" for n in VIOLATED_PROPS}
    assert all(tc.get("classname") == "loop_limit_before_observation" for tc in by_name.values())
    f = by_name["final_answer_on_last_step_kept[max_steps=3,max_retries=0]"].find("failure")
    assert f.get("type") == "violated"
    assert f.get("message") == "final_answer_on_last_step_kept violated: false for this transition"
    line = line_of(VIOLATED, r"^  final_answer_on_last_step_kept:")
    text = f.text
    assert f"{VIOLATED}:{line}  [loop_limit_before_observation]  max_steps=3 max_retries=0" in text
    assert "step  action           choices         rule      state (changes)" in text
    assert re.search(r"\n3 +read_task_cards +obs=one_match +limit +steps=3 observation=one_match "
                     r"decision=limit\n", text)
    assert by_name["at_most_max_steps[max_steps=3,max_retries=0]"].find("failure") is None


def test_a_sweep_is_one_suite_with_a_testcase_per_params_and_property(cli, workdir):
    ran, root, rep = junit_and_json(cli, VIOLATED)
    assert ran.code == 1
    assert_counts(root)
    (suite,) = root.findall("testsuite")
    assert len(rep["runs"]) == 6
    assert int(suite.get("tests")) == sum(len(r["properties"]) for r in rep["runs"])
    assert suite.get("failures") == "18"                          # 3 properties x 6 params
    names = [tc.get("name") for tc in suite.iter("testcase")]
    assert len(names) == len(set(names))
    assert "final_answer_on_last_step_kept[max_steps=5,max_retries=1]" in names
    assert abs(float(suite.get("time")) - sum(r["stats"]["seconds"] for r in rep["runs"])) <= 0.0005 + 1e-9


def test_proved_spec_passes_and_properties_not_judged_are_skipped(cli, workdir):
    ran, root = junit(cli, PROVED, *PIN_PROVED)
    assert ran.code == 0
    assert_schema(root)
    assert_counts(root)
    assert root.get("failures") == "0" and root.get("errors") == "0"
    assert {outcome(tc) for tc in root.iter("testcase")} == {"pass"}
    # error_reachable applies only when max_steps > max_retries: skipped at 1/1, judged at 2/1
    _, root = junit(cli, PROVED, "-p", "max_steps=1", "-p", "max_retries=1")
    skipped = [tc.get("name") for tc in root.iter("testcase") if outcome(tc) == "skipped"]
    assert skipped == ["error_reachable[max_steps=1,max_retries=1]"]
    assert root.find("testsuite").get("skipped") == "1"


def test_incomplete_run_is_errors_never_passes(cli, workdir):
    ran, root, rep = junit_and_json(cli, PROVED, *PIN_PROVED, "--max-states", "3")
    assert ran.code == 3
    assert_schema(root)
    assert_counts(root)
    unknown = [p["name"] for p in rep["runs"][0]["properties"] if p["status"] == "unknown"]
    assert len(unknown) >= 10
    by_name = cases(root)
    for name in unknown:
        err = by_name[f"{name}[max_steps=2,max_retries=1]"].find("error")
        assert err is not None and err.get("type") == "incomplete"
        assert "--max-states" in err.get("message") and "proves nothing" in err.get("message")
    assert root.get("errors") == str(len(unknown)) and root.get("failures") == "0"
    assert not any(outcome(tc) == "pass" and tc.get("name").split("[")[0] in unknown
                   for tc in root.iter("testcase"))


def test_violated_as_expected_is_a_pass_with_the_finding_in_system_out(cli, workdir):
    ran, root = junit(cli, AS_EXPECTED, *PIN_VIOLATED)
    assert ran.code == 0
    assert_counts(root)
    assert root.get("failures") == "0" and root.get("errors") == "0"
    by_name = cases(root)
    for name in VIOLATED_PROPS:
        tc = by_name[f"{name}[max_steps=3,max_retries=0]"]
        assert outcome(tc) == "pass"
        out = tc.find("system-out").text
        assert f"{name} violated as expected" in out and "read_task_cards" in out
    assert by_name["terminates[max_steps=3,max_retries=0]"].find("system-out") is None


def test_expected_violation_that_does_not_happen_is_a_failure(cli, workdir):
    spec = Path("plain/expects_too_much.yaml")
    text = Path(AS_EXPECTED).read_text()
    spec.write_text(text.replace("expect:\n  violated: [", "expect:\n  violated: [at_most_max_steps, "))
    ran, root = junit(cli, spec, *PIN_VIOLATED)
    assert ran.code == 1
    assert_counts(root)
    tc = cases(root)["at_most_max_steps[max_steps=3,max_retries=0]"]
    f = tc.find("failure")
    assert f.get("type") == "expected violation missing"
    assert "expected to be violated" in f.get("message")
    assert root.get("failures") == "1"


def test_expected_property_never_judged_fails_the_gate_testcase(cli, workdir):
    ran, root = junit(cli, TINY, *TINY_ONLY)
    assert ran.code == 1
    by_name = cases(root)
    assert outcome(by_name["never_one[N=1]"]) == "skipped"
    assert outcome(by_name["fine[N=1]"]) == "pass"
    gate = by_name["gate[N=1]"].find("failure")
    assert gate is not None and "not judged for these params: never_one" in gate.get("message")
    assert root.get("failures") == "1"


def test_failing_scenario_is_a_failure(cli, workdir):
    ran, root = junit(cli, BAD_SCENARIO, "-p", "max_steps=5", "-p", "max_retries=1")
    assert ran.code == 1
    assert_counts(root)
    by_name = cases(root)
    bad = by_name["scenario/one_match[max_steps=5,max_retries=1]"].find("failure")
    assert bad is not None and bad.get("type") == "scenario failed"
    assert f"{BAD_SCENARIO}:{line_of(BAD_SCENARIO, r'^  one_match:')}" in bad.text
    assert outcome(by_name["scenario/two_matches[max_steps=5,max_retries=1]"]) == "pass"
    assert root.get("failures") == "1"


def test_builtin_violation_points_at_the_transition(cli, workdir):
    ran, root = junit(cli, DOMAINS)
    assert ran.code == 1
    f = [tc for tc in root.iter("testcase") if tc.get("name").startswith("domains[")
         and outcome(tc) == "failure"]
    assert f
    assert re.search(rf"{re.escape(DOMAINS)}:\d+  \[", f[0].find("failure").text)


def test_several_specs_are_several_suites(cli, workdir):
    ran, root = junit(cli, PROVED, VIOLATED, *PIN_VIOLATED)
    assert ran.code == 1
    assert_counts(root)
    assert [s.get("name") for s in root.findall("testsuite")] == [PROVED, VIOLATED]
    assert root.find("testsuite").get("failures") == "0"


def test_junitparser_reads_the_same_counts(cli, workdir):
    for args, code in (((VIOLATED,), 1), ((PROVED, *PIN_PROVED, "--max-states", "3"), 3),
                       ((AS_EXPECTED, *PIN_VIOLATED), 0), ((BAD_SCENARIO, "-p", "max_steps=5",
                                                             "-p", "max_retries=1"), 1)):
        ran, root = junit(cli, *args)
        assert ran.code == code
        xml = junitparser.JUnitXml.fromstring(ran.out)
        suites = list(xml)
        assert len(suites) == len(root.findall("testsuite"))
        for suite, mine in zip(suites, root.findall("testsuite")):
            stored = (suite.tests, suite.failures, suite.errors, suite.skipped)
            suite.update_statistics()          # junitparser recounts from the test cases
            assert (suite.tests, suite.failures, suite.errors, suite.skipped) == stored
            assert stored == tuple(int(mine.get(k)) for k in ("tests", "failures", "errors", "skipped"))
            for case in suite:
                assert case.classname and case.name
                results = {type(r).__name__ for r in case.result}
                assert results <= {"Failure", "Error", "Skipped"}


def test_junit_file_is_rendered_from_the_same_report(cli, workdir):
    ran = cli("check", VIOLATED, *PIN_VIOLATED, "--format", "json", "--junit", "out.xml")
    assert ran.code == 1
    written = Path("out.xml").read_text(encoding="utf-8")
    assert written == render_junit(json.loads(ran.out))
    assert written.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites')


def test_text_is_escaped_for_xml(cli, workdir):
    spec = Path("plain/odd.yaml")
    text = Path(VIOLATED).read_text()
    odd = 'a <b>&amp; "quoted" \'single\' ]]> \x1b end'
    spec.write_text(text.replace(
        "description: a success or needs_input on the last allowed step is not turned into limit",
        f"description: {json.dumps(odd)}"))
    ran, root = junit(cli, spec, *PIN_VIOLATED)
    assert ran.code == 1
    f = cases(root)["final_answer_on_last_step_kept[max_steps=3,max_retries=0]"].find("failure")
    assert 'a <b>&amp; "quoted" \'single\' ]]> \ufffd end' in f.text   # the ESC XML cannot carry


def test_unwritable_junit_file_is_a_usage_error(cli, workdir):
    Path("ro").mkdir()
    ran = cli("check", VIOLATED, *PIN_VIOLATED, "--junit", "ro")
    assert ran.code == 2
    assert "--junit ro: cannot write the report" in ran.err and "Traceback" not in ran.err
    ran = cli("check", VIOLATED, *PIN_VIOLATED, "--junit", "missing/dir/out.xml")
    assert ran.code == 2 and "cannot write the report" in ran.err


@pytest.mark.parametrize("fmt", ["junit"])
def test_rendering_is_pure(cli, workdir, fmt):
    rep = cli("check", VIOLATED, *PIN_VIOLATED, "--format", "json").json()
    before = json.dumps(rep, sort_keys=True)
    assert render_junit(rep) == render_junit(rep)
    assert json.dumps(rep, sort_keys=True) == before


def test_properties_undecided_after_a_spec_error_are_skipped_not_errors(cli, workdir):
    """A domains violation cuts the exploration short: that violation is the finding, the
    properties it leaves undecided are skipped (not errors: no bound was hit)."""
    ran, root, rep = junit_and_json(cli, "specs/mutants/decide_counts_as_step.yaml")
    assert ran.code == 0                                      # violated exactly as expected
    undecided = sum(p["status"] == "unknown" for r in rep["runs"] for p in r["properties"])
    assert undecided > 0 and not any(r.get("stopped_by") for r in rep["runs"])
    assert root.get("errors") == "0" and root.get("failures") == "0"
    not_judged = sum(len(set(r["source"]["properties"]) - {p["name"] for p in r["properties"]})
                     for r in rep["runs"])
    assert int(root.find("testsuite").get("skipped")) == undecided + not_judged
    ran, root, rep = junit_and_json(cli, DOMAINS)
    assert ran.code == 1
    violated = sum(p["status"] == "violated" for r in rep["runs"] for p in r["properties"])
    assert root.get("failures") == str(violated) and root.get("errors") == "0"


def test_a_violated_probability_brings_its_likeliest_run_and_policy_table(cli):
    """docs/examples/careful_or_bold.yaml: a probability's failure holds, after the shortest
    counterexample, the most probable run with its odds, the witness policy as a decide
    table and the weights the answer moves with; the suite's system-out is the run's outcome table (issue 33)."""
    from conftest import ROOT
    ran, root = junit(cli, str(ROOT / "docs" / "examples" / "careful_or_bold.yaml"))
    assert ran.code == 1
    assert_schema(root)
    assert_counts(root)
    text = cases(root)["best_is_below_nine_in_ten"].find("failure").text
    assert text.endswith("""\
1     careful    obs=hit  got_it  n=1 status=success
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
  bold obs=miss (weight 1/4 (0.25)): -1/4 (0.25)
""")
    (suite,) = root.iter("testsuite")
    assert suite.find("system-out").text == """\
careful_or_bold  (no params)
  outcomes (probability, min..max over policies):
    terminal             1
    deadlock             0
    never_terminating    0
  expected until a terminal state:
    transitions          1 .. 7/4 (1.75)
"""
