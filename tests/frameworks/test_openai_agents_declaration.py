"""Declaration files for the OpenAI Agents SDK (`framework: openai_agents` + `target: module:Agent`):
the user's own agents, checked with the out-of-the-box properties, no adapter or spec by hand.

The numbers are the SDK's, as its own Runner makes them (examples/frameworks/openai_agents):
`max_turns = N` allows exactly N model calls (turns); the tools a turn calls still run in the
N-th turn before MaxTurnsExceeded is raised, so a run makes up to N tool executions and N
handoffs (a handoff is decided in a model turn and costs no extra one), and the limit error is
reachable at every N.
"""

from __future__ import annotations

import json
import sys

import pytest

pytest.importorskip("agents")

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.machine.spec import load_spec
from haltproof.reports.report import to_json

from conftest import ROOT
from framework_helpers import emitted_test_fails_until_fixed, emitted_tests_replay, fresh_modules, maxima, results
from test_openai_agents import max_turns_off_by_one

EXAMPLE = ROOT / "examples" / "frameworks" / "openai_agents"
MODULES = ("triage", "travel", "agents_app", "support")


@pytest.fixture(autouse=True)
def _fresh_modules(monkeypatch):
    """The examples' modules are imported fresh for each test and forgotten after it; the
    folders the imports put on sys.path are taken off again."""
    with fresh_modules(monkeypatch, MODULES):
        yield


def check(name: str, **options) -> list:
    return check_spec(load_spec(EXAMPLE / name), Options(**options))


def steps(trace, *names: str) -> list[tuple]:
    return [(next(iter(s.choices.values()), None), *(s.state[n] for n in names)) for s in trace.steps]


def test_the_triage_declaration_gives_the_worst_cases_the_sdk_allows() -> None:
    runs = check("triage.yaml")
    assert [(r.params["max_turns"], r.result, r.as_expected, r.stats["states"]) for r in runs] == [
        (2, "violated", True, 8), (3, "violated", True, 14), (4, "violated", True, 23), (5, "violated", True, 35)]
    assert runs[0].explored == "code: triage:triage_agent"
    assert [maxima(r) for r in runs] == [
        {"most_turns": n, "most_tool_runs": n - 1, "most_handoffs": n} for n in range(2, 6)]
    names = [p.name for p in runs[0].properties]
    assert names == ["domains", "well_defined", "bound_code", "run_ends", "limit_error", "most_turns",
                     "most_tool_runs", "most_handoffs", "never_back_to_triage", "a_handoff_gets_an_answer",
                     "no_refund_lost_to_the_limit"]
    two = results(runs[0])
    assert [(p, two[p].status) for p in ("run_ends", "limit_error", "most_turns")] == [
        ("run_ends", "holds"), ("limit_error", "holds"), ("most_turns", "holds")]
    # the refund agent hands the run back in the last turn: the triage agent's, and over
    assert steps(two["a_handoff_gets_an_answer"].trace, "agent", "turns", "handoffs", "status") == [
        (None, "Triage agent", 0, 0, "running"), ("to_refunds", "Refund agent", 1, 1, "running"),
        ("to_triage", "Triage agent", 2, 2, "limit")]
    # a shortest run into MaxTurnsExceeded: the refund agent's tool runs in the last turn, then the limit
    assert two["limit_error"].message == "possible: reached after 2 transitions"
    assert steps(two["limit_error"].witness, "agent", "turns", "tool_runs", "status") == [
        (None, "Triage agent", 0, 0, "running"), ("to_refunds", "Refund agent", 1, 0, "running"),
        ("refund", "Refund agent", 2, 1, "limit")]


def test_max_turns_never_makes_the_limit_error_unreachable() -> None:
    (sweep,) = to_json(check("triage.yaml"))["sweeps"]
    assert [row["message"] for row in sweep["smallest_safe"]] == [
        "limit_error reachable at every swept max_turns (2..5): no safe value"]
    # what max_turns really bounds: model turns, and as many handoffs; a tool run only from the second turn
    assert [(row["property"], row["message"]) for row in sweep["limit_allows"]] == [
        ("most_turns", "max_turns = 2, 3, 4, 5 allows at most 2, 3, 4, 5 turns"),
        ("most_tool_runs", "max_turns = 2, 3, 4, 5 allows at most 1, 2, 3, 4 tool_runs"),
        ("most_handoffs", "max_turns = 2, 3, 4, 5 allows at most 2, 3, 4, 5 handoffs")]


