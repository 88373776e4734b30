"""`framework: pydantic_ai` declaration files: the user's own Agent, checked with the
out-of-the-box properties through every entry point (the CLI's formats, -j workers, the
pytest plugin, --emit-tests), and a bad declaration refused at its line with exit 2.

The numbers are Pydantic AI's, as tests/frameworks/test_pydantic_ai.py derives them for the examples.
"""

from __future__ import annotations

import json
import sys

import pytest

pytest.importorskip("pydantic_ai")

from conftest import ROOT
from framework_helpers import emitted_test_fails_until_fixed, emitted_tests_replay, fresh_modules, maxima, results
from test_parallel import untimed

EXAMPLE = ROOT / "examples" / "frameworks" / "pydantic_ai"
PINS = ("-p", "request_limit=3", "-p", "tool_calls_limit=2", "-p", "retries=1")


@pytest.fixture(autouse=True)
def _fresh_modules(monkeypatch):
    """The agents' modules are imported fresh for each test and forgotten after it; the folders
    the imports put on sys.path are taken off again."""
    with fresh_modules(monkeypatch, ("weather", "trip", "orders")):
        yield


def test_every_format_names_the_agent_explored(cli, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    spec = "examples/frameworks/pydantic_ai/weather.yaml"
    ran = cli("check", spec, *PINS)
    assert ran.code == 0, ran.out
    assert ("examples/frameworks/pydantic_ai/weather.yaml request_limit=3 tool_calls_limit=2 retries=1: "
            "most_model_requests 3 (a shortest witness takes 5 transitions); most_tool_runs 3") in ran.out
    report = json.loads(cli("check", spec, *PINS, "--format", "json").out)
    (run,) = report["runs"]
    assert run["explored"] == "code: weather:agent" and run["machine"] == "weather"
    found = {p["name"]: p for p in run["properties"]}
    assert [found[n]["maximum"]["value"] for n in ("most_model_requests", "most_tool_runs",
                                                     "most_successful_tool_calls")] == [3, 3, 2]
    assert (found["request_limit_error"]["possible"], found["tool_calls_limit_error"]["possible"]) == (True, True)
    markdown = cli("check", spec, *PINS, "--format", "markdown").out
    assert "| `most_tool_runs` | 3 (a shortest witness takes 6 transitions) |" in markdown
    sarif = json.loads(cli("check", spec, *PINS, "--format", "sarif").out)
    assert sarif["runs"][0]["results"] == []


def test_the_smallest_safe_request_limit_over_a_sweep(cli, monkeypatch) -> None:
    """With one successful call allowed and one retry, no run makes more than 3 requests (call,
    retry, call, answer is cut by tool_calls_limit): request_limit's error cannot happen at 3 or 4."""
    monkeypatch.chdir(EXAMPLE)
    report = json.loads(cli("check", "weather.yaml", "-p", "tool_calls_limit=1", "-p", "retries=1",
                            "--format", "json").out)
    rows = {row["property"]: row["message"] for row in report["sweeps"][0]["smallest_safe"]}
    assert rows["request_limit_error"] == "request_limit_error unreachable at every swept request_limit (3..4)"
    assert rows["retries_error"] == "retries_error reachable at every swept retries (1 only): no safe value"
    # what request_limit really bounds here: a retry spends a request, the limit of 4 is never used up
    assert [(row["property"], row["others"], row["message"]) for row in report["sweeps"][0]["limit_allows"]] == [
        ("most_model_requests", {"tool_calls_limit": 1, "retries": 1},
         "request_limit = 3, 4 allows at most 3, 3 requests"),
        ("most_tool_runs", {"request_limit": 3, "retries": 1}, "tool_calls_limit = 1 allows at most 2 tool_runs"),
        ("most_tool_runs", {"request_limit": 4, "retries": 1}, "tool_calls_limit = 1 allows at most 2 tool_runs"),
        ("most_successful_tool_calls", {"request_limit": 3, "retries": 1},
         "tool_calls_limit = 1 allows at most 1 tool_calls"),
        ("most_successful_tool_calls", {"request_limit": 4, "retries": 1},
         "tool_calls_limit = 1 allows at most 1 tool_calls")]


def test_workers_give_the_serial_report(cli, monkeypatch) -> None:
    """A declaration's adapter factory is a closure: its run comes back from a -j worker without
    it, and the report is the serial one."""
    monkeypatch.chdir(EXAMPLE)
    one = cli("check", "weather.yaml", "-p", "request_limit=3", "-p", "retries=1", "-j", "1", "--format", "json")
    two = cli("check", "weather.yaml", "-p", "request_limit=3", "-p", "retries=1", "-j", "2", "--format", "json")
    assert one.code == two.code == 0, (one.code, two.code, two.err[-500:])
    assert len(one.json()["runs"]) == 2
    assert untimed(two.json()) == untimed(one.json())


def test_the_pytest_plugin_collects_a_declaration(pytester) -> None:
    for name in ("weather.yaml", "weather.py"):
        (pytester.path / name).write_text((EXAMPLE / name).read_text())
    text = (pytester.path / "weather.yaml").read_text().replace(
        "  request_limit: [3, 4]\n  tool_calls_limit: [1, 2]\n  retries: [1, 2]\n",
        "  request_limit: [3]\n  tool_calls_limit: [1]\n  retries: [1, 2]\n")
    (pytester.path / "weather.yaml").write_text(text)
    result = pytester.runpytest("--haltproof", "-q", "-p", "no:cacheprovider")
    # 2 runs x (domains, well_defined, bound_code + 7 out of the box + 2 of the user's)
    result.assert_outcomes(passed=2 * 12)


# ---------------------------------------------------------------- --emit-tests: replayed on the real agent

BUDGET = (EXAMPLE / "weather.yaml").read_text().split("params:")[0] + """\
params:
  request_limit: [4]
  tool_calls_limit: [2]
  retries: [1]
properties:
  one_forecast_is_enough:
    maximum: tool_runs
    at_most: 1
"""

ONCE = '''async def only_once(ctx, tool_def):
    """The fix: the forecast is offered to the model until it has returned once."""
    from pydantic_ai.messages import ToolReturnPart
    done = any(isinstance(p, ToolReturnPart) and p.tool_name == "get_forecast"
               for m in ctx.messages for p in getattr(m, "parts", ()))
    return None if done else tool_def


@agent.tool_plain(prepare=only_once)
def get_forecast'''


@pytest.mark.slow
def test_an_emitted_test_replays_the_trace_on_the_real_agent_until_it_is_fixed(cli, tmp_path, monkeypatch) -> None:
    """--emit-tests on a declaration writes a pytest file that replays the counterexample through
    Pydantic AI itself: it fails while the agent runs its forecast twice, and passes once the
    agent stops offering the tool after its first result."""
    assert "expect:" not in BUDGET
    emitted_test_fails_until_fixed(
        cli, tmp_path, monkeypatch, app=EXAMPLE / "weather.py", declaration=BUDGET,
        emitted="test_budget_one_forecast_is_enough_request_limit4_tool_calls_limit2_retries1.py",
        still=("one_forecast_is_enough is not fixed: the recorded counterexample still breaks it: the state after "
               "step 4 has 2, more than at_most 1"),
        fix=("@agent.tool_plain\ndef get_forecast", ONCE))


# ---------------------------------------------------------------- bad declarations: exit 2, file and line

AGENTS = '''\
from pydantic import BaseModel
from pydantic_ai import Agent

agent = Agent(instructions="Be brief.")


@agent.tool_plain
def lookup(term: str) -> str:
    return f"{term}: found"


class Answer(BaseModel):
    text: str


structured = Agent(output_type=Answer)
not_an_agent = 42

offline = Agent()

broken = Agent()


@broken.instructions
def no_prompt() -> str:
    raise ValueError("no system prompt configured")


@offline.tool_plain
def fetch(url: str) -> str:
    raise RuntimeError("the real fetch ran: no network in a test")
'''

DECLARATION = """\
framework: pydantic_ai
target: {module}:agent
prompt: Look it up.
models:
  call: {{tool_calls: [{{name: lookup, args: {{term: x}}}}]}}
  done: Found it.
tools:
  lookup:
    ok: ok
limits:
  request_limit: request_limit
params:
  request_limit: {{min: 1, max: 2}}
"""


@pytest.mark.parametrize("change, line, message", [
    (("  lookup:\n    ok: ok", "  lokup:\n    ok: ok"), 8, "tools: {module}:agent has no tool 'lokup' (its tools: lookup)"),
    (("{name: lookup", "{name: search"), 5,
     "models: answer call calls a tool {module}:agent does not have (its tools: lookup): 'search'"),
    ((":agent", ":not_an_agent"), 2, "{module}:not_an_agent is a int, not a Pydantic AI Agent"),
    ((":agent", ":broken"), 2, "running {module}:broken up to its first model request failed: "
                               "ValueError: no system prompt configured"),
    (("request_limit: request_limit", "request_limit: request_limt"), 11,
     "limits: request_limit names no param 'request_limt' (params: request_limit)"),
    (("limits:", "retries: retrys\nlimits:"), 10, "retries names no param 'retrys' (params: request_limit)"),
    (("  request_limit: request_limit", "  total_tokens_limit: 100"), 11,
     "limits: a declaration sets request_limit and tool_calls_limit only"),
    (("done: Found it.", "done: {output: {text: hi}}"), 6,
     "models: answer done gives an output, but {module}:agent has no output tool (its output is text)"),
    (("    ok: ok", "    ok: fine"), 9, "tools: an outcome of lookup is ok, {{returns: VALUE}}, {{retry: MESSAGE}} "
                                      "or {{raises: CLASS, message: TEXT}}"),
    (("    ok: ok", "    ok: {raises: NoSuchError}"), 9, "raises names a class that cannot be found"),
    (("prompt: Look it up.\n", ""), 1, "a pydantic_ai declaration needs the key 'prompt'"),
    (("params:", "toolz: {}\nparams:"), 12, "unknown key in a pydantic_ai declaration"),
    (("  request_limit: {min: 1, max: 2}\n", "  request_limit: {min: 1, max: 2}\nproperties:\n  run_ends:\n"
                                            "    always: requests >= 0\n"), 15,
     "run_ends is an out-of-the-box property of every Pydantic AI declaration"),
    (("  request_limit: {min: 1, max: 2}\n", "  request_limit: {min: 1, max: 2}\nproperties:\n  mine:\n"
                                            "    always: requestz >= 0\n"), 16, "undefined name"),
])
def test_a_bad_declaration_is_refused_at_its_line(check, tmp_path, request, change, line, message) -> None:
    module = "".join(c if c.isalnum() else "_" for c in f"agents_{request.node.callspec.id}")[:60]
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "specs" / f"{module}.py").write_text(AGENTS)
    old, new = (part.replace("{module}", module) for part in change)
    text = DECLARATION.format(module=module)
    assert text.count(old) == 1
    ran = check(text.replace(old, new, 1))
    sys.modules.pop(module, None)
    assert ran.code == 2, ran.out
    assert ran.out == ""
    assert f"bad.yaml:{line}: {message.format(module=module)}" in ran.err
    assert "Traceback" not in ran.err


