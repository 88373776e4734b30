"""CrewAI crews (`framework: crewai` + `target: module:Crew`), run by CrewAI's own kickoff with a
scripted model, offline (examples/frameworks/crewai).

The numbers are CrewAI's, as its own executor makes them: `max_iter = N` lets an agent make N
model calls on a task and then one more, CrewAI's forced final answer, whose text is the task's
answer whatever it says; a guardrail failing every retry makes kickoff raise; a coworker a
manager delegates to runs without delegation tools of its own.
"""

from __future__ import annotations

import importlib.util
import socket
import sys

import pytest

pytest.importorskip("crewai")

from haltproof.explorer.check import check_spec
from haltproof.explorer.options import Options
from haltproof.machine.live import Driver
from haltproof.machine.spec import load_spec
from haltproof.reports.report import to_json

from conftest import ROOT
from framework_helpers import emitted_tests_replay, fresh_modules, maxima, results

pytestmark = pytest.mark.slow        # importing CrewAI alone takes seconds; every test here runs a crew

EXAMPLE = ROOT / "examples" / "frameworks" / "crewai"
MODULES = ("research", "newsroom", "crew_app")


@pytest.fixture(autouse=True)
def _fresh_modules(monkeypatch):
    with fresh_modules(monkeypatch, MODULES):
        yield


def check(name: str, **options) -> list:
    return check_spec(load_spec(EXAMPLE / name), Options(**options))


def steps(trace, *names: str) -> list[tuple]:
    return [(next(iter(s.choices.values()), None), *(s.state[n] for n in names)) for s in trace.steps]