def test_the_travel_declaration_runs_the_tools_as_the_sdk_does() -> None:
    """book_hotel runs as written (failure_error_function=None: Lisbon's NoRoomsLeft ends the
    run as the SDK's UserError, `tool_error`); get_weather's declared outage goes through the
    SDK's default failure function (the model reads a message, the run goes on); the last
    turn's booking runs and only then does MaxTurnsExceeded end the run."""
    runs = check("travel.yaml")
    assert [(r.params["max_turns"], r.result, r.as_expected, r.stats["states"]) for r in runs] == [
        (1, "violated", True, 5), (2, "violated", True, 12), (3, "violated", True, 22), (4, "violated", True, 35),
        (5, "violated", True, 51)]
    assert [maxima(r) for r in runs] == [{"most_turns": n, "most_tool_runs": n} for n in range(1, 6)]
    three = results(runs[2])
    assert steps(three["a_full_hotel_ends_the_run"].witness, "turns", "runs_book_hotel", "status") == [
        (None, 0, 0, "running"), ("book_full_hotel", 1, 1, "tool_error")]
    lost = three["no_booking_lost_to_the_limit"]
    assert (lost.status, lost.expected) == ("violated", True)
    assert [s.choices for s in lost.trace.steps][1:] == [
        {"travel_agent_says": "weather", "get_weather_returns": "sunny"}] * 2 + [
        {"travel_agent_says": "book", "get_weather_returns": "sunny"}]
    assert [(s.state["turns"], s.state["runs_book_hotel"], s.state["status"]) for s in lost.trace.steps] == [
        (0, 0, "running"), (1, 0, "running"), (2, 0, "running"), (3, 1, "limit")]
    assert three["tools_within_max_turns"].status == "holds"


def test_a_declared_tool_exception_under_the_default_failure_function_is_a_message_to_the_model() -> None:
    from haltproof.machine.live import Driver
    declared = load_spec(EXAMPLE / "travel.yaml")
    adapter, driver = declared.adapter(), Driver()
    live = driver.call(adapter.start, {"max_turns": 3}, {})
    driver.call(adapter.step, live, "travel_agent",
                {"travel_agent_says": "weather", "get_weather_returns": "outage"})
    assert adapter.abstract(live)["status"] == "running"
    outputs = [item["output"] for item in live.channel.call.input if item.get("type") == "function_call_output"]
    assert outputs == ["An error occurred while running the tool. Please try again."]
    driver.call(adapter.step, live, "travel_agent", {"travel_agent_says": "weather", "get_weather_returns": "sunny"})
    outputs = [item["output"] for item in live.channel.call.input if item.get("type") == "function_call_output"]
    assert outputs[1:] == ["The weather in Paris is sunny."]
    driver.close()