def test_an_output_answer_becomes_the_output_tools_call(check, tmp_path) -> None:
    """`output:` is the call of the agent's own output tool (final_result): the run ends with it."""
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "specs" / "agents_output.py").write_text(AGENTS)
    text = DECLARATION.format(module="agents_output").replace(":agent", ":structured").replace(
        "  call: {tool_calls: [{name: lookup, args: {term: x}}]}\n", "").replace(
        "done: Found it.", "done: {output: {text: Found it.}}").replace("tools:\n  lookup:\n    ok: ok\n", "")
    ran = check(text, "--format", "json")
    sys.modules.pop("agents_output", None)
    assert ran.code == 0, ran.err
    runs = json.loads(ran.out)["runs"]
    assert [{p["name"]: p.get("maximum", {}).get("value") for p in r["properties"]}["most_model_requests"]
            for r in runs] == [1, 1]
    assert [r["result"] for r in runs] == ["proved", "proved"]


OFFLINE = """\
framework: pydantic_ai
target: agents_offline:offline
prompt: Fetch it.
models:
  call: {tool_calls: [{name: fetch, args: {url: 'https://example.invalid'}}]}
  done: Fetched.
tools:
  fetch:
    cached: {returns: the cached page}
    down: {raises: ConnectionError, message: offline}
limits:
  request_limit: 2
properties:
  can_fail:
    reachable: status == tool_error
  can_answer_after_a_fetch:
    reachable: status == done and tool_calls == 1
"""


