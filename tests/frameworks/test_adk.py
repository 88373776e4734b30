"""Google ADK agent trees (`framework: adk`), run by ADK's own InMemoryRunner with a scripted model.

The numbers are ADK's, as its own code makes them (examples/frameworks/adk): `max_llm_calls = N`
allows exactly N model calls, the (N+1)-th is refused before the model is asked; a transfer or a
tool decided in the N-th call still runs. A LoopAgent ends on an escalate from a sub-agent or
after max_iterations iterations, and the run then goes on as if the loop had succeeded.
"""

from __future__ import annotations

import __future__
import inspect
import sys
import textwrap

import pytest

pytest.importorskip("google.adk")

from google.adk.agents import LoopAgent, RunConfig
from google.adk.agents import invocation_context

from haltproof.explorer.check import check_spec
from haltproof.explorer.options import Options
from haltproof.machine.spec import load_spec
from haltproof.reports.report import to_json

from conftest import ROOT
from framework_helpers import emitted_tests_replay, fresh_modules, maxima, results

pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated in favor of Workflow:DeprecationWarning")
EXAMPLE = ROOT / "examples" / "frameworks" / "adk"
MODULES = ("refine", "coordinator", "adk_app")


@pytest.fixture(autouse=True)
def _fresh_modules(monkeypatch):
    """The examples' modules are imported fresh for each test and forgotten after it."""
    with fresh_modules(monkeypatch, MODULES):
        yield


def check(name: str, **options) -> list:
    return check_spec(load_spec(EXAMPLE / name), Options(**options))


def steps(trace, *names: str) -> list[tuple]:
    return [(next(iter(s.choices.values()), None), *(s.state[n] for n in names)) for s in trace.steps]


def off_by_one(fn, old: str, new: str):
    """`fn` recompiled from ADK's own source with its one check `old` made `new` (in the module's
    globals, so it runs as the original does)."""
    source = textwrap.dedent(inspect.getsource(fn))
    assert source.count(old) == 1
    code = compile(source.replace(old, new), inspect.getsourcefile(fn), "exec",
                   flags=__future__.annotations.compiler_flag, dont_inherit=True)
    made: dict = {}
    exec(code, fn.__globals__, made)
    return made[fn.__name__]


def max_llm_calls_off_by_one(monkeypatch) -> None:
    """ADK's one max_llm_calls check (`_InvocationCostManager`) one call late."""
    manager = invocation_context._InvocationCostManager
    monkeypatch.setattr(manager, "increment_and_enforce_llm_calls_limit", off_by_one(
        manager.increment_and_enforce_llm_calls_limit, "self._number_of_llm_calls > run_config.max_llm_calls",
        "self._number_of_llm_calls > run_config.max_llm_calls + 1"))


def max_iterations_off_by_one(monkeypatch) -> None:
    """The LoopAgent's iteration check one iteration late."""
    monkeypatch.setattr(LoopAgent, "_run_async_impl", off_by_one(
        LoopAgent._run_async_impl, "times_looped < self.max_iterations", "times_looped < self.max_iterations + 1"))


# ---------------------------------------------------------------- the examples, as ADK runs them

@pytest.mark.verdict
def test_the_refine_pipeline_can_finish_with_a_draft_nobody_approved() -> None:
    (run,) = check("refine.yaml", pins={"max_llm_calls": 5, "max_iterations": 2})
    assert (run.result, run.as_expected, run.stats["states"], run.explored) == (
        "violated", True, 9, "code: refine:root_agent")
    found = results(run)
    # the loop runs out of iterations: the pipeline returns, the refiner never called exit_loop
    assert steps(found["ends_approved"].trace, "agent", "calls", "iterations_refinementloop", "exit_refinementloop",
                 "status") == [
        (None, "InitialWriterAgent", 0, 0, "none", "running"), ("draft", "CriticAgent", 1, 1, "none", "running"),
        ("critique", "RefinerAgent", 2, 1, "none", "running"), ("rewrite", "CriticAgent", 3, 2, "none", "running"),
        ("critique", "RefinerAgent", 4, 2, "none", "running"),
        ("rewrite", "RefinerAgent", 5, 2, "out_of_iterations", "done")]
    assert found["silent_stop_refinementloop"].message == "possible: reached after 5 transitions"
    # exit_loop's escalate does not end the refiner's own turn: its model is asked once more, the 6th call
    assert found["limit_error"].message == "possible: reached after 5 transitions"
    assert steps(found["limit_error"].witness, "calls", "tool_runs", "escalations", "status")[-2:] == [
        ("critique", 4, 0, 0, "running"), ("done", 5, 1, 1, "limit")]
    assert maxima(run) == {"most_model_calls": 5, "most_tool_runs": 1, "most_iterations_refinementloop": 2}


