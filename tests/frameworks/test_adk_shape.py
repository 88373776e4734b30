"""Google ADK agents read by `haltproof init` and `haltproof lint` (frameworks/adk_shape.py): the edges
a tree's model calls can take (transfers, tools, final answers through its workflow agents, escalates
out of a loop), the max_llm_calls the app's module runs it with, a starter that `check` accepts as
written, and the docs page's example run as written. Real ADK objects, no network, no key."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

pytest.importorskip("google.adk")

from haltproof.frameworks import adk_shape
from haltproof.frameworks.introspect import Limit, Site, findings

from conftest import ROOT
from framework_helpers import fresh_modules

pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated in favor of Workflow:DeprecationWarning")
EXAMPLE = ROOT / "examples" / "frameworks" / "adk"

APP = '''\
from google.adk.agents import BaseAgent, LlmAgent, LoopAgent, ParallelAgent, SequentialAgent
from google.adk.agents.run_config import RunConfig
from google.adk.apps import App
from google.adk.runners import InMemoryRunner, Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.base_toolset import BaseToolset
from google.adk.tools import exit_loop
from google.adk.tools.agent_tool import AgentTool

MODEL = "gemini-2.5-flash"


def stop(callback_context):
    callback_context.actions.escalate = True


def look_up(order_id: str) -> dict:
    """Look an order up."""
    return {"order_id": order_id}


# left by ADK's exit_loop (a tool the model calls), or by a callback (the app's code), or by nothing
by_tool = LoopAgent(name="ByTool", sub_agents=[LlmAgent(name="Critic", model=MODEL),
                                               LlmAgent(name="Refiner", model=MODEL, tools=[exit_loop])])
by_callback = LoopAgent(name="ByCallback", sub_agents=[LlmAgent(name="Judge", model=MODEL,
                                                                after_agent_callback=stop)])
by_nothing = LoopAgent(name="ByNothing", sub_agents=[LlmAgent(name="Talker", model=MODEL, tools=[look_up])])
counted = LoopAgent(name="Counted", max_iterations=2, sub_agents=[LlmAgent(name="Worker", model=MODEL)])
fan = SequentialAgent(name="Fan", sub_agents=[
    ParallelAgent(name="Both", sub_agents=[LlmAgent(name="Left", model=MODEL), LlmAgent(name="Right", model=MODEL)]),
    LlmAgent(name="Merger", model=MODEL)])
helper = LlmAgent(name="Helper", model=MODEL)
asker = LlmAgent(name="Asker", model=MODEL, tools=[AgentTool(helper), look_up])
empty = SequentialAgent(name="Empty")

limited = LlmAgent(name="Limited", model=MODEL)
config = RunConfig(max_llm_calls=7)
computed = LlmAgent(name="Computed", model=MODEL)
CALLS = 9


async def run_both(message):
    runner = InMemoryRunner(limited, app_name="limited")
    async for _ in runner.run_async(user_id="u", session_id="s", new_message=message, run_config=config):
        pass
    other = InMemoryRunner(agent=computed, app_name="computed")
    async for _ in other.run_async(user_id="u", session_id="s", new_message=message,
                                   run_config=RunConfig(max_llm_calls=CALLS)):
        pass


inline = LlmAgent(name="Inline", model=MODEL)


def run_inline(message):
    runner = Runner(app=App(name="inline", root_agent=inline), session_service=InMemorySessionService())
    return list(runner.run(user_id="u", session_id="s", new_message=message, run_config=RunConfig()))


class Dispatch(BaseAgent):
    """An agent of the app's own: its code picks the sub-agent."""

    async def _run_async_impl(self, ctx):
        async for event in self.sub_agents[0].run_async(ctx):
            yield event


class Kit(BaseToolset):
    async def get_tools(self, readonly_context=None):
        return []


custom = Dispatch(name="Dispatch", sub_agents=[LlmAgent(name="Only", model=MODEL)])
kit_loop = LoopAgent(name="KitLoop", sub_agents=[LlmAgent(name="Kitted", model=MODEL, tools=[Kit()])])

from pydantic import BaseModel


class Verdict(BaseModel):
    approved: bool
    reason: str