def max_iter_off_by_one(monkeypatch) -> None:
    """CrewAI's max_iter check (`has_reached_max_iterations`, as the executor imports it) one iteration
    late, in each executor module the installed release has (the default AgentExecutor is
    crewai.experimental.agent_executor's in 1.15.28, crewai.agents.agent_executor's in 1.15.30)."""
    import importlib

    from crewai.utilities import agent_utils
    patched = []
    for name in ("crewai.agents.agent_executor", "crewai.experimental.agent_executor", "crewai.agents.crew_agent_executor"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if getattr(module, "has_reached_max_iterations", None) is agent_utils.has_reached_max_iterations:
            monkeypatch.setattr(module, "has_reached_max_iterations",
                                lambda iterations, most: iterations >= most + 1)
            patched.append(name)
    assert patched, "no CrewAI executor imports has_reached_max_iterations: the patch would prove nothing"


@pytest.mark.verdict
def test_the_research_crew_answers_what_max_iter_allows() -> None:
    runs = check("research.yaml")
    assert [(r.params["max_iter"], r.result, r.as_expected, r.stats["states"]) for r in runs] == [
        (1, "violated", True, 12), (2, "violated", True, 24), (3, "violated", True, 39)]
    assert runs[0].explored == "code: research:crew"
    # the researcher: N calls and the forced one; the writer: one call per guardrail attempt (1 retry)
    assert [maxima(r) for r in runs] == [{"most_model_calls": n + 3, "most_tool_runs": n} for n in (1, 2, 3)]
    one = results(runs[0])
    assert one["max_iter_reached"].message == "possible: reached after 2 transitions"
    # max_iter=1: one search, then CrewAI's forced final answer: the model's text (here a tool call) is the task's answer
    assert steps(one["max_iter_reached"].witness, "agent", "forced", "turns", "tool_runs", "given_up") == [
        (None, "Senior Researcher", False, 0, 0, 0), ("search", "Senior Researcher", True, 1, 1, 0),
        ("search", "Writer", False, 2, 1, 1)]
    assert steps(one["guardrail_exhausted"].witness, "agent", "turns", "status") == [
        (None, "Senior Researcher", 0, "running"), ("findings", "Writer", 1, "running"),
        ("untitled", "Writer", 2, "running"), ("untitled", "Writer", 3, "guardrail_failed")]
    (sweep,) = to_json(runs)["sweeps"]
    assert [row["message"] for row in sweep["smallest_safe"]] == [
        "max_iter_reached reachable at every swept max_iter (1..3): no safe value"]
    assert [(row["property"], row["message"]) for row in sweep["limit_allows"]] == [
        ("most_model_calls", "max_iter = 1, 2, 3 allows at most 4, 5, 6 turns"),
        ("most_tool_runs", "max_iter = 1, 2, 3 allows at most 1, 2, 3 tool_runs")]


@pytest.mark.verdict
def test_the_hierarchical_crew_delegates_at_most_max_iter_times() -> None:
    runs = check("newsroom.yaml")
    assert [(r.params["max_iter"], r.result, r.as_expected, r.stats["states"]) for r in runs] == [
        (1, "violated", True, 9), (2, "violated", True, 29)]
    assert runs[0].explored == "code: newsroom:crew"
    assert [maxima(r) for r in runs] == [{"most_model_calls": 4, "most_delegations": 1},
                                         {"most_model_calls": 7, "most_delegations": 2}]
    one = results(runs[0])
    assert one["delegations_within_max_iter"].status == "holds"
    # the manager delegates once, the reporter answers, the manager's next call is the forced one, and its
    # answer, the text of another delegation (not run), is the crew's output
    assert steps(one["real_answers"].trace, "agent", "forced", "delegations", "given_up", "status") == [
        (None, "Crew Manager", False, 0, 0, "running"), ("to_reporter", "Reporter", False, 1, 0, "running"),
        ("facts", "Crew Manager", True, 1, 0, "running"), ("to_reporter", "Crew Manager", True, 1, 1, "done")]


def test_a_coworker_the_manager_delegates_to_has_no_delegation_tools() -> None:
    """The editor has allow_delegation=True, but the execution the manager delegates to it runs
    without CrewAI's delegation tools: its delegation is an error the model reads, not a delegation."""
    declared = load_spec(EXAMPLE / "newsroom.yaml")
    adapter, driver = declared.adapter(), Driver()
    live = driver.call(adapter.start, {"max_iter": 2}, {})
    driver.call(adapter.step, live, "crew_manager", {"crew_manager_says": "to_editor"})
    driver.call(adapter.step, live, "editor", {"editor_says": "ask_reporter"})
    assert adapter.abstract(live) == {"agent": "Editor", "forced": False, "status": "running", "turns": 2,
                                      "tool_runs": 0, "delegations": 1, "given_up": 0}
    seen = str(live.channel.model.request.messages[-2]["content"])
    assert "Action 'Delegate work to coworker' don't exist" in seen
    driver.call(adapter.close, live)
    driver.close()


@pytest.mark.verdict
def test_a_max_iter_check_one_iteration_late_changes_the_verdict(tmp_path, monkeypatch) -> None:
    text = (EXAMPLE / "research.yaml").read_text().replace(
        "  real_answers:\n", "  calls_within_max_iter_and_retries:\n    always: turns <= max_iter + 3\n  real_answers:\n")
    (tmp_path / "research.yaml").write_text(text)
    monkeypatch.syspath_prepend(str(EXAMPLE))
    (run,) = check_spec(load_spec(tmp_path / "research.yaml"), Options(pins={"max_iter": 1}))
    assert (run.result, run.as_expected, results(run)["calls_within_max_iter_and_retries"].status) == (
        "violated", True, "holds")
    max_iter_off_by_one(monkeypatch)
    (late,) = check_spec(load_spec(tmp_path / "research.yaml"), Options(pins={"max_iter": 1}))
    assert (late.result, late.as_expected) == ("violated", False)
    assert results(late)["calls_within_max_iter_and_retries"].status == "violated"
    assert maxima(late) == {"most_model_calls": 5, "most_tool_runs": 2}


def replayable(example: str, max_iter: int, extra: str = "", expect: bool = False) -> str:
    """An example's declaration with max_iter pinned, `extra` properties, and its violations not
    expected (so --emit-tests writes their tests) unless `expect`."""
    text = (EXAMPLE / example).read_text()
    at = text.index("expect:")
    text = text[:at] + (text[at:] if expect else "")
    text = text.replace("  max_iter: {min: 1, max: 3}\n", f"  max_iter: {max_iter}\n").replace(
        "  max_iter: {min: 1, max: 2}\n", f"  max_iter: {max_iter}\n")
    return text.replace("expect:", extra + "expect:") if expect else text + extra


def replay_emitted(cli, tmp_path, monkeypatch, **kwargs) -> None:
    """emitted_tests_replay, its check without the determinism check's second runs (fast)."""
    emitted_tests_replay(cli, tmp_path, monkeypatch, options=("--determinism", "off"), **kwargs)


GIVEN_UP = ("real_answers is not fixed: the recorded counterexample still breaks it: false in the state after "
            "step 2")


def test_an_emitted_test_replays_the_give_up_through_crewais_kickoff_and_follows_its_max_iter(
        cli, tmp_path, monkeypatch) -> None:
    """The research crew's give-up at max_iter=1, emitted as a test: it replays search, search
    through CrewAI's own kickoff and fails while the second call is still CrewAI's forced final
    answer. With CrewAI's max_iter check one iteration late, the same test passes: the second
    call is no longer forced, nothing is given up, so the replay follows CrewAI, not the trace."""
    replay_emitted(cli, tmp_path, monkeypatch, apps=(EXAMPLE / "research.py",),
                   declaration=replayable("research.yaml", 1),
                   expected={"test_replayed_real_answers_max_iter1_guardrail_max_retries1.py": GIVEN_UP})
    path = tmp_path / "regress" / "test_replayed_real_answers_max_iter1_guardrail_max_retries1.py"
    spec = importlib.util.spec_from_file_location("emitted_give_up", path)
    emitted = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(emitted)
    with pytest.raises(AssertionError) as failed:
        emitted.test_replayed_real_answers_max_iter1_guardrail_max_retries1()
    assert str(failed.value).splitlines()[0] == GIVEN_UP
    max_iter_off_by_one(monkeypatch)
    emitted.test_replayed_real_answers_max_iter1_guardrail_max_retries1()     # passes: nothing is given up


def test_emitted_tests_replay_the_managers_delegations_through_crewais_hierarchical_process(
        cli, tmp_path, monkeypatch) -> None:
    """The newsroom at max_iter=2, with a user's cap of one delegation: the finding, emitted, replays
    through CrewAI's manager and its delegation tools (the reporter's and the editor's executions run)
    and fails as the check did: a second delegation after 3 transitions (real_answers stays expected)."""
    cap = "  one_delegation:\n    description: the manager hands the story out once\n    maximum: delegations\n" \
          "    at_most: 1\n"
    replay_emitted(cli, tmp_path, monkeypatch, apps=(EXAMPLE / "newsroom.py",),
                   declaration=replayable("newsroom.yaml", 2, cap, expect=True),
                   expected={"test_replayed_one_delegation_max_iter2.py": (
                       "one_delegation is not fixed: the recorded counterexample still breaks it: the state after "
                       "step 3 has 2, more than at_most 1")})


def test_a_check_forked_after_a_crew_ran_in_this_process_runs_its_delegations(cli, monkeypatch) -> None:
    """A crew run here starts CrewAI's event bus threads, which the check's supervised child (a
    fork) does not have: the child's first delegation waited for them until --call-timeout, and the
    newsroom was `violated, NOT as expected (stopped at --call-timeout)`, exit 1."""
    monkeypatch.delenv("HALTPROOF_IN_PROCESS", raising=False)
    declared = load_spec(EXAMPLE / "research.yaml")
    adapter, driver = declared.adapter(), Driver()
    live = driver.call(adapter.start, {"max_iter": 1, "guardrail_max_retries": 1}, {})
    for answer in ("search", "search"):
        driver.call(adapter.step, live, "senior_researcher", {"senior_researcher_says": answer})
    driver.call(adapter.close, live)
    driver.close()
    ran = cli("check", EXAMPLE / "newsroom.yaml", "-p", "max_iter=1", "--call-timeout", "5")
    assert ran.code == 0, ran.out
    assert ran.out.splitlines()[0].startswith("violated as expected  ")


def test_a_declared_tool_outcome_runs_in_crewais_tool_usage_and_a_raising_tool_runs_six_times(tmp_path, monkeypatch) -> None:
    """A `tools:` outcome replaces search_web's code inside CrewAI's own tool usage: `found` is the
    observation the model reads; `down` raises, and CrewAI runs a raising tool 6 times for one
    model call (its ToolUsage retries) before the model reads the error: max_iter bounds model
    calls, not tool runs (examples/frameworks/crewai/research.py's search_web raising does the same)."""
    text = (EXAMPLE / "research.yaml").read_text().replace(
        "params:", "tools:\n  search_web:\n    found: 1 result\n    down: {raises: ConnectionError, message: search is down}\nparams:")
    (tmp_path / "research.yaml").write_text(text)
    monkeypatch.syspath_prepend(str(EXAMPLE))
    declared = load_spec(tmp_path / "research.yaml")
    adapter, driver = declared.adapter(), Driver()
    live = driver.call(adapter.start, {"max_iter": 3, "guardrail_max_retries": 1}, {})
    driver.call(adapter.step, live, "senior_researcher", {"senior_researcher_says": "search", "search_web_returns": "down"})
    assert (adapter.abstract(live)["turns"], adapter.abstract(live)["tool_runs"]) == (1, 6)
    driver.call(adapter.step, live, "senior_researcher",
                {"senior_researcher_says": "search_news", "search_web_returns": "found"})
    assert (adapter.abstract(live)["turns"], adapter.abstract(live)["tool_runs"]) == (2, 7)
    assert str(live.channel.model.request.messages[-2]["content"]).endswith("Observation: 1 result")
    driver.call(adapter.close, live)
    driver.close()


def test_a_run_is_offline_telemetry_off_and_nothing_connects(monkeypatch) -> None:
    """CrewAI sends telemetry by default (its exit flush looks up telemetry.crewai.com); a
    declaration's runs switch it off and look up no host, open no connection."""
    tried: list = []

    def refuse(self, address):
        tried.append(address)
        raise OSError("offline")
    def unknown(host, *args, **kwargs):
        tried.append(host)
        raise socket.gaierror("offline")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", unknown)
    for name in ("CREWAI_DISABLE_TELEMETRY", "OTEL_SDK_DISABLED", "CREWAI_TRACING_ENABLED"):
        monkeypatch.delenv(name, raising=False)
    declared = load_spec(EXAMPLE / "research.yaml")
    import os
    assert {k: os.environ[k] for k in ("CREWAI_DISABLE_TELEMETRY", "OTEL_SDK_DISABLED", "CREWAI_TRACING_ENABLED")} == {
        "CREWAI_DISABLE_TELEMETRY": "true", "OTEL_SDK_DISABLED": "true", "CREWAI_TRACING_ENABLED": "false"}
    adapter, driver = declared.adapter(), Driver()
    live = driver.call(adapter.start, {"max_iter": 2, "guardrail_max_retries": 1}, {})
    for action, choice in [("senior_researcher", {"senior_researcher_says": "search"}),
                           ("senior_researcher", {"senior_researcher_says": "findings"}),
                           ("writer", {"writer_says": "article"})]:
        driver.call(adapter.step, live, action, choice)
    assert adapter.abstract(live)["status"] == "done"
    assert live.channel.output == "# AI agents\nAgents plan, then act."
    driver.close()
    from crewai.telemetry import Telemetry
    Telemetry()._shutdown()     # what CrewAI does at exit: flush its spans (to telemetry.crewai.com when on)
    assert tried == []


APP = '''
from crewai import Agent, Crew, Process, Task
from crewai.tools import tool


@tool("lookup")
def lookup(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}"


clerk = Agent(role="Clerk", goal="g", backstory="b", tools=[lookup], llm="gpt-4o")
boss = Agent(role="Boss", goal="g", backstory="b", llm="gpt-4o", allow_delegation=True)
crew = Crew(agents=[clerk, boss], tasks=[Task(description="find A-1", expected_output="a status", agent=clerk),
                                         Task(description="sum up", expected_output="a line", agent=boss)],
            process=Process.sequential)
not_a_crew = 42
'''

DECLARATION = """\
framework: crewai
target: crew_app:crew
models:
  Clerk:
    look: {tool: lookup, args: {order_id: A-1}}
    answer: Shipped.
  Boss:
    ask: {delegate: Clerk, task: check A-1}
    answer: All good.
params:
  max_iter: {min: 1, max: 2}
"""


@pytest.mark.parametrize("change, line, message", [
    ((":crew", ":not_a_crew"), 2, "crew_app:not_a_crew is a int, not a crewai.Crew"),
    (("  Boss:\n", "  Bos:\n"), 7, "models: no agent with the role 'Bos' in the crew (its agents: Clerk, Boss)"),
    (("{tool: lookup,", "{tool: look_up,"), 5,
     "answer look of Clerk calls the tool 'look_up', which Clerk does not have (its tools: lookup)"),
    (("    ask: {delegate: Clerk, task: check A-1}", "    ask: {tool: lookup, args: {order_id: A-2}}"), 8,
     "answer ask of Boss calls the tool 'lookup', which Boss does not have (its tools: none)"),
    (("    ask: {delegate: Clerk, task: check A-1}", "    ask: {delegate: Boss, task: me}"), 8,
     "answer ask of Boss delegates to 'Boss', but Boss can delegate to Clerk"),
    (("    answer: Shipped.", "    answer: {delegate: Boss, task: you}"), 6,
     "answer answer of Clerk delegates to 'Boss', but Clerk can delegate to nobody (allow_delegation is off)"),
    (("    answer: All good.", "    answer: [All, good]"), 9,
     "answer answer of Boss must be the agent's final answer (text), {tool: NAME, args: {...}}, "
     "{delegate: COWORKER, task: TEXT} or {ask: COWORKER, question: TEXT}"),
    (("params:", "tools:\n  lokup:\n    ok: fine\nparams:"), 11,
     "tools: no agent of the crew has a tool named 'lokup' (its tools: lookup)"),
    (("  max_iter: {min: 1, max: 2}", "  iterations: {min: 1, max: 2}"), 10,
     "params: a crewai declaration needs max_iter (every agent's limit"),
    (("  Boss:\n    ask: {delegate: Clerk, task: check A-1}\n    answer: All good.\n", ""), 3,
     "models: the agent 'Boss' works in the crew, but its model has no answers declared"),
    (("  Boss:\n    ask: {delegate: Clerk, task: check A-1}\n    answer: All good.\n", "  Boss: All good.\n"), 7,
     "models: Boss needs a mapping of outcome labels to outcomes"),
    (("    answer: Shipped.", "    answer: {tool: lookup, args: [A-1]}"), 6,
     "answer answer of Clerk: args must be a mapping of the tool's arguments"),
    (("    ask: {delegate: Clerk, task: check A-1}", "    ask: {delegate: Clerk, task: check A-1, urgent: yes}"), 8,
     "answer ask of Boss must be the agent's final answer (text), {tool: NAME, args: {...}}, "
     "{delegate: COWORKER, task: TEXT} or {ask: COWORKER, question: TEXT}"),
    (("    look: {tool", "    look it up: {tool"), 5, "an outcome label of Clerk must be a plain identifier"),
    (("params:", "tools:\n  lookup: fine\nparams:"), 11, "tools: lookup needs a mapping of outcome labels to outcomes"),
    (("params:", "tools:\n  lookup:\n    down: {raises: NoSuchError}\nparams:"), 12,
     "raises names a class that cannot be found (no importable module defines it): 'NoSuchError'"),
    (("params:", "tools:\n  lookup:\n    down: {raises: ValueError, code: 3}\nparams:"), 12,
     "tools: outcome down of lookup: an outcome that raises is {raises: CLASS, message: TEXT}"),
    (("target: crew_app:crew\n", "target: crew_app:crew\ninputs: [A-1]\n"), 3,
     "inputs must be a mapping (what kickoff(inputs=...) gets)"),
])
def test_a_bad_declaration_is_refused_at_its_line(check, tmp_path, change, line, message) -> None:
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "specs" / "crew_app.py").write_text(APP)
    old, new = change
    assert old in DECLARATION
    ran = check(DECLARATION.replace(old, new, 1))
    sys.modules.pop("crew_app", None)
    assert ran.code == 2, ran.out
    assert ran.out == ""
    assert f"bad.yaml:{line}: {message}" in ran.err
    assert "Traceback" not in ran.err
