"""`--format sarif` / `--sarif FILE` on real checks: valid against the official SARIF 2.1.0
schema, one rule per property, results at the property's line, the counterexample as a
code flow at the lines of the actions and rules that fired, stable fingerprints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_reports import (AS_EXPECTED, BAD_SCENARIO, DOMAINS, INDEPENDENCE, LASSO, PIN_PROVED, PIN_VIOLATED,
                        PROVED, TINY, TINY_ONLY, VIOLATED, assert_valid, line_of)
from haltproof.reports.sarif import FINGERPRINT, artifact_location, render_sarif

VIOLATED_PROPS = {"complete_search_always_decides", "final_answer_on_last_step_kept",
                  "limit_only_when_observation_allows_going_on"}


def sarif(cli, *args):
    ran = cli("check", *args, "--format", "sarif")
    return ran, json.loads(ran.out)


def sarif_and_json(cli, *args):
    ran = cli("check", *args, "--format", "json", "--sarif", "report.sarif")
    return ran, json.loads(Path("report.sarif").read_text(encoding="utf-8")), ran.json()


def test_the_schema_rejects_what_it_should(validator):
    """The validation is real: a log with a wrong version or a result without message fails."""
    good = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": []}]}
    assert_valid(validator, good)
    assert list(validator.iter_errors({**good, "version": "2.0.0"}))
    bad = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}},
                                         "results": [{"ruleId": "r"}]}]}
    assert list(validator.iter_errors(bad))


def test_violations_are_results_at_the_property_line(cli, workdir, validator):
    ran, log = sarif(cli, VIOLATED, *PIN_VIOLATED)
    assert ran.code == 1
    assert_valid(validator, log)
    assert log["version"] == "2.1.0" and len(log["runs"]) == 1
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "haltproof" and driver["version"]
    rules = driver["rules"]
    ids = [r["id"] for r in rules]
    assert len(ids) == len(set(ids))
    rep = cli("check", VIOLATED, *PIN_VIOLATED, "--format", "json").json()
    assert ids == [p["name"] for p in rep["runs"][0]["properties"]]     # one rule per property
    rule = rules[ids.index("final_answer_on_last_step_kept")]
    assert rule["properties"]["kind"] == "step_invariant"
    assert rule["shortDescription"]["text"] == ("a success or needs_input on the last allowed step is "
                                                "not turned into limit")
    results = run["results"]
    assert {r["ruleId"] for r in results} == VIOLATED_PROPS and len(results) == 3
    for r in results:
        assert r["level"] == "error" and r["kind"] == "fail"
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
        (loc,) = r["locations"]
        phys = loc["physicalLocation"]
        assert phys["artifactLocation"] == {"uri": VIOLATED, "uriBaseId": "%SRCROOT%"}
        assert phys["region"]["startLine"] == line_of(VIOLATED, rf"^  {r['ruleId']}:")
        assert "max_steps=3 max_retries=0" in r["message"]["text"]
        assert r["properties"]["params"] == {"max_steps": 3, "max_retries": 0}
    assert run["invocations"][0]["exitCode"] == 1


def test_counterexample_is_a_code_flow_at_the_lines_of_actions_and_rules(cli, workdir, validator):
    ran, log = sarif(cli, VIOLATED, *PIN_VIOLATED)
    result = next(r for r in log["runs"][0]["results"] if r["ruleId"] == "final_answer_on_last_step_kept")
    (flow,) = result["codeFlows"]
    (thread,) = flow["threadFlows"]
    locs = thread["locations"]
    assert len(locs) == 4                                          # initial state + 3 transitions
    lines = [loc["location"]["physicalLocation"]["region"]["startLine"] for loc in locs]
    first_var = line_of(VIOLATED, r"^  steps: \{type: int")
    cont = line_of(VIOLATED, r"\{name: continue,")
    limit = line_of(VIOLATED, r"\{name: limit,")
    action = line_of(VIOLATED, r"^  read_task_cards:")
    assert lines == [first_var, cont, cont, limit]
    assert [loc["executionOrder"] for loc in locs] == [0, 1, 2, 3]
    last = locs[3]
    assert last["location"]["annotations"][0]["startLine"] == action
    msg = last["location"]["message"]["text"]
    assert msg == ("step 3: read_task_cards obs=one_match, rule limit; "
                   "steps=3 observation=one_match decision=limit")
    assert last["state"]["decision"] == {"text": "limit"} and last["state"]["steps"] == {"text": "3"}
    assert locs[0]["location"]["message"]["text"].startswith("step 0: initial state; steps=0 failures=0")
    for loc in locs:
        uri = loc["location"]["physicalLocation"]["artifactLocation"]
        assert uri == {"uri": VIOLATED, "uriBaseId": "%SRCROOT%"}


def test_lasso_and_independence_traces(cli, workdir, validator):
    ran, log = sarif(cli, LASSO, "-p", "max_steps=2", "-p", "max_retries=0")
    assert ran.code == 1
    assert_valid(validator, log)
    res = {r["ruleId"]: r for r in log["runs"][0]["results"]}
    assert {"terminates", "terminates_within_max_steps", "steps_are_progress", "error_reachable"} <= set(res)
    locs = res["terminates"]["codeFlows"][0]["threadFlows"][0]["locations"]
    assert "(<- loop starts)" in locs[1]["location"]["message"]["text"]
    assert locs[-1]["location"]["message"]["text"].endswith("(-> back to step 1)")
    assert "codeFlows" not in res["error_reachable"]          # unreachable: no trace to show
    ran, log = sarif(cli, INDEPENDENCE, "-p", "max_steps=3", "-p", "max_retries=0")
    assert_valid(validator, log)
    indep = next(r for r in log["runs"][0]["results"] if r["ruleId"] == "decide_ignores_scenario")
    assert len(indep["codeFlows"]) == 2                       # the two transitions that differ


def test_builtin_violation_is_located_at_the_transition_that_broke_it(cli, workdir, validator):
    ran, log = sarif(cli, DOMAINS)
    assert ran.code == 1
    assert_valid(validator, log)
    doms = [r for r in log["runs"][0]["results"] if r["ruleId"] == "domains"]
    assert doms
    rule = next(r for r in log["runs"][0]["tool"]["driver"]["rules"] if r["id"] == "domains")
    assert rule["properties"]["kind"] == "builtin"
    lines = {line_of(DOMAINS, r"^  read_task_cards:")} | {
        n for n, text in enumerate(Path(DOMAINS).read_text().splitlines(), 1) if "{name:" in text}
    for r in doms:
        assert r["locations"][0]["physicalLocation"]["region"]["startLine"] in lines


def test_proved_spec_has_rules_and_no_results(cli, workdir, validator):
    ran, log = sarif(cli, PROVED, *PIN_PROVED)
    assert ran.code == 0
    assert_valid(validator, log)
    run = log["runs"][0]
    assert run["results"] == []
    assert len(run["tool"]["driver"]["rules"]) >= 17
    assert run["invocations"][0]["toolExecutionNotifications"] == []


def test_violations_as_expected_are_not_results(cli, workdir, validator):
    ran, log = sarif(cli, AS_EXPECTED, *PIN_VIOLATED)
    assert ran.code == 0
    assert_valid(validator, log)
    run = log["runs"][0]
    assert run["results"] == []
    listed = run["properties"]["expectedViolations"]
    assert {e["property"] for e in listed} == VIOLATED_PROPS
    assert all(e["spec"] == AS_EXPECTED for e in listed)


def test_incomplete_run_is_a_notification_not_a_result(cli, workdir, validator):
    ran, log = sarif(cli, PROVED, *PIN_PROVED, "--max-states", "3")
    assert ran.code == 3
    assert_valid(validator, log)
    run = log["runs"][0]
    assert run["results"] == []
    (note,) = run["invocations"][0]["toolExecutionNotifications"]
    assert note["level"] == "error" and "--max-states" in note["message"]["text"]
    assert run["invocations"][0]["exitCode"] == 3


def test_failing_scenario_is_a_result_at_the_scenario(cli, workdir, validator):
    ran, log = sarif(cli, BAD_SCENARIO, "-p", "max_steps=5", "-p", "max_retries=1")
    assert ran.code == 1
    assert_valid(validator, log)
    (res,) = log["runs"][0]["results"]
    assert res["ruleId"] == "haltproof/scenario"
    assert res["locations"][0]["physicalLocation"]["region"]["startLine"] == line_of(BAD_SCENARIO,
                                                                                      r"^  one_match:")


def test_run_not_as_expected_without_a_failing_property_is_a_result(cli, workdir, validator):
    ran, log = sarif(cli, TINY, *TINY_ONLY)
    assert ran.code == 1
    assert_valid(validator, log)
    (res,) = log["runs"][0]["results"]
    assert res["ruleId"] == "haltproof/expect" and res["level"] == "error"
    assert res["locations"][0]["physicalLocation"]["region"]["startLine"] == 1


def test_fingerprints_are_stable_across_runs_and_distinct(cli, workdir, validator, tmp_path_factory,
                                                         monkeypatch):
    _, first = sarif(cli, VIOLATED)
    _, second = sarif(cli, VIOLATED)
    fp1 = [r["partialFingerprints"][FINGERPRINT] for r in first["runs"][0]["results"]]
    fp2 = [r["partialFingerprints"][FINGERPRINT] for r in second["runs"][0]["results"]]
    assert len(fp1) == 18 and fp1 == fp2
    assert len(set(fp1)) == 18                                # per property x params
    assert all(len(f) == 64 and int(f, 16) >= 0 for f in fp1)
    # another checkout in another directory: the same relative path, the same fingerprints
    other = tmp_path_factory.mktemp("other_checkout")
    (other / "plain").mkdir()
    (other / VIOLATED).write_text(Path(VIOLATED).read_text())
    monkeypatch.chdir(other)
    _, third = sarif(cli, VIOLATED)
    assert [r["partialFingerprints"][FINGERPRINT] for r in third["runs"][0]["results"]] == fp1
    monkeypatch.chdir(workdir)
    # a different spec path is a different finding
    Path("plain/renamed.yaml").write_text(Path(VIOLATED).read_text())
    _, renamed = sarif(cli, "plain/renamed.yaml")
    assert not set(fp1) & {r["partialFingerprints"][FINGERPRINT] for r in renamed["runs"][0]["results"]}
    # it does not depend on timing or counts: render a report with other stats
    rep = cli("check", VIOLATED, "--format", "json").json()
    for run in rep["runs"]:
        run["stats"] = {k: 0 for k in run["stats"]}
    changed = json.loads(render_sarif(rep))
    assert [r["partialFingerprints"][FINGERPRINT] for r in changed["runs"][0]["results"]] == fp1


def test_output_is_deterministic_but_for_nothing(cli, workdir):
    a = cli("check", VIOLATED, *PIN_VIOLATED, "--format", "json").json()
    b = cli("check", VIOLATED, *PIN_VIOLATED, "--format", "json").json()
    for rep in (a, b):
        for run in rep["runs"]:
            run["stats"]["seconds"] = 0.0
    assert render_sarif(a) == render_sarif(b)
    assert str(Path.cwd()) not in render_sarif(a)              # no absolute paths


def test_sarif_file_is_rendered_from_the_same_report(cli, workdir, validator):
    ran, log, rep = sarif_and_json(cli, VIOLATED, *PIN_VIOLATED)
    assert ran.code == 1
    assert log == json.loads(render_sarif(rep))
    assert_valid(validator, log)


@pytest.mark.slow
def test_whole_specs_directory_validates(cli, workdir, validator):
    ran, log = sarif(cli, "specs", "plain")
    assert ran.code == 1
    assert_valid(validator, log)
    results = log["runs"][0]["results"]
    assert results and not any(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                               .startswith("specs/mutants/") for r in results)
    ids = [r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]]
    assert len(ids) == len(set(ids))


def test_artifact_locations():
    assert artifact_location("specs/a b.yaml") == {"uri": "specs/a%20b.yaml", "uriBaseId": "%SRCROOT%"}
    assert artifact_location("./specs/x.yaml") == {"uri": "specs/x.yaml", "uriBaseId": "%SRCROOT%"}
    assert artifact_location("/abs/x.yaml") == {"uri": "file:///abs/x.yaml"}


def test_unwritable_sarif_file_is_a_usage_error(cli, workdir):
    Path("ro").mkdir()
    ran = cli("check", VIOLATED, *PIN_VIOLATED, "--sarif", "ro")
    assert ran.code == 2
    assert "--sarif ro: cannot write the report" in ran.err and "Traceback" not in ran.err


def test_every_format_from_one_run_of_a_violated_mutant(cli, tmp_path, validator, monkeypatch):
    """Issue 6's bar: --junit, --sarif, --html, --json and --format github, all in one run."""
    import xml.etree.ElementTree as ET
    from conftest import MUTANTS
    text = (MUTANTS / "limit_before_observation.yaml").read_text()
    spec = tmp_path / "broken.yaml"
    spec.write_text(text[:text.index("\nexpect:")] + "\n")
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    out = {k: tmp_path / f"r.{k}" for k in ("xml", "sarif", "html", "json")}
    ran = cli("check", spec, "-p", "max_steps=3", "-p", "max_retries=0", "--format", "github",
              "--junit", out["xml"], "--sarif", out["sarif"], "--html", out["html"], "--json", out["json"])
    assert ran.code == 1
    assert "::error file=" in ran.out and "final_answer_on_last_step_kept" in ran.out
    assert "final_answer_on_last_step_kept" in summary.read_text()
    suite = ET.parse(out["xml"]).getroot()
    assert int(suite.get("failures") or suite.find("testsuite").get("failures")) == 3
    log = json.loads(out["sarif"].read_text())
    validator.validate(log)
    assert {r["ruleId"] for r in log["runs"][0]["results"]} == {
        "final_answer_on_last_step_kept", "complete_search_always_decides",
        "limit_only_when_observation_allows_going_on"}
    page = out["html"].read_text()
    assert "read_task_cards" in page and "final_answer_on_last_step_kept" in page
    report = json.loads(out["json"].read_text())
    assert report["result"] == "violated" and report["runs"][0]["stats"]["states"] == 112