grader = LlmAgent(name="Grader", model=MODEL, output_schema=Verdict)
'''


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """APP as `adk_shape_app.py` in a fresh working directory, imported fresh and forgotten after."""
    (tmp_path / "adk_shape_app.py").write_text(APP)
    monkeypatch.chdir(tmp_path)
    with fresh_modules(monkeypatch, ("adk_shape_app", "coordinator", "refine")):
        yield tmp_path


def edges(ref: str) -> set[tuple[str, str, str]]:
    from haltproof.frameworks.introspect import load
    shape = adk_shape.shape(load(ref), ref)
    return {(e.source, e.target, e.decided) for e in shape.edges}


def test_the_coordinators_transfers_tools_and_answers(monkeypatch):
    monkeypatch.chdir(EXAMPLE)
    with fresh_modules(monkeypatch, ("coordinator",)):
        assert edges("coordinator:root_agent") == {
            ("__start__", "HelpDeskCoordinator", "always"),
            ("HelpDeskCoordinator", "Billing", "model"), ("HelpDeskCoordinator", "Support", "model"),
            ("HelpDeskCoordinator", "__end__", "model"),
            ("Billing", "Billing", "model"),        # lookup_invoice: the run stays with Billing
            ("Billing", "HelpDeskCoordinator", "model"), ("Billing", "Support", "model"), ("Billing", "__end__", "model"),
            ("Support", "HelpDeskCoordinator", "model"), ("Support", "Billing", "model"), ("Support", "__end__", "model"),
        }


def test_the_refine_pipeline_through_its_sequence_and_loop(monkeypatch):
    """The loop goes round (its next iteration), ends at max_iterations, or ends by exit_loop's escalate."""
    monkeypatch.chdir(EXAMPLE)
    with fresh_modules(monkeypatch, ("refine",)):
        assert edges("refine:root_agent") == {
            ("__start__", "IterativeWritingPipeline", "always"),
            ("IterativeWritingPipeline", "InitialWriterAgent", "always"),
            ("InitialWriterAgent", "RefinementLoop", "model"),
            ("RefinementLoop", "CriticAgent", "always"),
            ("CriticAgent", "RefinerAgent", "model"),
            ("RefinerAgent", "RefinerAgent", "model"),
            ("RefinerAgent", "CriticAgent", "code"),
            ("RefinerAgent", "__end__", "code"),
            ("RefinerAgent", "__end__", "model"),
        }


def test_a_parallel_agent_an_agent_tool_and_an_empty_workflow_agent(app):
    assert edges("adk_shape_app:fan") == {
        ("__start__", "Fan", "always"), ("Fan", "Both", "always"),
        ("Both", "Left", "always"), ("Both", "Right", "always"),
        ("Left", "Merger", "model"), ("Right", "Merger", "model"), ("Merger", "__end__", "model")}
    assert edges("adk_shape_app:asker") == {("__start__", "Asker", "always"), ("Asker", "Asker", "model"),
                                            ("Asker", "__end__", "model")}
    assert edges("adk_shape_app:empty") == {("__start__", "Empty", "always"), ("Empty", "__end__", "always")}


@pytest.mark.parametrize("target, found", [
    ("by_tool", []),
    ("by_callback", []),
    ("counted", []),
    ("by_nothing", [("cycle-without-exit", "cycle Talker -> Talker"), ("end-unreachable", "agent ByNothing")]),
    ("kit_loop", []),       # a toolset's tools are not known: they may escalate
])
def test_a_loop_is_left_by_an_escalate_or_its_max_iterations(cli, app, target, found):
    """An escalate is seen in the source of a tool (ADK's exit_loop) or a callback; a loop without one
    and without max_iterations is a cycle no run leaves, whatever tools its agents call."""
    ran = cli("lint", f"adk_shape_app:{target}", "--format", "json")
    assert ran.code == (1 if found else 0), ran.err
    assert [(f["rule"], f["subject"]) for f in ran.json()["findings"]] == found


def test_max_llm_calls_where_the_module_runs_the_root(app):
    """A RunConfig bound to a name is read through it; a computed value says nothing."""
    from haltproof.frameworks.introspect import load
    site = Site("adk_shape_app.py", 44)
    assert adk_shape.shape(load("adk_shape_app:limited"), "adk_shape_app:limited").limits == [
        Limit("max_llm_calls", 7, False, site, "the call runner.run_async(...) of a runner of limited (ast); "
                                                "RunConfig(max_llm_calls=...): 0 or less is no limit")]
    assert adk_shape.shape(load("adk_shape_app:computed"), "adk_shape_app:computed").limits == []
    assert adk_shape.shape(load("adk_shape_app:inline"), "adk_shape_app:inline").limits == [
        Limit("max_llm_calls", 500, True, Site("adk_shape_app.py", 57), "the call runner.run(...) of a runner of "
                                                                        "inline (ast); RunConfig without max_llm_calls")]
    assert APP.splitlines()[56].lstrip().startswith("return list(runner.run(")


def test_a_custom_agent_or_a_toolset_in_a_loop_leaves_its_destinations_open(app):
    """What an agent's own code or a toolset does is not read: lint claims nothing that depends on it."""
    from haltproof.frameworks.introspect import load
    assert edges("adk_shape_app:custom") == {("__start__", "Dispatch", "always"), ("Dispatch", "Only", "code"),
                                             ("Only", "__end__", "model")}
    assert adk_shape.shape(load("adk_shape_app:custom"), "adk_shape_app:custom").open == {
        "Dispatch": "a custom agent: its own _run_async_impl decides which sub-agents run"}
    assert adk_shape.shape(load("adk_shape_app:kit_loop"), "adk_shape_app:kit_loop").open == {
        "Kitted": "the toolset Kit may escalate out of KitLoop: its code cannot be read"}
    assert APP.splitlines()[43].lstrip().startswith("async for _ in runner.run_async(")


def test_init_then_check_accepts_the_starter_as_written(cli, app):
    """A tree with a loop, tools, an AgentTool: the starter loads, and check gives a real answer."""
    made = cli("init", "adk_shape_app:by_tool", "-o", "by_tool.yaml")
    assert made.code == 0, made.err
    text = (app / "by_tool.yaml").read_text()
    assert "framework: adk\ntarget: adk_shape_app:by_tool\n" in text
    assert ("models:\n  Critic:\n    answer: 'ASK: a final answer the agent gives'  # a final answer: the agent's "
            "turn ends\n  Refiner:\n") in text
    assert "    call_exit_loop: {tool: exit_loop, args: {}}  # a call of the tool exit_loop (it runs as written)\n" \
        in text
    assert "params:\n  max_llm_calls: {min: 2, max: 4}\n" in text
    checked = cli("check", "by_tool.yaml", "--quiet")
    assert (checked.code, checked.out) == (0, "3 runs: 3 proved, 0 violated as expected, 0 failed, 0 incomplete "
                                              "-> proved\n"), checked.err
    assert cli("init", "adk_shape_app:asker", "-o", "asker.yaml").code == 0
    asker = (app / "asker.yaml").read_text()
    assert "call_Helper" not in asker and "# Not listed: a call of Helper, an AgentTool." in asker
    assert "    call_look_up: {tool: look_up, args: {order_id: order_id}}" in asker
    assert cli("check", "asker.yaml", "--quiet").code == 0


def test_a_structured_final_answer_is_the_json_of_the_agents_output_schema(cli, app):
    assert cli("init", "adk_shape_app:grader", "-o", "grader.yaml").code == 0
    assert ("""  Grader:\n    answer: '{"approved": false, "reason": "reason"}'  # a final answer: the agent's turn ends\n"""
            in (app / "grader.yaml").read_text())
    checked = cli("check", "grader.yaml", "--quiet")
    assert (checked.code, checked.out) == (0, "3 runs: 3 proved, 0 violated as expected, 0 failed, 0 incomplete "
                                              "-> proved\n"), checked.err


def test_a_tree_without_an_llm_agent_is_exit_2_and_writes_nothing(cli, app):
    ran = cli("init", "adk_shape_app:empty", "-o", "empty.yaml")
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == ("error: adk_shape_app:empty: its tree has no LlmAgent: no model is ever called, so there is "
                       "nothing to declare\n")
    assert not (app / "empty.yaml").exists()


def test_an_object_of_adks_that_is_no_agent_is_exit_2(cli, app):
    ran = cli("lint", "adk_shape_app:config")
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == ("error: adk_shape_app:config is a RunConfig, not a compiled LangGraph graph (or a function "
                       "building one from its chat models), an OpenAI Agents Agent, a Pydantic AI Agent or a Google "
                       "ADK agent\n")


def test_the_docs_example_runs_as_written(cli, tmp_path, monkeypatch):
    """docs/how-to/adk.md's init and lint commands, from a folder holding coordinator.py: lint's output,
    the starter's models and check's verdict are what the page shows."""
    doc = (ROOT / "docs" / "how-to" / "adk.md").read_text()
    section = doc.partition("## From an agent to a first check")[2].partition("\n## ")[0]
    (block,) = re.findall(r"```bash\n(.*?)```", section, re.S)
    commands = block.splitlines()
    assert commands == ["haltproof lint coordinator:root_agent", "haltproof init coordinator:root_agent -o starter.yaml",
                        "haltproof check starter.yaml"]
    shutil.copy(EXAMPLE / "coordinator.py", tmp_path / "coordinator.py")
    monkeypatch.chdir(tmp_path)
    with fresh_modules(monkeypatch, ("coordinator",)):
        ran = [cli(*command.split()[1:], *(["--quiet"] if "check" in command else [])) for command in commands]
    assert [r.code for r in ran] == [0, 0, 0]
    assert f"`{ran[0].out.strip()}`" in section
    assert f"`{ran[2].out.strip()}`" in section
    (shown,) = re.findall(r"```yaml\n(.*?)```", section, re.S)
    written = (tmp_path / "starter.yaml").read_text()
    assert shown in written
    assert ("# The out-of-the-box properties are always checked: run_ends, limit_error, most_model_calls,\n"
            "# most_tool_runs, most_transfers. ASK:") in written
    assert "#   at_most_one_transfer:\n#     always: transfers <= 1\n" in written


def test_lint_finds_nothing_it_cannot_see(app):
    """A tree only read, never run, by its module: no limit is claimed, and its loops' exits are edges."""
    from haltproof.frameworks.introspect import load
    shape = adk_shape.shape(load("adk_shape_app:by_tool"), "adk_shape_app:by_tool")
    assert shape.limits == [] and shape.open == {}
    assert findings(shape) == []