def test_scripted_returns_and_failures_never_run_the_real_tool(check, tmp_path) -> None:
    """`{returns: VALUE}` answers for the tool without running it (the real one raises here), and
    `{raises: CLASS}` ends the run with that exception: status tool_error."""
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "specs" / "agents_offline.py").write_text(AGENTS)
    ran = check(OFFLINE, "--format", "json")
    sys.modules.pop("agents_offline", None)
    assert ran.code == 0, ran.out
    (run,) = json.loads(ran.out)["runs"]
    found = {p["name"]: p for p in run["properties"]}
    assert (run["result"], found["bound_code"]["status"]) == ("proved", "holds")
    assert [s["choices"] for s in found["can_fail"]["witness"]["steps"]] == [
        {}, {"model": "call"}, {"fetch": "down"}]
    assert found["can_answer_after_a_fetch"]["status"] == "holds"
    assert (found["most_model_requests"]["maximum"]["value"], found["request_limit_error"]["possible"]) == (2, True)


# ---------------------------------------------------------------- deps and the app's own model (issue 27)

def _orders(text: str | None = None, **options) -> list:
    from haltproof.explorer.check import Options, check_spec
    from haltproof.machine.spec import load_spec, parse_spec
    spec = load_spec(EXAMPLE / "orders.yaml") if text is None else parse_spec(text, str(EXAMPLE / "variant.yaml"))
    return check_spec(spec, Options(**options))


