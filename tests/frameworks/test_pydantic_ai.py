"""examples/frameworks/pydantic_ai: real Pydantic AI agents, stopped by Pydantic AI's own limits.

Each agent runs in Pydantic AI's own graph, offline, with its `FunctionModel` as the model;
`UsageLimits` and the retry budgets are enforced by Pydantic AI itself. Patching its limit
checks to be off by one must change the verdicts (issue 14): the proof rests on the
framework's code, not on a copy of its logic. The examples are declaration files
(`framework: pydantic_ai`); the adapter-file form (`AgentAdapter` and a spec written by hand)
is tests/fixtures/pydantic_ai's weather_adapter.yaml.
"""

from __future__ import annotations

import importlib.metadata

import asyncio
import dataclasses
import gc
import sys

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai.usage import UsageLimits

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.frameworks import pydantic_ai as hp
from haltproof.machine.live import Driver
from haltproof.machine.spec import load_spec

from conftest import ROOT
from framework_helpers import fresh_modules, maxima, results

EXAMPLE = ROOT / "examples" / "frameworks" / "pydantic_ai"
ADAPTER = ROOT / "tests" / "fixtures" / "pydantic_ai"
MODULES = ("weather", "weather_binding", "trip", "trip_binding")


@pytest.fixture(autouse=True)
def _in_the_example(monkeypatch):
    """Run from the example's folder; its modules are imported fresh and forgotten."""
    monkeypatch.chdir(EXAMPLE)
    with fresh_modules(monkeypatch, MODULES):
        yield


def check(spec: str = "weather.yaml", **options) -> list:
    folder = ADAPTER if spec == "weather_adapter.yaml" else EXAMPLE
    return check_spec(load_spec(folder / spec), Options(**options))


def weather_adapter():
    """The adapter file's class (tests/fixtures/pydantic_ai/weather_binding.py), which imports the
    example's weather.py: both folders on the path, whichever test ran before."""
    sys.path[:0] = [str(ADAPTER), str(EXAMPLE)]
    try:
        from weather_binding import WeatherAdapter
    finally:
        sys.path.remove(str(ADAPTER))
        sys.path.remove(str(EXAMPLE))
    return WeatherAdapter


def steps_of(trace, *names) -> list[tuple]:
    return [(s.action, *(s.choices.get(c) for c in ("model", "get_forecast")),
             *(s.state[n] for n in names)) for s in trace.steps]


def close(loop: asyncio.AbstractEventLoop) -> None:
    """Close a test's loop as haltproof closes a run's: the runs parked on it leave Agent.iter() first."""
    driver = Driver()
    driver.loop = loop
    driver.close()


WORST = {"request_limit": 4, "tool_calls_limit": 2, "retries": 2}


def limit_off_by_one(monkeypatch, check_name: str, field: str) -> None:
    """Pydantic AI's own check `check_name` of UsageLimits, run against a limit one higher."""
    original = getattr(UsageLimits, check_name)

    def late(self, usage):
        limit = getattr(self, field)
        return original(dataclasses.replace(self, **{field: None if limit is None else limit + 1}), usage)
    monkeypatch.setattr(UsageLimits, check_name, late)


@pytest.mark.slow     # every combination of the sweep, replayed run by run
def test_the_weather_agent_behaves_as_its_spec_expects_for_every_limit() -> None:
    runs = check()
    assert [(tuple(r.params.values()), r.result, r.verdict, r.binding, r.stats["states"]) for r in runs] == [
        ((3, 1, 1), "violated", "pass", "replay", 21), ((3, 1, 2), "violated", "pass", "replay", 28),
        ((3, 2, 1), "violated", "pass", "replay", 36), ((3, 2, 2), "violated", "pass", "replay", 44),
        ((4, 1, 1), "violated", "pass", "replay", 21), ((4, 1, 2), "violated", "pass", "replay", 31),
        ((4, 2, 1), "violated", "pass", "replay", 45), ((4, 2, 2), "violated", "pass", "replay", 63)]
    assert all([p.name for p in r.properties if p.status == "violated"] ==
               ["tool_runs_within_the_tool_calls_limit"] for r in runs)
    assert all(r.explored == "code: weather:agent" for r in runs)
    # (request_limit, tool_calls_limit, retries) -> requests, tool executions, successful calls: the
    # worst case is min(request_limit, tool_calls_limit * (retries + 1) + 1) requests and one fewer executions
    assert [tuple(maxima(r).values()) for r in runs] == [
        (3, 2, 1), (3, 3, 1), (3, 3, 2), (3, 3, 2), (3, 2, 1), (4, 3, 1), (4, 4, 2), (4, 4, 2)]
    assert [r.params["request_limit"] for r in runs if results(r)["request_limit_error"].value["possible"]] == [
        3, 3, 3, 4, 4]


