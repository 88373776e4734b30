"""`haltproof conform`: Hypothesis checks that the finite abstraction is faithful to the code.

Concrete observations are drawn from each abstract class, run through the real code and
through the spec's stages, and compared after every step. The lumping adapters live in
tests/broken_decides.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import broken_decides
from haltproof.explorer.options import Options
from haltproof.explorer.check import prepare
from haltproof.cli.main import main
from haltproof.explorer.conform import conform
from haltproof.harness.loop_binding import LoopDemoAdapter, classify
from haltproof.machine.spec import load_spec
from test_binding import TYPED

from conftest import LOOP_DEMO, MUTANTS, Ran

# one pytest-xdist worker for the whole module (scripts/test: --dist loadgroup):
# its module fixtures (failing conform runs, shrunk: seconds each) run once
pytestmark = pytest.mark.xdist_group("conform")

TESTS = Path(__file__).resolve().parent.parent
SHIPPED_BIND = "bind: haltproof.harness.loop_binding:LoopDemoAdapter"
FEW = "30"          # examples for runs that must fail: a lumped class shows up at once


@pytest.fixture(autouse=True)
def _tests_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))


def bound_copy(tmp_path: Path, bind: str | None) -> Path:
    text = LOOP_DEMO.read_text()
    assert text.count(SHIPPED_BIND) == 1
    text = text.replace(SHIPPED_BIND, f"bind: {bind}" if bind else "")
    path = tmp_path / f"{(bind or 'unbound').replace(':', '_').replace('.', '_')}.yaml"
    path.write_text(text)
    return path


def _run(*args) -> Ran:
    """`haltproof ARGS...` in-process, for module-scoped fixtures (no capsys there)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return Ran(code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="module")
def module_tmp(tmp_path_factory):
    return tmp_path_factory.mktemp("conform")


@pytest.fixture(scope="module")
def some_matches(module_tmp):
    """One failing conform of the "some matches" lumping (shrinking costs a moment; share it)."""
    import sys
    sys.path.insert(0, str(TESTS))
    try:
        path = bound_copy(module_tmp, "broken_decides:SomeMatches")
        return path, _run("conform", path, "--examples", FEW, "--seed", "0")
    finally:
        sys.path.remove(str(TESTS))


@pytest.fixture(scope="module")
def crashing(module_tmp):
    import sys
    sys.path.insert(0, str(TESTS))
    try:
        return _run("conform", bound_copy(module_tmp, "broken_decides:Crashing"), "--examples", FEW)
    finally:
        sys.path.remove(str(TESTS))


def _steps(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if re.match(r"\s+step \d+: ", ln)]


def _concrete_obs(step_line: str) -> dict:
    m = re.search(r"concrete: obs=(\{.*\})\s*$", step_line)
    assert m, step_line
    return json.loads(m.group(1))


# ------------------------------------------------------------------ the shipped harness conforms

def test_conform_loop_demo_passes(cli):
    ran = cli("conform", LOOP_DEMO)
    assert ran.code == 0, ran.out + ran.err
    assert "haltproof.harness.loop_binding:LoopDemoAdapter" in ran.out
    assert "code and spec agree" in ran.out
    assert "200 random runs" in ran.out and "seed 0" in ran.out
    compared = int(re.search(r"(\d+) steps compared", ran.out).group(1))
    assert compared >= 200                           # every run takes at least one step


def test_conform_with_examples_and_seed(cli):
    ran = cli("conform", LOOP_DEMO, "--examples", "100", "--seed", "1")
    assert ran.code == 0, ran.out + ran.err
    assert "100 random runs (seed 1)" in ran.out and "code and spec agree" in ran.out


def test_conform_is_reproducible(cli):
    a = cli("conform", LOOP_DEMO, "--examples", "60", "--seed", "7")
    b = cli("conform", LOOP_DEMO, "--examples", "60", "--seed", "7")
    assert a.code == b.code == 0
    assert a.out == b.out


