"""examples/agent_loop: a framework-style async agent loop, proved as it runs, and a mutant caught.

The example is not haltproof code: agent.py is written as agent frameworks write their
loops (an async generator, limits raised as exceptions), agent.yaml declares those
exceptions, and adapter.py binds them with live binding in at most 20 lines.
"""

from __future__ import annotations

import sys
import types

import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.machine.spec import load_spec

from conftest import ROOT

EXAMPLE = ROOT / "examples" / "agent_loop"


@pytest.fixture(autouse=True)
def _in_the_example(monkeypatch):
    """Run from the example's folder, as its docstring says; its generic module names
    (agent, adapter) are imported fresh and forgotten afterwards."""
    monkeypatch.chdir(EXAMPLE)
    for name in ("agent", "adapter"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    yield
    for name in ("agent", "adapter"):
        sys.modules.pop(name, None)


def check(**options) -> list:
    return check_spec(load_spec(EXAMPLE / "agent.yaml"), Options(**options))


def test_the_adapter_is_at_most_20_lines():
    lines = [ln for ln in (EXAMPLE / "adapter.py").read_text().splitlines() if ln.strip()]
    assert len(lines) <= 20


def test_the_agent_loop_is_proved_with_the_model_s_states_for_every_param():
    code, model = check(), check(model_only=True)
    assert [(r.params, r.result, r.binding) for r in code] == [(r.params, "proved", "replay") for r in model]
    def counts(runs: list) -> list[dict]:
        return [{k: v for k, v in r.stats.items() if k != "seconds"} for r in runs]
    assert counts(code) == counts(model)
    last = code[-1]
    assert (last.params, last.stats["states"], last.stats["transitions"]) == (
        {"max_steps": 4, "max_retries": 1}, 21, 27)
    # 9 running states; the 2 with steps=4 meet the limit on every move (6); the other 7 answer (7),
    # call the tool (7 continue) or fail it: a retry where retries=0 (4 continue), else give up (3)
    assert last.coverage["rules"] == {"step_limit": 6, "answered": 7, "tool_failed": 3, "continue": 11}


def test_without_its_raises_the_step_limit_is_a_bound_code_finding(tmp_path, monkeypatch):
    text = (EXAMPLE / "agent.yaml").read_text()
    start, end = text.index("    raises:\n"), text.index("    do:\n")
    spec = tmp_path / "agent.yaml"
    spec.write_text(text[:start] + text[end:])
    (run, *_) = check_spec(load_spec(spec), Options(pins={"max_steps": 1, "max_retries": 1}))
    finding = {p.name: p for p in run.properties}["bound_code"]
    assert finding.message.startswith("action step with move=answer: the bound code raised StepLimitExceeded: "
                                      "the run used its 1 steps without an answer\n")
    assert len(finding.trace.steps) == 2


def install_mutant(source: str, monkeypatch) -> None:
    """agent.py with the step limit checked one step too late (`>` for `>=`), as module `agent`."""
    assert source.count("if steps >= max_steps:") == 1
    module = types.ModuleType("agent")
    module.__file__ = str(EXAMPLE / "agent.py")
    monkeypatch.setitem(sys.modules, "agent", module)
    exec(compile(source.replace("if steps >= max_steps:", "if steps > max_steps:"), module.__file__, "exec"),
         module.__dict__)


def test_the_off_by_one_mutant_is_caught_with_its_shortest_trace(monkeypatch):
    install_mutant((EXAMPLE / "agent.py").read_text(), monkeypatch)
    (run,) = check(pins={"max_steps": 1, "max_retries": 0})
    assert run.result == "violated"
    finding = {p.name: p for p in run.properties}["code_matches_spec"]
    assert finding.status == "violated"
    assert finding.message == (
        "action step with move=answer: the code and the spec's own stages disagree: "
        "rule: code 'answered', spec 'step_limit'; steps: code 2, spec 1; status: code answered, spec step_limit")
    # the trace ends with the drifting step as the code took it
    assert [(s.choices, s.rule, s.state) for s in finding.trace.steps] == [
        ({}, None, {"steps": 0, "retries": 0, "status": "running"}),
        ({"move": "tool_ok"}, "continue", {"steps": 1, "retries": 0, "status": "running"}),
        ({"move": "answer"}, "answered", {"steps": 2, "retries": 0, "status": "answered"}),
    ]


def test_the_binding_doc_shows_the_shipped_adapter():
    doc = (ROOT / "docs" / "how-to" / "binding.md").read_text()
    assert "```python\n" + (EXAMPLE / "adapter.py").read_text() + "```" in doc
    assert "cd examples/agent_loop && haltproof check agent.yaml" in doc


def test_conform_agrees_with_the_example_and_catches_the_mutant(cli, monkeypatch):
    ok = cli("conform", "agent.yaml", "--examples", "60")
    assert ok.code == 0, ok.out
    for name in ("agent", "adapter"):
        sys.modules.pop(name, None)
    install_mutant((EXAMPLE / "agent.py").read_text(), monkeypatch)
    caught = cli("conform", "agent.yaml", "--examples", "200", "-p", "max_steps=1", "-p", "max_retries=0")
    assert caught.code == 1
    assert caught.out.endswith(
        "  step 1: step with move=tool_ok  concrete: move=\"tool_ok\"\n"
        "  step 2: step with move=answer  concrete: move=\"answer\"\n"
        "    rule: spec 'step_limit', code 'answered'\n"
        "    steps: spec 1, code 2 (int), outside its domain 0..1\n"
        "    status: spec step_limit, code answered\n"), caught.out
