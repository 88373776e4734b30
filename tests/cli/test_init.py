"""`haltproof init`: for every example app, the starter declaration it writes is checked as written and
gives a real answer on the first run; an existing file is never overwritten without --force; bad
input is exit 2 with a clear message (3 when --timeout cuts an import short)."""

from __future__ import annotations

import shutil

import pytest

from haltproof.frameworks.introspect import shaped_frameworks

from conftest import ROOT
from framework_helpers import fresh_modules

EXAMPLES = ROOT / "examples" / "frameworks"

# (folder, target, the check's verdict line on the written file); every one exits 0
FIRST_CHECKS = [
    ("langgraph", "react:build_graph", "4 runs: 4 proved"),
    ("langgraph", "supervisor:build_graph", "4 runs: 4 proved"),
    ("langgraph", "fanout:graph", "4 runs: 4 proved"),
    ("langgraph", "research:graph", "4 runs: 4 proved"),
    ("openai_agents", "triage:triage_agent", "4 runs: 4 proved"),
    ("openai_agents", "travel:travel_agent", "4 runs: 4 proved"),
    ("openai_agents", "support:triage_agent", "4 runs: 4 proved"),
    ("pydantic_ai", "weather:agent", "2 runs: 2 proved"),
    ("pydantic_ai", "trip:agent", "2 runs: 2 proved"),
    ("pydantic_ai", "orders:agent", "2 runs: 2 proved"),
    ("adk", "refine:root_agent", "3 runs: 3 proved"),
    ("adk", "coordinator:root_agent", "3 runs: 3 proved"),
]

REACT = """\
# A starter declaration for react:build_graph, written by `haltproof init` (docs/how-to/init.md):
# `haltproof check` on this file explores your LangGraph app as the framework runs it.
# What init cannot know from the code, and asks you (search for ASK):
# 1. input: what your graph is started with; the values are placeholders read from its state's
# schema.
# 2. what each chat model (or scripted node) may answer: init lists every answer the graph's shape
# allows (a final answer, a call of each tool a ToolNode it routes to runs, each value of a
# structured output's Literal field, each destination of a Command); keep the ones your model can
# really give, and make the placeholders (a tool call's args, texts) ones your nodes and tools
# accept.
# 3. recursion_limit: the value your app passes to invoke/stream (haltproof cannot see it); the
# sweep below is small so that the first check is quick, LangGraph's default is 25.
# 4. properties: what your app must do, beyond the out-of-the-box ones (docs/how-to/frameworks.md).
framework: langgraph
target: react:build_graph

# ASK: the graph's input, as you pass it to graph.invoke (placeholders from the state's schema).
input:
  messages: [{role: user, content: 'ASK: a request your app really gets'}]

# The chat models react:build_graph takes, scripted: on each superstep a model gives one of these
# answers (the choice NAME_answer). ASK: keep the answers your model can really give.
models:
  model:  # called in agent
    answer: 'ASK: a final answer your model gives'  # a final answer: no tool call
    call_search: {content: '', tool_calls: [{name: search, args: {query: query}, id: call_search}]}  \
# a call of the tool search (the ToolNode tools runs it)

# ASK: the limit your app sets (config={'recursion_limit': N}); every value swept is one run of the
# check. LangGraph's default is 25.
params:
  recursion_limit: {min: 2, max: 5}

# The out-of-the-box properties are always checked: run_ends, limit_error, most_supersteps,
# most_model_calls, most_tool_runs. ASK: add what your app must do, over the vars next, steps,
# status, runs_NODE, model_calls, tool_runs, e.g.:
# properties:
#   agent_at_most_twice:
#     always: runs_agent <= 2
"""

