"""The runtime guard's framework hooks (frameworks/*_guard.py), against the real libraries offline:
per framework a scripted run that leaves what was proved is stopped at that step with its decision
packet (and what it would have done next never runs), and a conforming run is untouched (the same
output as without the guard). The guards are written from the examples' declarations: exploring
the three live takes ~20 s, so the tests that use them are slow."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("pydantic_ai")
pytest.importorskip("agents")

from haltproof.cli.guard import write_guard
from haltproof.frameworks.guard_hooks import state_of
from haltproof.guard import Follower, Guard, GuardStopped

from conftest import ROOT

EXAMPLES = ROOT / "examples" / "frameworks"
LANGGRAPH, PYDANTIC_AI, OPENAI_AGENTS = EXAMPLES / "langgraph", EXAMPLES / "pydantic_ai", EXAMPLES / "openai_agents"
GUARDS = {"react": (LANGGRAPH / "react.yaml", {"recursion_limit": 4}, False),
          "weather": (PYDANTIC_AI / "weather.yaml", {"request_limit": 4, "tool_calls_limit": 2, "retries": 2}, True),
          "support": (OPENAI_AGENTS / "support.yaml", {"max_turns": 4}, False)}


@pytest.fixture(scope="module")
def guards(tmp_path_factory) -> dict[str, Path]:
    """Each example's guard, written as `haltproof guard` writes it (the example's modules forgotten after)."""
    folder = tmp_path_factory.mktemp("guards")
    path = list(sys.path)
    out = {}
    try:
        for name, (spec, pins, violated) in GUARDS.items():
            out[name] = folder / f"{name}.json"
            write_guard(str(spec), pins, str(out[name]), allow_violated=violated)
    finally:
        for name in GUARDS:
            sys.modules.pop(name, None)
        sys.path[:] = path
    return out


@pytest.fixture
def example(monkeypatch):
    """Import an example's module fresh, from its folder; forgotten after."""
    names: list[str] = []

    def load(folder: Path, name: str):
        names.append(name)
        monkeypatch.syspath_prepend(str(folder))
        monkeypatch.delitem(sys.modules, name, raising=False)
        return __import__(name)
    yield load
    for name in names:
        sys.modules.pop(name, None)


# ---------------------------------------------------------------- LangGraph


def _search(i: int):
    from langchain_core.messages import AIMessage
    return AIMessage("", tool_calls=[{"name": "search", "args": {"query": "haltproof"}, "id": f"call_{i}"}])


def _chat(*answers):
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    return GenericFakeChatModel(messages=iter(answers))


QUESTION = {"messages": [{"role": "user", "content": "What is haltproof?"}]}


def _shown(out: dict) -> list[tuple]:
    """The messages of a graph's output, without the ids a run stamps on them."""
    return [(m.type, m.content, [(c["name"], c["args"]) for c in getattr(m, "tool_calls", [])]) for m in out["messages"]]


@pytest.mark.slow
@pytest.mark.verdict
def test_langgraph_a_conforming_run_is_untouched(guards, example) -> None:
    from langchain_core.messages import AIMessage
    from haltproof.frameworks.langgraph_guard import invoke_guarded
    react = example(LANGGRAPH, "react")
    guard = Guard.load(guards["react"], spec=LANGGRAPH / "react.yaml")
    graph = react.build_graph(_chat(_search(1), AIMessage("Here is the answer.")))
    guarded = invoke_guarded(graph, QUESTION, guard, {"recursion_limit": 4})
    plain = react.build_graph(_chat(_search(1), AIMessage("Here is the answer."))).invoke(QUESTION,
                                                                                            {"recursion_limit": 4})
    assert _shown(guarded) == _shown(plain) == [
        ("human", "What is haltproof?", []), ("ai", "", [("search", {"query": "haltproof"})]),
        ("tool", "3 results for haltproof", []), ("ai", "Here is the answer.", [])]
    assert guard.ended and guard.taken == 3 and guard.state["status"] == "done"