@pytest.mark.verdict
def test_with_room_for_every_call_the_limit_error_is_unreachable() -> None:
    (run,) = check("refine.yaml", pins={"max_llm_calls": 8, "max_iterations": 2})
    found = results(run)
    assert found["limit_error"].message == "impossible: no reachable state satisfies it"
    assert found["silent_stop_refinementloop"].message == "possible: reached after 5 transitions"
    assert maxima(run) == {"most_model_calls": 6, "most_tool_runs": 1, "most_iterations_refinementloop": 2}


@pytest.mark.verdict
def test_skip_summarization_ends_the_escalating_turn_and_the_limit_error_goes(tmp_path, monkeypatch) -> None:
    """The fix ADK's docs adopted for exit_loop (adk-docs#1105, for adk-python#2988): with
    `skip_summarization` the tool's response is the agent's final one, its model is not asked
    again, and at max_llm_calls=5 the pipeline no longer reaches the limit."""
    (tmp_path / "refine.py").write_text((EXAMPLE / "refine.py").read_text().replace(
        "    tool_context.actions.escalate = True\n",
        "    tool_context.actions.escalate = True\n    tool_context.actions.skip_summarization = True\n"))
    (tmp_path / "refine.yaml").write_text((EXAMPLE / "refine.yaml").read_text())
    monkeypatch.syspath_prepend(str(tmp_path))
    (run,) = check_spec(load_spec(tmp_path / "refine.yaml"), Options(pins={"max_llm_calls": 5, "max_iterations": 2}))
    found = results(run)
    assert found["limit_error"].message == "impossible: no reachable state satisfies it"
    assert maxima(run) == {"most_model_calls": 5, "most_tool_runs": 1, "most_iterations_refinementloop": 2}
    assert found["ends_approved"].status == "violated"      # running out of iterations is still silent


@pytest.mark.slow
@pytest.mark.verdict
def test_max_iterations_bounds_the_loop_and_sets_the_smallest_safe_max_llm_calls() -> None:
    (sweep,) = to_json(check("refine.yaml"))["sweeps"]
    assert [row["message"] for row in sweep["smallest_safe"]] == [
        "limit_error unreachable at every swept max_llm_calls (5..8)",
        "limit_error unreachable from max_llm_calls=6 on (swept 5..8; reachable at max_llm_calls=5)"]
    rows = {(row["property"], tuple(sorted(row["others"].items()))): row["message"]
            for row in sweep["limit_allows"]}
    assert rows[("most_model_calls", (("max_iterations", 2),))] == (
        "max_llm_calls = 5, 6, 7, 8 allows at most 5, 6, 6, 6 calls")
    assert rows[("most_iterations_refinementloop", (("max_llm_calls", 5),))] == (
        "max_iterations = 1, 2 allows at most 1, 2 iterations_refinementloop")


