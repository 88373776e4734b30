"""LangGraph subgraphs (issue 29): a compiled subgraph as a node, and one invoked inside a node
function, explored superstep by superstep through LangGraph's own subgraph streaming, every
recursion_limit enforced by LangGraph's own loops.

What LangGraph does, found by these checks (examples/trees/langgraph): each subgraph run gets the
parent's recursion_limit (both ways) and counts its own supersteps from 0, so a limit of L allows
far more than L model calls (9 at L = 4 in the tree below); a subgraph's GraphRecursionError ends
the parent's run as the parent's own would.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("langgraph")

from langgraph.pregel import _loop

from haltproof.explorer.check import check_spec
from haltproof.explorer.options import Options
from haltproof.machine.spec import load_spec

from conftest import ROOT
from framework_helpers import emitted_tests_replay, fresh_modules, maxima, results

EXAMPLE = ROOT / "examples" / "trees" / "langgraph"
MODULES = ("tree_app", "team")

TREE = '''\
from langgraph.graph import END, START, MessagesState, StateGraph


def last(state: MessagesState) -> str:
    return state["messages"][-1].content


def worker_graph(worker):
    def work(state: MessagesState) -> dict:
        return {"messages": [worker.invoke(state["messages"])]}

    sub = StateGraph(MessagesState)
    sub.add_node("work", work)
    sub.add_edge(START, "work")
    sub.add_conditional_edges("work", lambda s: "work" if last(s) == "again" else END, ["work", END])
    return sub.compile()


def parent(planner, sub_node, note=None):
    def plan(state: MessagesState) -> dict:
        return {"messages": [planner.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("plan", plan)
    builder.add_node("sub", sub_node)
    if note is not None:            # a node running beside sub, after plan
        builder.add_node("note", note)
        builder.add_edge("plan", "note")
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", lambda s: "sub" if last(s) == "delegate" else END, ["sub", END])
    builder.add_edge("sub", "plan")
    return builder.compile()


def as_node(planner, worker):
    return parent(planner, worker_graph(worker))


def in_node(planner, worker):
    graph = worker_graph(worker)

    def sub(state: MessagesState) -> dict:
        return {"messages": graph.invoke({"messages": state["messages"][-1:]})["messages"][-1:]}
    return parent(planner, sub)


def nested(planner, worker):
    middle = StateGraph(MessagesState)
    middle.add_node("inner", worker_graph(worker))
    middle.add_edge(START, "inner")
    return parent(planner, middle.compile())


def beside(planner, worker):
    return parent(planner, worker_graph(worker), note=lambda state: {"messages": []})


def asynchronous(planner, worker):
    async def note(state: MessagesState) -> dict:
        return {"messages": []}
    return parent(planner, worker_graph(worker), note=note)
'''

DECLARATION = """\
framework: langgraph
target: tree_app:as_node
input:
  messages: [{role: user, content: go}]
models:
  planner:
    delegate: {answer: delegate, when: subgraph == none}
    answer: done
  worker:
    again: {answer: again, when: subgraph != none}
    finish: finished
subgraphs: [sub]
params:
  recursion_limit: [2, 3, 4]
