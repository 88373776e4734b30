"""examples/frameworks/openai_agents: real Agents SDK agents, proved to stop by the SDK's own max_turns.

The agents run in the SDK's own `Runner.run`, offline, with the SDK's own `ScriptedModel`
answering each model call; `max_turns` is enforced by the SDK itself. Patching the SDK's
turn check to be off by one must change the verdicts (issue 14): the proof rests on the
framework's code, not on a copy of its logic.
"""

from __future__ import annotations

import importlib.metadata

import __future__
import asyncio
import gc
import inspect
import sys
import textwrap

import pytest

pytest.importorskip("agents")

from agents import run as sdk_run

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.frameworks import openai_agents as ho
from haltproof.machine.live import Driver
from haltproof.machine.spec import load_spec

from conftest import ROOT
from framework_helpers import fresh_modules, results

EXAMPLE = ROOT / "examples" / "frameworks" / "openai_agents"
MODULES = ("triage", "triage_adapter", "travel", "travel_adapter", "handing_back", "parallel", "streamed_adapters",
           "handled")


@pytest.fixture(autouse=True)
def _in_the_example(monkeypatch):
    """Run from the example's folder; its modules are imported fresh and forgotten."""
    monkeypatch.chdir(EXAMPLE)
    monkeypatch.syspath_prepend(str(EXAMPLE))
    with fresh_modules(monkeypatch, MODULES):
        yield


def check(name: str, text: str | None = None, tmp_path=None, **options) -> list:
    """Check an example spec, or `text` (an edited copy of it) written beside it in tmp_path."""
    if text is None:
        return check_spec(load_spec(EXAMPLE / name), Options(**options))
    spec = tmp_path / name
    spec.write_text(text)
    return check_spec(load_spec(spec), Options(**options))


def travel_steps(trace) -> list[tuple]:
    return [(s.choices.get("model"), s.state["turns"], s.state["tool_runs"], s.state["booked"], s.state["status"])
            for s in trace.steps]


def triage_steps(trace) -> list[tuple]:
    return [(next(iter(s.choices.values()), None), s.state["agent"], s.state["turns"], s.state["handoffs"],
             s.state["status"]) for s in trace.steps]


def one_turn_late(fn):
    """`fn` recompiled from the SDK's own source with its one turn check, `current_turn >
    max_turns`, made one turn late (in the module's globals, so it runs as the original does)."""
    source = textwrap.dedent(inspect.getsource(fn))
    assert source.count("current_turn > max_turns") == 1
    late = source.replace("current_turn > max_turns", "current_turn > max_turns + 1")
    code = compile(late, inspect.getsourcefile(fn), "exec", flags=__future__.annotations.compiler_flag,
                   dont_inherit=True)
    made: dict = {}
    exec(code, fn.__globals__, made)
    return made[fn.__name__]


def max_turns_off_by_one(monkeypatch) -> None:
    """Runner.run's turn check (in `AgentRunner._run_impl`) one turn late."""
    monkeypatch.setattr(sdk_run.AgentRunner, "_run_impl", one_turn_late(sdk_run.AgentRunner._run_impl))


def streamed_max_turns_off_by_one(monkeypatch) -> None:
    """Runner.run_streamed's own copy of the turn check (its streaming loop, `start_streaming`) one
    turn late, where `agents.run` calls it from."""
    monkeypatch.setattr(sdk_run, "start_streaming", one_turn_late(sdk_run.start_streaming))