def test_the_weather_agents_worst_case_and_its_witnesses() -> None:
    (run,) = check(pins=WORST)
    assert {name: b["value"] for name, b in run.bounds.items()} == {"transitions": 9}
    assert maxima(run) == {"most_model_requests": 4, "most_tool_runs": 4, "most_successful_tool_calls": 2}
    found = results(run)
    assert steps_of(found["tool_runs_within_the_tool_calls_limit"].trace, "tool_calls", "tool_runs") == [
        (None, None, None, 0, 0), ("request", "forecast", None, 0, 0), ("tools", None, "ok", 1, 1),
        ("request", "forecast", None, 1, 1), ("tools", None, "timeout", 1, 2),
        ("request", "forecast", None, 1, 2), ("tools", None, "ok", 2, 3)]
    assert steps_of(found["most_tool_runs"].witness, "requests", "tool_calls", "tool_runs",
                    "tool_retries", "status") == [
        (None, None, None, 0, 0, 0, 0, "running"), ("request", "forecast", None, 1, 0, 0, 0, "running"),
        ("tools", None, "ok", 1, 1, 1, 0, "running"), ("request", "forecast", None, 2, 1, 1, 0, "running"),
        ("tools", None, "timeout", 2, 1, 2, 1, "running"), ("request", "forecast", None, 3, 1, 2, 1, "running"),
        ("tools", None, "timeout", 3, 1, 3, 2, "running"), ("request", "forecast", None, 4, 1, 3, 2, "running"),
        ("tools", None, "ok", 4, 2, 4, 0, "running")]
    exhausted = found["retries_error"].witness
    assert [s.state["tool_retries"] for s in exhausted.steps] == [0, 0, 1, 1, 2, 2, 2]
    assert exhausted.steps[-1].state["status"] == "retries_exhausted"


def test_a_request_limit_checked_one_request_late_changes_the_verdict(monkeypatch) -> None:
    limit_off_by_one(monkeypatch, "check_before_request", "request_limit")
    (run,) = check(pins={"request_limit": 3, "tool_calls_limit": 2, "retries": 2})
    assert run.verdict == "fail"
    broken = results(run)["most_model_requests"]
    assert broken.status == "violated"
    assert broken.message.startswith("reaches 4, more than at_most 3, after 7 transitions")
    assert [s.state["requests"] for s in broken.trace.steps] == [0, 1, 1, 2, 2, 3, 3, 4]


def test_a_tool_calls_limit_checked_one_call_late_changes_the_verdicts(monkeypatch) -> None:
    limit_off_by_one(monkeypatch, "check_before_tool_call", "tool_calls_limit")
    (weather,) = check(pins={"request_limit": 3, "tool_calls_limit": 1, "retries": 1})
    assert weather.verdict == "fail"
    assert [s.state["tool_calls"] for s in results(weather)["most_successful_tool_calls"].trace.steps] == [
        0, 0, 1, 1, 2]
    (trip,) = check("trip.yaml", pins={"tool_calls_limit": 1})
    assert trip.verdict == "fail"
    broken = results(trip)["most_successful_tool_calls"]
    assert [(s.choices.get("model"), s.state["tool_calls"]) for s in broken.trace.steps] == [
        (None, 0), ("both", 0), (None, 2)]