REFINE = """\
# A starter declaration for refine:root_agent, written by `haltproof init` (docs/how-to/init.md):
# `haltproof check` on this file explores your Google ADK app as the framework runs it.
# What init cannot know from the code, and asks you (search for ASK):
# 1. input: the user's message a run starts with (a request your app really gets).
# 2. what each LlmAgent's model may answer: init lists a final answer, a call of each of the agent's
# tools and each transfer ADK allows it; keep the ones its model can really give, and make the
# tools' arguments ones your tools accept (your tools and callbacks run as written).
# 3. max_llm_calls: the value your app gives RunConfig (haltproof cannot see it where the runner is
# called); the sweep below is small so that the first check is quick, ADK's default is 500.
# 4. properties: what your app must do, beyond the out-of-the-box ones (docs/how-to/adk.md).
framework: adk
target: refine:root_agent

# ASK: the user's message a run starts with (Runner.run_async's new_message).
input: 'ASK: a request your app really gets'

# What each LlmAgent's model may answer, by agent name (the choice SLUG_says). ASK: keep the answers
# its model can really give.
models:
  InitialWriterAgent:
    answer: 'ASK: a final answer the agent gives'  # a final answer: the agent's turn ends
  CriticAgent:
    answer: 'ASK: a final answer the agent gives'  # a final answer: the agent's turn ends
  RefinerAgent:
    answer: 'ASK: a final answer the agent gives'  # a final answer: the agent's turn ends
    call_exit_loop: {tool: exit_loop, args: {}}  # a call of the tool exit_loop (it runs as written)

# ASK: the max_llm_calls your app gives RunConfig; every value swept is one run of the check. ADK's
# default is 500.
# Each LoopAgent keeps its own max_iterations (RefinementLoop: 5); to sweep it, add
# max_iterations_SLUG, e.g. max_iterations_refinementloop: {min: 1, max: 2}.
params:
  max_llm_calls: {min: 3, max: 5}

# The out-of-the-box properties are always checked: run_ends, limit_error, most_model_calls,
# most_tool_runs, most_iterations_refinementloop, silent_stop_refinementloop. ASK: add what your app
# must do, over the vars agent, status, calls, tool_runs, transfers, escalations, runs_TOOL,
# iterations_refinementloop, exit_refinementloop, e.g.:
# properties:
#   at_most_two_tool_runs:
#     always: tool_runs <= 2
"""


def _in_example(monkeypatch, folder: str, target: str):
    monkeypatch.chdir(EXAMPLES / folder)
    return fresh_modules(monkeypatch, (target.partition(":")[0],))


@pytest.mark.slow
@pytest.mark.parametrize("folder,target,verdict", FIRST_CHECKS)
def test_init_then_check_gives_a_real_answer_for_every_example(cli, tmp_path, monkeypatch, folder, target, verdict):
    out = tmp_path / "starter.yaml"
    with _in_example(monkeypatch, folder, target):
        made = cli("init", target, "-o", out)
        assert (made.code, made.out) == (0, ""), made.err
        assert made.err == f"haltproof: wrote {out}: read its ASK comments, then run `haltproof check {out}`\n"
        checked = cli("check", out, "--quiet")
    assert checked.code == 0, checked.out + checked.err
    assert checked.out == f"{verdict}, 0 violated as expected, 0 failed, 0 incomplete -> proved\n"


def test_every_example_app_is_initialised():
    apps = {(p.parent.name, p.stem) for p in EXAMPLES.glob("*/*.py")
            if "adapter" not in p.stem and not p.stem.startswith("guarded_")      # guarded_*: an app run under its guard
            and p.parent.name in shaped_frameworks()}      # CrewAI: init and lint do not read it yet
    assert apps == {(folder, t.partition(":")[0]) for folder, t, _ in FIRST_CHECKS}


def test_the_starter_of_the_react_graph(cli, tmp_path, monkeypatch):
    out = tmp_path / "react.yaml"
    with _in_example(monkeypatch, "langgraph", "react:build_graph"):
        assert cli("init", "react:build_graph", "-o", out).code == 0
    assert out.read_text() == REACT


def test_the_starter_of_an_adk_pipeline(cli, tmp_path, monkeypatch):
    """ADK's refine pipeline: each LlmAgent's answers, the loop's own max_iterations named, and the
    out-of-the-box properties and vars of its loop."""
    with _in_example(monkeypatch, "adk", "refine:root_agent"):
        assert cli("init", "refine:root_agent", "-o", tmp_path / "refine.yaml").code == 0
    assert (tmp_path / "refine.yaml").read_text() == REFINE