@pytest.mark.verdict
def test_the_help_desk_transfers_back_and_forth_until_max_llm_calls() -> None:
    (run,) = check("coordinator.yaml", pins={"max_llm_calls": 3})
    assert (run.result, run.as_expected, run.stats["states"], run.explored) == (
        "violated", True, 13, "code: coordinator:root_agent")
    found = results(run)
    assert steps(found["one_hand_off"].trace, "agent", "transfers") == [
        (None, "HelpDeskCoordinator", 0), ("to_billing", "Billing", 1), ("not_mine", "HelpDeskCoordinator", 2)]
    # the third call transfers, and the agent it transfers to is refused its model call
    assert steps(found["most_transfers"].witness, "agent", "calls", "transfers", "status") == [
        (None, "HelpDeskCoordinator", 0, 0, "running"), ("to_billing", "Billing", 1, 1, "running"),
        ("not_mine", "HelpDeskCoordinator", 2, 2, "running"), ("to_billing", "HelpDeskCoordinator", 3, 3, "limit")]
    assert maxima(run) == {"most_model_calls": 3, "most_tool_runs": 1, "most_transfers": 3}


@pytest.mark.slow
def test_an_emitted_test_replays_the_ping_pong_through_adks_runner(cli, tmp_path, monkeypatch) -> None:
    """--emit-tests on the help desk, its ping-pong not declared as expected: the test it writes
    replays the transfers through ADK's own InMemoryRunner and fails as the check did."""
    declaration = (EXAMPLE / "coordinator.yaml").read_text()
    declaration = declaration[:declaration.index("expect:")].replace("{min: 2, max: 4}", "2")
    emitted_tests_replay(cli, tmp_path, monkeypatch, apps=(EXAMPLE / "coordinator.py",), declaration=declaration,
                         expected={"test_replayed_one_hand_off_max_llm_calls2.py": (
                             "one_hand_off is not fixed: the recorded counterexample still breaks it: false in the "
                             "state after step 2")})


# ---------------------------------------------------------------- the off-by-one patches: the proof rests on ADK's checks

@pytest.mark.verdict
def test_a_max_llm_calls_check_one_call_late_changes_the_verdicts(monkeypatch) -> None:
    max_llm_calls_off_by_one(monkeypatch)
    (run,) = check("coordinator.yaml", pins={"max_llm_calls": 3})
    assert (run.result, run.as_expected) == ("violated", False)
    broken = results(run)["most_model_calls"]
    assert broken.status == "violated"
    assert broken.message.startswith("reaches 4, more than at_most 3, after 4 transitions")


@pytest.mark.verdict
def test_a_max_iterations_check_one_iteration_late_changes_the_verdicts(monkeypatch) -> None:
    max_iterations_off_by_one(monkeypatch)
    (run,) = check("refine.yaml", pins={"max_llm_calls": 8, "max_iterations": 1})
    assert (run.result, run.as_expected) == ("violated", False)
    broken = results(run)["most_iterations_refinementloop"]
    assert broken.status == "violated"
    assert broken.message.startswith("reaches 2, more than at_most 1, after 3 transitions")


def test_adk_reads_a_max_llm_calls_of_0_or_less_as_no_limit() -> None:
    """The fact the declaration's refusal of max_llm_calls <= 0 rests on (ADK's RunConfig docs)."""
    for limit in (0, -1):
        manager = invocation_context._InvocationCostManager()
        for _ in range(1000):
            manager.increment_and_enforce_llm_calls_limit(RunConfig(max_llm_calls=limit))
    manager = invocation_context._InvocationCostManager()
    manager.increment_and_enforce_llm_calls_limit(RunConfig(max_llm_calls=1))
    with pytest.raises(invocation_context.LlmCallsLimitExceededError) as refused:
        manager.increment_and_enforce_llm_calls_limit(RunConfig(max_llm_calls=1))
    assert str(refused.value) == "Max number of llm calls limit of `1` exceeded"


# ---------------------------------------------------------------- trees written for the test

