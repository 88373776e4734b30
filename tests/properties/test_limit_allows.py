"""`maximum: EXPR` with `limit: PARAM`: a sweep says what each value of the limit allows.

The loop below takes `turns` turns, each asking for 0 to `per_turn` tools: the most tool runs
is turns * per_turn (worked out by hand), so `turns = 1, 2, 3` allows at most per_turn, 2 *
per_turn, 3 * per_turn tool_runs.
"""

from __future__ import annotations

import json

import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.machine.spec import parse_spec
from haltproof.reports.report import to_json

pytestmark = pytest.mark.verdict

LOOP = """\
machine: tool_loop
params:
  turns: {min: 1, max: 3}
  per_turn: {min: 1, max: 2}
vars:
  turn: {type: int, min: 0, max: 3, init: 0}
  tool_runs: {type: int, min: 0, max: 6, init: 0}
actions:
  turn:
    when: turn < turns
    choose:
      calls: {min: 0, max: 2}
    do:
      - set: {turn: turn + 1, tool_runs: 'tool_runs + min(calls, per_turn)'}
terminal: turn >= turns
properties:
  most_tool_runs:
    maximum: tool_runs
    limit: turns
  most_turns:
    maximum: turn
"""


def _report(text: str = LOOP, **options) -> dict:
    return to_json(check_spec(parse_spec(text, "loop.yaml"), Options(**options)))


def test_each_limit_value_with_its_exact_maximum_per_combination_of_the_other_params():
    (sweep,) = _report()["sweeps"]
    assert sweep["limit_allows"] == [
        {"property": "most_tool_runs", "param": "turns", "of": "tool_runs", "others": {"per_turn": 1},
         "limits": [1, 2, 3], "maxima": [1, 2, 3], "message": "turns = 1, 2, 3 allows at most 1, 2, 3 tool_runs"},
        {"property": "most_tool_runs", "param": "turns", "of": "tool_runs", "others": {"per_turn": 2},
         "limits": [1, 2, 3], "maxima": [2, 4, 6], "message": "turns = 1, 2, 3 allows at most 2, 4, 6 tool_runs"}]


def test_an_undecided_maximum_is_unknown_never_a_number():
    # --max-states 10 stops the turns=3 runs early (16 states with per_turn=2): the maximum found
    # there (a lower bound) is not what turns=3 allows
    (sweep,) = _report(max_states=10)["sweeps"]
    rows = {row["others"]["per_turn"]: row for row in sweep["limit_allows"]}
    assert rows[2]["maxima"] == [2, 4, None]
    assert rows[2]["message"] == ("turns = 1, 2, 3 allows at most 2, 4, unknown tool_runs "
                                  "(not decided at turns = 3)")


def test_no_line_without_a_sweep_of_the_limit_or_without_limit():
    one = LOOP.replace("turns: {min: 1, max: 3}", "turns: 2").replace("per_turn: {min: 1, max: 2}", "per_turn: 1")
    assert _report(one)["sweeps"] == []
    (sweep,) = _report(LOOP.replace("    limit: turns\n", ""))["sweeps"]
    assert "limit_allows" not in sweep


def test_text_markdown_and_html_show_the_lines(cli, tmp_path):
    spec = tmp_path / "loop.yaml"
    spec.write_text(LOOP)
    ran = cli("check", spec)
    assert ran.code == 0
    assert (f"what the limits allow:\n"
            f"  {spec} per_turn=1 most_tool_runs: turns = 1, 2, 3 allows at most 1, 2, 3 tool_runs\n"
            f"  {spec} per_turn=2 most_tool_runs: turns = 1, 2, 3 allows at most 2, 4, 6 tool_runs\n") in ran.out
    verbose = cli("check", spec, "--verbose").out
    assert "  most_tool_runs at per_turn=2: turns = 1, 2, 3 allows at most 2, 4, 6 tool_runs\n" in verbose
    markdown = cli("check", spec, "--format", "markdown").out
    assert "### What the limits allow" in markdown
    assert "| per\\_turn=2 | `most_tool_runs` | turns = 1, 2, 3 allows at most 2, 4, 6 tool\\_runs |" in markdown
    page = tmp_path / "r.html"
    cli("check", spec, "--html", page)
    assert ("<li><code>most_tool_runs</code> at per_turn=2: turns = 1, 2, 3 allows at most 2, 4, 6 tool_runs</li>"
            in page.read_text())
    assert json.loads(cli("check", spec, "--format", "json").out)["sweeps"][0]["limit_allows"]


@pytest.mark.parametrize("value, message", [
    ("nope", "bad.yaml:20: limit of most_tool_runs must name a param (the spec has: turns, per_turn, flag)"),
    ("flag", "bad.yaml:20: limit of most_tool_runs needs an int param to order; flag is a bool param"),
])
def test_a_bad_limit_is_refused_at_its_line(check, value, message):
    text = LOOP.replace("  per_turn: {min: 1, max: 2}\n", "  per_turn: {min: 1, max: 2}\n  flag: [true, false]\n")
    ran = check(text.replace("limit: turns", f"limit: {value}"))
    assert ran.code == 2 and ran.out == ""
    assert message in ran.err


def test_limit_goes_only_with_maximum(check):
    ran = check(LOOP.replace("    maximum: turn\n", "    always: turn <= 3\n    limit: turns\n"))
    assert ran.code == 2 and ran.out == ""
    assert ("bad.yaml:22: unknown key in property most_turns (allowed: always, description, smallest_safe, "
            "when): 'limit'") in ran.err
