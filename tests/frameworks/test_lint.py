"""`haltproof lint`: the planted shape bugs of tests/fixtures/lint/ are each found, at their line, with
the introspection that saw them and the check that settles them; every example app is linted clean;
bad input is exit 2 with a clear message (3 when --timeout cuts an import short)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from haltproof.frameworks.introspect import shaped_frameworks

from ci_reports import assert_valid
from conftest import ROOT
from framework_helpers import fresh_modules

FIXTURES = ROOT / "tests" / "fixtures" / "lint"
LG, OA, PA, AD = "lint_langgraph_broken", "lint_agents_broken", "lint_pydantic_ai_broken", "lint_adk_broken"

# target -> every finding: (rule, subject, line in the target's module)
PLANTED = {
    f"{LG}:no_exit": [("cycle-without-exit", "cycle act -> plan -> act", 32)],
    f"{LG}:unreachable": [("unreachable", "node orphan", 39)],
    f"{LG}:stuck": [("cycle-without-exit", "cycle retry -> wait -> retry", 59),
                    ("end-unreachable", "node escalate", 53)],
    f"{LG}:unknown_route": [("unknown-route", "node agent", 67), ("unknown-route", "node review", 72)],
    f"{LG}:unbounded": [("cycle-exits-by-model-only", "edge agent -> __end__", 91),
                        ("limit-unbounded", "recursion_limit", 100)],
    f"{LG}:defaulted": [("limit-default", "recursion_limit", 101)],
    f"{OA}:start": [("unreachable", "agent Orphan", 14)],
    f"{OA}:gate": [("cycle-without-exit", "cycle Stuck -> Stuck", 19), ("end-unreachable", "agent Gate", 21)],
    f"{OA}:booker": [("unknown-route", "agent Booker", 24)],
    f"{OA}:looper": [("cycle-exits-by-model-only", "edge Looper -> __end__", 26), ("limit-unbounded", "max_turns", 31)],
    f"{OA}:plain": [("limit-default", "max_turns", 32)],
    f"{PA}:unbounded": [("cycle-exits-by-model-only", "edge call_tools -> end", 5),
                        ("limit-unbounded", "request_limit", 18)],
    f"{PA}:defaulted": [("limit-default", "request_limit", 19)],
    f"{PA}:named": [("cycle-exits-by-model-only", "edge call_tools -> end", 8), ("limit-unbounded", "request_limit", 20)],
    f"{AD}:forever": [("cycle-without-exit", "cycle Checker -> Drafter -> Checker", 14),
                      ("end-unreachable", "agent Forever", 14)],
    f"{AD}:pipeline": [("cycle-without-exit", "cycle Polisher -> Polisher", 19), ("unreachable", "agent Publisher", 20),
                       ("end-unreachable", "agent Pipeline", 18), ("end-unreachable", "agent Polish", 19)],
    f"{AD}:desk": [("cycle-exits-by-model-only", "edge Desk -> __end__", 23), ("limit-unbounded", "max_llm_calls", 28)],
    f"{AD}:greeter": [("limit-default", "max_llm_calls", 40)],
}

EXAMPLES = [("langgraph", "react:build_graph"), ("langgraph", "supervisor:build_graph"), ("langgraph", "fanout:graph"),
            ("langgraph", "research:graph"), ("openai_agents", "triage:triage_agent"),
            ("openai_agents", "travel:travel_agent"), ("openai_agents", "support:triage_agent"),
            ("pydantic_ai", "weather:agent"), ("pydantic_ai", "trip:agent"), ("pydantic_ai", "orders:agent"),
            ("adk", "refine:root_agent"), ("adk", "coordinator:root_agent")]


@pytest.fixture
def fixtures(monkeypatch):
    """Run in tests/fixtures/lint, its modules imported fresh and forgotten after."""
    monkeypatch.chdir(FIXTURES)
    with fresh_modules(monkeypatch, (LG, OA, PA, AD)):
        yield FIXTURES


@pytest.mark.parametrize("target", sorted(PLANTED))
def test_lint_finds_each_planted_shape_bug_at_its_line(cli, fixtures, target):
    ran = cli("lint", target, "--format", "json")
    assert ran.code == 1, ran.err
    data = ran.json()
    assert data["schema"] == "haltproof-lint/1" and data["result"] == "findings" and data["exit_code"] == 1
    module = target.partition(":")[0]
    assert [(f["rule"], f["subject"], f["file"], f["line"]) for f in data["findings"]] == \
        [(rule, subject, f"{module}.py", line) for rule, subject, line in PLANTED[target]]
    stem = target.partition(":")[2]
    for f in data["findings"]:
        assert f["introspection"]
        assert f["prove"].startswith(f"haltproof init {target} -o {stem}.yaml && haltproof check {stem}.yaml")


def test_every_rule_is_planted_once_per_framework_that_can_express_it():
    """LangGraph and the OpenAI Agents SDK can express every shape bug; Pydantic AI's run graph is the
    same for every agent (request, tools, end), so only its limits can be wrong; an ADK tree's routes
    are its own (transfers ADK allows, its workflow agents' order), so none is unknown."""
    rules: dict[str, set[str]] = {LG: set(), OA: set(), PA: set(), AD: set()}
    for target, found in PLANTED.items():
        rules[target.partition(":")[0]] |= {rule for rule, _, _ in found}
    every = {"cycle-without-exit", "cycle-exits-by-model-only", "unreachable", "end-unreachable", "unknown-route",
             "limit-default", "limit-unbounded"}
    assert rules == {LG: every, OA: every, PA: {"cycle-exits-by-model-only", "limit-default", "limit-unbounded"},
                     AD: every - {"unknown-route"}}


@pytest.mark.parametrize("folder,target", EXAMPLES)
def test_lint_is_silent_on_every_example_app(cli, monkeypatch, folder, target):
    monkeypatch.chdir(ROOT / "examples" / "frameworks" / folder)
    with fresh_modules(monkeypatch, (target.partition(":")[0],)):
        ran = cli("lint", target)
    assert (ran.code, ran.out, ran.err) == (0, f"lint {target} ({folder}): no findings\n", "")


def test_every_example_app_is_linted():
    apps = {(p.parent.name, p.stem) for p in (ROOT / "examples" / "frameworks").glob("*/*.py")
            if "adapter" not in p.stem and not p.stem.startswith("guarded_")      # guarded_*: an app run under its guard
            and p.parent.name in shaped_frameworks()}      # CrewAI: init and lint do not read it yet
    assert apps == {(folder, t.partition(":")[0]) for folder, t in EXAMPLES}


def test_the_text_report_says_where_what_how_and_which_check(cli, fixtures):
    ran = cli("lint", f"{LG}:no_exit")
    assert ran.code == 1
    assert ran.out == (
        f"{LG}.py:32: cycle-without-exit: cycle act -> plan -> act: no edge leaves the cycle act -> plan -> act: "
        "a run that enters it never ends on its own, only by the framework's limit error\n"
        "  seen by: the graph's edges (add_edge)\n"
        f"  prove or refute: haltproof init {LG}:no_exit -o no_exit.yaml && haltproof check no_exit.yaml "
        "(run_ends; limit_error is reachable at every limit)\n"
        f"lint {LG}:no_exit (langgraph): 1 finding\n")


def test_github_annotations_one_error_per_finding(cli, fixtures):
    ran = cli("lint", f"{OA}:booker", "--format", "github")
    assert ran.code == 1
    assert ran.out == (
        f"::error file={OA}.py,line=24,title=haltproof lint%3A unknown-route::agent Booker: Booker can send the run "
        "to 'book', which is not one of its targets (book_hotel) (seen by the agent's tool_use_behavior "
        "(stop_at_tool_names) against its function tools; prove or refute: haltproof init "
        f"{OA}:booker -o booker.yaml && haltproof check booker.yaml (a run that takes it ends in the framework's "
        "error: a bound_code finding with its trace))\n")


def test_sarif_is_valid_and_locates_each_finding(cli, fixtures, validator):
    ran = cli("lint", f"{LG}:stuck", "--format", "sarif")
    assert ran.code == 1
    log = json.loads(ran.out)
    assert_valid(validator, log)
    run = log["runs"][0]
    assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
             r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in run["results"]] == \
        [("cycle-without-exit", f"{LG}.py", 59), ("end-unreachable", f"{LG}.py", 53)]
    again = json.loads(cli("lint", f"{LG}:stuck", "--format", "sarif").out)
    assert [r["partialFingerprints"] for r in again["runs"][0]["results"]] == \
        [r["partialFingerprints"] for r in run["results"]]