def test_parallel_tool_calls_in_one_answer_make_max_turns_no_bound_on_tool_runs(tmp_path, monkeypatch) -> None:
    """An answer that is a list is one turn calling its tools at once: the SDK runs them all, so
    two calls a turn make 2 * max_turns tool executions in max_turns model calls."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    text = (EXAMPLE / "travel.yaml").read_text().replace(
        "    answer: 'Booked: sunny Paris awaits.'\n",
        "    answer: 'Booked: sunny Paris awaits.'\n"
        "    weather_twice: [{tool: get_weather, args: {city: Paris}}, {tool: get_weather, args: {city: Lisbon}}]\n")
    (tmp_path / "parallel.yaml").write_text(text)
    (run,) = check_spec(load_spec(tmp_path / "parallel.yaml"), Options(pins={"max_turns": 2}))
    assert maxima(run) == {"most_turns": 2, "most_tool_runs": 4}
    broken = results(run)["tools_within_max_turns"]
    assert (run.result, run.as_expected, broken.status) == ("violated", False, "violated")
    assert [(s.choices.get("travel_agent_says"), s.state["turns"], s.state["tool_runs"], s.state["status"])
            for s in broken.trace.steps] == [
        (None, 0, 0, "running"), ("weather", 1, 1, "running"), ("weather_twice", 2, 3, "limit")]


def test_a_max_turns_check_one_turn_late_changes_the_declarations_verdicts(monkeypatch) -> None:
    max_turns_off_by_one(monkeypatch)
    (run,) = check("triage.yaml", pins={"max_turns": 2})
    assert (run.result, run.as_expected) == ("violated", False)
    broken = results(run)["most_turns"]
    assert broken.status == "violated"
    assert broken.message.startswith("reaches 3, more than at_most 2, after 3 transitions")
    (travel,) = check("travel.yaml", pins={"max_turns": 2})
    assert (travel.result, travel.as_expected) == ("violated", False)
    assert results(travel)["tools_within_max_turns"].status == "violated"


def test_every_format_the_cli_and_workers_take_a_declaration(cli, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    path = "examples/frameworks/openai_agents/triage.yaml"
    ran = cli("check", path, "-p", "max_turns=3")
    assert ran.code == 0, ran.out
    assert (f"{path} max_turns=3: most_turns 3 (a shortest witness takes 3 transitions); most_tool_runs 2 "
            "(a shortest witness takes 3 transitions); most_handoffs 3") in ran.out
    report = json.loads(cli("check", path, "-p", "max_turns=3", "--format", "json").out)
    (run,) = report["runs"]
    assert run["explored"] == "code: triage:triage_agent" and run["machine"] == "triage"
    assert {p["name"]: p.get("maximum", {}).get("value") for p in run["properties"]}["most_handoffs"] == 3
    markdown = cli("check", path, "-p", "max_turns=3", "--format", "markdown").out
    assert "| `most_turns` | 3 (a shortest witness takes 3 transitions) |" in markdown
    serial = json.loads(cli("check", path, "-j", "1", "--format", "json").out)
    workers = cli("check", path, "-j", "2", "--format", "json")
    assert workers.code == 0, workers.err
    parallel = json.loads(workers.out)
    assert [(r["params"], r["result"], r["stats"]["states"]) for r in parallel["runs"]] == [
        (r["params"], r["result"], r["stats"]["states"]) for r in serial["runs"]]
    assert [r["explored"] for r in parallel["runs"]] == ["code: triage:triage_agent"] * 4


def test_the_pytest_plugin_collects_a_declaration(pytester) -> None:
    for name in ("triage.yaml", "triage.py"):
        (pytester.path / name).write_text((EXAMPLE / name).read_text())
    result = pytester.runpytest("--haltproof", "-q", "-p", "no:cacheprovider")
    # 4 limits x (domains, well_defined, bound_code + 5 out of the box + 3 of the user's, expected violated)
    result.assert_outcomes(passed=4 * 11)


BUDGET = (EXAMPLE / "travel.yaml").read_text().split("params:")[0] + """\
params:
  max_turns: [3]
properties:
  one_booking_at_most:
    maximum: runs_book_hotel
    at_most: 1