APP = '''\
from google.adk.agents import LlmAgent, LoopAgent, ParallelAgent, SequentialAgent
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from google.adk.tools.tool_context import ToolContext


def exit_loop(tool_context: ToolContext) -> dict:
    """Stop the loop."""
    tool_context.actions.escalate = True
    return {}


def lookup(order_id: str) -> dict:
    """Look an order up."""
    return {"order": order_id}


worker = LlmAgent(name="Worker", model="gemini-2.5-flash", tools=[lookup, exit_loop])
forever = LoopAgent(name="Forever", sub_agents=[worker])
left = LlmAgent(name="Left", model="gemini-2.5-flash")
right = LlmAgent(name="Right", model="gemini-2.5-flash")
fan_out = SequentialAgent(name="FanOut", sub_agents=[ParallelAgent(name="Both", sub_agents=[left, right]),
                                                     LlmAgent(name="Merger", model="gemini-2.5-flash")])
second = LoopAgent(name="Second", sub_agents=[LlmAgent(name="Other", model="gemini-2.5-flash")], max_iterations=2)
two_loops = SequentialAgent(name="TwoLoops", sub_agents=[LoopAgent(name="First", sub_agents=[
    LlmAgent(name="One", model="gemini-2.5-flash")], max_iterations=2), second])
twins = SequentialAgent(name="Twins", sub_agents=[LlmAgent(name="Same", model="m"),
                                                  LoopAgent(name="Loop", sub_agents=[LlmAgent(name="Twin", model="m")])])
no_model = SequentialAgent(name="Empty")


def cached(callback_context, llm_request):
    """After the first call, answer from a cache: the model is not asked."""
    if callback_context.state.get("asked"):
        return LlmResponse(content=types.Content(role="model", parts=[types.Part(text="cached")]))
    callback_context.state["asked"] = True
    return None


cache_loop = LoopAgent(name="CacheLoop", sub_agents=[LlmAgent(name="Cached", model="m", before_model_callback=cached)])
not_an_agent = 42
'''

FOREVER = """\
framework: adk
target: adk_app:forever
input: go
models:
  Worker:
    look: {tool: lookup, args: {order_id: A-1}}
    stop: {tool: exit_loop}
params:
  max_llm_calls: {min: 1, max: 3}
"""


@pytest.fixture
def app(tmp_path, monkeypatch):
    (tmp_path / "adk_app.py").write_text(APP)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def check_text(folder, text: str, **options) -> list:
    path = folder / "decl.yaml"
    path.write_text(text)
    return check_spec(load_spec(path), Options(**options))


@pytest.mark.verdict
def test_a_loop_without_max_iterations_ends_only_by_an_escalate_or_the_limit(app) -> None:
    runs = check_text(app, FOREVER)
    assert [(r.params["max_llm_calls"], r.result) for r in runs] == [(1, "proved"), (2, "proved"), (3, "proved")]
    for r in runs:
        found = results(r)
        assert found["limit_error"].message.startswith("possible: reached after")
        assert found["silent_stop_forever"].message == "impossible: no reachable state satisfies it"
        assert "most_iterations_forever" in maxima(r)
    # an escalate ends the loop, but not the worker's turn: its model is asked again
    last = results(runs[-1])
    assert maxima(runs[-1]) == {"most_model_calls": 3, "most_tool_runs": 3, "most_iterations_forever": 1}
    assert last["run_ends"].status == "holds"


@pytest.mark.verdict
def test_a_parallel_agents_branches_are_answered_one_model_call_at_a_time(app) -> None:
    (run,) = check_text(app, """\
framework: adk
target: adk_app:fan_out
input: go
models:
  Left: {a: left done}
  Right: {b: right done}
  Merger: {m: merged}
params:
  max_llm_calls: 3
""")
    assert (run.result, run.stats["states"]) == ("proved", 4)
    assert steps(results(run)["most_model_calls"].witness, "agent", "calls", "status") == [
        (None, "Left", 0, "running"), ("a", "Right", 1, "running"), ("b", "Merger", 2, "running"),
        ("m", "Merger", 3, "done")]