def test_conform_pins_params(cli):
    ran = cli("conform", LOOP_DEMO, "--examples", "40", "-p", "max_steps=2", "-p", "max_retries=0")
    assert ran.code == 0, ran.out + ran.err


def test_the_shipped_strategies_stay_in_their_class():
    """The adapter's own strategies draw only members of their class (classify is the inverse)."""
    from hypothesis import given, settings, strategies as st
    from haltproof.harness.loop_binding import STRATEGIES

    @settings(max_examples=100, database=None, derandomize=True)
    @given(st.sampled_from(sorted(STRATEGIES)).flatmap(lambda c: st.tuples(st.just(c), STRATEGIES[c])))
    def each(pair):
        cls, obs = pair
        assert classify(obs) == cls

    each()


# ------------------------------------------------------------------ lumped abstractions are caught

def test_some_matches_lumping_is_caught_with_a_minimal_run(some_matches):
    path, ran = some_matches
    assert ran.code == 1, ran.out + ran.err
    assert "FAILED" in ran.out and "broken_decides:SomeMatches" in ran.out
    steps = _steps(ran.out)
    assert len(steps) == 1, ran.out                                   # shrunk to one step
    assert "obs=one_match" in steps[0]
    obs = _concrete_obs(steps[0])
    assert obs["ok"] is True and len(obs["matches"]) == 2             # the smallest list that differs
    assert "decision: spec success, code needs_input" in ran.out
    assert "rule: spec 'success', code 'needs_input'" in ran.out


def test_some_matches_lumping_result_structure(tmp_path):
    spec = load_spec(bound_copy(tmp_path, "broken_decides:SomeMatches"))
    machines = prepare(spec, Options(model_only=True))
    result = conform(machines, broken_decides.SomeMatches(), examples=int(FEW), seed=3)
    assert not result.ok
    step = result.first_difference
    assert step is result.steps[-1] and len(result.steps) == 1
    assert step.labels == {"obs": "one_match"}
    assert len(step.concrete["obs"]["matches"]) == 2
    assert step.spec_state["decision"] == "success" and step.code_state["decision"] == "needs_input"
    assert step.spec_rule == "success" and step.code_rule == "needs_input"


def test_a_failing_conform_is_reproducible(cli, some_matches):
    path, first = some_matches
    again = cli("conform", path, "--examples", FEW, "--seed", "0")
    assert first.code == again.code == 1
    assert first.out == again.out and "(seed 0)" in first.out


def test_failed_observations_that_carry_ok_true_are_caught(cli, tmp_path):
    path = bound_copy(tmp_path, "broken_decides:FailedSometimesOk")
    ran = cli("conform", path, "--examples", FEW, "--seed", "0")
    assert ran.code == 1, ran.out + ran.err
    steps = _steps(ran.out)
    assert len(steps) == 1
    assert "obs=failed" in steps[-1]
    obs = _concrete_obs(steps[-1])
    assert obs["ok"] is True                                          # the lumped-in member
    assert "observation: spec failed, code " in ran.out


def test_lumping_with_the_same_decision_is_caught_on_the_state(cli, tmp_path):
    """Zero and several matches both give needs_input, but the abstract state must agree too."""
    ran = cli("conform", bound_copy(tmp_path, "broken_decides:ZeroOrMany"), "--examples", FEW)
    assert ran.code == 1, ran.out + ran.err
    steps = _steps(ran.out)
    assert len(steps) == 1 and "obs=zero_matches" in steps[0]
    assert len(_concrete_obs(steps[0])["matches"]) == 2
    assert "observation: spec zero_matches, code many_matches" in ran.out
    assert "rule:" not in ran.out and "decision:" not in ran.out        # only the state differs