"""


@pytest.fixture(autouse=True)
def _fresh_modules(monkeypatch):
    with fresh_modules(monkeypatch, MODULES):
        yield


def tree(tmp_path, monkeypatch, declaration: str = DECLARATION, how: str = "as_node", **options) -> list:
    (tmp_path / "tree_app.py").write_text(TREE)
    (tmp_path / "tree.yaml").write_text(declaration.replace("tree_app:as_node", f"tree_app:{how}"))
    monkeypatch.chdir(tmp_path)
    sys.modules.pop("tree_app", None)
    return check_spec(load_spec(tmp_path / "tree.yaml"), Options(**options))


def steps(trace) -> list[tuple]:
    return [(s.choices.get("planner_answer"), s.choices.get("worker_answer"), s.state["next"], s.state["steps"],
             s.state["subgraph"], s.state["subgraph_steps"], s.state["model_calls"], s.state["status"])
            for s in trace.steps]


WORST_AT_4 = [
    (None, None, "plan", 0, "none", 0, 0, "running"),
    ("delegate", "finish", "sub", 1, "none", 0, 1, "running"),
    ("delegate", "finish", "sub", 1, "sub", 0, 1, "running"),       # the subgraph took its input: no model asked
    ("answer", "again", "sub", 1, "sub", 1, 2, "running"),
    ("answer", "again", "sub", 1, "sub", 2, 3, "running"),
    ("answer", "finish", "plan", 2, "none", 0, 4, "running"),       # 3 supersteps: the most a run that ends has
    ("delegate", "finish", "sub", 3, "none", 0, 5, "running"),
    ("delegate", "finish", "sub", 3, "sub", 0, 5, "running"),
    ("answer", "again", "sub", 3, "sub", 1, 6, "running"),
    ("answer", "again", "sub", 3, "sub", 2, 7, "running"),
    ("answer", "again", "sub", 3, "sub", 3, 8, "running"),
    ("answer", "again", "sub", 3, "sub", 4, 9, "running"),          # its 4th; a 5th is past its own limit
]


@pytest.mark.slow
@pytest.mark.verdict
@pytest.mark.parametrize("how", ["as_node", "in_node"])
def test_each_subgraph_run_counts_its_own_supersteps_under_the_parents_limit(tmp_path, monkeypatch, how) -> None:
    """The same worst cases whether the subgraph is the node or invoked in it: recursion_limit L
    bounds the parent's supersteps and each subgraph run's, so a tree of L = 4 makes 9 model calls."""
    runs = tree(tmp_path, monkeypatch, how=how)
    assert [(r.params["recursion_limit"], r.result) for r in runs] == [(2, "proved"), (3, "proved"), (4, "proved")]
    assert [maxima(r) for r in runs] == [
        {"most_supersteps": limit, "most_model_calls": calls, "most_supersteps_in_all": every,
         "most_steps_sub": sub, "most_tool_runs": 0}
        for limit, calls, every, sub in ((2, 3, 3, 2), (3, 4, 5, 3), (4, 9, 10, 7))]
    witness = results(runs[2])["most_model_calls"].witness
    assert steps(witness) == WORST_AT_4


@pytest.mark.verdict
def test_a_subgraphs_limit_error_ends_the_parents_run(tmp_path, monkeypatch) -> None:
    """GraphRecursionError raised in the subgraph reaches the top: the run ends in the same
    error as the parent's own limit, with the subgraph still running."""
    (run,) = tree(tmp_path, monkeypatch, pins={"recursion_limit": 2})
    hit = results(run)["subgraph_limit_error"]
    assert (hit.status, hit.message) == ("holds", "possible: reached after 5 transitions")
    assert steps(hit.witness) == [
        (None, None, "plan", 0, "none", 0, 0, "running"),
        ("delegate", "finish", "sub", 1, "none", 0, 1, "running"),
        ("delegate", "finish", "sub", 1, "sub", 0, 1, "running"),
        ("answer", "again", "sub", 1, "sub", 1, 2, "running"),
        ("answer", "again", "sub", 1, "sub", 2, 3, "running"),
        ("answer", "again", "sub", 1, "sub", 2, 3, "limit")]


def subgraph_limit_off_by_one(monkeypatch) -> None:
    """LangGraph's recursion limit checked one superstep late in subgraphs only (a loop with a
    checkpoint namespace), the parent's left as it is."""
    enter = _loop.SyncPregelLoop.__enter__

    def late(self):
        out = enter(self)
        if self.checkpoint_ns:
            self.stop += 1
        return out
    monkeypatch.setattr(_loop.SyncPregelLoop, "__enter__", late)


WITHIN = DECLARATION + """\
properties:
  each_subgraph_run_within_the_limit:
    always: subgraph_steps <= recursion_limit
"""


@pytest.mark.verdict
def test_the_subgraphs_limit_checked_one_step_late_changes_the_verdict(tmp_path, monkeypatch) -> None:
    """The nested limit is LangGraph's own check, in the subgraph's own loop: made one superstep
    late there, a subgraph run takes L + 1 supersteps and the property breaks."""
    (held,) = tree(tmp_path, monkeypatch, WITHIN, pins={"recursion_limit": 2})
    assert results(held)["each_subgraph_run_within_the_limit"].status == "holds"
    subgraph_limit_off_by_one(monkeypatch)
    (late,) = tree(tmp_path, monkeypatch, WITHIN, pins={"recursion_limit": 2})
    broken = results(late)["each_subgraph_run_within_the_limit"]
    assert broken.status == "violated"
    assert [s[5] for s in steps(broken.trace)] == [0, 0, 0, 1, 2, 3]
    assert results(late)["most_supersteps"].status == "holds"      # the parent's limit is untouched