def test_a_tool_retry_budget_checked_one_retry_late_changes_the_verdict(monkeypatch) -> None:
    """Pydantic AI's own per-tool retry check, given one retry more: a tool may fail once more
    in a row, and the proved bound on tool executions breaks."""
    from pydantic_ai.tool_manager import ToolManager
    original = ToolManager._check_max_retries

    def late(self, name, max_retries, error):
        return original(self, name, max_retries + 1, error)
    monkeypatch.setattr(ToolManager, "_check_max_retries", late)
    (run,) = check(pins={"request_limit": 3, "tool_calls_limit": 1, "retries": 1})
    assert run.verdict == "fail"
    broken = results(run)["tool_runs_within_the_real_bound"]
    assert broken.status == "violated"
    assert steps_of(broken.trace, "tool_runs", "tool_retries", "status") == [
        (None, None, None, 0, 0, "running"), ("request", "forecast", None, 0, 0, "running"),
        ("tools", None, "timeout", 1, 1, "running"), ("request", "forecast", None, 1, 1, "running"),
        ("tools", None, "timeout", 2, 2, "running"), ("request", "forecast", None, 2, 2, "running"),
        ("tools", None, "ok", 3, 0, "running")]


@pytest.mark.slow     # every combination of the sweep, replayed run by run
def test_parallel_calls_are_counted_in_full_before_they_run_and_only_successes_after() -> None:
    runs = check("trip.yaml")
    assert [(r.params["tool_calls_limit"], r.verdict, r.stats["states"]) for r in runs] == [
        (1, "pass", 70), (2, "pass", 148), (3, "pass", 192)]
    assert [maxima(r) for r in runs] == [
        {"most_model_requests": 3, "most_tool_runs": n + 1, "most_successful_tool_calls": n} for n in (1, 2, 3)]
    assert all(r.explored == "code: trip:agent" for r in runs)


def test_a_parallel_batch_that_would_cross_the_limit_is_refused_before_any_call_runs() -> None:
    (run,) = check("trip.yaml", pins={"tool_calls_limit": 3})
    found = results(run)
    assert found["a_refused_batch_runs_none_of_its_calls"].status == "holds"
    assert steps_of(found["stopped_by_the_limit_only_when_used_up"].trace, "tool_calls", "tool_runs", "status") == [
        (None, None, None, 0, 0, "running"), ("request", "both", None, 0, 0, "running"),
        ("tools", None, "ok", 2, 2, "running"), ("request", "both", None, 2, 2, "running"),
        ("tools", None, "ok", 2, 2, "tool_calls_limit_exceeded")]
    assert steps_of(found["can_exhaust_the_output_retries"].witness, "output_retries", "status") == [
        (None, None, None, 0, "running"), ("request", "chat", None, 0, "running"),
        ("tools", None, "ok", 1, "running"), ("request", "chat", None, 1, "running"),
        ("tools", None, "ok", 2, "retries_exhausted")]


def test_the_abstraction_is_faithful_on_more_paths_into_each_state() -> None:
    """--paths compares other paths into a state with the first one: the readings (response,
    counts, retries) hold all that the agent acts on, so no path leads elsewhere."""
    (run,) = check(pins={"request_limit": 3, "tool_calls_limit": 2, "retries": 1}, paths=3)
    assert (run.verdict, results(run)["bound_code"].status) == ("pass", "holds")