@pytest.mark.slow
@pytest.mark.verdict
def test_langgraph_a_run_past_the_proved_limit_is_stopped_before_its_third_search(guards, example) -> None:
    """Proved with recursion_limit 4 (at most 2 tool runs); deployed with 10 and a model that keeps
    searching: the superstep that asks for a third search leaves the model, and the tools node never
    runs a third time."""
    from haltproof.frameworks.langgraph_guard import invoke_guarded
    react = example(LANGGRAPH, "react")
    searched: list[str] = []
    real = react.search.func
    react.search.func = lambda query: searched.append(query) or real(query)
    guard = Guard.load(guards["react"])
    with pytest.raises(GuardStopped) as stop:
        invoke_guarded(react.build_graph(_chat(*(_search(i) for i in range(10)))), QUESTION, guard,
                       {"recursion_limit": 10})
    here = "{next: agent, tasks: 1, steps: 4, status: running, runs_agent: 2, runs_tools: 2, tool_runs: 2, model_calls: 2}"
    there = "{next: tools, tasks: 1, steps: 5, status: running, runs_agent: 3, runs_tools: 2, tool_runs: 2, model_calls: 3}"
    reason = f"model escape at step 5: {there} is not a state the model reaches from {here} after step with {{}}"
    assert stop.value.decision.to_dict() == {
        "verdict": "deny", "event": "after", "step": 5, "reason": reason, "action": "step", "choices": {},
        "violated": [], "doomed": [], "endangered": [], "continuation": [], "allowed": [], "escape": True}
    assert str(stop.value) == f"haltproof guard: deny at step 5 (after step): {reason}"
    assert searched == ["haltproof", "haltproof"]


# ---------------------------------------------------------------- Pydantic AI


def _function_model(*responses):
    from pydantic_ai.models.function import FunctionModel
    left = iter(responses)
    return FunctionModel(lambda messages, info: next(left))


def _forecast():
    from pydantic_ai.messages import ModelResponse, ToolCallPart
    return ModelResponse(parts=[ToolCallPart("get_forecast", {"city": "Paris"})])


def _answer(text: str = "Sunny in Paris, 24 °C."):
    from pydantic_ai.messages import ModelResponse, TextPart
    return ModelResponse(parts=[TextPart(text)])


def _weather_labels(weather_module) -> dict:
    from haltproof.frameworks.pydantic_ai_guard import labels_of
    return labels_of(str(PYDANTIC_AI / "weather.yaml"))


def _approve_all(decision) -> bool:
    return True


@pytest.mark.slow
@pytest.mark.verdict
def test_pydantic_ai_a_conforming_run_is_untouched(guards, example) -> None:
    from haltproof.frameworks.pydantic_ai_guard import run_guarded
    weather = example(PYDANTIC_AI, "weather")
    labels = _weather_labels(weather)
    guard = Guard.load(guards["weather"], spec=PYDANTIC_AI / "weather.yaml")
    guarded = asyncio.run(run_guarded(weather.agent, "What is the weather?", guard, labels=labels,
                                      approve=_approve_all, model=_function_model(_forecast(), _answer("Sunny.")),
                                      usage_limits=weather.LIMITS))
    plain = weather.agent.run_sync("What is the weather?", model=_function_model(_forecast(), _answer("Sunny.")),
                                   usage_limits=weather.LIMITS)
    assert guarded.output == plain.output == "Sunny."
    assert [m.parts[0].part_kind for m in guarded.all_messages()] == [m.parts[0].part_kind for m in plain.all_messages()]
    assert guard.ended and guard.state == {"next": "end", "response": "answer", "requests": 2, "tool_calls": 1,
                                           "tool_runs": 1, "tool_retries": 0, "output_retries": 0, "status": "done"}


@pytest.mark.slow
@pytest.mark.verdict
def test_pydantic_ai_without_an_approver_an_endangered_step_stops_the_run(guards, example) -> None:
    """Fail-closed: the guard of the known violation asks approval for the first request (some
    continuation breaks the property); with no approver, the run stops before the model is asked."""
    from haltproof.frameworks.pydantic_ai_guard import run_guarded
    weather = example(PYDANTIC_AI, "weather")
    from pydantic_ai.models.function import FunctionModel
    asked: list[int] = []
    model = FunctionModel(lambda messages, info: asked.append(1) or _answer())
    with pytest.raises(GuardStopped) as stop:
        asyncio.run(run_guarded(weather.agent, "q", Guard.load(guards["weather"]), labels=_weather_labels(weather),
                                model=model, usage_limits=weather.LIMITS))
    d = stop.value.decision
    assert (d.verdict, d.event, d.step, d.action, d.reason) == (
        "approval_required", "before", 1, "request",
        "some continuation of it breaks tool_runs_within_the_tool_calls_limit")
    assert d.endangered == ("tool_runs_within_the_tool_calls_limit",) and asked == []


