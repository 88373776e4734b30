"""Delegation in Pydantic AI (issue 29): a tool awaiting another agent's run, each model request
of either agent a transition, Pydantic AI's own UsageLimits checks deciding every limit.

What Pydantic AI does, found by these checks (examples/trees/pydantic_ai): without
`usage=ctx.usage` the delegate's requests escape the planner's usage, so a planner's
request_limit of N allows N (1 + 3) model calls over a delegate limited to 3; with it, the
delegate's own limit is checked against the shared usage, which then passes the planner's
request_limit (3 requests under a limit of 1), and the delegate's UsageLimitExceeded ends the
planner's run.
"""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("pydantic_ai")

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.machine.spec import load_spec

from conftest import ROOT
from framework_helpers import emitted_tests_replay, fresh_modules, maxima, results
from test_pydantic_ai import limit_off_by_one

EXAMPLE = ROOT / "examples" / "trees" / "pydantic_ai"


@pytest.fixture(autouse=True)
def _fresh_modules(monkeypatch):
    with fresh_modules(monkeypatch, ("delegation",)):
        yield


def check(name: str, **options) -> list:
    return check_spec(load_spec(EXAMPLE / name), Options(**options))


def steps(trace) -> list[tuple]:
    return [(next(iter(s.choices.values()), None), s.state["next"], s.state["requests"], s.state["model_calls"],
             s.state["status"]) for s in trace.steps]


@pytest.mark.slow
@pytest.mark.verdict
def test_without_the_shared_usage_the_delegates_requests_escape_the_planners_limit() -> None:
    runs = check("unshared.yaml")
    assert [(r.params, r.result, r.as_expected) for r in runs] == [
        ({"request_limit": 1}, "violated", True), ({"request_limit": 2}, "violated", True)]
    assert [{k: v for k, v in maxima(r).items() if k in ("most_model_requests", "most_model_calls",
                                                         "most_delegate_requests")} for r in runs] == [
        {"most_model_requests": n, "most_model_calls": 4 * n, "most_delegate_requests": 3 * n} for n in (1, 2)]
    escaped = results(runs[0])["usage_counts_every_request"]
    assert steps(escaped.trace) == [
        (None, "model_request", 0, 0, "running"),
        ("ask", "call_tools", 1, 1, "running"),
        (None, "delegate_request", 1, 1, "running"),
        ("search", "delegate_request", 1, 2, "running")]


@pytest.mark.slow
@pytest.mark.verdict
def test_with_the_shared_usage_the_delegates_own_limit_passes_the_planners() -> None:
    runs = check("shared.yaml")
    assert [(r.params, r.result, r.as_expected) for r in runs] == [
        ({"request_limit": 1}, "violated", True), ({"request_limit": 2}, "violated", True)]
    assert [results(r)["usage_counts_every_request"].status for r in runs] == ["holds", "holds"]
    over = results(runs[0])["most_model_requests"]
    assert (over.status, over.value["maximum"]["value"]) == ("violated", 3)
    assert steps(over.trace) == [
        (None, "model_request", 0, 0, "running"),
        ("ask", "call_tools", 1, 1, "running"),
        (None, "delegate_request", 1, 1, "running"),
        ("search", "delegate_request", 2, 2, "running")]


NESTED_WITHIN = """\
  delegate_within_its_limit:
    always: delegate_requests <= 3 * tool_runs
"""