def test_without_the_response_read_back_two_runs_share_a_state(tmp_path, monkeypatch) -> None:
    """The node to run next does not say what it will do: a CallToolsNode after a text reply
    ends the run, after a tool call it runs the tool. Without `response` the first path's run
    stands for both, and only --paths notices."""
    (tmp_path / "blind.py").write_text(
        "from weather_binding import WeatherAdapter\n\n\n"
        "class BlindAdapter(WeatherAdapter):\n"
        "    def abstract(self, live):\n"
        "        return {k: v for k, v in super().abstract(live).items() if k != 'response'}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(ADAPTER))
    monkeypatch.delitem(sys.modules, "blind", raising=False)
    text = (ADAPTER / "weather_adapter.yaml").read_text().replace("weather_binding:WeatherAdapter", "blind:BlindAdapter")
    text = text.replace("  response: {type: enum, values: [none, forecast, answer], init: none}\n", "")
    spec = tmp_path / "weather.yaml"
    spec.write_text(text)
    (run,) = check_spec(load_spec(spec), Options(pins={"request_limit": 3, "tool_calls_limit": 1, "retries": 1},
                                                 paths=2))
    finding = results(run)["bound_code"]
    assert finding.status == "violated"
    assert "the abstract state leaves out something the code acts on (--paths)" in finding.message


def test_an_undeclared_limit_error_is_a_bound_code_finding(tmp_path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(ADAPTER))
    text = (ADAPTER / "weather_adapter.yaml").read_text()
    declared = ("    raises:\n      - class: pydantic_ai.exceptions.UsageLimitExceeded\n"
                "        match: request_limit\n        set: {status: limit}\n")
    assert text.count(declared) == 1
    spec = tmp_path / "weather.yaml"
    spec.write_text(text.replace(declared, ""))
    (run,) = check_spec(load_spec(spec), Options(pins={"request_limit": 3, "tool_calls_limit": 2, "retries": 1}))
    finding = results(run)["bound_code"]
    assert finding.status == "violated"
    assert ("the bound code raised UsageLimitExceeded: The next request would exceed the request_limit of 3"
            in finding.message)
    assert [s.state["requests"] for s in finding.trace.steps] == [0, 1, 1, 2, 2, 3, 3]


def test_an_unsupported_pydantic_ai_version_is_named(monkeypatch) -> None:
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "1.0.17")
    with pytest.raises(RuntimeError, match=r"supports pydantic-ai-slim >=2.68,<3; "
                                           r"pydantic-ai-slim 1.0.17 is installed"):
        hp.require_pydantic_ai()


def test_a_missing_pydantic_ai_is_named(monkeypatch) -> None:
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)
    monkeypatch.setattr(importlib.metadata, "version", missing)
    with pytest.raises(RuntimeError, match=r"needs Pydantic AI: pip install 'haltproof\[pydantic-ai\]'"):
        hp.require_pydantic_ai()


@pytest.mark.parametrize("old, new, message", [
    ("      model: [forecast, answer]", "      model: [forecast, refusal]",
     "WeatherAdapter.responses has no entry for model=refusal (it has ['answer', 'forecast'])"),
    ("      get_forecast: [ok, timeout, down]", "      get_forecast: [ok, slow]",
     "WeatherAdapter.tool_outcomes['get_forecast'] has no entry for get_forecast=slow "
     "(it has ['down', 'ok', 'timeout'])"),
    ("      get_forecast: [ok, timeout, down]", "      outcome: [ok, timeout, down]",
     "the model called tool get_forecast, whose outcome the transition does not choose (it chooses ['outcome'])"),
    ("      model: [forecast, answer]", "      reply: [forecast, answer]",
     "action request runs a model request, so it must choose `model` (it chooses ['reply'])"),
])
def test_a_choice_the_adapter_does_not_script_is_named(tmp_path, monkeypatch, old, new, message) -> None:
    monkeypatch.syspath_prepend(str(ADAPTER))
    text = (ADAPTER / "weather_adapter.yaml").read_text()
    assert text.count(old) == 1
    spec = tmp_path / "weather.yaml"
    spec.write_text(text.replace(old, new))
    (run,) = check_spec(load_spec(spec), Options(pins={"request_limit": 3, "tool_calls_limit": 1, "retries": 1}))
    finding = results(run)["bound_code"]
    assert finding.status == "violated"
    assert f"the bound code raised ValueError: {message}\n" in finding.message


def test_a_reading_that_does_not_exist_is_named() -> None:
    WeatherAdapter = weather_adapter()

    class Misread(WeatherAdapter):
        reads = ("tool_runs", "retry_count")

    loop = asyncio.new_event_loop()
    try:
        live = loop.run_until_complete(Misread().start({"request_limit": 2}, {}))
        with pytest.raises(ValueError, match=r"Misread.reads names \['retry_count'\], which are no readings "
                                              r"\(there are \['output_retries', 'tool_retries', 'tool_runs'\]\)"):
            Misread().abstract(live)
    finally:
        close(loop)


