"""`check --determinism full|sample|off`: which transitions run the bound code twice, what
that costs, and that a nondeterministic adapter is still caught (machine/binding.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from haltproof.explorer.options import Options
from haltproof.explorer.check import check_spec
from haltproof.machine.binding import FULL_UP_TO, declared_states, determinism_for
from haltproof.machine.compiled import CompiledSpec
from haltproof.machine.spec import load_spec

from conftest import LOOP_DEMO
from test_binding import bound_copy

pytestmark = pytest.mark.verdict      # judges verdicts: in the per-mutant selection (docs/explanation/mutation-testing.md)

TESTS = Path(__file__).resolve().parent.parent
PINS = ("-p", "max_steps=2", "-p", "max_retries=1")    # 112 states, 105 transitions, 21 non-terminal


@pytest.fixture(autouse=True)
def _tests_importable(monkeypatch):
    """`bind: broken_decides:Name` imports from this directory, wherever pytest was started."""
    monkeypatch.syspath_prepend(str(TESTS))


def _run(cli, *args: str) -> tuple[int, dict]:
    ran = cli("check", *args, "--format", "json")
    (run,) = json.loads(ran.out)["runs"]
    return ran.code, run


@pytest.mark.parametrize("mode, calls", [("full", 105), ("sample", 21), ("off", 0)])
def test_each_mode_runs_the_code_twice_where_it_says(cli, mode, calls):
    """full: every transition again; sample: each non-terminal state's first transition; off: none."""
    code, run = _run(cli, LOOP_DEMO, *PINS, "--determinism", mode)
    assert code == 0 and run["stats"]["transitions"] == 105
    assert run["determinism"]["mode"] == mode and run["determinism"]["why"] == f"--determinism {mode}"
    assert run["determinism"]["extra_calls"] == calls
    assert isinstance(run["determinism"]["seconds"], float)


def test_auto_is_full_for_a_small_declared_space(cli):
    code, run = _run(cli, LOOP_DEMO, *PINS)
    assert code == 0
    assert run["determinism"] == {**run["determinism"], "mode": "full", "extra_calls": 105,
                                  "why": f"auto: 4,536 declared states, at most {FULL_UP_TO:,}"}


def test_auto_samples_a_large_declared_space(monkeypatch):
    m = CompiledSpec(load_spec(LOOP_DEMO)).instantiate({"max_steps": 2, "max_retries": 1})
    assert declared_states(m) == 3 * 3 * 2 * 6 * 6 * 7
    monkeypatch.setattr("haltproof.machine.binding.FULL_UP_TO", 4_535)
    chosen = determinism_for(m, "auto")
    assert (chosen.mode, chosen.why) == ("sample", "auto: 4,536 declared states, more than 4,535")


@pytest.mark.parametrize("mode", ["full", "sample"])
def test_a_nondeterministic_adapter_is_caught(cli, tmp_path, mode):
    code, run = _run(cli, bound_copy(tmp_path, "broken_decides:Flaky"), *PINS, "--determinism", mode)
    assert code == 1
    p = next(p for p in run["properties"] if p["name"] == "bound_code")
    assert p["status"] == "violated"
    assert p["message"].startswith("action read_task_cards with obs=failed: the bound code is nondeterministic: "
                                   "two calls with the same state and choices gave ")
    assert len(p["trace"]["steps"]) == 1      # the initial state: its first transition is where it shows
    assert "'continue'" in p["message"] and "'limit'" in p["message"]


def test_off_says_plainly_that_nondeterminism_was_not_checked(cli, tmp_path):
    path = bound_copy(tmp_path, "broken_decides:Flaky")
    ran = cli("check", path, *PINS, "--determinism", "off")
    assert "determinism off: nondeterminism was not checked" in ran.out
    assert "nondeterministic:" not in ran.out
    code, run = _run(cli, path, *PINS, "--determinism", "off")
    assert run["determinism"] == {"mode": "off", "why": "--determinism off", "extra_calls": 0, "seconds": 0.0}


def test_text_says_the_mode_and_its_cost(cli):
    ran = cli("check", LOOP_DEMO, *PINS, "--determinism", "sample")
    assert "checked the bound code (state binding), determinism sample (21 extra code calls, " in ran.out
    full = cli("check", LOOP_DEMO, *PINS, "--verbose")
    assert re.search(r"\[determinism full \(every transition run twice; 105 extra code calls, \d+\.\d\d s; "
                     r"auto: 4,536 declared states, at most 100,000\)\]", full.out)
    off = cli("check", LOOP_DEMO, *PINS, "--determinism", "off", "--verbose")
    assert "[determinism off: nondeterminism was not checked (--determinism off)]" in off.out


def test_a_wrong_mode_is_a_usage_error(cli):
    ran = cli("check", LOOP_DEMO, "--determinism", "some")
    assert ran.code == 2 and "--determinism: invalid choice: 'some'" in ran.err
    with pytest.raises(ValueError, match="determinism must be one of auto, full, sample, off, got 'some'"):
        Options(determinism="some")


def test_the_model_has_no_determinism_check(cli):
    code, run = _run(cli, LOOP_DEMO, *PINS, "--model")
    assert code == 0 and "determinism" not in run


def test_the_python_api_takes_the_mode():
    (run,) = check_spec(load_spec(LOOP_DEMO), Options(pins={"max_steps": 2, "max_retries": 1}, determinism="off"))
    assert run.determinism is not None and run.determinism["extra_calls"] == 0


@pytest.mark.parametrize("args, message", [
    (("--model",), "--determinism off says how often bound code runs twice: --model explores the spec's "
                   "own stages"),
    ((), "--determinism off says how often bound code runs twice: the spec is not bound to code (no bind:)"),
])
def test_a_mode_for_no_bound_code_is_refused(cli, tmp_path, args, message):
    spec = LOOP_DEMO if args else bound_copy(tmp_path, "")
    ran = cli("check", spec, *PINS, "--determinism", "off", *args)
    assert (ran.code, ran.out) == (2, "")
    assert message in ran.err


def test_a_mode_for_a_python_model_is_refused(cli, monkeypatch):
    monkeypatch.chdir(TESTS.parent / "docs" / "examples")
    ran = cli("check", "retry_model:RetryLoop", "-p", "K=2", "--determinism", "sample")
    assert ran.code == 2
    assert "--determinism sample says how often bound code runs twice: a Python model's actions always run twice" in ran.err


def test_the_python_api_takes_the_determinism_mode():
    import haltproof
    pins = {"max_steps": 2, "max_retries": 0}
    (off,) = haltproof.check(LOOP_DEMO, params=pins, determinism="off").runs
    (full,) = haltproof.check(LOOP_DEMO, params=pins, determinism="full").runs
    assert off.determinism is not None and full.determinism is not None
    assert (off.determinism["mode"], off.determinism["extra_calls"]) == ("off", 0)
    assert full.determinism["mode"] == "full" and full.determinism["extra_calls"] > 0
    with pytest.raises(ValueError, match="determinism must be one of"):
        haltproof.check(LOOP_DEMO, params=pins, determinism="sometimes")
