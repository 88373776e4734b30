"""Machines declared in plain Python (haltproof.machine.pymodel): same engine, same verdicts."""

from __future__ import annotations

import inspect
from dataclasses import replace
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from haltproof.api import check
from haltproof.explorer.replay import run_steps
from haltproof.machine.errors import SpecError
from haltproof.machine.pymodel import (Model, action, always, independent_of, python_model, reachable, step_invariant,
                             terminates, terminates_within, variant)
from haltproof.machine.pymodel import _kind, load_model_ref
from haltproof.machine.usercode import OutOfTime

from conftest import ROOT

sys.path.insert(0, str(ROOT / "docs" / "examples"))
from retry_model import RetryLoop

pytestmark = pytest.mark.verdict      # judges verdicts: in the per-mutant selection (docs/explanation/mutation-testing.md)


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
    # RetryLoop's own properties are checked on the subclass too (cut short by the domain error)
    assert statuses(run) == {"domains": "violated", "well_defined": "unknown", "bound_code": "unknown",
                             "budget_respected": "unknown", "retries_bounded": "unknown",
                             "can_finish": "holds", "bounded": "unknown"}


def statuses(run) -> dict[str, str]:
    """Every property of a run, in report order, with its status."""
    return {p.name: p.status for p in run.properties}


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


def _cut_short_by(builtin: str) -> dict[str, str]:
    """The statuses of a Loops subclass whose code broke `builtin`: Loops's own properties are
    listed, undecided (`done` was not reached before the exploration stopped)."""
    out = {name: "unknown" for name in ("domains", "well_defined", "bound_code", "stops", "ignores_mode",
                                         "rises", "small", "done")}
    out[builtin] = "violated"
    return out


def test_code_errors_are_findings():
    (run,) = check(Raises).runs
    code = next(p for p in run.properties if p.name == "bound_code")
    assert code.status == "violated" and "KeyError: 'boom'" in code.message and "in move" in code.message
    assert code.trace.steps[-1].state["x"] == 1
    assert statuses(run) == _cut_short_by("bound_code")
    (run,) = check(Flaky).runs
    assert "nondeterministic" in next(p for p in run.properties if p.name == "bound_code").message
    assert statuses(run) == _cut_short_by("bound_code")
    (run,) = check(Outside).runs
    dom = next(p for p in run.properties if p.name == "domains")
    assert dom.status == "violated" and "x = 5 is outside its domain {0, 1, 2}" in dom.message
    assert statuses(run) == _cut_short_by("domains")


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
    assert "proved  retry_model.py [RetryLoop] K=3 R=1: 5 states, " in ran.out
    ran = cli("check", "retry_model:RetryLoop", "-p", "K=3", "-p", "R=1", "--verbose")
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
@pytest.mark.slow
def test_timeout_ends_a_check_whose_model_action_never_returns(tmp_path, model):
    ran = _process("-m", "haltproof.cli.main", "check", f"stuck_code:{model}", "--timeout", "2", "--format", "json",
                   cwd=tmp_path)
    assert ran.returncode == 3, ran.stderr
    (run,) = json.loads(ran.stdout)["runs"]
    assert (run["result"], run["stopped_by"]) == ("incomplete", "timeout")
    assert run["stop_reason"] == f"stopped at 4 states: --timeout 2 s reached while {STUCK_AT}"


