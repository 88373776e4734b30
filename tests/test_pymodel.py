"""Machines declared in plain Python (machine.pymodel): same engine, same verdicts."""

from __future__ import annotations

import sys

import pytest

from explorer.api import check
from machine.errors import SpecError
from machine.pymodel import Model, action, always, independent_of, reachable, terminates, variant

from conftest import ROOT

sys.path.insert(0, str(ROOT / "docs" / "examples"))
from retry_model import RetryLoop  # noqa: E402

pytestmark = pytest.mark.verdict      # judges verdicts: in the per-mutant selection (docs/mutation.md)


def test_python_model_matches_the_yaml_spec_state_for_state():
    py = check(RetryLoop)
    yaml = check(ROOT / "docs" / "examples" / "retry_loop.yaml")
    assert py.result == "proved" and len(py.runs) == 12
    assert [(r.params, r.stats["states"], r.stats["transitions"]) for r in py.runs] == \
           [(r.params, r.stats["states"], r.stats["transitions"]) for r in yaml.runs]
    run = py.runs[-1]
    assert run.explored == "code: retry_model:RetryLoop"
    assert [p.name for p in run.properties] == ["domains", "well_defined", "bound_code", "budget_respected",
                                                 "retries_bounded", "can_finish", "bounded"]
    assert run.coverage["rules"]["retry"] > 0 and run.coverage["rules"]["exhausted"] == 0


class Broken(RetryLoop):
    """Retries past the budget: the budget check forgotten."""

    @action(when=lambda s, p: s["status"] == "running", outcome=["ok", "error"],
            rules=["finished", "gave_up", "retry"])
    def call_tool(self, s, p, outcome):
        calls = s["calls"] + 1
        fails = s["fails"] + (outcome == "error")
        if outcome == "ok":
            return {"calls": calls, "fails": fails, "status": "done"}, "finished"
        if fails > p["R"]:
            return {"calls": calls, "fails": fails, "status": "failed"}, "gave_up"
        return {"calls": calls, "fails": fails, "status": "running"}, "retry"


def test_a_broken_python_model_is_caught_with_the_shortest_trace():
    report = check(Broken, params={"K": 2, "R": 2})
    (run,) = report.runs
    dom = next(p for p in run.properties if p.name == "domains")
    assert dom.status == "violated"
    assert len(dom.trace) == 3 and dom.trace.steps[-1].state["calls"] == 3
    assert [s.choices for s in dom.trace.steps[1:3]] == [{"outcome": "error"}] * 2   # two retries
    assert dom.trace.steps[-1].choices == {"outcome": "ok"}      # then any third call overflows
    with pytest.raises(AssertionError, match="domains"):
        report.assert_proved()


class Loops(Model):
    params = {"N": [2]}

    def domains(self, p):
        return {"x": range(0, p["N"] + 1), "mode": ["a", "b"]}

    def init(self, p):
        return [{"x": 0, "mode": "a"}, {"x": 0, "mode": "b"}]

    def terminal(self, s, p):
        return s["x"] == p["N"]

    @action(d=[0, 1])
    def move(self, s, p, d):
        if s["mode"] == "b" and d == 1:
            return {"x": s["x"], "mode": s["mode"]}        # reads the label: stays put
        return {"x": min(s["x"] + d, p["N"]), "mode": s["mode"]}

    stops = terminates()
    ignores_mode = independent_of("mode")
    rises = variant(lambda s, p: s["x"], bound=lambda p: p["N"])

    @always
    def small(self, s, p):
        return s["x"] <= p["N"]

    @reachable
    def done(self, s, p):
        return s["x"] == p["N"]


def test_cycles_variants_and_independence_in_python_models():
    (run,) = check(Loops).runs
    props = {p.name: p for p in run.properties}
    assert props["stops"].status == "violated" and props["stops"].trace.kind == "lasso"
    assert props["stops"].trace.loop_start == 0 and len(props["stops"].trace) == 1
    assert props["rises"].status == "violated"
    assert props["ignores_mode"].status == "violated"
    assert props["small"].status == "holds" and props["done"].status == "holds"


class Raises(Loops):
    @action(d=[0, 1])
    def move(self, s, p, d):
        if s["x"] == 1:
            raise KeyError("boom")
        return {"x": s["x"] + 1, "mode": s["mode"]}


class Flaky(Loops):
    calls = 0

    @action(d=[1])
    def move(self, s, p, d):
        type(self).calls += 1
        return {"x": s["x"] + 1, "mode": "a" if type(self).calls % 2 else "b"}


class Outside(Loops):
    @action(d=[5])
    def move(self, s, p, d):
        return {"x": s["x"] + d, "mode": s["mode"]}


def test_code_errors_are_findings():
    (run,) = check(Raises).runs
    code = next(p for p in run.properties if p.name == "bound_code")
    assert code.status == "violated" and "KeyError: 'boom'" in code.message and "in move" in code.message
    assert code.trace.steps[-1].state["x"] == 1
    (run,) = check(Flaky).runs
    assert "nondeterministic" in next(p for p in run.properties if p.name == "bound_code").message
    (run,) = check(Outside).runs
    dom = next(p for p in run.properties if p.name == "domains")
    assert dom.status == "violated" and "x = 5 is outside its domain {0, 1, 2}" in dom.message


def test_a_model_without_actions_is_a_spec_error():
    class Empty(Model):
        def domains(self, p):
            return {"x": [0]}

        def init(self, p):
            return [{"x": 0}]
    with pytest.raises(SpecError, match="has no @action method"):
        check(Empty)


def test_cli_checks_module_colon_class(cli, monkeypatch):
    monkeypatch.chdir(ROOT / "docs" / "examples")
    ran = cli("check", "retry_model:RetryLoop", "-p", "K=3", "-p", "R=1")
    assert ran.code == 0
    assert "retry_model.py  [RetryLoop]  K=3 R=1" in ran.out
    bad = cli("check", "retry_model:Nope")
    assert bad.code == 2 and "cannot load the model" in bad.err