def test_sarif_of_a_clean_target_is_valid_and_empty(cli, monkeypatch, validator):
    monkeypatch.chdir(ROOT / "examples" / "frameworks" / "pydantic_ai")
    with fresh_modules(monkeypatch, ("weather",)):
        ran = cli("lint", "weather:agent", "--format", "sarif")
    assert ran.code == 0
    log = json.loads(ran.out)
    assert_valid(validator, log)
    assert log["runs"][0]["results"] == []


@pytest.mark.parametrize("target,message", [
    ("nowhere:graph", "error: nowhere:graph: cannot import the target's module: ModuleNotFoundError: "
                      "No module named 'nowhere'\n"),
    (f"{LG}:missing", f"error: {LG}:missing: module {LG} has no 'missing'\n"),
    ("json:dumps", "error: json:dumps is a function, not a compiled LangGraph graph (or a function building one "
                   "from its chat models), an OpenAI Agents Agent, a Pydantic AI Agent or a Google ADK agent\n"),
    (f"{LG}:llm", f"error: {LG}:llm is a GenericFakeChatModel, not a compiled LangGraph graph (or a function "
                  "building one from its chat models), an OpenAI Agents Agent, a Pydantic AI Agent or a Google ADK "
                  "agent\n"),
    (f"{AD}:config", f"error: {AD}:config is a RunConfig, not a compiled LangGraph graph (or a function "
                     "building one from its chat models), an OpenAI Agents Agent, a Pydantic AI Agent or a Google "
                     "ADK agent\n"),
    ("no_colon", "error: no_colon: target must name the object as module:attr\n"),
])
def test_bad_targets_are_exit_2_with_a_clear_message(cli, fixtures, target, message):
    ran = cli("lint", target)
    assert (ran.code, ran.out, ran.err) == (2, "", message)