@pytest.mark.slow
@pytest.mark.verdict
def test_pydantic_ai_a_third_forecast_is_stopped_before_the_tool_runs(guards, example, monkeypatch) -> None:
    """weather's known violation: tool_calls_limit=2 counts successful calls, so after a timeout the
    tool runs a third time. The guard denies the request that asks for it: every continuation then
    breaks tool_runs <= tool_calls_limit; the service never serves a second forecast."""
    from haltproof.frameworks.pydantic_ai_guard import run_guarded
    weather = example(PYDANTIC_AI, "weather")
    labels = _weather_labels(weather)
    served: list[str] = []

    def service(city: str) -> str:
        if len(served) == 0 and not getattr(service, "failed", False):
            service.failed = True
            raise weather.ServiceTimeout(city)
        served.append(city)
        return f"Sunny in {city}"
    monkeypatch.setattr(weather, "fetch_forecast", service)
    with pytest.raises(GuardStopped) as stop:
        asyncio.run(run_guarded(weather.agent, "q", Guard.load(guards["weather"]), labels=labels, approve=_approve_all,
                                model=_function_model(_forecast(), _forecast(), _forecast(), _answer()),
                                usage_limits=weather.LIMITS))
    assert stop.value.decision.to_dict() == {
        "verdict": "deny", "event": "after", "step": 5,
        "reason": "from here no continuation keeps tool_runs_within_the_tool_calls_limit",
        "action": "request", "choices": {"model": "forecast"}, "violated": [],
        "doomed": ["tool_runs_within_the_tool_calls_limit"], "endangered": [],
        "continuation": [{"action": "tools", "choices": {"get_forecast": "ok"}, "rule": None,
                          "state": {"next": "model_request", "response": "forecast", "requests": 3, "tool_calls": 2,
                                    "tool_runs": 3, "tool_retries": 0, "output_retries": 0, "status": "running"}}],
        "allowed": [], "escape": False}
    assert served == ["Paris"]


@pytest.mark.slow
@pytest.mark.verdict
def test_pydantic_ai_a_response_of_no_declared_shape_is_stopped_before_its_tools_run(guards, example,
                                                                                  monkeypatch) -> None:
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from haltproof.frameworks.pydantic_ai_guard import run_guarded
    weather = example(PYDANTIC_AI, "weather")
    served: list[str] = []
    monkeypatch.setattr(weather, "fetch_forecast", lambda city: served.append(city) or "Sunny")
    odd = ModelResponse(parts=[TextPart("Let me look."), ToolCallPart("get_forecast", {"city": "Paris"})])
    with pytest.raises(GuardStopped) as stop:
        asyncio.run(run_guarded(weather.agent, "q", Guard.load(guards["weather"]), labels=_weather_labels(weather),
                                approve=_approve_all, model=_function_model(odd, _answer()),
                                usage_limits=weather.LIMITS))
    d = stop.value.decision
    assert (d.verdict, d.event, d.step, d.escape) == ("deny", "after", 1, True)
    assert d.reason.startswith("model escape at step 1: {next: call_tools, response: <undeclared>, requests: 1, ")
    assert served == []


def test_pydantic_ai_responses_are_named_by_the_declared_label_of_their_shape(example) -> None:
    from haltproof.frameworks.pydantic_ai_guard import UNDECLARED, label_of
    from pydantic_ai.messages import ModelResponse, ToolCallPart
    weather = example(PYDANTIC_AI, "weather")
    labels = _weather_labels(weather)
    assert label_of(_forecast(), labels) == "forecast"
    assert label_of(_answer("Rain all day."), labels) == "answer"
    assert label_of(ModelResponse(parts=[ToolCallPart("get_news", {})]), labels) == UNDECLARED
    two = {"paris": _answer("Paris"), "rome": _answer("Rome")}
    assert label_of(_answer("Rome"), two) == "rome" and label_of(_answer("Oslo"), two) == UNDECLARED


# ---------------------------------------------------------------- OpenAI Agents SDK


class _Payments:
    def __init__(self) -> None:
        self.refunds = 0

    async def refund(self, customer_id: str, order_id: str) -> str:
        self.refunds += 1
        return f"R-{self.refunds}"