def test_lumping_is_not_caught_when_the_strategy_is_the_representative_only(tmp_path):
    """The exhaustive check alone cannot see a lumped class: it feeds one representative."""
    from haltproof.explorer.check import check_spec
    spec = load_spec(bound_copy(tmp_path, "broken_decides:SomeMatches"))
    assert all(r.result == "proved" for r in check_spec(spec, Options(pins={"max_steps": 2})))


# ------------------------------------------------------------------ errors

def test_conform_on_a_spec_without_bind_is_a_usage_error(cli, tmp_path):
    path = bound_copy(tmp_path, None)
    ran = cli("conform", path, "--examples", "5")
    assert ran.code == 2
    assert ran.out == ""
    assert "bind" in ran.err and path.name in ran.err and "Traceback" not in ran.err


def test_conform_on_a_mutant_without_bind_is_a_usage_error(cli):
    ran = cli("conform", MUTANTS / "limit_before_observation.yaml", "--examples", "5")
    assert ran.code == 2 and "bind" in ran.err


def test_conform_where_the_code_raises(crashing):
    ran = crashing
    assert ran.code == 1, ran.out + ran.err
    assert "internal error" not in ran.err
    assert "KeyError: 'retry_budget'" in ran.out
    assert "crashing_decide" in ran.out and "broken_decides.py" in ran.out
    steps = _steps(ran.out)
    assert len(steps) == 1 and "obs=failed" in steps[0]


def test_conform_traceback_has_only_the_users_frames(crashing):
    ran = crashing
    assert ran.code == 1 and "crashing_decide" in ran.out
    assert "explorer/conform.py" not in ran.out