def streamed(name: str, tmp_path, monkeypatch) -> str:
    """An example spec bound to a subclass of its adapter that runs Runner.run_streamed."""
    adapter = {"travel_adapter.yaml": ("travel_adapter", "TravelAdapter"), "triage_adapter.yaml": ("triage_adapter", "TriageAdapter")}
    module, cls = adapter[name]
    (tmp_path / "streamed_adapters.py").write_text(
        f"from {module} import {cls}\n\n\nclass Streamed({cls}):\n    streamed = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("streamed_adapters", None)
    return (EXAMPLE / name).read_text().replace(f"bind: {module}:{cls}", "bind: streamed_adapters:Streamed")


def test_the_travel_agent_stops_for_every_max_turns() -> None:
    runs = check("travel_adapter.yaml")
    assert [(r.params["max_turns"], r.result, r.as_expected, r.binding, r.stats["states"]) for r in runs] == [
        (1, "violated", True, "replay", 5), (2, "violated", True, "replay", 12), (3, "violated", True, "replay", 22),
        (4, "violated", True, "replay", 35), (5, "violated", True, "replay", 51)]
    for run in runs:
        n = run.params["max_turns"]
        assert {k: (b["value"], b["exact"]) for k, b in run.bounds.items()} == {
            "transitions": (n, True), "model_calls": (n, True), "tool_runs": (n, True), "bookings": (n, True)}
        assert {p.name for p in run.properties if p.status == "violated"} == {"no_booking_lost_to_the_limit"}


def test_max_turns_allows_exactly_max_turns_model_calls_and_the_last_tool_still_runs() -> None:
    """A limit of 3 allows 3 model calls; the third one's tool call runs (a room is booked) and
    only then does the SDK raise MaxTurnsExceeded: the user gets the error, not the booking."""
    (run,) = check("travel_adapter.yaml", pins={"max_turns": 3})
    assert travel_steps(results(run)["can_hit_the_limit"].witness) == [
        (None, 0, 0, 0, "running"), ("weather", 1, 1, 0, "running"), ("weather", 2, 2, 0, "running"),
        ("weather", 3, 3, 0, "limit")]
    lost = results(run)["no_booking_lost_to_the_limit"]
    assert (lost.status, lost.expected) == ("violated", True)
    assert travel_steps(lost.trace) == [
        (None, 0, 0, 0, "running"), ("weather", 1, 1, 0, "running"), ("weather", 2, 2, 0, "running"),
        ("book", 3, 3, 1, "limit")]
    assert travel_steps(results(run)["a_full_hotel_ends_the_run"].witness) == [
        (None, 0, 0, 0, "running"), ("book_full_hotel", 1, 1, 0, "no_rooms")]


def test_the_triage_agents_stop_and_a_handoff_is_a_turn_of_its_own() -> None:
    runs = check("triage_adapter.yaml")
    assert [(r.params["max_turns"], r.result, r.as_expected, r.stats["states"]) for r in runs] == [
        (2, "violated", True, 8), (3, "violated", True, 14), (4, "violated", True, 23), (5, "violated", True, 35)]
    assert [(r.bounds["model_calls"]["value"], r.bounds["handoffs"]["value"], r.bounds["refunds"]["value"])
            for r in runs] == [(2, 2, 1), (3, 3, 2), (4, 4, 3), (5, 5, 4)]
    two = results(runs[0])
    # the refund agent hands the run back in the last turn: it is the triage agent's, and over
    assert triage_steps(two["a_handoff_gets_an_answer"].trace) == [
        (None, "Triage agent", 0, 0, "running"), ("to_refunds", "Refund agent", 1, 1, "running"),
        ("to_triage", "Triage agent", 2, 2, "limit")]
    assert triage_steps(two["never_back_to_triage"].trace)[-1] == ("to_triage", "Triage agent", 2, 2, "limit")
    assert triage_steps(two["can_answer"].witness) == [
        (None, "Triage agent", 0, 0, "running"), ("answer", "Triage agent", 1, 0, "done")]


def test_what_the_user_sees_is_the_final_output_of_the_agent_that_answered(tmp_path) -> None:
    text = (EXAMPLE / "triage_adapter.yaml").read_text().replace("\nmeasures:", (
        "\n  billing_answers:\n    reachable: agent == 'Billing agent' and output == 'Your invoice is attached.'"
        "\n\nmeasures:"))
    (run,) = check("triage_adapter.yaml", text, tmp_path, pins={"max_turns": 2})
    witness = results(run)["billing_answers"].witness
    assert [(s.state["agent"], s.state["status"], s.state["output"]) for s in witness.steps] == [
        ("Triage agent", "running", ""), ("Billing agent", "running", ""),
        ("Billing agent", "done", "Your invoice is attached.")]


def test_parallel_tool_calls_make_max_turns_no_bound_on_tool_runs(tmp_path, monkeypatch) -> None:
    """An answer that is a list is one turn calling several tools at once: the SDK runs them all,
    so max_turns bounds the model calls, and two calls a turn make 2 * max_turns tool runs."""
    (tmp_path / "parallel.py").write_text(
        "from travel_adapter import TravelAdapter\n"
        "from haltproof.frameworks.openai_agents import tool_call\n\n\n"
        "class Parallel(TravelAdapter):\n"
        "    scripted = {'model': {**TravelAdapter.scripted['model'],\n"
        "                          'weather_twice': [tool_call('get_weather', city='Paris'),\n"
        "                                            tool_call('get_weather', city='Lisbon')]}}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    text = (EXAMPLE / "travel_adapter.yaml").read_text().replace("bind: travel_adapter:TravelAdapter", "bind: parallel:Parallel")
    text = text.replace("  tool_runs: {type: int, min: 0, max: max_turns + 1", "  tool_runs: {type: int, min: 0, max: 2 * max_turns")
    text = text.replace("      model: [weather, book, book_full_hotel, answer]",
                        "      model: [weather, weather_twice, book, book_full_hotel, answer]")
    (run,) = check("travel_adapter.yaml", text, tmp_path, pins={"max_turns": 2})
    broken = results(run)["at_most_max_turns_tool_runs"]
    assert broken.status == "violated"
    assert travel_steps(broken.trace) == [
        (None, 0, 0, 0, "running"), ("weather", 1, 1, 0, "running"), ("weather_twice", 2, 3, 0, "limit")]
    assert results(run)["at_most_max_turns_model_calls"].status == "holds"
    assert (run.bounds["tool_runs"]["value"], run.bounds["model_calls"]["value"]) == (4, 2)


def test_a_max_turns_check_one_turn_late_changes_the_verdicts(monkeypatch) -> None:
    max_turns_off_by_one(monkeypatch)
    (travel,) = check("travel_adapter.yaml", pins={"max_turns": 2})
    assert (travel.result, travel.as_expected) == ("violated", False)
    broken = results(travel)["at_most_max_turns_model_calls"]
    assert broken.status == "violated"
    assert travel_steps(broken.trace) == [
        (None, 0, 0, 0, "running"), ("weather", 1, 1, 0, "running"), ("weather", 2, 2, 0, "running"),
        ("weather", 3, 3, 0, "limit")]         # a third model call, and a third tool run, under max_turns=2
    (triage,) = check("triage_adapter.yaml", pins={"max_turns": 2})
    assert (triage.result, triage.as_expected) == ("violated", False)
    assert results(triage)["at_most_max_turns_model_calls"].status == "violated"
    assert [s[2] for s in triage_steps(results(triage)["at_most_max_turns_model_calls"].trace)] == [0, 1, 2, 3]


@pytest.mark.parametrize("name, states", [("travel_adapter.yaml", 22), ("triage_adapter.yaml", 14)])
def test_runner_run_streamed_explores_the_same_runs(tmp_path, monkeypatch, name, states) -> None:
    """The streaming loop is a second copy of the run loop, with its own turn check: read to the
    end, it makes the same turns, tool runs and handoffs, and raises the same MaxTurnsExceeded."""
    (plain,) = check(name, pins={"max_turns": 3})
    (run,) = check(name, streamed(name, tmp_path, monkeypatch), tmp_path, pins={"max_turns": 3})
    assert (run.result, run.as_expected, run.stats["states"]) == ("violated", True, states)
    assert [(p.name, p.status) for p in run.properties] == [(p.name, p.status) for p in plain.properties]
    assert run.bounds == plain.bounds


def test_the_streamed_loops_own_turn_check_one_turn_late_changes_its_verdict(tmp_path, monkeypatch) -> None:
    """Each loop has its check: the streamed one late lets Runner.run_streamed make a third model
    call under max_turns=2 (the stream's own after-the-fact check does not stop it), while
    Runner.run, untouched, still stops at two."""
    streamed_max_turns_off_by_one(monkeypatch)
    (run,) = check("travel_adapter.yaml", streamed("travel_adapter.yaml", tmp_path, monkeypatch), tmp_path, pins={"max_turns": 2})
    assert (run.result, run.as_expected) == ("violated", False)
    assert travel_steps(results(run)["at_most_max_turns_model_calls"].trace)[-1] == ("weather", 3, 3, 0, "limit")
    (plain,) = check("travel_adapter.yaml", pins={"max_turns": 2})
    assert (plain.result, plain.as_expected) == ("violated", True)


def test_a_max_turns_error_handler_ends_the_run_with_its_output_instead(tmp_path, monkeypatch) -> None:
    """`error_handlers={"max_turns": ...}` (through run_options) turns the SDK's limit into a final
    output: no run raises MaxTurnsExceeded any more, and the run that used its N turns ends done,
    with the handler's text as what the user sees, in the same transition (its tools still ran)."""
    (tmp_path / "handled.py").write_text(
        "from travel_adapter import TravelAdapter\n\n\n"
        "class Handled(TravelAdapter):\n"
        "    reads = ('turns', 'tool_runs', 'status', 'output')\n\n"
        "    def run_options(self, params):\n"
        "        return {**super().run_options(params),\n"
        "                'error_handlers': {'max_turns': lambda failure: 'Out of turns: try again.'}}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    text = (EXAMPLE / "travel_adapter.yaml").read_text().replace("bind: travel_adapter:TravelAdapter", "bind: handled:Handled")
    text = text.replace("\nactions:", "\n  output: {type: enum, values: ['', 'Booked: sunny Paris awaits.', "
                                       "'Out of turns: try again.'], init: ''}\n\nactions:")
    text = text.replace("  violated: [no_booking_lost_to_the_limit]", "  violated: [can_hit_the_limit]")
    text = text.replace("\nmeasures:", "\n  out_of_turns:\n    reachable: \"output == 'Out of turns: try again.'\"\n"
                                      "\nmeasures:")
    (run,) = check("travel_adapter.yaml", text, tmp_path, pins={"max_turns": 2})
    assert (run.result, run.as_expected) == ("violated", True)
    assert [(s.choices.get("model"), s.state["turns"], s.state["tool_runs"], s.state["status"], s.state["output"])
            for s in results(run)["out_of_turns"].witness.steps] == [
        (None, 0, 0, "running", ""), ("weather", 1, 1, "running", ""),
        ("weather", 2, 2, "done", "Out of turns: try again.")]      # the last turn's tool still ran
    assert results(run)["no_booking_lost_to_the_limit"].status == "holds"


def test_an_undeclared_max_turns_exceeded_is_a_bound_code_finding(tmp_path) -> None:
    text = (EXAMPLE / "travel_adapter.yaml").read_text()
    start = text.index("      - class: agents.MaxTurnsExceeded\n")
    end = text.index("      - class: agents.UserError")
    (run,) = check("travel_adapter.yaml", text[:start] + text[end:], tmp_path, pins={"max_turns": 1})
    finding = results(run)["bound_code"]
    assert finding.status == "violated"
    assert finding.message.startswith(
        "action turn with model=weather: the bound code raised MaxTurnsExceeded: Max turns (1) exceeded\n")
    assert len(finding.trace.steps) == 1      # the transition from the initial state raised it


def test_a_tool_exception_reaches_runner_run_wrapped_in_the_sdks_user_error(tmp_path) -> None:
    """book_hotel has failure_error_function=None: its NoRoomsLeft ends the run, as the SDK's
    UserError (the tool's own exception is its __cause__), which is what the spec declares."""
    text = (EXAMPLE / "travel_adapter.yaml").read_text()
    start = text.index("      - class: agents.UserError")
    end = text.index("\nterminal:")
    (run,) = check("travel_adapter.yaml", text[:start] + text[end:], tmp_path, pins={"max_turns": 1})
    finding = results(run)["bound_code"]
    assert finding.status == "violated"
    assert "action turn with model=book_full_hotel: the bound code raised UserError: " \
           "Error running tool book_hotel: no rooms left in Lisbon" in finding.message


def test_an_action_enabled_after_the_run_returned_is_named(tmp_path) -> None:
    """A spec that lets the model answer once Runner.run is over is told so, not met with a
    state error from inside asyncio."""
    text = (EXAMPLE / "travel_adapter.yaml").read_text()
    text = text.replace("    when: status == running\n", "    when: status != limit\n").replace(
        "terminal: status != running", "terminal: status == no_rooms")
    (run,) = check("travel_adapter.yaml", text, tmp_path, pins={"max_turns": 1})
    finding = results(run)["bound_code"]
    assert finding.status == "violated"
    assert ("action turn with model=weather: the bound code raised ValueError: action turn answers a model call, "
            "but Runner.run has already returned: guard the action so that it is enabled only while the run is "
            "running\n") in finding.message
    assert [s.state["status"] for s in finding.trace.steps] == ["running", "done"]


def test_a_state_reached_by_max_turns_exceeded_is_read_back_with_its_set_values(tmp_path) -> None:
    """A run replayed into the state MaxTurnsExceeded reached raises it again and is read back
    with the declared `set:` (status=limit), so a spec that explores on from that state gets
    this adapter's own message (the run is over), not a false "nondeterministic" finding."""
    text = (EXAMPLE / "travel_adapter.yaml").read_text()
    text = text.replace("    when: status == running\n", "    when: status != done\n").replace(
        "terminal: status != running", "terminal: status == no_rooms")
    (run,) = check("travel_adapter.yaml", text, tmp_path, pins={"max_turns": 1})
    finding = results(run)["bound_code"]
    assert finding.status == "violated"
    assert finding.message.startswith(
        "action turn with model=weather: the bound code raised ValueError: action turn answers a model call, but "
        "Runner.run has already raised MaxTurnsExceeded: guard the action so that it is enabled only while the "
        "run is running\n")
    assert "nondeterministic" not in finding.message
    assert [s.state["status"] for s in finding.trace.steps] == ["running", "limit"]


def test_a_tool_raising_under_the_default_failure_function_is_a_message_to_the_model() -> None:
    """get_weather keeps the SDK's default failure_error_function: its ValueError is no outcome,
    the run goes on and the next model call reads the SDK's error text as the tool's output."""
    from travel_adapter import TravelAdapter

    from haltproof.frameworks.openai_agents import tool_call

    class Unknown(TravelAdapter):
        scripted = {"model": {**TravelAdapter.scripted["model"], "atlantis": tool_call("get_weather", city="Atlantis")}}
    adapter, driver = Unknown(), Driver()
    live = driver.call(adapter.start, {"max_turns": 2}, {})
    driver.call(adapter.step, live, "turn", {"model": "atlantis"})
    assert adapter.abstract(live) == {"turns": 1, "tool_runs": 1, "status": "running", "booked": 0}
    outputs = [item["output"] for item in live.channel.call.input if item.get("type") == "function_call_output"]
    assert outputs == ["An error occurred while running the tool. Please try again."]    # the error itself is not shown
    driver.call(adapter.step, live, "turn", {"model": "answer"})
    assert adapter.abstract(live) == {"turns": 2, "tool_runs": 1, "status": "done", "booked": 0}
    driver.close()


def test_a_step_after_the_run_raised_is_named() -> None:
    from travel_adapter import TravelAdapter
    adapter, driver = TravelAdapter(), Driver()
    live = driver.call(adapter.start, {"max_turns": 1}, {})
    with pytest.raises(sdk_run.MaxTurnsExceeded, match=r"Max turns \(1\) exceeded"):
        driver.call(adapter.step, live, "turn", {"model": "weather"})
    with pytest.raises(ValueError, match="action turn answers a model call, but Runner.run has already raised "
                                         "MaxTurnsExceeded: guard the action"):
        driver.call(adapter.step, live, "turn", {"model": "weather"})
    driver.close()


@pytest.mark.parametrize("old, new, message", [
    ("      model: [weather, book, book_full_hotel, answer]", "      reply: [weather, book, book_full_hotel, answer]",
     "action turn must choose exactly one of TravelAdapter.scripted's choices ['model'] (it chooses ['reply'])"),
    ("      model: [weather, book, book_full_hotel, answer]", "      model: [weather, cancel]",
     "TravelAdapter.scripted has no answer for model=cancel (it has ['answer', 'book', 'book_full_hotel', 'weather'])"),
])
def test_a_choice_the_adapter_does_not_script_is_named(tmp_path, old, new, message) -> None:
    text = (EXAMPLE / "travel_adapter.yaml").read_text()
    assert text.count(old) == 1
    (run,) = check("travel_adapter.yaml", text.replace(old, new), tmp_path, pins={"max_turns": 1})
    finding = results(run)["bound_code"]
    assert finding.status == "violated"
    assert f"the bound code raised ValueError: {message}\n" in finding.message


def test_a_handoff_the_agent_does_not_offer_is_named(tmp_path, monkeypatch) -> None:
    """The billing agent has no handoffs: a script that makes it hand back is a mistake, named."""
    (tmp_path / "handing_back.py").write_text(
        "from triage_adapter import TriageAdapter\n"
        "from haltproof.frameworks.openai_agents import handoff_to\n\n\n"
        "class HandingBack(TriageAdapter):\n"
        "    scripted = {**TriageAdapter.scripted,\n"
        "                'billing_says': {'answer': TriageAdapter.scripted['billing_says']['answer'],\n"
        "                                 'to_triage': handoff_to('Triage agent')}}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    text = (EXAMPLE / "triage_adapter.yaml").read_text().replace("bind: triage_adapter:TriageAdapter",
                                                         "bind: handing_back:HandingBack")
    text = text.replace("      billing_says: [answer]", "      billing_says: [answer, to_triage]")
    (run,) = check("triage_adapter.yaml", text, tmp_path, pins={"max_turns": 2})
    finding = results(run)["bound_code"]
    assert finding.status == "violated"
    assert finding.message.startswith("action billing with billing_says=to_triage: the bound code raised "
                                      "ValueError: Billing agent has no handoff to 'Triage agent' (its handoffs: none)\n")
    assert [s.choices for s in finding.trace.steps[1:]] == [{"triage_says": "to_billing"}]


def test_an_unsupported_sdk_version_is_named(monkeypatch) -> None:
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.9.1")
    with pytest.raises(RuntimeError, match=r"supports openai-agents >=0.24,<0.25; openai-agents 0.9.1 is installed"):
        ho.require_agents()


def test_a_missing_sdk_is_named(monkeypatch) -> None:
    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)
    monkeypatch.setattr(importlib.metadata, "version", missing)
    with pytest.raises(RuntimeError, match=r"needs the OpenAI Agents SDK: pip install 'haltproof\[openai-agents\]'"):
        ho.require_agents()


def test_a_run_let_go_is_cancelled_and_a_closing_loop_finishes_the_rest() -> None:
    """A paused run haltproof drops is cancelled through the SDK's own path on the loop's next
    turn; the runs still pending when the loop closes are cancelled and finished by the close:
    none is destroyed pending (asyncio's "Task was destroyed but it is pending!")."""
    from travel_adapter import TravelAdapter
    adapter, driver = TravelAdapter(), Driver()
    live = driver.call(adapter.start, {"max_turns": 3}, {})
    dropped = live.task
    driver.call(adapter.step, live, "turn", {"model": "weather"})
    del live
    gc.collect()
    driver.call(asyncio.sleep, 0)
    assert dropped.cancelled()
    kept = driver.call(adapter.start, {"max_turns": 3}, {})
    assert not kept.task.done()
    driver.close()
    assert kept.task.cancelled()


def test_the_frameworks_doc_shows_the_shipped_examples_and_their_command(cli) -> None:
    doc = (ROOT / "docs" / "how-to" / "openai-agents.md").read_text()
    for name in ("triage.yaml", "travel.yaml", "travel_adapter.py", "travel_adapter.yaml"):
        fence = "python" if name.endswith(".py") else "yaml"
        assert f"```{fence}\n" + (EXAMPLE / name).read_text() + "```" in doc
    assert "cd examples/frameworks/openai_agents && haltproof check travel.yaml triage.yaml" in doc
    ran = cli("check", "travel.yaml", "triage.yaml")
    assert ran.code == 0, ran.out
    assert ran.out.endswith("9 runs: 0 proved, 9 violated as expected, 0 failed, 0 incomplete -> proved\n")
    assert "exits 0 (`9 runs: 0 proved, 9 violated as expected`)" in doc
    assert "limit_error reachable at every swept max_turns (2..5): no safe value" in ran.out
    assert "`haltproof check travel_adapter.yaml triage_adapter.yaml` finds the same" in doc
    adapters = cli("check", "travel_adapter.yaml", "triage_adapter.yaml")
    assert adapters.code == 0, adapters.out
    assert adapters.out.endswith("9 runs: 0 proved, 9 violated as expected, 0 failed, 0 incomplete -> proved\n")
    assert "States per limit, travel.yaml (1 to 5): 5, 12, 22, 35, 51; triage.yaml (2 to 5): 8, 14, 23, 35." in doc