def test_a_target_that_hangs_on_import_is_cut_short_by_timeout(cli, tmp_path, monkeypatch):
    (tmp_path / "hangs_on_import.py").write_text("import time\ntime.sleep(60)\n")
    monkeypatch.chdir(tmp_path)
    with fresh_modules(monkeypatch, ("hangs_on_import",)):
        ran = cli("lint", "hangs_on_import:graph", "--timeout", "1")
    assert (ran.code, ran.out) == (3, "")
    assert ran.err == ("haltproof: incomplete: --timeout reached while importing the target's module "
                       "hangs_on_import (target: hangs_on_import:graph)\n")


def test_a_builder_function_that_raises_is_exit_2(cli, tmp_path, monkeypatch):
    (tmp_path / "raising_builder.py").write_text(
        "from langgraph.graph import StateGraph\n\ndef build(model):\n    raise RuntimeError('no key')\n")
    monkeypatch.chdir(tmp_path)
    with fresh_modules(monkeypatch, ("raising_builder",)):
        ran = cli("lint", "raising_builder:build")
    assert (ran.code, ran.err) == (2, "error: raising_builder:build: building the graph with raising_builder:build"
                                      "(model) failed: RuntimeError: no key\n")


def test_fixtures_are_written_as_the_tests_read_them():
    """The planted lines are where the fixtures' comments say the bugs are (a moved line fails here first)."""
    text = (FIXTURES / f"{LG}.py").read_text().splitlines()
    assert text[31] == 'b.add_edge("plan", "act")'
    assert text[66] == '    return "finish"'
    assert Path(FIXTURES / f"{OA}.py").read_text().splitlines()[23].startswith('booker = Agent(name="Booker"')
    adk = Path(FIXTURES / f"{AD}.py").read_text().splitlines()
    assert adk[27].lstrip().startswith("async for _ in desk_runner.run_async(")
    assert adk[39].lstrip().startswith("return list(greeter_runner.run(")


def test_the_docs_example_is_what_lint_prints(cli, fixtures):
    import re
    doc = (ROOT / "docs" / "how-to" / "lint.md").read_text()
    (command,) = [b.strip() for b in re.findall(r"```bash\n(.*?)```", doc, re.S)]
    ran = cli(*command.split()[1:])
    assert ran.code == 1
    assert f"exits 1 and prints\n\n```\n{ran.out}```" in doc
