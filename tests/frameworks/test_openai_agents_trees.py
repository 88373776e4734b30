"""Agent trees in the OpenAI Agents SDK (issue 29): agents used as tools (`Agent.as_tool`), each
nested run with the max_turns its `as_tool` gave it, run by the SDK's own Runner.

What the SDK does, found by these checks: a nested run never inherits the parent run's
max_turns (its own, else the SDK's default 10); the parent's max_turns counts only the parent's
own model calls, so a tree of N parent turns over a tool with R turns makes up to N * (1 + R)
model calls; a nested MaxTurnsExceeded is a tool error the parent's model reads (the default
failure_error_function), or, with failure_error_function=None, the top run's own
MaxTurnsExceeded (the child's message, `Max turns (R) exceeded`).
"""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("agents")

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.machine.spec import load_spec
from haltproof.reports.report import to_json

from conftest import ROOT
from framework_helpers import emitted_tests_replay, fresh_modules, maxima, results
from test_openai_agents import max_turns_off_by_one

EXAMPLE = ROOT / "examples" / "trees" / "openai_agents"
MODULES = ("tree_app", "research")

TREE = '''\
from agents import Agent, function_tool


@function_tool
def search(query: str) -> str:
    """Search."""
    return f"found {query}"


researcher = Agent(name="Researcher", instructions="Search, then answer.", tools=[search])
orchestrator = Agent(name="Orchestrator", instructions="Delegate.",
                     tools=[researcher.as_tool("research", "Research a question.", max_turns=2{FAILURE})])
'''

DECLARATION = """\
framework: openai_agents
target: tree_app:orchestrator
input: go
models:
  Orchestrator:
    delegate: {tool: research, args: {input: q}}
    answer: done
  Researcher:
    search: {tool: search, args: {query: q}}
    notes: notes
params:
  max_turns: [1, 2]
  max_turns_research: [1, 2]
"""


@pytest.fixture(autouse=True)
def _fresh_modules(monkeypatch):
    with fresh_modules(monkeypatch, MODULES):
        yield


def tree(tmp_path, monkeypatch, declaration: str = DECLARATION, failure: str = "", **options) -> list:
    """The tree app (its agent tool's failure_error_function `failure`) checked with `declaration`."""
    (tmp_path / "tree_app.py").write_text(TREE.replace("{FAILURE}", failure))
    (tmp_path / "tree.yaml").write_text(declaration)
    monkeypatch.chdir(tmp_path)
    sys.modules.pop("tree_app", None)       # this app, not one an earlier call imported
    return check_spec(load_spec(tmp_path / "tree.yaml"), Options(**options))


def steps(trace) -> list[tuple]:
    return [(next(iter(s.choices.values()), None), s.state["agent"], s.state["turns"], s.state["model_calls"],
             s.state["child_limits"], s.state["status"]) for s in trace.steps]


@pytest.mark.slow
@pytest.mark.verdict
def test_a_tree_makes_the_product_of_its_limits_in_model_calls(tmp_path, monkeypatch) -> None:
    """N orchestrator turns, each calling the researcher, whose nested run has R turns: N * (1 + R)
    model calls in all, while max_turns (the top run's) still bounds the orchestrator's own N."""
    runs = tree(tmp_path, monkeypatch)
    assert [(r.params, r.result) for r in runs] == [
        ({"max_turns": n, "max_turns_research": r}, "proved") for n in (1, 2) for r in (1, 2)]
    assert [maxima(r) for r in runs] == [
        {"most_turns": n, "most_tool_runs": n * (1 + r), "most_model_calls": n * (1 + r),
         "most_turns_orchestrator": n, "most_turns_researcher": n * r} for n in (1, 2) for r in (1, 2)]
    witness = results(runs[3])["most_model_calls"].witness
    assert steps(witness) == [
        (None, "Orchestrator", 0, 0, 0, "running"),
        ("delegate", "Researcher", 1, 1, 0, "running"),
        ("search", "Researcher", 1, 2, 0, "running"),
        ("search", "Orchestrator", 1, 3, 1, "running"),       # the researcher's third turn: its limit
        ("delegate", "Researcher", 2, 4, 1, "running"),
        ("search", "Researcher", 2, 5, 1, "running"),
        ("search", "Orchestrator", 2, 6, 2, "limit")]         # the orchestrator's third turn: the top limit
    allows = {(row["property"], tuple(row["others"].items())): row["maxima"]
              for row in to_json(runs)["sweeps"][0]["limit_allows"]}
    assert allows[("most_model_calls", (("max_turns_research", 1),))] == [2, 4]
    assert allows[("most_model_calls", (("max_turns_research", 2),))] == [3, 6]
    child = results(runs[0])["child_limit_error"]
    assert (child.status, child.message) == ("holds", "possible: reached after 2 transitions")
    assert steps(child.witness)[-1] == ("search", "Orchestrator", 1, 2, 1, "limit")