def test_the_orders_agents_tool_runs_as_written_with_its_deps() -> None:
    """orders.py's tool reads its order service from `ctx.deps` (deps_type=Deps); orders.yaml
    gives the deps, the service's `status` scripted (its `async def` kept: the tool awaits it).
    The model looks the order up until a status comes back (`when: tool_calls == 0`): two
    timeouts and a success, then the answer, is the longest run: 4 requests, safe from 4."""
    from haltproof.reports.report import to_json
    runs = _orders()
    assert [(r.params["request_limit"], r.result, r.stats["states"]) for r in runs] == [
        (2, "proved", 15), (3, "proved", 21), (4, "proved", 22), (5, "proved", 22)]
    assert [maxima(r) for r in runs] == [
        {"most_model_requests": n, "most_tool_runs": t, "most_successful_tool_calls": 1}
        for n, t in ((2, 2), (3, 3), (4, 3), (4, 3))]
    assert [(results(r)["request_limit_error"].value["possible"], results(r)["retries_error"].value["possible"])
            for r in runs] == [(True, False), (True, True), (False, True), (False, True)]
    rows = {row["property"]: row["message"] for row in to_json(runs)["sweeps"][0]["smallest_safe"]}
    assert rows == {"request_limit_error": "request_limit_error unreachable from request_limit=4 on (swept 2..5; "
                                           "reachable at request_limit=3)"}
    doc = (ROOT / "docs" / "how-to" / "pydantic-ai.md").read_text()
    assert "```yaml\n" + (EXAMPLE / "orders.yaml").read_text() + "```" in doc
    assert "cd examples/frameworks/pydantic_ai && haltproof check orders.yaml\n" in doc
    assert "States per run (2 to 5): 15,\n21, 22, 22." in doc
    witness = results(runs[1])["retries_error"].witness
    assert [(s.action, s.choices, s.state["status"]) for s in witness.steps[1:]] == [
        ("request", {"model": "look_up"}, "running"), ("tools", {"orders_status_returns": "timeout"}, "running"),
        ("request", {"model": "look_up"}, "running"), ("tools", {"orders_status_returns": "timeout"}, "running"),
        ("request", {"model": "look_up"}, "running"),
        ("tools", {"orders_status_returns": "timeout"}, "retries_exhausted")]


def test_without_the_guard_the_declared_model_calls_again_after_a_success() -> None:
    """Issue 27: a model that may look the order up again after the status came back (which the
    app's own model never does) reaches request_limit at every value; `when:` is what keeps it."""
    from haltproof.reports.report import to_json
    text = (EXAMPLE / "orders.yaml").read_text().replace(", when: tool_calls == 0}", "}")
    assert "when:" not in text.split("models:")[1]
    rows = {row["property"]: row["message"] for row in to_json(_orders(text))["sweeps"][0]["smallest_safe"]}
    assert rows["request_limit_error"] == ("request_limit_error reachable at every swept request_limit (2..5): "
                                           "no safe value")