def test_conform_where_concretize_raises_is_a_finding(cli, tmp_path, monkeypatch):
    (tmp_path / "hp_conform_adapters.py").write_text(
        "from haltproof.harness.loop_binding import LoopDemoAdapter\n"
        "class ConcretizeRaises(LoopDemoAdapter):\n"
        "    def concretize(self, state, params):\n"
        "        raise ValueError('cannot build a concrete state')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ran = cli("conform", bound_copy(tmp_path, "hp_conform_adapters:ConcretizeRaises"), "--examples", "5")
    assert ran.code == 1, ran.err[-600:]
    assert "internal error" not in ran.err
    assert "cannot build a concrete state" in ran.out


def test_conform_where_the_strategy_raises_is_not_an_internal_error(cli, tmp_path, monkeypatch):
    (tmp_path / "hp_conform_adapters2.py").write_text(
        "from haltproof.harness.loop_binding import LoopDemoAdapter\n"
        "class StrategyRaises(LoopDemoAdapter):\n"
        "    def strategy(self, action, choice, label):\n"
        "        raise LookupError('no strategy for ' + label)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ran = cli("conform", bound_copy(tmp_path, "hp_conform_adapters2:StrategyRaises"), "--examples", "5")
    assert ran.code in (1, 2), ran.err[-600:]
    assert "internal error" not in ran.err
    assert "no strategy for" in ran.out + ran.err


STRATEGY_MISTAKES = """\
from hypothesis import strategies as st
from haltproof.harness.loop_binding import LoopDemoAdapter

class NotAStrategy(LoopDemoAdapter):
    def strategy(self, action, choice, label):
        return 42

class RefusedStrategy(LoopDemoAdapter):
    def strategy(self, action, choice, label):
        return st.integers(5, 1)

class DrawRaises(LoopDemoAdapter):
    def strategy(self, action, choice, label):
        return super().strategy(action, choice, label).map(self.spoil)

    def spoil(self, value):
        raise ValueError("no such card")
"""


@pytest.mark.verdict
@pytest.mark.parametrize("adapter,error", [
    ("NotAStrategy", ["    the adapter's strategy for obs of action read_task_cards must be a Hypothesis strategy, got int"]),
    ("RefusedStrategy", ["    the adapter's strategy for obs of action read_task_cards raised InvalidArgument: Cannot have "
                         "max_value=1 < min_value=5",
                         "    hypothesis.errors.InvalidArgument: Cannot have max_value=1 < min_value=5"]),
    ("DrawRaises", ["    the adapter's strategy for obs of action read_task_cards raised ValueError: no such card",
                    '      File "{path}", line 17, in spoil',
                    '        raise ValueError("no such card")',
                    "    ValueError: no such card"]),
])
def test_a_strategy_that_cannot_draw_fails_its_example_with_the_users_frames_alone(cli, tmp_path, monkeypatch,
                                                                                   adapter, error):
    """A non-strategy, one Hypothesis refuses, a draw that raises: each was an internal error
    (exit 4, a traceback through Hypothesis and haltproof); now a failed example (exit 1) whose
    traceback has the user's frames and no Hypothesis ones."""
    (tmp_path / "hp_strategy_mistakes.py").write_text(STRATEGY_MISTAKES)
    monkeypatch.syspath_prepend(str(tmp_path))
    ran = cli("conform", bound_copy(tmp_path, f"hp_strategy_mistakes:{adapter}"), "--examples", "5")
    assert (ran.code, ran.err) == (1, "")
    lines = ran.out.splitlines()
    assert lines[0] == (f"conformance of loop_demo and hp_strategy_mistakes:{adapter} FAILED (seed 0): the minimal "
                        "run on which the code and the spec disagree:")
    assert re.fullmatch(r"  step 1: read_task_cards with obs=\w+", lines[3])
    assert lines[4:4 + len(error)] == [line.format(path=tmp_path / "hp_strategy_mistakes.py") for line in error]
    # a draw that raised also says which strategy (Hypothesis's note on the exception)
    assert [line.startswith("    while generating ") for line in lines[4 + len(error):]] == (
        [True] if adapter == "DrawRaises" else [])


def test_hypothesis_first_text_tables_are_built_outside_the_call_deadline(tmp_path):
    """On a cold Hypothesis cache, the first draw of the shipped adapter's `st.text()` built
    Unicode tables for a second or more inside the user's call: with `--call-timeout 1` conform
    said the draw did not return. haltproof builds them before the first draw. A process of its
    own, with a storage folder of its own, so the cache is cold."""
    env = {**os.environ, "HYPOTHESIS_STORAGE_DIRECTORY": str(tmp_path / "cold")}
    ran = subprocess.run([sys.executable, "-m", "haltproof.cli.main", "conform", str(LOOP_DEMO), "--call-timeout", "1",
                          "--examples", "30"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert (ran.returncode, ran.stderr) == (0, "")
    assert ran.stdout.startswith("conformance of loop_demo and haltproof.harness.loop_binding:LoopDemoAdapter: 30 "
                                 "random runs (seed 0), ")


def test_conform_from_the_api_agrees_on_the_shipped_adapter():
    machines = prepare(load_spec(LOOP_DEMO), Options(model_only=True))
    result = conform(machines, LoopDemoAdapter(), examples=50, seed=2)
    assert result.ok and result.examples == 50 and result.steps_compared >= 50


# ------------------------------------------------------------------ the code's values are typed

TYPED_SPEC = TYPED.replace("bind: typed_adapters:{adapter}", "bind: {adapter}")


def _typed_conform(cli, tmp_path: Path, adapter: str) -> Ran:
    """conform on test_binding's two-var spec TYPED, bound to tests/typed_adapters.py."""
    path = tmp_path / f"typed_{adapter}.yaml"
    path.write_text(TYPED.format(adapter=adapter))
    return cli("conform", path, "--examples", FEW, "--seed", "0")


def test_the_honest_typed_adapter_conforms(cli, tmp_path):
    ran = _typed_conform(cli, tmp_path, "Honest")
    assert ran.code == 0, ran.out + ran.err
    assert "code and spec agree on every step" in ran.out


@pytest.mark.parametrize("adapter,action,line", [
    ("XTrue", "late_x", "x: spec 1, code True (bool), outside its domain 0..1"),
    ("XFloat", "late_x", "x: spec 1, code 1.0 (float), outside its domain 0..1"),
    ("LitOne", "late_lit", "lit: spec true, code 1 (int), outside its domain true/false")])
def test_a_value_of_the_wrong_type_from_the_code_fails_conformance(cli, tmp_path, adapter, action, line):
    """True == 1 == 1.0: a plain comparison took each for the spec's value."""
    ran = _typed_conform(cli, tmp_path, adapter)
    assert ran.code == 1, ran.out + ran.err
    assert ran.err == "" and f"typed_adapters:{adapter} FAILED" in ran.out
    assert _steps(ran.out) == [f"  step 1: {action} with no choices"]        # shrunk to the one step
    assert ran.out.endswith(f"\n    {line}\n")


def _conform_tmp_adapter(cli, tmp_path: Path, monkeypatch, spec: str, module: str, source: str) -> Ran:
    (tmp_path / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / f"{module}.yaml"
    path.write_text(spec)
    return cli("conform", path, "--examples", FEW, "--seed", "0")


@pytest.mark.parametrize("module,returned,shown", [
    ("hp_nodict_list", "[concrete['x'], concrete['lit']]", "got list"),
    ("hp_nodict_none", "None", "got NoneType")])
def test_abstract_returning_no_dict_fails_conformance_cleanly(cli, tmp_path, monkeypatch, module, returned,
                                                             shown):
    ran = _conform_tmp_adapter(cli, tmp_path, monkeypatch, TYPED_SPEC.format(adapter=f"{module}:NoDict"),
                               module,
                               "from typed_adapters import Honest\n"
                               "class NoDict(Honest):\n"
                               "    def abstract(self, concrete, params):\n"
                               f"        return {returned}\n")
    assert ran.code == 1, ran.out + ran.err
    assert "internal error" not in ran.err and "Traceback" not in ran.out + ran.err
    assert ran.out.endswith("  step 1: inc with no choices\n    the adapter's abstract() must return a "
                            f"dict over the spec's vars ['x', 'lit'], {shown}\n")


def test_a_var_missing_from_the_code_state_is_shown_as_missing(cli, tmp_path, monkeypatch):
    ran = _conform_tmp_adapter(cli, tmp_path, monkeypatch, TYPED_SPEC.format(adapter="hp_nolit:NoLit"),
                               "hp_nolit",
                               "from typed_adapters import Honest\n"
                               "class NoLit(Honest):\n"
                               "    def abstract(self, concrete, params):\n"
                               "        return {'x': concrete['x']}\n")
    assert ran.code == 1, ran.out + ran.err
    assert ran.out.endswith("  step 1: inc with no choices\n    lit: spec false, code (missing)\n")


BEYOND = """\
machine: beyond
bind: hp_beyond:Beyond
vars:
  x: {type: int, min: 0, max: 1, init: 0}
actions:
  inc: {when: x < 2, do: [{set: {x: x + 1}}]}
  back: {when: x == 2, do: [{set: {x: 0}}]}
terminal: x == 3
"""


def test_a_run_stops_where_the_spec_itself_leaves_its_domain(cli, tmp_path, monkeypatch):
    """x=2 is outside the spec's own domain (`check` reports it and explores nothing beyond);
    the code agrees up to there, and what it does from x=2 on is not compared."""
    ran = _conform_tmp_adapter(cli, tmp_path, monkeypatch, BEYOND, "hp_beyond",
                               "from typed_adapters import Honest\n"
                               "class Beyond(Honest):\n"
                               "    def step(self, action, concrete, choices):\n"
                               "        x = concrete['x']\n"
                               "        return {'x': x + 1 if action == 'inc' else 1}, None\n")
    assert ran.code == 0, ran.out + ran.err
    assert "code and spec agree on every step" in ran.out