def _support_config(refunds: int):
    from agents import RunConfig
    from agents.testing import ScriptedModel, assistant_message, function_call
    steps = [[function_call("transfer_to_refund_agent", {}, call_id="handoff")]]
    steps += [[function_call("issue_refund", {"order_id": "A-17"}, call_id=f"refund_{i}")] for i in range(refunds)]
    steps += [[assistant_message("Your refund is on its way.")]]
    return RunConfig(model=ScriptedModel(steps), tracing_disabled=True)


def _support_labels() -> dict:
    from haltproof.frameworks.openai_agents_guard import labels_of
    return labels_of(str(OPENAI_AGENTS / "support.yaml"))


@pytest.mark.slow
@pytest.mark.verdict
def test_openai_agents_a_conforming_run_is_untouched(guards, example) -> None:
    from agents import Runner, set_tracing_disabled
    from haltproof.frameworks.openai_agents_guard import run_guarded
    set_tracing_disabled(True)
    support = example(OPENAI_AGENTS, "support")
    labels = _support_labels()
    guard = Guard.load(guards["support"], spec=OPENAI_AGENTS / "support.yaml")
    paid, plain_paid = _Payments(), _Payments()
    guarded = asyncio.run(run_guarded(support.triage_agent, "Refund A-17", guard, labels=labels, max_turns=4,
                                      run_config=_support_config(1), context=support.SupportContext("C-42", paid)))
    plain = asyncio.run(Runner.run(support.triage_agent, "Refund A-17", max_turns=4, run_config=_support_config(1),
                                   context=support.SupportContext("C-42", plain_paid)))
    assert guarded.final_output == plain.final_output == "Your refund is on its way."
    assert [i.type for i in guarded.new_items] == [i.type for i in plain.new_items]
    assert paid.refunds == plain_paid.refunds == 1
    assert guard.ended and guard.state == {"agent": "Refund agent", "status": "done", "turns": 3, "tool_runs": 1,
                                           "handoffs": 1, "runs_issue_refund": 1}


@pytest.mark.slow
@pytest.mark.verdict
def test_openai_agents_a_second_refund_is_stopped_before_the_tool_runs(guards, example) -> None:
    from agents import set_tracing_disabled
    from haltproof.frameworks.openai_agents_guard import run_guarded
    set_tracing_disabled(True)
    support = example(OPENAI_AGENTS, "support")
    paid = _Payments()
    with pytest.raises(GuardStopped) as stop:
        asyncio.run(run_guarded(support.triage_agent, "Refund A-17", Guard.load(guards["support"]),
                                labels=_support_labels(), max_turns=4, run_config=_support_config(2),
                                context=support.SupportContext("C-42", paid)))
    assert stop.value.decision.to_dict() == {
        "verdict": "deny", "event": "before", "step": 3,
        "reason": "refund_agent with {refund_agent_says: refund} is not a transition of the model here",
        "action": "refund_agent", "choices": {"refund_agent_says": "refund"}, "violated": [], "doomed": [],
        "endangered": [], "continuation": [],
        "allowed": [{"action": "refund_agent", "choices": {"refund_agent_says": "answer",
                                                          "payments_refund_returns": "refunded"}},
                    {"action": "refund_agent", "choices": {"refund_agent_says": "answer",
                                                          "payments_refund_returns": "declined"}}],
        "escape": False}
    assert paid.refunds == 1


@pytest.mark.slow
@pytest.mark.verdict
def test_openai_agents_an_answer_of_no_declared_shape_is_stopped_before_the_sdk_acts(guards, example) -> None:
    """Two refunds in one answer: no declared answer of the refund agent has that shape, so the turn
    is a model escape, denied before either refund runs."""
    from agents import RunConfig, set_tracing_disabled
    from agents.testing import ScriptedModel, function_call
    from haltproof.frameworks.openai_agents_guard import run_guarded
    set_tracing_disabled(True)
    support = example(OPENAI_AGENTS, "support")
    paid = _Payments()
    twice = [function_call("issue_refund", {"order_id": "A-17"}, call_id=f"refund_{i}") for i in range(2)]
    model = ScriptedModel([[function_call("transfer_to_refund_agent", {}, call_id="handoff")], twice])
    with pytest.raises(GuardStopped) as stop:
        asyncio.run(run_guarded(support.triage_agent, "Refund A-17", Guard.load(guards["support"]),
                                labels=_support_labels(), max_turns=4, context=support.SupportContext("C-42", paid),
                                run_config=RunConfig(model=model, tracing_disabled=True)))
    assert stop.value.decision.to_dict() == {
        "verdict": "deny", "event": "before", "step": 2,
        "reason": "model escape at step 2: Refund agent's model answered (tool issue_refund, tool issue_refund), "
                  "none of its declared answers (refund, answer)",
        "action": "refund_agent", "choices": {}, "violated": [], "doomed": [], "endangered": [], "continuation": [],
        "allowed": [], "escape": True}
    assert paid.refunds == 0


