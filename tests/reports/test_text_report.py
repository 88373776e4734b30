"""The text report renders the report dict, like every format: quiet by default, --verbose in full."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from haltproof.api import check
from haltproof.machine.text import (decimal_text, digits, fraction_from_json, fraction_json, fraction_text,
                                    int_from_text, int_text, trace_table, value_text, values_text)
from haltproof.reports import html
from haltproof.reports.text import render_text

TINY = """\
machine: tiny
params:
  N: [1, 2]
vars:
  x: {type: int, min: 0, max: 2, init: 0}
actions:
  step:
    when: x < N
    do:
      - set: {x: x + 1}
terminal:
  when: x == N
properties:
  below_two:
    always: x < 2
"""

TABLE = ["step  action     choices  rule  state (changes)",
         "0     (initial)                 x=0",
         "1     step                      x=1",
         "2     step                      x=2"]


def _seconds_out(text: str) -> str:
    return re.sub(r"\d+\.\d\d s\b", "T s", text)


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.chdir(tmp_path)
    Path("tiny.yaml").write_text(TINY)
    return check("tiny.yaml").to_json()


def test_default_is_one_line_a_run_then_the_findings_in_full_then_the_totals(tiny: dict[str, Any]) -> None:
    assert _seconds_out(render_text(tiny)).splitlines() == [
        "proved    tiny.yaml [tiny] N=1: 2 states, T s",
        "violated  tiny.yaml [tiny] N=2: 3 states, T s",
        "",
        "findings:",
        "",
        "tiny.yaml  [tiny]  N=2",
        "  violated: 3 states, 2 transitions, 1 terminal, depth 2, T s",
        "  VIOLATED  below_two  false in this state",
        *("      " + row for row in TABLE),
        "",
        "2 runs: 1 proved, 0 violated as expected, 1 failed, 0 incomplete -> violated",
    ]


def test_verbose_lists_every_property_bound_and_the_sweep(tiny: dict[str, Any]) -> None:
    text = _seconds_out(render_text(tiny, verbose=True))
    assert text.splitlines()[:6] == [
        "tiny.yaml  [tiny]  N=1",
        "  proved: 2 states, 1 transitions, 1 terminal, depth 1, T s",
        "  holds     domains       every variable stays inside its declared domain (never clamped or wrapped)",
        "  holds     well_defined  every expression evaluates and every decide table has a matching rule",
        "  holds     below_two     true in every reachable state",
        "  bounds: transitions at most 1",
    ]
    assert "\n".join("      " + row for row in TABLE) in text
    assert text.endswith("sweep of tiny.yaml:\n  N=1: proved\n  N=2: FAILED\n  below_two first fails at N=2\n\n"
                         "2 runs: 1 proved, 0 violated as expected, 1 failed, 0 incomplete -> violated\n")


def test_quiet_is_the_totals_line_alone(tiny: dict[str, Any]) -> None:
    assert render_text(tiny, quiet=True) == \
        "2 runs: 1 proved, 0 violated as expected, 1 failed, 0 incomplete -> violated\n"


def test_the_text_reads_only_the_report_dict(tiny: dict[str, Any]) -> None:
    """The JSON report, written and read back, renders the same text: no RunResult needed."""
    again = json.loads(json.dumps(tiny))
    assert render_text(again) == render_text(tiny)
    assert render_text(again, verbose=True) == render_text(tiny, verbose=True)


def test_expected_violations_are_one_line_each_unless_verbose(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("tiny.yaml").write_text(TINY.replace("N: [1, 2]", "N: [2]") + "expect:\n  violated: [below_two]\n")
    data = check("tiny.yaml").to_json()
    assert _seconds_out(render_text(data)).splitlines() == [
        "violated as expected  tiny.yaml [tiny] N=2: 3 states, T s (below_two)",
        "",
        "1 run: 0 proved, 1 violated as expected, 0 failed, 0 incomplete -> proved",
    ]
    verbose = render_text(data, verbose=True)
    assert "\n  violated as expected below_two     false in this state\n" in verbose
    assert "\n".join("      " + row for row in TABLE) in verbose


def test_a_failing_run_shows_what_went_wrong_not_what_it_expected(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("tiny.yaml").write_text(TINY.replace("N: [1, 2]", "N: [2]")
                                 + "  below_one:\n    always: x < 1\nexpect:\n  violated: [below_two]\n")
    assert _seconds_out(render_text(check("tiny.yaml").to_json())).splitlines() == [
        "violated, NOT as expected  tiny.yaml [tiny] N=2: 3 states, T s",
        "",
        "findings:",
        "",
        "tiny.yaml  [tiny]  N=2",
        "  violated, NOT as expected: 3 states, 2 transitions, 1 terminal, depth 2, T s",
        "  VIOLATED (NOT as expected) below_one  false in this state",
        *("      " + row for row in TABLE[:3]),
        "",
        "1 run: 0 proved, 0 violated as expected, 1 failed, 0 incomplete -> violated",
    ]


def test_a_stopped_run_counts_its_unknowns_and_shows_its_violations_in_full(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound is the finding of a stopped run: its unknowns are one line, not one each;
    a violation found before the stop is still shown with its trace."""
    monkeypatch.chdir(tmp_path)
    Path("tiny.yaml").write_text(TINY.replace("N: [1, 2]", "N: [2]"))
    data = check("tiny.yaml", max_states=2).to_json()
    assert _seconds_out(render_text(data)).splitlines() == [
        "violated (stopped at --max-states)  tiny.yaml [tiny] N=2: 3 states, T s",
        "",
        "findings:",
        "",
        "tiny.yaml  [tiny]  N=2",
        "  violated (stopped at --max-states): 3 states, 2 transitions, 0 terminal, depth 2, T s",
        "  stopped at 3 states: --max-states 2 reached",
        "  unknown   2 properties, not decided as the exploration stopped (--verbose lists them)",
        "  VIOLATED  below_two  false in this state",
        *("      " + row for row in TABLE),
        "",
        "1 run: 0 proved, 0 violated as expected, 1 failed, 0 incomplete -> violated",
    ]
    verbose = render_text(data, verbose=True)
    assert "\n  unknown   domains       not decided: the exploration stopped at --max-states\n" in verbose


