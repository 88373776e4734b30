"""Declaration files (`framework: langgraph` + `target: module:attr`): the user's own graph,
checked with the out-of-the-box properties and no adapter or spec written by hand.

The numbers are LangGraph's, worked out by hand from its documented behaviour and the two
example graphs: a recursion_limit of N runs at most N supersteps; the ReAct agent alternates
agent and tools supersteps, so its model answers at most ceil(N/2) times and its tools run at
most floor(N/2) times; the supervisor takes a superstep before every worker, so at most
floor(N/2) workers run.
"""

from __future__ import annotations

import importlib.metadata

import json
import sys

import pytest

pytest.importorskip("langgraph")

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.machine.spec import load_spec
from haltproof.reports.report import to_json

from conftest import ROOT
from framework_helpers import emitted_test_fails_until_fixed, emitted_tests_replay, fresh_modules, maxima, results
from test_langgraph import limit_off_by_one

EXAMPLE = ROOT / "examples" / "frameworks" / "langgraph"
MODULES = ("react", "supervisor", "adapter", "fanout", "research")


@pytest.fixture(autouse=True)
def _fresh_modules(monkeypatch):
    """The examples' modules are imported fresh for each test and forgotten after it, and the
    folders the imports put on sys.path are taken off again (a later test file must not find
    this file's temporary react.py first)."""
    with fresh_modules(monkeypatch, MODULES):
        yield


def check(name: str, **options) -> list:
    return check_spec(load_spec(EXAMPLE / name), Options(**options))


