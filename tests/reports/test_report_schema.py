"""The JSON Schema of `haltproof-report/1` (src/haltproof/report.schema.json): a valid draft
2020-12 schema that holds the contract keys of the report, refuses a report that breaks them
(naming where), and is applied to every report the suite builds (tests/report_schema.py)."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest

import report_schema
from conftest import LOOP_DEMO, MUTANTS, ROOT
from haltproof.reports import report

PIN = ("-p", "max_steps=3", "-p", "max_retries=0")


def test_the_schema_is_a_valid_2020_12_schema_shipped_in_the_package():
    schema = report_schema.published()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"] == report.SCHEMA == "haltproof-report/1"
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema == json.loads((ROOT / "src" / "haltproof" / "report.schema.json").read_text())


def test_the_contract_keys_are_required_with_their_values():
    """DESIGN.md's report contract: these keys and values may never be renamed or dropped."""
    schema = report_schema.published()
    defs = schema["$defs"]
    assert {"schema", "tool", "result", "runs"} <= set(schema["required"])
    assert schema["properties"]["result"]["enum"] == ["proved", "violated", "incomplete", "error"]
    run = defs["run"]
    assert {"spec", "machine", "params", "result", "stats", "properties", "coverage"} <= set(run["required"])
    assert run["properties"]["result"]["enum"] == ["proved", "violated", "incomplete"]
    assert run["properties"]["binding"]["enum"] == ["state", "snapshot", "replay"]
    assert run["properties"]["stats"]["required"] == ["states", "transitions", "terminal_states", "max_depth", "seconds"]
    assert run["properties"]["coverage"]["required"] == ["rules", "terminals"]
    assert defs["property"]["required"] == ["name", "kind", "status", "message", "trace"]
    assert defs["property"]["properties"]["status"]["enum"] == ["holds", "violated", "unknown"]
    assert defs["trace"]["required"] == ["kind", "loop_start", "steps"]
    assert defs["trace"]["properties"]["kind"]["enum"] == ["path", "lasso"]
    assert defs["step"]["required"] == ["state", "action", "choices", "rule"]


@pytest.fixture
def violated(cli):
    ran = cli("check", MUTANTS / "limit_before_observation.yaml", *PIN, "--format", "json")
    assert ran.code == 0          # violated as expected
    return ran.json()


def test_a_report_that_breaks_the_contract_is_refused_where_it_breaks(violated):
    assert report_schema.problems(violated) == []
    no_states = copy.deepcopy(violated)
    del no_states["runs"][0]["stats"]["states"]
    assert report_schema.problems(no_states) == ["/runs/0/stats: 'states' is a required property"]
    renamed = copy.deepcopy(violated)
    renamed["runs"][0]["properties"][0]["status"] = "passed"
    assert report_schema.problems(renamed) == [
        "/runs/0/properties/0/status: 'passed' is not one of ['holds', 'violated', 'unknown']"]
    bad_step = copy.deepcopy(violated)
    props = bad_step["runs"][0]["properties"]
    (k,) = [k for k, p in enumerate(props) if p["name"] == "final_answer_on_last_step_kept"]
    props[k]["trace"]["steps"][1]["action"] = 7
    assert report_schema.problems(bad_step) == [f"/runs/0/properties/{k}/trace/steps/1/action: "
                                                "7 is not of type 'string', 'null'"]


def test_an_undescribed_key_fails_the_suite_but_not_a_reader(violated):
    """The suite's validator closes every object: a key the schema does not describe is an
    error there, so it gets documented; the published schema lets a reader take new keys."""
    added = copy.deepcopy(violated)
    added["runs"][0]["surprise"] = 1
    assert report_schema.problems(added) == ["/runs/0: Additional properties are not allowed ('surprise' was unexpected)"]
    assert list(jsonschema.Draft202012Validator(report_schema.published()).iter_errors(added)) == []


def test_every_report_the_suite_builds_is_validated(cli, monkeypatch):
    """The hook on `to_json` sees a report built anywhere in this process, the command line's too."""
    shown = report._run_json

    def with_a_surprise(r):
        return {**shown(r), "surprise": 1}
    monkeypatch.setattr(report, "_run_json", with_a_surprise)
    assert cli("check", LOOP_DEMO, "-p", "max_steps=1", "-p", "max_retries=0", "--quiet").code == 0
    found = list(report_schema.BROKEN)
    report_schema.BROKEN.clear()          # this test's own report is broken on purpose
    assert found == ["/runs/0: Additional properties are not allowed ('surprise' was unexpected)"]


def test_an_itf_report_is_validated_as_written(cli, tmp_path):
    out = tmp_path / "itf.json"
    ran = cli("check", MUTANTS / "failure_not_a_step.yaml", "-p", "max_steps=2", "-p", "max_retries=0",
              "--trace-format", "itf", "--format", "json", "--json", out)
    data = ran.json()
    assert data["trace_format"] == "itf" and json.loads(out.read_text()) == data
    traces = [p["trace"] for p in data["runs"][0]["properties"] if p["trace"] is not None]
    assert traces and all(set(t) >= {"#meta", "vars", "states"} for t in traces)
    assert report_schema.problems(data) == []
    data["runs"][0]["properties"][0]["trace"] = {"vars": []}
    assert report_schema.problems(data) == ["/runs/0/properties/0/trace: 'kind' is a required property"]
