"""Mutants of machine/vectorize.py (the vector engine's array code and state codes) that the
rest of the verdict selection let through (issue 18). Each test was seen failing with its
mutation applied (docs/explanation/mutation-testing.md)."""

from __future__ import annotations

import copy

import pytest

from haltproof.machine.vectorize import NotVectorizable, vectorize
from engine_ways import each_way, machine_of, prop

pytestmark = pytest.mark.verdict

# `seen` takes green and red, whose ids (in the order the spec first names them) are 2 and 0:
# not a run, so its digit comes from a table, and the code moves by the digits' difference
NOT_A_RUN = """\
machine: lights
vars:
  light: {type: enum, values: [red, amber, green], init: red}
  seen: {type: enum, values: [green, red], init: green}
actions:
  warm: {when: light == red, do: [{set: {light: amber, seen: red}}]}
  cool: {when: light == amber, do: [{set: {light: green, seen: green}}]}
terminal: light == green
properties:
  red_only_at_amber: {always: seen == green or light == amber}
  saw_red: {reachable: seen == red}
"""


def test_an_enum_whose_ids_are_not_a_run_is_coded_by_its_table():
    for way, r in each_way(NOT_A_RUN).items():
        assert (r.result, r.stats["states"], r.stats["transitions"]) == ("proved", 3, 2), way
        assert [(s.action, s.state) for s in prop(r, "saw_red").witness.steps] == [
            (None, {"light": "red", "seen": "green"}), ("warm", {"light": "amber", "seen": "red"})], way


WIDE = """\
machine: wide
vars:
  x: {type: int, min: 0, max: %d, init: 0}
  y: {type: int, min: 0, max: 2147483647, init: 0}
actions:
  inc: {when: x < 1, do: [{set: {x: x + 1}}]}
terminal: x == 1
"""


def test_a_state_code_must_stay_below_2_to_the_62():
    """x and y of 2^31 values each: 2^62 codes, one too many; one value fewer for x fits."""
    with pytest.raises(NotVectorizable) as refused:
        vectorize(machine_of(WIDE % 2147483647))
    assert str(refused.value) == ("the product of the domains (4,611,686,018,427,387,904 states) does not fit a "
                                  "state code (below 2^62)")
    assert vectorize(machine_of(WIDE % 2147483646)).space == (1 << 62) - (1 << 31)


CHOICE = """\
machine: m
vars:
  x: {type: int, min: 0, max: 3, init: 0}
  done: {type: bool, init: false}
actions:
  inc:
    when: x < 2 and not done
    choose: {by: [1, 2]}
    do: [{set: {x: x + by}}]
  stop: {when: x >= 2 and not done, do: [{set: {done: true}}]}
terminal: done
properties:
  unguarded:
    step: "%s"
"""


@pytest.mark.parametrize("step", ["by * 2 > 0 or after.done", "(2 if by > 1 else 1) > 0 or after.done",
                                  "(1 if by > 1 else by) > 0", "by > 1 or after.x == before.x + by"],
                         ids=["arithmetic", "condition", "condition-and-branch", "or"])
def test_a_choice_an_action_does_not_make_read_in_arithmetic_or_a_condition_is_a_finding(step):
    """stop does not make `by`: the vector engine marks the rows that would read it (a stand-in
    in the arithmetic or the condition, or in the operand of `or` that decides whether the rest
    is read), as the scalar loops raise there."""
    for way, r in each_way(CHOICE % step).items():
        wd = prop(r, "well_defined")
        assert wd.status == "violated", way
        assert wd.message == ("property unguarded (kills.yaml:14): the expression reads choice by, which "
                              "action stop does not make (guard it with action == ...)"), way
        assert [(s.action, s.state["x"]) for s in wd.trace.steps] == [(None, 0), ("inc", 2), ("stop", 2)], way


def test_a_unary_plus_stays_a_plus_on_the_vector_engine():
    """`+x >= 0` holds on every engine: the vector engine keeps `+` (it is no `-`)."""
    text = ("machine: plus\nvars:\n  x: {type: int, min: 0, max: 2, init: 0}\nactions:\n"
            "  inc: {when: x < 2, do: [{set: {x: x + 1}}]}\nterminal: x == 2\nproperties:\n"
            "  pos: {always: '+x >= 0'}\n")
    for way, r in each_way(text).items():
        assert (prop(r, "pos").status, r.stats["states"]) == ("holds", 3), way


def test_a_string_no_domain_holds_is_coded_on_the_vector_engine():
    """A literal the checker accepts though no var, choice or action has it ('c': the expression
    can take it, the comparison can be true) still gets its id on the vector engine."""
    text = ("machine: lit\nvars:\n  x: {type: enum, values: [a, b], init: a}\nactions:\n"
            "  go: {when: x == 'a', do: [{set: {x: b}}]}\nterminal: x == 'b'\nproperties:\n"
            "  never_c: {always: \"(x if x == 'a' else 'c') != 'c'\"}\n")
    for way, r in each_way(text).items():
        p = prop(r, "never_c")
        assert (p.status, [(s.action, s.state["x"]) for s in p.trace.steps]) == (
            "violated", [(None, "a"), ("go", "b")]), way


