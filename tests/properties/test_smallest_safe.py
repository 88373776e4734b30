"""`smallest_safe: PARAM` and `possible:`: a sweep's smallest safe value of a limit param.

The chain below works `need` steps in a row and stops with status limit once it has taken
max_steps steps without finishing: the limit is reachable exactly when max_steps < need, so
both properties are safe from max_steps = need on (worked out by hand).
"""

from __future__ import annotations

import json

import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.machine.spec import parse_spec
from haltproof.reports.report import to_json

pytestmark = pytest.mark.verdict

CHAIN = """\
machine: chain
params:
  max_steps: {min: 1, max: 4}
  need: {min: 2, max: 3}
vars:
  steps: {type: int, min: 0, max: 4, init: 0}
  status: {type: enum, values: [running, done, limit], init: running}
actions:
  work:
    when: status == running
    do:
      - set:
          steps: steps + 1
          status: 'done if steps + 1 >= need else (limit if steps + 1 >= max_steps else running)'
terminal: status != running
properties:
  hits_the_limit:
    possible: status == limit
    smallest_safe: max_steps
  finishes:
    always: status != limit
    smallest_safe: max_steps
"""


def _report(text: str = CHAIN, **options) -> dict:
    return to_json(check_spec(parse_spec(text, "chain.yaml"), Options(**options)))


def test_the_smallest_safe_value_per_combination_of_the_other_params():
    (sweep,) = _report()["sweeps"]
    rows = {(row["property"], row["others"]["need"]): row for row in sweep["smallest_safe"]}
    assert rows["hits_the_limit", 3] == {
        "property": "hits_the_limit", "param": "max_steps", "safe_means": "unreachable", "others": {"need": 3},
        "value": 3, "swept": [1, 2, 3, 4], "unsafe_at": [1, 2], "undecided_at": [],
        "message": "hits_the_limit unreachable from max_steps=3 on (swept 1..4; reachable at max_steps=2)"}
    assert rows["hits_the_limit", 2]["value"] == 2
    assert rows["finishes", 2]["message"] == "finishes holds from max_steps=2 on (swept 1..4; violated at max_steps=1)"
    assert rows["finishes", 3]["unsafe_at"] == [1, 2]


def test_possible_is_an_answer_either_way_never_a_violation():
    report = _report()
    for run in report["runs"]:
        (p,) = [p for p in run["properties"] if p["name"] == "hits_the_limit"]
        assert p["status"] == "holds"
        reachable = run["params"]["max_steps"] < run["params"]["need"]
        assert p["possible"] is reachable
        assert p["message"] == (f"possible: reached after {run['params']['max_steps']} transition"
                                + ("s" if run["params"]["max_steps"] > 1 else "")
                                if reachable else "impossible: no reachable state satisfies it")
        assert (p.get("witness") is not None) is reachable


def test_no_safe_value_when_the_largest_swept_is_unsafe():
    text = CHAIN.replace("max_steps: {min: 1, max: 4}", "max_steps: {min: 1, max: 2}")
    rows = {(r["property"], r["others"]["need"]): r for r in _report(text)["sweeps"][0]["smallest_safe"]}
    assert rows["hits_the_limit", 3]["value"] is None
    assert rows["hits_the_limit", 3]["message"] == ("hits_the_limit reachable at every swept max_steps (1..2): "
                                                    "no safe value")
    assert rows["hits_the_limit", 2]["message"] == ("hits_the_limit unreachable from max_steps=2 on "
                                                    "(swept 1..2; reachable at max_steps=1)")


def test_an_undecided_run_breaks_the_chain():
    (sweep,) = _report(max_states=2)["sweeps"]
    row = [r for r in sweep["smallest_safe"] if r["property"] == "finishes" and r["others"]["need"] == 3][0]
    # --max-states 2 stops each run early: the limit found within it (max_steps 1, 2) is a real
    # violation, the runs that would be safe (3, 4) are left undecided, so no safe value is claimed
    # and none is denied either: the message says why it is not known
    assert row["value"] is None
    assert row["undecided_at"] == [3, 4] and row["unsafe_at"] == [1, 2]
    assert row["message"] == ("finishes undecided at max_steps=4, the largest swept (1..4), so the smallest safe "
                              "value is not known: stopped at 3 states: --max-states 2 reached")


def test_a_sweep_whose_every_run_failed_on_an_error_says_undecided_and_why():
    """Every run stops on the same evaluation error (issue 27: a user-code error in every run):
    nothing was decided, so the summary says undecided and names the error, never "no safe value"."""
    text = CHAIN.replace("steps: steps + 1\n", "steps: steps + 1 // (need - need)\n")
    assert text != CHAIN
    (sweep,) = _report(text)["sweeps"]
    row = [r for r in sweep["smallest_safe"] if r["property"] == "hits_the_limit" and r["others"]["need"] == 2][0]
    assert (row["value"], row["unsafe_at"], row["undecided_at"]) == (None, [], [1, 2, 3, 4])
    assert row["message"] == ("hits_the_limit undecided at every swept max_steps (1..4), so the smallest safe value "
                              "is not known: well_defined: action work with no choices (chain.yaml:13): integer "
                              "division or modulo by zero")


def test_text_shows_the_summary(cli, tmp_path):
    spec = tmp_path / "chain.yaml"
    spec.write_text(CHAIN)
    ran = cli("check", spec)
    assert ran.code == 1
    assert "smallest safe values:\n" in ran.out
    assert f"  {spec} need=3: hits_the_limit unreachable from max_steps=3 on (swept 1..4; reachable at max_steps=2)" \
        in ran.out
    verbose = cli("check", spec, "--verbose").out
    assert ("  smallest safe at need=2: finishes holds from max_steps=2 on (swept 1..4; violated at max_steps=1)"
            in verbose)
    assert json.loads(cli("check", spec, "--format", "json").out)["sweeps"][0]["smallest_safe"]


@pytest.mark.parametrize("value, message", [
    ("nope", "bad.yaml:20: smallest_safe of hits_the_limit must name a param (the spec has: max_steps, need, flag)"),
    ("flag", "bad.yaml:20: smallest_safe of hits_the_limit needs an int param to order; flag is a bool param"),
])
def test_a_bad_smallest_safe_is_refused_at_its_line(check, value, message):
    text = CHAIN.replace("  need: {min: 2, max: 3}\n", "  need: {min: 2, max: 3}\n  flag: [true, false]\n")
    ran = check(text.replace("smallest_safe: max_steps", f"smallest_safe: {value}", 1))
    assert ran.code == 2 and ran.out == ""
    assert message in ran.err


def test_the_docs_show_what_the_chain_prints(cli, tmp_path, monkeypatch):
    from conftest import ROOT
    doc = (ROOT / "docs" / "reference" / "spec-language.md").read_text()
    section = doc[doc.index("## smallest_safe: the smallest safe limit"):doc.index("## measures: worst-case bounds")]
    shown = section.split("```\n")[2]
    assert "hits_the_limit:\n    possible: status == limit\n    smallest_safe: max_steps\n" in CHAIN
    monkeypatch.chdir(tmp_path)
    (tmp_path / "chain.yaml").write_text(CHAIN)
    ran = cli("check", "chain.yaml")
    shown_lines = shown.splitlines()
    assert shown_lines[0] == "smallest safe values:"
    for line in shown_lines:
        assert line + "\n" in ran.out