@pytest.mark.slow
def test_the_worst_case_is_what_langgraph_does_on_replay(cli, tmp_path, monkeypatch) -> None:
    """The 9 model calls at recursion_limit 4, replayed through LangGraph by the emitted test."""
    (tmp_path / "tree_app.py").write_text(TREE)
    text = DECLARATION.replace("[2, 3, 4]", "[4]") + "properties:\n  eight_model_calls_at_most:\n" \
                                                      "    maximum: model_calls\n    at_most: 8\n"
    emitted_tests_replay(
        cli, tmp_path, monkeypatch, apps=(tmp_path / "tree_app.py",), declaration=text,
        expected={"test_replayed_eight_model_calls_at_most_recursion_limit4.py":
                  "eight_model_calls_at_most is not fixed: the recorded counterexample still breaks it: the state "
                  "after step 11 has 9, more than at_most 8"})


@pytest.mark.parametrize("subgraphs, message", [
    ("[sub, plan]", "subgraphs: node plan of tree_app:as_node runs no subgraph LangGraph finds (neither a compiled "
                    "graph as the node nor one its function refers to; nodes running one: sub)"),
    ("[sub, research]", "subgraphs: the graph tree_app:as_node has no node 'research' (its nodes: plan, sub)"),
    ("[sub, sub]", "subgraphs: sub is named twice"),
    ("[sub] # async", "subgraphs: tree_app:asynchronous has an async def node: haltproof pauses subgraphs only in "
                      "a graph streamed synchronously"),
    ("sub", "subgraphs: must be a list of the graph's nodes that run a subgraph (as the node, or invoked inside "
            "its function)"),
])
def test_a_bad_subgraphs_declaration_is_refused_at_its_line(check, tmp_path, subgraphs, message) -> None:
    (tmp_path / "specs" / "tree_app.py").write_text(TREE)
    declaration = DECLARATION.replace("subgraphs: [sub]", f"subgraphs: {subgraphs}")
    if subgraphs == "[sub] # async":
        declaration = declaration.replace("tree_app:as_node", "tree_app:asynchronous")
    ran = check(declaration)
    sys.modules.pop("tree_app", None)
    assert (ran.code, ran.out) == (2, "")
    assert f"bad.yaml:12: {message}" in ran.err, ran.err
    assert "Traceback" not in ran.err


@pytest.mark.parametrize("how, message", [
    ("nested", "the subgraph of node sub ran a subgraph of its own (sub > inner): haltproof explores one level of "
               "subgraphs"),
    ("beside", "the subgraph of node sub runs beside note in one superstep: haltproof explores a subgraph only "
               "when its node runs alone"),
])
def test_a_subgraph_haltproof_cannot_pause_alone_is_a_bound_code_finding(tmp_path, monkeypatch, how, message) -> None:
    (run,) = tree(tmp_path, monkeypatch, how=how, pins={"recursion_limit": 3})
    finding = results(run)["bound_code"]
    assert finding.status == "violated"
    assert f"the bound code raised RuntimeError: {message}" in finding.message, finding.message


EXITS = """\
import os, sys
sys.path.insert(0, os.getcwd())
from haltproof.explorer.check import check_spec
from haltproof.explorer.options import Options
from haltproof.machine.spec import load_spec
(run,) = check_spec(load_spec("tree.yaml"), Options(pins={"recursion_limit": 3}))
print(run.result)
"""


def test_a_process_that_explored_a_subgraph_exits(tmp_path) -> None:
    """A run left paused inside a subgraph (the one a bound_code finding stopped, the one the
    explorer keeps) lets LangGraph's thread pool go: the process exits instead of waiting for
    ever at its pool's join (this test's process hung before)."""
    (tmp_path / "tree_app.py").write_text(TREE)
    (tmp_path / "tree.yaml").write_text(DECLARATION.replace("tree_app:as_node", "tree_app:beside"))
    ran = subprocess.run([sys.executable, "-c", EXITS], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "HALTPROOF_IN_PROCESS": "1"})
    assert (ran.returncode, ran.stdout) == (0, "violated\n"), ran.stderr[-2000:]


@pytest.mark.slow
def test_the_langgraph_tree_example_is_checked_and_documented(cli, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    ran = cli("check", "examples/trees/langgraph")
    assert ran.code == 0, ran.out
    assert ran.out.endswith("2 runs: 0 proved, 2 violated as expected, 0 failed, 0 incomplete -> proved\n")
    assert "team.yaml most_model_calls: recursion_limit = 3, 4 allows at most 4, 9 model_calls" in ran.out
    doc = (ROOT / "docs" / "how-to" / "trees-frameworks.md").read_text()
    assert "```yaml\n" + (EXAMPLE / "team.yaml").read_text() + "```" in doc