@pytest.mark.verdict
def test_answers_a_before_model_callback_gives_are_not_counted_and_the_loop_never_ends(app) -> None:
    """ADK checks max_llm_calls after the before_model_callback: a callback answering instead of
    the model costs nothing, and a loop without max_iterations runs on under any limit; the
    check stops at the call that never returns, naming it, and proves nothing."""
    (run,) = check_text(app, "framework: adk\ntarget: adk_app:cache_loop\ninput: go\nmodels:\n  Cached: {a: fresh}\n"
                             "params:\n  max_llm_calls: 2\n", call_timeout=1.0)
    assert run.result == "violated"
    found = results(run)
    assert found["bound_code"].status == "violated"
    assert found["bound_code"].message.startswith(
        "a call into the user's code did not return within --call-timeout 1 s while running the bound code for "
        "action cached (cached_says=a)")
    assert found["run_ends"].status == "unknown"


# ---------------------------------------------------------------- bad declarations: exit 2, file and line

DECLARATION = """\
framework: adk
target: adk_app:forever
input: go
models:
  Worker:
    look: {tool: lookup, args: {order_id: A-1}}
    stop: {tool: exit_loop}
params:
  max_llm_calls: {min: 1, max: 2}
"""


@pytest.mark.parametrize("change, line, message", [
    ((":forever", ":not_an_agent"), 2,
     "adk_app:not_an_agent is a int, not an ADK agent (google.adk.agents.BaseAgent)"),
    ((":forever", ":no_model"), 2, "adk_app:no_model's tree has no LlmAgent: no model is ever called"),
    ((":forever", ":frever"), 2, "module adk_app has no 'frever'"),
    (("  Worker:\n", "  Wroker:\n"), 5, "models: no LlmAgent named 'Wroker' in the tree (its LlmAgents: Worker)"),
    (("{tool: lookup,", "{tool: look_up,"), 6,
     "answer look of Worker calls the tool 'look_up', which Worker does not have (its tools: lookup, exit_loop)"),
    (("    stop: {tool: exit_loop}", "    stop: {transfer: Worker}"), 7,
     "answer stop of Worker transfers to 'Worker', which Worker cannot transfer to (its transfer targets: none)"),
    (("    stop: {tool: exit_loop}", "    stop: [[{tool: exit_loop}]]"), 7,
     "answer stop of Worker must be the model's text, {tool: NAME, args: {...}}, {transfer: AGENT}, or a list "
     "of those (one model call making them all)"),
    (("    stop: {tool: exit_loop}", "    stop: {tool: exit_loop, args: [1]}"), 7,
     "answer stop of Worker: args must be a mapping of the tool's arguments"),
    (("  max_llm_calls: {min: 1, max: 2}", "  max_llm_calls: {min: 0, max: 2}"), 9,
     "params: max_llm_calls must be 1 or more: ADK reads 0 or less as no limit at all"),
    (("  max_llm_calls: {min: 1, max: 2}", "  llm_calls: {min: 1, max: 2}"), 8,
     "params: an adk declaration needs max_llm_calls (RunConfig's limit"),
    (("input: go\n", "input: [go]\n"), 3, "input must be the user's message, a text"),
    (("input: go\n", ""), 1, "a adk declaration needs the key 'input'"),
    (("input: go\n", "input: go\ntools: {}\n"), 4, "unknown key in a adk declaration"),
    (("  Worker:\n    look: {tool: lookup, args: {order_id: A-1}}\n    stop: {tool: exit_loop}\n", "  Worker: {}\n"),
     5, "models: Worker needs a mapping of outcome labels to outcomes"),
    (("    look: {tool", "    look it up: {tool"), 6, "an outcome label of Worker must be a plain identifier"),
    (("    stop: {tool: exit_loop}", "    stop: 42"), 7,
     "answer stop of Worker must be the model's text, {tool: NAME, args: {...}}, {transfer: AGENT}, or a list "
     "of those (one model call making them all)"),
    (("    stop: {tool: exit_loop}", "    stop: {transfer: Nobody}"), 7,
     "answer stop of Worker transfers to 'Nobody', which Worker cannot transfer to (its transfer targets: none)"),
])
def test_a_bad_declaration_is_refused_at_its_line(check, tmp_path, change, line, message) -> None:
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "specs" / "adk_app.py").write_text(APP)
    old, new = change
    assert old in DECLARATION
    ran = check(DECLARATION.replace(old, new, 1))
    sys.modules.pop("adk_app", None)
    assert ran.code == 2, ran.out
    assert ran.out == ""
    assert f"bad.yaml:{line}: {message}" in ran.err
    assert "Traceback" not in ran.err