def test_the_starter_lists_structured_answers_and_command_destinations(cli, tmp_path, monkeypatch):
    """The supervisor's model answers with a Router (one answer per value of its Literal field); fanout's
    review returns a Command (one scripted outcome per destination of its annotation)."""
    with _in_example(monkeypatch, "langgraph", "supervisor:build_graph"):
        assert cli("init", "supervisor:build_graph", "-o", tmp_path / "s.yaml").code == 0
    assert ("  supervisor:  # called in supervisor\n"
            "    researcher: {next: researcher}  # next = researcher\n"
            "    coder: {next: coder}  # next = coder\n"
            "    finish: {next: FINISH}  # next = FINISH\n") in (tmp_path / "s.yaml").read_text()
    with _in_example(monkeypatch, "langgraph", "fanout:graph"):
        assert cli("init", "fanout:graph", "-o", tmp_path / "f.yaml").code == 0
    assert ("nodes:\n"
            "  review:  # it returns a Command: where the run goes next\n"
            "    to_planner: {command: {goto: planner}}  # goes to planner; add the update it writes (update: {...})\n"
            "    to_end: {command: {goto: __end__}}  # goes to __end__; add the update it writes (update: {...})\n"
            ) in (tmp_path / "f.yaml").read_text()


def test_the_starter_of_an_agent_with_handoffs_and_a_context(cli, tmp_path, monkeypatch):
    with _in_example(monkeypatch, "openai_agents", "travel:travel_agent"):
        assert cli("init", "travel:travel_agent", "-o", tmp_path / "t.yaml").code == 0
    text = (tmp_path / "t.yaml").read_text()
    assert "context: travel:TravelContext  # a fresh context object per run (the agent's Agent[...] type)\n" in text
    assert ("  Travel agent:\n"
            "    answer: 'ASK: a final answer the agent gives'  # a final answer: the run ends\n"
            "    call_get_weather: {tool: get_weather, args: {city: city}}  # a call of the tool get_weather "
            "(it runs as written)\n") in text
    with _in_example(monkeypatch, "openai_agents", "triage:triage_agent"):
        assert cli("init", "triage:triage_agent", "-o", tmp_path / "r.yaml").code == 0
    assert "    to_triage_agent: {handoff: Triage agent}  # a handoff to Triage agent\n" in \
        (tmp_path / "r.yaml").read_text()


def test_the_default_file_is_named_after_the_attr(cli, tmp_path, monkeypatch):
    shutil.copy(EXAMPLES / "langgraph" / "react.py", tmp_path / "react.py")
    monkeypatch.chdir(tmp_path)
    with fresh_modules(monkeypatch, ("react",)):
        ran = cli("init", "react:build_graph")
    assert ran.code == 0
    assert (tmp_path / "build_graph.yaml").read_text() == REACT


def test_an_existing_file_is_never_overwritten_without_force(cli, tmp_path, monkeypatch):
    out = tmp_path / "mine.yaml"
    out.write_text("my own declaration\n")
    with _in_example(monkeypatch, "langgraph", "react:build_graph"):
        ran = cli("init", "react:build_graph", "-o", out)
        assert (ran.code, ran.out) == (2, "")
        assert ran.err == f"error: {out}: already exists; init never overwrites a file: give --force, or another -o FILE\n"
        assert out.read_text() == "my own declaration\n"
        forced = cli("init", "react:build_graph", "-o", out, "--force")
    assert forced.code == 0
    assert out.read_text() == REACT


@pytest.mark.parametrize("target,message", [
    ("nowhere:graph", "error: nowhere:graph: cannot import the target's module: ModuleNotFoundError: "
                      "No module named 'nowhere'\n"),
    ("react:missing", "error: react:missing: module react has no 'missing'\n"),
    ("react:tool", "error: react:tool is a function, not a compiled LangGraph graph (or a function building one "
                   "from its chat models), an OpenAI Agents Agent, a Pydantic AI Agent or a Google ADK agent\n"),
    ("react", "error: react: target must name the object as module:attr\n"),
])
def test_bad_targets_are_exit_2_and_write_nothing(cli, tmp_path, monkeypatch, target, message):
    with _in_example(monkeypatch, "langgraph", "react:build_graph"):
        ran = cli("init", target, "-o", tmp_path / "x.yaml")
    assert (ran.code, ran.out, ran.err) == (2, "", message)
    assert list(tmp_path.iterdir()) == []


def test_an_output_folder_that_does_not_exist_is_exit_2(cli, tmp_path, monkeypatch):
    with _in_example(monkeypatch, "langgraph", "react:build_graph"):
        ran = cli("init", "react:build_graph", "-o", tmp_path / "no" / "x.yaml")
    assert (ran.code, ran.err) == (2, f"error: {tmp_path / 'no' / 'x.yaml'}: no such directory: {tmp_path / 'no'}\n")