@pytest.mark.slow
def test_the_orders_agents_answers_are_what_pydantic_ai_does_on_replay(cli, tmp_path, monkeypatch) -> None:
    """The request limit's error at 3 (one below the smallest safe value) and the worst case of 4
    requests, replayed through Pydantic AI itself by the emitted regression tests."""
    text = (EXAMPLE / "orders.yaml").read_text().replace("{min: 2, max: 5}", "[3, 4]")
    emitted_tests_replay(
        cli, tmp_path, monkeypatch, apps=(EXAMPLE / "orders.py",),
        declaration=text + "properties:\n  never_the_request_limit_error:\n    always: status != request_limit_exceeded\n"
                           "  three_requests_at_most:\n    maximum: requests\n    at_most: 3\n",
        expected={
            "test_replayed_never_the_request_limit_error_request_limit3.py":
                "never_the_request_limit_error is not fixed: the recorded counterexample still breaks it: false in "
                "the state after step 7",
            "test_replayed_three_requests_at_most_request_limit4.py":
                "three_requests_at_most is not fixed: the recorded counterexample still breaks it: the state after "
                "step 7 has 4, more than at_most 3"})


@pytest.mark.parametrize("change, line, message", [
    ("  orders:\n    status:\n      scripted: {ok: x}\n      sync: true\n", 9,
     "deps: orders.status: a scripted callable has the keys scripted and async only: 'sync'"),
    ("  orders: {param: client}\n", 8, "deps: orders names no param 'client' (params: request_limit)"),
    ("  order: {}\n", 7, "making Deps from the deps fields failed: TypeError: Deps.__init__() got an unexpected "
                        "keyword argument 'order'"),
    ("  orders:\n    status:\n      scripted: {ok: x}\n      async: maybe\n", 11,
     "deps: orders.status: async must be true or false: 'maybe'"),
])
def test_bad_deps_are_refused_at_their_line(check, tmp_path, change, line, message) -> None:
    (tmp_path / "specs").mkdir(exist_ok=True)
    (tmp_path / "specs" / "orders.py").write_text((EXAMPLE / "orders.py").read_text())
    text = (EXAMPLE / "orders.yaml").read_text()
    deps = text[text.index("deps:\n"):text.index("models:")]
    ran = check(text.replace(deps, "deps:\n" + change))
    assert ran.code == 2, ran.out
    assert f"bad.yaml:{line}: {message}" in ran.err
    assert "Traceback" not in ran.err


CACHE_APP = '''\
from dataclasses import dataclass, field

from pydantic_ai import Agent, RunContext


@dataclass
class Deps:
    seen: dict = field(default_factory=dict)


agent = Agent(deps_type=Deps)


@agent.tool
def look_up(ctx: RunContext[Deps], order_id: str) -> str:
    """Look an order up."""
    ctx.deps.seen[order_id] = "shipped"
    return "shipped"


@agent.tool
def summary(ctx: RunContext[Deps]) -> str:
    """What was looked up."""
    return ", ".join(ctx.deps.seen)
'''


def test_a_scripted_tool_that_skips_a_deps_write_another_tool_reads_is_a_warning_at_its_line(
        cli, tmp_path, monkeypatch) -> None:
    (tmp_path / "cache_app.py").write_text(CACHE_APP)
    (tmp_path / "d.yaml").write_text(
        "framework: pydantic_ai\ntarget: cache_app:agent\nprompt: Where is A-17?\ndeps: {}\n"
        "models:\n  ask: {tool_calls: [{name: look_up, args: {order_id: A-17}}]}\n  answer: Shipped.\n"
        "tools:\n  look_up:\n    ok: ok\n    canned: {returns: shipped}\n"
        "limits:\n  request_limit: 2\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "cache_app", raising=False)
    ran = cli("check", "d.yaml")
    sys.modules.pop("cache_app", None)
    assert ran.code == 0, ran.out
    assert ("warnings:\n  d.yaml:11: outcome canned of tool look_up leaves out what look_up writes to deps.seen, "
            "which tool summary reads: a scripted outcome replaces the tool's code, so deps.seen keeps its old "
            "value there; script what look_up calls instead (deps:), or let it run\n\n") in ran.out