def test_a_violated_probability_brings_its_value_likeliest_run_and_policy_table(cli, validator):
    """docs/examples/careful_or_bold.yaml: the result's properties hold its exact value, its
    most probable run's odds and its decide table; the run is a second code flow; the run's
    outcome table is in the SARIF run's properties (issue 33)."""
    from conftest import ROOT
    ran, log = sarif(cli, str(ROOT / "docs" / "examples" / "careful_or_bold.yaml"))
    assert ran.code == 1
    assert_valid(validator, log)
    (run,) = log["runs"]
    res = next(r for r in run["results"] if r["ruleId"] == "best_is_below_nine_in_ten")
    props = res["properties"]
    assert (props["value"], props["exact"]) == ({"min": 0.75, "max": 0.9375}, {"min": "3/4", "max": "15/16"})
    assert props["mostProbableRun"] == {"goal": "a run that reaches it", "probability": "1/2", "odds": ["1/2"]}
    assert props["decideTable"]["rows"] == [
        {"when": {"n": [0, 1], "status": ["going"]}, "action": "careful", "choices": {}},
        {"when": {"n": [2], "status": ["going"]}, "action": "bold", "choices": {}}]
    assert [f["message"]["text"] for f in res["codeFlows"]] == [
        "best_is_below_nine_in_ten: the shortest counterexample (1 transitions)",
        "best_is_below_nine_in_ten: the most probable run that reaches it under the witness policy "
        "(1 transitions, probability 1/2)"]
    (table,) = run["properties"]["outcomes"]
    assert (table["machine"], table["params"]) == ("careful_or_bold", {})
    assert table["outcomes"]["expected"]["transitions"]["exact"] == {"min": "1", "max": "7/4"}