def test_a_dropped_run_leaves_the_agent_run_in_its_own_task() -> None:
    """A run haltproof drops (replay starts a fresh one per state) must not stay suspended
    inside Agent.iter(): its task is told to stop and leaves the run's context itself."""
    WeatherAdapter = weather_adapter()
    loop = asyncio.new_event_loop()
    try:
        adapter = WeatherAdapter()
        live = loop.run_until_complete(adapter.start({"request_limit": 2}, {}))
        loop.run_until_complete(adapter.step(live, "request", {"model": "forecast"}))
        assert adapter.abstract(live)["next"] == "call_tools"
        task = live.task
        del live
        gc.collect()
        for _ in range(50):         # a bounded number of loop turns, no clock: leaving takes a few awaits
            loop.run_until_complete(asyncio.sleep(0))
        assert task.done() and task.exception() is None
    finally:
        close(loop)


@pytest.mark.slow     # every combination of the sweep, replayed run by run
def test_the_frameworks_doc_shows_the_shipped_examples_and_their_numbers(cli) -> None:
    doc = (ROOT / "docs" / "how-to" / "pydantic-ai.md").read_text()
    for name in ("weather.yaml", "trip.yaml"):
        assert "```yaml\n" + (EXAMPLE / name).read_text() + "```" in doc
    assert "cd examples/frameworks/pydantic_ai && haltproof check weather.yaml trip.yaml" in doc
    ran = cli("check", "weather.yaml", "trip.yaml")
    assert ran.code == 0, ran.out
    assert ran.out.endswith("11 runs: 0 proved, 11 violated as expected, 0 failed, 0 incomplete -> proved\n")
    safe = ("weather.yaml tool_calls_limit=1 retries=2: request_limit_error unreachable from request_limit=4 on "
            "(swept 3..4; reachable at request_limit=3)")
    assert f"  {safe}\n" in ran.out
    assert " ".join(safe.split()) in " ".join(doc.split())
    assert "  trip.yaml: tool_calls_limit_error reachable at every swept tool_calls_limit (1..3): no safe value\n" \
        in ran.out
    assert "(`most_model_requests` 3, 3, 3, 3, 3, 4, 4, 4 in sweep order)" in doc
    assert "States per run (weather, in sweep order): 21, 28, 36, 44, 21, 31, 45, 63." in doc
    assert "(`most_tool_runs` 2, 3, 4) and N successful calls (`most_successful_tool_calls` 1, 2, 3)" in doc
    assert "States per run (`tool_calls_limit` 1 to 3): 70, 148, 192." in doc
    assert "one_forecast_is_enough:\n    maximum: tool_runs\n    at_most: 1\n" in doc


def test_a_run_stepped_after_pydantic_ai_ended_it_is_refused_not_waited_on() -> None:
    """Once UsageLimitExceeded ended a run, its task is gone: another step is refused by name
    at once, instead of waiting forever for a task that will never answer."""
    WeatherAdapter = weather_adapter()
    loop = asyncio.new_event_loop()
    try:
        adapter = WeatherAdapter()
        live = loop.run_until_complete(adapter.start({"request_limit": 1}, {}))
        for action, choices in (("request", {"model": "forecast"}), ("tools", {"get_forecast": "ok"})):
            loop.run_until_complete(adapter.step(live, action, choices))
        with pytest.raises(Exception, match="The next request would exceed the request_limit of 1"):
            loop.run_until_complete(adapter.step(live, "request", {"model": "forecast"}))
        again = loop.create_task(adapter.step(live, "request", {"model": "forecast"}))
        for _ in range(50):         # a bounded number of loop turns, no clock
            loop.run_until_complete(asyncio.sleep(0))
        assert again.done()
        with pytest.raises(RuntimeError, match=r"the agent run already ended \(UsageLimitExceeded: The next "
                                               r"request would exceed the request_limit of 1"):
            again.result()
    finally:
        close(loop)