def test_the_react_declaration_gives_the_worst_cases_langgraph_allows() -> None:
    runs = check("react.yaml")
    assert [(r.params["recursion_limit"], r.result, r.stats["states"]) for r in runs] == [
        (1, "proved", 4), (2, "proved", 5), (3, "proved", 7), (4, "proved", 8), (5, "proved", 10), (6, "proved", 11)]
    assert runs[0].explored == "code: react:build_graph"
    assert [maxima(r) for r in runs] == [
        {"most_supersteps": n, "most_model_calls": (n + 1) // 2, "most_tool_runs": n // 2} for n in range(1, 7)]
    names = [p.name for p in runs[0].properties]
    assert names == ["domains", "well_defined", "bound_code", "run_ends", "limit_error", "most_supersteps",
                     "most_model_calls", "most_tool_runs", "tools_within_half_the_limit"]


def test_the_shortest_run_to_the_limit_error_in_the_frameworks_terms() -> None:
    (run,) = check("react.yaml", pins={"recursion_limit": 3})
    limit = results(run)["limit_error"]
    assert (limit.status, limit.message) == ("holds", "possible: reached after 3 transitions")
    # the model's final answer in the limit's last superstep: LangGraph raises instead of returning it
    assert [(s.choices, s.state["next"], s.state["steps"], s.state["status"], s.state["tool_runs"])
            for s in limit.witness.steps] == [
        ({}, "agent", 0, "running", 0), ({"model_answer": "tool_call"}, "tools", 1, "running", 0),
        ({"model_answer": "tool_call"}, "agent", 2, "running", 1),
        ({"model_answer": "final"}, "__end__", 3, "limit", 1)]
    assert results(run)["run_ends"].status == "holds"


def test_no_limit_makes_the_limit_error_unreachable() -> None:
    (sweep,) = to_json(check("react.yaml"))["sweeps"]
    assert [row["message"] for row in sweep["smallest_safe"]] == [
        "limit_error reachable at every swept recursion_limit (1..6): no safe value"]
    # what recursion_limit really bounds: supersteps, and about half as many model calls and tool runs
    assert [row["message"] for row in sweep["limit_allows"]] == [
        "recursion_limit = 1, 2, 3, 4, 5, 6 allows at most 1, 2, 3, 4, 5, 6 steps",
        "recursion_limit = 1, 2, 3, 4, 5, 6 allows at most 1, 1, 2, 2, 3, 3 model_calls",
        "recursion_limit = 1, 2, 3, 4, 5, 6 allows at most 0, 1, 1, 2, 2, 3 tool_runs"]


def test_a_limit_checked_one_step_late_breaks_langgraphs_promise(monkeypatch) -> None:
    limit_off_by_one(monkeypatch)
    (run,) = check("react.yaml", pins={"recursion_limit": 3})
    assert run.result == "violated"
    broken = results(run)["most_supersteps"]
    assert broken.status == "violated"
    assert broken.message == ("reaches 4, more than at_most 3, after 4 transitions "
                              "(the highest is 4, first reached after 4 transitions)")
    assert [s.state["next"] for s in broken.trace.steps] == ["agent", "tools", "agent", "tools", "agent"]


def test_the_supervisor_delegates_half_as_often_as_the_limit_says() -> None:
    runs = check("supervisor.yaml")
    assert [(r.params["recursion_limit"], r.verdict, r.as_expected, r.stats["states"]) for r in runs] == [
        (n, "pass", True, states) for n, states in zip(range(2, 9), (8, 16, 18, 30, 32, 48, 50))]
    assert [maxima(r)["most_delegations"] for r in runs] == [n // 2 for n in range(2, 9)]
    assert [maxima(r)["most_model_calls"] for r in runs] == list(range(2, 9))
    allows = {row["property"]: row["message"] for row in to_json(runs)["sweeps"][0]["limit_allows"]}
    assert allows["most_delegations"] == ("recursion_limit = 2, 3, 4, 5, 6, 7, 8 allows at most 1, 1, 2, 2, 3, 3, 4 "
                                          "runs_researcher + runs_coder")
    delegates = results(runs[2])["delegates_as_often_as_the_limit"]
    assert (delegates.status, delegates.message) == ("violated", "unreachable: no reachable state satisfies it")
    witness = results(runs[2])["most_delegations"].witness     # recursion_limit=4: two workers
    assert [s.choices.get("supervisor_answer") for s in witness.steps[1:]] == ["to_researcher"] * 4
    assert [s.state["next"] for s in witness.steps] == ["supervisor", "researcher", "supervisor", "researcher",
                                                        "supervisor"]


def test_every_format_and_the_cli_take_a_declaration(cli, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    ran = cli("check", "examples/frameworks/langgraph/react.yaml", "-p", "recursion_limit=4")
    assert ran.code == 0
    assert ("examples/frameworks/langgraph/react.yaml recursion_limit=4: most_supersteps 4 (a shortest witness "
            "takes 4 transitions); most_model_calls 2") in ran.out
    report = json.loads(cli("check", "examples/frameworks/langgraph/react.yaml", "-p", "recursion_limit=4",
                            "--format", "json").out)
    (run,) = report["runs"]
    assert run["explored"] == "code: react:build_graph" and run["machine"] == "react"
    assert {p["name"]: p.get("maximum", {}).get("value") for p in run["properties"]}["most_tool_runs"] == 2
    markdown = cli("check", "examples/frameworks/langgraph/react.yaml", "-p", "recursion_limit=4",
                   "--format", "markdown").out
    assert "| `most_tool_runs` | 2 (a shortest witness takes 4 transitions) |" in markdown
    sarif = json.loads(cli("check", "examples/frameworks/langgraph/react.yaml", "-p", "recursion_limit=1",
                           "--format", "sarif").out)
    assert sarif["runs"][0]["results"] == []


def test_the_pytest_plugin_collects_a_declaration(pytester) -> None:
    for name in ("react.yaml", "react.py"):
        (pytester.path / name).write_text((EXAMPLE / name).read_text())
    result = pytester.runpytest("--haltproof", "-q", "-p", "no:cacheprovider")
    # 6 limits x (domains, well_defined, bound_code + 5 out of the box + 1 of the user's)
    result.assert_outcomes(passed=6 * 9)


@pytest.mark.slow
def test_the_framework_examples_are_checked_from_anywhere(cli, monkeypatch) -> None:
    """Every example folder whose framework the `test` extra installs; CrewAI's (its own venv,
    scripts/test-crewai) is checked by tests/frameworks/test_crewai.py."""
    monkeypatch.chdir(ROOT)
    folders = sorted(f"examples/frameworks/{p.name}" for p in (ROOT / "examples" / "frameworks").iterdir()
                     if p.is_dir() and p.name != "crewai")
    ran = cli("check", *folders)
    assert ran.code == 0, ran.out + ran.err
    assert ran.out.endswith("75 runs: 22 proved, 53 violated as expected, 0 failed, 0 incomplete -> proved\n")


# ---------------------------------------------------------------- bad declarations: exit 2, file and line

GRAPHS = '''\
from langgraph.graph import START, MessagesState, StateGraph


def build_graph(model):
    def agent(state: MessagesState) -> dict:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    return builder.compile()


def _answer(state: MessagesState) -> dict:
    return {"messages": [{"role": "assistant", "content": "done"}]}


_builder = StateGraph(MessagesState)
_builder.add_node("agent", _answer)
_builder.add_edge(START, "agent")
graph = _builder.compile()
not_a_graph = 42


def broken(model):
    raise ValueError("no model configured")
'''

DECLARATION = """\
framework: langgraph
target: {module}:build_graph
input:
  messages: [{{role: user, content: hi}}]
models:
  model:
    final: Done.
params:
  recursion_limit: {{min: 1, max: 2}}
"""


@pytest.mark.parametrize("outcome, message", [
    ("{command: {goto: agnt}}", "outcome loop of node agent: goto 'agnt': the graph {module}:build_graph has no such "
                                "node (its nodes: agent)"),
    ("{command: {goto: agent, updte: {}}}", "outcome loop of node agent: command must be a mapping of goto and update"),
    ("{command: {goto: [{send: agent}]}}", "outcome loop of node agent: a goto target is a node's name or "
                                           "{{send: NODE, arg: VALUE}}"),
    ("{command: {goto: agent}, messages: []}", "outcome loop of node agent: a command outcome has the key command only"),
])
def test_a_bad_command_outcome_is_refused_at_its_line(check, tmp_path, request, outcome, message) -> None:
    module = f"graphs_cmd{request.node.callspec.id[-12:]}"
    module = "".join(c if c.isalnum() or c == "_" else "_" for c in module)
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "specs" / f"{module}.py").write_text(GRAPHS)
    text = DECLARATION.format(module=module).replace("params:", f"nodes:\n  agent:\n    loop: {outcome}\nparams:", 1)
    ran = check(text)
    sys.modules.pop(module, None)
    assert (ran.code, ran.out) == (2, ""), ran.err
    assert f"bad.yaml:10: {message.format(module=module)}" in ran.err
    assert "Traceback" not in ran.err


@pytest.mark.parametrize("change, line, message", [
    (("framework: langgraph", "framework: langchain"), 1, "unknown framework (known: adk, crewai, langgraph, openai_agents, pydantic_ai): 'langchain'"),
    ((":build_graph", ":buld_graph"), 2, "module {module} has no 'buld_graph'"),
    (("target: {module}", "target: nowhere_at_all"), 2, "cannot import the target's module: ModuleNotFoundError: "
                                                        "No module named 'nowhere_at_all'"),
    ((":build_graph", ":not_a_graph"), 2, "{module}:not_a_graph is a int, not a compiled LangGraph graph or a "
                                          "function building one"),
    ((":build_graph", ":broken"), 2, "building the graph with {module}:broken(model) failed: ValueError: "
                                     "no model configured"),
    (("params:", "nodes:\n  agnt:\n    done: {messages: []}\nparams:"), 9,
     "nodes: the graph {module}:build_graph has no node 'agnt' (its nodes: agent)"),
    ((":build_graph", ":graph"), 5, "models: {module}:graph is a compiled graph, built already"),
    (("params:", "propertes: {}\nparams:"), 8, "unknown key in a langgraph declaration"),
    (("  recursion_limit: {min: 1, max: 2}\n", "  recursion_limit: {min: 1, max: 2}\nproperties:\n  run_ends:\n"
                                              "    always: steps >= 0\n"), 11,
     "run_ends is an out-of-the-box property of every LangGraph declaration"),
    (("  recursion_limit: {min: 1, max: 2}\n", "  recursion_limit: {min: 1, max: 2}\nproperties:\n  mine:\n"
                                              "    always: stepz >= 0\n"), 12, "undefined name"),
])
def test_a_bad_declaration_is_refused_at_its_line(check, tmp_path, request, change, line, message) -> None:
    module = f"graphs_{request.node.callspec.id.replace('-', '_')}"[:60]
    module = "".join(c if c.isalnum() or c == "_" else "_" for c in module)
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "specs" / f"{module}.py").write_text(GRAPHS)
    old, new = (part.replace("{module}", module) for part in change)
    text = DECLARATION.format(module=module)
    assert old in text
    ran = check(text.replace(old, new, 1))
    sys.modules.pop(module, None)
    assert ran.code == 2, ran.out
    assert ran.out == ""
    assert f"bad.yaml:{line}: {message.format(module=module)}" in ran.err
    assert "Traceback" not in ran.err


def test_same_named_modules_in_two_folders_are_each_their_own(cli, tmp_path, monkeypatch) -> None:
    """`haltproof check` over two folders, each with its own `graphs.py`: each declaration runs
    the graph beside it (one ends at once, the other loops), not the first one imported."""
    loop = GRAPHS.replace('builder.add_edge(START, "agent")', 'builder.add_edge(START, "agent")\n'
                          '    builder.add_edge("agent", "agent")', 1)
    for folder, source in (("ends", GRAPHS), ("loops", loop)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "graphs_twin.py").write_text(source)
        (tmp_path / folder / "d.yaml").write_text(DECLARATION.format(module="graphs_twin"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "graphs_twin", raising=False)
    ran = cli("check", "ends/d.yaml", "loops/d.yaml", "--format", "json")
    sys.modules.pop("graphs_twin", None)
    report = json.loads(ran.out)
    limits = {(r["spec"], r["params"]["recursion_limit"]): [p for p in r["properties"] if p["name"] == "limit_error"][0]
              for r in report["runs"]}
    # at recursion_limit 1 even the graph that ends raises (LangGraph counts the superstep that ends it)
    assert {k: v["possible"] for k, v in limits.items()} == {
        ("ends/d.yaml", 1): True, ("ends/d.yaml", 2): False, ("loops/d.yaml", 1): True, ("loops/d.yaml", 2): True}


BUDGET = (EXAMPLE / "react.yaml").read_text().split("params:")[0] + """\
params:
  recursion_limit: [4]
properties:
  one_search_is_enough:
    maximum: tool_runs
    at_most: 1
"""


@pytest.mark.slow
def test_an_emitted_test_replays_the_trace_on_the_real_graph_until_it_is_fixed(cli, tmp_path, monkeypatch) -> None:
    """--emit-tests on a declaration writes a pytest file that replays the counterexample
    through LangGraph itself: it fails while the graph lets the model search twice, and passes
    once the graph's own routing stops after one search."""
    emitted_test_fails_until_fixed(
        cli, tmp_path, monkeypatch, app=EXAMPLE / "react.py", declaration=BUDGET,
        emitted="test_budget_one_search_is_enough_recursion_limit4.py",
        still=("one_search_is_enough is not fixed: the recorded counterexample still breaks it: the state after "
               "step 4 has 2, more than at_most 1"),
        # the fix, in the user's graph: after one tool result the agent's turn ends the run
        fix=('builder.add_conditional_edges("agent", tools_condition)',
             'builder.add_conditional_edges("agent", lambda s: "__end__" if any(\n'
             '        m.type == "tool" for m in s["messages"]) else tools_condition(s))'))


def test_the_frameworks_doc_shows_the_shipped_declarations_and_their_command(cli, monkeypatch) -> None:
    doc = (ROOT / "docs" / "how-to" / "langgraph.md").read_text()
    for name in ("react.yaml", "supervisor.yaml"):
        assert "```yaml\n" + (EXAMPLE / name).read_text() + "```" in doc
    assert "cd examples/frameworks/langgraph && haltproof check react.yaml supervisor.yaml" in doc
    assert "one_search_is_enough:\n    maximum: tool_runs\n    at_most: 1\n" in doc and BUDGET.endswith(
        "one_search_is_enough:\n    maximum: tool_runs\n    at_most: 1\n")
    monkeypatch.chdir(EXAMPLE)
    ran = cli("check", "react.yaml", "supervisor.yaml")
    assert ran.code == 0
    assert ran.out.endswith("13 runs: 6 proved, 7 violated as expected, 0 failed, 0 incomplete -> proved\n")
    assert "States per limit (2 to 8): 8, 16, 18, 30,\n32, 48, 50." in doc


ASYNC_REACT = (EXAMPLE / "react.py").read_text().replace(
    "    def agent(state: MessagesState) -> dict:\n        return {\"messages\": [model.invoke(state[\"messages\"])]}",
    "    async def agent(state: MessagesState) -> dict:\n"
    "        return {\"messages\": [await model.ainvoke(state[\"messages\"])]}")


def _async_react(tmp_path) -> object:
    assert "async def agent" in ASYNC_REACT
    (tmp_path / "areact.py").write_text(ASYNC_REACT)
    spec = tmp_path / "areact.yaml"
    spec.write_text((EXAMPLE / "react.yaml").read_text().replace("react:build_graph", "areact:build_graph"))
    return spec


def test_an_async_graph_is_driven_through_astream_with_the_same_answers(tmp_path, monkeypatch) -> None:
    """An `async def` node cannot run under `stream`: the adapter streams with `astream` on the
    run's one event loop, and the graph proves exactly what the sync one does."""
    monkeypatch.delitem(sys.modules, "areact", raising=False)
    runs = check_spec(load_spec(_async_react(tmp_path)), Options(pins={"recursion_limit": [3, 4]}))
    sys.modules.pop("areact", None)
    assert [(r.result, r.stats["states"]) for r in runs] == [("proved", 7), ("proved", 8)]
    assert [maxima(r) for r in runs] == [{"most_supersteps": 3, "most_model_calls": 2, "most_tool_runs": 1},
                                         {"most_supersteps": 4, "most_model_calls": 2, "most_tool_runs": 2}]
    assert results(runs[0])["limit_error"].message == "possible: reached after 3 transitions"


def test_an_async_graphs_limit_is_langgraphs_own_too(tmp_path, monkeypatch) -> None:
    """The async loop's limit checked one superstep late: the async graph's verdict changes."""
    from langgraph.pregel import _loop
    enter = _loop.AsyncPregelLoop.__aenter__

    async def late(self):
        out = await enter(self)
        self.stop += 1
        return out
    monkeypatch.setattr(_loop.AsyncPregelLoop, "__aenter__", late)
    monkeypatch.delitem(sys.modules, "areact", raising=False)
    (run,) = check_spec(load_spec(_async_react(tmp_path)), Options(pins={"recursion_limit": 3}))
    sys.modules.pop("areact", None)
    assert run.result == "violated"
    assert results(run)["most_supersteps"].message.startswith("reaches 4, more than at_most 3, after 4 transitions")


def test_an_unsupported_langgraph_is_named_at_the_framework_line(tmp_path, monkeypatch) -> None:
    from haltproof.machine.errors import SpecError
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.6.3")
    spec = tmp_path / "d.yaml"
    spec.write_text(DECLARATION.format(module="never_imported"))
    with pytest.raises(SpecError) as caught:
        load_spec(spec)
    assert str(caught.value) == (f"{spec}:1: haltproof.frameworks.langgraph supports langgraph >=1.2.18,<2; "
                                 "langgraph 0.6.3 is installed")


def test_every_run_of_a_graph_is_closed_when_the_check_is_done_with_it():
    """GraphAdapter.close ends each run's stream in the exploring thread, so LangGraph's thread
    pools are shut down as runs are dropped. Left to the garbage collector, they piled up (a
    hundred threads in one sweep) and one shutdown ran inside a new thread's start-up, where it
    waits on a lock Thread.start holds: the check hung."""
    import gc
    import threading
    gc.collect()
    before = threading.active_count()
    gc.disable()            # only an explicit close may end a run here, as during a real check
    try:
        runs = check("supervisor.yaml")
        after = threading.active_count()
    finally:
        gc.enable()
    assert sum(r.stats["transitions"] for r in runs) > 100      # hundreds of runs started and dropped
    assert after - before <= 4, f"{after - before} threads left running by dropped runs"


def test_a_graph_ending_on_the_limits_last_superstep_ends_in_langgraphs_limit_error(tmp_path, monkeypatch) -> None:
    """LangGraph counts the superstep that finds nothing left to run: a graph whose last node runs
    in superstep recursion_limit raises GraphRecursionError (graph.invoke does, checked here). Its
    `checkpoints` stream shows that superstep's checkpoint, with nothing next, and then raises:
    taking the checkpoint for the end was a false `done` (an answer at recursion_limit=1)."""
    from langchain_core.messages import AIMessage
    from langgraph.errors import GraphRecursionError

    from haltproof.frameworks.langgraph import scripted_model, GraphRun
    (tmp_path / "graphs_end.py").write_text(GRAPHS)
    spec = tmp_path / "d.yaml"
    spec.write_text(DECLARATION.format(module="graphs_end") + "properties:\n  answers:\n    reachable: status == done\n")
    monkeypatch.delitem(sys.modules, "graphs_end", raising=False)
    runs = check_spec(load_spec(spec), Options())
    import graphs_end
    run = GraphRun(choices={"m": "final"})
    graph = graphs_end.build_graph(scripted_model(run, "m", {"final": AIMessage("Done.")}))
    sys.modules.pop("graphs_end", None)
    with pytest.raises(GraphRecursionError):
        graph.invoke({"messages": [("user", "hi")]}, {"recursion_limit": 1})
    assert graph.invoke({"messages": [("user", "hi")]}, {"recursion_limit": 2})["messages"][-1].content == "Done."
    assert [(r.params["recursion_limit"], results(r)["answers"].status, results(r)["limit_error"].message)
            for r in runs] == [(1, "violated", "possible: reached after 1 transition"),
                               (2, "holds", "impossible: no reachable state satisfies it")]

def test_send_fan_out_parallel_supersteps_and_command_outcomes_run_as_langgraph_runs_them() -> None:
    """fanout.yaml: the graph's own Send fan-out runs research once per scripted topic in one
    superstep, write and cite run side by side (`next` is `cite+write`), and the scripted reviewer's
    Command goes where it says; runs_NODE counts every run. A superstep is one transition."""
    runs = check("fanout.yaml")
    assert [(r.params["recursion_limit"], r.result, r.stats["states"]) for r in runs] == [
        (4, "violated", 13), (5, "violated", 19), (6, "violated", 21), (7, "violated", 24), (8, "violated", 30),
        (9, "violated", 39)]
    assert [[p.name for p in r.properties if p.status == "violated"] for r in runs] == [
        ["node_runs_within_the_limit"]] * 6         # the one `expect` declares
    assert [maxima(r)["most_node_runs"] for r in runs] == [6, 7, 9, 11, 12, 13]
    broken = results(runs[0])["node_runs_within_the_limit"]
    assert [(s.choices.get("planner_returns"), s.state["next"], s.state["tasks"], s.state["steps"],
             s.state["runs_research"]) for s in broken.trace.steps] == [
        (None, "planner", 1, 0, 0), ("two_topics", "research", 2, 1, 0), ("two_topics", "cite+write", 2, 2, 2),
        ("two_topics", "review", 1, 3, 2)]
    doc = (ROOT / "docs" / "how-to" / "langgraph.md").read_text()
    assert "```yaml\n" + (EXAMPLE / "fanout.yaml").read_text() + "```" in doc
    assert "cd examples/frameworks/langgraph && haltproof check fanout.yaml" in doc
    assert "States per limit (4 to 9): 13, 19, 21, 24, 30, 39." in doc
    assert "`most_node_runs` is 6, 7, 9, 11, 12, 13" in doc
    witness = results(runs[2])["most_node_runs"].witness.steps
    assert [(s.choices.get("review_returns"), s.state["next"]) for s in witness][3:6] == [
        ("approve", "review"), ("revise", "planner"), ("approve", "research")]


def test_a_fan_out_wider_than_the_limit_is_counted_not_a_domains_finding(tmp_path, monkeypatch) -> None:
    """Six topics sent at recursion_limit 3: research runs six times in its one superstep. The
    planner's two outcomes lead to one `next` but not one run: `tasks` (2 or 6) tells them apart."""
    text = (EXAMPLE / "fanout.yaml").read_text().replace("{topics: [GDP]}", "{topics: [a, b, c, d, e, f]}")
    (tmp_path / "fanout.py").write_text((EXAMPLE / "fanout.py").read_text())
    spec = tmp_path / "wide.yaml"
    spec.write_text(text.replace("{min: 4, max: 9}", "[3]"))
    monkeypatch.delitem(sys.modules, "fanout", raising=False)
    (run,) = check_spec(load_spec(spec), Options())
    sys.modules.pop("fanout", None)
    assert results(run)["domains"].status == "holds"
    assert maxima(run)["most_node_runs"] == 9       # planner, research six times, write and cite


# ---------------------------------------------------------------- the runtime context, scripted parts (issue 27)

def search_choices(trace) -> list:
    return [(s.choices.get("search_backend_search_returns"), s.state["next"], s.state["steps"], s.state["status"])
            for s in trace.steps]


def test_the_research_graph_runs_as_written_with_its_runtime_context() -> None:
    """research.py reads its search backend from LangGraph's runtime context (`Runtime[Context]`);
    research.yaml gives the context, its backend's `search` scripted. The router stops after three
    empty searches, so plan, three searches and write take 5 supersteps: safe from recursion_limit 6
    (LangGraph counts the superstep that finds nothing left to run)."""
    runs = check("research.yaml")
    assert [(r.params["recursion_limit"], r.result, r.stats["states"]) for r in runs] == [
        (4, "proved", 10), (5, "proved", 10), (6, "proved", 10), (7, "proved", 10)]
    assert [maxima(r) for r in runs] == [{"most_supersteps": n} for n in (4, 5, 5, 5)]
    assert [results(r)["limit_error"].message for r in runs] == [
        "possible: reached after 4 transitions", "possible: reached after 5 transitions",
        "impossible: no reachable state satisfies it", "impossible: no reachable state satisfies it"]
    (row,) = to_json(runs)["sweeps"][0]["smallest_safe"]
    assert row["message"] == "limit_error unreachable from recursion_limit=6 on (swept 4..7; reachable at recursion_limit=5)"
    assert search_choices(results(runs[1])["limit_error"].witness) == [
        (None, "plan", 0, "running"), ("found", "search", 1, "running"), ("nothing", "search", 2, "running"),
        ("nothing", "search", 3, "running"), ("found", "write", 4, "running"), ("found", "__end__", 5, "limit")]
    doc = (ROOT / "docs" / "how-to" / "langgraph.md").read_text()
    assert "```yaml\n" + (EXAMPLE / "research.yaml").read_text() + "```" in doc
    assert "cd examples/frameworks/langgraph && haltproof check research.yaml\n" in doc
    assert "`most_supersteps`\n4, 5, 5, 5)" in doc and "States\nper limit (4 to 7): 10, 10, 10, 10." in doc


def test_without_the_context_every_limit_fails_once_and_says_why_nothing_is_decided(cli, tmp_path, monkeypatch) -> None:
    """Issue 27's first try: the same graph declared without `context:`. Its node reads
    `runtime.context.search_backend`, so every run fails on the same AttributeError: printed once
    with a count, and the smallest safe value is undecided (why: the error), not "no safe value"."""
    (tmp_path / "research.py").write_text((EXAMPLE / "research.py").read_text())
    text = (EXAMPLE / "research.yaml").read_text()
    (tmp_path / "bare.yaml").write_text(text[:text.index("context:")] + text[text.index("params:"):])
    monkeypatch.chdir(tmp_path)
    ran = cli("check", "bare.yaml")
    assert ran.code == 1
    assert ran.out.count("  VIOLATED  bound_code       action step with no choices: the bound code raised "
                         "AttributeError: 'NoneType' object has no attribute 'search_backend'\n") == 1
    assert "  the same findings in 3 more runs: recursion_limit = 5, 6, 7\n" in ran.out
    assert ("  bare.yaml: limit_error undecided at every swept recursion_limit (4..7), so the smallest safe value is "
            "not known: bound_code: action step with no choices: the bound code raised AttributeError: 'NoneType' "
            "object has no attribute 'search_backend'\n") in ran.out
    assert "no safe value" not in ran.out


SCRIPTED_SEARCH = """\
nodes:
  search:
    found: {notes: [France's GDP was 3.1 trillion USD in 2023.]}
    nothing: {notes: []}
"""


def test_a_scripted_node_that_leaves_out_a_channel_the_router_reads_is_a_warning_at_its_line(
        cli, tmp_path, monkeypatch) -> None:
    """Issue 27's wrong answer: scripting the `search` node instead of its backend replaces all of
    its writes, so `search_count`, which the router reads, never moves: the limit error becomes
    reachable at every limit (the real graph is safe from 6). Each outcome that leaves it out is
    warned about at its own line, naming the channel and the routing function that reads it."""
    (tmp_path / "research.py").write_text((EXAMPLE / "research.py").read_text())
    text = (EXAMPLE / "research.yaml").read_text()
    (tmp_path / "nodes.yaml").write_text(text[:text.index("context:")] + SCRIPTED_SEARCH + text[text.index("params:"):])
    monkeypatch.chdir(tmp_path)
    ran = cli("check", "nodes.yaml")
    assert ran.code == 0, ran.out
    said = ("leaves out search_count, which the real search writes and the routing function route (after search) "
            "reads: a scripted outcome replaces all of the node's writes, so search_count keeps its old value there; "
            "give it in the outcome (search_count: ...) or script what search calls instead (context:)")
    assert (f"warnings:\n  nodes.yaml:9: outcome found of node search {said}\n"
            f"  nodes.yaml:10: outcome nothing of node search {said}\n\n") in ran.out
    assert f"warnings:\n  nodes.yaml:9: outcome found of node search {said}\n```" in (
        ROOT / "docs" / "how-to" / "langgraph.md").read_text()
    assert "  nodes.yaml: limit_error reachable at every swept recursion_limit (4..7): no safe value\n" in ran.out
    report = json.loads(cli("check", "nodes.yaml", "-p", "recursion_limit=4", "--format", "json").out)
    assert [(w["kind"], w["line"]) for w in report["runs"][0]["warning_details"]] == [
        ("declaration", 9), ("declaration", 10)]
    fixed = SCRIPTED_SEARCH.replace("{notes: []}", "{notes: [], search_count: 1}").replace(
        "2023.]}", "2023.], search_count: 1}")
    (tmp_path / "nodes.yaml").write_text(text[:text.index("context:")] + fixed + text[text.index("params:"):])
    assert "warnings:" not in cli("check", "nodes.yaml", "-p", "recursion_limit=4").out


@pytest.mark.slow
def test_the_research_graphs_answers_are_what_langgraph_does_on_replay(cli, tmp_path, monkeypatch) -> None:
    """The limit error at recursion_limit 5 (one below the smallest safe value) and the worst case
    of 5 supersteps, replayed through LangGraph itself by the emitted regression tests."""
    text = (EXAMPLE / "research.yaml").read_text().replace("{min: 4, max: 7}", "[5, 6]")
    emitted_tests_replay(
        cli, tmp_path, monkeypatch, apps=(EXAMPLE / "research.py",),
        declaration=text + "properties:\n  never_the_limit_error:\n    always: status != limit\n"
                           "  four_supersteps_at_most:\n    maximum: steps\n    at_most: 4\n",
        expected={
            "test_replayed_never_the_limit_error_recursion_limit5.py":
                "never_the_limit_error is not fixed: the recorded counterexample still breaks it: false in the "
                "state after step 5",
            **{f"test_replayed_four_supersteps_at_most_recursion_limit{n}.py":
               "four_supersteps_at_most is not fixed: the recorded counterexample still breaks it: the state after "
               "step 5 has 5, more than at_most 4" for n in (5, 6)}})


def test_the_context_may_come_from_a_hook_of_the_params(tmp_path, monkeypatch) -> None:
    """`context: module:attr` names a function of the params making the context (objects YAML
    cannot write); here it builds the app's own Context around a backend that always finds nothing."""
    (tmp_path / "research.py").write_text((EXAMPLE / "research.py").read_text() + '''

class Empty:
    def search(self, query):
        return []


def empty_context(params):
    assert params == {"recursion_limit": params["recursion_limit"]}
    return Context(search_backend=Empty())
''')
    text = (EXAMPLE / "research.yaml").read_text()
    spec = tmp_path / "hook.yaml"
    spec.write_text(text[:text.index("context:")] + "context: research:empty_context\n" + text[text.index("params:"):])
    monkeypatch.delitem(sys.modules, "research", raising=False)
    runs = check_spec(load_spec(spec), Options(pins={"recursion_limit": [5, 6]}))
    assert [(r.stats["states"], results(r)["limit_error"].message) for r in runs] == [
        (6, "possible: reached after 5 transitions"), (6, "impossible: no reachable state satisfies it")]


def test_a_models_answer_guarded_by_when_is_given_only_where_its_guard_holds(tmp_path, monkeypatch) -> None:
    """The app's model searches once and then answers: `when: tool_runs == 0` on its tool call keeps
    the declared model to that, so the worst cases stop growing with the limit."""
    text = (EXAMPLE / "react.yaml").read_text().replace("id: call_1}]}", "id: call_1}], when: tool_runs == 0}")
    assert "when: tool_runs == 0}" in text
    (tmp_path / "react.py").write_text((EXAMPLE / "react.py").read_text())
    spec = tmp_path / "once.yaml"
    spec.write_text(text.replace("{min: 1, max: 6}", "[3, 4, 5]"))
    runs = check_spec(load_spec(spec), Options())
    assert [maxima(r) for r in runs] == [{"most_supersteps": 3, "most_model_calls": 2, "most_tool_runs": 1}] * 3
    assert [results(r)["limit_error"].message for r in runs] == [
        "possible: reached after 3 transitions", "impossible: no reachable state satisfies it",
        "impossible: no reachable state satisfies it"]


@pytest.mark.parametrize("context, line, message", [
    ("context:\n  search_backend:\n    search: {scripted: {}}\n", 6,
     "context: search_backend.search: scripted needs a mapping of outcome labels to outcomes"),
    ("context:\n  search_backend:\n    search: {scripted: {ok: []}, sync: true}\n", 6,
     "context: search_backend.search: a scripted callable has the keys scripted and async only"),
    ("context:\n  search_backend: {param: backend}\n", 5, "context: search_backend names no param 'backend' "
                                                          "(params: recursion_limit)"),
    ("context:\n  search_backend:\n    search: {scripted: {ok: {raises: NoSuchError}}}\n", 6,
     "raises names a class that cannot be found"),
    ("context:\n  backend: {}\n", 4, "making Context from the context fields failed: TypeError: "),
    ("context: research:MAX_SEARCHES\n", 4, "context must name a class or function making the run's context "
                                             "object (it names a int)"),
    ("context: [1]\n", 4, "context must be a mapping of the context object's fields, or module:attr"),
])
def test_a_bad_context_is_refused_at_its_line(check, tmp_path, context, line, message) -> None:
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "specs" / "research.py").write_text((EXAMPLE / "research.py").read_text())
    text = (EXAMPLE / "research.yaml").read_text()
    ran = check(text[text.index("framework:"):text.index("context:")] + context + text[text.index("params:"):])
    assert ran.code == 2, ran.out
    assert f"bad.yaml:{line}: {message}" in ran.err
    assert "Traceback" not in ran.err


def test_a_warning_about_a_generated_choice_cites_the_declarations_line(tmp_path) -> None:
    """Two answers that lead to the same step: the vacuity warning names the line of the model
    that declares them, not the `framework` line every generated part used to carry (issue 27)."""
    (tmp_path / "react.py").write_text((EXAMPLE / "react.py").read_text())
    spec = tmp_path / "twice.yaml"
    spec.write_text((EXAMPLE / "react.yaml").read_text().replace(
        "    final: Here is the answer.\n", "    final: Here is the answer.\n    again: Here is the answer.\n"))
    (run,) = check_spec(load_spec(spec), Options(pins={"recursion_limit": 3}))
    assert run.warnings == ["vacuous: choice model_answer of action step (line 8): the values final, again always "
                            "lead to the same step; they never make a difference"]


def test_a_guard_that_does_not_parse_is_refused_at_its_line(check, tmp_path) -> None:
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "specs" / "react.py").write_text((EXAMPLE / "react.py").read_text())
    ran = check((EXAMPLE / "react.yaml").read_text().replace("id: call_1}]}", "id: call_1}], when: tool_runz == 0}"))
    assert (ran.code, ran.out) == (2, "")
    assert "bad.yaml:9: undefined name (did you mean 'tool_runs'?): 'tool_runz'" in ran.err