@pytest.mark.slow
@pytest.mark.verdict
def test_openai_agents_without_labels_a_drift_is_caught_as_a_model_escape(guards, example) -> None:
    """No labels: the answer is the environment's, so the second refund runs, and the state after it
    (two refunds) is no state of the model: stopped when the next model call starts."""
    from agents import set_tracing_disabled
    from haltproof.frameworks.openai_agents_guard import run_guarded
    set_tracing_disabled(True)
    support = example(OPENAI_AGENTS, "support")
    paid = _Payments()
    with pytest.raises(GuardStopped) as stop:
        asyncio.run(run_guarded(support.triage_agent, "Refund A-17", Guard.load(guards["support"]), max_turns=4,
                                run_config=_support_config(2), context=support.SupportContext("C-42", paid)))
    d = stop.value.decision
    assert (d.verdict, d.event, d.step, d.escape) == ("deny", "after", 3, True)
    assert d.reason.startswith("model escape at step 3: {agent: Refund agent, status: running, turns: 3, "
                               "tool_runs: 2, handoffs: 1, runs_issue_refund: 2} is not a state")
    assert paid.refunds == 2


# ---------------------------------------------------------------- shared


@pytest.mark.slow
def test_a_guard_of_another_kind_of_run_is_named(guards) -> None:
    guard = Guard.load(guards["support"])
    with pytest.raises(ValueError) as err:
        state_of(guard, {"next": "agent", "steps": 0})
    assert str(err.value) == (
        "the guard of support has the var(s) agent, status, turns, tool_runs, handoffs, runs_issue_refund, which "
        "this framework's run does not show (it shows next, steps): was the guard made from this framework's "
        "declaration?")


@pytest.mark.slow
def test_an_approver_is_asked_only_for_approval_required(guards) -> None:
    asked = []
    follower = Follower(Guard.load(guards["weather"]), approve=lambda d: asked.append(d.verdict) or False)
    with pytest.raises(GuardStopped):
        follower.before("request")
    assert asked == ["approval_required"] and [d.verdict for d in follower.decisions] == ["approval_required"]


# ---------------------------------------------------------------- the examples, as docs/how-to/guard.md runs them

DOC_RUNS = [(LANGGRAPH, "haltproof guard react.yaml -p recursion_limit=4 -o react_guard.json",
             "python guarded_react.py react_guard.json", "drifted: haltproof guard: deny at step 5 (after step): "),
            (PYDANTIC_AI, "haltproof guard weather.yaml -p request_limit=4 -p tool_calls_limit=2 -p retries=2 "
                          "--allow-violated -o weather_guard.json", "python guarded_weather.py weather_guard.json",
             "a timeout, then three forecasts: haltproof guard: deny at step 5 (after request): from here no "
             "continuation keeps tool_runs_within_the_tool_calls_limit (the service ran 1 time(s) after the timeout)"),
            (OPENAI_AGENTS, "haltproof guard support.yaml -p max_turns=4 -o support_guard.json",
             "python guarded_support.py support_guard.json",
             "a second refund asked: haltproof guard: deny at step 3 (before refund_agent): refund_agent with "
             "{refund_agent_says: refund} is not a transition of the model here (1 refund made)")]


@pytest.mark.slow
@pytest.mark.parametrize("folder, export, run, stopped", DOC_RUNS, ids=["langgraph", "pydantic_ai", "openai_agents"])
def test_the_guarded_examples_run_as_the_docs_say(folder, export, run, stopped, tmp_path) -> None:
    doc = (ROOT / "docs" / "how-to" / "guard.md").read_text()
    assert f"cd examples/frameworks/{folder.name}\n{export}\n{run}\n" in doc
    work = tmp_path / folder.name
    shutil.copytree(folder, work, ignore=shutil.ignore_patterns("__pycache__"))
    bin_dir = Path(sys.executable).parent
    for command in (export, run):
        argv = command.split()
        argv[0] = str(bin_dir / argv[0]) if argv[0] == "haltproof" else sys.executable
        done = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    assert stopped in done.stdout
