"""examples/frameworks/langgraph: a real LangGraph ReAct graph, proved to stop by LangGraph's own limit.

The graph runs in LangGraph's Pregel loop, offline, with langchain-core's scripted chat
model; `recursion_limit` is enforced by LangGraph itself. Patching LangGraph's limit
check to be off by one must change the verdict (issue 14): the proof rests on the
framework's code, not on a copy of its logic.
"""

from __future__ import annotations

import importlib.metadata
import operator

import sys
from typing import Annotated, TypedDict

import pytest

pytest.importorskip("langgraph")

from langgraph.pregel import _loop

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.frameworks import langgraph as hl
from haltproof.machine.spec import load_spec

from conftest import ROOT
from framework_helpers import results

EXAMPLE = ROOT / "examples" / "frameworks" / "langgraph"


@pytest.fixture(autouse=True)
def _in_the_example(monkeypatch):
    """Run from the example's folder; its modules (react, adapter) are imported fresh and forgotten."""
    monkeypatch.chdir(EXAMPLE)
    for name in ("react", "adapter"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    yield
    for name in ("react", "adapter"):
        sys.modules.pop(name, None)


def check(**options) -> list:
    return check_spec(load_spec(EXAMPLE / "react_adapter.yaml"), Options(**options))


def states_of(trace) -> list[tuple]:
    return [(s.choices.get("model"), s.state["next"], s.state["steps"], s.state["status"]) for s in trace.steps]


def limit_off_by_one(monkeypatch) -> None:
    """LangGraph's recursion limit checked one superstep late: its loop's stop moved by one."""
    enter = _loop.SyncPregelLoop.__enter__

    def late(self):
        out = enter(self)
        self.stop += 1
        return out
    monkeypatch.setattr(_loop.SyncPregelLoop, "__enter__", late)


def test_the_react_graph_stops_for_every_recursion_limit() -> None:
    runs = check()
    assert [(r.params["recursion_limit"], r.result, r.binding, r.stats["states"]) for r in runs] == [
        (2, "proved", "replay", 5), (3, "proved", "replay", 7),
        (4, "proved", "replay", 8), (5, "proved", "replay", 10), (6, "proved", "replay", 11)]


def test_no_recursion_limit_makes_the_limit_error_unreachable() -> None:
    """smallest_safe over the sweep: a model that keeps asking for a tool reaches any limit."""
    from haltproof.reports.report import to_json
    (sweep,) = to_json(check())["sweeps"]
    (row,) = sweep["smallest_safe"]
    assert row == {"property": "can_hit_the_limit", "param": "recursion_limit", "safe_means": "unreachable",
                   "others": {}, "value": None, "swept": [2, 3, 4, 5, 6], "unsafe_at": [2, 3, 4, 5, 6],
                   "undecided_at": [],
                   "message": "can_hit_the_limit reachable at every swept recursion_limit (2..6): no safe value"}


def test_the_shortest_path_to_the_limit_runs_recursion_limit_supersteps() -> None:
    """The shortest: the model answers in the limit's last superstep, and LangGraph raises
    instead of returning the answer (it counts the superstep that finds nothing left to run)."""
    (run,) = check(pins={"recursion_limit": 3})
    hit = results(run)["can_hit_the_limit"]
    assert hit.status == "holds"
    assert states_of(hit.witness) == [
        (None, "agent", 0, "running"), ("tool_call", "tools", 1, "running"),
        ("tool_call", "agent", 2, "running"), ("final", "__end__", 3, "limit")]
    assert states_of(results(run)["can_answer"].witness) == [
        (None, "agent", 0, "running"), ("final", "__end__", 1, "done")]


def test_a_limit_checked_one_step_late_changes_the_verdict(monkeypatch) -> None:
    limit_off_by_one(monkeypatch)
    (run,) = check(pins={"recursion_limit": 3})
    assert run.result == "violated"
    broken = results(run)["within_the_limit"]
    assert broken.status == "violated"
    assert [s[1:] for s in states_of(broken.trace)] == [
        ("agent", 0, "running"), ("tools", 1, "running"), ("agent", 2, "running"),
        ("tools", 3, "running"), ("agent", 4, "running")]


def test_an_undeclared_recursion_error_is_a_bound_code_finding(tmp_path) -> None:
    text = (EXAMPLE / "react_adapter.yaml").read_text()
    start, end = text.index("    raises:\n"), text.index("\nterminal:")
    spec = tmp_path / "react.yaml"
    spec.write_text(text[:start] + text[end:])
    (run,) = check_spec(load_spec(spec), Options(pins={"recursion_limit": 2}))
    finding = results(run)["bound_code"]
    assert finding.status == "violated"
    assert finding.message.startswith("action step with model=tool_call: the bound code raised GraphRecursionError: "
                                      "Recursion limit of 2 reached")
    assert len(finding.trace.steps) == 3      # agent (tool call), tools: the limit's 2 supersteps, then the error


def test_an_unsupported_langgraph_version_is_named(monkeypatch) -> None:
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.6.3")
    with pytest.raises(RuntimeError, match=r"supports langgraph >=1.2.18,<2; langgraph 0.6.3 is installed"):
        hl.require_langgraph()


def test_a_graph_with_its_own_shared_checkpointer_is_explored_run_by_run(tmp_path, monkeypatch) -> None:
    """Every run gets a fresh saver: on the graph's shared one, each replay would resume the
    thread an earlier run left (more messages, later steps) instead of starting over."""
    (tmp_path / "shared_saver.py").write_text(
        "from langgraph.checkpoint.memory import InMemorySaver\n"
        "from adapter import ReactAdapter\n"
        "SAVER = InMemorySaver()\n\n\n"
        "class SharedAdapter(ReactAdapter):\n"
        "    def graph(self, models):\n"
        "        return super().graph(models).copy(update={'checkpointer': SAVER})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(EXAMPLE))
    monkeypatch.delitem(sys.modules, "shared_saver", raising=False)
    spec = tmp_path / "react.yaml"
    spec.write_text((EXAMPLE / "react_adapter.yaml").read_text().replace("bind: adapter:ReactAdapter",
                                                                  "bind: shared_saver:SharedAdapter"))
    (run,) = check_spec(load_spec(spec), Options(pins={"recursion_limit": 3}))
    assert (run.result, run.stats["states"]) == ("proved", 7)


def test_the_frameworks_doc_shows_the_shipped_example_and_its_command(cli) -> None:
    doc = (ROOT / "docs" / "how-to" / "langgraph.md").read_text()
    assert "```python\n" + (EXAMPLE / "adapter.py").read_text() + "```" in doc
    assert "```yaml\n" + (EXAMPLE / "react_adapter.yaml").read_text() + "```" in doc
    assert "cd examples/frameworks/langgraph && haltproof check react_adapter.yaml" in doc
    ran = cli("check", "react_adapter.yaml")
    assert ran.code == 0, ran.out
    assert ran.out.endswith("5 runs: 5 proved, 0 violated as expected, 0 failed, 0 incomplete -> proved\n")
    assert "States per limit (2 to 6): 5, 7, 8, 10, 11." in doc


@pytest.mark.parametrize("old, new, message", [
    ("      model: [tool_call, final]", "      reply: [tool_call, final]",
     "ReactAdapter.scripted scripts the choice 'model', which action step does not choose (it chooses ['reply'])"),
    ("      model: [tool_call, final]", "      model: [tool_call, refusal]",
     "ReactAdapter.scripted has no message for model=refusal (it has ['final', 'tool_call'])"),
])
def test_a_choice_the_adapter_does_not_script_is_named(tmp_path, old, new, message) -> None:
    text = (EXAMPLE / "react_adapter.yaml").read_text()
    assert text.count(old) == 1
    spec = tmp_path / "react.yaml"
    spec.write_text(text.replace(old, new))
    (run,) = check_spec(load_spec(spec), Options(pins={"recursion_limit": 2}))
    finding = results(run)["bound_code"]
    assert finding.status == "violated"
    assert f"the bound code raised ValueError: {message}\n" in finding.message


def test_observed_channels_bound_the_tool_executions(tmp_path, monkeypatch) -> None:
    """`observe` reads the graph's own state: the ToolMessages in `messages` are the tool
    executions, and a limit of N allows N // 2 of them (the worst case, a witness run)."""
    (tmp_path / "counting.py").write_text(
        "from adapter import ReactAdapter\n\n\n"
        "class CountingAdapter(ReactAdapter):\n"
        "    def observe(self, values):\n"
        "        return {'tool_runs': sum(m.type == 'tool' for m in values.get('messages', []))}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(EXAMPLE))
    monkeypatch.delitem(sys.modules, "counting", raising=False)
    text = (EXAMPLE / "react_adapter.yaml").read_text().replace("bind: adapter:ReactAdapter", "bind: counting:CountingAdapter")
    text = text.replace("  status: {type: enum", "  tool_runs: {type: int, min: 0, max: recursion_limit, init: 0}\n"
                                               "  status: {type: enum")
    text += ("  tools_within_half_the_limit:\n    always: tool_runs <= recursion_limit // 2\n"
             "  tools_at_half_the_limit:\n    reachable: tool_runs == recursion_limit // 2\n")
    spec = tmp_path / "react.yaml"
    spec.write_text(text)
    runs = check_spec(load_spec(spec), Options(pins={"recursion_limit": 5}))
    assert [(r.result, r.stats["states"]) for r in runs] == [("proved", 10)]
    witness = results(runs[0])["tools_at_half_the_limit"].witness
    assert [s.state["tool_runs"] for s in witness.steps] == [0, 0, 1, 1, 2]
    assert witness.steps[-1].state["next"] == "agent"


def test_an_interrupted_graph_is_not_taken_for_a_finished_one(tmp_path, monkeypatch) -> None:
    """A graph paused before `tools` (human in the loop) ends its stream with `tools` still to
    run: the run reads `interrupted`, outside the example's statuses, never `done`."""
    (tmp_path / "pausing.py").write_text(
        "from adapter import ReactAdapter\n\n\n"
        "class PausingAdapter(ReactAdapter):\n"
        "    def graph(self, models):\n"
        "        return super().graph(models).copy(update={'interrupt_before_nodes': ['tools']})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(EXAMPLE))
    monkeypatch.delitem(sys.modules, "pausing", raising=False)
    spec = tmp_path / "react.yaml"
    spec.write_text((EXAMPLE / "react_adapter.yaml").read_text().replace("bind: adapter:ReactAdapter",
                                                                  "bind: pausing:PausingAdapter"))
    (run,) = check_spec(load_spec(spec), Options(pins={"recursion_limit": 3}))
    assert run.result == "violated"
    finding = results(run)["domains"]
    assert finding.status == "violated"
    assert finding.message == "status = 'interrupted' is outside its domain {running, done, limit}"
    assert [s.state["next"] for s in finding.trace.steps] == ["agent", "tools", "tools"]


# ---------------------------------------------------------------- subgraphs (issue 29): what LangGraph does

class State(TypedDict):
    n: Annotated[int, operator.add]


def nested_graph(how: str, sub_steps: int | None, ran: list[str]) -> object:
    """A parent looping plan -> sub -> plan whose `sub` is a compiled subgraph, as a node (`node`)
    or invoked inside a node function (`inner`; `inner_config`: passing the node's config on); the subgraph runs `work` `sub_steps` times (None:
    forever). `ran` records every node run."""
    from langchain_core.runnables import RunnableConfig
    from langgraph.graph import END, START, StateGraph

    def work(state: State) -> dict:
        ran.append("work")
        return {"n": 1}
    sub = StateGraph(State)
    sub.add_node("work", work)
    sub.add_edge(START, "work")
    sub.add_conditional_edges("work", lambda s: "work" if sub_steps is None or s["n"] < sub_steps else END,
                              ["work", END])
    subgraph = sub.compile()

    def plan(state: State) -> dict:
        ran.append("plan")
        return {"n": -state["n"]}       # back to 0: the subgraph as a node reads the parent's n

    def calls_sub(state: State) -> dict:
        subgraph.invoke({"n": 0})
        return {"n": 0}

    def passes_config(state: State, config: RunnableConfig) -> dict:
        subgraph.invoke({"n": 0}, config)
        return {"n": 0}
    parent = StateGraph(State)
    parent.add_node("plan", plan)
    parent.add_node("sub", {"node": subgraph, "inner": calls_sub, "inner_config": passes_config}[how])
    parent.add_edge(START, "plan")
    parent.add_edge("plan", "sub")
    parent.add_edge("sub", "plan")
    return parent.compile()


@pytest.mark.parametrize("how", ["node", "inner", "inner_config"])
def test_a_subgraph_counts_its_own_supersteps_against_the_parents_recursion_limit(how) -> None:
    """docs/how-to/trees-frameworks.md: the subgraph, as a node or invoked in a node function,
    gets the parent's recursion_limit and counts its own supersteps from 0 on each call; its
    GraphRecursionError ends the parent's run. A parent with recursion_limit 4 over a subgraph of
    3 supersteps runs 2 plans and 2 subgraph calls: 8 node runs."""
    from langgraph.errors import GraphRecursionError
    ran: list[str] = []
    with pytest.raises(GraphRecursionError, match=r"^Recursion limit of 4 reached"):
        nested_graph(how, 3, ran).invoke({"n": 0}, {"recursion_limit": 4})
    assert ran == ["plan", "work", "work", "work", "plan", "work", "work", "work"]
    looping: list[str] = []
    with pytest.raises(GraphRecursionError, match=r"^Recursion limit of 4 reached"):
        nested_graph(how, None, looping).invoke({"n": 0}, {"recursion_limit": 4})
    assert looping == ["plan", "work", "work", "work", "work"]