def test_a_starter_check_would_refuse_is_not_written(cli, tmp_path, monkeypatch):
    """A node name the declarations cannot name yet (docs/how-to/frameworks.md): the loader's own message, nothing written."""
    (tmp_path / "dashed.py").write_text(
        "from langgraph.graph import START, MessagesState, StateGraph\n\n"
        "b = StateGraph(MessagesState)\nb.add_node('look-up', lambda s: {})\nb.add_edge(START, 'look-up')\n"
        "graph = b.compile()\n")
    monkeypatch.chdir(tmp_path)
    with fresh_modules(monkeypatch, ("dashed",)):
        ran = cli("init", "dashed:graph", "-o", "dashed.yaml")
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == ("error: dashed:graph: haltproof check would refuse the starter declaration init wrote for it, "
                       "so nothing was written:\n  node 'look-up' of dashed:graph is not a plain identifier: the "
                       "abstract state cannot name it yet\n")
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".yaml") == []


def test_a_target_that_hangs_on_import_is_cut_short_by_timeout(cli, tmp_path, monkeypatch):
    (tmp_path / "slow_import.py").write_text("import time\ntime.sleep(60)\n")
    monkeypatch.chdir(tmp_path)
    with fresh_modules(monkeypatch, ("slow_import",)):
        ran = cli("init", "slow_import:graph", "--timeout", "1")
    assert (ran.code, ran.out) == (3, "")
    assert ran.err == ("haltproof: incomplete: --timeout reached while importing the target's module slow_import "
                       "(target: slow_import:graph)\n")
    assert not (tmp_path / "graph.yaml").exists()


@pytest.mark.slow
def test_the_docs_tour_runs_as_written(cli, tmp_path, monkeypatch):
    """docs/how-to/init.md's commands, from a folder holding react.py; its YAML is the file's, comments shortened."""
    import re
    doc = (ROOT / "docs" / "how-to" / "init.md").read_text()
    commands = [line for block in re.findall(r"```bash\n(.*?)```", doc, re.S) for line in block.splitlines()]
    assert commands == ["haltproof init react:build_graph -o starter.yaml", "haltproof check starter.yaml"]
    shutil.copy(EXAMPLES / "langgraph" / "react.py", tmp_path / "react.py")
    monkeypatch.chdir(tmp_path)
    with fresh_modules(monkeypatch, ("react",)):
        ran = [cli(*command.split()[1:], *(["--quiet"] if "check" in command else [])) for command in commands]
    assert [r.code for r in ran] == [0, 0]
    assert ran[1].out == "4 runs: 4 proved, 0 violated as expected, 0 failed, 0 incomplete -> proved\n"
    assert "`4 runs: 4 proved, 0 violated as expected, 0 failed, 0 incomplete -> proved`" in doc
    written = (tmp_path / "starter.yaml").read_text().splitlines()
    (shown,) = re.findall(r"```yaml\n(.*?)```", doc, re.S)
    assert [line for line in shown.splitlines() if line and not line.startswith("#")] == \
        [line for line in written if line and not line.startswith("#")]


@pytest.mark.parametrize("folder, target, block", [
    ("langgraph", "research:graph",
     "context:\n  search_backend:\n    search: {scripted: {answer: []}}  # what search_backend.search(...) returns\n"),
    ("pydantic_ai", "orders:agent",
     "deps:\n  orders:\n    status: {scripted: {answer: status}}  # what orders.status(...) returns\n"),
    ("openai_agents", "support:triage_agent",
     "context:\n  customer_id: customer_id\n  payments:\n"
     "    refund: {scripted: {answer: refund}}  # what payments.refund(...) returns\n"),
])
def test_the_starter_gives_the_apps_run_object_with_its_services_scripted(cli, tmp_path, monkeypatch, folder,
                                                                         target, block):
    """An app whose nodes or tools read a context or deps of its own type (issue 27): the starter
    writes its required fields, a service's methods scripted, so the first check runs them as written."""
    with _in_example(monkeypatch, folder, target):
        assert cli("init", target, "-o", tmp_path / "s.yaml").code == 0
    assert block in (tmp_path / "s.yaml").read_text()