@pytest.mark.parametrize("target, params, line, message", [
    ("two_loops", "  max_iterations: 2\n", 9,
     "params: max_iterations sets the max_iterations of the one LoopAgent, and the tree has 2: name the loop's own "
     "param, max_iterations_SLUG (e.g. max_iterations_first)"),
    ("twins", "", 2, "two agents of adk_app:twins's tree are named 'Same' and 'Same': haltproof names an agent's "
                     "action and vars by its name, so the names must differ in more than case and punctuation"),
])
def test_a_tree_the_params_do_not_fit_is_refused_at_its_line(check, tmp_path, target, params, line, message) -> None:
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "specs" / "adk_app.py").write_text(APP.replace('name="Twin"', 'name="Same"'))
    models = {"two_loops": "  One: {a: one}\n  Other: {a: other}\n", "twins": "  Same: {a: same}\n"}[target]
    ran = check(f"framework: adk\ntarget: adk_app:{target}\ninput: go\nmodels:\n{models}params:\n"
                f"  max_llm_calls: 2\n{params}")
    sys.modules.pop("adk_app", None)
    assert ran.code == 2, ran.out
    assert f"bad.yaml:{line}: {message}" in ran.err
    assert "Traceback" not in ran.err


def test_an_unsupported_adk_version_is_named_at_the_framework_line(check, tmp_path, monkeypatch) -> None:
    import importlib.metadata
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "specs" / "adk_app.py").write_text(APP)
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "1.39.1")
    ran = check(DECLARATION)
    assert ran.code == 2, ran.out
    assert ran.err.endswith("bad.yaml:1: haltproof.frameworks.adk supports google-adk >=2.2,<3; "
                            "google-adk 1.39.1 is installed\n")


# ---------------------------------------------------------------- the docs page

@pytest.mark.slow
def test_the_docs_page_shows_the_shipped_examples_and_their_command(cli, monkeypatch) -> None:
    doc = (ROOT / "docs" / "how-to" / "adk.md").read_text()
    for name in ("refine.py", "refine.yaml", "coordinator.py", "coordinator.yaml"):
        fence = "python" if name.endswith(".py") else "yaml"
        assert f"```{fence}\n" + (EXAMPLE / name).read_text() + "```" in doc
    assert "cd examples/frameworks/adk && haltproof check refine.yaml coordinator.yaml" in doc
    monkeypatch.chdir(EXAMPLE)
    ran = cli("check", "refine.yaml", "coordinator.yaml")
    assert ran.code == 0, ran.out
    assert ran.out.endswith("11 runs: 0 proved, 11 violated as expected, 0 failed, 0 incomplete -> proved\n")
    assert "exits 0 (`11 runs: 0 proved, 11 violated as expected`)" in doc
    for line in ("refine.yaml max_iterations=2 most_model_calls: max_llm_calls = 5, 6, 7, 8 allows at most 5, 6, 6, 6 "
                 "calls",
                 "refine.yaml max_llm_calls=5 most_iterations_refinementloop: max_iterations = 1, 2 allows at most 1, 2 "
                 "iterations_refinementloop",
                 "refine.yaml max_iterations=2: limit_error unreachable from max_llm_calls=6 on (swept 5..8; reachable "
                 "at max_llm_calls=5)"):
        assert line in ran.out
    assert "refine.yaml max_iterations=2 most_model_calls: max_llm_calls = 5, 6, 7, 8 allows at most 5, 6, 6, 6" in doc