@pytest.mark.slow
def test_timeout_ends_a_model_check_from_the_python_api(tmp_path):
    script = ("import json\n"
              "from haltproof.api import check\n"
              "from stuck_code import SleepingRetry\n"
              "report = check(SleepingRetry, timeout=2)\n"
              "print(json.dumps([report.result, report.exit_code, report.runs[0].stop_reason]))\n")
    ran = _process("-c", script, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == ["incomplete", 3,
                                      f"stopped at 4 states: --timeout 2 s reached while {STUCK_AT}"]


@pytest.mark.slow
def test_timeout_bounds_the_model_init_on_the_cli_and_in_the_api(tmp_path):
    ran = _process("-m", "haltproof.cli.main", "check", "stuck_code:SpinningInit", "--timeout", "2", cwd=tmp_path)
    assert ran.returncode == 3 and ran.stdout == ""
    assert ran.stderr == "haltproof: incomplete: --timeout reached while instantiating the model SpinningInit with K=3\n"
    script = ("from haltproof.api import check\n"
              "from stuck_code import SpinningInit\n"
              "try:\n"
              "    check(SpinningInit, timeout=2)\n"
              "except TimeoutError as exc:\n"
              "    print(exc)\n")
    ran = _process("-c", script, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == ("haltproof: the timeout of 2 s passed while instantiating the model SpinningInit "
                          "with K=3; nothing was checked\n")


@pytest.mark.slow
def test_timeout_in_a_count_after_a_full_exploration_keeps_what_was_decided(tmp_path):
    ran = _process("-m", "haltproof.cli.main", "check", "stuck_code:SpinningCount", "--timeout", "2", "--format", "json",
                   cwd=tmp_path)
    assert ran.returncode == 3, ran.stderr
    (run,) = json.loads(ran.stdout)["runs"]
    assert (run["result"], run["stopped_by"], run["stats"]["states"]) == ("incomplete", "timeout", 7)
    # every explored transition's count is tried first, in BFS order (a count error is a
    # well_defined finding): the first from the initial state spins
    counting = "evaluating the counts and measures on the explored transitions"
    assert run["stop_reason"] == (f"--timeout 2 s reached after the exploration, while {counting}: running "
                                  "_spinning_count from state calls=0 status=running; not done: searching for the "
                                  "longest run for calls_bounded, computing the worst case of transitions, looking "
                                  "for the parts of the spec that never matter (vacuity)")
    statuses = {p["name"]: (p["status"], p["message"]) for p in run["properties"]}
    # the counts were not all evaluated: one raising would have been a bound_code finding (issue 26)
    assert statuses["bound_code"] == ("unknown", f"not decided: the --timeout 2 s was reached while {counting}")
    assert statuses["within_budget"] == ("holds", "true in every reachable state")     # decided by the exploration
    assert statuses["calls_bounded"] == ("unknown", f"not decided: the --timeout 2 s was reached while {counting}, "
                                                    "before searching for the longest run for calls_bounded")


# ---------------------------------------------------------------- inheritance (the MRO)

class Counter(Model):
    """Counts to N by one; each level of the hierarchy below adds a property that fails."""

    params = {"N": [2]}

    def domains(self, p):
        return {"x": range(0, p["N"] + 1)}

    def init(self, p):
        return [{"x": 0}]

    def terminal(self, s, p):
        return s["x"] == p["N"]

    @action(when=lambda s, p: s["x"] < p["N"])
    def inc(self, s, p):
        return {"x": s["x"] + 1}

    @always
    def below_two(self, s, p):
        return s["x"] < 2


class CounterTwo(Counter):
    @reachable
    def reaches_three(self, s, p):
        return s["x"] == 3


class CounterThree(CounterTwo):
    quick = terminates_within(lambda p: 1)


def test_every_level_of_a_hierarchy_contributes_its_properties():
    (run,) = check(CounterThree).runs
    assert run.result == "violated"
    assert statuses(run) == {"domains": "holds", "well_defined": "holds", "bound_code": "holds",
                             "below_two": "violated", "reaches_three": "violated", "quick": "violated"}
    props = {p.name: p for p in run.properties}
    assert len(props["below_two"].trace) == 2 and props["below_two"].trace.steps[-1].state == {"x": 2}
    assert props["quick"].message == "a run takes 2 transitions, more than 1"


class Deadlocks(Counter):
    """A base declares termination; the subclass starts where nothing can happen."""

    def init(self, p):
        return [{"x": 1}]

    @action(when=lambda s, p: False)
    def inc(self, s, p):
        return {"x": s["x"]}


class Terminating(Counter):
    bounded = terminates()


class DeadlocksTerminating(Terminating, Deadlocks):
    pass


def test_an_inherited_termination_property_catches_a_subclass_deadlock():
    report = check(DeadlocksTerminating)
    assert report.result == "violated"
    (run,) = report.runs
    bounded = next(p for p in run.properties if p.name == "bounded")
    assert bounded.status == "violated" and bounded.message.startswith("deadlock")
    assert len(bounded.trace) == 0 and bounded.trace.steps[0].state == {"x": 1}


class Inherits(Counter):
    """Adds an action and inherits `inc` without redefining it."""

    @action(when=lambda s, p: s["x"] == 0)
    def jump(self, s, p):
        return {"x": 2}


class OnlyInherits(Counter):
    def init(self, p):
        return [{"x": 1}]


def test_an_inherited_action_is_explored_in_the_subclass():
    spec, _ = python_model(Inherits)
    assert [a.name for a in spec.actions] == ["inc", "jump"]        # base first, then the subclass's
    (run,) = check(Inherits).runs
    assert (run.stats["states"], run.stats["transitions"]) == (3, 3)   # 0 -inc-> 1 -inc-> 2, 0 -jump-> 2
    (run,) = check(OnlyInherits).runs                # no action of its own: all of them inherited
    assert (run.stats["states"], run.stats["transitions"]) == (2, 1)
    below = next(p for p in run.properties if p.name == "below_two")
    assert below.status == "violated" and [s.action for s in below.trace.steps] == [None, "inc"]


class Overrides(CounterTwo):
    """Redefines the base's `below_two` by name: only the new one is checked, in its place."""

    @always
    def below_two(self, s, p):
        return s["x"] <= 2


def test_a_subclass_overrides_a_base_property_by_name():
    (run,) = check(Overrides).runs
    assert statuses(run) == {"domains": "holds", "well_defined": "holds", "bound_code": "holds",
                             "below_two": "holds", "reaches_three": "violated"}


# ---------------------------------------------------------------- predicates must return bools

NOT_BOOLS = [("yes", "str"), (1, "int"), (None, "NoneType"), (np.bool_(True), "numpy.bool")]


@pytest.mark.parametrize("value,type_name", NOT_BOOLS, ids=repr)
def test_an_invariant_that_returns_a_non_bool_is_not_well_defined(value, type_name):
    class Truthy(Counter):
        @always
        def vague(self, s, p):
            return value if s["x"] == 1 else True

    (run,) = check(Truthy).runs
    props = {p.name: p for p in run.properties}
    wd = props["well_defined"]
    assert wd.status == "violated"
    assert wd.message == (f"property vague: {Truthy.vague.fn.__qualname__} returned {value!r} "
                          f"({type_name}), not a bool: it must return True or False")
    assert len(wd.trace) == 1 and wd.trace.steps[-1].state == {"x": 1}    # the shortest way there
    assert props["vague"].status == "unknown"


def _non_bool_from(where: str) -> type[Model]:
    """A Counter whose guard, terminal, reachable or step invariant returns 1 in state x=1."""
    def one(s):
        return 1 if s["x"] == 1 else s["x"] < 2

    class Sloppy(Counter):
        if where == "guard":
            @action(when=lambda s, p: one(s))
            def inc(self, s, p):
                return {"x": s["x"] + 1}
        elif where == "terminal":
            def terminal(self, s, p):
                return 1 if s["x"] == 1 else s["x"] == 2
        elif where == "reachable":
            @reachable
            def never(self, s, p):
                return 1 if s["x"] == 1 else False
        else:
            @step_invariant
            def grows(self, before, after, p, action, choices, rule):
                return 1 if after["x"] == 1 else True
    return Sloppy


@pytest.mark.parametrize("where,prefix", [
    ("guard", "guard of inc: "), ("terminal", "terminal: "), ("reachable", "property never: "),
    ("step_invariant", "property grows: ")])
def test_guards_terminals_and_other_predicates_must_return_bools(where, prefix):
    cls = _non_bool_from(where)
    (run,) = check(cls).runs
    wd = next(p for p in run.properties if p.name == "well_defined")
    assert wd.status == "violated" and wd.message.startswith(prefix)
    assert wd.message.endswith("returned 1 (int), not a bool: it must return True or False")
    # the state x=1 (the step into it, for the step invariant), by the shortest trace
    assert len(wd.trace) == 1 and wd.trace.steps[-1].state == {"x": 1}


# ---------------------------------------------------------------- values in int and bool domains

class LateTrue(Counter):
    """After `inc` made x=1 known, `late` returns True for it: equal to 1, hashed alike, not an int."""

    @action(when=lambda s, p: s["x"] == 0)
    def late(self, s, p):
        return {"x": True}


class LateFloat(LateTrue):
    @action(when=lambda s, p: s["x"] == 0)
    def late(self, s, p):
        return {"x": 1.0}


@pytest.mark.parametrize("cls,shown", [(LateTrue, "True"), (LateFloat, "1.0")])
def test_a_bool_or_float_in_an_int_domain_is_a_domains_violation(cls, shown):
    (run,) = check(cls).runs
    dom = next(p for p in run.properties if p.name == "domains")
    assert dom.status == "violated" and dom.message == f"x = {shown} is outside its domain {{0, 1, 2}}"
    assert [(s.action, repr(s.state["x"])) for s in dom.trace.steps] == [(None, "0"), ("late", shown)]


class Switch(Model):
    def domains(self, p):
        return {"on": [False, True]}

    def init(self, p):
        return [{"on": False}]

    def terminal(self, s, p):
        return s["on"] is True

    @action()
    def flip(self, s, p):
        return {"on": True}

    @action()
    def late(self, s, p):
        return {"on": 1}


def test_an_int_in_a_bool_domain_is_a_domains_violation():
    (run,) = check(Switch).runs
    dom = next(p for p in run.properties if p.name == "domains")
    assert dom.status == "violated" and dom.message == "on = 1 is outside its domain {False, True}"
    assert [(s.action, s.state["on"]) for s in dom.trace.steps] == [(None, False), ("late", 1)]


def test_an_initial_state_with_a_bool_for_an_int_is_a_spec_error():
    class StartsTrue(Counter):
        def init(self, p):
            return [{"x": True}]
    with pytest.raises(SpecError, match=re.escape("initial state {'x': True} has x = True outside its "
                                                  "domain {0, 1, 2}")):
        check(StartsTrue)


# ---------------------------------------------------------------- the model's own code failing

BAD_INIT = textwrap.dedent('''\
    from haltproof.machine.pymodel import Model, action


    class NoStart(Model):
        def __init__(self):
            self.limit = load_limit()

        def domains(self, p):
            return {"x": [0, 1]}

        def init(self, p):
            return [{"x": 0}]

        @action()
        def inc(self, s, p):
            return {"x": 1}


    def load_limit():
        raise FileNotFoundError("limits.json")
    ''')


def test_a_model_whose_constructor_raises_is_a_spec_error(cli, tmp_path, monkeypatch):
    (tmp_path / "bad_init_model.py").write_text(BAD_INIT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    ran = cli("check", "bad_init_model:NoStart")
    assert ran.code == 2 and ran.out == ""
    assert "internal error" not in ran.err
    assert "bad_init_model.py:4: NoStart() raised FileNotFoundError: limits.json" in ran.err
    assert "in __init__" in ran.err and "in load_limit" in ran.err                  # the user's frames
    assert "pymodel.py" not in ran.err                                               # not haltproof's


def test_init_that_raises_names_the_class_and_the_traceback():
    class Fails(Counter):
        def init(self, p):
            return [{"x": {}["start"]}]
    with pytest.raises(SpecError) as caught:
        check(Fails)
    text = str(caught.value)
    assert "Fails.init() with {'N': 2} raised KeyError: 'start'" in text
    assert "in init" in text and 'return [{"x": {}["start"]}]' in text


def test_a_variant_rank_must_be_an_int():
    class Ranked(Counter):
        rises = variant(lambda s, p: "high" if s["x"] else 0, bound=lambda p: p["N"])
    (run,) = check(Ranked).runs
    wd = next(p for p in run.properties if p.name == "well_defined")
    assert wd.status == "violated"
    assert wd.message.startswith("property rises: ") and wd.message.endswith(
        "<lambda> returned 'high' (str), not an int")
    assert len(wd.trace) == 1


@pytest.mark.parametrize("bound,message", [
    (lambda p: p["M"], "the bound of quick with {'N': 2} raised KeyError: 'M'"),
    (lambda p: "3", "the bound of quick with {'N': 2} is '3' (str), not an int")])
def test_a_bound_that_raises_or_is_not_an_int_is_a_spec_error(bound, message):
    class Bounded(Counter):
        quick = terminates_within(bound)
    with pytest.raises(SpecError, match=re.escape(message)):
        check(Bounded)


def test_the_subclass_example_of_the_docs_runs():
    """docs/how-to/binding.md, "Subclasses": its example runs and finds the inherited property violated."""
    doc = (ROOT / "docs" / "how-to" / "binding.md").read_text()
    section = doc[doc.index("### Subclasses"):]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    namespace: dict = {"__name__": "doc_example"}
    exec(compile(block, "docs/how-to/binding.md", "exec"), namespace)
    (run,) = check(namespace["StartsStuck"]).runs
    stops = next(p for p in run.properties if p.name == "stops")
    assert stops.status == "violated" and stops.message.startswith("deadlock")
    assert len(stops.trace) == 0 and stops.trace.steps[0].state == {"x": 1}


# ---------------------------------------------------------------- where inherited declarations are

from pymodel_base import Base  # noqa: E402

BASE_FILE = ROOT / "tests" / "pymodel_base.py"
BASE = str(BASE_FILE)
SHOWN_BASE = "tests/pymodel_base.py"             # as reports show it, from the repo root


def line_of(path, text: str) -> int:
    """The line of the one line of `path` that contains `text`."""
    (n,) = [n for n, ln in enumerate(path.read_text().splitlines(), start=1) if text in ln]
    return n


INC = line_of(BASE_FILE, "rules=[\"up\", \"never\"]")      # inc's @action line
JUMP = line_of(BASE_FILE, "s[\"x\"] > p[\"N\"]")             # jump's @action line, never taken
BELOW = line_of(BASE_FILE, "@always")
STOPS = line_of(BASE_FILE, "stops = terminates()")
QUICK = line_of(BASE_FILE, "quick = terminates_within")


class FromBase(Base):
    """Declared here; its actions and most properties are declared in tests/pymodel_base.py."""

    @reachable
    def reaches_two(self, s, p):
        return s["x"] == 2


FROM_BASE = inspect.getsourcelines(FromBase)[1]
REACHES = FROM_BASE + 3                          # its @reachable


def test_inherited_declarations_keep_their_own_file_and_line():
    spec, _ = python_model(FromBase)
    assert spec.path == __file__
    assert {a.name: (a.file, a.line) for a in spec.actions} == {"inc": (BASE, INC), "jump": (BASE, JUMP)}
    assert [(r.name, r.file, r.line) for r in spec.actions[0].decide.rules] == [
        ("up", BASE, INC), ("never", BASE, INC)]
    assert {p.name: (p.file, p.line) for p in spec.properties} == {
        "below_two": (BASE, BELOW), "stops": (BASE, STOPS), "quick": (BASE, QUICK),
        "reaches_two": (None, REACHES)}
    assert (spec.terminal.file, spec.terminal.line) == (BASE, line_of(BASE_FILE, "def terminal"))
    assert [(p.file, p.line) for p in spec.params] == [(BASE, line_of(BASE_FILE, "class Base"))]


def test_vacuity_notices_and_results_point_into_the_base_module(monkeypatch):
    monkeypatch.chdir(ROOT)
    report = check(FromBase)
    (run,) = report.runs
    assert [(n.message, n.file, n.line) for n in run.notices] == [
        (f"vacuous: decide rule 'never' of action inc ({SHOWN_BASE}:{INC}) never fires", BASE, INC),
        (f"vacuous: action jump ({SHOWN_BASE}:{JUMP}) is never taken", BASE, JUMP)]
    props = {p.name: p for p in run.properties}
    assert (props["below_two"].status, props["below_two"].file, props["below_two"].line) == \
           ("violated", BASE, BELOW)
    assert (props["reaches_two"].file, props["reaches_two"].line) == (None, REACHES)
    data = report.to_json()["runs"][0]
    below = next(p for p in data["properties"] if p["name"] == "below_two")
    assert (below["file"], below["line"]) == (SHOWN_BASE, BELOW)
    assert "file" not in next(p for p in data["properties"] if p["name"] == "reaches_two")
    assert data["source"]["file"] == "tests/machine/test_pymodel.py"
    assert data["source"]["files"] == {
        "actions": {"inc": SHOWN_BASE, "jump": SHOWN_BASE},
        "properties": {"below_two": SHOWN_BASE, "stops": SHOWN_BASE, "quick": SHOWN_BASE},
        "rules": {"inc": {"up": SHOWN_BASE, "never": SHOWN_BASE}},
        "terminal": SHOWN_BASE}
    assert [w.get("file") for w in data["warning_details"]] == [SHOWN_BASE] * 2


def test_ci_formats_point_at_the_base_module(monkeypatch):
    from haltproof.reports import findings as F
    from haltproof.reports.github import render_github, render_markdown
    from haltproof.reports.html import render_html
    from haltproof.reports.junit import render_junit
    from haltproof.reports.sarif import render_sarif
    monkeypatch.chdir(ROOT)
    data = check(FromBase).to_json()
    run = data["runs"][0]
    below = next(p for p in run["properties"] if p["name"] == "below_two")
    assert F.finding_location(run, below) == (SHOWN_BASE, BELOW)
    assert F.step_location(run, below["trace"]["steps"][-1]) == (SHOWN_BASE, INC)
    assert F.step_location(run, below["trace"]["steps"][0]) == ("tests/machine/test_pymodel.py", FROM_BASE)
    github = render_github(data)
    assert f"::error file={SHOWN_BASE},line={BELOW},title=haltproof%3A below_two violated::" in github
    assert f"::warning file={SHOWN_BASE},line={JUMP},title=haltproof%3A vacuous::vacuous: action jump" in github
    sarif = json.loads(render_sarif(data))
    (result,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "below_two"]
    assert result["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": SHOWN_BASE, "uriBaseId": "%SRCROOT%"}, "region": {"startLine": BELOW}}
    assert f"{SHOWN_BASE}:{BELOW}" in render_junit(data)
    summary = render_markdown(data)
    assert f"#### `below_two` in `{SHOWN_BASE}:{BELOW}`" in summary
    assert f"| `{SHOWN_BASE}` | {JUMP} | vacuous: action jump" in summary
    assert f'<td class="expected"></td><td>{SHOWN_BASE}:{BELOW}</td></tr>' in render_html(data)


def test_errors_in_inherited_code_point_into_the_base_module():
    class NoParams(Base):            # the base's domains() and bound read p["N"]
        params = {}
    with pytest.raises(SpecError) as caught:
        check(NoParams)
    assert str(caught.value).startswith(
        f"{BASE}:{line_of(BASE_FILE, 'def domains')}: NoParams.domains() with {{}} raised KeyError: 'N'")

    class OtherParams(Base):
        params = {"M": [2]}

        def domains(self, p):
            return {"x": range(0, 3)}
    with pytest.raises(SpecError) as caught:
        check(OtherParams)
    assert str(caught.value).startswith(
        f"{BASE}:{QUICK}: the bound of quick with {{'M': 2}} raised KeyError: 'N'")
    with pytest.raises(SpecError) as caught:
        check(FromBase, params={"N": 5})
    assert str(caught.value) == (f"{BASE}:{line_of(BASE_FILE, 'class Base')}: -p N=5: not a declared value "
                                 "of N (2)")


# ---------------------------------------------------------------- the vars across param combinations

class KindChanges(Model):
    """x is an int for B=0 and a bool for B=1."""

    params = {"B": [0, 1]}

    def domains(self, p):
        return {"x": range(0, 2) if p["B"] == 0 else [False, True]}

    def init(self, p):
        return [{"x": 0 if p["B"] == 0 else False}]

    @action(when=lambda s, p: not s["x"])
    def inc(self, s, p):
        return {"x": 1 if p["B"] == 0 else True}


class EnumBecomesInt(KindChanges):
    def domains(self, p):
        return {"x": ["off", "on"] if p["B"] == 0 else [0, 1]}

    def init(self, p):
        return [{"x": "off" if p["B"] == 0 else 0}]


class VarsChange(KindChanges):
    def domains(self, p):
        return {"x": [0, 1], "y": [0]} if p["B"] == 0 else {"x": [0, 1], "z": [0]}

    def init(self, p):
        return [{"x": 0, "y": 0}] if p["B"] == 0 else [{"x": 0, "z": 0}]

    @action(when=lambda s, p: s["x"] == 0)
    def inc(self, s, p):
        return {**s, "x": 1}


@pytest.mark.parametrize("cls,message", [
    (KindChanges, "var x is int with {'B': 0} but bool with {'B': 1}: a var keeps one kind (int, bool or "
                  "enum) in every param combination"),
    (EnumBecomesInt, "var x is enum with {'B': 0} but int with {'B': 1}: a var keeps one kind (int, bool or "
                     "enum) in every param combination"),
    (VarsChange, "VarsChange.domains() declares var y with {'B': 0} but not with {'B': 1}, and var z with "
                 "{'B': 1} but not with {'B': 0}: every param combination has the same vars")],
    ids=["int-then-bool", "enum-then-int", "other-vars"])
def test_a_var_that_changes_between_param_combinations_is_a_spec_error(cli, monkeypatch, cls, message):
    with pytest.raises(SpecError) as caught:
        check(cls)
    domains = inspect.getsourcelines(cls.domains)[1]
    assert str(caught.value) == f"{__file__}:{domains}: {message}"
    monkeypatch.chdir(ROOT)
    monkeypatch.syspath_prepend(str(ROOT / "tests"))
    ran = cli("check", f"test_pymodel:{cls.__name__}", "-p", "B=1")
    assert (ran.code, ran.out, ran.err) == (2, "", f"error: tests/machine/test_pymodel.py:{domains}: {message}\n")


class OrderChanges(Model):
    """domains() lists x, y for B=0 and y, x for B=1; only y decides what `go` does."""

    params = {"B": [0, 1]}

    def domains(self, p):
        if p["B"] == 0:
            return {"x": [0, 1], "y": [0, 1], "done": [False, True]}
        return {"y": [0, 1], "x": [0, 1], "done": [False, True]}

    def init(self, p):
        return [{"x": x, "y": y, "done": False} for x in (0, 1) for y in (0, 1)]

    def terminal(self, s, p):
        return s["done"]

    @action()
    def go(self, s, p):
        return {**s, "done": True, "x": s["y"]}

    depends_on_x = independent_of("x")        # holds: go reads y only
    depends_on_y = independent_of("y")        # violated: go copies y


def test_the_order_of_domains_does_not_change_which_vars_independence_ignores():
    """Independence ignores vars by position; with B=1 the positions of x and y were swapped,
    so depends_on_y held (a false proof) and depends_on_x was violated."""
    report = check(OrderChanges)
    assert [r.params for r in report.runs] == [{"B": 0}, {"B": 1}]
    for run in report.runs:
        assert {p.name: p.status for p in run.properties if p.name.startswith("depends")} == \
               {"depends_on_x": "holds", "depends_on_y": "violated"}, run.params
        y = next(p for p in run.properties if p.name == "depends_on_y")
        assert [list(s.state) for s in y.trace.steps] == [["x", "y", "done"]] * 2       # the spec's order


def test_independent_of_a_var_that_is_not_declared_is_a_spec_error():
    """It was dropped silently: independent_of("typo") then ignored nothing and held."""
    class Typo(OrderChanges):
        depends_on_y = independent_of("y", "why")
    with pytest.raises(SpecError) as caught:
        check(Typo)
    line = inspect.getsourcelines(Typo)[1] + 1
    assert str(caught.value) == (f"{__file__}:{line}: depends_on_y: independent_of names why, which "
                                 "domains() does not declare (its vars: x, y, done)")


# ---------------------------------------------------------------- an unknown property is never proved

def _counted(fails_after: int | None) -> type[Model]:
    """Counter to 2 whose terminates_within counts with code that raises ZeroDivisionError:
    on every call (fails_after None), or only after its first `fails_after` calls."""
    calls = [0]

    def count(before, after, p, action, choices, rule):
        calls[0] += 1
        if fails_after is None or calls[0] > fails_after:
            return 1 // 0
        return True

    class Counted(Counter):
        quick = terminates_within(lambda p: 5, count=count)
    return Counted


def test_a_count_that_always_fails_is_a_finding_so_the_run_is_violated():
    report = check(_counted(None))
    (run,) = report.runs
    assert (run.result, run.verdict, report.exit_code) == ("violated", "fail", 1)
    props = {p.name: p for p in run.properties}
    assert props["bound_code"].status == "violated"
    assert props["bound_code"].message.startswith("count of quick: ")
    assert "raised ZeroDivisionError" in props["bound_code"].message
    assert len(props["bound_code"].trace) == 1         # the first explored transition
    assert props["quick"].status == "unknown"


def _quiet() -> type[Model]:
    """`_counted(2)` without the failing below_two: nothing but the unknown quick is left.
    A fresh class (and count) each time: the count fails after its first two calls."""
    class Quiet(_counted(2)):
        @always
        def below_two(self, s, p):
            return True
    return Quiet


def test_a_property_left_unknown_on_a_complete_exploration_is_never_proved(cli, monkeypatch):
    """The count passes the walk over every explored transition (two calls) and fails when
    quick is judged: quick is unknown and no finding explains it. The run said proved,
    exit 0 (the overall result ignored unknown properties): it is incomplete, exit 3."""
    (run,) = check(_counted(2)).runs
    assert (run.stopped_by, run.stats["states"]) == (None, 3)          # explored in full
    assert statuses(run) == {"domains": "holds", "well_defined": "holds", "bound_code": "holds",
                             "below_two": "violated", "quick": "unknown"}
    assert (run.result, run.verdict) == ("violated", "fail")          # a violation still stands
    report = check(_quiet())
    (run,) = report.runs
    assert (run.result, run.verdict, report.result, report.exit_code) == ("incomplete", "incomplete",
                                                                          "incomplete", 3)
    assert run.stopped_by is None
    assert run.stop_reason == "explored in full, but quick could not be decided"
    with pytest.raises(AssertionError, match="haltproof: incomplete"):
        report.assert_proved()
    data = report.to_json()
    assert (data["result"], data["runs"][0]["result"]) == ("incomplete", "incomplete")
    from haltproof.reports import findings as F
    from haltproof.reports.html import run_verdict as html_verdict
    (json_run,) = data["runs"]
    assert json_run["stop_reason"] == "explored in full, but quick could not be decided"
    assert F.run_verdict(json_run) == "incomplete" and html_verdict(json_run) == ("incomplete", "incomplete")
    quick = next(p for p in json_run["properties"] if p["name"] == "quick")
    assert F.outcome(quick, json_run) == F.ERROR          # not "undecided": nothing explains it
    from haltproof.reports.github import render_github
    from haltproof.reports.junit import render_junit
    assert ('message="quick unknown: explored in full, but quick could not be decided; it proves nothing"'
            in render_junit(data))
    assert (",title=haltproof%3A incomplete::Quiet: explored in full, but quick could not be decided; "
            "it proves nothing. Params: N=2." in render_github(data))
    module = type(sys)("hp_quiet_model")
    module.Quiet = _quiet()
    monkeypatch.setitem(sys.modules, "hp_quiet_model", module)
    ran = cli("check", "hp_quiet_model:Quiet")
    assert ran.code == 3
    assert "  explored in full, but quick could not be decided" in ran.out.splitlines()
    assert ran.out.splitlines()[-1] == "1 run: 0 proved, 0 violated as expected, 0 failed, 1 incomplete -> incomplete"


def test_an_expected_violation_with_an_unexplained_unknown_is_not_as_expected():
    """The gate with `expect:` passes only when every property is decided (or a violated
    built-in explains it): a property left unknown otherwise makes the run incomplete,
    never "as expected", in the RunResult and in every reader of the JSON report. (No
    spec can produce it on its own: its counts cannot fail only when judged.)"""
    from haltproof.reports import findings as F
    from haltproof.reports import report as R
    from haltproof.reports.html import run_verdict as html_verdict
    from haltproof.properties.kinds import UNKNOWN
    run = check(ROOT / "specs" / "mutants" / "failure_not_a_step.yaml", params={"max_steps": 2}).runs[0]
    assert (run.verdict, run.as_expected, run.stopped_by) == ("pass", True, None)
    held = next(p for p in run.properties if p.name == "at_most_max_steps")
    held.status, held.message = UNKNOWN, "not decided: its count expression failed"
    assert run.verdict == "incomplete" and R.overall([run]) == ("incomplete", 3)
    (json_run,) = R.to_json([run])["runs"]
    assert F.run_verdict(json_run) == "incomplete" and html_verdict(json_run)[0] == "incomplete"
    run = replace(run, properties=[p for p in run.properties if p is not held])     # decided again: as expected
    assert run.verdict == "pass"


# ---------------------------------------------------------------- mutants that survived (issue 18)
# Single-line bugs in machine/pymodel.py that the verdict selection could let through (issue 18):
# what a Python model's domains() may return, and how the error names the file, the line and
# the problem. Each message is pinned exactly (docs/explanation/mutation-testing.md).
# (These tests were test_pymodel_kills.)


class DomainsBase(Model):
    params = {"B": [0, 1]}

    def init(self, p):
        return [{"x": 0}]

    @action(when=lambda s, p: s["x"] == 0)
    def inc(self, s, p):
        return {**s, "x": 1}


class EmptyDomain(DomainsBase):
    def domains(self, p):
        return {"x": [0, 1], "y": [] if p["B"] == 1 else [0]}

    def init(self, p):
        return [{"x": 0, "y": 0}]


class NotADict(DomainsBase):
    def domains(self, p):
        return [("x", [0, 1])]


class Unhashable(DomainsBase):
    def domains(self, p):
        return {"x": [[0], [1]]}


class TwoVarsGo(DomainsBase):
    def domains(self, p):
        return {"x": [0, 1], "y": [0], "z": [0]} if p["B"] == 0 else {"x": [0, 1]}

    def init(self, p):
        return [{"x": 0, "y": 0, "z": 0}] if p["B"] == 0 else [{"x": 0}]


class TwoVarsCome(DomainsBase):
    def domains(self, p):
        return {"x": [0, 1]} if p["B"] == 0 else {"x": [0, 1], "y": [0], "z": [0]}

    def init(self, p):
        return [{"x": 0}] if p["B"] == 0 else [{"x": 0, "y": 0, "z": 0}]


def _domains_line(cls: type) -> int:
    return inspect.getsourcelines(cls.domains)[1]


@pytest.mark.parametrize("cls,message", [
    (EmptyDomain, "var y has an empty domain with {'B': 1}"),
    (NotADict, "NotADict.domains() with {'B': 0} must return a dict of var name to a list of hashable values "
               "(AttributeError: 'list' object has no attribute 'items')"),
    (Unhashable, "Unhashable.domains() with {'B': 0} must return a dict of var name to a list of hashable values "
                 "(TypeError: unhashable type: 'list')"),
    (TwoVarsGo, "TwoVarsGo.domains() declares vars y, z with {'B': 0} but not with {'B': 1}: every param "
                "combination has the same vars"),
    (TwoVarsCome, "TwoVarsCome.domains() declares vars y, z with {'B': 1} but not with {'B': 0}: every param "
                  "combination has the same vars"),
], ids=["empty", "not-a-dict", "unhashable", "two-gone", "two-new"])
def test_domains_a_model_cannot_have_are_a_spec_error_at_domains(cls, message):
    with pytest.raises(SpecError) as caught:
        check(cls)
    assert str(caught.value) == f"{__file__}:{_domains_line(cls)}: {message}"


@pytest.mark.parametrize("values,kind", [
    ([False, True], "bool"), ([True], "bool"), ([0, 1], "int"), ([-3], "int"), ([0, True], "enum"),
    ([1, 1.0], "enum"), (["a", "b"], "enum"), ([0, "a"], "enum"), ([False, "a"], "enum"),
])
def test_a_vars_kind_comes_from_every_value_of_its_domain(values: list[Any], kind: str):
    assert _kind(values) == kind


# ---------------------------------------------------------------- what an action returns

class OneVarCounter(Model):
    """x counts up to 2; each subclass breaks one thing the checker must refuse."""

    def domains(self, p):
        return {"x": [0, 1, 2]}

    def init(self, p):
        return [{"x": 0}]

    def terminal(self, s, p):
        return s["x"] == 2

    @action(rules=["up"])
    def inc(self, s, p):
        return {"x": s["x"] + 1}, "up"


class FlakyCounter(OneVarCounter):
    calls = 0

    @action(rules=["up"])
    def inc(self, s, p):
        type(self).calls += 1
        return {"x": s["x"] + 1}, ("up" if type(self).calls % 2 else None)


class OtherRule(OneVarCounter):
    @action(rules=["up", "jump"])
    def inc(self, s, p):
        return {"x": s["x"] + 1}, "down"


class NoRules(OneVarCounter):
    @action()
    def inc(self, s, p):
        return {"x": s["x"] + 1}, "down"


class NoDict(OneVarCounter):
    @action()
    def inc(self, s, p):
        return [s["x"] + 1]


class OtherVars(OneVarCounter):
    @action()
    def inc(self, s, p):
        return {"x": s["x"] + 1, "y": 0}


class BadInit(OneVarCounter):
    params = {"N": [3]}

    def init(self, p):
        return [{"y": 0}]


def _finding(cls: type) -> str:
    (run,) = check(cls).runs
    [code] = [p for p in run.properties if p.name == "bound_code"]
    assert code.status == "violated"
    return code.message


@pytest.mark.parametrize("cls,message", [
    (FlakyCounter, "action inc with no choices: action inc is nondeterministic: ({'x': 1}, 'up') then ({'x': 1}, None)"),
    (OtherRule, "action inc with no choices: action inc reports rule 'down', not one of its rules (jump, up)"),
    (NoRules, "action inc with no choices: action inc reports rule 'down', not one of its rules (none declared)"),
    (NoDict, "action inc with no choices: action inc must return a dict with exactly the vars ['x'], got list"),
    (OtherVars, "action inc with no choices: action inc must return a dict with exactly the vars ['x'], got ['x', 'y']"),
], ids=["nondeterministic", "other-rule", "no-rules", "no-dict", "other-vars"])
def test_what_an_action_returns_is_checked_exactly(cls, message):
    FlakyCounter.calls = 0
    assert _finding(cls) == message


def test_an_init_that_gives_other_vars_is_a_spec_error_naming_the_params():
    with pytest.raises(SpecError) as caught:
        check(BadInit)
    line = inspect.getsourcelines(BadInit.init)[1]
    assert str(caught.value) == (f"{__file__}:{line}: init() must return a dict with exactly the vars ['x'], "
                                 "got ['y'] (with {'N': 3})")


# ---------------------------------------------------------------- a model made while the test runs
# mutmut forks each mutant's run from a process that imported the test modules already, so a
# class body at module level ran its decorators (`@action(...)`, `always(...)`, `terminates()`)
# before any mutant was active: only a class made inside a test meets their mutants.

def _nonneg(self, s, p):
    """Declared apart from the class that uses it: the property is placed at this def."""
    return s["x"] >= 0


def _made() -> type[Model]:
    class Made(Model):
        """A model made while a test runs."""

        params = {"N": [2]}

        def domains(self, p):
            return {"x": range(0, 4), "mode": ["a", "b"]}

        def init(self, p):
            return [{"x": 0, "mode": "a"}]

        def terminal(self, s, p):
            return s["x"] >= p["N"]

        @action(when=lambda s, p: s["x"] < p["N"], rules=["up"], by=[1, 2], mode=("a", "b"))
        def inc(self, s, p, by, mode):
            return {"x": min(s["x"] + by, p["N"]), "mode": s["mode"]}, "up"

        small = always(lambda self, s, p: type(self).__name__ == "Made" and s["x"] <= p["N"])
        rises = step_invariant(lambda self, b, a, p, action, choices, rule:
                               type(self).__name__ == "Made" and a["x"] > b["x"] and choices["by"] in (1, 2))
        done = reachable(lambda self, s, p: type(self).__name__ == "Made" and s["x"] == p["N"])
        stops = terminates()
        quick = terminates_within(lambda p: p["N"], count=lambda b, a, p, action, choices, rule: True)
        climbs = variant(lambda s, p: s["x"] * p["N"], lambda p: p["N"] * p["N"])   # reads its params
        ignores_mode = independent_of("mode")
        nonneg = always(_nonneg)
    return Made


def _line_of(text: str) -> int:
    """The file line in `_made` that starts with `text`."""
    lines, first = inspect.getsourcelines(_made)
    [line] = [first + k for k, x in enumerate(lines) if x.strip().startswith(text)]
    return line


def test_a_model_made_at_run_time_declares_every_kind_of_property_at_its_line():
    (run,) = check(_made()).runs
    got = [(p.name, p.kind, p.status, p.line) for p in run.properties if p.kind != "builtin"]
    assert got == [
        ("small", "invariant", "holds", _line_of("small = always(")),
        ("rises", "step_invariant", "holds", _line_of("rises = step_invariant(")),
        ("done", "reachable", "holds", _line_of("done = reachable(")),
        ("stops", "terminates", "holds", _line_of("stops = terminates()")),
        ("quick", "terminates_within", "holds", _line_of("quick = terminates_within(")),
        ("climbs", "variant", "holds", _line_of("climbs = variant(")),
        ("ignores_mode", "independent", "holds", _line_of("ignores_mode = independent_of(")),
        ("nonneg", "invariant", "holds", inspect.getsourcelines(_nonneg)[1]),
    ]
    assert (run.stats["states"], run.stats["transitions"]) == (3, 8)     # by 1 or 2, mode a or b, from x=0 and 1
    assert run.result == "proved"


def test_a_model_without_terminal_has_no_terminal_state():
    class NoEnd(Model):
        def domains(self, p):
            return {"x": [0, 1]}

        def init(self, p):
            return [{"x": 0}]

        @action(when=lambda s, p: s["x"] == 0)
        def inc(self, s, p):
            return {"x": 1}

        stops = terminates()

    (run,) = check(NoEnd).runs
    [stops] = [p for p in run.properties if p.name == "stops"]
    assert stops.status == "violated"
    assert [s.state for s in stops.trace.steps] == [{"x": 0}, {"x": 1}]


class Rank:
    """A rank that is a callable object (no __qualname__): messages name it by its repr."""

    def __call__(self, s, p):
        return "high"

    def __repr__(self) -> str:
        return "Rank()"


def test_a_rank_that_is_no_function_is_named_by_its_repr():
    class Ranked(OneVarCounter):
        climbs = variant(Rank(), lambda p: 3)

    (run,) = check(Ranked).runs
    [wd] = [p for p in run.properties if p.name == "well_defined"]
    assert wd.status == "violated"
    assert wd.message.endswith("Rank() returned 'high' (str), not an int")


MADE_BY_EXEC = """\
class Execd(OneVarCounter):
    stops = terminates()
"""


def test_a_property_declared_in_code_run_by_exec_is_placed_in_that_code():
    """exec() with globals of its own (no __name__): the class body's frame is still the place."""
    scope = {"OneVarCounter": OneVarCounter, "terminates": terminates}
    exec(compile(MADE_BY_EXEC, "<made>", "exec"), scope)
    (run,) = check(scope["Execd"]).runs
    [stops] = [p for p in run.properties if p.name == "stops"]
    assert (stops.status, stops.line, stops.file) == ("holds", 2, "<made>")


def test_a_step_predicate_that_returns_no_bool_is_named_in_the_finding():
    def moved(self, b, a, p, action, choices, rule):
        return "yes"

    class Says(OneVarCounter):
        rises = step_invariant(moved)

    (run,) = check(Says).runs
    [wd] = [p for p in run.properties if p.name == "well_defined"]
    assert wd.message.endswith("returned 'yes' (str), not a bool: it must return True or False")
    assert "moved returned" in wd.message


def test_a_property_attached_after_the_class_is_made_is_named_after_its_function():
    def at_most_two(self, s, p):
        return s["x"] <= 2

    class Later(OneVarCounter):
        pass

    Later.bounded = always(at_most_two)
    (run,) = check(Later).runs
    assert [(p.name, p.status) for p in run.properties if p.kind == "invariant"] == [("at_most_two", "holds")]


def test_a_bound_that_is_no_int_is_a_spec_error_at_the_property():
    class Bounded(OneVarCounter):
        params = {"N": [2]}
        quick = terminates_within(lambda p: "3")

    with pytest.raises(SpecError) as caught:
        check(Bounded)
    line = inspect.getsourcelines(Bounded)[0]
    at = inspect.getsourcelines(Bounded)[1] + [k for k, x in enumerate(line) if "quick =" in x][0]
    assert str(caught.value) == f"{__file__}:{at}: the bound of quick with {{'N': 2}} is '3' (str), not an int"


class Pred:
    """A predicate that is a callable object (no __qualname__): named by its repr."""

    def __call__(self, model, s, p):
        return "yes"

    def __repr__(self) -> str:
        return "Pred()"


def test_a_predicate_that_is_no_function_is_named_by_its_repr():
    class Says(OneVarCounter):
        small = always(Pred())

    (run,) = check(Says).runs
    [wd] = [p for p in run.properties if p.name == "well_defined"]
    assert wd.message.endswith("Pred() returned 'yes' (str), not a bool: it must return True or False")


# ---------------------------------------------------------------- module:Class

@pytest.mark.parametrize("ref,message", [
    ("no_such_module_xyz:M", "cannot load the model: ModuleNotFoundError: No module named 'no_such_module_xyz'"),
    ("json:dumps:x", "cannot load the model: AttributeError: module 'json' has no attribute 'dumps:x'"),
    ("json:dumps", "not a subclass of haltproof.machine.pymodel.Model"),
])
def test_a_model_reference_that_names_no_model_is_a_spec_error(ref, message):
    with pytest.raises(SpecError) as caught:
        load_model_ref(ref)
    [problem] = caught.value.problems
    assert (problem.file, problem.line, problem.message) == (ref, None, message)


def test_a_model_reference_is_imported_from_the_working_directory_first(tmp_path, monkeypatch):
    (tmp_path / "hp_here_model.py").write_text("from haltproof.machine.pymodel import Model\n\n\n"
                                               "class Here(Model):\n    pass\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.delitem(sys.modules, "hp_here_model", raising=False)
    assert load_model_ref("hp_here_model:Here").__name__ == "Here"
    assert sys.path[0] == str(tmp_path)
    load_model_ref("hp_here_model:Here")
    assert sys.path.count(str(tmp_path)) == 1
    sys.modules.pop("hp_here_model", None)


def test_a_bound_of_0_is_allowed_for_a_model_that_starts_terminal():
    class Done(OneVarCounter):
        def init(self, p):
            return [{"x": 2}]

        quick = terminates_within(lambda p: 0)

    (run,) = check(Done).runs
    assert [(p.name, p.status) for p in run.properties if p.name == "quick"] == [("quick", "holds")]


# ---------------------------------------------------------------- instantiating a model (`_machine`)

def test_an_initial_state_outside_the_domains_is_a_spec_error_at_init():
    class Outside(OneVarCounter):
        def init(self, p):
            return [{"x": 0}, {"x": 5}]

    with pytest.raises(SpecError) as caught:
        check(Outside)
    line = inspect.getsourcelines(Outside.init)[1]
    assert str(caught.value) == f"{__file__}:{line}: initial state {{'x': 5}} has x = 5 outside its domain {{0, 1, 2}}"


def test_running_out_of_time_in_an_action_says_which_method_with_which_choices_from_where():
    """The deadline passing in the model's code (OutOfTime, as the deadline raises it) is noted
    with what was running, for the run's stop reason."""
    class Late(OneVarCounter):
        @action(by=[1, 2])
        def inc(self, s, p, by):
            raise OutOfTime()

    _, instantiate = python_model(Late)
    m = instantiate({})
    inc = m.actions[0]
    with pytest.raises(OutOfTime) as stop:
        inc.step(m.inits[0], *inc.combos[1])
    assert stop.value.doing == ("running test_running_out_of_time_in_an_action_says_which_method_with_which_choices"
                                "_from_where.<locals>.Late.inc (by=2) from state x=0")


def test_a_step_predicate_sees_only_the_choices_its_action_makes():
    """`reset` makes no choice `by`: the step predicates see {} for it (a choice the action does
    not make is a sentinel the adapter leaves out, never a value)."""
    class TwoActions(OneVarCounter):
        @action(when=lambda s, p: s["x"] < 2, by=[1])
        def inc(self, s, p, by):
            return {"x": s["x"] + by}

        @action(when=lambda s, p: s["x"] == 1)
        def reset(self, s, p):
            return {"x": 2}

        chosen = step_invariant(lambda self, b, a, p, action, choices, rule:
                                choices == ({"by": 1} if action == "inc" else {}))
        quick = terminates_within(lambda p: 2, count=lambda b, a, p, action, choices, rule:
                                  choices == ({"by": 1} if action == "inc" else {}))

    (run,) = check(TwoActions).runs
    statuses = {p.name: p.status for p in run.properties}
    assert [statuses[n] for n in ("chosen", "quick", "well_defined")] == ["holds", "holds", "holds"]
    assert (run.result, run.stats["states"], run.stats["transitions"]) == ("proved", 3, 3)


def test_a_replay_from_a_state_outside_a_models_domains_says_so():
    """A model's int vars have the bounds of their domains, which a replay reads."""
    _, instantiate = python_model(OneVarCounter)
    replayed = run_steps(instantiate({}), {"x": 9}, [])
    assert replayed.problem == ("step 0: the run starts in x=9, which is not an initial state of the machine "
                                "(x = 9 is outside its domain {0, 1, 2})")


def test_a_replay_from_a_value_in_a_gap_of_a_models_domain_says_so():
    """A domain [0, 2, 4]: 3 lies within its bounds and outside it all the same."""
    class Gappy(Model):
        def domains(self, p):
            return {"x": [0, 2, 4]}

        def init(self, p):
            return [{"x": 0}]

        def terminal(self, s, p):
            return s["x"] == 4

        @action(rules=["up"])
        def inc(self, s, p):
            return {"x": s["x"] + 2}, "up"

    _, instantiate = python_model(Gappy)
    m = instantiate({})
    assert run_steps(m, {"x": 3}, []).problem == (
        "step 0: the run starts in x=3, which is not an initial state of the machine "
        "(x = 3 is outside its domain {0, 2, 4})")
    assert run_steps(m, {"x": 2}, []).problem == (
        "step 0: the run starts in x=2, which is not an initial state of the machine")


@pytest.mark.parametrize("values", (["a"], [True, False]))
def test_a_param_of_text_or_bools_is_refused(values):
    """A param's values are integers: text is refused, and so are bools (True is no 1 here)."""
    class Worded(OneVarCounter):
        params = {"k": values}
    with pytest.raises(SpecError) as info:
        python_model(Worded)
    assert [p.message for p in info.value.problems] == ["param k needs a non-empty list of integers"]