CONTAINED = DECLARATION + """\
properties:
  top_limit_only_from_the_top:
    description: the run ends in MaxTurnsExceeded only once the orchestrator used its own max_turns
    always: status != limit or turns == max_turns
"""


@pytest.mark.slow
@pytest.mark.verdict
def test_a_nested_max_turns_exceeded_reaches_the_top_only_without_a_failure_function(tmp_path, monkeypatch) -> None:
    """By default the SDK's failure_error_function turns the researcher's MaxTurnsExceeded into a
    message the orchestrator's model reads; with failure_error_function=None it leaves the top
    Runner.run as MaxTurnsExceeded after one orchestrator turn of two."""
    contained = tree(tmp_path, monkeypatch, CONTAINED)
    assert [results(r)["top_limit_only_from_the_top"].status for r in contained] == ["holds"] * 4
    escaping = tree(tmp_path, monkeypatch, CONTAINED, failure=", failure_error_function=None")
    broken = results(escaping[2])["top_limit_only_from_the_top"]
    assert (escaping[2].params, broken.status) == ({"max_turns": 2, "max_turns_research": 1}, "violated")
    assert steps(broken.trace) == [
        (None, "Orchestrator", 0, 0, 0, "running"),
        ("delegate", "Researcher", 1, 1, 0, "running"),
        ("search", "Orchestrator", 1, 2, 1, "limit")]


NESTED_WITHIN = DECLARATION + """\
properties:
  each_nested_run_within_its_limit:
    always: turns_researcher <= max_turns_research * runs_research
"""


@pytest.mark.slow
@pytest.mark.verdict
def test_the_nested_runs_turn_check_one_turn_late_changes_the_verdict(tmp_path, monkeypatch) -> None:
    """The nested limit is the SDK's own check (the same Runner loop): made one turn late, a
    nested run makes R + 1 model calls."""
    held = tree(tmp_path, monkeypatch, NESTED_WITHIN)
    assert [results(r)["each_nested_run_within_its_limit"].status for r in held] == ["holds"] * 4
    max_turns_off_by_one(monkeypatch)
    (late,) = tree(tmp_path, monkeypatch, NESTED_WITHIN, pins={"max_turns": 1, "max_turns_research": 1})
    broken = results(late)["each_nested_run_within_its_limit"]
    assert broken.status == "violated"
    assert [s.state["turns_researcher"] for s in broken.trace.steps] == [0, 0, 1, 2]


