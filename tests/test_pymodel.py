"""Machines declared in plain Python (machine.pymodel): same engine, same verdicts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.api import check
from machine.errors import SpecError
from machine.pymodel import Model, action, always, independent_of, reachable, terminates, variant

from conftest import ROOT

sys.path.insert(0, str(ROOT / "docs" / "examples"))
from retry_model import RetryLoop  # noqa: E402


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


# ------------------------------------------------------------------ --timeout bounds the model's own code

TESTS = ROOT / "tests"
STUCK_AT = "running Retry.call_tool (outcome=error) from state calls=1 status=running"


def _process(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    """Python in its own process, with tests/stuck_code.py importable: a model that never
    returns shows as TimeoutExpired here, never as a stuck test run."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(ROOT)])}
    return subprocess.run([sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("model", ["Retry", "SleepingRetry"], ids=["spins", "sleeps"])
def test_timeout_ends_a_check_whose_model_action_never_returns(tmp_path, model):
    ran = _process("-m", "explorer.cli", "check", f"stuck_code:{model}", "--timeout", "2", "--format", "json",
                   cwd=tmp_path)
    assert ran.returncode == 3, ran.stderr
    (run,) = json.loads(ran.stdout)["runs"]
    assert (run["result"], run["stopped_by"]) == ("incomplete", "timeout")
    assert run["stop_reason"] == f"stopped at 4 states: --timeout 2 s reached while {STUCK_AT}"


def test_timeout_ends_a_model_check_from_the_python_api(tmp_path):
    script = ("import json\n"
              "from explorer.api import check\n"
              "from stuck_code import SleepingRetry\n"
              "report = check(SleepingRetry, timeout=2)\n"
              "print(json.dumps([report.result, report.exit_code, report.runs[0].stop_reason]))\n")
    ran = _process("-c", script, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == ["incomplete", 3,
                                      f"stopped at 4 states: --timeout 2 s reached while {STUCK_AT}"]


def test_timeout_bounds_the_model_init_on_the_cli_and_in_the_api(tmp_path):
    ran = _process("-m", "explorer.cli", "check", "stuck_code:SpinningInit", "--timeout", "2", cwd=tmp_path)
    assert ran.returncode == 3 and ran.stdout == ""
    assert ran.stderr == "haltproof: incomplete: --timeout reached while instantiating the model SpinningInit with K=3\n"
    script = ("from explorer.api import check\n"
              "from stuck_code import SpinningInit\n"
              "try:\n"
              "    check(SpinningInit, timeout=2)\n"
              "except TimeoutError as exc:\n"
              "    print(exc)\n")
    ran = _process("-c", script, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == ("haltproof: the timeout of 2 s passed while instantiating the model SpinningInit "
                          "with K=3; nothing was checked\n")


def test_timeout_in_a_count_after_a_full_exploration_keeps_what_was_decided(tmp_path):
    ran = _process("-m", "explorer.cli", "check", "stuck_code:SpinningCount", "--timeout", "2", "--format", "json",
                   cwd=tmp_path)
    assert ran.returncode == 3, ran.stderr
    (run,) = json.loads(ran.stdout)["runs"]
    assert (run["result"], run["stopped_by"], run["stats"]["states"]) == ("incomplete", "timeout", 7)
    assert run["stop_reason"] == ("--timeout 2 s reached after the exploration, while counting the transitions "
                                  "of calls_bounded: running _spinning_count from state calls=2 status=running")
    statuses = {p["name"]: (p["status"], p["message"]) for p in run["properties"]}
    assert statuses["bound_code"][0] == "holds"
    assert statuses["calls_bounded"] == ("unknown", "not decided: the --timeout passed while counting its "
                                                    "transitions")