def test_an_incomplete_run_is_not_called_not_as_expected(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Stopped by --max-states before its expected violation: the gate says incomplete (exit 3),
    and so do the words, in every format (text and HTML share them)."""
    monkeypatch.chdir(tmp_path)
    Path("tiny.yaml").write_text(TINY.replace("N: [1, 2]", "N: [2]") + "expect:\n  violated: [below_two]\n")
    report = check("tiny.yaml", max_states=2)
    data = report.to_json()
    assert (report.exit_code, data["runs"][0]["as_expected"]) == (3, False)
    assert _seconds_out(render_text(data)).splitlines()[0] == \
        "incomplete (stopped at --max-states)  tiny.yaml [tiny] N=2: 3 states, T s"
    assert html.run_verdict(data["runs"][0]) == ("incomplete", "incomplete")


WARNED = """\
machine: tiny
vars:
  x: {type: int, min: 0, max: 2, init: 0}
actions:
  step:
    when: x < 1
    do:
      - set: {x: x + 1}
  jump:
    when: x == 2
    do:
      - set: {x: 0}
terminal:
  when: x == 1
properties:
  below_two:
    always: x < 2
"""


def test_warnings_are_counted_by_default_and_listed_with_verbose(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("warn.yaml").write_text(WARNED)
    data = check("warn.yaml").to_json()
    assert _seconds_out(render_text(data)).splitlines() == [
        "proved  warn.yaml [tiny]: 2 states, T s, 1 warning",
        "",
        "1 warning in 1 run (vacuity: parts of a spec that never matter): --verbose lists them",
        "1 run: 1 proved, 0 violated as expected, 0 failed, 0 incomplete -> proved",
    ]
    assert "\n  warning: vacuous: action jump (line 9) is never taken\n" in render_text(data, verbose=True)


def test_one_value_formatter_for_every_layer() -> None:
    assert [value_text(v) for v in (True, False, None, 3, "a")] == ["true", "false", "null", "3", "a"]
    assert values_text(range(1, 6)) == "1..5"
    assert values_text([1, 3]) == "1, 3"
    assert values_text(range(0, 10**12, 2)) == "0, 2, ..., 999999999998 (500,000,000,000 values)"


def test_exact_numbers_of_any_size_as_text() -> None:
    """Python refuses int <-> text past 4,300 digits (issue 26, finding 7): the helpers write and
    read them by halves, and text for people shows a long fraction by its value and size."""
    from fractions import Fraction
    big = 7 ** 20000                                     # 16,902 digits
    assert digits(big) == 16902 and [digits(n) for n in (0, 9, 10, 99, 100, -1000)] == [1, 1, 2, 2, 3, 4]
    text = int_text(big)
    assert len(text) == 16902 and text[:5] == "91369" and text[-3:] == "001" and int_from_text(text) == big
    assert int_from_text("-" + text) == -big and int_text(-big) == "-" + text
    with pytest.raises(ValueError):
        int_from_text("1" * 5000 + "x")
    third = Fraction(1, 3) ** 9000
    assert fraction_from_json(fraction_json(third)) == third and fraction_json(Fraction(6, 2)) == "3"
    assert fraction_text(Fraction(171, 200)) == "171/200 (0.855)" and fraction_text(Fraction(2)) == "2"
    assert fraction_text(third, " here") == "about 8.10415e-4295 (an exact fraction of 4,296 digits here)"
    assert fraction_text(1 - third) == "about 1 - 8.10415e-4295 (an exact fraction of 8,590 digits)"
    assert fraction_text(Fraction(big)) == "about 9.13693e+16901 (an exact integer of 16,902 digits)"
    assert fraction_text(Fraction(-(10 ** 45), 3)) == "about -3.33333e+44 (an exact fraction of 47 digits)"
    assert decimal_text(Fraction(10 ** 400 - 1, 10 ** 400)) == "1 - 1e-400"


def test_one_trace_table_for_every_layer() -> None:
    lasso = {"kind": "lasso", "loop_start": 1,
             "steps": [{"state": {"x": 0, "b": False}, "action": None, "choices": {}, "rule": None},
                       {"state": {"x": 1, "b": False}, "action": "go", "choices": {"c": True}, "rule": "r"},
                       {"state": {"x": 1, "b": False}, "action": "stay", "choices": {}, "rule": None}]}
    assert trace_table(lasso) == [
        "step  action     choices  rule  state (changes)",
        "0     (initial)                 x=0 b=false",
        "1     go         c=true   r     x=1  <- loop starts",
        "2     stay                      (no change)  -> back to step 1",
    ]


@pytest.mark.parametrize("args, message", [
    (["--verbose", "--quiet"], "--verbose and --quiet ask for opposite text reports: give one of them"),
    (["--verbose", "--format", "json"], "--verbose lengthens the text report only, not --format json: "
                                        "drop it, or leave out --format"),
])
def test_verbose_is_never_ignored_silently(cli: Any, tiny: dict[str, Any], args: list[str], message: str) -> None:
    ran = cli("check", "tiny.yaml", *args)
    assert (ran.code, ran.out) == (2, "")
    assert message in ran.err


def test_check_prints_the_short_report_and_verbose_the_full_one(cli: Any, tiny: dict[str, Any]) -> None:
    assert _seconds_out(cli("check", "tiny.yaml").out) == _seconds_out(render_text(tiny))
    assert _seconds_out(cli("check", "tiny.yaml", "--verbose").out) == _seconds_out(render_text(tiny, verbose=True))



# ---------------------------------------------------------------- answers, repeated errors (issue 27)

LIMITED = """\
machine: limited
params:
  K: [1, 2]
vars:
  x: {type: int, min: 0, max: 3, init: 0}
  status: {type: enum, values: [running, limit], init: running}
actions:
  step:
    when: status == running
    do:
      - set: {x: x + 1, status: 'limit if x + 1 >= K else running'}
terminal: status != running
properties:
  hits_the_limit:
    possible: status == limit
    smallest_safe: K
"""


def test_one_configuration_states_its_answers_with_the_steps_of_a_shortest_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A check of one configuration says whether the `possible` property can happen, with a
    shortest such run step by step, and how to find the smallest safe value (issue 27)."""
    monkeypatch.chdir(tmp_path)
    Path("limited.yaml").write_text(LIMITED)
    text = _seconds_out(render_text(check("limited.yaml", params={"K": 2}).to_json()))
    assert text.splitlines() == [
        "proved  limited.yaml [limited] K=2: 3 states, T s",
        "",
        "answers:",
        "  limited.yaml K=2: hits_the_limit possible, a shortest run takes 2 transitions (one K checked: sweep it "
        "for the smallest safe value)",
        "    hits_the_limit, a shortest run:",
        "      step  action     choices  rule  state (changes)",
        "      0     (initial)                 x=0 status=running",
        "      1     step                      x=1",
        "      2     step                      x=2 status=limit",
        "",
        "1 run: 1 proved, 0 violated as expected, 0 failed, 0 incomplete -> proved"]


def test_a_sweep_states_each_runs_answer_on_a_line_and_verbose_its_steps(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("limited.yaml").write_text(LIMITED)
    report = check("limited.yaml").to_json()
    text = render_text(report)
    assert ("answers:\n"
            "  limited.yaml K=1: hits_the_limit possible, a shortest run takes 1 transition\n"
            "  limited.yaml K=2: hits_the_limit possible, a shortest run takes 2 transitions\n\n") in text
    assert "a shortest run:" not in text
    verbose = render_text(report, verbose=True)
    assert ("  holds     hits_the_limit  possible: reached after 1 transition\n"
            "      step  action     choices  rule  state (changes)\n"
            "      0     (initial)                 x=0 status=running\n"
            "      1     step                      x=1 status=limit\n") in verbose


def test_the_same_error_in_every_run_is_printed_once_with_a_count(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 27: an error every param combination meets was printed once per run; it is printed
    once, with the runs that met it too, and the smallest safe value is undecided, not denied."""
    monkeypatch.chdir(tmp_path)
    Path("limited.yaml").write_text(LIMITED.replace("K: [1, 2]", "K: [1, 2, 3]").replace(
        "x: x + 1,", "x: x + 1 // (K - K),"))
    text = _seconds_out(render_text(check("limited.yaml").to_json()))
    findings = text[text.index("findings:"):text.index("answers:")]
    assert findings.splitlines() == [
        "findings:",
        "",
        "limited.yaml  [limited]  K=1",
        "  the same findings in 2 more runs: K = 2, 3",
        "  violated: 1 states, 0 transitions, 0 terminal, depth 0, T s",
        "  unknown   domains         not decided: the exploration was cut short by the spec's own errors (well_defined)",
        "  VIOLATED  well_defined    action step with no choices (limited.yaml:11): integer division or modulo by zero",
        "      step  action     choices  rule  state (changes)",
        "      0     (initial)                 x=0 status=running",
        "  unknown   hits_the_limit  not decided: not reached in the explored part; the exploration was cut short "
        "by the spec's own errors (well_defined)",
        "",
    ]
    assert ("  limited.yaml K = 1, 2, 3: hits_the_limit undecided (not reached in the explored part; the exploration "
            "was cut short by the spec's own errors (well_defined))\n") in text
    assert ("  limited.yaml: hits_the_limit undecided at every swept K (1..3), so the smallest safe value is not "
            "known: well_defined: action step with no choices (limited.yaml:11): integer division or modulo by zero\n"
            ) in text
    assert "no safe value" not in text