@pytest.mark.parametrize("change, line, message", [
    (("  max_turns_research: [1, 2]", "  max_turns_reserch: [1, 2]"), 13,
     "params: max_turns_reserch names no agent used as a tool (a param max_turns_TOOL sets the max_turns of the "
     "agent tool TOOL; agent tools: research)"),
    (("    delegate: {tool: research, args: {input: q}}",
      "    delegate: [{tool: research, args: {input: q}}, {tool: research, args: {input: r}}]"), 6,
     "answer delegate of Orchestrator calls research and research, agents used as tools, in one turn: their "
     "nested runs would ask the model at once (in parallel), which haltproof does not explore; give each its "
     "own turn"),
])
def test_a_bad_tree_declaration_is_refused_at_its_line(check, tmp_path, change, line, message) -> None:
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "specs" / "tree_app.py").write_text(TREE.replace("{FAILURE}", ""))
    old, new = change
    assert old in DECLARATION
    ran = check(DECLARATION.replace(old, new, 1))
    sys.modules.pop("tree_app", None)
    assert (ran.code, ran.out) == (2, "")
    assert f"bad.yaml:{line}: {message}" in ran.err
    assert "Traceback" not in ran.err


@pytest.mark.parametrize("extra, what", [
    (", run_config=RunConfig()", "its own run_config"),
    (", on_stream=lambda event: None", "an on_stream callback"),
])
def test_an_agent_tool_haltproofs_model_cannot_answer_is_refused(check, tmp_path, extra, what) -> None:
    app = TREE.replace("{FAILURE}", extra).replace("import Agent,", "import Agent, RunConfig,")
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "specs" / "tree_app.py").write_text(app)
    ran = check(DECLARATION)
    sys.modules.pop("tree_app", None)
    assert (ran.code, ran.out) == (2, "")
    assert (f"bad.yaml:2: Orchestrator uses Researcher as the tool research with {what}: haltproof's scripted "
            "model answers only a nested run that takes the parent run's run_config and is not streamed") in ran.err


def test_an_agent_that_can_call_itself_as_a_tool_is_refused(check, tmp_path) -> None:
    app = TREE.replace("{FAILURE}", "") + "researcher.tools.append(orchestrator.as_tool('back', 'Ask again.'))\n"
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "specs" / "tree_app.py").write_text(app)
    ran = check(DECLARATION)
    sys.modules.pop("tree_app", None)
    assert (ran.code, ran.out) == (2, "")
    assert ("bad.yaml:2: Orchestrator uses Researcher as the tool research, whose run can call Orchestrator "
            "again: the nesting has no depth bound (each nested run has its own max_turns, so the tree's model "
            "calls are unbounded)") in ran.err


@pytest.mark.slow
def test_the_research_trees_worst_case_is_what_the_sdk_does_on_replay(cli, tmp_path, monkeypatch) -> None:
    """research.yaml's worst case at max_turns 1 (11 model calls: the writer's nested run uses the
    SDK's default 10 turns), replayed through the SDK's Runner by the emitted regression test."""
    text = (EXAMPLE / "research.yaml").read_text()
    text = text.replace("  max_turns: {min: 1, max: 2}\n  max_turns_research: [2, 3]\n",
                        "  max_turns: [1]\n  max_turns_research: [2]\n")
    text = text.replace("properties:\n", "properties:\n  ten_model_calls_at_most:\n    maximum: model_calls\n"
                                         "    at_most: 10\n")
    emitted_tests_replay(
        cli, tmp_path, monkeypatch, apps=(EXAMPLE / "research.py",), declaration=text,
        expected={"test_replayed_ten_model_calls_at_most_max_turns1_max_turns_research2.py":
                  "ten_model_calls_at_most is not fixed: the recorded counterexample still breaks it: the state "
                  "after step 11 has 11, more than at_most 10"})


@pytest.mark.slow
def test_the_framework_tree_examples_are_checked_and_documented(cli, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    ran = cli("check", "examples/trees/openai_agents")
    assert ran.code == 0, ran.out
    assert ran.out.endswith("4 runs: 0 proved, 4 violated as expected, 0 failed, 0 incomplete -> proved\n")
    assert ("research.yaml max_turns_research=2 most_model_calls: max_turns = 1, 2 allows at most 11, 22 "
            "model_calls") in ran.out
    doc = (ROOT / "docs" / "how-to" / "trees-frameworks.md").read_text()
    assert "```yaml\n" + (EXAMPLE / "research.yaml").read_text() + "```" in doc