@pytest.mark.slow
@pytest.mark.verdict
def test_the_delegates_request_limit_checked_one_request_late_changes_the_verdict(tmp_path, monkeypatch) -> None:
    """The delegate's limit is Pydantic AI's own check, in the delegate's run: one request late,
    a delegation makes 4 requests."""
    text = (EXAMPLE / "unshared.yaml").read_text().replace("properties:\n", "properties:\n" + NESTED_WITHIN)
    (tmp_path / "delegation.py").write_text((EXAMPLE / "delegation.py").read_text())
    (tmp_path / "unshared.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    (held,) = check_spec(load_spec(tmp_path / "unshared.yaml"), Options(pins={"request_limit": 1}))
    assert results(held)["delegate_within_its_limit"].status == "holds"
    limit_off_by_one(monkeypatch, "check_before_request", "request_limit")
    sys.modules.pop("delegation", None)
    (late,) = check_spec(load_spec(tmp_path / "unshared.yaml"), Options(pins={"request_limit": 1}))
    broken = results(late)["delegate_within_its_limit"]
    assert broken.status == "violated"
    assert broken.trace.steps[-1].state["delegate_requests"] == 4


@pytest.mark.slow
def test_the_unshared_worst_case_is_what_pydantic_ai_does_on_replay(cli, tmp_path, monkeypatch) -> None:
    """unshared.yaml's worst case at request_limit 1 (4 model calls: the planner's one and the
    delegate's 3), replayed through Pydantic AI by the emitted regression test."""
    text = (EXAMPLE / "unshared.yaml").read_text().replace("  request_limit: [1, 2]", "  request_limit: [1]")
    text = text.replace("properties:\n", "properties:\n  three_model_calls_at_most:\n    maximum: model_calls\n"
                                         "    at_most: 3\n")
    emitted_tests_replay(
        cli, tmp_path, monkeypatch, apps=(EXAMPLE / "delegation.py",), declaration=text,
        expected={"test_replayed_three_model_calls_at_most_request_limit1.py":
                  "three_model_calls_at_most is not fixed: the recorded counterexample still breaks it: the state "
                  "after step 5 has 4, more than at_most 3"})


DECLARATION = (EXAMPLE / "shared.yaml").read_text()


@pytest.mark.parametrize("change, line, message", [
    (("    target: delegation:research_agent\n", ""), 11,
     "delegates: research_agent needs exactly the keys target (module:attr of the Agent a tool delegates to) and "
     "models (its model's answers)"),
    (("    target: delegation:research_agent", "    target: delegation:RESEARCH_LIMITS"), 12,
     "delegates: delegation:RESEARCH_LIMITS is not a Pydantic AI Agent"),
    (("    target: delegation:research_agent", "    target: delegation:planner"), 12,
     "delegates: delegation:planner is the target itself"),
    (("      notes: 'Notes: battery energy density.'", "      notes: {tool_calls: [{name: nope, args: {}}]}"), 15,
     "models: answer notes calls a tool delegation:research_agent does not have (its tools: web_search): 'nope'"),
])
def test_a_bad_delegate_is_refused_at_its_line(check, tmp_path, change, line, message) -> None:
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "specs" / "delegation.py").write_text((EXAMPLE / "delegation.py").read_text())
    old, new = change
    assert old in DECLARATION
    ran = check(DECLARATION.replace(old, new, 1))
    sys.modules.pop("delegation", None)
    assert (ran.code, ran.out) == (2, "")
    assert f"bad.yaml:{line}: {message}\n" in ran.err
    assert "Traceback" not in ran.err


@pytest.mark.slow
def test_the_pydantic_ai_tree_examples_are_checked_and_documented(cli, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    ran = cli("check", "examples/trees/pydantic_ai")
    assert ran.code == 0, ran.out
    assert ran.out.endswith("4 runs: 0 proved, 4 violated as expected, 0 failed, 0 incomplete -> proved\n")
    assert "unshared.yaml most_model_calls: request_limit = 1, 2 allows at most 4, 8 model_calls" in ran.out
    assert "shared.yaml most_model_requests: request_limit = 1, 2 allows at most 3, 3 requests" in ran.out
    doc = (ROOT / "docs" / "how-to" / "trees-frameworks.md").read_text()
    assert "```yaml\n" + (EXAMPLE / "shared.yaml").read_text() + "```" in doc


TWO_AT_ONCE = """\
  both: {tool_calls: [{name: research, args: {question: a}}, {name: research, args: {question: b}}]}
"""


@pytest.mark.verdict
def test_two_delegations_at_once_are_a_bound_code_finding_not_a_verdict(tmp_path, monkeypatch) -> None:
    text = (EXAMPLE / "shared.yaml").read_text().replace("  answer: Battery", TWO_AT_ONCE + "  answer: Battery")
    (tmp_path / "delegation.py").write_text((EXAMPLE / "delegation.py").read_text())
    (tmp_path / "both.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    (run,) = check_spec(load_spec(tmp_path / "both.yaml"), Options(pins={"request_limit": 2}))
    finding = results(run)["bound_code"]
    assert finding.status == "violated"
    assert ("research_agent asks its model while research_agent's request waits: two delegations run at once "
            "(parallel tool calls), which haltproof does not explore") in finding.message
