"""Single-line bugs in machine/pymodel.py that the verdict selection could let through (issue 18):
what a Python model's domains() may return, and how the error names the file, the line and
the problem. Each message is pinned exactly (docs/explanation/mutation-testing.md)."""

from __future__ import annotations

import inspect
import sys
from typing import Any

import pytest

from haltproof.api import check
from haltproof.explorer.replay import run_steps
from haltproof.machine.errors import SpecError
from haltproof.machine.pymodel import (Model, _kind, action, always, independent_of, load_model_ref, python_model,
                                       reachable, step_invariant, terminates, terminates_within, variant)
from haltproof.machine.usercode import OutOfTime

pytestmark = pytest.mark.verdict


class Base(Model):
    params = {"B": [0, 1]}

    def init(self, p):
        return [{"x": 0}]

    @action(when=lambda s, p: s["x"] == 0)
    def inc(self, s, p):
        return {**s, "x": 1}


class EmptyDomain(Base):
    def domains(self, p):
        return {"x": [0, 1], "y": [] if p["B"] == 1 else [0]}

    def init(self, p):
        return [{"x": 0, "y": 0}]


class NotADict(Base):
    def domains(self, p):
        return [("x", [0, 1])]


class Unhashable(Base):
    def domains(self, p):
        return {"x": [[0], [1]]}


class TwoVarsGo(Base):
    def domains(self, p):
        return {"x": [0, 1], "y": [0], "z": [0]} if p["B"] == 0 else {"x": [0, 1]}

    def init(self, p):
        return [{"x": 0, "y": 0, "z": 0}] if p["B"] == 0 else [{"x": 0}]


class TwoVarsCome(Base):
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

class Counter(Model):
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


class Flaky(Counter):
    calls = 0

    @action(rules=["up"])
    def inc(self, s, p):
        type(self).calls += 1
        return {"x": s["x"] + 1}, ("up" if type(self).calls % 2 else None)


class OtherRule(Counter):
    @action(rules=["up", "jump"])
    def inc(self, s, p):
        return {"x": s["x"] + 1}, "down"


class NoRules(Counter):
    @action()
    def inc(self, s, p):
        return {"x": s["x"] + 1}, "down"


class NoDict(Counter):
    @action()
    def inc(self, s, p):
        return [s["x"] + 1]


class OtherVars(Counter):
    @action()
    def inc(self, s, p):
        return {"x": s["x"] + 1, "y": 0}


class BadInit(Counter):
    params = {"N": [3]}

    def init(self, p):
        return [{"y": 0}]


def _finding(cls: type) -> str:
    (run,) = check(cls).runs
    [code] = [p for p in run.properties if p.name == "bound_code"]
    assert code.status == "violated"
    return code.message


@pytest.mark.parametrize("cls,message", [
    (Flaky, "action inc with no choices: action inc is nondeterministic: ({'x': 1}, 'up') then ({'x': 1}, None)"),
    (OtherRule, "action inc with no choices: action inc reports rule 'down', not one of its rules (jump, up)"),
    (NoRules, "action inc with no choices: action inc reports rule 'down', not one of its rules (none declared)"),
    (NoDict, "action inc with no choices: action inc must return a dict with exactly the vars ['x'], got list"),
    (OtherVars, "action inc with no choices: action inc must return a dict with exactly the vars ['x'], got ['x', 'y']"),
], ids=["nondeterministic", "other-rule", "no-rules", "no-dict", "other-vars"])
def test_what_an_action_returns_is_checked_exactly(cls, message):
    Flaky.calls = 0
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
    class Ranked(Counter):
        climbs = variant(Rank(), lambda p: 3)

    (run,) = check(Ranked).runs
    [wd] = [p for p in run.properties if p.name == "well_defined"]
    assert wd.status == "violated"
    assert wd.message.endswith("Rank() returned 'high' (str), not an int")


MADE_BY_EXEC = """\
class Execd(Counter):
    stops = terminates()
"""


def test_a_property_declared_in_code_run_by_exec_is_placed_in_that_code():
    """exec() with globals of its own (no __name__): the class body's frame is still the place."""
    scope = {"Counter": Counter, "terminates": terminates}
    exec(compile(MADE_BY_EXEC, "<made>", "exec"), scope)
    (run,) = check(scope["Execd"]).runs
    [stops] = [p for p in run.properties if p.name == "stops"]
    assert (stops.status, stops.line, stops.file) == ("holds", 2, "<made>")


def test_a_step_predicate_that_returns_no_bool_is_named_in_the_finding():
    def moved(self, b, a, p, action, choices, rule):
        return "yes"

    class Says(Counter):
        rises = step_invariant(moved)

    (run,) = check(Says).runs
    [wd] = [p for p in run.properties if p.name == "well_defined"]
    assert wd.message.endswith("returned 'yes' (str), not a bool: it must return True or False")
    assert "moved returned" in wd.message


def test_a_property_attached_after_the_class_is_made_is_named_after_its_function():
    def at_most_two(self, s, p):
        return s["x"] <= 2

    class Later(Counter):
        pass

    Later.bounded = always(at_most_two)
    (run,) = check(Later).runs
    assert [(p.name, p.status) for p in run.properties if p.kind == "invariant"] == [("at_most_two", "holds")]


def test_a_bound_that_is_no_int_is_a_spec_error_at_the_property():
    class Bounded(Counter):
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
    class Says(Counter):
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
    class Done(Counter):
        def init(self, p):
            return [{"x": 2}]

        quick = terminates_within(lambda p: 0)

    (run,) = check(Done).runs
    assert [(p.name, p.status) for p in run.properties if p.name == "quick"] == [("quick", "holds")]


# ---------------------------------------------------------------- instantiating a model (`_machine`)

def test_an_initial_state_outside_the_domains_is_a_spec_error_at_init():
    class Outside(Counter):
        def init(self, p):
            return [{"x": 0}, {"x": 5}]

    with pytest.raises(SpecError) as caught:
        check(Outside)
    line = inspect.getsourcelines(Outside.init)[1]
    assert str(caught.value) == f"{__file__}:{line}: initial state {{'x': 5}} has x = 5 outside its domain {{0, 1, 2}}"


def test_running_out_of_time_in_an_action_says_which_method_with_which_choices_from_where():
    """The deadline passing in the model's code (OutOfTime, as the deadline raises it) is noted
    with what was running, for the run's stop reason."""
    class Late(Counter):
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
    class TwoActions(Counter):
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
    _, instantiate = python_model(Counter)
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
    class Worded(Counter):
        params = {"k": values}
    with pytest.raises(SpecError) as info:
        python_model(Worded)
    assert [p.message for p in info.value.problems] == ["param k needs a non-empty list of integers"]
