"""Several concrete values per abstract choice: an adapter's `representatives()` gives a finite
list per class, `check` runs the code on every one, and the report counts them
(machine/binding.py, Classes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import several_representatives
from test_binding import bound_copy

pytestmark = pytest.mark.verdict      # judges verdicts: in the per-mutant selection (docs/explanation/mutation-testing.md)

TESTS = Path(__file__).resolve().parent.parent
PINS = ("-p", "max_steps=2", "-p", "max_retries=1")
COUNTS = {"read_task_cards": {"obs": {"failed": 2, "one_match": 2, "zero_matches": 3, "many_matches": 2,
                                      "incomplete": 1}}}


@pytest.fixture(autouse=True)
def _tests_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))


def _run(cli, path: Path) -> tuple[int, dict]:
    ran = cli("check", path, *PINS, "--format", "json")
    (run,) = json.loads(ran.out)["runs"]
    return ran.code, run


def test_every_representative_runs_and_the_report_counts_them(cli, tmp_path):
    several_representatives.SEEN.clear()
    code, run = _run(cli, bound_copy(tmp_path, "several_representatives:Recording"))
    assert code == 0 and run["result"] == "proved"
    assert run["representatives"] == COUNTS
    assert run["stats"]["states"] == 112      # the same space as one value per class
    seen = several_representatives.SEEN
    for value in ({"ok": False, "error": "timeout"}, {"ok": True, "matches": ["a", "b", "c"]},
                  {"ok": True, "matches": [], "search_complete": True, "note": "empty"}):
        assert value in seen, value


def test_the_text_report_lists_the_counts(cli, tmp_path):
    ran = cli("check", bound_copy(tmp_path, "several_representatives:Several"), *PINS, "--verbose")
    assert ran.code == 0
    assert ("  concrete values per class of read_task_cards obs: failed 2, one_match 2, zero_matches 3, "
            "many_matches 2, incomplete 1\n") in ran.out


def test_two_values_of_one_class_that_behave_differently_are_a_finding(cli, tmp_path):
    code, run = _run(cli, bound_copy(tmp_path, "several_representatives:TooCoarse"))
    assert code == 1
    p = next(p for p in run["properties"] if p["name"] == "bound_code")
    assert p["status"] == "violated"
    assert p["message"].startswith("action read_task_cards with obs=one_match: two concrete values of the "
                                   "abstract choice obs=one_match behave differently: representative 1 gives ")
    assert "(rule 'success'), representative 3 (of 3) gives " in p["message"]
    assert p["message"].endswith("(rule 'needs_input'): the code tells apart values the abstraction puts in one class")
    assert len(p["trace"]["steps"]) == 1         # from an initial state: the shortest trace


def test_an_empty_list_of_representatives_is_a_finding(cli, tmp_path):
    code, run = _run(cli, bound_copy(tmp_path, "several_representatives:NoneForFailed"))
    assert code == 1
    p = next(p for p in run["properties"] if p["name"] == "bound_code")
    assert p["message"] == ("action read_task_cards with obs=failed: representatives() for obs=failed of action "
                            "read_task_cards must give a non-empty list of concrete values, got an empty list")


def test_an_adapter_without_representatives_has_no_counts(cli, tmp_path):
    code, run = _run(cli, bound_copy(tmp_path, "haltproof.harness.loop_binding:LoopDemoAdapter"))
    assert code == 0 and "representatives" not in run