@pytest.mark.parametrize("step, status, read", [
    ("after.x > 5 or after.done or by > 0", "holds", False),         # stop: after.done decides first
    ("after.x > 5 or before.done or by > 0", "unknown", True),       # stop: neither decides, by is read
    ("after.done and by > 0", "violated", True),                     # stop: after.done lets `and` go on
    ("(before.x > 2 and by > 1) or by > 0", "unknown", True),        # stop at x = 2: both reads are reached
    ("by > 0 if action == 'inc' else after.done", "holds", False),   # stop: the test (naming the action) decides
], ids=["or-decided", "or-of-three", "and", "nested", "if-on-action"])
def test_which_operands_of_and_or_are_evaluated_decides_whether_a_missing_choice_is_read(step, status, read):
    """`and`/`or` (and `if`) stop at the operand that decides: the vector engine marks as reading `by`
    exactly the rows of stop where Python's evaluation gets to a read of it (through every operand
    before the last, and inside a nested one), as the scalar loops raise exactly there."""
    for way, r in each_way(CHOICE % step).items():
        wd = prop(r, "well_defined")
        assert (prop(r, "unguarded").status, wd.status) == (status, "violated" if read else "holds"), way
        if read:
            assert wd.message == ("property unguarded (kills.yaml:14): the expression reads choice by, which "
                                  "action stop does not make (guard it with action == ...)"), way
            assert [(s.action, s.state["x"]) for s in wd.trace.steps] == [(None, 0), ("inc", 2), ("stop", 2)], way


# `inc` makes choice `by`, `stop` makes none; each case below is one thing the vector engine
# does not run, and says so whole (`--engine vector` shows the reason; `auto` runs the scalar engine)
DECLINED = """\
machine: declined
%svars:
  x: {type: int, min: 0, max: 4, init: 0}
actions:
  inc:
    when: %s
    choose:
      by: %s
    do:
      - set: {x: 'min(x + by, 3)'}
  stop:
    when: x == 3
    do:
      - set: {x: 4}
terminal: x == 4
"""


@pytest.mark.parametrize("params, guard, by, tail, reason", [
    ("params:\n  mode: [fast]\n", "x < 3 and mode == fast", "[1, 2]", "",
     "a bool or enum param: the vector engine binds params as ints"),
    ("params:\n  flag: [true]\n", "x < 3 and flag", "[1, 2]", "",
     "a bool or enum param: the vector engine binds params as ints"),
    ("", "x < 3", "{values: [1, 2], when: x < 2}", "",
     "a conditional choice (when:): the vector engine expands every combination of an action's choices in "
     "every state"),
    ("", "x < 3", "[1, 2]", "properties:\n  p: {step: 'before.x <= after.x <= before.x + by'}\n",
     "a chained comparison reads a choice the action does not make"),
    ("", "x < 3", "[1, 2]", "measures:\n  m: {sum: by}\n",
     "a step expression reads choice by, which action stop does not make"),
    ("", "x < 3", "[1, 2]", "properties:\n  q: {terminates_within: 5, count: 'by > 1'}\n",
     "a step expression reads choice by, which action stop does not make"),
], ids=["enum-param", "bool-param", "conditional-choice", "chained-comparison", "measure", "count"])
def test_what_the_vector_engine_does_not_run_is_said_whole(params, guard, by, tail, reason):
    with pytest.raises(NotVectorizable) as refused:
        vectorize(machine_of(DECLINED % (params, guard, by) + tail))
    assert str(refused.value) == reason


def test_a_python_model_or_a_spec_bound_to_code_is_not_vectorized():
    """Their actions are the user's code: vectorized, the YAML stages would run instead."""
    from haltproof.machine.pymodel import Model, action, python_model

    reason = "the spec runs real code (bound or Python); the vector engine runs YAML stages"
    bound = copy.copy(machine_of(DECLINED % ("", "x < 3", "[1, 2]")))
    bound.bound_to = "agent:Adapter"            # as machine/binding.py marks the machine it binds
    with pytest.raises(NotVectorizable) as refused:
        vectorize(bound)
    assert str(refused.value) == reason

    class Tiny(Model):
        def domains(self, p):
            return {"x": range(0, 2)}

        def init(self, p):
            return [{"x": 0}]

        def terminal(self, s, p):
            return s["x"] == 1

        @action(when=lambda s, p: s["x"] == 0)
        def up(self, s, p):
            return {"x": 1}

    _, make = python_model(Tiny)
    with pytest.raises(NotVectorizable) as refused:
        vectorize(make({}))
    assert str(refused.value) == reason