"""


@pytest.mark.slow
def test_an_emitted_test_replays_the_trace_against_the_real_sdk(cli, tmp_path, monkeypatch) -> None:
    """--emit-tests on a declaration writes a pytest file that replays the counterexample through
    the SDK's Runner: it fails while the agent can call book_hotel twice, and passes once the
    agent stops at its first booking (the SDK's tool_use_behavior, stop_at_tool_names)."""
    emitted_test_fails_until_fixed(
        cli, tmp_path, monkeypatch, app=EXAMPLE / "travel.py", declaration=BUDGET,
        emitted="test_budget_one_booking_at_most_max_turns3.py",
        still=("one_booking_at_most is not fixed: the recorded counterexample still breaks it: the state after "
               "step 2 has 2, more than at_most 1"),
        # the fix, in the user's agent: the SDK ends the run with book_hotel's result as the final output
        fix=("    tools=[get_weather, book_hotel],\n",
             "    tools=[get_weather, book_hotel],\n    tool_use_behavior={'stop_at_tool_names': ['book_hotel']},\n"))


# ---------------------------------------------------------------- bad declarations: exit 2, file and line

APP = '''\
from agents import Agent, function_tool


@function_tool
def lookup(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}"


helper = Agent(name="Helper", instructions="Help.", tools=[lookup])
orphan = Agent(name="Orphan", instructions="Nobody hands off to me.")
front = Agent(name="Front desk", instructions="Route.", handoffs=[helper])
not_an_agent = 42
'''

DECLARATION = """\
framework: openai_agents
target: agents_app:front
input: hi
models:
  Front desk:
    route: {handoff: Helper}
    answer: Hello.
  Helper:
    look: {tool: lookup, args: {order_id: A-1}}
    answer: Found it.
params:
  max_turns: {min: 1, max: 2}
"""


@pytest.mark.parametrize("change, line, message", [
    ((":front", ":not_an_agent"), 2, "agents_app:not_an_agent is a int, not an agents.Agent"),
    ((":front", ":frnt"), 2, "module agents_app has no 'frnt'"),
    (("  Helper:\n", "  Helpr:\n"), 8, "models: no agent named 'Helpr' in the run (its agents: Front desk, Helper)"),
    (("    route: {handoff: Helper}", "    route: {handoff: Orphan}"), 6,
     "answer route of Front desk hands off to 'Orphan', which Front desk does not hand off to (its handoffs: "
     "Helper)"),
    (("{tool: lookup,", "{tool: look_up,"), 9,
     "answer look of Helper calls the tool 'look_up', which Helper does not have (its function tools: lookup)"),
    (("params:", "tools:\n  lokup:\n    ok: fine\nparams:"), 12,
     "tools: no function tool named 'lokup' in the run (its tools: lookup)"),
    (("params:", "tools:\n  lookup:\n    down: {raises: agents_app.NoSuchError}\nparams:"), 13,
     "raises names a class that cannot be found"),
    (("  max_turns: {min: 1, max: 2}", "  turns: {min: 1, max: 2}"), 11,
     "params: an openai_agents declaration needs max_turns (the Runner's limit"),
    (("  Helper:\n    look: {tool: lookup, args: {order_id: A-1}}\n    answer: Found it.\n", ""), 4, "models: the agent 'Helper' can get the run, but its model has no answers"),
    (("input: hi\n", ""), 1, "a openai_agents declaration needs the key 'input'"),
    (("input: hi\n", "input: hi\ncontext: agents_app:not_an_agent\n"), 4,
     "context must name a class or function making the run's context object"),
    (("    answer: Hello.", "    answer: [[{handoff: Helper}]]"), 7,
     "answer answer of Front desk must be the model's final text, {tool: NAME, args: {...}}, {handoff: AGENT}, "
     "or a list of those (one turn making them all)"),
    (("  max_turns: {min: 1, max: 2}\n", "  max_turns: {min: 1, max: 2}\nproperties:\n  run_ends:\n"
                                         "    always: turns >= 0\n"), 14,
     "run_ends is an out-of-the-box property of every OpenAI Agents declaration"),
    (("  max_turns: {min: 1, max: 2}\n", "  max_turns: {min: 1, max: 2}\nproperties:\n  mine:\n"
                                         "    always: turnz >= 0\n"), 15, "undefined name"),
])
def test_a_bad_declaration_is_refused_at_its_line(check, tmp_path, change, line, message) -> None:
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "specs" / "agents_app.py").write_text(APP)
    old, new = change
    assert old in DECLARATION
    ran = check(DECLARATION.replace(old, new, 1))
    sys.modules.pop("agents_app", None)
    assert ran.code == 2, ran.out
    assert ran.out == ""
    assert f"bad.yaml:{line}: {message}" in ran.err
    assert "Traceback" not in ran.err


# ---------------------------------------------------------------- the run context (issue 27)

def test_the_support_agents_run_with_their_context_as_written() -> None:
    """support.py's agents are `Agent[SupportContext]`, and the refund tool reads the customer and
    the payments client from the run context; support.yaml gives the context (the app's own
    dataclass, read from `Agent[SupportContext]`), its `payments.refund` scripted. Triage hands
    off, the refund agent refunds once (`when:`) and answers: 3 turns, safe from max_turns 3."""
    runs = check("support.yaml")
    assert [(r.params["max_turns"], r.result, r.stats["states"]) for r in runs] == [
        (2, "proved", 6), (3, "proved", 7), (4, "proved", 7)]
    assert [maxima(r) for r in runs] == [{"most_turns": n, "most_tool_runs": 1, "most_handoffs": 1} for n in (2, 3, 3)]
    (row,) = to_json(runs)["sweeps"][0]["smallest_safe"]
    assert row["message"] == "limit_error unreachable from max_turns=3 on (swept 2..4; reachable at max_turns=2)"
    doc = (ROOT / "docs" / "how-to" / "openai-agents.md").read_text()
    assert "```yaml\n" + (EXAMPLE / "support.yaml").read_text() + "```" in doc
    assert "cd examples/frameworks/openai_agents && haltproof check support.yaml\n" in doc
    assert "States per limit (2 to 4): 6, 7, 7." in doc
    witness = results(runs[0])["limit_error"].witness
    assert [(s.action, s.choices, s.state["status"]) for s in witness.steps[1:]] == [
        ("triage_agent", {"triage_agent_says": "to_refunds"}, "running"),
        ("refund_agent", {"refund_agent_says": "refund", "payments_refund_returns": "refunded"}, "limit")]


def test_the_context_is_the_apps_own_type_and_a_declined_payment_reaches_the_model(monkeypatch) -> None:
    """The context a run gets is a SupportContext (from `Agent[SupportContext]`), its payments an
    object whose `refund` is awaited; a declared `raises` goes through the SDK's default failure
    handling: the model reads an error message and the run goes on."""
    from haltproof.machine.live import Driver
    from haltproof.machine.spec import load_spec
    spec = load_spec(EXAMPLE / "support.yaml")
    adapter, driver = spec.adapter(), Driver()
    try:
        live = driver.call(adapter.start, {"max_turns": 4}, {})
        import support
        assert isinstance(live.context, support.SupportContext) and live.context.customer_id == "C-42"
        driver.call(adapter.step, live, "triage_agent", {"triage_agent_says": "to_refunds"})
        driver.call(adapter.step, live, "refund_agent", {"refund_agent_says": "refund",
                                                         "payments_refund_returns": "declined"})
        outputs = [item["output"] for item in live.channel.call.input if item.get("type") == "function_call_output"]
        assert outputs[-1] == "An error occurred while running the tool. Please try again."
        assert adapter.abstract(live)["status"] == "running"
    finally:
        driver.close()


@pytest.mark.slow
def test_the_support_agents_answers_are_what_the_sdk_does_on_replay(cli, tmp_path, monkeypatch) -> None:
    """MaxTurnsExceeded at max_turns 2 (one below the smallest safe value) and the worst case of 3
    turns, replayed through the SDK's Runner by the emitted regression tests."""
    text = (EXAMPLE / "support.yaml").read_text().replace("{min: 2, max: 4}", "[2, 3]")
    emitted_tests_replay(
        cli, tmp_path, monkeypatch, apps=(EXAMPLE / "support.py",),
        declaration=text + "properties:\n  never_the_limit_error:\n    always: status != limit\n"
                           "  two_turns_at_most:\n    maximum: turns\n    at_most: 2\n",
        expected={
            "test_replayed_never_the_limit_error_max_turns2.py":
                "never_the_limit_error is not fixed: the recorded counterexample still breaks it: false in the "
                "state after step 2",
            "test_replayed_two_turns_at_most_max_turns3.py":
                "two_turns_at_most is not fixed: the recorded counterexample still breaks it: the state after step 3 "
                "has 3, more than at_most 2"})


TRIP_APP = '''\
from dataclasses import dataclass, field

from agents import Agent, RunContextWrapper, function_tool


@dataclass
class Trip:
    bookings: list[str] = field(default_factory=list)


@function_tool
def book_hotel(ctx: RunContextWrapper[Trip], city: str) -> str:
    """Book a hotel."""
    ctx.context.bookings.append(city)
    return f"Booked {city}."


@function_tool
def pay(ctx: RunContextWrapper[Trip]) -> str:
    """Pay for what was booked."""
    return f"Paid for {len(ctx.context.bookings)} rooms."


agent = Agent[Trip](name="Travel agent", tools=[book_hotel, pay])
'''

TRIP = """\
framework: openai_agents
target: trip_app:agent
context: trip_app:Trip
input: Book Paris and pay.
models:
  Travel agent:
    book: {tool: book_hotel, args: {city: Paris}}
    pay: {tool: pay}
    done: Done.
tools:
  book_hotel:
    booked: Booked Paris.
params:
  max_turns: [3]
"""


def test_a_scripted_tool_that_skips_a_context_write_another_tool_reads_is_a_warning_at_its_line(
        cli, tmp_path, monkeypatch) -> None:
    """A declared tool outcome replaces the tool's code: `bookings`, which book_hotel appends to and
    pay reads, never grows (issue 27: never a silent change of meaning)."""
    (tmp_path / "trip_app.py").write_text(TRIP_APP)
    (tmp_path / "d.yaml").write_text(TRIP)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "trip_app", raising=False)
    ran = cli("check", "d.yaml")
    sys.modules.pop("trip_app", None)
    assert ran.code == 0, ran.out
    assert ("warnings:\n  d.yaml:12: outcome booked of tool book_hotel leaves out what book_hotel writes to "
            "context.bookings, which tool pay reads: a scripted outcome replaces the tool's code, so context.bookings "
            "keeps its old value there; script what book_hotel calls instead (context:), or let it run\n\n") in ran.out
